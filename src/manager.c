/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's event loop; see manager.h.
 *
 * Keeping the table in place: the kernel rewrites APST at probe, after every
 * controller reset and on resume (doc/kernel-apst.md), and then emits a `change` uevent
 * with NVME_EVENT=connected. We re-check on that uevent, on logind's
 * PrepareForSleep(false), and whenever a verification finds another table.
 * A verification is only sent to a controller whose I/O counters moved since
 * the last look: an idle drive is never woken to be checked.
 *
 * The table found before the daemon first wrote is kept in memory and in
 * $RUNTIME_DIRECTORY/ctrl-NAME.orig, so that a daemon restarted after a crash
 * still restores what the kernel had, not what its predecessor wrote.
 */

#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "apstd-ids.h"
#include "cli.h"
#include "config-build.h"
#include "log.h"
#include "manager.h"
#include "util.h"

#define HEX_TABLE_SIZE (32 * 19 + 1)

static void controller_free(Controller *c) {
        if (!c)
                return;
        sd_event_source_disable_unref(c->retry);
        ctrl_free(c->ctrl);
        free(c);
}

static Controller *manager_find(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_ctrls; i++)
                if (strcmp(m->ctrls[i]->name, name) == 0)
                        return m->ctrls[i];
        return NULL;
}

static ApplyTarget controller_target(const Controller *c, const char *reason) {
        return (ApplyTarget) {
                .name = c->name,
                .model = c->identified ? c->id.model : c->sys.model,
                .firmware = c->identified ? c->id.firmware : c->sys.firmware,
                .policy = apst_policy_to_string(c->plan.params.policy),
                .reason = reason,
        };
}

/* ---- the record of the original table, for restarts after a crash ---- */

/* FNV-1a of the serial: enough to tell drives apart without writing the serial anywhere. */
static uint64_t serial_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

static int original_path(const Manager *m, const Controller *c, char *buf, size_t n) {
        if ((size_t) snprintf(buf, n, "%s/ctrl-%s.orig", m->runtime_dir, c->name) >= n)
                return -ENAMETOOLONG;
        return 0;
}

