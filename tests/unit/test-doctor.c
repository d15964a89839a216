/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * doctor.c on constructed snapshots (no I/O): the decisions the fake-harness
 * tests (tests/doctor) do not reach — quirks, pm_qos = 0, a running daemon
 * with another table, policy = kernel, thresholds of the request size checks,
 * [cpu] pinning already in place — the exit status, the kernel log filter,
 * and the exact JSON of one finding (the schema, pinned).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "doctor.h"
#include "quarantine.h"
#include "doctor-out.h"
#include "macro.h"

static IdCtrl intel;   /* INTEL SSDPEKKW256G7: ps3 and ps4 non-operational */

static void load_intel(void) {
        FILE *f = fopen(TEST_DATA_DIR "/idctrl/00-intel-ssdpekkw256g7.bin", "re");
        uint8_t buf[IDCTRL_SIZE];

        REQUIRE(f);
        CHECK(fread(buf, 1, sizeof buf, f) == sizeof buf);
        fclose(f);
        CHECK(idctrl_parse_binary(buf, sizeof buf, &intel) == 0);
        CHECK(intel.apst_supported && intel.npss == 4);
}

static DoctorCtrl ctrl_with(const ApstTable *t) {
        DoctorCtrl d = {
                .sys = { .name = "nvme0", .transport = "pcie", .state = "live", .pci_vendor = 0x8086,
                         .pci_device = 0x0010 },
                .id = intel,
                .table = *t,
                .have_pm_qos = true,
                .pm_qos_latency_tolerance_us = 100000,
                .disk = "nvme0n1",
                .have_queue = true,
                .max_hw_sectors_kb = 4096,
                .max_sectors_kb = 1280,
        };
        return d;
}

static ApstTable kernel_default_table(void) {
        ApstParams p = APST_PARAMS_DEFAULT;
        ApstPlan plan;

        p.policy = APST_POLICY_KERNEL;
        CHECK(apst_build(&intel, NULL, &p, &plan) == 0);
        return plan.table;
}

static DoctorSnapshot snapshot(const Config *cfg, DoctorCtrl *d) {
        DoctorSnapshot s = {
                .sysfs_root = "/sys",
                .proc_root = "/proc",
                .config = cfg,
                .have_nvme_core = true,
                .nvme_core = APST_PARAMS_DEFAULT,
                .ctrls = d,
                .n_ctrls = d ? 1 : 0,
                .daemon = DOCTOR_DAEMON_NOT_RUNNING,
                .cpufreq_error = -ENODEV,
                .hwp_dynamic_boost = -1,
                .min_perf_pct = -1,
                .have_kernel_log = true,
        };
        s.nvme_core.policy = APST_POLICY_KERNEL;
        return s;
}

static Config parse(const char *text) {
        Config c;
        CHECK(config_parse_string(text, "t.conf", &c, NULL) == 0);
        return c;
}

static const DoctorFinding *find(const DoctorReport *r, DoctorFindingId id) {
        for (size_t i = 0; i < r->n_findings; i++)
                if (r->findings[i].id == id)
                        return &r->findings[i];
        return NULL;
}

static const char *evidence_of(const DoctorFinding *f, const char *source) {
        for (size_t i = 0; i < f->n_evidence; i++)
                if (strcmp(f->evidence[i].source, source) == 0)
                        return f->evidence[i].value;
        return NULL;
}

static bool fix_has(const DoctorFinding *f, const char *text) {
        for (size_t i = 0; i < f->n_fix; i++)
                if (strstr(f->fix[i], text))
                        return true;
        return false;
}

static void test_ids(void) {
        for (DoctorFindingId i = 0; i < _DOCTOR_FINDING_MAX; i++) {
                const char *s = doctor_finding_id_to_string(i);
                CHECK(s);
                for (DoctorFindingId k = 0; k < i; k++)
                        CHECK(strcmp(s, doctor_finding_id_to_string(k)) != 0);
        }
        CHECK(!doctor_finding_id_to_string(_DOCTOR_FINDING_MAX));
        printf("ok /doctor/ids\n");
}

static void test_kernel_log_filter(void) {
        CHECK(doctor_kernel_log_relevant("software IO TLB: mapped [mem 0x00000000bbfdf000-0x00000000bffdf000] (64MB)"));
        CHECK(doctor_kernel_log_relevant("DMAR: IOMMU enabled"));
        CHECK(doctor_kernel_log_relevant("iommu: Default domain type: Translated"));
        CHECK(doctor_kernel_log_relevant("AMD-Vi: Interrupt remapping enabled"));
        CHECK(doctor_kernel_log_relevant("Memory Encryption Features active: AMD SME"));
        CHECK(doctor_kernel_log_relevant("SEV: Status: SEV SEV-ES"));
        CHECK(!doctor_kernel_log_relevant("nvme nvme0: pci function 0000:01:00.0"));
        CHECK(!doctor_kernel_log_relevant("several things happened"));
        CHECK(!doctor_kernel_log_relevant(""));
        printf("ok /doctor/kernel-log-filter\n");
}

