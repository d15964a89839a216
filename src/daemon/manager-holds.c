/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Latency holds in the daemon; see manager-holds.h and doc/dbus-api.md "Holds".
 *
 * The holds' cap reaches the tables through the manager's re-plan: a change of
 * the set sets each controller's hold_cap_us and asks for manager_replan_all(),
 * which plans every controller with its cap (a step running is never changed
 * under it: it is planned again when back) and writes only the tables that
 * changed. A caller of HoldLatency is answered from manager_holds_check(), which
 * the manager runs at every publish, i.e. after every step, deadline and event.
 *
 * A hold's connection is followed with one sd_bus_track per connection: the bus
 * says when it closes (NameOwnerChanged), however the process ended; nothing is
 * polled.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apstd-ids.h"
#include "bus-api.h"
#include "clock.h"
#include "device.h"
#include "log.h"
#include "manager-holds.h"

/* A HoldLatency call waiting for its table. */
typedef struct HoldWait {
        uint32_t cookie;
        sd_bus_message *call;
        sd_event_source *timer;    /* [daemon] unresponsive_after_sec after the call */
        ManagerHolds *holds;
} HoldWait;

/* A connection with holds, followed until it closes. */
typedef struct HoldOwner {
        char name[HOLD_OWNER_SIZE];
        sd_bus_track *track;
        ManagerHolds *holds;
} HoldOwner;

struct ManagerHolds {
        Manager *manager;
        HoldSet set;
        uint64_t taken;
        uint64_t generation;
        HoldWait *waits[HOLDS_MAX];    /* one per hold at most */
        size_t n_waits;
        HoldOwner *owners[HOLDS_MAX];  /* one per connection with a hold: at most one per hold */
        size_t n_owners;
        char units[HOLDS_MAX][64];     /* the caller's unit per hold, same order as set.holds: journal only */
};

static const HoldSet empty_set;

/* CLOCK_REALTIME in µs: when a hold was taken, for the Holds property. */
static uint64_t realtime_usec(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}
static ManagerHolds *holds_get(Manager *m) {
        if (!m->holds) {
                m->holds = calloc(1, sizeof *m->holds);
                if (!m->holds)
                        return NULL;
                m->holds->manager = m;
                holds_init(&m->holds->set);
        }
        return m->holds;
}

const HoldSet *manager_holds_set(const Manager *m) {
        return m->holds ? &m->holds->set : &empty_set;
}

uint64_t manager_holds_taken(const Manager *m) {
        return m->holds ? m->holds->taken : 0;
}

uint64_t manager_holds_generation(const Manager *m) {
        return m->holds ? m->holds->generation : 0;
}

uint32_t manager_holds_cap(const Manager *m, const char *name) {
        return holds_cap_us(manager_holds_set(m), name);
}

uint64_t manager_holds_ctrl_usec(const ManagerCtrl *c) {
        return c->hold_usec + (c->hold_since_usec ? now_usec() - c->hold_since_usec : 0);
}

/* ---- the caps ---- */

/* Each controller's cap from the holds now, the time under a hold counted. Return: a cap moved. */
static bool holds_update_caps(Manager *m) {
        uint64_t now = now_usec();
        bool moved = false;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                ManagerCtrl *c = m->ctrls[i];
                uint32_t cap = manager_holds_cap(m, c->controller.name);

                if (cap != DEVICE_NO_CAP && !c->hold_since_usec)
                        c->hold_since_usec = now ? now : 1;
                else if (cap == DEVICE_NO_CAP && c->hold_since_usec) {
                        c->hold_usec += now - c->hold_since_usec;
                        c->hold_since_usec = 0;
                }
                if (cap != c->hold_cap_us) {
                        c->hold_cap_us = cap;
                        moved = true;
                }
        }
        return moved;
}

/* The caps from the holds now, and a re-plan when one moved. @reason: what the table write says
 * ("hold", "hold-released"). */
static void holds_apply(Manager *m, const char *reason) {
        if (holds_update_caps(m) && !m->stopping)
                (void) manager_replan_all(m, reason);
}

