/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The verb table (systemd's dispatch_verb() shape): each verb's name, how
 * many arguments it takes after its options, and its function. main.c
 * dispatches through it; each verb checks its arguments against it once its
 * own options are parsed (they are per verb, so the count is known only then).
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "verbs.h"

#define ANY UINT_MAX

static const Verb verbs[] = {
        { "run",       0, 0,   verb_run },
        { "plan",      0, ANY, verb_plan },         /* nvmeX... */
        { "apply",     0, ANY, verb_apply },        /* nvmeX... */
        { "status",    0, 0,   verb_status },
        { "simulate",  0, 0,   verb_simulate },
        { "doctor",    0, ANY, verb_doctor },       /* nvmeX... */
        { "calibrate", 0, ANY, verb_calibrate },    /* nvmeX... */
        { "config",    0, ANY, verb_config },       /* --check FILE... */
        { "observe",   0, ANY, verb_observe },      /* DISK... */
        { "quarantine", 0, ANY, verb_quarantine },  /* --clear MODEL... */
        { "hold",      1, ANY, verb_hold },         /* [nvmeX...] -- COMMAND [ARG...] (checked by hold itself) */
};

const Verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(verbs[i].name, name) == 0)
                        return &verbs[i];
        return NULL;
}

int verb_dispatch(int argc, char *argv[]) {
        const Verb *v = verb_find(argv[0]);

        if (!v) {
                log_error("unknown command '%s'; see nvme-apstd --help.", argv[0]);
                return 2;
        }
        return v->fn(argc, argv);
}

int verb_check_args(const char *name, int argc, char *argv[]) {
        const Verb *v = verb_find(name);
        unsigned n = optind < argc ? (unsigned) (argc - optind) : 0;

        if (!v || (n >= v->min_args && n <= v->max_args))
                return 0;
        if (v->max_args == 0)
                log_error("%s takes no arguments (got '%s'); see nvme-apstd %s --help.", name, argv[optind], name);
        else
                log_error("%s takes %u to %u arguments, got %u; see nvme-apstd %s --help.", name, v->min_args,
                          v->max_args, n, name);
        return -EINVAL;
}
