#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `nvme-apstd observe --json` on a loop device (a file on tmpfs): while it watches, 6 O_DIRECT
# reads, each 180 ms after the previous one returned; it must print valid JSON with exactly 6
# requests and 5 gaps, all in the bucket that holds 180 ms (167.8 to 201.3 ms: room for the
# return and submission paths), each with its first request's service time. Needs root and
# eBPF: else 77.
#   test-observe.sh NVME_APSTD
# Covers: src/cli/cmd-observe.c, src/platform/bpfwatch.c, src/platform/bpf/iogap.bpf.c.
set -euo pipefail
apstd=$1
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (loop device, eBPF)"
command -v losetup >/dev/null || skip "losetup missing"
img=$(mktemp /dev/shm/nvme-apstd-observe.XXXXXX)
loop=
trap '[ -n "$loop" ] && losetup -d "$loop"; rm -f "$img" "$img.json"' EXIT
truncate -s 16M "$img"
loop=$(losetup -f --show "$img" 2>/dev/null) || { loop=; skip "losetup cannot set up a loop device here"; }
out=$("$apstd" observe --seconds 1 "${loop#/dev/}" 2>&1) || skip "the eBPF program does not load here: $out"
sleep 0.5
"$apstd" observe --json --seconds 4 "$loop" >"$img.json" &
obs=$!
sleep 1
python3 - "$loop" <<'PY'
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
for i in range(6):
    if i:
        time.sleep(0.180)
    os.preadv(fd, [buf], 4096 * i * 16)
os.close(fd)
PY
wait "$obs"
python3 - "$img.json" "${loop#/dev/}" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
d = j["disks"][0]
assert j["source"] == "bpf" and j["seconds"] == 4, j
assert d["disk"] == sys.argv[2] and d["diskseq"] > 0, d
assert d["requests"] == 6, f"requests {d['requests']}"
assert d["gaps"] == 5, f"gaps {d['gaps']}"
b = d["buckets"]
assert len(b) == 1, b
b = b[0]
assert b["lower_ns"] <= 180_000_000 < b["upper_ns"] and b["gaps"] == 5 and b["first_count"] == 5, b
assert 0 < b["first_max_ns"] <= b["first_sum_ns"] < 5 * 50_000_000, b
assert 5 * 180_000_000 <= d["gap_sum_ns"] < 5 * b["upper_ns"], d
print(f"ok: observe --json: 6 requests, 5 gaps in [{b['lower_ns']}, {b['upper_ns']}) ns, "
      f"first requests {b['first_sum_ns'] // 5} ns on average")
PY
