/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * CPU frequency policy planning (pure: no I/O, no logging), and the backend
 * seam the stateful cpupin.c acts through.
 *
 * The kernel groups CPUs into policies (/sys/devices/system/cpu/cpufreq/
 * policyN; each cpuN/cpufreq is a link to its policy) and every write to one
 * CPU's cpufreq/ changes all CPUs of the policy. So everything here works per
 * policy: a CpufreqPolicyState is what was read through one CPU of a policy,
 * a CpufreqSettings is what we record or want for a whole policy (doc/testing.md#cpufreq-policies:
 * record all policies before changing any).
 *
 * Files involved, relative to /sys/devices/system/cpu/cpuN/cpufreq/:
 *   read:  affected_cpus, scaling_governor, scaling_min_freq, scaling_max_freq,
 *          cpuinfo_min_freq, cpuinfo_max_freq, scaling_available_governors,
 *          energy_performance_preference, energy_performance_available_preferences
 *   write: scaling_governor, scaling_min_freq, scaling_max_freq,
 *          energy_performance_preference   (one CpufreqAttr each)
 *
 * The real backend is cpufreq-sysfs.c (libcpupower, which hard-codes /sys);
 * the tests use an in-memory one.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cpuset.h"
#include "record-format.h"

/* Governor names are at most CPUFREQ_NAME_LEN (16) in the kernel; EPP strings
 * are shorter still ("balance_performance" is the longest). 64 leaves room and
 * anything longer is refused rather than cut. */
#define CPUFREQ_NAME_MAX 64u
/* scaling_available_governors and energy_performance_available_preferences:
 * the kernel prints them into one page, but real lists are under 100 bytes. */
#define CPUFREQ_LIST_MAX 512u

typedef enum CpufreqAttr {
        CPUFREQ_ATTR_GOVERNOR,      /* scaling_governor */
        CPUFREQ_ATTR_MIN,           /* scaling_min_freq, kHz */
        CPUFREQ_ATTR_MAX,           /* scaling_max_freq, kHz */
        CPUFREQ_ATTR_EPP,           /* energy_performance_preference */
        _CPUFREQ_ATTR_MAX,
        _CPUFREQ_ATTR_INVALID = -EINVAL,
} CpufreqAttr;

/* The sysfs file name of @a ("scaling_governor"), or NULL. */
const char *cpufreq_attr_to_string(CpufreqAttr a);

/* What was read through one CPU of a policy. */
typedef struct CpufreqPolicyState {
        unsigned cpu;                             /* lowest CPU of @cpus: reads and writes go through it */
        CpuSet cpus;                              /* affected_cpus: the online CPUs of the policy */
        char governor[CPUFREQ_NAME_MAX];
        uint32_t min_khz, max_khz;                /* scaling_min_freq, scaling_max_freq */
        uint32_t hw_min_khz, hw_max_khz;          /* cpuinfo_min_freq, cpuinfo_max_freq */
        char available_governors[CPUFREQ_LIST_MAX];  /* blank-separated */
        bool has_epp;                             /* energy_performance_preference exists */
        char epp[CPUFREQ_NAME_MAX];
        char available_epp[CPUFREQ_LIST_MAX];     /* blank-separated; "" = not exposed */
} CpufreqPolicyState;

/* The settings of one policy: recorded as found, or wanted. */
typedef struct CpufreqSettings {
        unsigned cpu;                             /* as in CpufreqPolicyState */
        CpuSet cpus;
        char governor[CPUFREQ_NAME_MAX];          /* never "" in a valid record */
        uint32_t min_khz, max_khz;                /* never 0 in a valid record */
        char epp[CPUFREQ_NAME_MAX];               /* "" = the driver exposes no EPP */
} CpufreqSettings;

