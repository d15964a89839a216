#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`nvme-apstd hold -- COMMAND` (src/cli/cmd-hold.c, doc/holds.md) against the real daemon under
the fake controller, on a private dbus-daemon that enforces the system bus's default policy plus
the shipped dbus/io.github.nvme_apstd.conf, with python-dbusmock's polkitd template as polkit.
Run as the harness's COMMAND (nvme0 starts with the kernel's table, so the daemon's budget table,
the held table and the kernel's all differ): test-hold-cli.py SCENARIO

  command   as root (allowed without polkit): COMMAND's first action sees the held table already
            in force (the fake recorded the Set Features before it); the table goes back when it
            exits; its exit status is ours, 125 for a hold the daemon refuses (COMMAND not run),
            126 and 127 for a COMMAND that cannot run; a death by signal is passed on as the same
            death; SIGINT, SIGTERM and SIGHUP reach COMMAND; `status` and `status --json` show
            the hold while it lasts, and whether it sets the budget
  polkit    an unprivileged client (setpriv): polkit refuses, COMMAND never runs, exit 125;
            polkit allows, the hold is in force before COMMAND runs
  restart   the daemon restarted while COMMAND runs: the hold is taken again as soon as the new
            daemon is on the bus, and the client says so on stderr
"""

import getpass
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
DBUS_DAEMON = shutil.which("dbus-daemon")
BUSCTL = shutil.which("busctl")
PYTHON = "/usr/bin/python3"
if not DBUS_DAEMON or not BUSCTL:
    skip("dbus-daemon or busctl not installed")
if subprocess.run([PYTHON, "-c", "import dbusmock"], capture_output=True).returncode != 0:
    skip("python3-dbusmock not installed (tests/deps.sh)")

SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
CONF = write_config("[apst]\npolicy = budget\n")
NAME = "io.github.nvme_apstd"
ROOT = "/io/github/nvme_apstd"
M_IFACE = "io.github.nvme_apstd.Manager1"
ACTION = "io.github.nvme_apstd.hold-latency"
POLKIT = "org.freedesktop.PolicyKit1"
POLKIT_PATH = "/org/freedesktop/PolicyKit1/Authority"
HELD = (0, [0] * 32)       # --max-latency 0: no idle power state, APSTE off
# nobody: what an unprivileged client runs as
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


class Bus:
    """The private system bus: the default policy of dbus-daemon's system.conf, the shipped policy file,
    and polkit's own (what its package installs): the test's user may own org.freedesktop.PolicyKit1,
    everyone may call it. dbusmock's polkitd refuses every action until allow() is called."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="apstd-hold-bus-")
        os.chmod(self.dir, 0o755)       # an unprivileged client connects too
        polkit = (f'  <policy user="{getpass.getuser()}"><allow own="{POLKIT}"/></policy>\n'
                  f'  <policy context="default"><allow send_destination="{POLKIT}"/></policy>\n')
        self.proc, self.addr = start_system_bus(self.dir, polkit)
        self.env = {"DBUS_SYSTEM_BUS_ADDRESS": self.addr}
        e = dict(os.environ, **self.env)
        self.polkit = subprocess.Popen([PYTHON, "-m", "dbusmock", "--system", "--template", "polkitd"], env=e,
                                       stdout=subprocess.DEVNULL)
        if not wait_for(lambda: self.has_owner(POLKIT), 10, "dbusmock's polkitd on the bus"):
            raise RuntimeError("polkitd mock did not start")

    def busctl(self, *args):
        return subprocess.run([BUSCTL, f"--address={self.addr}", *args], capture_output=True, text=True, timeout=30)

    def has_owner(self, name):
        p = self.busctl("--json=short", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
                        "org.freedesktop.DBus", "NameHasOwner", "s", name)
        return p.returncode == 0 and json.loads(p.stdout)["data"] == [True]

    def allow(self, actions):
        p = self.busctl("call", POLKIT, POLKIT_PATH, "org.freedesktop.DBus.Mock", "SetAllowed", "as",
                        str(len(actions)), *actions)
        assert p.returncode == 0, p.stderr

    def close(self):
        for p in (self.polkit, self.proc):
            p.terminate()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Hold:
    """`nvme-apstd hold ARGS` in the background; COMMAND is a shell script with $D set to a scratch directory
    it may write (and $STATE to the fake's state, for the script's first action)."""

    def __init__(self, bus, args, script, prefix=(), scratch=None):
        self.d = scratch or tempfile.mkdtemp(prefix="apstd-hold-")
        os.chmod(self.d, 0o1777)
        env = dict(os.environ, **bus.env, D=self.d, STATE=STATE, NVME_APSTD_LOG_TARGET="console")
        self.err_path = os.path.join(self.d, "client.err")
        self.err = open(self.err_path, "w")
        self.argv = [*prefix, *WRAPPER, NVME_APSTD, "hold", *args, "--", "sh", "-c", script]
        print(f"$ nvme-apstd hold {' '.join(args)} -- sh -c '{script}'")
        # a session of its own: a signal the test sends is not the terminal's
        self.proc = subprocess.Popen(self.argv, env=env, stdout=subprocess.DEVNULL, stderr=self.err,
                                     start_new_session=True)

    def path(self, name):
        return os.path.join(self.d, name)

    def wait_file(self, name, timeout=15.0):
        return wait_for(lambda: os.path.exists(self.path(name)), timeout, f"{name} from the command")

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def wait(self, timeout=30):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            print("hold client did not exit in time: killed")
        self.err.close()
        print(f"  -> rc={rc}\n{self.stderr()}")
        check_wrapper(rc, "nvme-apstd hold")
        return rc


