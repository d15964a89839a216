#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""bench/holds.py: latency holds under load, against the fake controller harness (tests/fake).
Run by bench/holds.sh as the harness's COMMAND; prints `key: value` lines.

  one connection    CYCLES HoldLatency(nvme0, 0) / ReleaseLatency pairs on one bus connection
  many connections  CYCLES connections, each taking one hold and ending it, half by ReleaseLatency and
                    half by closing the connection (the daemon's bus tracking ends those)

Every HoldLatency is answered once the table is in force, so the call's round trip is the
call-to-table-in-force time (median, p99, max). One in SAMPLE_EVERY answers is checked against
the fake drive's table at the moment of the reply. Before and after, with the daemon idle: its
RSS, its open descriptors and its own event sources (Manager1.EventSources); the run fails when
any of them grew (RSS by more than 1 MiB)."""

import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import apstd_test as T  # noqa: E402

CYCLES = int(os.environ.get("CYCLES", "10000"))
SAMPLE_EVERY = 100
NAME, ROOT, M_IFACE = "io.github.nvme_apstd", "/io/github/nvme_apstd", "io.github.nvme_apstd.Manager1"
HELD = (0, [0] * 32)
RSS_SLACK_KIB = 1024


def proc_figures(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


class Bench:
    def __init__(self):
        self.bus_dir = tempfile.mkdtemp(prefix="apstd-holds-bench-")
        self.busproc, self.addr = T.start_system_bus(self.bus_dir)
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        self.Gio, self.GLib = Gio, GLib
        conf = T.write_config("[apst]\npolicy = budget\n")
        self.planned = T.plan_table(conf, os.path.join(T.DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin"),
                                    "144d:a808")
        self.d = T.Daemon(conf, extra_env={"DBUS_SYSTEM_BUS_ADDRESS": self.addr})
        self.failures = []
        # the daemon's sd_notify messages (a STATUS= per table change) read as they come: a full
        # socket would block it in sd_notify(), as systemd never lets it
        threading.Thread(target=self.drain, daemon=True).start()

    def drain(self):
        while self.d.proc.poll() is None:
            try:
                self.d.poll_notify(0.1)
            except OSError:
                return

    def connect(self):
        Gio = self.Gio
        return Gio.DBusConnection.new_for_address_sync(
            self.addr, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)

    def call(self, conn, method, sig, args, reply=None):
        return conn.call_sync(NAME, ROOT, M_IFACE, method, self.GLib.Variant(sig, args),
                              self.GLib.VariantType(reply) if reply else None, self.Gio.DBusCallFlags.NONE, 30000,
                              None)

    def event_sources(self, conn):
        r = conn.call_sync(NAME, ROOT, "org.freedesktop.DBus.Properties", "Get",
                           self.GLib.Variant("(ss)", (M_IFACE, "EventSources")), None, self.Gio.DBusCallFlags.NONE,
                           30000, None)
        return r.unpack()[0]

    def idle_figures(self, conn):
        """RSS, fds, event sources once the daemon is idle: the table back and nothing written for 1 s."""
        T.wait_for(lambda: T.read_table("nvme0") == self.planned, 10, "the planned table")
        n = -1
        while n != len(T.read_log("nvme0")):
            n = len(T.read_log("nvme0"))
            time.sleep(1.0)
        rss, fds = proc_figures(self.d.proc.pid)
        return rss, fds, self.event_sources(conn)

    def hold(self, conn, i, latencies):
        t0 = time.perf_counter()
        cookie = self.call(conn, "HoldLatency", "(stss)", ("nvme0", 0, "bench", "bench.holds"), "(u)").unpack()[0]
        latencies.append(time.perf_counter() - t0)
        if i % SAMPLE_EVERY == 0 and T.read_table("nvme0") != HELD:
            self.failures.append(f"cycle {i}: HoldLatency answered before the held table was in force")
        return cookie

    def one_connection(self, conn):
        lat = []
        for i in range(CYCLES):
            cookie = self.hold(conn, i, lat)
            self.call(conn, "ReleaseLatency", "(u)", (cookie,))
        return lat

    def many_connections(self):
        lat = []
        for i in range(CYCLES):
            c = self.connect()
            cookie = self.hold(c, i, lat)
            if i % 2 == 0:
                self.call(c, "ReleaseLatency", "(u)", (cookie,))
            c.close_sync(None)
        return lat

    def report(self, what, lat, seconds):
        ms = sorted(x * 1000 for x in lat)
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        print(f"{what}: {len(ms)} cycles in {seconds:.1f} s ({len(ms) / seconds:.0f}/s); call to table in force: "
              f"median {statistics.median(ms):.2f} ms, p99 {p99:.2f} ms, max {ms[-1]:.2f} ms", flush=True)

    def run(self):
        if self.d.wait_notify(r"^READY=1$", timeout=30) is None:
            self.d.dump()
            return 1
        conn = self.connect()
        before = self.idle_figures(conn)
        print(f"before: rss {before[0]} KiB, fds {before[1]}, event sources {before[2]}", flush=True)
        for what, fn in (("one connection", lambda: self.one_connection(conn)),
                         ("many connections", self.many_connections)):
            t0 = time.monotonic()
            lat = fn()
            self.report(what, lat, time.monotonic() - t0)
            after = self.idle_figures(conn)
            print(f"after {what}: rss {after[0]} KiB, fds {after[1]}, event sources {after[2]}", flush=True)
            if after[0] > before[0] + RSS_SLACK_KIB or after[1] != before[1] or after[2] != before[2]:
                self.failures.append(f"after {what}: rss {before[0]} -> {after[0]} KiB, fds {before[1]} -> "
                                     f"{after[1]}, event sources {before[2]} -> {after[2]}")
        holds = conn.call_sync(NAME, ROOT, "org.freedesktop.DBus.Properties", "Get",
                               self.GLib.Variant("(ss)", (M_IFACE, "Holds")), None, self.Gio.DBusCallFlags.NONE,
                               30000, None).unpack()[0]
        if holds:
            self.failures.append(f"holds left after the run: {holds}")
        print(f"writes: {T.count_cmds('nvme0', T.SET)} Set Features on nvme0", flush=True)
        rc = self.d.stop()
        self.busproc.terminate()
        self.busproc.wait()
        for f in self.failures:
            print(f"FAIL: {f}")
        print("result: " + ("FAIL" if self.failures or rc != 0 else "ok"))
        return 1 if self.failures or rc != 0 else 0


if __name__ == "__main__":
    T.require_harness()
    sys.exit(Bench().run())
