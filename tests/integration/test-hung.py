# SPDX-License-Identifier: LGPL-2.1-or-later
"""A drive that stops answering: the daemon goes on. Run as the harness's COMMAND
(tests/integration/meson.build, suite 'hung'):

    test-hung.py SCENARIO

The harness starts nvme0 (Samsung 970 EVO Plus) and nvme1 (WDC SN550), both with the kernel's
table. A `delay=MS` fault holds one admin command of nvme0 that long, as a drive that does not
answer holds the ioctl until the kernel's admin timeout (60 s) ends it; the fake serves nvme1
meanwhile, as the kernel does. Each scenario checks, while nvme0 hangs:
  - WATCHDOG=1 never more than half of WATCHDOG_USEC apart;
  - nvme1's table written within 1 s of its start or reset, and restored at stop;
  - D-Bus property reads answered within 100 ms;
  - nvme0 marked unresponsive after the deadline (status, D-Bus State, the metric, the journal),
    re-checked when the command returns;
  - SIGTERM: STOPPING=1 within 1 s, the exit as soon as the responsive controllers are restored;
    nvme0's original kept for the next start, which restores it.

Scenarios: identify-start (a real 20 s hang on Identify at start, the default 10 s deadline),
get-start-reload (a real 70 s hang on Get Features at start, SIGHUP during it), set-stop (Set
Features hangs during stop; deadline 2 s), get-reset-sigterm (Get Features hangs after a reset,
SIGTERM during it; deadline 2 s), stuck-loop (the watchdog still catches a stuck loop),
lifecycle (a table in place at start is left alone at stop; a skipped controller is named apart).

Timing bounds are the targets in a plain run; under $NVME_APSTD_WRAPPER (valgrind) they are
multiplied by 10 and only the behaviour is held to them.
Covers: src/engine/ctrljob.c, src/daemon/manager.c, src/daemon/bus-api.c,
src/daemon/manager-metrics.c, src/cli/cmd-apply.c, src/cli/cmd-doctor.c, src/cli/cmd-status.c."""

import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from apstd_test import *  # noqa: F401,F403

require_harness()
SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
WDC = os.path.join(DATA, "idctrl", "14-wdc-wds500g2b0c-00pxh0.bin")
WORK = tempfile.mkdtemp(prefix="apstd-hung-")
SCALE = 10.0 if WRAPPER else 1.0
WATCHDOG = 4.0 * SCALE          # WATCHDOG_USEC, seconds
NAME = "io.github.nvme_apstd"
C_IFACE = "io.github.nvme_apstd.Controller1"
PROM = os.path.join(WORK, "nvme-apstd.prom")


def ctrl_path(name):
    return f"/io/github/nvme_apstd/controller/{name}"


def config(policy="budget", deadline=None, latency_us=100000):
    text = f"[apst]\npolicy = {policy}\nmax_latency_us = {latency_us}\n\n[metrics]\npath = {PROM}\n"
    if deadline:
        text += f"\n[daemon]\nunresponsive_after_sec = {deadline}\n"
    return write_config(text, os.path.join(WORK, "nvme-apstd.conf"))


def want(conf):
    return {"nvme0": plan_table(conf, SAMSUNG, "144d:a808"), "nvme1": plan_table(conf, WDC, "15b7:5009")}


