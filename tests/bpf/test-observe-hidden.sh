#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `nvme-apstd observe` counts the requests that queue behind a slow first request, on a disk that
# answers like a drive waking from a deep state: a loop device over a file on a FUSE file system
# whose every read takes 40 ms (slow-fuse.py). After a 300 ms idle gap, read A; 11.5 and 23 ms
# after it, reads B and C, issued while A still waits. The JSON must count B and C as hidden
# (in the buckets of about 11.5 ms), one first request that kept them waiting (in the bucket of
# the 300 ms gap), and the text must say so; sequential reads that never overlap count nothing.
# Needs root, eBPF, losetup, /dev/fuse and /usr/bin/python3 with fusepy: else 77.
#   test-observe-hidden.sh NVME_APSTD SLOW_FUSE_PY
# Covers: src/cli/cmd-observe.c, src/platform/bpf/iogap.bpf.c.
set -euo pipefail
apstd=$1 fuse=$2
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (loop device, FUSE, eBPF)"
command -v losetup >/dev/null || skip "losetup missing"
[ -w /dev/fuse ] || skip "no /dev/fuse"
/usr/bin/python3 -c 'import fusepy' 2>/dev/null || skip "needs /usr/bin/python3 with fusepy (python3-fusepy, tests/deps.sh test)"
mnt=$(mktemp -d /dev/shm/nvme-apstd-observe-hidden.XXXXXX)
loop=""
server=""
cleanup() {
	[ -n "$loop" ] && losetup -d "$loop"
	umount -l "$mnt" 2>/dev/null || true
	[ -n "$server" ] && { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
	rmdir "$mnt" 2>/dev/null || true
	rm -f "$mnt.json" "$mnt.txt"
}
trap cleanup EXIT
/usr/bin/python3 "$fuse" "$mnt" 0.040 &
server=$!
for _ in $(seq 100); do [ -f "$mnt/disk.img" ] && break; sleep 0.1; done
[ -f "$mnt/disk.img" ] || skip "the FUSE file system did not come up"
loop=$(losetup -f --show --direct-io=on "$mnt/disk.img" 2>/dev/null || losetup -f --show "$mnt/disk.img" 2>/dev/null) ||
	{ loop=; skip "losetup cannot set up a loop device over a FUSE file here"; }
out=$("$apstd" observe --seconds 1 "${loop#/dev/}" 2>&1) || skip "the eBPF program does not load here: $out"
sleep 1

reads() {
	# MODE: overlap (A, then B and C while A waits) or sequential (each after the last returned)
	/usr/bin/python3 - "$loop" "$1" <<'PY'
import mmap, os, sys, threading, time
dev, mode = sys.argv[1], sys.argv[2]
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
def rd(block):
    buf = mmap.mmap(-1, 4096)
    os.preadv(fd, [buf], 4096 * block)
rd(1)                       # a completion to count the gap from
time.sleep(0.300)
if mode == "overlap":
    t = [threading.Thread(target=rd, args=(b,)) for b in (256, 512, 768)]
    t0 = time.monotonic()
    for i, th in enumerate(t):
        while time.monotonic() < t0 + 0.0115 * i:
            pass
        th.start()
    for th in t:
        th.join()
else:
    for b in (256, 512, 768):
        rd(b)
        time.sleep(0.0115)
os.close(fd)
PY
}

for mode in overlap sequential; do
	"$apstd" observe --json --seconds 3 "$loop" >"$mnt.json" 2>/dev/null &
	obs=$!
	sleep 1
	reads "$mode"
	wait "$obs"
	/usr/bin/python3 - "$mnt.json" "$mode" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["disks"][0]
mode = sys.argv[2]
b = d["buckets"]
if mode == "sequential":
    assert d["hidden"] == 0 and d["hidden_after"] == 0, d
    assert all(x["hidden"] == 0 and x["hidden_after"] == 0 for x in b), b
    print(f"ok: sequential reads: {d['requests']} requests, nothing hidden")
    sys.exit(0)
assert d["requests"] == 4, f"requests {d['requests']}"
assert d["hidden"] == 2, f"hidden {d['hidden']}: B and C, issued while A waited"
near = [x for x in b if x["hidden"] and x["lower_ns"] <= 13_500_000 and (x["upper_ns"] or 0) > 9_500_000]
assert sum(x["hidden"] for x in near) == 2, f"hidden not at about 11.5 ms: {b}"
after = [x for x in b if x["hidden_after"]]
assert d["hidden_after"] == 1 and len(after) == 1, f"hidden_after {d['hidden_after']}: {after}"
assert after[0]["lower_ns"] <= 300_000_000 < after[0]["upper_ns"] + 40_000_000, after
print(f"ok: overlapping reads: 2 hidden at about 11.5 ms, behind 1 first request after a "
      f"{after[0]['lower_ns'] / 1e6:.0f}-{after[0]['upper_ns'] / 1e6:.0f} ms gap")
PY
done

# the text says it too
"$apstd" observe --seconds 3 "$loop" >"$mnt.txt" 2>/dev/null &
obs=$!
sleep 1
reads overlap
wait "$obs"
grep -q "4 requests, 1 idle gap in 3 s; 2 more issued 1 ms or more apart behind 1 slow first request, " "$mnt.txt" ||
	{ cat "$mnt.txt"; echo "FAIL: the text does not say what queued behind the slow read"; exit 1; }
echo "ok: observe's text: $(head -n 1 "$mnt.txt")"
