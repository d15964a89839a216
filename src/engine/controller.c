/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The controller engine; see controller.h.
 *
 * The table found before the daemon first wrote is kept in the Controller and
 * in ctx->record_dir/ctrl-NAME.orig, so that a daemon restarted after a crash
 * still restores what the kernel had, not what its predecessor wrote.
 */

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "apstd-ids.h"
#include "apst-record.h"
#include "calib-store.h"
#include "controller.h"
#include "nvme-admin.h"
#include "quarantine-store.h"
#include "log.h"
#include "record-file.h"
#include "sysfs.h"

void controller_init(Controller *c, const char *name) {
        *c = (Controller) { .latency_cap_us = DEVICE_NO_CAP, .quarantine_below = QUARANTINE_NONE };
        (void) snprintf(c->name, sizeof c->name, "%s", name);
}

const char *controller_model(const Controller *c) {
        return c->identified && c->id.model[0] ? c->id.model : c->sys.model;
}

const char *controller_firmware(const Controller *c) {
        return c->identified && c->id.model[0] ? c->id.firmware : c->sys.firmware;
}

static ApplyTarget controller_target(const Controller *c, const char *reason) {
        return (ApplyTarget) {
                .name = c->name,
                .model = controller_model(c),
                .firmware = controller_firmware(c),
                .policy = apst_policy_to_string(c->plan.params.policy),
                .reason = reason,
        };
}

static int outcome_fail(ControllerOutcome *o, ControllerStep step, int error, uint16_t nvme_status) {
        o->result = CONTROLLER_FAILED;
        o->failed_step = step;
        o->error = error;
        o->nvme_status = nvme_status;
        return error;
}

/* ---- the record of the original table ---- */

static int record_path(const ControllerContext *ctx, const Controller *c, char *buf, size_t n) {
        if (!ctx->record_dir)
                return -ENOENT;
        return record_ctrl_path(ctx->record_dir, c->name, buf, n);
}

static void original_forget(const ControllerContext *ctx, const Controller *c) {
        char path[PATH_MAX];

        if (record_path(ctx, c, path, sizeof path) >= 0)
                (void) record_remove(path);
}

typedef struct RecordHook {
        Controller *c;
        const ControllerContext *ctx;
} RecordHook;

/* apply_table() hook: the first time we see a controller's table, remember it (or the one a
 * crashed predecessor recorded) and write the record before anything is changed. */
static void record_original(const ApstTable *found, void *userdata) {
        RecordHook *h = userdata;
        Controller *c = h->c;
        char path[PATH_MAX];
        bool from_record = false;
        int r;

        if (c->have_original)
                return;
        c->original = *found;
        r = record_path(h->ctx, c, path, sizeof path);
        if (r >= 0)
                r = apst_record_take_original(path, &c->id, found, &c->original, &from_record, NULL);
        if (from_record)
                log_info("%s: using the table recorded before a previous run (%s).", c->name, path);
        c->have_original = true;
        if (r < 0)
                log_warning_errno(r, "%s: cannot record the original APST table in %s: %m; a restart after a "
                                     "crash would not know it.", c->name, strempty(h->ctx->record_dir));
}

static void log_not_live(Controller *c, const ControllerContext *ctx) {
        if (ctx->mode != CONTROLLER_MODE_DAEMON)
                log_error("%s: controller is %s, not live; not %s.", c->name, c->sys.state,
                          ctx->mode == CONTROLLER_MODE_PLAN ? "identified" : "programmed");
        else
                /* once, not every time the retry timer looks again */
                log_full_errno(c->not_live_logged ? LOG_DEBUG : LOG_INFO, 0,
                               "%s: controller is %s, not live; will look again when it is.", c->name,
                               c->sys.state);
        c->not_live_logged = true;
}

/* apply_table() hook, right before the Set Features: the gate read the state a Get Features
 * (and, the first time, the record's fsync) ago; a reset that began since must not be raced.
 * -ENODEV when the controller left sysfs, -EAGAIN when it is not live. */
