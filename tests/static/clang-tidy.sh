#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clang-tidy over src/*/*.c and the eBPF loader with the checks of the top-level .clang-tidy (every
# warning an error; what is off is explained there, NOLINT comments in place).
#   clang-tidy.sh SRCDIR BUILDDIR      (BUILDDIR has compile_commands.json)
set -uo pipefail
src=${1:?usage: $0 SRCDIR BUILDDIR}
build=${2:?usage: $0 SRCDIR BUILDDIR}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) || { echo "SKIP: clang-tidy not installed"; exit 77; }
[ -f "$build/compile_commands.json" ] || { echo "no $build/compile_commands.json" >&2; exit 99; }
cd "$src" || exit 99
"$tidy" --version | head -2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The eBPF loader (src/platform/bpf/iogap-load.c) is ordinary C, in the database when the
# build has eBPF; the BPF-target program beside it is not for clang-tidy.
files=(src/*/*.c)
grep -q '"file": "[^"]*src/platform/bpf/iogap-load.c"' "$build/compile_commands.json" &&
        files+=(src/platform/bpf/iogap-load.c)
# gcc-only warning flags in the compile database are not errors for clang.
printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 3 "$tidy" -p "$build" --quiet \
        --extra-arg=-Wno-unknown-warning-option >"$out" 2>/dev/null
rc=$?
if grep -q 'warning:\|error:' "$out"; then
        cat "$out"
        echo "clang-tidy: $(grep -c 'warning:\|error:' "$out") finding(s) in src/"
        exit 1
fi
[ "$rc" -ne 0 ] && { cat "$out"; echo "clang-tidy failed ($rc)"; exit 1; }
echo "clang-tidy: src/ clean (${#files[@]} files)"
