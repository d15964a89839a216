/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's event loop; see manager.h.
 *
 * Keeping the table in place: the kernel rewrites APST at probe, after every
 * controller reset and on resume (doc/kernel-apst.md), and then emits a
 * `change` uevent with NVME_EVENT=connected. We re-check on that uevent, on
 * logind's PrepareForSleep(false), on inotify's IN_MODIFY of the controller's
 * power/pm_qos_latency_tolerance_us (a write there makes the kernel rewrite
 * APST with no uevent: manager-qos.c), and whenever a verification finds
 * another table. A verification is only sent to a controller whose I/O counters moved
 * since the last look: an idle drive is never woken to be checked.
 *
 * What happens to one controller is the engine's business (controller.c);
 * this file decides when, and what to do about a failure (retry.h).
 */

#include <assert.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "config-file.h"
#include "cpufreq-sysfs.h"
#include "apstd-ids.h"
#include "bus-api.h"
#include "config-build.h"
#include "nvme-admin.h"
#include "log.h"
#include "manager.h"
#include "retry.h"

static ManagerCtrl *manager_ctrl_free(ManagerCtrl *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->retry);
        sd_event_source_disable_unref(c->qos);
        manager_watch_free(c->watch);
        free(c);
        return NULL;
}

static ManagerCtrl *manager_find(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_ctrls; i++)
                if (strcmp(m->ctrls[i]->controller.name, name) == 0)
                        return m->ctrls[i];
        return NULL;
}

/* ---- status ---- */

void manager_status_text(const Manager *m, char *buf, size_t n) {
        size_t off = 0;

        buf[0] = 0;
        for (size_t i = 0; i < m->n_ctrls && off < n - 1; i++) {
                const ManagerCtrl *c = m->ctrls[i];
                char s[320];
                int k;

                controller_status(&c->controller, c->failed, s, sizeof s);
                k = snprintf(buf + off, n - off, "%s%s: %s", off ? "; " : "", c->controller.name, s);
                if (k < 0)
                        break;
                off = MIN(n - 1, off + (size_t) k);
        }
        if (m->n_ctrls == 0)
                (void) snprintf(buf, n, "no NVMe controllers");
}

void manager_notify_status(Manager *m, const char *prefix) {
        char status[4096];

        manager_status_text(m, status, sizeof status);
        (void) sd_notifyf(false, "%sSTATUS=%s", strempty(prefix), status);
        manager_metrics_update(m);
        bus_api_emit_changes(m->bus_api);
}

/* ---- event sources ---- */

/* One event loop per process, so one count: sd-event calls the destroy callback with the source's
 * userdata, which says nothing about the source itself. */
static unsigned n_event_sources;

static void event_source_freed(void *userdata) {
        assert(n_event_sources > 0);
        n_event_sources--;
}

void manager_track_source(sd_event_source *s, const char *description) {
        (void) sd_event_source_set_description(s, description);
        if (sd_event_source_set_destroy_callback(s, event_source_freed) >= 0)
                n_event_sources++;
}

unsigned manager_event_sources(void) {
        return n_event_sources;
}

/* ---- one controller ---- */

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void manager_ctrl_schedule_retry(ManagerCtrl *c) {
        uint64_t usec = retry_delay_usec(c->n_retries);
        int r;

        c->n_retries++;
        if (c->retry) {
                (void) sd_event_source_set_time_relative(c->retry, usec);
                (void) sd_event_source_set_enabled(c->retry, SD_EVENT_ONESHOT);
                return;
        }
        r = sd_event_add_time_relative(c->manager->event, &c->retry, CLOCK_MONOTONIC, usec, 0, on_retry_timer, c);
        if (r < 0)
                log_warning_errno(r, "%s: cannot schedule a retry: %m", c->controller.name);
        else
                manager_track_source(c->retry, "ctrl-retry");
}

