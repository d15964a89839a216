/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon's state, as every part of it sees it: the Manager and its
 * controllers (ManagerCtrl), and the narrow interface through which a part
 * asks the manager to act. manager.c is the top of the daemon and the only
 * file that calls across its parts (manager-*.c, bus-api.c); the parts
 * include this header, never manager.h, and reach manager.c only through
 * the ManagerOps it set at manager_new() (doc/architecture.md "The daemon").
 *
 * The types' fields are the parts' to read; what writes them is said at each.
 * The parts' pointers (watch, metrics, bus_api) are opaque here: each part's
 * header (manager-watch.h, manager-metrics.h, bus-api.h) says what they are.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include "bpfwatch.h"
#include "config.h"
#include "controller.h"
#include "cpupin.h"
#include "cpuset.h"
#include "ctrljob.h"
#include "holds.h"
#include "situation.h"

typedef struct Manager Manager;
typedef struct ManagerCtrl ManagerCtrl;

/**
 * ManagerOps - what a part of the daemon may ask the manager to do
 *
 * Given by manager.c at manager_new(); the parts call it through the wrappers below. Nothing else
 * of manager.c is theirs to call: what they change they say with publish, what the engine must do
 * they ask for with ctrl_request or replan_all, and manager.c decides when it runs.
 */
typedef struct ManagerOps {
        /* manager_publish() */
        void (*publish)(Manager *m, const char *prefix);
        /* manager_replan_all() */
        size_t (*replan_all)(Manager *m, const char *reason);
        /* manager_ctrl_sync(), manager_ctrl_verify(), manager_ctrl_program() */
        void (*ctrl_request)(ManagerCtrl *c, CtrlJobKind kind, const ApstTable *table, const char *reason);
        /* manager_ctrl_release() */
        void (*ctrl_release)(ManagerCtrl *c);
} ManagerOps;

/* What the daemon has done to one controller since it first saw it: what status, the D-Bus API and
 * the metrics show. Updated by manager_ctrl_sync() only. */
typedef struct ManagerCtrlStats {
        uint64_t table_writes;           /* Set Features 0x0C sent and verified (not: found in place) */
        uint64_t kernel_overwrites;      /* our table found replaced (reset, resume, pm_qos, another tool) */
        uint64_t errors;                 /* attempts that ended in CONTROLLER_FAILED */
        uint64_t unresponsive_count;     /* times a command outlived [daemon] unresponsive_after_sec */
        uint64_t last_change_usec;       /* CLOCK_REALTIME of the last table write; 0 = none yet */
        char last_change_reason[64];     /* why: "start", "reset", "resume", "reload", "verify", ... */
} ManagerCtrlStats;

/* What waits behind a controller's running engine step (ManagerCtrl.queued), run in this order. */
typedef enum ManagerQueued {
        MANAGER_QUEUED_SYNC = 1u << 0,     /* re-check (reset, resume, verify, pm_qos, ...): sync_reason */
        MANAGER_QUEUED_PROGRAM = 1u << 1,  /* the adaptive policy's table: queued_table */
        MANAGER_QUEUED_REPLAN = 1u << 2,   /* plan again from the configuration (reload, situation) */
        MANAGER_QUEUED_RESTORE = 1u << 3,  /* give the original back (stop, enable = no): alone */
} ManagerQueued;

/* One controller in the daemon: the engine's state and the daemon's bookkeeping around it.
 * @controller is only read while @job runs: the job works on its own copy, taken back when done. */
struct ManagerCtrl {
        Manager *manager;
        Controller controller;
        ManagerCtrlStats stats;
        bool failed;               /* the last attempt failed; retried on the next event */
        uint64_t io_count;
        bool io_known;
        sd_event_source *retry;    /* pending retry while not live, or after a transient error */
        unsigned n_retries;        /* retries since the last success or event */
        struct ManagerWatch *watch; /* its I/O watcher (adaptive policy, pin = busy); NULL = not watched */
        sd_event_source *qos;      /* inotify on power/pm_qos_latency_tolerance_us; NULL = not watched */
        CtrlJob *job;              /* the engine step running in its own thread; NULL = none */
        sd_event_source *deadline; /* while @job runs: fires when its command reaches the deadline */
        bool unresponsive;         /* a command outlived the deadline: nothing more is sent until it returns */
        unsigned queued;           /* ManagerQueued bits */
        char sync_reason[64], replan_reason[64], restore_reason[64];
        ApstTable queued_table;
        /* Latency holds (manager-holds.c writes these): the cap the holds on it put on its budget,
         * planned with at its next re-plan (controller.latency_cap_us is the one its plan has);
         * time spent with a hold on it (CLOCK_MONOTONIC µs: the total before @hold_since_usec, and
         * since when, 0 = none now). */
        uint32_t hold_cap_us;
        uint64_t hold_usec, hold_since_usec;
};

