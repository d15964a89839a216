/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * `nvme-apstd doctor`: the analysis (pure: no I/O, no logging).
 *
 * src/cli/cmd-doctor.c reads the machine into a DoctorSnapshot (sysfs, Identify
 * and Get Features 0x0C through nvme-admin.c, /proc, the kernel log) and
 * doctor_examine() turns it into findings. Each finding has a stable ID
 * (DoctorFindingId, listed with their meaning in nvme-apstd(8), section
 * DOCTOR), a subject ("nvme0", "cpu0-3"), what was seen (evidence: the file
 * or field and its value), why it matters, and what to do. Nothing here
 * changes anything; the fixes are text for the user.
 *
 * Background for the checks: doc/doctor.md.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apst.h"
#include "config.h"
#include "cpufreq-policy.h"
#include "cpuset.h"
#include "idctrl.h"
#include "sysinfo.h"

typedef enum DoctorFindingId {
        DOCTOR_APST_FIRMWARE_UNSUPPORTED,  /* "apst-firmware-unsupported" */
        DOCTOR_APST_KERNEL_DISABLED,       /* "apst-kernel-disabled" */
        DOCTOR_APST_STATE_OVER_BUDGET,     /* "apst-state-over-budget" */
        DOCTOR_APST_DAEMON_NOT_RUNNING,    /* "apst-daemon-not-running" */
        DOCTOR_APST_TABLE_DIFFERS,         /* "apst-table-differs" */
        DOCTOR_REQUEST_SIZE_DMA_LIMIT,     /* "request-size-dma-limit" */
        DOCTOR_REQUEST_SIZE_SOFT_LIMIT,    /* "request-size-soft-limit" */
        DOCTOR_CPU_SLOW_RAMP,              /* "cpu-slow-ramp" */
        DOCTOR_APST_QUARANTINED,           /* "apst-quarantined" */
        _DOCTOR_FINDING_MAX,
        _DOCTOR_FINDING_INVALID = -22,
} DoctorFindingId;

const char *doctor_finding_id_to_string(DoctorFindingId id);

/* Whether an nvme-apstd daemon process runs (src/cli/cmd-doctor.c looks in /proc). */
typedef enum DoctorDaemon {
        DOCTOR_DAEMON_UNKNOWN,             /* /proc not readable */
        DOCTOR_DAEMON_NOT_RUNNING,
        DOCTOR_DAEMON_RUNNING,
        _DOCTOR_DAEMON_MAX,
        _DOCTOR_DAEMON_INVALID = -22,
} DoctorDaemon;

/* The nvme driver's own cap on a request (drivers/nvme/host/pci.c NVME_MAX_KB_SZ, Linux 6.1;
 * later kernels raised it to 8192): a max_hw_sectors_kb below min(MDTS, this) comes from
 * elsewhere. Using the lower value never blames the DMA layer for the driver's own limit. */
#define DOCTOR_NVME_DRIVER_MAX_KB 4096u
/* blk-mq's default soft limit (BLK_DEF_MAX_SECTORS = 2560 sectors, Linux 6.1): a
 * max_sectors_kb at or above it is the kernel's own default, not a tuning. */
#define DOCTOR_DEFAULT_MAX_SECTORS_KB 1280u
/* Kernel log lines kept as evidence for the DMA limit. */
#define DOCTOR_KERNEL_LOG_MAX 16u

typedef struct DoctorCtrl {
        SysCtrl sys;
        /* Identify Controller: @id_error 0 = @id and @mdts valid; negative errno otherwise,
         * -EREMOTEIO with @id_status; @id_error_text says it in words ("" when 0) */
        int id_error;
        char id_error_text[160];
        IdCtrl id;
        uint8_t mdts;                      /* byte 77: max transfer 2^mdts units of CAP.MPSMIN, 0 = no limit */
        /* Get Features 0x0C, current: @table_error 0 = @table valid; -ENOMSG = not asked
         * (apsta = 0: the drive has no such feature); other negative errno as for Identify */
        int table_error;
        char table_error_text[160];
        ApstTable table;
        bool have_pm_qos;                  /* power/pm_qos_latency_tolerance_us exists */
        uint32_t pm_qos_latency_tolerance_us;
        /* the first namespace's queue limits (nvmeXnY/queue/); @disk "" = none found */
        char disk[32];
        bool have_queue;
        uint32_t max_hw_sectors_kb, max_sectors_kb;
        /* the daemon's quarantine of this model and firmware (quarantine.h, doc/quarantine.md) */
        bool quarantined;
        uint8_t quarantine_below;          /* states from this one on out; 0 = APST off */
        unsigned quarantine_strikes;       /* failures blamed */
} DoctorCtrl;

