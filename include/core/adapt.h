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

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "gaphist.h"
#include "idctrl.h"
#include "learned.h"
#include "passive-calib.h"
#include "shadow.h"
#include "watch.h"

#define ADAPT_MAX_STEPS 3u
#define ADAPT_DECIDE_NS UINT64_C(2000000000)        /* think at most every 2 s */
#define ADAPT_RATE_LIMIT_NS UINT64_C(20000000000)   /* reprogram for energy at most every 20 s */
#define ADAPT_FIX_NS UINT64_C(2000000000)           /* ... for a stall overrun at most every 2 s */
#define ADAPT_MIN_GAIN 0.10                         /* idle energy saved, to be worth a command */
#define ADAPT_WARMUP_GAPS 8.0                       /* gaps seen before the first decision */

/* The exact source (eBPF: every gap, and the first request's service time after it). */
#define ADAPT_GAPS_PERIOD_NS UINT64_C(500000000)     /* deltas come every 0.5 s while gaps end */
#define ADAPT_GAPS_DECIDE_NS UINT64_C(500000000)     /* think at most every 0.5 s */
/* The evidence: the gap histogram decisions are made on remembers about this many gaps of
 * ADAPT_TRUST_MIN_GAP_NS or more, each new one fading the rest by 1/ADAPT_EVIDENCE_GAPS,
 * however long they took to come: seconds of a busy disk (where the gaps of 20 s ago say
 * little about the next), hours of a quiet one (where 20 s hold one gap). 1000 gaps bound a
 * never-seen share of gap lengths to 0.1% (ADAPT_CONFIDENCE_Z 1): enough to leave the
 * kernel's table on a workload where one gap in twenty ends in its deepest state. */
#define ADAPT_EVIDENCE_GAPS 1000.0
#define ADAPT_GAPS_ENERGY_NS UINT64_C(2000000000)    /* reprogram for energy at most every 2 s */
#define ADAPT_GAPS_MIN_GAIN 0.03                     /* idle energy saved, to be worth a command */
/* A change of workload. The evidence remembers a thousand gaps: when a quiet
 * spell gives way to a busy one, a table chosen for the quiet gaps wakes the drive on every
 * busy one, and the evidence, still full of the quiet gaps, says it is within the kernel's
 * wake delay while the guard's window fills with the excess. A second histogram forgets half
 * in ADAPT_GAPS_FAST_HALF_LIFE_NS. Once it holds SHADOW_GUARD_MIN_GAPS gaps, and the table in
 * force costs more wake delay on it than the kernel's would, at a rate that would use up what
 * the window saved against the kernel's within ADAPT_SHIFT_HORIZON_NS, the policy chooses
 * again at once, and for ADAPT_SHIFT_HORIZON_NS its candidates must meet that bound on the
 * recent gaps too: before the guard has to fall back. */
#define ADAPT_GAPS_FAST_HALF_LIFE_NS UINT64_C(2000000000)
#define ADAPT_SHIFT_HORIZON_NS UINT64_C(10000000000)
/* Evidence (gaps of at least ADAPT_TRUST_MIN_GAP_NS seen since the drive was first
 * watched, kept across restarts) before the policy trusts what it learned: for the first
 * ADAPT_TRUST_HOLD_GAPS the wake delay allowed is the stall budget's (and never more than
 * the kernel's table's), then the kernel's table's. Gaps shorter than any table's first step
 * tell nothing about where a table should sleep, so they do not count. The hold covers a
 * short job (the seed job is about 40 such gaps); a workload that goes on past it has shown
 * itself. */
