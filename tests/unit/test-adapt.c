/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The watcher on synthetic /sys/block/X/stat sequences on a virtual clock, and the
 * adaptive policy through the simulator's seam on traces built here.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt.h"
#include "check.h"
#include "sim-adapt.h"
#include "sim.h"
#include "test-drives.h"
#include "watch.h"

#define MS(x) ((uint64_t) ((x) * 1000000.0 + 0.5))

static void test_parse(void) {
        WatchStat st;

        current = "parse";
        /* 17 fields: reads 10 (ticks 7), writes 20 (ticks 30), in flight 2, io_ticks 99,
         * discards 3 (ticks 4), flushes 5 (ticks 6) */
        CHECK(watch_stat_parse("      10        0       80        7       20        0      160       30        2"
                               "       99      120        3        0       24        4        5        6\n", &st) == 0);
        CHECK(st.ios == 38 && st.ticks_ms == 47 && st.in_flight == 2 && st.io_ticks_ms == 99);
        CHECK(watch_stat_parse("1 0 8 1 2 0 16 3 0 4 4\n", &st) == 0);    /* 11 fields, before 4.18 */
        CHECK(st.ios == 3 && st.ticks_ms == 4);
        CHECK(watch_stat_parse("1 0 8 1 2 0 16 3 0 4\n", &st) == -EINVAL);
        CHECK(watch_stat_parse("1 0 8 1 2 0 16 3 0 4 x\n", &st) == -EINVAL);
        CHECK(watch_stat_parse("", &st) == -EINVAL);
}

/* A disk that completes one I/O every @period_ms (at k * period), each paying @wake_ms of ticks,
 * until @until_ms; read at the watcher's own times until @end_ms. */
typedef struct Synth {
        double period_ms, wake_ms, until_ms;
} Synth;

static WatchStat synth_at(const Synth *s, uint64_t t_ns) {
        double t = (double) t_ns / 1e6;
        double last = t < s->until_ms ? t : s->until_ms;
        uint64_t n = (uint64_t) floor(last / s->period_ms) + 1;
        return (WatchStat) { .ios = n, .ticks_ms = (uint64_t) floor((double) n * s->wake_ms) };
}

static unsigned run_synth(Watch *w, const Synth *s, uint64_t end_ns, uint64_t *ret_last_dt) {
        unsigned readings = 0;
        uint64_t prev = 0;

        watch_init(w, 0);
        while (watch_next(w) <= end_ns) {
                uint64_t t = watch_next(w);
                WatchStat st = synth_at(s, t);
                WatchReport r;
                watch_feed(w, t, &st, &r);
                CHECK(r.next_ns > t);
                if (ret_last_dt)
                        *ret_last_dt = t - prev;
                prev = t;
                readings++;
        }
        return readings;
}

static void test_watch_activity(void) {
        Watch w;
        Synth s = { .period_ms = 300, .wake_ms = 10, .until_ms = 20000 };
        uint64_t last_dt = 0;

        current = "watch/periodic";
        run_synth(&w, &s, MS(20000), NULL);
        /* One I/O every 300 ms: the median gap is 300 ms to the sampling's precision. */
        uint64_t med = watch_gap_quantile(&w, 0.5);
        CHECK(med >= MS(250) && med <= MS(350));
        CHECK(fabs(watch_io_rate(&w) - 1000.0 / 300) < 0.4);
        /* Each I/O after a gap carries 10 ms of ticks beyond the (unknown, 0) baseline:
         * 10 / 300 = 3.3% of the time spent waking. */
        CHECK(fabs(watch_stall_fraction(&w) - 10.0 / 300) < 0.005);
        /* While I/O happens it reads every 50 ms or so (never slower than a quarter of 300 ms). */
        CHECK(w.readings >= 20000 / 80);

        current = "watch/back-off";
        /* The same, then 10 minutes of silence: the readings back off to 5 s. */
        unsigned n = run_synth(&w, &s, MS(620000), &last_dt);
        CHECK(last_dt == WATCH_SLOW_NS);
        /* From 20 s on: 1/4 of the idle time, so 5 s after 20 s of idleness; 600 s idle in
         * about 600 / 5 + a few dozen back-off steps. */
        Watch w2;
        Synth quiet = { .period_ms = 1e12, .wake_ms = 0, .until_ms = 0 };
        unsigned n2 = run_synth(&w2, &quiet, MS(600000), NULL);
        /* An idle disk from the start: at most 0.2 readings a second, plus the ramp. */
        CHECK(n2 <= 600 / 5 + 40);
        CHECK(watch_gap_total(&w2) == 0 && watch_stall_fraction(&w2) == 0);
        CHECK(n > n2);

        current = "watch/counters-reset";
        /* Counters that go backwards (a new disk behind the name) restart without a bogus gap. */
        Watch w3;
        WatchStat a = { .ios = 100, .ticks_ms = 100 }, b = { .ios = 1, .ticks_ms = 0 };
        WatchReport r;
        watch_init(&w3, 0);
        watch_feed(&w3, 0, &a, &r);
        watch_feed(&w3, MS(50), &b, &r);
        CHECK(r.ios == 0 && r.gap_ns == 0 && r.dt_ns == 0);
}

typedef struct Outcome {
        SimResult adaptive, kernel;
        Adapt a;
} Outcome;

