/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The policy lab's physical model (pure: no I/O, no logging).
 *
 * Given a drive's power states, an I/O trace and a policy, sim_run() says how
 * much energy the drive spends and how much latency the I/O pays; sim_optimum()
 * gives the offline limit for the same trace. The model is doc/energy-model.md's; every
 * assumption it makes is listed in doc/simulator.md. In short:
 *
 *  - The drive serves one I/O at a time, first come first served, each in
 *    SimParams.service_ns, at PS0 power.
 *  - Between the last completion and the next arrival it is idle and follows
 *    the programmed APST chain from PS0: in state s it waits ITPT(s) ms of
 *    idleness *in s*, then enters ITPS(s), which takes that state's entry
 *    latency; then the target's own entry applies, and so on.
 *  - An I/O that arrives while the drive rests in state t waits t's exit
 *    latency; while it is entering t, the rest of the entry plus the exit.
 *  - Transitions (entry and exit) cost PS0 idle power; resting in t costs t's
 *    power (its idle power when reported, else its max power).
 *  - A policy programs a table at t = 0 and may reprogram whenever it is
 *    sampled. Reprogramming does not wake the drive; it restarts the idle
 *    timer of the state the drive rests in (an admin command is activity).
 *
 * Time is integer ns throughout; energy is in joules.
 *
 * Policies plug in through SimPolicy, the same seam the daemon uses: a static
 * policy (budget, kernel, none) answers once at t = 0 from the daemon's own
 * apst_build(); an adaptive one is also sampled every sample_period_ns with
 * the counters /sys/block/X/stat would show at that moment (SimBlockStat),
 * never with the trace, and may answer "reprogram with table T".
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apst.h"
#include "gaphist.h"
#include "idctrl.h"
#include "trace.h"

/* PS0 idle power when the drive does not report it (the PSD's idle-power
 * field is 0 on every sample drive): the value the budget policy assumes when
 * it plans (0.3 W, inside doc/energy-model.md's measured ~0.06–0.7 W), so policy and
 * judge agree unless the user says otherwise with --idle-power-w. */
#define SIM_P0_DEFAULT_UW APST_P0_DEFAULT_UW
/* Time to serve one I/O: 100 µs, about a 4 KiB read on a consumer NVMe drive
 * (writes land in its cache faster, large transfers take longer). */
#define SIM_SERVICE_DEFAULT_NS 100000u
/* Upper bound on policy samples in one run (10^8: 115 days at 100 ms), so a
 * hostile trace cannot keep the simulator busy for hours. */
#define SIM_MAX_SAMPLES 100000000u

typedef struct SimState {
        uint32_t power_uw;         /* power while resting here (ps0: its idle power) */
        uint32_t enlat_us;         /* entry latency; 0 = not reported = instant */
        uint32_t exlat_us;         /* exit latency; 0 = not reported = instant */
        bool non_operational;      /* may be an APST target */
} SimState;

typedef struct SimDrive {
        unsigned npss;             /* highest state index, <= 31 */
        bool p0_reported;          /* ps[0].power_uw came from the drive's idle-power field */
        SimState ps[APST_ENTRIES];
} SimDrive;

/**
 * sim_drive_from_idctrl() - the model's view of an Identify Controller
 * @p0_fallback_uw: PS0 idle power to use when psd[0] reports none
 *
 * A state's power is its idle power (IDLP) when reported, else its max power.
 * Return: 0 or -ERANGE (npss > 31).
 */
int sim_drive_from_idctrl(const IdCtrl *id, uint32_t p0_fallback_uw, SimDrive *ret);

/* A drive that wakes slower than it says: exit latencies a multiple of the advertised ones. */
#define SIM_EXLAT_SCALE_MAX 100.0

/**
 * sim_drive_scale_exlat() - make every state's real exit latency @scale times the
 * advertised one (rounded to µs, capped at UINT32_MAX). The policies still plan
 * from the Identify data, so this is a drive that lies about its wake-up: the
 * seed drive's ps4 took ~3x its advertised exit latency (doc/simulator.md).
 * Return: 0, or -EINVAL unless 0 < @scale <= SIM_EXLAT_SCALE_MAX (1 = honest).
 */
int sim_drive_scale_exlat(SimDrive *d, double scale);

/**
 * sim_table_check() - can the model follow this table on this drive?
 *
 * With APSTE set: reserved bits zero, no entry beyond npss, every target a
 * non-operational state <= npss other than its source, and no cycle (so an
 * idle period has at most 31 transitions). With APSTE clear anything goes.
 * Return: 0, -EINVAL, or -ELOOP for a cycle.
 */
int sim_table_check(const SimDrive *d, const ApstTable *t);

/* /sys/block/X/stat at one moment, field for field (Documentation/block/stat.rst):
 * I/Os and merges are counts, sectors are 512 bytes, ticks are ms. The model
 * never merges, so the *_merges fields stay 0. */
typedef struct SimBlockStat {
        uint64_t read_ios, read_merges, read_sectors, read_ticks;
        uint64_t write_ios, write_merges, write_sectors, write_ticks;
        uint64_t in_flight, io_ticks, time_in_queue;
        uint64_t discard_ios, discard_merges, discard_sectors, discard_ticks;
        uint64_t flush_ios, flush_ticks;
} SimBlockStat;

