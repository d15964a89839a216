/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's calibrate sequence (engine/calibrate.c, calibrate_sequence()) over a fake drive
 * (CalibrateIo): the progress callback's order (each sample, then the end of the measuring,
 * before the original goes back); the original table recorded before the first Set Features
 * and put back on every path once anything was written (a refused temporary table, a failed
 * Read, a stop, the deadline), the record then removed; nothing written when the first Read,
 * the Get Features or the record fails; the record kept when the original cannot go back; a
 * record left by a previous run used as the original. The drive's own answers and the gate
 * past the open are covered end to end by tests/integration/test-calibrate.py; here, only the gate
 * before the open (calibrate_controller()).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apst-record.h"
#include "calib-plan.h"
#include "calibrate.h"
#include "check.h"
#include "fileio.h"
#include "idctrl.h"
#include "macro.h"
#include "record-file.h"

/* What the fake drive does, and what it was sent. */
typedef struct Fake {
        unsigned reads;            /* Reads answered so far */
        unsigned fail_read;        /* this Read (from 1) fails; 0: none does */
        bool fail_get;
        unsigned sets;             /* Set Features sent */
        unsigned fail_set;         /* this Set Features (from 1) fails; 0: none does */
        ApstTable held;            /* the table the drive holds */
        ApstTable written[8];
        char events[256];          /* the progress callback's calls, as letters */
        size_t n_events;
        volatile sig_atomic_t stop;
        unsigned stop_at_sample;   /* set stop when this SAMPLE event (counted from 1) arrives */
        unsigned samples_seen;
        const char *record;        /* the record's path, to see it exists when the first Set Features goes */
        bool record_before_set;
} Fake;

static int fake_read(void *userdata, uint16_t *ret_status) {
        Fake *f = userdata;

        if (++f->reads == f->fail_read) {
                *ret_status = 0x0281;   /* Unrecovered Read Error (NVMe base spec, Media and Data Integrity) */
                return -EREMOTEIO;
        }
        return 0;
}

static int fake_get(void *userdata, ApstTable *ret, uint16_t *ret_status) {
        Fake *f = userdata;

        if (f->fail_get)
                return -EIO;
        *ret = f->held;
        return 0;
}

static int fake_set(void *userdata, const ApstTable *t, uint16_t *ret_status) {
        Fake *f = userdata;

        if (f->sets == 0)
                f->record_before_set = access(f->record, F_OK) == 0;
        if (++f->sets == f->fail_set)
                return -EIO;
        CHECK(f->sets <= ELEMENTSOF(f->written));
        f->written[f->sets - 1] = *t;
        f->held = *t;
        return 0;
}

static void on_event(const CalibrateEvent *ev, void *userdata) {
        Fake *f = userdata;
        static const char letter[_CALIBRATE_EVENT_KIND_MAX] = {
                [CALIBRATE_EVENT_OVER_TIME] = 'O',
                [CALIBRATE_EVENT_RECORD_IGNORED] = 'I',
                [CALIBRATE_EVENT_FROM_RECORD] = 'F',
                [CALIBRATE_EVENT_SAMPLE] = 'S',
                [CALIBRATE_EVENT_MEASURED] = 'M',
                [CALIBRATE_EVENT_RECORD_KEPT] = 'K',
        };

        CHECK(f->n_events + 1 < sizeof f->events);
        f->events[f->n_events++] = letter[ev->kind];
        if (ev->kind == CALIBRATE_EVENT_SAMPLE && ++f->samples_seen == f->stop_at_sample)
                f->stop = SIGTERM;
}

static char dir[1024];
static IdCtrl id;
static const uint8_t targets[] = { 3, 4 };   /* the 600p's two non-operational states */

/* A clean fake holding @held, a request over it, and the result's record path. */
static void setup(Fake *f, CalibrateRequest *req, CalibrateResult *res, CalibrateIo *io) {
        static char record[PATH_MAX];

        CHECK(record_ctrl_path(dir, "nvme0", record, sizeof record) == 0);
        (void) unlink(record);
        *f = (Fake) { .record = record };
        /* a valid table unlike any calibrate writes (50 ms idle, not CALIB_ITPT_MS): it must come back */
        calib_temp_table(&id, 4, 50, &f->held);
        *req = (CalibrateRequest) {
                .samples = 2,
                .deadline_usec = UINT64_MAX,
                .stop = &f->stop,
        };
        *res = (CalibrateResult) { .id = id };
        (void) snprintf(res->record, sizeof res->record, "%s", record);
        *io = (CalibrateIo) { fake_read, fake_get, fake_set, f };
}