static void run_source(const TraceIo *io, size_t n, bool closed, double exlat_scale, bool exact, Outcome *o) {
        IdCtrl id = drive_970_like();
        ApstParams p = APST_PARAMS_DEFAULT, kp = APST_PARAMS_DEFAULT;
        SimDrive d;
        SimPolicy pol;
        ApstTable start;
        ApstPlan kplan;
        SimParams sp = SIM_PARAMS_DEFAULT;

        sp.closed_loop = closed;
        p.policy = APST_POLICY_ADAPTIVE;
        CHECK(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
        CHECK(sim_drive_scale_exlat(&d, exlat_scale) == 0);
        CHECK(adapt_init(&o->a, &id, NULL, &p, 0, &start) == 0);
        if (exact)
                adapt_sim_policy_gaps(&pol, &o->a);
        else
                adapt_sim_policy(&pol, &o->a);
        CHECK(sim_run(&d, io, n, &sp, &pol, &o->adaptive) == 0);

        kp.policy = APST_POLICY_KERNEL;
        CHECK(apst_build(&id, NULL, &kp, &kplan) == 0);
        sim_policy_static(&pol, "kernel", &kplan.table);
        CHECK(sim_run(&d, io, n, &sp, &pol, &o->kernel) == 0);
}

static void run(const TraceIo *io, size_t n, bool closed, double exlat_scale, Outcome *o) {
        run_source(io, n, closed, exlat_scale, false, o);
}

static void done(Outcome *o) {
        sim_result_done(&o->adaptive);
        sim_result_done(&o->kernel);
}

/* Writes every 250..350 ms (a fixed pseudo-random sequence) for @secs seconds. */
static size_t seed_trace(TraceIo *io, size_t max, double secs) {
        size_t n = 0;
        uint64_t t = 0, x = 12345;

        while (n < max && (double) t < secs * 1e9) {
                io[n++] = (TraceIo) { .t_ns = t, .bytes = 4096, .op = TRACE_OP_WRITE };
                x = x * 6364136223846793005u + 1442695040888963407u;
                t += MS(250 + (double) ((x >> 33) % 100));
        }
        return n;
}

/* Poisson arrivals of 4 KiB reads, gaps of mean @mean_ms, for @secs seconds (a fixed
 * pseudo-random sequence from @seed). */
static size_t poisson_trace(TraceIo *io, size_t max, double mean_ms, double secs, uint64_t seed) {
        size_t n = 0;
        uint64_t t = 0, x = seed;

        while (n < max && (double) t < secs * 1e9) {
                io[n++] = (TraceIo) { .t_ns = t, .bytes = 4096, .op = TRACE_OP_READ };
                x = x * 6364136223846793005u + 1442695040888963407u;
                double u = ((double) (x >> 11) + 0.5) / 9007199254740992.0;
                t += (uint64_t) (-mean_ms * 1e6 * log(u));
        }
        return n;
}

static void test_seed(void) {
        static TraceIo io[4096];
        size_t n = seed_trace(io, 4096, 120);
        Outcome o;

        for (int lie = 0; lie <= 1; lie++) {
                current = lie ? "adapt/seed-lying-drive" : "adapt/seed";
                run(io, n, true, lie ? 3.0 : 1.0, &o);
                double dur = (double) o.adaptive.duration_ns;
                /* The kernel's table (ps4 after 100 ms) wakes from ps4 on every write. */
                CHECK(o.kernel.wakeups[4] >= n - 2);
                /* Adaptive keeps the job's added time within the budget (default 1%; the lying
                 * drive is caught after a few wake-ups) and well under the kernel's. */
                CHECK((double) o.adaptive.added_wall_ns <= APST_STALL_BUDGET_DEFAULT_PCT_X100 / 10000.0 * dur);
                CHECK(o.adaptive.stall_ns * 2 <= o.kernel.stall_ns);
                /* ... the honest drive while still sleeping between the writes: less energy than
                 * staying in PS0 (0.3 W). On the lying one ps3's real 3.6 ms exit every ~300 ms is
                 * over the budget: it stays awake. */
                if (!lie)
                        CHECK(o.adaptive.energy_j < 0.3 * dur * 1e-9 * 0.9);
                /* It did learn: at least one table after the start one, and few of them. */
                CHECK(o.adaptive.n_reprograms >= 2 && o.adaptive.n_reprograms <= 8);
                if (lie) {
                        /* The ticks gave the lie away: wake-ups cost ~3x the advertised exit. */
                        CHECK(o.a.exlat_factor > 2.0 && o.a.exlat_factor < 4.0);
                } else
                        CHECK(o.a.exlat_factor < 1.3);
                CHECK(o.a.last.reason[0] != 0 && strstr(o.a.last.reason, "ps0→ps") != NULL);
                /* The simulator keeps each table's reason, as the daemon would log it. */
                CHECK(o.adaptive.reprograms[0].reason[0] == 0);
                CHECK(strcmp(o.adaptive.reprograms[o.adaptive.n_reprograms - 1].reason, o.a.last.reason) == 0);
                CHECK(strstr(o.a.last.reason, "budget 1.00%") != NULL);
                if (lie)
                        CHECK(strstr(o.a.last.reason, "slower than it says") != NULL);
                done(&o);
        }
}

static void test_stationary(void) {
        static TraceIo io[8192];
        size_t n;
        Outcome o;

        current = "adapt/stationary-poisson";
        /* Poisson arrivals, mean gap 200 ms, for 600 s. */
        n = poisson_trace(io, 8192, 200, 600, 7);
        run(io, n, false, 1.0, &o);
        /* Converges: a handful of tables, the last one within the first 2 minutes. */
        CHECK(o.adaptive.n_reprograms <= 6);
        CHECK(o.adaptive.reprograms[o.adaptive.n_reprograms - 1].t_ns <= MS(120000));
        /* No more wake delay than the kernel, and less energy. */
        CHECK(o.adaptive.stall_ns <= o.kernel.stall_ns);
        CHECK(o.adaptive.energy_j < o.kernel.energy_j);
        done(&o);
}

static void test_no_oscillation(void) {
        static TraceIo io[8192];
        size_t n = 0;
        uint64_t t = 0;
        Outcome o;

        current = "adapt/alternating";
        /* Gaps alternate between 95 and 105 ms every 10 s, for 600 s: around any threshold
         * near 100 ms, the hysteresis and the rate limit must not chase each switch. */
        while (n < 8192 && t < MS(600000)) {
                io[n++] = (TraceIo) { .t_ns = t, .bytes = 4096, .op = TRACE_OP_WRITE };
                t += ((t / MS(10000)) % 2) ? MS(105) : MS(95);
        }
        run(io, n, false, 1.0, &o);
        /* It settles: the start table and at most two learned ones in 600 s (60 switches of
         * the workload), never two within ADAPT_FIX_NS. */
        CHECK(o.adaptive.n_reprograms <= 3);
        for (size_t i = 1; i < o.adaptive.n_reprograms; i++)
                CHECK(o.adaptive.reprograms[i].t_ns - o.adaptive.reprograms[i - 1].t_ns >= ADAPT_FIX_NS);
        CHECK(o.adaptive.stall_ns <= o.kernel.stall_ns);
        done(&o);
}

/* The exact source (adapt_observe_gaps()). */

static void test_exact_seed(void) {
        static TraceIo io[4096];
        size_t n = seed_trace(io, 4096, 13);
        Outcome o;

        for (int lie = 0; lie <= 1; lie++) {
                current = lie ? "exact/seed-lying-drive" : "exact/seed";
                run_source(io, n, true, lie ? 3.0 : 1.0, true, &o);
                double dur = (double) o.adaptive.duration_ns;
                CHECK(o.kernel.wakeups[4] >= n - 2);
                /* Nothing learned: it starts on the kernel's table and, within two seconds (the
                 * warm-up gaps, then one decision), keeps the 13 s job's added time within the 1%
                 * budget, far under the kernel's. */
                CHECK(memcmp(&o.adaptive.reprograms[0].table, &o.a.kernel_table, sizeof(ApstTable)) == 0);
                if (getenv("TEST_VERBOSE"))
                        for (size_t i = 0; i < o.adaptive.n_reprograms; i++)
                                fprintf(stderr, "seed %.2f %s\n", o.adaptive.reprograms[i].t_ns / 1e9, o.adaptive.reprograms[i].reason);
                CHECK(o.adaptive.n_reprograms >= 2 && o.adaptive.reprograms[1].t_ns <= MS(2000));
                /* and, on the honest drive, never by a table that sleeps not at all: the budget
                 * over the first seconds is a share of ADAPT_BUDGET_MIN_SPAN_NS, not of the few
                 * gaps seen (the lying drive's ps3 alone may cost more than the budget) */
                for (size_t i = 1; !lie && i < o.adaptive.n_reprograms; i++)
                        CHECK(strstr(o.adaptive.reprograms[i].reason, "no transitions") == NULL);
                CHECK((double) o.adaptive.added_wall_ns < APST_STALL_BUDGET_DEFAULT_PCT_X100 / 10000.0 * dur);
                CHECK(o.adaptive.stall_ns * 3 <= o.kernel.stall_ns);
                CHECK(o.a.source == ADAPT_SOURCE_BPF);
                /* The first requests after the kernel's ps4 showed its real wake-up. */
                if (lie)
                        CHECK(shadow_exlat_us(&o.a.sd, 4) > 2 * 8000);
                else
                        CHECK(shadow_exlat_us(&o.a.sd, 4) < 8000 * 5 / 4);
                CHECK(strstr(o.adaptive.reprograms[1].reason, "allowed") != NULL);
                /* The decision says what it measured when the drive lies (ps4: 24 ms, not 8), and
                 * nothing of the kind when it does not. */
                if (lie) {
                        const char *m = strstr(o.adaptive.reprograms[1].reason, "; measured wake-ups: ");
                        CHECK(m != NULL && strstr(m, "ps4 2") != NULL && strstr(m, " ms not 8.0") != NULL);
                        CHECK(o.a.last.exlat_factor > 2.5 && o.a.last.exlat_factor < 3.5);
                } else {
                        CHECK(strstr(o.adaptive.reprograms[1].reason, "measured wake-ups") == NULL);
                        CHECK(o.a.last.exlat_factor < 1.2);
                }
                /* The shadow kernel's totals: every gap counted on both sides, and the kernel's
                 * side is what its table really cost while it was in force. */
                CHECK(o.a.shadow.total_applied.gaps == o.a.shadow.total_kernel.gaps);
                CHECK(o.a.shadow.total_applied.gaps >= (double) n - 4);
                CHECK(o.a.shadow.total_kernel.wake_ns > 3 * o.a.shadow.total_applied.wake_ns);
                done(&o);
        }
}

static void test_exact_stationary(void) {
        static TraceIo io[8192];
        size_t n;
        Outcome o;

        current = "exact/stationary-poisson";
        n = poisson_trace(io, 8192, 200, 600, 7);
        run_source(io, n, false, 1.0, true, &o);
        if (getenv("TEST_VERBOSE"))
                for (size_t i = 0; i < o.adaptive.n_reprograms; i++)
                        fprintf(stderr, "%.1f %s\n", o.adaptive.reprograms[i].t_ns / 1e9, o.adaptive.reprograms[i].reason);
        /* No more wake delay than the kernel, and less energy; it settles in the first minutes (a
         * last refinement may wait for a window of gaps that makes it confident enough). Over the
         * first ADAPT_BUDGET_MIN_SPAN_NS the allowance shrinks as it is spent, and a table or two
         * more follow it; never one that sleeps not at all. */
        CHECK(o.adaptive.stall_ns <= o.kernel.stall_ns);
        CHECK(o.adaptive.energy_j < 0.9 * o.kernel.energy_j);
        CHECK(o.adaptive.n_reprograms <= 10);
        for (size_t i = 1; i < o.adaptive.n_reprograms; i++)
                CHECK(strstr(o.adaptive.reprograms[i].reason, "no transitions") == NULL);
        CHECK(o.adaptive.reprograms[o.adaptive.n_reprograms - 1].t_ns <= MS(300000));
        CHECK(o.a.shadow.fallbacks == 0);
        /* What it reports saving is what the simulator measured, within the model's bucket
         * resolution: both say less energy than the kernel's table. */
        CHECK(o.a.shadow.total_applied.energy_uwns < o.a.shadow.total_kernel.energy_uwns);
        done(&o);
}

/* A drive whose ps3 wakes 20x slower than it says (the kernel's table never uses ps3):
 * a table that sleeps in ps3 early looks cheap on paper; the first requests after it show
 * the real wake-up within a second, and the policy leaves ps3 (and, until they are
 * measured, trusts no other state's word either). */
static void test_exact_lying_state(void) {
        static TraceIo io[8192];
        IdCtrl id = drive_970_like();
        ApstParams p = APST_PARAMS_DEFAULT;
        SimParams sp = SIM_PARAMS_DEFAULT;
        SimDrive d;
        SimPolicy pol;
        ApstTable start;
        SimResult r, k;
        ApstPlan kplan;
        Adapt *a = calloc(1, sizeof(Adapt));
        size_t n = 0;
        uint64_t t = 0;

        current = "exact/lying-state";
        CHECK(a);
        /* Gaps alternate 30 and 300 ms: the kernel's table wakes from ps4 (8 ms) on every other one;
         * ps3 after a few ms (1.2 ms advertised) would wake on each, for less. */
        while (n < 8192 && t < MS(120000)) {
                io[n++] = (TraceIo) { .t_ns = t, .bytes = 4096, .op = TRACE_OP_READ };
                t += n % 2 ? MS(30) : MS(300);
        }
        p.policy = APST_POLICY_ADAPTIVE;
        p.stall_budget_pct_x100 = 1000;   /* 10%, set by the user: the kernel's wake delay binds */
        CHECK(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
        d.ps[3].exlat_us *= 20;
        CHECK(adapt_init(a, &id, NULL, &p, 0, &start) == 0);
        adapt_sim_policy_gaps(&pol, a);
        CHECK(sim_run(&d, io, n, &sp, &pol, &r) == 0);
        p.policy = APST_POLICY_KERNEL;
        CHECK(apst_build(&id, NULL, &p, &kplan) == 0);
        sim_policy_static(&pol, "kernel", &kplan.table);
        CHECK(sim_run(&d, io, n, &sp, &pol, &k) == 0);

        /* It tried ps3 first (once the gaps seen made it confident: a few seconds), measured it,
         * and left it within two seconds of trying it. */
        CHECK(r.n_reprograms >= 3);
        CHECK(strstr(r.reprograms[1].reason, "ps0→ps3") != NULL);
        CHECK(r.reprograms[1].t_ns <= MS(5000));
        CHECK(r.reprograms[2].t_ns <= r.reprograms[1].t_ns + MS(2000) &&
              strstr(r.reprograms[2].reason, "ps0→ps3 after 1 ms") == NULL);
        CHECK(shadow_exlat_us(&a->sd, 3) > 10 * 1200);
        CHECK(r.wakeups[3] < 10);
        /* Over the two minutes: within 5% of the kernel's table's wake delay (the second on ps3
         * paid for the lesson: 2.5% on this trace), for less energy. */
        CHECK((double) r.stall_ns <= 1.05 * (double) k.stall_ns);
        CHECK(r.energy_j < k.energy_j);
        if (getenv("TEST_VERBOSE")) {
                fprintf(stderr, "stall %.3f s, kernel %.3f s; energy %.3f J, kernel %.3f J\n", r.stall_ns / 1e9,
                        k.stall_ns / 1e9, r.energy_j, k.energy_j);
                for (size_t i = 0; i < r.n_reprograms; i++)
                        fprintf(stderr, "%.1f %s\n", r.reprograms[i].t_ns / 1e9, r.reprograms[i].reason);
        }
        sim_result_done(&r);
        sim_result_done(&k);
        free(a);
}

/* A quiet spell, then a busy one: 30 s of reads 100 ms apart on average, then a minute 10 ms
 * apart. The quiet gaps take the policy to a table that sleeps after a few ms; on the busy
 * ones that table wakes the drive on almost every gap, where the kernel's (ps4 after 100 ms)
 * hardly sleeps. The decision histogram, full of quiet gaps, still finds it within the
 * kernel's wake delay; the last seconds' gaps do not, and a table that sleeps later goes in
 * within a few seconds, before the guard's window is used up: no fallback, and over the whole
 * trace the kernel's wake delay within the guard's tolerance, for 15% less energy. */
static void test_exact_workload_change(void) {
        static TraceIo io[16384];
        size_t n, m;
        Outcome o;
        bool changed = false;

        current = "exact/workload-change";
        n = poisson_trace(io, 16384, 100, 30, 11);
        m = poisson_trace(io + n, 16384 - n, 10, 60, 12);
        for (size_t i = n; i < n + m; i++)
                io[i].t_ns += MS(30000);
        run_source(io, n + m, false, 1.0, true, &o);
        if (getenv("TEST_VERBOSE")) {
                fprintf(stderr, "stall %.3f s, kernel %.3f s; energy %.3f J, kernel %.3f J; %" PRIu64 " fallbacks\n",
                        o.adaptive.stall_ns / 1e9, o.kernel.stall_ns / 1e9, o.adaptive.energy_j, o.kernel.energy_j,
                        o.a.shadow.fallbacks);
                for (size_t i = 0; i < o.adaptive.n_reprograms; i++)
                        fprintf(stderr, "%.1f %s\n", o.adaptive.reprograms[i].t_ns / 1e9, o.adaptive.reprograms[i].reason);
        }
        /* Off the kernel's table before the change ... */
        CHECK(o.adaptive.n_reprograms >= 2 && o.adaptive.reprograms[1].t_ns < MS(30000));
        /* ... and a table for the busy gaps within 3 s of it, saying why. */
        for (size_t i = 1; i < o.adaptive.n_reprograms; i++)
                if (o.adaptive.reprograms[i].t_ns >= MS(30000) && o.adaptive.reprograms[i].t_ns <= MS(33000) &&
                    strstr(o.adaptive.reprograms[i].reason, "; the last seconds' gaps woke it more than the kernel's "
                                                            "table would"))
                        changed = true;
        CHECK(changed);
        CHECK(o.a.shadow.fallbacks == 0);
        CHECK((double) o.adaptive.stall_ns <= (1.0 + SHADOW_GUARD_TOLERANCE) * (double) o.kernel.stall_ns);
        CHECK(o.adaptive.energy_j < 0.9 * o.kernel.energy_j);
        done(&o);
}

/* The guard's wiring: a window in which our table cost more wake delay than the kernel's
 * would have puts the kernel's table back with the figures, and it stays until the
 * evidence changes (ADAPT_RETRY_NS at least). */
/* Two minutes of Poisson reads (mean gap 200 ms) on the exact source, which takes the policy
 * off the kernel's table: where the guard tests start. */
static void run_off_kernel(Outcome *o) {
        static TraceIo io[8192];
        size_t n = poisson_trace(io, 8192, 200, 120, 7);

        run_source(io, n, false, 1.0, true, o);
        CHECK(memcmp(&o->a.current_table, &o->a.kernel_table, sizeof(ApstTable)) != 0);
}

static void test_exact_guard(void) {
        Outcome o;
        ApstTable table;
        AdaptDecision why;
        GapHist one = {};

        current = "exact/guard";
        run_off_kernel(&o);
        CHECK(shadow_guard(&o.a.shadow, 0, NULL, 0) == SHADOW_OK);

        /* What the drive would have reported had our table woken it far more than the model said. */
        unsigned slot = o.a.shadow.slot;
        o.a.shadow.slot_applied[slot].wake_ns += 1e9;
        uint64_t now = o.a.gaps_last_ns + MS(500);
        gaphist_add_gap(&one, MS(3), MS(0.1));
        CHECK(adapt_observe_gaps(&o.a, &one, now, &table, &why) == 1);
        CHECK(memcmp(&table, &o.a.kernel_table, sizeof(ApstTable)) == 0);
        CHECK(why.guard && strstr(why.reason, "the kernel's table again: the table in force spent more wake delay") != NULL);
        CHECK(o.a.shadow.fallbacks == 1 && o.a.fallen_back);
        /* Another minute: the guard tries none of its own tables again; only the stall bucket
         * may move it, off a kernel's table whose wake-ups on the last seconds' gaps (the
         * two minutes' 200 ms gaps, fading) it cannot pay, and back once it can, saying so. */
        for (unsigned i = 1; i <= 120; i++) {
                why = (AdaptDecision) {};
                int r = adapt_observe_gaps(&o.a, &one, now + i * MS(500), &table, &why);
                if (getenv("TEST_VERBOSE") && r != 0)
                        fprintf(stderr, "guard then: %d %d %d %s\n", r, why.backoff, why.guard, why.reason);
                CHECK(r == 0 || (r == 1 && why.backoff && strstr(why.reason, "; backed off: ")) ||
                      (r == 1 && strstr(why.reason, "the kernel's table again: the stall budget's bucket pays") &&
                       memcmp(&table, &o.a.kernel_table, sizeof(ApstTable)) == 0));
        }
        CHECK(o.a.fallen_back);
        done(&o);
}

/* Make @t the table in force, set the window's wake delay for it to @over_ns past the guard's
 * tolerance of the kernel's table's, and hand the policy one 3 ms gap at @now.
 * Return: adapt_observe_gaps()'s. */
static int guard_over(Outcome *o, const ApstTable *t, uint64_t over_ns, uint64_t now, ApstTable *ret_table,
                      AdaptDecision *ret_why) {
        ShadowSums wa, wk;
        GapHist one = {};

        o->a.current_table = *t;
        shadow_window(&o->a.shadow, &wa, &wk);
        o->a.shadow.slot_applied[o->a.shadow.slot].wake_ns +=
                (1.0 + SHADOW_GUARD_TOLERANCE) * wk.wake_ns + (double) over_ns - wa.wake_ns;
        gaphist_add_gap(&one, MS(3), MS(0.1));
        return adapt_observe_gaps(&o->a, &one, now, ret_table, ret_why);
}

/* The guard's slack is one wake-up of the slowest state either table enters: a table that trades
 * the kernel's ps4 wake-ups (8 ms) for ps3 ones (1.2 ms) is ahead or behind it by whole ps4
 * wake-ups as the gaps fall, so an excess of less than one ps4 wake-up beyond the tolerance is
 * not yet evidence against it; one more is. */
static void test_exact_guard_slack(void) {
        Outcome o;
        ApstTable table, shallow = { .apste = true };
        AdaptDecision why;

        current = "exact/guard-slack";
        run_off_kernel(&o);
        /* The table in force: ps3 after 5 ms, never ps4. */
        for (unsigned i = 0; i < 3; i++)
                shallow.entry[i] = apst_entry_make(3, 5);

        /* The gaps' spread out of the way (exact/guard-spread). */
        memset(o.a.shadow.slot_wake_diff2, 0, sizeof o.a.shadow.slot_wake_diff2);

        /* 4 ms beyond the tolerance: more than a ps3 wake-up, less than a ps4 one. */
        uint64_t now = o.a.gaps_last_ns + MS(500);
        (void) guard_over(&o, &shallow, MS(4), now, &table, &why);
        CHECK(!o.a.fallen_back && o.a.shadow.fallbacks == 0);

        /* 12 ms beyond it: more than one ps4 wake-up, so the kernel's table again. */
        CHECK(guard_over(&o, &shallow, MS(12), now + MS(500), &table, &why) == 1);
        CHECK(o.a.fallen_back && why.guard && memcmp(&table, &o.a.kernel_table, sizeof(ApstTable)) == 0);
        done(&o);
}

/* The guard's slack is also the spread of the gaps: where the two tables wait differently on many
 * gaps, the difference of the two sums wanders by about its standard deviation even when they wait
 * alike on average (shadow_window_wake_spread_ns()), so an excess within it is not yet evidence
 * against the table in force, however many wake-ups it is; one beyond it is. */
static void test_exact_guard_spread(void) {
        Outcome o;
        ApstTable table, kept;
        AdaptDecision why;

        current = "exact/guard-spread";
        run_off_kernel(&o);
        kept = o.a.current_table;
        /* A window whose gaps spread the difference by 30 ms: more than any wake-up of this drive. */
        memset(o.a.shadow.slot_wake_diff2, 0, sizeof o.a.shadow.slot_wake_diff2);
        o.a.shadow.slot_wake_diff2[o.a.shadow.slot] = (double) MS(30) * (double) MS(30);
        CHECK(fabs(shadow_window_wake_spread_ns(&o.a.shadow) - (double) MS(30)) < 1);

        /* 20 ms beyond the tolerance: two ps4 wake-ups and more, within the spread: kept. */
        uint64_t now = o.a.gaps_last_ns + MS(500);
        (void) guard_over(&o, &kept, MS(20), now, &table, &why);
        CHECK(!o.a.fallen_back && o.a.shadow.fallbacks == 0);

        /* 40 ms beyond it: beyond the spread too, so the kernel's table again. */
        CHECK(guard_over(&o, &kept, MS(40), now + MS(500), &table, &why) == 1);
        CHECK(o.a.fallen_back && why.guard && memcmp(&table, &o.a.kernel_table, sizeof(ApstTable)) == 0);
        done(&o);
}

/* The deepest state a table enters (0: none). */
static unsigned deepest_state(const ApstTable *t) {
        unsigned deepest = 0;

        for (unsigned i = 0; t->apste && i < APST_ENTRIES; i++)
                if (apst_entry_itpt(t->entry[i]) > 0)
                        deepest = apst_entry_itps(t->entry[i]) > deepest ? apst_entry_itps(t->entry[i]) : deepest;
        return deepest;
}

/* The policy for the test drive, defaults but a stall budget of @budget_pct_x100, on the exact
 * source from 0. */
static Adapt *exact_start_budget(uint32_t budget_pct_x100) {
        IdCtrl id = drive_970_like();
        ApstParams p = APST_PARAMS_DEFAULT;
        ApstTable table;
        Adapt *a = calloc(1, sizeof(Adapt));

        REQUIRE(a);
        p.policy = APST_POLICY_ADAPTIVE;
        p.stall_budget_pct_x100 = budget_pct_x100;
        REQUIRE(adapt_init(a, &id, NULL, &p, 0, &table) == 0);
        REQUIRE(adapt_start_exact(a, &table) == 0);
        return a;
}

static Adapt *exact_start(void) {
        return exact_start_budget(APST_STALL_BUDGET_DEFAULT_PCT_X100);
}

/* A stall budget the user set is charged per wake-up, as the drive charged it. An hour of a
 * quiet machine takes the policy to a table that sleeps deep soon; then a write every 300 ms,
 * each woken from the deepest state (the kernel's table would wake on each too, so its guard has
 * nothing to say): 3% of the time waiting, which the bucket (refilled at 70% of the 0.9% budget)
 * cannot pay. Within a few seconds the policy backs off at once, saying so, to a table whose
 * wake-ups it can pay. Then the disk goes idle: no gap ends, and once the bucket has refilled the
 * policy looks again by itself (adapt_recheck_ns()), back to a table that sleeps deeper. */
static void test_exact_backoff(void) {
        ApstTable table, learned;
        AdaptDecision why = {};
        uint64_t now = 0, backed = 0;

        current = "exact/backoff";
        Adapt *a = exact_start_budget(90);
        for (unsigned i = 0; i < 180; i++) {
                GapHist d = {};
                gaphist_add_gap(&d, MS(20000), MS(8.1));
                now += MS(20000);
                CHECK(adapt_observe_gaps(a, &d, now, &table, &why) >= 0);
        }
        learned = a->current_table;
        CHECK(!apst_table_equal(&learned, &a->kernel_table) && deepest_state(&learned) == 4);
        for (unsigned i = 0; i < 20 && !backed; i++) {
                GapHist d = {};
                gaphist_add_gap(&d, MS(300), MS(8.1));
                now += MS(300);
                why = (AdaptDecision) {};
                if (adapt_observe_gaps(a, &d, now, &table, &why) == 1 && why.backoff)
                        backed = now;
        }
        CHECK(backed > 0 && backed - MS(20000) * 180 <= MS(3000));
        CHECK(!a->fallen_back && strstr(why.reason, "; backed off: ") != NULL);
        CHECK(why.bucket_ms < 1e-6 * 90 / 10000.0 * (double) ADAPT_BUDGET_BURST_NS);
        CHECK(!apst_table_equal(&table, &learned));
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "backoff after %.1f s: %s\n", (backed - MS(20000) * 180) / 1e9, why.reason);
        /* idle: a look again is due, no later than twice the bucket's refill from empty */
        uint64_t at = adapt_recheck_ns(a);
        CHECK(at != UINT64_MAX && at > now && at <= now + (uint64_t) (2.0 * ADAPT_BUDGET_BURST_NS / ADAPT_BUCKET_FILL));
        if (at != UINT64_MAX) {
                GapHist none = {};
                CHECK(adapt_observe_gaps(a, &none, at, &table, &why) == 1);
                CHECK(!why.backoff && deepest_state(&table) == 4);
                CHECK(adapt_recheck_ns(a) == UINT64_MAX);
        }
        free(a);
}

/* A drive its quirk leaves one sleep state (a WD SN550: ps3 at 25 mW, 3.9 + 11 ms; the kernel
 * drops ps4 for 15b7:5009), on a stationary workload whose gaps average 200 ms: the kernel's
 * table (ps3 after 100 ms) waits ~3% of the time, over the 1% stall budget, so for its first
 * gaps the policy sleeps later at more energy. Once the workload has gone on past the hold it
 * must come to the kernel's table: over ten minutes the hold's cost stays under 3%, at no more
 * wake delay. */
static void test_exact_one_state(void) {
        static TraceIo io[8192];
        IdCtrl id = { .vid = 0x15b7, .npss = 4, .apst_supported = true };
        ApstPlatform plat = { .pci_vendor = 0x15b7, .pci_device = 0x5009 };
        ApstParams p = APST_PARAMS_DEFAULT;
        SimParams sp = SIM_PARAMS_DEFAULT;
        SimDrive d;
        SimPolicy pol;
        ApstTable start;
        SimResult r, k;
        ApstPlan kplan;
        Adapt *a = calloc(1, sizeof(Adapt));
        size_t n;

        current = "exact/one-state";
        CHECK(a);
        strcpy(id.model, "one-state drive");
        id.psd[0] = (IdPsd) { .max_power_uw = 3500000 };
        id.psd[1] = (IdPsd) { .max_power_uw = 2400000 };
        id.psd[2] = (IdPsd) { .max_power_uw = 1900000 };
        id.psd[3] = (IdPsd) { .max_power_uw = 25000, .non_operational = true, .enlat_us = 3900, .exlat_us = 11000 };
        id.psd[4] = (IdPsd) { .max_power_uw = 5000, .non_operational = true, .enlat_us = 5000, .exlat_us = 39000 };
        n = poisson_trace(io, 8192, 200, 600, 11);
        p.policy = APST_POLICY_ADAPTIVE;
        CHECK(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
        CHECK(adapt_init(a, &id, &plat, &p, 0, &start) == 0);
        adapt_sim_policy_gaps(&pol, a);
        CHECK(sim_run(&d, io, n, &sp, &pol, &r) == 0);
        p.policy = APST_POLICY_KERNEL;
        CHECK(apst_build(&id, &plat, &p, &kplan) == 0);
        CHECK(kplan.quirks & APST_QUIRK_NO_DEEPEST_PS);
        sim_policy_static(&pol, "kernel", &kplan.table);
        CHECK(sim_run(&d, io, n, &sp, &pol, &k) == 0);
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "one state: energy %.3f J, kernel %.3f J; stall %.3f s, kernel %.3f s\n", r.energy_j,
                        k.energy_j, r.stall_ns / 1e9, k.stall_ns / 1e9);
        CHECK(r.energy_j <= 1.03 * k.energy_j);
        CHECK(r.stall_ns <= k.stall_ns);
        CHECK(r.wakeups[4] == 0);
        sim_result_done(&r);
        sim_result_done(&k);
        free(a);
}

/* The guard's energy verdict waits until a new table has been in force for ADAPT_GUARD_DWELL_NS:
 * just after a change the window is the previous tables' and a few of its own gaps (on the
 * benchmark's desktop trace it once put the kernel's table back half a second after the first
 * move, and kept it for minutes). Its wake-delay verdict does not wait (test_exact_guard). */
static void test_exact_guard_dwell(void) {
        Outcome o;
        ApstTable table;
        AdaptDecision why;
        GapHist one = {};

        current = "exact/guard-dwell";
        run_off_kernel(&o);
        CHECK(o.a.programs > 0);

        /* Our table spent 10% more energy than the kernel's over the window, at the same wake delay. */
        ShadowSums wa, wk;
        shadow_window(&o.a.shadow, &wa, &wk);
        unsigned slot = o.a.shadow.slot;
        o.a.shadow.slot_applied[slot].energy_uwns += 0.10 * wk.energy_uwns + (wk.energy_uwns - wa.energy_uwns);
        o.a.shadow.slot_applied[slot].wake_ns += wk.wake_ns - wa.wake_ns;
        CHECK(shadow_guard(&o.a.shadow, 0, NULL, 0) == SHADOW_WORSE_ENERGY);
        gaphist_add_gap(&one, MS(3), MS(0.1));

        /* A second after the last table was written: not yet. */
        uint64_t now = o.a.gaps_last_ns > o.a.last_program_ns + MS(1000) ? o.a.gaps_last_ns : o.a.last_program_ns + MS(1000);
        o.a.last_program_ns = now - MS(1000);
        (void) adapt_observe_gaps(&o.a, &one, now, &table, &why);
        CHECK(!o.a.fallen_back && o.a.shadow.fallbacks == 0);
        /* Once it has had ten seconds of its own: the kernel's table again, and why. */
        o.a.last_program_ns = now - ADAPT_GUARD_DWELL_NS;
        o.a.shadow.slot_applied[o.a.shadow.slot].energy_uwns += 0.10 * wk.energy_uwns;
        CHECK(adapt_observe_gaps(&o.a, &one, now + MS(500), &table, &why) == 1);
        CHECK(o.a.fallen_back && why.guard && memcmp(&table, &o.a.kernel_table, sizeof(ApstTable)) == 0);
        CHECK(strstr(why.reason, "more energy than the kernel's table") != NULL);
        done(&o);
}

/* A quiet hour, then a job. An hour of a quiet machine (a read every 20 s: the policy learns to
 * sleep deep soon), then the seed job (a write every 250..350 ms for 20 s, each waiting for the
 * one before): a table chosen for the quiet gaps would wake the drive from its deepest state on
 * every write. Played as one sequence to one policy, on an honest drive and one that wakes 3x
 * slower than it says. With the default budget, past the hold, the job is held to the kernel's
 * table's wake delay: no more added time than under it (about 2.6% and 7.5% here: the default
 * does not keep the job within 1%, doc/policy.md "The stall bucket"). With a budget the user set
 * (0.9%), charged per wake-up, the job's added time stays within it, far under the kernel's
 * table's. Either way the quiet hour costs less energy than under the kernel's table. */
static void test_exact_seed_after_quiet(void) {
        static TraceIo io[4096];
        IdCtrl id = drive_970_like();
        ApstParams p = APST_PARAMS_DEFAULT, kp = APST_PARAMS_DEFAULT;
        ApstPlan kplan;
        size_t n = 0;

        for (unsigned i = 0; i < 180; i++)
                io[n++] = (TraceIo) { .t_ns = MS(20000) * i, .bytes = 4096, .op = TRACE_OP_READ };
        size_t first = n;
        uint64_t seed_start = MS(20000) * 180;
        n += seed_trace(io + n, 4096 - n, 20);
        for (size_t i = first; i < n; i++)
                io[i].t_ns += seed_start;
        SimSegment seg[2] = { { .first = 0, .start_ns = 0 },
                              { .first = first, .start_ns = seed_start, .closed_loop = true } };
        kp.policy = APST_POLICY_KERNEL;
        REQUIRE(apst_build(&id, NULL, &kp, &kplan) == 0);

        for (int run = 0; run < 4; run++) {
                bool lie = run & 1, set = run & 2;
                SimParams sp = SIM_PARAMS_DEFAULT;
                SimResult r, k;
                SimDrive d;
                SimPolicy pol;
                ApstTable start;
                Adapt *a = calloc(1, sizeof(Adapt));

                current = set ? (lie ? "exact/seed-after-quiet-budget-lying-drive" : "exact/seed-after-quiet-budget")
                              : (lie ? "exact/seed-after-quiet-lying-drive" : "exact/seed-after-quiet");
                REQUIRE(a);
                sp.segments = seg;
                sp.n_segments = 2;
                REQUIRE(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
                REQUIRE(sim_drive_scale_exlat(&d, lie ? 3.0 : 1.0) == 0);
                p.policy = APST_POLICY_ADAPTIVE;
                p.stall_budget_pct_x100 = set ? 90 : APST_STALL_BUDGET_DEFAULT_PCT_X100;
                REQUIRE(adapt_init(a, &id, NULL, &p, 0, &start) == 0);
                adapt_sim_policy_gaps(&pol, a);
                REQUIRE(sim_run(&d, io, n, &sp, &pol, &r) == 0);
                sim_policy_static(&pol, "kernel", &kplan.table);
                REQUIRE(sim_run(&d, io, n, &sp, &pol, &k) == 0);
                REQUIRE(r.n_segments == 2 && k.n_segments == 2);

                double span = (double) r.segments[1].whole.span_ns;
                if (getenv("TEST_VERBOSE"))
                        fprintf(stderr, "%s: seed added %.2f%% (kernel %.2f%%); quiet energy %.3f of the kernel's\n",
                                current, 100.0 * (double) r.segments[1].added_wall_ns / span,
                                100.0 * (double) k.segments[1].added_wall_ns / span,
                                r.segments[0].whole.energy_j / k.segments[0].whole.energy_j);
                if (set) {
                        CHECK((double) r.segments[1].added_wall_ns <= 90 / 10000.0 * span);
                        CHECK(r.segments[1].added_wall_ns * 2 < k.segments[1].added_wall_ns);
                } else
                        CHECK(r.segments[1].added_wall_ns <= k.segments[1].added_wall_ns);
                CHECK(r.segments[0].whole.energy_j < k.segments[0].whole.energy_j);
                sim_result_done(&r);
                sim_result_done(&k);
                free(a);
        }
}

/* Does the table in force wait longer than the kernel's on a gap of @gap_ns, and by how much? */
static double waits_more_ns(const Adapt *a, uint64_t gap_ns) {
        ShadowChain in_force;
        double e, w, ke, kw;

        shadow_chain_from_table(&a->sd, a->current_table.apste, a->current_table.entry, &in_force);
        shadow_gap_cost(&a->sd, &in_force, (double) gap_ns, &e, &w);
        shadow_gap_cost(&a->sd, &a->kernel_sc, (double) gap_ns, &ke, &kw);
        return w - kw;
}

static bool waits_longer(const Adapt *a, uint64_t gap_ns) {
        return waits_more_ns(a, gap_ns) > 0;
}

/* Leaving the kernel's table takes confidence. Gaps of 3 ms and of 2 s, none in between: on
 * those, a table that sleeps deep after a few ms wakes exactly as often as the kernel's (every
 * 2 s gap) for less energy. But the lengths in between were never seen, and there it would
 * wake where the kernel's table does not. Such a table is taken only once the evidence bounds
 * what it may lose there within the guard's tolerance of the kernel's wake delay: not on the
 * first 20 s of that workload (about 170 gaps), and then only a table whose extra wake-up at
 * those lengths is a shallow state's (ps3, 1.2 ms), never ps4's (8 ms), which a policy on the
 * point estimate alone would take at once. Ten minutes of it, through adapt_observe_gaps()
 * every 2.5 s. */
static void test_exact_confidence(void) {
        ApstTable table;
        AdaptDecision why;
        GapHist delta = {};
        uint64_t now = 0;

        current = "exact/confidence";
        Adapt *a = exact_start();
        for (unsigned i = 0; i < 20; i++)
                gaphist_add_gap(&delta, MS(3), MS(0.1));
        gaphist_add_gap(&delta, MS(2000), MS(8.1));
        for (unsigned i = 0; i < 240; i++) {
                now += MS(2500);
                CHECK(adapt_observe_gaps(a, &delta, now, &table, &why) >= 0);
                if (now <= MS(20000))
                        CHECK(!waits_longer(a, MS(50)));
                CHECK(waits_more_ns(a, MS(50)) < MS(2));
                CHECK(waits_more_ns(a, MS(20)) < MS(2));
        }
        /* On what it saw, no longer than the kernel's table. */
        CHECK(!waits_longer(a, MS(2000)));
        CHECK(!waits_longer(a, MS(3)));
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "%u programs, last: %s\n", a->programs, a->last.reason);
        free(a);
}

/* A quiet machine: every gap long (20 s), each ended by a first request that woke the drive
 * from ps4 (8 ms and the service), 180 of them in an hour, as a laptop on battery with the
 * screen on. Under the kernel's table each of those gaps already ends in its deepest state,
 * so a table that enters it sooner adds no wake delay on them; only a gap between its entry
 * and the kernel's would, and none comes. The policy must leave the kernel's table within
 * the first hour, for a table that sleeps deep sooner, and that table must wait no longer
 * than the kernel's on the gaps seen. With evidence that forgot half in 20 s (what it was)
 * it never held more than a gap or two and stayed on the kernel's table. */
static void test_exact_quiet(void) {
        ApstTable table;
        AdaptDecision why;
        uint64_t now = 0, left_ns = 0;

        current = "exact/quiet";
        Adapt *a = exact_start();
        for (unsigned i = 0; i < 180; i++) {
                GapHist delta = {};
                gaphist_add_gap(&delta, MS(20000), MS(8.1));
                now += MS(20000);
                CHECK(adapt_observe_gaps(a, &delta, now, &table, &why) >= 0);
                if (left_ns == 0 && !apst_table_equal(&a->current_table, &a->kernel_table))
                        left_ns = now;
        }
        ShadowChain in_force;
        double e, w, ke, kw;
        shadow_chain_from_table(&a->sd, a->current_table.apste, a->current_table.entry, &in_force);
        shadow_gap_cost(&a->sd, &in_force, (double) MS(20000), &e, &w);
        shadow_gap_cost(&a->sd, &a->kernel_sc, (double) MS(20000), &ke, &kw);
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "left at %.0f s; energy of a 20 s gap %.1f%% of the kernel's; %s\n", left_ns / 1e9,
                        100 * e / ke, a->last.reason);
        CHECK(left_ns > 0 && left_ns <= MS(3600000));
        CHECK(!a->fallen_back);
        CHECK(e < 0.9 * ke);
        CHECK(w <= kw);
        free(a);
}

