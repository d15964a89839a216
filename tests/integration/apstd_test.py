# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers for integration tests that run the real nvme-apstd under the fake
NVMe controller harness (tests/fake). Each test script runs as the harness's
COMMAND, so $FAKE_NVME_STATE and $FAKE_NVME_CTL_PROG are set, /sys and /dev
are the testbed's, and every admin command is checked by the harness's
allow-list oracle (the harness exits 1 on a violation even if we pass)."""

import getpass
import json
import os
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

NVME_APSTD = os.environ.get("NVME_APSTD", "nvme-apstd")
# A command line every nvme-apstd run goes through, e.g. tests/ci-extra.sh's
# "valgrind --error-exitcode=99 ...". The wrapper wraps the daemon itself, never
# umockdev-wrapper or the harness (tests/fake/README.md), and the preloads reach
# the daemon through the environment as before. Its error exit status
# (NVME_APSTD_WRAPPER_RC, default 99) fails the test whatever the test expected.
WRAPPER = shlex.split(os.environ.get("NVME_APSTD_WRAPPER", ""))
WRAPPER_RC = int(os.environ.get("NVME_APSTD_WRAPPER_RC", "99"))
STATE = os.environ.get("FAKE_NVME_STATE", "")
CTL = os.environ.get("FAKE_NVME_CTL_PROG", "fake-nvme-ctl")
DATA = os.environ.get("TEST_DATA_DIR", os.path.join(os.path.dirname(__file__), "..", "data"))

failures = 0


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def check(cond, what):
    global failures
    if cond:
        print(f"ok: {what}")
    else:
        failures += 1
        print(f"FAIL: {what}")
    return cond


def done():
    if failures:
        print(f"{failures} check(s) failed")
        sys.exit(1)
    print("all checks passed")
    sys.exit(0)


def require_harness():
    if not STATE:
        skip("not running under the fake controller harness (FAKE_NVME_STATE unset)")


def read_table(name, state=None):
    """(apste, [32 ints]) as the fake controller holds it now (or as a copy of its state in @state holds it)."""
    with open(os.path.join(state or STATE, f"{name}.table")) as f:
        words = f.read().split()
    apste = None
    entries = []
    for w in words:
        if w.startswith("apste="):
            apste = int(w.split("=", 1)[1])
        else:
            entries.append(int(w, 0))
    return apste, entries


def kmsg_record(seq, name, message, prio=4):
    """One record of an nvme controller's message as /dev/kmsg gives it (header, text, then the device
    it names), for the daemon's kernel log (NVME_APSTD_KERNEL_LOG)."""
    return (f"{prio},{seq},{int(time.monotonic() * 1e6)},-;nvme {name}: {message}\n SUBSYSTEM=nvme\n"
            f" DEVICE=+nvme:{name}\n")


def write_table_file(path, apste, entries):
    with open(path, "w") as f:
        f.write(f"apste={apste}\n")
        for e in entries:
            f.write(f"0x{e:016x}\n")


def read_log(name, state=None):
    """Admin commands the controller saw, as dicts (opc, cdw10, cdw11, status/errno); @state as read_table()."""
    out = []
    try:
        with open(os.path.join(state or STATE, f"{name}.log")) as f:
            for line in f:
                d = dict(re.findall(r"(\w+)=(\S+)", line))
                d["line"] = line.strip()
                out.append(d)
    except FileNotFoundError:
        pass
    return out


def count_cmds(name, opc):
    return sum(1 for d in read_log(name) if d.get("opc") == opc)


SET, GET, IDENTIFY = "0x09", "0x0a", "0x06"


def check_wrapper(rc, what):
    """Count a wrapper-reported error (valgrind finding) as a failure."""
    if WRAPPER and rc == WRAPPER_RC:
        check(False, f"{what}: {WRAPPER[0]} reported errors (exit {rc}), see its output above")


def ctl(*args, check_rc=True):
    p = subprocess.run([CTL, *args], capture_output=True, text=True, timeout=30)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"fake-nvme-ctl {' '.join(args)}: rc={p.returncode} {p.stderr.strip()}")
    return p.stdout


def run(*args, env=None, timeout=60):
    e = dict(os.environ)
    e.setdefault("NVME_APSTD_LOG_TARGET", "console")
    e.setdefault("NVME_APSTD_LOG_FIELDS", "1")
    if env:
        e.update(env)
    p = subprocess.run(WRAPPER + [NVME_APSTD, *args], capture_output=True, text=True, timeout=timeout, env=e)
    sys.stdout.write(f"$ nvme-apstd {' '.join(args)}  -> rc={p.returncode}\n{p.stdout}{p.stderr}")
    check_wrapper(p.returncode, f"nvme-apstd {' '.join(args)}")
    return p


