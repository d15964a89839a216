/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * APST table building. Every expected table below was worked out by hand from the
 * rules (doc/kernel-apst.md for the kernel policy, doc/policy.md for the budget policy) and the
 * power-state descriptors of tests/data/idctrl/; the reasoning is in the comment above
 * each case. Nothing expected is computed with the code under test: ENT() is the
 * test's own encoding of an entry (bits 7:3 target, 31:8 ms).
 *
 * The drives (µW, enlat/exlat µs; N = non-operational, MXPS already applied):
 *   00 INTEL SSDPEKKW256G7   ps0-2 op; ps3 N 70000 10000/300;  ps4 N 5000 2000/10000
 *   05 970 EVO Plus          ps0-2 op; ps3 N 70000 210/1200;   ps4 N 5000 2000/8000
 *   08 KINGSTON SA2000       ps0-2 op; ps3 N 45000 2000/2000;  ps4 N 4000 15000/15000
 *   10 980 PRO               ps0-2 op; ps3 N 40000 2000/1200;  ps4 N 5000 500/9500
 *   14 WDC SN550             ps0-2 op; ps3 N 25000 3900/11000; ps4 N 5000 5000/39000
 *   28 Amazon EBS            npss 0, ps0 op
 * No drive reports idle power, so the budget policy uses P0 = 300000 µW and a
 * non-operational state's max power as its power.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apst.h"
#include "check.h"
#include "idctrl.h"
#include "macro.h"

#define ENT(ps, ms) ((((uint64_t) (ms)) << 8) | (((uint64_t) (ps)) << 3))

#define SEED "00-intel-ssdpekkw256g7"
#define EVO "05-samsung-ssd-970-evo-plus-2tb"
#define KINGSTON "08-kingston-sa2000m81000g"
#define PRO "10-samsung-980-pro-with-heatsink-1tb"
#define WDC "14-wdc-wds500g2b0c-00pxh0"
#define EBS "28-amazon-elastic-block-store"

/* The documented defaults of nvme_core (doc/kernel-apst.md), spelled out here on purpose. */
#define PARAMS_FULL(pol, lat, pto, sto, ptol, stol, f)                                          \
        {                                                                                       \
                .policy = (pol), .max_latency_us = (lat), .primary_timeout_ms = (pto),          \
                .secondary_timeout_ms = (sto), .primary_latency_tol_us = (ptol),                \
                .secondary_latency_tol_us = (stol), .force = (f),                               \
                .stall_budget_pct_x100 = APST_STALL_BUDGET_DEFAULT_PCT_X100,                    \
        }
#define PARAMS(pol, lat) PARAMS_FULL(pol, lat, 100, 2000, 15000, 100000, false)
/* The budget policy reduced to bare break-even: no kernel tier (primary_timeout_ms = 0) and a
 * 100% stall budget (tau / 100% = tau, never later than break-even from PS0). What the budget
 * policy was before it honoured the stall budget; kept to test the break-even arithmetic. */
#define PARAMS_BE(pol, lat)                                                                     \
        {                                                                                       \
                .policy = (pol), .max_latency_us = (lat), .primary_timeout_ms = 0,              \
                .secondary_timeout_ms = 2000, .primary_latency_tol_us = 15000,                  \
                .secondary_latency_tol_us = 100000, .force = false,                             \
                .stall_budget_pct_x100 = APST_STALL_BUDGET_MAX_PCT_X100,                        \
        }
#define PARAMS_FORCED(pol, lat) PARAMS_FULL(pol, lat, 100, 2000, 15000, 100000, true)
#define K APST_POLICY_KERNEL
#define B APST_POLICY_BUDGET
#define NO_APST APST_QUIRK_NO_APST
#define NO_DEEPEST APST_QUIRK_NO_DEEPEST_PS

static void load_drive(const char *name, IdCtrl *ret) {
        uint8_t buf[IDCTRL_SIZE];
        char path[512];
        ssize_t k;
        int fd;

        snprintf(path, sizeof(path), "%s/idctrl/%s.bin", TEST_DATA_DIR, name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "cannot open %s: %m\n", path);
                abort();
        }
        k = read(fd, buf, sizeof(buf));
        CHECK(k == (ssize_t) sizeof(buf));
        close(fd);
        CHECK(idctrl_parse_binary(buf, sizeof(buf), ret) == 0);
}

/* Synthetic drives and edits of real ones. */

static void set_model(IdCtrl *id, uint16_t vid, const char *model) {
        id->vid = vid;
        snprintf(id->model, sizeof(id->model), "%s", model);
}
static void mut_toshiba(IdCtrl *id) {
        set_model(id, 0x1179, "THNSF5256GPUK TOSHIBA");
}
static void mut_toshiba_wrong_vid(IdCtrl *id) {
        set_model(id, 0x8086, "THNSF5256GPUK TOSHIBA");
}
static void mut_kioxia(IdCtrl *id) {
        set_model(id, 0x1e0f, "KCD6XVUL6T40");
}
static void mut_x5(IdCtrl *id) {
        set_model(id, 0x144d, "Samsung Portable SSD X5");
}
static void mut_no_apsta(IdCtrl *id) {
        id->apst_supported = false;
}
static void mut_all_operational(IdCtrl *id) {
        for (unsigned i = 0; i <= id->npss; i++)
                id->psd[i].non_operational = false;
}
/* npss = 0 and its only state claims to be non-operational: nothing is above it. */
static void mut_npss0_nonop(IdCtrl *id) {
        *id = (IdCtrl) { .npss = 0, .apst_supported = true };
        id->psd[0] = (IdPsd) { .max_power_uw = 5000, .non_operational = true, .enlat_us = 10, .exlat_us = 10 };
}
/* 32 states: ps0 op 5 W; psN (N >= 1) non-op, enlat = exlat = 100·N µs, power (32 − N)·1000 µW. */
static void mut_31_states(IdCtrl *id) {
        *id = (IdCtrl) { .npss = 31, .apst_supported = true };
        id->psd[0] = (IdPsd) { .max_power_uw = 5000000 };
        for (unsigned i = 1; i < 32; i++)
                id->psd[i] = (IdPsd) {
                        .max_power_uw = (32 - i) * 1000,
                        .non_operational = true,
                        .enlat_us = 100 * i,
                        .exlat_us = 100 * i,
                };
}
/* Latencies at the top of their 32-bit field. */
static void mut_huge(IdCtrl *id) {
        *id = (IdCtrl) { .npss = 2, .apst_supported = true };
        id->psd[0] = (IdPsd) { .max_power_uw = 5000000 };
        id->psd[1] = (IdPsd) { .max_power_uw = 10000, .non_operational = true, .enlat_us = UINT32_MAX, .exlat_us = UINT32_MAX };
        id->psd[2] = (IdPsd) { .max_power_uw = 5000, .non_operational = true, .enlat_us = UINT32_MAX, .exlat_us = UINT32_MAX };
}
/* Entry latency 2^32−1, no exit latency: within a budget of 2^32−1; a tiny power step makes
 * the second break-even overflow the 24-bit field. */
static void mut_huge_entry(IdCtrl *id) {
        *id = (IdCtrl) { .npss = 2, .apst_supported = true };
        id->psd[0] = (IdPsd) { .max_power_uw = 5000000 };
        id->psd[1] = (IdPsd) { .max_power_uw = 110000, .non_operational = true, .enlat_us = UINT32_MAX };
        id->psd[2] = (IdPsd) { .max_power_uw = 100000, .non_operational = true, .enlat_us = UINT32_MAX };
}
/* Untrusted Identify data: the 970 EVO Plus with ps3 reporting latencies 0 ("not
 * reported") and ps4 reporting 2^32−1 for both. */