static int recheck_live(void *userdata) {
        RecordHook *h = userdata;
        Controller *c = h->c;
        int r;

        r = sysfs_read_controller(h->ctx->sysfs_root, c->name, &c->sys);
        if (r < 0)
                return log_debug_errno(r, "%s: gone from sysfs before the Set Features: %m", c->name);
        if (strcmp(c->sys.state, "live") != 0) {
                log_not_live(c, h->ctx);
                return -EAGAIN;
        }
        return 0;
}

/* A command failed with ENODEV (or the node could not be opened): is the controller being removed?
 * The kernel sets its state to "deleting" (or "dead" on a surprise removal) before its commands
 * fail and its sysfs directory goes; the removal's uevent follows, and its handler says so. */
static bool controller_leaving(const Controller *c, const ControllerContext *ctx) {
        SysCtrl sys;

        if (sysfs_read_controller(ctx->sysfs_root, c->name, &sys) < 0)
                return true;
        return strncmp(sys.state, "deleting", strlen("deleting")) == 0 || strcmp(sys.state, "dead") == 0;
}

/* apply_table() hook: ApplyTarget.leaving. */
static bool leaving_hook(void *userdata) {
        RecordHook *h = userdata;

        return controller_leaving(h->c, h->ctx);
}

/* The step failed with @error (ENODEV, or ENOENT for the node) perhaps because the controller is on
 * its way out: then it is no error, and the outcome says it is gone. Return: true when so. */
static bool outcome_leaving(const Controller *c, const ControllerContext *ctx, int error, ControllerOutcome *o) {
        if (!controller_leaving(c, ctx))
                return false;
        log_debug("%s: %s; the controller is being removed.", c->name, strerror(-error));
        o->result = CONTROLLER_GONE;
        o->error = error;
        return true;
}

/* ---- the steps ---- */

static int step_open(Controller *c, const ControllerContext *ctx, AdminHandle **ctrl, ControllerOutcome *o) {
        int r;

        if (*ctrl)
                return 0;
        r = admin_open(ctx->dev_dir, c->name, ctrl);
        if (r < 0) {
                if ((r == -ENODEV || r == -ENOENT) && outcome_leaving(c, ctx, r, o))
                        return r;
                log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                          LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", controller_model(c) },
                                     { "NVME_FIRMWARE", controller_firmware(c) }),
                          "%s: cannot open %s/%s: %m", c->name, ctx->dev_dir, c->name);
                return outcome_fail(o, CONTROLLER_STEP_OPEN, r, 0);
        }
        return 0;
}

static void log_states(const Controller *c) {
        char states[1024] = "", npss[8];
        size_t off = 0;

        for (unsigned i = 0; i <= c->id.npss && i < IDCTRL_MAX_PS; i++) {
                const IdPsd *p = &c->id.psd[i];
                int k = snprintf(states + off, sizeof states - off, "%sps%u %s %u.%02uW %u/%uus", i ? ", " : "", i,
                                 p->non_operational ? "non-op" : "op", p->max_power_uw / 1000000,
                                 (p->max_power_uw % 1000000) / 10000, p->enlat_us, p->exlat_us);
                if (k < 0)
                        break;
                off = MIN(sizeof states - 1, off + (size_t) k);
        }
        (void) snprintf(npss, sizeof npss, "%u", c->id.npss);
        log_event(LOG_INFO, 0, MSGID_CTRL_ADDED,
                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                             { "NVME_FIRMWARE", c->id.firmware }, { "NVME_NPSS", npss },
                             { "NVME_APSTA", c->id.apst_supported ? "1" : "0" }, { "NVME_POWER_STATES", states }),
                  "%s: found %s (firmware %s) with %u power state%s: %s.", c->name, c->id.model,
                  c->id.firmware[0] ? c->id.firmware : "not reported",
                  c->id.npss + 1, c->id.npss ? "s" : "", states);
}