def gauge(name):
    """nvme_apstd_controller_unresponsive of @name in the metrics file, None if absent."""
    try:
        with open(PROM) as f:
            m = re.search(r'^nvme_apstd_controller_unresponsive\{controller="%s"\} (\d)$' % name, f.read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


class Timeline:
    """The daemon's notifications with the time each arrived, read by a thread of the test's own
    so that a check that takes its time does not shift the times."""

    def __init__(self, d):
        self.d = d
        self.times = []          # (monotonic, message)
        self.t_exit = None       # when the daemon was seen gone (check_stop())
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while self.running:
            r, _, _ = select.select([self.d.sock], [], [], 0.01)
            if r:
                try:
                    msg = self.d.sock.recv(65536).decode(errors="replace")
                except OSError:
                    return
                with self.lock:
                    self.times.append((time.monotonic(), msg))
                    self.d.notifications.append(msg)

    def close(self):
        self.running = False
        self.thread.join()

    def pump(self, seconds, until=None, after=0.0):
        """Wait @seconds, or until a notification after time @after matches @until; return its
        time or None."""
        end = time.monotonic() + seconds
        while True:
            if until:
                with self.lock:
                    for t, m in self.times:
                        if t >= after and re.search(until, m, re.M):
                            return t
            left = end - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(left, 0.01))

    def sleep_until(self, pred, timeout):
        """Wait for @pred(); its value, or None after @timeout s."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = pred()
            if v:
                return v
            time.sleep(0.02)
        return pred() or None

    def watchdog_gaps(self, t0, t1):
        with self.lock:
            pings = [t0] + [t for t, m in self.times if t0 <= t <= t1 and re.search(r"^WATCHDOG=1$", m, re.M)]
        return [b - a for a, b in zip(pings, pings[1:])] + [t1 - pings[-1]]


def check_watchdog(tl, t0, what):
    t1 = tl.t_exit or time.monotonic()
    gaps = tl.watchdog_gaps(t0, t1)
    longest = max(gaps)
    print(f"{what}: {len(gaps)} WATCHDOG=1 intervals over {t1 - t0:.1f} s, longest {longest:.2f} s")
    check(longest <= WATCHDOG / 2, f"{what}: WATCHDOG=1 never more than half of WATCHDOG_USEC ({WATCHDOG / 2:.1f} s) "
                                  f"apart (longest {longest:.2f} s)")


def check_bus_read(bus, name, expect_state, what):
    t = time.monotonic()
    try:
        v = bus.get_property(NAME, ctrl_path(name), C_IFACE, "State", timeout_ms=int(5000 * SCALE))
    except Exception as e:      # noqa: BLE001 (a Gio error: say which)
        v = f"error: {e}"
    dt = time.monotonic() - t
    print(f"{what}: D-Bus State of {name} = {v!r} in {dt * 1000:.0f} ms")
    check(dt <= 0.1 * SCALE, f"{what}: D-Bus read of {name} answered within 100 ms ({dt * 1000:.0f} ms)")
    if expect_state:
        check(v == expect_state, f"{what}: {name}'s State is {expect_state} ({v!r})")


def check_stop(d, tl, what, restored=("nvme0", "nvme1"), tables=None):
    t0 = time.monotonic()
    d.signal(signal.SIGTERM)
    ts = tl.pump(5 * SCALE, r"^STOPPING=1", after=t0)
    check(ts is not None and ts - t0 <= 1.0 * SCALE,
          f"{what}: STOPPING=1 within 1 s of SIGTERM ({(ts - t0) if ts else -1:.2f} s)")
    try:
        rc = d.proc.wait(30 * SCALE)
    except subprocess.TimeoutExpired:
        rc = None
    t1 = tl.t_exit = time.monotonic()
    tl.close()
    if rc is None:
        rc = d.stop()
    else:
        d.err.close()
        check_wrapper(rc, "nvme-apstd run")
    print(f"{what}: exit {rc} {t1 - t0:.1f} s after SIGTERM")
    check(rc == 0, f"{what}: exit 0")
    for n in restored:
        if tables:
            check(read_table(n) == tables[n], f"{what}: {n}'s original table back")
    return t1 - t0


def start(conf, bus=None, extra=None):
    env = {"WATCHDOG_USEC": str(int(WATCHDOG * 1e6))}
    if bus:
        env["DBUS_SYSTEM_BUS_ADDRESS"] = bus.addr
    env.update(extra or {})
    d = Daemon(conf, extra_env=env)
    return d, Timeline(d), time.monotonic()


KERNEL = {}
for _n in ("nvme0", "nvme1"):
    KERNEL[_n] = os.path.join(WORK, f"{_n}.kernel")
    write_table_file(KERNEL[_n], *read_table(_n))
ORIG = {n: read_table(n) for n in ("nvme0", "nvme1")}


def scenario_identify_start():
    # A real 20 s hang on Identify at start with the default 10 s deadline.
    conf = config()
    w = want(conf)
    ctl("fault", "nvme0", "identify=delay=20000:once")
    bus = PrivateBus()
    d, tl, t0 = start(conf, bus)
    try:
        t = tl.sleep_until(lambda: read_table("nvme1") == w["nvme1"] and time.monotonic(), 5 * SCALE)
        check(t is not None and t - t0 <= 1.0 * SCALE,
              f"identify-start: nvme1 programmed within 1 s of start while nvme0 hangs ({(t - t0) if t else -1:.2f} s)")
        tl.pump(1.0)
        check_bus_read(bus, "nvme0", "not-ready", "identify-start, nvme0 in Identify")
        check_bus_read(bus, "nvme1", "programmed", "identify-start, nvme0 in Identify")
        tr = tl.pump(15 * SCALE, r"^READY=1$")
        check(tr is not None and 9.5 <= tr - t0 <= 11.5 * SCALE,
              f"identify-start: READY=1 after the 10 s deadline, not after the hang ({(tr - t0) if tr else -1:.1f} s)")
        check(d.wait_log(r"nvme0: no answer to an admin command \(start\) for 10 s; the controller is unresponsive.*"
                         r"MESSAGE_ID=a8fb70c46bde42d48fe8056e2a9341ac", timeout=2) is not None,
              "identify-start: nvme0 unresponsive, logged with its MESSAGE_ID")
        check(any(re.search(r"STATUS=.*nvme0: not answering", m) for _, m in tl.times),
              "identify-start: STATUS= says nvme0 is not answering")
        check(tl.sleep_until(lambda: gauge("nvme0") == 1, 3) and gauge("nvme1") == 0,
              "identify-start: nvme_apstd_controller_unresponsive 1 for nvme0, 0 for nvme1")
        check(d.wait_log(r"started; managing 1 controller; not managed: nvme0 \(not answering\)", timeout=2)
              is not None, "identify-start: the start names nvme0 apart")
        check_bus_read(bus, "nvme0", "unresponsive", "identify-start, nvme0 unresponsive")
        s = run("status", env={"DBUS_SYSTEM_BUS_ADDRESS": bus.addr})
        check(re.search(r"nvme0 .*\n(.*\n)*?\s*State: unresponsive", s.stdout) is not None,
              "identify-start: `status` shows nvme0 unresponsive")
        # the Identify returns at 20 s: re-checked as after a reset, programmed
        t = tl.sleep_until(lambda: read_table("nvme0") == w["nvme0"] and time.monotonic(), 15 * SCALE)
        check(t is not None and 19.5 <= t - t0 <= 23 * SCALE,
              f"identify-start: nvme0 programmed once its Identify returned ({(t - t0) if t else -1:.1f} s)")
        check(d.wait_log(r"nvme0: the admin command outstanding since it became unresponsive has returned.*"
                         r"MESSAGE_ID=f3286af565d14078b151477c70ae13e5", timeout=2) is not None,
              "identify-start: the return logged with its MESSAGE_ID")
        check(tl.sleep_until(lambda: gauge("nvme0") == 0, 3), "identify-start: the gauge back to 0")
        check_bus_read(bus, "nvme0", "programmed", "identify-start, nvme0 back")
        check_watchdog(tl, t0, "identify-start")
        check_stop(d, tl, "identify-start", tables=ORIG)
    finally:
        if d.proc.poll() is None:
            d.dump()
            d.stop()
        bus.close()


def scenario_get_start_reload():
    # A real 70 s hang (past the kernel's 60 s admin timeout) on the first Get Features at start;
    # SIGHUP during it: nvme1 takes the new configuration at once, nvme0 when it is back.
    conf = config()
    w = want(conf)
    ctl("fault", "nvme0", "get-apst=delay=70000:once")
    bus = PrivateBus()
    d, tl, t0 = start(conf, bus)
    try:
        tr = tl.pump(15 * SCALE, r"^READY=1$")
        check(tr is not None and tr - t0 <= 11.5 * SCALE, "get-start-reload: READY=1 after the deadline")
        check(read_table("nvme1") == w["nvme1"] and read_table("nvme0") == ORIG["nvme0"],
              "get-start-reload: nvme1 programmed, nvme0 untouched")
        tl.pump(max(0.0, 20 - (time.monotonic() - t0)))
        conf2 = config(latency_us=5000)   # another table for both, and not the kernel's
        w2 = want(conf2)
        check(w2["nvme0"] != ORIG["nvme0"] and w2["nvme0"] != w["nvme0"] and w2["nvme1"] != w["nvme1"],
              "get-start-reload: the reload changes both tables")
        th = time.monotonic()
        d.signal(signal.SIGHUP)
        t = tl.sleep_until(lambda: read_table("nvme1") == w2["nvme1"] and time.monotonic(), 5 * SCALE)
        check(t is not None and t - th <= 1.0 * SCALE,
              f"get-start-reload: nvme1 rewritten within 1 s of SIGHUP ({(t - th) if t else -1:.2f} s)")
        tr = tl.pump(5 * SCALE, r"^READY=1$", after=th)
        check(tr is not None and tr - th <= 1.0 * SCALE,
              f"get-start-reload: READY=1 after the reload without waiting for nvme0 ({(tr - th) if tr else -1:.2f} s)")
        check(read_table("nvme0") == ORIG["nvme0"], "get-start-reload: nothing sent to nvme0 meanwhile")
        check_bus_read(bus, "nvme0", "unresponsive", "get-start-reload, during the hang")
        # the Get returns at 70 s: the queued re-plan and the re-check run, with the new configuration
        t = tl.sleep_until(lambda: read_table("nvme0") == w2["nvme0"] and time.monotonic(), 60 * SCALE)
        check(t is not None and 69.5 <= t - t0 <= 73 * SCALE,
              f"get-start-reload: nvme0 programmed with the reloaded configuration once its Get returned "
              f"({(t - t0) if t else -1:.1f} s)")
        check(tl.sleep_until(lambda: gauge("nvme0") == 0, 3), "get-start-reload: the gauge back to 0")
        check_watchdog(tl, t0, "get-start-reload")
        check_stop(d, tl, "get-start-reload", tables=ORIG)
    finally:
        if d.proc.poll() is None:
            d.dump()
            d.stop()
        bus.close()


def scenario_set_stop():
    # Set Features hangs 8 s during stop (deadline 2 s): STOPPING=1 at once, nvme1 restored, the
    # daemon exits after the deadline with nvme0's original in its crash record; the next start
    # restores it.
    conf = config(deadline=2)
    w = want(conf)
    d, tl, t0 = start(conf)
    try:
        check(tl.pump(10 * SCALE, r"^READY=1$") is not None, "set-stop: READY=1")
        check(read_table("nvme0") == w["nvme0"] and read_table("nvme1") == w["nvme1"], "set-stop: both programmed")
        ctl("fault", "nvme0", "set-apst=delay=8000:once")
        took = check_stop(d, tl, "set-stop", restored=("nvme1",), tables=ORIG)
        check(took <= 4.0 * SCALE, f"set-stop: exit once the deadline passed ({took:.1f} s)")
        check(read_table("nvme1") == ORIG["nvme1"], "set-stop: nvme1 restored")
        check(re.search(r"nvme-apstd stopped; restored 1 controller table; not answering, original kept for the "
                        r"next start: nvme0", d.log()) is not None, "set-stop: the stop names nvme0, kept")
        check(os.path.exists(os.path.join(d.runtime_dir, "ctrl-nvme0.orig")), "set-stop: nvme0's record kept")
        check_watchdog(tl, t0, "set-stop")
        # the held Set completes (the drive takes the original in the end); a new daemon uses the record
        wait_for(lambda: count_cmds("nvme0", "0x09") >= 2 and read_table("nvme0") == ORIG["nvme0"], 10 * SCALE,
                 "the held Set Features")
        d2 = Daemon(conf, runtime_dir=d.runtime_dir)
        check(d2.wait_notify(r"^READY=1$", timeout=10 * SCALE) is not None, "set-stop: restarted")
        check(re.search(r"nvme0: using the table recorded before a previous run", d2.log()) is not None,
              "set-stop: the restart takes nvme0's original from the record")
        check(d2.stop() == 0 and read_table("nvme0") == ORIG["nvme0"], "set-stop: the next stop restores nvme0")
    finally:
        if d.proc.poll() is None:
            d.dump()
            d.stop()


def scenario_get_reset_sigterm():
    # After a reset, nvme0's Get Features hangs 6 s (deadline 2 s); nvme1 is reset meanwhile and
    # rewritten at once; SIGTERM during the hang ends the daemon without waiting for it.
    conf = config(deadline=2)
    w = want(conf)
    bus = PrivateBus()
    d, tl, t0 = start(conf, bus)
    try:
        check(tl.pump(10 * SCALE, r"^READY=1$") is not None, "get-reset: READY=1")
        ctl("fault", "nvme0", "get-apst=delay=6000:once")
        ctl("reset", "nvme0", KERNEL["nvme0"])
        tl.pump(0.3)
        tr = time.monotonic()
        ctl("reset", "nvme1", KERNEL["nvme1"])
        t = tl.sleep_until(lambda: read_table("nvme1") == w["nvme1"] and time.monotonic(), 5 * SCALE)
        check(t is not None and t - tr <= 1.0 * SCALE,
              f"get-reset: nvme1 rewritten within 1 s of its reset while nvme0 hangs ({(t - tr) if t else -1:.2f} s)")
        check_bus_read(bus, "nvme1", "programmed", "get-reset, during the hang")
        check(d.wait_log(r"nvme0: no answer to an admin command \(reset\) for 2 s", timeout=4 * SCALE) is not None,
              "get-reset: nvme0 unresponsive after 2 s")
        check_bus_read(bus, "nvme0", "unresponsive", "get-reset, unresponsive")
        took = check_stop(d, tl, "get-reset", restored=("nvme1",), tables=ORIG)
        check(took <= 1.5 * SCALE, f"get-reset: the stop did not wait for nvme0 ({took:.1f} s)")
        check(re.search(r"not answering, original kept for the next start: nvme0", d.log()) is not None,
              "get-reset: nvme0's original left to the next start")
        check_watchdog(tl, t0, "get-reset")
    finally:
        if d.proc.poll() is None:
            d.dump()
            d.stop()
        bus.close()


def signalfd_has(pid, sig):
    """Does one of @pid's signalfds (sd-event's) take @sig? Its fdinfo says which signals it reads."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:[signalfd]":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                m = re.search(r"^sigmask:\s*([0-9a-f]+)$", f.read(), re.M)
        except OSError:
            continue
        if m and int(m.group(1), 16) & (1 << (sig - 1)):
            return True
    return False