static void mut_evo_zero_and_max_latency(IdCtrl *id) {
        id->psd[3].enlat_us = id->psd[3].exlat_us = 0;
        id->psd[4].enlat_us = id->psd[4].exlat_us = UINT32_MAX;
}
/* Untrusted Identify data: apsta = 1, npss = 4, and every power state descriptor all zero. */
static void mut_all_zero_psds(IdCtrl *id) {
        for (unsigned i = 0; i < IDCTRL_MAX_PS; i++)
                id->psd[i] = (IdPsd) {};
}
/* The seed with PS0 idle power reported: IDLP 5000 at 0.0001 W = 0.5 W. */
static void mut_seed_p0(IdCtrl *id) {
        id->psd[0].idle_power_uw = 500000;
}
/* The seed with ps3 drawing more than ps4 is fine; here ps4 draws more than ps3. */
static void mut_seed_ps4_hungry(IdCtrl *id) {
        id->psd[4].max_power_uw = 80000;
}

/* SN550 with ps3 at 9000/11000 µs: total 20000, inside the secondary tolerance like ps4. */
static void mut_sn550_two_secondary(IdCtrl *id) {
        id->psd[3].enlat_us = 9000;
        id->psd[3].exlat_us = 11000;
}
/* The seed with ps4 drawing exactly what ps3 draws. */
static void mut_seed_ps4_same(IdCtrl *id) {
        id->psd[4].max_power_uw = 70000;
}
/* The seed with ps4 reporting an idle power (1 mW) below its max power (5 mW). */
static void mut_seed_ps4_idle(IdCtrl *id) {
        id->psd[4].idle_power_uw = 1000;
}
/* Rounding: ps1 free to enter and leave (0/0 µs), ps2 1 µs; powers 297002 and 296999 µW so that
 * the ps1 -> ps2 break-even is 1·(300000−296999)/(297002−296999) = 3001/3 = 1000.33 µs. */
static void mut_rounding(IdCtrl *id) {
        *id = (IdCtrl) { .npss = 2, .apst_supported = true };
        id->psd[0] = (IdPsd) { .max_power_uw = 5000000 };
        id->psd[1] = (IdPsd) { .max_power_uw = 297002, .non_operational = true };
        id->psd[2] = (IdPsd) { .max_power_uw = 296999, .non_operational = true, .enlat_us = 1 };
}

typedef struct Case {
        const char *name;
        const char *drive;              /* data file, may be NULL when @mutate builds it all */
        void (*mutate)(IdCtrl *id);
        ApstPlatform plat;
        ApstParams params;
        /* expected */
        ApstOutcome outcome;
        bool apste;
        uint64_t entry[APST_ENTRIES];
        unsigned quirks;
        bool overridden;
        uint32_t worst_us;
        const char *describe;
        const char *summary;
} Case;

