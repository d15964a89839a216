#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon (`nvme-apstd run`) against the fake controller: start, reload,
kernel overwrite, hot-plug, failures, stop; with its own NOTIFY_SOCKET and
RUNTIME_DIRECTORY. Run as the harness's COMMAND: test-daemon.py SCENARIO.
Covers: src/cli/cmd-run.c, src/daemon/manager.c, src/daemon/manager-state.c,
src/daemon/manager-qos.c, src/daemon/manager-watch.c, src/daemon/manager-cpu.c,
src/engine/controller.c, src/engine/ctrljob.c, src/engine/cpupin.c, src/core/adapt.c,
src/core/watch.c, src/core/learned.c, src/core/calib.c, src/platform/learned-store.c,
src/platform/calib-store.c, src/platform/nvme-admin.c, src/platform/sysfs.c,
src/platform/config-file.c, src/platform/log.c (and, through bpf-source.sh,
src/platform/bpfwatch.c)."""

import glob
import json
import mmap
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from apstd_test import *  # noqa: F401,F403

require_harness()
scenario = sys.argv[1]
SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
WDC = os.path.join(DATA, "idctrl", "14-wdc-wds500g2b0c-00pxh0.bin")
BUDGET_TEXT = "[apst]\npolicy = budget\n"
CONF = write_config(BUDGET_TEXT)


def sets(name):
    return count_cmds(name, SET)


if scenario == "lifecycle":
    # both controllers start with the table the kernel wrote at probe
    orig0, orig1 = read_table("nvme0"), read_table("nvme1")
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    want1 = plan_table(CONF, WDC, "15b7:5009")
    d = Daemon(CONF)
    try:
        ready = d.wait_notify(r"^READY=1$")
        check(ready is not None, "READY=1 after start")
        check(ready is not None and re.search(r"STATUS=nvme0: budget, ps\S+; nvme1: budget, ps", d.notifications[ready]),
              "STATUS= summarises each controller with its policy and chain")
        check(read_table("nvme0") == want0 and read_table("nvme1") == want1, "both tables written as planned")
        check(re.search(r"nvme0: found Samsung SSD 970 EVO Plus 2TB .*MESSAGE_ID=\w{32}.*NVME_CTRL=nvme0", d.log()),
              "controller found, with structured fields")
        check(re.search(r"wrote and verified the APST table .*APST_TABLE=0x[0-9a-f]{16}.*APST_WORST_WAKE_US=\d+", d.log()),
              "table written entry carries APST_TABLE and APST_WORST_WAKE_US")
        check("FAKE" not in d.log() and "serial" not in d.log().lower(), "no serial numbers in the log")

        # reload with a change that only concerns nvme1
        s0, s1 = sets("nvme0"), sets("nvme1")
        write_config(BUDGET_TEXT + "\n[device wdc]\nmatch_model = WDC*\npolicy = kernel\n", CONF)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        rel = d.wait_notify(r"^RELOADING=1$", n)
        check(rel is not None and re.search(r"^MONOTONIC_USEC=\d+$", d.notifications[rel], re.M),
              "RELOADING=1 with MONOTONIC_USEC")
        check(d.wait_notify(r"^READY=1$", (rel or n)) is not None, "READY=1 after the reload")
        check(d.wait_log(r"Configuration reloaded from .*; 1 controller table changed") is not None,
              "reload logged: one table changed")
        check(sets("nvme0") == s0 and sets("nvme1") == s1 + 1, "only nvme1 rewritten")
        want1b = plan_table(CONF, WDC, "15b7:5009")
        check(want1b != want1 and read_table("nvme1") == want1b, "nvme1 now has the [device wdc] table")

        # a broken file: rejected, old configuration and tables kept
        s0, s1 = sets("nvme0"), sets("nvme1")
        write_config(BUDGET_TEXT + "max_latency_us = 12x\n", CONF)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after a rejected reload too")
        m = d.wait_log(r"Configuration not reloaded, keeping the running one: .*" + re.escape(CONF) +
                       r".*\[apst\].*max_latency_us")
        check(m is not None, "rejection logged, naming the file, section and key")
        check(sets("nvme0") == s0 and sets("nvme1") == s1, "nothing written")
        check(read_table("nvme1") == want1b, "running configuration kept")
        check(d.proc.poll() is None, "still running")

        # the kernel resets nvme0 and writes its own table
        kernel_tbl = os.path.join(d.dir, "kernel.table")
        write_table_file(kernel_tbl, *orig0)
        pos = len(d.log())
        ctl("reset", "nvme0", kernel_tbl)
        check(d.wait_log(r"nvme0: the APST table was overwritten .*after reset.*APST_TABLE=0x", after=pos) is not None,
              "overwrite noticed and logged with what the kernel wrote")
        check(wait_for(lambda: read_table("nvme0") == want0, 10, "our table back on nvme0") is not None,
              "our table re-applied")

        # stop: everything as the kernel had it
        n = len(d.notifications)
        rc = d.stop()
        check(rc == 0, "SIGTERM: exit 0")
        check(d.wait_notify(r"^STOPPING=1$", n, timeout=1) is not None, "STOPPING=1")
        check(read_table("nvme0") == orig0 and read_table("nvme1") == orig1, "original tables restored")
        check(not any(f.endswith(".orig") for f in os.listdir(d.runtime_dir)), "runtime records removed after restore")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "hotplug":
    d = Daemon(CONF, extra_env={"NVME_APSTD_LOG_LEVEL": "debug"})
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        orig1 = (0, [0] * 32)
        want1 = plan_table(CONF, WDC, "15b7:5009")
        ctl("add", f"nvme1,idctrl={WDC},pci=15b7:5009")
        check(wait_for(lambda: os.path.exists(os.path.join(STATE, "nvme1.table")) and read_table("nvme1") == want1, 10,
                       "nvme1 programmed") is not None, "hot-plugged controller identified, planned and programmed")
        check(d.wait_notify(r"STATUS=.*nvme1: budget") is not None, "STATUS= updated with nvme1")
        # removed while a step is in flight: a re-check's Get Features is held, the controller goes,
        # and the command comes back with ENODEV, as the kernel's does. That is the removal, not an
        # error of the daemon's.
        m = re.search(r"get_apst=(\d+)", ctl("report", "nvme1"))
        gets = int(m.group(1)) if m else 0
        ctl("fault", "nvme1", "get-apst=delay=1500:once")
        ctl("uevent", "nvme1", "change", "NVME_EVENT=connected")
        check(subprocess.run([CTL, "wait", "nvme1", "get-apst", str(gets + 1), "5000"]).returncode == 0,
              "the re-check sent its Get Features")
        ctl("remove", "nvme1")
        check(d.wait_log(r"nvme1: controller removed; forgetting it") is not None, "removal logged")
        check(d.wait_log(r"nvme1: Get Features \(read the current table\) failed: No such device; the controller "
                         r"is being removed", timeout=5) is not None,
              "the held command came back with ENODEV: said at debug level")
        check(d.wait_notify(r"STATUS=nvme0: budget, [^;]*$", len(d.notifications) - 1) is not None,
              "STATUS= no longer lists nvme1")
        check(d.proc.poll() is None, "still running after the removal")
        check(not re.search(r"^(nvme-apstd: )?error", d.log().split("nvme1: controller removed")[1], re.M),
              "no error after the removal")
        rc = d.stop()
        check(rc == 0, "exit 0")
        check(read_table("nvme0") == (0, [0] * 32), "nvme0's original (all-zero) table restored")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "removed-mid-step":
    # Removal while the daemon's command is held, at the two other places a step can meet it:
    # Identify of a controller that just came up, and the restore at stop. Each command comes
    # back with ENODEV, as the kernel's does; that is the removal, said at debug level, never an
    # error, and the stop still ends with exit 0 and nvme0 restored.
    d = Daemon(CONF, extra_env={"NVME_APSTD_LOG_LEVEL": "debug"})
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        # added, but connecting: nothing is sent until it is live
        ctl("add", f"nvme1,idctrl={WDC},pci=15b7:5009,state=connecting")
        ctl("fault", "nvme1", "identify=delay=1500:once")
        ctl("set-attr", "nvme1", "state", "live")
        ctl("uevent", "nvme1", "change", "NVME_EVENT=connected")
        check(subprocess.run([CTL, "wait", "nvme1", "identify", "1", "5000"]).returncode == 0,
              "Identify sent once nvme1 is live")
        ctl("remove", "nvme1")
        check(d.wait_log(r"nvme1: controller removed; forgetting it") is not None, "nvme1: removal logged")
        check(d.wait_log(r"debug: nvme1: No such device; the controller is being removed", timeout=5) is not None,
              "the held Identify came back with ENODEV: said at debug level")

        ctl("add", f"nvme2,idctrl={WDC},pci=15b7:5009")
        want2 = plan_table(CONF, WDC, "15b7:5009")
        check(wait_for(lambda: os.path.exists(os.path.join(STATE, "nvme2.table")) and read_table("nvme2") == want2, 10,
                       "nvme2 programmed") is not None, "nvme2 programmed")
        # the restore's Set Features is held, and nvme2 starts going meanwhile: deleting, its commands
        # failing, its devices and their uevents 5 s later (after the daemon has finished)
        m = re.search(r"set_apst=(\d+)", ctl("report", "nvme2"))
        sets2 = int(m.group(1)) if m else 0
        ctl("fault", "nvme2", "set-apst=delay=1500:once")
        d.proc.send_signal(signal.SIGTERM)
        check(subprocess.run([CTL, "wait", "nvme2", "set-apst", str(sets2 + 1), "5000"]).returncode == 0,
              "the restore at stop sent its Set Features")
        ctl("remove", "nvme2", "5000")
        rc = d.stop()
        check(rc == 0, "exit 0")
        check(re.search(r"debug: nvme2: Set Features \(restore the previous table\) failed: No such device; the "
                        r"controller is being removed", d.log()) is not None,
              "the held restore came back with ENODEV: said at debug level")
        check(not re.search(r"^(nvme-apstd: )?error", d.log(), re.M), "no error at all")
        check(read_table("nvme0") == (0, [0] * 32), "nvme0's original (all-zero) table restored")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "one-failing":
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    d = Daemon(CONF)
    try:
        ready = d.wait_notify(r"^READY=1$")
        check(ready is not None, "READY=1 although nvme1 fails every command")
        check(read_table("nvme0") == want0, "nvme0 served")
        check(re.search(r"nvme1: Identify Controller failed: Input/output error", d.log()), "nvme1's failure logged")
        check(ready is not None and "nvme1: failed" in d.notifications[ready], "STATUS= says nvme1 failed")
        pos = len(d.log())
        orig = os.path.join(d.dir, "zero.table")
        write_table_file(orig, 0, [0] * 32)
        ctl("reset", "nvme0", orig)
        check(d.wait_log(r"nvme0: the APST table was overwritten", after=pos) is not None, "nvme0 still looked after")
        check(wait_for(lambda: read_table("nvme0") == want0, 10, "nvme0 re-applied") is not None, "nvme0 re-applied")
        ctl("reset", "nvme1")
        check(d.wait_log(r"nvme1: Identify Controller failed", after=pos) is not None, "nvme1 retried on its reset")
        check(d.proc.poll() is None, "still running")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "set-fails":
    # Set Features refused with 0x4002 on nvme0: logged with NVME_STATUS, table unchanged, daemon serves nvme1
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(re.search(r"nvme0: Set Features \(write the table\) failed: NVMe status 0x4002.*NVME_STATUS=0x4002",
                        d.log()), "failure logged with the status")
        check(read_table("nvme0") == (0, [0] * 32), "nvme0's table unchanged")
        check(read_table("nvme1") == plan_table(CONF, WDC, "15b7:5009"), "nvme1 programmed")
        rc = d.stop()
        check(rc == 0, "exit 0")
        check(count_cmds("nvme0", SET) == 1, "nothing to restore on nvme0: no second Set Features")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "not-live":
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1 with a controller that is resetting")
        check(re.search(r"nvme0: controller is resetting, not live", d.log()), "not-live controller logged")
        check(count_cmds("nvme0", IDENTIFY) == 0, "nothing sent to a resetting controller")
        ctl("set-attr", "nvme0", "state", "live")
        ctl("uevent", "nvme0", "change", "NVME_EVENT=connected")
        check(wait_for(lambda: read_table("nvme0") == want0, 10, "nvme0 programmed once live") is not None,
              "programmed once live")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "reset-during-step":
    # A reset that begins between the state check and the Set Features: the re-check after the
    # kernel's reset reads "live", its Get Features is held 1.5 s, and meanwhile the controller
    # starts resetting again. The Set must not follow; the table is written once it is live.
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    kernel_tbl = os.path.join(tempfile.mkdtemp(prefix="apstd-tbl-"), "kernel")
    write_table_file(kernel_tbl, 1, [0x6420] * 4 + [0] * 28)
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(read_table("nvme0") == want0, "our table written")
        m = re.search(r"get_apst=(\d+)", ctl("report", "nvme0"))
        gets = int(m.group(1)) if m else 0
        n_sets = sets("nvme0")
        ctl("fault", "nvme0", "get-apst=delay=1500:once")
        ctl("reset", "nvme0", kernel_tbl)
        check(subprocess.run([CTL, "wait", "nvme0", "get-apst", str(gets + 1), "5000"]).returncode == 0,
              "the re-check after the reset sent its Get Features")
        ctl("set-attr", "nvme0", "state", "resetting")
        check(d.wait_log(r"nvme0: controller is resetting, not live; will look again when it is", timeout=6)
              is not None, "the step stops before its Set Features, and says why")
        time.sleep(0.3)
        check(sets("nvme0") == n_sets, "no Set Features to the resetting controller")
        check(read_table("nvme0")[1][0] == 0x6420, "the kernel's table is left as it is meanwhile")
        ctl("set-attr", "nvme0", "state", "live")
        ctl("uevent", "nvme0", "change", "NVME_EVENT=connected")
        check(wait_for(lambda: read_table("nvme0") == want0, 10, "nvme0 programmed once live") is not None,
              "programmed once live again")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "verify-on-io":
    # A verification is sent only to a controller that did I/O since the last look
    # (it was awake anyway); an idle drive is never woken to be checked.
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    d = Daemon(CONF, args=["--verify-interval-ms", "100"])
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        gets = count_cmds("nvme0", GET)
        time.sleep(1.0)  # ten looks at the counters, no I/O
        check(count_cmds("nvme0", GET) == gets, "idle for 10 intervals: no Get Features sent")
        ctl("stat", "nvme0", "nvme0n1", "5 0 40 1 3 0 24 1 0 2 2")
        check(wait_for(lambda: count_cmds("nvme0", GET) > gets, 5, "a verification after I/O") is not None,
              "I/O seen: the table is verified (Get Features)")
        check(read_table("nvme0") == want0 and count_cmds("nvme0", SET) == 1, "table in place, nothing rewritten")
        gets = count_cmds("nvme0", GET)
        time.sleep(0.6)
        check(count_cmds("nvme0", GET) == gets, "no further I/O: no further Get Features")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "pm-qos":
    # A write to power/pm_qos_latency_tolerance_us makes the kernel rewrite APST inside the write,
    # with no uevent (doc/kernel-apst.md); inotify sees the write. The daemon must put its table
    # back at once, on an idle drive (no I/O counter moves: the verify timer would never fire),
    # with admin commands only; the attribute appearing after a reset and vanishing with the
    # controller must not leak watches or fds.
    def stat_text(name):
        with open(f"/sys/class/nvme/{name}/{name}n1/stat") as f:
            return f.read()

    def fds(pid):
        return len(os.listdir(f"/proc/{pid}/fd"))

    def watches(pid):
        """inotify watches the process holds (fdinfo "inotify wd:" lines, every inotify fd)."""
        n = 0
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    n += sum(1 for line in f if line.startswith("inotify wd:"))
            except OSError:
                pass
        return n

    orig0 = read_table("nvme0")
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    want1 = plan_table(CONF, WDC, "15b7:5009")
    check(os.path.exists("/sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us"),
          "nvme0 (kernel's table, APSTE 1) has the attribute")
    check(not os.path.exists("/sys/class/nvme/nvme1/power/pm_qos_latency_tolerance_us"),
          "nvme1 (APSTE 0 at start) has none, as in the kernel")
    d = Daemon(CONF)   # the default verify interval (30 s): only the watch can notice in time
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(read_table("nvme0") == want0 and read_table("nvme1") == want1, "both tables written")
        # Each event sends a STATUS= notification: read them as systemd would.
        draining = d.drain_notify()
        pid = d.proc.pid
        w0 = watches(pid)
        stat0 = stat_text("nvme0")
        gets, sets0 = count_cmds("nvme0", GET), count_cmds("nvme0", SET)

        # the kernel's rewrite for a new limit, no uevent
        pos = len(d.log())
        t0 = time.monotonic()
        out = ctl("pmqos", "nvme0", "5500")
        check("table rewritten" in out, f"the fake rewrote nvme0's table ({out.strip()})")
        # what the kernel writes for a 5500 us limit (the daemon may have put ours back already)
        kconf = write_config("[apst]\npolicy = kernel\nmax_latency_us = 5500\n")
        kt_apste, kt_entries = plan_table(kconf, SAMSUNG, "144d:a808")
        check((kt_apste, kt_entries) != want0, "the kernel's table for 5500 us differs from ours")
        kt = " ".join(f"0x{e:016x}" for e in kt_entries)
        back = wait_for(lambda: read_table("nvme0") == want0, 5, "our table back on nvme0 after the pm_qos write")
        took = time.monotonic() - t0
        check(back is not None, f"pm_qos write on an idle drive: our table is back (after {took * 1000:.0f} ms)")
        check(d.wait_log(r"nvme0: power/pm_qos_latency_tolerance_us written \(now 5500\).*"
                         r"PM_QOS_LATENCY_TOLERANCE_US=5500", after=pos) is not None,
              "the write is logged with the new value")
        check(d.wait_log(r"nvme0: the APST table was overwritten .*after pm_qos.*APST_TABLE=" + re.escape(kt) +
                         r".*APST_REASON=pm_qos", after=pos) is not None,
              "'overwritten' entry names the table the kernel wrote (APST_TABLE) and the reason pm_qos")
        wait_for(lambda: count_cmds("nvme0", GET) >= gets + 2, 5, "the verifying Get Features")
        time.sleep(0.2)
        # (the O_TRUNC open and the write are two IN_MODIFY; inotify merges them only when the
        # second comes before the daemon read the first: one more look, never another write)
        ng = count_cmds("nvme0", GET) - gets
        check(count_cmds("nvme0", SET) == sets0 + 1 and 2 <= ng <= 3,
              f"one Set, {ng} Get Features (a look per IN_MODIFY, one to verify): admin commands only")
        check(stat_text("nvme0") == stat0, "no I/O counter moved (the drive stayed idle)")
        time.sleep(0.3)   # the loop idle again: sd-event has closed the O_PATH fds it opens per watch
        fds0 = fds(pid)
        print(f"daemon fds {fds0}, inotify watches {w0}")
        check(count_cmds("nvme1", SET) == 1, "nvme1 untouched")

        # the same value again: the kernel leaves APST alone, the daemon only looks
        gets, sets0 = count_cmds("nvme0", GET), count_cmds("nvme0", SET)
        out = ctl("pmqos", "nvme0", "5500")
        check("unchanged" in out, "same value: the fake (like the kernel) does not rewrite")
        check(wait_for(lambda: count_cmds("nvme0", GET) > gets, 5, "a re-check") is not None,
              "same value: re-checked (inotify still fires)")
        time.sleep(0.3)
        check(count_cmds("nvme0", SET) == sets0 and read_table("nvme0") == want0, "table in place: nothing written")

        # a table of the test's own (TABLE-FILE), as a quirky kernel might write
        other = os.path.join(d.dir, "other.table")
        write_table_file(other, 1, [entry(3, 50)] * 3 + [0] * 29)
        ctl("pmqos", "nvme0", "7000", other)
        check(wait_for(lambda: read_table("nvme0") == want0, 5, "our table back after another table") is not None,
              "another table written on a pm_qos write: ours back")

        # nvme1: the attribute appears only when the kernel enables APST, at a reset
        r = subprocess.run([CTL, "pmqos", "nvme1", "9000"], capture_output=True, text=True, timeout=30)
        check(r.returncode == 1 and "no power/pm_qos" in r.stderr, "no attribute on nvme1: the fake refuses")
        ctl("set-attr", "nvme1", "power/pm_qos_latency_tolerance_us", "100000")
        pos = len(d.log())
        ctl("reset", "nvme1")
        check(wait_for(lambda: read_table("nvme1") == want1 and d.log().count("overwritten", pos) > 0, 10,
                       "nvme1 re-applied after the reset") is not None, "nvme1 reset: re-applied")
        check(wait_for(lambda: watches(pid) == w0 + 1, 5, "a watch for nvme1's new attribute") is not None,
              f"the attribute that appeared with the reset is watched ({watches(pid)} watches, was {w0})")
        ctl("pmqos", "nvme1", "9000")
        check(wait_for(lambda: read_table("nvme1") == want1 and count_cmds("nvme1", GET) >= 4, 5,
                       "nvme1 back after pm_qos") is not None and read_table("nvme1") == want1,
              "pm_qos on the attribute that appeared after the reset: ours back")

        # hot-plug: a third controller gets a watch, its removal drops it; nothing leaks
        ctl("add", f"nvme2,idctrl={WDC},pci=15b7:5009,initial-table=kernel")
        check(wait_for(lambda: os.path.exists(os.path.join(STATE, "nvme2.table")) and read_table("nvme2") == want1, 10,
                       "nvme2 programmed") is not None, "hot-plugged nvme2 programmed")
        check(wait_for(lambda: watches(pid) == w0 + 2, 5, "nvme2 watched") is not None, "nvme2's attribute watched")
        ctl("pmqos", "nvme2", "3000")
        check(wait_for(lambda: read_table("nvme2") == want1, 5, "nvme2 back after pm_qos") is not None,
              "pm_qos on the hot-plugged nvme2: ours back")
        for n in ("nvme2", "nvme1"):   # (each one's pm_qos re-apply done: verified, logged)
            check(d.wait_log(rf"{n}: wrote and verified the APST table .*APST_REASON=pm_qos") is not None,
                  f"{n}: the pm_qos re-apply verified")
            ctl("remove", n)
            check(d.wait_log(rf"{n}: controller removed; forgetting it") is not None, f"{n} removed")
        check(wait_for(lambda: watches(pid) == w0 and fds(pid) == fds0, 5, "watches and fds back") is not None,
              f"after both removals: {watches(pid)} watches (at start {w0}), {fds(pid)} fds (at start {fds0})")
        ctl("pmqos", "nvme0", "100000")
        check(wait_for(lambda: read_table("nvme0") == want0, 5, "nvme0 still served") is not None,
              "nvme0 still served after the removals")
        check(d.proc.poll() is None and "error" not in d.log(), "still running, no error logged")
        draining.set()
        time.sleep(0.2)
        rc = d.stop()
        check(rc == 0, f"SIGTERM: exit 0 (got {rc})")
        check(read_table("nvme0") == orig0, "stop: nvme0 holds the kernel's table from before the start again")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "cpu-pin":
    CPU = "/sys/devices/system/cpu/cpu%d/cpufreq/%s"

    def cpufile(cpu, name):
        with open(CPU % (cpu, name)) as f:
            return f.read().strip()

    def snapshot():
        return {(c, n): cpufile(c, n) for c in (0, 1, 2, 3)
                for n in ("scaling_governor", "scaling_min_freq", "scaling_max_freq", "energy_performance_preference")}

    orig = snapshot()
    check(orig[(0, "scaling_governor")] == "powersave", "the fake starts in powersave (intel_pstate)")
    pin_text = BUDGET_TEXT + "[cpu]\npin = always\ngovernor = performance\nmin_freq = max\ncpus = 0-1\n"
    write_config(pin_text, CONF)
    p = run("plan", "--config", CONF)
    check(p.returncode == 0 and re.search(r"cpu0: governor performance", p.stdout) is not None,
          "plan shows what the CPU policy would become")
    check(snapshot() == orig, "plan wrote nothing")
    rdir = tempfile.mkdtemp(prefix="apstd-run-")
    d = Daemon(CONF, runtime_dir=rdir)
    check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
    check(cpufile(0, "scaling_governor") == "performance" and cpufile(1, "scaling_governor") == "performance",
          "cpu0 and cpu1 pinned to performance")
    check(cpufile(0, "scaling_min_freq") == "3600000", "min_freq = max means cpuinfo_max_freq")
    check(cpufile(2, "scaling_governor") == "powersave" and cpufile(3, "scaling_min_freq") == orig[(3, "scaling_min_freq")],
          "cpu2 and cpu3 (not in cpus = 0-1) untouched")
    check(re.search(r"MESSAGE_ID=\w{32}, CPUFREQ_CPUS=0(-1)?.*CPUFREQ_GOVERNOR=performance", d.log()) is not None,
          "pin logged with CPUFREQ_* fields")
    check(os.path.exists(os.path.join(rdir, "cpufreq-saved")), "the found policy is recorded in the runtime directory")

    # reload with pinning off: restored at once
    write_config(BUDGET_TEXT, CONF)
    n = len(d.notifications)
    d.signal(signal.SIGHUP)
    check(d.wait_notify(r"^READY=1$", n) is not None, "reload done")
    check(snapshot() == orig, "pin = off on reload restores every CPU exactly")

    # pin again, then SIGKILL: the next start restores before doing anything else
    write_config(pin_text, CONF)
    n = len(d.notifications)
    d.signal(signal.SIGHUP)
    check(d.wait_notify(r"^READY=1$", n) is not None and cpufile(0, "scaling_governor") == "performance",
          "pinned again after another reload")
    d.proc.kill()
    d.proc.wait()
    d.dump()
    check(cpufile(0, "scaling_governor") == "performance", "after SIGKILL the CPUs are still pinned")
    write_config(BUDGET_TEXT, CONF)
    d2 = Daemon(CONF, runtime_dir=rdir)
    try:
        check(d2.wait_notify(r"^READY=1$") is not None, "restarted")
        check(snapshot() == orig, "the restarted daemon (pin = off) restored the recorded policy")
        check(not os.path.exists(os.path.join(rdir, "cpufreq-saved")), "and removed the record")
        check(d2.stop() == 0, "exit 0")
    finally:
        if d2.proc.poll() is None:
            d2.stop()
        d2.dump()

elif scenario == "resume":
    # A private bus stands in for the system bus; the test owns org.freedesktop.login1
    # and announces a resume the way logind does.
    bus = PrivateBus()
    Gio, GLib, conn, addr = bus.Gio, bus.GLib, bus.conn, bus.addr
    check(bus.call_bus("RequestName", "(su)", ("org.freedesktop.login1", 0))[0] == 1,
          "the test owns org.freedesktop.login1 on the private bus")
    d = Daemon(CONF, extra_env={"DBUS_SYSTEM_BUS_ADDRESS": addr})
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check("System bus unavailable" not in d.log(), "the daemon is on the bus")
        want0 = plan_table(CONF, SAMSUNG, "144d:a808")
        gets, sets0 = count_cmds("nvme0", GET), count_cmds("nvme0", SET)
        conn.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                         GLib.Variant("(b)", (True,)))
        conn.flush_sync(None)
        time.sleep(0.3)
        check(count_cmds("nvme0", GET) == gets, "PrepareForSleep(true), going to sleep: nothing sent")
        conn.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                         GLib.Variant("(b)", (False,)))
        conn.flush_sync(None)
        check(d.wait_log(r"Resumed from sleep; re-checking every controller") is not None, "resume logged")
        check(wait_for(lambda: count_cmds("nvme0", GET) > gets, 5, "a re-check") is not None,
              "PrepareForSleep(false): the table is re-checked (Get Features)")
        check(count_cmds("nvme0", SET) == sets0 and read_table("nvme0") == want0,
              "the table was still in place: nothing rewritten")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
        bus.close()

elif scenario == "cpu-busy":
    # pin = busy: pinned while a watched drive has I/O, released after release_after_ms idle.
    def governor(cpu):
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor") as f:
            return f.read().strip()

    write_config(BUDGET_TEXT + "[cpu]\npin = busy\nrelease_after_ms = 1500\ngovernor = performance\n", CONF)
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        time.sleep(1.5)
        check(governor(0) == "powersave", "no I/O: not pinned")
        ctl("stat", "nvme0", "nvme0n1", "5 0 40 1 3 0 24 1 0 2 2")
        check(wait_for(lambda: governor(0) == "performance", 5, "pinned on I/O") is not None,
              "I/O seen by the watcher: pinned")
        # the daemon logs after writing sysfs: wait for the line, do not just look once
        check(d.wait_log(r"Pinned CPU frequency policy.*CPUFREQ_GOVERNOR=performance", 5) is not None,
              "pin logged")
        check(wait_for(lambda: governor(0) == "powersave", 8, "released when idle") is not None,
              "idle for release_after_ms: released")
        check(d.wait_log(r"Restored CPU frequency policy", 5) is not None, "release logged")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "crash-restart":
    orig = read_table("nvme0")
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    rdir = tempfile.mkdtemp(prefix="apstd-run-")
    d = Daemon(CONF, runtime_dir=rdir)
    check(d.wait_notify(r"^READY=1$") is not None, "first instance READY")
    check(read_table("nvme0") == want0, "table written")
    d.proc.kill()
    d.proc.wait()
    d.dump()
    check(read_table("nvme0") == want0, "after SIGKILL the drive still has our table")
    d2 = Daemon(CONF, runtime_dir=rdir)
    try:
        check(d2.wait_notify(r"^READY=1$") is not None, "second instance READY")
        check(re.search(r"using the table recorded before a previous run", d2.log()), "it found the record")
        check(d2.stop() == 0, "exit 0")
        check(read_table("nvme0") == orig, "stop restores the table from before the FIRST start, not ours")
    finally:
        if d2.proc.poll() is None:
            d2.stop()
        d2.dump()

elif scenario == "stop-not-live":
    # SIGTERM while a controller is resetting: the restore obeys the same gate as a write (no admin
    # command to a controller that is not live); the record stays and the next start restores from it.
    orig = read_table("nvme0")
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    rdir = tempfile.mkdtemp(prefix="apstd-run-")
    d = Daemon(CONF, runtime_dir=rdir)
    check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
    check(read_table("nvme0") == want0, "our table written")
    ctl("set-attr", "nvme0", "state", "resetting")
    n_cmds = len(read_log("nvme0"))
    rc = d.stop()
    d.dump()
    check(rc == 0, "SIGTERM: exit 0")
    check(len(read_log("nvme0")) == n_cmds, "no admin command to the resetting controller at stop")
    check(re.search(r"nvme0: controller is resetting, not live; its original APST table is not put back", d.log())
          is not None, "the skipped restore is logged")
    check(os.path.exists(os.path.join(rdir, "ctrl-nvme0.orig")), "the record of the original is kept")
    ctl("set-attr", "nvme0", "state", "live")
    d2 = Daemon(CONF, runtime_dir=rdir)
    try:
        check(d2.wait_notify(r"^READY=1$") is not None, "second instance READY")
        check(re.search(r"using the table recorded before a previous run", d2.log()), "it found the record")
        check(d2.stop() == 0, "exit 0")
        check(read_table("nvme0") == orig, "the original from before the first start restored")
        check(not os.path.exists(os.path.join(rdir, "ctrl-nvme0.orig")), "and the record removed")
    finally:
        if d2.proc.poll() is None:
            d2.stop()
        d2.dump()

elif scenario == "pm-qos-before-takeover":
    # The original a stop puts back is the table the daemon finds before its first write. A
    # pm_qos_latency_tolerance_us write that lands while the controller is still connecting (no
    # inotify watch yet, nothing read) makes the kernel's table for the new limit that original.
    orig = read_table("nvme0")
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(d.wait_log(r"nvme0: controller is connecting, not live; will look again", timeout=5) is not None,
              "nvme0 connecting at start: left for later")
        check(count_cmds("nvme0", SET) == 0, "nothing written to it yet")
        ctl("pmqos", "nvme0", "1000")
        qos = read_table("nvme0")
        check(qos != orig, f"test premise: the 1000 us limit changes the kernel's table ({orig} -> {qos})")
        kernel = os.path.join(d.dir, "nvme0.kernel")
        write_table_file(kernel, *qos)         # the kernel keeps the new limit for the reset's table
        ctl("reset", "nvme0", kernel)
        check(wait_for(lambda: read_table("nvme0") == want0, 5, "our table") is not None, "live: our table written")
        check(d.stop() == 0, "SIGTERM: exit 0")
        check(read_table("nvme0") == qos, "stop puts back the table found before the first write (the pm_qos one)")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "adaptive":
    # policy = adaptive: I/O injected through the namespace's stat file (one write every ~300 ms,
    # each paying a couple of ms, as on the drive of the seed report), then silence. The policy
    # must reprogram within its rate limit, say why in the journal, and keep what it learned
    # across a kernel overwrite.
    prom = os.path.splitext(CONF)[0] + "-adaptive.prom"
    write_config(f"[apst]\npolicy = adaptive\n[metrics]\npath = {prom}\n", CONF)
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(read_table("nvme0") == want0, "the initial (stall-bounded) adaptive table is written at start")
        check(re.search(r"STATUS=nvme0: adaptive, ps", "\n".join(d.notifications)), "STATUS= says adaptive")
        sets0 = count_cmds("nvme0", SET)
        changes = []   # (monotonic time, table) each time the fake's table changed
        last = read_table("nvme0")
        ios = ticks = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 12.0:
            ios += 1
            ticks += 2
            ctl("stat", "nvme0", "nvme0n1", f"0 0 0 0 {ios} 0 {ios * 8} {ticks} 0 {ticks} {ticks}")
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                t = read_table("nvme0")
                if t != last:
                    changes.append((time.monotonic() - t0, t))
                    last = t
                time.sleep(0.05)
        check(len(changes) >= 1, f"the I/O changed the programmed table (changes at {[round(c[0], 2) for c in changes]} s)")
        check(changes and changes[0][0] <= 10.0, "the first change comes within 10 s of the I/O (warm-up + one decision)")
        gaps = [b[0] - a[0] for a, b in zip(changes, changes[1:])]
        check(all(g >= 1.9 for g in gaps), f"changes at least ADAPT_FIX_NS (2 s) apart: {gaps}")
        check(count_cmds("nvme0", SET) - sets0 == len(changes), "one Set Features per change, nothing else")
        m = re.search(r"nvme0: adaptive policy chose a new APST table: I/O every ~\d+ ms [^\n]*kernel's table would "
                      r"stall [\d.]+% [^\n]*budget 1\.00%[^\n]*MESSAGE_ID=a92f4a510f3244a2995add91f00c9cbe[^\n]*", d.log())
        check(m is not None, "the journal says why, in words, with its MESSAGE_ID")
        line = m.group(0) if m else ""
        for f in ("APST_OBSERVED_STALL_PCT=", "APST_EXPECTED_STALL_PCT=", "APST_ENERGY_VS_KERNEL=",
                  "APST_TABLE=0x", "APST_WORST_WAKE_US="):
            check(f in line, f"structured field {f}")
        wake = re.search(r"APST_WORST_WAKE_US=(\d+)", line)
        check(wake is not None and int(wake.group(1)) <= 100000, "never beyond max_latency_us")
        learned = read_table("nvme0")
        check(learned != want0, "the learned table differs from the initial one")
        check(d.wait_notify(r"^STATUS=nvme0: adaptive, ps", 1) is not None, "STATUS= updated after the change")
        # what the watcher saw reaches the metrics file with the change (written after the event)
        with open(prom) as f:
            text = f.read()
        obs = re.search(r'^nvme_apstd_observed_ios_total\{controller="nvme0"[^}]*\} (\d+)$', text, re.M)
        check(obs is not None and 0 < int(obs.group(1)) <= ios,
              f"observed I/Os in the metrics: {obs.group(1) if obs else None} of {ios} injected")
        check(re.search(r'^nvme_apstd_observed_stall_seconds_total\{controller="nvme0"', text, re.M) is not None,
              "observed stall in the metrics")
        os.unlink(prom)

        # the kernel resets the controller and writes its own table: ours comes back, the learned one
        kernel_tbl = os.path.join(d.dir, "kernel.table")
        write_table_file(kernel_tbl, 1, [0] * 32)
        ctl("reset", "nvme0", kernel_tbl)
        check(wait_for(lambda: read_table("nvme0") == learned, 10, "learned table back") is not None,
              "after a reset the learned table is re-applied, not the initial one")
        check(d.wait_log(r"nvme0: wrote and verified the APST table .*APST_REASON=reset", 5) is not None,
              "... by the reset's re-check")
        # a reload with the same configuration keeps it
        sets1 = count_cmds("nvme0", SET)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after reload")
        check(read_table("nvme0") == learned, "a reload that changes nothing keeps the learned table")
        check(count_cmds("nvme0", SET) == sets1, f"... and writes nothing ({sets1} -> {count_cmds('nvme0', SET)})")
        # a reload that changes the configuration starts over from the new plan
        write_config("[apst]\npolicy = adaptive\nstall_budget_pct = 0.5\n", CONF)
        want_half = plan_table(CONF, SAMSUNG, "144d:a808")
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after the changing reload")
        check(wait_for(lambda: read_table("nvme0") == want_half, 5, "new initial table") is not None,
              "a changed configuration replaces the learned table with the new initial one")
        check(d.stop() == 0, "exit 0")
        check(read_table("nvme0") == (0, [0] * 32), "the original table restored at stop")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "adaptive-idle":
    # An idle daemon with policy = adaptive wakes at most 0.2 times a second: count its
    # voluntary context switches (each sleep in epoll_wait that a timer ends is one) over 20 s
    # without I/O; one wake-up may straddle the start of the window.
    if WRAPPER:
        skip("the wrapper (valgrind) would be the process measured, not the daemon")
    write_config("[apst]\npolicy = adaptive\n", CONF)
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        time.sleep(2)

        def ctxsw(kind):
            n = 0
            for tid in os.listdir(f"/proc/{d.proc.pid}/task"):
                with open(f"/proc/{d.proc.pid}/task/{tid}/status") as f:
                    for line in f:
                        if line.startswith(kind + "_ctxt_switches"):
                            n += int(line.split()[1])
            return n
        a, ai, t = ctxsw("voluntary"), ctxsw("nonvoluntary"), time.monotonic()
        time.sleep(20)
        span = time.monotonic() - t
        n, ni = ctxsw("voluntary") - a, ctxsw("nonvoluntary") - ai
        print(f"idle wake-ups: {n} in {span:.1f} s = {n / span:.3f}/s (and {ni} preemptions)")
        check((n - 1) / span <= 0.2, f"idle: at most 0.2 wake-ups/s ({n} in {span:.1f} s)")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "bpf-source":
    # [watch] source = auto on a machine where the eBPF program loads: nvme0's namespace is a real
    # loop device (bpf-source.sh). O_DIRECT reads with gaps that the initial table (ps3 after
    # 141 ms, ps4 858 ms later) leaves awake, takes to ps3 and takes to ps4 reach the daemon as
    # exact gaps: the passive calibration finds that this "drive" wakes at once and says how that
    # differs from the descriptors (1200 and 8000 µs). What the policy learned is kept while it
    # learns (every 2 s here, $NVME_APSTD_TEST_LEARNED_KEEP_SEC; an hour by default), not only when
    # it stops. Then, idle, the daemon
    # reads the program's maps every 20 s, on the monotonic clock's 20 s grid: at most 0.05 wake-ups a second.
    if WRAPPER:
        skip("the wrapper (valgrind) would be the process measured, not the daemon")
    prom = os.path.splitext(CONF)[0] + "-bpf.prom"
    sdir = tempfile.mkdtemp(prefix="apstd-state-")
    write_config(f"[apst]\npolicy = adaptive\n[watch]\nsource = auto\n[metrics]\npath = {prom}\n", CONF)
    d = Daemon(CONF, args=["--state-dir", sdir], extra_env={"NVME_APSTD_TEST_LEARNED_KEEP_SEC": "2"})

    def learned_file():
        files = glob.glob(os.path.join(sdir, "adaptive", "*.learned"))
        if len(files) != 1:
            return None
        with open(files[0]) as f:
            t = f.read()
        m = re.search(r"^gaps_seen=(\d+)$", t, re.M)
        return (int(m.group(1)), t) if m and "\nversion=2\n" in t else None
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(d.wait_log(r"Watching I/O with the eBPF program[^\n]*MESSAGE_ID=b08fa45955ed41cda5cfa11be7fd55ec")
              is not None, "the journal says the eBPF source is in use, with its MESSAGE_ID")

        def source_metric():
            if not os.path.exists(prom):
                return None
            with open(prom) as f:
                return re.search(r'^nvme_apstd_watch_source_info\{controller="nvme0",source="bpf"\} 1$', f.read(), re.M)

        def direct_reads(schedule):
            # 4 KiB O_DIRECT reads of the loop device: (block, pause after it) each
            fd = os.open(os.environ["APSTD_LOOPDEV"], os.O_RDONLY | os.O_DIRECT)
            buf = mmap.mmap(-1, 4096)
            try:
                for block, pause in schedule:
                    os.preadv(fd, [buf], 4096 * block)
                    if pause:
                        time.sleep(pause)
            finally:
                os.close(fd)

        # each gap ends with three reads in a row: the second and third find the drive awake
        direct_reads([((i * 3 + k) * 7 % 1000, gap if k == 2 else 0)
                      for i, gap in enumerate([0.02, 0.3, 1.5] * 6 + [0.02]) for k in range(3)] + [(0, 0)])
        # The policy may move the table as the gaps come (it is adaptive), so which states the gaps
        # reached depends on its decisions; every state measured must come out a loop device's.
        pat = (r"nvme0: ps(\d) wakes in (\d+) µs as the block layer sees it \((\d+) wake-ups[^\n]*not the "
               r"(\d+) µs its descriptor advertises[^\n]*MESSAGE_ID=93f5ccf8223844c5b96fe88726110af0")
        check(d.wait_log(pat, timeout=30) is not None, "the passive calibration measured a state from the exact gaps")
        for ps, us, n, adv in re.findall(pat, d.log()):
            check(int(n) >= 5 and int(adv) in (1200, 8000) and int(us) < int(adv) / 4,
                  f"ps{ps}: a loop device wakes at once ({us} µs measured over {n}, {adv} µs advertised)")
        check(wait_for(source_metric, 10, "the watch source in the metrics"), "the metrics say nvme0 is watched with bpf")
        # kept while the daemon runs: the gaps, and the wake-ups passive calibration measured
        kept = wait_for(lambda: (learned_file() or (0, ""))[0] >= 12 and learned_file(), 10, "the learned file")
        check(kept is not None and re.search(r"^state=[34] count=", kept[1], re.M) is not None,
              f"what the policy learned is kept while it runs ({kept and kept[0]} gaps, with the measured wake-ups)")

        # The shadow kernel: what the tables applied cost beside the kernel's table on the same gaps.
        def savings_metric():
            if not os.path.exists(prom):
                return None
            with open(prom) as f:
                t = f.read()
            need = [rf'^nvme_apstd_{n}\{{controller="nvme0",table="{k}"\}} [0-9.]+$'
                    for n in ("estimated_energy_joules_total", "wake_delay_seconds_total") for k in ("applied", "kernel")]
            need.append(r'^nvme_apstd_guard_fallbacks_total\{controller="nvme0"\} [0-9]+$')
            return t if all(re.search(x, t, re.M) for x in need) else None
        t = wait_for(savings_metric, 10, "the shadow kernel's figures in the metrics")
        check(t is not None, "the metrics give the shadow kernel's energy and wake delay for nvme0, applied and kernel")

        # The totals reach the file once the gaps stop (and at most every 10 s while they go on),
        # whether or not the policy changed the table meanwhile.
        def kernel_joules():
            t = savings_metric()
            m = t and re.search(r'estimated_energy_joules_total\{controller="nvme0",table="kernel"\} ([0-9.]+)', t)
            return float(m.group(1)) if m else None
        j0 = wait_for(lambda: (kernel_joules() or 0) > 0 and kernel_joules(), 5, "the kernel's table's energy counted")
        check(j0 is not None and j0 > 0, f"the kernel's table's estimated energy on those gaps is counted ({j0} J)")
        direct_reads([(i * 13 % 1000, 0.3) for i in range(4)])
        j1 = wait_for(lambda: (kernel_joules() or 0) > (j0 or 0) and kernel_joules(), 5,
                      "the kernel's table's energy after a second burst")
        check(j1 is not None, f"a second burst's gaps reach the metrics file within seconds ({j0} J, then {j1} J)")

        def ctxsw():
            n = 0
            for tid in os.listdir(f"/proc/{d.proc.pid}/task"):
                with open(f"/proc/{d.proc.pid}/task/{tid}/status") as f:
                    for line in f:
                        if line.startswith("voluntary_ctxt_switches"):
                            n += int(line.split()[1])
            return n
        time.sleep(40)   # the reading interval backs off: 1, 2, 4, 8, 16, then 20 s
        a, t = ctxsw(), time.monotonic()
        time.sleep(60)
        span = time.monotonic() - t
        n = ctxsw() - a
        print(f"idle wake-ups with the eBPF source: {n} in {span:.1f} s = {n / span:.3f}/s")
        check((n - 1) / span <= 0.05, f"idle: at most 0.05 wake-ups/s ({n} in {span:.1f} s)")
        check(d.stop() == 0, "exit 0")
        last = learned_file()
        check(last is not None and kept is not None and last[0] >= kept[0] + 4,
              f"and when it stops, with the last burst's gaps ({kept and kept[0]}, then {last and last[0]})")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "bpf-loader-fails":
    # The eBPF program's loader (nvme-apstd-bpf-load) missing, one that exits without an answer,
    # one that never answers (killed after 10 s) and one that answers and lingers, on a machine
    # where the program loads (bpf-source.sh): the daemon watches with the sampler and says why,
    # naming the loader, as when eBPF is unavailable; no loader holds the start or outlives it.
    tmp = tempfile.mkdtemp(prefix="apstd-noloader-")
    missing = os.path.join(tmp, "nvme-apstd-bpf-load")
    hangs = os.path.join(tmp, "hangs")
    with open(hangs, "w") as f:
        f.write("#!/bin/sh\nexec sleep 613.25\n")
    os.chmod(hangs, 0o755)
    # One that answers (the load step refused, EPERM: iogap-load.h's IogapLoadAnswer) and then
    # lingers: the answer is taken at once and the loader does not hold the start either.
    lingers = os.path.join(tmp, "lingers")
    with open(lingers, "w") as f:
        f.write(f"#!{sys.executable}\nimport os, socket, struct\n"
                "socket.socket(fileno=3).send(struct.pack('=iii', -1, 2, 0))\n"
                "os.execvp('sleep', ['sleep', '613.25'])\n")
    os.chmod(lingers, 0o755)

    def sleepers():
        n = 0
        for p in os.listdir("/proc"):
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    n += f.read() == b"sleep\x00613.25\x00"
            except (OSError, ValueError):
                pass
        return n
    # a missing one: the error names the fixes
    no_file = ("No such file or directory; install it (meson install), keep nvme-apstd-bpf-load beside "
               "this program (as the build tree has it), or set NVME_APSTD_BPF_LOADER to one")
    for loader, why in ((missing, no_file), ("/bin/false", "it ended without an answer"),
                        (hangs, "it gave no answer within 10 s, and was killed"),
                        (lingers, "not permitted (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)")):
        write_config("[apst]\npolicy = adaptive\n[watch]\nsource = bpf\n", CONF)
        d = Daemon(CONF, extra_env={"NVME_APSTD_BPF_LOADER": loader})
        try:
            t0 = time.monotonic()
            check(d.wait_notify(r"^READY=1$", timeout=30) is not None, f"READY=1 with the loader {loader}")
            took = time.monotonic() - t0
            if loader == hangs:
                check(9 <= took <= 25, f"the start waited about 10 s for the loader that hangs ({took:.1f} s)")
            if loader in (hangs, lingers):
                check(sleepers() == 0, "the loader is gone")
            said = ("cannot load the eBPF program: " if loader == lingers else
                    f"cannot run the eBPF program's loader ({loader}): ") + why
            pat = r"Cannot watch I/O with eBPF: " + re.escape(said) + r"; sampling /sys/block/\*/stat instead\."
            check(d.wait_log(pat) is not None, f"the journal says the loader {loader} failed ({why}) and the sampler took over")
            check(not re.search(r"Watching I/O with the eBPF program", d.log()), "the eBPF source is not said to be in use")
            check(d.stop() == 0, "exit 0")
        finally:
            if d.proc.poll() is None:
                d.stop()
            d.dump()

elif scenario == "calibration":
    # An Intel 600p (no PCI quirk here) whose ps4 was measured at 30.1 ms against the 10 ms its
    # descriptor advertises, under a 15000 us budget: 2000 + 10000 us fits, 2000 + 30100 does not.
    # The daemon must leave ps4 out and say so; a reload without the file, or with a malformed
    # one, plans from the descriptors again.
    sdir = tempfile.mkdtemp(prefix="apstd-state-")
    os.makedirs(os.path.join(sdir, "calibration"))
    calfile = os.path.join(sdir, "calibration", "INTEL%20SSDPEKKW256G7@PSF109C.calib")
    caltext = ("version=1\nmodel=INTEL SSDPEKKW256G7\nfirmware=PSF109C\nmeasured_realtime_usec=1764600000000000\n"
               "awake_median_us=45\nstate=4 advertised_enlat_us=2000 advertised_exlat_us=10000 samples=20 "
               "wake_median_us=30100 wake_p99_us=31900\n")
    with open(calfile, "w") as f:
        f.write(caltext)
    write_config("[apst]\npolicy = budget\nmax_latency_us = 15000\n", CONF)

    def live_plan(*extra):
        p = run("plan", "--json", "--config", CONF, *extra)
        check(p.returncode == 0, "plan on the live controller")
        c = json.loads(p.stdout)["controllers"][0]
        return c, ((1 if c["apste"] else 0), [int(x, 16) for x in c["table"]])

    def targets(tbl):
        return {(e >> 3) & 0x1f for e in tbl[1] if e >> 8}

    plain_json, plain = live_plan("--state-dir", tempfile.mkdtemp(prefix="apstd-empty-"))
    cal_json, cal = live_plan("--state-dir", sdir)
    check(4 in targets(plain), "from the descriptors alone ps4 is in the table")
    check(4 not in targets(cal) and 3 in targets(cal), "with the measurement ps4 is left out, ps3 kept")
    ps4 = [s for s in cal_json["power_states"] if s["ps"] == 4][0]
    check(ps4["measured"] and ps4["planned_exlat_us"] == 30100 and ps4["exlat_us"] == 10000,
          "plan --json shows the measured latency it planned with beside the advertised one")
    d = Daemon(CONF, args=["--state-dir", sdir])
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(read_table("nvme0") == cal, "the daemon wrote the calibrated table")
        m = d.wait_log(r"nvme0: measured wake-ups changed the table: ps4 wakes in 30100 µs, not the advertised "
                       r"10000 µs.*MESSAGE_ID=5e0c8d1e2b7a4f56a3c4d9e8f1b20a77.*APST_POWER_STATE=ps4.*"
                       r"APST_ADVERTISED_EXLAT_US=10000.*APST_MEASURED_EXLAT_US=30100")
        check(m is not None, "the journal says a measurement changed the table, with both latencies")

        # the measurement removed: a reload plans from the descriptors
        os.unlink(calfile)
        s0 = sets("nvme0")
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after the reload")
        check(wait_for(lambda: read_table("nvme0") == plain, what="descriptor table") is not None,
              "without the file the reload writes the descriptors' table")
        check(sets("nvme0") == s0 + 1, "one Set Features for it")

        # a malformed file: said once with its file and line, planned from the descriptors
        with open(calfile, "w") as f:
            f.write(caltext.replace("samples=20", "samples=twenty"))
        pos = len(d.log())
        s0 = sets("nvme0")
        for _ in range(2):
            n = len(d.notifications)
            d.signal(signal.SIGHUP)
            check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after a reload with a bad calibration")
        m = d.wait_log(r"nvme0: ignoring the calibration: " + re.escape(calfile) + r": line 6: not a number",
                       after=pos)
        check(m is not None, "a malformed calibration names the file and the line")
        check(len(re.findall(r"ignoring the calibration", d.log()[pos:])) == 1, "said once, not on every reload")
        check(read_table("nvme0") == plain and sets("nvme0") == s0, "the descriptors' table stays, nothing written")

        # the same measurement with use_calibration = no in the drive's section: descriptors
        with open(calfile, "w") as f:
            f.write(caltext)
        write_config("[apst]\npolicy = budget\nmax_latency_us = 15000\n[device intel]\nmatch_model = INTEL*\n"
                     "use_calibration = no\n", CONF)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1")
        check(read_table("nvme0") == plain, "use_calibration = no in [device]: the descriptors' table")
        write_config("[apst]\npolicy = budget\nmax_latency_us = 15000\n", CONF)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1")
        check(wait_for(lambda: read_table("nvme0") == cal, what="calibrated table") is not None,
              "a reload picks the measurement up again")

        # the measurement travelled as a drop-in (CONF.d, as --config FILE reads), no saved calibration:
        # first without either, the descriptors' table; then the drop-in brings the measured one back
        os.unlink(calfile)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1")
        check(wait_for(lambda: read_table("nvme0") == plain, what="descriptor table") is not None,
              "no calibration, no drop-in: the descriptors' table")
        os.makedirs(CONF + ".d", exist_ok=True)
        dropin = os.path.join(CONF + ".d", "50-calibrated.conf")
        write_config("[device intel]\nmatch_model = INTEL SSDPEKKW256G7\nmatch_firmware = PSF109C\n"
                     "exit_latency_us = ps4:30.1ms\n", dropin)
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after the reload with the drop-in")
        check(wait_for(lambda: read_table("nvme0") == cal, what="table from the drop-in") is not None,
              "the drop-in's exit_latency_us keeps ps4 out, as the saved measurement did")
        p = run("plan", "--json", "--config", CONF, "--state-dir", tempfile.mkdtemp(prefix="apstd-empty-"))
        ps4 = [s for s in json.loads(p.stdout)["controllers"][0]["power_states"] if s["ps"] == 4][0]
        check(ps4["from_configuration"] and ps4["planned_exlat_us"] == 30100,
              "plan says ps4's latency is from the configuration")

        # a malformed drop-in and a bad main file: every error logged, the running configuration kept
        write_config("[device intel]\nmatch_model = INTEL*\nexit_latency_us = ps4=30ms\n", dropin)
        write_config("[apst]\npolicy = budget\nmax_latency_us = 15 ms\n", CONF)
        pos = len(d.log())
        s0 = sets("nvme0")
        n = len(d.notifications)
        d.signal(signal.SIGHUP)
        check(d.wait_notify(r"^READY=1$", n) is not None, "READY=1 after a rejected reload")
        for pat in (re.escape(CONF) + r":3: \[apst\] max_latency_us = 15 ms: not a time span",
                    re.escape(dropin) + r":3: \[device intel\] exit_latency_us = ps4=30ms: expected psN:LATENCY"):
            check(d.wait_log(r"Configuration not reloaded, keeping the running one: " + pat, after=pos) is not None,
                  "each error of each file logged: " + pat)
        check(read_table("nvme0") == cal and sets("nvme0") == s0, "the running configuration and table stay")
        os.unlink(dropin)
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)

done()
