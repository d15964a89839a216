/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The power situation (src/daemon/manager-power.c): the power source and the desktop's power
 * profile, and the switch between the configuration's situations (re-plan through
 * manager_replan_all(), [cpu] through manager-cpu.h). */

#include "config.h"
#include "manager-state.h"

/* A change of the power situation is acted on this long after the first event of a burst, with
 * whatever the sources say then: a flapping charger or a profile toggled back and forth costs at
 * most one re-plan (and one write per changed controller) per period. Short enough that a user who
 * unplugs or picks a profile sees the drives follow at once. */
#define MANAGER_SITUATION_DELAY_USEC (250ULL * 1000ULL)

int manager_connect_power(Manager *m);
int manager_connect_profiles(Manager *m);
/* Make m->config the file's configuration @loaded (taken over on success) resolved for m->situation. */
int manager_config_take(Manager *m, Config *loaded);
void manager_power_free(Manager *m);
