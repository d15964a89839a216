#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/holds.sh: latency holds under load (bench/holds.py) against the fake controller harness:
# CYCLES hold/release cycles on one bus connection, then CYCLES on as many connections (half
# released, half ended by closing the connection); the call-to-table-in-force time (median, p99,
# max); the daemon's RSS, descriptors and EventSources before and after, which must not grow (RSS
# within 1 MiB). Prints `key: value` lines and writes them to $OUT/holds-report.txt. See
# bench/README.md ("Latency holds").
#
#   bench/holds.sh [BUILD_DIR]        default BUILD_DIR: build (the fake harness must be built)
# Environment: CYCLES=10000   OUT=DIR (default BUILD_DIR/bench-holds)
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
OUT=${OUT:-$BUILD/bench-holds}
TB=$BUILD/tests/fake/fake-nvme-tb
for f in "$BUILD/src/nvme-apstd" "$TB" "$BUILD/tests/fake/fake-nvme-ctl"; do
        [ -x "$f" ] || { echo "bench/holds.sh: $f not built (meson compile -C $BUILD; umockdev-dev needed)" >&2; exit 2; }
done
command -v umockdev-wrapper >/dev/null || { echo "bench/holds.sh: umockdev-wrapper missing" >&2; exit 2; }
mkdir -p "$OUT"
export NVME_APSTD=$BUILD/src/nvme-apstd FAKE_NVME_CTL_PROG=$BUILD/tests/fake/fake-nvme-ctl
export FAKE_EXTRA_PRELOAD=$BUILD/tests/fake/libfake-sysfs-extras.so LD_LIBRARY_PATH=$BUILD/tests/fake
export G_SLICE=always-malloc TEST_DATA_DIR=$SRC/tests/data CYCLES=${CYCLES:-10000}
IDCTRL=$SRC/tests/data/idctrl/05-samsung-ssd-970-evo-plus-2tb.bin
umockdev-wrapper "$TB" --ctrl "nvme0,initial-table=kernel,idctrl=$IDCTRL,pci=144d:a808" -- \
        /usr/bin/python3 "$SRC/bench/holds.py" 2>&1 | tee "$OUT/holds.log" |
        grep -E '^(before|after|one connection|many connections|writes|result|FAIL)' | tee "$OUT/holds-report.txt"
exit "${PIPESTATUS[0]}"