static void test_exit_status(void) {
        DoctorNote ok = { .subject = (char *) "nvme0", .text = (char *) "x", .error = false };
        DoctorNote bad = { .subject = (char *) "nvme1", .text = (char *) "y", .error = true };
        DoctorFinding f = { .id = DOCTOR_CPU_SLOW_RAMP };
        DoctorReport r = {};

        CHECK(doctor_exit_status(&r) == 0);
        r.skipped = &ok;
        r.n_skipped = 1;
        CHECK(doctor_exit_status(&r) == 0);    /* not looked at, but nothing that should have been */
        r.skipped = &bad;
        CHECK(doctor_exit_status(&r) == 2);
        r.findings = &f;
        r.n_findings = 1;
        CHECK(doctor_exit_status(&r) == 1);    /* findings win: they are real even if the look was partial */
        printf("ok /doctor/exit-status\n");
}

/* The NO_APST quirk turned APST off: the fix is force = yes, not "start the daemon". */
static void test_quirk(void) {
        Config cfg = parse("");
        ApstTable off = {};
        DoctorCtrl d = ctrl_with(&off);
        DoctorSnapshot s;
        DoctorReport r;
        const DoctorFinding *f;

        (void) snprintf(d.id.model, sizeof d.id.model, "THNSF5256GPUK TOSHIBA");
        d.id.vid = 0x1179;
        d.have_pm_qos = false;
        s = snapshot(&cfg, &d);
        /* with the quirk our own plan also keeps APST off: nothing to report */
        CHECK(doctor_examine(&s, &r) == 0);
        CHECK(r.n_findings == 0);
        doctor_report_done(&r);

        /* force = yes in the configuration: we would turn it on, the kernel did not */
        config_done(&cfg);
        cfg = parse("[apst]\nforce = yes\n");
        s = snapshot(&cfg, &d);
        CHECK(doctor_examine(&s, &r) == 0);
        CHECK(r.n_findings == 1);
        f = find(&r, DOCTOR_APST_KERNEL_DISABLED);
        CHECK(f);
        CHECK(strstr(f->why, "the cause seen here is: the NO_APST quirk"));
        CHECK(fix_has(f, "force = yes"));
        CHECK(!fix_has(f, "Start nvme-apstd"));
        CHECK(strstr(evidence_of(f, "kernel quirk list (drivers/nvme/host/core.c, pci.c)"), "NVME_QUIRK_NO_APST"));
        CHECK(strcmp(evidence_of(f, "/sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us"),
                     "(absent: the kernel did not enable APST)") == 0);
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/apst/quirk\n");
}

static void test_pm_qos_zero(void) {
        Config cfg = parse("");
        ApstTable off = {};
        DoctorCtrl d = ctrl_with(&off);
        DoctorSnapshot s;
        DoctorReport r;
        const DoctorFinding *f;

        d.pm_qos_latency_tolerance_us = 0;
        s = snapshot(&cfg, &d);
        CHECK(doctor_examine(&s, &r) == 0);
        f = find(&r, DOCTOR_APST_KERNEL_DISABLED);
        CHECK(f && r.n_findings == 1);    /* not also "daemon not running" for the same controller */
        CHECK(strstr(f->why, "pm_qos_latency_tolerance_us=0"));
        CHECK(fix_has(f, "echo 100000 > /sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us"));
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/apst/pm-qos-zero\n");
}

/* A running daemon and another table than this configuration's; and the same table: clean. */
static void test_table_differs(void) {
        Config cfg = parse("");
        ApstTable k = kernel_default_table();
        DoctorCtrl d = ctrl_with(&k);
        DoctorSnapshot s;
        DoctorReport r;
        const DoctorFinding *f;

        s = snapshot(&cfg, &d);
        s.daemon = DOCTOR_DAEMON_RUNNING;
        s.daemon_pid = 4242;
        CHECK(doctor_examine(&s, &r) == 0);
        f = find(&r, DOCTOR_APST_TABLE_DIFFERS);
        CHECK(f && r.n_findings == 1);
        CHECK(strstr(f->title, "pid 4242"));
        CHECK(fix_has(f, "systemctl reload nvme-apstd"));
        CHECK(fix_has(f, "journalctl -u nvme-apstd NVME_CTRL=nvme0"));
        doctor_report_done(&r);

        /* policy = kernel in the configuration: the kernel's table is the one we would write */
        config_done(&cfg);
        cfg = parse("[apst]\npolicy = kernel\n");
        s = snapshot(&cfg, &d);
        s.daemon = DOCTOR_DAEMON_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0);
        CHECK(r.n_findings == 0);
        CHECK(doctor_exit_status(&r) == 0);
        doctor_report_done(&r);
        /* ... and without a daemon that is no finding either: the kernel restores the same table */
        s.daemon = DOCTOR_DAEMON_NOT_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0);
        CHECK(r.n_findings == 0);
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/apst/table-differs\n");
}