/* After a failed command: try again later if the error may be transient, a few times. */
static void manager_ctrl_retry_transient(ManagerCtrl *c, int error, uint16_t nvme_status) {
        if (!retry_is_transient(error, nvme_status))
                return;
        if (c->n_retries >= RETRY_TRANSIENT_MAX) {
                log_warning("%s: still failing after %u retries; giving up until the controller is reset or "
                            "the system resumes.", c->controller.name, c->n_retries);
                return;
        }
        log_info("%s: the error may be transient; trying again in %u s (retry %u of %u).", c->controller.name,
                 (unsigned) (retry_delay_usec(c->n_retries) / 1000000u), c->n_retries + 1, RETRY_TRANSIENT_MAX);
        manager_ctrl_schedule_retry(c);
}

/* Count what one engine call did, for status, the D-Bus API and the metrics. @prev_written: what we
 * had written and verified before the call (NULL: nothing yet), to tell an overwrite. */
static void manager_ctrl_account(ManagerCtrl *c, const char *reason, const ControllerOutcome *o,
                                 const ApstTable *prev_written) {
        if (o->result == CONTROLLER_FAILED)
                c->stats.errors++;
        if (prev_written && o->apply.have_before && !apst_table_equal(&o->apply.before, prev_written))
                c->stats.kernel_overwrites++;
        if ((o->result == CONTROLLER_PROGRAMMED && !o->apply.unchanged) || o->result == CONTROLLER_RESTORED) {
                struct timespec ts;

                c->stats.table_writes++;
                if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
                        c->stats.last_change_usec = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
                (void) snprintf(c->stats.last_change_reason, sizeof c->stats.last_change_reason, "%s", reason);
        }
}

static int manager_ctrl_run(ManagerCtrl *c, const ApstTable *table, const char *reason) {
        ControllerOutcome o;
        int r;

        bool had_written = c->controller.have_written;
        ApstTable prev_written = c->controller.written;

        if (strcmp(reason, "retry") != 0)
                c->n_retries = 0;   /* an event: a fresh start */
        if (table)
                r = controller_program(&c->controller, &c->manager->ctx, table, reason, &o);
        else
                r = controller_sync(&c->controller, &c->manager->ctx, reason, &o);
        manager_ctrl_account(c, reason, &o, had_written ? &prev_written : NULL);
        switch (o.result) {
        case CONTROLLER_NOT_LIVE:
                manager_ctrl_schedule_retry(c);
                break;
        case CONTROLLER_FAILED:
                c->failed = true;
                if (o.failed_step != CONTROLLER_STEP_PLAN)
                        manager_ctrl_retry_transient(c, o.error, o.nvme_status);
                break;
        case CONTROLLER_PROGRAMMED:
        case CONTROLLER_LEFT_ALONE:
                /* done: a retry still pending from an earlier failure would only send Get Features
                 * to a drive that needs nothing (and keep a timer for it) */
                c->retry = sd_event_source_disable_unref(c->retry);
                c->n_retries = 0;
                c->failed = false;
                break;
        case CONTROLLER_GONE:      /* the uevent that removes it follows */
        case CONTROLLER_PLANNED:   /* not in CONTROLLER_MODE_DAEMON */
        case CONTROLLER_RESTORED:
        case _CONTROLLER_RESULT_MAX:
        case _CONTROLLER_RESULT_INVALID:
                break;
        }
        manager_watch_ctrl(c);   /* identified now, or planned again */
        manager_qos_ctrl(c);     /* the kernel may have exposed (or hidden) its pm_qos attribute */
        return r;
}

int manager_ctrl_sync(ManagerCtrl *c, const char *reason) {
        return manager_ctrl_run(c, NULL, reason);
}

int manager_ctrl_program(ManagerCtrl *c, const ApstTable *table, const char *reason) {
        return manager_ctrl_run(c, table, reason);
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerCtrl *c = userdata;

        (void) manager_ctrl_sync(c, "retry");
        manager_notify_status(c->manager, NULL);
        return 0;
}

