/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fake-cpupower: libcpupower 6.1 against the harness's fake cpufreq tree
 * (fake-nvme-tb --no-ctrl --cpufreq 3 --cpufreq-shared -- test-fake-cpupower).
 * Checks that the tree reads like the kernel's through libcpupower (policies, limits, governors,
 * driver, affected CPUs of a shared policy) and that writes land, whole, in the policy files.
 * Covers: the harness's fake cpufreq tree: tests/fake/fake-nvme-tb.c.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cpufreq.h>

#include "check.h"

static const char *read_attr(const char *path)
{
        static char buf[256];
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return "(missing)";
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        return buf;
}

int main(void)
{
        struct cpufreq_policy *p;
        struct cpufreq_available_governors *g, *it;
        struct cpufreq_affected_cpus *a, *ai;
        unsigned long lo = 0, hi = 0;
        char gov[] = "performance", buf[64] = "";
        char *drv;
        int r, n = 0;

        setvbuf(stdout, NULL, _IOLBF, 0);
        p = cpufreq_get_policy(0);
        CHECK_SAY(p && !strcmp(p->governor, "powersave") && p->min == 800000 && p->max == 3600000,
                  "cpu0 policy: %s %lu..%lu", p ? p->governor : "-", p ? p->min : 0, p ? p->max : 0);
        cpufreq_put_policy(p);
        r = cpufreq_get_hardware_limits(2, &lo, &hi);
        CHECK_SAY(r == 0 && lo == 800000 && hi == 3600000, "cpu2 hardware limits %lu..%lu", lo, hi);
        drv = cpufreq_get_driver(1);
        CHECK_SAY(drv && !strcmp(drv, "intel_pstate"), "cpu1 driver %s", drv ? drv : "-");
        cpufreq_put_driver(drv);
        g = cpufreq_get_available_governors(0);
        for (it = g ? g->first : NULL; it; it = it->next)
                n += snprintf(buf + n, sizeof(buf) - (size_t) n, "%s%s", n ? " " : "", it->governor);
        cpufreq_put_available_governors(g);
        CHECK_SAY(!strcmp(buf, "performance powersave"), "governors '%s'", buf);
        a = cpufreq_get_affected_cpus(1);
        n = 0;
        for (ai = a ? a->first : NULL; ai; ai = ai->next)
                n++;
        CHECK_SAY(a && a->first->cpu == 0 && n == 2, "cpu1 shares a policy with cpu0 (%d cpus)", n);
        cpufreq_put_affected_cpus(a);

        r = cpufreq_modify_policy_governor(1, gov);
        CHECK_SAY(r == 0, "cpu1 governor -> performance (%d)", r);
        CHECK_SAY(!strcmp(read_attr("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor"), "performance"),
                  "policy0 governor '%s'", read_attr("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor"));
        /* a shorter value over a longer one: without the preload's O_TRUNC this reads "9000000" */
        r = cpufreq_modify_policy_max(2, 900000);
        CHECK_SAY(r == 0, "cpu2 max -> 900000 (%d)", r);
        CHECK_SAY(!strcmp(read_attr("/sys/devices/system/cpu/cpu2/cpufreq/scaling_max_freq"), "900000"),
                  "cpu2 scaling_max_freq '%s'", read_attr("/sys/devices/system/cpu/cpu2/cpufreq/scaling_max_freq"));
        p = cpufreq_get_policy(0);
        CHECK_SAY(p && !strcmp(p->governor, "performance"), "cpu0 sees cpu1's change (shared policy): %s",
                  p ? p->governor : "-");
        cpufreq_put_policy(p);
        printf("test-fake-cpupower: %u failure(s)\n", n_failed);
        return n_failed ? 1 : 0;
}
