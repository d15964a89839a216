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
 * since the last look: an idle drive is never woken to be checked. While a failure is
 * pending on a controller its steps wait in its queue for the quarantine's verdict
 * (manager_quarantine_holds()), the re-check on its reconnect included.
 *
 * What happens to one controller is the engine's business (controller.c);
 * this file decides when, and what to do about a failure (retry.h).
 */

#include <assert.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "config-file.h"
#include "cpufreq-sysfs.h"
#include "apstd-ids.h"
#include "bus-api.h"
#include "bus-holds.h"
#include "clock.h"
#include "config-build.h"
#include "ctrljob.h"
#include "log.h"
#include "manager.h"
#include "manager-cpu.h"
#include "manager-holds.h"
#include "manager-metrics.h"
#include "manager-power.h"
#include "manager-qos.h"
#include "manager-quarantine.h"
#include "manager-watch.h"
#include "retry.h"
#include "sysfs.h"
#include "util.h"

static ManagerCtrl *manager_ctrl_free(ManagerCtrl *c) {
        if (!c)
                return NULL;
        if (c->job) {
                /* the job's thread owns it until it lands on the queue, where it is freed unread;
                 * it sends nothing more */
                c->job->userdata = NULL;
                ctrljob_cancel(c->job);
        }
        sd_event_source_disable_unref(c->deadline);
        sd_event_source_disable_unref(c->retry);
        sd_event_source_disable_unref(c->qos);
        manager_watch_free(c->watch);
        free(c);
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

                if (c->unresponsive)
                        (void) snprintf(s, sizeof s, "not answering");
                else
                        controller_status(&c->controller, c->failed, s, sizeof s);
                k = snprintf(buf + off, n - off, "%s%s: %s", off ? "; " : "", c->controller.name, s);
                if (k < 0)
                        break;
                off = MIN(n - 1, off + (size_t) k);
        }
        if (m->n_ctrls == 0)
                (void) snprintf(buf, n, "no NVMe controllers");
}

/* ManagerOps.publish: what manager_publish() asks for (manager-state.h). */
static void manager_do_publish(Manager *m, const char *prefix) {
        char status[4096];

        manager_holds_check(m);   /* the HoldLatency callers whose tables are now in force, or failed */
        manager_status_text(m, status, sizeof status);
        /* only what changed: every step's return publishes, and a notification socket that is not read
         * at once (a test's) holds few datagrams before sd_notify() blocks */
        if (prefix || strcmp(status, m->last_status) != 0) {
                (void) sd_notifyf(false, "%sSTATUS=%s", strempty(prefix), status);
                (void) snprintf(m->last_status, sizeof m->last_status, "%s", status);
        }
        manager_metrics_update(m);
        bus_api_emit_changes(m->bus_api);
        bus_holds_emit_changes(m->bus_holds);
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

/* ---- the engine steps, one at a time per controller, each in a thread of its own (ctrljob.h) ---- */

static uint64_t manager_deadline_usec(const Manager *m) {
        return (uint64_t) m->config.daemon.unresponsive_after_sec * 1000000u;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata);

/* Look again when the command now outstanding reaches the deadline (or, between two commands, a
 * deadline from now). Only while a job runs: an idle daemon has no such timer. */
static void manager_ctrl_arm_deadline(ManagerCtrl *c) {
        uint64_t now = now_usec(), d = manager_deadline_usec(c->manager);
        uint64_t age = ctrljob_command_age_usec(c->job, now);
        int r;

        if (c->deadline) {
                (void) sd_event_source_set_time(c->deadline, now - age + d);
                (void) sd_event_source_set_enabled(c->deadline, SD_EVENT_ONESHOT);
                return;
        }
        r = sd_event_add_time(c->manager->event, &c->deadline, CLOCK_MONOTONIC, now - age + d, 0, on_deadline, c);
        if (r < 0)
                log_warning_errno(r, "%s: cannot time its admin command: %m", c->controller.name);
        else
                manager_track_source(c->deadline, "ctrl-deadline");
}

static void manager_check_settled(Manager *m);
static void manager_ctrl_finish(ManagerCtrl *c, CtrlJob *j);
static void manager_start_waiting(Manager *m);
static void manager_ctrl_queue(ManagerCtrl *c, CtrlJobKind kind, const ApstTable *table, const char *reason);

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerCtrl *c = userdata;
        uint64_t now = now_usec(), d = manager_deadline_usec(c->manager);
        uint64_t age;
        char secs[16];

        if (!c->job)
                return 0;
        age = ctrljob_command_age_usec(c->job, now);
        if (age < d) {          /* another command, or none just now: look again at its deadline */
                manager_ctrl_arm_deadline(c);
                return 0;
        }
        c->unresponsive = true;
        c->stats.unresponsive_count++;
        (void) snprintf(secs, sizeof secs, "%u", c->manager->config.daemon.unresponsive_after_sec);
        log_event(LOG_WARNING, 0, MSGID_CTRL_UNRESPONSIVE,
                  LOG_FIELDS({ "NVME_CTRL", c->controller.name }, { "NVME_MODEL", controller_model(&c->controller) },
                             { "NVME_FIRMWARE", controller_firmware(&c->controller) },
                             { "APST_REASON", c->job->reason }, { "NVME_DEADLINE_SEC", secs }),
                  "%s: no answer to an admin command (%s) for %s s; the controller is unresponsive: nothing more "
                  "is sent to it until that command returns or it is reset.", c->controller.name, c->job->reason,
                  secs);
        manager_start_waiting(c->manager);   /* its slot is free */
        manager_publish(c->manager, NULL);
        manager_check_settled(c->manager);
        return 0;
}