/* A sparse workload whose gaps fall between a table's early entry and the kernel's: every
 * 20 s, a 20 s gap and a 50 ms one (the second request of a save). A table that sleeps deep
 * before 50 ms would wake on every such gap where the kernel's table does not; the evidence
 * shows it, and however long the workload lasts (an hour here) no such table is taken. */
static void test_exact_sparse_between(void) {
        ApstTable table;
        AdaptDecision why;
        uint64_t now = 0;
        bool ever_longer = false;

        current = "exact/sparse-between";
        Adapt *a = exact_start();
        for (unsigned i = 0; i < 180; i++) {
                GapHist delta = {};
                gaphist_add_gap(&delta, MS(20000), MS(8.1));
                gaphist_add_gap(&delta, MS(50), MS(0.1));
                now += MS(20000);
                CHECK(adapt_observe_gaps(a, &delta, now, &table, &why) >= 0);
                ever_longer = ever_longer || waits_longer(a, MS(50));
        }
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "%u programs, last: %s\n", a->programs, a->last.reason);
        CHECK(!ever_longer);
        CHECK(!a->fallen_back);
        free(a);
}

/* The gaps a wake-up hides are evidence. A machine coming out of a pause: every 0.8 to 1.3 s a
 * request, and 3.5, 7 and 10.5 ms after it three more, as a program's first read pulls in a few
 * more. Under the kernel's table the drive sleeps in ps4 by then and wakes in 12 ms, so the three
 * wait behind the first and the disk shows no gap between them: the evidence is long gaps only. A
 * table that enters ps3 after 1 ms wakes in 5 ms instead and meets the later two as gaps of about
 * 2 and 3.5 ms, each spent entering ps3 (5 ms) and paying its way out. Counted as the eBPF program
 * counts them (SimPolicy's floors), the policy starts with a table that sleeps only after 5 ms and
 * waits less than the kernel's; without them it starts with ps3 after 1 ms, runs up wake
 * delay, and the stall bucket then holds the drive awake for seconds: over twice the energy
 * over the first 10 s. */
