#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon follows the power situation: the power source from the fake
sysfs's /sys/class/power_supply (uevents sent by the harness), and
power-profiles-daemon's ActiveProfile on a private bus (python3-dbusmock).
Each switch must write exactly the controllers whose table changes, to the
table `plan` computes for the configuration as it reads in that situation,
and log one entry; flapping must cost a bounded number of admin commands.
Run as the harness's COMMAND: test-power.py SCENARIO.
Covers: src/daemon/manager-power.c, src/platform/power.c, src/core/situation.c,
src/core/config-resolve.c."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from apstd_test import *  # noqa: F401,F403

require_harness()
scenario = sys.argv[1]
SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
WDC = os.path.join(DATA, "idctrl", "14-wdc-wds500g2b0c-00pxh0.bin")
SWITCH = r"Power situation changed: "
MSGID = "93c7dab8c2d3413e9a10ff89687cac85"

# One file for every situation: on AC a tight budget; on battery the Samsung
# may sleep deeper; the power-saver profile lets every drive sleep deeper; the
# performance profile keeps the Samsung awake.
CONF_TEXT = """[apst]
policy = budget
max_latency_us = 5000

[apst profile=power-saver]
max_latency_us = 100000

[device samsung]
match_model = Samsung*

[device samsung on-battery]
max_latency_us = 100000

[device samsung profile=performance]
max_latency_us = 0
"""

# The same situations written as plain files, for `plan` (which knows no situation): the expected tables.
PLAIN = {
    "ac": "[apst]\npolicy = budget\nmax_latency_us = 5000\n",
    "battery": "[apst]\npolicy = budget\nmax_latency_us = 5000\n"
               "[device samsung]\nmatch_model = Samsung*\nmax_latency_us = 100000\n",
    "power-saver": "[apst]\npolicy = budget\nmax_latency_us = 100000\n",
    "performance": "[apst]\npolicy = budget\nmax_latency_us = 5000\n"
                   "[device samsung]\nmatch_model = Samsung*\nmax_latency_us = 0\n",
}


def want(situation):
    path = write_config(PLAIN[situation])
    try:
        return plan_table(path, SAMSUNG, "144d:a808"), plan_table(path, WDC, "15b7:5009")
    finally:
        os.unlink(path)


def tables():
    return read_table("nvme0"), read_table("nvme1")


def sets():
    return count_cmds("nvme0", SET), count_cmds("nvme1", SET)


def admin():
    return len(read_log("nvme0")) + len(read_log("nvme1"))


def switches(d):
    # drain the notifications: a test that stops reading its NOTIFY_SOCKET blocks the daemon in
    # sd_notify() once the datagram queue is full (net.unix.max_dgram_qlen, 10 here), as it would
    # block under a systemd that stopped reading
    d.poll_notify(0)
    return [line for line in d.log().splitlines() if SWITCH in line]


def wait_switches(d, n, timeout=10):
    return wait_for(lambda: len(switches(d)) >= n, timeout, f"{n} situation switch(es)") is not None


def settle(d, seconds=0.6):
    """Let a pending switch (250 ms) happen, then make sure nothing else is due."""
    time.sleep(seconds)


CONF = write_config(CONF_TEXT)
W = {k: want(k) for k in PLAIN}
assert W["ac"][0] != W["battery"][0] and W["ac"][1] == W["battery"][1], "test premise: battery changes nvme0 only"
assert W["battery"][0] == W["power-saver"][0] and W["battery"][1] != W["power-saver"][1], \
    "test premise: power-saver on battery changes nvme1 only"
assert W["performance"][0] != W["power-saver"][0], "test premise: performance changes nvme0"