static int manager_add_controller(Manager *m, const char *name, const char *reason) {
        ManagerCtrl *c, **t;

        if (manager_find(m, name))
                return 0;
        c = calloc(1, sizeof *c);
        if (!c)
                return log_error_errno(-ENOMEM, "Out of memory.");
        c->manager = m;
        controller_init(&c->controller, name);
        t = realloc(m->ctrls, (m->n_ctrls + 1) * sizeof *t);
        if (!t) {
                free(c);
                return log_error_errno(-ENOMEM, "Out of memory.");
        }
        m->ctrls = t;
        m->ctrls[m->n_ctrls++] = c;
        (void) manager_ctrl_sync(c, reason);
        return 0;
}

static void manager_remove_controller(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];
                if (strcmp(c->controller.name, name) != 0)
                        continue;
                log_event(LOG_INFO, 0, MSGID_CTRL_REMOVED,
                          LOG_FIELDS({ "NVME_CTRL", name }, { "NVME_MODEL", controller_model(&c->controller) },
                                     { "NVME_FIRMWARE", controller_firmware(&c->controller) }),
                          "%s: controller removed; forgetting it.", name);
                controller_forget(&c->controller, &m->ctx);
                manager_ctrl_free(c);
                memmove(m->ctrls + i, m->ctrls + i + 1, (m->n_ctrls - i - 1) * sizeof *m->ctrls);
                m->n_ctrls--;
                return;
        }
}

/* ---- events ---- */

static void manager_ctrl_reconnected(ManagerCtrl *c) {
        const char *name = c->controller.name;

        log_event(LOG_INFO, 0, NULL,
                  LOG_FIELDS({ "NVME_CTRL", name }, { "NVME_MODEL", controller_model(&c->controller) },
                             { "NVME_FIRMWARE", controller_firmware(&c->controller) }, { "APST_REASON", "reset" }),
                  "%s: controller (re)connected (reset or resume); re-checking its APST table.", name);
        (void) manager_ctrl_sync(c, "reset");
}

static int on_uevent(sd_device_monitor *mon, sd_device *dev, void *userdata) {
        Manager *m = userdata;
        sd_device_action_t action;
        const char *name, *ev = NULL;
        ManagerCtrl *c;

        if (sd_device_get_sysname(dev, &name) < 0 || !sysfs_is_ctrl_name(name))
                return 0;
        if (sd_device_get_action(dev, &action) < 0)
                return 0;
        switch (action) {
        case SD_DEVICE_ADD:
                log_info("%s: controller added.", name);
                (void) manager_add_controller(m, name, "hot-plug");
                manager_cpu_controllers_changed(m, "controller added");
                break;
        case SD_DEVICE_REMOVE:
                manager_remove_controller(m, name);
                manager_cpu_controllers_changed(m, "controller removed");
                break;
        case SD_DEVICE_CHANGE:
                (void) sd_device_get_property_value(dev, "NVME_EVENT", &ev);
                c = manager_find(m, name);
                if (!c)
                        (void) manager_add_controller(m, name, "change");
                else if (ev && strcmp(ev, "connected") == 0)
                        manager_ctrl_reconnected(c);
                break;
        default:
                break;
        }
        manager_notify_status(m, NULL);
        return 0;
}

static int on_prepare_for_sleep(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int sleeping, r;

        r = sd_bus_message_read(msg, "b", &sleeping);
        if (r < 0 || sleeping)
                return 0;
        log_info("Resumed from sleep; re-checking every controller's APST table.");
        for (size_t i = 0; i < m->n_ctrls; i++)
                (void) manager_ctrl_sync(m->ctrls[i], "resume");
        manager_notify_status(m, NULL);
        return 0;
}