static int run(Fake *f, CalibrateRequest *req, CalibrateResult *res, CalibrateIo *io) {
        return calibrate_sequence(req, io, targets, ELEMENTSOF(targets), on_event, f, res);
}

static ApstTable original(void) {
        Fake f;
        CalibrateRequest req;
        CalibrateResult res;
        CalibrateIo io;

        setup(&f, &req, &res, &io);
        return f.held;
}

/* The original went back last, and the record is gone. */
static void assert_put_back(const Fake *f, const CalibrateResult *res) {
        ApstTable orig = original();

        CHECK(res->verdict == CALIBRATE_MEASURED);
        CHECK(res->restored);
        CHECK(f->record_before_set);
        CHECK(apst_table_equal(&f->written[f->sets - 1], &orig));
        CHECK(apst_table_equal(&f->held, &orig));
        CHECK(access(f->record, F_OK) < 0 && errno == ENOENT);
}

static void test_measured(void) {
        Fake f;
        CalibrateRequest req;
        CalibrateResult res;
        CalibrateIo io;
        ApstTable t3, t4;

        setup(&f, &req, &res, &io);
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "SSSSM") == 0);
        CHECK(f.sets == 3);
        calib_temp_table(&id, 3, CALIB_ITPT_MS, &t3);
        calib_temp_table(&id, 4, CALIB_ITPT_MS, &t4);
        CHECK(apst_table_equal(&f.written[0], &t3));
        CHECK(apst_table_equal(&f.written[1], &t4));
        assert_put_back(&f, &res);
        /* one Read before anything, per state one to start the idle timer and two per sample */
        CHECK(f.reads == 1 + 2 * (1 + 2 * 2));
        CHECK(res.measure_error == 0 && res.n_states == 2 && res.n_awake == 4);
        CHECK(res.states[0].st.ps == 3 && res.states[0].st.samples == 2 && res.states[0].complete);
        CHECK(res.states[1].st.ps == 4 && res.states[1].st.advertised_exlat_us == id.psd[4].exlat_us);
}

/* Nothing is written when the first Read, the Get Features or the record fails. */
static void test_nothing_written(void) {
        Fake f;
        CalibrateRequest req;
        CalibrateResult res;
        CalibrateIo io;

        setup(&f, &req, &res, &io);
        f.fail_read = 1;
        CHECK(run(&f, &req, &res, &io) == -EREMOTEIO);
        CHECK(res.verdict == CALIBRATE_FAILED && res.failed_step == CALIBRATE_STEP_FIRST_READ);
        CHECK(res.nvme_status == 0x0281);
        CHECK(f.sets == 0 && f.n_events == 0 && access(f.record, F_OK) < 0);

        setup(&f, &req, &res, &io);
        f.fail_get = true;
        CHECK(run(&f, &req, &res, &io) == -EIO);
        CHECK(res.verdict == CALIBRATE_FAILED && res.failed_step == CALIBRATE_STEP_GET_FEATURES);
        CHECK(f.sets == 0 && access(f.record, F_OK) < 0);

        setup(&f, &req, &res, &io);
        (void) snprintf(res.record, sizeof res.record, "%s/no-such-dir/ctrl-nvme0.orig", dir);
        CHECK(run(&f, &req, &res, &io) == -ENOENT);
        CHECK(res.verdict == CALIBRATE_FAILED && res.failed_step == CALIBRATE_STEP_RECORD);
        CHECK(f.sets == 0);
}

/* Once a temporary table went out, every way out of the measuring puts the original back. */
static void test_failures_put_back(void) {
        Fake f;
        CalibrateRequest req;
        CalibrateResult res;
        CalibrateIo io;

        /* ps4's temporary table refused: ps3's results stay, the error is said */
        setup(&f, &req, &res, &io);
        f.fail_set = 2;
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "SSM") == 0);
        CHECK(res.measure_error == -EIO && res.failed_ps == 4 && res.n_states == 1);
        assert_put_back(&f, &res);

        /* a Read fails in ps3's second sample (Reads: 1 first, 2 timer, 3-4 sample 1, 5 sample 2) */
        setup(&f, &req, &res, &io);
        f.fail_read = 5;
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "SSM") == 0);
        CHECK(res.measure_error == -EREMOTEIO && res.measure_status == 0x0281 && res.failed_ps == 3);
        CHECK(res.n_states == 0);      /* a state whose Read failed has no results */
        assert_put_back(&f, &res);

        /* a stop (a signal) during ps4's first sample: ps3's results are kept, ps4 has none */
        setup(&f, &req, &res, &io);
        f.stop_at_sample = 3;
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "SSSM") == 0);
        CHECK(res.measure_error == -EINTR && res.failed_ps == 4 && res.n_states == 1);
        CHECK(res.states[0].complete && res.states[0].st.samples == 2 && res.states[1].st.samples == 0);
        assert_put_back(&f, &res);

        /* the deadline already past: no sample, ps3's temporary table still goes and the original comes back */
        setup(&f, &req, &res, &io);
        req.deadline_usec = 0;
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "M") == 0);
        CHECK(res.measure_error == -ETIME && res.n_states == 0 && f.sets == 2);
        assert_put_back(&f, &res);
}