/* Identify (once per Controller) and plan from ctx->config. */
static int step_identify(Controller *c, const ControllerContext *ctx, AdminHandle **ctrl, ControllerOutcome *o) {
        uint16_t status = 0;
        char why[160], st[16];
        int r;

        r = step_open(c, ctx, ctrl, o);
        if (r < 0)
                return r;
        r = admin_identify(*ctrl, &c->id, NULL, &status);
        if (r < 0) {
                if (r == -ENODEV && outcome_leaving(c, ctx, r, o))
                        return r;
                (void) snprintf(st, sizeof st, "0x%04x", status);
                log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                          LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->sys.model },
                                     { "NVME_FIRMWARE", c->sys.firmware },
                                     { "NVME_STATUS", r == -EREMOTEIO ? st : NULL }),
                          "%s: Identify Controller failed: %s.", c->name,
                          apply_error_to_string(r, status, why, sizeof why));
                return outcome_fail(o, CONTROLLER_STEP_IDENTIFY, r, status);
        }
        c->identified = true;
        if (ctx->mode == CONTROLLER_MODE_DAEMON)
                log_states(c);
        r = controller_replan(c, ctx, NULL);
        if (r < 0) {
                c->identified = false;   /* no plan: identify and plan again next time */
                return outcome_fail(o, CONTROLLER_STEP_PLAN, r, 0);
        }
        return 0;
}

/* The gate: is it there, is it ours, is it live? 1 to go on, 0 when the outcome is settled. */
static int step_gate(Controller *c, const ControllerContext *ctx, bool first, ControllerOutcome *o) {
        int r;

        r = sysfs_read_controller(ctx->sysfs_root, c->name, &c->sys);
        if (r < 0) {
                o->result = CONTROLLER_GONE;
                o->error = r;
                return log_debug_errno(r, "%s: gone from sysfs: %m", c->name);
        }
        if (strcmp(c->sys.transport, "pcie") != 0) {
                if (first)
                        log_event(LOG_INFO, 0, MSGID_CTRL_SKIPPED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->sys.model },
                                             { "NVME_FIRMWARE", c->sys.firmware },
                                             { "NVME_TRANSPORT", c->sys.transport }),
                                  "%s: skipped: transport %s is not PCIe.", c->name, c->sys.transport);
                c->plan.verdict = DEVICE_NOT_PCIE;
                c->identified = true;
                o->result = CONTROLLER_LEFT_ALONE;
                return 0;
        }
        if (strcmp(c->sys.state, "live") != 0) {
                /* a resetting or dead controller gets no admin command */
                log_not_live(c, ctx);
                o->result = CONTROLLER_NOT_LIVE;
                o->error = -EAGAIN;
                return ctx->mode == CONTROLLER_MODE_DAEMON ? 0 : -EAGAIN;
        }
        c->not_live_logged = false;
        return 1;
}

/* Say once why a controller is left alone; in the daemon, a re-check of an unsupported one too. */
static void log_left_alone(const Controller *c, const ControllerContext *ctx, bool first, const char *reason) {
        if (ctx->mode == CONTROLLER_MODE_PLAN)
                return;   /* the verdict is what `plan` prints */
        if (c->plan.verdict == DEVICE_UNSUPPORTED) {
                if (first)
                        log_event(LOG_INFO, 0, MSGID_APST_UNSUPPORTED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                             { "NVME_FIRMWARE", c->id.firmware }),
                                  "%s: %s does not support APST (apsta = 0); nothing to program.", c->name,
                                  c->id.model);
                else
                        log_event(LOG_INFO, 0, MSGID_APST_UNSUPPORTED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                             { "NVME_FIRMWARE", c->id.firmware }, { "APST_REASON", reason }),
                                  "%s: re-checked after %s: the controller still does not support APST.", c->name,
                                  reason);
        } else if (first)
                log_event(LOG_INFO, 0, MSGID_CTRL_SKIPPED,
                          LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                     { "NVME_FIRMWARE", c->id.firmware }),
                          "%s: left alone: %s.", c->name, device_verdict_reason(c->plan.verdict));
}