static int original_save(const Manager *m, const Controller *c) {
        char path[PATH_MAX], tmp[PATH_MAX + 8], hex[HEX_TABLE_SIZE];
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r, len;

        r = original_path(m, c, path, sizeof path);
        if (r < 0)
                return r;
        apst_table_to_hex(&c->original, hex, sizeof hex);
        len = asprintf(&text, "model=%s\nserial_hash=%016" PRIx64 "\napste=%d\ntable=%s\n", c->id.model,
                       serial_hash(c->id.serial), c->original.apste ? 1 : 0, hex);
        if (len < 0)
                return -ENOMEM;
        (void) snprintf(tmp, sizeof tmp, "%s.tmp", path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        if (write(fd, text, (size_t) len) != len || fsync(fd) < 0) {
                r = errno > 0 ? -errno : -EIO;
                (void) unlink(tmp);
                return r;
        }
        if (close(TAKE_FD(fd)) < 0 || rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

/* Load a record left by a previous instance, if it is for this very drive. */
static int original_load(const Manager *m, const Controller *c, ApstTable *ret) {
        char path[PATH_MAX], buf[2048], want_model[64], *p;
        unsigned long long hash;
        ApstTable t = {};
        int apste;

        if (original_path(m, c, path, sizeof path) < 0 || sysfs_read_attr(path, buf, sizeof buf) < 0)
                return -ENOENT;
        p = strstr(buf, "serial_hash=");
        if (!p || sscanf(p, "serial_hash=%16llx", &hash) != 1 || hash != serial_hash(c->id.serial))
                return -ESTALE;
        if (sscanf(buf, "model=%63[^\n]", want_model) != 1 || strcmp(want_model, c->id.model) != 0)
                return -ESTALE;
        p = strstr(buf, "apste=");
        if (!p || sscanf(p, "apste=%d", &apste) != 1)
                return -EBADMSG;
        t.apste = apste != 0;
        p = strstr(buf, "table=");
        if (!p)
                return -EBADMSG;
        p += strlen("table=");
        for (unsigned i = 0; i < APST_ENTRIES; i++) {
                unsigned long long v;
                int used;
                if (sscanf(p, " 0x%llx%n", &v, &used) != 1)
                        return -EBADMSG;
                t.entry[i] = v;
                p += used;
        }
        if (c->identified && apst_table_check(&t, &c->id) < 0)
                return -EBADMSG;
        *ret = t;
        return 0;
}

static void original_remove(const Manager *m, const Controller *c) {
        char path[PATH_MAX];
        if (original_path(m, c, path, sizeof path) >= 0)
                (void) unlink(path);
}

/* ---- status ---- */

static void manager_notify_status(Manager *m, const char *prefix) {
        char status[4096] = "";
        size_t off = 0;

        for (size_t i = 0; i < m->n_ctrls && off < sizeof status - 1; i++) {
                const Controller *c = m->ctrls[i];
                char s[256];
                int k;

                if (c->failed)
                        (void) snprintf(s, sizeof s, "failed");
                else if (!c->identified)
                        (void) snprintf(s, sizeof s, "not ready (%s)", c->sys.state);
                else if (c->plan.verdict == DEVICE_MANAGE)
                        apst_summary(&c->plan.plan.table, s, sizeof s);
                else
                        (void) snprintf(s, sizeof s, "%s",
                                        c->plan.verdict == DEVICE_UNSUPPORTED ? "APST unsupported"
                                        : c->plan.verdict == DEVICE_DISABLED   ? "left alone (enable = no)"
                                                                               : "not PCIe");
                if (c->identified && !c->failed && c->plan.verdict == DEVICE_MANAGE)
                        k = snprintf(status + off, sizeof status - off, "%s%s: %s, %s", off ? "; " : "", c->name,
                                     apst_policy_to_string(c->plan.params.policy), s);
                else
                        k = snprintf(status + off, sizeof status - off, "%s%s: %s", off ? "; " : "", c->name, s);
                if (k < 0)
                        break;
                off = MIN(sizeof status - 1, off + (size_t) k);
        }
        if (m->n_ctrls == 0)
                (void) snprintf(status, sizeof status, "no NVMe controllers");
        (void) sd_notifyf(false, "%sSTATUS=%s", strempty(prefix), status);
}

/* ---- one controller ---- */

static int controller_retry_handler(sd_event_source *s, uint64_t usec, void *userdata);
static int controller_sync(Controller *c, const char *reason);

static void controller_schedule_retry(Controller *c) {
        uint64_t usec = MANAGER_NOT_LIVE_RETRY_USEC << MIN(c->n_retries, MANAGER_RETRY_MAX_SHIFT);
        int r;

        c->n_retries++;
        if (c->retry) {
                (void) sd_event_source_set_time_relative(c->retry, usec);
                (void) sd_event_source_set_enabled(c->retry, SD_EVENT_ONESHOT);
                return;
        }
        r = sd_event_add_time_relative(c->manager->event, &c->retry, CLOCK_MONOTONIC, usec, 0,
                                       controller_retry_handler, c);
        if (r < 0)
                log_warning_errno(r, "%s: cannot schedule a retry: %m", c->name);
        else
                (void) sd_event_source_set_description(c->retry, "ctrl-retry");
}

static int controller_retry_handler(sd_event_source *s, uint64_t usec, void *userdata) {
        Controller *c = userdata;
        (void) controller_sync(c, "retry");
        manager_notify_status(c->manager, NULL);
        return 0;
}

/* After a failed command: try again later if the error may be transient, a few times. */
static void controller_retry_transient(Controller *c, int error, uint16_t nvme_status) {
        bool transient = error == -EREMOTEIO ? !(nvme_status & CTRL_STATUS_DNR)
                                             : error == -EINTR || error == -EAGAIN || error == -EBUSY ||
                                                       error == -ETIMEDOUT;

        if (!transient)
                return;
        if (c->n_retries >= MANAGER_TRANSIENT_RETRIES) {
                log_warning("%s: still failing after %u retries; giving up until the controller is reset or "
                            "the system resumes.", c->name, c->n_retries);
                return;
        }
        log_info("%s: the error may be transient; trying again in %u s (retry %u of %u).", c->name,
                 (unsigned) ((MANAGER_NOT_LIVE_RETRY_USEC << MIN(c->n_retries, MANAGER_RETRY_MAX_SHIFT)) / 1000000u),
                 c->n_retries + 1, MANAGER_TRANSIENT_RETRIES);
        controller_schedule_retry(c);
}

/* The device node is opened for each operation and closed after it, not held for the
 * daemon's lifetime: commands are rare (start, reset, resume, reload), an open() is cheap,
 * a fresh open never talks to a node that went away underneath, and a machine (or a test
 * harness) with many controllers is not charged one descriptor per controller. */
static int controller_open(Controller *c) {
        int r;

        if (c->ctrl)
                return 0;
        r = ctrl_open(arg_dev_dir, c->name, &c->ctrl);
        if (r < 0)
                return log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                                 LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->sys.model },
                                            { "NVME_FIRMWARE", c->sys.firmware }),
                                 "%s: cannot open %s/%s: %m", c->name, arg_dev_dir, c->name);
        return 0;
}

