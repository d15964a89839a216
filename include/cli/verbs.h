/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "cli.h"

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args;    /* arguments after the options (UINT_MAX: any number) */
        int (*fn)(int argc, char *argv[]);
} Verb;

/* The verb called @name, or NULL. */
const Verb *verb_find(const char *name);
/* Run the verb argv[0] with its arguments; 2 for an unknown one. */
int verb_dispatch(int argc, char *argv[]);
/* After a verb's options (optind past them): the arguments left are as many as its table row allows.
 * Return: 0, or -EINVAL (said, with the verb's name). */
int verb_check_args(const char *name, int argc, char *argv[]);

/*
 * Every verb of the nvme-apstd command line. main.c
 * dispatches `nvme-apstd VERB ARGS...` to verb_VERB(argc, argv) with argv[0]
 * set to VERB; each returns the process exit status (0, 1 = failure,
 * 2 = bad usage) and prints its own output and errors.
 */

/* `nvme-apstd run` (and plain `nvme-apstd`): the daemon (src/cli/cmd-run.c, src/daemon/). */
int verb_run(int argc, char *argv[]);

/* `nvme-apstd plan`: what would be written, nothing sent but Identify (src/cli/cmd-plan.c). */
int verb_plan(int argc, char *argv[]);

/* `nvme-apstd apply`: program every controller once, verify, exit (src/cli/cmd-apply.c). */
int verb_apply(int argc, char *argv[]);

/* `nvme-apstd simulate`: score APST policies on a trace (src/cli/cmd-simulate.c, doc/simulator.md). */
int verb_simulate(int argc, char *argv[]);

/* `nvme-apstd config`: the merged configuration and its origins; --check (src/cli/cmd-config.c). */
int verb_config(int argc, char *argv[]);

/* `nvme-apstd doctor`: read-only diagnosis (src/cli/cmd-doctor.c, src/core/doctor.c). */
int verb_doctor(int argc, char *argv[]);

/* `nvme-apstd status`: the running daemon's state over its D-Bus API, or the plan (src/cli/cmd-status.c). */
int verb_status(int argc, char *argv[]);

/* `nvme-apstd quarantine`: list, clear or carry the power states drives failed in (src/cli/cmd-quarantine.c,
 * doc/quarantine.md). */
int verb_quarantine(int argc, char *argv[]);
/* `nvme-apstd calibrate`: measure each power state's real wake-up time (src/cli/cmd-calibrate.c, doc/calibrate.md). */
int verb_calibrate(int argc, char *argv[]);

/* `nvme-apstd observe`: the block layer's exact idle gaps, seen with eBPF (src/cli/cmd-observe.c, doc/watch.md). */
int verb_observe(int argc, char *argv[]);

/* `nvme-apstd hold -- COMMAND`: run COMMAND under a latency hold of the daemon's (src/cli/cmd-hold.c, doc/holds.md);
 * returns COMMAND's exit status, or 125, 126, 127 as env(1) does. */
int verb_hold(int argc, char *argv[]);
