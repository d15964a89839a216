/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's CPU frequency pinning glue (see manager.h): which CPUs
 * (cpus = nvme-irq follows the controllers' interrupts), and the I/O watcher
 * that pin = busy needs. What a pin does is cpupin.c's business.
 */

#include <string.h>

#include "cpufreq-policy.h"
#include "log.h"
#include "manager.h"

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

static int on_iowatch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t total = 0, deadline = UINT64_MAX;
        bool any = false, busy;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                uint64_t n;
                if (sysfs_ctrl_io_count(m->sysfs_root, m->ctrls[i]->controller.name, &n) >= 0) {
                        total += n;
                        any = true;
                }
        }
        busy = any && m->iowatch_known && total != m->iowatch_total;
        m->iowatch_total = total;
        m->iowatch_known = any;
        (void) cpupin_busy_hook(m->cpupin, busy, usec, &deadline);
        (void) sd_event_source_set_time_relative(s, MANAGER_IOWATCH_INTERVAL_USEC);
        manager_metrics_update(m);  /* pinned or released */
        return 0;
}

/* pin = busy needs the I/O watcher; every other mode leaves it off (no wake-ups). */
static void manager_iowatch_update(Manager *m) {
        int r;

        if (m->config.cpu.pin != CPU_PIN_BUSY) {
                if (m->iowatch_timer)
                        (void) sd_event_source_set_enabled(m->iowatch_timer, SD_EVENT_OFF);
                m->iowatch_known = false;
                return;
        }
        if (!m->iowatch_timer) {
                r = sd_event_add_time_relative(m->event, &m->iowatch_timer, CLOCK_MONOTONIC,
                                               MANAGER_IOWATCH_INTERVAL_USEC, MANAGER_IOWATCH_INTERVAL_USEC / 20,
                                               on_iowatch_timer, m);
                if (r < 0) {
                        log_warning_errno(r, "Cannot watch I/O for pin = busy: %m");
                        return;
                }
                (void) sd_event_source_set_description(m->iowatch_timer, "iowatch");
        }
        (void) sd_event_source_set_time_relative(m->iowatch_timer, MANAGER_IOWATCH_INTERVAL_USEC);
        (void) sd_event_source_set_enabled(m->iowatch_timer, SD_EVENT_ON);
}

/* Make [cpu] true: pin, re-pin with other CPUs, or release (pin = off). */
void manager_cpu_apply(Manager *m, const char *reason) {
        bool irq = m->config.cpu.select == CPU_SELECT_NVME_IRQ;

        if (!m->cpupin)
                return;
        if (irq)
                manager_irq_cpus(m, &m->irq_cpus);
        (void) cpupin_apply(m->cpupin, &m->config.cpu, irq ? &m->irq_cpus : NULL, reason);
        manager_iowatch_update(m);
}

/* Controllers came or went: only cpus = nvme-irq depends on them. */
void manager_cpu_controllers_changed(Manager *m, const char *reason) {
        CpuSet now;

        if (!m->cpupin || m->config.cpu.select != CPU_SELECT_NVME_IRQ || m->config.cpu.pin == CPU_PIN_OFF)
                return;
        manager_irq_cpus(m, &now);
        if (memcmp(&now, &m->irq_cpus, sizeof now) == 0)
                return;
        m->irq_cpus = now;
        (void) cpupin_apply(m->cpupin, &m->config.cpu, &m->irq_cpus, reason);
}