static void controller_close(Controller *c) {
        c->ctrl = ctrl_free(c->ctrl);
}

/* Open and identify (once per controller appearance). */
static int controller_identify(Controller *c, uint16_t *ret_status) {
        char why[160];
        uint16_t status = 0;
        int r;

        r = controller_open(c);
        if (r < 0)
                return r;
        if (c->identified)
                return 0;
        r = ctrl_identify(c->ctrl, &c->id, NULL, &status);
        *ret_status = status;
        if (r < 0) {
                char st[16];
                (void) snprintf(st, sizeof st, "0x%04x", status);
                return log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                                 LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->sys.model },
                                            { "NVME_FIRMWARE", c->sys.firmware },
                                            { "NVME_STATUS", r == -EREMOTEIO ? st : NULL }),
                                 "%s: Identify Controller failed: %s.", c->name,
                                 apply_error_to_string(r, status, why, sizeof why));
        }
        c->identified = true;
        return 0;
}

static void controller_log_states(const Controller *c) {
        char states[1024] = "", npss[8];
        size_t off = 0;

        for (unsigned i = 0; i <= c->id.npss && i < IDCTRL_MAX_PS; i++) {
                const IdPsd *p = &c->id.psd[i];
                int k = snprintf(states + off, sizeof states - off, "%sps%u %s %u.%02uW %u/%uus", i ? ", " : "", i,
                                 p->non_operational ? "non-op" : "op", p->max_power_uw / 1000000,
                                 (p->max_power_uw % 1000000) / 10000, p->enlat_us, p->exlat_us);
                if (k < 0)
                        break;
                off = MIN(sizeof states - 1, off + (size_t) k);
        }
        (void) snprintf(npss, sizeof npss, "%u", c->id.npss);
        log_event(LOG_INFO, 0, MSGID_CTRL_ADDED,
                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                             { "NVME_FIRMWARE", c->id.firmware }, { "NVME_NPSS", npss },
                             { "NVME_APSTA", c->id.apst_supported ? "1" : "0" }, { "NVME_POWER_STATES", states }),
                  "%s: found %s (firmware %s) with %u power state%s: %s.", c->name, c->id.model,
                  c->id.firmware[0] ? c->id.firmware : "not reported",
                  c->id.npss + 1, c->id.npss ? "s" : "", states);
}

/* Re-plan from the current configuration; returns true if the wanted table changed. */
static int controller_plan(Controller *c, bool *ret_changed) {
        DevicePlan old = c->plan;
        int r;

        r = device_plan(&c->manager->config, &c->manager->platform, c->name, &c->sys, &c->id, &c->plan);
        if (r < 0)
                return log_error_errno(r, "%s: cannot plan the APST table: %m", c->name);
        if (ret_changed)
                *ret_changed = old.verdict != c->plan.verdict ||
                               !apst_table_equal(&old.plan.table, &c->plan.plan.table);
        return 0;
}

