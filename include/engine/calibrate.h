/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Measuring how long each non-operational power state really takes to wake, one controller at a
 * time (doc/calibrate.md): the sequence `nvme-apstd calibrate` runs, returning data only. The
 * verb keeps its options, the lock and every word it prints; this file sends the commands.
 *
 * The sequence: gate (PCIe, live), Identify, the device's plan (left alone, quirks), the states
 * calib-plan.c picks, the namespace to read from, the busy check; then one Read before any table
 * changes, Get Features 0x0C and the original table recorded in RECORD_DIR/ctrl-NAME.orig
 * (record_ctrl_path()) before anything is written; per state a temporary table and timed Reads;
 * and the original table put back on every path once it was recorded, the record dropped when
 * that worked. Commands sent: Identify CNS 01h, Get Features 0x0C, Set Features 0x0C (never
 * saved), Read of one block (through the only nvme-admin.c handle that may).
 */

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apst.h"
#include "calib.h"
#include "config.h"
#include "device.h"
#include "idctrl.h"
#include "sysinfo.h"

/* The busy pre-check: I/O counters read this far apart must not move. */
#define CALIBRATE_BUSY_CHECK_MS 1000u

typedef enum CalibrateVerdict {
        CALIBRATE_MEASURED,        /* measuring ran: see measure_error and restored */
        CALIBRATE_SKIPPED,         /* not PCIe */
        CALIBRATE_LEFT_ALONE,      /* the plan leaves it alone (left_alone), or the kernel's quirk (quirk_no_apst) */
        CALIBRATE_NOTHING,         /* no non-operational state a policy may use */
        CALIBRATE_BUSY,            /* the block counters moved (busy_ios) and force was not given */
        CALIBRATE_STOPPED,         /* *stop was set before any table changed */
        CALIBRATE_FAILED,          /* failed_step, error, nvme_status; no table changed */
        _CALIBRATE_VERDICT_MAX,
        _CALIBRATE_VERDICT_INVALID = -EINVAL,
} CalibrateVerdict;

/* The step that failed before any table changed (CALIBRATE_FAILED). */
typedef enum CalibrateStep {
        CALIBRATE_STEP_NONE,
        CALIBRATE_STEP_STATE,      /* the controller is not live (sys->state) */
        CALIBRATE_STEP_OPEN,       /* DEV_DIR/NAME */
        CALIBRATE_STEP_IDENTIFY,
        CALIBRATE_STEP_PLAN,
        CALIBRATE_STEP_NAMESPACE,  /* error -ENOENT: none in sysfs */
        CALIBRATE_STEP_FIRST_READ, /* of dev */
        CALIBRATE_STEP_GET_FEATURES,
        CALIBRATE_STEP_RECORD,     /* the original table could not be recorded in record */
        CALIBRATE_STEP_MEMORY,
        _CALIBRATE_STEP_MAX,
        _CALIBRATE_STEP_INVALID = -EINVAL,
} CalibrateStep;

typedef struct CalibrateStateResult {
        CalibState st;
        bool complete;             /* all samples taken */
} CalibrateStateResult;

typedef struct CalibrateResult {
        CalibrateVerdict verdict;
        CalibrateStep failed_step;
        int error;                 /* negative errno of failed_step; -EREMOTEIO: nvme_status */
        uint16_t nvme_status;
        DeviceVerdict left_alone;  /* CALIBRATE_LEFT_ALONE by the plan; DEVICE_MANAGE when by the quirk */
        uint64_t busy_ios;         /* CALIBRATE_BUSY: I/Os seen in CALIBRATE_BUSY_CHECK_MS */
        size_t n_targets;          /* the states to measure */
        uint64_t estimate_us;      /* how long calib-plan.c expects measuring them to take */
        IdCtrl id;                 /* from CALIBRATE_STEP_PLAN on */
        char dev[64];              /* the namespace read from */
        char record[PATH_MAX];     /* the original table's record */
        bool from_record;          /* the original came from a record a previous run left */
        /* CALIBRATE_MEASURED: */
        CalibrateStateResult states[IDCTRL_MAX_PS];
        size_t n_states;           /* states with results */
        uint32_t awake_median_us;
        size_t n_awake;            /* awake Reads timed */
        int measure_error;         /* 0; -EINTR (*stop); -ETIME (deadline); or the failed command's errno */
        uint16_t measure_status;
        uint8_t failed_ps;         /* the state being measured when measure_error was met */
        bool restored;             /* the original table is back (else it stays recorded in record) */
        int restore_error;
        uint16_t restore_status;
} CalibrateResult;