static const Case table_cases[] = {
        /* ---------------- kernel policy, six of the sample drives, defaults ---------------- */

        /* Seed. Walk ps4..ps0. ps4: N, exlat 10000 <= 100000, total 12000 <= 15000 -> primary,
         * last=1, target ps4@100. ps3: gets ps4@100; total 10300 is primary again but last==1 ->
         * skipped. ps2..ps0 get ps4@100. Worst wake: ps4 2000+10000 = 12.0 ms. (doc/kernel-apst.md.) */
        { "/apst/kernel/seed", SEED, NULL, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 3] = ENT(4, 100) }, 0, false, 12000, "ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms",
          "ps4@100ms" },
        /* 970 EVO Plus. ps4 total 10000 -> primary ps4@100; ps3 total 1410 primary, taken -> skip. */
        { "/apst/kernel/970-evo-plus", EVO, NULL, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 3] = ENT(4, 100) }, 0, false, 10000, "ps0–ps3 → ps4 after 100 ms; worst wake 10.0 ms",
          "ps4@100ms" },
        /* Kingston A2000 (no PCI id given, so no quirk). ps4 total 30000 > 15000, <= 100000 ->
         * secondary, last=2, ps4@2000. ps3: gets ps4@2000; total 4000 primary (last 2 != 1) ->
         * ps3@100. ps0-2 get ps3@100. Worst: max(4000, 30000) = 30.0 ms. */
        { "/apst/kernel/kingston-a2000", KINGSTON, NULL, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 100), [3] = ENT(4, 2000) }, 0, false, 30000,
          "ps0–ps2 → ps3 after 100 ms, ps3 → ps4 after 2000 ms; worst wake 30.0 ms", "ps3@100ms→ps4@2000ms" },
        /* 980 PRO. ps4 total 500+9500 = 10000 primary -> ps4@100; ps3 3200 primary, taken. */
        { "/apst/kernel/980-pro", PRO, NULL, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 3] = ENT(4, 100) }, 0, false, 10000, "ps0–ps3 → ps4 after 100 ms; worst wake 10.0 ms",
          "ps4@100ms" },
        /* SN550. ps4 exlat 39000 <= 100000, total 44000 -> secondary ps4@2000; ps3 total 14900 <=
         * 15000 -> primary ps3@100. Worst 44.0 ms. */
        { "/apst/kernel/sn550", WDC, NULL, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 100), [3] = ENT(4, 2000) }, 0, false, 44000,
          "ps0–ps2 → ps3 after 100 ms, ps3 → ps4 after 2000 ms; worst wake 44.0 ms", "ps3@100ms→ps4@2000ms" },
        /* EBS: one operational state, nothing qualifies; APSTE=1 anyway, all-zero table. */
        { "/apst/kernel/ebs", EBS, NULL, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, {}, 0, false, 0,
          "no idle transitions", "none" },

        /* ---------- budget policy, six of the sample drives, defaults (B = 100000 µs, P0 = 300000 µW, 1%) ----------
         * Each chain state starts (from the last completion) at the latest of its break-even time,
         * the kernel's tier for its enlat + exlat (100 ms up to 15000 µs, else 2000 ms) and
         * (enlat + exlat) / 1%; a step's ITPT is that start minus when the previous entry is over
         * (its ITPT plus its target's enlat, rounded up to ms), and never below its break-even. */

        /* Seed. Chain: ps3 (10000+300 = 10300 µs, 70000 < P0), ps4 (12000 µs, 5000 < 70000).
         * ps3: max(be 11, tier 100, 10300 µs / 1% = 1030) = 1030 ms; its entry is over at 1040.
         * ps4: max(tier 100, 12000 / 1% = 1200) − 1040 = 160 ms, above its break-even
         * 12000·(300000−5000)/(70000−5000) µs = 55 ms. Entry 0 = 1030<<8 | 3<<3 = 0x40618. */
        { "/apst/budget/seed", SEED, NULL, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = 0x40618, [3] = ENT(4, 160) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 1030 ms, ps3 → ps4 after 160 ms; worst wake 12.0 ms", "ps3@1030ms→ps4@160ms" },
        /* 970 EVO Plus. ps3 1410 µs -> 141 ms (above the 100 ms tier), over at 142. ps4 10000 µs ->
         * 1000 − 142 = 858 ms (break-even 46). */
        { "/apst/budget/970-evo-plus", EVO, NULL, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 141), [3] = ENT(4, 858) }, 0, false, 10000,
          "ps0–ps2 → ps3 after 141 ms, ps3 → ps4 after 858 ms; worst wake 10.0 ms", "ps3@141ms→ps4@858ms" },
        /* Kingston. ps3 4000 µs -> 400 ms, over at 402. ps4 30000 µs -> 3000 (tier 2000) − 402
         * = 2598 ms (break-even 217). Worst 30.0 ms. */
        { "/apst/budget/kingston-a2000", KINGSTON, NULL, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 400), [3] = ENT(4, 2598) }, 0, false, 30000,
          "ps0–ps2 → ps3 after 400 ms, ps3 → ps4 after 2598 ms; worst wake 30.0 ms", "ps3@400ms→ps4@2598ms" },
        /* 980 PRO. ps3 3200 µs -> 320 ms, over at 322. ps4 10000 µs -> 1000 − 322 = 678 ms (be 85). */
        { "/apst/budget/980-pro", PRO, NULL, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 320), [3] = ENT(4, 678) }, 0, false, 10000,
          "ps0–ps2 → ps3 after 320 ms, ps3 → ps4 after 678 ms; worst wake 10.0 ms", "ps3@320ms→ps4@678ms" },
        /* SN550. ps3 14900 µs -> 1490 ms, over at 1494. ps4 44000 µs -> 4400 (tier 2000) − 1494
         * = 2906 ms (be 649). */
        { "/apst/budget/sn550", WDC, NULL, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 1490), [3] = ENT(4, 2906) }, 0, false, 44000,
          "ps0–ps2 → ps3 after 1490 ms, ps3 → ps4 after 2906 ms; worst wake 44.0 ms", "ps3@1490ms→ps4@2906ms" },
        /* EBS: no non-operational state. */
        { "/apst/budget/ebs", EBS, NULL, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true, {}, 0, false, 0,
          "no idle transitions", "none" },
        /* The stall budget is the knob: at 10% the seed's ps3 starts at max(tier 100, 103) = 103 ms, over
         * at 113; ps4 at max(100, 120) − 113 = 7 ms, below its break-even: 55 ms. */
        { "/apst/budget/seed/stall-10pct", SEED, NULL, {},
          { .policy = B, .max_latency_us = 100000, .primary_timeout_ms = 100, .secondary_timeout_ms = 2000,
            .primary_latency_tol_us = 15000, .secondary_latency_tol_us = 100000, .stall_budget_pct_x100 = 1000 },
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 103), [3] = ENT(4, 55) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 103 ms, ps3 → ps4 after 55 ms; worst wake 12.0 ms", "ps3@103ms→ps4@55ms" },
        /* A stall budget of 0: no wake-up may cost anything, so nothing is entered (APSTE=1, empty). */
        { "/apst/budget/seed/stall-0", SEED, NULL, {},
          { .policy = B, .max_latency_us = 100000, .primary_timeout_ms = 100, .secondary_timeout_ms = 2000,
            .primary_latency_tol_us = 15000, .secondary_latency_tol_us = 100000, .stall_budget_pct_x100 = 0 },
          APST_OUTCOME_PROGRAM, true, {}, 0, false, 0, "no idle transitions", "none" },

        /* ---------------- the budget's meaning: enlat + exlat vs the kernel's exlat ---------------- */

        /* Kernel, 11000: ps4 exlat 10000 <= 11000 still qualifies -> unchanged ps4@100 (doc/kernel-apst.md). */
        { "/apst/kernel/seed/latency-11000", SEED, NULL, {}, PARAMS(K, 11000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 3] = ENT(4, 100) }, 0, false, 12000, "ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms",
          "ps4@100ms" },
        /* Kernel, 9999: ps4 excluded (10000 > 9999); ps3 exlat 300, total 10300 primary -> ps3@100. */
        { "/apst/kernel/seed/latency-9999", SEED, NULL, {}, PARAMS(K, 9999), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 100) }, 0, false, 10300, "ps0–ps2 → ps3 after 100 ms; worst wake 10.3 ms",
          "ps3@100ms" },
        /* Budget, 11000: ps4's 12000 > 11000 excluded, ps3's 10300 fits -> ps3 after 1030 ms only. */
        { "/apst/budget/seed/latency-11000", SEED, NULL, {}, PARAMS(B, 11000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 1030) }, 0, false, 10300, "ps0–ps2 → ps3 after 1030 ms; worst wake 10.3 ms",
          "ps3@1030ms" },
        /* Budget, exactly 12000: ps4 fits (<=), same as the default. */
        { "/apst/budget/seed/latency-12000", SEED, NULL, {}, PARAMS(B, 12000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 1030), [3] = ENT(4, 160) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 1030 ms, ps3 → ps4 after 160 ms; worst wake 12.0 ms", "ps3@1030ms→ps4@160ms" },
        /* Budget below every state: 10000 < 10300 and < 12000 -> APSTE=1, nothing. */
        { "/apst/budget/seed/below-every-state", SEED, NULL, {}, PARAMS(B, 10000), APST_OUTCOME_PROGRAM, true, {},
          0, false, 0, "no idle transitions", "none" },
        /* Kernel below every exit latency: 250 < 300 (ps3) and < 10000 (ps4). */
        { "/apst/kernel/seed/below-every-state", SEED, NULL, {}, PARAMS(K, 250), APST_OUTCOME_PROGRAM, true, {}, 0,
          false, 0, "no idle transitions", "none" },

        /* ---------------- budget policy details (bare break-even: PARAMS_BE) ---------------- */

        /* P0 reported (0.5 W): ps3 -> ps4 = 12000·(500000−5000)/(65000) = 91384.6 -> 91385 µs -> 92 ms;
         * the first step stays e+x = 11 ms (from P0 the factor is 1). */
        { "/apst/budget/seed/p0-reported", SEED, mut_seed_p0, {}, PARAMS_BE(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 11), [3] = ENT(4, 92) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 11 ms, ps3 → ps4 after 92 ms; worst wake 12.0 ms", "ps3@11ms→ps4@92ms" },
        /* ps4 at 80 mW is not below ps3's 70 mW: dropped, ps3 is the end of the chain. */
        { "/apst/budget/seed/deeper-not-cheaper", SEED, mut_seed_ps4_hungry, {}, PARAMS_BE(B, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 11) }, 0, false, 10300,
          "ps0–ps2 → ps3 after 11 ms; worst wake 10.3 ms", "ps3@11ms" },

        /* ps4 as hungry as ps3 (70 mW): not strictly below, dropped. */
        { "/apst/budget/seed/deeper-same-power", SEED, mut_seed_ps4_same, {}, PARAMS_BE(B, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 11) }, 0, false, 10300,
          "ps0–ps2 → ps3 after 11 ms; worst wake 10.3 ms", "ps3@11ms" },
        /* ps4 reports idle power 1 mW: it counts instead of its max power. ps3 -> ps4:
         * 12000·(300000−1000)/(70000−1000) = 3588000000/69000 = 52000 µs exactly -> 52 ms. */
        { "/apst/budget/seed/idle-power-reported", SEED, mut_seed_ps4_idle, {}, PARAMS_BE(B, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 11), [3] = ENT(4, 52) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 11 ms, ps3 → ps4 after 52 ms; worst wake 12.0 ms", "ps3@11ms→ps4@52ms" },
        /* ps0 -> ps1: break-even 0 µs, but ITPT 0 would mean "never": at least 1 ms.
         * ps1 -> ps2: 1000.33 µs rounds up to 1001 µs, then to 2 ms (not 1000 µs = 1 ms). Worst wake
         * ps2's 1 µs, shown as 0.0 ms. */
        { "/apst/budget/rounding", NULL, mut_rounding, {}, PARAMS_BE(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0] = ENT(1, 1), [1] = ENT(2, 2) }, 0, false, 1,
          "ps0 → ps1 after 1 ms, ps1 → ps2 after 2 ms; worst wake 0.0 ms", "ps1@1ms→ps2@2ms" },
        /* force with nothing to override: not reported as overridden. */
        { "/apst/budget/force-without-quirks", SEED, NULL, {}, PARAMS_FORCED(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 2] = ENT(3, 1030), [3] = ENT(4, 160) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 1030 ms, ps3 → ps4 after 160 ms; worst wake 12.0 ms", "ps3@1030ms→ps4@160ms" },

        /* ---------------- quirks ---------------- */

        /* Intel 600p PCI id 8086:f1a5 -> NO_DEEPEST_PS: ps4 never a target. Kernel: ps3 primary @100. */
        { "/apst/kernel/quirk/seed-8086-f1a5", SEED, NULL, { .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, NO_DEEPEST, false, 10300,
          "ps0–ps2 → ps3 after 100 ms; worst wake 10.3 ms", "ps3@100ms" },
        /* Budget: chain is ps3 alone, 1030 ms. */
        { "/apst/budget/quirk/seed-8086-f1a5", SEED, NULL, { .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
          PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 1030) }, NO_DEEPEST, false, 10300,
          "ps0–ps2 → ps3 after 1030 ms; worst wake 10.3 ms", "ps3@1030ms" },
        /* force: the quirk is reported but ignored, the table is the unquirked one. */
        { "/apst/kernel/quirk/seed-8086-f1a5-forced", SEED, NULL, { .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
          PARAMS_FORCED(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 3] = ENT(4, 100) }, NO_DEEPEST,
          true, 12000, "ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms", "ps4@100ms" },
        { "/apst/budget/quirk/seed-8086-f1a5-forced", SEED, NULL, { .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
          PARAMS_FORCED(B, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = 0x40618, [3] = ENT(4, 160) },
          NO_DEEPEST, true, 12000, "ps0–ps2 → ps3 after 1030 ms, ps3 → ps4 after 160 ms; worst wake 12.0 ms",
          "ps3@1030ms→ps4@160ms" },
        /* Kingston A2000 2646:2263: kernel ps3 primary @100 only; budget ps3 after 400 ms. */
        { "/apst/kernel/quirk/kingston-2646-2263", KINGSTON, NULL, { .pci_vendor = 0x2646, .pci_device = 0x2263 },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, NO_DEEPEST, false, 4000,
          "ps0–ps2 → ps3 after 100 ms; worst wake 4.0 ms", "ps3@100ms" },
        { "/apst/budget/quirk/kingston-2646-2263", KINGSTON, NULL, { .pci_vendor = 0x2646, .pci_device = 0x2263 },
          PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 400) }, NO_DEEPEST, false, 4000,
          "ps0–ps2 → ps3 after 400 ms; worst wake 4.0 ms", "ps3@400ms" },
        /* SN550 15b7:5009: kernel ps3 (14900 <= 15000) primary @100; budget 1490 ms. */
        { "/apst/kernel/quirk/sn550-15b7-5009", WDC, NULL, { .pci_vendor = 0x15b7, .pci_device = 0x5009 },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, NO_DEEPEST, false, 14900,
          "ps0–ps2 → ps3 after 100 ms; worst wake 14.9 ms", "ps3@100ms" },
        { "/apst/budget/quirk/sn550-15b7-5009", WDC, NULL, { .pci_vendor = 0x15b7, .pci_device = 0x5009 },
          PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 1490) }, NO_DEEPEST, false, 14900,
          "ps0–ps2 → ps3 after 1490 ms; worst wake 14.9 ms", "ps3@1490ms" },
        /* A different device of the same vendor is not quirked. */
        { "/apst/kernel/quirk/sn530-not-listed", WDC, NULL, { .pci_vendor = 0x15b7, .pci_device = 0x5008 },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100), [3] = ENT(4, 2000) }, 0, false,
          44000, "ps0–ps2 → ps3 after 100 ms, ps3 → ps4 after 2000 ms; worst wake 44.0 ms",
          "ps3@100ms→ps4@2000ms" },
        /* Samsung X5 by model + vid 0x144d on 970 EVO data: NO_DEEPEST_PS; ps3 total 1410 -> @100. */
        { "/apst/kernel/quirk/samsung-x5-model", EVO, mut_x5, { .pci_vendor = 0x144d, .pci_device = 0xa808 },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, NO_DEEPEST, false, 1410,
          "ps0–ps2 → ps3 after 100 ms; worst wake 1.4 ms", "ps3@100ms" },
        /* Dell XPS 15 9550 with a 144d:a802 Samsung: NO_DEEPEST_PS (sys_vendor + product_name). */
        { "/apst/kernel/quirk/dell-xps-9550-a802", EVO, NULL,
          { .pci_vendor = 0x144d, .pci_device = 0xa802, .sys_vendor = "Dell Inc.", .product_name = "XPS 15 9550" },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, NO_DEEPEST, false, 1410,
          "ps0–ps2 → ps3 after 100 ms; worst wake 1.4 ms", "ps3@100ms" },
        /* Toshiba model (+ vid 0x1179): NO_APST -> APSTE=0, all zero, for both policies. */
        { "/apst/kernel/quirk/toshiba-model", SEED, mut_toshiba, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, false,
          {}, NO_APST, false, 0, "APST disabled (APSTE=0)", "off" },
        { "/apst/budget/quirk/toshiba-model", SEED, mut_toshiba, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, false,
          {}, NO_APST, false, 0, "APST disabled (APSTE=0)", "off" },
        /* The kernel matches the vid too: same model from another vendor id is not quirked. */
        { "/apst/kernel/quirk/toshiba-model-wrong-vid", SEED, mut_toshiba_wrong_vid, {}, PARAMS(K, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 3] = ENT(4, 100) }, 0, false, 12000,
          "ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms", "ps4@100ms" },
        /* force on NO_APST: like force_apst, the table is built as if unquirked. */
        { "/apst/kernel/quirk/toshiba-model-forced", SEED, mut_toshiba, {}, PARAMS_FORCED(K, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 3] = ENT(4, 100) }, NO_APST, true, 12000,
          "ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms", "ps4@100ms" },
        { "/apst/kernel/quirk/kioxia-model", SEED, mut_kioxia, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, false,
          {}, NO_APST, false, 0, "APST disabled (APSTE=0)", "off" },
        /* 960 EVO 144d:a804 on ASUS PRIME Z370-A: NO_APST (board vendor + name; sysfs newline tolerated). */
        { "/apst/kernel/quirk/asus-prime-z370-a", EVO, NULL,
          { .pci_vendor = 0x144d, .pci_device = 0xa804, .board_vendor = "ASUSTeK COMPUTER INC.",
            .board_name = "PRIME Z370-A\n" },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, false, {}, NO_APST, false, 0, "APST disabled (APSTE=0)", "off" },
        { "/apst/budget/quirk/asus-prime-b350m-a", EVO, NULL,
          { .pci_vendor = 0x144d, .pci_device = 0xa804, .board_vendor = "ASUSTeK COMPUTER INC.",
            .board_name = "PRIME B350M-A" },
          PARAMS(B, 100000), APST_OUTCOME_PROGRAM, false, {}, NO_APST, false, 0, "APST disabled (APSTE=0)", "off" },
        /* dmi_match() is exact: "PRIME Z370-A II" is another board. */
        { "/apst/kernel/quirk/asus-prime-z370-a-ii", EVO, NULL,
          { .pci_vendor = 0x144d, .pci_device = 0xa804, .board_vendor = "ASUSTeK COMPUTER INC.",
            .board_name = "PRIME Z370-A II" },
          PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 3] = ENT(4, 100) }, 0, false, 10000,
          "ps0–ps3 → ps4 after 100 ms; worst wake 10.0 ms", "ps4@100ms" },
        /* Lenovo N60z board LXKT-ZXEG-N6, any drive; here the seed on its quirked PCI id: both bits. */
        { "/apst/kernel/quirk/lenovo-lxkt-board", SEED, NULL,
          { .pci_vendor = 0x8086, .pci_device = 0xf1a5, .board_name = "LXKT-ZXEG-N6" }, PARAMS(K, 100000),
          APST_OUTCOME_PROGRAM, false, {}, NO_APST | NO_DEEPEST, false, 0, "APST disabled (APSTE=0)", "off" },
        /* force overrides both, as nvme_core.force_apst does (nvme_init_identify()). */
        { "/apst/kernel/quirk/lenovo-lxkt-board-forced", SEED, NULL,
          { .pci_vendor = 0x8086, .pci_device = 0xf1a5, .board_name = "LXKT-ZXEG-N6" },
          PARAMS_FORCED(K, 100000), APST_OUTCOME_PROGRAM, true, { [0 ... 3] = ENT(4, 100) },
          NO_APST | NO_DEEPEST, true, 12000, "ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms", "ps4@100ms" },

        /* ---------------- disabled and unsupported ---------------- */

        { "/apst/kernel/max-latency-0", SEED, NULL, {}, PARAMS(K, 0), APST_OUTCOME_PROGRAM, false, {}, 0, false, 0,
          "APST disabled (APSTE=0)", "off" },
        { "/apst/budget/max-latency-0", SEED, NULL, {}, PARAMS(B, 0), APST_OUTCOME_PROGRAM, false, {}, 0, false, 0,
          "APST disabled (APSTE=0)", "off" },
        /* apsta = 0: no command at all, force or not. */
        { "/apst/kernel/apsta-0", SEED, mut_no_apsta, {}, PARAMS(K, 100000), APST_OUTCOME_UNSUPPORTED, false, {}, 0,
          false, 0, "APST disabled (APSTE=0)", "off" },
        { "/apst/budget/apsta-0-forced", SEED, mut_no_apsta, { .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
          PARAMS_FORCED(B, 100000), APST_OUTCOME_UNSUPPORTED, false, {}, NO_DEEPEST, true, 0,
          "APST disabled (APSTE=0)", "off" },

        /* ---------------- legacy 50x rule ---------------- */

        /* primary_timeout_ms = 0: ps4 ceil(12000/20) = 600 ms; ps3 gets ps4@600, then ceil(10300/20) = 515
         * -> ps3@515 for ps0-2 (50 x 10.3 ms = 515 ms). */
        { "/apst/kernel/legacy/primary-timeout-0", SEED, NULL, {}, PARAMS_FULL(K, 100000, 0, 2000, 15000, 100000, false),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 515), [3] = ENT(4, 600) }, 0, false, 12000,
          "ps0–ps2 → ps3 after 515 ms, ps3 → ps4 after 600 ms; worst wake 12.0 ms", "ps3@515ms→ps4@600ms" },
        /* primary_latency_tol_us = 0 selects the legacy rule too. 980 PRO: ps4 10000/20 = 500 ms,
         * ps3 3200/20 = 160 ms. */
        { "/apst/kernel/legacy/primary-tol-0", PRO, NULL, {}, PARAMS_FULL(K, 100000, 100, 2000, 0, 100000, false),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 160), [3] = ENT(4, 500) }, 0, false, 10000,
          "ps0–ps2 → ps3 after 160 ms, ps3 → ps4 after 500 ms; worst wake 10.0 ms", "ps3@160ms→ps4@500ms" },
        /* 970 EVO ps3: 1410/20 = 70.5 -> 71 (rounds up). */
        { "/apst/kernel/legacy/round-up", EVO, NULL, {}, PARAMS_FULL(K, 100000, 0, 2000, 15000, 100000, false),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 71), [3] = ENT(4, 500) }, 0, false, 10000,
          "ps0–ps2 → ps3 after 71 ms, ps3 → ps4 after 500 ms; worst wake 10.0 ms", "ps3@71ms→ps4@500ms" },
        /* 24-bit clamp: exlat 2^32−1 <= max latency 2^32−1; total 8589934590 µs / 20 = 429496730 ms
         * > 2^24−1 -> 16777215 = 0xffffff for both states. Worst: 8589934590 saturates to 2^32−1 µs. */
        { "/apst/kernel/legacy/clamp-24-bit", NULL, mut_huge, {},
          PARAMS_FULL(K, UINT32_MAX, 0, 2000, 15000, 100000, false), APST_OUTCOME_PROGRAM, true,
          { [0] = 0xffffff08, [1] = ENT(2, 0xffffff) }, 0, false, UINT32_MAX,
          "ps0 → ps1 after 16777215 ms, ps1 → ps2 after 16777215 ms; worst wake 4294967.3 ms",
          "ps1@16777215ms→ps2@16777215ms" },
        /* Modern path with a timeout beyond 24 bits: the kernel would spill into bit 32; we clamp. */
        { "/apst/kernel/modern-timeout-clamped", SEED, NULL, {}, PARAMS_FULL(K, 100000, 0x1000000, 2000, 15000, 100000, false),
          APST_OUTCOME_PROGRAM, true, { [0 ... 3] = 0xffffff20 }, 0, false, 12000,
          "ps0–ps3 → ps4 after 16777215 ms; worst wake 12.0 ms", "ps4@16777215ms" },
        /* Two states in the secondary tier: ps4 (44000) takes it, ps3 (20000) is secondary too but
         * last_index is already 2 -> skipped; everything goes to ps4 after 2000 ms. */
        { "/apst/kernel/two-secondary", WDC, mut_sn550_two_secondary, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM,
          true, { [0 ... 3] = ENT(4, 2000) }, 0, false, 44000, "ps0–ps3 → ps4 after 2000 ms; worst wake 44.0 ms",
          "ps4@2000ms" },
        /* secondary_timeout_ms = 0 turns the secondary tier off: Kingston ps4 (30000 > 15000) skipped. */
        { "/apst/kernel/secondary-off", KINGSTON, NULL, {}, PARAMS_FULL(K, 100000, 100, 0, 15000, 100000, false),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, 0, false, 4000,
          "ps0–ps2 → ps3 after 100 ms; worst wake 4.0 ms", "ps3@100ms" },

        /* ---------------- shapes ---------------- */

        { "/apst/kernel/all-operational", SEED, mut_all_operational, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM,
          true, {}, 0, false, 0, "no idle transitions", "none" },
        { "/apst/budget/all-operational", SEED, mut_all_operational, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM,
          true, {}, 0, false, 0, "no idle transitions", "none" },
        { "/apst/kernel/npss-0-nonop", NULL, mut_npss0_nonop, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, {},
          0, false, 0, "no idle transitions", "none" },
        { "/apst/budget/npss-0-nonop", NULL, mut_npss0_nonop, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM, true, {},
          0, false, 0, "no idle transitions", "none" },
        /* 31 states, kernel: ps31 total 6200 <= 15000 -> primary @100; every shallower one is primary
         * too and skipped. ps0-ps30 -> ps31. */
        { "/apst/kernel/31-states", NULL, mut_31_states, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true,
          { [0 ... 30] = ENT(31, 100) }, 0, false, 6200, "ps0–ps30 → ps31 after 100 ms; worst wake 6.2 ms",
          "ps31@100ms" },
        /* 31 states, budget: every state joins the chain (power falls by 1000 µW a step, all within B).
         * ps0 -> ps1 after ceil(200 µs) = 1 ms. psN-1 -> psN: 200N·(300000 − (32−N)·1000)/1000
         * = 200N·(268+N) µs: N=2: 400·270 = 108000 µs = 108 ms; N=3: 600·271 = 162600 -> 163 ms;
         * N=31: 6200·299 = 1853800 -> 1854 ms. With NO_DEEPEST_PS the chain ends at ps30. */
        { "/apst/budget/31-states", NULL, mut_31_states, {}, PARAMS_BE(B, 100000), APST_OUTCOME_PROGRAM, true,
          { [0] = ENT(1, 1), [1] = ENT(2, 108), [2] = ENT(3, 163), [3] = ENT(4, 4 * 200 * 272 / 1000 + 1),
            [4] = ENT(5, 1000 * 273 / 1000), [5] = ENT(6, 1200 * 274 / 1000 + 1), [6] = ENT(7, 1400 * 275 / 1000),
            [7] = ENT(8, 1600 * 276 / 1000 + 1), [8] = ENT(9, 1800 * 277 / 1000 + 1),
            [9] = ENT(10, 2000 * 278 / 1000), [10] = ENT(11, 2200 * 279 / 1000 + 1),
            [11] = ENT(12, 2400 * 280 / 1000), [12] = ENT(13, 2600 * 281 / 1000 + 1),
            [13] = ENT(14, 2800 * 282 / 1000 + 1), [14] = ENT(15, 3000 * 283 / 1000),
            [15] = ENT(16, 3200 * 284 / 1000 + 1), [16] = ENT(17, 3400 * 285 / 1000),
            [17] = ENT(18, 3600 * 286 / 1000 + 1), [18] = ENT(19, 3800 * 287 / 1000 + 1),
            [19] = ENT(20, 4000 * 288 / 1000), [20] = ENT(21, 4200 * 289 / 1000 + 1),
            [21] = ENT(22, 4400 * 290 / 1000), [22] = ENT(23, 4600 * 291 / 1000 + 1),
            [23] = ENT(24, 4800 * 292 / 1000 + 1), [24] = ENT(25, 5000 * 293 / 1000),
            [25] = ENT(26, 5200 * 294 / 1000 + 1), [26] = ENT(27, 5400 * 295 / 1000),
            [27] = ENT(28, 5600 * 296 / 1000 + 1), [28] = ENT(29, 5800 * 297 / 1000 + 1),
            [29] = ENT(30, 6000 * 298 / 1000), [30] = ENT(31, 1854) },
          0, false, 6200, NULL, NULL },

        /* ---------------- untrusted Identify data ---------------- */

        /* ps4 (exit 2^32−1) is beyond any budget; ps3 claims 0/0 µs. Kernel: ps3 total 0 <= 15000 ->
         * primary at 100 ms, as Linux would program it. Budget: break-even 0 -> the 1 ms minimum. Both
         * worst wakes are 0 because the drive says so; nothing overflows or wraps. */
        { "/apst/kernel/untrusted/zero-and-max-latency", EVO, mut_evo_zero_and_max_latency, {}, PARAMS(K, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 100) }, 0, false, 0, NULL, "ps3@100ms" },
        { "/apst/budget/untrusted/zero-and-max-latency", EVO, mut_evo_zero_and_max_latency, {}, PARAMS_BE(B, 100000),
          APST_OUTCOME_PROGRAM, true, { [0 ... 2] = ENT(3, 1) }, 0, false, 0, NULL, "ps3@1ms" },
        /* All-zero descriptors: every state is operational, so nothing is a target (APSTE=1, empty). */
        { "/apst/kernel/untrusted/all-zero-psds", EVO, mut_all_zero_psds, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM,
          true, {}, 0, false, 0, "no idle transitions", "none" },
        { "/apst/budget/untrusted/all-zero-psds", EVO, mut_all_zero_psds, {}, PARAMS(B, 100000), APST_OUTCOME_PROGRAM,
          true, {}, 0, false, 0, "no idle transitions", "none" },

        /* ---------------- huge latencies ---------------- */

        /* Default kernel: exlat 2^32−1 > 100000 -> nothing. */
        { "/apst/kernel/huge/default", NULL, mut_huge, {}, PARAMS(K, 100000), APST_OUTCOME_PROGRAM, true, {}, 0,
          false, 0, "no idle transitions", "none" },
        /* Kernel, max latency 2^32−1, modern rule: exlat fits, but total 8.6e9 µs exceeds both tolerances. */
        { "/apst/kernel/huge/max-latency", NULL, mut_huge, {}, PARAMS(K, UINT32_MAX), APST_OUTCOME_PROGRAM, true, {},
          0, false, 0, "no idle transitions", "none" },
        /* Budget 2^32−1: enlat + exlat = 8589934590 > budget, computed in 64 bits, not wrapped to 2^32−2. */
        { "/apst/budget/huge/max-latency", NULL, mut_huge, {}, PARAMS(B, UINT32_MAX), APST_OUTCOME_PROGRAM, true, {},
          0, false, 0, "no idle transitions", "none" },
        /* Budget 2^32−1, enlat 2^32−1, exlat 0: both fit. Bare break-even: ps0 -> ps1 after
         * ceil(4294967295 µs) = 4294968 ms; that entry is over at 8589936 ms. ps1 -> ps2 would need
         * its break-even 4294967295·(300000−100000)/(110000−100000) µs, clamped to 16777215 ms, on top:
         * past the 24-bit ITPT from the last completion, so the chain ends at ps1. At the default 1%
         * stall budget ps1 itself (tau / 1% = 429496730 ms) is out of reach: nothing. */
        { "/apst/budget/huge/clamp-24-bit", NULL, mut_huge_entry, {}, PARAMS_BE(B, UINT32_MAX), APST_OUTCOME_PROGRAM,
          true, { [0] = ENT(1, 4294968) }, 0, false, UINT32_MAX,
          "ps0 → ps1 after 4294968 ms; worst wake 4294967.3 ms", "ps1@4294968ms" },
        { "/apst/budget/huge/stall-out-of-reach", NULL, mut_huge_entry, {}, PARAMS(B, UINT32_MAX),
          APST_OUTCOME_PROGRAM, true, {}, 0, false, 0, "no idle transitions", "none" },
};

