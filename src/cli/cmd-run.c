/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd run` (the default command): parse the command line, hand the
 * manager its options, run the event loop. The daemon itself: manager.c.
 */

#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "cli.h"
#include "verbs.h"
#include "config-build.h"
#include "cpupin.h"
#include "log.h"
#include "runlock.h"
#include "state-file.h"
#include "manager.h"
#include "util.h"

static void help(void) {
        printf("Usage: nvme-apstd [run] [OPTIONS]\n\n"
               "Run the daemon: program every NVMe controller's APST table and keep it in place.\n\n"
               "  -c --config FILE   configuration file (default: %s/nvme-apstd.conf)\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "Signals: SIGHUP reloads the configuration; SIGTERM/SIGINT restore the original\n"
               "tables and exit.\n",
               SYSCONFDIR);
}

/* Return: 1 to run, 0 to exit 0 (--help), or 2 (bad usage). */
static int parse_argv(int argc, char *argv[], const char **ret_config, uint64_t *ret_verify_usec) {
        enum { ARG_VERIFY_INTERVAL = _CLI_ARG_FIRST_PRIVATE };
        static const struct option options[] = {
                CLI_CONFIG_OPTION,
                CLI_COMMON_OPTIONS,
                /* hidden, for tests: how often to look at the I/O counters */
                { "verify-interval-ms", required_argument, NULL, ARG_VERIFY_INTERVAL },
                {},
        };
        uint32_t verify_ms = 0;
        int c;

        optind = 0;
        while ((c = cli_getopt_config(argc, argv, "c:h", options, help, ret_config)) >= 0) {
                switch (c) {
                case ARG_VERIFY_INTERVAL:
                        if (safe_atou32(optarg, &verify_ms) < 0 || verify_ms == 0) {
                                log_error("--verify-interval-ms=%s: expected a positive number.", optarg);
                                return 2;
                        }
                        *ret_verify_usec = (uint64_t) verify_ms * 1000u;
                        break;
                default:
                        return 2;
                }
        }
        if (c == CLI_GETOPT_EXIT)
                return 0;
        if (verb_check_args("run", argc, argv) < 0)
                return 2;
        return 1;
}

/* The shared lock that tells `calibrate` the daemon runs (runlock.h); while a calibration holds
 * it, wait for it to end (bounded by its --max-time) rather than fight over the tables. */
static int take_runlock(const char *runtime_dir) {
        int fd = -1, r;

        r = runlock_take(runtime_dir, false, false, &fd);
        if (r == -EWOULDBLOCK) {
                log_info("Waiting for `nvme-apstd calibrate` to finish (it holds %s/" RUNLOCK_NAME ").", runtime_dir);
                r = runlock_take(runtime_dir, false, true, &fd);
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot lock %s/" RUNLOCK_NAME ": %m; `calibrate` will not see that the daemon "
                                  "runs.", runtime_dir);
                return -1;
        }
        return fd;
}

int verb_run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *runtime_dir = NULL;
        const char *config_path = NULL;
        char default_config[4096], state_dir[4096];
        ManagerOptions o = {};
        int r, lock_fd = -1;

        r = parse_argv(argc, argv, &config_path, &o.verify_interval_usec);
        if (r != 1)
                return r;
        /* One malloc arena: each controller's admin-command step runs in a short-lived thread of its
         * own (ctrljob.h), and glibc would give threads arenas of their own, a few hundred KiB of RSS
         * each that stay after the threads end. They are rare and brief: no contention to spare. */
        (void) mallopt(M_ARENA_MAX, 1);
        o.config_path = cli_config_path(config_path, default_config, sizeof default_config, &o.config_missing_ok);
        o.sysfs_root = arg_sysfs_root;
        o.dev_dir = arg_dev_dir;
        o.proc_root = arg_proc_root;
        o.state_dir = cli_state_dir(state_dir, sizeof state_dir);
        r = runtime_directory(CPUPIN_RUNTIME_DIR_DEFAULT, &runtime_dir);
        if (r >= 0) {
                lock_fd = take_runlock(runtime_dir);
                o.runtime_dir = runtime_dir;
                r = manager_new(&o, &m);
        }
        if (r < 0) {
                log_error_errno(r, "Cannot start: %m");
                return 1;
        }
        r = manager_start(m);
        if (r < 0) {
                (void) sd_notifyf(false, "STATUS=Failed to start: %s\nERRNO=%d", strerror(-r), -r);
                return 1;
        }
        r = sd_event_loop(m->event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        manager_stop(m);
        if (lock_fd >= 0)
                (void) close(lock_fd);
        return r < 0 ? 1 : 0;
}
