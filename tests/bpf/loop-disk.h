/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the eBPF tests share: the monotonic clock they schedule reads on, and a loop device
 * over a file, with its diskseq (the key the program's disks map takes).
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sysfs.h"

static inline uint64_t now_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static inline void sleep_until(uint64_t t) {
        struct timespec ts = { .tv_sec = (time_t) (t / 1000000000u), .tv_nsec = (long) (t % 1000000000u) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

/* A loop device over @file: its path in @dev (size @n) and its diskseq. Return NULL, or a reason
 * to skip the test (@dev then ""). */
static inline const char *loop_attach(const char *file, char *dev, size_t n, uint64_t *ret_seq) {
        char cmd[256];
        FILE *p;

        dev[0] = 0;
        (void) snprintf(cmd, sizeof cmd, "losetup -f --show %s 2>/dev/null", file);
        p = popen(cmd, "r");
        if (!p || !fgets(dev, (int) n, p)) {
                if (p)
                        (void) pclose(p);
                dev[0] = 0;
                return "losetup cannot set up a loop device over the file here";
        }
        (void) pclose(p);
        dev[strcspn(dev, "\n")] = 0;
        if (sysfs_block_diskseq("/sys", strrchr(dev, '/') + 1, ret_seq) < 0)
                return "the loop device has no diskseq (kernel < 5.15)";
        return NULL;
}

/* Take the loop device in @dev away, if there is one. */
static inline void loop_detach(char *dev) {
        char cmd[128];

        if (!dev[0])
                return;
        (void) snprintf(cmd, sizeof cmd, "losetup -d %s", dev);
        if (system(cmd) != 0)
                fprintf(stderr, "losetup -d %s failed\n", dev);
        dev[0] = 0;
}
