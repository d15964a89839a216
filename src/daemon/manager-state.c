/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's state as its parts see it (see manager-state.h): the count of
 * the event sources the daemon's own code made, and the requests a part sends
 * to the manager through the ManagerOps that manager.c gave at manager_new().
 * Nothing here decides anything: manager.c does, when the request reaches it.
 */

#include <assert.h>
#include <string.h>

#include "manager-state.h"

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

int manager_device_monitor(Manager *m, const char *subsystem, sd_device_monitor_handler_t handler,
                           const char *description, sd_device_monitor **ret) {
        _cleanup_(sd_device_monitor_unrefp) sd_device_monitor *mon = NULL;
        int r;

        r = sd_device_monitor_new(&mon);
        if (r >= 0)
                r = sd_device_monitor_filter_add_match_subsystem_devtype(mon, subsystem, NULL);
        if (r >= 0)
                r = sd_device_monitor_attach_event(mon, m->event);
        if (r >= 0)
                r = sd_device_monitor_start(mon, handler, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(sd_device_monitor_get_event_source(mon), description);
        *ret = TAKE_PTR(mon);
        return 0;
}


/* ---- the controllers ---- */

ManagerCtrl *manager_ctrl_find(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_ctrls; i++)
                if (strcmp(m->ctrls[i]->controller.name, name) == 0)
                        return m->ctrls[i];
        return NULL;
}


/* ---- requests to the manager ---- */

void manager_publish(Manager *m, const char *prefix) {
        m->ops->publish(m, prefix);
}

size_t manager_replan_all(Manager *m, const char *reason) {
        return m->ops->replan_all(m, reason);
}

void manager_ctrl_verify(ManagerCtrl *c) {
        c->manager->ops->ctrl_request(c, CTRL_JOB_SYNC, NULL, "verify");
}

void manager_ctrl_sync(ManagerCtrl *c, const char *reason) {
        c->manager->ops->ctrl_request(c, CTRL_JOB_SYNC, NULL, reason);
}

void manager_ctrl_program(ManagerCtrl *c, const ApstTable *table, const char *reason) {
        c->manager->ops->ctrl_request(c, CTRL_JOB_PROGRAM, table, reason);
}

void manager_ctrl_release(ManagerCtrl *c) {
        c->manager->ops->ctrl_release(c);
}
