/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read-only D-Bus API; see bus-api.h and doc/dbus-api.md.
 *
 * Every property is computed from the Manager when it is read, so a Get can
 * never disagree with the daemon. Change signals come from comparing the
 * same values with the ones last announced (bus_api_emit_changes()), which
 * the manager calls after each event: the manager needs no knowledge of
 * which property an event touched, and a property that did not change is
 * never announced.
 */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apst.h"
#include "bus-api.h"
#include "config-build.h"
#include "controller.h"
#include "log.h"
#include "manager-holds.h"
#include "manager-state.h"
#include "manager-watch.h"

/* ---- one controller as the API shows it ---- */

/* A power state planned with a larger exit latency than its descriptor's (ExitLatencies). */
typedef struct CtrlExitLatency {
        uint8_t ps;
        uint32_t advertised_us;
        uint32_t planned_us;
        const char *source;               /* "configuration" or "measured": static strings */
} CtrlExitLatency;

typedef struct CtrlView {
        char name[32];
        char model[64];
        char firmware[32];
        char state[24];
        char policy[16];
        char section[64];
        char table[256];
        char description[512];
        bool apste;
        uint64_t raw[APST_ENTRIES];
        size_t n_raw;                     /* 0: nothing written yet */
        uint64_t worst_wake_usec;
        uint64_t max_latency_usec;        /* configured */
        uint64_t effective_max_latency_usec;   /* lowered by the latency holds */
        uint32_t held_by[HOLDS_MAX];      /* the holds that set it */
        size_t n_held_by;
        ManagerCtrlStats stats;
        bool watched;
        char watch_source[8];
        uint64_t observed_ios;
        uint64_t observed_stall_usec;
        /* the shadow kernel (the adaptive policy on the exact source) */
        bool savings_known;
        uint64_t energy_uj, kernel_energy_uj, wake_delay_usec, kernel_wake_delay_usec;
        uint64_t window_energy_uj, window_kernel_energy_uj, window_wake_delay_usec, window_kernel_wake_delay_usec;
        uint64_t guard_fallbacks;
        uint64_t quarantined_below;       /* Controller.quarantine_below: 32 none, 0 APST off */
        CtrlExitLatency exit_latencies[IDCTRL_MAX_PS];
        size_t n_exit_latencies;
} CtrlView;

typedef enum FieldKind {
        FIELD_STRING,
        FIELD_U64,
        FIELD_BOOL,
        FIELD_RAW,
        FIELD_COOKIES,
        FIELD_EXIT_LATENCIES,
} FieldKind;

typedef struct Field {
        const char *property;
        FieldKind kind;
        size_t offset;
} Field;

#define F(p, k, member) { p, k, offsetof(CtrlView, member) }
static const Field ctrl_fields[] = {
        F("Name", FIELD_STRING, name),
        F("Model", FIELD_STRING, model),
        F("Firmware", FIELD_STRING, firmware),
        F("State", FIELD_STRING, state),
        F("Policy", FIELD_STRING, policy),
        F("DeviceSection", FIELD_STRING, section),
        F("MaxLatencyUSec", FIELD_U64, max_latency_usec),
        F("EffectiveMaxLatencyUSec", FIELD_U64, effective_max_latency_usec),
        F("HeldBy", FIELD_COOKIES, held_by),
        F("Table", FIELD_STRING, table),
        F("TableDescription", FIELD_STRING, description),
        F("TableEnabled", FIELD_BOOL, apste),
        F("RawTable", FIELD_RAW, raw),
        F("WorstWakeUSec", FIELD_U64, worst_wake_usec),
        F("TableWrites", FIELD_U64, stats.table_writes),
        F("KernelOverwrites", FIELD_U64, stats.kernel_overwrites),
        F("Errors", FIELD_U64, stats.errors),
        F("LastChangeUSec", FIELD_U64, stats.last_change_usec),
        F("LastChangeReason", FIELD_STRING, stats.last_change_reason),
        F("Watched", FIELD_BOOL, watched),
        F("WatchSource", FIELD_STRING, watch_source),
        F("ObservedIOs", FIELD_U64, observed_ios),
        F("ObservedStallUSec", FIELD_U64, observed_stall_usec),
        F("SavingsKnown", FIELD_BOOL, savings_known),
        F("EnergyUJ", FIELD_U64, energy_uj),
        F("KernelEnergyUJ", FIELD_U64, kernel_energy_uj),
        F("WakeDelayUSec", FIELD_U64, wake_delay_usec),
        F("KernelWakeDelayUSec", FIELD_U64, kernel_wake_delay_usec),
        F("WindowEnergyUJ", FIELD_U64, window_energy_uj),
        F("WindowKernelEnergyUJ", FIELD_U64, window_kernel_energy_uj),
        F("WindowWakeDelayUSec", FIELD_U64, window_wake_delay_usec),
        F("WindowKernelWakeDelayUSec", FIELD_U64, window_kernel_wake_delay_usec),
        F("GuardFallbacks", FIELD_U64, guard_fallbacks),
        F("QuarantinedBelow", FIELD_U64, quarantined_below),
        F("ExitLatencies", FIELD_EXIT_LATENCIES, exit_latencies),
};
#undef F

