/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The clock the engine's deadlines and ages are measured on (src/platform/clock.c). */

#include <stdint.h>

/* CLOCK_MONOTONIC in µs: never goes back, does not count suspend. */
uint64_t now_usec(void);
