/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The adaptive policy (adapt.h) as a simulator policy (sim.h). */

#include "adapt.h"
#include "sim.h"

/**
 * adapt_sim_policy() - the policy behind the simulator's seam: sampled every
 * WATCH_FAST_NS, it reads the counters only when its watcher would (adapt_next()).
 * @a must have been adapt_init()ed at 0 and outlive the run.
 */
void adapt_sim_policy(SimPolicy *ret, Adapt *a);
/* The same on the exact source: every gap, delivered every ADAPT_GAPS_PERIOD_NS. */
void adapt_sim_policy_gaps(SimPolicy *ret, Adapt *a);