void manager_holds_ctrl_added(Manager *m, ManagerCtrl *c) {
        c->hold_cap_us = c->controller.latency_cap_us = manager_holds_cap(m, c->controller.name);
        if (c->hold_cap_us != DEVICE_NO_CAP)
                c->hold_since_usec = now_usec();
}

/* ---- the journal ---- */

static size_t hold_index(const ManagerHolds *hs, uint32_t cookie) {
        for (size_t i = 0; i < hs->set.n; i++)
                if (hs->set.holds[i].cookie == cookie)
                        return i;
        return SIZE_MAX;
}

/* A hold's fields as text, for its two journal entries. */
typedef struct HoldText {
        char cookie[16], uid[16], pid[16], lat[16], dur[32];
        const char *ctrl, *who, *unit, *sep;
        double secs;
} HoldText;

static void hold_text(const Hold *h, const char *unit, HoldText *t) {
        uint64_t d = now_usec() - h->since_mono_usec;

        (void) snprintf(t->cookie, sizeof t->cookie, "%" PRIu32, h->cookie);
        (void) snprintf(t->uid, sizeof t->uid, "%" PRIu32, h->uid);
        (void) snprintf(t->pid, sizeof t->pid, "%" PRIu32, h->pid);
        (void) snprintf(t->lat, sizeof t->lat, "%" PRIu32, h->max_latency_us);
        (void) snprintf(t->dur, sizeof t->dur, "%" PRIu64, d);
        t->secs = (double) d / 1e6;
        t->ctrl = h->controller[0] ? h->controller : "all";
        t->who = h->application_id[0] ? h->application_id : "an application";
        t->unit = unit && *unit ? unit : NULL;
        t->sep = t->unit ? ", " : "";
}

/* Does @h lower the budget of a managed controller it names (as configured now)? */
static bool hold_lowers_a_budget(const Manager *m, const Hold *h) {
        for (size_t i = 0; i < m->n_ctrls; i++) {
                const Controller *k = &m->ctrls[i]->controller;

                if (hold_applies(h, k->name) && k->identified && k->plan.verdict == DEVICE_MANAGE &&
                    h->max_latency_us < k->plan.configured_max_latency_us)
                        return true;
        }
        return false;
}

static void log_hold_started(const Manager *m, const Hold *h, const char *unit) {
        bool effect = hold_lowers_a_budget(m, h);
        HoldText t = {};

        hold_text(h, unit, &t);
        log_event(LOG_INFO, 0, MSGID_HOLD_STARTED,
                  LOG_FIELDS({ "HOLD_COOKIE", t.cookie }, { "NVME_CTRL", t.ctrl }, { "HOLD_MAX_LATENCY_US", t.lat },
                             { "HOLD_APPLICATION_ID", h->application_id }, { "HOLD_REASON", h->reason },
                             { "HOLD_UID", t.uid }, { "HOLD_PID", t.pid }, { "HOLD_UNIT", t.unit },
                             { "HOLD_EFFECT", effect ? "lowers" : "none" }),
                  "Latency hold %s taken by %s (uid %s, pid %s%s%s) on %s: no wake-up slower than %s us; reason: %s%s",
                  t.cookie, t.who, t.uid, t.pid, t.sep, strempty(t.unit), t.ctrl, t.lat,
                  h->reason[0] ? h->reason : "none given",
                  effect ? "" : " (no effect: not below the configured budget of any controller it names)");
}

static void log_hold_ended(const Hold *h, const char *unit, const char *why) {
        HoldText t = {};

        hold_text(h, unit, &t);
        log_event(LOG_INFO, 0, MSGID_HOLD_ENDED,
                  LOG_FIELDS({ "HOLD_COOKIE", t.cookie }, { "NVME_CTRL", t.ctrl }, { "HOLD_MAX_LATENCY_US", t.lat },
                             { "HOLD_APPLICATION_ID", h->application_id }, { "HOLD_REASON", h->reason },
                             { "HOLD_UID", t.uid }, { "HOLD_PID", t.pid }, { "HOLD_UNIT", t.unit },
                             { "HOLD_DURATION_USEC", t.dur }, { "HOLD_END_REASON", why }),
                  "Latency hold %s of %s (uid %s, pid %s%s%s) on %s at %s us ended after %.1f s: %s.", t.cookie,
                  t.who, t.uid, t.pid, t.sep, strempty(t.unit), t.ctrl, t.lat, t.secs, why);
}