static void check_case(const Case *c) {
        uint8_t wire[256];
        ApstTable back;
        char text[512];
        ApstPlan plan;
        IdCtrl id = {};
        int r;

        if (c->drive)
                load_drive(c->drive, &id);
        if (c->mutate)
                c->mutate(&id);

        memset(&plan, 0xa5, sizeof(plan));
        r = apst_build(&id, &c->plat, &c->params, &plan);
        if (r != 0) {
                fprintf(stderr, "%s: apst_build() = %d\n", c->name, r);
                abort();
        }
        if (plan.outcome != c->outcome || plan.table.apste != c->apste || plan.quirks != c->quirks ||
            plan.quirks_overridden != c->overridden) {
                fprintf(stderr, "%s: outcome %d apste %d quirks %u overridden %d\n", c->name, plan.outcome,
                        plan.table.apste, plan.quirks, plan.quirks_overridden);
                abort();
        }
        for (unsigned i = 0; i < APST_ENTRIES; i++)
                if (plan.table.entry[i] != c->entry[i]) {
                        fprintf(stderr, "%s: entry[%u] = 0x%016llx, want 0x%016llx\n", c->name, i,
                                (unsigned long long) plan.table.entry[i], (unsigned long long) c->entry[i]);
                        abort();
                }
        if (plan.worst_wake_us != c->worst_us || apst_worst_wake_us(&plan.table, &id) != c->worst_us) {
                fprintf(stderr, "%s: worst wake %u, want %u\n", c->name, plan.worst_wake_us, c->worst_us);
                abort();
        }
        CHECK(apst_table_check(&plan.table, &id) == 0);
        /* no entry reaches into the reserved bits, whatever the inputs */
        for (unsigned i = 0; i < APST_ENTRIES; i++)
                CHECK((plan.table.entry[i] & 0xffffffff00000007ull) == 0);

        if (c->describe) {
                apst_describe(&plan.table, &id, text, sizeof(text));
                if (strcmp(text, c->describe) != 0) {
                        fprintf(stderr, "%s: describe \"%s\"\n   want \"%s\"\n", c->name, text, c->describe);
                        abort();
                }
        }
        if (c->summary) {
                apst_summary(&plan.table, text, sizeof(text));
                if (strcmp(text, c->summary) != 0) {
                        fprintf(stderr, "%s: summary \"%s\", want \"%s\"\n", c->name, text, c->summary);
                        abort();
                }
        }

        apst_table_to_wire(&plan.table, wire);
        apst_table_from_wire(wire, plan.table.apste, &back);
        CHECK(apst_table_equal(&back, &plan.table));
}