#define ADAPT_TRUST_MIN_GAP_NS UINT64_C(1000000)
#define ADAPT_TRUST_HOLD_GAPS 50.0
/* Gaps (of at least ADAPT_TRUST_MIN_GAP_NS) seen before the first decision. */
#define ADAPT_GAPS_WARMUP 2.0
/* Leaving the kernel's table takes confidence (doc/policy.md, "The evidence"): the share of
 * gaps that fall where a candidate waits longer than the kernel's table is bounded
 * ADAPT_CONFIDENCE_Z standard deviations up (Wilson), the share where it waits less as many
 * down, and the extra wake delay that makes, at worst, must stay within the guard's tolerance
 * (SHADOW_GUARD_TOLERANCE) of the kernel's wake delay on the same evidence. 1 (a one-sided
 * 84% bound) was chosen on half A of the benchmark's trace families, against 1.5 and 2, which
 * gave up energy there (generated, warm: 0.628x and 0.633x the kernel's, against 0.555x) for
 * no row fewer over 2% (doc/policy.md, "Where the constants come from"). */
#define ADAPT_CONFIDENCE_Z 1.0
/* The share of the stall budget a new table may plan to spend, while the stall budget holds
 * (the hold, or a budget the user set): the budget is a point estimate on few gaps, and the
 * seed job, which the hold protects, ends before evidence could bound it. Without it the seed
 * job took 1.03% added time on the Intel 670p (half A). */
#define ADAPT_BUDGET_FILL 0.8
/* The stall budget is a share of at least this much time: over the first seconds, a share of
 * the time elapsed is a few milliseconds, one deep wake-up would overrun it, and the table
 * that answers the overrun (nothing deeper than the kernel's, or nothing at all) would then be
 * held for seconds at a cost in energy far above the wake delay it saves. */
#define ADAPT_BUDGET_MIN_SPAN_NS UINT64_C(5000000000)
/* A stall budget the user set, charged per wake-up (doc/policy.md, "The stall bucket"). Every
 * wake-up the drive is measured to cost is paid from a bucket that refills at ADAPT_BUCKET_FILL
 * of the stall budget's rate up to ADAPT_BUDGET_BURST_NS of it (20 ms at 1%); what it cannot pay
 * is a debt, repaid from the refill. Over any stretch of T the tables in force then wait at most
 * ADAPT_BUCKET_FILL x budget x T + the bucket, within the budget for every job of
 * BURST / (1 - FILL) = 6.7 s or more, whatever the evidence said before the job began. On the
 * burst's gaps (those of the last seconds short enough that the bucket cannot refill within
 * one), a new table may cost at most the refill, less the debt spread over
 * ADAPT_BUDGET_HORIZON_NS; the table in force may also spend what the bucket holds over the
 * same horizon, and backs off at once when it no longer can. The default budget does not bind
 * so: bound always, or while a workload is young, it cost the energy the policy exists to save
 * (doc/policy.md). 0.7 leaves room for a first reading's wake-ups, paid before any decision, on
 * a drive that wakes 3x slower than it says. */
#define ADAPT_BUCKET_FILL 0.7
#define ADAPT_BUDGET_BURST_NS UINT64_C(2000000000)
#define ADAPT_BUDGET_HORIZON_NS UINT64_C(2000000000)
/* First requests after gaps settled in a state before its wake cost is believed ahead
 * of passive calibration's own estimate (which also needs awake requests). */
#define ADAPT_EXLAT_EARLY_SAMPLES 2u
/* The guard judges a new table's energy only after it has been in force this long (one
 * window slot); its wake delay, at once. */
#define ADAPT_GUARD_DWELL_NS UINT64_C(10000000000)
/* After the guard fell back: at least this long on the kernel's table, and new evidence. */
#define ADAPT_RETRY_NS UINT64_C(120000000000)
/* Evidence that changed: an exit latency estimate that moved by this share, or a
 * gap histogram this far (total variation distance) from the one at the fallback, or
 * that share of the evidence new since then. */
#define ADAPT_RETRY_EXLAT_CHANGE 0.25
#define ADAPT_RETRY_HIST_DISTANCE 0.25