/* ---- waiting callers ---- */

static HoldWait *wait_free(HoldWait *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->timer);
        sd_bus_message_unref(w->call);
        free(w);
        return NULL;
}

static HoldWait *wait_find(ManagerHolds *hs, uint32_t cookie, size_t *ret_index) {
        for (size_t i = 0; i < hs->n_waits; i++)
                if (hs->waits[i]->cookie == cookie) {
                        if (ret_index)
                                *ret_index = i;
                        return hs->waits[i];
                }
        return NULL;
}

/* Take the waiter of @cookie out (the caller answers it and frees it); NULL for none. */
static HoldWait *wait_take(ManagerHolds *hs, uint32_t cookie) {
        size_t i;
        HoldWait *w = wait_find(hs, cookie, &i);

        if (!w)
                return NULL;
        memmove(hs->waits + i, hs->waits + i + 1, (hs->n_waits - i - 1) * sizeof *hs->waits);
        hs->n_waits--;
        return w;
}

/* Answer the waiter of @cookie with the error @name, @message (none waits: nothing). */
static void wait_fail(ManagerHolds *hs, uint32_t cookie, const char *name, const char *message) {
        HoldWait *w = wait_take(hs, cookie);

        if (!w)
                return;
        (void) sd_bus_reply_method_errorf(w->call, name, "%s", message);
        wait_free(w);
}

/* ---- connections ---- */

static HoldOwner *owner_free(HoldOwner *o) {
        if (!o)
                return NULL;
        sd_bus_track_unref(o->track);
        free(o);
        return NULL;
}

static HoldOwner *owner_find(ManagerHolds *hs, const char *name, size_t *ret_index) {
        for (size_t i = 0; i < hs->n_owners; i++)
                if (strcmp(hs->owners[i]->name, name) == 0) {
                        if (ret_index)
                                *ret_index = i;
                        return hs->owners[i];
                }
        return NULL;
}

/* Stop following @name once it has no hold. */
static void owner_drop_if_idle(ManagerHolds *hs, const char *name) {
        size_t i;
        HoldOwner *o = owner_find(hs, name, &i);

        if (!o || holds_count_owner(&hs->set, name) > 0)
                return;
        memmove(hs->owners + i, hs->owners + i + 1, (hs->n_owners - i - 1) * sizeof *hs->owners);
        hs->n_owners--;
        owner_free(o);
}

/* ---- ending holds ---- */

/* End the hold at @index: journal, its waiter answered with @error_name (NULL: none waits),
 * LatencyReleased when @signal. The caps are the caller's to apply. */
static void hold_end(ManagerHolds *hs, size_t index, const char *why, bool signal) {
        Manager *m = hs->manager;
        Hold h = hs->set.holds[index];
        char unit[64], msg[128];

        (void) snprintf(unit, sizeof unit, "%s", hs->units[index]);
        memmove(hs->units + index, hs->units + index + 1, (hs->set.n - index - 1) * sizeof hs->units[0]);
        (void) holds_remove(&hs->set, h.cookie, NULL);
        hs->generation++;
        log_hold_ended(&h, unit, why);
        (void) snprintf(msg, sizeof msg, "The hold ended before its table was in force: %s.", why);
        wait_fail(hs, h.cookie, BUS_ERROR_HOLD_ENDED, msg);
        if (signal && m->bus)
                (void) sd_bus_emit_signal(m->bus, BUS_API_PATH, BUS_API_IFACE_MANAGER, "LatencyReleased", "us",
                                          h.cookie, why);
        owner_drop_if_idle(hs, h.owner);
}

int manager_holds_release(Manager *m, uint32_t cookie) {
        ManagerHolds *hs = m->holds;
        size_t i;

        if (!hs || (i = hold_index(hs, cookie)) == SIZE_MAX)
                return -ENOENT;
        hold_end(hs, i, "released", false);
        holds_apply(m, "hold-released");
        manager_publish(m, NULL);
        return 0;
}