/* /apst/build/errors: what apst_build() refuses, leaving *ret alone. */
static void test_build_errors(void) {
        ApstParams p = APST_PARAMS_DEFAULT;
        ApstPlan plan, sentinel;
        IdCtrl id;

        load_drive(SEED, &id);
        memset(&sentinel, 0x5a, sizeof(sentinel));

        id.npss = 32;
        plan = sentinel;
        CHECK(apst_build(&id, NULL, &p, &plan) == -ERANGE);
        CHECK(memcmp(&plan, &sentinel, sizeof(plan)) == 0);
        id.npss = 4;

        p.policy = _APST_POLICY_MAX;
        CHECK(apst_build(&id, NULL, &p, &plan) == -EINVAL);
        CHECK(memcmp(&plan, &sentinel, sizeof(plan)) == 0);
        p.policy = _APST_POLICY_INVALID;
        CHECK(apst_build(&id, NULL, &p, &plan) == -EINVAL);
        CHECK(apst_build(NULL, NULL, &p, &plan) == -EINVAL);

        /* NULL platform = unknown: no PCI or DMI quirks, the default (adaptive) policy starts from the stall-bounded table */
        p = APST_PARAMS_DEFAULT;
        CHECK(apst_build(&id, NULL, &p, &plan) == 0);
        CHECK(plan.quirks == 0 && plan.table.apste && plan.table.entry[0] == ENT(3, 1030));
}

