#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's read-only D-Bus API (doc/dbus-api.md) and `nvme-apstd status`,
on a private dbus-daemon standing in for the system bus (DBUS_SYSTEM_BUS_ADDRESS).
Run as the harness's COMMAND: test-bus.py SCENARIO

  api       a bus that enforces the system bus's default policy plus the shipped
            dbus/io.github.nvme_apstd.conf: the name is owned, `busctl` introspects
            and reads every property, the values are the daemon's, PropertiesChanged
            after a reload and after a kernel reset, InterfacesAdded/Removed on
            hot-plug, `status` and `status --json`; the bus refuses Set; with the
            daemon stopped `status` says so and shows the plan (exit 3)
  open-bus  a bus without any policy: the daemon itself refuses Set and unknown
            methods, and nothing is sent to the drive because of them
  adaptive-state  policy = adaptive: State stays `programmed` and RawTable follows a learned table
Covers: src/daemon/bus-api.c, src/cli/cmd-status.c, dbus/io.github.nvme_apstd.conf.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from apstd_test import *  # noqa: F401,F403

require_harness()
scenario = sys.argv[1]
try:
    import gi
    gi.require_version("Gio", "2.0")
    from gi.repository import Gio, GLib
except (ImportError, ValueError) as e:
    skip(f"python3-gi (Gio) not available: {e}")
DBUS_DAEMON = shutil.which("dbus-daemon")
BUSCTL = shutil.which("busctl")
if not DBUS_DAEMON or not BUSCTL:
    skip("dbus-daemon or busctl not installed")

SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
WDC = os.path.join(DATA, "idctrl", "14-wdc-wds500g2b0c-00pxh0.bin")
INTEL = os.path.join(DATA, "idctrl", "00-intel-ssdpekkw256g7.bin")
CONF = write_config("[apst]\npolicy = budget\n")
NAME = "io.github.nvme_apstd"
ROOT = "/io/github/nvme_apstd"
M_IFACE = "io.github.nvme_apstd.Manager1"
C_IFACE = "io.github.nvme_apstd.Controller1"


def ctrl_path(name):
    return f"{ROOT}/controller/{name}"


def start_bus(policy):
    bdir = tempfile.mkdtemp(prefix="apstd-bus-")
    if policy:
        bus, addr = start_system_bus(bdir)
    else:
        addr = f"unix:path={bdir}/bus"
        bus = subprocess.Popen([DBUS_DAEMON, "--session", "--nofork", f"--address={addr}", "--print-address=1"],
                               stdout=subprocess.PIPE, text=True)
        bus.stdout.readline()
    conn = Gio.DBusConnection.new_for_address_sync(
        addr, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
        None, None)
    return bus, addr, conn


class Signals:
    """Every signal nvme-apstd's objects send, as (path, interface, member, args)."""

    def __init__(self, conn):
        self.got = []
        conn.signal_subscribe(NAME, None, None, None, None, Gio.DBusSignalFlags.NONE, self._on)

    def _on(self, conn, sender, path, iface, member, params, *user):
        self.got.append((path, iface, member, params.unpack()))

    def pump(self, seconds=0.0):
        ctx = GLib.MainContext.default()
        end = time.monotonic() + seconds
        while True:
            while ctx.iteration(False):
                pass
            if time.monotonic() >= end:
                return
            time.sleep(0.02)

    def wait(self, pred, start=0, timeout=10.0, what="signal"):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.pump()
            for s in self.got[start:]:
                if pred(s):
                    return s
            time.sleep(0.02)
        print(f"timed out waiting for {what}; got {self.got[start:]}")
        return None


def changed(path, prop=None, value=None):
    """Predicate: PropertiesChanged on @path (with @prop, equal to @value if given)."""
    def pred(s):
        if s[0] != path or s[2] != "PropertiesChanged":
            return False
        props = s[3][1]
        if prop is None:
            return True
        return prop in props and (value is None or props[prop] == value)
    return pred


