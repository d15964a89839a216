/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The kernel's rewrite on a pm_qos_latency_tolerance_us write (src/daemon/manager-qos.c): one inotify
 * watch per managed controller on that attribute, (re)tried after every engine run on it (the
 * file exists only while the kernel has APST enabled); IN_MODIFY re-checks the table as a reset
 * uevent does, with admin commands only (manager_ctrl_sync()).
 */

#include "manager-state.h"

void manager_qos_ctrl(ManagerCtrl *c);
