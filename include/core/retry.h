/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * When the daemon looks at a controller again after something did not work
 * (pure: no I/O, no logging).
 *
 * A controller that is not `live` (resetting, connecting) is looked at again
 * after RETRY_BASE_USEC, then after twice as long each time, up to
 * 2^RETRY_MAX_SHIFT times as long: one that stays dead must not keep the
 * daemon awake; the kernel's `connected` uevent brings it back at once when
 * it recovers. A command that failed in a way that may pass if sent again is
 * retried RETRY_TRANSIENT_MAX times, on the same schedule.
 */

#include <stdbool.h>
#include <stdint.h>

#define RETRY_BASE_USEC (2ULL * 1000000ULL)
#define RETRY_MAX_SHIFT 5u
#define RETRY_TRANSIENT_MAX 3u

/* The delay before retry number @n_done + 1. */
uint64_t retry_delay_usec(unsigned n_done);

/* EINTR, EAGAIN, EBUSY, ETIMEDOUT, or an NVMe status (-EREMOTEIO) without Do Not Retry. */
bool retry_is_transient(int error, uint16_t nvme_status);