/* Steps running for controllers that answer. One that is unresponsive holds its thread but no slot:
 * hung drives never keep the others waiting. */
static size_t manager_steps_running(const Manager *m) {
        size_t n = 0;

        for (size_t i = 0; i < m->n_ctrls; i++)
                if (m->ctrls[i]->job && !m->ctrls[i]->unresponsive)
                        n++;
        return n;
}

static void manager_ctrl_next(ManagerCtrl *c);

/* Start what waits for a slot, in the order the controllers were found. */
static void manager_start_waiting(Manager *m) {
        for (size_t i = 0; i < m->n_ctrls && manager_steps_running(m) < MANAGER_STEPS_MAX; i++) {
                ManagerCtrl *c = m->ctrls[i];

                if (!c->job && c->queued)
                        manager_ctrl_next(c);
        }
}

/* Start @kind on @c now (no job may be running), or when a slot is free (MANAGER_STEPS_MAX).
 * Without a thread the step runs here; either way it is finished from the queue (on_job_done()). */
static void manager_ctrl_start(ManagerCtrl *c, CtrlJobKind kind, const ApstTable *table, const char *reason) {
        Manager *m = c->manager;
        CtrlJob *j = NULL;
        int r;

        assert(!c->job);
        if (manager_steps_running(m) >= MANAGER_STEPS_MAX) {
                manager_ctrl_queue(c, kind, table, reason);   /* manager_start_waiting() starts it */
                return;
        }
        if (strcmp(reason, "retry") != 0)
                c->n_retries = 0;   /* an event: a fresh start */
        r = ctrljob_new(kind, &c->controller, &m->ctx, reason, table, &j);
        if (r < 0) {
                log_error_errno(r, "%s: cannot prepare the %s step: %m", c->controller.name, reason);
                return;
        }
        j->userdata = c;
        c->job = j;
        r = ctrljob_start(j, m->jobs);
        if (r < 0) {
                log_error_errno(r, "%s: cannot start the %s step: %m", c->controller.name, reason);
                c->job = NULL;
                ctrljob_free(j);
                return;
        }
        if (r > 0) {   /* it ran here, and waits on the queue */
                log_warning("%s: no thread for the %s step; it ran in the event loop.", c->controller.name, reason);
                return;
        }
        manager_ctrl_arm_deadline(c);
}

/* Keep @kind for later: behind the running step, or until a slot is free. One of each kind is
 * kept: a restore supersedes everything queued, a program (adaptive) a sync; the latest reason and
 * table win. */
static void manager_ctrl_queue(ManagerCtrl *c, CtrlJobKind kind, const ApstTable *table, const char *reason) {
        switch (kind) {
        case CTRL_JOB_RESTORE:
                c->queued = MANAGER_QUEUED_RESTORE;
                (void) snprintf(c->restore_reason, sizeof c->restore_reason, "%s", reason);
                break;
        case CTRL_JOB_PROGRAM:
                if (c->queued & MANAGER_QUEUED_RESTORE)
                        break;
                c->queued |= MANAGER_QUEUED_PROGRAM;
                c->queued_table = *table;
                break;
        case CTRL_JOB_SYNC:
                if (c->queued & MANAGER_QUEUED_RESTORE)
                        break;
                c->queued |= MANAGER_QUEUED_SYNC;
                (void) snprintf(c->sync_reason, sizeof c->sync_reason, "%s", reason);
                break;
        case CTRL_JOB_CALL:        /* the verbs' */
        case _CTRL_JOB_KIND_MAX:
        case _CTRL_JOB_KIND_INVALID:
                break;
        }
}

/* Run @kind now, or queue it behind the running step (or until a slot is free, or until the verdict
 * on a failure pending on @c: manager_quarantine_holds()). */
