/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The simulator against numbers worked out by hand (the arithmetic is in the
 * comments; nothing here recomputes the model). Units in comments: ms, mW, mJ
 * (1 mW x 1 ms = 1 µJ, so 0.2 W x 13.2 ms = 2.64 mJ).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "apst.h"
#include "check.h"
#include "sim.h"

/* Energy equal to the hand value within 1e-9 relative (double sums of µW·ns). */
#define CHECK_J(got, want_mj)                                                          \
        do {                                                                           \
                double g_ = (got), w_ = (want_mj) / 1e3;                               \
                n_checks++;                                                            \
                if (fabs(g_ - w_) > 1e-9 * fabs(w_) + 1e-15) {                         \
                        n_failed++;                                                    \
                        fprintf(stderr, "%s:%d: %s: energy %.12g J, expected %.12g J\n", \
                                __FILE__, __LINE__, current, g_, w_);                  \
                }                                                                      \
        } while (0)

#define MS(x) ((uint64_t) ((x) * 1000000.0 + 0.5))   /* ms (may be fractional) -> ns */

/* Drive A, one step: ps0 idle 200 mW; ps1 non-operational, 10 mW, entry 1 ms, exit 2 ms. */
static SimDrive drive_a(void) {
        SimDrive d = { .npss = 1 };
        d.ps[0] = (SimState) { .power_uw = 200000 };
        d.ps[1] = (SimState) { .power_uw = 10000, .enlat_us = 1000, .exlat_us = 2000, .non_operational = true };
        return d;
}

/* Drive B, two steps: ps0 200 mW; ps1 50 mW, entry 1 ms, exit 1 ms; ps2 5 mW, entry 5 ms, exit 20 ms. */
static SimDrive drive_b(void) {
        SimDrive d = { .npss = 2 };
        d.ps[0] = (SimState) { .power_uw = 200000 };
        d.ps[1] = (SimState) { .power_uw = 50000, .enlat_us = 1000, .exlat_us = 1000, .non_operational = true };
        d.ps[2] = (SimState) { .power_uw = 5000, .enlat_us = 5000, .exlat_us = 20000, .non_operational = true };
        return d;
}

/* ps0 -> ps1 after 10 ms (drive A and B) */
static ApstTable table_a(void) {
        ApstTable t = { .apste = true };
        t.entry[0] = apst_entry_make(1, 10);
        return t;
}

/* ps0 -> ps1 after 10 ms, ps1 -> ps2 after 50 ms (drive B) */
static ApstTable table_b(void) {
        ApstTable t = table_a();
        t.entry[1] = apst_entry_make(2, 50);
        return t;
}

static const SimParams params_100us = { .service_ns = 100000 };

static int run_static(const SimDrive *d, const ApstTable *t, const uint64_t *times_ns, size_t n,
                      const SimParams *p, SimResult *ret) {
        TraceIo io[16] = {};
        SimPolicy pol;

        CHECK(n <= 16);
        for (size_t i = 0; i < n; i++)
                io[i] = (TraceIo) { .t_ns = times_ns[i], .bytes = 4096, .op = TRACE_OP_WRITE, .line = (uint32_t) i + 1 };
        sim_policy_static(&pol, "test", t);
        return sim_run(d, io, n, p, &pol, ret);
}

static void test_one_step_rest(void) {
        SimDrive d = drive_a();
        ApstTable t = table_a();
        uint64_t times[] = { 0, MS(100) };
        SimResult r;

        current = "one-step/gap-100ms";
        CHECK(run_static(&d, &t, times, 2, &params_100us, &r) == 0);
        /* io0 served 0..0.1. Idle from 0.1: ps0 until 10.1, entering ps1 until 11.1, resting
         * until 100. io1 waits exit 2 ms, served 102..102.1.
         * P0 time: 0.1 + 10 + 1 + 2 + 0.1 = 13.2 ms x 200 mW = 2.64 mJ
         * ps1 time: 100 - 11.1 = 88.9 ms x 10 mW = 0.889 mJ; total 3.529 mJ */
        CHECK_J(r.energy_j, 3.529);
        CHECK(r.duration_ns == MS(102.1));
        CHECK(r.stall_ns == MS(2));
        CHECK(r.wakeups[1] == 1 && r.wakeups_total == 1);
        CHECK(r.resident_ns[1] == MS(88.9));
        CHECK(r.resident_ns[0] == MS(10));
        /* transitions: entry 1 + exit 2 */
        CHECK(r.transition_ns == MS(3));
        /* added: io0 0, io1 2 ms; mean 1 ms; p99 = rank ceil(2 x 0.99) = 2 -> 2 ms */
        CHECK(r.added_mean_ns == 1e6);
        CHECK(r.added_p99_ns == MS(2) && r.added_p999_ns == MS(2) && r.added_max_ns == MS(2));
        CHECK(r.added_wall_ns == (int64_t) MS(2));
        /* 3.529 mJ / 102.1 ms = 34.5642... mW */
        CHECK(fabs(r.mean_power_w - 3.529e-3 / 0.1021) < 1e-12);
        CHECK(r.n_reprograms == 1 && r.reprograms[0].t_ns == 0 && apst_table_equal(&r.reprograms[0].table, &t));
        sim_result_done(&r);
}

static void test_one_step_during_entry(void) {
        SimDrive d = drive_a();
        ApstTable t = table_a();
        uint64_t times[] = { 0, MS(10.6) };
        SimResult r;

        current = "one-step/arrival-during-entry";
        CHECK(run_static(&d, &t, times, 2, &params_100us, &r) == 0);
        /* Entering ps1 10.1..11.1; io1 at 10.6 waits the rest of the entry 0.5 + exit 2 = 2.5 ms,
         * served 13.1..13.2. Everything at P0: 13.2 ms x 200 mW = 2.64 mJ. */
        CHECK_J(r.energy_j, 2.64);
        CHECK(r.stall_ns == MS(2.5));
        CHECK(r.wakeups[1] == 1);
        CHECK(r.duration_ns == MS(13.2));
        CHECK(r.added_max_ns == MS(2.5));
        sim_result_done(&r);
}

static void test_one_step_at_deadline(void) {
        SimDrive d = drive_a();
        ApstTable t = table_a();
        uint64_t times[] = { 0, MS(10.1) };
        SimResult r;

        current = "one-step/arrival-at-itpt";
        CHECK(run_static(&d, &t, times, 2, &params_100us, &r) == 0);
        /* io1 arrives exactly when ITPT expires: the drive has not left ps0 yet.
         * 10.2 ms x 200 mW = 2.04 mJ, no wake. */
        CHECK_J(r.energy_j, 2.04);
        CHECK(r.stall_ns == 0 && r.wakeups_total == 0);
        sim_result_done(&r);
}