if scenario == "power-supply":
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(tables() == W["ac"], "on AC at start (Mains online, battery charging): the AC tables")
        check(not switches(d), "no switch at start")

        s0 = sets()
        ctl("supply", "AC", "online=0")
        ctl("supply", "BAT0", "status=Discharging")
        check(wait_switches(d, 1), "unplugged: one switch logged")
        settle(d)
        sw = switches(d)
        check(len(sw) == 1, f"exactly one entry for the two uevents of one unplug (got {len(sw)})")
        check(sw and "Power situation changed: on battery; 1 controller table changed." in sw[0],
              "the entry says what changed and why, and how many tables")
        check(sw and f"MESSAGE_ID={MSGID}" in sw[0] and "POWER_SOURCE=battery" in sw[0] and
              "SITUATION_REASON=on battery" in sw[0] and "APST_TABLES_CHANGED=1" in sw[0],
              "structured fields: MESSAGE_ID, POWER_SOURCE, SITUATION_REASON, APST_TABLES_CHANGED")
        check(tables() == W["battery"], "on battery: the tables `plan` computes for the battery sections")
        check(sets() == (s0[0] + 1, s0[1]), "only nvme0 (whose table changed) was written")
        check(re.search(r"nvme0: wrote and verified the APST table.*APST_REASON=on battery", d.log()) is not None,
              "the write names its reason")

        # a battery level change is a uevent too: no switch, no command
        n0 = admin()
        ctl("supply", "BAT0", "capacity=79")
        settle(d)
        check(len(switches(d)) == 1 and admin() == n0, "battery level change: nothing happens")

        s1 = sets()
        ctl("supply", "BAT0", "status=Charging")
        ctl("supply", "AC", "online=1")
        check(wait_switches(d, 2), "plugged in: a second switch")
        settle(d)
        check("Power situation changed: on AC; 1 controller table changed." in switches(d)[-1],
              "back on AC logged")
        check(tables() == W["ac"] and sets() == (s1[0] + 1, s1[1]), "the AC tables again, nvme0 only")

        # flapping: a bad contact toggles the charger 30 times as fast as the harness can
        n_sw, s2, n_admin = len(switches(d)), sets(), admin()
        t0 = time.monotonic()
        for i in range(30):
            ctl("supply", "AC", f"online={i % 2}")   # ends with online=1... then one more
            d.poll_notify(0)
        ctl("supply", "AC", "online=0")
        burst = time.monotonic() - t0
        settle(d, 0.8)
        windows = int(burst / 0.25) + 2
        extra_sw = len(switches(d)) - n_sw
        extra_sets = sets()[0] - s2[0]
        print(f"flapping: 31 uevents in {burst:.2f}s -> {extra_sw} switches, {extra_sets} Set Features on nvme0, "
              f"{admin() - n_admin} admin commands in all")
        check(extra_sw <= windows, f"flapping: at most one switch per 250 ms ({extra_sw} <= {windows})")
        check(extra_sets <= windows and sets()[1] == s2[1], "flapping: bounded writes to nvme0, none to nvme1")
        # each write is remember (Get), Set, verify (Get): three commands, and nothing else is sent
        check(admin() - n_admin <= 3 * extra_sets <= 3 * windows,
              f"flapping: bounded admin commands ({admin() - n_admin} <= 3 x {extra_sets} writes <= 3 x {windows})")
        check(tables() == W["battery"], "after the flapping stops: on battery, the battery tables")
        check(plan_table(CONF, SAMSUNG, "144d:a808") == W["battery"][0],
              "`plan` resolves the file for the power source now: the battery table")
        check(d.stop() == 0, "exit 0")
        check(tables() == (read_table("nvme0"), read_table("nvme1")), "stopped")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "desktop":
    # No power_supply class at all (a desktop or a VM): AC, and no uevent ever.
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(tables() == W["ac"], "no power supply at all: the AC tables")
        check("power_supply" not in d.log() or "Cannot" not in d.log(), "no complaint about the missing class")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "profiles":
    if subprocess.run(["/usr/bin/python3", "-c", "import dbusmock"], capture_output=True).returncode != 0:
        skip("python3-dbusmock not installed (tests/deps.sh test)")
    bus = PrivateBus()
    Gio, GLib, conn, addr = bus.Gio, bus.GLib, bus.conn, bus.addr
    benv = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=addr)
    benv.pop("LD_PRELOAD", None)   # the mocks need no testbed
    mocks = {}

    def has_owner(name):
        return bus.call_bus("NameHasOwner", "(s)", (name,))[0]

    OLD = ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles")
    NEW = ("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles")

    def start_ppd(which, profile):
        name, path = which
        if which == OLD:   # dbusmock's template is 0.12's API
            args = ["--template", "power_profiles_daemon", "-p", f'{{"ActiveProfile": "{profile}"}}']
        else:
            args = [name, path, name]
        mocks[name] = subprocess.Popen(["/usr/bin/python3", "-m", "dbusmock", "--system", *args], env=benv,
                                       stdout=subprocess.DEVNULL)
        check(wait_for(lambda: has_owner(name), 10, f"{name} on the bus") is not None, f"mock {name} is up")
        if which == NEW:
            conn.call_sync(name, path, "org.freedesktop.DBus.Mock", "AddProperty",
                           GLib.Variant("(ssv)", (name, "ActiveProfile", GLib.Variant("s", profile))), None,
                           Gio.DBusCallFlags.NONE, -1, None)
            # AddProperty emits nothing: announce it as power-profiles-daemon would on a change
            set_profile(which, profile)

    def set_profile(which, profile):
        name, path = which
        conn.call_sync(name, path, "org.freedesktop.DBus.Properties", "Set",
                       GLib.Variant("(ssv)", (name, "ActiveProfile", GLib.Variant("s", profile))), None,
                       Gio.DBusCallFlags.NONE, -1, None)

    def stop_ppd(which):
        p = mocks.pop(which[0])
        p.terminate()
        p.wait()

    def event_sources():
        """Manager1.EventSources: the event sources the daemon's own code holds."""
        return bus.get_property("io.github.nvme_apstd", "/io/github/nvme_apstd", "io.github.nvme_apstd.Manager1",
                                "EventSources")

    d = None
    try:
        # power-profiles-daemon absent at start: profile sections never active
        d = Daemon(CONF, extra_env={"DBUS_SYSTEM_BUS_ADDRESS": addr})
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check("System bus unavailable" not in d.log(), "the daemon is on the bus")
        check(tables() == W["ac"], "no power-profiles-daemon: the AC tables")
        sources0 = event_sources()

        # AC -> battery -> power-saver, the sequence a laptop user sees
        s0 = sets()
        ctl("supply", "AC", "online=0")
        check(wait_switches(d, 1), "unplugged: a switch")
        settle(d)
        check(tables() == W["battery"] and sets() == (s0[0] + 1, s0[1]), "on battery: nvme0 only")
        sources1 = event_sources()
        print(f"EventSources: {sources0} at start, {sources1} after the first switch")
        check(sources1 == sources0, "the switch's one-shot timer is freed once it fired (EventSources as at start)")

        start_ppd(OLD, "balanced")
        check(wait_switches(d, 2), "power-profiles-daemon (net.hadess, 0.12) appears: a switch")
        settle(d)
        check("Power situation changed: balanced profile (now on battery, balanced profile); 0 controller tables "
              "changed." in switches(d)[-1], "balanced has no section: logged, nothing written")
        check(sets() == (s0[0] + 1, s0[1]), "balanced: no write")

        set_profile(OLD, "power-saver")
        check(wait_switches(d, 3), "power-saver chosen: a switch")
        settle(d)
        last = switches(d)[-1]
        check("Power situation changed: power-saver profile (now on battery, power-saver profile); 1 controller "
              "table changed." in last, "power-saver logged: one table changed (nvme0 keeps its battery latency)")
        check("POWER_PROFILE=power-saver" in last, "POWER_PROFILE field")
        check(tables() == W["power-saver"] and sets() == (s0[0] + 1, s0[1] + 1),
              "power-saver: the power-saver tables, only nvme1 written")
        p = run("plan", "--json", "--config", CONF, "--id-ctrl", WDC, "--pci-id", "15b7:5009",
                env={"DBUS_SYSTEM_BUS_ADDRESS": addr})
        got = json.loads(p.stdout)["controllers"][0] if p.returncode == 0 else None
        check(got and [int(x, 16) for x in got["table"]] == W["power-saver"][1][1],
              "`plan` asks power-profiles-daemon too: the power-saver table")
        print("---- journal lines of AC -> battery -> power-saver ----")
        for line in switches(d):
            print(line)

        # the newer name appears (power-profiles-daemon >= 0.20 owns both): it is preferred
        start_ppd(NEW, "performance")
        check(wait_switches(d, 4), "org.freedesktop.UPower.PowerProfiles appears: a switch")
        settle(d)
        check("performance profile" in switches(d)[-1] and tables() == W["performance"],
              "the newer name is preferred: performance tables")

        # it vanishes: back to the older name's profile; then that vanishes too
        stop_ppd(NEW)
        check(wait_switches(d, 5), "newer name gone: a switch")
        settle(d)
        check("power-saver profile" in switches(d)[-1] and tables() == W["power-saver"],
              "falls back to net.hadess's power-saver")

        # flapping: the profile toggled 20 times as fast as the bus carries it
        n_sw, s1, n_admin = len(switches(d)), sets(), admin()
        t0 = time.monotonic()
        for i in range(20):
            set_profile(OLD, "balanced" if i % 2 == 0 else "power-saver")
            d.poll_notify(0)
        set_profile(OLD, "balanced")
        burst = time.monotonic() - t0
        settle(d, 0.8)
        windows = int(burst / 0.25) + 2
        extra_sw = len(switches(d)) - n_sw
        extra_sets = (sets()[0] - s1[0]) + (sets()[1] - s1[1])
        print(f"profile flapping: 21 changes in {burst:.2f}s -> {extra_sw} switches, {extra_sets} Set Features, "
              f"{admin() - n_admin} admin commands in all")
        check(extra_sw <= windows, f"flapping: at most one switch per 250 ms ({extra_sw} <= {windows})")
        check(extra_sets <= 2 * windows, "flapping: bounded writes")
        check(tables() == W["battery"], "flapping ends on balanced: the battery tables")
        check(event_sources() == sources0, "after 21 switches' worth of timers: EventSources as at start")

        # power-profiles-daemon restarts: new owner, same profile -> nothing to do
        n_sw, n_admin = len(switches(d)), admin()
        stop_ppd(OLD)
        start_ppd(OLD, "balanced")
        settle(d, 0.8)
        check(tables() == W["battery"], "after a restart with the same profile: the same tables")
        check(admin() - n_admin <= 4, "a restart costs at most a switch away and back")
        stop_ppd(OLD)
        check(wait_for(lambda: "no power profile" in (switches(d) or [""])[-1], 5, "no profile") is not None,
              "power-profiles-daemon gone: logged as no power profile")
        check(d.stop() == 0, "exit 0")
    finally:
        if d and d.proc.poll() is None:
            d.stop()
        if d:
            d.dump()
        for p in mocks.values():
            p.terminate()
            p.wait()
        bus.close()
else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)

done()
