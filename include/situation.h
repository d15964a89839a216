/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The machine's power situation: where the power comes from (the kernel's
 * power_supply class) and the desktop's power profile (power-profiles-daemon).
 * The configuration can say different things for different situations; the
 * daemon follows the situation and exposes it on its D-Bus API.
 */

#include <errno.h>

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