static void test_two_step(void) {
        SimDrive d = drive_b();
        ApstTable t = table_b();
        SimResult r;

        current = "two-step/gap-1s";
        uint64_t t1[] = { 0, MS(1000) };
        CHECK(run_static(&d, &t, t1, 2, &params_100us, &r) == 0);
        /* ps0 0.1..10.1, entering ps1 ..11.1, ps1 ..61.1 (ITPT 50 counts in ps1),
         * entering ps2 ..66.1, ps2 ..1000, exit 20 ms, served 1020..1020.1.
         * P0: 0.1 + 10 + 1 + 5 + 20 + 0.1 = 36.2 ms x 200 = 7.24 mJ
         * ps1: 50 ms x 50 mW = 2.5 mJ; ps2: 933.9 ms x 5 mW = 4.6695 mJ; total 14.4095 mJ */
        CHECK_J(r.energy_j, 14.4095);
        CHECK(r.stall_ns == MS(20));
        CHECK(r.wakeups[2] == 1 && r.wakeups[1] == 0);
        CHECK(r.resident_ns[1] == MS(50) && r.resident_ns[2] == MS(933.9));
        CHECK(r.duration_ns == MS(1020.1));
        sim_result_done(&r);

        current = "two-step/arrival-during-second-entry";
        uint64_t t2[] = { 0, MS(63.1) };
        CHECK(run_static(&d, &t, t2, 2, &params_100us, &r) == 0);
        /* Entering ps2 61.1..66.1; io1 at 63.1 waits 3 + 20 = 23 ms.
         * P0: 0.1 + 10 + 1 + 2 + 23 + 0.1 = 36.2 ms = 7.24 mJ; ps1 50 ms = 2.5 mJ; total 9.74 mJ */
        CHECK_J(r.energy_j, 9.74);
        CHECK(r.stall_ns == MS(23));
        CHECK(r.wakeups[2] == 1);
        sim_result_done(&r);

        current = "two-step/arrival-in-first-state";
        uint64_t t3[] = { 0, MS(40) };
        CHECK(run_static(&d, &t, t3, 2, &params_100us, &r) == 0);
        /* Resting in ps1 since 11.1; io1 at 40 waits ps1's exit 1 ms.
         * P0: 0.1 + 10 + 1 + 1 + 0.1 = 12.2 ms = 2.44 mJ; ps1: 28.9 ms x 50 = 1.445 mJ; total 3.885 mJ */
        CHECK_J(r.energy_j, 3.885);
        CHECK(r.stall_ns == MS(1) && r.wakeups[1] == 1);
        sim_result_done(&r);
}

static void test_gap_optimum(void) {
        SimDrive a = drive_a(), b = drive_b();
        unsigned st = 99;

        /* Drive A: break-even of ps1 = e + x = 3 ms. */
        current = "optimum/a-below-break-even";
        /* 2.9 ms in ps0: 0.58 mJ */
        CHECK_J(sim_gap_optimum(&a, MS(2.9), &st), 0.58);
        CHECK(st == 0);
        current = "optimum/a-above-break-even";
        /* 3.1 ms: ps1 = 3 ms x 200 + 0.1 ms x 10 = 0.6 + 0.001 = 0.601 mJ < 0.62 mJ in ps0 */
        CHECK_J(sim_gap_optimum(&a, MS(3.1), &st), 0.601);
        CHECK(st == 1);

        /* Drive B: break-even ps1 = 2 ms, ps2 = 25 ms. */
        current = "optimum/b-below-both";
        CHECK_J(sim_gap_optimum(&b, MS(1), &st), 0.2);   /* 1 ms x 200 mW */
        CHECK(st == 0);
        current = "optimum/b-at-ps1-break-even";
        /* 2 ms: ps0 0.4 mJ = ps1 2 x 200 + 0 -> a tie stays in ps0 (no wake for nothing) */
        CHECK_J(sim_gap_optimum(&b, MS(2), &st), 0.4);
        CHECK(st == 0);
        current = "optimum/b-between";
        /* 3 ms: ps1 = 0.4 + 1 x 50 = 0.45 mJ < 0.6 mJ; ps2 does not fit (25 ms) */
        CHECK_J(sim_gap_optimum(&b, MS(3), &st), 0.45);
        CHECK(st == 1);
        current = "optimum/b-below-ps2";
        /* 24 ms: ps1 = 0.4 + 22 x 50 = 1.5 mJ */
        CHECK_J(sim_gap_optimum(&b, MS(24), &st), 1.5);
        CHECK(st == 1);
        current = "optimum/b-just-above-ps2";
        /* 26 ms: ps2 = 25 x 200 + 1 x 5 = 5.005 mJ but ps1 = 0.4 + 24 x 50 = 1.6 mJ: ps1 */
        CHECK_J(sim_gap_optimum(&b, MS(26), &st), 1.6);
        CHECK(st == 1);
        current = "optimum/b-long";
        /* 1000 ms: ps2 = 5 + 975 x 5 = 9.875 mJ; ps1 = 0.4 + 998 x 50 = 50.3 mJ; ps0 200 mJ */
        CHECK_J(sim_gap_optimum(&b, MS(1000), &st), 9.875);
        CHECK(st == 2);
        current = "optimum/b-ps2-beats-ps1";
        /* ps2 beats ps1 when 5 + 0.005 (T - 25) < 0.4 + 0.05 (T - 2): 0.045 T > 4.575, T > 101.67 ms.
         * 101 ms: ps1 = 0.4 + 99 x 50 = 5.35 mJ; ps2 = 5 + 76 x 5 = 5.38 mJ -> ps1
         * 102 ms: ps1 = 0.4 + 100 x 50 = 5.4 mJ; ps2 = 5 + 77 x 5 = 5.385 mJ -> ps2 */
        CHECK_J(sim_gap_optimum(&b, MS(101), &st), 5.35);
        CHECK(st == 1);
        CHECK_J(sim_gap_optimum(&b, MS(102), &st), 5.385);
        CHECK(st == 2);

        current = "optimum/a-trace";
        TraceIo io[2] = { { .t_ns = 0, .op = TRACE_OP_READ }, { .t_ns = MS(100), .op = TRACE_OP_READ } };
        SimResult r;
        CHECK(sim_optimum(&a, io, 2, &params_100us, &r) == 0);
        /* one gap 0.1..100 = 99.9 ms in ps1: 3 x 200 + 96.9 x 10 = 0.6 + 0.969 = 1.569 mJ;
         * service 2 x 0.1 ms x 200 = 0.04 mJ; total 1.609 mJ, no stall, ends at 100.1 */
        CHECK_J(r.energy_j, 1.609);
        CHECK(r.duration_ns == MS(100.1) && r.stall_ns == 0 && r.added_max_ns == 0);
        CHECK(r.wakeups[1] == 1);
        sim_result_done(&r);
}

/* The seed drive, INTEL SSDPEKKW256G7 (doc/kernel-apst.md, tests/data/idctrl/00): ps3 70 mW 10000/300 µs,
 * ps4 5 mW (MXPS: 50 x 0.0001 W) 2000/10000 µs. */
