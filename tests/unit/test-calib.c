/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Measured wake costs (calib.c): the file round-trips; every malformed line is
 * refused with its line number; model and firmware cannot lead the path out of
 * the directory; a measurement raises an exit latency only when it is larger;
 * and the seed drive's fix: an Intel 600p whose ps4 really wakes in 30 ms loses
 * ps4 from a 15000 µs budget table that its descriptors would let it keep,
 * while the kernel policy, bit-exact with the kernel, is not changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apst.h"
#include "calib-store.h"
#include "check.h"
#include "config-file.h"
#include "config.h"
#include "device.h"
#include "fileio.h"
#include "idctrl.h"
#include "macro.h"

#define STREQ(a, b) (strcmp((a), (b)) == 0)

/* Does any entry of @t send the drive to @ps? */
static bool apst_table_uses_state(const ApstTable *t, unsigned ps) {
        for (unsigned i = 0; i < APST_ENTRIES; i++)
                if ((t->entry[i] >> 8) != 0 && ((t->entry[i] >> 3) & 0x1f) == ps)
                        return true;
        return false;
}

static Calibration sample(void) {
        Calibration c = {
                .model = "INTEL SSDPEKKW256G7",
                .firmware = "PSF109C",
                .measured_realtime_usec = 1764600000000000ull,
                .awake_median_us = 45,
                .n_states = 2,
                .states = {
                        { .ps = 3, .advertised_enlat_us = 10000, .advertised_exlat_us = 300, .samples = 20,
                          .wake_median_us = 280, .wake_p99_us = 410 },
                        { .ps = 4, .advertised_enlat_us = 2000, .advertised_exlat_us = 10000, .samples = 20,
                          .wake_median_us = 30100, .wake_p99_us = 31900 },
                },
        };
        return c;
}

static void test_round_trip(void) {
        Calibration c = sample(), back;
        _cleanup_free_ char *text = NULL, *err = NULL;

        CHECK(calib_format(&c, &text) == 0);
        CHECK(calib_parse(text, strlen(text), &back, &err) == 0);
        CHECK(calib_equal(&c, &back));
        CHECK(calib_find(&back, 4)->wake_median_us == 30100);
        CHECK(calib_find(&back, 2) == NULL);
}

static void expect_bad(const char *text, const char *want) {
        _cleanup_free_ char *err = NULL;
        Calibration c;

        CHECK(calib_parse(text, strlen(text), &c, &err) == -EINVAL);
        CHECK(err);
        if (!strstr(err, want)) {
                fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, want);
                abort();
        }
}

#define HEAD "version=1\nmodel=M\nfirmware=F\nmeasured_realtime_usec=1\nawake_median_us=40\n"
#define ST "state=4 advertised_enlat_us=2000 advertised_exlat_us=10000 samples=5 wake_median_us=9 wake_p99_us=9"

static void test_strict(void) {
        Calibration c;

        CHECK(calib_parse(HEAD ST "\n", strlen(HEAD ST "\n"), &c, NULL) == 0);
        CHECK(c.n_states == 1 && c.states[0].ps == 4 && c.states[0].samples == 5);
        expect_bad("model=M\n", "line 1: the first key must be version=");
        expect_bad("version=2\n", "line 1: unsupported version");
        expect_bad(HEAD "colour=blue\n", "line 6: unknown key");
        expect_bad(HEAD "model=N\n", "line 6: key given twice");
        expect_bad(HEAD "awake_median_us=41\n", "line 6: key given twice");
        expect_bad("version=1\nawake_median_us=x\n", "line 2: not a number");
        expect_bad("version=1\nawake_median_us=-1\n", "line 2: not a number");
        expect_bad(HEAD ST "\n" ST "\n", "line 7: power state measured twice");
        expect_bad(HEAD "state=4 samples=5\n", "line 6: a state line needs");
        expect_bad(HEAD "state=32 advertised_enlat_us=0 advertised_exlat_us=0 samples=1 wake_median_us=0 "
                        "wake_p99_us=0\n",
                   "line 6: power state above 31");
        expect_bad(HEAD "state=4 advertised_enlat_us=0 advertised_exlat_us=0 samples=1 wake_median_us=9 "
                        "wake_p99_us=8\n",
                   "wake_p99_us at least wake_median_us");
        expect_bad(HEAD "state=4 state=4\n", "line 6: key repeated");
        expect_bad(HEAD "state=4 bogus=1\n", "unknown key in a state line");
        expect_bad("version=1\nmodel=M\n", "incomplete");
        expect_bad("version=1\nmodel=" "0123456789012345678901234567890123456789X\n", "at most 40");
        expect_bad("version=1\nfirmware=123456789\n", "at most 8");
        expect_bad("version=1\nmodel=a\tb\n", "printable");
        expect_bad(HEAD "state=4 advertised_enlat_us=99999999999 advertised_exlat_us=0 samples=1 "
                        "wake_median_us=0 wake_p99_us=0\n",
                   "not a number");
}