/* A quarantined drive: a finding with the undo, the daemon's table without ps4 is not "differs", and at
 * APST off the fix points at ASPM. */
static void test_quarantined(void) {
        Config cfg = parse("[apst]\npolicy = kernel\n");
        ApstParams p = APST_PARAMS_DEFAULT;
        ApstPlan plan;
        IdCtrl lim;
        DoctorCtrl d;
        DoctorSnapshot s;
        DoctorReport r;
        const DoctorFinding *f;

        /* what the daemon writes with ps4 quarantined */
        p.policy = APST_POLICY_KERNEL;
        quarantine_limit_id(&intel, 4, &lim);
        CHECK(apst_build(&lim, NULL, &p, &plan) == 0);
        d = ctrl_with(&plan.table);
        d.quarantined = true;
        d.quarantine_below = 4;
        d.quarantine_strikes = 1;
        s = snapshot(&cfg, &d);
        s.daemon = DOCTOR_DAEMON_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0);
        f = find(&r, DOCTOR_APST_QUARANTINED);
        CHECK(f && r.n_findings == 1);
        CHECK(f && strstr(f->title, "ps4 and deeper"));
        CHECK(f && fix_has(f, "nvme-apstd quarantine --clear 'INTEL SSDPEKKW256G7'"));
        CHECK(f && !fix_has(f, "pcie_aspm"));
        CHECK(!find(&r, DOCTOR_APST_TABLE_DIFFERS));
        doctor_report_done(&r);

        /* stepped down to APST off: failures that go on are not APST's */
        d.table = (ApstTable) {};
        d.quarantine_below = QUARANTINE_APST_OFF;
        d.quarantine_strikes = 2;
        s = snapshot(&cfg, &d);
        s.daemon = DOCTOR_DAEMON_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0);
        f = find(&r, DOCTOR_APST_QUARANTINED);
        CHECK(f && strstr(f->title, "APST off"));
        CHECK(f && fix_has(f, "pcie_aspm=off") && fix_has(f, "pcie_port_pm=off"));
        CHECK(!find(&r, DOCTOR_APST_TABLE_DIFFERS));
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/apst/quarantined\n");
}

/* The exit-only check under policy = kernel with a budget in a [device] section. */
static void test_over_budget_device_section(void) {
        Config cfg = parse("[device seed]\nmatch_model = INTEL SSDPEKKW*\npolicy = kernel\nmax_latency_us = 11000\n");
        ApstTable k = kernel_default_table();
        DoctorCtrl d = ctrl_with(&k);
        DoctorSnapshot s = snapshot(&cfg, &d);
        DoctorReport r;
        const DoctorFinding *f;

        s.daemon = DOCTOR_DAEMON_NOT_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0);
        f = find(&r, DOCTOR_APST_STATE_OVER_BUDGET);
        CHECK(f);
        CHECK(strcmp(evidence_of(f, "t.conf [device seed] max_latency_us"), "11000") == 0);
        CHECK(strstr(f->title, "ps4 (12000 µs)"));
        CHECK(fix_has(f, "Set policy = budget"));
        CHECK(fix_has(f, "echo 9999 >"));
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/apst/over-budget-device-section\n");
}