static void manager_ctrl_request(ManagerCtrl *c, CtrlJobKind kind, const ApstTable *table, const char *reason) {
        if (c->manager->stopping && kind != CTRL_JOB_RESTORE)
                return;
        if (kind == CTRL_JOB_RESTORE && !c->job)
                c->queued = 0;   /* it supersedes what waits for a slot or for a verdict (manager_quarantine_holds()),
                                  * as it does what waits behind a step: nothing of ours is written after it */
        if (!c->job && (kind == CTRL_JOB_RESTORE || !manager_quarantine_holds(c)))
                manager_ctrl_start(c, kind, table, reason);
        else
                manager_ctrl_queue(c, kind, table, reason);
}

/* Plan @c again from m->config; write what changed, give back what is no longer ours. */
static bool manager_ctrl_replan(ManagerCtrl *c, const char *reason) {
        bool diff = false;

        c->controller.latency_cap_us = c->hold_cap_us;   /* the latency holds' cap (manager-holds.c) */
        if (!c->controller.identified)
                return false;
        if (controller_replan(&c->controller, &c->manager->ctx, &diff) < 0 || !diff)
                return false;
        if (c->controller.plan.verdict == DEVICE_MANAGE)
                manager_ctrl_request(c, CTRL_JOB_SYNC, NULL, reason);
        else   /* no longer ours (enable = no): give back what was there */
                manager_ctrl_request(c, CTRL_JOB_RESTORE, NULL, reason);
        return true;
}

/* What was queued behind the step that just ended, in order: a restore alone; else a re-plan (a
 * reload), then the adaptive policy's table or a re-check. */
static void manager_ctrl_next(ManagerCtrl *c) {
        unsigned q = c->queued;

        if (!(q & MANAGER_QUEUED_RESTORE) && manager_quarantine_holds(c))
                return;   /* kept until the verdict: manager_do_ctrl_release() */
        c->queued = 0;
        if (q & MANAGER_QUEUED_RESTORE) {
                manager_ctrl_start(c, CTRL_JOB_RESTORE, NULL, c->restore_reason);
                return;
        }
        if ((q & MANAGER_QUEUED_REPLAN) && manager_ctrl_replan(c, c->replan_reason))
                return;   /* its sync or restore covers the rest; the learned table went with the plan */
        if (q & MANAGER_QUEUED_PROGRAM)
                manager_ctrl_start(c, CTRL_JOB_PROGRAM, &c->queued_table, "adaptive");
        else if (q & MANAGER_QUEUED_SYNC)
                manager_ctrl_start(c, CTRL_JOB_SYNC, NULL, c->sync_reason);
}

/* A step came back (on the loop's thread): take the engine's state, count, retry, go on. */
static void manager_ctrl_finish(ManagerCtrl *c, CtrlJob *j) {
        _cleanup_(ctrljob_freep) CtrlJob *job = j;
        Manager *m = c->manager;
        const ControllerOutcome *o = &job->outcome;
        bool had_written = c->controller.have_written, was_unresponsive = c->unresponsive;
        ApstTable prev_written = c->controller.written;

        c->deadline = sd_event_source_disable_unref(c->deadline);   /* lives only while a step runs */
        c->controller = job->controller;
        /* the plan's [device] section name pointed into the job's copy of the configuration */
        c->controller.plan.section = config_section_name(&m->config, job->controller.plan.section);
        c->unresponsive = false;
        if (was_unresponsive)
                log_event(LOG_NOTICE, 0, MSGID_CTRL_RESPONSIVE,
                          LOG_FIELDS({ "NVME_CTRL", c->controller.name },
                                     { "NVME_MODEL", controller_model(&c->controller) },
                                     { "NVME_FIRMWARE", controller_firmware(&c->controller) },
                                     { "APST_REASON", job->reason }),
                          "%s: the admin command outstanding since it became unresponsive has returned after "
                          "%.1f s; re-checking the controller as after a reset.", c->controller.name,
                          (double) (now_usec() - job->started_usec) / 1e6);

        manager_ctrl_account(c, job->reason, o,
                             job->kind != CTRL_JOB_RESTORE && had_written ? &prev_written : NULL);
        if (job->kind == CTRL_JOB_RESTORE) {
                if (m->stopping && strcmp(job->reason, "stop") == 0) {
                        if (o->result == CONTROLLER_RESTORED)
                                m->stop_restored++;
                        else if (o->result == CONTROLLER_LEFT_ALONE && o->in_place)
                                m->stop_in_place++;
                }
        } else
                switch (o->result) {
                case CONTROLLER_NOT_LIVE:
                        if (!m->stopping)
                                manager_ctrl_schedule_retry(c);
                        break;
                case CONTROLLER_FAILED:
                        c->failed = true;
                        if (o->failed_step != CONTROLLER_STEP_PLAN && !m->stopping)
                                manager_ctrl_retry_transient(c, o->error, o->nvme_status);
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
        if (!m->stopping) {
                manager_watch_ctrl(c);   /* identified now, or planned again */
                manager_qos_ctrl(c);     /* the kernel may have exposed (or hidden) its pm_qos attribute */
                manager_quarantine_ctrl(c);
        }
        if (was_unresponsive) {
                /* what it missed meanwhile is unknown: the same look as after a reset; at stop, the
                 * restore it was skipped for */
                if (m->stopping)
                        manager_ctrl_request(c, CTRL_JOB_RESTORE, NULL, "stop");
                else if (!(c->queued & MANAGER_QUEUED_RESTORE))
                        manager_ctrl_request(c, CTRL_JOB_SYNC, NULL, "reset");
        }
        if (!c->job && c->queued)
                manager_ctrl_next(c);
        manager_start_waiting(m);
        manager_publish(m, NULL);
        manager_check_settled(m);
}

static bool manager_jobs_running(const Manager *m) {
        for (size_t i = 0; i < m->n_ctrls; i++)
                if (m->ctrls[i]->job)
                        return true;
        return false;
}

static int on_job_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        CtrlJob *j;

        while ((j = ctrljob_queue_pop(m->jobs))) {
                ManagerCtrl *c = j->userdata;

                if (!c) {            /* its controller went away meanwhile */
                        ctrljob_free(j);
                        continue;
                }
                assert(c->job == j);
                c->job = NULL;
                manager_ctrl_finish(c, j);
        }
        /* The burst is over (start, resume, reload over many controllers: their steps' copies were
         * allocated side by side): hand the freed heap back, so that the idle daemon's RSS is what it
         * was before any step ran, not the burst's high-water mark. */
        if (!manager_jobs_running(m))
                (void) malloc_trim(0);
        return 0;
}

