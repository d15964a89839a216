/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Latency holds on the bus (src/daemon/bus-holds.c; doc/dbus-api.md "Holds"):
 * the methods HoldLatency and ReleaseLatency, the Holds property and the
 * LatencyReleased signal on Manager1, and the polkit check. The arguments are
 * checked here, the caller authorised (root at once; anyone else through
 * polkit's CheckAuthorization, asked asynchronously with a bounded wait), and
 * the hold handed to manager-holds.c, which answers the call once its table is
 * in force. Without a bus nothing of this exists: every function accepts NULL.
 */

#include <systemd/sd-bus.h>

#include "macro.h"

typedef struct Manager Manager;
typedef struct BusHolds BusHolds;

/* The polkit action a hold needs (the colleague's policy file ships it). */
#define BUS_HOLDS_POLKIT_ACTION "io.github.nvme_apstd.hold-latency"

/* How long polkit may take to answer, without and with interaction allowed. Without: below the
 * 25 s a D-Bus client waits by default, so its caller sees our refusal, not its own timeout. With:
 * a person reads an authentication dialog and types a password; a client that allows interaction
 * must wait as long. */
#define BUS_HOLDS_POLKIT_TIMEOUT_USEC (20ULL * 1000000ULL)
#define BUS_HOLDS_POLKIT_INTERACTIVE_TIMEOUT_USEC (120ULL * 1000000ULL)

/* Register the methods, property and signal on @bus. Return: 0 or negative errno (*ret NULL). */
int bus_holds_new(Manager *m, sd_bus *bus, BusHolds **ret);
BusHolds *bus_holds_free(BusHolds *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusHolds *, bus_holds_free);

/* PropertiesChanged for Holds when the set changed since the last call; manager_publish() calls it. */
void bus_holds_emit_changes(BusHolds *b);