static IdCtrl intel_600p(void) {
        IdCtrl id = { .npss = 4, .apst_supported = true };
        strcpy(id.model, "INTEL SSDPEKKW256G7");
        id.psd[0] = (IdPsd) { .max_power_uw = 9000000, .enlat_us = 5, .exlat_us = 5 };
        id.psd[1] = (IdPsd) { .max_power_uw = 4600000, .enlat_us = 30, .exlat_us = 30 };
        id.psd[2] = (IdPsd) { .max_power_uw = 3800000, .enlat_us = 30, .exlat_us = 30 };
        id.psd[3] = (IdPsd) { .max_power_uw = 70000, .non_operational = true, .enlat_us = 10000, .exlat_us = 300 };
        id.psd[4] = (IdPsd) { .max_power_uw = 5000, .non_operational = true, .enlat_us = 2000, .exlat_us = 10000 };
        return id;
}

static void test_none_and_kernel(void) {
        IdCtrl id = intel_600p();
        SimDrive d;
        ApstTable none = {}, kernel = { .apste = true };
        uint64_t times[] = { 0, MS(50), MS(300) };
        SimResult r;

        current = "tiny/drive";
        CHECK(sim_drive_from_idctrl(&id, 200000, &d) == 0);
        CHECK(d.ps[0].power_uw == 200000 && !d.p0_reported);     /* psd[0] reports no idle power */
        CHECK(d.ps[4].power_uw == 5000 && d.ps[4].exlat_us == 10000);

        /* The kernel's table for it (doc/kernel-apst.md worked example): walking from ps4 down, ps4's
         * enlat + exlat = 12 ms <= 15 ms primary tolerance: ITPT 100 ms; ps3 is skipped (a
         * primary exists); ps0..ps3 all point to ps4 after 100 ms. */
        for (unsigned i = 0; i <= 3; i++)
                kernel.entry[i] = apst_entry_make(4, 100);
        ApstParams kp = APST_PARAMS_DEFAULT;
        ApstPlan plan;
        kp.policy = APST_POLICY_KERNEL;
        CHECK(apst_build(&id, NULL, &kp, &plan) == 0);
        CHECK(plan.outcome == APST_OUTCOME_PROGRAM && apst_table_equal(&plan.table, &kernel));

        current = "tiny/none";
        CHECK(run_static(&d, &none, times, 3, &params_100us, &r) == 0);
        /* Always ps0: 300.1 ms x 200 mW = 60.02 mJ */
        CHECK_J(r.energy_j, 60.02);
        CHECK(r.duration_ns == MS(300.1) && r.stall_ns == 0 && r.wakeups_total == 0 && r.added_max_ns == 0);
        CHECK(r.ios == 3);
        sim_result_done(&r);

        current = "tiny/kernel";
        CHECK(run_static(&d, &kernel, times, 3, &params_100us, &r) == 0);
        /* io0 0..0.1; io1 at 50 (49.9 ms idle < 100: no transition) 50..50.1;
         * ps0 until 150.1, entering ps4 until 152.1, ps4 until 300, exit 10 ms, io2 310..310.1.
         * P0: 0.1 + 49.9 + 0.1 + 100 + 2 + 10 + 0.1 = 162.2 ms x 200 = 32.44 mJ
         * ps4: 147.9 ms x 5 mW = 0.7395 mJ; total 33.1795 mJ */
        CHECK_J(r.energy_j, 33.1795);
        CHECK(r.duration_ns == MS(310.1) && r.stall_ns == MS(10) && r.wakeups[4] == 1 && r.wakeups_total == 1);
        /* added [0, 0, 10]: mean 3.333 ms, p99 = rank ceil(2.97) = 3 -> 10 ms */
        CHECK(fabs(r.added_mean_ns - 1e7 / 3) < 1e-6);
        CHECK(r.added_p99_ns == MS(10) && r.added_max_ns == MS(10));
        sim_result_done(&r);

        current = "tiny/optimum";
        TraceIo io[3] = { { .t_ns = 0 }, { .t_ns = MS(50) }, { .t_ns = MS(300) } };
        CHECK(sim_optimum(&d, io, 3, &params_100us, &r) == 0);
        /* gaps 49.9 and 249.9 ms. ps3: break-even 10.3 ms, ps4: 12 ms.
         * 49.9: ps3 = 10.3 x 200 + 39.6 x 70 = 2.06 + 2.772 = 4.832; ps4 = 12 x 200 + 37.9 x 5 = 2.5895 -> ps4
         * 249.9: ps4 = 2.4 + 237.9 x 5 = 3.5895; service 3 x 0.1 x 200 = 0.06; total 6.239 mJ */
        CHECK_J(r.energy_j, 6.239);
        CHECK(r.wakeups[4] == 2 && r.duration_ns == MS(300.1));
        sim_result_done(&r);
}

static void test_closed_loop(void) {
        SimDrive d = drive_a();
        ApstTable t = table_a();
        uint64_t times[] = { 0, MS(100), MS(200) };
        SimParams p = params_100us;
        SimResult r;

        current = "closed-loop/open";
        CHECK(run_static(&d, &t, times, 3, &p, &r) == 0);
        /* each of io1, io2 finds ps1 and waits 2 ms; io2 at 200 ends 202.1 vs 200.1 */
        CHECK(r.added_wall_ns == (int64_t) MS(2) && r.stall_ns == MS(4));
        sim_result_done(&r);

        current = "closed-loop/closed";
        p.closed_loop = true;
        CHECK(run_static(&d, &t, times, 3, &p, &r) == 0);
        /* io1 completes at 102.1 instead of 100.1 (2 ms late), so io2 is issued at 202:
         * ps0 from 102.1, ps1 from 113.1, io2 waits 2 ms, ends 204.1 vs 200.1: +4 ms. */
        CHECK(r.added_wall_ns == (int64_t) MS(4) && r.duration_ns == MS(204.1));
        CHECK(r.added_max_ns == MS(2) && r.stall_ns == MS(4));
        sim_result_done(&r);
}