/* apply_table() hook: the first time we see a controller's table, remember it (or the one a
 * crashed predecessor recorded) and write the record before anything is changed. */
static void controller_record_original(const ApstTable *found, void *userdata) {
        Controller *c = userdata;
        Manager *m = c->manager;
        ApstTable rec;
        int r;

        if (c->have_original)
                return;
        if (original_load(m, c, &rec) >= 0) {
                c->original = rec;
                log_info("%s: using the table recorded before a previous run (%s/ctrl-%s.orig).", c->name,
                         m->runtime_dir, c->name);
        } else
                c->original = *found;
        c->have_original = true;
        r = original_save(m, c);
        if (r < 0)
                log_warning_errno(r, "%s: cannot record the original APST table in %s: %m; a restart after a "
                                     "crash would not know it.", c->name, m->runtime_dir);
}

/* Bring the controller to the planned state: identify, plan, remember, write, verify. */
static int controller_sync_open(Controller *c, const char *reason) {
        bool first = !c->identified;
        uint16_t status = 0;
        ApplyResult res;
        ApplyTarget t;
        int r;

        if (strcmp(reason, "retry") != 0)
                c->n_retries = 0;   /* an event: a fresh start */

        r = sysfs_read_controller(arg_sysfs_root, c->name, &c->sys);
        if (r < 0)
                return log_debug_errno(r, "%s: gone from sysfs: %m", c->name);
        if (strcmp(c->sys.transport, "pcie") != 0) {
                if (first)
                        log_event(LOG_INFO, 0, MSGID_CTRL_SKIPPED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->sys.model },
                                             { "NVME_FIRMWARE", c->sys.firmware },
                                             { "NVME_TRANSPORT", c->sys.transport }),
                                  "%s: skipped: transport %s is not PCIe.", c->name, c->sys.transport);
                c->plan.verdict = DEVICE_NOT_PCIE;
                c->identified = true;
                return 0;
        }
        if (strcmp(c->sys.state, "live") != 0) {
                /* once, not every time the retry timer looks again */
                log_full_errno(c->n_retries == 0 ? LOG_INFO : LOG_DEBUG, 0,
                               "%s: controller is %s, not live; will look again when it is.", c->name, c->sys.state);
                controller_schedule_retry(c);
                return 0;
        }

        r = controller_identify(c, &status);
        if (r < 0) {
                c->failed = true;
                controller_retry_transient(c, r, status);
                return r;
        }
        if (first) {
                controller_log_states(c);
                r = controller_plan(c, NULL);
                if (r < 0) {
                        c->failed = true;
                        return r;
                }
        }

        switch (c->plan.verdict) {
        case DEVICE_UNSUPPORTED:
                if (first)
                        log_event(LOG_INFO, 0, MSGID_APST_UNSUPPORTED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                             { "NVME_FIRMWARE", c->id.firmware }),
                                  "%s: %s does not support APST (apsta = 0); nothing to program.", c->name,
                                  c->id.model);
                else
                        log_event(LOG_INFO, 0, MSGID_APST_UNSUPPORTED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                             { "NVME_FIRMWARE", c->id.firmware }, { "APST_REASON", reason }),
                                  "%s: re-checked after %s: the controller still does not support APST.", c->name,
                                  reason);
                c->failed = false;
                return 0;
        case DEVICE_DISABLED:
        case DEVICE_NOT_PCIE:
                if (first)
                        log_event(LOG_INFO, 0, MSGID_CTRL_SKIPPED,
                                  LOG_FIELDS({ "NVME_CTRL", c->name }, { "NVME_MODEL", c->id.model },
                                             { "NVME_FIRMWARE", c->id.firmware }),
                                  "%s: left alone: %s.", c->name, device_verdict_reason(c->plan.verdict));
                c->failed = false;
                return 0;
        case DEVICE_MANAGE:
                break;
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                return -EINVAL;
        }

        t = controller_target(c, reason);
        t.last_written = c->have_written ? &c->written : NULL;
        t.before_write = controller_record_original;
        t.userdata = c;
        r = apply_table(c->ctrl, &t, &c->plan.plan.table, c->plan.plan.worst_wake_us, true, &res);
        if (res.have_before && !first && apst_table_equal(&res.before, &c->plan.plan.table))
                log_debug("%s: re-checked after %s: table in place.", c->name, reason);

        if (r < 0) {
                c->failed = true;
                controller_retry_transient(c, res.error, res.nvme_status);
                return r;
        }
        c->failed = false;
        c->n_retries = 0;
        c->have_written = true;
        c->written = c->plan.plan.table;
        return 0;
}