typedef struct SimPolicy {
        const char *name;
        /* How often the live watcher would sample this policy; 0 = never (static). */
        uint64_t sample_period_ns;
        /* The table to program at t = 0. Return 0 or negative errno. */
        int (*start)(void *userdata, ApstTable *ret_table);
        /* Called at k * sample_period_ns (k >= 1) with the counters of that
         * moment. Return 1 and fill @ret_table to reprogram, 0 to keep the
         * table, or negative errno to abort the run. May be NULL. */
        int (*sample)(void *userdata, uint64_t now_ns, const SimBlockStat *st, ApstTable *ret_table);
        /* The exact source (eBPF): called at k * sample_period_ns with every idle gap
         * whose first request completed since the previous call (gaphist_add_gap():
         * the gap from the last completion to the next issue, and that request's
         * service time, wake-up included), only when there is at least one. Return as
         * sample(). May be NULL; a policy has sample() or gaps(), not both. */
        int (*gaps)(void *userdata, uint64_t now_ns, const GapHist *delta, ApstTable *ret_table);
        /* The exact source: the time from which the policy wants gaps() called at a sample even
         * with an empty delta (the daemon's timer for a look while the disk is idle), UINT64_MAX
         * when it does not. May be NULL. */
        uint64_t (*recheck)(void *userdata);
        /* The exact source's floors for gaps a wake-up hid (gaphist.h), counted as the eBPF
         * program counts them: the first hide_floors of hide_floor_ns (idctrl_wake_floors()). */
        size_t hide_floors;
        uint64_t hide_floor_ns[GAP_HIDE_FLOORS];
        /* Why the table just returned by sample() was chosen, in words (what the daemon
         * would log). May be NULL. */
        void (*reason)(void *userdata, char *buf, size_t n);
        void *userdata;
} SimPolicy;

/* A policy that programs @table at t = 0 and never again. @table must outlive the policy. */
void sim_policy_static(SimPolicy *ret, const char *name, const ApstTable *table);

/* What the drive does from SimStateChange.t_ns on, for a picture of a run. */
typedef enum SimActivity {
        SIM_ACTIVITY_SERVE,        /* serving I/O, in PS0 */
        SIM_ACTIVITY_REST,         /* idle, resting in ps */
        SIM_ACTIVITY_ENTER,        /* idle, entering ps */
        SIM_ACTIVITY_EXIT,         /* waking from ps for an I/O that waits */
        _SIM_ACTIVITY_MAX,
        _SIM_ACTIVITY_INVALID = -EINVAL,
} SimActivity;

typedef struct SimStateChange {
        uint64_t t_ns;
        unsigned ps;
        SimActivity activity;
} SimStateChange;

/* Upper bound on SimResult.timeline (4 Mi changes, 64 MiB): a picture needs far fewer. */
#define SIM_TIMELINE_MAX (UINT32_C(1) << 22)

const char *sim_activity_to_string(SimActivity a);

/* One workload of a sequence (SimParams.segments): a stretch of the trace, from its I/O @first
 * on to the next segment's first, that begins at @start_ns (its windows are measured from there)
 * and is open or closed loop on its own. A closed-loop segment's delays carry on within it only:
 * the next segment's I/O arrive at their own times, behind the drive if it is still busy. */
typedef struct SimSegment {
        size_t first;
        uint64_t start_ns;
        bool closed_loop;
} SimSegment;

/* What the drive did over a stretch of time: the energy, the wake delay of the I/O that arrived
 * in it and their wake-ups, and how many I/O arrived. */
typedef struct SimFigures {
        double energy_j;
        uint64_t stall_ns;
        uint64_t wakeups;
        uint64_t ios;
        uint64_t span_ns;
} SimFigures;

typedef struct SimSegmentResult {
        SimFigures whole;          /* from its start to the next segment's (or the last completion) */
        SimFigures window;         /* its first SimParams.window_ns (all of it when shorter) */
        int64_t added_wall_ns;     /* its last completion minus the same without power management */
} SimSegmentResult;

/* Upper bound on SimParams.n_segments. */
#define SIM_SEGMENTS_MAX 64u

typedef struct SimParams {
        uint64_t service_ns;       /* time to serve one I/O; SIM_SERVICE_DEFAULT_NS */
        /* false: open loop, I/Os arrive at their trace times whatever happened before.
         * true: closed loop, each I/O depends on the one before it (one thread doing
         * synchronous I/O), so when an I/O completes late every later one is issued
         * that much later; added_wall_ns is then the job's added run time. */
        bool closed_loop;
        /* sim_run() records SimResult.timeline: every change of activity or state. */
        bool timeline;
        /* The drive's last I/O completed at t = 0 (a later copy in sim_run_repeat()): the
         * first I/O ends a gap on the exact source, as every later one does. */
        bool continued;
        /* A sequence of workloads (NULL: the trace is one segment, SimParams.closed_loop's):
         * starts in time order, the first segment's first I/O 0, each segment's first I/O after
         * the previous one's; SimResult.segments gets each one's figures. closed_loop is then
         * ignored. */
        const SimSegment *segments;
        size_t n_segments;
        uint64_t window_ns;        /* SimSegmentResult.window's length; 0: none */
} SimParams;