static int on_verify_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        bool synced = false;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];
                uint64_t n;

                if (c->watch)   /* its watcher verifies it */
                        continue;
                if (sysfs_ctrl_io_count(m->sysfs_root, c->controller.name, &n) < 0)
                        continue;
                /* Only a controller that did I/O since the last look: it was awake anyway. */
                if (c->io_known && n != c->io_count && c->controller.have_written) {
                        (void) manager_ctrl_sync(c, "verify");
                        synced = true;
                }
                c->io_count = n;
                c->io_known = true;
        }
        if (synced)
                bus_api_emit_changes(m->bus_api);
        (void) sd_event_source_set_time_relative(s, m->verify_interval_usec);
        manager_metrics_update(m);  /* a verification may have found an overwrite */
        return 0;
}

size_t manager_replan_all(Manager *m, const char *reason) {
        size_t changed = 0;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];
                ControllerOutcome o;
                bool diff = false;

                if (!c->controller.identified)
                        continue;
                if (controller_replan(&c->controller, &m->ctx, &diff) < 0 || !diff)
                        continue;
                changed++;
                if (c->controller.plan.verdict == DEVICE_MANAGE)
                        (void) manager_ctrl_sync(c, reason);
                else {  /* no longer ours (enable = no): give back what was there */
                        (void) controller_restore(&c->controller, &m->ctx, reason, &o);
                        manager_ctrl_account(c, reason, &o, NULL);
                }
        }
        return changed;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_free_ char *err = NULL;
        Manager *m = userdata;
        char nchanged[16];
        Config staging;
        struct timespec ts;
        size_t changed;
        int r;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration...",
                          (uint64_t) ((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u));
        r = config_load_optional(m->config_path, m->config_missing_ok, &staging, &err);
        if (r < 0) {
                log_event(LOG_ERR, r, MSGID_CONFIG_REJECTED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                          "Configuration not reloaded, keeping the running one: %s", err ? err : strerror(-r));
                m->config_reload_failures++;
                manager_notify_status(m, "READY=1\n");
                return 0;
        }
        r = manager_config_take(m, &staging);
        if (r < 0) {
                config_done(&staging);
                log_event(LOG_ERR, r, MSGID_CONFIG_REJECTED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                          "Configuration not reloaded, keeping the running one: %s", strerror(-r));
                m->config_reload_failures++;
                manager_notify_status(m, "READY=1\n");
                return 0;
        }
        m->config_reloads++;

        changed = manager_replan_all(m, "reload");
        manager_cpu_apply(m, "reload");
        (void) snprintf(nchanged, sizeof nchanged, "%zu", changed);
        log_event(LOG_INFO, 0, MSGID_CONFIG_RELOADED,
                  LOG_FIELDS({ "CONFIG_FILE", m->config_path }, { "APST_TABLES_CHANGED", nchanged }),
                  "Configuration reloaded from %s; %zu controller table%s changed.", m->config_path, changed,
                  changed == 1 ? "" : "s");
        manager_notify_status(m, "READY=1\n");
        return 0;
}

/* ---- setup and teardown ---- */