/* What the sequence tells its caller while it runs, in this order (each at most once but SAMPLE). */
typedef enum CalibrateEventKind {
        CALIBRATE_EVENT_OVER_TIME,      /* before any command to the drive: estimate_us exceeds the deadline */
        CALIBRATE_EVENT_RECORD_IGNORED, /* a record exists but is unusable (@error); the table found is the original */
        CALIBRATE_EVENT_FROM_RECORD,    /* a previous run did not put its table back: its record is the original */
        CALIBRATE_EVENT_SAMPLE,         /* about to take sample @sample (from 1) of @ps */
        CALIBRATE_EVENT_MEASURED,       /* measuring ended (measure_* set), before the original goes back */
        CALIBRATE_EVENT_RECORD_KEPT,    /* the original is back, but removing the record failed (@error) */
        _CALIBRATE_EVENT_KIND_MAX,
        _CALIBRATE_EVENT_KIND_INVALID = -EINVAL,
} CalibrateEventKind;

typedef struct CalibrateEvent {
        CalibrateEventKind kind;
        const CalibrateResult *result;  /* what is known so far */
        uint8_t ps;
        unsigned sample;
        int error;
} CalibrateEvent;

typedef void (*CalibrateProgress)(const CalibrateEvent *ev, void *userdata);

/* How the measuring reaches the drive: nvme-admin.c's handles, or a test's fake. */
typedef struct CalibrateIo {
        int (*read_block)(void *userdata, uint16_t *ret_status);                   /* one block of the namespace */
        int (*get_apst)(void *userdata, ApstTable *ret, uint16_t *ret_status);
        int (*set_apst_verified)(void *userdata, const ApstTable *t, uint16_t *ret_status);
        void *userdata;
} CalibrateIo;

typedef struct CalibrateRequest {
        const SysCtrl *sys;
        const Config *config;
        const SysPlatform *platform;
        const char *sysfs_root;
        const char *dev_dir;
        const char *record_dir;    /* where the original table is recorded ($RUNTIME_DIRECTORY) */
        unsigned samples;          /* per state, 1..CALIB_SAMPLES_MAX */
        bool force;                /* measure a busy drive */
        uint64_t deadline_usec;    /* CLOCK_MONOTONIC: no sample starts that would end after it */
        const volatile sig_atomic_t *stop; /* nonzero (a signal): stop measuring, put the table back */
} CalibrateRequest;

/**
 * calibrate_controller() - measure one controller's wake-up costs and put its table back
 * @progress: called from the thread this runs in, may be NULL
 * @ret: the outcome, whatever the verdict (zeroed first)
 * Return: 0 when the sequence ran to its end (any verdict but CALIBRATE_FAILED, and then every
 * table it changed is back or recorded); the negative errno of the failed step otherwise.
 */
int calibrate_controller(const CalibrateRequest *req, CalibrateProgress progress, void *userdata,
                         CalibrateResult *ret);

/**
 * calibrate_sequence() - calibrate_controller() from the first Read on, over @io
 * @targets, @n: the states to measure; @ret->id must be set, and @ret->record names the record
 *
 * For tests and for calibrate_controller(). Return: as calibrate_controller().
 */
int calibrate_sequence(const CalibrateRequest *req, const CalibrateIo *io, const uint8_t *targets, size_t n,
                       CalibrateProgress progress, void *userdata, CalibrateResult *ret);