# The command's first action: a copy of the fake controller's state (table and admin log) as it is then.
SNAPSHOT = 'cp "$STATE/nvme0.table" "$STATE/nvme0.log" "$D/"; '


def snapshot_table(h):
    return read_table("nvme0", state=h.d)


def hold_once(bus, args, script, expect_rc, what, prefix=()):
    """Run hold to its end; check its exit status. Returns the Hold."""
    h = Hold(bus, args, script, prefix)
    rc = h.wait()
    check(rc == expect_rc, f"{what}: exit {rc} (want {expect_rc})")
    return h


def new_daemon(bus):
    d = Daemon(CONF, extra_env=bus.env)
    d.drain_notify()
    return d


def start(bus):
    d = new_daemon(bus)
    if not check(d.wait_notify(r"^READY=1$") is not None, "daemon READY=1"):
        d.dump()
    p = bus.busctl("introspect", "--no-pager", NAME, ROOT, M_IFACE)
    if ".HoldLatency" not in p.stdout:
        d.stop()
        bus.close()
        skip("this daemon has no HoldLatency method (the daemon side of latency holds is not built in)")
    return d


def finish(d, bus):
    """What every scenario does last, whatever happened: the daemon stopped, its log shown, the bus gone."""
    if d.proc.poll() is None:
        d.stop()
    d.dump()
    bus.close()


def table_back(want, what):
    check(wait_for(lambda: read_table("nvme0") == want, 1.0, what) is not None, f"{what}: within 1 s")


