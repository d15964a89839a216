/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The best single static APST table for one trace, chosen knowing the whole
 * trace: a benchmark baseline, not a policy (no daemon can know the trace
 * before it happens). It answers "how much could any fixed table have saved
 * here without waking the drive more than the kernel's table does?", so a
 * policy's figures can be read against what a table can do on that drive, with
 * its quirks, rather than against the offline oracle (sim_optimum()), which
 * wakes the drive just in time and uses every state the drive advertises.
 *
 * Pure: tables from apst_table_from_chain(), costs from sim_run().
 */

#include <stddef.h>

#include "apst.h"
#include "idctrl.h"
#include "sim.h"
#include "trace.h"

/* ITPTs tried for each step of a chain, ms. */
#define HINDSIGHT_GRID_N 13u
/* Chains of at most this many steps are tried (every subset of the usable states). */
#define HINDSIGHT_MAX_STEPS 2u

typedef struct HindsightResult {
        ApstTable table;        /* the winner (the kernel's own table when nothing beats it) */
        SimResult res;          /* its run; free with sim_result_done() */
        unsigned candidates;    /* tables simulated, the kernel's included */
        bool kernel_won;        /* no candidate had less energy within the wake delay allowed */
} HindsightResult;

/**
 * hindsight_search() - least energy over static tables whose total wake delay
 * (SimResult.stall_ns) on this trace is at most @share of the kernel's table's
 * @id: the drive's Identify data (what tables are built from)
 * @quirks: effective ApstQuirk bits (apst_build()'s plan.quirks): states the
 *          kernel would not use are not used here either
 * @params: max_latency_us bounds the states used (apst_chain())
 * @d: the drive as simulated (exit latencies as it really wakes)
 * @kernel_table: the kernel's table, always a candidate, and run first: its wake
 *                delay on this trace is the reference
 * @share: the wake delay allowed, as a share of the kernel's table's (0..1)
 *
 * Candidates: @kernel_table, and every chain of 1..HINDSIGHT_MAX_STEPS of
 * apst_chain()'s states with each ITPT from the grid. Ties keep the earlier
 * candidate (the kernel's first).
 * Return: 0, -EINVAL, or sim_run()'s error (nothing to free then).
 */
int hindsight_search(const IdCtrl *id, unsigned quirks, const ApstParams *params, const SimDrive *d,
                     const TraceIo *io, size_t n, const SimParams *sp, const ApstTable *kernel_table,
                     double share, HindsightResult *ret);

void hindsight_result_done(HindsightResult *r);
