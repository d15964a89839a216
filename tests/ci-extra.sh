#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The "always on in CI" checks, after the main build's test run:
#   1. asan      the whole test suite in an ASan + UBSan build (build-asan/)
#   2. valgrind  the integration suites (tests/integration) with valgrind memcheck
#                wrapping every nvme-apstd they start ($NVME_APSTD_WRAPPER)
#      vgcorpus  the fuzz corpora replayed (tests/fuzz/replay.c) under valgrind memcheck
#   3. fuzz      every libFuzzer target replays its corpus, then fuzzes for
#                $FUZZ_SECONDS (default 60) s (build-fuzz/, clang)
#   4. static    cppcheck, clang-tidy, systemd-analyze verify/security (suite 'static')
#   5. nobpf     a build with -Dbpf=disabled compiles (-Dwerror=true; build-nobpf/): the daemon
#                then has only the sysfs sampler and `observe` says why it cannot run
# Usage: tests/ci-extra.sh [MAIN-BUILD-DIR]     (default build/, must be set up)
#   EXTRA="asan valgrind vgcorpus fuzz static nobpf"   the steps to run (default all)
# Each step is a meson test run with its own testlog JSON; their paths are
# written to MAIN-BUILD-DIR/meson-logs/ci-extra-logs.txt so that run-all.sh
# counts them in its "N passed, N failed, N skipped" line. A step whose tool
# is missing is reported and skipped (its tests, if any, SKIP with 77).
# Exit status: 0 if every step passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD
build=$(realpath "${1:-$src/build}")
steps=${EXTRA:-asan valgrind vgcorpus fuzz static nobpf}
asan_build=${ASAN_BUILD_DIR:-$src/build-asan}
fuzz_build=${FUZZ_BUILD_DIR:-$src/build-fuzz}
nobpf_build=${NOBPF_BUILD_DIR:-$src/build-nobpf}
fuzz_secs=${FUZZ_SECONDS:-60}
list=$build/meson-logs/ci-extra-logs.txt
mkdir -p "$build/meson-logs"
: >"$list"
summary=()
details=()
rc=0

# step NAME LOG COMMAND...: run, time, record the log and a summary line
step() {
        local name=$1 log=$2 t0 t1 r counts
        shift 2
        echo "==== ci-extra: $name ===="
        rm -f "$log"
        t0=$(date +%s)
        "$@"
        r=$?
        t1=$(date +%s)
        counts="no test log"
        if [ -s "$log" ]; then
                echo "$log" >>"$list"
                counts=$(TAIL_LINES=0 tests/summarize-testlog.sh "$log" | tail -n 1)
        fi
        [ "$r" -eq 0 ] || rc=1
        summary+=("$(printf '%-9s %-4s %4ss  %s' "$name" "$([ "$r" -eq 0 ] && echo ok || echo FAIL)" \
                $((t1 - t0)) "$counts")")
        # name what failed, so that a summary seen alone says where to look
        if [ "$r" -ne 0 ] && [ -s "$log" ]; then
                while IFS= read -r t; do summary+=("          failed: $t"); done < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        t = json.loads(line)
        if t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
            print(t.get("result"), t.get("name"))' "$log")
                # and what each said about it, printed just before the summary: the end of a long
                # CI log is often all that is seen of it
                while IFS= read -r t; do details+=("$t"); done < <(python3 -c '
import json, re, sys
pat = re.compile(r"FAIL|VIOLATION|Assertion|AddressSanitizer|runtime error|Traceback|error:|timed out|unresponsive")
for line in open(sys.argv[1]):
    if line.strip():
        t = json.loads(line)
        if t.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
            print("-- %s: %s %s" % (sys.argv[2], t.get("result"), t.get("name")))
            out = (t.get("stdout") or "") + "\n" + (t.get("stderr") or "")
            hits = [l for l in out.splitlines() if pat.search(l)]
            for l in hits[:25]:
                print("   " + l[:300])' "$log" "$name")
        fi
}

mtest=(meson test --print-errorlogs --num-processes 2)
# sanitizer reports must fail the program that has them
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1}

