/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The controller engine: the only code that takes one NVMe controller from
 * its sysfs snapshot through the gate (PCIe? live?), Identify, the plan
 * (device_plan()), and the write with its verification -- or the restore of
 * the table found before the daemon first wrote -- to a ControllerOutcome.
 * `run`, `apply` and `plan` call it; `simulate` shares its planning step
 * (device_plan()). Each event is logged here, once; callers print or retry
 * from the outcome and do not log the same event again.
 *
 * The device node is opened inside each call and closed before it returns:
 * commands are rare (start, reset, resume, reload), an open() is cheap, a
 * fresh open never talks to a node that went away underneath, and a machine
 * (or a test harness) with many controllers is not charged one descriptor per
 * controller.
 */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apply.h"
#include "apst.h"
#include "config.h"
#include "device.h"
#include "idctrl.h"
#include "quarantine.h"

typedef enum ControllerMode {
        CONTROLLER_MODE_PLAN,      /* `plan`: gate, Identify, plan; nothing written, verdicts not logged */
        CONTROLLER_MODE_APPLY,     /* `apply`: one shot, always write and verify */
        CONTROLLER_MODE_DAEMON,    /* `run`: kept across calls; skip the write when the table is in place,
                                    * record the original table, log first sightings once */
        _CONTROLLER_MODE_MAX,
        _CONTROLLER_MODE_INVALID = -EINVAL,
} ControllerMode;

/* What one call needs to know about the world; owned by the caller. */
typedef struct ControllerContext {
        ControllerMode mode;
        const char *sysfs_root;    /* "/sys" */
        const char *dev_dir;       /* "/dev" */
        const Config *config;
        const SysPlatform *platform;
        const char *record_dir;    /* daemon: where ctrl-NAME.orig goes ($RUNTIME_DIRECTORY); else NULL */
        const char *state_dir;     /* where measured wake costs are read (calib.h); NULL: none are used */
} ControllerContext;

/* One controller as the engine knows it; the daemon keeps it between calls. */
typedef struct Controller {
        char name[PATH_MAX];       /* "nvme0", or the Identify file `plan --id-ctrl` read */
        SysCtrl sys;
        IdCtrl id;
        bool identified;           /* Identify done (or not PCIe: nothing to identify) */
        DevicePlan plan;
        bool have_original;        /* original: the table found before the daemon first wrote */
        ApstTable original;
        bool have_written;         /* written: what the daemon last wrote and verified */
        ApstTable written;
        bool have_learned;         /* learned: a run-time policy's table (adaptive), written instead of
                                    * plan's by every later sync (reset, resume, verify) until a replan
                                    * changes the parameters, verdict or planned table */
        ApstTable learned;
        uint32_t latency_cap_us;   /* the latency holds' cap on the budget (DEVICE_NO_CAP: none): planned
                                    * with by controller_replan(); the daemon sets it between steps */
        bool not_live_logged;      /* "not live" said once until it is live again */
        bool calib_error_logged;   /* a malformed calibration file said once until it reads again */
        /* Exit latencies the daemon measured passively (the eBPF source, passive-calib.h), µs per
         * state, 0 = none: planned with like a stored calibration's (the larger of the two wins). */
        uint32_t passive_exlat_us[IDCTRL_MAX_PS];
        uint32_t passive_samples[IDCTRL_MAX_PS];
        /* The quarantine in force (quarantine.h, doc/quarantine.md): states from this one on are left out of
         * every table planned, learned or put back at stop; QUARANTINE_NONE: none, QUARANTINE_APST_OFF: APST
         * off. The daemon sets it between steps, from the state directory's file. */
        uint8_t quarantine_below;
} Controller;

typedef enum ControllerResult {
        CONTROLLER_GONE,           /* not in sysfs any more */
        CONTROLLER_NOT_LIVE,       /* resetting, connecting, dead...: nothing sent */
        CONTROLLER_LEFT_ALONE,     /* not PCIe, apsta = 0 or enable = no: see plan.verdict */
        CONTROLLER_PLANNED,        /* CONTROLLER_MODE_PLAN: identified and planned */
        CONTROLLER_PROGRAMMED,     /* written and verified, or found in place */
        CONTROLLER_RESTORED,       /* the original table written back and verified */
        CONTROLLER_FAILED,         /* see step, error, nvme_status */
        _CONTROLLER_RESULT_MAX,
        _CONTROLLER_RESULT_INVALID = -EINVAL,
} ControllerResult;