static int controller_sync(Controller *c, const char *reason) {
        int r = controller_sync_open(c, reason);
        controller_close(c);
        return r;
}

static int manager_add_controller(Manager *m, const char *name, const char *reason) {
        Controller *c, **t;

        if (manager_find(m, name))
                return 0;
        c = calloc(1, sizeof *c);
        if (!c)
                return log_error_errno(-ENOMEM, "Out of memory.");
        c->manager = m;
        (void) snprintf(c->name, sizeof c->name, "%s", name);
        t = realloc(m->ctrls, (m->n_ctrls + 1) * sizeof *t);
        if (!t) {
                free(c);
                return log_error_errno(-ENOMEM, "Out of memory.");
        }
        m->ctrls = t;
        m->ctrls[m->n_ctrls++] = c;
        (void) controller_sync(c, reason);
        return 0;
}

static void manager_remove_controller(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_ctrls; i++) {
                Controller *c = m->ctrls[i];
                if (strcmp(c->name, name) != 0)
                        continue;
                log_event(LOG_INFO, 0, MSGID_CTRL_REMOVED,
                          LOG_FIELDS({ "NVME_CTRL", c->name },
                                     { "NVME_MODEL", c->identified ? c->id.model : c->sys.model },
                                     { "NVME_FIRMWARE", c->identified ? c->id.firmware : c->sys.firmware }),
                          "%s: controller removed; forgetting it.", c->name);
                original_remove(m, c);
                controller_free(c);
                memmove(m->ctrls + i, m->ctrls + i + 1, (m->n_ctrls - i - 1) * sizeof *m->ctrls);
                m->n_ctrls--;
                return;
        }
}

/* ---- CPU frequency pinning ---- */

/* The CPUs servicing the controllers' interrupt vectors, for cpus = nvme-irq. */
static void manager_irq_cpus(Manager *m, CpuSet *ret) {
        const char *names[m->n_ctrls + 1];
        size_t n = 0;
        CpuSet set = {};

        for (size_t i = 0; i < m->n_ctrls; i++)
                if (strcmp(m->ctrls[i]->sys.transport, "pcie") == 0)
                        names[n++] = m->ctrls[i]->name;
        if (n > 0 && cpufreq_sysfs_nvme_irq_cpus(arg_sysfs_root, arg_proc_root, names, n, &set) < 0)
                set = (CpuSet) {};
        *ret = set;
}

static int on_iowatch_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* pin = busy needs the I/O watcher; every other mode leaves it off (no wake-ups). */
static void manager_iowatch_update(Manager *m) {
        bool want = m->config.cpu.pin == CPU_PIN_BUSY;
        int r;

        if (!want) {
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

static int on_iowatch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        uint64_t total = 0, deadline = UINT64_MAX;
        bool any = false, busy;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                uint64_t n;
                if (sysfs_ctrl_io_count(arg_sysfs_root, m->ctrls[i]->name, &n) >= 0) {
                        total += n;
                        any = true;
                }
        }
        busy = any && m->iowatch_known && total != m->iowatch_total;
        m->iowatch_total = total;
        m->iowatch_known = any;
        (void) cpupin_busy_hook(m->cpupin, busy, usec, &deadline);
        (void) sd_event_source_set_time_relative(s, MANAGER_IOWATCH_INTERVAL_USEC);
        return 0;
}

