#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/summarize-testlog.sh: the counts on the last line, and every failed test named with
# the end of its output before it (a CI that keeps only the end of the output must still
# say what failed).
set -euo pipefail
sum=$1
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$d/out"; exit 1; }
cat >"$d/a.json" <<'J'
{"name":"s / passes","result":"OK","duration":1.0,"returncode":0,"stdout":"fine\n"}
{"name":"s / expected","result":"EXPECTEDFAIL","duration":1.0,"returncode":1,"stdout":""}
{"name":"s / broke","result":"FAIL","duration":2.5,"returncode":1,"stdout":"early line\nCHECK FAILED: the answer\n"}
{"name":"s / hung","result":"TIMEOUT","duration":30.0,"returncode":-15,"stdout":""}
{"name":"s / skipped","result":"SKIP","duration":0.1,"returncode":77,"stdout":"no hardware\n"}
J
TAIL_LINES=1 "$sum" "$d/a.json" "$d/missing.json" >"$d/out" 2>/dev/null
[ "$(tail -n 1 "$d/out")" = "2 passed, 3 failed, 1 skipped" ] || fail "counts on the last line"
grep -q '^==== failed: s / broke (FAIL, 2.5 s, exit 1)' "$d/out" || fail "the failed test named"
grep -q '^  | CHECK FAILED: the answer$' "$d/out" || fail "the end of its output shown"
! grep -q "early line" "$d/out" || fail "TAIL_LINES=1 shows one line"
grep -q '^==== failed: s / hung (TIMEOUT' "$d/out" || fail "a timeout named"
grep -q "^==== failed: no test log at $d/missing.json" "$d/out" || fail "a missing log named"
! grep -q "passes\|skipped (" "$d/out" || fail "only failures are named"
TAIL_LINES=0 "$sum" "$d/a.json" >"$d/out"
! grep -q "  | " "$d/out" || fail "TAIL_LINES=0 shows no output"
echo "ok"
