/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The [metrics] file's state, from the manager's (src/daemon/manager-metrics.c); the writer
 * (metrics-file.h) replaces the file only when its text changed. Only manager.c calls it:
 * manager_metrics_update() from manager_publish(), manager_metrics_free() when the manager is
 * freed. It reads the watchers' figures through manager-watch.h and calls no other part. */

#include "manager-state.h"

typedef struct ManagerMetrics ManagerMetrics;

void manager_metrics_update(Manager *m);
void manager_metrics_free(Manager *m);