def busctl(addr, *args):
    p = subprocess.run([BUSCTL, f"--address={addr}", *args], capture_output=True, text=True, timeout=30)
    return p


def get(addr, path, iface, prop):
    p = busctl(addr, "--json=short", "get-property", NAME, path, iface, prop)
    if p.returncode != 0:
        print(f"busctl get-property {path} {prop}: {p.stderr.strip()}")
        return None
    return json.loads(p.stdout)["data"]


def introspect(addr, path):
    """{interface: [(member, type, signature, flags)]} as busctl shows it."""
    p = busctl(addr, "introspect", "--no-pager", NAME, path)
    print(f"$ busctl introspect {NAME} {path}\n{p.stdout}{p.stderr}")
    out, iface = {}, None
    for line in p.stdout.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 2:
            continue
        if cols[1] == "interface":
            iface = cols[0]
            out[iface] = []
        elif iface:
            out[iface].append((cols[0].lstrip("."), cols[1], cols[2], cols[-1]))
    return out if p.returncode == 0 else None


# The only methods and signal of our own: the latency holds (doc/dbus-api.md "Holds"), on Manager1.
HOLD_MEMBERS = {("HoldLatency", "method", "stss"), ("ReleaseLatency", "method", "u"),
                ("LatencyReleased", "signal", "us")}


def check_introspection(addr, path, iface):
    """Only read-only properties on our interface, and on Manager1 the holds' methods and signal;
    returns the properties' names."""
    i = introspect(addr, path)
    if not check(i is not None and iface in i, f"{path}: busctl introspect shows {iface}"):
        return []
    members = i[iface]
    others = {m[:3] for m in members if m[1] != "property"}
    want = HOLD_MEMBERS if iface == M_IFACE else set()
    check(others == want, f"{iface}: properties only, and the holds' methods and signal on Manager1 ({others})")
    check(not any("writable" in m[3] for m in members), f"{iface}: no writable property")
    ours = [k for k in i if k.startswith("io.github.nvme_apstd")]
    check(ours == [iface], f"{path}: no other interface of ours ({ours})")
    return [m[0] for m in members if m[1] == "property"]


def status_env(addr):
    return {"DBUS_SYSTEM_BUS_ADDRESS": addr}


