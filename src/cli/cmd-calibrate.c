/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd calibrate [nvmeX...]`: measure how long each non-operational
 * power state really takes to wake (doc/calibrate.md).
 *
 * The verb holds the options, the lock the daemon holds shared, the signal
 * handling and every word printed; the sequence each controller goes through
 * (gate, Identify, the original table recorded, a temporary table per state
 * and the timed Reads, the original put back) is the engine's
 * calibrate_controller(), run in a thread of its own per controller so an
 * unresponsive drive is given up on. The verb then prints the results, saves
 * them (calib-store.c) and says what became of the table.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apstd-ids.h"
#include "calib-plan.h"
#include "calibrate.h"
#include "calib-store.h"
#include "cli.h"
#include "clock.h"
#include "config-dropin.h"
#include "config-build.h"
#include "cpupin.h"
#include "ctrljob.h"
#include "nvme-admin.h"
#include "device.h"
#include "fileio.h"
#include "json-out.h"
#include "log.h"
#include "record-file.h"
#include "runlock.h"
#include "state-file.h"
#include "sysfs.h"
#include "util.h"
#include "verbs.h"

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
        bool drop_in;
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
               "     --drop-in       also write them as %s/50-calibrated-MODEL-FIRMWARE.conf,\n"
               "                     for every machine with the same drive (nvme-apstd.conf(5))\n"
               "     --state-dir DIR where results are saved (default $STATE_DIRECTORY, else /var/lib/nvme-apstd)\n"
               "  -c --config FILE   configuration file (default: %s/nvme-apstd.conf): quirks, force, enable\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "Exit status: 0 measured and put back; 1 a controller failed or was refused; 2 usage;\n"
               "128+N stopped by signal N (the original table put back first).\n",
               CALIB_SAMPLES_DEFAULT, CALIB_SAMPLES_MAX, CALIB_MAX_TIME_DEFAULT_S, config_dropin_dirs[0], SYSCONFDIR);
}

static void print_results(const SysCtrl *sys, const IdCtrl *id, uint32_t awake_median, size_t n_awake,
                          const CalibrateStateResult *res, size_t n) {
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
                                        const CalibrateStateResult *res, size_t n, bool restored, const char *saved,
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

/* The measured states as the Calibration calib_save() and calib_dropin() take. */
static void results_calibration(const IdCtrl *id, uint32_t awake_median, const CalibrateStateResult *res, size_t n,
                                Calibration *ret) {
        Calibration cal = { .awake_median_us = awake_median };
        struct timespec ts;

        (void) snprintf(cal.model, sizeof cal.model, "%s", id->model);
        (void) snprintf(cal.firmware, sizeof cal.firmware, "%s", id->firmware);
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        cal.measured_realtime_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        for (size_t i = 0; i < n && cal.n_states < ELEMENTSOF(cal.states); i++)
                if (res[i].st.samples > 0)
                        cal.states[cal.n_states++] = res[i].st;
        *ret = cal;
}

/* --drop-in: the figures as /etc/nvme-apstd.conf.d/50-calibrated-MODEL-FIRMWARE.conf, replaced whole. */
static int write_dropin(const Calibration *cal, char **ret_path) {
        _cleanup_free_ char *name = NULL, *text = NULL, *path = NULL;
        const char *dir = config_dropin_dirs[0];
        int r;

        r = calib_dropin(cal, &name, &text);
        if (r < 0)
                return r;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        r = write_file_atomic(path, text, strlen(text), 0644);
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(path);
        return 0;
}

static int save_results(const Run *run, const IdCtrl *id, uint32_t awake_median, const CalibrateStateResult *res,
                        size_t n, char **ret_path) {
        Calibration cal;
        int r;

        results_calibration(id, awake_median, res, n, &cal);
        r = calib_save(run->opt->state_dir, &cal);
        if (r < 0)
                return r;
        return calib_path(run->opt->state_dir, cal.model, cal.firmware, ret_path);
}

/* A controller given up on: the journal entry and the words. */
static void say_unresponsive(const Run *run, const SysCtrl *sys, unsigned secs, const char *runtime_dir) {
        char s[16], record[PATH_MAX];

        (void) snprintf(s, sizeof s, "%u", secs);
        log_event(LOG_ERR, -ETIMEDOUT, MSGID_CTRL_UNRESPONSIVE,
                  LOG_FIELDS({ "NVME_CTRL", sys->name }, { "APST_REASON", "calibrate" }, { "NVME_DEADLINE_SEC", s }),
                  "%s: no answer to an admin command for %u s; giving up on the controller.", sys->name, secs);
        if (record_ctrl_path(strempty(runtime_dir), sys->name, record, sizeof record) < 0)
                (void) snprintf(record, sizeof record, "%s", strempty(runtime_dir));
        fprintf(run->opt->json ? stderr : stdout,
                "%s: FAILED (no answer to an admin command within %u s: the controller is unresponsive; "
                "giving up on it. If its table was changed, the original stays recorded in %s "
                "for the next `calibrate` or daemon start)\n", sys->name, secs, record);
}

/* The words for a failed command: its NVMe status, a read-back that differs, or the errno. */
static const char *error_words(int r, uint16_t status, char *buf, size_t n) {
        if (r == -EREMOTEIO)
                (void) snprintf(buf, n, "NVMe status 0x%04x (%s)", status, admin_status_to_string(status));
        else if (r == -EBADMSG)
                (void) snprintf(buf, n, "the table read back differs from the one written");
        else
                (void) snprintf(buf, n, "%s", strerror(-r));
        return buf;
}

/* One controller on its way through calibrate: what the engine is asked and where the words go. */
typedef struct CalibCtrl {
        Run *run;
        const SysCtrl *sys;
        FILE *out;                 /* stdout, or stderr with --json */
        CalibrateRequest req;
        CalibrateResult res;
        char why[256];             /* the measuring's error in words, for the JSON */
        const char *err;
} CalibCtrl;

/* The engine's news while it runs, said as calibrate always said it. */
static void on_progress(const CalibrateEvent *ev, void *userdata) {
        CalibCtrl *cc = userdata;
        const CalibrateResult *res = ev->result;
        const char *name = cc->sys->name;

        switch (ev->kind) {
        case CALIBRATE_EVENT_OVER_TIME:
                log_warning("%s: measuring %zu state%s with %u samples may take %" PRIu64
                            " s, more than --max-time leaves; the last states may be incomplete.",
                            name, res->n_targets, res->n_targets == 1 ? "" : "s", cc->req.samples,
                            res->estimate_us / 1000000 + 1);
                break;
        case CALIBRATE_EVENT_RECORD_IGNORED:
                log_warning_errno(ev->error, "%s: ignoring %s: %m", name, res->record);
                break;
        case CALIBRATE_EVENT_FROM_RECORD:
                fprintf(cc->out, "%s: a previous run did not put its table back; using the original it recorded "
                        "in %s\n", name, res->record);
                break;
        case CALIBRATE_EVENT_SAMPLE:
                if (!cc->run->opt->progress)
                        break;
                fprintf(stderr, "\r%s: ps%u sample %u/%u ", name, ev->ps, ev->sample, cc->req.samples);
                fflush(stderr);
                break;
        case CALIBRATE_EVENT_MEASURED:
                if (cc->run->opt->progress)
                        fprintf(stderr, "\r\033[K");
                if (ev->error == -ETIME)
                        log_warning("%s: --max-time reached; the results are incomplete.", name);
                else if (ev->error < 0 && ev->error != -EINTR) {
                        cc->err = error_words(ev->error, res->measure_status, cc->why, sizeof cc->why);
                        fprintf(cc->out, "%s: FAILED while measuring ps%u: %s\n", name, ev->ps, cc->err);
                }
                break;
        case CALIBRATE_EVENT_RECORD_KEPT:
                log_warning_errno(ev->error, "%s: original table put back, but cannot remove %s: %m", name,
                                  res->record);
                break;
        case _CALIBRATE_EVENT_KIND_MAX:
        case _CALIBRATE_EVENT_KIND_INVALID:
                break;
        }
}

/* A step that failed before any table changed, in words. */
static void say_failed(const CalibCtrl *cc) {
        const CalibrateResult *res = &cc->res;
        const char *name = cc->sys->name;
        char why[256];

        switch (res->failed_step) {
        case CALIBRATE_STEP_STATE:
                fprintf(cc->out, "%s: FAILED (controller is %s, not live)\n", name, cc->sys->state);
                return;
        case CALIBRATE_STEP_OPEN:
                fprintf(cc->out, "%s: FAILED (cannot open %s/%s: %s)\n", name, arg_dev_dir, name,
                        strerror(-res->error));
                return;
        case CALIBRATE_STEP_IDENTIFY:
                fprintf(cc->out, "%s: FAILED (Identify Controller: %s)\n", name,
                        error_words(res->error, res->nvme_status, why, sizeof why));
                return;
        case CALIBRATE_STEP_PLAN:
                fprintf(cc->out, "%s: FAILED (cannot plan: %s)\n", name, strerror(-res->error));
                return;
        case CALIBRATE_STEP_NAMESPACE:
                fprintf(cc->out, "%s: FAILED (no namespace to read from: %s)\n", name,
                        res->error == -ENOENT ? "none in sysfs" : strerror(-res->error));
                return;
        case CALIBRATE_STEP_FIRST_READ:
                fprintf(cc->out, "%s: FAILED (Read of one block of %s: %s); table unchanged\n", name, res->dev,
                        error_words(res->error, res->nvme_status, why, sizeof why));
                return;
        case CALIBRATE_STEP_GET_FEATURES:
                fprintf(cc->out, "%s: FAILED (Get Features 0x0C: %s); table unchanged\n", name,
                        error_words(res->error, res->nvme_status, why, sizeof why));
                return;
        case CALIBRATE_STEP_RECORD:
                fprintf(cc->out, "%s: FAILED (cannot record the original table in %s: %s); table unchanged\n", name,
                        res->record, strerror(-res->error));
                return;
        case CALIBRATE_STEP_MEMORY:
                fprintf(cc->out, "%s: FAILED (out of memory)\n", name);
                return;
        case CALIBRATE_STEP_NONE:
        case _CALIBRATE_STEP_MAX:
        case _CALIBRATE_STEP_INVALID:
                fprintf(cc->out, "%s: FAILED (%s)\n", name, strerror(-res->error));
                return;
        }
}

/* What became of a controller the engine did not measure. Return: 0 or 1 (the exit status's part). */
static int say_not_measured(const CalibCtrl *cc) {
        const CalibrateResult *res = &cc->res;
        const char *name = cc->sys->name;

        switch (res->verdict) {
        case CALIBRATE_SKIPPED:
                fprintf(cc->out, "%s: skipped (transport %s is not PCIe)\n", name, cc->sys->transport);
                return 0;
        case CALIBRATE_LEFT_ALONE:
                if (res->left_alone != DEVICE_MANAGE)
                        fprintf(cc->out, "%s: left alone (%s)\n", name, device_verdict_reason(res->left_alone));
                else
                        fprintf(cc->out, "%s: left alone (the kernel's quirk list disables APST on this drive; "
                                "force = yes overrides)\n", name);
                return 0;
        case CALIBRATE_NOTHING:
                fprintf(cc->out, "%s: nothing to measure (no non-operational power state a policy may use)\n", name);
                return 0;
        case CALIBRATE_BUSY:
                fprintf(cc->out, "%s: refused: busy (%" PRIu64 " I/Os completed in %u ms); the wake-up would be lost "
                        "in the workload's own I/O. Run it when the drive is idle, or with --force.\n",
                        name, res->busy_ios, CALIBRATE_BUSY_CHECK_MS);
                return 1;
        case CALIBRATE_FAILED:
                say_failed(cc);
                return 1;
        case CALIBRATE_STOPPED:
        case CALIBRATE_MEASURED:
        case _CALIBRATE_VERDICT_MAX:
        case _CALIBRATE_VERDICT_INVALID:
                break;
        }
        return 0;
}

/* Print, save (unless --no-save or it failed) and say what became of the table. Return: 0, 1 or
 * 128+signal. */
static int calibrate_report(CalibCtrl *cc) {
        const CalibrateResult *res = &cc->res;
        const Options *opt = cc->run->opt;
        const char *name = cc->sys->name;
        _cleanup_free_ char *saved = NULL, *dropin = NULL;
        int r, rr = 0;

        if (res->measure_error == -EINTR)
                rr = 128 + got_signal;
        else if (res->measure_error < 0)
                rr = 1;
        if (!res->restored) {
                char w2[256];
                fprintf(cc->out, "%s: FAILED to put the original table back: %s; it stays recorded in %s for the next "
                        "`calibrate` or daemon start\n", name,
                        error_words(res->restore_error, res->restore_status, w2, sizeof w2), res->record);
                rr = rr ?: 1;
        }
        if (!opt->json)
                print_results(cc->sys, &res->id, res->awake_median_us, res->n_awake, res->states, res->n_states);
        if (rr == 0 && !opt->no_save) {
                r = save_results(cc->run, &res->id, res->awake_median_us, res->states, res->n_states, &saved);
                if (r < 0) {
                        fprintf(cc->out, "%s: FAILED to save the results in %s: %s\n", name, opt->state_dir,
                                strerror(-r));
                        rr = 1;
                }
        }
        if (rr == 0 && opt->drop_in) {
                Calibration cal;

                results_calibration(&res->id, res->awake_median_us, res->states, res->n_states, &cal);
                r = write_dropin(&cal, &dropin);
                if (r < 0) {
                        fprintf(cc->out, "%s: FAILED to write the drop-in in %s: %s\n", name, config_dropin_dirs[0],
                                r == -EINVAL ? "no measured state, no firmware revision, or a model the "
                                "configuration cannot match" : strerror(-r));
                        rr = 1;
                } else if (!opt->json)
                        fprintf(cc->out, "  drop-in written: %s\n", dropin);
        }
        if (!opt->json) {
                fprintf(cc->out, "  original table %s", res->restored ? "put back" : "NOT put back");
                if (saved)
                        fprintf(cc->out, "; results saved in %s", saved);
                else if (rr == 0)
                        fprintf(cc->out, "; results not saved (--no-save)");
                fprintf(cc->out, "\n");
        } else
                json_object_array_add(cc->run->json_ctrls,
                                      json_results(cc->sys, &res->id, res->awake_median_us, res->states,
                                                   res->n_states, res->restored, saved, cc->err));
        return rr;
}

/* The engine's sequence for one controller: in a thread of its own under calibrate_one(). */
static int calib_call(void *data) {
        CalibCtrl *cc = data;

        return calibrate_controller(&cc->req, on_progress, cc, &cc->res);
}

/* The engine's sequence for one controller in a thread of its own, given up on when an admin command goes
 * unanswered for [daemon] unresponsive_after_sec (each command counts alone: the measuring's Reads and waits
 * do not); then what it found, said. Return: 0, 1 (failed or refused: reported), 128+signal; -ETIMEDOUT
 * when given up on (reported): the thread, still in the kernel, keeps what it was given, so the caller ends
 * without freeing it. */
static int calibrate_one(Run *run, const Config *cfg, const SysPlatform *plat, const SysCtrl *sys,
                         const char *runtime_dir) {
        _cleanup_(ctrljob_freep) CtrlJob *j = NULL;
        unsigned secs = cfg->daemon.unresponsive_after_sec;
        _cleanup_free_ CalibCtrl *cc = calloc(1, sizeof *cc);
        int r;

        if (!cc)
                return log_error("Out of memory."), 1;
        /* Alike in shape to nvme-admin.c's libnvme argument structs (a run of designated
         * members), by accident: this is the calibration's request, that one a command's. */
        *cc = (CalibCtrl) {
                .run = run,
                .sys = sys,
                .out = run->opt->json ? stderr : stdout,   /* with --json, stdout is the JSON only */
                .req = {
                        .sys = sys,
                        .config = cfg,
                        .platform = plat,
                        .sysfs_root = arg_sysfs_root,
                        .dev_dir = arg_dev_dir,
                        .record_dir = runtime_dir,
                        .samples = run->opt->samples,
                        .force = run->opt->force,
                        .deadline_usec = run->deadline_usec,
                        .stop = &got_signal,
                },
        };
        r = ctrljob_new_call(calib_call, cc, NULL, &j);
        if (r >= 0)
                r = ctrljob_run(j, (uint64_t) secs * 1000000u);
        if (r == -ETIMEDOUT) {
                TAKE_PTR(j);
                TAKE_PTR(cc);
                say_unresponsive(run, sys, secs, runtime_dir);
                return -ETIMEDOUT;
        }
        if (r < 0)
                (void) calib_call(cc);     /* no thread to be had: in this one, unbounded */
        if (cc->res.verdict == CALIBRATE_STOPPED)
                return 128 + got_signal;
        if (cc->res.verdict != CALIBRATE_MEASURED)
                return say_not_measured(cc);
        return calibrate_report(cc);
}

static int parse_argv(int argc, char *argv[], Options *o) {
        enum {
                ARG_MAX_TIME = _CLI_ARG_FIRST_PRIVATE,
                ARG_FORCE,
                ARG_JSON,
                ARG_NO_SAVE,
                ARG_DROP_IN,
        };
        /* Alike in shape to the other verbs' option tables (duplicates pairs it with simulate's): getopt's
         * declaration format, each line another option of another verb, so nothing one table could serve. */
        static const struct option options[] = {
                { "samples", required_argument, NULL, 'n' },
                { "max-time", required_argument, NULL, ARG_MAX_TIME },
                { "force", no_argument, NULL, ARG_FORCE },
                { "json", no_argument, NULL, ARG_JSON },
                { "no-save", no_argument, NULL, ARG_NO_SAVE },
                { "drop-in", no_argument, NULL, ARG_DROP_IN },
                CLI_CONFIG_OPTION,
                CLI_COMMON_OPTIONS,
                {},
        };
        uint32_t v;
        int c;

        optind = 0;
        while ((c = cli_getopt_config(argc, argv, "n:c:h", options, help, &o->config_path)) >= 0) {
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
                case ARG_DROP_IN:
                        o->drop_in = true;
                        break;
                case ARG_NO_SAVE:
                        o->no_save = true;
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
                r = calibrate_one(&run, &cfg, &plat, &sel.ctrls[k], runtime_dir);
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
