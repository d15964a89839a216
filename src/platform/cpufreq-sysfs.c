/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The real CpufreqOps: libcpupower for the policy files, and direct sysfs
 * access for what libcpupower has no call for (energy_performance_preference,
 * the list of CPUs, interrupt affinities). The only file that includes
 * libcpupower's header.
 *
 * libcpupower hard-codes /sys/devices/system/cpu/, so the cpufreq paths here
 * do too (tests redirect /sys with umockdev); the interrupt reader takes its
 * roots as parameters.
 *
 * libcpupower's errors lose errno: its writes return -ENODEV whatever the
 * kernel said. Its open() and write() do set errno and its close() on success
 * leaves it alone, so after a failed call errno still holds the kernel's
 * answer (EINVAL, EBUSY); we clear errno before each call and use it when set.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpufreq-sysfs.h"
#include "cpufreq-policy.h"
#include <cpufreq.h>   /* libcpupower */
#include "macro.h"
#include "util.h"

#define CPU_DIR "/sys/devices/system/cpu"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* Small sysfs/procfs attribute: open + one read. Return: length, or negative errno. */
static ssize_t read_small(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t k;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        do
                k = read(fd, buf, size - 1);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        buf[k] = '\0';
        return k;
}

/* Like read_small(), without the trailing newline; "" counts as missing. */
static int read_value(const char *path, char *buf, size_t size) {
        ssize_t k = read_small(path, buf, size);

        if (k < 0)
                return (int) k;
        if (k > 0 && buf[k - 1] == '\n')
                buf[--k] = '\0';
        if ((size_t) k >= size - 1)
                return -E2BIG;      /* cut: better unknown than a wrong prefix */
        return k > 0 ? 0 : -ENODATA;
}

static int sysfs_list_cpus(void *userdata, CpuSet *ret) {
        _cleanup_(closedirp) DIR *d = NULL;
        CpuSet s = {};
        struct dirent *de;

        /* opendir/readdir: umockdev redirects them, unlike glob() and scandir() (doc/testing.md). */
        d = opendir(CPU_DIR);
        if (!d)
                return errno == ENOENT ? -ENOENT : -errno;

        while ((errno = 0, de = readdir(d))) {
                char path[PATH_MAX], online[8];
                struct stat st;
                unsigned cpu;

                if (strncmp(de->d_name, "cpu", 3) != 0 || safe_atou32(de->d_name + 3, &cpu) < 0 ||
                    cpu >= CPUSET_MAX)
                        continue;
                (void) snprintf(path, sizeof path, CPU_DIR "/%s/cpufreq", de->d_name);
                if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                /* An offline CPU may keep its link to an inactive policy, which reads as EBUSY. */
                (void) snprintf(path, sizeof path, CPU_DIR "/%s/online", de->d_name);
                if (read_value(path, online, sizeof online) >= 0 && strcmp(online, "0") == 0)
                        continue;
                cpuset_add(&s, cpu);
        }
        if (errno != 0)
                return -errno;

        if (cpuset_is_empty(&s))
                return -ENODEV;
        *ret = s;
        return 0;
}

static int copy_checked(char *dst, size_t size, const char *src) {
        size_t n = strlen(src);

        /* libcpupower keeps the newline of some files; the kernel never puts one inside a name. */
        while (n > 0 && (src[n - 1] == '\n' || src[n - 1] == ' '))
                n--;
        if (n == 0 || n >= size)
                return -EINVAL;
        memcpy(dst, src, n);
        dst[n] = '\0';
        return 0;
}

