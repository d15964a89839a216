#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/bpf-overhead.sh: what the eBPF I/O gap program (src/platform/bpf/iogap.bpf.c) costs per
# request. fio 4 KiB random reads (O_DIRECT, libaio) at queue depth 1 and 32, in rounds of three
# runs: without the program, with it loaded and counting the disk read (`nvme-apstd observe DISK`
# in the background), with it and the floor at once, and the floor alone: two empty programs on the same
# tracepoints (bench/bpf-floor.bpf.c, loaded by bench/bpf-floor-load.c; both built here). Printed
# as `key: value` lines (bench/bpf-ratio.py): the IOPS ratio (with / without, median of the paired
# rounds) and the added time per request from it; the program's own run time per request as the
# kernel counts it (kernel.bpf_stats_enabled: run_time_ns / run_cnt of the issue and completion
# programs); and its ratio to the floor's, per program and for the pair, on the same requests. On
# a shared machine the IOPS of two runs differ by more than the program costs; the kernel's count
# is the figure that does not depend on the neighbours, and the floor says what any program on
# these hooks pays (the call, and the statistics' own clock reads). Programs on a tracepoint run
# in the order they were attached, and the first pays for the cache lines the later ones then find
# warm: so each round also runs the floor alone, and the ratio that counts is the program alone
# (as the daemon runs it) against the floor alone, a run apart on the same disk; the stacked runs'
# ratio (the floor attached last, the cheapest place) is printed beside it.
# Targets (doc/watch.md): <= 1.5x the floor per request at QD1; an IOPS ratio >= 0.99 at QD1 on
# the real disk.
#
#   bench/bpf-overhead.sh [BUILD_DIR]      as root; default BUILD_DIR: build
# Environment:
#   SECONDS_PER_RUN=3  ROUNDS=7    each fio run, and the rounds per case
#   NULL_BLK=0  skips null_blk
#   BASELINE=DIR  another build (the one before a change): its programs are attached too in the
#               runs with the floor, so both builds' programs and the floor run on the same requests
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
BASELINE=${BASELINE:+$(cd "$BASELINE" && pwd)}
[ "$(id -u)" = 0 ] || { echo "bpf-overhead.sh: run as root" >&2; exit 1; }
command -v fio >/dev/null || { echo "bpf-overhead.sh: fio missing (tests/deps.sh bench)" >&2; exit 1; }
[ -x "$APSTD" ] || { echo "bpf-overhead.sh: $APSTD not built" >&2; exit 1; }
mkdir -p "$OUT"

img= loop= nullb= obs= floor= base=
stats_was=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$stats_was" >/dev/null 2>&1
	[ -n "$obs" ] && kill "$obs" 2>/dev/null && wait "$obs" 2>/dev/null
	[ -n "$floor" ] && kill "$floor" 2>/dev/null && wait "$floor" 2>/dev/null
	[ -n "$base" ] && kill "$base" 2>/dev/null && wait "$base" 2>/dev/null
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

# The floor: two empty programs on the same hooks (bench/bpf-floor.bpf.c), loaded and held by
# bench/bpf-floor-load.c; both built here, into OUT/floor.
build_floor() {
	local d=$OUT/floor
	mkdir -p "$d"
	clang -O2 -g -target bpf -I"/usr/include/$(gcc -print-multiarch)" -Wall -Werror \
		-c "$SRC/bench/bpf-floor.bpf.c" -o "$d/bpf-floor.bpf.o"
	cc -O2 -Wall -Werror -o "$d/bpf-floor-load" "$SRC/bench/bpf-floor-load.c" -lbpf
}

# start the floor's programs in the background (floor=PID) and wait until they are attached
floor_start() {
	local fifo=$OUT/floor/ready
	rm -f "$fifo" && mkfifo "$fifo"
	"$OUT/floor/bpf-floor-load" "$OUT/floor/bpf-floor.bpf.o" >"$fifo" &
	floor=$!
	read -r _ <"$fifo" || { echo "bpf-overhead.sh: the floor's programs did not load" >&2; exit 1; }
}

