/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Noticing the kernel's APST rewrite on a pm_qos write (see manager-qos.h).
 *
 * A write to /sys/class/nvme/nvmeX/power/pm_qos_latency_tolerance_us makes
 * the kernel run nvme_configure_apst() inside the write() (through
 * nvme_set_latency_tolerance(), when the value changed and the controller is
 * live) and overwrite our table, with no uevent and no sysfs_notify(). The
 * only trace is the VFS's own fsnotify_modify() after the write: inotify's
 * IN_MODIFY on the attribute (doc/kernel-apst.md). So every managed
 * controller gets one inotify watch on that file, and an IN_MODIFY re-checks
 * the table exactly as a reset uevent does: Get Features, and our table
 * written back if it is gone (the "overwritten" entry names what the kernel
 * wrote). Admin commands only: an idle drive stays asleep.
 *
 * The attribute exists only while the kernel has APST enabled on the
 * controller (dev_pm_qos_expose_latency_tolerance() at identify). sysfs sends
 * no IN_CREATE when it appears, so the watch is (re)tried after every engine
 * run on the controller -- start, reset, resume, reload, hot-plug -- which is
 * when the kernel may have exposed it. When the file goes, the kernel sends
 * IN_IGNORED (or nothing, on a removed sysfs node that stays pinned): either
 * way the source is dropped then, or with the controller at removal.
 * sd-event shares one inotify fd per event loop among all watches and closes
 * the O_PATH fd it opens per watch after the iteration: no fd per controller.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>

#include "log.h"
#include "manager-qos.h"
#include "sysfs.h"

#define QOS_ATTR "power/pm_qos_latency_tolerance_us"

static bool qos_wanted(const ManagerCtrl *c) {
        return c->controller.identified && c->controller.plan.verdict == DEVICE_MANAGE;
}

static int qos_path(const ManagerCtrl *c, char *buf, size_t n) {
        int l = snprintf(buf, n, "%s/class/nvme/%s/" QOS_ATTR, c->manager->sysfs_root, c->controller.name);
        return l < 0 || (size_t) l >= n ? -ENAMETOOLONG : 0;
}

static int on_qos_inotify(sd_event_source *s, const struct inotify_event *ev, void *userdata) {
        ManagerCtrl *c = userdata;
        const char *name = c->controller.name;
        char path[PATH_MAX], value[32] = "";

        if (ev->mask & IN_IGNORED) {
                /* the attribute is gone (APST no longer enabled by the kernel, or the device went) */
                log_debug("%s: %s is gone; no longer watching it.", name, QOS_ATTR);
                c->qos = sd_event_source_disable_unref(c->qos);
                return 0;
        }
        if (!(ev->mask & (IN_MODIFY | IN_Q_OVERFLOW)))
                return 0;
        if (qos_path(c, path, sizeof path) < 0 || sysfs_read_attr(path, value, sizeof value) < 0)
                (void) snprintf(value, sizeof value, "?");
        log_event(LOG_INFO, 0, NULL,
                  LOG_FIELDS({ "NVME_CTRL", name }, { "NVME_MODEL", controller_model(&c->controller) },
                             { "NVME_FIRMWARE", controller_firmware(&c->controller) },
                             { "PM_QOS_LATENCY_TOLERANCE_US", value }, { "APST_REASON", "pm_qos" }),
                  "%s: %s written (now %s); the kernel rewrites APST on such a write: re-checking the table.",
                  name, QOS_ATTR, value);
        manager_ctrl_sync(c, "pm_qos");
        return 0;
}

void manager_qos_ctrl(ManagerCtrl *c) {
        char path[PATH_MAX];
        int r;

        if (!qos_wanted(c)) {
                c->qos = sd_event_source_disable_unref(c->qos);
                return;
        }
        if (c->qos || !c->manager->event)
                return;
        r = qos_path(c, path, sizeof path);
        if (r >= 0)
                r = sd_event_add_inotify(c->manager->event, &c->qos, path, IN_MODIFY, on_qos_inotify, c);
        if (r == -ENOENT) {   /* the kernel has APST off on it (yet): tried again after the next event */
                log_debug("%s: no %s (the kernel has not enabled APST on it); not watching it.",
                          c->controller.name, QOS_ATTR);
                return;
        }
        if (r < 0) {
                log_warning_errno(r, "%s: cannot watch %s: %m; a pm_qos write is then only noticed at a "
                                     "verification after I/O.", c->controller.name, path);
                return;
        }
        manager_track_source(c->qos, "pm-qos");
        log_debug("%s: watching %s.", c->controller.name, path);
}
