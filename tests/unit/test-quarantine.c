/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Quarantine (quarantine.c, quarantine-file.c): the state reached after an idle
 * time under a table; a failure is blamed on that state only with a failure
 * record, not after a removal, a resume, while busy or with APST off, and a
 * timeout's own 30 s are taken off the idle time; the step-down goes state in
 * force, next shallower, APST off; the planners see the drive without the
 * quarantined states, the original left at stop loses its transitions there,
 * the PM QoS tolerance keeps the kernel's table out of them; the file
 * round-trips and refuses what it must; the drop-in carries the limit.
 */
#include <string.h>
#include <stdlib.h>

#include "apst.h"
#include "check.h"
#include "macro.h"
#include "quarantine.h"

/* The seed drive's states (INTEL SSDPEKKW256G7): ps0-2 operational, ps3 10000/300 µs, ps4 2000/10000 µs. */
static IdCtrl seed(void) {
        IdCtrl id = { .vid = 0x8086, .model = "INTEL SSDPEKKW256G7", .firmware = "PSF109C", .npss = 4,
                      .apst_supported = true };
        id.psd[0] = (IdPsd) { .max_power_uw = 9000000 };
        id.psd[1] = (IdPsd) { .max_power_uw = 4600000 };
        id.psd[2] = (IdPsd) { .max_power_uw = 3800000 };
        id.psd[3] = (IdPsd) { .max_power_uw = 45000, .non_operational = true, .enlat_us = 2000, .exlat_us = 2000 };
        id.psd[4] = (IdPsd) { .max_power_uw = 4000, .non_operational = true, .enlat_us = 2000, .exlat_us = 10000 };
        return id;
}

/* ps0..ps2 -> ps3 after 100 ms, ps3 -> ps4 after 2000 ms */
static ApstTable chain(void) {
        ApstTable t = { .apste = true };

        for (unsigned ps = 0; ps < 3; ps++)
                t.entry[ps] = apst_entry_make(3, 100);
        t.entry[3] = apst_entry_make(4, 2000);
        return t;
}

static void test_reached(void) {
        ApstTable t = chain(), off = {};

        current = "/quarantine/reached";
        CHECK(apst_reached(&t, 0) == 0);
        CHECK(apst_reached(&t, 99) == 0);
        CHECK(apst_reached(&t, 100) == 3);
        CHECK(apst_reached(&t, 2099) == 3);
        CHECK(apst_reached(&t, 2100) == 4);
        CHECK(apst_reached(&t, UINT64_MAX) == 4);
        CHECK(apst_deepest(&t) == 4);
        CHECK(apst_reached(&off, UINT64_MAX) == 0);
}

static QuarantineEvidence failed(const ApstTable *t, uint64_t idle_ms, NvmeFailureKind kind) {
        return (QuarantineEvidence) {
                .have_failure = true,
                .failure = { .kind = kind, .have_csts = kind == NVME_FAILURE_DOWN, .csts = 0xffffffff },
                .idle_known = true,
                .idle_ms = idle_ms,
                .table = t,
                .allow_below = QUARANTINE_NONE,
        };
}

static void test_blame(void) {
        IdCtrl id = seed();
        ApstTable t = chain(), off = {};
        QuarantineEvidence e;
        QuarantineBlame b;

        current = "/quarantine/blame/deep";
        e = failed(&t, 600000, NVME_FAILURE_DOWN);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BLAMED);
        CHECK(b.ps == 4);

        current = "/quarantine/blame/shallower";
        e = failed(&t, 500, NVME_FAILURE_RESET_FAILED);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BLAMED);
        CHECK(b.ps == 3);

        current = "/quarantine/blame/busy";
        e = failed(&t, 20, NVME_FAILURE_DOWN);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BUSY);
        CHECK(b.ps == 0);

        current = "/quarantine/blame/timeout-takes-off-io-timeout";
        /* printed 30 s after the command: 31 s of idleness before the print is 1 s before the command */
        e = failed(&t, 31000, NVME_FAILURE_TIMEOUT);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BLAMED);
        CHECK(b.ps == 3);
        CHECK(b.idle_ms == 1000);
        e = failed(&t, 29000, NVME_FAILURE_TIMEOUT);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BUSY);

        current = "/quarantine/blame/no-record";
        e = failed(&t, 600000, NVME_FAILURE_DOWN);
        e.have_failure = false;
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_NO_FAILURE);

        current = "/quarantine/blame/removed";
        e.removed = true;
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_REMOVED);

        current = "/quarantine/blame/resume";
        e = failed(&t, 600000, NVME_FAILURE_DOWN);
        e.resume = true;
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_RESUME);

        current = "/quarantine/blame/apst-off";
        e = failed(&off, 600000, NVME_FAILURE_DOWN);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_APST_DISABLED);

        current = "/quarantine/blame/idle-unknown";
        e = failed(&t, 0, NVME_FAILURE_DOWN);
        e.idle_known = false;
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BLAMED);   /* off the bus: as deep as the table goes */
        CHECK(b.ps == 4);
        e = failed(&t, 0, NVME_FAILURE_TIMEOUT);
        e.idle_known = false;
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_IDLE_UNKNOWN);

        current = "/quarantine/blame/already";
        e = failed(&t, 600000, NVME_FAILURE_DOWN);
        e.allow_below = 4;
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_ALREADY);

        current = "/quarantine/blame/names";
        CHECK(strcmp(quarantine_verdict_to_string(QUARANTINE_BUSY), "busy") == 0);
        CHECK(quarantine_verdict_from_string("resume") == QUARANTINE_RESUME);
}

