/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Latency holds in the daemon (src/daemon/manager-holds.c): the set of holds in
 * force (holds.h), the cap each puts on its controllers' budgets, the callers of
 * HoldLatency waiting for their table, the bus connections followed with
 * sd_bus_track, the journal entries at each hold's start and end. The bus side
 * (bus-holds.c: arguments, polkit) calls in here once a hold is authorised;
 * manager.c calls in at publish, reload, controller removal and stop. It asks
 * the manager for re-plans and publication through manager-state.h only.
 *
 * A cap reaches a controller's table through a re-plan (manager_replan_all()):
 * ManagerCtrl.hold_cap_us is what the holds want, Controller.latency_cap_us what
 * its plan was made with; a HoldLatency call is answered once, on every
 * controller it names, the two agree, no step runs or waits, and the table the
 * plan wants is the one written and verified.
 */

#include <stdint.h>

#include "holds.h"
#include "manager-state.h"

typedef struct ManagerHolds ManagerHolds;

/* Who asked, as the bus told it: for the hold's record and the journal. */
typedef struct HoldCaller {
        const char *owner;         /* the unique bus name: who may release it */
        uint32_t uid, pid;
        const char *unit;          /* the caller's systemd unit (or user unit), NULL when unknown */
} HoldCaller;

/**
 * manager_holds_take() - a hold the caller is authorised for: take it, reply to @call when in force
 * @call: HoldLatency's message; replied to with the cookie once the table is written and verified
 *        on every controller the hold names, or with an error naming the controller that did not
 *        answer within [daemon] unresponsive_after_sec or failed (the hold is then not kept)
 * The arguments were checked (hold_validate(), a managed controller). A reply already sent
 * (an error: the limits, the connection gone) ends it here.
 * Return: 0 (the call is answered now or later) or negative errno (nothing was kept; the caller
 * replies with @error when set).
 */
int manager_holds_take(Manager *m, sd_bus_message *call, const char *controller, uint32_t max_latency_us,
                       const char *reason, const char *application_id, const HoldCaller *who,
                       sd_bus_error *error);

/* ReleaseLatency, authorised: end the hold with @cookie. Return: 0 or -ENOENT. */
int manager_holds_release(Manager *m, uint32_t cookie);

/* The holds in force (an empty set before the first). */
const HoldSet *manager_holds_set(const Manager *m);
/* Holds taken since the daemon started. */
uint64_t manager_holds_taken(const Manager *m);
/* Changes every time the set of holds changes: what bus-holds.c announces. */
uint64_t manager_holds_generation(const Manager *m);
/* The cap on @name's budget; DEVICE_NO_CAP without a hold on it. */
uint32_t manager_holds_cap(const Manager *m, const char *name);
/* Seconds under a hold of @c, up to now. */
uint64_t manager_holds_ctrl_usec(const ManagerCtrl *c);

/* manager.c: at every publish, answer the callers whose tables are in force or that failed. */
void manager_holds_check(Manager *m);
/* manager.c: @c is going away: its holds end (LatencyReleased "controller-removed"). */
void manager_holds_ctrl_removed(Manager *m, ManagerCtrl *c);
/* manager.c: a new controller: the holds on every controller cap it from its first plan. */
void manager_holds_ctrl_added(Manager *m, ManagerCtrl *c);
/* manager.c, on reload after the configuration was taken: [holds] enable = no ends every hold
 * (LatencyReleased "holds-disabled"). The re-plan of the reload brings the tables back. */
void manager_holds_reloaded(Manager *m);
/* manager.c, at stop: every hold ends (the tables are restored anyway). */
void manager_holds_stop(Manager *m);
void manager_holds_free(Manager *m);