/* A sequence of two workloads: an open one, then a closed one whose delays carry on within it. */
static void test_segments(void) {
        SimDrive d = drive_a();
        ApstTable t = table_a();
        uint64_t times[] = { 0, MS(100), MS(200), MS(300), MS(400) };
        SimSegment segs[] = { { .first = 0, .start_ns = 0 }, { .first = 2, .start_ns = MS(150), .closed_loop = true } };
        SimParams p = params_100us;
        SimResult r;

        current = "segments/two";
        p.segments = segs;
        p.n_segments = 2;
        p.window_ns = MS(60);
        CHECK(run_static(&d, &t, times, 5, &p, &r) == 0);
        REQUIRE(r.n_segments == 2 && r.segments);
        /* Segment 1, 0..150: io0 0..0.1; ps0 to 10.1, entry to 11.1, ps1 to 100; io1 waits 2, 102..102.1;
         * ps0 to 112.1, entry to 113.1, ps1 to 150. P0: 10.1 + 1 + 2 + 0.1 + 10 + 1 = 24.2 ms x 200 mW
         * = 4.84 mJ; ps1: 88.9 + 36.9 = 125.8 ms x 10 mW = 1.258 mJ: 6.098 mJ. */
        CHECK_J(r.segments[0].whole.energy_j, 6.098);
        CHECK(r.segments[0].whole.stall_ns == MS(2) && r.segments[0].whole.wakeups == 1);
        CHECK(r.segments[0].whole.ios == 2 && r.segments[0].whole.span_ns == MS(150));
        CHECK(r.segments[0].added_wall_ns == (int64_t) MS(2));
        /* Its first 60 ms: P0 11.1 ms = 2.22 mJ, ps1 11.1..60 = 48.9 ms = 0.489 mJ; io0 only, no wake. */
        CHECK_J(r.segments[0].window.energy_j, 2.709);
        CHECK(r.segments[0].window.stall_ns == 0 && r.segments[0].window.ios == 1);
        CHECK(r.segments[0].window.span_ns == MS(60));
        /* Segment 2, closed: io2 at 200 as scheduled (its first: nothing to carry), waits 2, ends 202.1
         * (2 late); io3 issued at 302, waits 2, ends 304.1 (4 late); io4 at 404, waits 2, ends 406.1.
         * ps1 150..200 = 50, 213.1..302 = 88.9, 315.1..404 = 88.9: 227.8 ms = 2.278 mJ; P0 3 x 2.1 (exit,
         * service) + 2 x 11 (ps0, entry) = 28.3 ms = 5.66 mJ: 7.938 mJ. */
        CHECK_J(r.segments[1].whole.energy_j, 7.938);
        CHECK(r.segments[1].whole.stall_ns == MS(6) && r.segments[1].whole.wakeups == 3);
        CHECK(r.segments[1].whole.ios == 3 && r.segments[1].whole.span_ns == MS(256.1));
        CHECK(r.segments[1].added_wall_ns == (int64_t) MS(6));
        /* Its first 60 ms, 150..210: ps1 50 ms = 0.5 mJ, P0 200..210 = 10 ms = 2 mJ; io2's wake. */
        CHECK_J(r.segments[1].window.energy_j, 2.5);
        CHECK(r.segments[1].window.stall_ns == MS(2) && r.segments[1].window.wakeups == 1);
        CHECK(r.segments[1].window.ios == 1);
        /* The whole run is the two segments. */
        CHECK_J(r.energy_j, 14.036);
        CHECK(r.duration_ns == MS(406.1) && r.stall_ns == MS(8));
        sim_result_done(&r);

        current = "segments/window-past-the-next-start";
        p.window_ns = MS(200);
        CHECK(run_static(&d, &t, times, 5, &p, &r) == 0);
        REQUIRE(r.n_segments == 2);
        /* Segment 1's window ends where segment 2 starts. Segment 2's, 150..350: the whole of it but
         * for ps1 350..404 (54 ms = 0.54 mJ) and io4's wake and service (2.1 ms = 0.42 mJ): 6.978 mJ. */
        CHECK_J(r.segments[0].window.energy_j, 6.098);
        CHECK_J(r.segments[1].window.energy_j, 6.978);
        CHECK(r.segments[1].window.wakeups == 2 && r.segments[1].window.ios == 2);
        sim_result_done(&r);

        current = "segments/window-past-the-end";
        p.window_ns = MS(300);
        CHECK(run_static(&d, &t, times, 5, &p, &r) == 0);
        REQUIRE(r.n_segments == 2);
        /* 150 + 300 is past the last completion (406.1): the window is the whole segment. */
        CHECK_J(r.segments[1].window.energy_j, 7.938);
        sim_result_done(&r);

        current = "segments/invalid";
        SimSegment bad[] = { { .first = 0 }, { .first = 2, .start_ns = MS(250) } };   /* starts after its first I/O */
        p.segments = bad;
        CHECK(run_static(&d, &t, times, 5, &p, &r) == -EINVAL);
        bad[1] = (SimSegment) { .first = 2, .start_ns = MS(50) };                       /* before the previous I/O */
        CHECK(run_static(&d, &t, times, 5, &p, &r) == -EINVAL);
        bad[0].first = 1;                                                               /* the first not at 0 */
        bad[1].start_ns = MS(150);
        CHECK(run_static(&d, &t, times, 5, &p, &r) == -EINVAL);
}

static void test_timeline(void) {
        static const struct {
                double t_ms;
                unsigned ps;
                SimActivity a;
        } want[] = {
                { 0, 0, SIM_ACTIVITY_SERVE },      /* io0 0..0.1, io1 (queued at 0.05) 0.1..0.2 */
                { 0.2, 0, SIM_ACTIVITY_REST },
                { 10.2, 1, SIM_ACTIVITY_ENTER },   /* ITPT 10 ms in ps0 */
                { 11.2, 1, SIM_ACTIVITY_REST },    /* ps1's entry: 1 ms */
                { 61.2, 2, SIM_ACTIVITY_ENTER },   /* ITPT 50 ms in ps1 */
                { 63.1, 2, SIM_ACTIVITY_EXIT },    /* io2 during the entry: 3.1 ms of it left + exit 20 */
                { 86.2, 0, SIM_ACTIVITY_SERVE },
                { 86.3, 0, SIM_ACTIVITY_REST },
        };
        SimDrive d = drive_b();
        ApstTable t = table_b();
        uint64_t times[] = { 0, MS(0.05), MS(63.1) };
        SimParams p = params_100us;
        SimResult r;

        current = "timeline/off";
        CHECK(run_static(&d, &t, times, 3, &p, &r) == 0);
        CHECK(r.timeline == NULL && r.n_timeline == 0);
        sim_result_done(&r);

        current = "timeline/two-step";
        p.timeline = true;
        CHECK(run_static(&d, &t, times, 3, &p, &r) == 0);
        CHECK(r.n_timeline == sizeof want / sizeof want[0]);
        for (size_t i = 0; i < r.n_timeline && i < sizeof want / sizeof want[0]; i++) {
                CHECK(r.timeline[i].t_ns == MS(want[i].t_ms));
                CHECK(r.timeline[i].ps == want[i].ps);
                CHECK(r.timeline[i].activity == want[i].a);
        }
        /* the figures are those of the run without a timeline */
        CHECK(r.stall_ns == MS(23.1) && r.duration_ns == MS(86.3));
        CHECK(strcmp(sim_activity_to_string(SIM_ACTIVITY_EXIT), "exit") == 0);
        sim_result_done(&r);
}

/* A policy that records what it is given and reprograms once: the seam an adaptive policy uses. */
typedef struct Probe {
        ApstTable start, later;
        uint64_t reprogram_at;
        size_t n;
        uint64_t when[16];
        SimBlockStat st[16];
} Probe;