def scenario_command():
    bus = Bus()
    planned = plan_table(CONF, SAMSUNG, "144d:a808")
    d = start(bus)
    try:
        check(read_table("nvme0") == planned, "the daemon's budget table is in force")
        sets_before = count_cmds("nvme0", SET)
        h = hold_once(bus, ["--max-latency", "0", "--reason", "render", "--app-id", "test.job", "nvme0"],
                      SNAPSHOT + 'exit 7', 7, "COMMAND's exit status 7 is ours")
        check(snapshot_table(h) == HELD, "COMMAND's first action saw the held table (APSTE 0) in force")
        first_log = read_log("nvme0", state=h.d)
        check(sum(1 for x in first_log if x.get("opc") == SET) == sets_before + 1,
              "... written by exactly one Set Features before COMMAND started")
        table_back(planned, "the budget table back after COMMAND exited")

        # the latency as a time span with a unit: the table built for it (what plan builds for 1.5 ms)
        tight = write_config("[apst]\npolicy = budget\nmax_latency_us = 1500\n")
        want = plan_table(tight, SAMSUNG, "144d:a808")
        h = hold_once(bus, ["--max-latency", "1.5ms"], SNAPSHOT, 0, "--max-latency 1.5ms on every controller")
        check(snapshot_table(h) == want and want != planned, "the 1500 us table in force while COMMAND ran")
        table_back(planned, "the budget table back")

        # 125: the daemon refuses (a controller it does not have); COMMAND never runs, the message says why
        h = hold_once(bus, ["nvme7"], 'touch "$D/ran"', 125, "hold on nvme7 (no such controller): 125")
        check(not os.path.exists(h.path("ran")) and "nvme7" in h.stderr(), "COMMAND not run; the error names nvme7")
        # 126 and 127: COMMAND cannot run; the hold that was taken for it is released. Not under valgrind:
        # glibc's posix_spawn() learns of a failed exec through the memory a CLONE_VFORK child shares with
        # its parent, which valgrind does not emulate, so there the child's exit (127) is all it sees.
        cases = (([os.path.join(h.d, "client.err")], 126), (["/nonexistent/command"], 127))
        if WRAPPER and os.path.basename(WRAPPER[0]) == "valgrind":
            print("not checked under valgrind: exit 126/127 and their message (posix_spawn's exec errors)")
            cases = ()
        for cmd, rc in cases:
            p = run("hold", "nvme0", "--", *cmd, env=bus.env)
            check(p.returncode == rc and "cannot run" in p.stderr, f"{cmd[0]}: exit {rc}, said")
            table_back(planned, f"after exit {rc}, the table back")
        check(read_table("nvme0") == planned, "the table back after the refused and failed holds")

        # a death by signal is ours too (sh kills itself: the shell sees the same signal)
        h = hold_once(bus, ["nvme0"], 'kill -KILL $$', -signal.SIGKILL, "COMMAND killed by SIGKILL: so are we")
        table_back(planned, "the table back after COMMAND's death")
        scenario_command_signals(bus, planned)
        scenario_command_status(bus, planned)
        check(d.stop() == 0, "daemon exit 0")
    finally:
        finish(d, bus)


def scenario_command_signals(bus, planned):
    # SIGINT, SIGTERM, SIGHUP sent to the client reach COMMAND (which exits with the signal's number)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        script = (f'trap \'echo {sig.name} > "$D/got"; exit {int(sig)}\' {sig.name[3:]}; touch "$D/ready"; '
                  'while :; do sleep 0.05; done')
        h = Hold(bus, ["nvme0"], script)
        check(h.wait_file("ready") is not None, f"{sig.name}: COMMAND running")
        check(read_table("nvme0") == HELD, f"{sig.name}: the hold in force while it runs")
        h.proc.send_signal(sig)
        rc = h.wait()
        got = open(h.path("got")).read().strip() if os.path.exists(h.path("got")) else None
        check(got == sig.name and rc == int(sig), f"{sig.name} to the client reached COMMAND ({got}, exit {rc})")
        table_back(planned, f"{sig.name}: the table back")


def scenario_command_status(bus, planned):
    h = Hold(bus, ["--max-latency", "0", "--reason", "a build", "--app-id", "make", "nvme0"],
             'touch "$D/ready"; while [ ! -e "$D/stop" ]; do sleep 0.05; done')
    check(h.wait_file("ready") is not None, "COMMAND running under its hold")
    loose = Hold(bus, ["--max-latency", "10s", "--app-id", "loose"],
                 'touch "$D/ready"; while [ ! -e "$D/stop" ]; do sleep 0.05; done')
    check(loose.wait_file("ready") is not None, "a second hold above the budget (10 s) running")
    s = run("status", env=bus.env)
    check(re.search(r"Holds: 2 in force", s.stdout), "status: two holds")
    check(re.search(r"hold \d+: nvme0, at most 0 us; make: a build, uid 0 \(root\), pid \d+\n.*since .*ago; "
                    r"sets the budget of nvme0", s.stdout), "status: who, why, since when, on what, its effect")
    check(re.search(r"hold \d+: every controller, at most 10000 ms; loose, .*\n.*no effect", s.stdout),
          "status: the hold above the budget has no effect")
    check(re.search(r"Held: latency budget 0 us in force, set by hold \d+", s.stdout), "status: nvme0 is held")
    sj = run("status", "--json", env=bus.env)
    j = json.loads(sj.stdout) if sj.returncode == 0 else {}
    holds = {x["application_id"]: x for x in j.get("holds", [])}
    m = holds.get("make", {})
    check(m.get("controller") == "nvme0" and m.get("max_latency_usec") == 0 and m.get("reason") == "a build" and
          m.get("uid") == 0 and m.get("pid", 0) > 0 and m.get("in_effect") is True and
          m.get("sets_budget_of") == ["nvme0"] and m.get("since_usec", 0) > (time.time() - 60) * 1e6,
          f"status --json: the hold ({m})")
    check(holds.get("loose", {}).get("in_effect") is False, "status --json: the loose hold has no effect")
    for x in (h, loose):
        open(x.path("stop"), "w").close()
        check(x.wait() == 0, "COMMAND done: exit 0")
    table_back(planned, "the table back after both")
    s = run("status", env=bus.env)
    check("Holds: none" in s.stdout, "status: no hold left")


