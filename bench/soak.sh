#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/soak.sh: the long soak (tests/soak/soak.py) as a benchmark: SEEDS seeds of EVENTS events
# each, one fake-controller harness per seed, JOBS of them at once. Prints and writes to
# $OUT/soak-report.txt: events survived, events/s, invariant checks made, peak RSS of the daemon,
# and the seeds that failed (with the command that replays each). See bench/README.md ("Soak").
#
#   bench/soak.sh [BUILD_DIR]        default BUILD_DIR: build (the fake harness must be built)
# Environment:
#   SEEDS="1 2 ... 20"   the seeds (default 1..20)      EVENTS=5000   events per seed
#   RANDOM_SEEDS=0       this many random seeds more    OUT=DIR       default BUILD_DIR/bench-soak
#   KEEP_GOING=1         record every violation of a seed instead of stopping at the first
#   JOBS=1               seeds run at once (each harness is mostly waiting: one uses ~15% of a CPU)
#   WITHOUT=fail         kinds of event left out (comma-separated; soak.py --without)
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
OUT=${OUT:-$BUILD/bench-soak}
EVENTS=${EVENTS:-5000}
SEEDS=${SEEDS:-$(seq -s ' ' 1 20)}
RANDOM_SEEDS=${RANDOM_SEEDS:-0}
TB=$BUILD/tests/fake/fake-nvme-tb
for f in "$BUILD/src/nvme-apstd" "$TB" "$BUILD/tests/fake/fake-nvme-ctl"; do
        [ -x "$f" ] || { echo "bench/soak.sh: $f not built (meson compile -C $BUILD; umockdev-dev needed)" >&2; exit 2; }
done
mkdir -p "$OUT"
export NVME_APSTD=$BUILD/src/nvme-apstd FAKE_TB=$TB UMOCKDEV_WRAPPER=${UMOCKDEV_WRAPPER:-$(command -v umockdev-wrapper)}
export FAKE_NVME_CTL_PROG=$BUILD/tests/fake/fake-nvme-ctl FAKE_EXTRA_PRELOAD=$BUILD/tests/fake/libfake-sysfs-extras.so
export ASAN_OPTIONS=verify_asan_link_order=0 G_SLICE=always-malloc TEST_DATA_DIR=$SRC/tests/data

args=(--events "$EVENTS" --random "$RANDOM_SEEDS" --out "$OUT" --jobs "${JOBS:-1}")
[ -n "${WITHOUT:-}" ] && args+=(--without "$WITHOUT")
for s in $SEEDS; do args+=(--seed "$s"); done
[ "${KEEP_GOING:-0}" = 1 ] && args+=(--keep-going)
t0=$(date +%s)
/usr/bin/python3 "$SRC/tests/soak/soak.py" "${args[@]}" | tee "$OUT/soak.log"
rc=${PIPESTATUS[0]}
t1=$(date +%s)
python3 - "$OUT/soak.log" "$rc" $((t1 - t0)) "$EVENTS" "${JOBS:-1}" <<'PY' | tee "$OUT/soak-report.txt"
import json, re, sys
log, rc, wall, per, jobs = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
runs = [json.loads(m.replace("'", '"')) for m in re.findall(r"^soak: seed \d+: (\{'.*\})$", log, re.M)]
ev = sum(r["events"] for r in runs)
secs = sum(r["seconds"] for r in runs)
failed = [r["seed"] for r in runs if r["violations"]]
survived = sum(r["events"] for r in runs if not r["violations"])
print(f"seeds: {len(runs)} ({per} events each planned)")
print(f"events: {ev}")
print(f"events survived (seeds without a violation): {survived}")
print(f"events/s: {ev / secs if secs else 0:.2f} per harness (storm time {secs:.0f} s); "
      f"{ev / wall if wall else 0:.2f} over the wall clock ({wall} s, {jobs} at once)")
print(f"invariant checks: {sum(r['checks'] for r in runs)}")
print(f"peak RSS (daemon): {max((r['peak_rss_kib'] for r in runs), default=0)} KiB")
print(f"daemon instances (starts + restarts): {sum(r['instances'] for r in runs)}")
print(f"D-Bus reads answered: {sum(r['bus_reads'] for r in runs)}")
print(f"longest WATCHDOG=1 gap: {max((r['max_watchdog_gap_s'] for r in runs), default=0)} s")
print(f"violations: {sum(r['violations'] for r in runs)}; failed seeds: {failed or 'none'} (exit {rc})")
PY
exit "$rc"