static void test_request_size_thresholds(void) {
        static const struct {
                uint8_t mdts;
                uint32_t hw, soft;
                bool dma, soft_finding;
        } v[] = {
                { 0, 4096, 1280, false, false },   /* no MDTS: the driver's 4 MiB */
                { 0, 8192, 1280, false, false },   /* newer kernels: 8 MiB */
                { 0, 2048, 1280, true, false },
                { 5, 128, 128, false, false },     /* MDTS 5: 128 KiB, exactly what the drive allows */
                { 6, 128, 128, true, false },      /* MDTS 6: 256 KiB */
                { 10, 4096, 1280, false, false },  /* MDTS 4 MiB: the driver's cap */
                { 0, 4096, 1279, false, true },    /* soft limit lowered below the default */
                { 5, 128, 64, false, true },
                { 0, 4096, 4096, false, false },   /* raised: fine */
        };

        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                Config cfg = parse("[apst]\npolicy = kernel\n");
                ApstTable k = kernel_default_table();
                DoctorCtrl d = ctrl_with(&k);
                DoctorSnapshot s;
                DoctorReport r;

                d.mdts = v[i].mdts;
                d.max_hw_sectors_kb = v[i].hw;
                d.max_sectors_kb = v[i].soft;
                s = snapshot(&cfg, &d);
                CHECK(doctor_examine(&s, &r) == 0);
                if (!!find(&r, DOCTOR_REQUEST_SIZE_DMA_LIMIT) != v[i].dma ||
                    !!find(&r, DOCTOR_REQUEST_SIZE_SOFT_LIMIT) != v[i].soft_finding) {
                        fprintf(stderr, "case %zu: mdts %u hw %u soft %u\n", i, v[i].mdts, v[i].hw, v[i].soft);
                        CHECK(false);
                }
                doctor_report_done(&r);
                config_done(&cfg);
        }
        printf("ok /doctor/request-size/thresholds\n");
}

static DoctorCpuPolicy pstate_policy(unsigned cpu, const char *governor, const char *epp) {
        DoctorCpuPolicy p = { .state = { .cpu = cpu, .has_epp = true, .min_khz = 800000, .max_khz = 3600000,
                                         .hw_min_khz = 800000, .hw_max_khz = 3600000 } };

        cpuset_add(&p.state.cpus, cpu);
        (void) snprintf(p.state.governor, sizeof p.state.governor, "%s", governor);
        (void) snprintf(p.state.epp, sizeof p.state.epp, "%s", epp);
        (void) snprintf(p.driver, sizeof p.driver, "intel_pstate");
        return p;
}

static void test_cpu(void) {
        DoctorCpuPolicy pol[3] = {
                pstate_policy(0, "powersave", "balance_performance"),
                pstate_policy(1, "powersave", "performance"),
                pstate_policy(2, "performance", "performance"),
        };
        Config cfg = parse("");
        DoctorSnapshot s = snapshot(&cfg, NULL);
        DoctorReport r;
        const DoctorFinding *f;

        s.cpufreq_error = 0;
        s.policies = pol;
        s.n_policies = ELEMENTSOF(pol);
        (void) snprintf(s.pstate_status, sizeof s.pstate_status, "active");

        CHECK(doctor_examine(&s, &r) == 0);
        f = find(&r, DOCTOR_CPU_SLOW_RAMP);
        CHECK(f && r.n_findings == 1);
        CHECK(strcmp(f->subject, "cpu0") == 0);
        /* without known interrupt CPUs the snippet names the CPUs, not nvme-irq */
        CHECK(fix_has(f, "cpus = 0\nenergy_performance_preference = performance"));
        CHECK(strstr(f->title, "CPU 0 ramps its frequency slowly"));
        doctor_report_done(&r);

        /* the interrupts go to CPU 1 and 2 only: nothing slow there */
        s.have_irq_cpus = true;
        cpuset_add(&s.irq_cpus, 1);
        cpuset_add(&s.irq_cpus, 2);
        CHECK(doctor_examine(&s, &r) == 0);
        CHECK(r.n_findings == 0);
        doctor_report_done(&r);

        /* passive mode (intel_cpufreq) or hwp_dynamic_boost: not the slow-ramp combination */
        s.have_irq_cpus = false;
        (void) snprintf(s.pstate_status, sizeof s.pstate_status, "passive");
        CHECK(doctor_examine(&s, &r) == 0 && r.n_findings == 0);
        doctor_report_done(&r);
        (void) snprintf(s.pstate_status, sizeof s.pstate_status, "active");
        s.hwp_dynamic_boost = 1;
        CHECK(doctor_examine(&s, &r) == 0 && r.n_findings == 0);
        doctor_report_done(&r);
        s.hwp_dynamic_boost = 0;

        /* a running daemon that pins while busy takes care of it */
        config_done(&cfg);
        cfg = parse("[cpu]\npin = busy\nenergy_performance_preference = performance\n");
        s.config = &cfg;
        s.daemon = DOCTOR_DAEMON_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0 && r.n_findings == 0);
        /* no NVMe, one line per policy, the summary, intel_pstate's globals, why there is no finding */
        CHECK(r.n_examined == 7);
        CHECK(strcmp(r.examined[1].text, "policy of CPUs 0: driver intel_pstate, governor powersave, "
                     "EPP balance_performance, 800000-3600000 kHz") == 0);
        CHECK(strcmp(r.examined[5].text, "intel_pstate: status active, hwp_dynamic_boost 0, min_perf_pct absent") == 0);
        CHECK(strstr(r.examined[6].text, "nvme-apstd runs with [cpu] pin = busy"));
        doctor_report_done(&r);
        /* ... but not when it is not running */
        s.daemon = DOCTOR_DAEMON_NOT_RUNNING;
        CHECK(doctor_examine(&s, &r) == 0 && r.n_findings == 1);
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/cpu\n");
}