def scenario_polkit():
    bus = Bus()
    planned = plan_table(CONF, SAMSUNG, "144d:a808")
    d = start(bus)
    try:
        p = subprocess.run(NOBODY + ["id", "-u"], capture_output=True, text=True)
        if p.returncode != 0 or p.stdout.strip() != "65534":
            skip(f"cannot run as nobody with setpriv: {p.stderr.strip()}")
        # nobody must reach the binary (and the wrapper open it): not so in a build tree under a
        # directory only root may search, such as a clone in mktemp -d's 0700 directory
        p = subprocess.run(NOBODY + WRAPPER + [NVME_APSTD, "--version"], capture_output=True, text=True)
        if p.returncode != 0:
            skip(f"nobody cannot run {NVME_APSTD} (exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}); "
                 "is every directory above the build tree searchable by others?")
        os.chmod(STATE, 0o755)      # COMMAND, run as nobody, copies the fake's table as its first action
        h = hold_once(bus, ["nvme0"], 'touch "$D/ran"', 125, "nobody, polkit refuses: 125", prefix=NOBODY)
        check(not os.path.exists(h.path("ran")), "COMMAND never ran")
        check("ccess denied" in h.stderr() or "AccessDenied" in h.stderr(), "the refusal is said")
        check(read_table("nvme0") == planned, "nothing written")
        bus.allow([ACTION])
        h = hold_once(bus, ["--max-latency", "0", "nvme0"], SNAPSHOT, 0, "nobody, polkit allows: exit 0",
                      prefix=NOBODY)
        check(snapshot_table(h) == HELD, "the held table was in force before COMMAND's first action")
        table_back(planned, "the table back")
        check(re.search(r"Latency hold \d+ taken by sh \(uid 65534, pid [1-9]\d*\)", d.log()),
              "the journal entry names the unprivileged caller: uid 65534 and its pid")
        check(d.stop() == 0, "daemon exit 0")
    finally:
        finish(d, bus)


def scenario_restart():
    bus = Bus()
    planned = plan_table(CONF, SAMSUNG, "144d:a808")
    d = start(bus)
    h = None
    try:
        h = Hold(bus, ["--max-latency", "0", "nvme0"],
                 'touch "$D/ready"; while [ ! -e "$D/stop" ]; do sleep 0.05; done; echo done > "$D/done"')
        check(h.wait_file("ready") is not None, "COMMAND running")
        check(read_table("nvme0") == HELD, "held")
        check(d.stop() == 0, "daemon stopped (its table put back)")
        check(h.proc.poll() is None, "the client and COMMAND run on without the daemon")
        d = new_daemon(bus)
        check(d.wait_notify(r"^READY=1$") is not None, "daemon started again")
        t0 = time.monotonic()
        ok = wait_for(lambda: read_table("nvme0") == HELD, 2.0, "the hold taken again")
        check(ok is not None, f"the hold taken again within 2 s of READY=1 ({time.monotonic() - t0:.2f} s)")
        check(wait_for(lambda: "in force again" in h.stderr(), 2.0, "the client's word") is not None,
              "the client said on stderr that the hold is in force again")
        open(h.path("stop"), "w").close()
        check(h.wait() == 0 and os.path.exists(h.path("done")), "COMMAND finished normally, exit 0")
        table_back(planned, "the budget table back after COMMAND")
        check(d.stop() == 0, "daemon exit 0")
    finally:
        if h and h.proc.poll() is None:
            h.proc.kill()
        finish(d, bus)


if scenario == "command":
    scenario_command()
elif scenario == "polkit":
    scenario_polkit()
elif scenario == "restart":
    scenario_restart()
else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)
done()