static void test_step_down(void) {
        IdCtrl id = seed();
        Quarantine q = { .allow_below = QUARANTINE_NONE };
        QuarantineFailure f = { .realtime_sec = 1, .ps = 4, .idle_ms = 600000, .kind = NVME_FAILURE_DOWN };

        current = "/quarantine/step-down/first";
        CHECK(quarantine_step_down(QUARANTINE_NONE, 4, 1, &id) == 4);
        CHECK(quarantine_add_failure(&q, &id, &f));
        CHECK(q.allow_below == 4);
        CHECK(q.max_latency_us == 9999);   /* the kernel keeps states with exlat <= tolerance: not ps4 */

        current = "/quarantine/step-down/second";
        f.ps = 3;
        CHECK(quarantine_add_failure(&q, &id, &f));
        /* ps3 was the last non-operational state below 4: nothing left, APST off */
        CHECK(q.allow_below == QUARANTINE_APST_OFF);
        CHECK(q.max_latency_us == 0);
        CHECK(q.strikes == 2);

        current = "/quarantine/step-down/three-states";
        {
                IdCtrl five = seed();
                five.npss = 5;
                five.psd[5] = (IdPsd) { .max_power_uw = 2000, .non_operational = true, .enlat_us = 5000,
                                        .exlat_us = 40000 };
                CHECK(quarantine_step_down(QUARANTINE_NONE, 5, 1, &five) == 5);
                CHECK(quarantine_step_down(5, 4, 2, &five) == 4);
                CHECK(quarantine_step_down(4, 3, 3, &five) == QUARANTINE_APST_OFF);   /* the third */
                CHECK(quarantine_step_down(5, 5, 1, &five) == 5);                     /* never raised */
                CHECK(quarantine_step_down(4, 5, 1, &five) == 4);
        }

        current = "/quarantine/step-down/keeps-newest";
        {
                Quarantine many = { .allow_below = QUARANTINE_NONE };
                for (unsigned i = 0; i < QUARANTINE_FAILURES_MAX + 3; i++) {
                        QuarantineFailure x = { .realtime_sec = i, .ps = 4 };
                        (void) quarantine_add_failure(&many, &id, &x);
                }
                CHECK(many.n_failures == QUARANTINE_FAILURES_MAX);
                CHECK(many.failures[0].realtime_sec == 3);
                CHECK(many.strikes == QUARANTINE_FAILURES_MAX + 3);
        }
}

