#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Line/branch coverage of each parser by a fuzz corpus (clang source-based coverage).
#   tests/fuzz/coverage.sh [CORPUS-ROOT]   default tests/fuzz/corpus; CORPUS-ROOT/fuzz-NAME/
# Builds each target without sanitizers, replays the corpus once, prints llvm-cov's report
# for the parser's own source files.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(realpath "${1:-tests/fuzz/corpus}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
profdata=$(command -v llvm-profdata-14 || command -v llvm-profdata)
cov=$(command -v llvm-cov-14 || command -v llvm-cov)
mkdir -p "$out/gen"
printf '#define PACKAGE_VERSION "fuzz"\n#define SYSCONFDIR "/etc"\n' >"$out/gen/config-build.h"
flags=(-fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping -O1 -g -D_GNU_SOURCE -std=gnu11
       -Iinclude/core -I"$out/gen")
build() {  # name sources... [-- libs]
        local name=$1
        shift
        clang "${flags[@]}" -o "$out/$name" "tests/fuzz/$name.c" "$@"
}
build fuzz-idctrl src/core/idctrl.c src/core/apst.c -lm
build fuzz-config src/core/config.c src/core/config-resolve.c src/core/situation.c src/core/cpuset.c src/core/util.c src/core/apst.c -linih -lm
build fuzz-trace src/core/trace.c
report() {  # name parser-sources...
        local name=$1
        shift
        LLVM_PROFILE_FILE="$out/$name.profraw" "$out/$name" -runs=0 "$root/$name" >/dev/null 2>&1
        "$profdata" merge -sparse -o "$out/$name.profdata" "$out/$name.profraw"
        echo "== $name ($(ls "$root/$name" | wc -l) inputs)"
        "$cov" report "$out/$name" -instr-profile="$out/$name.profdata" "$@" | sed 's|^/.*/src/|src/|'
}
report fuzz-idctrl src/core/idctrl.c
report fuzz-config src/core/config.c src/core/cpuset.c
report fuzz-trace src/core/trace.c