static int probe_start(void *userdata, ApstTable *ret_table) {
        Probe *p = userdata;
        *ret_table = p->start;
        return 0;
}

static int probe_sample(void *userdata, uint64_t now_ns, const SimBlockStat *st, ApstTable *ret_table) {
        Probe *p = userdata;
        if (p->n < 16) {
                p->when[p->n] = now_ns;
                p->st[p->n] = *st;
        }
        p->n++;
        if (now_ns == p->reprogram_at) {
                *ret_table = p->later;
                return 1;
        }
        return 0;
}

static void test_counters(void) {
        SimDrive d = drive_a();
        Probe probe = { .reprogram_at = UINT64_MAX };
        SimPolicy pol = { .name = "probe", .sample_period_ns = MS(12), .start = probe_start,
                          .sample = probe_sample, .userdata = &probe };
        SimParams p = { .service_ns = MS(5) };
        TraceIo io[] = {
                { .t_ns = 0, .bytes = 4096, .op = TRACE_OP_READ },
                { .t_ns = MS(10), .bytes = 8192, .op = TRACE_OP_WRITE },
                { .t_ns = MS(20), .bytes = 0, .op = TRACE_OP_FLUSH },
                { .t_ns = MS(40), .bytes = 512, .op = TRACE_OP_DISCARD },
        };
        SimResult r;

        current = "counters";
        CHECK(sim_run(&d, io, 4, &p, &pol, &r) == 0);
        /* Served 0..5, 10..15, 20..25, 40..45 (APST off). Samples at 12, 24, 36 (before the 40
         * arrival) and none at 48 (after the last completion, 45). */
        CHECK(probe.n == 3);
        CHECK(probe.when[0] == MS(12) && probe.when[1] == MS(24) && probe.when[2] == MS(36));
        /* t=12: the read done (8 sectors, 5 ms), the write in flight since 10:
         * io_ticks 5 + 2 = 7, time_in_queue 5 + 2 = 7 */
        CHECK(probe.st[0].read_ios == 1 && probe.st[0].read_sectors == 8 && probe.st[0].read_ticks == 5);
        CHECK(probe.st[0].write_ios == 0 && probe.st[0].in_flight == 1);
        CHECK(probe.st[0].io_ticks == 7 && probe.st[0].time_in_queue == 7);
        /* t=24: write done (16 sectors, 5 ms), flush in flight since 20: io_ticks 5 + 5 + 4 = 14 */
        CHECK(probe.st[1].write_ios == 1 && probe.st[1].write_sectors == 16 && probe.st[1].write_ticks == 5);
        CHECK(probe.st[1].flush_ios == 0 && probe.st[1].in_flight == 1 && probe.st[1].io_ticks == 14);
        CHECK(probe.st[1].time_in_queue == 14);
        /* t=36: all three done: io_ticks 15, time_in_queue 15, flush 1 (5 ms), nothing discarded yet */
        CHECK(probe.st[2].flush_ios == 1 && probe.st[2].flush_ticks == 5 && probe.st[2].in_flight == 0);
        CHECK(probe.st[2].io_ticks == 15 && probe.st[2].time_in_queue == 15 && probe.st[2].discard_ios == 0);
        CHECK(probe.st[2].read_merges == 0 && probe.st[2].write_merges == 0);
        CHECK(r.n_reprograms == 1);
        sim_result_done(&r);
}

/* The exact source: what a policy with gaps() is handed. */
typedef struct GapProbe {
        ApstTable start;
        size_t n;
        uint64_t when[8];
        GapHist h[8];
} GapProbe;

static int gapprobe_start(void *userdata, ApstTable *ret_table) {
        *ret_table = ((GapProbe *) userdata)->start;
        return 0;
}

static int gapprobe_gaps(void *userdata, uint64_t now_ns, const GapHist *delta, ApstTable *ret_table) {
        GapProbe *p = userdata;
        (void) ret_table;
        if (p->n < 8) {
                p->when[p->n] = now_ns;
                p->h[p->n] = *delta;
        }
        p->n++;
        return 0;
}

static void test_exact_gaps(void) {
        SimDrive d = drive_a();
        GapProbe probe = { .start = table_a() };
        SimPolicy pol = { .name = "gaps", .sample_period_ns = MS(100), .start = gapprobe_start,
                          .gaps = gapprobe_gaps, .userdata = &probe };
        /* Served with 0.1 ms each. Arrivals 0, 5, 30, 30.05, 250 ms:
         *   0     served 0..0.1
         *   5     gap 4.9 ms (ps0, ITPT 10 ms not reached): service 0.1 ms, done 5.1
         *   30    gap 24.9 ms: ps1 since 16.1 (10 ms + 1 ms entry), wakes 2 ms: service 2.1 ms, done 32.1
         *   30.05 arrives while the previous one is in service: no gap
         *   250   gap 250 - 32.2 = 217.8 ms: wakes 2 ms, service 2.1 ms, done 252.1 */
        uint64_t t[] = { 0, MS(5), MS(30), MS(30.05), MS(250) };
        SimResult r;

        current = "exact gaps";
        TraceIo io[5];
        for (size_t i = 0; i < 5; i++)
                io[i] = (TraceIo) { .t_ns = t[i], .bytes = 4096, .op = TRACE_OP_WRITE };
        CHECK(sim_run(&d, io, 5, &params_100us, &pol, &r) == 0);
        /* Deliveries only when gaps ended: at 100 ms (two gaps) and none at 200 (nothing new);
         * the 217.8 ms gap's request completes at 252.1, after the last sample, and is handed
         * over at that last completion (the gap that carries a sparse trace's energy). */
        CHECK(probe.n == 2);
        CHECK(probe.when[0] == MS(100) && probe.when[1] == MS(252.1));
        CHECK(gaphist_total_gaps(&probe.h[1]) == 1 && probe.h[1].gaps[gaphist_bucket(MS(217.8))] == 1);
        CHECK(probe.h[1].wake_sum_ns[gaphist_bucket(MS(217.8))] == MS(2.1) && probe.h[1].requests == 1);
        CHECK(gaphist_total_gaps(&probe.h[0]) == 2);
        CHECK(probe.h[0].gaps[gaphist_bucket(MS(4.9))] == 1 && probe.h[0].gaps[gaphist_bucket(MS(24.9))] == 1);
        CHECK(probe.h[0].gap_sum_ns == MS(4.9) + MS(24.9));
        CHECK(probe.h[0].wake_sum_ns[gaphist_bucket(MS(4.9))] == MS(0.1));
        CHECK(probe.h[0].wake_sum_ns[gaphist_bucket(MS(24.9))] == MS(2.1));
        CHECK(probe.h[0].wake_max_ns[gaphist_bucket(MS(24.9))] == MS(2.1));
        CHECK(probe.h[0].requests == 4);
        sim_result_done(&r);
}

/* The exact source's gaps a wake-up hid, counted as the eBPF program counts them, per floor
 * (drive B's: 0, ps1's 1 ms and ps2's 20 ms). */
