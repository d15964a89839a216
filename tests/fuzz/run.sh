#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build the libFuzzer targets (clang, separate build dir) and run each for SECONDS.
#   tests/fuzz/run.sh [SECONDS]     default 60; FUZZ_BUILD_DIR (default build-fuzz)
# First every target replays its corpus (suite fuzz-corpus), then fuzzes (suite fuzz),
# two at a time. Exit non-zero on any crash; artifacts stay in
# $FUZZ_BUILD_DIR/tests/fuzz/artifacts/TARGET/ (reproduce: ./TARGET ARTIFACT).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
build=${FUZZ_BUILD_DIR:-$PWD/build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
        CC=clang meson setup "$build" -Dfuzz=true -Dwerror=true >/dev/null
fi
meson compile -C "$build" fuzz-idctrl fuzz-config fuzz-trace fuzz-calib fuzz-learned fuzz-holds >/dev/null
FUZZ_SECONDS=$secs meson test -C "$build" --no-rebuild --print-errorlogs --num-processes 2 \
        --suite fuzz-corpus --suite fuzz "${@:2}"
