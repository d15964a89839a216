/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The pure part of `nvme-apstd calibrate` (src/cli/cmd-calibrate.c): which power
 * states to measure, the temporary APST table that sends the drive into one
 * of them after a short idle time, how long to wait before the timed read,
 * how long a run takes, and the statistics of the samples. No I/O: the verb
 * does the commands and the clock. What is measured and why is in
 * doc/calibrate.md.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apst.h"
#include "idctrl.h"

/* ITPT of the temporary table: the shortest the field allows (1 ms: ITPT counts milliseconds,
 * doc/nvme-apst.md) would race the timer we sleep on; 2 ms is still far below
 * any state's entry latency that matters and keeps a sample short. */
#define CALIB_ITPT_MS 2u
/* Slack after ITPT + entry latency before the timed read: scheduler and timer jitter of a
 * loaded machine (a few ms under QEMU TCG), so the drive is really in the state. */
#define CALIB_MARGIN_US 3000u
#define CALIB_SAMPLES_DEFAULT 20u      /* a stable median, and a p99 that is the worst but one or so */
#define CALIB_SAMPLES_MAX 1000u
/* A whole run must end: with the default 20 samples the seed drive (Intel 600p) needs about
 * 2 s; 300 s bounds a drive whose states advertise seconds of entry latency. */
#define CALIB_MAX_TIME_DEFAULT_S 300u

/**
 * calib_targets() - the non-operational states worth measuring: those a policy may use,
 * so not the deepest one under the kernel's NO_DEEPEST_PS quirk unless @force (like plan)
 * @quirks: ApstQuirk bits (apst_quirks())
 * @ret_ps: room for IDCTRL_MAX_PS indices, shallow (low index) first
 * Return: the number of states written.
 */
size_t calib_targets(const IdCtrl *id, unsigned quirks, bool force, uint8_t *ret_ps);

/**
 * calib_temp_table() - APSTE = 1; every operational state goes to @ps after @itpt_ms of
 * idleness; @ps and the other non-operational states have no entry (stay where they are).
 * So the drive can only ever be in an operational state or in @ps. Passes apst_table_check().
 */
void calib_temp_table(const IdCtrl *id, uint8_t ps, uint32_t itpt_ms, ApstTable *ret);

/* How long to stay idle before the timed read: ITPT, then the entry latency and half again
 * (a drive may enter slower than it says too), then CALIB_MARGIN_US. */
uint64_t calib_idle_wait_us(uint32_t itpt_ms, uint32_t enlat_us);

/**
 * calib_estimate_us() - how long measuring @n states of @id with @samples samples each takes,
 * allowing each wake-up 4x its advertised exit latency (what a lying drive may take)
 */
uint64_t calib_estimate_us(const IdCtrl *id, const uint8_t *ps, size_t n, unsigned samples, uint32_t itpt_ms);

/* Median of @v (sorted in place); the lower middle for an even count; 0 for n = 0. */
uint32_t calib_median(uint32_t *v, size_t n);

/* Nearest-rank percentile @pct (1..100) of @v (sorted in place): with 20 samples p99 is the
 * largest; 0 for n = 0. */
uint32_t calib_percentile(uint32_t *v, size_t n, unsigned pct);

/**
 * calib_wake_costs() - each asleep read minus the awake median, clamped at 0 (a read cannot
 * cost less than an awake one; a negative difference is noise)
 */
void calib_wake_costs(const uint32_t *asleep_us, size_t n, uint32_t awake_median_us, uint32_t *ret);

/* measured / advertised, or a negative number when nothing was advertised (exlat 0). */
double calib_ratio(uint32_t measured_us, uint32_t advertised_us);
