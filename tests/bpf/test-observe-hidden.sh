#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `nvme-apstd observe` counts the requests that queue behind a slow first request, on a disk that
# answers like a drive waking from a deep state: a loop device over a file on a FUSE file system
# whose every read takes 40 ms (slow-fuse.py). After a 300 ms idle gap, read A; 11.5 and 23 ms
# after it, reads B and C, issued while A still waits. The JSON must count B and C as hidden
# (in the buckets of their times since the read before, as measured), one first request that
# kept them waiting (in the bucket of the gap before A), and the text must say so; sequential
# reads that never overlap count nothing.
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
	rm -f "$mnt.json" "$mnt.txt" "$mnt.times"
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
	# MODE: overlap (A, then B and C while A waits) or sequential (each after the last returned);
	# the times each read was called and A returned go to $mnt.times (monotonic, seconds)
	/usr/bin/python3 - "$loop" "$1" "$mnt.times" <<'PY'
import json, mmap, os, sys, threading, time
dev, mode, out = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
t = {}
def rd(name, block, at=0.0):
    buf = mmap.mmap(-1, 4096)
    if at:
        time.sleep(max(0.0, at - time.monotonic()))
    t[name] = time.monotonic()
    os.preadv(fd, [buf], 4096 * block)
    t[name + "_ret"] = time.monotonic()
rd("first", 1)              # a completion to count the gap from
time.sleep(0.300)
if mode == "overlap":
    t0 = time.monotonic() + 0.005
    th = [threading.Thread(target=rd, args=(n, b, t0 + d)) for n, b, d in (("a", 256, 0), ("b", 512, 0.0115), ("c", 768, 0.023))]
    for x in th:
        x.start()
    for x in th:
        x.join()
else:
    for n, b in (("a", 256), ("b", 512), ("c", 768)):
        rd(n, b)
        time.sleep(0.0115)
os.close(fd)
json.dump(t, open(out, "w"))
PY
}

# Each read is issued a little after its call: the buckets checked are those within 2 ms of the
# times measured. B and C must have gone in while A waited (a loaded machine may start a thread
# late): a round where they did not is tried again, up to three times.
for mode in overlap sequential; do
	for _ in 1 2 3; do
		"$apstd" observe --json --seconds 3 "$loop" >"$mnt.json" 2>/dev/null &
		obs=$!
		sleep 1
		reads "$mode"
		wait "$obs"
		rc=0
		/usr/bin/python3 - "$mnt.json" "$mode" "$mnt.times" <<'PY' || rc=$?
import json, sys
d = json.load(open(sys.argv[1]))["disks"][0]
mode, t = sys.argv[2], json.load(open(sys.argv[3]))
b = d["buckets"]
if mode == "sequential":
    assert d["hidden"] == 0 and d["hidden_after"] == 0, d
    assert all(x["hidden"] == 0 and x["hidden_after"] == 0 for x in b), b
    print(f"ok: sequential reads: {d['requests']} requests, nothing hidden")
    sys.exit(0)
if not (t["b"] < t["a_ret"] and t["c"] < t["a_ret"]):
    print(f"# B and C not both issued while A waited (A {1e3 * (t['a_ret'] - t['a']):.1f} ms, "
          f"B at {1e3 * (t['b'] - t['a']):.1f} ms, C at {1e3 * (t['c'] - t['a']):.1f} ms): again")
    sys.exit(3)
def near(x):
    return sum(k["hidden"] for k in b if k["lower_ns"] <= x * 1e9 + 2e6 and (k["upper_ns"] or 1e18) > x * 1e9 - 2e6)
ab, bc = t["b"] - t["a"], t["c"] - t["b"]
assert d["requests"] == 4, f"requests {d['requests']}"
assert d["hidden"] == 2, f"hidden {d['hidden']}: B and C, issued while A waited"
assert near(ab) >= 1 and near(bc) >= 1, f"hidden not at {1e3 * ab:.1f} and {1e3 * bc:.1f} ms: {b}"
after = [x for x in b if x["hidden_after"]]
gap = t["a"] - t["first_ret"]
assert d["hidden_after"] == 1 and len(after) == 1, f"hidden_after {d['hidden_after']}: {after}"
assert after[0]["lower_ns"] <= gap * 1e9 + 2e6 and after[0]["upper_ns"] > gap * 1e9 - 2e6, (gap, after)
print(f"ok: overlapping reads: 2 hidden, {1e3 * ab:.1f} and {1e3 * bc:.1f} ms apart, behind 1 first request "
      f"after a {1e3 * gap:.0f} ms gap")
PY
		[ "$rc" = 3 ] && continue
		[ "$rc" = 0 ] || exit 1
		break
	done
	[ "$rc" = 0 ] || { echo "FAIL: B and C never went in while A waited"; exit 1; }
done

# the text says it too
for _ in 1 2 3; do
	"$apstd" observe --seconds 3 "$loop" >"$mnt.txt" 2>/dev/null &
	obs=$!
	sleep 1
	reads overlap
	wait "$obs"
	# B and C in while A waited, each 2 ms or more after the read before
	/usr/bin/python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))
sys.exit(not (t["c"] < t["a_ret"] and t["b"] - t["a"] >= 0.002 and t["c"] - t["b"] >= 0.002))' "$mnt.times" && break
done
grep -q "4 requests, 1 idle gap in 3 s; 2 more issued 1 ms or more apart behind 1 slow first request, " "$mnt.txt" ||
	{ cat "$mnt.txt"; echo "FAIL: the text does not say what queued behind the slow read"; exit 1; }
echo "ok: observe's text: $(head -n 1 "$mnt.txt")"
