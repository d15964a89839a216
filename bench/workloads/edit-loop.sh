#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An edit-build-test loop with pauses, on the disk being recorded: every 5-44 s (a person
# reading, typing), one line appended to a source file and synced, then an incremental
# build and one unit test, then `git diff --stat`.
#   edit-loop.sh SRCDIR SECONDS   (SRCDIR: a configured checkout of this project, on the disk)
# Recorded for bench/traces/held-out/edit-loop.txt.gz with
#   bench/record.py vda 960 -- bench/workloads/edit-loop.sh /work/recsrc 900
set -eu
src=${1:?usage: edit-loop.sh SRCDIR SECONDS}
secs=${2:?usage: edit-loop.sh SRCDIR SECONDS}
cd "$src"
mkdir -p tmp
RANDOM=7
end=$((SECONDS + secs))
while [ $SECONDS -lt "$end" ]; do
        sleep $((5 + RANDOM % 40))
        echo "/* edit $SECONDS */" >>src/core/util.c
        sync -f src/core/util.c
        TMPDIR=$src/tmp ninja -C build >/dev/null 2>&1 || true
        ./build/tests/unit/test-adapt >/dev/null 2>&1 || true
        git diff --stat >/dev/null
done
git checkout -q src/core/util.c