static bool learned_in_force(const Controller *c) {
        return c->have_learned && apst_worst_wake_us(&c->learned, &c->id) <= c->plan.params.max_latency_us &&
               apst_deepest(&c->learned) < c->quarantine_below;
}

const ApstTable *controller_table(const Controller *c) {
        return learned_in_force(c) ? &c->learned : &c->plan.plan.table;
}

static int step_write(Controller *c, const ControllerContext *ctx, AdminHandle *ctrl, bool first, const char *reason,
                      ControllerOutcome *o) {
        bool daemon = ctx->mode == CONTROLLER_MODE_DAEMON;
        ApplyTarget t = controller_target(c, reason);
        RecordHook hook = { .c = c, .ctx = ctx };
        const ApstTable *want = controller_table(c);
        uint32_t worst = learned_in_force(c) ? apst_worst_wake_us(want, &c->id) : c->plan.plan.worst_wake_us;
        int r;

        t.leaving = leaving_hook;
        t.userdata = &hook;
        if (daemon) {
                t.last_written = c->have_written ? &c->written : NULL;
                t.before_write = record_original;
                t.may_write = recheck_live;
        }
        r = apply_table(ctrl, &t, want, worst, daemon, &o->apply);
        if (o->apply.gone) {
                /* on its way out: the removal's event follows */
                o->result = CONTROLLER_GONE;
                o->error = o->apply.error;
                return 0;
        }
        if (o->apply.withheld) {
                /* nothing was sent: as if the gate had found it so */
                o->result = o->apply.error == -EAGAIN ? CONTROLLER_NOT_LIVE : CONTROLLER_GONE;
                o->error = o->apply.error;
                return 0;
        }
        if (daemon && o->apply.have_before && !first && apst_table_equal(&o->apply.before, want))
                log_debug("%s: re-checked after %s: table in place.", c->name, reason);
        if (r < 0) {
                (void) outcome_fail(o, CONTROLLER_STEP_WRITE, o->apply.error, o->apply.nvme_status);
                return r;
        }
        c->have_written = true;
        c->written = *want;
        o->result = CONTROLLER_PROGRAMMED;
        return 0;
}

int controller_sync(Controller *c, const ControllerContext *ctx, const char *reason, ControllerOutcome *ret) {
        _cleanup_(admin_freep) AdminHandle *ctrl = NULL;
        bool first = !c->identified;
        int r;

        *ret = (ControllerOutcome) { .failed_step = CONTROLLER_STEP_NONE };
        r = step_gate(c, ctx, first, ret);
        if (r <= 0)
                return r;
        if (!c->identified) {
                r = step_identify(c, ctx, &ctrl, ret);
                if (r < 0)
                        return r;
        }
        switch (c->plan.verdict) {
        case DEVICE_UNSUPPORTED:
        case DEVICE_DISABLED:
        case DEVICE_NOT_PCIE:
                log_left_alone(c, ctx, first, reason);
                ret->result = CONTROLLER_LEFT_ALONE;
                return 0;
        case DEVICE_MANAGE:
                break;
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                return outcome_fail(ret, CONTROLLER_STEP_PLAN, -EINVAL, 0);
        }
        if (ctx->mode == CONTROLLER_MODE_PLAN) {
                ret->result = CONTROLLER_PLANNED;
                return 0;
        }
        r = step_open(c, ctx, &ctrl, ret);
        if (r < 0)
                return r;
        return step_write(c, ctx, ctrl, first, reason, ret);
}