floor_stop() {
	kill -INT "$floor" && wait "$floor"
	floor=
}

# BASELINE's programs too (base=PID), for the same requests: PREFIX.ids lists their ids
base_start() {
	local before
	before=$(bpftool prog show --json)
	NVME_APSTD_BPF_LOADER=$BASELINE/src/nvme-apstd-bpf-load "$BASELINE/src/nvme-apstd" observe \
		--seconds $((2 * SECS + 30)) "$1" >"$2.txt" 2>&1 &
	base=$!
	sleep 1
	bpftool prog show --json | python3 -c 'import json, sys
old = {p["id"] for p in json.loads(sys.argv[1])}
print(" ".join(str(p["id"]) for p in json.load(sys.stdin) if p["id"] not in old))' "$before" >"$2.ids"
}

# every loaded program's run time and count, as bpftool shows them (kernel.bpf_stats_enabled)
snap() { bpftool prog show --json >"$1"; }

# case NAME FILE DISK QD: ROUNDS rounds of three fio runs: without the program, with it (the
# IOPS ratio and its run time), and with it and the floor's two empty programs attached at once
# (the same requests run both: their run times' ratio); medians and sums printed by bench-ratio.py
bench_case() {
	local name=$1 f=$2 disk=$3 qd=$4 r tag
	for ((r = 0; r < ROUNDS; r++)); do
		tag=$name-qd$qd
		run_fio "$f" "$qd" "$tag-off-$r" >/dev/null
		"$APSTD" observe --seconds $((3 * SECS + 30)) "$disk" >"$OUT/$tag-observe-$r.txt" 2>&1 &
		obs=$!
		sleep 1   # loaded and attached
		snap "$OUT/$tag-on-$r.before"
		run_fio "$f" "$qd" "$tag-on-$r" >/dev/null
		snap "$OUT/$tag-on-$r.after"
		[ -z "$BASELINE" ] || base_start "$disk" "$OUT/$tag-base-$r"
		floor_start
		snap "$OUT/$tag-both-$r.before"
		run_fio "$f" "$qd" "$tag-both-$r" >/dev/null
		snap "$OUT/$tag-both-$r.after"
		floor_stop
		[ -z "$base" ] || { kill -INT "$base"; wait "$base" || true; base=; }
		kill -INT "$obs"
		wait "$obs" || { echo "bpf-overhead.sh: observe $disk failed:" >&2; cat "$OUT/$tag-observe-$r.txt" >&2; exit 1; }
		obs=
		floor_start       # alone, as the program ran alone in the on run
		snap "$OUT/$tag-floor-$r.before"
		run_fio "$f" "$qd" "$tag-floor-$r" >/dev/null
		snap "$OUT/$tag-floor-$r.after"
		floor_stop
	done
	python3 "$SRC/bench/bpf-ratio.py" "$OUT" "$name" "$qd" "$ROUNDS"
}

sysctl -q -w kernel.bpf_stats_enabled=1 >/dev/null 2>&1 || report bpf_stats "cannot enable kernel.bpf_stats_enabled"
report kernel "$(uname -r)"
report cpus "$(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg)"
report rounds "$ROUNDS x (without, with, with and the floor, the floor alone), $SECS s each"
[ -z "$BASELINE" ] || report baseline "$BASELINE (its programs beside this build's in the runs with the floor)"
build_floor

img=$(mktemp /dev/shm/nvme-apstd-bench.XXXXXX)
truncate -s 256M "$img"
loop=$(losetup -f --show "$img")
bench_case loop-tmpfs "$loop" "${loop#/dev/}" 1
bench_case loop-tmpfs "$loop" "${loop#/dev/}" 32

if [ "${NULL_BLK:-1}" = 0 ]; then
	report null_blk "skipped (NULL_BLK=0)"
elif modprobe null_blk nr_devices=1 queue_mode=2 irqmode=0 2>/dev/null && [ -b /dev/nullb0 ]; then
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
