#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Latency holds (doc/dbus-api.md "Holds"): the daemon under the fake controller,
on a private dbus-daemon enforcing the system bus's default policy and the shipped
dbus/io.github.nvme_apstd.conf. Run as the harness's COMMAND: test-holds.py SCENARIO

  root    a root caller (no polkit asked): the table read back from the fake drive
          when HoldLatency returns and after the release; Holds, HeldBy,
          EffectiveMaxLatencyUSec and PropertiesChanged; a hold above the budget
          writes nothing and says so (HeldBy empty); every bad argument; the limits
          (16 on one connection, 256 in all); an unknown cookie; the holder killed
          with SIGKILL (released and the table back within 1 s); reload keeps the
          holds; [holds] enable = no on reload ends them with LatencyReleased and
          refuses new ones; the journal entries
  polkit  python-dbusmock's polkitd template on the bus, callers that are not root
          (setpriv): refused (nothing written), allowed, interactive authorization
          required, another connection's hold refused and root's release allowed;
          polkit hanging while another client reads properties (each answer within
          100 ms) and the watchdog keeps being fed, the call refused after the
          bounded wait; no polkit on the bus: only root
  adaptive  policy = adaptive: the hold caps it without starting it over, and
          its table comes back when the hold ends
  situation  a hold through AC -> battery -> AC, its cap recomputed with the
          configured budget of each situation
  failures  a Set Features that fails (WriteFailed) and one slower than
          [daemon] unresponsive_after_sec (ControllerUnresponsive), each naming the
          controller; the hold is not kept and the planned table stays or comes back