static void test_exact_hidden(void) {
        SimDrive d = drive_b();
        GapProbe probe = { .start = table_b() };
        SimPolicy pol = { .name = "gaps", .sample_period_ns = MS(100), .start = gapprobe_start,
                          .gaps = gapprobe_gaps, .userdata = &probe,
                          .hide_floors = 3, .hide_floor_ns = { 0, MS(1), MS(20) } };
        /* 0      served 0..0.1
         * 1000   gap 999.9 ms: ps2 (since 61.1), wakes 20 ms: served 1020..1020.1
         * 1003, 1008, 1015   issued while it waits: hidden. From the previous issue (floor 0):
         *        3, 5, 7 ms; from 1 ms after the first at the earliest (floor 1): 2, 5, 7 ms;
         *        none from 20 ms on (floor 2): the drive would not have woken sooner
         * 1020.2 issued after the first completed, behind the others: waits for them, not hidden
         * 1030   a gap again (9.6 ms after the last of them) */
        uint64_t t[] = { 0, MS(1000), MS(1003), MS(1008), MS(1015), MS(1020.2), MS(1030) };
        const size_t n = sizeof t / sizeof t[0];
        TraceIo io[sizeof t / sizeof t[0]];
        SimResult r;

        current = "exact hidden gaps";
        for (size_t i = 0; i < n; i++)
                io[i] = (TraceIo) { .t_ns = t[i], .bytes = 4096, .op = TRACE_OP_WRITE };
        CHECK(sim_run(&d, io, n, &params_100us, &pol, &r) == 0);
        GapHist all = {};
        for (size_t i = 0; i < probe.n && i < 8; i++)
                gaphist_merge(&all, &probe.h[i]);
        CHECK(gaphist_total_gaps(&all) == 2);
        CHECK(all.gaps[gaphist_bucket(MS(999.9))] == 1 && all.gaps[gaphist_bucket(MS(9.6))] == 1);
        CHECK(gaphist_total_hidden(&all) == 6);
        CHECK(all.hidden[0][gaphist_bucket(MS(3))] == 1 && all.hidden[0][gaphist_bucket(MS(5))] == 1 &&
              all.hidden[0][gaphist_bucket(MS(7))] == 1);
        CHECK(all.hidden[1][gaphist_bucket(MS(2))] == 1 && all.hidden[1][gaphist_bucket(MS(5))] == 1 &&
              all.hidden[1][gaphist_bucket(MS(7))] == 1);
        uint64_t none[GAP_BUCKETS] = {};
        CHECK(memcmp(all.hidden[2], none, sizeof none) == 0);
        /* one wake-up hid them, after the 999.9 ms gap */
        CHECK(all.hidden_after[gaphist_bucket(MS(999.9))] == 1);
        uint64_t after = 0;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                after += all.hidden_after[b];
        CHECK(after == 1);
        sim_result_done(&r);

        /* A policy without floors counts none. */
        probe = (GapProbe) { .start = table_b() };
        pol.hide_floors = 0;
        CHECK(sim_run(&d, io, n, &params_100us, &pol, &r) == 0);
        all = (GapHist) {};
        for (size_t i = 0; i < probe.n && i < 8; i++)
                gaphist_merge(&all, &probe.h[i]);
        CHECK(gaphist_total_gaps(&all) == 2 && gaphist_total_hidden(&all) == 0);
        sim_result_done(&r);
}

static void test_reprogram(void) {
        SimDrive d = drive_a();
        Probe probe = { .later = table_a(), .reprogram_at = MS(20) };
        SimPolicy pol = { .name = "probe", .sample_period_ns = MS(20), .start = probe_start,
                          .sample = probe_sample, .userdata = &probe };
        TraceIo io[] = { { .t_ns = 0 }, { .t_ns = MS(100) } };
        SimResult r;

        current = "reprogram";
        CHECK(sim_run(&d, io, 2, &params_100us, &pol, &r) == 0);
        /* APST off until the sample at 20 programs ps0 -> ps1 after 10 ms. The drive rests in
         * ps0 since 0.1; the Set Features restarts its idle timer: ps1 entry 30..31, rest until
         * 100, exit 2 ms, served 102..102.1.
         * P0: 0.1 + 29.9 + 1 + 2 + 0.1 = 33.1 ms x 200 = 6.62 mJ; ps1 69 ms x 10 = 0.69 mJ; 7.31 mJ */
        CHECK_J(r.energy_j, 7.31);
        CHECK(r.stall_ns == MS(2));
        /* samples at 20, 40, 60, 80 and 100 (the arrival at 100 goes first; 100 < 102.1) */
        CHECK(probe.n == 5);
        CHECK(r.n_reprograms == 2);
        CHECK(r.reprograms[0].t_ns == 0 && !r.reprograms[0].table.apste);
        CHECK(r.reprograms[1].t_ns == MS(20) && apst_table_equal(&r.reprograms[1].table, &probe.later));
        sim_result_done(&r);
}

/* The per-I/O ticks of /sys/block/X/stat include the wait for the wake-up (the kernel
 * times a request from its start to its completion), and a drive that wakes slower than
 * it advertises shows up there: the watcher's evidence of a lying drive. */
static void test_ticks_include_wake(void) {
        for (int lie = 0; lie <= 1; lie++) {
                SimDrive d = drive_a();
                Probe probe = { .start = table_a(), .reprogram_at = UINT64_MAX };
                SimPolicy pol = { .name = "probe", .sample_period_ns = MS(50), .start = probe_start,
                                  .sample = probe_sample, .userdata = &probe };
                TraceIo io[] = { { .t_ns = 0, .op = TRACE_OP_WRITE, .bytes = 4096 },
                                 { .t_ns = MS(100), .op = TRACE_OP_WRITE, .bytes = 4096 },
                                 { .t_ns = MS(200), .op = TRACE_OP_WRITE, .bytes = 4096 } };
                SimResult r;

                current = lie ? "ticks/exlat-x3" : "ticks/honest";
                if (lie)
                        CHECK(sim_drive_scale_exlat(&d, 3.0) == 0);
                CHECK(d.ps[1].exlat_us == (lie ? 6000u : 2000u));
                CHECK(sim_run(&d, io, 3, &params_100us, &pol, &r) == 0);
                /* io1 finds ps1 (entered at 10.1..11.1) and waits its exit: 2 ms, or 6 ms on the
                 * lying drive; served until 102.1 or 106.1. Sample at 150: write_ios 2, write_ticks
                 * = floor(0.1 + 2.1) = 2 ms, or floor(0.1 + 6.1) = 6 ms. At 100 io1 is in flight. */
                CHECK(r.stall_ns == (lie ? MS(6) + MS(6) : MS(2) + MS(2)));
                CHECK(probe.n == 4 && probe.when[2] == MS(150));
                CHECK(probe.st[1].in_flight == 1 && probe.st[1].write_ios == 1 && probe.st[1].write_ticks == 0);
                CHECK(probe.st[2].write_ios == 2 && probe.st[2].write_ticks == (lie ? 6u : 2u));
                sim_result_done(&r);
        }

        SimDrive d = drive_a();
        current = "ticks/scale-bounds";
        CHECK(sim_drive_scale_exlat(&d, 0) == -EINVAL);
        CHECK(sim_drive_scale_exlat(&d, NAN) == -EINVAL);
        CHECK(sim_drive_scale_exlat(&d, SIM_EXLAT_SCALE_MAX + 1) == -EINVAL);
        CHECK(sim_drive_scale_exlat(&d, 1.5) == 0 && d.ps[1].exlat_us == 3000 && d.ps[0].exlat_us == 0);
}

