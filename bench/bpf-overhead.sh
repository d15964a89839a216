#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/bpf-overhead.sh: what the eBPF I/O gap program (src/platform/bpf/iogap.bpf.c) costs per
# request. fio 4 KiB random reads (O_DIRECT, libaio) at queue depth 1 and 32, each without and with
# the program loaded and counting the disk read (`nvme-apstd observe DISK` in the background), in
# alternating rounds; printed as `key: value` lines: the IOPS ratio (with / without, median of the
# paired rounds) and the added time per request from it, and the program's own run time per
# request as the kernel counts it (kernel.bpf_stats_enabled: run_time_ns / run_cnt of the issue and
# completion programs, summed). On a shared machine the IOPS of two runs differ by more than the
# program costs; the kernel's count is the figure that does not depend on the neighbours.
# Targets (doc/watch.md): <= 300 ns per request at QD1, <= 1 % of IOPS at QD32.
#
#   bench/bpf-overhead.sh [BUILD_DIR]      as root; default BUILD_DIR: build
# Environment:
#   SECONDS_PER_RUN=5  ROUNDS=3    each fio run, and the without/with pairs per case
#   REAL_FILE=/var/tmp/nvme-apstd-bench.img   a file on the machine's real disk (created once,
#               256 MiB, then only read: O_DIRECT reads reach the disk itself). REAL_FILE= skips it.
#   OUT=DIR     where fio's JSON goes (default BUILD_DIR/bench-bpf)
# Disks: a loop device on a file in /dev/shm (tmpfs: no device behind it, so what is measured is
# the block layer and the program; the loop worker's copy is the request), null_blk when the
# kernel has it, and REAL_FILE's disk. /dev/vda itself is only ever read.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
APSTD=$BUILD/src/nvme-apstd
export NVME_APSTD_BPF_LOADER=$BUILD/src/nvme-apstd-bpf-load    # the build's loader, not an installed one
OUT=${OUT:-$BUILD/bench-bpf}
SECS=${SECONDS_PER_RUN:-3}
ROUNDS=${ROUNDS:-7}
REAL_FILE=${REAL_FILE-/var/tmp/nvme-apstd-bench.img}
[ "$(id -u)" = 0 ] || { echo "bpf-overhead.sh: run as root" >&2; exit 1; }
command -v fio >/dev/null || { echo "bpf-overhead.sh: fio missing (tests/deps.sh bench)" >&2; exit 1; }
[ -x "$APSTD" ] || { echo "bpf-overhead.sh: $APSTD not built" >&2; exit 1; }
mkdir -p "$OUT"

img= loop= nullb= obs=
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$stats_was" >/dev/null 2>&1
	[ -n "$obs" ] && kill "$obs" 2>/dev/null && wait "$obs" 2>/dev/null
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "$img" ] && rm -f "$img"
	[ -n "$nullb" ] && modprobe -r null_blk 2>/dev/null
	true
}
trap cleanup EXIT

report() { echo "$1: $2"; }

# fio FILE QD -> "iops mean_clat_ns"
run_fio() {
	local f=$1 qd=$2 tag=$3
	fio --name=r --filename="$f" --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth="$qd" \
		--runtime="$SECS" --time_based --size=200M --norandommap --randrepeat=0 \
		--output-format=json --output="$OUT/$tag.json" >/dev/null
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]["read"]; print(j["iops"], j["clat_ns"]["mean"])' \
		"$OUT/$tag.json"
}

# "run_time_ns run_cnt" of the loaded iogap programs, summed
prog_stats() {
	bpftool prog show --json 2>/dev/null | python3 -c 'import json,sys
t=c=0
for p in json.load(sys.stdin):
    if p.get("name","").startswith("iogap_") and p.get("name") != "iogap_requeue":
        t+=p.get("run_time_ns",0); c+=p.get("run_cnt",0)
print(t, c)'
}