def scenario_stuck_loop():
    # The watchdog still means something: a loop blocked on purpose (SIGUSR2 with
    # $NVME_APSTD_TEST_STALL_LOOP_SEC) stops the pings for longer than WATCHDOG_USEC.
    conf = config()
    stall = 3
    d, tl, t0 = start(conf, extra={"WATCHDOG_USEC": str(int(2e6 * SCALE)),
                                   "NVME_APSTD_TEST_STALL_LOOP_SEC": str(int(stall * SCALE))})
    try:
        check(tl.pump(10 * SCALE, r"^READY=1$") is not None, "stuck-loop: READY=1")
        check(signalfd_has(d.proc.pid, signal.SIGUSR2), "stuck-loop: with the variable its signalfd takes SIGUSR2")
        tl.pump(2.5 * SCALE)
        ts = time.monotonic()
        d.signal(signal.SIGUSR2)
        tl.pump(stall * SCALE + 2 * SCALE)
        pings = [t for t, m in tl.times if re.search(r"^WATCHDOG=1$", m, re.M)]
        before = [b - a for a, b in zip(pings, pings[1:]) if b < ts]
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        print(f"stuck-loop: gaps before the stall {[round(g, 2) for g in before]}, all {[round(g, 2) for g in gaps]}")
        check(before and max(before) <= 1.0 * SCALE, "stuck-loop: pings at most half of WATCHDOG_USEC apart before")
        check(max(gaps) >= 2.0 * SCALE, f"stuck-loop: no ping for longer than WATCHDOG_USEC while the loop was stuck "
                                        f"({max(gaps):.2f} s): systemd would abort it")
        check(d.stop() == 0, "stuck-loop: exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
    d2 = Daemon(conf, extra_env={"WATCHDOG_USEC": "2000000"})
    try:
        check(d2.wait_notify(r"^READY=1$", timeout=10 * SCALE) is not None, "stuck-loop: without the variable")
        check(not signalfd_has(d2.proc.pid, signal.SIGUSR2) and signalfd_has(d2.proc.pid, signal.SIGTERM),
              "stuck-loop: without the variable the daemon's signalfd does not take SIGUSR2 (SIGTERM it does)")
        check(d2.stop() == 0, "stuck-loop: exit 0 without the variable")
    finally:
        if d2.proc.poll() is None:
            d2.stop()


def scenario_lifecycle():
    # A table in place at start is neither written at start nor at stop; a skipped controller is
    # not counted as managed and is named apart.
    conf = config()
    w = want(conf)
    table = os.path.join(WORK, "nvme0.want")
    write_table_file(table, *w["nvme0"])
    ctl("reset", "nvme0", table)
    ctl("add", "nvme2,transport=tcp")
    sets = count_cmds("nvme0", "0x09")
    d = Daemon(conf)
    try:
        check(d.wait_notify(r"^READY=1$", timeout=10 * SCALE) is not None, "lifecycle: READY=1")
        check(d.wait_log(r"nvme0: APST table already in place .*nothing written", timeout=2) is not None,
              "lifecycle: nvme0's table in place at start")
        check(d.wait_log(r"started; managing 2 controllers; not managed: nvme2 \(not a PCIe controller\)\.",
                         timeout=2) is not None, "lifecycle: managing 2, the tcp controller named apart")
        check(d.stop() == 0, "lifecycle: exit 0")
        check(count_cmds("nvme0", "0x09") == sets, "lifecycle: no Set Features to nvme0, at start or stop")
        check(re.search(r"nvme-apstd stopped; restored 1 controller table; 1 already held its original table, "
                        r"nothing written\.", d.log()) is not None, "lifecycle: the stop says so")
        check(read_table("nvme0") == w["nvme0"] and read_table("nvme1") == ORIG["nvme1"],
              "lifecycle: nvme0 as found, nvme1 restored")
    finally:
        if d.proc.poll() is None:
            d.dump()
            d.stop()


def scenario_verbs():
    # apply and doctor give up on a controller that does not answer after the deadline, name it,
    # and do the rest; nvme0's table is as it was.
    conf = config(deadline=2)
    w = want(conf)
    ctl("fault", "nvme0", "get-apst=delay=6000:once")
    t = time.monotonic()
    p = run("apply", "--config", conf, timeout=60 * SCALE)
    took = time.monotonic() - t
    check(p.returncode == 1, "verbs: apply exits 1")
    check(re.search(r"^nvme0: FAILED \(no answer to an admin command within 2 s: the controller is unresponsive; "
                    r"giving up on it\)$", p.stdout, re.M) is not None, "verbs: apply names nvme0 and why")
    check(re.search(r"MESSAGE_ID=a8fb70c46bde42d48fe8056e2a9341ac.*NVME_CTRL=nvme0", p.stderr) is not None,
          "verbs: apply logs it with its MESSAGE_ID")
    check(re.search(r"^nvme1: programmed and verified", p.stdout, re.M) is not None and read_table("nvme1") == w["nvme1"],
          "verbs: apply programs nvme1 all the same")
    check(read_table("nvme0") == ORIG["nvme0"] and count_cmds("nvme0", SET) == 0,
          "verbs: nvme0 as apply found it, no Set Features sent")
    check(took <= 4 * SCALE, f"verbs: apply gave up after the deadline ({took:.1f} s)")
    wait_for(lambda: count_cmds("nvme0", GET) >= 1, 10 * SCALE, "the held Get Features")

    ctl("fault", "nvme0", "identify=delay=6000:once")
    t = time.monotonic()
    p = run("doctor", "--config", conf, timeout=60 * SCALE)
    took = time.monotonic() - t
    check(re.search(r"nvme0: Identify Controller failed: no answer to an admin command within 2 s: the controller is "
                    r"unresponsive", p.stdout + p.stderr) is not None, "verbs: doctor names nvme0 and why")
    check(took <= 4 * SCALE, f"verbs: doctor gave up after the deadline ({took:.1f} s)")
    check(read_table("nvme0") == ORIG["nvme0"], "verbs: nvme0 as doctor found it")


SCENARIOS = {
    "verbs": scenario_verbs,
    "identify-start": scenario_identify_start,
    "get-start-reload": scenario_get_start_reload,
    "set-stop": scenario_set_stop,
    "get-reset-sigterm": scenario_get_reset_sigterm,
    "stuck-loop": scenario_stuck_loop,
    "lifecycle": scenario_lifecycle,
}
if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
    print(f"usage: test-hung.py {{{'|'.join(SCENARIOS)}}}")
    sys.exit(2)
SCENARIOS[sys.argv[1]]()
done()