static const char *ctrl_state(const ManagerCtrl *c) {
        const Controller *k = &c->controller;

        if (c->unresponsive)
                return "unresponsive";
        if (c->failed)
                return "failed";
        if (!k->identified)
                return "not-ready";
        switch (k->plan.verdict) {
        case DEVICE_MANAGE:
                /* what the engine writes: the adaptive policy's learned table when it has one */
                return k->have_written && apst_table_equal(&k->written, controller_table(k)) ? "programmed" : "pending";
        case DEVICE_UNSUPPORTED:
                return "unsupported";
        case DEVICE_DISABLED:
                return "left-alone";
        case DEVICE_NOT_PCIE:
                return "not-pcie";
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                break;
        }
        return "unknown";
}

/* The budget: configured, in force, and the holds that set it (holds.h). */
static void ctrl_view_holds(const ManagerCtrl *c, CtrlView *v) {
        const Controller *k = &c->controller;
        const HoldSet *set = manager_holds_set(c->manager);
        uint32_t cap = manager_holds_cap(c->manager, k->name);

        v->max_latency_usec = k->plan.configured_max_latency_us;
        v->effective_max_latency_usec = holds_effective_us(k->plan.configured_max_latency_us, cap);
        for (size_t i = 0; i < set->n && v->n_held_by < ELEMENTSOF(v->held_by); i++)
                if (hold_sets_budget(&set->holds[i], k->name, k->plan.configured_max_latency_us, cap))
                        v->held_by[v->n_held_by++] = set->holds[i].cookie;
}

/* The states the plan gave a larger exit latency than advertised: the configuration's exit_latency_us
 * (config_raised) or a measurement, saved by calibrate or passive (calib_raised), as `plan` shows them. */
static void ctrl_view_exit_latencies(const Controller *k, CtrlView *v) {
        for (unsigned ps = 0; ps <= k->id.npss && ps < IDCTRL_MAX_PS; ps++) {
                uint32_t advertised = k->id.psd[ps].exlat_us, planned = k->plan.plan_id.psd[ps].exlat_us;

                if (!(k->plan.calib_raised & (1u << ps)) || planned <= advertised)
                        continue;
                v->exit_latencies[v->n_exit_latencies++] = (CtrlExitLatency) {
                        .ps = (uint8_t) ps,
                        .advertised_us = advertised,
                        .planned_us = planned,
                        .source = k->plan.config_raised & (1u << ps) ? "configuration" : "measured",
                };
        }
}