/* The schema, pinned: the JSON of one finding, byte for byte. */
static void test_json(void) {
        static const char want[] =
                "{\n"
                "  \"version\": 1,\n"
                "  \"exit_status\": 1,\n"
                "  \"findings\": [\n"
                "    {\n"
                "      \"id\": \"apst-firmware-unsupported\",\n"
                "      \"subject\": \"nvme0\",\n"
                "      \"title\": \"nvme0 (INTEL SSDPEKKW256G7, firmware PSF121C) does not support APST (Identify apsta = 0)\",\n"
                "      \"evidence\": [\n"
                "        {\n"
                "          \"source\": \"Identify apsta\",\n"
                "          \"value\": \"0\"\n"
                "        },\n"
                "        {\n"
                "          \"source\": \"Identify npss\",\n"
                "          \"value\": \"0\"\n"
                "        },\n"
                "        {\n"
                "          \"source\": \"Identify nvme0 ps0\",\n"
                "          \"value\": \"operational, enlat 0 µs, exlat 0 µs, max power 9.0000 W\"\n"
                "        }\n"
                "      ],\n"
                "      \"why\": \"Without APST the drive moves to a low-power state only when the host tells it to (Set Features, Power Management), which Linux does not do at run time: it stays in an operational state while idle. Neither the kernel nor nvme-apstd can program anything here.\",\n"
                "      \"fix\": [\n"
                "        \"Nothing to configure. Look for a firmware update from the drive's vendor that enables APST; nvme-apstd leaves this controller alone.\"\n"
                "      ]\n"
                "    }\n"
                "  ],\n"
                "  \"examined\": [\n"
                "    {\n"
                "      \"subject\": \"nvme0\",\n"
                "      \"text\": \"request size: nvme0n1 max_hw_sectors_kb 4096, max_sectors_kb 1280, MDTS allows any size; the driver 4096 KiB\"\n"
                "    }\n"
                "  ],\n"
                "  \"skipped\": [\n"
                "    {\n"
                "      \"subject\": \"cpu\",\n"
                "      \"text\": \"CPU frequency: no cpufreq in sysfs (a VM or container?)\",\n"
                "      \"error\": false\n"
                "    }\n"
                "  ]\n"
                "}";
        Config cfg = parse("");
        ApstTable off = {};
        DoctorCtrl d = ctrl_with(&off);
        DoctorSnapshot s;
        DoctorReport r;
        _cleanup_free_ char *json = NULL, *text = NULL;

        d.id.apst_supported = false;
        (void) snprintf(d.id.firmware, sizeof d.id.firmware, "PSF121C");
        d.id.npss = 0;
        memset(&d.id.psd[1], 0, sizeof d.id.psd - sizeof d.id.psd[0]);
        d.id.psd[0] = (IdPsd) { .max_power_uw = 9000000 };
        d.table_error = -ENOMSG;
        s = snapshot(&cfg, &d);
        CHECK(doctor_examine(&s, &r) == 0);
        CHECK(doctor_format_json(&r, &json) == 0);
        if (strcmp(json, want) != 0) {
                fprintf(stderr, "got:\n%s\n", json);
                CHECK(false);
        }
        CHECK(doctor_format_text(&r, &text) == 0);
        CHECK(strncmp(text, "[apst-firmware-unsupported] nvme0: nvme0 (INTEL SSDPEKKW256G7", 61) == 0);
        CHECK(strstr(text, "\n  seen:\n    Identify apsta = 0\n"));
        CHECK(strstr(text, "\n1 finding.\n"));
        doctor_report_done(&r);
        doctor_report_done(&r);
        config_done(&cfg);
        printf("ok /doctor/json\n");
}

int main(void) {
        load_intel();
        test_ids();
        test_kernel_log_filter();
        test_exit_status();
        test_quirk();
        test_pm_qos_zero();
        test_table_differs();
        test_quarantined();
        test_over_budget_device_section();
        test_request_size_thresholds();
        test_cpu();
        test_json();
        return check_exit_status();
}
