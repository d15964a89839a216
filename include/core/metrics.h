/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon's state as Prometheus metrics, in the text exposition format
 * (version 0.0.4) that node_exporter's textfile collector reads.
 *
 * metrics_format() is pure: a MetricsState in, text out, nothing read or
 * written. metrics-file.h's MetricsWriter adds the file.
 *
 * Names follow Prometheus' conventions (base units in the name, counters end
 * in _total, info metrics in _info with value 1); the list, with the meaning
 * of each, is in nvme-apstd(8), section METRICS.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Power states a controller may describe: NVMe's NPSS is 0-based in one byte, but Identify's
 * structure has 32 descriptors (NVMe 2.0 base specification, figure 275: PSD0..PSD31). */
#define METRICS_MAX_PS 32u

/* One controller, as the daemon sees it. Strings may be NULL (written as ""). */
typedef struct MetricsController {
        const char *name;               /* "nvme0"; required */
        const char *model;
        const char *firmware;
        const char *policy;             /* "budget", "kernel"; "unmanaged" for a controller left alone */
        const char *table;              /* the table in force, apst_summary(): "ps3@100ms→ps4@2000ms", "off" */
        uint32_t max_latency_us;        /* the latency budget that applies */
        uint32_t worst_wake_us;         /* apst_worst_wake_us() of the table in force */
        uint64_t table_writes;          /* Set Features 0x0C that succeeded */
        uint64_t kernel_overwrites;     /* times our table was found replaced (reset, resume) */
        uint64_t errors;                /* admin commands that failed, verifications that did not match */
        bool unresponsive;              /* an admin command outlived the deadline and has not returned */
        bool quarantined;               /* a power state is quarantined (doc/quarantine.md) */
        uint8_t quarantine_allow_below; /* ... from this one on (0 = APST off) */
        uint32_t holds;                 /* latency holds in force on it (its own and those on every controller) */
        uint64_t hold_us;               /* time spent with at least one of them, µs */
        bool have_watcher;              /* the I/O watcher ran: the next three are meaningful */
        const char *watch_source;       /* where it sees the I/O: "bpf" or "stat" */
        uint64_t observed_ios;          /* I/Os completed, as the watcher saw them in the block stats */
        uint64_t observed_stall_us;     /* time the watcher attributes to waking the drive */
        /* The shadow kernel (shadow.h): what the tables applied cost since start, and what the
         * kernel's table would have cost on the same I/O. Only with the exact (eBPF) source. */
        bool have_shadow;               /* the figures below are meaningful */
        double energy_joules;           /* estimated idle + wake-up energy, tables applied */
        double kernel_energy_joules;    /* the same for the kernel's table */
        double wake_delay_seconds;      /* wake-up delay paid (measured), tables applied */
        double kernel_wake_delay_seconds; /* what the kernel's table would have made I/O wait */
        uint64_t guard_fallbacks;       /* times the guard put the kernel's table back */
        /* Exit latencies per power state (bit N = psN): advertised by the descriptor, and measured
         * (a calibration, the passive one, or the configuration's exit_latency_us) where the plan
         * uses the measurement because it is larger. */
        uint32_t advertised_mask, measured_mask;
        uint32_t advertised_exlat_us[METRICS_MAX_PS];
        uint32_t measured_exlat_us[METRICS_MAX_PS];
} MetricsController;

/* One cpufreq policy. */
typedef struct MetricsCpuPolicy {
        unsigned policy;                /* N of policyN: its lowest CPU */
        const char *cpus;               /* "0-3" (affected_cpus as a list); may be NULL */
        bool pinned;                    /* [cpu] settings are in force on it now */
} MetricsCpuPolicy;

typedef struct MetricsState {
        double start_time_seconds;      /* CLOCK_REALTIME at start, seconds since the epoch */
        uint64_t config_reloads;        /* successful reloads (SIGHUP) */
        uint64_t config_reload_failures;/* rejected reloads (the old configuration was kept) */
        uint64_t holds_taken;           /* latency holds taken since the start */
        const MetricsController *controllers;
        size_t n_controllers;
        const MetricsCpuPolicy *cpu_policies;
        size_t n_cpu_policies;
} MetricsState;

/**
 * metrics_format() - the text exposition of @s
 * @ret: malloc'd, NUL-terminated text ending in a newline (caller frees)
 *
 * Every family has its HELP and TYPE lines even when it has no samples (no
 * controllers), so the set of names is always the same; except the shadow kernel's
 * families (nvme_apstd_estimated_energy_joules_total,
 * nvme_apstd_wake_delay_seconds_total, nvme_apstd_guard_fallbacks_total), which appear
 * only when a controller has the figures: an empty family of estimates reads as "no
 * savings" on a dashboard. Label values are
 * escaped (backslash, double quote, newline); bytes that are not printable
 * ASCII or UTF-8 are replaced by '?'. Deterministic: equal states give equal
 * text, which is what lets the writer skip unchanged updates.
 * Return: 0, -EINVAL (a controller without a name), -ENOMEM.
 */
int metrics_format(const MetricsState *s, char **ret);