typedef struct DoctorCpuPolicy {
        CpufreqPolicyState state;          /* through cpufreq_sysfs_ops (libcpupower) */
        char driver[CPUFREQ_NAME_MAX];     /* scaling_driver; "" = unknown */
} DoctorCpuPolicy;

typedef struct DoctorSnapshot {
        const char *sysfs_root;            /* for the paths in the evidence ("/sys") */
        const char *proc_root;             /* "/proc" */
        const Config *config;
        SysPlatform platform;

        /* /sys/module/nvme_core/parameters: the kernel's APST knobs (policy KERNEL) */
        bool have_nvme_core;
        ApstParams nvme_core;

        DoctorCtrl *ctrls;
        size_t n_ctrls;

        DoctorDaemon daemon;
        unsigned daemon_pid;               /* when RUNNING */

        /* cpufreq: @cpufreq_error 0 = @policies read; -ENODEV/-ENOENT = no cpufreq (VMs) */
        int cpufreq_error;
        DoctorCpuPolicy *policies;
        size_t n_policies;
        char pstate_status[32];            /* intel_pstate/status; "" = absent */
        int hwp_dynamic_boost;             /* intel_pstate/hwp_dynamic_boost; -1 = absent */
        int min_perf_pct;                  /* intel_pstate/min_perf_pct; -1 = absent */
        bool have_irq_cpus;                /* @irq_cpus: CPUs servicing the controllers' interrupts */
        CpuSet irq_cpus;

        const char *cmdline;               /* /proc/cmdline, NULL = unread */
        const char *const *kernel_log;     /* relevant lines (doctor_kernel_log_relevant()) */
        size_t n_kernel_log;
        bool have_kernel_log;              /* the log could be read (even if nothing matched) */
} DoctorSnapshot;

typedef struct DoctorEvidence {
        char *source;                      /* "/sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us",
                                            * "Identify nvme0 ps4", "Get Features 0x0C nvme0" ... */
        char *value;
} DoctorEvidence;

typedef struct DoctorFinding {
        DoctorFindingId id;
        char *subject;                     /* "nvme0", "cpu0-3" */
        char *title;                       /* one line */
        DoctorEvidence *evidence;
        size_t n_evidence;
        char *why;
        char **fix;                        /* each a sentence, a config snippet or a command */
        size_t n_fix;
} DoctorFinding;

/* Something that was looked at ("nvme0", "its table ..."), or could not be. */
typedef struct DoctorNote {
        char *subject;
        char *text;
        bool error;                        /* could not look, though it should have been possible */
} DoctorNote;

typedef struct DoctorReport {
        DoctorFinding *findings;
        size_t n_findings;
        DoctorNote *examined;              /* what was looked at and found fine or inapplicable */
        size_t n_examined;
        DoctorNote *skipped;               /* what could not be looked at */
        size_t n_skipped;
} DoctorReport;

/**
 * doctor_examine() - the findings for @s
 * @ret: filled in on success (free with doctor_report_done())
 * Return: 0 or -ENOMEM.
 */
int doctor_examine(const DoctorSnapshot *s, DoctorReport *ret);
void doctor_report_done(DoctorReport *r);

/* 0 nothing found, 1 findings, 2 nothing found but something could not be looked at. */
int doctor_exit_status(const DoctorReport *r);

/* Whether a kernel log message (without its "<pri>,seq,ts,-;" prefix) tells about the DMA
 * mapping layer: swiotlb, an IOMMU, memory encryption. */
bool doctor_kernel_log_relevant(const char *line);
