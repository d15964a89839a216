#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what is needed, build, and run the whole test suite (as root on Debian 12).
#   tests/run-all.sh            unit, fake-controller, daemon, CPU and system (QEMU) tests
#   SUITES="unit daemon" tests/run-all.sh   only those suites
# Ends with one line "N passed, N failed, N skipped" taken from meson's test log.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${BUILD_DIR:-$src/build}

tests/deps.sh build test e2e

if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" -Dwerror=true
fi
meson compile -C "$build"

args=(--print-errorlogs --num-processes 2)
if [ -n "${SUITES:-}" ]; then
        for s in $SUITES; do args+=(--suite "$s"); done
fi
set +e
meson test -C "$build" "${args[@]}"
rc=$?
set -e
tests/summarize-testlog.sh "$build/meson-logs/testlog.json"
exit $rc