/**
 * struct CpufreqOps - how cpupin.c reads and writes cpufreq
 * @userdata: passed to every call
 * @list_cpus: the CPUs that have a cpufreq directory and are online. Return 0,
 *      or -ENODEV / -ENOENT when there is no cpufreq at all (VMs, containers).
 * @read_policy: read the policy of @cpu. Return 0 or negative errno.
 * @write: write @value (decimal kHz for MIN/MAX) to one attribute of @cpu's
 *      policy. Return 0 or the kernel's negative errno (-EINVAL, -EBUSY...).
 */
typedef struct CpufreqOps {
        void *userdata;
        int (*list_cpus)(void *userdata, CpuSet *ret);
        int (*read_policy)(void *userdata, unsigned cpu, CpufreqPolicyState *ret);
        int (*write)(void *userdata, unsigned cpu, CpufreqAttr attr, const char *value);
} CpufreqOps;


/**
 * cpufreq_sysfs_irq_cpus() - CPUs that service the devices' interrupts
 * @sysfs_root: "/sys", or a test tree
 * @proc_root: "/proc", or a test tree
 * @devices: device directories relative to @sysfs_root, e.g.
 *      "class/nvme/nvme0/device" or "bus/pci/devices/0000:01:00.0"
 * @ret: the union of effective_affinity_list (smp_affinity_list when the
 *      kernel has no effective one) over every vector in the devices'
 *      msi_irqs/ (or the legacy `irq` file without MSI)
 *
 * A device without readable interrupts is skipped. Lives in cpufreq-sysfs.c.
 * Return: 0 (@ret may be empty), -ENOENT when no device had any interrupt, or
 * negative errno.
 */
int cpufreq_sysfs_irq_cpus(const char *sysfs_root, const char *proc_root,
                           const char *const *devices, size_t n_devices, CpuSet *ret);

/* cpufreq_sysfs_irq_cpus() over NVMe controllers by name ("nvme0"): their PCI devices,
 * class/nvme/NAME/device. Same return values. */
int cpufreq_sysfs_nvme_irq_cpus(const char *sysfs_root, const char *proc_root,
                                const char *const *ctrl_names, size_t n_ctrls, CpuSet *ret);


/**
 * cpufreq_irq_affinity_add() - add one interrupt's CPUs to @acc
 * @effective: contents of /proc/irq/N/effective_affinity_list, or NULL
 * @fallback: contents of /proc/irq/N/smp_affinity_list, or NULL
 *
 * The effective list is what the interrupt is actually routed to (x86 routes
 * a vector to one CPU of its mask); it wins when present and non-empty.
 * Return: 0, or -EINVAL when neither list parses (@acc unchanged).
 */
int cpufreq_irq_affinity_add(CpuSet *acc, const char *effective, const char *fallback);

/**
 * cpufreq_select_cpus() - the CPUs the configuration asks for
 * @online: CPUs with cpufreq (CpufreqOps.list_cpus)
 * @nvme_irq_cpus: for CPU_SELECT_NVME_IRQ; NULL = none known yet
 * @ret: selected CPUs that have cpufreq (may be empty)
 * @ret_missing: selected CPUs without cpufreq (offline, or not there), may be NULL
 */
void cpufreq_select_cpus(const CpuConfig *cfg, const CpuSet *online, const CpuSet *nvme_irq_cpus,
                         CpuSet *ret, CpuSet *ret_missing);

/**
 * cpufreq_resolve_freq() - a FreqSpec in kHz for one policy
 * @hw_min, @hw_max: cpuinfo_min_freq / cpuinfo_max_freq
 * @ret: the frequency, clamped to [@hw_min, @hw_max] like the kernel does
 *
 * Return: 1 if set, 0 for FREQ_UNSET (@ret untouched), -EINVAL for a bad spec
 * (percentage > 100, unknown kind) or hardware limits that make no sense.
 */
int cpufreq_resolve_freq(const FreqSpec *spec, uint32_t hw_min, uint32_t hw_max, uint32_t *ret);

/* Same policy (cpu, cpus) and same values; padding and bytes after the strings' NUL do not count. */
bool cpufreq_settings_equal(const CpufreqSettings *a, const CpufreqSettings *b);