static void test_exact_hidden(void) {
        static TraceIo io[64];
        IdCtrl id = drive_slow_entry();
        ApstParams p = APST_PARAMS_DEFAULT, kp = APST_PARAMS_DEFAULT;
        SimParams sp = SIM_PARAMS_DEFAULT;
        SimResult kernel, with, without;
        SimDrive d;
        SimPolicy pol;
        ApstTable start;
        ApstPlan kplan;
        Adapt a;
        size_t n = 1;   /* a request at 0, alone: the first burst comes to a sleeping drive */
        uint64_t t = MS(1000), x = 7;

        current = "exact/hidden";
        io[0] = (TraceIo) { .t_ns = 0, .bytes = 4096, .op = TRACE_OP_READ };
        while (n + 4 <= sizeof io / sizeof io[0] && t < MS(10000)) {
                for (unsigned k = 0; k < 4; k++)
                        io[n++] = (TraceIo) { .t_ns = t + MS(3.5) * k, .bytes = 4096, .op = TRACE_OP_READ };
                x = x * 6364136223846793005u + 1442695040888963407u;
                t += MS(800 + (double) ((x >> 33) % 500));
        }
        REQUIRE(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
        kp.policy = APST_POLICY_KERNEL;
        REQUIRE(apst_build(&id, NULL, &kp, &kplan) == 0);
        sim_policy_static(&pol, "kernel", &kplan.table);
        REQUIRE(sim_run(&d, io, n, &sp, &pol, &kernel) == 0);

        p.policy = APST_POLICY_ADAPTIVE;
        REQUIRE(adapt_init(&a, &id, NULL, &p, 0, &start) == 0);
        adapt_sim_policy_gaps(&pol, &a);
        CHECK(pol.hide_floors == 3 && pol.hide_floor_ns[1] == MS(5) && pol.hide_floor_ns[2] == MS(12));
        REQUIRE(sim_run(&d, io, n, &sp, &pol, &with) == 0);
        /* the decision says what it weighed: three requests queued behind each wake-up */
        CHECK(a.programs > 0 && a.last.hidden_gaps >= 3 && strstr(a.last.reason, " hidden by wake-ups: "));

        REQUIRE(adapt_init(&a, &id, NULL, &p, 0, &start) == 0);
        adapt_sim_policy_gaps(&pol, &a);
        pol.hide_floors = 0;
        REQUIRE(sim_run(&d, io, n, &sp, &pol, &without) == 0);
        CHECK(a.programs > 0 && a.last.hidden_gaps == 0 && !strstr(a.last.reason, "hidden by wake-ups"));

        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "wake delay: kernel %.1f ms, with hidden gaps %.1f ms, without %.1f ms; energy %.3f, %.3f, %.3f J\n",
                        kernel.stall_ns / 1e6, with.stall_ns / 1e6, without.stall_ns / 1e6, kernel.energy_j, with.energy_j,
                        without.energy_j);
        CHECK(with.stall_ns <= kernel.stall_ns);
        /* what the evidence it did not have cost: over twice the energy, for about the same
         * wake delay (the stall bucket holds both to the budget) */
        CHECK(with.energy_j < 0.5 * without.energy_j && (double) with.stall_ns <= 1.05 * (double) without.stall_ns);
        sim_result_done(&kernel);
        sim_result_done(&with);
        sim_result_done(&without);
}