static int sysfs_read_policy(void *userdata, unsigned cpu, CpufreqPolicyState *ret) {
        CpufreqPolicyState s = { .cpu = cpu };
        struct cpufreq_policy *pol;
        struct cpufreq_available_governors *govs;
        struct cpufreq_affected_cpus *aff;
        unsigned long hw_min = 0, hw_max = 0;
        char path[PATH_MAX];
        size_t len = 0;
        int r;

        errno = 0;
        pol = cpufreq_get_policy(cpu);
        if (!pol)
                return errno > 0 ? -errno : -ENODEV;
        r = copy_checked(s.governor, sizeof s.governor, pol->governor ? pol->governor : "");
        if (r >= 0 && (pol->min == 0 || pol->max == 0 || pol->min > UINT32_MAX || pol->max > UINT32_MAX))
                r = -EINVAL;
        s.min_khz = (uint32_t) pol->min;
        s.max_khz = (uint32_t) pol->max;
        cpufreq_put_policy(pol);
        if (r < 0)
                return r;

        errno = 0;
        if (cpufreq_get_hardware_limits(cpu, &hw_min, &hw_max) < 0)
                return errno > 0 ? -errno : -ENODEV;
        if (hw_min > UINT32_MAX || hw_max > UINT32_MAX)
                return -EINVAL;
        s.hw_min_khz = (uint32_t) hw_min;
        s.hw_max_khz = (uint32_t) hw_max;

        govs = cpufreq_get_available_governors(cpu);
        for (struct cpufreq_available_governors *g = govs ? govs->first : NULL; g; g = g->next) {
                int k = snprintf(s.available_governors + len, sizeof s.available_governors - len, "%s%s",
                                 len > 0 ? " " : "", g->governor);
                if (k < 0 || (size_t) k >= sizeof s.available_governors - len)
                        break;
                len += (size_t) k;
        }
        if (govs)
                cpufreq_put_available_governors(govs);

        /* affected_cpus: the online CPUs of this policy. Without it, the CPU is alone. */
        aff = cpufreq_get_affected_cpus(cpu);
        for (struct cpufreq_affected_cpus *a = aff ? aff->first : NULL; a; a = a->next)
                cpuset_add(&s.cpus, a->cpu);
        if (aff)
                cpufreq_put_affected_cpus(aff);
        cpuset_add(&s.cpus, cpu);
        for (unsigned c = 0; c < cpu; c++)
                if (cpuset_has(&s.cpus, c)) {
                        s.cpu = c;
                        break;
                }

        (void) snprintf(path, sizeof path, CPU_DIR "/cpu%u/cpufreq/energy_performance_preference", cpu);
        r = read_value(path, s.epp, sizeof s.epp);
        if (r >= 0)
                s.has_epp = true;
        else if (r != -ENOENT)
                return r;
        if (s.has_epp) {
                (void) snprintf(path, sizeof path,
                                CPU_DIR "/cpu%u/cpufreq/energy_performance_available_preferences", cpu);
                if (read_value(path, s.available_epp, sizeof s.available_epp) < 0)
                        s.available_epp[0] = '\0';
        }

        *ret = s;
        return 0;
}

/* One write(2) of the whole value; O_TRUNC so a regular file (a test tree) ends up equal too. */
static int write_attr_file(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(value);
        ssize_t k;

        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        k = write(fd, value, len);
        if (k < 0)
                return -errno;
        if ((size_t) k != len)
                return -EIO;
        /* sysfs reports nothing at close, but a test tree on a real file system may. */
        if (close(TAKE_FD(fd)) < 0)
                return -errno;
        return 0;
}

static int parse_khz(const char *s, unsigned long *ret) {
        uint32_t khz;

        if (safe_atou32(s, &khz) < 0 || khz == 0)
                return -EINVAL;
        *ret = khz;
        return 0;
}

