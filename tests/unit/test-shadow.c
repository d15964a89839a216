/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The shadow kernel against numbers worked out by hand: one gap's energy and
 * wait under a chain, a table's chain, the accounting of a delta for the
 * applied and the kernel's table, the sliding window, and the guard's verdicts.
 * Units in comments: ms, mW; 1 mW x 1 ms = 1 µJ = 1e9 µW·ns.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "shadow.h"

#define NEAR(x, want) (fabs((double) (x) - (double) (want)) <= 1e-9 * fabs((double) (want)) + 1e-6)
#define MS(x) ((uint64_t) ((x) * 1000000.0 + 0.5))

/* PS0 200 mW; ps1 non-operational, 10 mW, entry 1 ms, exit 2 ms. */
static ShadowDrive drive(void) {
        ShadowDrive d = { .npss = 1, .p0_uw = 200000 };
        d.power_uw[1] = 10000;
        d.enlat_us[1] = 1000;
        d.exlat_us[1] = 2000;
        d.non_operational[1] = true;
        return d;
}

/* ps0 -> ps1 after @ms of idleness */
static ShadowChain after(const ShadowDrive *d, unsigned ms) {
        uint64_t e[SHADOW_STATES] = { [0] = (UINT64_C(1) << 3) | ((uint64_t) ms << 8) };
        ShadowChain c;

        shadow_chain_from_table(d, true, e, &c);
        return c;
}

static void test_gap_cost(void) {
        ShadowDrive d = drive();
        ShadowChain c = after(&d, 10), none = {};
        double e, w;

        current = "gap cost";
        CHECK(c.n == 1 && c.state[0] == 1 && c.start_ns[0] == MS(10));
        /* 5 ms, before the entry: 200 mW x 5 ms = 1000 µJ, no wait */
        shadow_gap_cost(&d, &c, (double) MS(5), &e, &w);
        CHECK(NEAR(e, 1000e9) && w == 0);
        /* 10.5 ms, 0.5 ms into the 1 ms entry: waits 0.5 + 2 = 2.5 ms; 200 mW over 10 + 0.5 + 2.5 ms */
        shadow_gap_cost(&d, &c, (double) MS(10.5), &e, &w);
        CHECK(NEAR(w, 2.5e6) && NEAR(e, 200000.0 * 13e6));
        /* 100 ms: 10 ms at 200, 1 ms entry at 200, 89 ms at 10, 2 ms exit at 200 = 2000 + 200 + 890 + 400 µJ */
        shadow_gap_cost(&d, &c, (double) MS(100), &e, &w);
        CHECK(NEAR(w, 2e6) && NEAR(e, 3490e9));
        /* no transitions: 200 mW throughout */
        shadow_gap_cost(&d, &none, (double) MS(100), &e, &w);
        CHECK(NEAR(e, 20000e9) && w == 0);
        /* a measured exit latency above the advertised one is the one used */
        d.exlat_seen_us[1] = 6000;
        CHECK(shadow_exlat_us(&d, 1) == 6000);
        shadow_gap_cost(&d, &c, (double) MS(100), &e, &w);
        CHECK(NEAR(w, 6e6));
        d.exlat_seen_us[1] = 500;   /* never below the advertised one */
        CHECK(shadow_exlat_us(&d, 1) == 2000);
}

static void test_chain_from_table(void) {
        ShadowDrive d = drive();
        uint64_t e[SHADOW_STATES] = {};
        ShadowChain c;

        current = "chain from table";
        /* APSTE off: nothing */
        e[0] = (UINT64_C(1) << 3) | (UINT64_C(10) << 8);
        shadow_chain_from_table(&d, false, e, &c);
        CHECK(c.n == 0);
        /* a cycle back to ps0 stops the walk after one step */
        e[1] = (UINT64_C(0) << 3) | (UINT64_C(5) << 8);
        shadow_chain_from_table(&d, true, e, &c);
        CHECK(c.n == 1);
        /* a target past npss ends the chain */
        e[0] = (UINT64_C(7) << 3) | (UINT64_C(10) << 8);
        shadow_chain_from_table(&d, true, e, &c);
        CHECK(c.n == 0);
}

/* @n gaps of @gap_ms, each followed by a first request that took @svc_ms. */
static GapHist gaps(unsigned n, double gap_ms, double svc_ms) {
        GapHist h = {};

        for (unsigned i = 0; i < n; i++)
                gaphist_add_gap(&h, MS(gap_ms), MS(svc_ms));
        return h;
}