static int on_retry_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerCtrl *c = userdata;

        manager_ctrl_sync(c, "retry");
        return 0;
}

static int manager_add_controller(Manager *m, const char *name, const char *reason) {
        ManagerCtrl *c, **t;

        if (manager_ctrl_find(m, name))
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
        /* its transport and state now (no command): CPU pinning's nvme-irq and status need them before
         * the engine's first step comes back */
        (void) sysfs_read_controller(m->sysfs_root, name, &c->controller.sys);
        manager_holds_ctrl_added(m, c);
        manager_ctrl_sync(c, reason);
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
                manager_holds_ctrl_removed(m, c);
                controller_forget(&c->controller, &m->ctx);
                manager_ctrl_free(c);
                memmove(m->ctrls + i, m->ctrls + i + 1, (m->n_ctrls - i - 1) * sizeof *m->ctrls);
                m->n_ctrls--;
                manager_start_waiting(m);
                manager_check_settled(m);
                return;
        }
}

/* ---- events ---- */

static void manager_ctrl_reconnected(ManagerCtrl *c) {
        const char *name = c->controller.name;
        bool held = manager_quarantine_holds(c);

        log_event(LOG_INFO, 0, NULL,
                  LOG_FIELDS({ "NVME_CTRL", name }, { "NVME_MODEL", controller_model(&c->controller) },
                             { "NVME_FIRMWARE", controller_firmware(&c->controller) }, { "APST_REASON", "reset" }),
                  "%s: controller (re)connected (reset or resume); re-checking its APST table%s.", name,
                  held ? " once the failure pending on it is judged" : "");
        manager_ctrl_sync(c, "reset");   /* held meanwhile: the verdict says which table it gets */
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
                c = manager_ctrl_find(m, name);
                if (!c)
                        (void) manager_add_controller(m, name, "change");
                else if (ev && strcmp(ev, "connected") == 0)
                        manager_ctrl_reconnected(c);
                break;
        default:
                break;
        }
        manager_publish(m, NULL);
        return 0;
}

static int on_prepare_for_sleep(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int sleeping, r;

        r = sd_bus_message_read(msg, "b", &sleeping);
        if (r >= 0)
                manager_quarantine_sleep(m, sleeping);
        if (r < 0 || sleeping)
                return 0;
        log_info("Resumed from sleep; re-checking every controller's APST table.");
        for (size_t i = 0; i < m->n_ctrls; i++)
                manager_ctrl_sync(m->ctrls[i], "resume");
        return 0;
}

