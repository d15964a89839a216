/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The power situation in words, and the power source decision; see situation.h. Pure. */

#include <stdio.h>
#include <string.h>

#include "situation.h"
#include "string-table.h"

static const char *const power_source_table[_POWER_SOURCE_MAX] = {
        [POWER_SOURCE_AC] = "ac",
        [POWER_SOURCE_BATTERY] = "battery",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(power_source, PowerSource);

bool situation_equal(const Situation *a, const Situation *b) {
        return a->power_source == b->power_source && strcmp(a->profile, b->profile) == 0;
}

static const char *source_words(PowerSource s) {
        return s == POWER_SOURCE_BATTERY ? "on battery" : "on AC";
}

void situation_describe(const Situation *s, char *buf, size_t n) {
        if (s->profile[0])
                (void) snprintf(buf, n, "%s, %s profile", source_words(s->power_source), s->profile);
        else
                (void) snprintf(buf, n, "%s", source_words(s->power_source));
}

void situation_describe_change(const Situation *old, const Situation *new, char *buf, size_t n) {
        bool src = old->power_source != new->power_source;
        bool prof = strcmp(old->profile, new->profile) != 0;

        if (src && prof)
                situation_describe(new, buf, n);
        else if (prof && new->profile[0])
                (void) snprintf(buf, n, "%s profile", new->profile);
        else if (prof)
                (void) snprintf(buf, n, "no power profile");
        else
                (void) snprintf(buf, n, "%s", source_words(new->power_source));
}

static bool is_external(const char *type) {
        return strcmp(type, "Mains") == 0 || strcmp(type, "USB") == 0 || strcmp(type, "Wireless") == 0;
}

PowerSource power_source_decide(const PowerSupplyInfo *s, size_t n) {
        bool battery = false, external = false, online = false, discharging = false;

        for (size_t i = 0; i < n; i++) {
                if (strcmp(s[i].type, "Battery") == 0) {
                        if (s[i].device_scope)
                                continue;
                        battery = true;
                        if (strcmp(s[i].status, "Discharging") == 0)
                                discharging = true;
                } else if (is_external(s[i].type) && !s[i].device_scope) {
                        external = true;
                        if (s[i].online > 0)
                                online = true;
                }
        }
        if (!battery || online)
                return POWER_SOURCE_AC;
        if (external)
                return POWER_SOURCE_BATTERY;
        return discharging ? POWER_SOURCE_BATTERY : POWER_SOURCE_AC;
}
