/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One controller through `calibrate`'s sequence; see calibrate.h and doc/calibrate.md. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apply.h"
#include "apst-record.h"
#include "calib-plan.h"
#include "calibrate.h"
#include "clock.h"
#include "macro.h"
#include "nvme-admin.h"
#include "record-file.h"
#include "sysfs.h"

static bool stopped(const CalibrateRequest *req) {
        return req->stop && *req->stop;
}

/* Sleep @usec unless asked to stop. Return: 0, or -EINTR when *stop is set. */
static int sleep_usec(const CalibrateRequest *req, uint64_t usec) {
        struct timespec ts = { .tv_sec = (time_t) (usec / 1000000u), .tv_nsec = (long) (usec % 1000000u) * 1000 };

        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
                if (stopped(req))
                        return -EINTR;
        return stopped(req) ? -EINTR : 0;
}

static void tell(CalibrateProgress progress, void *userdata, CalibrateEventKind kind, const CalibrateResult *res,
                 uint8_t ps, unsigned sample, int error) {
        if (progress)
                progress(&(CalibrateEvent) { .kind = kind, .result = res, .ps = ps, .sample = sample, .error = error },
                         userdata);
}

/* One timed Read. Return: 0 (*ret_us the time it took) or negative errno. */
static int timed_read(const CalibrateIo *io, uint16_t *status, uint32_t *ret_us) {
        uint64_t t0 = now_usec(), t1;
        int r;

        r = io->read_block(io->userdata, status);
        t1 = now_usec();
        if (r < 0)
                return r;
        *ret_us = (uint32_t) MIN(t1 - t0, (uint64_t) UINT32_MAX);
        return 0;
}

/* The samples of one state, each a Read right after a Read (awake), an idle wait, and a Read that
 * wakes the drive. Return: the samples taken (*ret_r: 0, -EINTR, -ETIME or a failed Read's errno). */
static unsigned take_samples(const CalibrateRequest *req, const CalibrateIo *io, uint8_t ps, uint64_t wait,
                             uint32_t *here, uint32_t *asleep, uint16_t *status, CalibrateProgress progress,
                             void *userdata, const CalibrateResult *res, int *ret_r) {
        unsigned k;
        int r = 0;

        for (k = 0; k < req->samples; k++) {
                if (stopped(req)) {
                        r = -EINTR;
                        break;
                }
                if (now_usec() + wait > req->deadline_usec) {
                        r = -ETIME;
                        break;
                }
                tell(progress, userdata, CALIBRATE_EVENT_SAMPLE, res, ps, k + 1, 0);
                r = timed_read(io, status, &here[k]);
                if (r < 0)
                        return *ret_r = r, k;
                r = sleep_usec(req, wait);
                if (r < 0)
                        break;
                r = timed_read(io, status, &asleep[k]);
                if (r < 0)
                        return *ret_r = r, k;
        }
        *ret_r = r;
        return k;
}

/* Measure state @ps with its temporary table in place into @ret->states[@i] (left empty when a
 * command fails); the awake Reads join @awake. Return: 0, -EINTR, -ETIME, or negative errno of a command. */
static int measure_state(const CalibrateRequest *req, const CalibrateIo *io, uint8_t ps, size_t i, uint32_t *awake,
                         CalibrateProgress progress, void *userdata, CalibrateResult *ret) {
        _cleanup_free_ uint32_t *asleep = calloc(req->samples, sizeof *asleep);
        _cleanup_free_ uint32_t *costs = calloc(req->samples, sizeof *costs);
        _cleanup_free_ uint32_t *here = calloc(req->samples, sizeof *here);
        const IdPsd *p = &ret->id.psd[ps];
        uint64_t wait = calib_idle_wait_us(CALIB_ITPT_MS, p->enlat_us);
        uint16_t *status = &ret->measure_status;
        uint32_t dummy;
        ApstTable t;
        unsigned k;
        int r;

        if (!asleep || !costs || !here)
                return -ENOMEM;
        calib_temp_table(&ret->id, ps, CALIB_ITPT_MS, &t);
        r = io->set_apst_verified(io->userdata, &t, status);
        if (r < 0)
                return r;
        /* the idle timer runs from the last I/O: start it with a read of its own */
        r = timed_read(io, status, &dummy);
        if (r < 0)
                return r;
        k = take_samples(req, io, ps, wait, here, asleep, status, progress, userdata, ret, &r);
        if (r < 0 && r != -EINTR && r != -ETIME)
                return r;       /* a failed Read: the state has no results */
        memcpy(awake + ret->n_awake, here, k * sizeof *here);
        ret->n_awake += k;
        calib_wake_costs(asleep, k, calib_median(here, k), costs);
        ret->states[i] = (CalibrateStateResult) {
                .st = {
                        .ps = ps,
                        .advertised_enlat_us = p->enlat_us,
                        .advertised_exlat_us = p->exlat_us,
                        .samples = k,
                        .wake_median_us = calib_median(costs, k),
                        .wake_p99_us = calib_percentile(costs, k, 99),
                },
                .complete = k == req->samples,
        };
        return r;
}

