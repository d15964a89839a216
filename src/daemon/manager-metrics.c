/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's metrics file glue (see manager-metrics.h): builds a MetricsState from
 * the Manager and hands it to the writer (metrics-file.h), which replaces the file
 * only when its text changed. Called after the loop has handled an event, so
 * it adds no wake-up of its own; an idle daemon writes nothing.
 *
 * The writer follows [metrics] path: a reload that changes it finishes the
 * old writer (the old file is left as it is) and starts one on the new path.
 * A file that cannot be written is logged once, naming the path, until the
 * error changes or the path does; the daemon carries on without it.
 */

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpuset.h"
#include "log.h"
#include "manager-holds.h"
#include "manager-metrics.h"
#include "manager-watch.h"
#include "metrics-file.h"

/* A cpufreq policy pinned at some point since start: it stays in the file (at 0) once released. */
typedef struct SeenPolicy {
        unsigned cpu;
        char cpus[64];
        bool pinned;
} SeenPolicy;

struct ManagerMetrics {
        MetricsWriter writer;
        bool active;                    /* writer holds a path */
        double start_time_seconds;
        SeenPolicy *policies;
        size_t n_policies;
};

/* Table and worst wake to report: what we wrote, else what was found on the controller; "unknown"
 * (worst wake 0) while the last attempt failed: our table may have been replaced and not rewritten. */
static void ctrl_table(const Controller *c, bool failed, char *buf, size_t n, uint32_t *ret_worst) {
        const ApstTable *t = failed ? NULL : c->have_written ? &c->written : c->have_original ? &c->original : NULL;

        *ret_worst = 0;
        if (!t) {
                (void) snprintf(buf, n, "unknown");
                return;
        }
        apst_summary(t, buf, n);
        if (c->identified && c->sys.transport[0] && strcmp(c->sys.transport, "pcie") == 0)
                *ret_worst = apst_worst_wake_us(t, &c->id);
}

static const char *ctrl_policy(const ManagerCtrl *mc) {
        const Controller *c = &mc->controller;

        if (!c->identified)
                return "unknown";
        switch (c->plan.verdict) {
        case DEVICE_MANAGE:
                return apst_policy_to_string(c->plan.params.policy);
        case DEVICE_UNSUPPORTED:
                return "unsupported";
        case DEVICE_DISABLED:
        case DEVICE_NOT_PCIE:
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                break;
        }
        return "unmanaged";
}

/* Bring the list of policies up to date with the pins in force now. */
static int metrics_update_policies(ManagerMetrics *mm, const CpuPin *pin) {
        const CpufreqSettings *s = NULL;
        size_t n = pin ? cpupin_pinned(pin, &s) : 0;

        for (size_t i = 0; i < mm->n_policies; i++)
                mm->policies[i].pinned = false;
        for (size_t k = 0; k < n; k++) {
                SeenPolicy *p = NULL;

                for (size_t i = 0; i < mm->n_policies && !p; i++)
                        if (mm->policies[i].cpu == s[k].cpu)
                                p = &mm->policies[i];
                if (!p) {
                        SeenPolicy *t = realloc(mm->policies, (mm->n_policies + 1) * sizeof *t);
                        if (!t)
                                return -ENOMEM;
                        mm->policies = t;
                        p = &mm->policies[mm->n_policies++];
                        *p = (SeenPolicy) { .cpu = s[k].cpu };
                }
                /* the CPU list is written as found: a long one is cut between ranges */
                cpuset_format(&s[k].cpus, p->cpus, sizeof p->cpus);
                p->pinned = true;
        }
        return 0;
}

/* Follow [metrics] path. Return: whether there is a file to write. */
static bool metrics_follow_path(Manager *m) {
        ManagerMetrics *mm = m->metrics;
        const char *path = m->config.metrics.path;
        int r;

        if (mm->active && path && strcmp(mm->writer.path, path) == 0)
                return true;
        if (mm->active) {
                log_info("Metrics: no longer writing %s.", mm->writer.path);
                metrics_writer_done(&mm->writer);
                mm->active = false;
        }
        if (!path)
                return false;
        r = metrics_writer_init(&mm->writer, path);
        if (r < 0) {
                log_error_errno(r, "Metrics: cannot set up %s: %m", path);
                return false;
        }
        mm->active = true;
        return true;
}

/* The state is made on first use; the start time is when the daemon first wrote metrics. */
static int metrics_ensure(Manager *m) {
        struct timespec ts;

        if (m->metrics)
                return 0;
        m->metrics = calloc(1, sizeof *m->metrics);
        if (!m->metrics)
                return -ENOMEM;
        if (clock_gettime(CLOCK_REALTIME, &ts) == 0) {
                int64_t ms = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;  /* whole ms: stable text */
                m->metrics->start_time_seconds = (double) ms / 1e3;
        }
        return 0;
}

