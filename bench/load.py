#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Load and overhead figures for nvme-apstd (the daemon's resource budget); run by bench/load.sh, which
starts it as the fake controller harness's COMMAND (or directly for `tuned`).

    load.py many RELOADS          64 (or however many the harness has) controllers: time to
                                  READY, RSS, one reload that changes every table, RSS over
                                  RELOADS reloads
    load.py idle SECONDS          the daemon with the harness's controllers, the RSS-floor program
                                  and (if TUNED=1) tuned, idle side by side for SECONDS
    load.py ready RUNS            time to READY=1, RUNS starts (one controller in the harness)
    load.py sources SECONDS       the adaptive policy with [watch] source = stat, then = bpf (the
                                  harness's namespaces are loop devices: $BENCH_LOOPDEV, one per
                                  controller), each idle for SECONDS after a few reads on each:
                                  wake-ups/s and RSS side by side

Environment: NVME_APSTD (the daemon), RSS_FLOOR (bench/rss-floor.c built), OUT (a directory for
logs), POLICY (budget by default; adaptive runs the I/O watcher on every controller). Prints `key: value` lines; load.sh collects them into one report."""

import mmap
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

NVME_APSTD = os.environ["NVME_APSTD"]
RSS_FLOOR = os.environ["RSS_FLOOR"]
OUT = os.environ.get("OUT", tempfile.mkdtemp(prefix="bench-load-"))
STATE = os.environ.get("FAKE_NVME_STATE", "")
# the policy the daemon runs with at start and in the idle window (the reloads alternate budget and kernel)
POLICY = os.environ.get("POLICY", "budget")
HZ = os.sysconf("SC_CLK_TCK")


def report(key, value):
    print(f"{key}: {value}", flush=True)


def proc_status(pid):
    """VmRSS and RssAnon in KiB; context switches summed over all threads: voluntary ones ("wakes":
    a thread blocked, so each is followed by a wake-up) and involuntary ones ("preempted": taken off
    a CPU while running, by another program on a busy machine; no wake-up)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[k] = int(v.split()[0])
    vol = invol = 0
    # (a thread that runs one admin-command step comes and goes: one gone since the listing is skipped,
    # and its switches leave the sum with it; an idle daemon has none)
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        invol += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
    out["wakes"] = vol
    out["preempted"] = invol
    # time on a CPU: cpu_s in ns from schedstat, per live thread (exact; an idle daemon's only thread
    # is its loop); cpu_all_s from utime + stime in /proc/PID/stat, in 10 ms ticks, but counting the
    # threads that have exited too (each admin-command step runs in one)
    ns = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    out["cpu_s"] = ns / 1e9
    out["cpu_all_s"] = (int(fields[11]) + int(fields[12])) / HZ
    return out


class Notified:
    """A process started with its own NOTIFY_SOCKET; remembers every notification."""

    def __init__(self, argv, env=None, name="proc"):
        self.dir = tempfile.mkdtemp(prefix=f"bench-{name}-", dir=OUT)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(self.dir, "notify"))
        e = dict(os.environ)
        e.update({"NOTIFY_SOCKET": os.path.join(self.dir, "notify"), "RUNTIME_DIRECTORY": os.path.join(self.dir, "run"),
                  "NVME_APSTD_LOG_TARGET": "console"})
        e.pop("WATCHDOG_USEC", None)
        if env:
            e.update(env)
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.msgs = []
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log, env=e)

    def wait(self, pattern, timeout=60.0):
        """Seconds since start at which a notification matching @pattern arrived (new ones only)."""
        start = len(self.msgs)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for m in self.msgs[start:]:
                if re.search(pattern, m[1], re.M):
                    return m[0]
            r, _, _ = select.select([self.sock], [], [], 0.05)
            if r:
                self.msgs.append((time.monotonic(), self.sock.recv(65536).decode(errors="replace")))
            if self.proc.poll() is not None and not r:
                break
        raise RuntimeError(f"no {pattern!r} from {self.proc.args[0]} (exit {self.proc.poll()}); see {self.dir}/log")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(60)
        self.log.close()
        return rc


def write_config(path, policy):
    with open(path, "w") as f:
        f.write(f"[apst]\npolicy = {policy}\n")
    os.chmod(path, 0o644)


def tables():
    out = {}
    for f in os.listdir(STATE):
        if f.endswith(".table"):
            with open(os.path.join(STATE, f)) as fh:
                out[f[:-6]] = fh.read()
    return out


def mib(kib):
    return f"{kib / 1024:.2f} MiB"