typedef enum AdaptSource {
        ADAPT_SOURCE_STAT,         /* /sys/block/X/stat sampled by the watcher (adapt_feed) */
        ADAPT_SOURCE_BPF,          /* exact gaps (adapt_observe_gaps) */
        _ADAPT_SOURCE_MAX,
        _ADAPT_SOURCE_INVALID = -EINVAL,
} AdaptSource;

const char *adapt_source_to_string(AdaptSource s);
AdaptSource adapt_source_from_string(const char *s);

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
        char reason[512];
        double io_rate;            /* I/Os per second (decayed window) */
        uint64_t median_gap_ns;
        double observed_stall;     /* wake cost the ticks showed, share of elapsed time */
        double expected_stall;     /* the new table on the gaps seen, share of elapsed time */
        double kernel_stall;       /* the kernel's table on the same gaps */
        double limit_stall;        /* what the table had to stay within */
        double energy_vs_kernel;   /* idle energy of the new table over the kernel's, same gaps */
        double exlat_factor;       /* real / advertised wake cost, from the ticks (>= 1) */
        double hidden_gaps;        /* exact source: gaps the drive's wake-ups hid, in the evidence */
        bool guard;                /* the shadow kernel's guard chose this table */
        bool backoff;              /* the stall bucket could no longer pay the table in force */
        double bucket_ms;          /* exact source: what the stall bucket held */
} AdaptDecision;

typedef struct Adapt {
        IdCtrl id;
        bool enabled;              /* APST supported, not quirked off, max_latency_us > 0 */
        uint32_t budget_pct_x100;  /* ApstParams.stall_budget_pct_x100: 100 = 1% */
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

        /* The exact source (adapt_observe_gaps()) */
        AdaptSource source;        /* the source that fed it last (stat until gaps come) */
        ApstParams params;
        bool budget_explicit;      /* the user set stall_budget_pct: it always holds */
        ShadowDrive sd;            /* the model, with the exit latencies seen */
        ShadowDrive sd_cand;       /* the same, unmeasured states slowed like the measured ones */
        ShadowChain kernel_sc;
        ApstTable kernel_table;
        Shadow shadow;             /* applied vs kernel, window and since start */
        ShadowHist hist;           /* the evidence decisions are made on (ADAPT_EVIDENCE_GAPS) */
        double hist_elapsed_ns;    /* time the evidence covers, faded the same */
        size_t hide_floors;        /* idctrl_wake_floors() */
        uint64_t hide_floor_ns[GAP_HIDE_FLOORS];
        ShadowHist hidden[GAP_HIDE_FLOORS];   /* the gaps wake-ups hid over the same span, per floor */
        ShadowHist hidden_after;   /* ... and after which gaps such wake-ups came (gaphist.h) */
        ShadowHist recent;         /* decayed (ADAPT_GAPS_FAST_HALF_LIFE_NS): the last seconds' gaps */
        double recent_elapsed_ns;  /* decayed time it covers */
        uint64_t shift_until_ns;   /* candidates answer to the recent gaps too until then */
        double spent_wake_ns;      /* faded the same: wake delay the tables in force cost */
        double bucket_ns;          /* the stall bucket (ADAPT_BUDGET_BURST_NS): wake delay it may still pay */
        ShadowHist burst;          /* the burst's gaps (decayed, ADAPT_GAPS_FAST_HALF_LIFE_NS) */
        uint64_t recheck_ns;       /* adapt_recheck_ns() */
        PassiveCalib pcal;         /* exit latencies measured from the first requests */
        double awake_svc_ns;       /* an awake request's service time, learned; < 0 unknown */
        double gaps_seen;          /* evidence since the drive was first watched (ADAPT_TRUST_MIN_GAP_NS) */
        double observed_ns;        /* time covered by deltas since the drive was first watched */
        uint64_t gaps_last_ns, gaps_decide_ns;
        bool table_changed;        /* a table was programmed since the last delta */
        bool fallen_back;          /* the guard put the kernel's table back */
        uint64_t fallback_ns;
        uint32_t fallback_exlat_us[SHADOW_STATES];
        ShadowHist fallback_hist;
        double fallback_gaps;      /* gaps_seen then */
} Adapt;

