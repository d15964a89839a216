#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/load.sh: load and overhead of the nvme-apstd daemon (its resource budget), against the fake
# controller harness (tests/fake). Prints `key: value` lines and writes them to
# $OUT/load-report.txt. See bench/README.md ("Load and overhead") for what each figure means.
#
#   bench/load.sh [BUILD_DIR]          default BUILD_DIR: build (configured with meson; the fake
#                                      harness must have been built, i.e. umockdev-dev installed)
# Environment:
#   CTRLS=64 RELOADS=1000 IDLE_S=60 IDLE_CTRLS=4 READY_RUNS=20    the sizes. umockdev 0.17's
#               preload keeps emulated fds in a 50-entry table and abort()s past it; the daemon
#               opens /dev/nvmeN per operation and holds none between them, so 64 fit.
#   RSS_STEPS="1 16 32 64"   controller counts at which READY time and RSS are also taken
#   TUNED=1     also run tuned (Debian's, default = recommended profile) for the idle window
#               beside the daemon; needs `apt-get install tuned dbus`. It gets a private system
#               bus (tuned cannot start without one); the daemon gets the same bus.
#   OUT=DIR     where logs and the report go (default BUILD_DIR/bench-load)
#   POLICY=adaptive   the [apst] policy at start and in the idle window (default budget)
#   SOURCES_S=60  the idle window of each I/O source (sampler, eBPF) in step 4, with IDLE_CTRLS
#               controllers on loop devices (default IDLE_S; 0 skips). The window starts once the
#               verification that follows the step's I/O is done, and the times the daemon woke are
#               printed. SOURCES="bpf": only that source (default "stat bpf")
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
OUT=${OUT:-$BUILD/bench-load}
CTRLS=${CTRLS:-64}
RSS_STEPS=${RSS_STEPS:-1 16 32}
RELOADS=${RELOADS:-1000}
IDLE_S=${IDLE_S:-60}
IDLE_CTRLS=${IDLE_CTRLS:-4}
READY_RUNS=${READY_RUNS:-20}
TUNED=${TUNED:-0}
SOURCES_S=${SOURCES_S:-$IDLE_S}

rm -rf "$OUT"
mkdir -p "$OUT"
REPORT=$OUT/load-report.txt
export NVME_APSTD=$BUILD/src/nvme-apstd OUT POLICY=${POLICY:-budget}
# the eBPF program's loader the build made (the daemon runs the installed one otherwise); a build
# without eBPF has none, and the sources step then says the program does not load
export NVME_APSTD_BPF_LOADER=$BUILD/src/nvme-apstd-bpf-load
export RSS_FLOOR=$OUT/rss-floor
TB=$BUILD/tests/fake/fake-nvme-tb
IDCTRL=$SRC/tests/data/idctrl/05-samsung-ssd-970-evo-plus-2tb.bin
for f in "$NVME_APSTD" "$TB"; do
    [ -x "$f" ] || { echo "load.sh: $f not built (meson compile -C $BUILD)" >&2; exit 1; }
done
command -v umockdev-wrapper >/dev/null || { echo "load.sh: umockdev-wrapper missing" >&2; exit 1; }
# The harness's sysfs and /dev (umockdev's testbed, a directory under $TMPDIR) in memory, as the
# kernel's sysfs is. With it on a disk-backed /tmp, the idle daemon now and then blocked inside a
# reading of the fake sysfs (more voluntary context switches within one wake-up, no more returns
# from epoll_wait under strace): a wait on the disk a real sysfs never has. HARNESS_TMPDIR=DIR
# puts it elsewhere.
HARNESS_TMPDIR=${HARNESS_TMPDIR:-/dev/shm}
[ -d "$HARNESS_TMPDIR" ] && [ -w "$HARNESS_TMPDIR" ] || HARNESS_TMPDIR=${TMPDIR:-/tmp}

