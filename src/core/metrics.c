/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prometheus text format of the daemon's state; see metrics.h. The format:
 * https://prometheus.io/docs/instrumenting/exposition_formats/ (text format
 * 0.0.4): "# HELP name text", "# TYPE name gauge|counter", then samples
 * `name{label="value",...} number`, label values escaped as \\, \" and \n.
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "metrics.h"
#include "util.h"


static void label_value(FILE *f, const char *v) {
        const unsigned char *p = (const unsigned char *) strempty(v);

        while (*p) {
                size_t n = utf8_char_len((const char *) p);

                if (*p == '\\' || *p == '"')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (n == 0 || *p < 0x20 || *p == 0x7f)
                        fputc('?', f);
                else
                        fwrite(p, 1, n, f);
                p += n ? n : 1;
        }
}

static void family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* µs as seconds, exactly (no floating point: equal states give equal text). */
static void print_us_as_seconds(FILE *f, uint64_t us) {
        fprintf(f, "%" PRIu64 ".%06" PRIu64 "\n", us / 1000000, us % 1000000);
}

static void print_double(FILE *f, double v) {
        if (isnan(v))
                fputs("NaN\n", f);
        else if (isinf(v))
                fputs(v > 0 ? "+Inf\n" : "-Inf\n", f);
        else
                fprintf(f, "%.3f\n", v);
}

static void ctrl_label(FILE *f, const char *name, const MetricsController *c) {
        fprintf(f, "%s{controller=\"", name);
        label_value(f, c->name);
        fputs("\"} ", f);
}

/* The families with one plain sample per controller (the info and per-table families have more labels). */
typedef enum CtrlFamily {
        CTRL_MAX_LATENCY,
        CTRL_UNRESPONSIVE,
        CTRL_WORST_WAKE,
        CTRL_TABLE_WRITES,
        CTRL_KERNEL_OVERWRITES,
        CTRL_ERRORS,
        CTRL_HOLDS,
        CTRL_HOLD_SECONDS,
        CTRL_OBSERVED_IOS,
        CTRL_OBSERVED_STALL,
        CTRL_GUARD_FALLBACKS,
        CTRL_QUARANTINE,
        _CTRL_FAMILY_MAX,
        _CTRL_FAMILY_INVALID = -EINVAL,
} CtrlFamily;

/* Which controllers have a sample: a figure a controller does not have is left out, not written as 0. */
typedef enum CtrlSet {
        CTRL_SET_ALL,
        CTRL_SET_WATCHED,       /* have_watcher */
        CTRL_SET_SHADOWED,      /* have_shadow */
} CtrlSet;