def many(reloads):
    n = len([d for d in os.listdir("/sys/class/nvme")])
    report("controllers", n)
    conf = os.path.join(OUT, "many.conf")
    write_config(conf, POLICY)

    floor = Notified([RSS_FLOOR], name="floor")
    floor.wait(r"^READY=1")
    fs = proc_status(floor.proc.pid)
    floor.stop()
    report("floor_rss (same harness)", mib(fs["VmRSS"]))

    t_orig = tables()
    d = Notified([NVME_APSTD, "run", "--config", conf], name="many")
    t_ready = d.wait(r"^READY=1", timeout=300) - d.t0
    s = proc_status(d.proc.pid)
    report(f"{n}_ctrl_ready_ms", f"{t_ready * 1000:.1f}")
    report(f"{n}_ctrl_rss", f"{mib(s['VmRSS'])} (anon {mib(s['RssAnon'])}; above the floor: {mib(s['VmRSS'] - fs['VmRSS'])})")
    report(f"{n}_ctrl_cpu_to_ready_ms", f"{s['cpu_s'] * 1000:.1f} (loop thread), {s['cpu_all_s'] * 1000:.0f} "
           f"(all threads, 10 ms ticks)")

    def reload(policy):
        write_config(conf, policy)
        before = proc_status(d.proc.pid)["cpu_s"]
        t0 = time.monotonic()
        d.proc.send_signal(signal.SIGHUP)
        d.wait(r"^RELOADING=1")
        t1 = d.wait(r"^READY=1") - t0
        return t1, proc_status(d.proc.pid)["cpu_s"] - before

    t_before = tables()
    wall, cpu = reload("kernel")
    t_after = tables()
    changed = sum(1 for k in t_after if t_after[k] != t_before.get(k))
    report("reload_changing_every_table_ms", f"{wall * 1000:.1f} wall, {cpu * 1000:.1f} ms CPU in the daemon; "
           f"{changed}/{n} tables changed")

    rss = [proc_status(d.proc.pid)["VmRSS"]]
    walls = []
    policies = ["budget", "kernel"]
    for i in range(1, reloads + 1):
        w, _ = reload(policies[(i - 1) % 2])  # budget, kernel, ...: every reload changes every table
        walls.append(w)
        if i % max(1, reloads // 10) == 0:
            rss.append(proc_status(d.proc.pid)["VmRSS"])
    s = proc_status(d.proc.pid)
    report(f"rss_over_{reloads}_reloads_kib", " ".join(str(x) for x in rss))
    report(f"rss_after_{reloads}_reloads", f"{mib(s['VmRSS'])} (start {mib(rss[0])}, peak VmHWM {mib(s['VmHWM'])})")
    if walls:
        report("reload_ms_median", f"{statistics.median(walls) * 1000:.1f} (min {min(walls) * 1000:.1f}, "
               f"max {max(walls) * 1000:.1f})")
        report(f"daemon_cpu_for_{reloads}_reloads_s", f"{s['cpu_s']:.2f} (loop thread), {s['cpu_all_s']:.2f} "
               f"(all threads)")
    rc = d.stop()
    report("stop_exit", rc)
    after = tables()
    report("tables_restored_after_stop", f"{sum(1 for k in t_orig if after.get(k) == t_orig[k])}/{n}")


def idle(seconds):
    conf = os.path.join(OUT, "idle.conf")
    write_config(conf, POLICY)
    procs = {}
    bus_env = {}
    if os.environ.get("BENCH_BUS"):
        bus_env = {"DBUS_SYSTEM_BUS_ADDRESS": os.environ["BENCH_BUS"]}
    procs["nvme-apstd"] = Notified([NVME_APSTD, "run", "--config", conf], env=bus_env, name="idle")
    procs["rss-floor"] = Notified([RSS_FLOOR], name="floor")
    for p in procs.values():
        p.wait(r"^READY=1")
    pids = {k: p.proc.pid for k, p in procs.items()}
    tuned = None
    if os.environ.get("TUNED_PID"):
        pids["tuned"] = int(os.environ["TUNED_PID"])
    time.sleep(2)  # settle: let start-up work finish
    a = {k: proc_status(p) for k, p in pids.items()}
    time.sleep(seconds)
    b = {k: proc_status(p) for k, p in pids.items()}
    for k in pids:
        w = (b[k]["wakes"] - a[k]["wakes"]) / seconds
        cpu = (b[k]["cpu_s"] - a[k]["cpu_s"]) * 1000
        report(f"idle_{k}", f"{w:.3f} wake-ups/s (voluntary context switches; "
               f"{b[k]['preempted'] - a[k]['preempted']} preempted), {cpu:.2f} ms CPU in {seconds} s, "
               f"RSS {mib(b[k]['VmRSS'])} (anon {mib(b[k]['RssAnon'])})")
    report("idle_nvme-apstd_above_floor", mib(b["nvme-apstd"]["VmRSS"] - b["rss-floor"]["VmRSS"]))
    for k, p in procs.items():
        p.stop()


def wait_log_count(path, pattern, n, timeout):
    """time.monotonic() when the log at @path has @n lines matching @pattern; None after @timeout s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(path, errors="replace") as f:
            if len(re.findall(pattern, f.read(), re.M)) >= n:
                return time.monotonic()
        time.sleep(0.5)
    return None


def sources(seconds):
    """The idle daemon with each I/O source in turn, on the same harness and machine: the eBPF
    source's cost in memory (the program, its maps, libbpf) against the sampler's."""
    loopdevs = os.environ["BENCH_LOOPDEV"].split()
    res = {}
    for src in (os.environ.get("SOURCES") or "stat bpf").split():
        conf = os.path.join(OUT, f"sources-{src}.conf")
        with open(conf, "w") as f:
            f.write(f"[apst]\npolicy = adaptive\n[watch]\nsource = {src}\n")
        d = Notified([NVME_APSTD, "run", "--config", conf], name=f"source-{src}")
        d.wait(r"^READY=1")
        # some I/O, so the watcher has gaps to read and the policy something to decide on
        buf = mmap.mmap(-1, 4096)
        for loopdev in loopdevs:
            fd = os.open(loopdev, os.O_RDONLY | os.O_DIRECT)
            try:
                for i in range(20):
                    os.preadv(fd, [buf], 4096 * (i * 37 % 1000))
                    time.sleep(0.05)
            finally:
                os.close(fd)
        # Idle means after the daemon's answer to that I/O: each controller that did I/O is verified
        # once, at the first reading a verify interval (30 s) after the last check, a step per
        # controller in a thread of its own. Those wake-ups are the I/O's, not the idle daemon's:
        # the window starts once every controller's verification is logged, and the readings have
        # backed off (to 20 s with bpf) a grid period later.
        t_io, limit = time.monotonic(), 75
        verified = wait_log_count(d.dir + "/log", r": APST table already in place .*nothing written\.$", len(loopdevs),
                                  limit)
        report(f"post_io_verification_{src}", f"{len(loopdevs)} controllers verified {verified - t_io:.1f} s after the "
               f"last read" if verified else f"not every controller verified within {limit} s")
        time.sleep(25)
        # when in the window the daemon woke (reading /proc wakes none of its threads): the figure's
        # evidence, and which timer a wake-up too many came from
        a = proc_status(d.proc.pid)
        t0, last, seen = time.monotonic(), a, []
        while time.monotonic() - t0 < seconds:
            time.sleep(0.05)
            c = proc_status(d.proc.pid)
            if c["wakes"] != last["wakes"] or c["preempted"] != last["preempted"]:
                n, p = c["wakes"] - last["wakes"], c["preempted"] - last["preempted"]
                seen.append(f"{time.monotonic() - t0:.1f} s" + (f" ({n} wake-ups)" if n != 1 else "") +
                            (f" ({p} preempted)" if p else ""))
                last = c
        b = proc_status(d.proc.pid)
        w = (b["wakes"] - a["wakes"]) / seconds
        res[src] = b
        report(f"idle_source_{src}", f"{w:.3f} wake-ups/s (voluntary context switches; "
               f"{b['preempted'] - a['preempted']} preempted) in {seconds} s, RSS {mib(b['VmRSS'])} "
               f"(anon {mib(b['RssAnon'])}, file {mib(b['RssFile'])}, peak VmHWM {mib(b['VmHWM'])})")
        report(f"idle_source_{src}_wakes_at", ", ".join(seen) if seen else "none")
        d.stop()
        with open(d.dir + "/log", errors="replace") as f:
            used = "Watching I/O with the eBPF program" in f.read()
        if src == "bpf" and not used:
            report("idle_source_bpf", "the eBPF program was not used (see the log): no comparison")
            return
    if "stat" not in res or "bpf" not in res:
        return
    report("idle_source_bpf_minus_stat_rss", f"{mib(res['bpf']['VmRSS'] - res['stat']['VmRSS'])} "
           f"(anon {mib(res['bpf']['RssAnon'] - res['stat']['RssAnon'])})")


def ready(runs):
    conf = os.path.join(OUT, "ready.conf")
    write_config(conf, POLICY)
    times = []
    for _ in range(runs):
        d = Notified([NVME_APSTD, "run", "--config", conf], name="ready")
        times.append(d.wait(r"^READY=1") - d.t0)
        d.stop()
    ms = sorted(t * 1000 for t in times)
    report(f"ready_ms_{len(os.listdir('/sys/class/nvme')) if os.path.isdir('/sys/class/nvme') else 0}_ctrl",
           f"median {statistics.median(ms):.1f}, min {ms[0]:.1f}, max {ms[-1]:.1f} over {runs} starts")


if __name__ == "__main__":
    mode, arg = sys.argv[1], int(sys.argv[2])
    {"many": many, "idle": idle, "ready": ready, "sources": sources}[mode](arg)