asan() {
        if [ ! -f "$asan_build/build.ninja" ]; then
                meson setup "$asan_build" -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
                        >/dev/null || return 1
        fi
        meson compile -C "$asan_build" >/dev/null || return 1
        # static: same sources as the main build's run; e2e and package: the QEMU guest and
        # the Debian package are built by dpkg-buildpackage, without the sanitizers
        "${mtest[@]}" -C "$asan_build" --no-suite static --no-suite e2e --no-suite e2e-apst --no-suite package
}

valgrind_run() {
        local suites
        command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; return 0; }
        # every suite that has a test under tests/integration/ (they start nvme-apstd through apstd_test.py)
        # or tests/doctor/ (test-doctor.sh honours NVME_APSTD_WRAPPER too) or tests/soak/ (soak.py
        # starts the daemon through apstd_test.Daemon, and slows its clocks under a wrapper)
        suites=$(meson introspect --tests "$build" | python3 -c '
import json, sys
s = set()
for t in json.load(sys.stdin):
    if any("/tests/integration/" in a or "/tests/doctor/" in a or "/tests/soak/" in a for a in t["cmd"]):
        s.update(x.split(":")[-1] for x in t["suite"])
print(" ".join(sorted(s)))')
        [ -n "$suites" ] || { echo "SKIP: no integration suites"; return 0; }
        echo "suites: $suites"
        local args=()
        for s in $suites; do args+=(--suite "$s"); done
        # -q: only errors; definite/indirect leaks are errors; exit 99 fails the test (apstd_test.py)
        NVME_APSTD_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
--errors-for-leak-kinds=definite,indirect --track-origins=yes --suppressions=$src/tests/fake/fake-valgrind.supp" \
                "${mtest[@]}" -C "$build" --no-rebuild --logbase testlog-valgrind "${args[@]}"
}

vgcorpus() {
        command -v valgrind >/dev/null || { echo "SKIP: valgrind not installed"; return 0; }
        "${mtest[@]}" -C "$build" --no-rebuild --logbase testlog-vgcorpus \
                --wrapper "valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect" \
                "fuzz-idctrl corpus replay" "fuzz-config corpus replay" "fuzz-trace corpus replay" \
                "fuzz-calib corpus replay"
}

fuzz() {
        command -v clang >/dev/null || { echo "SKIP: clang not installed"; return 0; }
        FUZZ_BUILD_DIR=$fuzz_build tests/fuzz/run.sh "$fuzz_secs"
}

static() {
        "${mtest[@]}" -C "$build" --no-rebuild --logbase testlog-static --suite static
}

# Compile only: the unit tests are the same code, and the main build runs them.
nobpf() {
        if [ ! -f "$nobpf_build/build.ninja" ]; then
                meson setup "$nobpf_build" -Dwerror=true -Dbpf=disabled >/dev/null || return 1
        fi
        meson compile -C "$nobpf_build" >/dev/null || return 1
        grep -q '^#define HAVE_BPF 0$' "$nobpf_build/include/generated/config-build.h" ||
                { echo "nobpf: HAVE_BPF is not 0"; return 1; }
        out=$("$nobpf_build/src/nvme-apstd" observe --seconds 1 2>&1)
        [ $? -eq 1 ] && [[ $out == *"-Dbpf=disabled"* ]] || { echo "nobpf: observe did not say why: $out"; return 1; }
        echo "nobpf: compiles; observe says: $out"
}

for s in $steps; do
        case $s in
        asan) step asan "$asan_build/meson-logs/testlog.json" asan ;;
        valgrind) step valgrind "$build/meson-logs/testlog-valgrind.json" valgrind_run ;;
        vgcorpus) step vgcorpus "$build/meson-logs/testlog-vgcorpus-valgrind.json" vgcorpus ;;
        fuzz) step fuzz "$fuzz_build/meson-logs/testlog.json" fuzz ;;
        static) step static "$build/meson-logs/testlog-static.json" static ;;
        nobpf) step nobpf "" nobpf ;;
        *) echo "unknown step $s" >&2; rc=1 ;;
        esac
done

if [ "${#details[@]}" -gt 0 ]; then
        echo "==== ci-extra failures (lines that say what failed) ===="
        printf '%s\n' "${details[@]}"
fi
echo "==== ci-extra summary ===="
printf '%s\n' "${summary[@]}"
exit "$rc"