def plan_table(config, idfile, pci=None):
    """The table `plan --json` computes for an Identify file."""
    args = ["plan", "--json", "--config", config, "--id-ctrl", idfile]
    if pci:
        args += ["--pci-id", pci]
    p = run(*args)
    assert p.returncode == 0, p.stderr
    c = json.loads(p.stdout)["controllers"][0]
    return (1 if c["apste"] else 0), [int(x, 16) for x in c["table"]]


def write_config(text, path=None):
    if path is None:
        fd, path = tempfile.mkstemp(prefix="apstd-", suffix=".conf")
        os.close(fd)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    return path


def entry(itps, itpt_ms):
    return (itpt_ms << 8) | (itps << 3)


def wait_for(pred, timeout=10.0, what="condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    print(f"timed out after {timeout}s waiting for {what}")
    return None


def start_system_bus(bus_dir, extra_policy=""):
    """A dbus-daemon in @bus_dir that enforces what the system bus enforces (the default policy of
    dbus-daemon's system.conf, tests/integration/system-bus.conf.in) plus the shipped
    dbus/io.github.nvme_apstd.conf and @extra_policy (<policy> elements). Returns (Popen, address)."""
    here = os.path.dirname(os.path.abspath(__file__))
    policy = os.path.abspath(os.path.join(here, "..", "..", "dbus", "io.github.nvme_apstd.conf"))
    addr = f"unix:path={bus_dir}/bus"
    with open(os.path.join(here, "system-bus.conf.in")) as f:
        text = f.read().replace("@POLICY@", policy).replace("@USER@", getpass.getuser())
    conf = os.path.join(bus_dir, "bus.conf")
    with open(conf, "w") as f:
        f.write(text.replace("</busconfig>", extra_policy + "</busconfig>"))
    proc = subprocess.Popen([shutil.which("dbus-daemon") or "dbus-daemon", f"--config-file={conf}", "--nofork",
                             f"--address={addr}", "--print-address=1"], stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    return proc, addr


class PrivateBus:
    """A dbus-daemon of the test's own standing in for the system bus, and a Gio connection to it.

    Skips (77) when python3-gi or dbus-daemon is missing. Give the daemon
    DBUS_SYSTEM_BUS_ADDRESS=bus.addr; call close() when done."""

    def __init__(self):
        try:
            import gi
            gi.require_version("Gio", "2.0")
            from gi.repository import Gio, GLib
        except (ImportError, ValueError) as e:
            skip(f"python3-gi (Gio) not available: {e}")
        dbus_daemon = shutil.which("dbus-daemon")
        if not dbus_daemon:
            skip("dbus-daemon not installed")
        self.Gio, self.GLib = Gio, GLib
        self.dir = tempfile.mkdtemp(prefix="apstd-bus-")
        self.addr = f"unix:path={self.dir}/bus"
        self.proc = subprocess.Popen([dbus_daemon, "--session", "--nofork", f"--address={self.addr}",
                                      "--print-address=1"], stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()
        self.conn = Gio.DBusConnection.new_for_address_sync(
            self.addr,
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)

    def call_bus(self, method, signature, args):
        """A call to org.freedesktop.DBus itself; returns the unpacked reply."""
        return self.conn.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
                                   self.GLib.Variant(signature, args), None, self.Gio.DBusCallFlags.NONE, -1,
                                   None).unpack()

    def get_property(self, dest, path, iface, prop, timeout_ms=5000):
        """org.freedesktop.DBus.Properties.Get on @dest; returns the unpacked value."""
        return self.conn.call_sync(dest, path, "org.freedesktop.DBus.Properties", "Get",
                                   self.GLib.Variant("(ss)", (iface, prop)), None, self.Gio.DBusCallFlags.NONE,
                                   timeout_ms, None).unpack()[0]

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Daemon:
    """nvme-apstd run with its own NOTIFY_SOCKET and RUNTIME_DIRECTORY."""

    def __init__(self, config, runtime_dir=None, extra_env=None, args=(), preexec_fn=None, prefix=()):
        self.dir = tempfile.mkdtemp(prefix="apstd-daemon-")
        self.runtime_dir = runtime_dir or os.path.join(self.dir, "run")
        os.makedirs(self.runtime_dir, exist_ok=True)
        self.notify_path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.notify_path)
        self.notifications = []
        self.stderr_path = os.path.join(self.dir, "stderr")
        env = dict(os.environ)
        env.update({
            "NOTIFY_SOCKET": self.notify_path,
            "RUNTIME_DIRECTORY": self.runtime_dir,
            "NVME_APSTD_LOG_TARGET": "console",
            "NVME_APSTD_LOG_FIELDS": "1",
        })
        env.pop("WATCHDOG_USEC", None)
        if extra_env:
            env.update(extra_env)
        if "NVME_APSTD_KERNEL_LOG" not in env:
            # a quiet kernel log of its own: the machine's /dev/kmsg would wake it (and could name an nvme0)
            env["NVME_APSTD_KERNEL_LOG"] = os.path.join(self.dir, "kmsg")
            os.mkfifo(env["NVME_APSTD_KERNEL_LOG"])
        self.err = open(self.stderr_path, "w")
        # @prefix: a command that execs the rest (the PID stays the daemon's), e.g. unshare(1)
        self.proc = subprocess.Popen([*prefix, *WRAPPER, NVME_APSTD, "run", "--config", config, *args], stdout=self.err,
                                     stderr=self.err, env=env, preexec_fn=preexec_fn)

    def poll_notify(self, timeout=0.0):
        # Never a blocking recv(): a test may read the socket from a second thread as well (one that
        # keeps it from filling up), and the datagram select() announced may be gone to that thread.
        r, _, _ = select.select([self.sock], [], [], timeout)
        while r:
            try:
                msg = self.sock.recv(65536, socket.MSG_DONTWAIT).decode(errors="replace")
            except BlockingIOError:
                return
            self.notifications.append(msg)
            r, _, _ = select.select([self.sock], [], [], 0)

    def drain_notify(self):
        """Read the notify socket from a thread while the daemon runs, as systemd does: every event sends
        a STATUS=, and once the datagram queue (net.unix.max_dgram_qlen, 10) is full the daemon's
        sd_notify() blocks, where no SIGTERM reaches it. What the thread reads still lands in
        notifications, for wait_notify(). Returns an Event that stops it; it stops too when the daemon
        exits. Opt-in: tests that time the daemon by its notifications read the socket themselves."""
        stop = threading.Event()

        def loop():
            while not stop.is_set() and self.proc.poll() is None:
                try:
                    self.poll_notify(0.1)
                except (OSError, ValueError):
                    return
        threading.Thread(target=loop, daemon=True).start()
        return stop

    def wait_notify(self, pattern, start=0, timeout=10.0, quiet=False):
        """Index of the first notification at or after @start matching regex @pattern; None (said
        unless @quiet) if none came within @timeout."""
        end = time.monotonic() + timeout
        while True:
            for i in range(start, len(self.notifications)):
                if re.search(pattern, self.notifications[i], re.M):
                    return i
            left = end - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.poll_notify(0)
                for i in range(start, len(self.notifications)):
                    if re.search(pattern, self.notifications[i], re.M):
                        return i
                if not quiet:
                    print(f"no notification matching {pattern!r}; got {self.notifications[start:]}")
                return None
            self.poll_notify(min(left, 0.2))

    def log(self):
        with open(self.stderr_path) as f:
            return f.read()

    def wait_log(self, pattern, timeout=10.0, after=0):
        """Wait until the daemon's stderr (from offset @after) matches; returns the match end offset."""
        def find():
            m = re.search(pattern, self.log()[after:], re.M)
            return (after + m.end()) if m else None
        r = wait_for(find, timeout, f"log line matching {pattern!r}")
        return r

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=None):
        # Under a wrapper (valgrind: tens of times slower, and CI runs tests side by side) a
        # stop that restores every controller's table can take longer than 20 s.
        if timeout is None:
            timeout = 60 if WRAPPER else 20
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            print(f"daemon still running {timeout} s after SIGTERM: killed")
            self.threads()
            self.proc.kill()
            rc = self.proc.wait()
        self.poll_notify(0)
        self.err.close()
        if WRAPPER and rc == WRAPPER_RC:
            print(self.log())
        elif rc != 0:
            # why it did not exit 0 is in its last lines; a test's own dump may come too late or
            # not at all (CI keeps only part of a long output)
            tail = self.log().splitlines()[-30:]
            print(f"daemon exit status at stop: {rc}; the last {len(tail)} lines of its log:")
            for line in tail:
                print(f"  | {line}")
        check_wrapper(rc, "nvme-apstd run")
        return rc

    def threads(self):
        """Where each of the daemon's threads is: its state, the kernel function it waits in and
        the system call it is in (number and arguments), for a daemon that does not answer."""
        base = f"/proc/{self.proc.pid}/task"
        try:
            tids = sorted(os.listdir(base), key=int)
        except OSError:
            return
        for tid in tids:
            info = {}
            for name in ("comm", "wchan", "syscall", "stat"):
                try:
                    with open(f"{base}/{tid}/{name}") as f:
                        info[name] = f.read().strip()
                except OSError as e:
                    info[name] = f"({e.strerror})"
            state = info["stat"].rsplit(")", 1)[-1].split()[0] if ")" in info["stat"] else "?"
            print(f"  thread {tid} {info['comm']}: state {state}, waits in {info['wchan']}, syscall {info['syscall']}")

    def dump(self):
        print("---- daemon stderr ----")
        print(self.log())
        print("---- notifications ----")
        for n in self.notifications:
            print(repr(n))