static int fail(CalibrateResult *ret, CalibrateStep step, int error, uint16_t nvme_status) {
        ret->verdict = CALIBRATE_FAILED;
        ret->failed_step = step;
        ret->error = error;
        ret->nvme_status = nvme_status;
        return error;
}

/* One Read before any table changes (a drive or kernel that refuses it costs nothing), then the
 * original table, recorded before anything is written. Return: 0 or negative errno (@ret says). */
static int take_original(const CalibrateIo *io, CalibrateProgress progress, void *userdata, ApstTable *ret_orig,
                         CalibrateResult *ret) {
        uint16_t status = 0;
        ApstTable found;
        int r, load_error = 0;

        r = io->read_block(io->userdata, &status);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_FIRST_READ, r, status);
        r = io->get_apst(io->userdata, &found, &status);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_GET_FEATURES, r, status);
        r = apst_record_take_original(ret->record, &ret->id, &found, ret_orig, &ret->from_record, &load_error);
        if (ret->from_record)
                tell(progress, userdata, CALIBRATE_EVENT_FROM_RECORD, ret, 0, 0, 0);
        else if (load_error < 0)
                tell(progress, userdata, CALIBRATE_EVENT_RECORD_IGNORED, ret, 0, 0, load_error);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_RECORD, r, 0);
        return 0;
}

/* Put @orig back and drop the record; the record stays when the table could not go back. */
static void restore(const CalibrateIo *io, const ApstTable *orig, CalibrateProgress progress, void *userdata,
                    CalibrateResult *ret) {
        int r;

        r = io->set_apst_verified(io->userdata, orig, &ret->restore_status);
        if (r < 0) {
                ret->restore_error = r;
                return;
        }
        ret->restored = true;
        r = record_remove(ret->record);
        if (r < 0)
                tell(progress, userdata, CALIBRATE_EVENT_RECORD_KEPT, ret, 0, 0, r);
}

int calibrate_sequence(const CalibrateRequest *req, const CalibrateIo *io, const uint8_t *targets, size_t n,
                       CalibrateProgress progress, void *userdata, CalibrateResult *ret) {
        _cleanup_free_ uint32_t *awake = calloc(MAX(n * req->samples, (size_t) 1), sizeof *awake);
        ApstTable orig;
        int r = 0;

        if (!awake)
                return fail(ret, CALIBRATE_STEP_MEMORY, -ENOMEM, 0);
        r = take_original(io, progress, userdata, &orig, ret);
        if (r < 0)
                return r;
        ret->verdict = CALIBRATE_MEASURED;
        for (size_t i = 0; i < n && r >= 0; i++) {
                ret->failed_ps = targets[i];
                r = measure_state(req, io, targets[i], i, awake, progress, userdata, ret);
                if (ret->states[i].st.samples > 0 || r >= 0)
                        ret->n_states = i + 1;
        }
        ret->measure_error = MIN(r, 0);
        if (r >= 0)
                ret->failed_ps = 0;
        tell(progress, userdata, CALIBRATE_EVENT_MEASURED, ret, ret->failed_ps, 0, ret->measure_error);
        restore(io, &orig, progress, userdata, ret);
        ret->awake_median_us = calib_median(awake, ret->n_awake);
        return 0;
}

/* nvme-admin.c's handles behind CalibrateIo. */
typedef struct AdminIo {
        AdminHandle *admin, *ns;
} AdminIo;

static int admin_io_read_block(void *userdata, uint16_t *ret_status) {
        return admin_read_block(((AdminIo *) userdata)->ns, 0, ret_status);
}

static int admin_io_get_apst(void *userdata, ApstTable *ret, uint16_t *ret_status) {
        return admin_get_apst(((AdminIo *) userdata)->admin, ret, ret_status);
}

static int admin_io_set_apst_verified(void *userdata, const ApstTable *t, uint16_t *ret_status) {
        return apply_set_verified(((AdminIo *) userdata)->admin, t, ret_status);
}