def scenario_api():
    bus, addr, conn = start_bus(policy=True)
    sig = Signals(conn)
    t0 = time.time()
    version = run("--version").stdout.split()[-1]
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    want1 = plan_table(CONF, WDC, "15b7:5009")
    d = Daemon(CONF, extra_env={"DBUS_SYSTEM_BUS_ADDRESS": addr})
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        # Waiting on bus signals and status calls below, the test would leave the notify socket
        # full and hold the daemon in sd_notify(), past its SIGTERM, now and then.
        d.drain_notify()
        # the API is up while the first steps run: take in what it announced before READY=1
        sig.pump(0.3)
        # owned before READY=1: no wait needed
        p = busctl(addr, "--json=short", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                   "org.freedesktop.DBus", "NameHasOwner", "s", NAME)
        check(p.returncode == 0 and json.loads(p.stdout)["data"] == [True], f"{NAME} owned at READY=1")
        check("Cannot own" not in d.log(), "no warning about the bus name")

        tree = busctl(addr, "tree", "--list", NAME).stdout.split()
        check(ctrl_path("nvme0") in tree and ctrl_path("nvme1") in tree and ROOT in tree,
              f"busctl tree lists the manager and both controllers ({tree})")

        # every property, read one by one with busctl
        mprops = check_introspection(addr, ROOT, M_IFACE)
        check(set(mprops) == {"Version", "ConfigFile", "PowerSource", "ActiveProfile", "Controllers", "EventSources",
                              "Holds"},
              f"Manager1 properties: {mprops}")
        m = {k: get(addr, ROOT, M_IFACE, k) for k in mprops}
        print(f"manager: {m}")
        check(m["Version"] == version, "Version is the binary's")
        check(m["ConfigFile"] == CONF, "ConfigFile is the file the daemon was started with")
        check(m["PowerSource"] == "ac" and m["ActiveProfile"] == "", "PowerSource ac, no profile known")
        check(m["Controllers"] == [ctrl_path("nvme0"), ctrl_path("nvme1")], "Controllers lists both")

        cprops = check_introspection(addr, ctrl_path("nvme0"), C_IFACE)
        for need in ("Name", "Model", "Firmware", "Policy", "State", "Table", "RawTable", "WorstWakeUSec",
                     "KernelOverwrites", "TableWrites", "Errors", "LastChangeUSec", "LastChangeReason"):
            check(need in cprops, f"Controller1 has {need}")
        c0 = {k: get(addr, ctrl_path("nvme0"), C_IFACE, k) for k in cprops}
        c1 = {k: get(addr, ctrl_path("nvme1"), C_IFACE, k) for k in cprops}
        print(f"nvme0: {c0}\nnvme1: {c1}")
        check(all(v is not None for v in list(c0.values()) + list(c1.values())), "every property readable")
        check(c0["Name"] == "nvme0" and c0["Model"] == "Samsung SSD 970 EVO Plus 2TB", "Name and Model")
        check(c1["Model"].startswith("WDC WDS500G2B0C"), "nvme1's model")
        check(c0["State"] == "programmed" and c0["Policy"] == "budget", "State programmed, Policy budget")
        check(c0["Watched"] is False and c0["ObservedIOs"] == 0 and c0["ObservedStallUSec"] == 0,
              "budget policy, pin = off: no watcher, no observations")
        check(c0["TableEnabled"] is True and c0["RawTable"] == want0[1], "RawTable is what the drive holds")
        check(c1["RawTable"] == want1[1], "nvme1's RawTable is what its drive holds")
        check(re.fullmatch(r"ps\d@\d+ms(→ps\d@\d+ms)*", c0["Table"]) is not None, f"Table in words: {c0['Table']}")
        check("after" in c0["TableDescription"], "TableDescription says when each state is entered")
        check(c0["WorstWakeUSec"] > 0 and c0["MaxLatencyUSec"] == 100000, "WorstWakeUSec, MaxLatencyUSec")
        check(c0["TableWrites"] == 1 and c0["KernelOverwrites"] == 0 and c0["Errors"] == 0, "counters after start")
        check(t0 * 1e6 <= c0["LastChangeUSec"] <= time.time() * 1e6 and c0["LastChangeReason"] == "start",
              "LastChangeUSec is the realtime of the start, reason start")

        # GetManagedObjects: both controllers with every property
        p = busctl(addr, "--json=short", "call", NAME, ROOT, "org.freedesktop.DBus.ObjectManager",
                   "GetManagedObjects")
        objs = json.loads(p.stdout)["data"][0] if p.returncode == 0 else {}
        check(set(objs) == {ctrl_path("nvme0"), ctrl_path("nvme1")} and
              set(objs[ctrl_path("nvme0")][C_IFACE]) == set(cprops), "GetManagedObjects: both, all properties")

        # the bus refuses writes (the shipped policy), and there is nothing else to call
        p = busctl(addr, "set-property", NAME, ctrl_path("nvme0"), C_IFACE, "Policy", "s", "kernel")
        print(f"$ busctl set-property ... Policy s kernel -> rc={p.returncode} {p.stderr.strip()}")
        check(p.returncode != 0 and "ccess denied" in p.stderr, "Set refused by the bus policy")
        check(get(addr, ctrl_path("nvme0"), C_IFACE, "Policy") == "budget", "Policy unchanged")

        # status against the running daemon
        s = run("status", env=status_env(addr))
        check(s.returncode == 0, "status: exit 0")
        check(re.search(r"nvme-apstd \S+ - running", s.stdout) and "Power: ac" in s.stdout, "status: header")
        check(re.search(r"^● nvme0 - Samsung SSD 970 EVO Plus 2TB \(firmware \S+\)$", s.stdout, re.M),
              "status: one block per controller with model and firmware")
        check(re.search(r"State: programmed; table last written: \w{3} \d{4}-\d\d-\d\d .* ago", s.stdout),
              "status: state and since when")
        check(re.search(r"Table: ps\d@", s.stdout) and "Why: budget policy, latency budget 100 ms" in s.stdout, "status: table and why")
        sj = run("status", "--json", env=status_env(addr))
        j = json.loads(sj.stdout) if sj.returncode == 0 else {}
        check(j.get("running") is True and j.get("power_source") == "ac" and len(j.get("controllers", [])) == 2,
              "status --json: running, power source, two controllers")
        jc0 = j["controllers"][0] if j else {}
        check(jc0.get("name") == "nvme0" and [int(x, 16) for x in jc0.get("raw_table", [])] == want0[1] and
              jc0.get("kernel_overwrites") == 0 and jc0.get("worst_wake_usec") == c0["WorstWakeUSec"],
              "status --json: the same values as the properties")
        # no exit_latency_us, no calibration: every state planned with its advertised exit latency
        check(c0["ExitLatencies"] == [] and "Wake-up:" not in s.stdout and "from configuration" not in s.stdout,
              "no exit_latency_us: ExitLatencies empty, status names no raised exit latency")
        check(jc0.get("exit_latencies") == [], "status --json: exit_latencies empty")

        # reload: only nvme1 changes, and says so
        n = len(sig.got)
        write_config("[apst]\npolicy = budget\n\n[device wdc]\nmatch_model = WDC*\npolicy = kernel\n", CONF)
        d.signal(signal.SIGHUP)
        s1 = sig.wait(changed(ctrl_path("nvme1"), "Policy", "kernel"), n, what="nvme1 Policy changed")
        check(s1 is not None, "PropertiesChanged after the reload: nvme1's Policy is kernel")
        if s1:
            props = s1[3][1]
            check(props.get("LastChangeReason") == "reload" and props.get("TableWrites") == 2 and
                  props.get("DeviceSection") == "wdc" and "RawTable" in props,
                  f"... with the new table, the reason and the write count ({sorted(props)})")
        sig.pump(0.3)
        check(not any(changed(ctrl_path("nvme0"))(x) for x in sig.got[n:]), "nothing announced for nvme0")

        # a kernel reset overwrites nvme0's table; the daemon puts it back and says so
        kernel_tbl = os.path.join(d.dir, "kernel.table")
        write_table_file(kernel_tbl, 1, [entry(3, 100)] + [0] * 31)
        n = len(sig.got)
        ctl("reset", "nvme0", kernel_tbl)
        s2 = sig.wait(changed(ctrl_path("nvme0"), "KernelOverwrites", 1), n, what="nvme0 KernelOverwrites 1")
        check(s2 is not None, "PropertiesChanged after the kernel reset: KernelOverwrites 1")
        if s2:
            check(s2[3][1].get("LastChangeReason") == "reset" and s2[3][1].get("TableWrites") == 2,
                  "... reason reset, second write")
        check(read_table("nvme0") == want0, "our table back")
        s = run("status", env=status_env(addr))
        check(re.search(r"nvme0 .*\n(.*\n)*?.*Reason: reset\n(.*\n)*?.*kernel overwrites seen: 1", s.stdout),
              "status: the reset and the overwrite seen")

        # hot-plug: InterfacesAdded / InterfacesRemoved, Controllers follows; the controller's own event
        # sources (its pm_qos watch, a retry timer) come and go with it
        sources = get(addr, ROOT, M_IFACE, "EventSources")
        n = len(sig.got)
        ctl("add", f"nvme2,idctrl={INTEL},pci=8086:f1a5,initial-table=kernel,state=connecting")
        ctl("fault", "nvme2", "set-apst=EBUSY:once")
        kernel = os.path.join(tempfile.mkdtemp(prefix="apstd-bus-"), "nvme2.kernel")
        write_table_file(kernel, *read_table("nvme2"))
        ctl("reset", "nvme2", kernel)        # live now, with the kernel's table: the daemon's turn
        a = sig.wait(lambda x: x[2] == "InterfacesAdded" and x[3][0] == ctrl_path("nvme2"), n,
                     what="InterfacesAdded nvme2")
        check(a is not None and C_IFACE in a[3][1] and a[3][1][C_IFACE].get("Name") == "nvme2",
              "InterfacesAdded for the hot-plugged controller, with its properties")
        check(sig.wait(changed(ROOT, "Controllers"), n) is not None, "Manager1.Controllers changed")
        check(d.wait_log(r"nvme2: the error may be transient; trying again in 2 s", timeout=5) is not None,
              "nvme2's first write failed (EBUSY): a retry is due in 2 s")
        pending = get(addr, ROOT, M_IFACE, "EventSources")
        check(wait_for(lambda: get(addr, ctrl_path("nvme2"), C_IFACE, "State") == "programmed", 10, "nvme2 programmed")
              is not None, "nvme2 programmed, readable on the bus")
        done = get(addr, ROOT, M_IFACE, "EventSources")
        print(f"EventSources: {sources} with nvme0 and nvme1; with nvme2 too {pending} while its retry is pending, "
              f"{done} once it is programmed")
        check(pending == sources + 2, "EventSources: nvme2's pm_qos watch and its retry timer")
        check(done == sources + 1, "EventSources: the retry timer gone once the retry did its work")
        n = len(sig.got)
        ctl("remove", "nvme2")
        r = sig.wait(lambda x: x[2] == "InterfacesRemoved" and x[3][0] == ctrl_path("nvme2"), n,
                     what="InterfacesRemoved nvme2")
        check(r is not None and C_IFACE in r[3][1], "InterfacesRemoved after the removal")
        check(get(addr, ROOT, M_IFACE, "Controllers") == [ctrl_path("nvme0"), ctrl_path("nvme1")],
              "Controllers back to two")
        check(get(addr, ROOT, M_IFACE, "EventSources") == sources, "EventSources: nvme2's went with it")

        # a measured wake-up time carried in the configuration: the running daemon's status says so, as plan does
        n = len(sig.got)
        write_config("[apst]\npolicy = budget\n\n[device wdc]\nmatch_model = WDC*\npolicy = kernel\n\n"
                     "[device samsung]\nmatch_model = Samsung*\nexit_latency_us = ps4:32ms\n", CONF)
        d.signal(signal.SIGHUP)
        s3 = sig.wait(changed(ctrl_path("nvme0"), "ExitLatencies"), n, what="nvme0 ExitLatencies changed")
        check(s3 is not None and s3[3][1]["ExitLatencies"] == [(4, 8000, 32000, "configuration")],
              "PropertiesChanged after the reload: ps4 advertised 8000 µs, planned 32000 µs from the configuration")
        check(get(addr, ctrl_path("nvme0"), C_IFACE, "ExitLatencies") == [[4, 8000, 32000, "configuration"]],
              "ExitLatencies reads the same")
        check(get(addr, ctrl_path("nvme1"), C_IFACE, "ExitLatencies") == [], "nvme1 (no exit_latency_us): empty")
        s = run("status", env=status_env(addr))
        check(s.returncode == 0 and re.search(r"^ +Wake-up: ps4: 32000 µs from configuration: planned with it "
                                              r"\(advertised 8000 µs\)$", s.stdout, re.M) and
              s.stdout.count("from configuration") == 1, "status: ps4's exit latency from the configuration")
        sj = run("status", "--json", env=status_env(addr))
        j = json.loads(sj.stdout) if sj.returncode == 0 else {}
        jc = {c["name"]: c for c in j.get("controllers", [])}
        check(jc.get("nvme0", {}).get("exit_latencies") ==
              [{"ps": 4, "exlat_us": 8000, "planned_exlat_us": 32000, "source": "configuration",
                "from_configuration": True}] and jc.get("nvme1", {}).get("exit_latencies") == [],
              "status --json: nvme0's ps4 from_configuration, nvme1 none")

        check(d.stop() == 0, "daemon exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

    # no daemon: say so, show the plan
    s = run("status", "--config", CONF, env=status_env(addr))
    check(s.returncode == 3 and "nvme-apstd is not running" in s.stdout and "io.github.nvme_apstd is not on" in s.stdout,
          "status without the daemon: exit 3, says so")
    check(re.search(r"^nvme0: Samsung SSD 970 EVO Plus 2TB", s.stdout, re.M), "... and shows the plan")
    sj = run("status", "--json", "--config", CONF, env=status_env(addr))
    try:
        j = json.loads(sj.stdout)
    except ValueError as e:
        j = {}
        print(f"not JSON: {e}")
    check(sj.returncode == 3 and j.get("running") is False and len(j.get("plan", {}).get("controllers", [])) == 2,
          "status --json without the daemon: running false, the plan nested")
    s = run("status", env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"})
    check(s.returncode == 3 and "no system bus" in s.stdout, "status without any bus: exit 3, the plan")
    bus.terminate()
    bus.wait()


def scenario_open_bus():
    bus, addr, conn = start_bus(policy=False)
    d = Daemon(CONF, extra_env={"DBUS_SYSTEM_BUS_ADDRESS": addr})
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        admin = len(read_log("nvme0"))
        p = busctl(addr, "set-property", NAME, ctrl_path("nvme0"), C_IFACE, "Policy", "s", "kernel")
        print(f"$ busctl set-property ... -> rc={p.returncode} {p.stderr.strip()}")
        check(p.returncode != 0 and "not writable" in p.stderr, "the daemon refuses Set: the property is not writable")
        p = busctl(addr, "set-property", NAME, ROOT, M_IFACE, "ActiveProfile", "s", "performance")
        check(p.returncode != 0, "Set on the manager refused too")
        for path, iface in ((ROOT, M_IFACE), (ctrl_path("nvme0"), C_IFACE)):
            p = busctl(addr, "call", NAME, path, iface, "Reload")
            check(p.returncode != 0 and "nknown method" in p.stderr, f"{iface}: no method to call ({p.stderr.strip()})")
        check(get(addr, ctrl_path("nvme0"), C_IFACE, "Policy") == "budget" and
              get(addr, ROOT, M_IFACE, "ActiveProfile") == "", "nothing changed")
        time.sleep(0.2)
        check(len(read_log("nvme0")) == admin, "no admin command because of a bus call")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
        bus.terminate()
        bus.wait()


def scenario_adaptive_state():
    # policy = adaptive: once the policy has learned and written a table other than the initial plan,
    # State must still say `programmed` and RawTable must be what the drive holds (the soak found
    # `pending` there: the state compared the written table with the initial plan only).
    bus, addr, conn = start_bus(False)
    write_config("[apst]\npolicy = adaptive\n", CONF)
    initial = plan_table(CONF, SAMSUNG, "144d:a808")
    d = Daemon(CONF, extra_env={"DBUS_SYSTEM_BUS_ADDRESS": addr})
    path = ctrl_path("nvme0")
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(get(addr, path, C_IFACE, "State") == "programmed", "initial adaptive table: programmed")
        ios = ticks = 0
        end = time.monotonic() + 15
        while time.monotonic() < end and read_table("nvme0") == initial:
            ios += 1
            ticks += 2
            ctl("stat", "nvme0", "nvme0n1", f"0 0 0 0 {ios} 0 {ios * 8} {ticks} 0 {ticks} {ticks}")
            time.sleep(0.3)
        learned = read_table("nvme0")
        check(learned != initial, "the I/O made the adaptive policy write a learned table")
        time.sleep(0.5)
        check(get(addr, path, C_IFACE, "State") == "programmed", "a learned table written and verified: programmed")
        raw = get(addr, path, C_IFACE, "RawTable")
        check(raw == learned[1], "RawTable is the learned table the drive holds")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
        bus.terminate()
        bus.wait()


if scenario == "api":
    scenario_api()
elif scenario == "open-bus":
    scenario_open_bus()
elif scenario == "adaptive-state":
    scenario_adaptive_state()
else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)
done()