static void test_planning(void) {
        IdCtrl id = seed(), lim;
        ApstTable t = chain(), kernel = { .apste = true };
        ApstPlan plan;

        current = "/quarantine/limit-id";
        quarantine_limit_id(&id, 4, &lim);
        CHECK(lim.npss == 3);
        CHECK(lim.psd[4].exlat_us == 0);
        CHECK(lim.psd[3].exlat_us == 2000);
        quarantine_limit_id(&id, QUARANTINE_NONE, &lim);
        CHECK(lim.npss == 4);
        quarantine_limit_id(&id, QUARANTINE_APST_OFF, &lim);
        CHECK(lim.npss == 4);

        current = "/quarantine/limit-id/every-policy";
        quarantine_limit_id(&id, 4, &lim);
        for (ApstPolicyKind p = 0; p < _APST_POLICY_MAX; p++) {
                ApstParams params = APST_PARAMS_DEFAULT;
                params.policy = p;
                REQUIRE(apst_build(&lim, NULL, &params, &plan) == 0);
                CHECK(apst_deepest(&plan.table) < 4);
                CHECK(apst_deepest(&plan.table) == 3);
        }

        current = "/quarantine/filter/chain";
        CHECK(quarantine_filter_table(&t, 4));
        CHECK(t.apste);
        CHECK(t.entry[3] == 0);
        CHECK(t.entry[0] == apst_entry_make(3, 100));
        CHECK(apst_deepest(&t) == 3);
        CHECK(!quarantine_filter_table(&t, 4));   /* already without */

        current = "/quarantine/filter/kernel-shape";
        /* the kernel's default for the seed: ps0..ps3 -> ps4 after 100 ms */
        for (unsigned ps = 0; ps < 4; ps++)
                kernel.entry[ps] = apst_entry_make(4, 100);
        CHECK(quarantine_filter_table(&kernel, 4));
        CHECK(kernel.apste);
        for (unsigned ps = 0; ps < APST_ENTRIES; ps++)
                CHECK(kernel.entry[ps] == 0);

        current = "/quarantine/filter/off";
        t = chain();
        CHECK(quarantine_filter_table(&t, QUARANTINE_APST_OFF));
        CHECK(!t.apste);
        CHECK(t.entry[0] == 0);

        current = "/quarantine/tolerance";
        CHECK(quarantine_latency_tolerance_us(&id, 4) == 9999);
        CHECK(quarantine_latency_tolerance_us(&id, 3) == 1999);
        CHECK(quarantine_latency_tolerance_us(&id, QUARANTINE_APST_OFF) == 0);
        CHECK(quarantine_latency_tolerance_us(&id, QUARANTINE_NONE) == UINT32_MAX);
        {
                /* the kernel's own rule with that tolerance leaves ps4 out */
                ApstParams k = APST_PARAMS_DEFAULT;
                k.policy = APST_POLICY_KERNEL;
                k.max_latency_us = quarantine_latency_tolerance_us(&id, 4);
                REQUIRE(apst_build(&id, NULL, &k, &plan) == 0);
                CHECK(apst_deepest(&plan.table) == 3);
        }
}

static Quarantine sample(void) {
        Quarantine q = { .model = "KINGSTON SA2000M8500G", .firmware = "S5Z42105", .vendor = 0x2646,
                         .allow_below = 4, .max_latency_us = 9999, .strikes = 1, .n_failures = 1 };
        q.failures[0] = (QuarantineFailure) { .realtime_sec = 1733571234, .ps = 4, .idle_ms = 1200000,
                                              .kind = NVME_FAILURE_DOWN };
        return q;
}

static int parse_str(const char *s, Quarantine *q, char **err) {
        return quarantine_parse(s, strlen(s), q, err);
}

