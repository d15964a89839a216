#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's [metrics] file against the fake controller: its values after
start, reload, a rejected reload, a kernel reset and a failed command; no
write while idle; promtool; a missing or read-only directory.
Run as the harness's COMMAND: test-metrics.py SCENARIO.
Covers: src/daemon/manager-metrics.c, src/core/metrics.c, src/platform/metrics-file.c."""

import ctypes
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
SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
MDIR = tempfile.mkdtemp(prefix="apstd-metrics-")
PROM = os.path.join(MDIR, "nvme-apstd.prom")


def conf_text(path=PROM, extra=""):
    return f"[apst]\npolicy = budget\n{extra}\n[metrics]\npath = {path}\n"


def parse(path=PROM):
    """{(name, frozenset(labels)): value} of a text-format file; None when absent."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            print(f"unparsable line {line!r}")
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(samples, name, **labels):
    for (n, ls), v in (samples or {}).items():
        if n == name and all((k, val) in ls for k, val in labels.items()):
            return v
    return None


def info(samples, ctrl):
    for (n, ls), _ in (samples or {}).items():
        if n == "nvme_apstd_controller_info" and ("controller", ctrl) in ls:
            return dict(ls)
    return None


def wait_value(name, want, what, **labels):
    return wait_for(lambda: value(parse(), name, **labels) == want, 10, what) is not None


def reload(d):
    n = len(d.notifications)
    d.signal(signal.SIGHUP)
    return d.wait_notify(r"^READY=1$", n) is not None


def readonly_bind(path):
    """A preexec_fn: the daemon sees @path read-only (a private mount namespace; the test runs as root)."""
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWNS, MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20000, 1, 32, 4096, 16384, 1 << 18

    def fn():
        p = path.encode()
        if (libc.unshare(CLONE_NEWNS) < 0 or libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) < 0 or
                libc.mount(p, p, None, MS_BIND, None) < 0 or
                libc.mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY, None) < 0):
            os._exit(111)
    return fn


