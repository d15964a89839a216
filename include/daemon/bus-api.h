/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon's read-only D-Bus API (doc/dbus-api.md): the well-known name
 * io.github.nvme_apstd on the system bus, a Manager1 object and one
 * Controller1 object per controller under an ObjectManager. Nothing on the
 * bus changes what the daemon does; every property is read-only and there
 * are no methods. The daemon works without it: every function accepts a
 * NULL BusApi and does nothing.
 */

#include <systemd/sd-bus.h>

#include "macro.h"

#define BUS_API_NAME             "io.github.nvme_apstd"
#define BUS_API_PATH             "/io/github/nvme_apstd"
#define BUS_API_CTRL_PREFIX      BUS_API_PATH "/controller"
#define BUS_API_IFACE_MANAGER    "io.github.nvme_apstd.Manager1"
#define BUS_API_IFACE_CONTROLLER "io.github.nvme_apstd.Controller1"

/* The errors of our own namespace (doc/dbus-api.md "Holds"). */
#define BUS_ERROR_HOLDS_DISABLED          "io.github.nvme_apstd.Error.HoldsDisabled"
#define BUS_ERROR_NO_SUCH_HOLD            "io.github.nvme_apstd.Error.NoSuchHold"
#define BUS_ERROR_CONTROLLER_UNRESPONSIVE "io.github.nvme_apstd.Error.ControllerUnresponsive"
#define BUS_ERROR_WRITE_FAILED            "io.github.nvme_apstd.Error.WriteFailed"
#define BUS_ERROR_HOLD_ENDED              "io.github.nvme_apstd.Error.HoldEnded"

typedef struct Manager Manager;
typedef struct BusApi BusApi;

/**
 * bus_api_new() - publish the objects on @bus and request the well-known name
 *
 * The name is requested asynchronously; a refusal (no policy file installed,
 * another instance) is logged and the daemon goes on without its API.
 * Return: 0 or negative errno (then *ret is NULL and nothing is left registered).
 */
int bus_api_new(Manager *m, sd_bus *bus, BusApi **ret);
BusApi *bus_api_free(BusApi *api);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusApi *, bus_api_free);

/**
 * bus_api_emit_changes() - tell clients what changed since the last call
 *
 * Compares every property with what was last announced and emits
 * PropertiesChanged for the ones that differ, InterfacesAdded for new
 * controllers and InterfacesRemoved for controllers that went away. Call it
 * after every event the manager handles.
 */
void bus_api_emit_changes(BusApi *api);
