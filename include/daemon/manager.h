/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon: one sd-event loop owning every controller (systemd-oomd's and
 * timesyncd's Manager as models). The only code that wires the controller
 * engine (controller.h) and CPU pinning (cpupin.h) to sd-event, sd-device,
 * sd-bus and sd_notify. Everything it reads from the outside world comes in
 * through ManagerOptions; it knows nothing of the command line.
 *
 * Lifecycle: manager_new() -> manager_start() (discover, start each
 * controller's first step) -> sd_event_loop() (READY=1 once those steps are
 * back; SIGTERM: STOPPING=1 at once, restore the tables found before the
 * daemon first wrote them, CPUs released, the loop ends when every responsive
 * controller is done) -> manager_stop() (only when the loop ended otherwise)
 * -> manager_free().
 *
 * No admin command runs on the loop's thread: each controller's engine step
 * runs in a thread of its own (ctrljob.h), one at a time per controller, and
 * comes back through an eventfd. A step whose command outlives [daemon]
 * unresponsive_after_sec marks its controller unresponsive.
 *
 * manager.c is the top of the daemon: it alone calls across its parts
 * (manager-watch.h, manager-qos.h, manager-cpu.h, manager-power.h,
 * manager-metrics.h, bus-api.h). The parts see the state it owns through
 * manager-state.h and ask it to act through the ManagerOps given there.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "manager-state.h"

/* How often to look at the I/O counters for a verification that costs no power:
 * a Get Features is only sent to a controller that did I/O since the last look
 * (it was awake anyway). 30 s keeps the idle daemon far below 0.2 wake-ups/s. */
#define MANAGER_VERIFY_INTERVAL_USEC (30ULL * 1000000ULL)
/* What the adaptive policy learned is written when it stops, and at most this often while it
 * learns ($NVME_APSTD_TEST_LEARNED_KEEP_SEC, 1..3600, in tests), so a crash loses an hour of it at
 * most. */
#define MANAGER_LEARNED_KEEP_USEC (3600ULL * 1000000ULL)

/* At most this many engine steps (each a thread) at once among controllers that answer; the rest
 * wait for a slot. A resume over many drives stays a few threads and a few open device nodes; an
 * unresponsive controller's step holds no slot, so hung drives never hold up the others. */
#define MANAGER_STEPS_MAX 8u

/* WATCHDOG=1 at most this share of WATCHDOG_USEC apart: under half, so that a single missed
 * ping never lets systemd's watchdog fire, and the gap a test measures has a strict bound. */
#define MANAGER_WATCHDOG_PING_PCT 45u

typedef struct ManagerOptions {
        const char *config_path;        /* the configuration file */
        bool config_missing_ok;         /* it is the default path: missing = the built-in defaults */
        const char *sysfs_root;         /* "/sys" */
        const char *dev_dir;            /* "/dev" */
        const char *proc_root;          /* "/proc" */
        const char *runtime_dir;        /* $RUNTIME_DIRECTORY: the crash records */
        const char *state_dir;          /* $STATE_DIRECTORY: measured wake costs (read), what the adaptive
                                         * policy learned per drive (read and written) */
        uint64_t verify_interval_usec;  /* 0 = MANAGER_VERIFY_INTERVAL_USEC */
} ManagerOptions;

int manager_new(const ManagerOptions *o, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
int manager_start(Manager *m);
void manager_stop(Manager *m);

/* The STATUS= text: "nvme0: budget, ps3@100ms→ps4@2000ms; nvme1: failed". */
void manager_status_text(const Manager *m, char *buf, size_t n);