static void ctrl_view(const ManagerCtrl *c, CtrlView *v) {
        const Controller *k = &c->controller;
        bool manage = k->identified && k->plan.verdict == DEVICE_MANAGE;

        memset(v, 0, sizeof *v);
        (void) snprintf(v->name, sizeof v->name, "%s", k->name);
        (void) snprintf(v->model, sizeof v->model, "%s", controller_model(k));
        (void) snprintf(v->firmware, sizeof v->firmware, "%s", controller_firmware(k));
        (void) snprintf(v->state, sizeof v->state, "%s", ctrl_state(c));
        if (manage) {
                (void) snprintf(v->policy, sizeof v->policy, "%s", apst_policy_to_string(k->plan.params.policy));
                (void) snprintf(v->section, sizeof v->section, "%s", strempty(k->plan.section));
                ctrl_view_holds(c, v);
                ctrl_view_exit_latencies(k, v);
        }
        if (k->have_written) {
                apst_summary(&k->written, v->table, sizeof v->table);
                apst_describe(&k->written, &k->id, v->description, sizeof v->description);
                v->apste = k->written.apste;
                memcpy(v->raw, k->written.entry, sizeof v->raw);
                v->n_raw = APST_ENTRIES;
                v->worst_wake_usec = apst_worst_wake_us(&k->written, &k->id);
        }
        v->quarantined_below = k->quarantine_below;
        v->stats = c->stats;
        v->stats.last_change_reason[sizeof v->stats.last_change_reason - 1] = 0;
        v->watched = manager_watch_observed(c, &v->observed_ios, &v->observed_stall_usec);
        (void) snprintf(v->watch_source, sizeof v->watch_source, "%s", strempty(manager_watch_source(c)));

        ManagerSavings sv;
        manager_watch_savings(c, &sv);
        v->savings_known = sv.known;
        if (sv.known) {
                /* µW·ns = 1e-15 J: / 1e9 gives µJ */
                v->energy_uj = (uint64_t) (sv.total_applied.energy_uwns / 1e9);
                v->kernel_energy_uj = (uint64_t) (sv.total_kernel.energy_uwns / 1e9);
                v->wake_delay_usec = (uint64_t) (sv.total_applied.wake_ns / 1e3);
                v->kernel_wake_delay_usec = (uint64_t) (sv.total_kernel.wake_ns / 1e3);
                v->window_energy_uj = (uint64_t) (sv.window_applied.energy_uwns / 1e9);
                v->window_kernel_energy_uj = (uint64_t) (sv.window_kernel.energy_uwns / 1e9);
                v->window_wake_delay_usec = (uint64_t) (sv.window_applied.wake_ns / 1e3);
                v->window_kernel_wake_delay_usec = (uint64_t) (sv.window_kernel.wake_ns / 1e3);
                v->guard_fallbacks = sv.fallbacks;
        }
}

static const Field *field_find(const char *property) {
        for (size_t i = 0; i < ELEMENTSOF(ctrl_fields); i++)
                if (strcmp(ctrl_fields[i].property, property) == 0)
                        return &ctrl_fields[i];
        return NULL;
}

static bool field_equal(const Field *f, const CtrlView *a, const CtrlView *b) {
        const char *pa = (const char *) a + f->offset, *pb = (const char *) b + f->offset;

        switch (f->kind) {
        case FIELD_STRING:
                return strcmp(pa, pb) == 0;
        case FIELD_U64:
                return memcmp(pa, pb, sizeof(uint64_t)) == 0;
        case FIELD_BOOL:
                return memcmp(pa, pb, sizeof(bool)) == 0;
        case FIELD_RAW:
                return a->n_raw == b->n_raw && memcmp(a->raw, b->raw, sizeof a->raw) == 0;
        case FIELD_COOKIES:
                return a->n_held_by == b->n_held_by &&
                       memcmp(a->held_by, b->held_by, a->n_held_by * sizeof a->held_by[0]) == 0;
        case FIELD_EXIT_LATENCIES:
                if (a->n_exit_latencies != b->n_exit_latencies)
                        return false;
                for (size_t i = 0; i < a->n_exit_latencies; i++) {
                        const CtrlExitLatency *x = &a->exit_latencies[i], *y = &b->exit_latencies[i];

                        if (x->ps != y->ps || x->advertised_us != y->advertised_us ||
                            x->planned_us != y->planned_us || strcmp(x->source, y->source) != 0)
                                return false;
                }
                return true;
        }
        return false;
}