static int on_owner_gone(sd_bus_track *t, void *userdata) {
        HoldOwner *o = userdata;
        ManagerHolds *hs = o->holds;
        Manager *m = hs->manager;
        char name[HOLD_OWNER_SIZE];

        /* hold_end() frees @o with the last of its holds */
        (void) snprintf(name, sizeof name, "%s", o->name);
        for (size_t i = hs->set.n; i > 0; i--)
                if (strcmp(hs->set.holds[i - 1].owner, name) == 0)
                        hold_end(hs, i - 1, "its connection closed", false);
        holds_apply(m, "hold-released");
        manager_publish(m, NULL);
        return 1;   /* handled: the track is freed (or, were it not, never dispatched again while empty) */
}

/* Follow @name until it closes. Return: 0, or negative errno (it is gone already: -ENXIO). */
static int owner_follow(ManagerHolds *hs, const char *name) {
        HoldOwner *o;
        int r;

        if (owner_find(hs, name, NULL))
                return 0;
        if (hs->n_owners >= HOLDS_MAX)
                return -ENOSPC;
        o = calloc(1, sizeof *o);
        if (!o)
                return -ENOMEM;
        o->holds = hs;
        (void) snprintf(o->name, sizeof o->name, "%s", name);
        /* sd_bus_track_add_name() asks the bus whether the name is still there (and fails if not) after
         * subscribing to its NameOwnerChanged, so a connection that closed meanwhile is not missed */
        r = sd_bus_track_new(hs->manager->bus, &o->track, on_owner_gone, o);
        if (r >= 0)
                r = sd_bus_track_add_name(o->track, name);
        if (r < 0) {
                owner_free(o);
                return r;
        }
        hs->owners[hs->n_owners++] = o;
        return 0;
}

/* ---- taking a hold and answering its caller ---- */

static int on_wait_timeout(sd_event_source *s, uint64_t usec, void *userdata);

/* The hold @h, just added at the end of the set: follow its connection, say so, wait for its table. */
static int hold_start(ManagerHolds *hs, sd_bus_message *call, const HoldCaller *who) {
        Manager *m = hs->manager;
        const Hold *h = &hs->set.holds[hs->set.n - 1];
        HoldWait *w;
        int r;

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        r = owner_follow(hs, who->owner);
        if (r >= 0)
                r = sd_event_add_time_relative(m->event, &w->timer, CLOCK_MONOTONIC,
                                               (uint64_t) m->config.daemon.unresponsive_after_sec * 1000000u, 0,
                                               on_wait_timeout, w);
        if (r < 0) {
                wait_free(w);
                return r;
        }
        manager_track_source(w->timer, "hold-wait");
        w->cookie = h->cookie;
        w->call = sd_bus_message_ref(call);
        w->holds = hs;
        hs->waits[hs->n_waits++] = w;
        (void) snprintf(hs->units[hs->set.n - 1], sizeof hs->units[0], "%s", strempty(who->unit));
        hs->taken++;
        hs->generation++;
        log_hold_started(m, h, who->unit);
        return 0;
}

int manager_holds_take(Manager *m, sd_bus_message *call, const char *controller, uint32_t max_latency_us,
                       const char *reason, const char *application_id, const HoldCaller *who,
                       sd_bus_error *error) {
        ManagerHolds *hs = holds_get(m);
        Hold h = {
                .max_latency_us = max_latency_us,
                .uid = who->uid,
                .pid = who->pid,
                .since_usec = realtime_usec(),
                .since_mono_usec = now_usec(),
        };
        uint32_t cookie;
        int r;

        if (!hs)
                return -ENOMEM;
        (void) snprintf(h.controller, sizeof h.controller, "%s", controller);
        (void) snprintf(h.reason, sizeof h.reason, "%s", reason);
        (void) snprintf(h.application_id, sizeof h.application_id, "%s", application_id);
        (void) snprintf(h.owner, sizeof h.owner, "%s", who->owner);
        r = holds_add(&hs->set, &h, &cookie);
        if (r == -EDQUOT)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "This connection has %u latency holds in force already.",
                                         HOLDS_PER_OWNER_MAX);
        if (r == -ENOSPC)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "%u latency holds are in force already.", HOLDS_MAX);
        if (r < 0)
                return r;
        r = hold_start(hs, call, who);
        if (r < 0) {
                (void) holds_remove(&hs->set, cookie, NULL);
                owner_drop_if_idle(hs, who->owner);
                if (r == -ENXIO || r == -ENOENT)   /* the caller's connection is gone: nobody to answer */
                        return sd_bus_error_setf(error, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                                 "The caller's connection closed.");
                return r;
        }
        holds_apply(m, "hold");
        manager_publish(m, NULL);   /* answers the call at once when nothing is to be written */
        return 0;
}

