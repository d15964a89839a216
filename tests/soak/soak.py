#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The soak: a seeded storm of everything a laptop does to nvme-apstd at once, on the fake
controller harness (tests/fake), with invariants checked after every quiet period and at the end.

  soak.py [--seed N]... [--random K] [--events E] [--out DIR]    one harness run per seed
  soak.py --replay FILE [--out DIR]                              the events of a failed run, again

The outer invocation starts `umockdev-wrapper fake-nvme-tb ... -- soak.py --inner ...` per seed
($UMOCKDEV_WRAPPER, $FAKE_TB); the inner one is the harness's COMMAND. Each run writes its event
log (JSON lines, first line the run's parameters) to DIR/soak-SEED.events; a failing run prints the
violations, the seed and that file, which `--replay` runs again event for event. The storm is a
function of the seed alone (never of what the daemon answered), so --seed N reproduces it too.
What is checked is listed in doc/testing.md ("The soak").
Covers: the daemon as a whole: src/daemon/*.c, src/engine/*.c and what they call."""

import argparse
import concurrent.futures
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import apstd_test as T  # noqa: E402

IDDIR = os.path.join(os.environ.get("TEST_DATA_DIR", os.path.join(HERE, "..", "data")), "idctrl")
SAMSUNG = ("05-samsung-ssd-970-evo-plus-2tb.bin", "144d:a808")
WDC = ("14-wdc-wds500g2b0c-00pxh0.bin", "15b7:5009")
INTEL = ("00-intel-ssdpekkw256g7.bin", "8086:f1a5")   # the liar: wakes cost 3x its exit latency
HOTPLUG = [("08-kingston-sa2000m81000g.bin", "2646:2263"), ("10-samsung-980-pro-with-heatsink-1tb.bin", "144d:a80a"),
           SAMSUNG, WDC, ("28-amazon-elastic-block-store.bin", "1d0f:8061")]
SUPPLIES = ["AC,type=Mains,online=1", "BAT0,type=Battery,status=Charging,capacity=80,scope=System"]
INITIAL = [("nvme0", SAMSUNG, False, False), ("nvme1", WDC, True, False), ("nvme2", INTEL, False, True)]
MAX_PRESENT = 6
CPUS = 2
CPUFILES = ("scaling_governor", "scaling_min_freq", "scaling_max_freq", "energy_performance_preference")

SITUATIONS = """
[apst on-battery]
max_latency_us = 100000

[apst profile=power-saver]
max_latency_us = 100000

[device liar]
match_model = INTEL*
policy = adaptive

[device samsung]
match_model = Samsung*

[device samsung on-battery]
max_latency_us = 100000

[device samsung profile=performance]
max_latency_us = 0
"""
# Valid configurations: (text, cpu pin mode). Every one puts the liar under policy = adaptive.
# Two of them shorten the deadline after which a controller that does not answer counts as
# unresponsive ([daemon] unresponsive_after_sec: the same behaviour, sooner); two keep the default 10 s.
DEADLINE = "\n[daemon]\nunresponsive_after_sec = 3\n"
CONFIGS = [
    ("[apst]\npolicy = budget\nmax_latency_us = 5000\n" + SITUATIONS + DEADLINE, "off"),
    ("[apst]\npolicy = budget\nmax_latency_us = 5000\n" + SITUATIONS +
     "\n[cpu]\npin = always\ngovernor = performance\nmin_freq = max\ncpus = 0-1\n", "always"),
    ("[apst]\npolicy = kernel\n" + SITUATIONS + DEADLINE +
     "\n[cpu]\npin = busy\nrelease_after_ms = 500\ngovernor = performance\n", "busy"),
    ("[apst]\npolicy = budget\nstall_budget_pct = 0.5\n" + SITUATIONS, "off"),
]
BROKEN = [
    "[apst]\npolicy = budget\nmax_latency_us = 12x\n",
    "[apst]\npolicy = sometimes\n",
    "[device nomatch]\npolicy = budget\n",
    "[apst\n\x00\xff garbage",
    "[cpu]\npin = always\ngovernor = performance\ncpus = 0-999999\n",
]
FAULT_RESULTS = ["0x4002", "0x0002", "0x0006", "0x4004", "0x0102", "0x0181", "EIO", "ENODEV", "EINTR", "ETIMEDOUT",
                 "EBUSY", "EAGAIN", "ENXIO", "garble", "ignore", "delay=50", "delay=200", "delay=600"]
FAULT_WHATS = ["identify", "get-apst", "set-apst", "any"]
PROFILES = ["", "balanced", "power-saver", "performance"]
WEIGHTS = {
    "reset": 10, "resume": 6, "add": 3, "remove": 2, "reload": 6, "reload-broken": 3, "hup-storm": 2,
    "supply": 5, "profile": 5, "io": 14, "silence": 4, "fault": 7, "clear": 3, "not-live": 3, "pmqos": 2,
    "dbus-read": 4, "sigkill": 2, "stop-start": 1, "hang": 1, "hold": 5, "unhold": 4, "fail": 2,
}
# Kinds of event a run leaves out (--without, or SOAK_WITHOUT for the seeds' own processes): a storm
# with no failure injected must quarantine nothing.
WITHOUT = set(filter(None, os.environ.get("SOAK_WITHOUT", "").split(",")))
# A failure in a deep state, as the kernel shows it: its records (a controller that fell off the bus,
# the power saving hint) in the daemon's kernel log, the controller resetting, then the kernel's reset.
FAILURE_RECORDS = ("controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10",
                   "Does your device have a faulty power saving mode enabled?",
                   'Try "nvme_core.default_ps_max_latency_us=0 pcie_aspm=off pcie_port_pm=off" and report a bug')
# Latency holds: `nvme-apstd hold` clients on every controller, taken, ended (SIGTERM or SIGINT passed
# on to their command, or the client and its command killed with SIGKILL) and retaken by the clients
# themselves after a restart. Their latencies are the two whose tables `plan` says without a cap of
# its own: 0 (no idle state, APSTE 0) and the largest allowed, 10 s, at or above every configured
# budget (no effect). At most HOLDERS_MAX clients live at once.
HOLD_LATENCIES = [0, 0, 10000000]
HOLDERS_MAX = 6
HELD_TABLE = (0, [0] * 32)
# The long hang: a drive that holds one Get Features for 20 s (past the deadline, as a failing drive
# holds it up to the kernel's 60 s admin timeout); the storm goes on meanwhile. Only Get Features:
# a held Set would land after a later daemon's write, as on a real drive, and the oracle could not
# tell which table is right.
HANG_MS = 20000
PPD = ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles")
SO_TIMESTAMP = getattr(socket, "SO_TIMESTAMP", 29)   # Linux asm-generic; Python 3.11 lacks the name
BUSNAME, ROOT = "io.github.nvme_apstd", "/io/github/nvme_apstd"


# ---------------------------------------------------------------- the storm (pure: seed -> events)

class Model:
    """What the driver has done to the world; enough to generate valid next events."""

    def __init__(self):
        self.present = {n: {"id": idc, "multipath": mp, "liar": liar} for n, idc, mp, liar in INITIAL}
        self.next_index = 3
        self.config = 0


def generate(seed, n_events):
    rng = random.Random(seed)
    m = Model()
    out = []
    since_check = 0
    gap = rng.randint(4, 12)
    while len(out) < n_events:
        kinds = list(WEIGHTS)
        k = rng.choices(kinds, weights=[0 if x in WITHOUT else WEIGHTS[x] for x in kinds])[0]
        names = sorted(m.present)
        ev = {"kind": k}
        if k in ("reset", "remove", "fault", "clear", "not-live", "pmqos", "io", "hang", "fail") and not names:
            k = ev["kind"] = "add"
        if k == "reset":
            ev["ctrl"] = rng.choice(names)
        elif k == "resume":
            ev["reset"] = [n for n in names if rng.random() < 0.7]
            ev["asleep_ms"] = rng.randint(0, 400)
        elif k == "add":
            if len(m.present) >= MAX_PRESENT or m.next_index > 40:
                ev = {"kind": "silence", "ms": 200}
            else:
                name = f"nvme{m.next_index}"
                m.next_index += 1
                idc = rng.choice(HOTPLUG)
                ev.update(ctrl=name, id=list(idc), multipath=rng.random() < 0.3)
                m.present[name] = {"id": idc, "multipath": ev["multipath"], "liar": False}
        elif k == "remove":
            ev["ctrl"] = rng.choice(names)
            del m.present[ev["ctrl"]]
        elif k == "reload":
            m.config = rng.randrange(len(CONFIGS))
            ev["config"] = m.config
        elif k == "reload-broken":
            ev["broken"] = rng.randrange(len(BROKEN))
        elif k == "hup-storm":
            ev["n"] = rng.randint(3, 25)
            ev["config"] = m.config = rng.randrange(len(CONFIGS))
        elif k == "supply":
            ev["ac"] = rng.random() < 0.5
        elif k == "profile":
            ev["profile"] = rng.choice(PROFILES)
        elif k == "io":
            ev["ctrl"] = rng.choice(names)
            ev["bursts"] = rng.randint(1, 8)
            ev["ios"] = rng.randint(1, 40)
            ev["gap_ms"] = rng.randint(20, 150)
        elif k == "silence":
            ev["ms"] = rng.randint(100, 800)
        elif k == "fault":
            ev["ctrl"] = rng.choice(names)
            when = rng.choice(["once", "always", f"after={rng.randint(1, 4)}"])
            ev["rule"] = f"{rng.choice(FAULT_WHATS)}={rng.choice(FAULT_RESULTS)}:{when}"
        elif k == "clear":
            ev["ctrl"] = rng.choice(names)
        elif k == "not-live":
            ev["ctrl"] = rng.choice(names)
            ev["state"] = rng.choice(["resetting", "connecting", "dead", "deleting"])
        elif k == "pmqos":
            ev["ctrl"] = rng.choice(names)
            ev["us"] = rng.choice([0, 1000, 5000, 100000, 4294967295])
        elif k == "dbus-read":
            ev["n"] = rng.randint(1, 30)
        elif k == "sigkill":
            ev["after_ms"] = rng.randint(0, 300)
            ev["restart_ms"] = rng.randint(0, 500)
        elif k == "stop-start":
            ev["leave_not_live"] = rng.choice([None] + names)
        elif k in ("hang", "fail"):
            ev["ctrl"] = rng.choice(names)
        elif k == "hold":
            ev["latency"] = rng.choice(HOLD_LATENCIES)
        elif k == "unhold":
            ev["how"] = rng.choice(["term", "int", "kill"])
            ev["pick"] = rng.random()
        out.append(ev)
        if k in ("reset", "hang") and rng.random() < 0.5:
            # a hold asked for while the controller resets or its command hangs
            out.append({"kind": "hold", "latency": rng.choice(HOLD_LATENCIES)})
        since_check += 1
        if since_check >= gap:
            out.append({"kind": "quiet"})
            since_check = 0
            gap = rng.randint(4, 12)
    out.append({"kind": "quiet"})
    if not any(e["kind"] == "hang" for e in out):
        # every storm has one: in place of an event on a controller present then
        idx = [i for i, e in enumerate(out) if e["kind"] in ("io", "reset")]
        if idx:
            i = rng.choice(idx)
            out[i] = {"kind": "hang", "ctrl": out[i]["ctrl"]}
    return out


# ---------------------------------------------------------------- the inner run (under the harness)

class Violation(Exception):
    pass


class JournalSink:
    """A stand-in for journald's native socket: the daemon logs through sd_journal_sendv() as under
    systemd, and every entry is parsed as journald parses it (fields "KEY=value\n", or "KEY\n",
    a 64-bit little-endian length, the value and "\n"; a large entry comes as a memfd passed with
    SCM_RIGHTS). The path is fixed in libsystemd (/run/systemd/journal/socket), so the daemon runs in
    a mount namespace of its own (unshare(1)) where that directory is a bind mount of ours: the
    machine's journal, if it has one, is left alone."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "journal")
        os.makedirs(self.dir)
        self.text_path = os.path.join(workdir, "journal.log")
        self.text = open(self.text_path, "w")
        self.entries = []             # [[(key, value), ...], ...] in arrival order
        self.bad = []                 # datagrams that did not parse
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(self.dir, "socket"))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.stop = False
        threading.Thread(target=self.run, daemon=True).start()

    @staticmethod
    def usable():
        """Whether this machine lets us make the mount namespace (root, mount allowed): None, or why not."""
        p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs none /run && mkdir -p /run/systemd/journal"],
                           capture_output=True, text=True)
        return None if p.returncode == 0 else (p.stderr.strip() or f"unshare exit {p.returncode}")

    def prefix(self):
        """The command that puts the daemon in front of this sink: a tmpfs on /run/systemd of its own,
        our directory bound at /run/systemd/journal. unshare and sh exec, so the PID stays the daemon's."""
        script = ('mkdir -p /run/systemd && mount -t tmpfs nvme-apstd-soak /run/systemd && '
                  'mkdir /run/systemd/journal && mount --bind "$0" /run/systemd/journal && exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, self.dir]

    @staticmethod
    def parse(data):
        fields, i = [], 0
        while i < len(data):
            nl = data.find(b"\n", i)
            if nl < 0:
                raise ValueError(f"field without a newline at byte {i}")
            line = data[i:nl]
            eq = line.find(b"=")
            if eq >= 0:
                fields.append((line[:eq].decode(), line[eq + 1:].decode(errors="replace")))
                i = nl + 1
            else:
                n = int.from_bytes(data[nl + 1:nl + 9], "little")
                value = data[nl + 9:nl + 9 + n]
                if len(value) != n or data[nl + 9 + n:nl + 10 + n] != b"\n":
                    raise ValueError(f"binary field {line!r} of {n} bytes cut short")
                fields.append((line.decode(), value.decode(errors="replace")))
                i = nl + 10 + n
        return fields

    def run(self):
        while not self.stop:
            r, _, _ = select.select([self.sock], [], [], 0.2)
            if not r:
                continue
            try:
                data, anc, _, _ = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(4))
            except OSError:
                return
            for lvl, typ, fdata in anc:
                if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    fd = int.from_bytes(fdata[:4], sys.byteorder)
                    with os.fdopen(fd, "rb") as f:
                        data = f.read()
            try:
                fields = self.parse(data)
            except ValueError as e:
                self.bad.append(f"{e}: {data[:200]!r}")
                continue
            self.entries.append(fields)
            d = dict(fields)
            extra = ", ".join(f"{k}={v}" for k, v in fields if k not in ("MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER")
                              and not k.startswith("CODE_"))
            self.text.write(f"<{d.get('PRIORITY', '?')}> {d.get('MESSAGE', '')} {{{extra}}}\n")
            self.text.flush()

    def tail(self, n=60):
        with open(self.text_path) as f:
            return "\n".join(f.read().splitlines()[-n:])

    def close(self):
        self.stop = True
        self.sock.close()
        self.text.close()


class Soak:
    def __init__(self, args, events, header):
        self.args = args
        self.events = events
        self.header = header
        self.slow = 3.0 if T.WRAPPER else 1.0
        self.violations = []
        self.checks = 0
        self.done = 0
        self.model = {}       # name -> dict(id, pci, multipath, liar, orig, ios, ticks, faulted, nonlive)
        self.removed = set()
        self.config = 0
        self.ac = True
        self.profile = ""
        self.plan_cache = {}
        self.daemon = None
        self.instances = 0
        self.peak_rss = 0
        self.baselines = {}
        self.source_baselines = {}
        self.rss_first = None
        self.log_pos = 0
        self.bus_errors = 0
        self.bus_reads = 0
        self.wd_gaps = []
        self.hangs = 0            # long hangs that reached the daemon
        self.hang_until = 0.0     # CLOCK_MONOTONIC when the last held command returns
        self.event_times = []     # (time.time() at its start, event index): which events a long gap spans
        self.expect_dead = False
        self.holders = []         # the `nvme-apstd hold` clients started: dict(proc, latency, marker, err)
        # clients started, refused (125), ended by a signal passed on, killed; quiet checks under a hold at 0
        self.hold_stats = {"started": 0, "refused": 0, "ended": 0, "killed": 0, "checks_held": 0}
        self.workdir = tempfile.mkdtemp(prefix="apstd-soak-")
        # the daemon's and plan's state directory (learned workloads, quarantines): the run's own
        self.state_dir = os.path.join(self.workdir, "state")
        os.environ["STATE_DIRECTORY"] = self.state_dir
        self.failed_drives = set()   # (model, firmware) of the drives a failure was injected on
        self.failures = {"injected": 0, "seen": 0}
        self.kmsg_seq = 0
        self.conf = os.path.join(self.workdir, "nvme-apstd.conf")
        self.rdir = os.path.join(self.workdir, "run")
        os.makedirs(self.rdir)
        why = JournalSink.usable()
        self.journal = JournalSink(self.workdir) if why is None else None
        self.journal_pos = 0
        self.journal_entries_seen = 0
        self.journal_bad_seen = 0
        self.peak_sources = 0
        if why:
            print(f"soak: the daemon logs to stderr, not to a journal socket (no mount namespace here: {why}); "
                  "journal fields are checked on its console output only", flush=True)
        for name, idc, mp, liar in INITIAL:
            self.model[name] = self._new_ctrl(idc, mp, liar)

    # -- helpers
    def _new_ctrl(self, idc, mp, liar):
        return {"id": os.path.join(IDDIR, idc[0]), "pci": idc[1], "multipath": mp, "liar": liar,
                "orig": None, "restore": None, "also": [], "ios": 0, "ticks": 0, "faulted": False,
                "nonlive": None, "log_seen": 0}

    def fail(self, what):
        ev = self.events[self.done] if self.done < len(self.events) else {"kind": "end"}
        self.violations.append(f"event {self.done} ({json.dumps(ev)}): {what}")
        print(f"VIOLATION (event {self.done}: {json.dumps(ev)}): {what}", flush=True)
        if self.daemon and not getattr(self, "dumped", False):
            self.dumped = True
            print("---- daemon log (last 60 lines) ----\n" + "\n".join(self.daemon.log().splitlines()[-60:]), flush=True)
            if self.journal:
                print("---- its journal entries (last 60) ----\n" + self.journal.tail(), flush=True)

    def ctl(self, *a, ok=True):
        p = subprocess.run([T.CTL, *a], capture_output=True, text=True, timeout=60)
        if ok and p.returncode != 0:
            raise RuntimeError(f"fake-nvme-ctl {' '.join(a)}: {p.returncode} {p.stderr.strip()}")
        return p

    def table(self, name):
        """What the fake holds: its state file, which it replaces whole (rename) on every change. A
        process per read under the umockdev preload cost more than the daemon did."""
        try:
            return T.read_table(name)
        except OSError:
            out = self.ctl("table", name).stdout.split()
            return int(out[0].split("=")[1]), [int(x, 0) for x in out[1:]]

    def loglines(self, name):
        return T.read_log(name)

    def write_conf(self, text, raw=None):
        """Replace the configuration file whole (a temporary file renamed over it). A SIGHUP storm can
        leave a reload still to come after the one the driver waited for; written in place, that
        reload could read the next file half written (empty is a valid configuration: pin = off), a
        state the driver never meant. The first long run at ten seeds at once met it once."""
        tmp = self.conf + ".tmp"
        with open(tmp, "wb") as f:
            f.write(raw if raw is not None else text.encode(errors="surrogateescape"))
        os.replace(tmp, self.conf)

    # -- the private bus: logind and power-profiles-daemon of our own
    def start_bus(self):
        self.bus = T.PrivateBus()
        Gio, GLib = self.bus.Gio, self.bus.GLib
        self.GLib, self.Gio = GLib, Gio
        xml = (f"<node><interface name='{PPD[0]}'><property name='ActiveProfile' type='s' access='read'/>"
               "</interface></node>")
        info = Gio.DBusNodeInfo.new_for_xml(xml).interfaces[0]
        self.bus.conn.register_object(PPD[1], info, None, lambda *a: GLib.Variant("s", self.profile), None)
        r = self.bus.call_bus("RequestName", "(su)", ("org.freedesktop.login1", 0))
        assert r[0] == 1
        self.loop = GLib.MainLoop()
        threading.Thread(target=self.loop.run, daemon=True).start()
        # a second connection is the D-Bus reader, in a thread of its own
        self.reader_stop = False
        threading.Thread(target=self.reader, daemon=True).start()

    def set_profile(self, profile):
        old = self.profile
        self.profile = profile
        if profile and not old:
            self.bus.call_bus("RequestName", "(su)", (PPD[0], 0))
        elif not profile and old:
            self.bus.call_bus("ReleaseName", "(s)", (PPD[0],))
        if profile:
            GLib = self.GLib
            self.bus.conn.emit_signal(None, PPD[1], "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                      GLib.Variant("(sa{sv}as)", (PPD[0], {"ActiveProfile": GLib.Variant("s", profile)},
                                                                  [])))
        self.bus.conn.flush_sync(None)

    def managed_objects(self, conn=None, timeout_ms=20000):
        conn = conn or self.bus.conn
        r = conn.call_sync(BUSNAME, ROOT, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", None, None,
                           self.Gio.DBusCallFlags.NONE, timeout_ms, None)
        return r.unpack()[0]

    def reader(self):
        Gio = self.Gio
        conn = Gio.DBusConnection.new_for_address_sync(
            self.bus.addr, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
            Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
        rng = random.Random(self.header["seed"] ^ 0x5eed)
        while not self.reader_stop:
            d = self.daemon
            try:
                self.managed_objects(conn, int(20000 * self.slow))
                self.bus_reads += 1
            except Exception as e:   # noqa: BLE001
                msg = str(e)
                if "NoReply" in msg or "Timeout" in msg or "timed out" in msg:
                    if d is not None and d is self.daemon and d.proc.poll() is None and not self.expect_dead:
                        self.bus_errors += 1
                        print(f"soak: D-Bus reader: no reply from a running daemon: {msg}", flush=True)
            time.sleep(rng.uniform(0.005, 0.2))

    # -- the daemon
    def start_daemon(self):
        self.write_conf(CONFIGS[self.config][0])
        env = {"DBUS_SYSTEM_BUS_ADDRESS": self.bus.addr, "WATCHDOG_USEC": str(int(4000000 * self.slow))}
        prefix = ()
        if self.journal:
            env["NVME_APSTD_LOG_TARGET"] = "journal"
            prefix = self.journal.prefix()
        self.daemon = T.Daemon(self.conf, runtime_dir=self.rdir, extra_env=env, prefix=prefix)
        self.daemon.notify_times = []
        self.instances += 1
        self.baselines = {}
        self.source_baselines = {}
        self.rss_first = None
        self.log_pos = 0
        # drain NOTIFY_SOCKET continuously with the kernel's receive times (SO_TIMESTAMP): a daemon
        # whose notify queue fills blocks in sd_notify()
        d = self.daemon
        d.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
        d.drain_stop = False

        def drain():
            while not d.drain_stop:
                r, _, _ = select.select([d.sock], [], [], 0.2)
                if not r:
                    continue
                try:
                    msg, anc, _, _ = d.sock.recvmsg(65536, socket.CMSG_SPACE(16))
                except OSError:
                    return
                ts = time.time()
                for lvl, typ, data in anc:
                    if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMP and len(data) >= 16:
                        sec, usec = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
                        ts = sec + usec / 1e6
                text = msg.decode(errors="replace")
                d.notifications.append(text)
                d.notify_times.append((ts, text))
        d.poll_notify = lambda timeout=0.0: time.sleep(min(timeout, 0.05))
        d.drainer = threading.Thread(target=drain, daemon=True)
        d.drainer.start()
        if d.wait_notify(r"^READY=1$", timeout=30 * self.slow) is None:
            self.fail("the daemon did not become READY within 30 s")
            raise Violation("not ready")

    def end_daemon(self, kill=False):
        d = self.daemon
        self.expect_dead = True
        if kill:
            d.proc.kill()
            d.proc.wait()
            rc = None
        else:
            before = T.failures
            rc = d.stop(timeout=60 * self.slow)
            if T.failures > before:   # the wrapper (valgrind) reported errors: apstd_test.check_wrapper()
                self.fail(f"{T.WRAPPER[0]} reported errors in nvme-apstd (exit {rc}); its log:\n{d.log()[-6000:]}")
        time.sleep(0.05)
        d.drain_stop = True
        d.drainer.join(2)
        self.check_watchdog(d)
        self.check_journal(final=True)
        if not kill and rc != 0 and not (T.WRAPPER and rc == T.WRAPPER_RC):
            self.fail(f"nvme-apstd exited {rc} on SIGTERM; its log:\n{d.log()[-4000:]}")
        if not kill and not any(re.search(r"^STOPPING=1$", n, re.M) for n in d.notifications):
            self.fail("no STOPPING=1 on SIGTERM")
        self.daemon = None
        self.expect_dead = False
        return rc

    def alive(self):
        d = self.daemon
        if d and d.proc.poll() is not None:
            self.fail(f"nvme-apstd exited on its own (status {d.proc.returncode}); its log ends:\n"
                      f"{d.log()[-4000:]}")
            raise Violation("daemon died")

    # -- invariants
    def expected(self, name):
        """(apste, entries) `plan` computes for the controller in the situation now, or None if unmanaged."""
        c = self.model[name]
        key = (self.config, self.ac, self.profile, c["id"], c["pci"], self.quarantine_text(c["id"]))
        if key not in self.plan_cache:
            plan_conf = os.path.join(self.workdir, "plan.conf")
            with open(plan_conf, "w") as f:
                f.write(CONFIGS[self.config][0])
            env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.addr, NVME_APSTD_LOG_TARGET="console")
            p = subprocess.run([T.NVME_APSTD, "plan", "--json", "--config", plan_conf, "--id-ctrl", c["id"],
                                "--pci-id", c["pci"]], capture_output=True, text=True, env=env, timeout=60)
            if p.returncode != 0:
                raise RuntimeError(f"plan failed: {p.stderr}")
            j = json.loads(p.stdout)["controllers"][0]
            if j["verdict"] != "managed":
                self.plan_cache[key] = (None, j["policy"])
            else:
                self.plan_cache[key] = ((1 if j["apste"] else 0, [int(x, 16) for x in j["table"]]), j["policy"])
        return self.plan_cache[key]

    def settle(self, quiet_s=None, limit_s=None):
        """Wait until no admin command reaches any controller and the daemon logs nothing for quiet_s."""
        quiet_s = (quiet_s or 0.6) * self.slow
        limit_s = (limit_s or 40.0) * self.slow

        def sig():
            s = []
            for n in self.model:
                try:
                    s.append(os.path.getsize(os.path.join(T.STATE, f"{n}.log")))
                except OSError:
                    s.append(-1)
            if self.daemon:
                s.append(os.path.getsize(self.daemon.stderr_path))
            if self.journal:
                s.append(len(self.journal.entries))
            return s
        end = time.monotonic() + limit_s
        last, since = sig(), time.monotonic()
        while time.monotonic() < end:
            time.sleep(0.1)
            now = sig()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return True
        self.fail(f"no quiet period within {limit_s:.0f} s: the daemon keeps sending or logging")
        return False

    def sanitized(self):
        try:
            with open(f"/proc/{self.daemon.proc.pid}/maps") as f:
                return "libasan" in f.read()
        except OSError:
            return False

    def proc_stats(self):
        pid = self.daemon.proc.pid
        fds = os.listdir(f"/proc/{pid}/fd")
        kinds = {}
        epoll = 0
        for fd in fds:
            try:
                t = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            t = re.sub(r"\[\d+\]", "", re.sub(r":\[\d+\]$", "", t))
            kinds[t] = kinds.get(t, 0) + 1
            if "eventpoll" in t:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    epoll += sum(1 for line in f if line.startswith("tfd:"))
        rss = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        return len(fds), epoll, rss, kinds

    def steady_proc_stats(self, baseline=None):
        """proc_stats() without what the daemon holds open for a moment: a quiet daemon still reads the
        block statistics on its watch timers and writes its records, so one reading can catch a
        descriptor that is gone a millisecond later. A leaked one stays: the fewest descriptors (and
        epoll registrations) over readings spread across a second; done early once a reading is at
        the baseline."""
        best = None
        for i in range(8):
            st = self.proc_stats()
            if best is None or st[:2] < best[:2]:
                best = st
            if baseline is not None and best[0] <= baseline[0] and best[1] <= baseline[1]:
                break
            if baseline is None and i >= 4:
                break
            time.sleep(0.12)
        return best

    def normalise(self):
        """Before a check: faults cleared and every controller live again, as after the kernel's next reset.
        A held command returns only when its delay ends: until then its controller is not settled."""
        wait = self.hang_until - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        for n, c in self.model.items():
            if c["faulted"] or c["nonlive"] is not None:
                self.ctl("clear", n)
                self.reset(n)
                c["faulted"] = False

    def close_nonlive(self, name, removed=False):
        c = self.model[name]
        if c["nonlive"] is None:
            return
        start, state = c["nonlive"]
        lines = self.loglines(name)
        for d in lines[start:]:
            if d.get("opc") == T.SET:
                self.fail(f"{name}: Set Features sent while the controller was {state}: {d['line']}")
        c["nonlive"] = None

    def check_nonlive_so_far(self):
        for n, c in self.model.items():
            if c["nonlive"] is not None:
                start, state = c["nonlive"]
                for d in self.loglines(n)[start:]:
                    if d.get("opc") == T.SET:
                        self.fail(f"{n}: Set Features sent while the controller was {state}: {d['line']}")
                        c["nonlive"] = (len(self.loglines(n)), state)
                        break

    def check_violations(self, names=None):
        """The allow-list oracle of @names (default: the present controllers). A removed controller
        gets nothing more once it is gone: it is asked once, at its removal, and again at the end."""
        for n in (list(self.model) if names is None else names):
            p = self.ctl("report", n, ok=False)
            m = re.search(r"violations=(\d+)", p.stdout)
            if m and int(m.group(1)):
                self.fail(f"{n}: the allow-list oracle saw {m.group(1)} violation(s): {p.stdout.strip()}")
            self.checks += 1

    def check_journal(self, final=False):
        """No entry carries a field twice (journald would keep both values: `journalctl -o json` shows
        them as a list), every entry has MESSAGE, PRIORITY 0-7 and SYSLOG_IDENTIFIER nvme-apstd and a
        well-formed MESSAGE_ID; no sanitizer or valgrind report on stderr."""
        if not self.daemon:
            return
        text = self.daemon.log()
        new = text[self.log_pos:]
        if not final:
            new = new[:new.rfind("\n") + 1]
        self.log_pos += len(new)
        for line in new.splitlines():
            self.count_failure(line)
            if re.search(r"AddressSanitizer|runtime error:|==\d+==", line):
                self.fail(f"sanitizer/valgrind output: {line}")
            m = re.search(r" \{(.*)\}$", line)     # console lines (no journal socket, or its fallback)
            if not m:
                continue
            keys = re.findall(r"(?:^|, )([A-Z][A-Z0-9_]+)=", m.group(1))
            dup = {k for k in keys if keys.count(k) > 1}
            if dup:
                self.fail(f"journal entry with a field twice ({', '.join(sorted(dup))}): {line}")
        if self.journal:
            if final:
                time.sleep(0.1)       # the last datagrams are queued before the exit: let the reader have them
            entries = self.journal.entries[self.journal_pos:]
            self.journal_pos += len(entries)
            for fields in entries:
                keys = [k for k, _ in fields]
                d = dict(fields)
                self.count_failure(d.get("MESSAGE", ""))
                dup = sorted({k for k in keys if keys.count(k) > 1})
                if dup:
                    self.fail(f"journal entry with a field twice ({', '.join(dup)}): {fields}")
                if not d.get("MESSAGE") or d.get("PRIORITY") not in list("01234567") or \
                        d.get("SYSLOG_IDENTIFIER") != "nvme-apstd":
                    self.fail(f"journal entry without MESSAGE, PRIORITY or SYSLOG_IDENTIFIER: {fields}")
                if "MESSAGE_ID" in d and not re.fullmatch(r"[0-9a-f]{32}", d["MESSAGE_ID"]):
                    self.fail(f"journal entry with a malformed MESSAGE_ID: {fields}")
                if any(not re.fullmatch(r"[A-Z0-9_]+", k) or k[0].isdigit() for k in keys):
                    self.fail(f"journal entry with a field name journald refuses: {keys}")
            self.journal_entries_seen += len(entries)
            for b in self.journal.bad[self.journal_bad_seen:]:
                self.fail(f"a datagram on the journal socket that journald could not parse: {b}")
            self.journal_bad_seen = len(self.journal.bad)
        self.checks += 1

    def check_watchdog(self, d):
        # strict: half of WATCHDOG_USEC (the daemon pings at most 45 % of it apart), hangs included
        limit = int(4000000 * self.slow) / 1e6 / 2
        times = [t for t, msg in d.notify_times if re.search(r"^WATCHDOG=1$", msg, re.M)]
        ready = [t for t, msg in d.notify_times if re.search(r"^READY=1$", msg, re.M)]
        if not ready:
            return
        pts = [ready[0]] + [t for t in times if t >= ready[0]]
        if d.proc.poll() is not None:
            pass
        for a, b in zip(pts, pts[1:]):
            self.wd_gaps.append(b - a)
            if b - a > limit:
                during = [i for t, i in self.event_times if a - 1 <= t <= b]
                self.fail(f"watchdog missed: {b - a:.2f} s between WATCHDOG=1 (half of WATCHDOG_USEC = {limit:.1f} s), "
                          f"while events {during} ran")
        self.checks += 1

    def cpu_snapshot(self):
        out = {}
        for cpu in range(CPUS):
            for f in CPUFILES:
                try:
                    with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/{f}") as fh:
                        out[(cpu, f)] = fh.read().strip()
                except OSError:
                    out[(cpu, f)] = None
        return out

    def quiet_check(self):
        self.normalise()
        self.settle()
        self.alive()
        d = self.daemon
        tries = 0
        while True:
            mismatches = self.check_tables()
            if not mismatches or tries >= 2:
                break
            tries += 1                  # an adaptive decision may have been in flight: look again once quiet
            self.settle()
        for m in mismatches:
            self.fail(m)
        self.check_nonlive_so_far()
        self.check_violations()
        self.check_journal()
        self.check_quarantine()
        # CPUs: pinned for pin = always, as found otherwise (pin = busy is released once idle)
        snap = self.cpu_snapshot()
        pin = CONFIGS[self.config][1]
        if pin == "always":
            if any(snap[(c, "scaling_governor")] != "performance" for c in range(CPUS)):
                self.fail(f"[cpu] pin = always, but the CPUs are not pinned: {snap}")
        elif pin == "off":
            if snap != self.cpu_orig:
                self.fail(f"[cpu] pin = off, but the CPU policy differs from the original: {snap} vs {self.cpu_orig}")
        self.checks += 1
        sig = (tuple(sorted(self.model)), self.config, self.profile != "")
        self.check_event_sources(sig)
        # leaks: fds, epoll registrations (sd-event's I/O sources) and RSS against this instance's baseline
        nfd, nep, rss, kinds = self.steady_proc_stats(self.baselines.get(sig))
        self.peak_rss = max(self.peak_rss, rss)
        if sig in self.baselines:
            b = self.baselines[sig]
            if nfd > b[0] or nep > b[1]:
                self.fail(f"fds/epoll sources grew for the same situation {sig}: {b[0]} fds, {b[1]} sources "
                          f"-> {nfd}, {nep} ({b[2]} -> {kinds})")
            elif (nfd, nep) != b[:2]:
                self.baselines[sig] = (min(nfd, b[0]), min(nep, b[1]), kinds)
        else:
            self.baselines[sig] = (nfd, nep, kinds)
        if not T.WRAPPER and not self.sanitized():   # valgrind's and ASan's own heaps are not the daemon's
            if self.rss_first is None:
                self.rss_first = rss
            elif rss > self.rss_first + 4096:
                self.fail(f"RSS grew from {self.rss_first} KiB to {rss} KiB within one daemon instance")
        self.checks += 3
        return d

    def check_event_sources(self, sig):
        """The daemon's own event sources (Manager1.EventSources) after a quiet period: what the
        situation calls for and nothing more. Those are the SIGHUP, SIGTERM and SIGINT sources, the
        finished-steps eventfd, the watchdog and verification timers,
        and per controller its pm_qos watch and I/O watch timer where it has them; a retry timer or the
        situation timer lives only until it has done its work. So the count is the same every time
        the same controllers, configuration and profile source meet, and within 6 + 3 per controller
        (a step's deadline timer lives only while the step runs).
        Timers and inotify watches share one descriptor each in sd-event: the fd and epoll counts
        cannot see them leak."""
        n = self.bus.get_property(BUSNAME, ROOT, BUSNAME + ".Manager1", "EventSources", int(20000 * self.slow))
        bound = 6 + 3 * len(self.model)
        self.peak_sources = max(self.peak_sources, n)
        self.checks += 1
        if not 2 <= n <= bound:
            self.fail(f"the daemon holds {n} event sources of its own; {len(self.model)} controllers allow "
                      f"2 to {bound}: a source outlived its owner")
        elif sig in self.source_baselines and n != self.source_baselines[sig]:
            self.fail(f"the daemon holds {n} event sources of its own, {self.source_baselines[sig]} the last time "
                      f"in the same situation {sig}")
        self.source_baselines.setdefault(sig, n)

    def check_tables(self):
        out = []
        try:
            objs = self.managed_objects()
        except Exception as e:  # noqa: BLE001
            return [f"GetManagedObjects failed on a running daemon: {e}"]
        names = {p.rsplit("/", 1)[1] for p in objs if "/controller/" in p}
        if names != set(self.model):
            out.append(f"D-Bus controllers {sorted(names)} != present {sorted(self.model)}")
        held = self.check_holds(out)
        for n, c in self.model.items():
            want, policy = self.expected(n)
            have = self.table(n)
            if want is not None and held:
                # the policy capped by the live holds: one at 0 leaves no idle state, whatever the policy
                want, policy = HELD_TABLE, "held"
            props = objs.get(f"{ROOT}/controller/{n}", {}).get("io.github.nvme_apstd.Controller1", {})
            self.checks += 1
            if want is None:
                if have != c["orig"]:
                    out.append(f"{n}: not managed (plan), yet its table changed: {have} vs original {c['orig']}")
                continue
            if props.get("State") != "programmed":
                out.append(f"{n}: D-Bus State is {props.get('State')!r}, not 'programmed', after a quiet period")
            raw = (1 if props.get("TableEnabled") else 0, list(props.get("RawTable", [])))
            if raw != have:
                out.append(f"{n}: the drive holds {fmt(have)}, the daemon publishes {fmt(raw)}")
            if policy == "adaptive":
                if props.get("Policy") != "adaptive":
                    out.append(f"{n}: plan says adaptive, D-Bus Policy is {props.get('Policy')!r}")
            elif have != want:
                out.append(f"{n}: holds {fmt(have)}, {'a live hold at 0 says' if policy == 'held' else 'plan says'} "
                           f"{fmt(want)} (config {self.config}, "
                           f"{'ac' if self.ac else 'battery'}, profile {self.profile!r})")
        return out

    # -- latency holds
    def hold_start(self, latency):
        self.holders = [h for h in self.holders if h["proc"].poll() is None or self.hold_reap(h)]
        if len(self.holders) >= HOLDERS_MAX:
            return
        i = self.hold_stats["started"]
        self.hold_stats["started"] += 1
        marker = os.path.join(self.workdir, f"hold-{self.done}-{i}.started")
        err = os.path.join(self.workdir, f"hold-{self.done}-{i}.err")
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.addr, NVME_APSTD_LOG_TARGET="console")
        with open(err, "w") as f:
            # a session of its own: SIGKILL of the group ends the client and its command together
            proc = subprocess.Popen([T.NVME_APSTD, "hold", "--max-latency", str(latency), "--app-id", "soak",
                                     "--reason", f"event {self.done}", "--", "sh", "-c",
                                     f'touch "{marker}"; exec sleep 100000'],
                                    env=env, stdout=subprocess.DEVNULL, stderr=f, start_new_session=True)
        self.holders.append({"proc": proc, "latency": latency, "marker": marker, "err": err, "reaped": False})

    def hold_reap(self, h):
        """A client that ended: counted once; False (it is no holder any more)."""
        if not h["reaped"]:
            h["reaped"] = True
            self.hold_stats["refused" if h["proc"].returncode == 125 else "ended"] += 1
        return False

    def hold_end(self, how, pick):
        live = [h for h in self.holders if h["proc"].poll() is None]
        if not live:
            return
        h = live[int(pick * len(live))]
        sig = {"term": signal.SIGTERM, "int": signal.SIGINT, "kill": signal.SIGKILL}[how]
        if how == "kill":
            os.killpg(h["proc"].pid, signal.SIGKILL)   # the client and its command: the connection closes
            self.hold_stats["killed"] += 1
        else:
            h["proc"].send_signal(sig)                 # passed on to the command, whose death is the client's
        try:
            rc = h["proc"].wait(10 * self.slow)
        except subprocess.TimeoutExpired:
            self.fail(f"an `nvme-apstd hold` client did not end within 10 s of {sig.name}")
            os.killpg(h["proc"].pid, signal.SIGKILL)
            rc = h["proc"].wait()
        started = os.path.exists(h["marker"])
        if how != "kill" and rc not in (-int(sig), 128 + int(sig)) and not (rc == 125 and not started):
            self.fail(f"`nvme-apstd hold` ended by {sig.name} exited {rc}, not by {sig.name}: "
                      f"{open(h['err']).read()[-2000:]}")
        if how == "kill":
            h["reaped"] = True
        else:
            self.hold_reap(h)

    def hold_in_force(self, h):
        """The client runs its command, and its last word about the hold is not that it lost it."""
        if h["proc"].poll() is not None or not os.path.exists(h["marker"]):
            return False
        with open(h["err"]) as f:
            text = f.read()
        last_lost = max(text.rfind("without it"), text.rfind("gone until it is back"))
        return text.rfind("in force again") >= last_lost   # neither (-1, -1): never lost

    def check_holds(self, out):
        """The daemon's Holds are the live clients' (a dead client's hold is gone); returns whether one at 0 lives."""
        for h in self.holders:
            if h["proc"].poll() is not None:
                self.hold_reap(h)
        live = [h for h in self.holders if self.hold_in_force(h)]
        try:
            r = self.bus.conn.call_sync(BUSNAME, ROOT, "org.freedesktop.DBus.Properties", "Get",
                                        self.GLib.Variant("(ss)", ("io.github.nvme_apstd.Manager1", "Holds")),
                                        None, self.Gio.DBusCallFlags.NONE, int(20000 * self.slow), None)
            holds = r.unpack()[0]
        except Exception as e:  # noqa: BLE001
            out.append(f"Manager1.Holds cannot be read: {e}")
            return any(h["latency"] == 0 for h in live)
        self.checks += 1
        waiting = sum(1 for h in self.holders if h["proc"].poll() is None and not os.path.exists(h["marker"]))
        if not len(live) <= len(holds) <= len(live) + waiting:
            out.append(f"the daemon lists {len(holds)} holds, {len(live)} clients hold one "
                       f"({waiting} still waiting for theirs): {holds}")
        held = any(h["latency"] == 0 for h in live)
        self.hold_stats["checks_held"] += held
        return held

    def hold_stop_all(self):
        for h in self.holders:
            if h["proc"].poll() is None:
                os.killpg(h["proc"].pid, signal.SIGKILL)
                h["proc"].wait()

    # -- events
    # -- deep-state failures and their quarantine
    @staticmethod
    def drive_of(idfile):
        """(model, firmware) of an Identify Controller file, trimmed as the daemon keeps them."""
        with open(idfile, "rb") as f:
            data = f.read(72)
        return data[24:64].decode("ascii", "replace").strip(), data[64:72].decode("ascii", "replace").strip()

    def quarantines(self):
        """{(model, firmware): text} of the quarantine files in the state directory."""
        d = os.path.join(self.state_dir, "quarantine")
        out = {}
        for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            with open(os.path.join(d, f)) as fh:
                text = fh.read()
            kv = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
            out[(kv.get("model", f), kv.get("firmware", ""))] = text
        return out

    def quarantine_text(self, idfile):
        return self.quarantines().get(self.drive_of(idfile), "")

    def inject_failure(self, name):
        c = self.model[name]
        self.failed_drives.add(self.drive_of(c["id"]))
        self.failures["injected"] += 1
        d = self.daemon
        if d is not None and d.proc.poll() is None:
            try:
                fd = os.open(os.path.join(d.dir, "kmsg"), os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                fd = -1          # the daemon has not opened its kernel log (yet): nobody reads the records
            if fd >= 0:
                with os.fdopen(fd, "w") as f:
                    for m in FAILURE_RECORDS:
                        self.kmsg_seq += 1
                        f.write(T.kmsg_record(self.kmsg_seq, name, m))
                self.failures["seen"] += 1
        self.ctl("set-attr", name, "state", "resetting")
        if c["nonlive"] is None:
            c["nonlive"] = (len(self.loglines(name)), "resetting")
        time.sleep(0.3)
        self.reset(name)

    def count_failure(self, message):
        """The daemon's word on each failure: blamed on a state, or not blamed and why."""
        m = re.search(r"controller failed (?:in power state (ps\d+)|.*not blamed on a power state: ([\w-]+))", message)
        if m:
            k = "blamed" if m.group(1) else m.group(2)
            self.failures[k] = self.failures.get(k, 0) + 1

    @staticmethod
    def allow_below(text):
        """A quarantine file's allow_below (None without one)."""
        m = re.search(r"^allow_below=(\d+)$", text or "", re.M)
        return int(m.group(1)) if m else None

    def quarantined_below(self, idfile):
        return self.allow_below(self.quarantine_text(idfile))

    @staticmethod
    def filtered_from(orig, have, below):
        """@have is @orig with no transition to a state from @below on: each entry kept, dropped, or sent
        to a shallower state after the same idle time; APST off (all zero) for @below 0."""
        if below == 0:
            return have == (0, [0] * 32)
        if have[0] != orig[0]:
            return False
        for ps, (o, h) in enumerate(zip(orig[1], have[1])):
            if ps >= below:
                ok = h == 0
            elif not (o >> 8) & 0xFFFFFF or (o >> 3) & 0x1F < below:
                ok = h == o
            else:
                ok = h == 0 or ((h >> 8) == (o >> 8) and (h >> 3) & 0x1F < below)
            if not ok:
                return False
        return True

    def check_quarantine(self):
        """Quarantines only for drives that failed; a quarantined drive's table stays out of its states."""
        q = self.quarantines()
        self.checks += 1
        for drive in q:
            if drive not in self.failed_drives:
                self.fail(f"{drive[0]} firmware {drive[1]} quarantined without a failure injected: {q[drive]}")
        for n, c in self.model.items():
            below = self.allow_below(q.get(self.drive_of(c["id"])))
            if below is None:
                continue
            apste, entries = self.table(n)
            reach = [(e >> 3) & 0x1F for e in entries if (e >> 8) & 0xFFFFFF]
            if apste and (below == 0 or any(ps >= below for ps in reach)):
                self.fail(f"{n}: quarantined below ps{below} (APST off at 0), yet its table is "
                          f"{fmt((apste, entries))}")

    def reset(self, name):
        c = self.model[name]
        path = os.path.join(self.workdir, f"{name}.kernel")
        T.write_table_file(path, *c["orig"])
        # what came while it was not live is judged before the reset makes it live (the harness is
        # one loop: no command lands between the reset's state changes)
        self.close_nonlive(name)
        self.ctl("reset", name, path)

    def hang(self, name):
        """nvme0's next Get Features held HANG_MS, sent at once: the daemon re-checks it after a reset.
        If nothing sends one soon (not live, not managed), the rule goes, so that it cannot fire at
        an unknown later time."""
        if name not in self.model:
            return
        m = re.search(r"get_apst=(\d+)", self.ctl("report", name, ok=False).stdout)
        before = int(m.group(1)) if m else 0
        self.ctl("fault", name, f"get-apst=delay={HANG_MS}:once")
        self.model[name]["faulted"] = True
        t = time.monotonic()
        self.reset(name)
        if self.ctl("wait", name, "get-apst", str(before + 1), str(int(3000 * self.slow)), ok=False).returncode == 0:
            self.hangs += 1
            self.hang_until = max(self.hang_until, t + HANG_MS / 1000 + 0.5 * self.slow)
        else:
            self.ctl("clear", name)

    def settle_ctrl(self, name):
        """Let the commands already on their way to @name arrive (the state change races them)."""
        path = os.path.join(T.STATE, f"{name}.log")
        last, since = -2, time.monotonic()
        end = since + 3
        while time.monotonic() < end:
            try:
                s = os.path.getsize(path)
            except OSError:
                s = -1
            if s != last:
                last, since = s, time.monotonic()
            elif time.monotonic() - since > 0.8 * self.slow:   # > the longest delay= fault (600 ms)
                break
            time.sleep(0.02)

    def wait_reloaded(self, n):
        """As `systemctl reload` does: until RELOADING=1 and then READY=1 came after notification @n.
        Signals of one kind coalesce: a broken file written right after a valid one, before the
        daemon read it, would replace that reload, not follow it."""
        d = self.daemon
        i = d.wait_notify(r"^RELOADING=1$", n, timeout=30 * self.slow)
        j = None if i is None else d.wait_notify(r"^READY=1$", i, timeout=30 * self.slow)
        if j is None:
            self.alive()
            self.fail("SIGHUP: no RELOADING=1 then READY=1 within 30 s")
        return j

    def drain_reloads(self, j):
        """After a SIGHUP storm, until no RELOADING=1 follows the last READY=1 (index @j) for 0.5 s.
        The storm's last signals coalesce into one that is still pending when the first reload ends;
        its reload would otherwise come after the next event's file was written, and that event's
        own SIGHUP would coalesce with it, leaving the driver waiting on the wrong reload (a long
        run met it: a valid file never read, the broken one after it rejected)."""
        d = self.daemon
        while j is not None:
            i = d.wait_notify(r"^RELOADING=1$", j + 1, timeout=0.5 * self.slow, quiet=True)
            if i is None:
                return
            j = d.wait_notify(r"^READY=1$", i, timeout=30 * self.slow)
            if j is None:
                self.alive()
                self.fail("SIGHUP storm: a queued reload sent RELOADING=1 but no READY=1 within 30 s")

    def write_stat(self, name):
        c = self.model[name]
        disk = f"{name}c{name[4:]}n1" if c["multipath"] else f"{name}n1"
        i, t = c["ios"], c["ticks"]
        self.ctl("stat", name, disk, f"{i} 0 {i * 8} {t} {i} 0 {i * 8} {t} 0 {t} {2 * t}")

    def event(self, ev):
        k = ev["kind"]
        d = self.daemon
        if k == "quiet":
            self.quiet_check()
        elif k == "reset":
            self.reset(ev["ctrl"])
        elif k == "resume":
            GLib = self.GLib
            self.bus.conn.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                      "PrepareForSleep", GLib.Variant("(b)", (True,)))
            self.bus.conn.flush_sync(None)
            time.sleep(ev["asleep_ms"] / 1000)
            for n in ev["reset"]:
                self.reset(n)        # the kernel's resume path resets the controller and writes its table
            self.bus.conn.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                      "PrepareForSleep", GLib.Variant("(b)", (False,)))
            self.bus.conn.flush_sync(None)
        elif k == "add":
            idc = ev["id"]
            c = self._new_ctrl(idc, ev["multipath"], False)
            # added in state connecting (no change uevent yet): the table the kernel's probe wrote is read
            # before the daemon may touch it, then the controller goes live as after a reset
            keys = f"{ev['ctrl']},idctrl={c['id']},pci={idc[1]},initial-table=kernel,state=connecting"
            if ev["multipath"]:
                keys += ",multipath=1"
            self.ctl("add", keys)
            c["orig"] = c["restore"] = self.table(ev["ctrl"])
            c["nonlive"] = (0, "connecting")
            self.model[ev["ctrl"]] = c
            self.reset(ev["ctrl"])
        elif k == "remove":
            self.close_nonlive(ev["ctrl"])
            self.ctl("remove", ev["ctrl"])
            del self.model[ev["ctrl"]]
            self.removed.add(ev["ctrl"])
            self.check_violations([ev["ctrl"]])
        elif k == "reload":
            self.config = ev["config"]
            n = len(d.notifications)
            self.write_conf(CONFIGS[self.config][0])
            d.signal(signal.SIGHUP)
            self.wait_reloaded(n)
        elif k == "reload-broken":
            n = len(d.notifications)
            self.write_conf(None, raw=BROKEN[ev["broken"]].encode("latin-1"))
            d.signal(signal.SIGHUP)
            self.wait_reloaded(n)
        elif k == "hup-storm":
            self.config = ev["config"]
            n = len(d.notifications)
            self.write_conf(CONFIGS[self.config][0])
            for _ in range(ev["n"]):
                d.signal(signal.SIGHUP)
                time.sleep(0.002)
            self.drain_reloads(self.wait_reloaded(n))
        elif k == "supply":
            self.ac = ev["ac"]
            self.ctl("supply", "AC", f"online={1 if self.ac else 0}")
            self.ctl("supply", "BAT0", f"status={'Charging' if self.ac else 'Discharging'}")
        elif k == "profile":
            self.set_profile(ev["profile"])
        elif k == "io":
            c = self.model[ev["ctrl"]]
            for b in range(ev["bursts"]):
                c["ios"] += ev["ios"]
                # a wake costs the exit latency; the liar's cost three times what it advertises (10 ms)
                c["ticks"] += ev["ios"] + (30 if c["liar"] else 10)
                self.write_stat(ev["ctrl"])
                time.sleep(ev["gap_ms"] / 1000)
        elif k == "silence":
            time.sleep(ev["ms"] / 1000)
        elif k == "fault":
            self.ctl("fault", ev["ctrl"], ev["rule"])
            self.model[ev["ctrl"]]["faulted"] = True
        elif k == "clear":
            self.ctl("clear", ev["ctrl"])
        elif k == "hang":
            self.hang(ev["ctrl"])
        elif k == "fail":
            self.inject_failure(ev["ctrl"])
        elif k == "not-live":
            n = ev["ctrl"]
            self.ctl("set-attr", n, "state", ev["state"])
            self.settle_ctrl(n)
            if self.model[n]["nonlive"] is None:
                self.model[n]["nonlive"] = (len(self.loglines(n)), ev["state"])
        elif k == "pmqos":
            # as the kernel does: a changed value rewrites the table (its own, for that limit) and then
            # the attribute, in place, with no uevent; the daemon must notice through its inotify watch
            # and have its table back by the next quiet period (checked there as usual). Refused when
            # the kernel has no such attribute (APST off at start).
            n = ev["ctrl"]
            taken = os.path.exists(os.path.join(self.rdir, f"ctrl-{n}.orig"))
            self.ctl("pmqos", n, str(ev["us"]), ok=False)
            if not taken:
                # The daemon has no original for it yet (hot-plugged a moment ago, or not live until
                # now): it puts back the table it finds before its first write (nvme-apstd(8)), which
                # is the kernel's from before this write or the one this write made, as the two race.
                t = self.table(n)
                c = self.model[n]
                if t != c["restore"] and t not in c["also"]:
                    c["also"].append(t)
                    print(f"soak: event {self.done}: {n} rewritten by pm_qos before the daemon took its table: "
                          f"either table may be put back at stop", flush=True)
        elif k == "dbus-read":
            for _ in range(ev["n"]):
                try:
                    self.managed_objects(timeout_ms=int(20000 * self.slow))
                    self.bus_reads += 1
                except Exception as e:  # noqa: BLE001
                    self.alive()
                    self.fail(f"GetManagedObjects failed on a running daemon: {e}")
                    break
        elif k == "sigkill":
            time.sleep(ev["after_ms"] / 1000)
            self.end_daemon(kill=True)
            time.sleep(ev["restart_ms"] / 1000)
            self.start_daemon()
        elif k == "hold":
            self.hold_start(ev["latency"])
        elif k == "unhold":
            self.hold_end(ev["how"], ev["pick"])
        elif k == "stop-start":
            self.normalise()
            self.settle()
            leave = ev["leave_not_live"]
            if leave and leave in self.model:
                self.ctl("set-attr", leave, "state", "resetting")
                self.settle_ctrl(leave)
                self.model[leave]["nonlive"] = (len(self.loglines(leave)), "resetting")
            self.end_daemon()
            self.check_restored(skip=leave)
            self.check_nonlive_so_far()
            self.start_daemon()
        self.alive()

    def check_restored(self, skip=None):
        """After a clean stop: every live controller and CPU as before the first start; no record left
        but that of @skip (not live at stop: its original could not be put back)."""
        for n, c in self.model.items():
            if n == skip:
                continue
            have = self.table(n)
            self.checks += 1
            want = c["restore"]
            below = self.quarantined_below(c["id"])
            if below is not None and have != want:
                # the original put back without its transitions to the quarantined states
                if not self.filtered_from(want, have, below):
                    self.fail(f"{n}: after stop holds {fmt(have)}; the original {fmt(want)} without its "
                              f"transitions to ps{below} and deeper (APST off at 0) was expected")
                c["restore"], c["also"] = have, []
                continue
            if have != want and have not in c["also"]:
                self.fail(f"{n}: after stop holds {fmt(have)}, before the first start it held {fmt(want)}" +
                          "".join(f" (or, after an early pm_qos write, {fmt(t)})" for t in c["also"]))
            else:
                if have != want:
                    print(f"soak: event {self.done}: {n} got back the table an early pm_qos write made", flush=True)
                # what the next start finds, and so what its stop must put back
                c["restore"], c["also"] = have, []
        snap = self.cpu_snapshot()
        self.checks += 1
        if snap != self.cpu_orig:
            self.fail(f"after stop the CPU policy is {snap}, before the first start {self.cpu_orig}")
        if any((f.endswith(".orig") and f != f"ctrl-{skip}.orig") or f == "cpufreq-saved"
               for f in os.listdir(self.rdir)):
            self.fail(f"runtime records left after a clean stop: {os.listdir(self.rdir)}")

    def run(self):
        self.start_bus()
        for n, c in self.model.items():
            c["orig"] = c["restore"] = self.table(n)
        self.cpu_orig = self.cpu_snapshot()
        t0 = time.monotonic()
        try:
            self.start_daemon()
            for ev in self.events:
                self.event_times.append((time.time(), self.done))
                self.event(ev)
                self.done += 1
                if self.violations and not self.args.keep_going:
                    break
            if self.daemon:
                self.normalise()
                self.settle()
                self.end_daemon()
                self.check_restored()
                self.check_nonlive_so_far()
                self.check_violations(list(self.model) + sorted(self.removed))
        except Violation:
            pass
        finally:
            self.reader_stop = True
            self.hold_stop_all()
            if self.daemon and self.daemon.proc.poll() is None:
                self.daemon.proc.kill()
                self.daemon.proc.wait()
            self.bus.close()
            if self.journal:
                self.journal.close()
        span = time.monotonic() - t0
        gaps = max(self.wd_gaps) if self.wd_gaps else 0
        real_events = sum(1 for e in self.events[:self.done] if e["kind"] != "quiet")
        stats = {"seed": self.header["seed"], "events": real_events, "seconds": round(span, 1),
                 "checks": self.checks, "peak_rss_kib": self.peak_rss, "bus_reads": self.bus_reads,
                 "bus_no_reply": self.bus_errors, "instances": self.instances,
                 "max_watchdog_gap_s": round(gaps, 2), "peak_event_sources": self.peak_sources,
                 "long_hangs": self.hangs,
                 "failures": dict(self.failures, quarantined=len(self.quarantines())),
                 "journal_entries": self.journal_entries_seen, "holds": self.hold_stats,
                 "violations": len(self.violations)}
        if self.bus_errors:
            self.violations.append(f"{self.bus_errors} D-Bus call(s) without a reply from a running daemon")
        print("soak-stats: " + json.dumps(stats), flush=True)
        return not self.violations


def fmt(t):
    apste, e = t
    nz = [f"[{i}]=0x{x:x}" for i, x in enumerate(e) if x]
    return f"apste={apste} {' '.join(nz) or 'all-zero'}"


# ---------------------------------------------------------------- the outer run

def harness_args():
    a = []
    for name, idc, mp, _ in INITIAL:
        keys = f"{name},idctrl={os.path.join(IDDIR, idc[0])},pci={idc[1]},initial-table=kernel"
        if mp:
            keys += ",multipath=1"
        a += ["--ctrl", keys]
    for s in SUPPLIES:
        a += ["--power-supply", s]
    return a + ["--cpufreq", str(CPUS)]


def outer(args):
    wrapper = os.environ.get("UMOCKDEV_WRAPPER", "umockdev-wrapper")
    tb = os.environ.get("FAKE_TB")
    if not tb:
        T.skip("FAKE_TB (the fake-nvme-tb harness) not set; run through meson")
    os.makedirs(args.out, exist_ok=True)
    runs = []
    if args.replay:
        with open(args.replay) as f:
            header = json.loads(f.readline())
        runs.append((header["seed"], args.replay))
    else:
        seeds = list(args.seed or [])
        for _ in range(args.random):
            s = random.SystemRandom().randrange(1, 2 ** 31)
            print(f"soak: random seed {s} (reproduce: soak.py --seed {s} --events {args.events})", flush=True)
            seeds.append(s)
        for s in seeds:
            path = os.path.join(args.out, f"soak-{s}.events")
            with open(path, "w") as f:
                f.write(json.dumps({"seed": s, "events": args.events}) + "\n")
                for ev in generate(s, args.events):
                    f.write(json.dumps(ev) + "\n")
            runs.append((s, path))
    failed = []
    total = {"events": 0, "checks": 0, "seconds": 0.0, "peak_rss_kib": 0, "runs": 0}

    def one(seed, path):
        state = os.path.join(args.out, f"state-{seed}")
        shutil.rmtree(state, ignore_errors=True)   # the fake appends to nvmeN.log: a previous run's lines
        cmd = [wrapper, tb, "--state-dir", state, *harness_args(), "--", sys.executable, os.path.abspath(__file__),
               "--inner", path] + (["--keep-going"] if args.keep_going else [])
        print(f"soak: seed {seed}: {path}", flush=True)
        with open(os.path.join(args.out, f"soak-{seed}.log"), "w+") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
            log.seek(0)
            return seed, path, state, rc, log.read()

    # each seed is its own harness (testbed, bus, daemon, runtime directory): they share nothing, so
    # --jobs runs several at once; most of a run is waiting, so more jobs than processors still fit
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(one, seed, path) for seed, path in runs]
        for fut in concurrent.futures.as_completed(futures):
            seed, path, state, rc, out = fut.result()
            if args.verbose or rc != 0:
                sys.stdout.write(out)
            m = re.findall(r"^soak-stats: (.*)$", out, re.M)
            if m:
                st = json.loads(m[-1])
                print(f"soak: seed {seed}: {st}", flush=True)
                for k in ("events", "checks", "seconds"):
                    total[k] += st[k]
                total["peak_rss_kib"] = max(total["peak_rss_kib"], st["peak_rss_kib"])
            total["runs"] += 1
            if rc == 77 and not m:
                T.skip(out.strip().splitlines()[-1] if out.strip() else "skipped")
            if rc != 0:
                failed.append(seed)
                print(f"soak: seed {seed} FAILED (harness exit {rc}); replay with: "
                      f"{os.path.abspath(__file__)} --replay {path}   (or --seed {seed} --events {args.events}); "
                      f"state and logs in {state}", flush=True)
    total["events_per_s"] = round(total["events"] / total["seconds"], 2) if total["seconds"] else 0
    print("soak-total: " + json.dumps(total), flush=True)
    if failed:
        print(f"soak: {len(failed)} of {len(runs)} run(s) failed: seeds {failed}")
        sys.exit(1)
    print(f"soak: {len(runs)} run(s), {total['events']} events, {total['checks']} invariant checks, no violation")


def inner(args):
    T.require_harness()
    with open(args.inner) as f:
        header = json.loads(f.readline())
        events = [json.loads(line) for line in f if line.strip()]
    s = Soak(args, events, header)
    ok = s.run()
    if not ok:
        print(f"soak: seed {header['seed']}: {len(s.violations)} violation(s):")
        for v in s.violations:
            print("  " + v.replace("\n", "\n    "))
        print(f"soak: event log {args.inner}")
        sys.exit(1)
    sys.exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, action="append", help="a seed (repeatable)")
    ap.add_argument("--random", type=int, default=0, help="this many random seeds too (printed)")
    ap.add_argument("--events", type=int, default=150)
    ap.add_argument("--replay", help="an event log written by a previous run")
    ap.add_argument("--out", default=os.environ.get("SOAK_OUT", "soak-out"))
    ap.add_argument("--jobs", type=int, default=1, help="run this many seeds at once (default 1)")
    ap.add_argument("--keep-going", action="store_true", help="do not stop at the first violation")
    ap.add_argument("--verbose", action="store_true", help="print every run's output, not only failures'")
    ap.add_argument("--without", default="", help="kinds of event to leave out, comma-separated (e.g. fail)")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    unknown = set(filter(None, args.without.split(","))) - set(WEIGHTS)
    if unknown:
        ap.error(f"--without: no such event kind: {', '.join(sorted(unknown))}")
    if args.without:
        os.environ["SOAK_WITHOUT"] = args.without
        WITHOUT.update(filter(None, args.without.split(",")))
    if args.inner:
        inner(args)
    else:
        if not args.seed and not args.random and not args.replay:
            args.seed = [1]
        outer(args)


if __name__ == "__main__":
    main()