static void test_file(void) {
        Quarantine q = sample(), back;
        _cleanup_free_ char *text = NULL, *path = NULL, *name = NULL, *dropin = NULL;
        char *err = NULL;

        current = "/quarantine/file/round-trip";
        REQUIRE(quarantine_format(&q, &text) == 0);
        CHECK(strstr(text, "vendor=2646\n"));
        CHECK(strstr(text, "failure=1733571234 ps=4 idle_ms=1200000 kind=down\n"));
        REQUIRE(parse_str(text, &back, NULL) == 0);
        CHECK(memcmp(&q, &back, sizeof q) == 0);

#define HEAD "version=1\nmodel=M\nfirmware=F\n"
#define BODY "vendor=2646\nallow_below=4\nmax_latency_us=9999\nstrikes=1\n"
        current = "/quarantine/file/minimal";
        CHECK(parse_str(HEAD BODY, &back, NULL) == 0);
        CHECK(back.n_failures == 0 && back.allow_below == 4);

        current = "/quarantine/file/strict";
        static const char *const bad[] = {
                HEAD "vendor=2646\nallow_below=4\nmax_latency_us=9999\n",              /* no strikes */
                HEAD BODY "allow_below=3\n",                                          /* repeated */
                HEAD "vendor=0x2646\nallow_below=4\nmax_latency_us=9999\nstrikes=1\n", /* 0x */
                HEAD "vendor=26466\nallow_below=4\nmax_latency_us=9999\nstrikes=1\n",
                HEAD "vendor=2646\nallow_below=32\nmax_latency_us=9999\nstrikes=1\n",
                HEAD BODY "failure=1 ps=4 idle_ms=5\n",                               /* no kind */
                HEAD BODY "failure=1 ps=32 idle_ms=5 kind=down\n",
                HEAD BODY "failure=1 ps=4 idle_ms=5 kind=boom\n",
                HEAD BODY "failure=1 ps=4 kind=down\n",
                HEAD BODY "failure=1 ps=4 idle_ms=5 kind=down\nfailure=2 ps=4 idle_ms=5 kind=down\n",  /* > strikes */
                HEAD BODY "colour=red\n",
                "version=2\nmodel=M\nfirmware=F\n" BODY,
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                CHECK(parse_str(bad[i], &back, &err) == -EINVAL);
                CHECK(err != NULL);
                free(err);
                err = NULL;
        }

        current = "/quarantine/file/path";
        REQUIRE(quarantine_path("/var/lib/nvme-apstd", "A/../B", "1.0", &path) == 0);
        CHECK(strncmp(path, "/var/lib/nvme-apstd/quarantine/", 31) == 0);
        CHECK(!strstr(path + 31, "/"));

        current = "/quarantine/dropin";
        REQUIRE(quarantine_dropin(&q, &name, &dropin) == 0);
        CHECK(strcmp(name, "50-quarantine-KINGSTON_SA2000M8500G-S5Z42105.conf") == 0);
        CHECK(strstr(dropin, "match_model = KINGSTON SA2000M8500G\n"));
        CHECK(strstr(dropin, "match_firmware = S5Z42105\n"));
        CHECK(strstr(dropin, "max_latency_us = 9999\n"));
        CHECK(strstr(dropin, "[device quarantine-KINGSTON_SA2000M8500-S5Z42105]\n"));
        q.allow_below = QUARANTINE_NONE;
        CHECK(quarantine_dropin(&q, &name, &dropin) == -EINVAL);
}

/* The idle time before a failure, from the completions the watcher saw (times in µs). */
static void test_idle(void) {
        QuarantineIdleMark none = {}, mark = { .idle_seen = true, .idle_usec = 1000000, .idle_done = 50 };
        IdCtrl id = seed();
        ApstTable t = chain();
        QuarantineEvidence e;
        QuarantineBlame b;
        uint64_t idle = 0;

        current = "/quarantine/idle";
        /* idle now: since its last completion */
        CHECK(quarantine_idle(&mark, 5000000, 0, 50, 1000000, &idle) && idle == 4000000);
        CHECK(quarantine_idle(&none, 5000000, 0, 7, 2000000, &idle) && idle == 3000000);
        /* completions up to the look itself: awake */
        CHECK(quarantine_idle(&mark, 5000000, 0, 60, 5000000, &idle) && idle == 0);
        /* a request waits on a drive that answered nothing since it went idle: idle since then */
        CHECK(quarantine_idle(&mark, 40000000, 1, 50, 1000000, &idle) && idle == 39000000);
        /* ... the same request, other requests completed meanwhile: the drive answered, awake */
        CHECK(quarantine_idle(&mark, 40000000, 1, 51, 39000000, &idle) && idle == 0);
        /* in flight with no look that found it idle: unknown */
        CHECK(!quarantine_idle(&none, 40000000, 1, 50, 0, &idle));

        /* the whole chain: 10 min idle, a read that the drive does not wake for, its timeout 30 s later */
        REQUIRE(quarantine_idle(&mark, 1000000 + 600000000 + 30000000, 1, 50, 1000000, &idle));
        e = failed(&t, idle / 1000, NVME_FAILURE_TIMEOUT);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BLAMED && b.ps == 4 && b.idle_ms == 600000);
        /* I/O completing until the timeout: the drive was awake, not blamed */
        REQUIRE(quarantine_idle(&mark, 40000000, 0, 90, 40000000, &idle));
        e = failed(&t, idle / 1000, NVME_FAILURE_TIMEOUT);
        quarantine_blame(&e, &id, &b);
        CHECK(b.verdict == QUARANTINE_BUSY && b.ps == 0);
}

int main(void) {
        test_reached();
        test_blame();
        test_idle();
        test_step_down();
        test_planning();
        test_file();
        return check_exit_status();
}
