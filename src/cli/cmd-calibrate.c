/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd calibrate [nvmeX...]`: measure how long each non-operational
 * power state really takes to wake (doc/calibrate.md).
 *
 * For each controller: Identify; Get Features 0x0C (the original table,
 * recorded in $RUNTIME_DIRECTORY/ctrl-NAME.orig before anything is written,
 * like the daemon does); then for each state a temporary table that enters
 * only that state after CALIB_ITPT_MS of idleness, and per sample one timed
 * Read of one block on the awake drive, an idle wait past ITPT + entry
 * latency, and one timed Read that wakes it. Then the original table goes
 * back (also on SIGINT/SIGTERM) and the record is removed. A record left by
 * a run that was killed is found by the next `calibrate` or daemon start and
 * used as the original. The statistics and the table are calib-plan.c's.
 *
 * Commands sent: Identify CNS 01h, Get Features 0x0C, Set Features 0x0C
 * (never saved), Read (one block, through the only nvme-admin.c handle that may).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apply.h"
#include "apst-record.h"
#include "apstd-ids.h"
#include "calib-plan.h"
#include "calib-store.h"
#include "cli.h"
#include "clock.h"
#include "config-build.h"
#include "cpupin.h"
#include "ctrljob.h"
#include "nvme-admin.h"
#include "device.h"
#include "json-out.h"
#include "log.h"
#include "record-file.h"
#include "runlock.h"
#include "state-file.h"
#include "sysfs.h"
#include "util.h"
#include "verbs.h"

/* The busy pre-check: I/O counters read this far apart must not move. */
#define BUSY_CHECK_MS 1000u

static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
        got_signal = sig;
}

typedef struct Options {
        unsigned samples;
        uint32_t max_time_s;
        bool force;
        bool json;
        bool no_save;
        bool progress;
        const char *config_path;
        const char *state_dir;
} Options;

typedef struct Run {
        const Options *opt;
        uint64_t deadline_usec;
        struct json_object *json_ctrls;
} Run;

static void help(void) {
        printf("Usage: nvme-apstd calibrate [OPTIONS] [nvmeX...]\n\n"
               "Measure how long each non-operational power state takes to wake: a temporary APST table\n"
               "enters one state at a time, and one-block reads on the awake and on the sleeping drive are\n"
               "timed. The original table is put back afterwards (also on SIGINT/SIGTERM). Refuses to run\n"
               "while the daemon runs, and on a drive doing I/O.\n\n"
               "  -n --samples N     samples per state (default %u, 1..%u)\n"
               "     --max-time SEC  stop measuring after SEC seconds (default %u)\n"
               "     --force         measure a drive that is doing I/O\n"
               "     --json          print the results as JSON\n"
               "     --no-save       do not save the results for the policies\n"
               "     --state-dir DIR where results are saved (default $STATE_DIRECTORY, else /var/lib/nvme-apstd)\n"
               "  -c --config FILE   configuration file (default: %s/nvme-apstd.conf): quirks, force, enable\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "Exit status: 0 measured and put back; 1 a controller failed or was refused; 2 usage;\n"
               "128+N stopped by signal N (the original table put back first).\n",
               CALIB_SAMPLES_DEFAULT, CALIB_SAMPLES_MAX, CALIB_MAX_TIME_DEFAULT_S, SYSCONFDIR);
}

/* Sleep @usec unless a signal arrives. Return: 0, or -EINTR after a signal. */
static int sleep_usec(uint64_t usec) {
        struct timespec ts = { .tv_sec = (time_t) (usec / 1000000u), .tv_nsec = (long) (usec % 1000000u) * 1000 };

        while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
                if (got_signal)
                        return -EINTR;
        return got_signal ? -EINTR : 0;
}

/* One timed Read. Return: 0 (*ret_us the time it took) or negative errno. */
static int timed_read(Ctrl *ns, uint16_t *status, uint32_t *ret_us) {
        uint64_t t0 = now_usec(), t1;
        int r;

        r = ctrl_read_block(ns, 0, status);
        t1 = now_usec();
        if (r < 0)
                return r;
        *ret_us = (uint32_t) MIN(t1 - t0, (uint64_t) UINT32_MAX);
        return 0;
}

typedef struct StateResult {
        CalibState st;
        bool complete;             /* all samples taken */
} StateResult;

static void progress(const Run *run, const char *name, unsigned ps, unsigned k) {
        if (!run->opt->progress)
                return;
        fprintf(stderr, "\r%s: ps%u sample %u/%u ", name, ps, k, run->opt->samples);
        fflush(stderr);
}

/*
 * Measure one state with the temporary table in place. Per sample: a Read right after a Read
 * (awake), an idle wait, a Read that wakes the drive. Return: 0, -EINTR (signal), -ETIME
 * (--max-time), negative errno of a command.
 */
static int measure_state(const Run *run, Ctrl *admin, Ctrl *ns, const IdCtrl *id, uint8_t ps, uint32_t *awake,
                         size_t *n_awake, StateResult *ret, uint16_t *status) {
        _cleanup_free_ uint32_t *asleep = calloc(run->opt->samples, sizeof *asleep);
        _cleanup_free_ uint32_t *costs = calloc(run->opt->samples, sizeof *costs);
        _cleanup_free_ uint32_t *here = calloc(run->opt->samples, sizeof *here);
        const IdPsd *p = &id->psd[ps];
        uint64_t wait = calib_idle_wait_us(CALIB_ITPT_MS, p->enlat_us);
        uint32_t awake_median, dummy;
        ApstTable t;
        unsigned k;
        int r = 0;

        if (!asleep || !costs || !here)
                return -ENOMEM;
        calib_temp_table(id, ps, CALIB_ITPT_MS, &t);
        r = apply_set_verified(admin, &t, status);
        if (r < 0)
                return r;
        /* the idle timer runs from the last I/O: start it with a read of its own */
        r = timed_read(ns, status, &dummy);
        if (r < 0)
                return r;
        for (k = 0; k < run->opt->samples; k++) {
                if (got_signal) {
                        r = -EINTR;
                        break;
                }
                if (now_usec() + wait > run->deadline_usec) {
                        r = -ETIME;
                        break;
                }
                progress(run, ctrl_name(admin), ps, k + 1);
                r = timed_read(ns, status, &here[k]);
                if (r < 0)
                        return r;
                r = sleep_usec(wait);
                if (r < 0)
                        break;
                r = timed_read(ns, status, &asleep[k]);
                if (r < 0)
                        return r;
        }
        memcpy(awake + *n_awake, here, k * sizeof *here);
        *n_awake += k;
        awake_median = calib_median(here, k);
        calib_wake_costs(asleep, k, awake_median, costs);
        ret->st = (CalibState) {
                .ps = ps,
                .advertised_enlat_us = p->enlat_us,
                .advertised_exlat_us = p->exlat_us,
                .samples = k,
        };
        ret->st.wake_median_us = calib_median(costs, k);
        ret->st.wake_p99_us = calib_percentile(costs, k, 99);
        ret->complete = k == run->opt->samples;
        return r;
}

/* Are the drive's block counters moving? Return: 1 busy (*ret_ios I/Os seen), 0 idle, -EINTR. */
static int busy_check(const char *name, uint64_t *ret_ios) {
        uint64_t a = 0, b = 0;
        int r;

        if (sysfs_ctrl_io_count(arg_sysfs_root, name, &a) < 0)
                return 0;      /* no counters to look at: sysfs_ctrl_namespace() decides next */
        r = sleep_usec((uint64_t) BUSY_CHECK_MS * 1000);
        if (r < 0)
                return r;
        if (sysfs_ctrl_io_count(arg_sysfs_root, name, &b) < 0)
                return 0;
        *ret_ios = b - a;
        return b != a;
}

static void print_results(const SysCtrl *sys, const IdCtrl *id, uint32_t awake_median, size_t n_awake,
                          const StateResult *res, size_t n) {
        printf("%s: %s (firmware %s): awake read %" PRIu32 " µs (median of %zu)\n", sys->name, id->model,
               id->firmware, awake_median, n_awake);
        printf("  ps   enlat µs   exlat µs  samples  wake median µs  wake p99 µs  measured/advertised\n");
        for (size_t i = 0; i < n; i++) {
                const CalibState *s = &res[i].st;
                double ratio = calib_ratio(s->wake_median_us, s->advertised_exlat_us);
                char rs[32];

                if (ratio < 0)
                        (void) snprintf(rs, sizeof rs, "(exlat not reported)");
                else
                        (void) snprintf(rs, sizeof rs, "%.2f", ratio);
                printf("  %2u %10" PRIu32 " %10" PRIu32 " %8" PRIu32 " %15" PRIu32 " %12" PRIu32 "  %s%s\n", s->ps,
                       s->advertised_enlat_us, s->advertised_exlat_us, s->samples, s->wake_median_us, s->wake_p99_us,
                       rs, res[i].complete ? "" : " (incomplete)");
        }
}

static struct json_object *json_results(const SysCtrl *sys, const IdCtrl *id, uint32_t awake_median,
                                        const StateResult *res, size_t n, bool restored, const char *saved,
                                        const char *error) {
        struct json_object *o = json_object_new_object(), *states = json_object_new_array();

        json_object_object_add(o, "name", json_object_new_string(sys->name));
        json_object_object_add(o, "model", json_object_new_string(id->model));
        json_object_object_add(o, "firmware", json_object_new_string(id->firmware));
        json_object_object_add(o, "awake_median_us", json_object_new_int64(awake_median));
        for (size_t i = 0; i < n; i++) {
                const CalibState *s = &res[i].st;
                struct json_object *e = json_object_new_object();
                double ratio = calib_ratio(s->wake_median_us, s->advertised_exlat_us);

                json_object_object_add(e, "ps", json_object_new_int(s->ps));
                json_object_object_add(e, "advertised_enlat_us", json_object_new_int64(s->advertised_enlat_us));
                json_object_object_add(e, "advertised_exlat_us", json_object_new_int64(s->advertised_exlat_us));
                json_object_object_add(e, "samples", json_object_new_int64(s->samples));
                json_object_object_add(e, "wake_median_us", json_object_new_int64(s->wake_median_us));
                json_object_object_add(e, "wake_p99_us", json_object_new_int64(s->wake_p99_us));
                json_object_object_add(e, "ratio", ratio < 0 ? NULL : json_out_fixed(ratio, 2));
                json_object_object_add(e, "complete", json_object_new_boolean(res[i].complete));
                json_object_array_add(states, e);
        }
        json_object_object_add(o, "states", states);
        json_object_object_add(o, "restored", json_object_new_boolean(restored));
        json_object_object_add(o, "saved", json_out_string_or_null(saved));
        json_object_object_add(o, "error", json_out_string_or_null(error));
        return o;
}

static int save_results(const Run *run, const IdCtrl *id, uint32_t awake_median, const StateResult *res, size_t n,
                        char **ret_path) {
        Calibration cal = { .awake_median_us = awake_median };
        struct timespec ts;
        int r;

        (void) snprintf(cal.model, sizeof cal.model, "%s", id->model);
        (void) snprintf(cal.firmware, sizeof cal.firmware, "%s", id->firmware);
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        cal.measured_realtime_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        for (size_t i = 0; i < n && cal.n_states < ELEMENTSOF(cal.states); i++)
                if (res[i].st.samples > 0)
                        cal.states[cal.n_states++] = res[i].st;
        r = calib_save(run->opt->state_dir, &cal);
        if (r < 0)
                return r;
        return calib_path(run->opt->state_dir, cal.model, cal.firmware, ret_path);
}

/* Put @orig back and drop the record. Return: 0 or negative errno (the record is kept then). */
static int restore(Ctrl *admin, const ApstTable *orig, const char *record, uint16_t *status) {
        int r;

        r = apply_set_verified(admin, orig, status);
        if (r < 0)
                return r;
        r = record_remove(record);
        if (r < 0)
                log_warning_errno(r, "%s: original table put back, but cannot remove %s: %m", ctrl_name(admin), record);
        return 0;
}

static const char *error_words(int r, uint16_t status, char *buf, size_t n) {
        if (r == -EREMOTEIO)
                (void) snprintf(buf, n, "NVMe status 0x%04x (%s)", status, ctrl_status_to_string(status));
        else if (r == -EBADMSG)
                (void) snprintf(buf, n, "the table read back differs from the one written");
        else
                (void) snprintf(buf, n, "%s", strerror(-r));
        return buf;
}

/* One controller on its way through calibrate. */
typedef struct CalibCtrl {
        const SysCtrl *sys;
        FILE *out;                 /* where the words go: stdout, or stderr with --json */
        Ctrl *admin, *ns;
        IdCtrl id;
        uint8_t ps[IDCTRL_MAX_PS]; /* the states to measure */
        size_t n;
        char dev[64];              /* the namespace read from */
        char record[PATH_MAX];     /* the original table's record */
        ApstTable orig;
} CalibCtrl;

/* calibrate_prepare() and calibrate_take_original(): go on to the next step. */
#define CALIB_GO (-1)

/* Gate, open, Identify, plan, the states to measure, the namespace, the busy check.
 * Return: CALIB_GO, or this controller's result (0 left alone, 1 failed or refused: reported, 128+signal). */
static int calibrate_prepare(Run *run, const Config *cfg, const SysPlatform *plat, CalibCtrl *cc) {
        const SysCtrl *sys = cc->sys;
        FILE *out = cc->out;
        uint32_t nsid = 0, lba = 0;
        uint64_t ios = 0, estimate;
        uint16_t status = 0;
        DevicePlan plan;
        char why[256];
        int r;

        if (strcmp(sys->transport, "pcie") != 0) {
                fprintf(out, "%s: skipped (transport %s is not PCIe)\n", sys->name, sys->transport);
                return 0;
        }
        if (strcmp(sys->state, "live") != 0) {
                fprintf(out, "%s: FAILED (controller is %s, not live)\n", sys->name, sys->state);
                return 1;
        }
        r = ctrl_open(arg_dev_dir, sys->name, &cc->admin);
        if (r < 0) {
                fprintf(out, "%s: FAILED (cannot open %s/%s: %s)\n", sys->name, arg_dev_dir, sys->name, strerror(-r));
                return 1;
        }
        r = ctrl_identify(cc->admin, &cc->id, NULL, &status);
        if (r < 0) {
                fprintf(out, "%s: FAILED (Identify Controller: %s)\n", sys->name, error_words(r, status, why, sizeof why));
                return 1;
        }
        r = device_plan(cfg, plat, sys->name, sys, &cc->id, &plan);
        if (r < 0) {
                fprintf(out, "%s: FAILED (cannot plan: %s)\n", sys->name, strerror(-r));
                return 1;
        }
        if (plan.verdict != DEVICE_MANAGE) {
                fprintf(out, "%s: left alone (%s)\n", sys->name, device_verdict_reason(plan.verdict));
                return 0;
        }
        if ((plan.plan.quirks & APST_QUIRK_NO_APST) && !plan.params.force) {
                fprintf(out, "%s: left alone (the kernel's quirk list disables APST on this drive; force = yes overrides)\n",
                       sys->name);
                return 0;
        }
        cc->n = calib_targets(&cc->id, plan.plan.quirks, plan.params.force, cc->ps);
        if (cc->n == 0) {
                fprintf(out, "%s: nothing to measure (no non-operational power state a policy may use)\n", sys->name);
                return 0;
        }
        r = sysfs_ctrl_namespace(arg_sysfs_root, sys->name, cc->dev, sizeof cc->dev, &nsid, &lba);
        if (r >= 0)
                r = ctrl_open_namespace(arg_dev_dir, cc->dev, nsid, lba, &cc->ns);
        if (r < 0) {
                fprintf(out, "%s: FAILED (no namespace to read from: %s)\n", sys->name,
                       r == -ENOENT ? "none in sysfs" : strerror(-r));
                return 1;
        }
        r = busy_check(sys->name, &ios);
        if (r == -EINTR)
                return 128 + got_signal;
        if (r > 0 && !run->opt->force) {
                fprintf(out, "%s: refused: busy (%" PRIu64 " I/Os completed in %u ms); the wake-up would be lost in the "
                       "workload's own I/O. Run it when the drive is idle, or with --force.\n",
                       sys->name, ios, BUSY_CHECK_MS);
                return 1;
        }
        estimate = calib_estimate_us(&cc->id, cc->ps, cc->n, run->opt->samples, CALIB_ITPT_MS);
        if (now_usec() + estimate > run->deadline_usec)
                log_warning("%s: measuring %zu state%s with %u samples may take %" PRIu64
                            " s, more than --max-time leaves; the last states may be incomplete.",
                            sys->name, cc->n, cc->n == 1 ? "" : "s", run->opt->samples, estimate / 1000000 + 1);
        return CALIB_GO;
}

/* One Read before any table changes (a drive or kernel that refuses it costs nothing), then the original
 * table, recorded before anything is written. Return: CALIB_GO, or 1 (reported; table unchanged). */
static int calibrate_take_original(CalibCtrl *cc, const char *runtime_dir) {
        const char *name = cc->sys->name;
        uint16_t status = 0;
        bool from_record;
        ApstTable found;
        char why[256];
        int r, load_error;

        r = ctrl_read_block(cc->ns, 0, &status);
        if (r < 0) {
                fprintf(cc->out, "%s: FAILED (Read of one block of %s: %s); table unchanged\n", name, cc->dev,
                        error_words(r, status, why, sizeof why));
                return 1;
        }
        r = ctrl_get_apst(cc->admin, &found, &status);
        if (r < 0) {
                fprintf(cc->out, "%s: FAILED (Get Features 0x0C: %s); table unchanged\n", name,
                        error_words(r, status, why, sizeof why));
                return 1;
        }
        (void) snprintf(cc->record, sizeof cc->record, "%s/ctrl-%s.orig", runtime_dir, name);
        r = apst_record_take_original(cc->record, &cc->id, &found, &cc->orig, &from_record, &load_error);
        if (from_record)
                fprintf(cc->out, "%s: a previous run did not put its table back; using the original it recorded in %s\n",
                        name, cc->record);
        else if (load_error < 0)
                log_warning_errno(load_error, "%s: ignoring %s: %m", name, cc->record);
        if (r < 0) {
                fprintf(cc->out, "%s: FAILED (cannot record the original table in %s: %s); table unchanged\n", name,
                        cc->record, strerror(-r));
                return 1;
        }
        return CALIB_GO;
}

/* What measuring found, for the report. */
typedef struct CalibOutcome {
        StateResult res[IDCTRL_MAX_PS];
        size_t n_done;             /* states with results */
        uint32_t awake_median;
        size_t n_awake;
        bool restored;
        char *saved;               /* where the results were saved */
        const char *err;
        char why[256];
} CalibOutcome;

/* Measure each state in turn, then put the original table back. Return: 0, 1 or 128+signal. */
static int calibrate_measure(Run *run, CalibCtrl *cc, CalibOutcome *o) {
        _cleanup_free_ uint32_t *awake = calloc(cc->n * run->opt->samples, sizeof *awake);
        const char *name = cc->sys->name;
        uint16_t status = 0;
        uint8_t failed_ps = 0;
        int r = 0, rr = 0;

        if (!awake) {
                fprintf(cc->out, "%s: FAILED (out of memory)\n", name);
                return 1;
        }
        for (size_t i = 0; i < cc->n; i++) {
                failed_ps = cc->ps[i];
                r = measure_state(run, cc->admin, cc->ns, &cc->id, cc->ps[i], awake, &o->n_awake, &o->res[i], &status);
                if (o->res[i].st.samples > 0 || r >= 0)
                        o->n_done = i + 1;
                if (r < 0)
                        break;
        }
        if (run->opt->progress)
                fprintf(stderr, "\r\033[K");
        if (r == -EINTR)
                rr = 128 + got_signal;
        else if (r == -ETIME) {
                log_warning("%s: --max-time reached; the results are incomplete.", name);
                rr = 1;
        } else if (r < 0) {
                o->err = error_words(r, status, o->why, sizeof o->why);
                fprintf(cc->out, "%s: FAILED while measuring ps%u: %s\n", name, failed_ps, o->err);
                rr = 1;
        }

        r = restore(cc->admin, &cc->orig, cc->record, &status);
        if (r < 0) {
                char w2[256];
                fprintf(cc->out, "%s: FAILED to put the original table back: %s; it stays recorded in %s for the next "
                        "`calibrate` or daemon start\n", name, error_words(r, status, w2, sizeof w2), cc->record);
                rr = rr ?: 1;
        } else
                o->restored = true;
        o->awake_median = calib_median(awake, o->n_awake);
        return rr;
}

/* Print, save (unless --no-save or it failed) and say what became of the table. Return: @rr, or 1 when the
 * results could not be saved. */
static int calibrate_report(Run *run, CalibCtrl *cc, CalibOutcome *o, int rr) {
        const SysCtrl *sys = cc->sys;
        int r;

        if (!run->opt->json)
                print_results(sys, &cc->id, o->awake_median, o->n_awake, o->res, o->n_done);
        if (rr == 0 && !run->opt->no_save) {
                r = save_results(run, &cc->id, o->awake_median, o->res, o->n_done, &o->saved);
                if (r < 0) {
                        fprintf(cc->out, "%s: FAILED to save the results in %s: %s\n", sys->name, run->opt->state_dir,
                                strerror(-r));
                        rr = 1;
                }
        }
        if (!run->opt->json) {
                fprintf(cc->out, "  original table %s", o->restored ? "put back" : "NOT put back");
                if (o->saved)
                        fprintf(cc->out, "; results saved in %s", o->saved);
                else if (rr == 0)
                        fprintf(cc->out, "; results not saved (--no-save)");
                fprintf(cc->out, "\n");
        } else
                json_object_array_add(run->json_ctrls, json_results(sys, &cc->id, o->awake_median, o->res, o->n_done,
                                                                    o->restored, o->saved, o->err));
        return rr;
}

/* Return: 0, 1 (failed or refused: reported), or 128+signal. */
static int calibrate_one(Run *run, const Config *cfg, const SysPlatform *plat, const SysCtrl *sys,
                         const char *runtime_dir) {
        CalibCtrl cc = {
                .sys = sys,
                .out = run->opt->json ? stderr : stdout,   /* with --json, stdout is the JSON only */
        };
        CalibOutcome o = {};
        int r;

        r = calibrate_prepare(run, cfg, plat, &cc);
        if (r == CALIB_GO)
                r = calibrate_take_original(&cc, runtime_dir);
        if (r == CALIB_GO) {
                r = calibrate_measure(run, &cc, &o);
                r = calibrate_report(run, &cc, &o, r);
        }
        free(o.saved);
        ctrl_free(cc.ns);
        ctrl_free(cc.admin);
        return r;
}

typedef struct CalibCall {
        Run *run;
        const Config *cfg;
        const SysPlatform *plat;
        SysCtrl sys;
        const char *runtime_dir;
} CalibCall;

static int calib_call(void *data) {
        CalibCall *a = data;

        return calibrate_one(a->run, a->cfg, a->plat, &a->sys, a->runtime_dir);
}

/* calibrate_one() in a thread of its own, given up on when an admin command goes unanswered for
 * [daemon] unresponsive_after_sec (each command counts alone: the measuring's Reads and waits do not).
 * Return: as calibrate_one(); -ETIMEDOUT when given up on (reported): the thread, still in the
 * kernel, keeps what it was given, so the caller ends without freeing it. */
static int calibrate_one_bounded(Run *run, const Config *cfg, const SysPlatform *plat, const SysCtrl *sys,
                                 const char *runtime_dir) {
        _cleanup_(ctrljob_freep) CtrlJob *j = NULL;
        unsigned secs = cfg->daemon.unresponsive_after_sec;
        CalibCall *a = calloc(1, sizeof *a);
        char s[16];
        int r;

        if (!a || ctrljob_new_call(calib_call, a, free, &j) < 0) {
                free(a);
                return calibrate_one(run, cfg, plat, sys, runtime_dir);
        }
        *a = (CalibCall) { .run = run, .cfg = cfg, .plat = plat, .sys = *sys, .runtime_dir = runtime_dir };
        r = ctrljob_run(j, (uint64_t) secs * 1000000u);
        if (r == -ETIMEDOUT) {
                TAKE_PTR(j);
                (void) snprintf(s, sizeof s, "%u", secs);
                log_event(LOG_ERR, -ETIMEDOUT, MSGID_CTRL_UNRESPONSIVE,
                          LOG_FIELDS({ "NVME_CTRL", sys->name }, { "APST_REASON", "calibrate" },
                                     { "NVME_DEADLINE_SEC", s }),
                          "%s: no answer to an admin command for %u s; giving up on the controller.", sys->name, secs);
                fprintf(run->opt->json ? stderr : stdout,
                        "%s: FAILED (no answer to an admin command within %u s: the controller is unresponsive; "
                        "giving up on it. If its table was changed, the original stays recorded in %s/ctrl-%s.orig "
                        "for the next `calibrate` or daemon start)\n", sys->name, secs, strempty(runtime_dir), sys->name);
                return -ETIMEDOUT;
        }
        if (r < 0)
                return calibrate_one(run, cfg, plat, sys, runtime_dir);
        return j->r;
}

static int parse_argv(int argc, char *argv[], Options *o) {
        enum {
                ARG_MAX_TIME = _CLI_ARG_FIRST_PRIVATE,
                ARG_FORCE,
                ARG_JSON,
                ARG_NO_SAVE,
        };
        static const struct option options[] = {
                { "samples", required_argument, NULL, 'n' },
                { "max-time", required_argument, NULL, ARG_MAX_TIME },
                { "force", no_argument, NULL, ARG_FORCE },
                { "json", no_argument, NULL, ARG_JSON },
                { "no-save", no_argument, NULL, ARG_NO_SAVE },
                { "config", required_argument, NULL, 'c' },
                CLI_COMMON_OPTIONS,
                {},
        };
        uint32_t v;
        int c;

        optind = 0;
        while ((c = cli_getopt(argc, argv, "n:c:h", options, help)) >= 0) {
                switch (c) {
                case 'n':
                        if (safe_atou32(optarg, &v) < 0 || v < 1 || v > CALIB_SAMPLES_MAX) {
                                log_error("--samples %s: expected 1..%u.", optarg, CALIB_SAMPLES_MAX);
                                return 2;
                        }
                        o->samples = v;
                        break;
                case ARG_MAX_TIME:
                        if (safe_atou32(optarg, &v) < 0 || v < 1 || v > 86400) {
                                log_error("--max-time %s: expected 1..86400 seconds.", optarg);
                                return 2;
                        }
                        o->max_time_s = v;
                        break;
                case ARG_FORCE:
                        o->force = true;
                        break;
                case ARG_JSON:
                        o->json = true;
                        break;
                case ARG_NO_SAVE:
                        o->no_save = true;
                        break;
                case 'c':
                        o->config_path = optarg;
                        break;
                default:
                        return 2;
                }
        }
        if (c == CLI_GETOPT_EXIT)
                return 0;
        return -1;
}

/* The runtime directory and, exclusively, the lock the daemon holds shared: never both program a table.
 * Return: 0, or negative errno (said). */
static int take_lock(char **ret_runtime_dir, int *ret_fd) {
        int r;

        r = runtime_directory(CPUPIN_RUNTIME_DIR_DEFAULT, ret_runtime_dir);
        if (r >= 0)
                r = runlock_take(*ret_runtime_dir, true, false, ret_fd);
        if (r == -EWOULDBLOCK)
                return log_error_errno(r, "The nvme-apstd daemon is running (it holds %s/" RUNLOCK_NAME ") and would "
                                       "fight over the APST tables; stop it first (systemctl stop nvme-apstd), "
                                       "calibrate, then start it again.", *ret_runtime_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot lock %s/" RUNLOCK_NAME ": %m", strempty(*ret_runtime_dir));
        return 0;
}

int verb_calibrate(int argc, char *argv[]) {
        Options o = { .samples = CALIB_SAMPLES_DEFAULT, .max_time_s = CALIB_MAX_TIME_DEFAULT_S };
        _cleanup_(json_object_putp) struct json_object *ctrls = json_object_new_array();
        _cleanup_free_ char *runtime_dir = NULL;
        _cleanup_(cli_selection_done) CliSelection sel = {};
        char state_dir[4096];
        struct sigaction sa = { .sa_handler = on_signal };
        Run run = { .opt = &o, .json_ctrls = ctrls };
        int r, rc = 0, lock_fd = -1;
        bool abandoned = false;
        SysPlatform plat;
        /* static: a controller thread given up on may still read it after this returns */
        static Config cfg;

        r = parse_argv(argc, argv, &o);
        if (r >= 0)
                return r;
        o.state_dir = cli_state_dir(state_dir, sizeof state_dir);
        o.progress = !o.json && isatty(STDERR_FILENO);

        if (cli_load_config(o.config_path, &cfg) < 0)
                return 1;
        r = take_lock(&runtime_dir, &lock_fd);
        if (r < 0) {
                config_done(&cfg);
                return 1;
        }

        /* from here on a signal ends the measuring, not the process: the tables go back first */
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGHUP, &sa, NULL);
        run.deadline_usec = now_usec() + (uint64_t) o.max_time_s * 1000000u;

        sysfs_read_platform(arg_sysfs_root, &plat);
        r = cli_select_controllers(argv + optind, (size_t) (argc - optind), &sel);
        if (r < 0) {
                rc = 1;
                goto out;
        }
        for (size_t i = 0; i < sel.n_unknown; i++) {
                printf("%s: FAILED (no such controller in %s/class/nvme)\n", sel.unknown[i], arg_sysfs_root);
                rc = 1;
        }
        if (sel.n_present == 0 && optind == argc && !o.json)
                printf("No NVMe controllers found.\n");
        for (size_t k = 0; k < sel.n && !got_signal; k++) {
                r = calibrate_one_bounded(&run, &cfg, &plat, &sel.ctrls[k], runtime_dir);
                if (r == -ETIMEDOUT) {
                        /* the thread given up on may come back and go on with what it shares with the
                         * rest (the JSON list, the configuration): no other controller, nothing freed */
                        abandoned = true;
                        rc = MAX(rc, 1);
                        break;
                }
                if (r > 128 || rc <= 128)
                        rc = MAX(rc, r);
        }
        if (got_signal && rc < 128)
                rc = 128 + got_signal;
out:
        if (o.json) {
                _cleanup_(json_object_putp) struct json_object *top = json_object_new_object();
                json_object_object_add(top, "controllers", json_object_get(ctrls));
                (void) json_out_print(stdout, top, JSON_OUT_FLAGS | JSON_C_TO_STRING_PRETTY);
        }
        if (lock_fd >= 0)
                (void) close(lock_fd);
        if (!abandoned)
                config_done(&cfg);
        return rc;
}
