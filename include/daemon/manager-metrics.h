/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The [metrics] file (src/daemon/manager-metrics.c): rewritten when its text changed. Only
 * manager_publish() calls it; it reads the watchers' figures through manager-watch.h. */

#include "manager-state.h"

typedef struct ManagerMetrics ManagerMetrics;

void manager_metrics_update(Manager *m);
void manager_metrics_free(Manager *m);
