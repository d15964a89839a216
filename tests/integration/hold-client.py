#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A latency-hold client for tests/integration/test-holds.py: one bus connection
(to $DBUS_SYSTEM_BUS_ADDRESS) kept open while it reads commands on stdin, so
its holds live until it releases them, exits or is killed. Runs as any user
(test-holds.py starts it under setpriv for an unprivileged caller).

Commands, one per line; each answers one line on stdout:
  hold CONTROLLER LATENCY [interactive]  -> "cookie N" or "error NAME MESSAGE"
  release COOKIE                         -> "ok" or "error NAME MESSAGE"
  name                                   -> "name :1.N" (its unique name)
The reason and application id are "test" and "org.example.HoldClient".
"""

import os
import sys

import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

NAME = "io.github.nvme_apstd"
ROOT = "/io/github/nvme_apstd"
M_IFACE = "io.github.nvme_apstd.Manager1"


def call(conn, method, sig, args, interactive=False):
    flags = Gio.DBusCallFlags.ALLOW_INTERACTIVE_AUTHORIZATION if interactive else Gio.DBusCallFlags.NONE
    try:
        return conn.call_sync(NAME, ROOT, M_IFACE, method, GLib.Variant(sig, args), None, flags, 30000,
                              None).unpack(), None
    except GLib.Error as e:
        remote = Gio.DBusError.get_remote_error(e) or "?"
        Gio.DBusError.strip_remote_error(e)
        return None, f"error {remote} {e.message}"


def main():
    conn = Gio.DBusConnection.new_for_address_sync(
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"],
        Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
    print("ready", flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "hold":
            ctrl = "" if w[1] == "-" else w[1]
            r, err = call(conn, "HoldLatency", "(stss)", (ctrl, int(w[2]), "test", "org.example.HoldClient"),
                          interactive=len(w) > 3 and w[3] == "interactive")
            print(err or f"cookie {r[0]}", flush=True)
        elif w[0] == "release":
            r, err = call(conn, "ReleaseLatency", "(u)", (int(w[1]),))
            print(err or "ok", flush=True)
        elif w[0] == "name":
            print(f"name {conn.get_unique_name()}", flush=True)


if __name__ == "__main__":
    main()
