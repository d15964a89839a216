/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd doctor`: read the machine (never write it) into a
 * DoctorSnapshot and print what doctor_examine() finds. The only admin
 * commands are Identify and Get Features 0x0C (through nvme-admin.c's allow-list);
 * everything else is sysfs, /proc and the kernel log. Exit status: 0 nothing
 * found, 1 findings, 2 could not look (or bad usage).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cpufreq-sysfs.h"
#include "apply.h"
#include "apstd-ids.h"
#include "cli.h"
#include "config-build.h"
#include "ctrljob.h"
#include "nvme-admin.h"
#include "doctor.h"
#include "doctor-out.h"
#include "fileio.h"
#include "kmsg.h"
#include "quarantine-store.h"
#include "log.h"
#include "sysfs.h"
#include "util.h"
#include "verbs.h"

#define IDCTRL_MDTS_OFFSET 77u         /* Identify Controller byte 77: MDTS */
#define KERNEL_LOG_MAX_BYTES (4u * 1024u * 1024u)  /* bigger than any ring buffer (log_buf_len) */
#define CMDLINE_MAX 4096u              /* COMMAND_LINE_SIZE on x86 is 2048 */

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* ---- output: the report in words or as JSON (schema in nvme-apstd(8), DOCTOR) ---- */

/* The JSON schema's version: raised when a member changes meaning or goes away. */
#define DOCTOR_JSON_VERSION 1

static void print_indented(FILE *f, const char *indent, const char *text) {
        for (const char *l = text; l;) {
                const char *nl = strchr(l, '\n');
                fprintf(f, "%s%.*s\n", indent, nl ? (int) (nl - l) : (int) strlen(l), l);
                l = nl ? nl + 1 : NULL;
        }
}

int doctor_format_text(const DoctorReport *r, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_findings; i++) {
                const DoctorFinding *x = &r->findings[i];

                fprintf(f, "%s[%s] %s: %s\n", i ? "\n" : "", doctor_finding_id_to_string(x->id), x->subject,
                        x->title);
                fputs("  seen:\n", f);
                for (size_t k = 0; k < x->n_evidence; k++)
                        fprintf(f, "    %s = %s\n", x->evidence[k].source, x->evidence[k].value);
                fputs("  why:\n", f);
                print_indented(f, "    ", x->why);
                fputs("  what to do:\n", f);
                for (size_t k = 0; k < x->n_fix; k++) {
                        const char *nl = strchr(x->fix[k], '\n');

                        /* a multi-line fix is a sentence and then a snippet: indent the snippet */
                        fprintf(f, "    - %.*s\n", nl ? (int) (nl - x->fix[k]) : (int) strlen(x->fix[k]), x->fix[k]);
                        if (nl)
                                print_indented(f, "        ", nl + 1);
                }
        }
        if (r->n_findings > 0)
                fputc('\n', f);
        fputs("Looked at:\n", f);
        for (size_t i = 0; i < r->n_examined; i++)
                fprintf(f, "  %s: %s\n", r->examined[i].subject, r->examined[i].text);
        if (r->n_skipped > 0) {
                fputs("Not looked at:\n", f);
                for (size_t i = 0; i < r->n_skipped; i++)
                        fprintf(f, "  %s: %s%s\n", r->skipped[i].subject, r->skipped[i].text,
                                r->skipped[i].error ? " (error)" : "");
        }
        switch (doctor_exit_status(r)) {
        case 0:
                fputs("No problems found.\n", f);
                break;
        case 1:
                fprintf(f, "%zu finding%s.\n", r->n_findings, r->n_findings == 1 ? "" : "s");
                break;
        default:
                fputs("No problems found, but not everything could be looked at.\n", f);
                break;
        }
        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

static json_object *notes_json(const DoctorNote *v, size_t n, bool with_error) {
        json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++) {
                json_object *o = json_object_new_object();
                if (!o)
                        continue;
                json_object_object_add(o, "subject", json_object_new_string(v[i].subject));
                json_object_object_add(o, "text", json_object_new_string(v[i].text));
                if (with_error)
                        json_object_object_add(o, "error", json_object_new_boolean(v[i].error));
                json_object_array_add(a, o);
        }
        return a;
}

int doctor_format_json(const DoctorReport *r, char **ret) {
        json_object *root = json_object_new_object(), *findings = json_object_new_array();
        const char *text;
        char *copy;

        if (!root || !findings) {
                json_object_put(root);
                json_object_put(findings);
                return -ENOMEM;
        }
        json_object_object_add(root, "version", json_object_new_int(DOCTOR_JSON_VERSION));
        json_object_object_add(root, "exit_status", json_object_new_int(doctor_exit_status(r)));
        for (size_t i = 0; i < r->n_findings; i++) {
                const DoctorFinding *x = &r->findings[i];
                json_object *o = json_object_new_object(), *ev = json_object_new_array(),
                            *fx = json_object_new_array();

                for (size_t k = 0; ev && k < x->n_evidence; k++) {
                        json_object *e = json_object_new_object();
                        json_object_object_add(e, "source", json_object_new_string(x->evidence[k].source));
                        json_object_object_add(e, "value", json_object_new_string(x->evidence[k].value));
                        json_object_array_add(ev, e);
                }
                for (size_t k = 0; fx && k < x->n_fix; k++)
                        json_object_array_add(fx, json_object_new_string(x->fix[k]));
                json_object_object_add(o, "id", json_object_new_string(doctor_finding_id_to_string(x->id)));
                json_object_object_add(o, "subject", json_object_new_string(x->subject));
                json_object_object_add(o, "title", json_object_new_string(x->title));
                json_object_object_add(o, "evidence", ev);
                json_object_object_add(o, "why", json_object_new_string(x->why));
                json_object_object_add(o, "fix", fx);
                json_object_array_add(findings, o);
        }
        json_object_object_add(root, "findings", findings);
        json_object_object_add(root, "examined", notes_json(r->examined, r->n_examined, false));
        json_object_object_add(root, "skipped", notes_json(r->skipped, r->n_skipped, true));

        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE);
        copy = text ? strdup(text) : NULL;
        json_object_put(root);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

static int read_u32(const char *path, uint32_t *ret) {
        char buf[32];
        int r;

        r = sysfs_read_attr(path, buf, sizeof buf);
        if (r < 0)
                return r;
        return safe_atou32(buf, ret);
}

static int read_int(const char *path) {
        uint32_t v;

        return read_u32(path, &v) < 0 || v > INT_MAX ? -1 : (int) v;
}

static void read_nvme_core(const char *root, DoctorSnapshot *s) {
        static const struct {
                const char *name;
                size_t offset;
        } params[] = {
                { "default_ps_max_latency_us", offsetof(ApstParams, max_latency_us) },
                { "apst_primary_timeout_ms", offsetof(ApstParams, primary_timeout_ms) },
                { "apst_secondary_timeout_ms", offsetof(ApstParams, secondary_timeout_ms) },
                { "apst_primary_latency_tol_us", offsetof(ApstParams, primary_latency_tol_us) },
                { "apst_secondary_latency_tol_us", offsetof(ApstParams, secondary_latency_tol_us) },
        };
        ApstParams p = APST_PARAMS_DEFAULT;
        char path[PATH_MAX], buf[8];

        p.policy = APST_POLICY_KERNEL;
        for (size_t i = 0; i < ELEMENTSOF(params); i++) {
                (void) snprintf(path, sizeof path, "%s/module/nvme_core/parameters/%s", root, params[i].name);
                /* kernels before 5.14 lack the four apst_* knobs: keep their defaults */
                if (read_u32(path, (uint32_t *) ((char *) &p + params[i].offset)) < 0 && i == 0)
                        return;
        }
        (void) snprintf(path, sizeof path, "%s/module/nvme_core/parameters/force_apst", root);
        p.force = sysfs_read_attr(path, buf, sizeof buf) >= 0 && (buf[0] == 'Y' || buf[0] == '1');
        s->nvme_core = p;
        s->have_nvme_core = true;
}

/* The daemon's quarantine of this model and firmware, if it keeps one (doc/quarantine.md). */
static void read_quarantine(DoctorCtrl *d) {
        char dir[4096];
        Quarantine q;

        if (quarantine_load(cli_state_dir(dir, sizeof dir), d->id.model, d->id.firmware, &q, NULL) < 0 ||
            q.vendor != d->id.vid)
                return;
        d->quarantined = q.allow_below != QUARANTINE_NONE;
        d->quarantine_below = q.allow_below;
        d->quarantine_strikes = q.strikes;
}

static void read_ctrl(const SysCtrl *sys, DoctorCtrl *d) {
        _cleanup_(admin_freep) AdminHandle *ctrl = NULL;
        uint8_t raw[IDCTRL_SIZE];
        char path[PATH_MAX];
        uint16_t status = 0;
        int r;

        *d = (DoctorCtrl) { .sys = *sys, .table_error = -ENOMSG };
        (void) snprintf(path, sizeof path, "%s/class/nvme/%s/power/pm_qos_latency_tolerance_us", arg_sysfs_root,
                        sys->name);
        d->have_pm_qos = read_u32(path, &d->pm_qos_latency_tolerance_us) >= 0;
        d->have_queue = sysfs_ctrl_queue_limits(arg_sysfs_root, sys->name, d->disk, sizeof d->disk,
                                                &d->max_hw_sectors_kb, &d->max_sectors_kb) >= 0;
        if (strcmp(sys->transport, "pcie") != 0)
                return;

        r = admin_open(arg_dev_dir, sys->name, &ctrl);
        if (r >= 0)
                r = admin_identify(ctrl, &d->id, raw, &status);
        if (r < 0) {
                d->id_error = r;
                (void) apply_error_to_string(r, status, d->id_error_text, sizeof d->id_error_text);
                if (r == -EACCES || r == -EPERM)
                        (void) strncat(d->id_error_text, " (run as root)",
                                       sizeof d->id_error_text - strlen(d->id_error_text) - 1);
                return;
        }
        d->mdts = raw[IDCTRL_MDTS_OFFSET];
        read_quarantine(d);
        if (!d->id.apst_supported)
                return;     /* no Get Features 0x0C for a drive without the feature, as the kernel */
        status = 0;
        r = admin_get_apst(ctrl, &d->table, &status);
        d->table_error = r < 0 ? r : 0;
        if (r < 0)
                (void) apply_error_to_string(r, status, d->table_error_text, sizeof d->table_error_text);
}

/*
 * A daemon is an nvme-apstd process (comm) that runs the daemon: no verb, an
 * option first (`nvme-apstd --config F`) or `run`. Not us, not `plan`/`apply`.
 */
static DoctorDaemon find_daemon(const char *proc_root, unsigned *ret_pid) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        d = opendir(proc_root);
        if (!d)
                return DOCTOR_DAEMON_UNKNOWN;
        while ((de = readdir(d))) {
                char path[PATH_MAX], comm[32], cmdline[256];
                _cleanup_close_ int fd = -EBADF;
                uint32_t pid;
                ssize_t k;

                if (safe_atou32(de->d_name, &pid) < 0 || pid == (uint32_t) getpid())
                        continue;
                (void) snprintf(path, sizeof path, "%s/%s/comm", proc_root, de->d_name);
                if (sysfs_read_attr(path, comm, sizeof comm) < 0 || strcmp(comm, "nvme-apstd") != 0)
                        continue;
                (void) snprintf(path, sizeof path, "%s/%s/cmdline", proc_root, de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                k = read(fd, cmdline, sizeof cmdline - 1);
                if (k <= 0)
                        continue;
                cmdline[k] = '\0';
                {
                        /* argv[0] NUL argv[1] NUL ... */
                        size_t l0 = strlen(cmdline);
                        const char *arg1 = (ssize_t) l0 + 1 < k ? cmdline + l0 + 1 : "";
                        if (*arg1 && *arg1 != '-' && strcmp(arg1, "run") != 0)
                                continue;
                }
                *ret_pid = pid;
                return DOCTOR_DAEMON_RUNNING;
        }
        return DOCTOR_DAEMON_NOT_RUNNING;
}

static int cmp_policy(const void *a, const void *b) {
        const DoctorCpuPolicy *x = a, *y = b;
        return (x->state.cpu > y->state.cpu) - (x->state.cpu < y->state.cpu);
}

static void read_cpufreq(DoctorSnapshot *s, DoctorCpuPolicy **ret, const char *const *names, size_t n_names) {
        const CpufreqOps *ops = &cpufreq_sysfs_ops;
        _cleanup_free_ DoctorCpuPolicy *v = NULL;
        CpuSet online, seen = {};
        char path[PATH_MAX];
        size_t n = 0;
        int r;

        r = ops->list_cpus(ops->userdata, &online);
        if (r < 0) {
                s->cpufreq_error = r;
                return;
        }
        for (unsigned cpu = 0; cpu < CPUSET_MAX; cpu++) {
                DoctorCpuPolicy p = {};

                if (!cpuset_has(&online, cpu) || cpuset_has(&seen, cpu))
                        continue;
                if (ops->read_policy(ops->userdata, cpu, &p.state) < 0) {
                        cpuset_add(&seen, cpu);
                        continue;
                }
                cpuset_or(&seen, &p.state.cpus);
                (void) snprintf(path, sizeof path, "%s/devices/system/cpu/cpu%u/cpufreq/scaling_driver",
                                arg_sysfs_root, cpu);
                if (sysfs_read_attr(path, p.driver, sizeof p.driver) < 0)
                        p.driver[0] = '\0';
                DoctorCpuPolicy *t = reallocarray(v, n + 1, sizeof *v);
                if (!t)
                        break;
                v = t;
                v[n++] = p;
        }
        if (n > 1)
                qsort(v, n, sizeof *v, cmp_policy);
        s->n_policies = n;
        *ret = TAKE_PTR(v);

        (void) snprintf(path, sizeof path, "%s/devices/system/cpu/intel_pstate/status", arg_sysfs_root);
        if (sysfs_read_attr(path, s->pstate_status, sizeof s->pstate_status) < 0)
                s->pstate_status[0] = '\0';
        (void) snprintf(path, sizeof path, "%s/devices/system/cpu/intel_pstate/hwp_dynamic_boost", arg_sysfs_root);
        s->hwp_dynamic_boost = read_int(path);
        (void) snprintf(path, sizeof path, "%s/devices/system/cpu/intel_pstate/min_perf_pct", arg_sysfs_root);
        s->min_perf_pct = read_int(path);
        if (n_names > 0)
                s->have_irq_cpus = cpufreq_sysfs_nvme_irq_cpus(arg_sysfs_root, arg_proc_root, names, n_names,
                                                               &s->irq_cpus) >= 0 &&
                                   !cpuset_is_empty(&s->irq_cpus);
}

/* Keep a relevant message; @line is one record ("6,339,0,-;message") or one text line. */
static int keep_log_line(char *line, char ***lines, size_t *n) {
        char *msg = line;
        char **t;
        KmsgRecord rec;

        /* /dev/kmsg: "<prio>,<seq>,<usec>,<flags>[,...];<message>" (kmsg.h); a text line is kept whole */
        if (kmsg_parse_record(line, strlen(line), &rec) >= 0 && rec.prio >= 0)
                msg = line + (rec.msg - line);
        msg[strcspn(msg, "\n")] = '\0';
        if (*n >= DOCTOR_KERNEL_LOG_MAX || !doctor_kernel_log_relevant(msg))
                return 0;
        t = reallocarray(*lines, *n + 1, sizeof *t);
        if (!t)
                return -ENOMEM;
        *lines = t;
        t[*n] = strdup(msg);
        if (!t[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* @file: a saved `dmesg`/journal text; NULL: /dev/kmsg. Return: 0, or -errno when unreadable. */
static int read_kernel_log(const char *file, char ***lines, size_t *n) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (file) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                char *save = NULL;

                r = read_full_file(file, KERNEL_LOG_MAX_BYTES, 0, &text, &len);
                if (r < 0)
                        return r;
                for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                        if (keep_log_line(l, lines, n) < 0)
                                return -ENOMEM;
                return 0;
        }

        /* one record per read(); O_NONBLOCK: EAGAIN at the end instead of waiting for more */
        fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        for (unsigned records = 0; records < 1000000; records++) {
                char rec[8192];
                ssize_t k = read(fd, rec, sizeof rec - 1);

                if (k < 0 && errno == EPIPE)
                        continue;       /* overwritten while we read: go on with the next */
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        break;
                if (k <= 0)
                        return k < 0 ? negative_errno() : 0;
                rec[k] = '\0';
                if (keep_log_line(rec, lines, n) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static void help(void) {
        printf("Usage: nvme-apstd doctor [OPTIONS] [nvmeX...]\n\n"
               "Look at the NVMe power states, request size limits and CPU frequency policy of\n"
               "this machine and say what is wrong, with the evidence and the fix. Changes\n"
               "nothing; sends only Identify and Get Features (APST) to the controllers.\n"
               "Exit status: 0 nothing found, 1 findings, 2 could not look.\n\n"
               "  -c --config FILE     configuration file (default: %s/nvme-apstd.conf)\n"
               "  -j --json            print one JSON object (schema in nvme-apstd(8))\n"
               "     --kernel-log FILE read kernel messages from FILE (dmesg output) instead of /dev/kmsg\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n",
               SYSCONFDIR);
}

typedef struct DoctorOptions {
        const char *config_path, *kernel_log;
        bool json;
} DoctorOptions;

/* Return: 1 to go on, 0 when done (--help, --version), -EINVAL. */
static int parse_argv(int argc, char *argv[], DoctorOptions *o) {
        enum { ARG_KERNEL_LOG = _CLI_ARG_FIRST_PRIVATE };
        static const struct option options[] = {
                CLI_CONFIG_OPTION,
                { "json", no_argument, NULL, 'j' },
                { "kernel-log", required_argument, NULL, ARG_KERNEL_LOG },
                CLI_COMMON_OPTIONS,
                {},
        };
        int c;

        optind = 0;
        while ((c = cli_getopt_config(argc, argv, "c:jh", options, help, &o->config_path)) >= 0) {
                switch (c) {
                case 'j':
                        o->json = true;
                        break;
                case ARG_KERNEL_LOG:
                        o->kernel_log = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        }
        return c == CLI_GETOPT_EXIT ? 0 : 1;
}

/* Read the selected controllers into @ctrls and the names of the PCIe ones into @names.
 * Return: how many were read. */
typedef struct DoctorProbe {
        SysCtrl sys;
        DoctorCtrl d;
} DoctorProbe;

static int probe_call(void *data) {
        DoctorProbe *p = data;

        read_ctrl(&p->sys, &p->d);
        return 0;
}

/* read_ctrl() in a thread of its own, given up on after @secs without an answer from the drive. */
static void read_ctrl_bounded(const SysCtrl *sys, DoctorCtrl *d, unsigned secs) {
        _cleanup_(ctrljob_freep) CtrlJob *j = NULL;
        DoctorProbe *p = calloc(1, sizeof *p);
        int r;

        if (!p || ctrljob_new_call(probe_call, p, free, &j) < 0) {
                free(p);
                read_ctrl(sys, d);
                return;
        }
        p->sys = *sys;
        r = ctrljob_run(j, (uint64_t) secs * 1000000u);
        if (r == -ETIMEDOUT) {
                char s[16];

                TAKE_PTR(j);   /* its thread's until the kernel ends the command */
                *d = (DoctorCtrl) { .sys = *sys, .id_error = -ETIMEDOUT, .table_error = -ENOMSG };
                (void) snprintf(d->id_error_text, sizeof d->id_error_text,
                                "no answer to an admin command within %u s: the controller is unresponsive", secs);
                (void) snprintf(s, sizeof s, "%u", secs);
                log_event(LOG_ERR, -ETIMEDOUT, MSGID_CTRL_UNRESPONSIVE,
                          LOG_FIELDS({ "NVME_CTRL", sys->name }, { "APST_REASON", "doctor" },
                                     { "NVME_DEADLINE_SEC", s }),
                          "%s: no answer to an admin command for %u s; giving up on the controller.", sys->name, secs);
                return;
        }
        if (r < 0) {
                read_ctrl(sys, d);
                return;
        }
        *d = p->d;
}

static size_t read_selected_ctrls(const CliSelection *sel, DoctorCtrl *ctrls, const char **names,
                                  size_t *ret_n_pcie, unsigned secs) {
        size_t n_pcie = 0;

        for (size_t k = 0; k < sel->n; k++) {
                read_ctrl_bounded(&sel->ctrls[k], &ctrls[k], secs);
                if (strcmp(sel->ctrls[k].transport, "pcie") == 0)
                        names[n_pcie++] = ctrls[k].sys.name;
        }
        *ret_n_pcie = n_pcie;
        return sel->n;
}

/* The kernel command line, when readable; @ret_cmdline owns it. */
static void read_cmdline(DoctorSnapshot *s, char **ret_cmdline) {
        char path[PATH_MAX];
        size_t len = 0;

        (void) snprintf(path, sizeof path, "%s/cmdline", arg_proc_root);
        if (read_full_file(path, CMDLINE_MAX, 0, ret_cmdline, &len) >= 0)
                s->cmdline = *ret_cmdline;
}

/* The kernel log into @s (the lines are the caller's to free); only a --kernel-log file that
 * cannot be read is an error, a /dev/kmsg that cannot is a gap. */
static int attach_kernel_log(DoctorSnapshot *s, const char *file, char ***lines, size_t *n) {
        int r = read_kernel_log(file, lines, n);

        if (r < 0 && file)
                return log_error_errno(r, "%s: cannot read the kernel log: %m", file);
        s->have_kernel_log = r >= 0;
        s->kernel_log = (const char *const *) *lines;
        s->n_kernel_log = *n;
        return 0;
}

int verb_doctor(int argc, char *argv[]) {
        _cleanup_(cli_selection_done) CliSelection sel = {};
        _cleanup_free_ DoctorCtrl *ctrls = NULL;
        _cleanup_free_ DoctorCpuPolicy *policies = NULL;
        _cleanup_free_ char *cmdline = NULL, *out = NULL;
        char **log_lines = NULL;
        DoctorOptions o = {};
        DoctorSnapshot s = {};
        DoctorReport report = {};
        Config cfg;
        size_t n = 0, n_log = 0;
        int r, status = 2;

        r = parse_argv(argc, argv, &o);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        if (cli_load_config(o.config_path, &cfg) < 0)
                return 2;

        r = cli_select_controllers(argv + optind, (size_t) (argc - optind), &sel);
        if (r < 0 || sel.n_unknown > 0)
                goto finish;
        ctrls = calloc(sel.n + 1, sizeof *ctrls);
        if (!ctrls) {
                log_error_errno(-ENOMEM, "Out of memory.");
                goto finish;
        }
        {
                const char *names[sel.n + 1];
                size_t n_pcie;

                n = read_selected_ctrls(&sel, ctrls, names, &n_pcie, cfg.daemon.unresponsive_after_sec);
                s = (DoctorSnapshot) {
                        .sysfs_root = arg_sysfs_root,
                        .proc_root = arg_proc_root,
                        .config = &cfg,
                        .ctrls = ctrls,
                        .n_ctrls = n,
                        .hwp_dynamic_boost = -1,
                        .min_perf_pct = -1,
                };
                sysfs_read_platform(arg_sysfs_root, &s.platform);
                read_nvme_core(arg_sysfs_root, &s);
                s.daemon = find_daemon(arg_proc_root, &s.daemon_pid);
                read_cpufreq(&s, &policies, names, n_pcie);
                s.policies = policies;
        }
        read_cmdline(&s, &cmdline);
        if (attach_kernel_log(&s, o.kernel_log, &log_lines, &n_log) < 0)
                goto finish;

        r = doctor_examine(&s, &report);
        if (r >= 0)
                r = o.json ? doctor_format_json(&report, &out) : doctor_format_text(&report, &out);
        if (r < 0) {
                log_error_errno(r, "Out of memory.");
                goto finish;
        }
        fputs(out, stdout);
        if (o.json)
                fputc('\n', stdout);
        status = doctor_exit_status(&report);
finish:
        doctor_report_done(&report);
        for (size_t i = 0; i < n_log; i++)
                free(log_lines[i]);
        free(log_lines);
        config_done(&cfg);
        return status;
}