typedef enum CtrlHoldState {
        CTRL_HOLD_PENDING,         /* a step runs or waits, or the plan is not made with the cap yet */
        CTRL_HOLD_IN_FORCE,        /* the planned table is written and verified */
        CTRL_HOLD_UNRESPONSIVE,
        CTRL_HOLD_FAILED,
        CTRL_HOLD_NOT_MANAGED,
        _CTRL_HOLD_STATE_MAX,
        _CTRL_HOLD_STATE_INVALID = -EINVAL,
} CtrlHoldState;

static CtrlHoldState ctrl_hold_state(const ManagerCtrl *c) {
        const Controller *k = &c->controller;

        if (c->unresponsive)
                return CTRL_HOLD_UNRESPONSIVE;
        if (c->job || c->queued || k->latency_cap_us != c->hold_cap_us)
                return CTRL_HOLD_PENDING;
        if (c->failed)
                return CTRL_HOLD_FAILED;
        if (!k->identified || k->plan.verdict != DEVICE_MANAGE)
                return CTRL_HOLD_NOT_MANAGED;
        if (k->have_written && apst_table_equal(&k->written, controller_table(k)))
                return CTRL_HOLD_IN_FORCE;
        return CTRL_HOLD_PENDING;
}

/* What stands between @h and its answer: CTRL_HOLD_IN_FORCE when nothing does; else the first
 * controller's state that fails it, or CTRL_HOLD_PENDING, with that controller in @ret_ctrl. */
static CtrlHoldState hold_state(const Manager *m, const Hold *h, const ManagerCtrl **ret_ctrl) {
        CtrlHoldState worst = CTRL_HOLD_IN_FORCE;

        *ret_ctrl = NULL;
        for (size_t i = 0; i < m->n_ctrls; i++) {
                const ManagerCtrl *c = m->ctrls[i];
                CtrlHoldState st;

                if (!hold_applies(h, c->controller.name))
                        continue;
                st = ctrl_hold_state(c);
                if (st == CTRL_HOLD_NOT_MANAGED && !h->controller[0])
                        continue;   /* every controller: the managed ones */
                if (st == CTRL_HOLD_IN_FORCE)
                        continue;
                if (st != CTRL_HOLD_PENDING) {
                        *ret_ctrl = c;
                        return st;
                }
                if (worst == CTRL_HOLD_IN_FORCE) {
                        worst = CTRL_HOLD_PENDING;
                        *ret_ctrl = c;
                }
        }
        return worst;
}

/* The error for a hold that cannot be in force, naming @c. */
static void hold_error(CtrlHoldState st, const ManagerCtrl *c, unsigned secs, const char **ret_name, char *msg,
                       size_t n) {
        const char *name = c ? c->controller.name : "?";   /* "nvme" and a number: %.32s never cuts it */

        switch (st) {
        case CTRL_HOLD_UNRESPONSIVE:
                *ret_name = BUS_ERROR_CONTROLLER_UNRESPONSIVE;
                (void) snprintf(msg, n, "%.32s: the controller does not answer: an admin command is outstanding "
                                "past [daemon] unresponsive_after_sec (%u s); the held table is not in force.",
                                name, secs);
                return;
        case CTRL_HOLD_PENDING:
                *ret_name = BUS_ERROR_CONTROLLER_UNRESPONSIVE;
                (void) snprintf(msg, n, "%.32s: the held table was not in force within %u s "
                                "([daemon] unresponsive_after_sec).", name, secs);
                return;
        case CTRL_HOLD_FAILED:
                *ret_name = BUS_ERROR_WRITE_FAILED;
                (void) snprintf(msg, n, "%.32s: writing the held table failed (see the journal).", name);
                return;
        case CTRL_HOLD_NOT_MANAGED:
                *ret_name = BUS_ERROR_WRITE_FAILED;
                (void) snprintf(msg, n, "%.32s: no longer managed by the daemon.", name);
                return;
        case CTRL_HOLD_IN_FORCE:
        case _CTRL_HOLD_STATE_MAX:
        case _CTRL_HOLD_STATE_INVALID:
                break;
        }
        *ret_name = BUS_ERROR_WRITE_FAILED;
        (void) snprintf(msg, n, "%.32s: internal error.", name);
}