/* The original cannot go back: it stays recorded for the next run or the daemon. */
static void test_restore_fails(void) {
        Fake f;
        CalibrateRequest req;
        CalibrateResult res;
        CalibrateIo io;
        ApstTable orig = original(), rec;

        setup(&f, &req, &res, &io);
        f.fail_set = 3;
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "SSSSM") == 0);
        CHECK(!res.restored && res.restore_error == -EIO);
        CHECK(apst_record_load(f.record, &id, &rec) == 0);
        CHECK(apst_table_equal(&rec, &orig));
        CHECK(unlink(f.record) == 0);
}

/* A record a previous run left is the original, said before the first sample. */
static void test_from_record(void) {
        Fake f;
        CalibrateRequest req;
        CalibrateResult res;
        CalibrateIo io;
        ApstTable left;

        setup(&f, &req, &res, &io);
        left = (ApstTable) { .apste = false };
        CHECK(apst_record_save(f.record, &id, &left) == 0);
        CHECK(run(&f, &req, &res, &io) == 0);
        CHECK(strcmp(f.events, "FSSSSM") == 0);
        CHECK(res.from_record && res.restored);
        CHECK(apst_table_equal(&f.held, &left));
        CHECK(access(f.record, F_OK) < 0);
}

/* calibrate_controller()'s gate, before any device is opened: the words come from the verb, the
 * verdict and the step from here; no callback, nothing opened, no record. */
static void test_gate(void) {
        Config cfg;
        SysCtrl sys = { .name = "nvme0", .transport = "tcp", .state = "live" };
        CalibrateRequest req = {
                .sys = &sys,
                .config = &cfg,
                .sysfs_root = "/nonexistent",
                .dev_dir = "/nonexistent",
                .record_dir = dir,
                .samples = 1,
                .deadline_usec = UINT64_MAX,
        };
        CalibrateResult res;
        Fake f = {};

        config_init(&cfg);
        CHECK(calibrate_controller(&req, on_event, &f, &res) == 0);
        CHECK(res.verdict == CALIBRATE_SKIPPED);

        (void) snprintf(sys.transport, sizeof sys.transport, "pcie");
        (void) snprintf(sys.state, sizeof sys.state, "resetting");
        CHECK(calibrate_controller(&req, on_event, &f, &res) == -ENODEV);
        CHECK(res.verdict == CALIBRATE_FAILED && res.failed_step == CALIBRATE_STEP_STATE);

        (void) snprintf(sys.state, sizeof sys.state, "live");
        CHECK(calibrate_controller(&req, on_event, &f, &res) == -ENOENT);
        CHECK(res.verdict == CALIBRATE_FAILED && res.failed_step == CALIBRATE_STEP_OPEN);
        CHECK(f.n_events == 0);
        config_done(&cfg);
}

int main(void) {
        const char *tmp = getenv("TMPDIR");
        char *buf = NULL;
        size_t len = 0;

        CHECK(read_full_file(TEST_DATA_DIR "/idctrl/00-intel-ssdpekkw256g7.bin", 1 << 20, 0, &buf, &len) == 0);
        CHECK(idctrl_parse_any(buf, len, &id) == 0);
        free(buf);
        CHECK(id.npss >= 4 && id.psd[3].non_operational && id.psd[4].non_operational);
        (void) snprintf(dir, sizeof dir, "%s/test-calibrate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        REQUIRE(mkdtemp(dir));
        test_measured();
        test_nothing_written();
        test_failures_put_back();
        test_restore_fails();
        test_from_record();
        test_gate();
        CHECK(rmdir(dir) == 0);
        return check_exit_status();
}