static void test_path(void) {
        _cleanup_free_ char *p = NULL, *q = NULL;

        CHECK(calib_path("/var/lib/nvme-apstd", "INTEL SSDPEKKW256G7", "PSF109C", &p) == 0);
        CHECK(STREQ(p, "/var/lib/nvme-apstd/calibration/INTEL%20SSDPEKKW256G7@PSF109C.calib"));
        CHECK(calib_path("/s", "../../etc/x", "a/b", &q) == 0);
        CHECK(STREQ(q, "/s/calibration/%2E%2E%2F%2E%2E%2Fetc%2Fx@a%2Fb.calib"));
        CHECK(calib_path("/s", "", "F", &p) == -EINVAL || p);
}

static void test_load_save(void) {
        char dir[] = "/tmp/test-calib-XXXXXX", sub[300];
        _cleanup_free_ char *err = NULL, *path = NULL;
        Calibration c = sample(), back;
        struct stat st;

        REQUIRE(mkdtemp(dir));
        CHECK(calib_load(dir, c.model, c.firmware, &back, &err) == -ENOENT);
        CHECK(!err);
        (void) snprintf(sub, sizeof sub, "%s/state", dir);
        CHECK(calib_save(sub, &c) == 0);
        CHECK(calib_load(sub, c.model, c.firmware, &back, &err) == 0);
        CHECK(calib_equal(&c, &back));
        CHECK(calib_path(sub, c.model, c.firmware, &path) == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        /* another firmware's file is not this drive's */
        CHECK(calib_load(sub, c.model, "OTHER", &back, &err) == -ENOENT);
        /* a file under this drive's name that says another drive is refused, naming the file */
        CHECK(write_file_atomic(path, HEAD, strlen(HEAD), 0644) == 0);
        CHECK(calib_load(sub, c.model, c.firmware, &back, &err) == -EINVAL);
        CHECK(err && strstr(err, path) && strstr(err, "not this drive"));
        free(err);
        err = NULL;
        CHECK(write_file_atomic(path, "version=1\nbogus\n", 16, 0644) == 0);
        CHECK(calib_load(sub, c.model, c.firmware, &back, &err) == -EINVAL);
        CHECK(err && strstr(err, path) && strstr(err, "line 2: expected KEY=VALUE"));
        CHECK(unlink(path) == 0);
        (void) snprintf(sub, sizeof sub, "%s/state/calibration", dir);
        CHECK(rmdir(sub) == 0);
        (void) snprintf(sub, sizeof sub, "%s/state", dir);
        CHECK(rmdir(sub) == 0);
        CHECK(rmdir(dir) == 0);
}

static void test_apply(void) {
        Calibration c = sample();
        IdCtrl id = { .npss = 4 }, out;

        id.psd[3] = (IdPsd) { .non_operational = true, .enlat_us = 10000, .exlat_us = 300 };
        id.psd[4] = (IdPsd) { .non_operational = true, .enlat_us = 2000, .exlat_us = 10000 };
        /* ps3 measured faster than advertised: the advertised value stays */
        CHECK(calib_exlat_us(&c, 3, 300) == 300);
        CHECK(calib_exlat_us(&c, 4, 10000) == 30100);
        CHECK(calib_exlat_us(NULL, 4, 10000) == 10000);
        CHECK(calib_exlat_us(&c, 1, 7) == 7);
        CHECK(calib_apply(&c, &id, &out) == 1u << 4);
        CHECK(out.psd[4].exlat_us == 30100 && out.psd[4].enlat_us == 2000 && out.psd[3].exlat_us == 300);
}

/* A passive measurement merged in: a larger wake cost wins, a smaller one does not, a new state
 * comes with the descriptors' figures. */
static void test_raise(void) {
        Calibration c = sample();
        IdCtrl id = { .npss = 4 }, out;

        id.psd[2] = (IdPsd) { .non_operational = true, .enlat_us = 500, .exlat_us = 700 };
        id.psd[3] = (IdPsd) { .non_operational = true, .enlat_us = 10000, .exlat_us = 300 };
        id.psd[4] = (IdPsd) { .non_operational = true, .enlat_us = 2000, .exlat_us = 10000 };
        size_t n = c.n_states;
        CHECK(calib_raise(&c, &id, 4, 20000, 7) == 0);           /* below the stored 30100 */
        CHECK(calib_exlat_us(&c, 4, 10000) == 30100);
        CHECK(calib_raise(&c, &id, 4, 45000, 7) == 0);
        CHECK(calib_exlat_us(&c, 4, 10000) == 45000 && calib_find(&c, 4)->samples == 7);
        CHECK(c.n_states == n);
        CHECK(calib_raise(&c, &id, 2, 2100, 5) == 0);
        CHECK(c.n_states == n + 1);
        CHECK(calib_find(&c, 2)->advertised_exlat_us == 700 && calib_find(&c, 2)->advertised_enlat_us == 500);
        CHECK(calib_apply(&c, &id, &out) == ((1u << 4) | (1u << 2)));
        CHECK(out.psd[2].exlat_us == 2100 && out.psd[4].exlat_us == 45000);
}

/* The seed drive, its PCI id unknown (so NO_DEEPEST_PS does not hide ps4), budget 15000 µs. */
static void test_seed(void) {
        _cleanup_free_ char *buf = NULL;
        Calibration c = sample();
        size_t len;
        IdCtrl id;
        Config cfg;
        DevicePlan with, without;
        const char *conf_budget = "[apst]\nmax_latency_us = 15000\n";

        CHECK(read_full_file(TEST_DATA_DIR "/idctrl/00-intel-ssdpekkw256g7.bin", 1 << 20, 0, &buf,
                             &len) == 0);
        CHECK(idctrl_parse_binary(buf, len, &id) == 0);
        CHECK(STREQ(id.model, c.model));
        (void) snprintf(c.firmware, sizeof c.firmware, "%s", id.firmware); /* this image reports none */

        CHECK(config_parse_string(conf_budget, "test.conf", &cfg, NULL) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, NULL, &without) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, &c, &with) == 0);
        /* descriptors: 2000 + 10000 µs fits 15000, so ps4 is in the table */
        CHECK(apst_table_uses_state(&without.plan.table, 4));
        CHECK(!without.calib_raised);
        /* measured 30.1 ms: out */
        CHECK(!apst_table_uses_state(&with.plan.table, 4));
        CHECK(apst_table_uses_state(&with.plan.table, 3));
        CHECK(with.calib_raised == 1u << 4 && with.calib_changed_table);
        CHECK(apst_table_equal(&with.uncalibrated_table, &without.plan.table));
        CHECK(with.plan_id.psd[4].exlat_us == 30100);
        config_done(&cfg);

        /* use_calibration = no: the descriptors again */
        CHECK(config_parse_string("[apst]\nmax_latency_us = 15000\nuse_calibration = no\n", "test.conf", &cfg,
                                  NULL) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, &c, &with) == 0);
        CHECK(apst_table_equal(&with.plan.table, &without.plan.table) && !with.calib_raised);
        config_done(&cfg);

        /* the kernel policy stays bit-exact with the kernel: descriptors only */
        CHECK(config_parse_string("[apst]\npolicy = kernel\nmax_latency_us = 15000\n", "test.conf", &cfg, NULL) ==
              0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, NULL, &without) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, &c, &with) == 0);
        CHECK(apst_table_equal(&with.plan.table, &without.plan.table) && !with.calib_raised);
        CHECK(apst_table_uses_state(&with.plan.table, 4));
        config_done(&cfg);

        /* exit_latency_us in the configuration is a measurement like the saved one: the larger wins */
        CHECK(config_parse_string("[apst]\nmax_latency_us = 15000\n[device intel]\nmatch_model = INTEL*\n"
                                  "exit_latency_us = ps4:30.1ms ps3:200\n", "test.conf", &cfg, NULL) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, NULL, &with) == 0);
        CHECK(!apst_table_uses_state(&with.plan.table, 4));
        CHECK(with.calib_raised == 1u << 4 && with.config_raised == 1u << 4);  /* ps3: 200 < 300 advertised */
        CHECK(with.plan_id.psd[4].exlat_us == 30100 && with.plan_id.psd[3].exlat_us == 300);
        config_done(&cfg);
        /* below the saved measurement: the saved one is planned with, not shown as the configuration's */
        CHECK(config_parse_string("[apst]\nmax_latency_us = 15000\n[device intel]\nmatch_model = INTEL*\n"
                                  "exit_latency_us = ps4:20ms\n", "test.conf", &cfg, NULL) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, &c, &with) == 0);
        CHECK(with.plan_id.psd[4].exlat_us == 30100 && with.calib_raised == 1u << 4 && !with.config_raised);
        config_done(&cfg);
        /* only for the drives the section matches */
        CHECK(config_parse_string("[apst]\nmax_latency_us = 15000\n[device other]\nmatch_model = Samsung*\n"
                                  "exit_latency_us = ps4:30ms\n", "test.conf", &cfg, NULL) == 0);
        CHECK(device_plan_calibrated(&cfg, NULL, "nvme0", NULL, &id, NULL, &with) == 0);
        CHECK(!with.calib_raised && apst_table_uses_state(&with.plan.table, 4));
        config_done(&cfg);
}

