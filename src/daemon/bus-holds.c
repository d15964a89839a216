/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Latency holds on the bus; see bus-holds.h and doc/dbus-api.md "Holds".
 *
 * Authorisation follows what systemd's own services do (src/shared/bus-polkit.c
 * read as a model): the caller's effective uid as the bus daemon saw it (never
 * one sd-bus filled in from /proc) — 0 passes at once; anyone else is asked
 * about through polkit's CheckAuthorization with the subject
 * system-bus-name = the caller's unique name, asynchronously from the event
 * loop with a bounded wait, passing on whether the caller allows interactive
 * authorization. While polkit thinks, the loop serves everyone else; a polkit
 * that never answers costs the caller the wait and nothing more. No polkit on
 * the bus: only root.
 *
 * HoldLatency calls waiting for polkit count against the same limits as the
 * holds (16 per connection, 256 in all): a client cannot queue more questions
 * than it could hold answers.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-api.h"
#include "bus-holds.h"
#include "config.h"
#include "holds.h"
#include "log.h"
#include "manager-holds.h"
#include "manager-state.h"

#define POLKIT_NAME  "org.freedesktop.PolicyKit1"
#define POLKIT_PATH  "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"

/* CheckAuthorization's flags (polkit's PolkitCheckAuthorizationFlags). */
#define POLKIT_ALLOW_USER_INTERACTION 1u

/* A HoldLatency call waiting for polkit. */
typedef struct AuthQuery {
        BusHolds *b;
        sd_bus_message *call;
        sd_bus_slot *slot;         /* the pending CheckAuthorization */
        char owner[HOLD_OWNER_SIZE];
        char controller[HOLD_CONTROLLER_SIZE];
        uint32_t max_latency_us;
        char reason[HOLD_TEXT_MAX + 1], application_id[HOLD_TEXT_MAX + 1];
        uint32_t uid, pid;
        char unit[64];
        bool interactive;
        struct AuthQuery *next;
} AuthQuery;

struct BusHolds {
        Manager *manager;
        sd_bus *bus;
        sd_bus_slot *slot;
        uint64_t announced;        /* manager_holds_generation() last announced */
        AuthQuery *queries;
        size_t n_queries;
};

static AuthQuery *query_free(AuthQuery *q) {
        if (!q)
                return NULL;
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->call);
        free(q);
        return NULL;
}

static void query_unlink(BusHolds *b, AuthQuery *q) {
        for (AuthQuery **p = &b->queries; *p; p = &(*p)->next)
                if (*p == q) {
                        *p = q->next;
                        b->n_queries--;
                        return;
                }
}

static size_t queries_of(const BusHolds *b, const char *owner) {
        size_t n = 0;

        for (const AuthQuery *q = b->queries; q; q = q->next)
                if (strcmp(q->owner, owner) == 0)
                        n++;
        return n;
}

/* May a hold be taken on @controller now? (holds enabled, the controller managed) */
static int check_target(Manager *m, const char *controller, sd_bus_error *error) {
        const ManagerCtrl *c;

        if (!m->config.holds.enable)
                return sd_bus_error_setf(error, BUS_ERROR_HOLDS_DISABLED,
                                         "Latency holds are disabled ([holds] enable = no in %s).", m->config_path);
        if (m->stopping)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "The daemon is stopping.");
        if (!controller[0])
                return 0;
        c = manager_ctrl_find(m, controller);
        if (!c)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "controller: %s is not a controller the daemon knows.", controller);
        if (!c->controller.identified || c->controller.plan.verdict != DEVICE_MANAGE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "controller: %s is not managed by the daemon (%s).", controller,
                                         !c->controller.identified ? "not identified yet" :
                                         device_verdict_reason(c->controller.plan.verdict));
        return 0;
}