static void test_table_check(void) {
        SimDrive b = drive_b();
        ApstTable t;

        current = "table-check";
        t = table_b();
        CHECK(sim_table_check(&b, &t) == 0);
        t.entry[2] = apst_entry_make(1, 5);       /* ps1 -> ps2 -> ps1: a cycle */
        CHECK(sim_table_check(&b, &t) == -ELOOP);
        t = table_b();
        t.entry[1] = apst_entry_make(0, 5);       /* ps0 is operational */
        CHECK(sim_table_check(&b, &t) == -EINVAL);
        t = table_b();
        t.entry[3] = apst_entry_make(2, 5);       /* beyond npss */
        CHECK(sim_table_check(&b, &t) == -EINVAL);
        t = table_b();
        t.entry[0] |= UINT64_C(1) << 40;          /* reserved bit */
        CHECK(sim_table_check(&b, &t) == -EINVAL);
        t.apste = false;                           /* APST off: nothing is followed */
        CHECK(sim_table_check(&b, &t) == 0);

        /* A policy that hands out a bad table makes the run fail, not follow it. */
        SimPolicy pol;
        TraceIo io[1] = {};
        SimResult r;
        t = table_b();
        t.entry[2] = apst_entry_make(1, 5);
        sim_policy_static(&pol, "bad", &t);
        CHECK(sim_run(&b, io, 1, &params_100us, &pol, &r) == -ELOOP);

        /* Unsorted trace, zero service time */
        TraceIo un[2] = { { .t_ns = 5 }, { .t_ns = 4 } };
        t = table_b();
        sim_policy_static(&pol, "ok", &t);
        CHECK(sim_run(&b, un, 2, &params_100us, &pol, &r) == -EINVAL);
        SimParams zero = { .service_ns = 0 };
        CHECK(sim_run(&b, io, 1, &zero, &pol, &r) == -EINVAL);
        TraceIo badop[1] = { { .t_ns = 1, .op = _TRACE_OP_MAX } };
        CHECK(sim_run(&b, badop, 1, &params_100us, &pol, &r) == -EINVAL);

        /* Empty trace: nothing spent */
        current = "empty";
        CHECK(sim_run(&b, NULL, 0, &params_100us, &pol, &r) == 0);
        CHECK(r.energy_j == 0 && r.duration_ns == 0 && r.ios == 0 && r.mean_power_w == 0);
        sim_result_done(&r);
}

/* Two results equal in every figure the benchmark reads (the same arithmetic, so exactly). */
static bool same_result(const SimResult *a, const SimResult *b) {
        return a->ios == b->ios && a->duration_ns == b->duration_ns && a->energy_j == b->energy_j &&
               a->stall_ns == b->stall_ns && a->wakeups_total == b->wakeups_total &&
               a->added_p99_ns == b->added_p99_ns && a->added_max_ns == b->added_max_ns &&
               a->added_wall_ns == b->added_wall_ns && a->transition_ns == b->transition_ns &&
               memcmp(a->resident_ns, b->resident_ns, sizeof a->resident_ns) == 0;
}

/* sim_run_repeat(), a static table: every copy starts as a cold run does (PS0 at its own 0),
 * so three copies score what one does; 0 copies or more than SIM_COPIES_MAX are refused. */
static void test_repeat_static(void) {
        SimDrive d = drive_b();
        ApstTable t = table_b();
        SimPolicy pol;
        TraceIo io[] = { { .t_ns = MS(3) }, { .t_ns = MS(20) }, { .t_ns = MS(100) }, { .t_ns = MS(300) } };
        SimResult cold, warm, r;

        current = "repeat/static";
        sim_policy_static(&pol, "static", &t);
        CHECK(sim_run(&d, io, 4, &params_100us, &pol, &cold) == 0);
        CHECK(sim_run_repeat(&d, io, 4, &params_100us, &pol, 3, &warm, NULL) == 0);
        CHECK(same_result(&cold, &warm));
        /* not a vacuous equality: the drive sleeps in this trace. Served 3..3.1 (3 ms idle: no
         * entry); at 20 it rests in ps1 (entered 13.1..14.1): 1 ms exit; at 100 and at 300 it
         * rests in ps2 (ps1 50 ms, then 5 ms entry): 20 ms exits. Three wake-ups, 41 ms. */
        CHECK(cold.wakeups_total == 3 && cold.stall_ns == MS(41));
        CHECK(sim_run_repeat(&d, io, 4, &params_100us, &pol, 0, &r, NULL) == -EINVAL);
        CHECK(sim_run_repeat(&d, io, 4, &params_100us, &pol, SIM_COPIES_MAX + 1, &r, NULL) == -EINVAL);
        sim_result_done(&cold);
        sim_result_done(&warm);
}

/* sim_run_repeat(), a sampled policy that never reprograms: the same figures as cold, and what
 * it saw is one continuous disk. test_counters' trace (served 0..5, 10..15, 20..25, 40..45;
 * samples at 12, 24, 36; last completion 45): copy 2's samples come at 45 + 12 = 57, 69, 81,
 * and its first one's counters are copy 1's totals (1 read, 1 write, 1 flush, 1 discard,
 * io_ticks 20) plus copy 2's own at 12 (1 read, io_ticks 7, the write in flight). */