/* calibrate --drop-in's file: parsed back to the same figures, matching only that model and firmware. */
static void test_dropin(void) {
        Calibration c = {
                .model = "WD Black* SN[750] ?x\\",
                .firmware = "1.0*",
                .n_states = 3,
                .states = {
                        { .ps = 3, .samples = 20, .wake_median_us = 1530 },
                        { .ps = 4, .samples = 20, .wake_median_us = 30100 },
                        { .ps = 2, .samples = 0, .wake_median_us = 0 },    /* not measured: left out */
                },
        };
        _cleanup_free_ char *name = NULL, *text = NULL, *dir = NULL, *main_path = NULL, *path = NULL;
        DeviceIdent same = { .name = "nvme0", .model = c.model, .firmware = c.firmware };
        DeviceIdent other_fw = { .name = "nvme0", .model = c.model, .firmware = "1.01" };
        DeviceIdent glob_would = { .name = "nvme0", .model = "WD Black SN7 ax\\", .firmware = "1.0*" };
        ApstParams p;
        Config cfg;

        current = "/calib/dropin/format";
        REQUIRE(calib_dropin(&c, &name, &text) == 0);
        CHECK_SAY(strcmp(name, "50-calibrated-WD_Black__SN_750___x_-1.0_.conf") == 0, "%s", name);
        current = "/calib/dropin/parsed-back";
        REQUIRE(config_parse_string(text, name, &cfg, NULL) == 0);
        CHECK(cfg.n_devices == 1);
        CHECK(config_resolve(&cfg, &same, &p, NULL));
        CHECK(p.exlat.mask == ((1u << 3) | (1u << 4)) && p.exlat.us[3] == 1530 && p.exlat.us[4] == 30100);
        current = "/calib/dropin/only-that-model-and-firmware";
        (void) config_resolve(&cfg, &other_fw, &p, NULL);
        CHECK(p.exlat.mask == 0);
        (void) config_resolve(&cfg, &glob_would, &p, NULL);
        CHECK(p.exlat.mask == 0);
        config_done(&cfg);

        /* written with write_file_atomic() where a --config FILE's drop-ins are, and read back from there */
        current = "/calib/dropin/written-and-loaded";
        REQUIRE(asprintf(&dir, "%s/test-calib-dropin-XXXXXX", getenv("TMPDIR") ?: "/tmp") > 0);
        REQUIRE(mkdtemp(dir));
        REQUIRE(asprintf(&main_path, "%s/x.conf", dir) > 0);
        REQUIRE(asprintf(&path, "%s/x.conf.d", dir) > 0);
        REQUIRE(mkdir(path, 0755) == 0);
        free(path);
        REQUIRE(asprintf(&path, "%s/x.conf.d/%s", dir, name) > 0);
        REQUIRE(write_file_atomic(path, text, strlen(text), 0644) == 0);
        REQUIRE(config_load_all(&(ConfigLoad) { .path = main_path, .missing_ok = true }, &cfg, NULL) == 0);
        CHECK(config_resolve(&cfg, &same, &p, NULL));
        CHECK(p.exlat.mask == ((1u << 3) | (1u << 4)) && p.exlat.us[3] == 1530 && p.exlat.us[4] == 30100);
        config_done(&cfg);

        current = "/calib/dropin/refused";
        free(name);
        free(text);
        name = text = NULL;
        c.firmware[0] = '\0';
        CHECK(calib_dropin(&c, &name, &text) == -EINVAL && !name);
        (void) snprintf(c.firmware, sizeof c.firmware, "1");
        (void) snprintf(c.model, sizeof c.model, "Odd ;model");
        CHECK(calib_dropin(&c, &name, &text) == -EINVAL);
        (void) snprintf(c.model, sizeof c.model, "Fine");
        c.n_states = 1;
        c.states[0].samples = 0;
        CHECK(calib_dropin(&c, &name, &text) == -EINVAL);
}

int main(void) {
        test_dropin();
        test_round_trip();
        test_strict();
        test_path();
        test_load_save();
        test_apply();
        test_raise();
        test_seed();
        return check_exit_status();
}