/* /apst/params/defaults: the header's defaults are nvme_core's, and the adaptive policy is the default. */
static void test_defaults(void) {
        ApstParams p = APST_PARAMS_DEFAULT;

        CHECK(p.policy == APST_POLICY_ADAPTIVE);
        CHECK(p.max_latency_us == 100000 && p.primary_timeout_ms == 100 && p.secondary_timeout_ms == 2000);
        CHECK(p.primary_latency_tol_us == 15000 && p.secondary_latency_tol_us == 100000 && !p.force);
        CHECK(APST_P0_DEFAULT_UW == 300000);
}

static void test_policy_strings(void) {
        CHECK(strcmp(apst_policy_to_string(APST_POLICY_BUDGET), "budget") == 0);
        CHECK(strcmp(apst_policy_to_string(APST_POLICY_KERNEL), "kernel") == 0);
        CHECK(apst_policy_to_string(_APST_POLICY_MAX) == NULL);
        CHECK(apst_policy_to_string(_APST_POLICY_INVALID) == NULL);
        CHECK(apst_policy_from_string("budget") == APST_POLICY_BUDGET);
        CHECK(apst_policy_from_string("kernel") == APST_POLICY_KERNEL);
        CHECK(apst_policy_from_string("Kernel") == _APST_POLICY_INVALID);
        CHECK(apst_policy_from_string("") == _APST_POLICY_INVALID);
        CHECK(apst_policy_from_string(NULL) == _APST_POLICY_INVALID);
}