/* The settings of @state as found (what goes into the record). */
void cpufreq_settings_from_state(const CpufreqPolicyState *state, CpufreqSettings *ret);

/**
 * cpufreq_plan_policy() - the wanted settings of one policy
 * @cfg: governor, min_freq, max_freq, epp (pin mode and selection are not looked at)
 * @state: the policy as read now (available governors, hardware limits, EPP)
 * @saved: the policy as first found (the record): every key @cfg leaves unset
 *      keeps its @saved value, so dropping a key on reload puts it back
 * @ret: full settings (only on success)
 * @error, @error_size: on -EINVAL, a sentence naming the key and value
 *
 * epp on a driver without energy_performance_preference is not an error: the
 * key is ignored there (@ret->epp = ""), as the configuration promises.
 * Return: 0, or -EINVAL (governor not in scaling_available_governors, epp not
 * in energy_performance_available_preferences, min above max).
 */
int cpufreq_plan_policy(const CpuConfig *cfg, const CpufreqPolicyState *state, const CpufreqSettings *saved,
                        CpufreqSettings *ret, char *error, size_t error_size);

/* Bit (1u << CpufreqAttr) for each attribute @cfg sets on @state's policy (epp only where it exists). */
#define CPUFREQ_ATTRS_ALL ((1u << _CPUFREQ_ATTR_MAX) - 1)
unsigned cpufreq_config_attrs(const CpuConfig *cfg, const CpufreqPolicyState *state);

/* Whether writing @a matters: @want has a value for it that @cur does not. */
bool cpufreq_attr_differs(const CpufreqSettings *cur, const CpufreqSettings *want, CpufreqAttr a);

/**
 * cpufreq_write_order() - the order in which to write the attributes
 * @cur: now; @want: wanted
 * @ret: all four CpufreqAttr, each once
 *
 * Governor first (intel_pstate refuses EPP under `performance`, and setting
 * the governor may reset EPP), then EPP, then the frequencies in the order
 * that never has min > max in between: max first when the new min is above
 * the current max, else min first.
 */
void cpufreq_write_order(const CpufreqSettings *cur, const CpufreqSettings *want,
                         CpufreqAttr ret[_CPUFREQ_ATTR_MAX]);

/* The text written for @a of @s ("performance", "3600000"). */
void cpufreq_attr_value(const CpufreqSettings *s, CpufreqAttr a, char *buf, size_t n);

/**
 * cpufreq_describe() - one line for `nvme-apstd plan` and the journal
 * @cfg: for the annotations ("(max)", "(50%)", "(as found)"); NULL = none
 *
 * "cpu0-3: governor performance, min 3600000 kHz (max), max 3600000 kHz (max),
 * epp performance"
 */
void cpufreq_describe(const CpuConfig *cfg, const CpufreqSettings *s, char *buf, size_t n);

/*
 * The recorded-state file ($RUNTIME_DIRECTORY/cpufreq-saved), written before
 * the first change so that a daemon started after a crash can put things
 * back. Text, one policy per line, every value checked on the way back in:
 *
 *   # nvme-apstd cpufreq record v1
 *   policy cpu=0 cpus=0-3 governor=powersave min=800000 max=3600000 epp=balance_performance
 *   policy cpu=4 cpus=4-7 governor=schedutil min=400000 max=2000000 epp=-
 */
#define CPUFREQ_RECORD_HEADER RECORD_HEADER("cpufreq", 1)

/* Return: 0 (@ret malloc'd, caller frees), -EINVAL (a value with blanks or '='), -ENOMEM. */
int cpufreq_record_format(const CpufreqSettings *s, size_t n, char **ret);
/* Return: 0 (@ret malloc'd array, may be NULL when @ret_n is 0), -EINVAL, -ENOMEM. */
int cpufreq_record_parse(const char *text, CpufreqSettings **ret, size_t *ret_n);