/* Make [cpu] true: pin, re-pin with other CPUs, or release (pin = off). */
static void manager_apply_cpu(Manager *m, const char *reason) {
        bool irq = m->config.cpu.select == CPU_SELECT_NVME_IRQ;

        if (!m->cpupin)
                return;
        if (irq)
                manager_irq_cpus(m, &m->irq_cpus);
        (void) cpupin_apply(m->cpupin, &m->config.cpu, irq ? &m->irq_cpus : NULL, reason);
        manager_iowatch_update(m);
}

/* Controllers came or went: only cpus = nvme-irq depends on them. */
static void manager_controllers_changed(Manager *m, const char *reason) {
        CpuSet now;

        if (!m->cpupin || m->config.cpu.select != CPU_SELECT_NVME_IRQ || m->config.cpu.pin == CPU_PIN_OFF)
                return;
        manager_irq_cpus(m, &now);
        if (memcmp(&now, &m->irq_cpus, sizeof now) == 0)
                return;
        m->irq_cpus = now;
        (void) cpupin_apply(m->cpupin, &m->config.cpu, &m->irq_cpus, reason);
}

/* ---- events ---- */

static int on_uevent(sd_device_monitor *mon, sd_device *dev, void *userdata) {
        Manager *m = userdata;
        sd_device_action_t action;
        const char *name, *ev = NULL;
        Controller *c;

        if (sd_device_get_sysname(dev, &name) < 0 || !sysfs_is_ctrl_name(name))
                return 0;
        if (sd_device_get_action(dev, &action) < 0)
                return 0;
        switch (action) {
        case SD_DEVICE_ADD:
                log_info("%s: controller added.", name);
                (void) manager_add_controller(m, name, "hot-plug");
                manager_controllers_changed(m, "controller added");
                break;
        case SD_DEVICE_REMOVE:
                manager_remove_controller(m, name);
                manager_controllers_changed(m, "controller removed");
                break;
        case SD_DEVICE_CHANGE:
                (void) sd_device_get_property_value(dev, "NVME_EVENT", &ev);
                c = manager_find(m, name);
                if (!c) {
                        (void) manager_add_controller(m, name, "change");
                        break;
                }
                if (!ev || strcmp(ev, "connected") != 0)
                        break;
                log_event(LOG_INFO, 0, NULL,
                          LOG_FIELDS({ "NVME_CTRL", name },
                                     { "NVME_MODEL", c->identified ? c->id.model : c->sys.model },
                                     { "NVME_FIRMWARE", c->identified ? c->id.firmware : c->sys.firmware },
                                     { "APST_REASON", "reset" }),
                          "%s: controller (re)connected (reset or resume); re-checking its APST table.", name);
                (void) controller_sync(c, "reset");
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
                (void) controller_sync(m->ctrls[i], "resume");
        manager_notify_status(m, NULL);
        return 0;
}

static int on_verify_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                Controller *c = m->ctrls[i];
                uint64_t n;

                if (sysfs_ctrl_io_count(arg_sysfs_root, c->name, &n) < 0)
                        continue;
                /* Only a controller that did I/O since the last look: it was awake anyway. */
                if (c->io_known && n != c->io_count && c->have_written)
                        (void) controller_sync(c, "verify");
                c->io_count = n;
                c->io_known = true;
        }
        (void) sd_event_source_set_time_relative(s, m->verify_interval_usec);
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_free_ char *err = NULL;
        Manager *m = userdata;
        char path[4096];
        Config staging;
        struct timespec ts;
        size_t changed = 0;
        int r;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration...",
                          (uint64_t) ((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u));
        if (!m->config_path)
                cli_default_config_path(path, sizeof path);
        else
                (void) snprintf(path, sizeof path, "%s", m->config_path);

        if (access(path, F_OK) < 0 && errno == ENOENT && !m->config_path) {
                config_init(&staging);
                r = 0;
        } else
                r = config_load(path, &staging, &err);
        if (r < 0) {
                log_event(LOG_ERR, r, MSGID_CONFIG_REJECTED, LOG_FIELDS({ "CONFIG_FILE", path }),
                          "Configuration not reloaded, keeping the running one: %s", err ? err : strerror(-r));
                manager_notify_status(m, "READY=1\n");
                return 0;
        }
        config_done(&m->config);
        m->config = staging;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                Controller *c = m->ctrls[i];
                bool diff = false;

                if (!c->identified)
                        continue;
                if (controller_plan(c, &diff) < 0 || !diff)
                        continue;
                changed++;
                if (c->plan.verdict == DEVICE_MANAGE)
                        (void) controller_sync(c, "reload");
                else if (c->have_original) {
                        /* no longer ours (enable = no): give back what was there */
                        ApplyTarget t = controller_target(c, "reload");
                        if (controller_open(c) >= 0 && apply_restore(c->ctrl, &t, &c->original) >= 0) {
                                c->have_written = false;
                                c->have_original = false;
                                original_remove(m, c);
                        }
                        controller_close(c);
                }
        }
        manager_apply_cpu(m, "reload");
        {
                char nchanged[16];
                (void) snprintf(nchanged, sizeof nchanged, "%zu", changed);
                log_event(LOG_INFO, 0, MSGID_CONFIG_RELOADED,
                          LOG_FIELDS({ "CONFIG_FILE", path }, { "APST_TABLES_CHANGED", nchanged }),
                          "Configuration reloaded from %s; %zu controller table%s changed.", path, changed,
                          changed == 1 ? "" : "s");
        }
        manager_notify_status(m, "READY=1\n");
        return 0;
}