/* /apst/quirks: the lookup on its own, including what must not match. */
static void test_quirks(void) {
        static const struct {
                const char *name;
                uint16_t vid;
                const char *model;
                ApstPlatform plat;
                unsigned want;
        } cases[] = {
                { "/apst/quirks/none", 0x8086, "INTEL SSDPEKKW256G7", {}, 0 },
                { "/apst/quirks/126f-1001", 0, "", { .pci_vendor = 0x126f, .pci_device = 0x1001 }, NO_DEEPEST },
                { "/apst/quirks/126f-2262", 0, "", { .pci_vendor = 0x126f, .pci_device = 0x2262 }, NO_DEEPEST },
                { "/apst/quirks/1cc1-8201", 0, "", { .pci_vendor = 0x1cc1, .pci_device = 0x8201 }, NO_DEEPEST },
                { "/apst/quirks/2646-2262", 0, "", { .pci_vendor = 0x2646, .pci_device = 0x2262 }, NO_DEEPEST },
                { "/apst/quirks/1e49-0021", 0, "", { .pci_vendor = 0x1e49, .pci_device = 0x0021 }, NO_DEEPEST },
                { "/apst/quirks/1e49-0041", 0, "", { .pci_vendor = 0x1e49, .pci_device = 0x0041 }, NO_DEEPEST },
                { "/apst/quirks/025e-f1ac", 0, "", { .pci_vendor = 0x025e, .pci_device = 0xf1ac }, NO_DEEPEST },
                { "/apst/quirks/8086-f1a6-not", 0, "", { .pci_vendor = 0x8086, .pci_device = 0xf1a6 }, 0 },
                { "/apst/quirks/precision-5510", 0, "",
                  { .pci_vendor = 0x144d, .pci_device = 0xa802, .sys_vendor = "Dell Inc.",
                    .product_name = "Precision 5510" },
                  NO_DEEPEST },
                { "/apst/quirks/xps-other-vendor", 0, "",
                  { .pci_vendor = 0x144d, .pci_device = 0xa802, .sys_vendor = "Dell", .product_name = "XPS 15 9550" },
                  0 },
                { "/apst/quirks/xps-other-drive", 0, "",
                  { .pci_vendor = 0x144d, .pci_device = 0xa804, .sys_vendor = "Dell Inc.",
                    .product_name = "XPS 15 9550" },
                  0 },
                { "/apst/quirks/asus-other-vendor", 0, "",
                  { .pci_vendor = 0x144d, .pci_device = 0xa804, .board_vendor = "ASUS",
                    .board_name = "PRIME Z370-A" },
                  0 },
                { "/apst/quirks/asus-board-without-vendor", 0, "",
                  { .pci_vendor = 0x144d, .pci_device = 0xa804, .board_name = "PRIME Z370-A" }, 0 },
                { "/apst/quirks/lxkt-unknown-pci", 0, "", { .board_name = "LXKT-ZXEG-N6" }, NO_APST },
                { "/apst/quirks/lxkt-prefix-only", 0, "", { .board_name = "LXKT-ZXEG-N60" }, 0 },
                { "/apst/quirks/model-prefix-only", 0x1179, "THNSF5256GPUK TOSHIBA 2", {}, 0 },
                { "/apst/quirks/x5-wrong-vid", 0x1234, "Samsung Portable SSD X5", {}, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                IdCtrl id = { .vid = cases[i].vid };
                unsigned q;

                snprintf(id.model, sizeof(id.model), "%s", cases[i].model);
                q = apst_quirks(&id, &cases[i].plat);
                if (q != cases[i].want) {
                        fprintf(stderr, "%s: quirks %u, want %u\n", cases[i].name, q, cases[i].want);
                        abort();
                }
        }
        CHECK(apst_quirks(NULL, NULL) == 0);
}

/* /apst/table-check: tables we must refuse to write. */
static void test_table_check(void) {
        static const struct {
                const char *name;
                unsigned index;
                uint64_t entry;
                int want;
        } cases[] = {
                { "/apst/table-check/ok", 0, ENT(3, 100), 0 },
                { "/apst/table-check/ok-itpt-0", 0, ENT(3, 0), 0 },
                { "/apst/table-check/reserved-low", 0, ENT(3, 100) | 0x1, -EINVAL },
                { "/apst/table-check/reserved-high", 0, ENT(3, 100) | (1ull << 32), -EINVAL },
                { "/apst/table-check/reserved-top", 0, ENT(3, 100) | (1ull << 63), -EINVAL },
                { "/apst/table-check/target-operational", 0, ENT(2, 100), -EINVAL },
                { "/apst/table-check/target-beyond-npss", 0, ENT(5, 100), -EINVAL },
                { "/apst/table-check/entry-beyond-npss", 5, ENT(4, 100), -EINVAL },
                { "/apst/table-check/entry-31", 31, ENT(4, 100), -EINVAL },
        };
        IdCtrl id;

        load_drive(SEED, &id);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ApstTable t = { .apste = true };
                int r;

                t.entry[cases[i].index] = cases[i].entry;
                r = apst_table_check(&t, &id);
                if (r != cases[i].want) {
                        fprintf(stderr, "%s: %d, want %d\n", cases[i].name, r, cases[i].want);
                        abort();
                }
        }
        {
                ApstTable t = {};

                id.npss = 32;
                CHECK(apst_table_check(&t, &id) == -EINVAL);
        }
}

