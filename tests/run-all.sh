#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what is needed, build, and run the whole test suite (as root on Debian 12).
#   tests/run-all.sh            unit, fake-controller, daemon, CPU and system (QEMU) tests
#   SUITES="unit daemon" tests/run-all.sh   only those suites (and no ci-extra)
#   RUN_EXTRA=0 tests/run-all.sh            skip tests/ci-extra.sh (ASan+UBSan build,
#                                           valgrind, fuzzers, static analysis: ~10 min)
# Ends with one line "N passed, N failed, N skipped" taken from meson's test logs
# (the main run's and, with ci-extra, each of its steps').
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${BUILD_DIR:-$src/build}

tests/deps.sh build test e2e bench   # bench: matplotlib, so "bench - pictures" draws (no skip)

if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" -Dwerror=true
fi
meson compile -C "$build"

extra=${RUN_EXTRA:-1}
args=(--print-errorlogs --num-processes 2)
if [ -n "${SUITES:-}" ]; then
        for s in $SUITES; do args+=(--suite "$s"); done
        extra=0
fi
if [ -z "${SUITES:-}" ] && [ "$extra" != 0 ]; then
        args+=(--no-suite static)       # ci-extra.sh runs it, with the other analysers
fi
logs=("$build/meson-logs/testlog.json")
rm -f "$build/meson-logs/ci-extra-logs.txt"
set +e
meson test -C "$build" "${args[@]}"
rc=$?
if [ "$extra" != 0 ]; then
        tests/ci-extra.sh "$build" || rc=1
        mapfile -t -O 1 logs <"$build/meson-logs/ci-extra-logs.txt"
fi
set -e
tests/summarize-testlog.sh "${logs[@]}"
exit $rc
