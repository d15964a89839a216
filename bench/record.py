#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Record a block device's I/O as a simulator trace by sampling /proc/diskstats.

    bench/record.py DEVICE SECONDS [-- COMMAND ...] > trace.txt

Every 1 ms it reads the completed read/write/discard/flush counts and sectors of
DEVICE (e.g. vda, nvme0n1) and prints one plain-trace line per completed I/O
("TIME_S OP BYTES", doc/simulator.md) at the time of the sample that saw it, the
bytes split evenly over the I/Os of that sample. With a COMMAND it runs it and
stops when it exits (or after SECONDS). Completions, not issues: each I/O is
placed up to its service time plus 1 ms late, which is the precision of the trace.
"""
import os
import subprocess
import sys
import time


def counters(dev):
    with open("/proc/diskstats") as f:
        for line in f:
            p = line.split()
            if p[2] == dev:
                v = [int(x) for x in p[3:]]
                v += [0] * (17 - len(v))
                # reads, read sectors, writes, write sectors, discards, discard sectors, flushes
                return (v[0], v[2], v[4], v[6], v[11], v[13], v[15])
    raise SystemExit(f"record.py: no device {dev} in /proc/diskstats")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    dev, secs = sys.argv[1], float(sys.argv[2])
    cmd = sys.argv[4:] if len(sys.argv) > 4 and sys.argv[3] == "--" else None
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if cmd else None
    t0 = time.monotonic()
    prev = counters(dev)
    out = sys.stdout
    out.write(f"# {dev}, sampled every 1 ms from /proc/diskstats; {' '.join(cmd) if cmd else 'no command'}\n")
    nxt = t0
    while True:
        nxt += 0.001
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
        now = time.monotonic() - t0
        cur = counters(dev)
        for op, (i, s) in (("R", (0, 1)), ("W", (2, 3)), ("D", (4, 5)), ("F", (6, None))):
            n = cur[i] - prev[i]
            if n <= 0:
                continue
            b = 0 if s is None else (cur[s] - prev[s]) * 512 // n
            for _ in range(n):
                out.write(f"{now:.6f} {op} {b}\n")
        prev = cur
        if now >= secs or (proc and proc.poll() is not None):
            break
    if proc and proc.poll() is None:
        proc.terminate()


if __name__ == "__main__":
    main()