/* ExitLatencies, a(yuus): (power state, advertised µs, planned µs, source) */
static int exit_latencies_append(sd_bus_message *reply, const CtrlView *v) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(yuus)");
        for (size_t i = 0; r >= 0 && i < v->n_exit_latencies; i++) {
                const CtrlExitLatency *e = &v->exit_latencies[i];

                r = sd_bus_message_append(reply, "(yuus)", e->ps, e->advertised_us, e->planned_us, e->source);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int field_append(sd_bus_message *reply, const Field *f, const CtrlView *v) {
        const char *p = (const char *) v + f->offset;
        uint64_t u;
        bool b;

        switch (f->kind) {
        case FIELD_STRING:
                return sd_bus_message_append(reply, "s", p);
        case FIELD_U64:
                memcpy(&u, p, sizeof u);
                return sd_bus_message_append(reply, "t", u);
        case FIELD_BOOL:
                memcpy(&b, p, sizeof b);
                return sd_bus_message_append(reply, "b", (int) b);
        case FIELD_RAW:
                return sd_bus_message_append_array(reply, 't', v->raw, v->n_raw * sizeof(uint64_t));
        case FIELD_COOKIES:
                return sd_bus_message_append_array(reply, 'u', v->held_by, v->n_held_by * sizeof(uint32_t));
        case FIELD_EXIT_LATENCIES:
                return exit_latencies_append(reply, v);
        }
        return -EINVAL;
}

/* ---- the API object ---- */

typedef struct CtrlSnapshot {
        char path[128];
        CtrlView view;
} CtrlSnapshot;

struct BusApi {
        Manager *manager;
        sd_bus *bus;
        sd_bus_slot *manager_slot;
        sd_bus_slot *ctrl_slot;
        sd_bus_slot *enum_slot;
        sd_bus_slot *objman_slot;

        /* what was last announced */
        PowerSource power_source;
        char profile[sizeof(((Situation *) NULL)->profile)];
        CtrlSnapshot *snap;
        size_t n_snap;
};

static int ctrl_path(const char *name, char *buf, size_t n) {
        _cleanup_free_ char *p = NULL;
        int r;

        r = sd_bus_path_encode(BUS_API_CTRL_PREFIX, name, &p);
        if (r < 0)
                return r;
        if ((size_t) snprintf(buf, n, "%s", p) >= n)
                return -ENAMETOOLONG;
        return 0;
}

static ManagerCtrl *ctrl_by_path(Manager *m, const char *path) {
        _cleanup_free_ char *name = NULL;

        if (sd_bus_path_decode(path, BUS_API_CTRL_PREFIX, &name) <= 0 || !name)
                return NULL;
        for (size_t i = 0; i < m->n_ctrls; i++)
                if (strcmp(m->ctrls[i]->controller.name, name) == 0)
                        return m->ctrls[i];
        return NULL;
}

static int ctrl_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                     sd_bus_error *error) {
        ManagerCtrl *c = ctrl_by_path(userdata, path);

        if (!c)
                return 0;
        *found = c;
        return 1;
}

static int ctrl_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***nodes, sd_bus_error *error) {
        Manager *m = userdata;
        char **l;
        size_t k = 0;

        l = calloc(m->n_ctrls + 1, sizeof *l);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_ctrls; i++) {
                if (sd_bus_path_encode(BUS_API_CTRL_PREFIX, m->ctrls[i]->controller.name, &l[k]) < 0) {
                        for (size_t j = 0; j < k; j++)
                                free(l[j]);
                        free(l);
                        return -ENOMEM;
                }
                k++;
        }
        *nodes = l;
        return 0;
}

static int ctrl_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Field *f = field_find(property);
        CtrlView v;

        if (!f)
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "No property %s.", property);
        ctrl_view(userdata, &v);
        return field_append(reply, f, &v);
}

static int manager_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        if (strcmp(property, "Version") == 0)
                return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
        if (strcmp(property, "ConfigFile") == 0)
                return sd_bus_message_append(reply, "s", m->config_path);
        if (strcmp(property, "PowerSource") == 0)
                return sd_bus_message_append(reply, "s", power_source_to_string(m->situation.power_source));
        if (strcmp(property, "ActiveProfile") == 0)
                return sd_bus_message_append(reply, "s", m->situation.profile);
        if (strcmp(property, "EventSources") == 0)
                return sd_bus_message_append(reply, "u", manager_event_sources());
        if (strcmp(property, "Controllers") == 0) {
                r = sd_bus_message_open_container(reply, 'a', "o");
                for (size_t i = 0; r >= 0 && i < m->n_ctrls; i++) {
                        char p[128];

                        r = ctrl_path(m->ctrls[i]->controller.name, p, sizeof p);
                        if (r >= 0)
                                r = sd_bus_message_append(reply, "o", p);
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                return r;
        }
        return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_PROPERTY, "No property %s.", property);
}

