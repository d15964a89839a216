/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Following the machine's power situation (see situation.h and manager-power.h):
 * the power source from the kernel's power_supply class, re-read on every
 * power_supply uevent (no polling, no UPower), and the desktop's power
 * profile from power-profiles-daemon on the system bus. Both only note what
 * they saw in m->situation_next; a short one-shot timer then acts on the
 * situation as it is by then (MANAGER_SITUATION_DELAY_USEC), so a burst of
 * events -- a flapping charger contact, a profile toggled back and forth --
 * costs one re-plan, and a switch back and forth within the delay costs none.
 *
 * A switch resolves the configuration file for the new situation
 * (config_situate()), re-plans every controller (only changed tables are
 * written), re-applies [cpu], and logs one entry saying what changed and why.
 */

#include <stdio.h>
#include <string.h>

#include "apstd-ids.h"
#include "log.h"
#include "manager-cpu.h"
#include "manager-power.h"
#include "power.h"

static bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

/* The first Get at start blocks the start this long at most (an absent daemon answers at once:
 * the bus replies "no owner", we never activate it). */
#define PPD_START_TIMEOUT_USEC (500ULL * 1000ULL)

int manager_config_take(Manager *m, Config *loaded) {
        Config eff;
        int r;

        r = config_situate(loaded, &m->situation, &eff);
        if (r < 0)
                return r;
        if (loaded != &m->config_file) {
                config_done(&m->config_file);
                m->config_file = *loaded;
                config_init(loaded);
        }
        /* a plan names its [device] section by a pointer into m->config: into the new one, by name (a
         * controller whose step runs is planned again only when it is back) */
        for (size_t i = 0; i < m->n_ctrls; i++) {
                DevicePlan *p = &m->ctrls[i]->controller.plan;
                p->section = config_section_name(&eff, p->section);
        }
        config_done(&m->config);
        m->config = eff;
        return 0;
}

/* ---- the switch ---- */

static void manager_situation_switch(Manager *m) {
        Situation old = m->situation;
        char why[96], now[96], nchanged[16];
        const char *src;
        size_t changed;
        int r;

        if (situation_equal(&m->situation_next, &m->situation))
                return;   /* back where it was within the delay: nothing to do */
        situation_describe_change(&old, &m->situation_next, why, sizeof why);
        m->situation = m->situation_next;
        r = manager_config_take(m, &m->config_file);
        if (r < 0) {
                m->situation = old;
                log_error_errno(r, "Cannot resolve the configuration for the new power situation (%s): %m", why);
                return;
        }
        changed = manager_replan_all(m, why);
        manager_cpu_apply(m, why);

        situation_describe(&m->situation, now, sizeof now);
        src = power_source_to_string(m->situation.power_source);
        (void) snprintf(nchanged, sizeof nchanged, "%zu", changed);
        log_event(LOG_INFO, 0, MSGID_SITUATION_CHANGED,
                  LOG_FIELDS({ "POWER_SOURCE", src },
                             { "POWER_PROFILE", m->situation.profile[0] ? m->situation.profile : NULL },
                             { "SITUATION_REASON", why }, { "APST_TABLES_CHANGED", nchanged }),
                  "Power situation changed: %s%s%s%s; %zu controller table%s changed.", why,
                  streq(why, now) ? "" : " (now ", streq(why, now) ? "" : now, streq(why, now) ? "" : ")", changed,
                  changed == 1 ? "" : "s");
        manager_publish(m, NULL);
}

static int on_situation_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        /* one-shot: the next change makes a new one (sd-event frees it after this dispatch) */
        m->situation_timer = sd_event_source_disable_unref(m->situation_timer);
        manager_situation_switch(m);
        return 0;
}