int controller_program(Controller *c, const ControllerContext *ctx, const ApstTable *table, const char *reason,
                       ControllerOutcome *ret) {
        uint32_t worst;

        *ret = (ControllerOutcome) { .failed_step = CONTROLLER_STEP_NONE };
        if (ctx->mode != CONTROLLER_MODE_DAEMON || !c->identified || c->plan.verdict != DEVICE_MANAGE)
                return outcome_fail(ret, CONTROLLER_STEP_PLAN, -EINVAL, 0);
        if (apst_table_check(table, &c->id) < 0)
                return outcome_fail(ret, CONTROLLER_STEP_PLAN,
                                    log_error_errno(-EINVAL, "%s: refusing an invalid table (%s).", c->name, reason),
                                    0);
        worst = apst_worst_wake_us(table, &c->id);
        if (worst > c->plan.params.max_latency_us)
                return outcome_fail(ret, CONTROLLER_STEP_PLAN,
                                    log_error_errno(-ERANGE, "%s: refusing a table (%s) whose worst wake (%u us) "
                                                             "exceeds max_latency_us = %u.",
                                                    c->name, reason, worst, c->plan.params.max_latency_us),
                                    0);
        c->learned = *table;
        c->have_learned = true;
        return controller_sync(c, ctx, reason, ret);
}

/* The measurement for this drive's model and firmware, if there is a readable one. A malformed
 * file is said once (until it reads again) and the drive planned from its descriptors. */
static bool load_calibration(Controller *c, const ControllerContext *ctx, Calibration *ret) {
        _cleanup_free_ char *err = NULL;
        int r;

        if (!ctx->state_dir || !c->id.model[0])
                return false;
        r = calib_load(ctx->state_dir, c->id.model, c->id.firmware, ret, &err);
        if (r >= 0 || r == -ENOENT) {
                c->calib_error_logged = false;
                return r >= 0;
        }
        if (!c->calib_error_logged)
                log_event(LOG_WARNING, r, MSGID_CALIBRATION_BAD,
                          LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                     { "NVME_FIRMWARE", c->id.firmware }),
                          "%s: ignoring the calibration: %s; planning from the power-state descriptors.",
                          c->name, err ? err : strerror(-r));
        c->calib_error_logged = true;
        return false;
}

/* Merge what the daemon measured passively into the stored calibration (or make one of it).
 * Return whether there is a calibration to plan with. */
static bool merge_passive(const Controller *c, bool have_calib, Calibration *calib) {
        bool any = false;

        for (unsigned ps = 0; ps <= c->id.npss && ps < IDCTRL_MAX_PS; ps++) {
                if (c->passive_exlat_us[ps] == 0)
                        continue;
                if (!have_calib && !any) {
                        *calib = (Calibration) {};
                        (void) snprintf(calib->model, sizeof calib->model, "%s", c->id.model);
                        (void) snprintf(calib->firmware, sizeof calib->firmware, "%s", c->id.firmware);
                }
                any = true;
                (void) calib_raise(calib, &c->id, (uint8_t) ps, c->passive_exlat_us[ps], c->passive_samples[ps]);
        }
        return have_calib || any;
}

