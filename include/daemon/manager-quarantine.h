/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The quarantine in the daemon (src/daemon/manager-quarantine.c, doc/quarantine.md): the kernel log
 * read as an I/O source (no timer at idle), a controller's failure records kept until it is live again
 * (its state polled only meanwhile), the blame, the file, the journal entry and the re-plan.
 */

#include <stdbool.h>
#include <stdint.h>

#include "manager-state.h"

typedef struct ManagerQuarantine ManagerQuarantine;

/* Open the kernel log (doc/quarantine.md "The records") and watch it. Return: 0 (a log that cannot be
 * read is said, and failures are then not seen), -ENOMEM. */
int manager_quarantine_start(Manager *m);
void manager_quarantine_free(Manager *m);
/* logind's PrepareForSleep(@sleeping): failures from now until QUARANTINE_RESUME_WINDOW_USEC after the
 * resume are the suspend path's. */
void manager_quarantine_sleep(Manager *m, bool sleeping);
/* Whether @c's engine steps are held (queued, not started): a failure is pending on it. The table a
 * step would write before the verdict is the one the drive failed with; the verdict's re-plan writes the
 * next, or the same if the failure is not blamed, and the held steps are released
 * (manager_ctrl_release()). A restore (stop, enable = no) is never held. */
bool manager_quarantine_holds(const ManagerCtrl *c);
/* After an engine step on @c: the PM QoS latency tolerance kept below a quarantined state. */
void manager_quarantine_ctrl(ManagerCtrl *c);
/* Failures blamed on a state (and steps taken) since the start. */
uint64_t manager_quarantine_steps(const Manager *m);
/* Failures seen and not blamed since the start. */
uint64_t manager_quarantine_not_blamed(const Manager *m);