/* adapt_set_max_latency(): a latency hold's cap after the start; every table the policy then
 * chooses, on either source, stays within it (the kernel's table, its reference, aside). */
static void test_capped(void) {
        static TraceIo io[8192];
        IdCtrl id = drive_970_like();

        for (int exact = 0; exact <= 1; exact++) {
                /* gaps for which each source, uncapped, chooses ps4 (checked by running it so) */
                size_t n = poisson_trace(io, 8192, exact ? 200 : 1000, 600, 7);
                ApstParams p = APST_PARAMS_DEFAULT;
                SimParams sp = SIM_PARAMS_DEFAULT;
                ApstTable start;
                SimDrive d;
                SimPolicy pol;
                SimResult r;
                Adapt a;
                size_t chosen = 0;

                current = exact ? "adapt/capped-exact" : "adapt/capped-stat";
                p.policy = APST_POLICY_ADAPTIVE;
                CHECK(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
                CHECK(adapt_init(&a, &id, NULL, &p, 0, &start) == 0);
                adapt_set_max_latency(&a, 1500);   /* ps3 (210 + 1200 us) fits, ps4 (2000 + 8000) does not */
                if (exact)
                        adapt_sim_policy_gaps(&pol, &a);
                else
                        adapt_sim_policy(&pol, &a);
                CHECK(sim_run(&d, io, n, &sp, &pol, &r) == 0);
                for (size_t i = 1; i < r.n_reprograms; i++) {
                        if (apst_table_equal(&r.reprograms[i].table, &a.kernel_table))
                                continue;
                        chosen++;
                        CHECK(apst_worst_wake_us(&r.reprograms[i].table, &id) <= 1500);
                }
                CHECK(chosen >= 1);   /* it did choose under the cap */
                sim_result_done(&r);
        }
}

/* Idle readers on the cap's grid (watch_idle_next()): four controllers whose last I/O ended 1.05 s
 * apart (bench/load.sh's sources step reads its loop devices one after the other) back off by
 * doubling from 0.5 s to 20 s, as the eBPF source does; once all are idle, their readings must
 * come at one instant per 20 s, not at four. */
static void test_idle_grid(void) {
        const uint64_t cap = MS(20000), span_from = MS(120000), span_to = MS(720000);
        uint64_t next[4], times[4 * 64], longest = 0;
        unsigned idle[4] = {}, n_times = 0, distinct = 0;

        current = "idle grid";
        CHECK(watch_idle_next(MS(1234), MS(500), cap) == MS(1734));          /* backing off: its own wait */
        CHECK(watch_idle_next(MS(1234), cap, cap) == MS(20000));             /* at the cap: the grid */
        CHECK(watch_idle_next(MS(20000), cap, cap) == MS(40000));            /* on a grid point: the next */
        CHECK(watch_idle_next(MS(39999), cap, cap) == MS(40000));
        CHECK(watch_idle_next(MS(1234), MS(500), 0) == MS(1734));            /* no cap */
        for (unsigned c = 0; c < 4; c++)
                next[c] = MS(3000) + c * MS(1050);
        for (;;) {
                unsigned c = 0;
                for (unsigned k = 1; k < 4; k++)
                        if (next[k] < next[c])
                                c = k;
                uint64_t now = next[c], wait = MS(500) << idle[c];
                if (now >= span_to)
                        break;
                if (idle[c] < 16)
                        idle[c]++;
                next[c] = watch_idle_next(now, wait < cap ? wait : cap, cap);
                CHECK(next[c] > now);
                longest = next[c] - now > longest ? next[c] - now : longest;
                if (now >= span_from && n_times < sizeof times / sizeof *times)
                        times[n_times++] = now;
        }
        for (unsigned i = 0; i < n_times; i++) {
                bool seen = false;
                for (unsigned j = 0; j < i; j++)
                        seen = seen || times[j] == times[i];
                distinct += !seen;
        }
        CHECK(n_times == 4 * 30);                /* every controller read every 20 s */
        CHECK(distinct == 30);                   /* ... all four at once: 30 instants in 600 s */
        CHECK(longest <= cap);                   /* and none waited longer than an idle reader did */
}

int main(void) {
        test_parse();
        test_watch_activity();
        test_seed();
        test_stationary();
        test_no_oscillation();
        test_exact_seed();
        test_exact_stationary();
        test_exact_lying_state();
        test_exact_workload_change();
        test_exact_guard();
        test_exact_guard_slack();
        test_exact_guard_spread();
        test_exact_guard_dwell();
        test_exact_backoff();
        test_exact_seed_after_quiet();
        test_exact_one_state();
        test_exact_confidence();
        test_exact_quiet();
        test_exact_sparse_between();
        test_exact_hidden();
        test_capped();
        test_idle_grid();

        printf("%u checks, %u failed\n", n_checks, n_failed);
        return n_failed ? 1 : 0;
}