static const struct {
        const char *name, *type, *help;
        CtrlSet set;
        bool usec;              /* the value is in µs, written as seconds */
} ctrl_families[_CTRL_FAMILY_MAX] = {
        [CTRL_MAX_LATENCY] = { "nvme_apstd_max_latency_seconds", "gauge",
                               "Latency budget that applies to the controller (max_latency_us).",
                               CTRL_SET_ALL, true },
        [CTRL_UNRESPONSIVE] = { "nvme_apstd_controller_unresponsive", "gauge",
                                "1 while an admin command to the controller has gone unanswered past the deadline "
                                "([daemon] unresponsive_after_sec); nothing more is sent to it meanwhile.",
                                CTRL_SET_ALL, false },
        [CTRL_WORST_WAKE] = { "nvme_apstd_worst_wake_seconds", "gauge",
                              "Longest wait a command can see under the table in force (entry + exit latency, "
                              "0 = APST off).",
                              CTRL_SET_ALL, true },
        [CTRL_TABLE_WRITES] = { "nvme_apstd_table_writes_total", "counter",
                                "APST tables written (Set Features 0x0C that succeeded).",
                                CTRL_SET_ALL, false },
        [CTRL_KERNEL_OVERWRITES] = { "nvme_apstd_kernel_overwrites_total", "counter",
                                     "Times the table written was found replaced by the kernel (reset, resume).",
                                     CTRL_SET_ALL, false },
        [CTRL_ERRORS] = { "nvme_apstd_errors_total", "counter",
                          "Failed admin commands and table verifications.",
                          CTRL_SET_ALL, false },
        [CTRL_HOLDS] = { "nvme_apstd_holds", "gauge",
                         "Latency holds in force on the controller (its own and those on every controller).",
                         CTRL_SET_ALL, false },
        [CTRL_HOLD_SECONDS] = { "nvme_apstd_hold_seconds_total", "counter",
                                "Time the controller spent with at least one latency hold on it (as of the "
                                "daemon's last event).",
                                CTRL_SET_ALL, true },
        [CTRL_OBSERVED_IOS] = { "nvme_apstd_observed_ios_total", "counter",
                                "I/Os completed on the controller's namespaces, as the I/O watcher saw them.",
                                CTRL_SET_WATCHED, false },
        [CTRL_OBSERVED_STALL] = { "nvme_apstd_observed_stall_seconds_total", "counter",
                                  "Time the I/O watcher attributes to commands waiting for the drive to wake.",
                                  CTRL_SET_WATCHED, true },
        [CTRL_GUARD_FALLBACKS] = { "nvme_apstd_guard_fallbacks_total", "counter",
                                   "Times the adaptive policy's guard put the kernel's table back (its own did "
                                   "more than 2% worse).",
                                   CTRL_SET_SHADOWED, false },
        [CTRL_QUARANTINE] = { "nvme_apstd_quarantine_allow_below", "gauge",
                              "Power states from this one on are quarantined: the drive failed in one of them "
                              "(32 = none, 0 = APST off; nvme-apstd quarantine).",
                              CTRL_SET_ALL, false },
};

static bool ctrl_in_set(const MetricsController *c, CtrlSet set) {
        switch (set) {
        case CTRL_SET_WATCHED:
                return c->have_watcher;
        case CTRL_SET_SHADOWED:
                return c->have_shadow;
        case CTRL_SET_ALL:
                break;
        }
        return true;
}

static uint64_t ctrl_value(const MetricsController *c, CtrlFamily k) {
        switch (k) {
        case CTRL_MAX_LATENCY:
                return c->max_latency_us;
        case CTRL_UNRESPONSIVE:
                return c->unresponsive ? 1 : 0;
        case CTRL_WORST_WAKE:
                return c->worst_wake_us;
        case CTRL_TABLE_WRITES:
                return c->table_writes;
        case CTRL_KERNEL_OVERWRITES:
                return c->kernel_overwrites;
        case CTRL_ERRORS:
                return c->errors;
        case CTRL_HOLDS:
                return c->holds;
        case CTRL_HOLD_SECONDS:
                return c->hold_us;
        case CTRL_OBSERVED_IOS:
                return c->observed_ios;
        case CTRL_OBSERVED_STALL:
                return c->observed_stall_us;
        case CTRL_GUARD_FALLBACKS:
                return c->guard_fallbacks;
        case CTRL_QUARANTINE:
                return c->quarantined ? c->quarantine_allow_below : METRICS_MAX_PS;
        case _CTRL_FAMILY_MAX:
        case _CTRL_FAMILY_INVALID:
                break;
        }
        return 0;
}

/* The family @k: its HELP and TYPE even without a sample, then each controller of its set. */
static void ctrl_family(FILE *f, const MetricsState *s, CtrlFamily k) {
        family(f, ctrl_families[k].name, ctrl_families[k].type, ctrl_families[k].help);
        for (size_t i = 0; i < s->n_controllers; i++) {
                const MetricsController *c = &s->controllers[i];
                if (!ctrl_in_set(c, ctrl_families[k].set))
                        continue;
                ctrl_label(f, ctrl_families[k].name, c);
                if (ctrl_families[k].usec)
                        print_us_as_seconds(f, ctrl_value(c, k));
                else
                        fprintf(f, "%" PRIu64 "\n", ctrl_value(c, k));
        }
}