"""

import getpass
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import apstd_test  # noqa: E402
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
SETPRIV = shutil.which("setpriv")
if not DBUS_DAEMON or not SETPRIV:
    skip("dbus-daemon or setpriv not installed")
if os.geteuid() != 0:
    skip("needs root: the tests are root (allowed without polkit) and nobody (asked about) at once")

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "hold-client.py")
NAME = "io.github.nvme_apstd"
ROOT = "/io/github/nvme_apstd"
M_IFACE = "io.github.nvme_apstd.Manager1"
C_IFACE = "io.github.nvme_apstd.Controller1"
NVME0 = f"{ROOT}/controller/nvme0"
ACTION = "io.github.nvme_apstd.hold-latency"
PK_NAME, PK_PATH = "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority"
SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
CONF_TEXT = "[apst]\npolicy = budget\n"
CONF = write_config(CONF_TEXT)
OFF = (0, [0] * 32)   # the table a hold at 0 µs leads to: APSTE off


class Bus:
    """A private system bus: the default policy, the shipped policy file, and room for polkit."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="apstd-bus-")
        os.chmod(self.dir, 0o755)   # the unprivileged clients connect too
        # polkitd's own policy file lets it own its name and everyone call it
        self.proc, self.addr = start_system_bus(self.dir, f"""  <policy user="{getpass.getuser()}">
    <allow own="{PK_NAME}"/>
  </policy>
  <policy context="default">
    <allow send_destination="{PK_NAME}"/>
  </policy>
""")
        self.conn = self.connect()
        self.env = {"DBUS_SYSTEM_BUS_ADDRESS": self.addr}
        self.signals = []
        self.conn.signal_subscribe(NAME, None, None, None, None, Gio.DBusSignalFlags.NONE, self._on)
        # the client script where `nobody` can read it
        self.client = os.path.join(self.dir, "hold-client.py")
        shutil.copy(CLIENT, self.client)
        os.chmod(self.client, 0o755)

    def _on(self, conn, sender, path, iface, member, params, *user):
        self.signals.append((path, iface, member, params.unpack()))

    def pump(self, seconds=0.0):
        ctx = GLib.MainContext.default()
        end = time.monotonic() + seconds
        while True:
            while ctx.iteration(False):
                pass
            if time.monotonic() >= end:
                return
            time.sleep(0.01)

    def connect(self):
        return Gio.DBusConnection.new_for_address_sync(
            self.addr, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
            Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def call(conn, method, sig, args, dest=NAME, path=ROOT, iface=M_IFACE, timeout_ms=30000):
    """(result, None) or (None, (error name, message))."""
    try:
        v = conn.call_sync(dest, path, iface, method, GLib.Variant(sig, args) if sig else None, None,
                           Gio.DBusCallFlags.NONE, timeout_ms, None)
        return v.unpack(), None
    except GLib.Error as e:
        remote = Gio.DBusError.get_remote_error(e)
        Gio.DBusError.strip_remote_error(e)
        return None, (remote, e.message)


def hold(conn, ctrl, latency, reason="test", app="org.example.Test"):
    r, err = call(conn, "HoldLatency", "(stss)", (ctrl, latency, reason, app))
    return (r[0] if r else None), err


def prop(conn, path, iface, name):
    r, err = call(conn, "Get", "(ss)", (iface, name), path=path, iface="org.freedesktop.DBus.Properties")
    return r[0] if r else None


class Client:
    """hold-client.py in a process of its own (its own connection), as root or as nobody."""

    def __init__(self, bus, unprivileged=False):
        pre = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"] if unprivileged else []
        self.proc = subprocess.Popen([*pre, "/usr/bin/python3", bus.client], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env={**os.environ, **bus.env,
                                                                               "HOME": "/"})
        self.line()   # "ready"

    def line(self):
        return self.proc.stdout.readline().strip()

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def ask(self, text):
        self.send(text)
        return self.line()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(10)


def sets_since(n):
    """Set Features commands the drive saw after the first @n."""
    return sum(1 for d in read_log("nvme0")[n:] if d.get("opc") == SET)


def start(bus, conf=CONF, extra_env=None):
    d = Daemon(conf, extra_env={**bus.env, **(extra_env or {})})
    if not check(d.wait_notify(r"^READY=1$") is not None, "READY=1"):
        d.dump()
    return d


def finish(d, bus):
    """Stop the daemon (its exit status checked: a sanitizer build's report fails it), show its log
    when a check failed, close the bus."""
    rc = d.stop()
    check(rc == 0, f"nvme-apstd exits 0 at stop (a sanitizer report would not): {rc}")
    if apstd_test.failures:
        d.dump()
    bus.close()


def check_bad_arguments(conn):
    n = len(read_log("nvme0"))
    cases = [
        ("nvme0n1", 0, "test", "x", "InvalidArgs", "controller: not a controller name"),
        ("sda", 0, "test", "x", "InvalidArgs", "controller: not a controller name"),
        ("nvme9", 0, "test", "x", "InvalidArgs", "nvme9 is not a controller the daemon knows"),
        ("nvme0", 10000001, "test", "x", "InvalidArgs", "max_latency_usec: 10000001 us is above"),
        ("nvme0", 0, "a" * 256, "x", "InvalidArgs", "reason: is longer than 255 bytes"),
        ("nvme0", 0, "two\nlines", "x", "InvalidArgs", "reason: contains a control character"),
        ("nvme0", 0, "esc \x1b[2J", "x", "InvalidArgs", "reason: contains a control character"),
        ("nvme0", 0, "ok", "tab\there", "InvalidArgs", "application_id: contains a control character"),
        ("nvme0", 0, "ok", "b" * 256, "InvalidArgs", "application_id: is longer than 255 bytes"),
    ]
    for ctrl, lat, reason, app, want, text in cases:
        c, err = hold(conn, ctrl, lat, reason, app)
        check(c is None and err and err[0] == f"org.freedesktop.DBus.Error.{want}" and text in err[1],
              f"HoldLatency({ctrl!r}, {lat}, {reason[:12]!r}, {app[:12]!r}) refused: {err}")
    # 255 bytes of text, 2-byte characters included, are fine
    c, err = hold(conn, "nvme0", 200000, "é" * 127 + "a", "x")
    check(c is not None, f"a reason of 255 bytes is accepted ({err})")
    if c:
        call(conn, "ReleaseLatency", "(u)", (c,))
    check(sets_since(n) == 0, "no Set Features for any of them")
    r, err = call(conn, "ReleaseLatency", "(u)", (4242424,))
    check(err and err[0] == "io.github.nvme_apstd.Error.NoSuchHold", f"an unknown cookie: {err}")


def check_limits(bus):
    conns = [bus.connect() for _ in range(17)]
    cookies = []
    for i in range(16):
        c, err = hold(conns[0], "", 200000)
        cookies.append(c)
    check(all(cookies), "16 holds on one connection")
    c, err = hold(conns[0], "", 200000)
    check(err and err[0] == "org.freedesktop.DBus.Error.LimitsExceeded", f"the 17th on it: {err}")
    for k in range(1, 16):
        for i in range(16):
            c, err = hold(conns[k], "", 200000)
            if c is None:
                check(False, f"hold {k}/{i}: {err}")
    holds = prop(bus.conn, ROOT, M_IFACE, "Holds")
    check(len(holds) == 256, f"256 holds in all ({len(holds)})")
    c, err = hold(conns[16], "", 200000)
    check(err and err[0] == "org.freedesktop.DBus.Error.LimitsExceeded" and "256" in err[1],
          f"the 257th, from another connection: {err}")
    for cn in conns:
        cn.close_sync(None)
    check(wait_for(lambda: prop(bus.conn, ROOT, M_IFACE, "Holds") == [], 5, "holds gone with their connections")
          is not None, "closing the connections ended all 256")


def check_hotplug(bus, d):
    """A hold on every controller caps one plugged in meanwhile from its first table; a hold on a
    controller that goes away ends with LatencyReleased."""
    every, err = hold(bus.conn, "", 0)
    check(every is not None, f"a hold on every controller ({err})")
    ctl("add", f"nvme1,idctrl={SAMSUNG},pci=144d:a808")
    nvme1 = f"{ROOT}/controller/nvme1"
    check(wait_for(lambda: prop(bus.conn, nvme1, C_IFACE, "State") == "programmed", 10, "nvme1 programmed")
          is not None, "nvme1 plugged in and programmed")
    check(read_table("nvme1") == OFF and prop(bus.conn, nvme1, C_IFACE, "HeldBy") == [every],
          f"its first table already held off ({read_table('nvme1')})")
    own, err = hold(bus.conn, "nvme1", 0)
    check(own is not None, f"a hold on nvme1 ({err})")
    mark = len(bus.signals)
    ctl("remove", "nvme1")
    check(wait_for(lambda: any(s[2] == "LatencyReleased" and s[3] == (own, "controller-removed")
                                for s in (bus.pump(), bus.signals[mark:])[1]), 5, "LatencyReleased") is not None,
          f"nvme1 removed: LatencyReleased({own}, controller-removed)")
    holds = prop(bus.conn, ROOT, M_IFACE, "Holds")
    check([h[0] for h in holds] == [every], f"the hold on every controller stays ({holds})")
    check(read_table("nvme0") == OFF, "nvme0 still held")
    call(bus.conn, "ReleaseLatency", "(u)", (every,))


def scenario_root():
    bus = Bus()
    d = start(bus)
    try:
        planned = read_table("nvme0")
        check(planned[0] == 1, f"the budget table in force at start ({planned})")
        n = len(read_log("nvme0"))
        mark = len(bus.signals)

        c, err = hold(bus.conn, "nvme0", 0, "latency test", "org.example.Test")
        # read back at once: the reply comes only once the table is written and verified
        now = read_table("nvme0")
        check(c is not None and c != 0, f"HoldLatency(nvme0, 0) by root: cookie {c} ({err})")
        check(now == OFF, f"the drive holds APSTE off when the call returns ({now})")
        check(sets_since(n) == 1, "one Set Features")
        holds = prop(bus.conn, ROOT, M_IFACE, "Holds")
        check(len(holds) == 1 and holds[0][:6] == (c, "nvme0", 0, "org.example.Test", "latency test", 0)
              and holds[0][6] > 0 and abs(holds[0][7] / 1e6 - time.time()) < 30,
              f"Holds: {holds}")
        check(prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [c], "HeldBy lists it")
        check(prop(bus.conn, NVME0, C_IFACE, "EffectiveMaxLatencyUSec") == 0, "EffectiveMaxLatencyUSec 0")
        check(prop(bus.conn, NVME0, C_IFACE, "MaxLatencyUSec") == 100000, "MaxLatencyUSec stays the configured")
        check(prop(bus.conn, NVME0, C_IFACE, "LastChangeReason") == "hold", "LastChangeReason hold")
        bus.pump(0.3)
        check(any(s[0] == ROOT and s[2] == "PropertiesChanged" and "Holds" in s[3][2] + list(s[3][1])
                  for s in bus.signals[mark:]), "PropertiesChanged for Holds")
        check(d.wait_log(rf"Latency hold {c} taken by org.example.Test \(uid 0, pid \d+.*\) on nvme0: no wake-up "
                         r"slower than 0 us; reason: latency test", 5) is not None, "journal: the start")
        check("HOLD_APPLICATION_ID=org.example.Test" in d.log() and "MESSAGE_ID=27c6af4e" in d.log().replace("-", ""),
              "journal: fields and MESSAGE_ID")

        # a hold above the budget: nothing written, and it sets nothing
        n = len(read_log("nvme0"))
        c2, err = hold(bus.conn, "nvme0", 200000)
        check(c2 is not None and sets_since(n) == 0, f"a hold above the budget writes nothing ({err})")
        check(d.wait_log(rf"Latency hold {c2} taken .* \(no effect: not below the configured budget of any "
                         r"controller it names\).*HOLD_EFFECT=none", 5) is not None,
              "the journal says it has no effect")
        check(prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [c], "it is not in HeldBy: no effect")
        call(bus.conn, "ReleaseLatency", "(u)", (c2,))

        t0 = time.monotonic()
        r, err = call(bus.conn, "ReleaseLatency", "(u)", (c,))
        check(err is None, f"ReleaseLatency ({err})")
        back = wait_for(lambda: read_table("nvme0") == planned, 1.0, "the planned table back")
        check(back is not None, f"the planned table back within 1 s ({time.monotonic() - t0:.3f} s)")
        check(prop(bus.conn, ROOT, M_IFACE, "Holds") == [], "Holds empty")
        check(prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [], "HeldBy empty")
        check(d.wait_log(rf"Latency hold {c} of org.example.Test .* ended after [0-9.]+ s: released", 5)
              is not None, "journal: the end, with its duration")
        n = len(read_log("nvme0"))
        c3, err = hold(bus.conn, "", 200000)
        check(c3 is not None and sets_since(n) == 0 and prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [],
              "a hold on every controller above the budget: nothing written, HeldBy empty")
        call(bus.conn, "ReleaseLatency", "(u)", (c3,))

        check_bad_arguments(bus.conn)
        check_limits(bus)

        # the holder killed: released, the table back within 1 s
        cl = Client(bus)
        got = cl.ask("hold nvme0 0")
        check(got.startswith("cookie ") and read_table("nvme0") == OFF, f"a client's hold in force ({got})")
        t0 = time.monotonic()
        cl.proc.kill()
        back = wait_for(lambda: read_table("nvme0") == planned, 1.0, "the planned table back")
        check(back is not None, f"SIGKILL of the holder: the table back within 1 s ({time.monotonic() - t0:.3f} s)")
        check(wait_for(lambda: prop(bus.conn, ROOT, M_IFACE, "Holds") == [], 1.0, "no hold") is not None,
              "and its hold gone")
        check(d.wait_log(r"ended after [0-9.]+ s: its connection closed", 5) is not None, "journal: connection closed")

        # reload keeps the holds
        c, err = hold(bus.conn, "nvme0", 0)
        before = prop(bus.conn, ROOT, M_IFACE, "Holds")
        i = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", start=i + 1) is not None, "reload done")
        check(prop(bus.conn, ROOT, M_IFACE, "Holds") == before and read_table("nvme0") == OFF,
              "reload keeps the hold and its table")

        # [holds] enable = no on reload: LatencyReleased, table back, new holds refused
        mark = len(bus.signals)
        write_config(CONF_TEXT + "[holds]\nenable = no\n", CONF)
        i = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", start=i + 1) is not None, "reload to enable = no done")
        bus.pump(0.3)
        check(any(s[2] == "LatencyReleased" and s[3] == (c, "holds-disabled") for s in bus.signals[mark:]),
              f"LatencyReleased({c}, holds-disabled)")
        check(read_table("nvme0") == planned and prop(bus.conn, ROOT, M_IFACE, "Holds") == [],
              "the hold ended and the planned table is back")
        c, err = hold(bus.conn, "nvme0", 0)
        check(err and err[0] == "io.github.nvme_apstd.Error.HoldsDisabled", f"HoldLatency refused: {err}")
        write_config(CONF_TEXT, CONF)
        i = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", start=i + 1) is not None, "reload to enable = yes done")
        check_hotplug(bus, d)
    finally:
        finish(d, bus)


class Polkit:
    """python-dbusmock's polkitd template on the private bus."""

    def __init__(self, bus):
        self.bus = bus
        self.proc = subprocess.Popen(["/usr/bin/python3", "-m", "dbusmock", "--system", "--template", "polkitd"],
                                     env={**os.environ, **bus.env}, stdout=subprocess.DEVNULL)
        def owned():
            return bus.conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                      "NameHasOwner", GLib.Variant("(s)", (PK_NAME,)), None, Gio.DBusCallFlags.NONE,
                                      -1, None).unpack()[0]
        ok = wait_for(owned, 15, "the polkitd mock on the bus")
        if not ok:
            skip("python3-dbusmock's polkitd template did not start")

    def mock(self, method, sig=None, args=None):
        r, err = call(self.bus.conn, method, sig, args, dest=PK_NAME, path=PK_PATH, iface="org.freedesktop.DBus.Mock")
        if err:
            raise RuntimeError(f"polkit mock {method}: {err}")
        return r

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class NotifyReader(threading.Thread):
    """Reads the daemon's notifications while the test waits elsewhere: with the watchdog on, a
    socket left unread fills and sd_notify() blocks the daemon (as the service manager never does)."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d = d
        self.stopping = False
        self.start()

    def run(self):
        while not self.stopping:
            self.d.poll_notify(0.05)

    def stop(self):
        self.stopping = True
        self.join()


def scenario_polkit():
    bus = Bus()
    pk = Polkit(bus)
    d = start(bus, extra_env={"WATCHDOG_USEC": "1000000"})
    reader = NotifyReader(d)
    try:
        planned = read_table("nvme0")
        user = Client(bus, unprivileged=True)
        other = Client(bus, unprivileged=True)

        # refused: nothing written
        n = len(read_log("nvme0"))
        got = user.ask("hold nvme0 0")
        check(got.startswith("error org.freedesktop.DBus.Error.AccessDenied") and ACTION in got,
              f"nobody without the action: {got}")
        check(sets_since(n) == 0 and read_table("nvme0") == planned, "nothing written")

        # allowed
        pk.mock("SetAllowed", "(as)", ([ACTION],))
        got = user.ask("hold nvme0 0")
        check(got.startswith("cookie ") and read_table("nvme0") == OFF, f"nobody with the action: {got}")
        cookie = int(got.split()[1]) if got.startswith("cookie ") else 0
        holds = prop(bus.conn, ROOT, M_IFACE, "Holds")
        check(holds and holds[0][5] == 65534, f"the hold's uid is nobody's ({holds})")
        got = other.ask(f"release {cookie}")
        check(got.startswith("error org.freedesktop.DBus.Error.AccessDenied"),
              f"another connection may not release it: {got}")
        check(read_table("nvme0") == OFF, "the hold stays")
        r, err = call(bus.conn, "ReleaseLatency", "(u)", (cookie,))
        check(err is None and wait_for(lambda: read_table("nvme0") == planned, 1.0, "table back"),
              f"root may release it ({err})")

        # polkit hangs: the loop serves others within 100 ms, the watchdog keeps being fed
        pk.mock("SimulateHang", "(b)", (True,))
        i = len(d.notifications)
        t0 = time.monotonic()
        user.send("hold nvme0 0")
        worst = 0.0
        while time.monotonic() - t0 < 3.0:
            s = time.monotonic()
            v = prop(bus.conn, NVME0, C_IFACE, "Table")
            worst = max(worst, time.monotonic() - s)
            if v is None:
                worst = 99
            time.sleep(0.05)
        check(worst < 0.1, f"properties answered within 100 ms while polkit hangs (worst {worst * 1000:.1f} ms)")
        pings = [k for k in d.notifications[i:] if "WATCHDOG=1" in k]
        check(len(pings) >= 5, f"the watchdog fed while polkit hangs ({len(pings)} pings in 3 s, every <= 0.45 s)")
        got = user.line()
        took = time.monotonic() - t0
        check(got.startswith("error org.freedesktop.DBus.Error.AccessDenied") and "did not answer" in got and
              18 <= took <= 23, f"refused after the bounded wait ({took:.1f} s): {got}")
        check(read_table("nvme0") == planned, "nothing written")
        pk.mock("SimulateHang", "(b)", (False,))
        pk.mock("ReleaseHangingCalls")

        # polkit would ask the user: refused with InteractiveAuthorizationRequired unless allowed
        pk.mock("SetAllowed", "(as)", ([],))
        pk.mock("AddMethod", "(sssss)", ("org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                                          "(sa{sv})sa{ss}us", "(bba{ss})", "ret = (False, True, {})"))
        got = user.ask("hold nvme0 0")
        check(got.startswith("error org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"),
              f"a challenge without interaction allowed: {got}")
        got = user.ask("hold nvme0 0 interactive")
        check(got.startswith("error org.freedesktop.DBus.Error.AccessDenied"),
              f"a challenge with interaction allowed, still not authorised: {got}")
        pk.mock("AddMethod", "(sssss)", ("org.freedesktop.PolicyKit1.Authority", "CheckAuthorization",
                                          "(sa{sv})sa{ss}us", "(bba{ss})", "ret = (False, False, {})"))

        # no polkit on the bus: only root
        pk.stop()
        got = user.ask("hold nvme0 0")
        check(got.startswith("error org.freedesktop.DBus.Error.AccessDenied") and "polkit is not running" in got,
              f"no polkit, nobody refused: {got}")
        c, err = hold(bus.conn, "nvme0", 0)
        check(c is not None, f"no polkit, root allowed ({err})")
        user.close()
        other.close()
    finally:
        reader.stop()
        finish(d, bus)


def scenario_failures():
    """A write that fails and a drive that does not answer in time: the caller gets an error naming
    the controller, the hold is not kept, and the planned table stays or comes back."""
    bus = Bus()
    conf = write_config(CONF_TEXT + "[daemon]\nunresponsive_after_sec = 1\n")
    d = start(bus, conf)
    try:
        planned = read_table("nvme0")
        ctl("fault", "nvme0", "set-apst=EIO:once")
        c, err = hold(bus.conn, "nvme0", 0)
        check(c is None and err and err[0] == "io.github.nvme_apstd.Error.WriteFailed" and "nvme0" in err[1],
              f"a failed write: {err}")
        check(prop(bus.conn, ROOT, M_IFACE, "Holds") == [], "the hold is not kept")
        check(wait_for(lambda: read_table("nvme0") == planned, 5, "planned table") is not None,
              "the planned table stays")

        ctl("fault", "nvme0", "set-apst=delay=3000:once")
        t0 = time.monotonic()
        c, err = hold(bus.conn, "nvme0", 0)
        took = time.monotonic() - t0
        check(c is None and err and err[0] == "io.github.nvme_apstd.Error.ControllerUnresponsive" and
              "nvme0: the held table was not in force within 1 s" in err[1] and 0.9 <= took <= 2.5,
              f"a drive slower than unresponsive_after_sec: refused after {took:.2f} s: {err}")
        check(prop(bus.conn, ROOT, M_IFACE, "Holds") == [], "the hold is not kept")
        c, err = hold(bus.conn, "nvme0", 0)
        check(c is None and err and err[0] == "io.github.nvme_apstd.Error.ControllerUnresponsive" and
              "does not answer" in err[1], f"while the command is outstanding, refused at once: {err}")
        time.sleep(max(0.0, 3.2 - (time.monotonic() - t0)))   # the delayed Set Features (APSTE off) lands
        check(wait_for(lambda: read_table("nvme0") == planned and
                       prop(bus.conn, NVME0, C_IFACE, "State") == "programmed", 10, "planned table") is not None,
              "once the delayed command is done, the planned table is written back")
        c, err = hold(bus.conn, "nvme0", 0)
        check(c is not None and read_table("nvme0") == OFF, f"a hold works again afterwards ({err})")
    finally:
        finish(d, bus)


def scenario_adaptive():
    """policy = adaptive: a hold caps the policy without restarting it; its table comes back after."""
    bus = Bus()
    conf = write_config("[apst]\npolicy = adaptive\n[watch]\nsource = stat\n")
    d = start(bus, conf, extra_env={"NVME_APSTD_LOG_LEVEL": "debug"})
    try:
        before = read_table("nvme0")
        started = d.log().count("adaptive policy started")
        check(before[0] == 1 and started >= 1, f"the adaptive policy runs, its table in force ({before})")
        c, err = hold(bus.conn, "nvme0", 0)
        check(c is not None and read_table("nvme0") == OFF, f"held at 0 under the adaptive policy ({err})")
        time.sleep(1.5)   # the watcher's readings go on meanwhile
        check(read_table("nvme0") == OFF, "the policy's choices do not lift the hold")
        check("refusing a table" not in d.log(), "no choice above the held budget is sent to the engine")
        r, err = call(bus.conn, "ReleaseLatency", "(u)", (c,))
        check(wait_for(lambda: read_table("nvme0") == before, 1.0, "the policy's table back") is not None,
              f"released: the policy's table is back within 1 s ({err})")
        check(d.log().count("adaptive policy started") == started, "the policy was not started over by the hold")
    finally:
        finish(d, bus)


def scenario_situation():
    """A hold lives through power-situation changes, recomputed with them: below the AC budget it sets
    it; on battery, where the configuration asks for less, the configuration does; back on AC, it again."""
    bus = Bus()
    conf = write_config(CONF_TEXT + "max_latency_us = 100000\n[apst on-battery]\nmax_latency_us = 1000\n")
    ac = plan_table(write_config(CONF_TEXT + "max_latency_us = 100000\n"), SAMSUNG, "144d:a808")
    held = plan_table(write_config(CONF_TEXT + "max_latency_us = 5000\n"), SAMSUNG, "144d:a808")
    battery = plan_table(write_config(CONF_TEXT + "max_latency_us = 1000\n"), SAMSUNG, "144d:a808")
    check(len({str(ac), str(held), str(battery)}) == 3, f"the three budgets give three tables ({ac} {held} {battery})")
    d = start(bus, conf)
    try:
        check(read_table("nvme0") == ac, "on AC the configured table")
        c, err = hold(bus.conn, "nvme0", 5000)
        check(c is not None and read_table("nvme0") == held, f"on AC the hold sets the budget ({err})")
        check(prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [c], "HeldBy on AC")
        ctl("supply", "AC", "online=0")
        ctl("supply", "BAT0", "status=Discharging")
        check(d.wait_log(r"Power situation changed: on battery", 10) is not None, "on battery")
        check(wait_for(lambda: read_table("nvme0") == battery, 5, "battery table") is not None,
              "on battery the configuration's lower budget is in force")
        check(prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [] and
              prop(bus.conn, NVME0, C_IFACE, "EffectiveMaxLatencyUSec") == 1000 and
              prop(bus.conn, NVME0, C_IFACE, "MaxLatencyUSec") == 1000, "the hold sets nothing on battery")
        check([h[0] for h in prop(bus.conn, ROOT, M_IFACE, "Holds")] == [c], "the hold lives on")
        ctl("supply", "BAT0", "status=Charging")
        ctl("supply", "AC", "online=1")
        check(d.wait_log(r"Power situation changed: on AC", 10) is not None, "back on AC")
        check(wait_for(lambda: read_table("nvme0") == held, 5, "held table") is not None and
              prop(bus.conn, NVME0, C_IFACE, "HeldBy") == [c], "back on AC the hold sets the budget again")
    finally:
        finish(d, bus)


{"root": scenario_root, "polkit": scenario_polkit, "failures": scenario_failures,
 "adaptive": scenario_adaptive, "situation": scenario_situation}[scenario]()
done()
