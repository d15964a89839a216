/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Passive calibration: where a table takes an idle drive, which gap buckets are
 * evidence for which state, and the exit latencies that come out.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "passive-calib.h"

#define US UINT64_C(1000)
#define MS UINT64_C(1000000)

/* The seed drive's shape: ps3 10000/300 µs, ps4 2000/10000 µs, both non-operational. */
static IdCtrl seed_id(void) {
        IdCtrl id = { .npss = 4, .apst_supported = true };

        for (unsigned i = 0; i <= 2; i++)
                id.psd[i] = (IdPsd) { .max_power_uw = 9000000, .enlat_us = 0, .exlat_us = 0 };
        id.psd[3] = (IdPsd) { .max_power_uw = 40000, .non_operational = true, .enlat_us = 10000, .exlat_us = 300 };
        id.psd[4] = (IdPsd) { .max_power_uw = 4000, .non_operational = true, .enlat_us = 2000, .exlat_us = 10000 };
        return id;
}

/* The kernel's default table for it: ps0..ps2 -> ps3 after 100 ms, ps3 -> ps4 after 2000 ms. */
static ApstTable seed_table(uint32_t first_ms) {
        ApstTable t = { .apste = true };

        for (unsigned i = 0; i <= 2; i++)
                t.entry[i] = apst_entry_make(3, first_ms);
        t.entry[3] = apst_entry_make(4, 2000);
        return t;
}

static void test_reach(void) {
        IdCtrl id = seed_id();
        ApstTable t = seed_table(100);
        PassiveCalibReach r;

        passive_calib_reach_from_table(&t, &id, &r);
        CHECK(r.n == 2);
        CHECK(r.state[0] == 3 && r.state[1] == 4);
        CHECK(r.due_ns[0] == 100 * MS);
        CHECK(r.settled_ns[0] == 110 * MS);              /* + ps3's 10 ms entry */
        CHECK(r.due_ns[1] == 2110 * MS);                 /* ITPT counts in ps3, after its entry */
        CHECK(r.settled_ns[1] == 2112 * MS);

        /* APSTE = 0: the drive stays awake whatever the entries say */
        t.apste = false;
        passive_calib_reach_from_table(&t, &id, &r);
        CHECK(r.n == 0);

        /* a state pointing back up does not loop: ps4 -> ps3 is a state already visited */
        t = seed_table(100);
        t.entry[4] = apst_entry_make(3, 50);
        passive_calib_reach_from_table(&t, &id, &r);
        CHECK(r.n == 2);

        /* ITPT 0 ends the chain; a target above npss too */
        t = seed_table(100);
        t.entry[3] = apst_entry_make(4, 0);
        passive_calib_reach_from_table(&t, &id, &r);
        CHECK(r.n == 1 && r.state[0] == 3);
        t.entry[0] = apst_entry_make(7, 100);
        passive_calib_reach_from_table(&t, &id, &r);
        CHECK(r.n == 0);
}

/* A drive whose ps3 wakes in 250 µs and ps4 in 31 ms (3.1x its descriptor), awake reads 80 µs. */
static void fill_workload(GapHist *h, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                gaphist_add_gap(h, 1 * MS + i * 10 * US, 80 * US);          /* awake */
                gaphist_add_gap(h, 40 * MS, 80 * US);                        /* awake, before the 100 ms */
                gaphist_add_gap(h, 500 * MS + i * MS, 80 * US + 250 * US);   /* settled in ps3 */
                gaphist_add_gap(h, 5000 * MS + i * MS, 80 * US + 31 * MS);   /* settled in ps4 */
                /* not evidence: straddling 100 ms, in ps3's entry, near ps4's due time, in ps4's entry */
                gaphist_add_gap(h, 95 * MS, 50 * MS);
                gaphist_add_gap(h, 105 * MS, 50 * MS);
                gaphist_add_gap(h, 2050 * MS, 50 * MS);
                gaphist_add_gap(h, 2111 * MS, 50 * MS);
        }
        h->requests += 8 * n;
}