/* A source reported something: act on it after the delay, unless a switch is already due. */
static void manager_situation_changed(Manager *m) {
        int enabled = SD_EVENT_OFF;
        int r;

        if (!m->event)
                return;
        if (m->situation_timer) {
                (void) sd_event_source_get_enabled(m->situation_timer, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return;   /* due already: it will see this change too */
                (void) sd_event_source_set_time_relative(m->situation_timer, MANAGER_SITUATION_DELAY_USEC);
                (void) sd_event_source_set_enabled(m->situation_timer, SD_EVENT_ONESHOT);
                return;
        }
        r = sd_event_add_time_relative(m->event, &m->situation_timer, CLOCK_MONOTONIC, MANAGER_SITUATION_DELAY_USEC,
                                       0, on_situation_timer, m);
        if (r < 0) {
                log_warning_errno(r, "Cannot schedule the power situation switch, switching now: %m");
                manager_situation_switch(m);
                return;
        }
        manager_track_source(m->situation_timer, "situation");
}

/* ---- power source: /sys/class/power_supply ---- */

static void manager_power_reread(Manager *m) {
        PowerSource s;
        int r;

        r = power_source_read(m->sysfs_root, &s);
        if (r < 0) {
                log_warning_errno(r, "Cannot read %s/class/power_supply: %m", m->sysfs_root);
                return;
        }
        if (s == m->situation_next.power_source)
                return;
        log_debug("Power source: %s.", power_source_to_string(s));
        m->situation_next.power_source = s;
        manager_situation_changed(m);
}

static int on_power_uevent(sd_device_monitor *mon, sd_device *dev, void *userdata) {
        /* Whatever the event says (battery level changes come as `change` too), the class as a whole
         * decides: re-read it, cheap (a handful of small files) and always right. */
        manager_power_reread(userdata);
        return 0;
}

int manager_connect_power(Manager *m) {
        PowerSource s;
        int r;

        r = power_source_read(m->sysfs_root, &s);
        if (r < 0) {
                log_warning_errno(r, "Cannot read %s/class/power_supply, assuming AC: %m", m->sysfs_root);
                s = POWER_SOURCE_AC;
        }
        m->situation.power_source = m->situation_next.power_source = s;

        r = manager_device_monitor(m, "power_supply", on_power_uevent, "power-uevents", &m->power_monitor);
        if (r < 0)
                return log_error_errno(r, "Cannot listen for power_supply uevents: %m");
        return 0;
}

/* ---- power profile: power-profiles-daemon ---- */

static void manager_profile_set(Manager *m, const char *profile) {
        if (strcmp(profile, m->situation_next.profile) == 0)
                return;
        log_debug("Power profile: %s.", profile[0] ? profile : "(none)");
        (void) snprintf(m->situation_next.profile, sizeof m->situation_next.profile, "%s", profile);
        manager_situation_changed(m);
}

static int ppd_refresh(Manager *m, bool old_name);

static int on_ppd_reply(sd_bus_message *reply, void *userdata, sd_bus_error *error, bool old_name) {
        Manager *m = userdata;
        char profile[sizeof m->situation.profile];

        m->ppd_call = sd_bus_slot_unref(m->ppd_call);
        power_profile_from_reply(reply, profile, sizeof profile);
        if (!profile[0] && !old_name) {
                /* no newer name (0.12), or it has no such property: ask the older one */
                (void) ppd_refresh(m, true);
                return 0;
        }
        manager_profile_set(m, profile);
        return 0;
}

static int on_ppd_reply_new(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return on_ppd_reply(reply, userdata, error, false);
}

static int on_ppd_reply_old(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return on_ppd_reply(reply, userdata, error, true);
}

/* Ask again; a pending question is dropped (its answer may be stale). */
static int ppd_refresh(Manager *m, bool old_name) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        m->ppd_call = sd_bus_slot_unref(m->ppd_call);
        r = power_profile_call(m->bus, old_name ? PPD_OLD_NAME : PPD_NAME, old_name ? PPD_OLD_PATH : PPD_PATH,
                               &call);
        if (r >= 0)
                r = sd_bus_call_async(m->bus, &m->ppd_call, call, old_name ? on_ppd_reply_old : on_ppd_reply_new,
                                      m, 0);
        if (r < 0)
                log_debug_errno(r, "Cannot ask power-profiles-daemon for its profile: %m");
        return r;
}

/* Any sign of life or change from either name: ask again (preferring the newer name). */
static int on_ppd_signal(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        (void) ppd_refresh(userdata, false);
        return 0;
}

int manager_connect_profiles(Manager *m) {
        static const char *const matches[] = {
                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" PPD_NAME "'",
                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" PPD_OLD_NAME "'",
                /* no sender=: sd-bus compares it with the unique name locally. A stray signal costs one Get
                 * from the real owner, nothing more. */
                "type='signal',path='" PPD_PATH "',"
                "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='" PPD_NAME "'",
                "type='signal',path='" PPD_OLD_PATH "',"
                "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='" PPD_OLD_NAME "'",
        };
        char profile[sizeof m->situation.profile];
        int r;

        if (!m->bus)
                return 0;   /* no system bus: profile sections are never active */
        for (size_t i = 0; i < ELEMENTSOF(matches); i++) {
                r = sd_bus_add_match_async(m->bus, &m->ppd_slots[i], matches[i], on_ppd_signal, NULL, m);
                if (r < 0)
                        return log_warning_errno(r, "Cannot follow power-profiles-daemon: %m");
        }
        /* synchronously, so the first tables written are already the right ones */
        power_profile_read(m->bus, PPD_START_TIMEOUT_USEC, profile, sizeof profile);
        (void) snprintf(m->situation.profile, sizeof m->situation.profile, "%s", profile);
        m->situation_next = m->situation;
        if (profile[0])
                log_info("power-profiles-daemon's profile: %s.", profile);
        return 0;
}

void manager_power_free(Manager *m) {
        m->situation_timer = sd_event_source_disable_unref(m->situation_timer);
        m->power_monitor = sd_device_monitor_unref(m->power_monitor);
        m->ppd_call = sd_bus_slot_unref(m->ppd_call);
        for (size_t i = 0; i < ELEMENTSOF(m->ppd_slots); i++)
                m->ppd_slots[i] = sd_bus_slot_unref(m->ppd_slots[i]);
}