/* The non-operational states' advertised exit latencies, and the measured ones the plan uses. */
static void metrics_controller_exlat(const Controller *c, MetricsController *row) {
        if (!c->identified)
                return;
        for (unsigned ps = 0; ps <= c->id.npss && ps < MIN(IDCTRL_MAX_PS, METRICS_MAX_PS); ps++) {
                if (!c->id.psd[ps].non_operational)
                        continue;
                row->advertised_mask |= 1u << ps;
                row->advertised_exlat_us[ps] = c->id.psd[ps].exlat_us;
                if (c->plan.calib_raised & (1u << ps)) {
                        row->measured_mask |= 1u << ps;
                        row->measured_exlat_us[ps] = c->plan.plan_id.psd[ps].exlat_us;
                }
        }
}

/* Its latency holds: how many apply, how long it had one. */
static void metrics_controller_holds(const ManagerCtrl *c, MetricsController *row) {
        const HoldSet *set = manager_holds_set(c->manager);

        for (size_t i = 0; i < set->n; i++)
                if (hold_applies(&set->holds[i], c->controller.name))
                        row->holds++;
        row->hold_us = manager_holds_ctrl_usec(c);
}

/* One controller's row; @table (of @size bytes) holds the table text the row points at. */
static void metrics_controller_row(const ManagerCtrl *c, char *table, size_t size, MetricsController *row) {
        ctrl_table(&c->controller, c->failed, table, size, &row->worst_wake_us);
        row->name = c->controller.name;
        row->unresponsive = c->unresponsive;
        row->quarantined = c->controller.quarantine_below != QUARANTINE_NONE;
        row->quarantine_allow_below = c->controller.quarantine_below;
        row->model = controller_model(&c->controller);
        row->firmware = controller_firmware(&c->controller);
        row->policy = ctrl_policy(c);
        row->table = table;
        row->max_latency_us = c->controller.identified ? c->controller.plan.params.max_latency_us : 0;
        metrics_controller_exlat(&c->controller, row);
        row->table_writes = c->stats.table_writes;
        row->kernel_overwrites = c->stats.kernel_overwrites;
        row->errors = c->stats.errors;
        metrics_controller_holds(c, row);
        row->have_watcher = manager_watch_observed(c, &row->observed_ios, &row->observed_stall_us);
        row->watch_source = manager_watch_source(c);
        ManagerSavings sv;
        manager_watch_savings(c, &sv);
        if (sv.known) {
                row->have_shadow = true;
                row->energy_joules = sv.total_applied.energy_uwns / 1e15;
                row->kernel_energy_joules = sv.total_kernel.energy_uwns / 1e15;
                row->wake_delay_seconds = sv.total_applied.wake_ns / 1e9;
                row->kernel_wake_delay_seconds = sv.total_kernel.wake_ns / 1e9;
                row->guard_fallbacks = sv.fallbacks;
        }
}

void manager_metrics_update(Manager *m) {
        ManagerMetrics *mm;
        MetricsCpuPolicy *pol = NULL;
        MetricsController *ctl = NULL;
        char (*tables)[256] = NULL;
        bool new_error = false, had_error;
        int r;

        if (metrics_ensure(m) < 0) {
                (void) log_error_errno(-ENOMEM, "Metrics: out of memory.");
                return;
        }
        mm = m->metrics;
        if (!metrics_follow_path(m))
                return;
        if (metrics_update_policies(mm, m->cpupin) < 0) {
                (void) log_error_errno(-ENOMEM, "Metrics: out of memory.");
                return;
        }

        ctl = calloc(m->n_ctrls + 1, sizeof *ctl);
        tables = calloc(m->n_ctrls + 1, sizeof *tables);
        pol = calloc(mm->n_policies + 1, sizeof *pol);
        if (!ctl || !tables || !pol) {
                (void) log_error_errno(-ENOMEM, "Metrics: out of memory.");
                goto out;
        }
        for (size_t i = 0; i < m->n_ctrls; i++)
                metrics_controller_row(m->ctrls[i], tables[i], sizeof tables[i], &ctl[i]);
        for (size_t i = 0; i < mm->n_policies; i++)
                pol[i] = (MetricsCpuPolicy) {
                        .policy = mm->policies[i].cpu,
                        .cpus = mm->policies[i].cpus,
                        .pinned = mm->policies[i].pinned,
                };

        had_error = mm->writer.error != 0;
        r = metrics_writer_update(&mm->writer,
                                  &(MetricsState) {
                                          .start_time_seconds = mm->start_time_seconds,
                                          .config_reloads = m->config_reloads,
                                          .config_reload_failures = m->config_reload_failures,
                                          .holds_taken = manager_holds_taken(m),
                                          .controllers = ctl,
                                          .n_controllers = m->n_ctrls,
                                          .cpu_policies = pol,
                                          .n_cpu_policies = mm->n_policies,
                                  },
                                  &new_error);
        if (r < 0 && new_error) {
                char msg[PATH_MAX + 256];

                metrics_strerror(mm->writer.path, r, msg, sizeof msg);
                log_error_errno(r, "Metrics: %s ([metrics] path in %s); carrying on without the metrics file.", msg,
                                m->config_path);
        } else if (r > 0 && had_error)
                log_info("Metrics: %s written again.", mm->writer.path);
out:
        free(ctl);
        free(tables);
        free(pol);
}

void manager_metrics_free(Manager *m) {
        if (!m->metrics)
                return;
        metrics_writer_done(&m->metrics->writer);
        free(m->metrics->policies);
        free(m->metrics);
        m->metrics = NULL;
}