/* Answer the caller of the hold @cookie with @st's error and end the hold. */
static void hold_fail(ManagerHolds *hs, uint32_t cookie, CtrlHoldState st, const ManagerCtrl *c) {
        const char *name;
        char msg[256];

        hold_error(st, c, hs->manager->config.daemon.unresponsive_after_sec, &name, msg, sizeof msg);
        wait_fail(hs, cookie, name, msg);
        hold_end(hs, hold_index(hs, cookie), msg, false);
}

void manager_holds_check(Manager *m) {
        ManagerHolds *hs = m->holds;
        bool ended = false;

        if (!hs)
                return;
        for (size_t i = hs->n_waits; i > 0; i--) {
                uint32_t cookie = hs->waits[i - 1]->cookie;
                size_t k = hold_index(hs, cookie);
                const ManagerCtrl *c;
                CtrlHoldState st;
                HoldWait *w;

                if (k == SIZE_MAX)
                        continue;   /* cannot be: hold_end() answers the waiter */
                st = hold_state(m, &hs->set.holds[k], &c);
                if (st == CTRL_HOLD_PENDING)
                        continue;
                if (st != CTRL_HOLD_IN_FORCE) {
                        hold_fail(hs, cookie, st, c);
                        ended = true;
                        continue;
                }
                w = wait_take(hs, cookie);
                (void) sd_bus_reply_method_return(w->call, "u", cookie);
                wait_free(w);
        }
        if (ended)
                holds_apply(m, "hold-released");
}

static int on_wait_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        HoldWait *w = userdata;
        ManagerHolds *hs = w->holds;
        Manager *m = hs->manager;
        const ManagerCtrl *c;
        size_t k = hold_index(hs, w->cookie);
        CtrlHoldState st;

        if (k == SIZE_MAX)
                return 0;
        st = hold_state(m, &hs->set.holds[k], &c);
        if (st == CTRL_HOLD_IN_FORCE)
                return 0;   /* answered at the next publish */
        hold_fail(hs, w->cookie, st, c);   /* frees @w */
        holds_apply(m, "hold-released");
        manager_publish(m, NULL);
        return 0;
}

/* ---- the manager's events ---- */

void manager_holds_ctrl_removed(Manager *m, ManagerCtrl *c) {
        ManagerHolds *hs = m->holds;

        if (!hs)
                return;
        for (size_t i = hs->set.n; i > 0; i--)
                if (strcmp(hs->set.holds[i - 1].controller, c->controller.name) == 0)
                        hold_end(hs, i - 1, "controller-removed", true);
}

void manager_holds_reloaded(Manager *m) {
        ManagerHolds *hs = m->holds;

        if (!hs || m->config.holds.enable)
                return;
        for (size_t i = hs->set.n; i > 0; i--)
                hold_end(hs, i - 1, "holds-disabled", true);
        (void) holds_update_caps(m);   /* the reload's re-plan follows */
}

void manager_holds_stop(Manager *m) {
        ManagerHolds *hs = m->holds;

        if (!hs)
                return;
        for (size_t i = hs->set.n; i > 0; i--)
                hold_end(hs, i - 1, "the daemon stops", false);
        (void) holds_update_caps(m);
}

void manager_holds_free(Manager *m) {
        ManagerHolds *hs = m->holds;

        if (!hs)
                return;
        for (size_t i = 0; i < hs->n_waits; i++)
                wait_free(hs->waits[i]);
        for (size_t i = 0; i < hs->n_owners; i++)
                owner_free(hs->owners[i]);
        holds_done(&hs->set);
        free(hs);
        m->holds = NULL;
}
