/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's CPU frequency pinning glue (see manager-cpu.h): which CPUs
 * (cpus = nvme-irq follows the controllers' interrupts). pin = busy is fed by the
 * controllers' I/O watchers (manager-watch.c). What a pin does is cpupin.c's business.
 */

#include <string.h>

#include "cpufreq-policy.h"
#include "manager-cpu.h"
#include "manager-watch.h"

/* The CPUs servicing the controllers' interrupt vectors, for cpus = nvme-irq. */
static void manager_irq_cpus(Manager *m, CpuSet *ret) {
        const char *names[m->n_ctrls + 1];
        size_t n = 0;
        CpuSet set = {};

        for (size_t i = 0; i < m->n_ctrls; i++)
                if (strcmp(m->ctrls[i]->controller.sys.transport, "pcie") == 0)
                        names[n++] = m->ctrls[i]->controller.name;
        if (n > 0 && cpufreq_sysfs_nvme_irq_cpus(m->sysfs_root, m->proc_root, names, n, &set) < 0)
                set = (CpuSet) {};
        *ret = set;
}

/* Make [cpu] true: pin, re-pin with other CPUs, or release (pin = off). */
void manager_cpu_apply(Manager *m, const char *reason) {
        bool irq = m->config.cpu.select == CPU_SELECT_NVME_IRQ;

        if (m->stopping)   /* released for good: the loop only runs on to restore the tables */
                return;
        manager_watch_all(m);   /* pin = busy needs every controller watched */
        if (!m->cpupin)
                return;
        if (irq)
                manager_irq_cpus(m, &m->irq_cpus);
        (void) cpupin_apply(m->cpupin, &m->config.cpu, irq ? &m->irq_cpus : NULL, reason);
}

/* Controllers came or went: only cpus = nvme-irq depends on them. */
void manager_cpu_controllers_changed(Manager *m, const char *reason) {
        CpuSet now;

        if (m->stopping || !m->cpupin || m->config.cpu.select != CPU_SELECT_NVME_IRQ ||
            m->config.cpu.pin == CPU_PIN_OFF)
                return;
        manager_irq_cpus(m, &now);
        if (memcmp(&now, &m->irq_cpus, sizeof now) == 0)
                return;
        m->irq_cpus = now;
        (void) cpupin_apply(m->cpupin, &m->config.cpu, &m->irq_cpus, reason);
}
