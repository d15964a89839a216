#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Run one libFuzzer target for $FUZZ_SECONDS (default 60) seconds from its seed corpus.
#   run-one.sh FUZZER SEED-CORPUS-DIR
# New inputs go to a scratch corpus (the repo's seeds stay as they are); a crash, leak,
# timeout or sanitizer report is saved under $FUZZ_ARTIFACTS (default ./fuzz-artifacts)
# and fails the run. The last lines are libFuzzer's final stats (execs/s, cov, ft).
set -uo pipefail
exe=${1:?usage: $0 FUZZER SEED-CORPUS-DIR}
seeds=${2:?usage: $0 FUZZER SEED-CORPUS-DIR}
secs=${FUZZ_SECONDS:-60}
name=$(basename "$exe")
art=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}/$name
mkdir -p "$art"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# -error_exitcode: libFuzzer's default for a crash is 77, which meson reads as SKIP: a crash
# would pass as a skipped test. Any finding must fail.
"$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -error_exitcode=1 \
        -artifact_prefix="$art/" "$scratch" "$seeds" 2>&1 | grep -v '^#[0-9]*\s*\(NEW\|REDUCE\|pulse\)'
rc=${PIPESTATUS[0]}
echo "$name: $(ls "$scratch" | wc -l) new inputs in ${secs}s, exit $rc"
if [ "$rc" -ne 0 ]; then
        echo "$name: FAILED, artifacts in $art:" >&2
        ls -l "$art" >&2
        # never 77 (skip): whatever libFuzzer or a sanitizer returned, a finding is a failure
        [ "$rc" -eq 77 ] && rc=1
fi
exit "$rc"
