/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The monotonic clock in µs (clock.h): one reading for nvme-admin.c, the steps and calibrate. */

#include <time.h>

#include "clock.h"

uint64_t now_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}