static void test_estimate(void) {
        IdCtrl id = seed_id(), raised;
        ApstTable t = seed_table(100);
        PassiveCalib pc = {};
        PassiveCalibEstimate e;
        PassiveCalibReach r;
        GapHist h = {};

        passive_calib_reach_from_table(&t, &id, &r);
        fill_workload(&h, 4);
        passive_calib_feed(&pc, &h, &r);
        CHECK(pc.gaps_fed == 32);
        /* four of each: below PASSIVE_CALIB_MIN_SAMPLES */
        CHECK(passive_calib_estimate(&pc, 4, &e) == -ENODATA);
        CHECK(passive_calib_apply(&pc, &id, &raised) == 0);
        CHECK(raised.psd[4].exlat_us == 10000);

        memset(&h, 0, sizeof h);
        fill_workload(&h, 2);
        passive_calib_feed(&pc, &h, &r);
        CHECK(pc.awake.count == 12);
        CHECK(pc.state[3].count == 6 && pc.state[4].count == 6);
        CHECK(passive_calib_estimate(&pc, 4, &e) == 0);
        CHECK(e.samples == 6 && e.awake_samples == 12);
        CHECK(e.awake_mean_ns == 80 * US);
        CHECK(e.wake_mean_ns == 80 * US + 31 * MS);
        CHECK(e.exlat_ns == 31 * MS);                    /* none of the 50 ms requests counted */
        CHECK(e.wake_max_ns == 80 * US + 31 * MS);
        CHECK(passive_calib_estimate(&pc, 3, &e) == 0);
        CHECK(e.exlat_ns == 250 * US);
        CHECK(passive_calib_estimate(&pc, 2, &e) == -ENODATA);
        CHECK(passive_calib_estimate(&pc, IDCTRL_MAX_PS, &e) == -EINVAL);

        /* max(advertised, measured): ps4 goes up to 31 ms, ps3 keeps its 300 µs */
        CHECK(passive_calib_apply(&pc, &id, &raised) == (UINT32_C(1) << 4));
        CHECK(raised.psd[4].exlat_us == 31000);
        CHECK(raised.psd[3].exlat_us == 300);
        CHECK(raised.psd[4].enlat_us == 2000);
}

static void test_table_changes(void) {
        IdCtrl id = seed_id();
        ApstTable a = seed_table(100), b = seed_table(1000);
        PassiveCalib pc = {};
        PassiveCalibReach ra, rb;
        GapHist h = {};

        passive_calib_reach_from_table(&a, &id, &ra);
        passive_calib_reach_from_table(&b, &id, &rb);
        for (unsigned i = 0; i < 5; i++)
                gaphist_add_gap(&h, 500 * MS, 400 * US);
        /* under a 100 ms first step these gaps settled in ps3; under 1000 ms the drive stayed awake */
        passive_calib_feed(&pc, &h, &ra);
        CHECK(pc.state[3].count == 5 && pc.awake.count == 0);
        passive_calib_feed(&pc, &h, &rb);
        CHECK(pc.state[3].count == 5 && pc.awake.count == 5);

        /* no transitions at all: every first request is an awake one, the longest gaps too */
        memset(&pc, 0, sizeof pc);
        a.apste = false;
        passive_calib_reach_from_table(&a, &id, &ra);
        gaphist_add_gap(&h, UINT64_C(1) << 41, 400 * US);
        passive_calib_feed(&pc, &h, &ra);
        CHECK(pc.awake.count == 6);
}

static void test_disagrees(void) {
        CHECK(passive_calib_disagrees(31 * MS, 10000));
        CHECK(passive_calib_disagrees(2 * MS, 10000));            /* faster than advertised, too */
        CHECK(!passive_calib_disagrees(11 * MS, 10000));          /* within a quarter */
        CHECK(!passive_calib_disagrees(150 * US, 10));            /* beyond a quarter but under 200 µs */
        CHECK(passive_calib_disagrees(500 * US, 10));
}

int main(void) {
        test_reach();
        test_estimate();
        test_table_changes();
        test_disagrees();
        return check_exit_status();
}