/**
 * adapt_init() - start adapting one controller at @now_ns
 * @ret_table: the table to program now (apst_build()'s for APST_POLICY_ADAPTIVE)
 * Return: 0, -EINVAL, -ERANGE (npss > 31).
 */
int adapt_init(Adapt *a, const IdCtrl *id, const ApstPlatform *plat, const ApstParams *p, uint64_t now_ns,
               ApstTable *ret_table);

/**
 * adapt_set_max_latency() - the budget its choices must stay within from now on
 * A latency hold lowers it (and its end raises it back) without a restart: what was observed
 * stays. The states a choice may use are those adapt_init()'s parameters allowed whose
 * enlat + exlat is within @max_latency_us; the kernel's table, the guard's fallback and its
 * reference, is not bounded by it (the daemon writes no choice beyond the budget in force).
 */
void adapt_set_max_latency(Adapt *a, uint32_t max_latency_us);

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
 * adapt_observe_gaps() - the exact source: what the eBPF program counted since the
 * previous call (gaphist_delta() of two readings), at @now_ns. Call it when gaps
 * ended (an empty delta changes nothing, so an idle disk needs no call), at most
 * every ADAPT_GAPS_PERIOD_NS is enough. The delta's wake figures are each gap's
 * first-request service time: the wake-up the table in force really cost.
 * Keeps the shadow kernel's accounting (a.shadow), runs its guard, and decides.
 * Return: 1 with @ret_table and @ret_why (may be NULL) filled in: program this table;
 * 0: keep the one in force; -EINVAL for a NULL argument.
 */
int adapt_observe_gaps(Adapt *a, const GapHist *delta, uint64_t now_ns, ApstTable *ret_table,
                       AdaptDecision *ret_why);

/**
 * adapt_start_exact() - the exact source is attached from now on: the table to program.
 * A drive with nothing learned starts on the kernel's own table (what it ran before the
 * daemon, and the reference the policy must not be worse than): the first deltas say
 * within a second whether its wake-ups exceed the stall budget, and the policy moves
 * then. Return: 0, -EINVAL.
 */
int adapt_start_exact(Adapt *a, ApstTable *ret_table);

/**
 * adapt_recheck_ns() - when the exact source wants to be asked again with no new gaps
 * A table the stall bucket held back from is due once the bucket has refilled: an idle disk
 * ends no gap, so the caller calls adapt_observe_gaps() with an empty delta at this time.
 * Return: the time, or UINT64_MAX when nothing is due.
 */
uint64_t adapt_recheck_ns(const Adapt *a);

/* What the policy learned about its drive, to keep across restarts (learned.h). */
void adapt_learned_capture(const Adapt *a, Learned *ret);

/**
 * adapt_learned_restore() - take up what an earlier run learned about this drive: the gap
 * histogram, the gaps its wake-ups hid, passive calibration's sums (so the measured exit
 * latencies) and the evidence count. Call after adapt_init() and before the first observation.
 * Return: 0; -ESTALE when @l is for another model, firmware or serial, or holds hidden gaps at
 * a floor this drive does not have (nothing is taken).
 */
int adapt_learned_restore(Adapt *a, const Learned *l);

/* The shadow kernel's figures: since start and over the window. */
void adapt_savings(const Adapt *a, ShadowSums *ret_total_applied, ShadowSums *ret_total_kernel,
                   ShadowSums *ret_window_applied, ShadowSums *ret_window_kernel);

/* "ps0→ps3 after 100 ms, ps4 after 2000 ms more", or "no transitions". */
void adapt_chain_describe(const AdaptChain *c, char *buf, size_t n);
