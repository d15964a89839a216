/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The adaptive policy (pure: no I/O, no clock, no logging).
 *
 * It starts from apst_build()'s stall-bounded table (every wake-up preceded by
 * enough idle time that wake-ups cannot cost more than the stall budget), then
 * watches the drive through a Watch (the block-layer counters at the watcher's
 * own reading times, nothing else) and, from the idle gaps it has seen, picks
 * the table that spends the least energy while its expected wake-up cost stays
 * within the stall budget and within what the kernel's own table would cost on
 * the same gaps. Exit latencies are scaled by what the ticks show the drive
 * really takes. It reprograms rarely: at most every ADAPT_RATE_LIMIT_NS for an
 * energy gain of at least ADAPT_MIN_GAIN, sooner (ADAPT_FIX_NS) only when the
 * table in force overruns its stall limit. doc/policy.md has the whole of it.
 */

#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "idctrl.h"
#include "sim.h"
#include "watch.h"

#define ADAPT_MAX_STEPS 3u
#define ADAPT_DECIDE_NS UINT64_C(2000000000)        /* think at most every 2 s */
#define ADAPT_RATE_LIMIT_NS UINT64_C(20000000000)   /* reprogram for energy at most every 20 s */
#define ADAPT_FIX_NS UINT64_C(2000000000)           /* ... for a stall overrun at most every 2 s */
#define ADAPT_MIN_GAIN 0.10                         /* idle energy saved, to be worth a command */
#define ADAPT_WARMUP_GAPS 8.0                       /* gaps seen before the first decision */

typedef struct AdaptChain {
        unsigned n;
        unsigned state[ADAPT_MAX_STEPS];
        uint32_t itpt_ms[ADAPT_MAX_STEPS];   /* idle time in the previous state before each step */
} AdaptChain;

/* Why a table was chosen: the words for the journal and the numbers behind them. */
typedef struct AdaptDecision {
        uint64_t t_ns;
        ApstTable table;
        AdaptChain chain;
        char reason[320];
        double io_rate;            /* I/Os per second (decayed window) */
        uint64_t median_gap_ns;
        double observed_stall;     /* wake cost the ticks showed, share of elapsed time */
        double expected_stall;     /* the new table on the gaps seen, share of elapsed time */
        double kernel_stall;       /* the kernel's table on the same gaps */
        double limit_stall;        /* what the table had to stay within */
        double energy_vs_kernel;   /* idle energy of the new table over the kernel's, same gaps */
        double exlat_factor;       /* real / advertised wake cost, from the ticks (>= 1) */
} AdaptDecision;

typedef struct Adapt {
        IdCtrl id;
        bool enabled;              /* APST supported, not quirked off, max_latency_us > 0 */
        uint32_t budget_cpct;
        unsigned chain[IDCTRL_MAX_PS];   /* states a table may use (apst_chain) */
        unsigned n_chain;
        double p0_uw;
        AdaptChain kernel, current;
        ApstTable current_table;
        Watch watch;
        uint64_t last_program_ns, last_eval_ns;
        double obs_wake_ms, pred_wake_ms;   /* for the exlat factor */
        double exlat_factor;
        unsigned programs;
        AdaptDecision last;
} Adapt;

/**
 * adapt_init() - start adapting one controller at @now_ns
 * @ret_table: the table to program now (apst_build()'s for APST_POLICY_ADAPTIVE)
 * Return: 0, -EINVAL, -ERANGE (npss > 31).
 */
int adapt_init(Adapt *a, const IdCtrl *id, const ApstPlatform *plat, const ApstParams *p, uint64_t now_ns,
               ApstTable *ret_table);

/* When the watcher wants its next reading. */
static inline uint64_t adapt_next(const Adapt *a) {
        return watch_next(&a->watch);
}

/**
 * adapt_feed() - a reading of the disk's counters at @now_ns (due at adapt_next())
 * Return: 1 with @ret_table and @ret_why (may be NULL) filled in: program this table;
 * 0: keep the one in force.
 */
int adapt_feed(Adapt *a, uint64_t now_ns, const WatchStat *st, ApstTable *ret_table, AdaptDecision *ret_why);

/**
 * adapt_sim_policy() - the policy behind the simulator's seam: sampled every
 * WATCH_FAST_NS, it reads the counters only when its watcher would (adapt_next()).
 * @a must have been adapt_init()ed at 0 and outlive the run.
 */
void adapt_sim_policy(SimPolicy *ret, Adapt *a);

/* "ps0→ps3 after 100 ms, ps4 after 2000 ms more", or "no transitions". */
void adapt_chain_describe(const AdaptChain *c, char *buf, size_t n);
