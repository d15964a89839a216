/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pure part of `calibrate` (calib-plan.c): which states are measured (every
 * non-operational one, the deepest left out under NO_DEEPEST_PS unless forced),
 * the temporary table (operational states -> the state under test, nothing
 * else; a table the controller accepts), the idle wait, the run-time estimate,
 * and the sample statistics (median, nearest-rank percentiles, wake costs).
 * The expected values are worked out by hand from the definitions in
 * calib-plan.h, not by calling the code under test.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calib-plan.h"
#include "check.h"
#include "macro.h"

/* The seed drive's states (Intel 600p): ps0-2 operational, ps3 10000/300 µs, ps4 2000/10000 µs. */
static void seed(IdCtrl *id) {
        *id = (IdCtrl) { .npss = 4, .apst_supported = true };
        (void) snprintf(id->model, sizeof id->model, "INTEL SSDPEKKW256G7");
        id->psd[0] = (IdPsd) { .max_power_uw = 9000000, .enlat_us = 5, .exlat_us = 5 };
        id->psd[1] = (IdPsd) { .max_power_uw = 4600000, .enlat_us = 30, .exlat_us = 30 };
        id->psd[2] = (IdPsd) { .max_power_uw = 3800000, .enlat_us = 30, .exlat_us = 30 };
        id->psd[3] = (IdPsd) { .max_power_uw = 70000, .non_operational = true, .enlat_us = 10000, .exlat_us = 300 };
        id->psd[4] = (IdPsd) { .max_power_uw = 5000, .non_operational = true, .enlat_us = 2000, .exlat_us = 10000 };
}

static void test_targets(void) {
        uint8_t ps[IDCTRL_MAX_PS];
        IdCtrl id;

        seed(&id);
        CHECK(calib_targets(&id, 0, false, ps) == 2 && ps[0] == 3 && ps[1] == 4);
        /* NO_DEEPEST_PS (the 600p's own PCI id): ps4 is never entered, so not measured */
        CHECK(calib_targets(&id, APST_QUIRK_NO_DEEPEST_PS, false, ps) == 1 && ps[0] == 3);
        /* force = yes overrides the quirk, as it does for the policies */
        CHECK(calib_targets(&id, APST_QUIRK_NO_DEEPEST_PS, true, ps) == 2 && ps[1] == 4);
        /* a drive with only operational states has nothing to measure */
        id.psd[3].non_operational = id.psd[4].non_operational = false;
        CHECK(calib_targets(&id, 0, false, ps) == 0);
        /* NO_DEEPEST_PS only drops the deepest: a non-operational ps2 under npss 4 stays */
        seed(&id);
        id.psd[2].non_operational = true;
        CHECK(calib_targets(&id, APST_QUIRK_NO_DEEPEST_PS, false, ps) == 2 && ps[0] == 2 && ps[1] == 3);
}

static void test_temp_table(void) {
        ApstTable t;
        IdCtrl id;

        seed(&id);
        calib_temp_table(&id, 4, 2, &t);
        CHECK(t.apste);
        for (unsigned i = 0; i <= 2; i++)
                CHECK(t.entry[i] == ((uint64_t) 2 << 8 | (uint64_t) 4 << 3)); /* ITPT 31:8, ITPS 7:3 */
        for (unsigned i = 3; i < APST_ENTRIES; i++)
                CHECK(t.entry[i] == 0);    /* ps3 never reached, ps4 stays */
        CHECK(apst_table_check(&t, &id) == 0);

        calib_temp_table(&id, 3, 0, &t);    /* ITPT 0 would mean "never": clamped to 1 ms */
        CHECK(t.entry[0] == ((uint64_t) 1 << 8 | (uint64_t) 3 << 3));
        CHECK(t.entry[4] == 0);
        CHECK(apst_table_check(&t, &id) == 0);

        calib_temp_table(&id, 3, 0x1000000, &t); /* beyond 24 bits: clamped */
        CHECK(apst_entry_itpt(t.entry[1]) == APST_ITPT_MAX);
}

static void test_schedule(void) {
        uint8_t ps[] = { 3, 4 };
        IdCtrl id;

        /* 2 ms + 2000 µs + 1000 µs + margin */
        CHECK(calib_idle_wait_us(2, 2000) == 2000 + 2000 + 1000 + CALIB_MARGIN_US);
        CHECK(calib_idle_wait_us(5, 0) == 5000 + CALIB_MARGIN_US);
        seed(&id);
        /* ps3: 2000 + 10000 + 5000 + margin + 4 * 300 + 2000; ps4: 2000 + 2000 + 1000 + margin + 40000 + 2000 */
        CHECK(calib_estimate_us(&id, ps, 2, 10, 2) ==
              10 * (uint64_t) (2000 + 10000 + 5000 + CALIB_MARGIN_US + 1200 + 2000) +
                       10 * (uint64_t) (2000 + 2000 + 1000 + CALIB_MARGIN_US + 40000 + 2000));
        CHECK(calib_estimate_us(&id, ps, 0, 10, 2) == 0);
        /* the default bound fits the seed drive with the default samples many times over */
        CHECK(calib_estimate_us(&id, ps, 2, CALIB_SAMPLES_DEFAULT, CALIB_ITPT_MS) <
              (uint64_t) CALIB_MAX_TIME_DEFAULT_S * 1000000 / 10);
}

static void test_stats(void) {
        uint32_t odd[] = { 9, 1, 5, 3, 7 }, even[] = { 4, 1, 3, 2 }, one[] = { 42 };
        uint32_t twenty[20], hundred[100], costs[4];
        const uint32_t asleep[] = { 30100, 29900, 50, 30000 };

        CHECK(calib_median(odd, ELEMENTSOF(odd)) == 5);
        CHECK(odd[0] == 1 && odd[4] == 9);           /* sorted in place */
        CHECK(calib_median(even, ELEMENTSOF(even)) == 2); /* the lower middle */
        CHECK(calib_median(one, 1) == 42);
        CHECK(calib_median(NULL, 0) == 0);

        for (unsigned i = 0; i < 20; i++)
                twenty[i] = 20 - i;                  /* 20, 19, ... 1 */
        CHECK(calib_percentile(twenty, 20, 99) == 20); /* rank ceil(19.8) = 20: the largest */
        CHECK(calib_percentile(twenty, 20, 50) == 10); /* rank 10 */
        CHECK(calib_percentile(twenty, 20, 90) == 18); /* rank 18 */
        CHECK(calib_percentile(twenty, 20, 1) == 1);
        for (unsigned i = 0; i < 100; i++)
                hundred[i] = i + 1;
        CHECK(calib_percentile(hundred, 100, 99) == 99); /* the worst one left out */
        CHECK(calib_percentile(hundred, 100, 100) == 100);
        CHECK(calib_percentile(one, 1, 99) == 42);
        CHECK(calib_percentile(NULL, 0, 99) == 0);

        calib_wake_costs(asleep, 4, 100, costs);
        CHECK(costs[0] == 30000 && costs[1] == 29800 && costs[2] == 0 && costs[3] == 29900);

        CHECK(fabs(calib_ratio(30000, 10000) - 3.0) < 1e-9);
        CHECK(fabs(calib_ratio(0, 300)) < 1e-9);
        CHECK(calib_ratio(5, 0) < 0);
}

int main(void) {
        test_targets();
        test_temp_table();
        test_schedule();
        test_stats();
        return check_exit_status();
}
