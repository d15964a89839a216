/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon: one sd-event loop owning every controller (systemd-oomd's and
 * timesyncd's Manager as models, doc/architecture.md#conventions). The only file that wires policy to
 * sd-event, sd-device, sd-bus and sd_notify.
 *
 * Lifecycle: manager_new() -> manager_start() (discover, apply, READY=1) ->
 * sd_event_loop() -> manager_stop() (STOPPING=1, restore the tables found
 * before the daemon first wrote them) -> manager_free().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include "apply.h"
#include "config.h"
#include "cpupin.h"
#include "cpuset.h"
#include "ctrl.h"
#include "device.h"
#include "sysfs.h"

/* How often to look at the I/O counters for a verification that costs no power:
 * a Get Features is only sent to a controller that did I/O since the last look
 * (it was awake anyway). 30 s keeps the idle daemon far below 0.2 wake-ups/s. */
#define MANAGER_VERIFY_INTERVAL_USEC (30ULL * 1000000ULL)

/* With `pin = busy`: how often the I/O counters are sampled to tell busy from idle.
 * Only armed in that mode, which the user chose knowing it costs one wake-up per period. */
#define MANAGER_IOWATCH_INTERVAL_USEC (1ULL * 1000000ULL)

/* A controller that is not `live` (resetting, connecting) is looked at again after this, then after
 * twice as long each time, up to 32 times as long: one that stays dead must not keep the daemon
 * awake; the kernel's `connected` uevent brings it back at once when it recovers. */
#define MANAGER_NOT_LIVE_RETRY_USEC (2ULL * 1000000ULL)
#define MANAGER_RETRY_MAX_SHIFT 5u

/* A command that failed in a way that may pass if sent again (EINTR, EAGAIN, EBUSY, ETIMEDOUT, or
 * an NVMe status without Do Not Retry) is retried this many times, on the same schedule. */
#define MANAGER_TRANSIENT_RETRIES 3u

typedef struct Manager Manager;

typedef struct Controller {
        Manager *manager;
        char name[32];
        SysCtrl sys;
        IdCtrl id;
        bool identified;
        Ctrl *ctrl;
        DevicePlan plan;
        bool have_original;        /* original: the table found before the daemon first wrote */
        ApstTable original;
        bool have_written;         /* written: what the daemon last wrote and verified */
        ApstTable written;
        bool failed;               /* the last attempt failed; retried on the next event */
        uint64_t io_count;
        bool io_known;
        sd_event_source *retry;    /* pending retry while not live, or after a transient error */
        unsigned n_retries;        /* retries since the last success or event */
} Controller;

struct Manager {
        sd_event *event;
        sd_device_monitor *monitor;
        sd_bus *bus;
        sd_bus_slot *sleep_slot;
        sd_event_source *verify_timer;
        Config config;
        char *config_path;         /* NULL = the default path */
        char *runtime_dir;
        SysPlatform platform;
        uint64_t verify_interval_usec;  /* MANAGER_VERIFY_INTERVAL_USEC unless a test shortens it */
        Controller **ctrls;
        size_t n_ctrls;
        CpuPin *cpupin;
        CpuSet irq_cpus;           /* CPUs servicing the controllers' interrupts (cpus = nvme-irq) */
        sd_event_source *iowatch_timer;  /* pin = busy only */
        uint64_t iowatch_total;
        bool iowatch_known;
};

int manager_new(const char *config_path, Manager **ret);
Manager *manager_free(Manager *m);
int manager_start(Manager *m);
void manager_stop(Manager *m);