/* The daemon as a whole: start time, reloads. */
static void format_daemon(FILE *f, const MetricsState *s) {
        family(f, "nvme_apstd_start_time_seconds", "gauge", "Start time of the daemon, seconds since the Unix epoch.");
        fputs("nvme_apstd_start_time_seconds ", f);
        print_double(f, s->start_time_seconds);
        family(f, "nvme_apstd_config_reloads_total", "counter", "Configuration reloads that took effect.");
        fprintf(f, "nvme_apstd_config_reloads_total %" PRIu64 "\n", s->config_reloads);
        family(f, "nvme_apstd_config_reload_failures_total", "counter",
               "Configuration reloads rejected (the running configuration was kept).");
        fprintf(f, "nvme_apstd_config_reload_failures_total %" PRIu64 "\n", s->config_reload_failures);
        family(f, "nvme_apstd_holds_taken_total", "counter", "Latency holds taken over D-Bus since the start.");
        fprintf(f, "nvme_apstd_holds_taken_total %" PRIu64 "\n", s->holds_taken);
}

/* Every controller: what it is, its budget and table, its counters. */
static void format_controllers(FILE *f, const MetricsState *s) {
        family(f, "nvme_apstd_controller_info", "gauge",
               "NVMe controller seen by the daemon: model, firmware, APST policy and the table in force (value 1).");
        for (size_t i = 0; i < s->n_controllers; i++) {
                const MetricsController *c = &s->controllers[i];
                fputs("nvme_apstd_controller_info{controller=\"", f);
                label_value(f, c->name);
                fputs("\",model=\"", f);
                label_value(f, c->model);
                fputs("\",firmware=\"", f);
                label_value(f, c->firmware);
                fputs("\",policy=\"", f);
                label_value(f, c->policy);
                fputs("\",table=\"", f);
                label_value(f, c->table);
                fputs("\"} 1\n", f);
        }
        for (CtrlFamily k = CTRL_MAX_LATENCY; k <= CTRL_OBSERVED_IOS; k++)
                ctrl_family(f, s, k);
}

/* "{controller=..,model=..,firmware=..,ps=..} SECONDS" of one state. */
static void exlat_sample(FILE *f, const char *name, const MetricsController *c, unsigned ps, uint32_t us) {
        fprintf(f, "%s{controller=\"", name);
        label_value(f, c->name);
        fputs("\",model=\"", f);
        label_value(f, c->model);
        fputs("\",firmware=\"", f);
        label_value(f, c->firmware);
        fprintf(f, "\",ps=\"%u\"} ", ps);
        print_us_as_seconds(f, us);
}

/* Exit latencies per state, labelled with model and firmware: a fleet's "which drives wake slower than
 * they say" (contrib/prometheus: model_firmware_ps:nvme_apstd_exit_latency_measured_over_advertised:max). */
static void format_exlat(FILE *f, const MetricsState *s) {
        static const char adv[] = "nvme_apstd_exit_latency_advertised_seconds",
                          meas[] = "nvme_apstd_exit_latency_measured_seconds";

        family(f, adv, "gauge", "Exit latency of a power state as the controller's descriptor advertises it.");
        for (size_t i = 0; i < s->n_controllers; i++)
                for (unsigned ps = 0; ps < METRICS_MAX_PS; ps++)
                        if (s->controllers[i].advertised_mask & (1u << ps))
                                exlat_sample(f, adv, &s->controllers[i], ps, s->controllers[i].advertised_exlat_us[ps]);
        family(f, meas, "gauge", "Exit latency of a power state as measured (calibrate, the passive calibration "
               "or the configuration's exit_latency_us), where it is larger than the advertised one and planned "
               "with.");
        for (size_t i = 0; i < s->n_controllers; i++)
                for (unsigned ps = 0; ps < METRICS_MAX_PS; ps++)
                        if (s->controllers[i].measured_mask & (1u << ps))
                                exlat_sample(f, meas, &s->controllers[i], ps, s->controllers[i].measured_exlat_us[ps]);
}