static int sysfs_write(void *userdata, unsigned cpu, CpufreqAttr attr, const char *value) {
        char buf[CPUFREQ_NAME_MAX], path[PATH_MAX];
        unsigned long khz;
        int r;

        switch (attr) {
        case CPUFREQ_ATTR_GOVERNOR:
                if (strlen(value) >= sizeof buf)
                        return -EINVAL;
                strcpy(buf, value);     /* libcpupower takes a char * */
                errno = 0;
                r = cpufreq_modify_policy_governor(cpu, buf);
                break;
        case CPUFREQ_ATTR_MIN:
        case CPUFREQ_ATTR_MAX:
                r = parse_khz(value, &khz);
                if (r < 0)
                        return r;
                errno = 0;
                r = attr == CPUFREQ_ATTR_MIN ? cpufreq_modify_policy_min(cpu, khz) :
                                               cpufreq_modify_policy_max(cpu, khz);
                break;
        case CPUFREQ_ATTR_EPP:
                /* libcpupower has no call for it (doc/platform.md). */
                (void) snprintf(path, sizeof path, CPU_DIR "/cpu%u/cpufreq/energy_performance_preference", cpu);
                return write_attr_file(path, value);
        case _CPUFREQ_ATTR_MAX:
        case _CPUFREQ_ATTR_INVALID:
        default:
                return -EINVAL;
        }

        if (r < 0)
                return errno > 0 ? -errno : r;
        return 0;
}

const CpufreqOps cpufreq_sysfs_ops = {
        .list_cpus = sysfs_list_cpus,
        .read_policy = sysfs_read_policy,
        .write = sysfs_write,
};

/* --- interrupts ------------------------------------------------------------------------------- */

static int irq_cpus_add(const char *proc_root, unsigned irq, CpuSet *acc) {
        char path[PATH_MAX], eff[4096], mask[4096];
        bool have_eff, have_mask;

        (void) snprintf(path, sizeof path, "%s/irq/%u/effective_affinity_list", proc_root, irq);
        have_eff = read_small(path, eff, sizeof eff) >= 0;
        (void) snprintf(path, sizeof path, "%s/irq/%u/smp_affinity_list", proc_root, irq);
        have_mask = read_small(path, mask, sizeof mask) >= 0;
        return cpufreq_irq_affinity_add(acc, have_eff ? eff : NULL, have_mask ? mask : NULL);
}

int cpufreq_sysfs_irq_cpus(const char *sysfs_root, const char *proc_root,
                           const char *const *devices, size_t n_devices, CpuSet *ret) {
        CpuSet acc = {};
        bool any = false;

        for (size_t i = 0; i < n_devices; i++) {
                _cleanup_(closedirp) DIR *d = NULL;
                char path[PATH_MAX];
                struct dirent *de;

                (void) snprintf(path, sizeof path, "%s/%s/msi_irqs", sysfs_root, devices[i]);
                d = opendir(path);
                if (!d) {
                        char buf[32];
                        unsigned irq;

                        /* No MSI: the legacy INTx line in `irq` (0 = none). */
                        (void) snprintf(path, sizeof path, "%s/%s/irq", sysfs_root, devices[i]);
                        if (read_value(path, buf, sizeof buf) >= 0 && safe_atou32(buf, &irq) >= 0 &&
                            irq > 0 && irq_cpus_add(proc_root, irq, &acc) >= 0)
                                any = true;
                        continue;
                }
                while ((de = readdir(d))) {
                        unsigned irq;

                        if (safe_atou32(de->d_name, &irq) < 0)
                                continue;
                        if (irq_cpus_add(proc_root, irq, &acc) >= 0)
                                any = true;
                }
        }

        if (!any)
                return -ENOENT;
        *ret = acc;
        return 0;
}

int cpufreq_sysfs_nvme_irq_cpus(const char *sysfs_root, const char *proc_root,
                                const char *const *ctrl_names, size_t n_ctrls, CpuSet *ret) {
        char paths[n_ctrls + 1][64];
        const char *devs[n_ctrls + 1];

        for (size_t i = 0; i < n_ctrls; i++) {
                (void) snprintf(paths[i], sizeof paths[i], "class/nvme/%s/device", ctrl_names[i]);
                devs[i] = paths[i];
        }
        return cpufreq_sysfs_irq_cpus(sysfs_root, proc_root, devs, n_ctrls, ret);
}