struct Manager {
        const ManagerOps *ops;     /* what the parts ask of manager.c (manager_new() sets it) */
        sd_event *event;
        sd_device_monitor *monitor;
        sd_bus *bus;
        sd_bus_slot *sleep_slot;
        struct BusApi *bus_api;    /* the read-only D-Bus API; NULL without a system bus */
        sd_event_source *verify_timer;
        sd_event_source *sighup;
        sd_event_source *sigterm, *sigint;
        sd_event_source *watchdog_timer;   /* WATCHDOG=1; NULL without $WATCHDOG_USEC */
        uint64_t watchdog_usec;
        sd_event_source *stall;    /* SIGUSR2 with $NVME_APSTD_TEST_STALL_LOOP_SEC (tests only); else NULL */
        unsigned test_stall_sec;
        CtrlJobQueue *jobs;        /* where the engine steps' threads put what they did */
        sd_event_source *jobs_source;
        bool starting;             /* READY=1 waits for the first steps (manager_check_settled()) */
        bool reloading;            /* RELOADING=1 sent; READY=1 once the reload's steps are back */
        size_t reload_changed;
        bool stopping;             /* SIGTERM: restoring; the loop ends when the responsive ones are done */
        bool stopped;
        size_t stop_restored, stop_in_place;
        char last_status[4096];    /* the last STATUS= sent */

        char *config_path;
        bool config_missing_ok;
        char *sysfs_root;
        char *dev_dir;
        char *proc_root;
        char *runtime_dir;
        char *state_dir;
        uint64_t verify_interval_usec;
        uint64_t learned_keep_usec;      /* MANAGER_LEARNED_KEEP_USEC */

        Config config;             /* in effect: config_file resolved for @situation (config_situate()) */
        Config config_file;        /* as parsed, with its situation sections */
        Situation situation;       /* power source and profile the configuration is resolved for */
        SysPlatform platform;
        ControllerContext ctx;     /* what the engine is called with: points into this Manager */
        ManagerCtrl **ctrls;
        size_t n_ctrls;

        BpfWatch *bpf;             /* the eBPF I/O gap program, while a watcher reads it (manager-watch.c) */
        bool bpf_tried;            /* loading it was tried (and said, once) since the start or reload */
        CpuPin *cpupin;
        CpuSet irq_cpus;           /* CPUs servicing the controllers' interrupts (cpus = nvme-irq) */
        struct ManagerMetrics *metrics; /* src/daemon/manager-metrics.c; NULL until the first update */
        struct ManagerHolds *holds;     /* latency holds (manager-holds.c); NULL until the first is asked for */
        struct BusHolds *bus_holds;     /* HoldLatency and ReleaseLatency on the bus; NULL without a bus */
        struct ManagerQuarantine *quarantine; /* the kernel log and failures pending (manager-quarantine.c) */
        uint64_t config_reloads;   /* SIGHUPs that took effect */
        uint64_t config_reload_failures;  /* SIGHUPs whose file was rejected */

        /* Following the power situation (manager-power.c) */
        Situation situation_next;        /* what the sources say now; acted on after the delay */
        sd_event_source *situation_timer;
        sd_device_monitor *power_monitor;  /* power_supply uevents */
        sd_bus_slot *ppd_slots[4];       /* NameOwnerChanged and PropertiesChanged, both names */
        sd_bus_slot *ppd_call;           /* the pending Get(ActiveProfile) */
};

/**
 * manager_publish() - the one place the daemon's state goes out
 * @prefix: "READY=1\n" and the like, sent with it; NULL for none
 *
 * STATUS= (manager_status_text(), sent when it changed or with @prefix), the [metrics] file
 * (rewritten when its text changed) and the D-Bus PropertiesChanged signals (what differs from
 * the last announcement). Every event handler, and every part (manager-*.c), calls this after
 * it changed something, and nothing else: none of them knows which of the three a change touches.
 */
void manager_publish(Manager *m, const char *prefix);

/* The one way a verification is asked for (the verify timer for unwatched controllers, the I/O
 * watcher for watched ones): a re-check with Get Features, queued like any step. */
void manager_ctrl_verify(ManagerCtrl *c);

/* Run the engine on one controller (controller_sync(), or controller_program() with @table) in its
 * thread, or queue it behind the step running there; the outcome is acted on (counted, retried,
 * published) when it comes back to the loop. Nothing is sent while the daemon stops. */
void manager_ctrl_sync(ManagerCtrl *c, const char *reason);
void manager_ctrl_program(ManagerCtrl *c, const ApstTable *table, const char *reason);

/* The steps asked for @c while manager_quarantine_holds() held them (they wait in its queue) run now:
 * the hold has ended. */
void manager_ctrl_release(ManagerCtrl *c);

/* Re-plan every controller from m->config, write what changed, give back what is no longer ours;
 * @reason: "reload", "on battery", ... Return: how many controllers' plans changed. */
size_t manager_replan_all(Manager *m, const char *reason);

/* The controller named @name ("nvme0"), or NULL. */
ManagerCtrl *manager_ctrl_find(Manager *m, const char *name);

/* Name an event source the daemon's own code created (sd_event_source_set_description()) and count
 * it until sd-event frees it. The count is the D-Bus property EventSources: with the sources libsystemd
 * makes for the bus and the uevent monitors left out, it is bounded by the situation (the signals, the
 * finished-steps eventfd, the verification and situation timers, and at most a retry timer, a pm_qos
 * watch, an I/O watch timer and, while a step runs, its deadline timer per controller), so a source
 * that outlives its owner shows up as a count beyond that bound. */
void manager_track_source(sd_event_source *s, const char *description);
unsigned manager_event_sources(void);

/* A uevent monitor for @subsystem on m->event, calling @handler with @m, its event source named
 * @description (left out of the count above, as libsystemd's own sources are). Return: 0, or
 * sd-device's negative errno (the caller says what it could not listen for). */
int manager_device_monitor(Manager *m, const char *subsystem, sd_device_monitor_handler_t handler,
                           const char *description, sd_device_monitor **ret);