if scenario == "lifecycle":
    CONF = write_config(conf_text())
    want0 = plan_table(CONF, SAMSUNG, "144d:a808")
    t0 = time.time()
    old_umask = os.umask(0o077)  # as the unit's UMask=: the file must still be readable by node_exporter
    d = Daemon(CONF, args=["--verify-interval-ms", "100"])
    os.umask(old_umask)
    try:
        ready = d.wait_notify(r"^READY=1$")
        check(ready is not None, "READY=1")
        check(wait_for(lambda: parse() is not None, 5, "the metrics file") is not None, "metrics file written at start")
        s = parse()
        st = os.stat(PROM)
        check(st.st_mode & 0o777 == 0o644, f"mode 0644 despite umask 077 (got {st.st_mode & 0o777:o})")
        start = value(s, "nvme_apstd_start_time_seconds")
        check(start is not None and t0 - 1 <= start <= time.time() + 1, f"start time {start} is the daemon's")
        check(value(s, "nvme_apstd_config_reloads_total") == 0, "no reloads yet")
        check(value(s, "nvme_apstd_config_reload_failures_total") == 0, "no failed reloads yet")
        i0 = info(s, "nvme0")
        chain = re.search(r"STATUS=nvme0: budget, (\S+);", d.notifications[ready] if ready is not None else "")
        check(i0 is not None and i0.get("model") == "Samsung SSD 970 EVO Plus 2TB" and i0.get("policy") == "budget",
              f"nvme0 info: model and policy ({i0})")
        check(chain is not None and i0 is not None and i0.get("table") == chain.group(1),
              "nvme0 info: the table label is the chain STATUS= shows")
        check(value(s, "nvme_apstd_max_latency_seconds", controller="nvme0") == 0.1, "budget 100 ms")
        ww = value(s, "nvme_apstd_worst_wake_seconds", controller="nvme0")
        check(ww is not None and 0 < ww <= 0.1, f"worst wake {ww} s within the budget")
        check(value(s, "nvme_apstd_table_writes_total", controller="nvme0") == 1, "one table write on nvme0")
        check(value(s, "nvme_apstd_kernel_overwrites_total", controller="nvme0") == 0, "no overwrite yet")
        check(value(s, "nvme_apstd_errors_total", controller="nvme0") == 0, "no error yet")
        check(info(s, "nvme1") is not None and value(s, "nvme_apstd_errors_total", controller="nvme1") == 0,
              "nvme1 listed too")
        check(read_table("nvme0") == want0, "table in place")

        # idle: the verification timer runs every 100 ms, but nothing changes -> no write
        st0 = os.stat(PROM)
        time.sleep(3)
        st1 = os.stat(PROM)
        check((st0.st_ino, st0.st_mtime_ns) == (st1.st_ino, st1.st_mtime_ns),
              "idle for 3 s (30 verification ticks): the file was not rewritten (same inode and mtime)")

        # reload with another budget
        write_config(conf_text(extra="max_latency_us = 5000"), CONF)
        check(reload(d), "READY=1 after the reload")
        check(wait_value("nvme_apstd_config_reloads_total", 1, "reloads = 1"), "one reload counted")
        s = parse()
        check(value(s, "nvme_apstd_max_latency_seconds", controller="nvme0") == 0.005, "budget now 5 ms")
        check(value(s, "nvme_apstd_table_writes_total", controller="nvme0") == 2, "the new table is the 2nd write")
        i0b = info(s, "nvme0")
        check(i0b is not None and i0 is not None and i0b.get("table") != i0.get("table") and "ps4" not in i0b["table"],
              f"the table label follows the reload ({i0b and i0b.get('table')})")
        check(value(s, "nvme_apstd_worst_wake_seconds", controller="nvme0") <= 0.005, "worst wake within 5 ms")
        check(value(s, "nvme_apstd_config_reload_failures_total") == 0, "no failed reload")

        # a broken file: rejected, counted
        write_config(conf_text(extra="max_latency_us = 12x"), CONF)
        check(reload(d), "READY=1 after a rejected reload")
        check(wait_value("nvme_apstd_config_reload_failures_total", 1, "failures = 1"), "rejected reload counted")
        check(value(parse(), "nvme_apstd_config_reloads_total") == 1, "reloads unchanged")
        write_config(conf_text(extra="max_latency_us = 5000"), CONF)

        # the kernel resets nvme0 and writes its own table: an overwrite, and our table written again
        kernel_tbl = os.path.join(d.dir, "kernel.table")
        write_table_file(kernel_tbl, 1, [entry(3, 100)] + [0] * 31)
        ctl("reset", "nvme0", kernel_tbl)
        check(wait_value("nvme_apstd_kernel_overwrites_total", 1, "overwrites = 1", controller="nvme0"),
              "kernel overwrite counted")
        check(wait_value("nvme_apstd_table_writes_total", 3, "writes = 3", controller="nvme0"),
              "table written again after the reset")

        # an error: Set Features fails after the next reset
        ctl("fault", "nvme0", "set-apst=EIO")
        ctl("reset", "nvme0", kernel_tbl)
        check(wait_for(lambda: (value(parse(), "nvme_apstd_errors_total", controller="nvme0") or 0) >= 1, 10,
                       "errors >= 1") is not None, "failed Set Features counted as an error")
        s = parse()
        check(value(s, "nvme_apstd_kernel_overwrites_total", controller="nvme0") == 2, "second overwrite counted")
        check(value(s, "nvme_apstd_table_writes_total", controller="nvme0") == 3, "no write counted for the failure")
        check(value(s, "nvme_apstd_errors_total", controller="nvme1") == 0, "nvme1 unaffected")
        check(info(s, "nvme0").get("table") == "unknown", "table label 'unknown' while the last attempt failed")
        ctl("clear", "nvme0")
        print("---- metrics file ----")
        with open(PROM) as f:
            print(f.read())
        check(d.proc.poll() is None, "still running")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "promtool":
    if not shutil.which("promtool"):
        skip("promtool not installed (Debian package prometheus, tests/deps.sh test)")
    CONF = write_config(conf_text(extra="[cpu]\npin = always\ngovernor = performance\ncpus = 0-1\n"))
    d = Daemon(CONF)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(wait_for(lambda: parse() is not None, 5, "the metrics file") is not None, "metrics file written")
        s = parse()
        check(value(s, "nvme_apstd_cpufreq_policy_pinned", policy="policy0") == 1, "policy0 pinned: 1")
        check(value(s, "nvme_apstd_cpufreq_policy_pinned", policy="policy2") is None, "policy2 never pinned: absent")
        write_config(conf_text(), CONF)
        check(reload(d), "reload with pin = off")
        check(wait_value("nvme_apstd_cpufreq_policy_pinned", 0, "policy0 released", policy="policy0"),
              "released policy stays listed, at 0")
        with open(PROM) as f:
            text = f.read()
        print(text)
        p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        print(p.stdout + p.stderr)
        check(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(),
              "promtool check metrics: clean on the daemon's file")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "unwritable":
    missing = os.path.join(MDIR, "missing", "nvme-apstd.prom")
    CONF = write_config(conf_text(path=missing))
    ro = os.path.join(MDIR, "ro")
    os.mkdir(ro)
    d = Daemon(CONF, preexec_fn=readonly_bind(ro))
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1 although the metrics directory is missing")
        pat = r"Metrics: cannot write " + re.escape(missing) + r": directory .*missing does not exist.*\[metrics\] path"
        check(d.wait_log(pat, 5) is not None, "one clear error naming the path and [metrics] path")
        # more events: no second line for the same error
        ctl("reset", "nvme0")
        ctl("reset", "nvme1")
        check(d.wait_log(r"re-checking its APST table(.|\n)*nvme1: controller \(re\)connected", 5) is not None,
              "the resets were handled")
        time.sleep(0.5)
        check(len(re.findall(r"Metrics: cannot write", d.log())) == 1, "logged once, not on every event")
        check(d.proc.poll() is None, "still running")

        # a read-only directory (a read-only bind mount in the daemon's namespace)
        ro_prom = os.path.join(ro, "nvme-apstd.prom")
        write_config(conf_text(path=ro_prom), CONF)
        check(reload(d), "reload to the read-only directory")
        check(d.wait_log(r"Metrics: cannot write " + re.escape(ro_prom) + r": .*read-only file system.*"
                         r"\[metrics\] path", 5) is not None, "read-only: one clear error naming the path")
        ctl("reset", "nvme0")
        time.sleep(1)
        check(len(re.findall(r"Metrics: cannot write " + re.escape(ro_prom), d.log())) == 1, "logged once")
        check(not os.path.exists(ro_prom), "nothing written there")

        # fixed: back to a writable path, the file appears
        write_config(conf_text(), CONF)
        check(reload(d), "reload to a writable path")
        check(wait_for(lambda: parse() is not None, 5, "the metrics file") is not None, "written once writable")
        check(value(parse(), "nvme_apstd_config_reloads_total") == 2, "both reloads counted")
        check(d.proc.poll() is None, "still running")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)

done()