static int strdup_to(char **dst, const char *src) {
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

int manager_new(const ManagerOptions *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        config_init(&m->config);
        config_init(&m->config_file);
        if (strdup_to(&m->config_path, o->config_path) < 0 || strdup_to(&m->sysfs_root, o->sysfs_root) < 0 ||
            strdup_to(&m->dev_dir, o->dev_dir) < 0 || strdup_to(&m->proc_root, o->proc_root) < 0 ||
            strdup_to(&m->runtime_dir, o->runtime_dir) < 0 || strdup_to(&m->state_dir, o->state_dir) < 0)
                return -ENOMEM;
        m->config_missing_ok = o->config_missing_ok;
        m->verify_interval_usec = o->verify_interval_usec ? o->verify_interval_usec : MANAGER_VERIFY_INTERVAL_USEC;
        m->ctx = (ControllerContext) {
                .mode = CONTROLLER_MODE_DAEMON,
                .sysfs_root = m->sysfs_root,
                .dev_dir = m->dev_dir,
                .config = &m->config,
                .platform = &m->platform,
                .record_dir = m->runtime_dir,
                .state_dir = m->state_dir,
        };
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        ctrl_set_progress_hook(NULL, NULL);
        for (size_t i = 0; i < m->n_ctrls; i++)
                manager_ctrl_free(m->ctrls[i]);
        free(m->ctrls);
        cpupin_free(m->cpupin);
        manager_metrics_free(m);
        sd_event_source_disable_unref(m->verify_timer);
        sd_event_source_disable_unref(m->sighup);
        manager_power_free(m);
        sd_bus_slot_unref(m->sleep_slot);
        bus_api_free(m->bus_api);
        sd_bus_flush_close_unref(m->bus);
        sd_device_monitor_unref(m->monitor);
        sd_event_unref(m->event);
        config_done(&m->config);
        config_done(&m->config_file);
        free(m->config_path);
        free(m->sysfs_root);
        free(m->dev_dir);
        free(m->proc_root);
        free(m->runtime_dir);
        free(m->state_dir);
        free(m);
        return NULL;
}

/* After every admin command (ctrl_set_progress_hook()): WATCHDOG=1 if a quarter of the interval has
 * passed since we last sent one here, as sd-event does between dispatches. The loop is not stuck
 * while commands complete; one that hangs still ends at CTRL_ADMIN_TIMEOUT_MS, well inside it. */
static void on_command_done(void *userdata) {
        Manager *m = userdata;
        struct timespec ts;
        uint64_t now;

        if (m->watchdog_usec == 0 || clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
                return;
        now = (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
        if (now < m->watchdog_fed_usec + m->watchdog_usec / 4)
                return;
        (void) sd_notify(false, "WATCHDOG=1");
        m->watchdog_fed_usec = now;
}

static int manager_connect_signals(Manager *m) {
        int r;

        (void) sd_event_set_watchdog(m->event, true);
        if (sd_watchdog_enabled(false, &m->watchdog_usec) <= 0)
                m->watchdog_usec = 0;
        ctrl_set_progress_hook(on_command_done, m);
        r = sd_event_set_signal_exit(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGTERM/SIGINT: %m");
        r = sd_event_add_signal(m->event, &m->sighup, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGHUP: %m");
        manager_track_source(m->sighup, "sighup");
        return 0;
}

static int manager_connect_udev(Manager *m) {
        int r;

        r = sd_device_monitor_new(&m->monitor);
        if (r >= 0)
                r = sd_device_monitor_filter_add_match_subsystem_devtype(m->monitor, "nvme", NULL);
        if (r >= 0)
                r = sd_device_monitor_attach_event(m->monitor, m->event);
        if (r >= 0)
                r = sd_device_monitor_start(m->monitor, on_uevent, m);
        if (r < 0)
                return log_error_errno(r, "Cannot listen for NVMe uevents: %m");
        (void) sd_event_source_set_description(sd_device_monitor_get_event_source(m->monitor), "nvme-uevents");
        return 0;
}

static int manager_connect_bus(Manager *m) {
        int r;

        r = sd_bus_open_system(&m->bus);
        if (r >= 0)
                r = sd_bus_match_signal_async(m->bus, &m->sleep_slot, "org.freedesktop.login1",
                                              "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                              "PrepareForSleep", on_prepare_for_sleep, NULL, m);
        if (r >= 0)
                r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0) {
                log_notice("System bus unavailable (%s); resume from sleep will only be noticed through the "
                           "kernel's uevent.", strerror(-r));
                m->sleep_slot = sd_bus_slot_unref(m->sleep_slot);
                m->bus = sd_bus_flush_close_unref(m->bus);
        }
        return 0;
}

/* The read-only D-Bus API (bus-api.h); connected last, so the name appears with every controller known. */
static void manager_connect_api(Manager *m) {
        int r;

        if (!m->bus)
                return;
        r = bus_api_new(m, m->bus, &m->bus_api);
        if (r < 0)
                log_warning_errno(r, "Cannot publish the D-Bus API: %m; `nvme-apstd status` will not reach the "
                                     "daemon.");
}

static int manager_connect_verify_timer(Manager *m) {
        int r;

        r = sd_event_add_time_relative(m->event, &m->verify_timer, CLOCK_MONOTONIC, m->verify_interval_usec,
                                       m->verify_interval_usec / 30, on_verify_timer, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the verification timer: %m");
        (void) sd_event_source_set_enabled(m->verify_timer, SD_EVENT_ON);
        manager_track_source(m->verify_timer, "verify");
        return 0;
}

static int manager_connect_cpupin(Manager *m) {
        int r;

        r = cpupin_new(&cpufreq_sysfs_ops, m->runtime_dir, &m->cpupin);
        if (r < 0)
                return log_error_errno(r, "Cannot set up CPU pinning: %m");
        /* a predecessor that crashed or was killed may have left CPUs pinned */
        (void) cpupin_recover(m->cpupin);
        return 0;
}

static void manager_enumerate(Manager *m) {
        _cleanup_free_ SysCtrl *list = NULL;
        size_t n = 0;
        int r;

        sysfs_read_platform(m->sysfs_root, &m->platform);
        r = sysfs_list_controllers(m->sysfs_root, &list, &n);
        if (r < 0)
                log_error_errno(r, "Cannot list %s/class/nvme: %m", m->sysfs_root);
        for (size_t i = 0; i < n; i++)
                (void) manager_add_controller(m, list[i].name, "start");
}

int manager_start(Manager *m) {
        _cleanup_free_ char *err = NULL;
        Config loaded;
        int r;

        r = config_load_optional(m->config_path, m->config_missing_ok, &loaded, &err);
        if (r < 0)
                return log_error_errno(r, "%s", err ? err : m->config_path);
        config_done(&m->config_file);
        m->config_file = loaded;
        if (mkdir(m->runtime_dir, 0755) < 0 && errno != EEXIST)
                log_warning_errno(-errno, "Cannot create %s: %m; a restart after a crash will not know the original "
                                          "tables.", m->runtime_dir);
        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m");
        r = manager_connect_signals(m);
        if (r < 0)
                return r;
        r = manager_connect_udev(m);
        if (r < 0)
                return r;
        (void) manager_connect_bus(m);
        r = manager_connect_power(m);
        if (r < 0)
                return r;
        (void) manager_connect_profiles(m);
        r = manager_config_take(m, &m->config_file);
        if (r < 0)
                return log_error_errno(r, "Cannot resolve the configuration: %m");
        r = manager_connect_verify_timer(m);
        if (r < 0)
                return r;
        r = manager_connect_cpupin(m);
        if (r < 0)
                return r;

        manager_enumerate(m);
        manager_cpu_apply(m, "start");
        manager_connect_api(m);
        log_event(LOG_INFO, 0, MSGID_DAEMON_STARTED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                  "nvme-apstd %s started; managing %zu controller%s.", PACKAGE_VERSION, m->n_ctrls,
                  m->n_ctrls == 1 ? "" : "s");
        manager_notify_status(m, "READY=1\n");
        return 0;
}

void manager_stop(Manager *m) {
        size_t restored = 0;

        (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring the original APST tables...");
        for (size_t i = 0; i < m->n_ctrls; i++) {
                ControllerOutcome o;

                if (controller_restore(&m->ctrls[i]->controller, &m->ctx, "stop", &o) >= 0 &&
                    o.result == CONTROLLER_RESTORED)
                        restored++;
        }
        if (m->cpupin)
                (void) cpupin_release(m->cpupin, "stop");
        log_event(LOG_INFO, 0, MSGID_DAEMON_STOPPED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                  "nvme-apstd stopped; restored %zu controller table%s.", restored, restored == 1 ? "" : "s");
}