typedef enum ControllerStep {
        CONTROLLER_STEP_NONE,
        CONTROLLER_STEP_OPEN,
        CONTROLLER_STEP_IDENTIFY,
        CONTROLLER_STEP_PLAN,
        CONTROLLER_STEP_WRITE,     /* apply_table() or apply_restore(); details in .apply */
        _CONTROLLER_STEP_MAX,
        _CONTROLLER_STEP_INVALID = -EINVAL,
} ControllerStep;

typedef struct ControllerOutcome {
        ControllerResult result;
        ControllerStep failed_step;
        int error;                 /* negative errno; -EREMOTEIO: nvme_status holds the NVMe status */
        uint16_t nvme_status;
        ApplyResult apply;         /* CONTROLLER_STEP_WRITE reached: what apply_table() said */
        bool in_place;             /* controller_restore(): the original found in place, nothing written */
} ControllerOutcome;

void controller_init(Controller *c, const char *name);

/* Model and firmware as best known: from Identify once done, else from sysfs. */
const char *controller_model(const Controller *c);
const char *controller_firmware(const Controller *c);

/**
 * controller_sync() - bring one controller to its planned state
 * @reason: why now ("start", "apply", "reset", "resume", "reload", "verify", "retry", ...)
 *
 * Reads the controller's sysfs snapshot, gates on transport and state,
 * identifies it (once per Controller), plans it, and -- unless the mode is
 * CONTROLLER_MODE_PLAN or the verdict leaves it alone -- writes and verifies
 * the planned table.
 * Return: 0, or the negative errno of the failed step (also in @ret).
 */
int controller_sync(Controller *c, const ControllerContext *ctx, const char *reason, ControllerOutcome *ret);

/**
 * controller_program() - write @table, a run-time policy's choice, instead of the plan's
 * @reason: why now ("adaptive")
 *
 * The table is checked first: it must be valid for this controller (apst_table_check())
 * and its worst wake (enlat + exlat of every reachable state) must stay within the plan's
 * max_latency_us; else -ERANGE/-EINVAL and nothing changes. It is then kept as the
 * learned table, so later syncs (a kernel overwrite after a reset, resume, verification,
 * retry) write it rather than the initial plan, and written exactly as controller_sync()
 * writes (the original recorded before the first write, verified, restored at stop).
 * Only for a managed (DEVICE_MANAGE), identified controller in CONTROLLER_MODE_DAEMON.
 * Return: as controller_sync().
 */
int controller_program(Controller *c, const ControllerContext *ctx, const ApstTable *table, const char *reason,
                       ControllerOutcome *ret);

/* The table controller_sync() writes: the learned one while it fits the budget in force (a latency
 * hold may have lowered it: the learned table is kept, and comes back when the hold ends), else
 * the plan's. */
const ApstTable *controller_table(const Controller *c);

/**
 * controller_replan() - plan again from ctx->config (after a reload); pure
 * The learned table is dropped when the verdict, the parameters or the planned table change
 * (the configuration changed), and kept otherwise.
 * @ret_changed: the table controller_sync() would write (or the verdict) changed
 */
int controller_replan(Controller *c, const ControllerContext *ctx, bool *ret_changed);

/**
 * controller_restore() - give back the table found before the daemon first wrote
 *
 * Nothing to do without an original. When nothing was written and verified
 * (a write failed half-way, or a predecessor's table is still there), or what
 * was written is the original (it was in place at start), the table is read
 * first and nothing is written if the original is in place (@ret->in_place).
 * The record of the original is removed once the drive holds it. A controller
 * that is not live gets nothing (as controller_sync()'s gate): the record stays.
 * Return: 0 (@ret->result CONTROLLER_RESTORED, CONTROLLER_NOT_LIVE, or
 * CONTROLLER_LEFT_ALONE when nothing had to be written) or negative errno.
 */
int controller_restore(Controller *c, const ControllerContext *ctx, const char *reason, ControllerOutcome *ret);

/* The controller went away: forget its record of the original table. */
void controller_forget(Controller *c, const ControllerContext *ctx);

/* The STATUS= words for one controller: "APST unsupported", "budget, ps3 after 100 ms..." */
void controller_status(const Controller *c, bool failed, char *buf, size_t n);