/* Authorised: hand the hold over; manager-holds.c answers the call. */
static void query_grant(AuthQuery *q) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Manager *m = q->b->manager;
        HoldCaller who = { .owner = q->owner, .uid = q->uid, .pid = q->pid, .unit = q->unit };
        int r;

        r = check_target(m, q->controller, &error);   /* again: a reload may have come meanwhile */
        if (r >= 0)
                r = manager_holds_take(m, q->call, q->controller, q->max_latency_us, q->reason, q->application_id,
                                       &who, &error);
        if (r < 0)
                (void) sd_bus_reply_method_error(q->call, sd_bus_error_is_set(&error) ? &error :
                                                 &SD_BUS_ERROR_MAKE_CONST(SD_BUS_ERROR_FAILED, "Out of memory."));
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        AuthQuery *q = userdata;
        BusHolds *b = q->b;
        const sd_bus_error *e;
        int authorized = 0, challenge = 0, r;

        query_unlink(b, q);
        e = sd_bus_message_get_error(reply);
        if (e && sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "polkit is not running: only root may take a latency hold.");
        else if (e && sd_bus_error_has_names(e, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT))
                (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_ACCESS_DENIED,
                                                  "polkit did not answer within %" PRIu64 " s.",
                                                  (uint64_t) (q->interactive ?
                                                              BUS_HOLDS_POLKIT_INTERACTIVE_TIMEOUT_USEC :
                                                              BUS_HOLDS_POLKIT_TIMEOUT_USEC) / 1000000u);
        else if (e)
                (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_ACCESS_DENIED, "polkit failed: %s",
                                                  e->message ? e->message : e->name);
        else {
                r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
                if (r < 0)
                        (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_ACCESS_DENIED,
                                                          "polkit's answer cannot be read: %s", strerror(-r));
                else if (authorized)
                        query_grant(q);
                else if (challenge && !q->interactive)
                        (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                                          "Authentication is required to hold the drives' "
                                                          "latency (polkit action %s); allow interactive "
                                                          "authorization to be asked.", BUS_HOLDS_POLKIT_ACTION);
                else
                        (void) sd_bus_reply_method_errorf(q->call, SD_BUS_ERROR_ACCESS_DENIED,
                                                          "Not authorised to hold the drives' latency (polkit "
                                                          "action %s).", BUS_HOLDS_POLKIT_ACTION);
        }
        query_free(q);
        return 0;
}

/* Ask polkit about @q's caller, without waiting. */
static int polkit_ask(AuthQuery *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *req = NULL;
        char lat[16];
        int r;

        (void) snprintf(lat, sizeof lat, "%" PRIu32, q->max_latency_us);
        r = sd_bus_message_new_method_call(q->b->bus, &req, POLKIT_NAME, POLKIT_PATH, POLKIT_IFACE,
                                           "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(req, "(sa{sv})s", "system-bus-name", 1, "name", "s", q->owner,
                                          BUS_HOLDS_POLKIT_ACTION);
        /* details a rules file may look at (polkit.addRule: action.lookup("controller")) */
        if (r >= 0)
                r = sd_bus_message_append(req, "a{ss}us", 2, "controller", q->controller, "max_latency_usec", lat,
                                          q->interactive ? POLKIT_ALLOW_USER_INTERACTION : 0u, "");
        if (r >= 0)
                r = sd_bus_call_async(q->b->bus, &q->slot, req, on_polkit_reply, q,
                                      q->interactive ? BUS_HOLDS_POLKIT_INTERACTIVE_TIMEOUT_USEC :
                                                       BUS_HOLDS_POLKIT_TIMEOUT_USEC);
        return r;
}

/* The caller's effective uid as the bus daemon gave it; -EPERM when only /proc could say. */
static int caller_euid(sd_bus_message *msg, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r < 0)
                return r;
        if (sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID)
                return -EPERM;
        return sd_bus_creds_get_euid(creds, ret);
}

/* Who the caller is, for the hold's record and the journal: uid and pid as the bus daemon gave them,
 * the unit from /proc (augmented: good enough to say, never to decide). */
static void caller_describe(sd_bus_message *msg, AuthQuery *q) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL, *units = NULL;
        const char *unit = NULL;
        uid_t uid;
        pid_t pid;
        int r;

        r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID, &creds);
        if (r < 0)
                log_debug_errno(r, "Cannot read the credentials of %s: %m", q->owner);
        if (r >= 0 && sd_bus_creds_get_euid(creds, &uid) >= 0)
                q->uid = (uint32_t) uid;
        if (r >= 0 && sd_bus_creds_get_pid(creds, &pid) >= 0)
                q->pid = (uint32_t) pid;
        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_AUGMENT | SD_BUS_CREDS_UNIT | SD_BUS_CREDS_USER_UNIT,
                                      &units) < 0)
                return;
        if (sd_bus_creds_get_user_unit(units, &unit) >= 0 || sd_bus_creds_get_unit(units, &unit) >= 0)
                (void) snprintf(q->unit, sizeof q->unit, "%s", unit);
}

/* The limits, counting the calls still waiting for polkit. */
static int check_limits(const BusHolds *b, const char *owner, sd_bus_error *error) {
        const HoldSet *set = manager_holds_set(b->manager);

        if (holds_count_owner(set, owner) + queries_of(b, owner) >= HOLDS_PER_OWNER_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "This connection has %u latency holds in force or asked for already.",
                                         HOLDS_PER_OWNER_MAX);
        if (set->n + b->n_queries >= HOLDS_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "%u latency holds are in force or asked for already.", HOLDS_MAX);
        return 0;
}

