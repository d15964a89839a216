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
# src/platform/bpf is compiled for the BPF target (SEC(), BPF_PROG()): clang -Werror and the
# kernel's verifier check it.
cppcheck -q --enable=warning,style,performance,portability --std=c11 -D_GNU_SOURCE \
        -Iinclude/core -Iinclude/platform -Iinclude/engine -Iinclude/daemon -Iinclude/cli \
        -I"$build/include/generated" --inline-suppr --suppress=missingIncludeSystem \
        --suppressions-list=tests/static/cppcheck.supp --error-exitcode=1 \
        --template='{file}:{line}:{column}: {severity}: {message} [{id}]' -i src/platform/bpf src/
rc=$?
[ "$rc" -eq 0 ] && echo "cppcheck: src/ clean"
exit "$rc"
