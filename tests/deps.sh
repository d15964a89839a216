#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what nvme-apstd needs to build and test on Debian 12 (as root).
# Usage: tests/deps.sh [build|test|e2e|package|bench]...   (default: build test)
set -euo pipefail

# libbpf-dev, clang, bpftool: the eBPF I/O gap program (-Dbpf=auto builds without them)
build=(gcc pkg-config meson ninja-build libnvme-dev libjson-c-dev libssl-dev libsystemd-dev
       libcpupower-dev libinih-dev systemd libbpf-dev clang bpftool)
# umockdev: the fake controller; nvme-cli: independent cross-check; valgrind:
# memcheck of the integration tests (ASan misses buffers umockdev fills);
# clang: libFuzzer and the second compiler; cppcheck/clang-tidy: static analysis;
# prometheus: promtool, which lints the metrics text; python3-dbusmock: a
# power-profiles-daemon on a private bus; python3-fusepy: the slow disk behind
# a loop device that tests/bpf/test-bpf-hidden puts requests behind.
test=(umockdev libumockdev-dev gir1.2-umockdev-1.0 nvme-cli valgrind clang clang-tidy cppcheck
      libclang-rt-14-dev python3 python3-gi python3-dbusmock python3-fusepy dbus util-linux procps prometheus)
# xmllint and polkit's DTD: the shipped polkit action checked (tests/test-polkit-policy.sh)
test+=(libxml2-utils polkitd)
# the QEMU system tests (suites e2e and e2e-apst); for e2e-apst also what
# tests/qemu-apst/build-qemu.sh builds Debian's QEMU source with (once, cached)
# and the firmware the patched binary runs with
e2e=(qemu-system-x86 busybox-static cpio kmod mmdebstrap e2fsprogs xz-utils zstd
     libglib2.0-dev libpixman-1-dev libfdt-dev flex bison qemu-system-data seabios)
# the Debian package (debian/, suite 'package'; the QEMU test installs it)
package=(debhelper dpkg-dev lintian)
# bench/: fio drives the eBPF program's overhead benchmark (bench/bpf-overhead.sh);
# matplotlib draws bench/run.sh's pictures (bench/plot.py; skipped without it)
bench=(fio util-linux python3 python3-matplotlib)

want=()
[ $# -eq 0 ] && set -- build test
for what in "$@"; do
        case $what in
        build) want+=("${build[@]}") ;;
        test) want+=("${build[@]}" "${test[@]}") ;;
        e2e) want+=("${e2e[@]}" "${package[@]}") ;;
        package) want+=("${build[@]}" "${package[@]}") ;;
        bench) want+=("${build[@]}" "${bench[@]}") ;;
        *) echo "usage: $0 [build|test|e2e|package|bench]..." >&2; exit 2 ;;
        esac
done

missing=()
for p in "${want[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"
fi