static int method_hold(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusHolds *b = userdata;
        Manager *m = b->manager;
        const char *controller, *reason, *app, *sender = sd_bus_message_get_sender(msg);
        uint64_t latency;
        char why[256];
        uid_t euid;
        AuthQuery *q;
        int r;

        r = sd_bus_message_read(msg, "stss", &controller, &latency, &reason, &app);
        if (r < 0)
                return r;
        r = check_target(m, "", error);
        if (r < 0)
                return r;
        if (hold_validate(controller, latency, CONFIG_LATENCY_US_MAX, reason, app, NULL, why, sizeof why) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s.", why);
        r = check_target(m, controller, error);
        if (r >= 0)
                r = sender ? check_limits(b, sender, error) :
                             sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "The caller has no bus name.");
        if (r < 0)
                return r;

        q = calloc(1, sizeof *q);
        if (!q)
                return -ENOMEM;
        q->b = b;
        q->call = sd_bus_message_ref(msg);
        (void) snprintf(q->owner, sizeof q->owner, "%s", sender);
        (void) snprintf(q->controller, sizeof q->controller, "%s", controller);
        (void) snprintf(q->reason, sizeof q->reason, "%s", reason);
        (void) snprintf(q->application_id, sizeof q->application_id, "%s", app);
        q->max_latency_us = (uint32_t) latency;   /* at most CONFIG_LATENCY_US_MAX */
        q->interactive = sd_bus_message_get_allow_interactive_authorization(msg) > 0;
        q->uid = UINT32_MAX;   /* unknown until the bus says */
        caller_describe(msg, q);

        if (caller_euid(msg, &euid) >= 0 && euid == 0) {
                query_grant(q);
                query_free(q);
                return 1;
        }
        r = polkit_ask(q);
        if (r < 0) {
                query_free(q);
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot ask polkit: %s", strerror(-r));
        }
        q->next = b->queries;
        b->queries = q;
        b->n_queries++;
        return 1;   /* answered when polkit has, then when the table is in force */
}

static int method_release(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusHolds *b = userdata;
        Manager *m = b->manager;
        const char *sender = sd_bus_message_get_sender(msg);
        const Hold *h;
        uint32_t cookie;
        uid_t euid;
        int r;

        r = sd_bus_message_read(msg, "u", &cookie);
        if (r < 0)
                return r;
        h = holds_find(manager_holds_set(m), cookie);
        if (!h)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_HOLD, "No latency hold has the cookie %" PRIu32 ".",
                                         cookie);
        if ((!sender || strcmp(sender, h->owner) != 0) && !(caller_euid(msg, &euid) >= 0 && euid == 0))
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Latency hold %" PRIu32 " belongs to another connection; only that one "
                                         "or root may release it.", cookie);
        r = manager_holds_release(m, cookie);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int property_holds(sd_bus *bus, const char *path, const char *interface, const char *property,
                          sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusHolds *b = userdata;
        const HoldSet *set = manager_holds_set(b->manager);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ustssuut)");
        for (size_t i = 0; r >= 0 && i < set->n; i++) {
                const Hold *h = &set->holds[i];

                r = sd_bus_message_append(reply, "(ustssuut)", h->cookie, h->controller, (uint64_t) h->max_latency_us,
                                          h->application_id, h->reason, h->uid, h->pid, h->since_usec);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static const sd_bus_vtable holds_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Holds", "a(ustssuut)", property_holds, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* UNPRIVILEGED: sd-bus would refuse callers without CAP_SYS_ADMIN; polkit decides instead */
        SD_BUS_METHOD_WITH_ARGS("HoldLatency",
                                SD_BUS_ARGS("s", controller, "t", max_latency_usec, "s", reason, "s", application_id),
                                SD_BUS_RESULT("u", cookie), method_hold, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReleaseLatency", SD_BUS_ARGS("u", cookie), SD_BUS_NO_RESULT, method_release,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("LatencyReleased", SD_BUS_ARGS("u", cookie, "s", why), 0),
        SD_BUS_VTABLE_END,
};

int bus_holds_new(Manager *m, sd_bus *bus, BusHolds **ret) {
        _cleanup_(bus_holds_freep) BusHolds *b = NULL;
        int r;

        *ret = NULL;
        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        b->manager = m;
        b->bus = sd_bus_ref(bus);
        r = sd_bus_add_object_vtable(bus, &b->slot, BUS_API_PATH, BUS_API_IFACE_MANAGER, holds_vtable, b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(b);
        return 0;
}

BusHolds *bus_holds_free(BusHolds *b) {
        if (!b)
                return NULL;
        while (b->queries) {
                AuthQuery *q = b->queries;

                b->queries = q->next;
                query_free(q);
        }
        sd_bus_slot_unref(b->slot);
        sd_bus_unref(b->bus);
        free(b);
        return NULL;
}

void bus_holds_emit_changes(BusHolds *b) {
        uint64_t g;

        if (!b)
                return;
        g = manager_holds_generation(b->manager);
        if (g == b->announced)
                return;
        b->announced = g;
        (void) sd_bus_emit_properties_changed(b->bus, BUS_API_PATH, BUS_API_IFACE_MANAGER, "Holds", NULL);
}
