/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The machine's power situation: where the power comes from (the kernel's
 * power_supply class) and the desktop's power profile (power-profiles-daemon).
 * The configuration can say different things for different situations; the
 * daemon follows the situation and exposes it on its D-Bus API.
 *
 * Pure: deciding the power source from what sysfs says lives here
 * (power_source_decide()); reading sysfs is src/platform/power.c's business.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum PowerSource {
        POWER_SOURCE_AC,           /* mains or USB power online, or no battery at all */
        POWER_SOURCE_BATTERY,      /* no external supply online and a battery present */
        _POWER_SOURCE_MAX,
        _POWER_SOURCE_INVALID = -EINVAL,
} PowerSource;

typedef struct Situation {
        PowerSource power_source;
        char profile[32];          /* power-profiles-daemon's ActiveProfile; "" = none known */
} Situation;

/* "ac", "battery"; NULL for anything else. */
const char *power_source_to_string(PowerSource s);

bool situation_equal(const Situation *a, const Situation *b);

/* In words, for logs: "on AC", "on battery, power-saver profile". */
void situation_describe(const Situation *s, char *buf, size_t n);

/*
 * What changed from @old to @new, in words, for the one journal entry of a
 * switch: "on battery", "power-saver profile", "on AC, balanced profile",
 * "no power profile" (power-profiles-daemon went away).
 */
void situation_describe_change(const Situation *old, const Situation *new, char *buf, size_t n);

/* One /sys/class/power_supply entry, as far as the power source is concerned. */
typedef struct PowerSupplyInfo {
        char type[16];             /* "Mains", "USB", "Battery", "UPS", "Wireless", ... */
        int online;                /* the `online` attribute; -1 when absent or unreadable */
        char status[24];           /* batteries: "Charging", "Discharging", "Full", "Not charging", ... */
        bool device_scope;         /* `scope` = Device: a peripheral's battery (mouse, headset) */
} PowerSupplyInfo;

/**
 * power_source_decide() - where the power comes from
 *
 * Peripheral batteries (scope Device) do not count. Without a system battery
 * the machine runs on AC (a desktop). An external supply (Mains, USB,
 * Wireless) that is online means AC. When external supplies are known and all
 * are offline, the machine runs on its battery. When the platform reports no
 * external supply at all, a battery that says "Discharging" means battery,
 * anything else AC. This follows what UPower and the kernel's own
 * power_supply_is_system_supplied() consider.
 */
PowerSource power_source_decide(const PowerSupplyInfo *s, size_t n);