/* Are the drive's block counters moving? Return: 1 busy (*ret_ios I/Os seen), 0 idle, -EINTR. */
static int busy_check(const CalibrateRequest *req, uint64_t *ret_ios) {
        uint64_t a = 0, b = 0;
        int r;

        if (sysfs_ctrl_io_count(req->sysfs_root, req->sys->name, &a) < 0)
                return 0;      /* no counters to look at: sysfs_ctrl_namespace() decides next */
        r = sleep_usec(req, (uint64_t) CALIBRATE_BUSY_CHECK_MS * 1000);
        if (r < 0)
                return r;
        if (sysfs_ctrl_io_count(req->sysfs_root, req->sys->name, &b) < 0)
                return 0;
        *ret_ios = b - a;
        return b != a;
}

/* The plan, and the states it lets calibrate measure. Return: 1 go on, 0 done (@ret says), -errno. */
static int choose_targets(const CalibrateRequest *req, uint8_t *targets, CalibrateResult *ret) {
        DevicePlan plan;
        int r;

        r = device_plan(req->config, req->platform, req->sys->name, req->sys, &ret->id, &plan);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_PLAN, r, 0);
        if (plan.verdict != DEVICE_MANAGE || ((plan.plan.quirks & APST_QUIRK_NO_APST) && !plan.params.force)) {
                ret->verdict = CALIBRATE_LEFT_ALONE;
                ret->left_alone = plan.verdict;
                return 0;
        }
        ret->n_targets = calib_targets(&ret->id, plan.plan.quirks, plan.params.force, targets);
        if (ret->n_targets == 0) {
                ret->verdict = CALIBRATE_NOTHING;
                return 0;
        }
        return 1;
}

/* Gate, open, Identify, plan, the namespace, the busy check. Return: 1 go on, 0 done, -errno. */
static int prepare(const CalibrateRequest *req, AdminIo *io, uint8_t *targets, CalibrateResult *ret) {
        const SysCtrl *sys = req->sys;
        uint32_t nsid = 0, lba = 0;
        uint16_t status = 0;
        int r;

        if (strcmp(sys->transport, "pcie") != 0) {
                ret->verdict = CALIBRATE_SKIPPED;
                return 0;
        }
        if (strcmp(sys->state, "live") != 0)
                return fail(ret, CALIBRATE_STEP_STATE, -ENODEV, 0);
        r = admin_open(req->dev_dir, sys->name, &io->admin);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_OPEN, r, 0);
        r = admin_identify(io->admin, &ret->id, NULL, &status);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_IDENTIFY, r, status);
        r = choose_targets(req, targets, ret);
        if (r <= 0)
                return r;
        r = sysfs_ctrl_namespace(req->sysfs_root, sys->name, ret->dev, sizeof ret->dev, &nsid, &lba);
        if (r >= 0)
                r = admin_open_namespace(req->dev_dir, ret->dev, nsid, lba, &io->ns);
        if (r < 0)
                return fail(ret, CALIBRATE_STEP_NAMESPACE, r, 0);
        r = busy_check(req, &ret->busy_ios);
        if (r == -EINTR) {
                ret->verdict = CALIBRATE_STOPPED;
                return 0;
        }
        if (r > 0 && !req->force) {
                ret->verdict = CALIBRATE_BUSY;
                return 0;
        }
        return 1;
}

int calibrate_controller(const CalibrateRequest *req, CalibrateProgress progress, void *userdata,
                         CalibrateResult *ret) {
        AdminIo a = {};
        CalibrateIo io = {
                .read_block = admin_io_read_block,
                .get_apst = admin_io_get_apst,
                .set_apst_verified = admin_io_set_apst_verified,
                .userdata = &a,
        };
        uint8_t targets[IDCTRL_MAX_PS];
        int r;

        *ret = (CalibrateResult) {};
        r = prepare(req, &a, targets, ret);
        if (r > 0) {
                ret->estimate_us = calib_estimate_us(&ret->id, targets, ret->n_targets, req->samples, CALIB_ITPT_MS);
                if (now_usec() + ret->estimate_us > req->deadline_usec)
                        tell(progress, userdata, CALIBRATE_EVENT_OVER_TIME, ret, 0, 0, 0);
                r = record_ctrl_path(req->record_dir, req->sys->name, ret->record, sizeof ret->record);
                if (r < 0)
                        r = fail(ret, CALIBRATE_STEP_RECORD, r, 0);
                else
                        r = calibrate_sequence(req, &io, targets, ret->n_targets, progress, userdata, ret);
        }
        admin_free(a.ns);
        admin_free(a.admin);
        return MIN(r, 0);
}