# case NAME FILE DISK QD: ROUNDS pairs (without, with the program counting DISK); medians
bench_case() {
	local name=$1 f=$2 disk=$3 qd=$4 r without=() with=() lat0=() lat1=() rt=0 rc=0 t0 c0 t1 c1
	for ((r = 0; r < ROUNDS; r++)); do
		read -r i l < <(run_fio "$f" "$qd" "$name-qd$qd-off-$r")
		without+=("$i") lat0+=("$l")
		"$APSTD" observe --seconds $((SECS + 30)) "$disk" >"$OUT/$name-qd$qd-observe-$r.txt" 2>&1 &
		obs=$!
		sleep 1   # loaded and attached
		read -r t0 c0 < <(prog_stats)
		read -r i l < <(run_fio "$f" "$qd" "$name-qd$qd-on-$r")
		read -r t1 c1 < <(prog_stats)
		rt=$((rt + t1 - t0)) rc=$((rc + c1 - c0))
		with+=("$i") lat1+=("$l")
		kill -INT "$obs"
		wait "$obs" || { echo "bpf-overhead.sh: observe $disk failed:" >&2; cat "$OUT/$name-qd$qd-observe-$r.txt" >&2; exit 1; }
		obs=
	done
	python3 - "$name" "$qd" "${without[*]}" "${with[*]}" "${lat0[*]}" "${lat1[*]}" "$rt" "$rc" <<'PY'
import statistics, sys
name, qd = sys.argv[1], int(sys.argv[2])
rt, rc = int(sys.argv[7]), int(sys.argv[8])
w0, w1 = [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
l0, l1 = [float(x) for x in sys.argv[5].split()], [float(x) for x in sys.argv[6].split()]
m0, m1 = statistics.median(w0), statistics.median(w1)
ratios = [b / a for a, b in zip(w0, w1)]
ratio = statistics.median(ratios)
# per request at queue depth qd: qd / IOPS is the time one request holds a slot
added = (qd / (m0 * ratio) - qd / m0) * 1e9
print(f"{name}_qd{qd}_iops: without {m0:.0f}, with {m1:.0f}; ratio {ratio:.4f} (median of the paired "
      "rounds: " + ", ".join(f"{r:.3f}" for r in ratios) + ")")
print(f"{name}_qd{qd}_added_ns_per_request_from_iops: {added:.0f}; mean completion latency "
      f"{statistics.median(l0):.0f} -> {statistics.median(l1):.0f} ns")
# each request runs the issue and the completion program once (rc counts both)
if rc > 0:
    print(f"{name}_qd{qd}_program_ns_per_request: {2 * rt / rc:.0f} (kernel.bpf_stats: {rt} ns over {rc} runs "
          "of the issue and completion programs)")
PY
}

sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null 2>&1 || report bpf_stats "cannot enable kernel.bpf_stats_enabled"
report kernel "$(uname -r)"
report cpus "$(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg)"
report rounds "$ROUNDS x (without, with), $SECS s each"

img=$(mktemp /dev/shm/nvme-apstd-bench.XXXXXX)
truncate -s 256M "$img"
loop=$(losetup -f --show "$img")
bench_case loop-tmpfs "$loop" "${loop#/dev/}" 1
bench_case loop-tmpfs "$loop" "${loop#/dev/}" 32

if modprobe null_blk nr_devices=1 queue_mode=2 irqmode=0 2>/dev/null && [ -b /dev/nullb0 ]; then
	nullb=1
	bench_case null_blk /dev/nullb0 nullb0 1
	bench_case null_blk /dev/nullb0 nullb0 32
else
	report null_blk "not available on this kernel (modprobe null_blk failed)"
fi

if [ -n "$REAL_FILE" ]; then
	dev=$(df --output=source "$(dirname "$REAL_FILE")" | tail -n 1)
	disk=$(basename "$(readlink -f "$dev")")
	# a partition counts on its whole disk
	[ -e "/sys/class/block/$disk/partition" ] && disk=$(basename "$(readlink -f "/sys/class/block/$disk/..")")
	if [ ! -e "$REAL_FILE" ]; then
		fio --name=mk --filename="$REAL_FILE" --rw=write --bs=1M --size=256M --direct=1 >/dev/null
	fi
	report real_disk "$disk ($dev), reads of $REAL_FILE only"
	bench_case "real-$disk" "$REAL_FILE" "$disk" 1
	bench_case "real-$disk" "$REAL_FILE" "$disk" 32
fi