/* /apst/worst-wake: only targets the controller can reach count. */
static void test_worst_wake(void) {
        IdCtrl id;
        ApstTable t = { .apste = true };

        load_drive(SEED, &id);
        /* ITPT 0 = never: ps4 not reachable */
        t.entry[0] = ENT(4, 0);
        CHECK(apst_worst_wake_us(&t, &id) == 0);
        /* ps0 -> ps3 -> ps4: both reachable, ps4's 12000 is the worst */
        t.entry[0] = ENT(3, 100);
        t.entry[3] = ENT(4, 200);
        CHECK(apst_worst_wake_us(&t, &id) == 12000);
        /* only ps4 -> ps3 is set, and nothing ever goes to ps4: ps3 unreachable too */
        memset(t.entry, 0, sizeof(t.entry));
        t.entry[4] = ENT(3, 100);
        CHECK(apst_worst_wake_us(&t, &id) == 0);
        /* APSTE=0: nothing happens */
        t.entry[0] = ENT(3, 100);
        t.apste = false;
        CHECK(apst_worst_wake_us(&t, &id) == 0);
}

/* /apst/describe: grouping, loops, truncation. */
static void test_describe(void) {
        IdCtrl id;
        ApstTable t = { .apste = true };
        char buf[256];

        load_drive(SEED, &id);
        /* non-adjacent equal entries are separate groups */
        t.entry[0] = ENT(3, 100);
        t.entry[1] = ENT(4, 100);
        t.entry[2] = ENT(3, 100);
        apst_describe(&t, &id, buf, sizeof(buf));
        CHECK(strcmp(buf, "ps0 → ps3 after 100 ms, ps1 → ps4 after 100 ms, ps2 → ps3 after 100 ms; "
                           "worst wake 12.0 ms") == 0);
        /* a loop ps3 <-> ps4 ends the summary instead of spinning */
        memset(t.entry, 0, sizeof(t.entry));
        t.entry[0] = ENT(3, 5);
        t.entry[3] = ENT(4, 6);
        t.entry[4] = ENT(3, 7);
        apst_summary(&t, buf, sizeof(buf));
        CHECK(strcmp(buf, "ps3@5ms→ps4@6ms→ps3@7ms") == 0);
        /* small buffers: truncated, always terminated, nothing written past n */
        memset(buf, 'x', sizeof(buf));
        apst_describe(&t, &id, buf, 8);
        CHECK(strlen(buf) == 7 && buf[8] == 'x');
        memset(buf, 'x', sizeof(buf));
        apst_summary(&t, buf, 1);
        CHECK(buf[0] == '\0' && buf[1] == 'x');
        apst_describe(&t, &id, buf, 0);
        CHECK(buf[0] == '\0' && buf[1] == 'x');
}

/* /apst/wire: little endian on the wire, both ways, and the hex form for logs. */
static void test_wire(void) {
        ApstTable t = { .apste = true }, back;
        uint8_t wire[256];
        char hex[32 * 19];

        t.entry[0] = 0xb18;                       /* ps3 after 11 ms */
        t.entry[3] = 0x0102030405060708ull;       /* not a valid entry, but every byte distinct */
        t.entry[31] = 0xffffff20;
        apst_table_to_wire(&t, wire);
        CHECK(wire[0] == 0x18 && wire[1] == 0x0b && wire[2] == 0 && wire[7] == 0);
        CHECK(wire[24] == 0x08 && wire[25] == 0x07 && wire[30] == 0x02 && wire[31] == 0x01);
        CHECK(wire[248] == 0x20 && wire[249] == 0xff && wire[250] == 0xff && wire[251] == 0xff && wire[252] == 0);
        for (unsigned i = 8; i < 24; i++)
                CHECK(wire[i] == 0);

        apst_table_from_wire(wire, true, &back);
        CHECK(apst_table_equal(&back, &t));
        apst_table_from_wire(wire, false, &back);
        CHECK(!back.apste && !apst_table_equal(&back, &t));
        back.entry[5] = 1;
        back.apste = true;
        CHECK(!apst_table_equal(&back, &t));

        apst_table_to_hex(&t, hex, sizeof(hex));
        CHECK(strlen(hex) == 32 * 19 - 1);
        CHECK(strncmp(hex, "0x0000000000000b18 0x0000000000000000 0x0000000000000000 0x0102030405060708 ", 76) == 0);
        CHECK(strcmp(hex + 31 * 19, "0x00000000ffffff20") == 0);
}

int main(void) {
        for (size_t i = 0; i < ELEMENTSOF(table_cases); i++)
                check_case(&table_cases[i]);
        test_build_errors();
        test_defaults();
        test_policy_strings();
        test_quirks();
        test_table_check();
        test_worst_wake();
        test_describe();
        test_wire();
        printf("test-apst: %zu table cases and the rest passed\n", ELEMENTSOF(table_cases));
        return check_exit_status();
}