static void test_accounting_and_guard(void) {
        ShadowDrive d = drive();
        ShadowChain early = after(&d, 10), kernel = after(&d, 100), late = after(&d, 100), none = {};
        ShadowSums a, k;
        Shadow s;
        char why[256];

        current = "guard: more wake delay";
        /* 30 gaps of 50 ms: our table (ps1 after 10 ms) wakes each, 2 ms + 0.1 ms of service
         * measured; the kernel's (ps1 after 100 ms) never sleeps on them. */
        GapHist h = gaps(30, 50, 2.1);
        shadow_init(&s, 0);
        shadow_account(&s, &d, &early, &kernel, &h, 0.1e6, MS(1000));
        shadow_window(&s, &a, &k);
        CHECK(NEAR(a.wake_ns, 30 * 2e6) && k.wake_ns == 0 && NEAR(a.gaps, 30) && NEAR(a.wakes, 30));
        CHECK(NEAR(s.total_applied.wake_ns, 30 * 2e6));
        CHECK(shadow_guard(&s, 0, why, sizeof why) == SHADOW_WORSE_WAKE);
        CHECK(strstr(why, "wake delay 60 ms against its 0 s") != NULL);
        /* each gap 2 ms apart (the model's wake-up, not the 2.1 ms measured): the spread is
         * 2 ms x sqrt(30) */
        CHECK(NEAR(shadow_window_wake_spread_ns(&s), 2e6 * sqrt(30)));
        /* two minutes later the window has forgotten it; the totals have not */
        shadow_account(&s, &d, &early, &kernel, &(GapHist) {}, 0.1e6, MS(1000 + 130000));
        CHECK(shadow_guard(&s, 0, NULL, 0) == SHADOW_OK);
        CHECK(shadow_window_wake_spread_ns(&s) == 0);
        CHECK(NEAR(s.total_applied.wake_ns, 30 * 2e6));

        current = "guard: within one wake-up of slack";
        /* 30 gaps of 200 ms that both tables end in ps1 (2 ms to wake), and one of 50 ms only
         * ours does: 62 ms against 60, over the 2% tolerance by less than one wake-up */
        h = gaps(30, 200, 2.1);
        GapHist one_more = gaps(1, 50, 2.1);
        gaphist_merge(&h, &one_more);
        shadow_init(&s, 0);
        shadow_account(&s, &d, &early, &kernel, &h, 0.1e6, MS(1000));
        shadow_window(&s, &a, &k);
        CHECK(NEAR(a.wake_ns, 62e6) && NEAR(k.wake_ns, 60e6));
        /* the gaps both tables end alike add nothing to the spread; the one they do not, 2 ms */
        CHECK(NEAR(shadow_window_wake_spread_ns(&s), 2e6));
        CHECK(shadow_guard(&s, 0, NULL, 0) == SHADOW_WORSE_WAKE);
        CHECK(shadow_guard(&s, 2e6, NULL, 0) == SHADOW_OK);
        CHECK(shadow_guard(&s, -5e6, NULL, 0) == SHADOW_WORSE_WAKE);   /* never a negative slack */
        /* a second such gap is more than one wake-up over */
        shadow_account(&s, &d, &early, &kernel, &one_more, 0.1e6, MS(1500));
        CHECK(shadow_guard(&s, 2e6, why, sizeof why) == SHADOW_WORSE_WAKE);
        CHECK(strstr(why, "wake delay 64 ms against its 60 ms; allowed 2% more and 2 ms") != NULL);

        current = "guard: too little evidence";
        h = gaps(10, 50, 2.1);   /* 20 ms of wake delay but only 10 gaps */
        shadow_init(&s, 0);
        shadow_account(&s, &d, &early, &kernel, &h, 0.1e6, MS(1000));
        CHECK(shadow_guard(&s, 0, NULL, 0) == SHADOW_OK);

        current = "guard: the kernel's own table";
        h = gaps(30, 200, 2.1);
        shadow_init(&s, 0);
        shadow_account(&s, &d, &kernel, &kernel, &h, 0.1e6, MS(1000));
        shadow_window(&s, &a, &k);
        CHECK(a.gaps == 0 && k.gaps == 0);          /* not in the window */
        CHECK(shadow_window_wake_spread_ns(&s) == 0);
        CHECK(NEAR(s.total_kernel.wake_ns, s.total_applied.wake_ns) &&
              NEAR(s.total_kernel.energy_uwns, s.total_applied.energy_uwns));
        CHECK(shadow_guard(&s, 0, NULL, 0) == SHADOW_OK);

        current = "guard: energy for less wake delay is a trade";
        /* 30 gaps of 50 ms: staying awake costs more energy than the kernel's (ps1 after 10 ms
         * here), but spares every wake-up */
        h = gaps(30, 50, 0.1);
        shadow_init(&s, 0);
        shadow_account(&s, &d, &none, &early, &h, 0.1e6, MS(1000));
        shadow_window(&s, &a, &k);
        CHECK(a.energy_uwns > 1.5 * k.energy_uwns && a.wake_ns == 0 && NEAR(k.wake_ns, 30 * 2e6));
        /* waiting less counts in the spread as waiting more does */
        CHECK(NEAR(shadow_window_wake_spread_ns(&s), 2e6 * sqrt(30)));
        CHECK(shadow_guard(&s, 0, NULL, 0) == SHADOW_OK);

        current = "guard: more energy for the same wake delay";
        /* 30 gaps of 200 ms: ps1 after 100 ms (ours) and after 10 ms (the kernel's, here) both
         * wake once per gap; ours rests 90 ms longer at 200 mW */
        h = gaps(30, 200, 2.1);
        shadow_init(&s, 0);
        shadow_account(&s, &d, &late, &early, &h, 0.1e6, MS(1000));
        shadow_window(&s, &a, &k);
        CHECK(NEAR(a.wake_ns, k.wake_ns));
        CHECK(shadow_guard(&s, 0, why, sizeof why) == SHADOW_WORSE_ENERGY);
        CHECK(strstr(why, "more than the kernel's table") != NULL);
}

