/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metrics module: the exact text for a known state (names, HELP/TYPE,
 * units, label escaping), empty state, determinism, the writer's
 * write-on-change, and the errors of a missing or unwritable directory.
 * With "print" as argument it prints a full example for promtool
 * (tests/test-metrics-promtool.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fileio.h"
#include "macro.h"
#include "metrics-file.h"

static const MetricsController example_ctrls[] = {
        {
                .name = "nvme0",
                .model = "INTEL SSDPEKKW256G7",
                .firmware = "PSF121C",
                .policy = "budget",
                .table = "ps3@100ms\xe2\x86\x92ps4@2000ms",
                .max_latency_us = 100000,
                .worst_wake_us = 12000,
                .table_writes = 3,
                .kernel_overwrites = 2,
                .errors = 1,
                .holds = 2,
                .hold_us = 86400000000 + 500000,   /* a day and half a second */
                .have_watcher = true,
                .watch_source = "bpf",
                .observed_ios = 1234567,
                .observed_stall_us = 430000,
                .have_shadow = true,
                .energy_joules = 640.5,
                .kernel_energy_joules = 812.25,
                .wake_delay_seconds = 1.2,
                .kernel_wake_delay_seconds = 1.9,
                .guard_fallbacks = 1,
                /* it failed in ps4 once: ps4 quarantined */
                .quarantined = true,
                .quarantine_allow_below = 4,
                /* ps3 and ps4 non-operational; ps4 measured 30.1 ms, 3x its advertised 10 ms */
                .advertised_mask = (1u << 3) | (1u << 4),
                .advertised_exlat_us = { [3] = 300, [4] = 10000 },
                .measured_mask = 1u << 4,
                .measured_exlat_us = { [4] = 30100 },
        },
        {
                /* a hostile model string: quote, backslash, newline, invalid UTF-8 */
                .name = "nvme1",
                .unresponsive = true,
                .model = "A \"B\" C\\D\nE\xff",
                .firmware = NULL,
                .policy = "unmanaged",
                .table = "off",
        },
};

static const MetricsCpuPolicy example_policies[] = {
        { .policy = 0, .cpus = "0-3", .pinned = true },
        { .policy = 4, .cpus = "4-7", .pinned = false },
};

static const MetricsState example = {
        .start_time_seconds = 1764572400.25,
        .config_reloads = 2,
        .config_reload_failures = 1,
        .holds_taken = 7,
        .controllers = example_ctrls,
        .n_controllers = ELEMENTSOF(example_ctrls),
        .cpu_policies = example_policies,
        .n_cpu_policies = ELEMENTSOF(example_policies),
};

static const char example_text[] =
        "# HELP nvme_apstd_start_time_seconds Start time of the daemon, seconds since the Unix epoch.\n"
        "# TYPE nvme_apstd_start_time_seconds gauge\n"
        "nvme_apstd_start_time_seconds 1764572400.250\n"
        "# HELP nvme_apstd_config_reloads_total Configuration reloads that took effect.\n"
        "# TYPE nvme_apstd_config_reloads_total counter\n"
        "nvme_apstd_config_reloads_total 2\n"
        "# HELP nvme_apstd_config_reload_failures_total Configuration reloads rejected (the running configuration was kept).\n"
        "# TYPE nvme_apstd_config_reload_failures_total counter\n"
        "nvme_apstd_config_reload_failures_total 1\n"
        "# HELP nvme_apstd_holds_taken_total Latency holds taken over D-Bus since the start.\n"
        "# TYPE nvme_apstd_holds_taken_total counter\n"
        "nvme_apstd_holds_taken_total 7\n"
        "# HELP nvme_apstd_controller_info NVMe controller seen by the daemon: model, firmware, APST policy and the table in force (value 1).\n"
        "# TYPE nvme_apstd_controller_info gauge\n"
        "nvme_apstd_controller_info{controller=\"nvme0\",model=\"INTEL SSDPEKKW256G7\",firmware=\"PSF121C\",policy=\"budget\",table=\"ps3@100ms\xe2\x86\x92ps4@2000ms\"} 1\n"
        "nvme_apstd_controller_info{controller=\"nvme1\",model=\"A \\\"B\\\" C\\\\D\\nE?\",firmware=\"\",policy=\"unmanaged\",table=\"off\"} 1\n"
        "# HELP nvme_apstd_max_latency_seconds Latency budget that applies to the controller (max_latency_us).\n"
        "# TYPE nvme_apstd_max_latency_seconds gauge\n"
        "nvme_apstd_max_latency_seconds{controller=\"nvme0\"} 0.100000\n"
        "nvme_apstd_max_latency_seconds{controller=\"nvme1\"} 0.000000\n"
        "# HELP nvme_apstd_controller_unresponsive 1 while an admin command to the controller has gone unanswered "
        "past the deadline ([daemon] unresponsive_after_sec); nothing more is sent to it meanwhile.\n"
        "# TYPE nvme_apstd_controller_unresponsive gauge\n"
        "nvme_apstd_controller_unresponsive{controller=\"nvme0\"} 0\n"
        "nvme_apstd_controller_unresponsive{controller=\"nvme1\"} 1\n"
        "# HELP nvme_apstd_worst_wake_seconds Longest wait a command can see under the table in force (entry + exit latency, 0 = APST off).\n"
        "# TYPE nvme_apstd_worst_wake_seconds gauge\n"
        "nvme_apstd_worst_wake_seconds{controller=\"nvme0\"} 0.012000\n"
        "nvme_apstd_worst_wake_seconds{controller=\"nvme1\"} 0.000000\n"
        "# HELP nvme_apstd_table_writes_total APST tables written (Set Features 0x0C that succeeded).\n"
        "# TYPE nvme_apstd_table_writes_total counter\n"
        "nvme_apstd_table_writes_total{controller=\"nvme0\"} 3\n"
        "nvme_apstd_table_writes_total{controller=\"nvme1\"} 0\n"
        "# HELP nvme_apstd_kernel_overwrites_total Times the table written was found replaced by the kernel (reset, resume).\n"
        "# TYPE nvme_apstd_kernel_overwrites_total counter\n"
        "nvme_apstd_kernel_overwrites_total{controller=\"nvme0\"} 2\n"
        "nvme_apstd_kernel_overwrites_total{controller=\"nvme1\"} 0\n"
        "# HELP nvme_apstd_errors_total Failed admin commands and table verifications.\n"
        "# TYPE nvme_apstd_errors_total counter\n"
        "nvme_apstd_errors_total{controller=\"nvme0\"} 1\n"
        "nvme_apstd_errors_total{controller=\"nvme1\"} 0\n"
        "# HELP nvme_apstd_holds Latency holds in force on the controller (its own and those on every controller).\n"
        "# TYPE nvme_apstd_holds gauge\n"
        "nvme_apstd_holds{controller=\"nvme0\"} 2\n"
        "nvme_apstd_holds{controller=\"nvme1\"} 0\n"
        "# HELP nvme_apstd_hold_seconds_total Time the controller spent with at least one latency hold on it (as of the daemon's last event).\n"
        "# TYPE nvme_apstd_hold_seconds_total counter\n"
        "nvme_apstd_hold_seconds_total{controller=\"nvme0\"} 86400.500000\n"
        "nvme_apstd_hold_seconds_total{controller=\"nvme1\"} 0.000000\n"
        "# HELP nvme_apstd_observed_ios_total I/Os completed on the controller's namespaces, as the I/O watcher saw them.\n"
        "# TYPE nvme_apstd_observed_ios_total counter\n"
        "nvme_apstd_observed_ios_total{controller=\"nvme0\"} 1234567\n"
        "# HELP nvme_apstd_exit_latency_advertised_seconds Exit latency of a power state as the controller's "
        "descriptor advertises it.\n"
        "# TYPE nvme_apstd_exit_latency_advertised_seconds gauge\n"
        "nvme_apstd_exit_latency_advertised_seconds{controller=\"nvme0\",model=\"INTEL SSDPEKKW256G7\","
        "firmware=\"PSF121C\",ps=\"3\"} 0.000300\n"
        "nvme_apstd_exit_latency_advertised_seconds{controller=\"nvme0\",model=\"INTEL SSDPEKKW256G7\","
        "firmware=\"PSF121C\",ps=\"4\"} 0.010000\n"
        "# HELP nvme_apstd_exit_latency_measured_seconds Exit latency of a power state as measured (calibrate, the "
        "passive calibration or the configuration's exit_latency_us), where it is larger than the advertised one "
        "and planned with.\n"
        "# TYPE nvme_apstd_exit_latency_measured_seconds gauge\n"
        "nvme_apstd_exit_latency_measured_seconds{controller=\"nvme0\",model=\"INTEL SSDPEKKW256G7\","
        "firmware=\"PSF121C\",ps=\"4\"} 0.030100\n"
        "# HELP nvme_apstd_watch_source_info Where the I/O watcher sees a watched controller's I/O: source bpf (the eBPF program, every idle gap) or stat (sampling the block stat) (value 1).\n"
        "# TYPE nvme_apstd_watch_source_info gauge\n"
        "nvme_apstd_watch_source_info{controller=\"nvme0\",source=\"bpf\"} 1\n"
        "# HELP nvme_apstd_observed_stall_seconds_total Time the I/O watcher attributes to commands waiting for the drive to wake.\n"
        "# TYPE nvme_apstd_observed_stall_seconds_total counter\n"
        "nvme_apstd_observed_stall_seconds_total{controller=\"nvme0\"} 0.430000\n"
        "# HELP nvme_apstd_estimated_energy_joules_total Estimated idle and wake-up energy of the drive since start: table=\"applied\" with the tables the daemon applied, table=\"kernel\" had the kernel's table been in force on the same I/O.\n"
        "# TYPE nvme_apstd_estimated_energy_joules_total counter\n"
        "nvme_apstd_estimated_energy_joules_total{controller=\"nvme0\",table=\"applied\"} 640.500\n"
        "nvme_apstd_estimated_energy_joules_total{controller=\"nvme0\",table=\"kernel\"} 812.250\n"
        "# HELP nvme_apstd_wake_delay_seconds_total Time I/O waited for the drive to wake since start: table=\"applied\" as measured with the tables the daemon applied, table=\"kernel\" had the kernel's table been in force.\n"
        "# TYPE nvme_apstd_wake_delay_seconds_total counter\n"
        "nvme_apstd_wake_delay_seconds_total{controller=\"nvme0\",table=\"applied\"} 1.200000\n"
        "nvme_apstd_wake_delay_seconds_total{controller=\"nvme0\",table=\"kernel\"} 1.900000\n"
        "# HELP nvme_apstd_guard_fallbacks_total Times the adaptive policy's guard put the kernel's table back (its own did more than 2% worse).\n"
        "# TYPE nvme_apstd_guard_fallbacks_total counter\n"
        "nvme_apstd_guard_fallbacks_total{controller=\"nvme0\"} 1\n"
        "# HELP nvme_apstd_quarantine_allow_below Power states from this one on are quarantined: the drive failed in one of them (32 = none, 0 = APST off; nvme-apstd quarantine).\n"
        "# TYPE nvme_apstd_quarantine_allow_below gauge\n"
        "nvme_apstd_quarantine_allow_below{controller=\"nvme0\"} 4\n"
        "nvme_apstd_quarantine_allow_below{controller=\"nvme1\"} 32\n"
        "# HELP nvme_apstd_cpufreq_policy_pinned 1 while the [cpu] settings are in force on the cpufreq policy, else 0.\n"
        "# TYPE nvme_apstd_cpufreq_policy_pinned gauge\n"
        "nvme_apstd_cpufreq_policy_pinned{policy=\"policy0\",cpus=\"0-3\"} 1\n"
        "nvme_apstd_cpufreq_policy_pinned{policy=\"policy4\",cpus=\"4-7\"} 0\n";

static void assert_text(const char *got, const char *want) {
        if (strcmp(got, want) != 0) {
                size_t i = 0;
                while (got[i] && got[i] == want[i])
                        i++;
                fprintf(stderr, "differs at byte %zu:\n--- got\n%s\n--- want\n%s\n", i, got + i, want + i);
                CHECK(false);
        }
}

static void test_format(void) {
        _cleanup_free_ char *a = NULL, *b = NULL;

        CHECK(metrics_format(&example, &a) == 0);
        assert_text(a, example_text);
        /* deterministic: the writer relies on it */
        CHECK(metrics_format(&example, &b) == 0);
        CHECK(strcmp(a, b) == 0);
        printf("ok /metrics/format\n");
}

static void test_empty(void) {
        _cleanup_free_ char *t = NULL;
        const MetricsState s = {};
        unsigned help = 0, type = 0, samples = 0;

        CHECK(metrics_format(&s, &t) == 0);
        /* every family announced but the shadow kernel's three (no controller has its figures),
         * only the daemon-wide ones with samples */
        for (const char *l = t; *l; l = strchr(l, '\n') + 1) {
                if (strncmp(l, "# HELP ", 7) == 0)
                        help++;
                else if (strncmp(l, "# TYPE ", 7) == 0)
                        type++;
                else
                        samples++;
        }
        CHECK(help == 19 && type == 19);
        CHECK(samples == 4);
        CHECK(strstr(t, "\nnvme_apstd_start_time_seconds 0.000\n"));
        CHECK(!strstr(t, "nvme_apstd_estimated_energy_joules_total") && !strstr(t, "nvme_apstd_wake_delay_seconds_total") &&
              !strstr(t, "nvme_apstd_guard_fallbacks_total"));
        printf("ok /metrics/empty\n");
}

static void test_bad(void) {
        const MetricsController c = { .name = "" };
        const MetricsState s = { .controllers = &c, .n_controllers = 1 };
        char *t = NULL;

        CHECK(metrics_format(&s, &t) == -EINVAL);
        CHECK(!t);
        printf("ok /metrics/no-name\n");
}

static char *slurp(const char *path) {
        static char buf[16384];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t k;

        REQUIRE(fd >= 0);
        k = read(fd, buf, sizeof buf - 1);
        CHECK(k >= 0);
        buf[k] = 0;
        close(fd);
        return buf;
}

static unsigned count_entries(const char *dir) {
        char cmd[512];
        FILE *p;
        unsigned n = 0;
        int c;

        (void) snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
        p = popen(cmd, "re");
        REQUIRE(p);
        while ((c = fgetc(p)) != EOF)
                n += c == '\n';
        pclose(p);
        return n;
}

static void test_writer(void) {
        char dir[] = "/tmp/test-metrics-XXXXXX", path[256], msg[512];
        MetricsWriter w;
        MetricsController c = example_ctrls[0];
        MetricsState s = example;
        struct stat st;
        bool new_error;

        REQUIRE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/nvme-apstd.prom", dir);
        s.controllers = &c;
        s.n_controllers = 1;

        CHECK(metrics_writer_init(&w, path) == 0);
        CHECK(metrics_writer_update(&w, &s, &new_error) == 1 && !new_error);
        CHECK(strstr(slurp(path), "nvme_apstd_table_writes_total{controller=\"nvme0\"} 3\n"));
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        /* no temporary file left behind */
        CHECK(count_entries(dir) == 1);

        /* unchanged: nothing written, even if the file was removed meanwhile (we never look at it) */
        CHECK(unlink(path) == 0);
        CHECK(metrics_writer_update(&w, &s, NULL) == 0);
        CHECK(access(path, F_OK) < 0 && errno == ENOENT);

        /* a kernel reset seen: written again with the new value */
        c.kernel_overwrites++;
        c.table_writes++;
        CHECK(metrics_writer_update(&w, &s, NULL) == 1);
        CHECK(strstr(slurp(path), "nvme_apstd_kernel_overwrites_total{controller=\"nvme0\"} 3\n"));
        CHECK(strstr(slurp(path), "nvme_apstd_table_writes_total{controller=\"nvme0\"} 4\n"));
        s.config_reloads++;
        CHECK(metrics_writer_update(&w, &s, NULL) == 1);
        CHECK(strstr(slurp(path), "\nnvme_apstd_config_reloads_total 3\n"));
        CHECK(unlink(path) == 0);
        metrics_writer_done(&w);
        metrics_writer_done(&w);

        /* the directory is missing: one clear error, reported as new once */
        {
                char missing[300];
                (void) snprintf(missing, sizeof missing, "%s/gone/nvme-apstd.prom", dir);
                CHECK(metrics_writer_init(&w, missing) == 0);
                CHECK(metrics_writer_update(&w, &s, &new_error) == -ENOENT && new_error);
                CHECK(metrics_writer_update(&w, &s, &new_error) == -ENOENT && !new_error);
                metrics_strerror(missing, -ENOENT, msg, sizeof msg);
                {
                        char want[512];
                        (void) snprintf(want, sizeof want, "cannot write %s: directory %s/gone does not exist "
                                        "(create it, or change [metrics] path)", missing, dir);
                        CHECK(strcmp(msg, want) == 0);
                }
                /* once the directory exists, the same text is written (a failed write is retried) */
                {
                        char gone[300];
                        (void) snprintf(gone, sizeof gone, "%s/gone", dir);
                        CHECK(mkdir(gone, 0755) == 0);
                        CHECK(metrics_writer_update(&w, &s, &new_error) == 1 && !new_error);
                        CHECK(access(missing, F_OK) == 0);
                        CHECK(unlink(missing) == 0 && rmdir(gone) == 0);
                }
                metrics_writer_done(&w);
        }

        /* a directory that cannot be written: chmod for a normal user; root ignores modes, but not sysfs's */
        {
                char ro[100], where[300];
                int r;
                if (geteuid() != 0) {
                        (void) snprintf(ro, sizeof ro, "%s/ro", dir);
                        CHECK(mkdir(ro, 0555) == 0);
                        (void) snprintf(where, sizeof where, "%s/nvme-apstd.prom", ro);
                } else
                        (void) snprintf(where, sizeof where, "/sys/nvme-apstd-test.prom");
                CHECK(metrics_writer_init(&w, where) == 0);
                r = metrics_writer_update(&w, &s, &new_error);
                CHECK(r < 0 && new_error);
                metrics_strerror(where, r, msg, sizeof msg);
                fprintf(stderr, "unwritable directory: %d: %s\n", r, msg);
                CHECK(r == -EACCES || r == -EROFS || r == -EPERM);
                CHECK(strncmp(msg, "cannot write ", 13) == 0 && !strstr(msg, "does not exist"));
                metrics_writer_done(&w);
                if (geteuid() != 0)
                        CHECK(rmdir(ro) == 0);
        }

        /* the writer underneath (tested in full in test-util): replaces, keeps the mode */
        (void) snprintf(path, sizeof path, "%s/x", dir);
        CHECK(write_file_atomic(path, "one", 3, 0600) == 0);
        CHECK(write_file_atomic(path, "two", 3, 0600) == 0);
        CHECK(strcmp(slurp(path), "two") == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
        CHECK(unlink(path) == 0);
        CHECK(count_entries(dir) == 0);
        CHECK(rmdir(dir) == 0);
        printf("ok /metrics/writer\n");
}

int main(int argc, char *argv[]) {
        if (argc > 1 && strcmp(argv[1], "print") == 0) {
                _cleanup_free_ char *t = NULL;
                CHECK(metrics_format(&example, &t) == 0);
                fputs(t, stdout);
                return 0;
        }
        test_format();
        test_empty();
        test_bad();
        test_writer();
        return check_exit_status();
}
