/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The shadow kernel (pure: no I/O, no clock, no logging).
 *
 * On the very I/O a drive served, what did the table in force cost, and what
 * would the kernel's own table have cost? Both are judged gap by gap with the
 * model of doc/energy-model.md: an idle gap of length g under a chain of
 * power states rests in each state until the next entry starts, pays entries
 * at PS0 power, and the first request after it waits the rest of an entry in
 * progress plus the exit latency of the state it found. Exit latencies are the
 * best known: the advertised one, or what the drive was seen to take when
 * that is longer (shadow_learn_exlat(), from the first-request service times
 * the eBPF source reports).
 *
 * The gaps come as GapHist deltas: counts per bucket of 4 per octave, so a
 * gap's length is known to within its bucket. A bucket is scored at
 * SHADOW_SUBPOINTS points spread evenly over it.
 *
 * Accounting (Shadow): per drive, for the applied table and for the kernel's,
 * energy and wake delay since start and over a sliding window. For the applied
 * table the wake delay is the measured one where the source measured it (the
 * service time of each first request after a gap, beyond an awake request's),
 * else the model's. The guard compares the two over the window.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaphist.h"

#define SHADOW_STATES 32u
#define SHADOW_MAX_STEPS 31u
#define SHADOW_SUBPOINTS 4u
/* The guard: the applied table may be at most this much worse than the kernel's,
 * on energy or on wake delay, over the window. */
#define SHADOW_GUARD_TOLERANCE 0.02
/* Wake delay the window must hold (the larger of the two tables') before the guard
 * judges wake delay: fewer than a couple of wake-ups is noise, not evidence. */
#define SHADOW_GUARD_MIN_WAKE_NS UINT64_C(20000000)   /* 20 ms */
/* Gaps the window must hold before the guard judges energy. */
#define SHADOW_GUARD_MIN_GAPS 20.0
/* Slots of the sliding window, each SHADOW_SLOT_NS long. */
#define SHADOW_SLOTS 12u
#define SHADOW_SLOT_NS UINT64_C(10000000000)          /* 10 s: the window is 2 minutes */
/* The window's length: what the guard, the surplus and status speak of. */
#define SHADOW_WINDOW_NS (SHADOW_SLOTS * SHADOW_SLOT_NS)

/* A drive as the model sees it. */
typedef struct ShadowDrive {
        unsigned npss;
        double p0_uw;                        /* PS0 idle power; transitions are charged at it */
        double power_uw[SHADOW_STATES];      /* resting power of each state */
        uint32_t enlat_us[SHADOW_STATES];
        uint32_t exlat_us[SHADOW_STATES];    /* advertised */
        uint32_t exlat_seen_us[SHADOW_STATES];  /* measured, 0 = not yet; used when larger */
        bool non_operational[SHADOW_STATES];
} ShadowDrive;

/* The best known exit latency of state @s: max(advertised, measured). */
uint32_t shadow_exlat_us(const ShadowDrive *d, unsigned s);

/* The idle chain a table makes the drive follow from PS0: step k enters state[k]
 * when the idle time since the last completion reaches start_ns[k]. */
typedef struct ShadowChain {
        unsigned n;
        unsigned state[SHADOW_MAX_STEPS];
        uint64_t start_ns[SHADOW_MAX_STEPS];
} ShadowChain;

/**
 * shadow_chain_from_table() - the chain a table makes from PS0: state s goes to
 * ITPS(s) after ITPT(s) ms of idleness in s (entry bits as Set Features 0x0C).
 * Stops at an entry with ITPT 0, a target out of range, or a state seen before.
 * @apste false gives the empty chain.
 */
void shadow_chain_from_table(const ShadowDrive *d, bool apste, const uint64_t entry[SHADOW_STATES],
                             ShadowChain *ret);

/* The same chain: the same states entered at the same idle times. */
bool shadow_chain_equal(const ShadowChain *x, const ShadowChain *y);

/* Energy (µW·ns) of one idle gap of @gap_ns under @c, the wake that ends it included,
 * and the wait of the request that ends it (ns). */
void shadow_gap_cost(const ShadowDrive *d, const ShadowChain *c, double gap_ns, double *ret_energy_uwns,
                     double *ret_wait_ns);

/* The same over every gap of @h (counts as doubles, so decayed histograms work too). */
typedef struct ShadowHist {
        double gaps[GAP_BUCKETS];
} ShadowHist;
void shadow_hist_from_gaphist(const GapHist *h, ShadowHist *ret);
void shadow_hist_cost(const ShadowDrive *d, const ShadowChain *c, const ShadowHist *h, double *ret_energy_uwns,
                      double *ret_wait_ns);

/* The mean wait of one gap in each bucket under @c (the gaps spread over the bucket as
 * shadow_hist_cost() spreads them), whether or not any was seen. */
void shadow_bucket_wait(const ShadowDrive *d, const ShadowChain *c, double ret_wait[GAP_BUCKETS]);

/* One side of the accounting. */
typedef struct ShadowSums {
        double energy_uwns;
        double wake_ns;
        double gaps;
        double wakes;                       /* gaps that ended with the drive out of PS0 */
        double entries;                     /* state entries begun (transitions into a sleep state) */
        double resident_ns[SHADOW_STATES];  /* idle time resting in each state (the model's) */
} ShadowSums;

typedef struct Shadow {
        ShadowSums total_applied, total_kernel;
        ShadowSums slot_applied[SHADOW_SLOTS], slot_kernel[SHADOW_SLOTS];
        /* Per slot: over its gaps, the sum of (a gap's wait under the applied table less its
         * wait under the kernel's)², ns², as the model scores the two (shadow_window_wake_spread_ns()). */
        double slot_wake_diff2[SHADOW_SLOTS];
        uint64_t slot_start_ns;             /* start of the current slot */
        unsigned slot;                      /* index of the current slot */
        bool started;
        uint64_t fallbacks;                 /* guard verdicts that sent the drive back */
} Shadow;

void shadow_init(Shadow *s, uint64_t now_ns);

/**
 * shadow_account() - one GapHist delta, observed at @now_ns while @applied was in
 * force. The kernel's table (@kernel) is scored on the same gaps with the best
 * known exit latencies. The applied table's wake delay is measured: each gap's
 * first-request service time beyond @awake_svc_ns (0 when not positive); while
 * @awake_svc_ns is unknown (< 0) it is the model's, like the kernel's. When
 * @applied is @kernel, the kernel's side is what was measured.
 */
void shadow_account(Shadow *s, const ShadowDrive *d, const ShadowChain *applied, const ShadowChain *kernel,
                    const GapHist *delta, double awake_svc_ns, uint64_t now_ns);

/* The window's sums (the last SHADOW_SLOTS slots, the current one included). The
 * window holds only gaps spent under a table other than the kernel's: it is what the
 * guard judges. The totals hold every gap. */
void shadow_window(const Shadow *s, ShadowSums *ret_applied, ShadowSums *ret_kernel);

/**
 * shadow_window_wake_spread_ns() - how far the phase of the gaps alone can put the applied
 * table's wake delay over the window ahead of the kernel's or behind it: one standard
 * deviation of the difference of the two sums, for a table that on average waits as long as
 * the kernel's, i.e. the square root of the sum over the window's gaps of each gap's
 * difference squared (the model's waits, so what measurement adds to the spread is left
 * out). 0 for an empty window.
 */
double shadow_window_wake_spread_ns(const Shadow *s);

typedef enum ShadowVerdict {
        SHADOW_OK,
        SHADOW_WORSE_ENERGY,
        SHADOW_WORSE_WAKE,
} ShadowVerdict;

/**
 * shadow_guard() - is the applied table more than SHADOW_GUARD_TOLERANCE worse than
 * the kernel's over the window? Once the window holds SHADOW_GUARD_MIN_GAPS gaps:
 * on wake delay, when it holds SHADOW_GUARD_MIN_WAKE_NS of it; on energy, when it does not
 * buy that much less wake delay in exchange (a table that spends energy to spare I/O its
 * wake-ups, as a stall budget asks, is a trade the user chose, not a failure). Wake delay
 * comes in whole wake-ups and falls with the phase of the gaps: an excess within @wake_slack_ns
 * beyond the tolerance (the caller passes the larger of one wake-up of the slowest state either
 * table enters and the window's spread, shadow_window_wake_spread_ns()) is not evidence. @why
 * (may be NULL) gets the figures in words; for wake delay, also what was allowed.
 */
ShadowVerdict shadow_guard(const Shadow *s, double wake_slack_ns, char *why, size_t n);

/* The journal's periodic account of one drive: what happened since the last one. */
#define SHADOW_REPORT_EVERY_NS UINT64_C(3600000000000)     /* at most hourly ... */
#define SHADOW_REPORT_SOONEST_NS UINT64_C(300000000000)    /* ... sooner, for a marked change, after 5 min */
#define SHADOW_REPORT_MARKED 0.10                          /* energy vs the kernel's moved by 10 points */

typedef struct ShadowReport {
        bool started;
        uint64_t last_ns;                   /* when the last account was given (or the start) */
        ShadowSums applied_at, kernel_at;   /* the totals then */
        uint64_t fallbacks_at;
        double last_ratio;                  /* applied / kernel energy in the last account; < 0 none yet */
} ShadowReport;

/* Start counting at @now_ns (nothing reported yet). */
void shadow_report_init(ShadowReport *r, const Shadow *s, uint64_t now_ns);
/* Is an account due: an hour since the last one with gaps since, or, five minutes at least
 * since the last one, a marked change (a guard fallback, or the period's energy against the
 * kernel's table 10 points from the last account's)? */
bool shadow_report_due(const ShadowReport *r, const Shadow *s, uint64_t now_ns);
/* The period's sums since the last account. */
void shadow_report_period(const ShadowReport *r, const Shadow *s, ShadowSums *ret_applied, ShadowSums *ret_kernel);
/* An account was given at @now_ns. */
void shadow_report_mark(ShadowReport *r, const Shadow *s, uint64_t now_ns);
/* "ps0 81.2%, ps3 10.1%, ps4 8.7%": the share of idle time resting in each state that had any. */
void shadow_residency_describe(const ShadowSums *x, char *buf, size_t n);

/* "41 J (38%) less than the kernel's table, wake delay 1.2 s against its 1.9 s" */
void shadow_describe(const ShadowSums *applied, const ShadowSums *kernel, char *buf, size_t n);
