/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nvme-apstd: entry point. The verbs are verbs.c's table; everything but
 * this file is in the layer libraries, so tests link the same code.
 */

#include <stdio.h>
#include <string.h>

#include "config-build.h"
#include "log.h"
#include "verbs.h"

static void help(void) {
        printf("Usage: nvme-apstd [COMMAND] [OPTIONS]\n\n"
               "NVMe Autonomous Power State Transition (APST) and CPU frequency daemon.\n\n"
               "Commands:\n"
               "  run        run the daemon (the default; what nvme-apstd.service starts)\n"
               "  plan       show what would be programmed, write nothing\n"
               "  apply      program every controller once, verify, and exit\n"
               "  status     what the running daemon does to each controller (over D-Bus)\n"
               "  simulate   score a policy on an I/O trace: energy and added latency\n"
               "  doctor     look for APST, request size and CPU frequency problems; change nothing\n"
               "  calibrate  measure how long each power state really takes to wake\n"
               "  observe    watch the block layer's idle gaps with eBPF; change nothing\n"
               "  hold       run a command with the drives kept quick to wake (-- COMMAND)\n\n"
               "Run `nvme-apstd COMMAND --help` for the options of each command.\n"
               "  -h --help      show this help\n"
               "     --version  show the version\n");
}

int main(int argc, char *argv[]) {
        log_open();

        if (argc < 2 || argv[1][0] == '-') {
                if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                        help();
                        return 0;
                }
                if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
                        printf("nvme-apstd %s\n", PACKAGE_VERSION);
                        return 0;
                }
                /* plain `nvme-apstd [--config F]` is the daemon */
                return verb_run(argc, argv);
        }
        return verb_dispatch(argc - 1, argv + 1);
}