#define SIM_PARAMS_DEFAULT ((SimParams) { .service_ns = SIM_SERVICE_DEFAULT_NS, .closed_loop = false })

#define SIM_REASON_MAX 384

typedef struct SimReprogram {
        uint64_t t_ns;
        ApstTable table;
        char reason[SIM_REASON_MAX];   /* from SimPolicy.reason(), "" when none */
} SimReprogram;

typedef struct SimResult {
        uint64_t ios;
        uint64_t duration_ns;      /* from 0 to the last completion */
        double energy_j;
        double mean_power_w;       /* energy_j / duration; 0 for an empty trace */
        uint64_t wakeups[APST_ENTRIES];  /* arrivals that found the drive in, or entering, state i */
        uint64_t wakeups_total;
        uint64_t resident_ns[APST_ENTRIES]; /* time resting in each state while idle */
        uint64_t transition_ns;    /* time entering or exiting states */
        uint64_t stall_ns;         /* total time I/Os waited for the drive to wake */
        /* Added latency of one I/O: its response time (completion - arrival) minus its
         * response time with no power management on the same trace. */
        double added_mean_ns;
        uint64_t added_p99_ns, added_p999_ns, added_max_ns;  /* nearest-rank percentiles */
        int64_t added_wall_ns;     /* last completion minus the same without power management */
        SimReprogram *reprograms;  /* every table programmed, first at t = 0; malloc'd */
        size_t n_reprograms;
        /* With SimParams.timeline (sim_run() only): what the drive did, from t = 0 to the
         * last completion, one entry per change, in time order; malloc'd. */
        SimStateChange *timeline;
        size_t n_timeline;
        /* The block counters (as SimPolicy.sample() sees them) at the last completion:
         * where a later copy of the trace carries on from (sim_run_repeat()). Filled
         * for a policy with sample() only, zero otherwise. */
        SimBlockStat end_stat;
        /* With SimParams.segments: each segment's figures, in order; malloc'd. */
        SimSegmentResult *segments;
        size_t n_segments;
} SimResult;

/**
 * sim_run() - simulate one policy on one trace
 * @io: I/Os sorted by t_ns (as trace_parse() returns them)
 * @ret: filled in on success; free with sim_result_done()
 *
 * Return: 0, -EINVAL (bad params or segments, unsorted trace, or a table sim_table_check()
 * refuses), -ELOOP, -E2BIG (more than SIM_MAX_SAMPLES samples, or more than
 * SIM_TIMELINE_MAX timeline entries), -ENOMEM,
 * or the policy's own error.
 */
int sim_run(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p, const SimPolicy *pol,
            SimResult *ret);

/* Upper bound on sim_run_repeat()'s copies: 1000 copies of a one-hour trace are six
 * weeks of a daemon's learning, beyond any decay the policy applies, and bound the run. */
#define SIM_COPIES_MAX 1000u

/**
 * sim_run_repeat() - the trace played @copies times back to back to one policy that keeps
 * what it learned, only the last copy scored (a warm run; doc/simulator.md)
 *
 * Each copy is one sim_run() of the trace as given: the drive starts it in PS0 at its own
 * t = 0, as a cold run does, so a policy that learns nothing scores the same in every copy.
 * The policy sees one continuous time: copy k + 1 starts where copy k's last completion
 * was (its now_ns carries the earlier copies' durations), and block counters carry on from
 * copy k's end_stat, as the same daemon watching one disk would see them. @ret is the last
 * copy's result, its times copy-relative; @copies = 1 is sim_run(). With @copies > 1 and
 * @ret_first not NULL, the first copy's result goes there too (free it as @ret): it is a cold
 * run's, as the first copy is one, so one call gives both figures.
 * Return: as sim_run(), or -EINVAL unless 1 <= @copies <= SIM_COPIES_MAX.
 */
int sim_run_repeat(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p, const SimPolicy *pol,
                   unsigned copies, SimResult *ret, SimResult *ret_first);

/**
 * sim_gap_optimum() - least energy to spend an idle gap of @gap_ns knowing its length:
 * min(P0 * T, min over non-operational i with e_i + x_i <= T of P0 * (e_i + x_i) + P_i * (T - e_i - x_i)).
 * @ret_state: the state chosen, 0 = stay in PS0 (may be NULL)
 * Return: joules.
 */
double sim_gap_optimum(const SimDrive *d, uint64_t gap_ns, unsigned *ret_state);

/**
 * sim_optimum() - the offline oracle: each idle gap of the no-power-management
 * schedule spent in its best state (sim_gap_optimum), waking just in time, so
 * no I/O waits. wakeups[i] counts the gaps spent in i.
 * Return: 0, -EINVAL, -ENOMEM.
 */
int sim_optimum(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p, SimResult *ret);

void sim_result_done(SimResult *r);