#define CHANGES SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE
#define CONST   SD_BUS_VTABLE_PROPERTY_CONST
/* The two objects' property tables look alike line for line (duplicates lists them as a pair):
 * the likeness is sd-bus's declaration format, not shared logic; each line names another property
 * of another object, so there is nothing for one table to serve both. */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", manager_get, 0, CONST),
        SD_BUS_PROPERTY("ConfigFile", "s", manager_get, 0, CONST),
        SD_BUS_PROPERTY("PowerSource", "s", manager_get, 0, CHANGES),
        SD_BUS_PROPERTY("ActiveProfile", "s", manager_get, 0, CHANGES),
        SD_BUS_PROPERTY("Controllers", "ao", manager_get, 0, CHANGES),
        SD_BUS_PROPERTY("EventSources", "u", manager_get, 0, 0),    /* read when asked: no signal */
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable ctrl_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", ctrl_get, 0, CONST),
        SD_BUS_PROPERTY("Model", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("Firmware", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("State", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("Policy", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("DeviceSection", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("MaxLatencyUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("EffectiveMaxLatencyUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("HeldBy", "au", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("Table", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("TableDescription", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("TableEnabled", "b", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("RawTable", "at", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WorstWakeUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("TableWrites", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("KernelOverwrites", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("Errors", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("LastChangeUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("LastChangeReason", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("Watched", "b", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("ObservedIOs", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("ObservedStallUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WatchSource", "s", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("SavingsKnown", "b", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("EnergyUJ", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("KernelEnergyUJ", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WakeDelayUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("KernelWakeDelayUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WindowEnergyUJ", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WindowKernelEnergyUJ", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WindowWakeDelayUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("WindowKernelWakeDelayUSec", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("GuardFallbacks", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("QuarantinedBelow", "t", ctrl_get, 0, CHANGES),
        SD_BUS_PROPERTY("ExitLatencies", "a(yuus)", ctrl_get, 0, CHANGES),
        SD_BUS_VTABLE_END,
};
#undef CHANGES
#undef CONST

BusApi *bus_api_free(BusApi *api) {
        if (!api)
                return NULL;
        sd_bus_slot_unref(api->objman_slot);
        sd_bus_slot_unref(api->enum_slot);
        sd_bus_slot_unref(api->ctrl_slot);
        sd_bus_slot_unref(api->manager_slot);
        sd_bus_unref(api->bus);
        free(api->snap);
        free(api);
        return NULL;
}

static void bus_api_snapshot(BusApi *api) {
        Manager *m = api->manager;
        CtrlSnapshot *s = NULL;

        api->power_source = m->situation.power_source;
        (void) snprintf(api->profile, sizeof api->profile, "%s", m->situation.profile);
        if (m->n_ctrls > 0) {
                s = calloc(m->n_ctrls, sizeof *s);
                if (!s)
                        return;   /* keep the old snapshot: the next call announces more than needed, no less */
        }
        for (size_t i = 0; i < m->n_ctrls; i++) {
                ctrl_view(m->ctrls[i], &s[i].view);
                if (ctrl_path(m->ctrls[i]->controller.name, s[i].path, sizeof s[i].path) < 0)
                        s[i].path[0] = 0;
        }
        free(api->snap);
        api->snap = s;
        api->n_snap = m->n_ctrls;
}

int bus_api_new(Manager *m, sd_bus *bus, BusApi **ret) {
        _cleanup_(bus_api_freep) BusApi *api = NULL;
        int r;

        *ret = NULL;
        api = calloc(1, sizeof *api);
        if (!api)
                return -ENOMEM;
        api->manager = m;
        api->bus = sd_bus_ref(bus);
        r = sd_bus_add_object_vtable(bus, &api->manager_slot, BUS_API_PATH, BUS_API_IFACE_MANAGER, manager_vtable, m);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(bus, &api->ctrl_slot, BUS_API_CTRL_PREFIX, BUS_API_IFACE_CONTROLLER,
                                               ctrl_vtable, ctrl_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(bus, &api->enum_slot, BUS_API_CTRL_PREFIX, ctrl_enumerate, m);
        if (r >= 0)
                r = sd_bus_add_object_manager(bus, &api->objman_slot, BUS_API_PATH);
        if (r < 0)
                return r;
        /* Synchronously, before READY=1: a client that waits for the unit to be started finds the name.
         * A refusal (no policy file installed, another instance) leaves the objects reachable by the
         * unique name only; the daemon carries on. */
        r = sd_bus_request_name(bus, BUS_API_NAME, 0);
        if (r < 0)
                log_warning_errno(r, "Cannot own the bus name %s: %m; `nvme-apstd status` will not reach the daemon.",
                                  BUS_API_NAME);
        /* Everything present at this point is what a client sees on its first GetManagedObjects. */
        bus_api_snapshot(api);
        *ret = TAKE_PTR(api);
        return 0;
}

static const CtrlSnapshot *snap_find(const BusApi *api, const char *path) {
        for (size_t i = 0; i < api->n_snap; i++)
                if (strcmp(api->snap[i].path, path) == 0)
                        return &api->snap[i];
        return NULL;
}

static void emit_removed(BusApi *api, const char *path) {
        /* The controller is gone from the Manager already, so sd_bus_emit_object_removed() could no
         * longer find its interfaces: the signal is built by hand with the ones it had. */
        static const char *const ifaces[] = { "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable",
                                              "org.freedesktop.DBus.Properties", BUS_API_IFACE_CONTROLLER, NULL };
        sd_bus_message *msg = NULL;
        int r;

        r = sd_bus_message_new_signal(api->bus, &msg, BUS_API_PATH, "org.freedesktop.DBus.ObjectManager",
                                      "InterfacesRemoved");
        if (r >= 0)
                r = sd_bus_message_append(msg, "o", path);
        if (r >= 0)
                r = sd_bus_message_append_strv(msg, (char **) ifaces);
        if (r >= 0)
                r = sd_bus_send(api->bus, msg, NULL);
        if (r < 0)
                log_debug_errno(r, "Cannot announce the removal of %s: %m", path);
        sd_bus_message_unref(msg);
}

void bus_api_emit_changes(BusApi *api) {
        Manager *m;
        const char *names[ELEMENTSOF(ctrl_fields) + 1];
        bool list_changed = false;
        size_t n = 0;

        if (!api)
                return;
        m = api->manager;

        for (size_t i = 0; i < m->n_ctrls; i++) {
                const CtrlSnapshot *old;
                char path[128];
                CtrlView v;

                if (ctrl_path(m->ctrls[i]->controller.name, path, sizeof path) < 0)
                        continue;
                old = snap_find(api, path);
                if (!old) {
                        list_changed = true;
                        (void) sd_bus_emit_object_added(api->bus, path);
                        continue;
                }
                ctrl_view(m->ctrls[i], &v);
                n = 0;
                for (size_t j = 0; j < ELEMENTSOF(ctrl_fields); j++)
                        if (!field_equal(&ctrl_fields[j], &old->view, &v))
                                names[n++] = ctrl_fields[j].property;
                names[n] = NULL;
                if (n > 0)
                        (void) sd_bus_emit_properties_changed_strv(api->bus, path, BUS_API_IFACE_CONTROLLER,
                                                                   (char **) names);
        }
        for (size_t i = 0; i < api->n_snap; i++)
                if (!ctrl_by_path(m, api->snap[i].path)) {
                        list_changed = true;
                        emit_removed(api, api->snap[i].path);
                }

        n = 0;
        if (api->power_source != m->situation.power_source)
                names[n++] = "PowerSource";
        if (strcmp(api->profile, m->situation.profile) != 0)
                names[n++] = "ActiveProfile";
        if (list_changed)
                names[n++] = "Controllers";
        names[n] = NULL;
        if (n > 0)
                (void) sd_bus_emit_properties_changed_strv(api->bus, BUS_API_PATH, BUS_API_IFACE_MANAGER,
                                                           (char **) names);
        bus_api_snapshot(api);
}
