#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# promtool (Debian package prometheus) lints the metrics module's output:
# syntax, HELP/TYPE, counter suffixes, units in names.
# Usage: test-metrics-promtool.sh TEST-METRICS-BINARY
# Covers: src/core/metrics.c (through tests/unit/test-metrics.c).
set -eu
if ! command -v promtool >/dev/null 2>&1; then
        echo "SKIP: promtool not installed (Debian package prometheus, tests/deps.sh test)"
        exit 77
fi
out=$("$1" print)
printf '%s\n' "$out" | head -5
# check metrics prints lint problems and exits non-zero on any of them
printf '%s\n' "$out" | promtool check metrics
echo "promtool check metrics: clean"