/* The watched controllers: where their I/O is seen, the stall observed. */
static void format_watch(FILE *f, const MetricsState *s) {
        family(f, "nvme_apstd_watch_source_info", "gauge",
               "Where the I/O watcher sees a watched controller's I/O: source bpf (the eBPF program, every "
               "idle gap) or stat (sampling the block stat) (value 1).");
        for (size_t i = 0; i < s->n_controllers; i++) {
                const MetricsController *c = &s->controllers[i];
                if (!c->have_watcher)
                        continue;
                fputs("nvme_apstd_watch_source_info{controller=\"", f);
                label_value(f, c->name);
                fputs("\",source=\"", f);
                label_value(f, c->watch_source);
                fputs("\"} 1\n", f);
        }
        ctrl_family(f, s, CTRL_OBSERVED_STALL);
}

/* One sample per table of a shadow-kernel family: table="applied" and table="kernel". @fixed6 prints six
 * decimals (seconds), else print_double(). */
static void per_table(FILE *f, const char *name, const MetricsController *c, double applied, double kernel,
                      bool fixed6) {
        for (unsigned t = 0; t < 2; t++) {
                fprintf(f, "%s{controller=\"", name);
                label_value(f, c->name);
                fprintf(f, "\",table=\"%s\"} ", t ? "kernel" : "applied");
                if (fixed6)
                        fprintf(f, "%.6f\n", t ? kernel : applied);
                else
                        print_double(f, t ? kernel : applied);
        }
}

/* The shadow kernel's families: only when some controller has the figures. */
static void format_shadow(FILE *f, const MetricsState *s) {
        bool any_shadow = false;

        for (size_t i = 0; i < s->n_controllers; i++)
                any_shadow = any_shadow || s->controllers[i].have_shadow;
        if (!any_shadow)
                return;
        family(f, "nvme_apstd_estimated_energy_joules_total", "counter",
               "Estimated idle and wake-up energy of the drive since start: table=\"applied\" with the tables "
               "the daemon applied, table=\"kernel\" had the kernel's table been in force on the same I/O.");
        for (size_t i = 0; i < s->n_controllers; i++)
                if (s->controllers[i].have_shadow)
                        per_table(f, "nvme_apstd_estimated_energy_joules_total", &s->controllers[i],
                                  s->controllers[i].energy_joules, s->controllers[i].kernel_energy_joules, false);
        family(f, "nvme_apstd_wake_delay_seconds_total", "counter",
               "Time I/O waited for the drive to wake since start: table=\"applied\" as measured with the "
               "tables the daemon applied, table=\"kernel\" had the kernel's table been in force.");
        for (size_t i = 0; i < s->n_controllers; i++)
                if (s->controllers[i].have_shadow)
                        per_table(f, "nvme_apstd_wake_delay_seconds_total", &s->controllers[i],
                                  s->controllers[i].wake_delay_seconds, s->controllers[i].kernel_wake_delay_seconds,
                                  true);
        ctrl_family(f, s, CTRL_GUARD_FALLBACKS);
        ctrl_family(f, s, CTRL_QUARANTINE);
}

/* The cpufreq policies pinned. */
static void format_cpu(FILE *f, const MetricsState *s) {
        family(f, "nvme_apstd_cpufreq_policy_pinned", "gauge",
               "1 while the [cpu] settings are in force on the cpufreq policy, else 0.");
        for (size_t i = 0; i < s->n_cpu_policies; i++) {
                const MetricsCpuPolicy *p = &s->cpu_policies[i];
                fprintf(f, "nvme_apstd_cpufreq_policy_pinned{policy=\"policy%u\",cpus=\"", p->policy);
                label_value(f, p->cpus);
                fprintf(f, "\"} %d\n", p->pinned ? 1 : 0);
        }
}

int metrics_format(const MetricsState *s, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        for (size_t i = 0; i < s->n_controllers; i++)
                if (!s->controllers[i].name || !*s->controllers[i].name)
                        return -EINVAL;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;

        format_daemon(f, s);
        format_controllers(f, s);
        format_exlat(f, s);
        format_watch(f, s);
        format_shadow(f, s);
        format_cpu(f, s);

        if (fclose(f) != 0 || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}
