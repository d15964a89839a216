#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# cppcheck over src/: every finding fails. Suppressions: tests/static/cppcheck.supp
# (global ones, each with its reason) and `cppcheck-suppress` comments in place.
#   cppcheck.sh SRCDIR BUILDDIR
set -uo pipefail
src=${1:?usage: $0 SRCDIR BUILDDIR}
build=${2:?usage: $0 SRCDIR BUILDDIR}
command -v cppcheck >/dev/null || { echo "SKIP: cppcheck not installed"; exit 77; }
cd "$src" || exit 99
cppcheck --version
# config-build.h (PACKAGE_VERSION, SYSCONFDIR) lives in the build dir's include/generated.
# src/platform/bpf/iogap.bpf.c is compiled for the BPF target (SEC(), BPF_PROG()): clang -Werror
# and the kernel's verifier check it. Its loader, iogap-load.c, is plain C and is checked on its
# own below, with the skeleton header the build generated (a build without eBPF has neither).
opts=(-q --enable=warning,style,performance,portability --std=c11 -D_GNU_SOURCE
      -Iinclude/core -Iinclude/platform -Iinclude/engine -Iinclude/daemon -Iinclude/cli
      -I"$build/include/generated" --inline-suppr --suppress=missingIncludeSystem
      --suppressions-list=tests/static/cppcheck.supp --error-exitcode=1
      --template='{file}:{line}:{column}: {severity}: {message} [{id}]')
cppcheck "${opts[@]}" -i src/platform/bpf src/
rc=$?
if [ -f "$build/src/platform/bpf/iogap.skel.h" ]; then
        cppcheck "${opts[@]}" -Isrc/platform/bpf -I"$build/src/platform/bpf" src/platform/bpf/iogap-load.c || rc=1
else
        echo "cppcheck: src/platform/bpf/iogap-load.c not checked: this build has no eBPF skeleton (-Dbpf=disabled)"
fi
[ "$rc" -eq 0 ] && echo "cppcheck: src/ clean"
exit "$rc"