static int on_verify_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];
                uint64_t n;

                if (c->watch)   /* its watcher verifies it */
                        continue;
                if (sysfs_ctrl_io_count(m->sysfs_root, c->controller.name, &n) < 0)
                        continue;
                /* Only a controller that did I/O since the last look: it was awake anyway. */
                if (c->io_known && n != c->io_count && c->controller.have_written)
                        manager_ctrl_verify(c);
                c->io_count = n;
                c->io_known = true;
        }
        (void) sd_event_source_set_time_relative(s, m->verify_interval_usec);
        return 0;
}

/* ManagerOps.replan_all: what manager_replan_all() asks for (manager-state.h). */
static size_t manager_do_replan_all(Manager *m, const char *reason) {
        size_t changed = 0;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];

                if (c->job) {
                        /* never under a running step: planned again when it is back */
                        c->queued |= MANAGER_QUEUED_REPLAN;
                        (void) snprintf(c->replan_reason, sizeof c->replan_reason, "%s", reason);
                        continue;
                }
                if (manager_ctrl_replan(c, reason))
                        changed++;
        }
        return changed;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_free_ char *err = NULL;
        Manager *m = userdata;
        Config staging;
        struct timespec ts;
        int r;

        if (m->stopping)
                return 0;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration...",
                          (uint64_t) ((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u));
        r = config_load_optional(m->config_path, m->config_missing_ok, &staging, &err);
        if (r < 0) {
                /* One entry per error, each naming its file, line, section and key. */
                for (const char *e = err; e && *e; e += strcspn(e, "\n"), e += *e == '\n')
                        log_event(LOG_ERR, r, MSGID_CONFIG_REJECTED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                                  "Configuration not reloaded, keeping the running one: %.*s",
                                  (int) strcspn(e, "\n"), e);
                if (!err)
                        log_event(LOG_ERR, r, MSGID_CONFIG_REJECTED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                                  "Configuration not reloaded, keeping the running one: %s", strerror(-r));
                m->config_reload_failures++;
                manager_publish(m, m->starting || m->reloading ? NULL : "READY=1\n");
                return 0;
        }
        r = manager_config_take(m, &staging);
        if (r < 0) {
                config_done(&staging);
                log_event(LOG_ERR, r, MSGID_CONFIG_REJECTED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                          "Configuration not reloaded, keeping the running one: %s", strerror(-r));
                m->config_reload_failures++;
                manager_publish(m, m->starting || m->reloading ? NULL : "READY=1\n");
                return 0;
        }
        m->config_reloads++;
        manager_holds_reloaded(m);   /* [holds] enable = no ends them; the re-plan below follows the caps */

        if (!m->reloading)
                m->reload_changed = 0;
        m->reloading = true;
        m->reload_changed += manager_replan_all(m, "reload");
        manager_cpu_apply(m, "reload");
        /* READY=1, the journal entry and what changed once the new tables are written
         * (manager_check_settled()) */
        manager_check_settled(m);
        return 0;
}

static void manager_log_reloaded(Manager *m) {
        char nchanged[16];

        (void) snprintf(nchanged, sizeof nchanged, "%zu", m->reload_changed);
        log_event(LOG_INFO, 0, MSGID_CONFIG_RELOADED,
                  LOG_FIELDS({ "CONFIG_FILE", m->config_path }, { "APST_TABLES_CHANGED", nchanged }),
                  "Configuration reloaded from %s; %zu controller table%s changed.", m->config_path,
                  m->reload_changed, m->reload_changed == 1 ? "" : "s");
}

/* Append "nvme1 (not a PCIe controller)" for each controller not managed to @buf. Return: how many
 * are managed. */
static size_t manager_describe_managed(const Manager *m, char *buf, size_t n) {
        size_t managed = 0, off = 0;

        buf[0] = 0;
        for (size_t i = 0; i < m->n_ctrls; i++) {
                const ManagerCtrl *c = m->ctrls[i];
                const Controller *k = &c->controller;
                const char *why;
                int l;

                if (c->unresponsive)
                        why = "not answering";
                else if (c->failed && !k->identified)
                        why = "failed";
                else if (!k->identified)
                        why = k->sys.state[0] ? k->sys.state : "not ready";
                else if (k->plan.verdict == DEVICE_MANAGE) {
                        managed++;
                        continue;
                } else
                        why = device_verdict_reason(k->plan.verdict);
                l = snprintf(buf + off, n - off, "%s%s (%s)", off ? ", " : "", k->name, why);
                if (l < 0)
                        break;
                off = MIN(n - 1, off + (size_t) l);
        }
        return managed;
}

