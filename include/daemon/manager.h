/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon: one sd-event loop owning every controller (systemd-oomd's and
 * timesyncd's Manager as models). The only code that wires the controller
 * engine (controller.h) and CPU pinning (cpupin.h) to sd-event, sd-device,
 * sd-bus and sd_notify. Everything it reads from the outside world comes in
 * through ManagerOptions; it knows nothing of the command line.
 *
 * Lifecycle: manager_new() -> manager_start() (discover, start each
 * controller's first step) -> sd_event_loop() (READY=1 once those steps are
 * back; SIGTERM: STOPPING=1 at once, restore the tables found before the
 * daemon first wrote them, CPUs released, the loop ends when every responsive
 * controller is done) -> manager_stop() (only when the loop ended otherwise)
 * -> manager_free().
 *
 * No admin command runs on the loop's thread: each controller's engine step
 * runs in a thread of its own (ctrljob.h), one at a time per controller, and
 * comes back through an eventfd. A step whose command outlives [daemon]
 * unresponsive_after_sec marks its controller unresponsive.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-device.h>
#include <systemd/sd-event.h>

#include "bpfwatch.h"
#include "bus-api.h"
#include "config.h"
#include "controller.h"
#include "cpupin.h"
#include "cpuset.h"
#include "macro.h"
#include "shadow.h"
#include "situation.h"
#include "sysfs.h"

/* How often to look at the I/O counters for a verification that costs no power:
 * a Get Features is only sent to a controller that did I/O since the last look
 * (it was awake anyway). 30 s keeps the idle daemon far below 0.2 wake-ups/s. */
#define MANAGER_VERIFY_INTERVAL_USEC (30ULL * 1000000ULL)

/* A change of the power situation is acted on this long after the first event of a burst, with
 * whatever the sources say then: a flapping charger or a profile toggled back and forth costs at
 * most one re-plan (and one write per changed controller) per period. Short enough that a user who
 * unplugs or picks a profile sees the drives follow at once. */
#define MANAGER_SITUATION_DELAY_USEC (250ULL * 1000ULL)

/* At most this many engine steps (each a thread) at once among controllers that answer; the rest
 * wait for a slot. A resume over many drives stays a few threads and a few open device nodes; an
 * unresponsive controller's step holds no slot, so hung drives never hold up the others. */
#define MANAGER_STEPS_MAX 8u

/* WATCHDOG=1 at most this share of WATCHDOG_USEC apart: under half, so that a single missed
 * ping never lets systemd's watchdog fire, and the gap a test measures has a strict bound. */
#define MANAGER_WATCHDOG_PING_PCT 45u

typedef struct ManagerOptions {
        const char *config_path;        /* the configuration file */
        bool config_missing_ok;         /* it is the default path: missing = the built-in defaults */
        const char *sysfs_root;         /* "/sys" */
        const char *dev_dir;            /* "/dev" */
        const char *proc_root;          /* "/proc" */
        const char *runtime_dir;        /* $RUNTIME_DIRECTORY: the crash records */
        const char *state_dir;          /* $STATE_DIRECTORY: measured wake costs (read), what the adaptive
                                         * policy learned per drive (read and written) */
        uint64_t verify_interval_usec;  /* 0 = MANAGER_VERIFY_INTERVAL_USEC */
} ManagerOptions;

typedef struct Manager Manager;
typedef struct ManagerWatch ManagerWatch;   /* one controller's I/O watcher (src/daemon/manager-watch.c) */
typedef struct ManagerMetrics ManagerMetrics;

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

typedef struct CtrlJob CtrlJob;
typedef struct CtrlJobQueue CtrlJobQueue;

/* One controller in the daemon: the engine's state and the daemon's bookkeeping around it.
 * @controller is only read while @job runs: the job works on its own copy, taken back when done. */
typedef struct ManagerCtrl {
        Manager *manager;
        Controller controller;
        ManagerCtrlStats stats;
        bool failed;               /* the last attempt failed; retried on the next event */
        uint64_t io_count;
        bool io_known;
        sd_event_source *retry;    /* pending retry while not live, or after a transient error */
        unsigned n_retries;        /* retries since the last success or event */
        ManagerWatch *watch;       /* its I/O watcher (adaptive policy, pin = busy); NULL = not watched */
        sd_event_source *qos;      /* inotify on power/pm_qos_latency_tolerance_us; NULL = not watched */
        CtrlJob *job;              /* the engine step running in its own thread; NULL = none */
        sd_event_source *deadline; /* while @job runs: fires when its command reaches the deadline */
        bool unresponsive;         /* a command outlived the deadline: nothing more is sent until it returns */
        unsigned queued;           /* ManagerQueued bits */
        char sync_reason[64], replan_reason[64], restore_reason[64];
        ApstTable queued_table;
} ManagerCtrl;

struct Manager {
        sd_event *event;
        sd_device_monitor *monitor;
        sd_bus *bus;
        sd_bus_slot *sleep_slot;
        BusApi *bus_api;           /* the read-only D-Bus API; NULL without a system bus */
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
        ManagerMetrics *metrics;   /* src/daemon/manager-metrics.c; NULL until the first update */
        uint64_t config_reloads;   /* SIGHUPs that took effect */
        uint64_t config_reload_failures;  /* SIGHUPs whose file was rejected */

        /* Following the power situation (manager-power.c) */
        Situation situation_next;        /* what the sources say now; acted on after the delay */
        sd_event_source *situation_timer;
        sd_device_monitor *power_monitor;  /* power_supply uevents */
        sd_bus_slot *ppd_slots[4];       /* NameOwnerChanged and PropertiesChanged, both names */
        sd_bus_slot *ppd_call;           /* the pending Get(ActiveProfile) */
};

int manager_new(const ManagerOptions *o, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);
int manager_start(Manager *m);
void manager_stop(Manager *m);

/* The STATUS= text: "nvme0: budget, ps3@100ms→ps4@2000ms; nvme1: failed". */
void manager_status_text(const Manager *m, char *buf, size_t n);
/**
 * manager_publish() - the one place the daemon's state goes out
 * @prefix: "READY=1\n" and the like, sent with it; NULL for none
 *
 * STATUS= (manager_status_text(), sent when it changed or with @prefix), the [metrics] file
 * (rewritten when its text changed) and the D-Bus PropertiesChanged signals (what differs from
 * the last announcement). Every event handler, and every helper (manager-*.c), calls this after
 * it changed something, and nothing else: none of them knows which of the three a change touches.
 */
void manager_publish(Manager *m, const char *prefix);

/* Name an event source the daemon's own code created (sd_event_source_set_description()) and count
 * it until sd-event frees it. The count is the D-Bus property EventSources: with the sources libsystemd
 * makes for the bus and the uevent monitors left out, it is bounded by the situation (the signals, the
 * finished-steps eventfd, the verification and situation timers, and at most a retry timer, a pm_qos
 * watch, an I/O watch timer and, while a step runs, its deadline timer per controller), so a source
 * that outlives its owner shows up as a count beyond that bound. */
void manager_track_source(sd_event_source *s, const char *description);
unsigned manager_event_sources(void);

/* The one way a verification is asked for (the verify timer for unwatched controllers, the I/O
 * watcher for watched ones): a re-check with Get Features, queued like any step. */
void manager_ctrl_verify(ManagerCtrl *c);

/* Run the engine on one controller (controller_sync(), or controller_program() with @table) in its
 * thread, or queue it behind the step running there; the outcome is acted on (counted, retried,
 * published) when it comes back to the loop. Nothing is sent while the daemon stops. */
void manager_ctrl_sync(ManagerCtrl *c, const char *reason);
void manager_ctrl_program(ManagerCtrl *c, const ApstTable *table, const char *reason);

/* The I/O watcher and the adaptive policy (src/daemon/manager-watch.c): one sd-event timer per
 * watched controller, re-armed when the watcher wants its next reading. A controller is
 * watched while its policy is adaptive or [cpu] pin = busy; the watcher then also takes
 * over its verification (the verify timer runs only for controllers nobody watches). */
void manager_watch_ctrl(ManagerCtrl *c);        /* start, restart or stop to match the config and plan */
void manager_watch_all(Manager *m);
ManagerWatch *manager_watch_free(ManagerWatch *w);
/* What @c's watcher has seen since it (re)started: I/Os completed and time the I/O waited for the
 * drive to wake. Return: false (and zeros) when the controller is not watched. */
bool manager_watch_observed(const ManagerCtrl *c, uint64_t *ret_ios, uint64_t *ret_stall_us);
/* "bpf" or "stat": where @c's watcher sees its I/O; NULL when it is not watched. */
const char *manager_watch_source(const ManagerCtrl *c);
/* Unload the eBPF program once no watcher reads it (stop, or a reload to source = stat). */
void manager_watch_release_bpf(Manager *m);

/* The shadow kernel's figures for one controller (the adaptive policy on the exact source). */
typedef struct ManagerSavings {
        const char *source;             /* "bpf", "stat"; NULL when the controller is not watched */
        bool known;                     /* the figures below are meaningful (exact source) */
        ShadowSums total_applied, total_kernel;     /* since the policy started */
        ShadowSums window_applied, window_kernel;   /* the guard's window (SHADOW_SLOTS x SHADOW_SLOT_NS) */
        uint64_t fallbacks;             /* times the guard put the kernel's table back */
} ManagerSavings;
void manager_watch_savings(const ManagerCtrl *c, ManagerSavings *ret);

/* The kernel's rewrite on a pm_qos_latency_tolerance_us write (src/daemon/manager-qos.c): one inotify
 * watch per managed controller on that attribute, (re)tried after every engine run on it (the
 * file exists only while the kernel has APST enabled); IN_MODIFY re-checks the table as a reset
 * uevent does, with admin commands only. */
void manager_qos_ctrl(ManagerCtrl *c);

/* Re-plan every controller from m->config, write what changed, give back what is no longer ours;
 * @reason: "reload", "on battery", ... Return: how many controllers' plans changed. */
size_t manager_replan_all(Manager *m, const char *reason);

/* The power situation (src/daemon/manager-power.c). */
int manager_connect_power(Manager *m);
int manager_connect_profiles(Manager *m);
/* Make m->config the file's configuration @loaded (taken over on success) resolved for m->situation. */
int manager_config_take(Manager *m, Config *loaded);
void manager_power_free(Manager *m);

/* CPU frequency pinning glue (src/daemon/manager-cpu.c). */
void manager_cpu_apply(Manager *m, const char *reason);
void manager_cpu_controllers_changed(Manager *m, const char *reason);

/* The [metrics] file (src/daemon/manager-metrics.c): rewritten when its text changed. Only
 * manager_publish() calls it. */
void manager_metrics_update(Manager *m);
void manager_metrics_free(Manager *m);