/* The measured exit latencies gave another table than the descriptors: say which, and both tables. */
static void log_calibration_used(const Controller *c) {
        char states[64] = "", adv[128] = "", meas[128] = "", with[512], without[512], hex[32 * 19 + 1];
        size_t ls = 0, la = 0, lm = 0;

        for (unsigned ps = 0; ps < IDCTRL_MAX_PS; ps++) {
                if (!(c->plan.calib_raised & (1u << ps)))
                        continue;
                ls += (size_t) snprintf(states + ls, sizeof states - MIN(ls, sizeof states), "%sps%u",
                                        ls ? "," : "", ps);
                la += (size_t) snprintf(adv + la, sizeof adv - MIN(la, sizeof adv), "%s%" PRIu32, la ? "," : "",
                                        c->id.psd[ps].exlat_us);
                /* what was planned with: the saved or passive measurement, or the configuration's */
                lm += (size_t) snprintf(meas + lm, sizeof meas - MIN(lm, sizeof meas), "%s%" PRIu32,
                                        lm ? "," : "", c->plan.plan_id.psd[ps].exlat_us);
        }
        apst_describe(&c->plan.plan.table, &c->plan.plan_id, with, sizeof with);
        apst_describe(&c->plan.uncalibrated_table, &c->id, without, sizeof without);
        apst_table_to_hex(&c->plan.plan.table, hex, sizeof hex);
        log_event(LOG_NOTICE, 0, MSGID_CALIBRATION_USED,
                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                             { "NVME_FIRMWARE", c->id.firmware }, { "APST_POWER_STATE", states },
                             { "APST_ADVERTISED_EXLAT_US", adv }, { "APST_MEASURED_EXLAT_US", meas },
                             { "APST_TABLE", hex }, { "APST_TABLE_UNCALIBRATED", without }),
                  "%s: measured wake-ups changed the table: %s wakes in %s µs, not the advertised %s µs; "
                  "table %s (the descriptors alone: %s).",
                  c->name, states, meas, adv, with, without);
}

/* The same parameters from the configuration: as configured, before a hold's cap. */
static bool plan_same_configuration(const DevicePlan *a, const DevicePlan *b) {
        ApstParams x = a->params, y = b->params;

        x.max_latency_us = a->configured_max_latency_us;
        y.max_latency_us = b->configured_max_latency_us;
        return apst_params_equal(&x, &y);
}

/* The quarantine kept for this drive's vendor, model and firmware (quarantine-store.h); without a
 * state directory the one set by the caller stays. A malformed file is said and ignored. */
static void load_quarantine(Controller *c, const ControllerContext *ctx) {
        _cleanup_free_ char *err = NULL;
        Quarantine q;
        int r;

        if (!ctx->state_dir || !c->identified || !c->id.model[0])
                return;
        c->quarantine_below = QUARANTINE_NONE;
        r = quarantine_load(ctx->state_dir, c->id.model, c->id.firmware, &q, &err);
        if (r == -EINVAL)
                log_warning("%s: ignoring its quarantine file: %s", c->name, err ? err : "malformed");
        if (r < 0 || q.vendor != c->id.vid)
                return;
        c->quarantine_below = q.allow_below;
}

int controller_replan(Controller *c, const ControllerContext *ctx, bool *ret_changed) {
        DevicePlan old = c->plan;
        ApstTable old_table = *controller_table(c);
        int r;

        Calibration calib;
        bool have_calib = merge_passive(c, load_calibration(c, ctx, &calib), &calib);

        /* a quarantine (quarantine.h): planned as a drive without those states, APST off as a budget of 0 */
        IdCtrl id;
        load_quarantine(c, ctx);
        quarantine_limit_id(&c->id, c->quarantine_below, &id);
        r = device_plan_capped(ctx->config, ctx->platform, c->name, &c->sys, &id, have_calib ? &calib : NULL,
                               c->quarantine_below == QUARANTINE_APST_OFF ? 0 : c->latency_cap_us, &c->plan);
        if (r < 0)
                return log_error_errno(r, "%s: cannot plan the APST table: %m", c->name);
        if (ctx->mode == CONTROLLER_MODE_DAEMON && c->plan.calib_changed_table &&
            (!old.calib_changed_table || !apst_table_equal(&old.plan.table, &c->plan.plan.table)))
                log_calibration_used(c);
        /* What a policy learned at run time holds for the configuration it learned under; a hold's cap
         * alone changes the budget, not that (controller_table() leaves out a learned table above it). */
        if (old.verdict != c->plan.verdict || !plan_same_configuration(&old, &c->plan) ||
            (old.params.max_latency_us == c->plan.params.max_latency_us &&
             !apst_table_equal(&old.plan.table, &c->plan.plan.table)))
                c->have_learned = false;
        if (ret_changed)
                *ret_changed = old.verdict != c->plan.verdict || !apst_table_equal(&old_table, controller_table(c));
        return 0;
}