/* ---- setup and teardown ---- */

int manager_new(const char *config_path, Manager **ret) {
        Manager *m;
        const char *rd;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        config_init(&m->config);
        m->verify_interval_usec = MANAGER_VERIFY_INTERVAL_USEC;
        if (config_path) {
                m->config_path = strdup(config_path);
                if (!m->config_path) {
                        manager_free(m);
                        return -ENOMEM;
                }
        }
        rd = getenv("RUNTIME_DIRECTORY");
        m->runtime_dir = strndup(rd && *rd ? rd : "/run/nvme-apstd", rd && *rd ? strcspn(rd, ":") : SIZE_MAX);
        if (!m->runtime_dir) {
                manager_free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_ctrls; i++)
                controller_free(m->ctrls[i]);
        free(m->ctrls);
        cpupin_free(m->cpupin);
        sd_event_source_disable_unref(m->iowatch_timer);
        sd_event_source_disable_unref(m->verify_timer);
        sd_bus_slot_unref(m->sleep_slot);
        sd_bus_flush_close_unref(m->bus);
        sd_device_monitor_unref(m->monitor);
        sd_event_unref(m->event);
        config_done(&m->config);
        free(m->config_path);
        free(m->runtime_dir);
        free(m);
        return NULL;
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

int manager_start(Manager *m) {
        _cleanup_free_ SysCtrl *list = NULL;
        size_t n = 0;
        int r;

        r = cli_load_config(m->config_path, &m->config);
        if (r < 0)
                return r;
        if (mkdir(m->runtime_dir, 0755) < 0 && errno != EEXIST)
                log_warning_errno(-errno, "Cannot create %s: %m; a restart after a crash will not know the original "
                                          "tables.", m->runtime_dir);

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m");
        (void) sd_event_set_watchdog(m->event, true);
        r = sd_event_set_signal_exit(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGTERM/SIGINT: %m");
        r = sd_event_add_signal(m->event, NULL, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Cannot handle SIGHUP: %m");

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

        (void) manager_connect_bus(m);

        r = sd_event_add_time_relative(m->event, &m->verify_timer, CLOCK_MONOTONIC, m->verify_interval_usec,
                                       m->verify_interval_usec / 30, on_verify_timer, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the verification timer: %m");
        (void) sd_event_source_set_enabled(m->verify_timer, SD_EVENT_ON);
        (void) sd_event_source_set_description(m->verify_timer, "verify");

        r = cpupin_new(&cpufreq_sysfs_ops, m->runtime_dir, &m->cpupin);
        if (r < 0)
                return log_error_errno(r, "Cannot set up CPU pinning: %m");
        /* a predecessor that crashed or was killed may have left CPUs pinned */
        (void) cpupin_recover(m->cpupin);

        sysfs_read_platform(arg_sysfs_root, &m->platform);
        r = sysfs_list_controllers(arg_sysfs_root, &list, &n);
        if (r < 0)
                log_error_errno(r, "Cannot list %s/class/nvme: %m", arg_sysfs_root);
        for (size_t i = 0; i < n; i++)
                (void) manager_add_controller(m, list[i].name, "start");
        manager_apply_cpu(m, "start");

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
                Controller *c = m->ctrls[i];
                ApplyTarget t;

                if (!c->have_original || controller_open(c) < 0)
                        continue;
                if (!c->have_written) {
                        /* Never written and verified by us, yet recorded: a write failed half-way, or a
                         * predecessor's table is still there. Put back the original unless it is in
                         * place; either way the record goes only once the drive holds it. */
                        ApstTable now;
                        if (ctrl_get_apst(c->ctrl, &now, NULL) >= 0 && apst_table_equal(&now, &c->original)) {
                                original_remove(m, c);
                                controller_close(c);
                                continue;
                        }
                }
                t = controller_target(c, "stop");
                if (apply_restore(c->ctrl, &t, &c->original) >= 0) {
                        original_remove(m, c);
                        restored++;
                }
                controller_close(c);
        }
        if (m->cpupin)
                (void) cpupin_release(m->cpupin, "stop");
        log_event(LOG_INFO, 0, MSGID_DAEMON_STOPPED, LOG_FIELDS({ "CONFIG_FILE", m->config_path }),
                  "nvme-apstd stopped; restored %zu controller table%s.", restored, restored == 1 ? "" : "s");
}

static void help(void) {
        printf("Usage: nvme-apstd [run] [OPTIONS]\n\n"
               "Run the daemon: program every NVMe controller's APST table and keep it in place.\n\n"
               "  -c --config FILE   configuration file (default: %s/nvme-apstd.conf)\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "Signals: SIGHUP reloads the configuration; SIGTERM/SIGINT restore the original\n"
               "tables and exit.\n",
               SYSCONFDIR);
}

int verb_run(int argc, char *argv[]) {
        enum { ARG_VERIFY_INTERVAL = _CLI_ARG_FIRST_PRIVATE };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                CLI_COMMON_OPTIONS,
                /* hidden, for tests: how often to look at the I/O counters */
                { "verify-interval-ms", required_argument, NULL, ARG_VERIFY_INTERVAL },
                {},
        };
        const char *config_path = NULL;
        uint32_t verify_ms = 0;
        Manager *m = NULL;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0) {
                switch (cli_common_option(c, optarg, help)) {
                case CLI_OPTION_EXIT:
                        return 0;
                case CLI_OPTION_HANDLED:
                        continue;
                case CLI_OPTION_NOT_MINE:
                        break;
                }
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case ARG_VERIFY_INTERVAL:
                        if (safe_atou32(optarg, &verify_ms) < 0 || verify_ms == 0) {
                                log_error("--verify-interval-ms=%s: expected a positive number.", optarg);
                                return 2;
                        }
                        break;
                default:
                        return 2;
                }
        }
        if (optind < argc) {
                log_error("Unexpected argument '%s'.", argv[optind]);
                return 2;
        }

        r = manager_new(config_path, &m);
        if (r < 0) {
                log_error_errno(r, "Cannot start: %m");
                return 1;
        }
        if (verify_ms)
                m->verify_interval_usec = (uint64_t) verify_ms * 1000u;
        r = manager_start(m);
        if (r < 0) {
                (void) sd_notifyf(false, "STATUS=Failed to start: %s\nERRNO=%d", strerror(-r), -r);
                manager_free(m);
                return 1;
        }
        r = sd_event_loop(m->event);
        if (r < 0)
                log_error_errno(r, "Event loop failed: %m");
        manager_stop(m);
        manager_free(m);
        return r < 0 ? 1 : 0;
}
