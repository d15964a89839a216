/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* CPU frequency pinning glue (src/daemon/manager-cpu.c): pin = busy needs every controller
 * watched (manager-watch.h); what a pin does is cpupin.h's business. */

#include "manager-state.h"

/* Make [cpu] true: pin, re-pin with other CPUs, or release (pin = off). */
void manager_cpu_apply(Manager *m, const char *reason);
/* Controllers came or went: only cpus = nvme-irq depends on them. */
void manager_cpu_controllers_changed(Manager *m, const char *reason);