int controller_restore(Controller *c, const ControllerContext *ctx, const char *reason, ControllerOutcome *ret) {
        _cleanup_(admin_freep) AdminHandle *ctrl = NULL;
        RecordHook hook = { .c = c, .ctx = ctx };
        ApplyTarget t;
        ApstTable original;
        int r;

        *ret = (ControllerOutcome) { .result = CONTROLLER_LEFT_ALONE, .failed_step = CONTROLLER_STEP_NONE };
        if (!c->have_original)
                return 0;
        /* what is left behind keeps the quarantine: the original without its quarantined states */
        original = c->original;
        (void) quarantine_filter_table(&original, c->quarantine_below);
        /* The same gate as a write: a resetting or dead controller gets no admin command, not even
         * the original back. The record stays, so whoever next finds it live (we after a reload,
         * the next start) restores from it; the kernel's reset writes its own table meanwhile. */
        r = sysfs_read_controller(ctx->sysfs_root, c->name, &c->sys);
        if (r < 0) {
                ret->result = CONTROLLER_GONE;
                ret->error = r;
                return log_debug_errno(r, "%s: gone from sysfs: %m", c->name);
        }
        if (strcmp(c->sys.state, "live") != 0) {
                log_warning("%s: controller is %s, not live; its original APST table is not put back now "
                            "(kept in %s for the next start).", c->name, c->sys.state,
                            ctx->record_dir ? ctx->record_dir : "the runtime directory");
                ret->result = CONTROLLER_NOT_LIVE;
                ret->error = -EAGAIN;
                return 0;
        }
        r = step_open(c, ctx, &ctrl, ret);
        if (r < 0)
                return r;
        if (!c->have_written || apst_table_equal(&c->written, &c->original)) {
                /* Never written and verified by us, yet recorded (a write failed half-way, or a
                 * predecessor's table is still there), or what we keep is what we found (the table
                 * was already in place at start): put back the original unless the drive still holds
                 * it. Either way the record goes only once the drive holds it. */
                ApstTable now;
                if (admin_get_apst(ctrl, &now, NULL) >= 0 && apst_table_equal(&now, &original)) {
                        c->have_written = false;
                        c->have_original = false;
                        original_forget(ctx, c);
                        ret->in_place = true;
                        log_info("%s: the controller holds the APST table it had before; nothing written (%s).",
                                 c->name, reason);
                        return 0;
                }
        }
        t = controller_target(c, reason);
        t.leaving = leaving_hook;
        t.userdata = &hook;
        r = apply_restore(ctrl, &t, &original);
        if (r < 0) {
                if (r == -ENODEV && outcome_leaving(c, ctx, r, ret))
                        return r;
                return outcome_fail(ret, CONTROLLER_STEP_WRITE, r, 0);
        }
        c->have_written = false;
        c->have_original = false;
        original_forget(ctx, c);
        ret->result = CONTROLLER_RESTORED;
        return 0;
}

void controller_forget(Controller *c, const ControllerContext *ctx) {
        original_forget(ctx, c);
}

void controller_status(const Controller *c, bool failed, char *buf, size_t n) {
        char s[256];

        if (failed)
                (void) snprintf(buf, n, "failed");
        else if (!c->identified)
                (void) snprintf(buf, n, "not ready (%s)", c->sys.state);
        else if (c->plan.verdict == DEVICE_MANAGE) {
                apst_summary(controller_table(c), s, sizeof s);
                (void) snprintf(buf, n, "%s, %s", apst_policy_to_string(c->plan.params.policy), s);
        } else
                (void) snprintf(buf, n, "%s",
                                c->plan.verdict == DEVICE_UNSUPPORTED ? "APST unsupported"
                                : c->plan.verdict == DEVICE_DISABLED   ? "left alone (enable = no)"
                                                                       : "not PCIe");
}