# The RSS floor: nvme-apstd's libraries and one sd-event loop, nothing else (bench/rss-floor.c).
# --no-as-needed: keep libcpupower mapped even if a linker would drop it, as the floor in
# doc/platform.md was measured.
cc -O2 -o "$RSS_FLOOR" "$SRC/bench/rss-floor.c" -Wl,--no-as-needed \
    $(pkg-config --cflags --libs libnvme libsystemd) -lcpupower

ctrls() { # N: --ctrl arguments for N Samsung 970 EVO Plus controllers holding the kernel's table
    local i
    for ((i = 0; i < $1; i++)); do
        printf -- '--ctrl\nnvme%d,initial-table=kernel,idctrl=%s,pci=144d:a808\n' "$i" "$IDCTRL"
    done
}
harness() { # N COMMAND...: run COMMAND in a harness with N controllers; keep only our `key: value` lines
    local n=$1
    shift
    mapfile -t args < <(ctrls "$n")
    TMPDIR=$HARNESS_TMPDIR umockdev-wrapper "$TB" "${args[@]}" -- "$@" 2>>"$OUT/harness.log" | grep -v '^fake: ' | tee -a "$REPORT"
}

{
    echo "# policy: $POLICY"
    echo "# nvme-apstd load benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$SRC" describe --always --dirty 2>/dev/null)"
    echo "# $(nproc) CPUs, $(uname -r), $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo) RAM; buildtype: $(meson introspect --buildoptions "$BUILD" 2>/dev/null | python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="buildtype"))' 2>/dev/null || echo '?')"
} | tee "$REPORT"

# 1. Time to READY=1 for one controller, and for none (no harness: the plain machine)
harness 1 python3 "$SRC/bench/load.py" ready "$READY_RUNS"
python3 "$SRC/bench/load.py" ready "$READY_RUNS" | sed 's/^/no harness, /' | tee -a "$REPORT"

# 2. Many controllers: READY, RSS, a reload that changes every table, RSS over RELOADS reloads;
#    first READY and RSS at smaller counts, for the cost per controller
for n in $RSS_STEPS; do
    harness "$n" python3 "$SRC/bench/load.py" many 0
done
harness "$CTRLS" python3 "$SRC/bench/load.py" many "$RELOADS"

# 3. Idle: the daemon with IDLE_CTRLS controllers beside the RSS floor program (and tuned)
TUNED_PID=
BUS_PID=
sysctls() { # every sysctl but the counters that move by themselves
    sysctl -a 2>/dev/null | grep -Ev '^(fs\.(dentry-state|file-nr|inode-nr|inode-state)|kernel\.(ns_last_pid|pty\.nr|random\.))'
}
cleanup() {
    [ -n "$TUNED_PID" ] && kill "$TUNED_PID" 2>/dev/null && wait "$TUNED_PID" 2>/dev/null
    [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
    true
}
trap cleanup EXIT
if [ "$TUNED" = 1 ]; then
    if command -v tuned >/dev/null && command -v dbus-daemon >/dev/null; then
        # tuned exits at once without a system bus; give it (and the daemon) a private one, so
        # neither touches the machine's real bus and both pay for a bus connection
        mkdir -p "$OUT/bus"
        cat >"$OUT/bus/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$OUT/bus/socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/> <allow own="*"/> <allow send_destination="*"/> <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
        dbus-daemon --config-file="$OUT/bus/bus.conf" --nofork --nopidfile >"$OUT/bus/log" 2>&1 &
        BUS_PID=$!
        export BENCH_BUS=unix:path=$OUT/bus/socket
        for _ in $(seq 50); do [ -S "$OUT/bus/socket" ] && break; sleep 0.1; done
        sysctls | sort >"$OUT/sysctl-before-tuned.txt" || true
        DBUS_SYSTEM_BUS_ADDRESS=$BENCH_BUS tuned -l "$OUT/tuned.log" >"$OUT/tuned.out" 2>&1 &
        TUNED_PID=$!
        # wait until its profile is applied: from then on it is in its steady state
        for _ in $(seq 300); do grep -q "static tuning from profile .* applied" "$OUT/tuned.log" 2>/dev/null && break; sleep 0.1; done
        if kill -0 "$TUNED_PID" 2>/dev/null; then
            echo "tuned: $(tuned --version 2>&1), profile $(grep -o "Using '[^']*' profile" "$OUT/tuned.log" | head -1)" | tee -a "$REPORT"
            export TUNED_PID
        else
            echo "tuned: could not run here: $(tail -1 "$OUT/tuned.out" "$OUT/tuned.log" 2>/dev/null | tail -1)" | tee -a "$REPORT"
            TUNED_PID=
        fi
    else
        echo "tuned: not installed (apt-get install tuned dbus)" | tee -a "$REPORT"
    fi