static void test_describe(void) {
        ShadowSums a = { .energy_uwns = 59e15, .wake_ns = 1.2e9 }, k = { .energy_uwns = 100e15, .wake_ns = 1.9e9 };
        char buf[160];

        current = "describe";
        shadow_describe(&a, &k, buf, sizeof buf);
        CHECK(strcmp(buf, "41 J (41%) less than the kernel's table, wake delay 1.2 s against its 1.9 s") == 0);
        shadow_describe(&k, &a, buf, sizeof buf);
        CHECK(strcmp(buf, "41 J (69%) more than the kernel's table, wake delay 1.9 s against its 1.2 s") == 0);
}

static void test_report(void) {
        ShadowDrive d = drive();
        ShadowChain early = after(&d, 10), kernel = after(&d, 100);
        ShadowReport r;
        ShadowSums a, k;
        Shadow s;
        GapHist h = gaps(30, 50, 2.1);
        char res[128];
        const uint64_t min = MS(60000);

        current = "report";
        shadow_init(&s, 0);
        shadow_report_init(&r, &s, 0);
        CHECK(!shadow_report_due(&r, &s, 90 * min));          /* nothing seen: nothing to say */
        shadow_account(&s, &d, &early, &kernel, &h, 0.1e6, MS(1000));
        CHECK(!shadow_report_due(&r, &s, 59 * min));          /* not an hour yet, nothing marked */
        CHECK(shadow_report_due(&r, &s, 60 * min));
        shadow_report_period(&r, &s, &a, &k);
        /* 30 gaps of 50 ms land in the bucket [5, 6) x 2^23 ns, scored over it: on average
         * 46.137344 ms, of which 10 ms in ps0, 1 ms entering ps1 and 35.137344 ms in ps1 */
        CHECK(NEAR(a.gaps, 30) && NEAR(a.entries, 30));
        CHECK(NEAR(a.resident_ns[0], 30 * 10e6) && NEAR(a.resident_ns[1], 30 * 35.137344e6));
        shadow_residency_describe(&a, res, sizeof res);
        CHECK(strcmp(res, "ps0 22.2%, ps1 77.8%") == 0);
        shadow_report_mark(&r, &s, 60 * min);
        /* the same again: not due before another hour, and the period starts afresh */
        shadow_account(&s, &d, &early, &kernel, &h, 0.1e6, 61 * min);
        CHECK(!shadow_report_due(&r, &s, 70 * min));
        shadow_report_period(&r, &s, &a, &k);
        CHECK(NEAR(a.gaps, 30));
        /* a guard fallback is a marked change: due after five minutes, not before */
        s.fallbacks++;
        CHECK(!shadow_report_due(&r, &s, 64 * min));
        CHECK(shadow_report_due(&r, &s, 65 * min));
}

int main(void) {
        test_gap_cost();
        test_chain_from_table();
        test_accounting_and_guard();
        test_describe();
        test_report();
        printf("%u checks, %u failed\n", n_checks, n_failed);
        return n_failed ? 1 : 0;
}