static void test_repeat_clock(void) {
        SimDrive d = drive_a();
        Probe cold_probe = { .reprogram_at = UINT64_MAX }, probe = { .reprogram_at = UINT64_MAX };
        SimPolicy cold_pol = { .name = "probe", .sample_period_ns = MS(12), .start = probe_start,
                               .sample = probe_sample, .userdata = &cold_probe };
        SimPolicy pol = cold_pol;
        SimParams p = { .service_ns = MS(5) };
        TraceIo io[] = {
                { .t_ns = 0, .bytes = 4096, .op = TRACE_OP_READ },
                { .t_ns = MS(10), .bytes = 8192, .op = TRACE_OP_WRITE },
                { .t_ns = MS(20), .bytes = 0, .op = TRACE_OP_FLUSH },
                { .t_ns = MS(40), .bytes = 512, .op = TRACE_OP_DISCARD },
        };
        SimResult cold, warm;

        current = "repeat/clock";
        pol.userdata = &probe;
        CHECK(sim_run(&d, io, 4, &p, &cold_pol, &cold) == 0);
        CHECK(sim_run_repeat(&d, io, 4, &p, &pol, 2, &warm, NULL) == 0);
        CHECK(same_result(&cold, &warm));
        CHECK(cold.end_stat.io_ticks == 20 && cold.end_stat.discard_ios == 1 && cold.end_stat.in_flight == 0);
        CHECK(probe.n == 6);
        CHECK(probe.when[2] == MS(36) && probe.when[3] == MS(57) && probe.when[5] == MS(81));
        CHECK(probe.st[3].read_ios == 2 && probe.st[3].write_ios == 1 && probe.st[3].flush_ios == 1);
        CHECK(probe.st[3].discard_ios == 1 && probe.st[3].discard_sectors == 1);
        CHECK(probe.st[3].io_ticks == 27 && probe.st[3].in_flight == 1);
        sim_result_done(&cold);
        sim_result_done(&warm);
}

/* sim_run_repeat() on the exact source: the copies are one disk, so a later copy's first
 * request ends the gap since the copy before's last completion (the gap a sparse trace's
 * copies are mostly made of), and the first copy's does not (nothing was seen before it).
 * Arrivals 20 and 90 ms, drive A, table A (ps1 after 10 ms, 1 ms entry, 2 ms exit), samples
 * every 100 ms: copy 1 serves 20..22.1 (a wake-up) and 90..92.1 (gap 67.9 ms, a wake-up),
 * delivered at its end, 92.1; copy 2 (from 92.1) sees a 20 ms gap and the 67.9 ms one, the
 * last at its end, 92.1 + 92.1. */
static void test_repeat_exact_gaps(void) {
        SimDrive d = drive_a();
        GapProbe probe = { .start = table_a() };
        SimPolicy pol = { .name = "gaps", .sample_period_ns = MS(100), .start = gapprobe_start,
                          .gaps = gapprobe_gaps, .userdata = &probe };
        TraceIo io[] = { { .t_ns = MS(20), .op = TRACE_OP_READ }, { .t_ns = MS(90), .op = TRACE_OP_READ } };
        SimResult warm;

        current = "repeat/exact gaps";
        CHECK(sim_run_repeat(&d, io, 2, &params_100us, &pol, 2, &warm, NULL) == 0);
        CHECK(warm.wakeups_total == 2 && warm.duration_ns == MS(92.1));
        /* copy 1: one delivery, at its last completion, of the 67.9 ms gap alone */
        CHECK(probe.n >= 1 && probe.when[0] == MS(92.1));
        CHECK(gaphist_total_gaps(&probe.h[0]) == 1 && probe.h[0].gaps[gaphist_bucket(MS(67.9))] == 1);
        /* copy 2: both gaps, the first since copy 1's end */
        uint64_t seen = 0, gaps20 = 0, gaps68 = 0;
        for (size_t i = 1; i < probe.n && i < 8; i++) {
                CHECK(probe.when[i] > probe.when[i - 1]);
                seen += gaphist_total_gaps(&probe.h[i]);
                gaps20 += probe.h[i].gaps[gaphist_bucket(MS(20))];
                gaps68 += probe.h[i].gaps[gaphist_bucket(MS(67.9))];
        }
        CHECK(seen == 2 && gaps20 == 1 && gaps68 == 1);
        CHECK(probe.when[probe.n - 1] == MS(92.1) + MS(92.1));
        sim_result_done(&warm);
}

/* A policy that learns: APST off until it has been sampled @after times, then its table;
 * it starts a later copy on what it holds. */
typedef struct Learner {
        unsigned samples, after;
        ApstTable holds, learned;
} Learner;

static int learner_start(void *userdata, ApstTable *ret_table) {
        *ret_table = ((Learner *) userdata)->holds;
        return 0;
}

static int learner_sample(void *userdata, uint64_t now_ns, const SimBlockStat *st, ApstTable *ret_table) {
        Learner *l = userdata;

        (void) now_ns;
        (void) st;
        if (++l->samples != l->after)
                return 0;
        l->holds = l->learned;
        *ret_table = l->holds;
        return 1;
}

/* sim_run_repeat(), a learning policy: on test_reprogram's trace (0 and 100 ms, drive A,
 * samples every 20 ms) it learns at its 5th sample, which a cold run reaches at 100 ms, while
 * the last I/O is served (100..100.1): APST is off in effect, 100.1 ms x 200 mW = 20.02 mJ. Warm (two copies)
 * the second copy starts on ps0 -> ps1 after 10 ms: ps1 entry 10.1..11.1, rest until 100, exit
 * 2 ms, served 102..102.1: P0 0.1 + 10 + 1 + 2 + 0.1 = 13.2 ms x 200 = 2.64 mJ, ps1 88.9 ms x 10
 * = 0.889 mJ; 3.529 mJ, and one wake-up. */
static void test_repeat_learns(void) {
        SimDrive d = drive_a();
        Learner cold_l = { .after = 5, .learned = table_a() }, warm_l = cold_l;
        SimPolicy pol = { .name = "learner", .sample_period_ns = MS(20), .start = learner_start,
                          .sample = learner_sample, .userdata = &cold_l };
        TraceIo io[] = { { .t_ns = 0 }, { .t_ns = MS(100) } };
        SimResult cold, warm, first;

        current = "repeat/learns";
        CHECK(sim_run(&d, io, 2, &params_100us, &pol, &cold) == 0);
        CHECK_J(cold.energy_j, 20.02);
        CHECK(cold.wakeups_total == 0);
        pol.userdata = &warm_l;
        CHECK(sim_run_repeat(&d, io, 2, &params_100us, &pol, 2, &warm, &first) == 0);
        CHECK_J(warm.energy_j, 3.529);
        /* the first copy is the cold run */
        CHECK(same_result(&first, &cold) && first.n_reprograms == 2 && cold.n_reprograms == 2);
        CHECK(warm.wakeups_total == 1 && warm.stall_ns == MS(2));
        CHECK(warm.reprograms[0].t_ns == 0 && apst_table_equal(&warm.reprograms[0].table, &warm_l.learned));
        sim_result_done(&cold);
        sim_result_done(&warm);
        sim_result_done(&first);
}

int main(void) {
        test_one_step_rest();
        test_one_step_during_entry();
        test_one_step_at_deadline();
        test_two_step();
        test_gap_optimum();
        test_none_and_kernel();
        test_closed_loop();
        test_segments();
        test_timeline();
        test_counters();
        test_exact_gaps();
        test_exact_hidden();
        test_reprogram();
        test_ticks_include_wake();
        test_table_check();
        test_repeat_static();
        test_repeat_exact_gaps();
        test_repeat_clock();
        test_repeat_learns();

        printf("%u checks, %u failed\n", n_checks, n_failed);
        return n_failed ? 1 : 0;
}