static void manager_log_started(Manager *m) {
        char others[2048], nmanaged[16];
        size_t managed = manager_describe_managed(m, others, sizeof others);

        (void) snprintf(nmanaged, sizeof nmanaged, "%zu", managed);
        log_event(LOG_INFO, 0, MSGID_DAEMON_STARTED,
                  LOG_FIELDS({ "CONFIG_FILE", m->config_path }, { "NVME_MANAGED", nmanaged },
                             { "NVME_NOT_MANAGED", others[0] ? others : NULL }),
                  "nvme-apstd %s started; managing %zu controller%s%s%s.", PACKAGE_VERSION, managed,
                  managed == 1 ? "" : "s", others[0] ? "; not managed: " : "", others);
}

/* Every controller's step is back, or its drive does not answer, or its steps wait for the verdict on
 * its failure (which may take as long as its reset): nothing to wait for. */
static bool manager_settled(const Manager *m) {
        for (size_t i = 0; i < m->n_ctrls; i++) {
                const ManagerCtrl *c = m->ctrls[i];

                if ((c->job && !c->unresponsive) || (!c->job && c->queued && !manager_quarantine_holds(c)))
                        return false;
        }
        return true;
}

static void manager_finish_stop(Manager *m);

/* Start, reload and stop wait for the engine steps they started (bounded by the deadline): READY=1
 * says the tables are written, the stop ends once every responsive controller has its table back. */
static void manager_check_settled(Manager *m) {
        const char *ready = NULL;

        if (!manager_settled(m))
                return;
        if (m->stopping) {
                manager_finish_stop(m);
                return;
        }
        if (m->starting) {
                m->starting = false;
                manager_log_started(m);
                ready = "READY=1\n";
        }
        if (m->reloading) {
                m->reloading = false;
                manager_log_reloaded(m);
                ready = "READY=1\n";
        }
        if (ready)
                manager_publish(m, ready);
}

/* ---- stop ---- */

static void manager_begin_stop(Manager *m) {
        m->stopping = true;
        manager_holds_stop(m);
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring the original APST tables...");
        /* nothing but the restores from here: no timer or watch may start work or pin a CPU again
         * (pin = busy's watchers would) while the loop runs on for them */
        m->verify_timer = sd_event_source_disable_unref(m->verify_timer);
        m->situation_timer = sd_event_source_disable_unref(m->situation_timer);
        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];

                c->watch = manager_watch_free(c->watch);
                c->qos = sd_event_source_disable_unref(c->qos);
        }
        if (m->cpupin)
                (void) cpupin_release(m->cpupin, "stop");
        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];

                c->retry = sd_event_source_disable_unref(c->retry);
                if (c->unresponsive)
                        continue;   /* its record stays: the next start puts the original back */
                manager_ctrl_request(c, CTRL_JOB_RESTORE, NULL, "stop");
        }
        manager_check_settled(m);
}

static void manager_finish_stop(Manager *m) {
        char kept[2048] = "", nrestored[16], in_place[96] = "";
        size_t off = 0, n_kept = 0;

        if (m->stopped)
                return;
        m->stopped = true;
        for (size_t i = 0; i < m->n_ctrls; i++) {
                const ManagerCtrl *c = m->ctrls[i];
                int l;

                if (!c->unresponsive || !c->controller.have_original)
                        continue;
                n_kept++;
                l = snprintf(kept + off, sizeof kept - off, "%s%s", off ? ", " : "", c->controller.name);
                if (l > 0)
                        off = MIN(sizeof kept - 1, off + (size_t) l);
        }
        (void) snprintf(nrestored, sizeof nrestored, "%zu", m->stop_restored);
        if (m->stop_in_place)
                (void) snprintf(in_place, sizeof in_place, "; %zu already held %s original table, nothing written",
                                m->stop_in_place, m->stop_in_place == 1 ? "its" : "their");
        log_event(n_kept ? LOG_WARNING : LOG_INFO, 0, MSGID_DAEMON_STOPPED,
                  LOG_FIELDS({ "CONFIG_FILE", m->config_path }, { "APST_TABLES_RESTORED", nrestored },
                             { "NVME_NOT_RESTORED", n_kept ? kept : NULL }),
                  "nvme-apstd stopped; restored %zu controller table%s%s%s%s.", m->stop_restored,
                  m->stop_restored == 1 ? "" : "s", in_place,
                  n_kept ? "; not answering, original kept for the next start: " : "", kept);
        (void) sd_event_exit(m->event, 0);
}

static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (m->stopping) {
                log_info("Signal %s again: still waiting for the controllers' tables to be restored.",
                         strsignal((int) si->ssi_signo));
                return 0;
        }
        manager_begin_stop(m);
        return 0;
}

/* ---- setup and teardown ---- */