fi
harness "$IDLE_CTRLS" python3 "$SRC/bench/load.py" idle "$IDLE_S"
if [ -n "$TUNED_PID" ]; then
    kill "$TUNED_PID"
    wait "$TUNED_PID" 2>/dev/null || true
    TUNED_PID=
    sysctls | sort >"$OUT/sysctl-after-tuned.txt" || true
    if cmp -s "$OUT/sysctl-before-tuned.txt" "$OUT/sysctl-after-tuned.txt"; then
        echo "tuned: stopped; every sysctl back as before" | tee -a "$REPORT"
    else
        echo "tuned: stopped; sysctls differing from before: $(diff "$OUT/sysctl-before-tuned.txt" \
            "$OUT/sysctl-after-tuned.txt" | grep -c '^>')" | tee -a "$REPORT"
    fi
fi
# 4. The I/O source: the idle adaptive daemon watching with the sampler, then with the eBPF program,
#    on IDLE_CTRLS controllers whose namespaces are loop devices (files in /dev/shm; each one's
#    diskseq is its fake namespace's, so the kernel program counts its requests). Needs root and eBPF.
sources() {
    local i img loop seq out
    local -a loops=() imgs=() args=()
    [ "$(id -u)" = 0 ] || { echo "sources: skipped, needs root (loop device, eBPF)" | tee -a "$REPORT"; return 0; }
    command -v losetup >/dev/null || { echo "sources: skipped, losetup missing" | tee -a "$REPORT"; return 0; }
    for ((i = 0; i < IDLE_CTRLS; i++)); do
        img=$(mktemp /dev/shm/nvme-apstd-bench.XXXXXX)
        imgs+=("$img")
        truncate -s 64M "$img"
        loop=$(losetup -f --show "$img" 2>/dev/null) || break
        loops+=("$loop")
        seq=$(cat "/sys/class/block/${loop#/dev/}/diskseq")
        args+=(--ctrl "nvme$i,initial-table=kernel,idctrl=$IDCTRL,pci=144d:a808,diskseq=$seq")
    done
    if [ "${#loops[@]}" != "$IDLE_CTRLS" ]; then
        echo "sources: skipped, no loop device here" | tee -a "$REPORT"
    elif out=$("$NVME_APSTD" observe --seconds 1 "${loops[0]#/dev/}" 2>&1); then
        echo "sources: $IDLE_CTRLS controllers" | tee -a "$REPORT"
        BENCH_LOOPDEV="${loops[*]}" TMPDIR=$HARNESS_TMPDIR umockdev-wrapper "$TB" "${args[@]}" \
            -- python3 "$SRC/bench/load.py" sources "$SOURCES_S" 2>>"$OUT/harness.log" | grep -v '^fake: ' | tee -a "$REPORT"
    else
        echo "sources: skipped, the eBPF program does not load here: $out" | tee -a "$REPORT"
    fi
    for loop in "${loops[@]}"; do
        for _ in 1 2 3 4 5; do losetup -d "$loop" 2>/dev/null && break; sleep 1; done
    done
    rm -f "${imgs[@]}"
}
[ "$SOURCES_S" = 0 ] || sources
echo "report: $REPORT"