static int strdup_to(char **dst, const char *src) {
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

/* ManagerOps.ctrl_release: what manager_ctrl_release() asks for (manager-state.h). */
static void manager_do_ctrl_release(ManagerCtrl *c) {
        if (!c->job && c->queued)
                manager_ctrl_next(c);
}

/* What the parts (manager-*.c, bus-api.c) may ask of this file: they call nothing else of it. */
static const ManagerOps manager_ops = {
        .publish = manager_do_publish,
        .replan_all = manager_do_replan_all,
        .ctrl_request = manager_ctrl_request,
        .ctrl_release = manager_do_ctrl_release,
};

int manager_new(const ManagerOptions *o, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->ops = &manager_ops;
        config_init(&m->config);
        config_init(&m->config_file);
        if (strdup_to(&m->config_path, o->config_path) < 0 || strdup_to(&m->sysfs_root, o->sysfs_root) < 0 ||
            strdup_to(&m->dev_dir, o->dev_dir) < 0 || strdup_to(&m->proc_root, o->proc_root) < 0 ||
            strdup_to(&m->runtime_dir, o->runtime_dir) < 0 || strdup_to(&m->state_dir, o->state_dir) < 0)
                return -ENOMEM;
        m->config_missing_ok = o->config_missing_ok;
        m->verify_interval_usec = o->verify_interval_usec ? o->verify_interval_usec : MANAGER_VERIFY_INTERVAL_USEC;
        m->learned_keep_usec = MANAGER_LEARNED_KEEP_USEC;
        const char *e = getenv("NVME_APSTD_TEST_LEARNED_KEEP_SEC");
        if (e) {
                unsigned sec;
                if (safe_atou32(e, &sec) < 0 || sec == 0 || sec > 3600)
                        return log_error_errno(-EINVAL, "$NVME_APSTD_TEST_LEARNED_KEEP_SEC=%s: not 1..3600.", e);
                m->learned_keep_usec = (uint64_t) sec * 1000000u;
        }
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
        for (size_t i = 0; i < m->n_ctrls; i++)
                manager_ctrl_free(m->ctrls[i]);
        free(m->ctrls);
        bpfwatch_free(m->bpf);
        cpupin_free(m->cpupin);
        manager_metrics_free(m);
        sd_event_source_disable_unref(m->verify_timer);
        sd_event_source_disable_unref(m->sighup);
        sd_event_source_disable_unref(m->watchdog_timer);
        sd_event_source_disable_unref(m->sigterm);
        sd_event_source_disable_unref(m->sigint);
        sd_event_source_disable_unref(m->stall);
        sd_event_source_disable_unref(m->jobs_source);
        /* a job still in the kernel keeps its own reference; it lands in a queue nobody reads */
        ctrljob_queue_unref(m->jobs);
        manager_power_free(m);
        sd_bus_slot_unref(m->sleep_slot);
        bus_holds_free(m->bus_holds);   /* its polkit questions first: they point into the holds */
        manager_holds_free(m);
        manager_quarantine_free(m);
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

/* For the test that shows the watchdog still catches a stuck loop (tests/integration): with
 * $NVME_APSTD_TEST_STALL_LOOP_SEC set, SIGUSR2 blocks the event loop that long. Without the variable
 * SIGUSR2 keeps its default action; nothing else reads it. */
static int on_test_stall(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_warning("SIGUSR2 with $NVME_APSTD_TEST_STALL_LOOP_SEC set: blocking the event loop for %u s.",
                    m->test_stall_sec);
        (void) sleep(m->test_stall_sec);
        return 0;
}

static int manager_connect_test_stall(Manager *m) {
        const char *e = getenv("NVME_APSTD_TEST_STALL_LOOP_SEC");
        int r;

        if (!e)
                return 0;
        if (safe_atou32(e, &m->test_stall_sec) < 0 || m->test_stall_sec == 0 || m->test_stall_sec > 600)
                return log_error_errno(-EINVAL, "$NVME_APSTD_TEST_STALL_LOOP_SEC=%s: not 1..600.", e);
        r = sd_event_add_signal(m->event, &m->stall, SIGUSR2 | SD_EVENT_SIGNAL_PROCMASK, on_test_stall, m);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGUSR2: %m");
        manager_track_source(m->stall, "test-stall");
        return 0;
}

static int manager_connect_jobs(Manager *m) {
        int r;

        r = ctrljob_queue_new(&m->jobs);
        if (r >= 0 && !m->jobs)   /* set on success; said for the static analyzer */
                r = -ENOMEM;
        if (r >= 0)
                r = sd_event_add_io(m->event, &m->jobs_source, ctrljob_queue_fd(m->jobs), EPOLLIN, on_job_done, m);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the admin command threads: %m");
        manager_track_source(m->jobs_source, "ctrl-jobs");
        return 0;
}

/* WATCHDOG=1 comes from the loop alone: no admin command ever runs in it (ctrljob.h), so a missed
 * one means the loop itself is stuck. Our own timer rather than sd_event_set_watchdog(), which pings
 * between 1/2 and 3/4 of the interval: at most MANAGER_WATCHDOG_PING_PCT % of it apart (the timer's
 * period plus its accuracy), so one late wake-up is never the difference. */
static int on_watchdog_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        (void) sd_notify(false, "WATCHDOG=1");
        (void) sd_event_source_set_time_relative(s, m->watchdog_usec * MANAGER_WATCHDOG_PING_PCT / 100u -
                                                            m->watchdog_usec / 20u);
        return 0;
}

static int manager_connect_watchdog(Manager *m) {
        uint64_t usec;
        int r;

        if (sd_watchdog_enabled(false, &usec) <= 0 || usec < 20)
                return 0;
        m->watchdog_usec = usec;
        (void) sd_notify(false, "WATCHDOG=1");
        r = sd_event_add_time_relative(m->event, &m->watchdog_timer, CLOCK_MONOTONIC,
                                       usec * MANAGER_WATCHDOG_PING_PCT / 100u - usec / 20u, usec / 20u,
                                       on_watchdog_timer, m);
        if (r < 0)
                return log_error_errno(r, "Cannot ping the service manager's watchdog: %m");
        (void) sd_event_source_set_enabled(m->watchdog_timer, SD_EVENT_ON);
        manager_track_source(m->watchdog_timer, "watchdog");
        return 0;
}

static int manager_connect_signals(Manager *m) {
        int r;

        r = manager_connect_watchdog(m);
        if (r < 0)
                return r;
        /* not sd_event_set_signal_exit(): the loop keeps running while the tables are restored */
        r = sd_event_add_signal(m->event, &m->sigterm, SIGTERM | SD_EVENT_SIGNAL_PROCMASK, on_stop_signal, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, &m->sigint, SIGINT | SD_EVENT_SIGNAL_PROCMASK, on_stop_signal, m);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGTERM/SIGINT: %m");
        manager_track_source(m->sigterm, "sigterm");
        manager_track_source(m->sigint, "sigint");
        r = sd_event_add_signal(m->event, &m->sighup, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGHUP: %m");
        manager_track_source(m->sighup, "sighup");
        return 0;
}

static int manager_connect_udev(Manager *m) {
        int r;

        r = manager_device_monitor(m, "nvme", on_uevent, "nvme-uevents", &m->monitor);
        if (r < 0)
                return log_error_errno(r, "Cannot listen for NVMe uevents: %m");
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
        r = bus_holds_new(m, m->bus, &m->bus_holds);
        if (r < 0)
                log_warning_errno(r, "Cannot offer latency holds on the bus: %m");
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
        if (r < 0) {
                for (const char *e = err; e && *e; e += strcspn(e, "\n"), e += *e == '\n')
                        (void) log_error_errno(r, "%.*s", (int) strcspn(e, "\n"), e);
                return err ? r : log_error_errno(r, "%s: %m", m->config_path);
        }
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
        r = manager_connect_test_stall(m);
        if (r < 0)
                return r;
        r = manager_connect_jobs(m);
        if (r < 0)
                return r;
        r = manager_connect_udev(m);
        if (r < 0)
                return r;
        r = manager_quarantine_start(m);
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

        /* each controller's first step runs in its own thread; READY=1 once they are all back (or
         * their drives do not answer): manager_check_settled() */
        m->starting = true;
        manager_enumerate(m);
        manager_cpu_apply(m, "start");
        manager_connect_api(m);
        manager_publish(m, NULL);
        manager_check_settled(m);
        return 0;
}

void manager_stop(Manager *m) {
        if (m->stopped || !m->event)
                return;
        /* the loop ended without SIGTERM (an error): restore what answers within the deadline, here */
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Restoring the original APST tables...");
        m->stopping = true;
        manager_holds_stop(m);
        if (m->cpupin)
                (void) cpupin_release(m->cpupin, "stop");
        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];
                CtrlJob *j = NULL;

                if (c->job || ctrljob_new(CTRL_JOB_RESTORE, &c->controller, &m->ctx, "stop", NULL, &j) < 0)
                        continue;
                if (ctrljob_run(j, manager_deadline_usec(m)) < 0) {
                        c->unresponsive = true;
                        continue;
                }
                c->controller = j->controller;
                c->controller.plan.section = config_section_name(&m->config, j->controller.plan.section);
                if (j->outcome.result == CONTROLLER_RESTORED)
                        m->stop_restored++;
                else if (j->outcome.result == CONTROLLER_LEFT_ALONE && j->outcome.in_place)
                        m->stop_in_place++;
                ctrljob_free(j);
        }
        manager_finish_stop(m);
}
