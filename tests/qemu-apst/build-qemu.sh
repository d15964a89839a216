#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-qemu.sh - build Debian 12's QEMU with nvme-apst.patch (an emulated
# NVMe controller with power states and APST) and print the path of its
# qemu-system-x86_64. A test tool of this repository, not shipped.
#
# Usage: build-qemu.sh [-c CACHE_DIR] [-j JOBS]
#
# The binary is cached under CACHE_DIR/qemu-apst-KEY/, KEY being the hash of
# the Debian source version, the configure options, the patch and the device
# list: a second run prints the cached path at once. The source comes from
# `apt-get source qemu` (the version of the installed qemu-system-x86 when
# the archive still has it, whose firmware the binary then uses), through
# deb-src twins of the host's Debian bookworm entries kept in CACHE_DIR.
#
# Configured minimal: x86_64-softmmu only, no default features or devices,
# only the devices of nvme-apst-devices.mak, no docs/tools/user/KVM/Xen.
# The Debian source has no firmware: run the binary with
#   -L /usr/share/qemu -L /usr/share/seabios
# (packages qemu-system-data and seabios).
#
# Exit: 0 printed the binary's path; 1 failed; 77 the source cannot be had.
set -Eeuo pipefail
trap 'echo "build-qemu FAIL: line $LINENO: $BASH_COMMAND (status $?)" >&2; exit 1' ERR

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${E2E_CACHE:-/var/cache/nvme-apstd-e2e}
JOBS=$(nproc)
while getopts "c:j:h" opt; do
	case $opt in
	c) CACHE=$OPTARG ;;
	j) JOBS=$OPTARG ;;
	*)
		sed -n '2,/^set -E/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 2
		;;
	esac
done
PATCH=$HERE/nvme-apst.patch DEVICES=$HERE/nvme-apst-devices.mak
log() { echo "[build-qemu $(date +%T)] $*" >&2; }
fail() {
	echo "build-qemu FAIL: $*" >&2
	exit 1
}
skip() {
	echo "build-qemu SKIP: $*" >&2
	exit 77
}
t() { timeout --kill-after=10 "$@"; }
[ "$(id -u)" = 0 ] || fail "must run as root (apt-get source, build dependencies, $CACHE)"

# ------------------------------------------------------------ the source
# apt-get source needs deb-src entries, and Debian's images ship none. The
# script keeps its own: deb-src twins of the host's Debian bookworm entries,
# with their own package lists under CACHE_DIR/apt-src, so the host's apt
# configuration (which the guest's root file system is built from) is left as
# it is.
A=$CACHE/apt-src
APT=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$A/sources.list.d"
	-o "Dir::State::Lists=$A/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
	-o APT::Sandbox::User=root)
mkdir -p "$A/sources.list.d" "$A/lists/partial"
{
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'BEGIN{RS=""; ORS="\n\n"} /Suites:[^\n]*bookworm/ && !/Enabled: *no/ && /Types:[^\n]*deb([ \n]|$)/' "$f" |
			sed 's/^Types:.*/Types: deb-src/'
	done
	# one-line entries "deb [OPTIONS] URI SUITE COMPONENTS..." (options dropped)
	{ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } |
		awk '/^deb [^#]*bookworm/ { sub(/\[[^]]*\] */, "")
			printf "Types: deb-src\nURIs: %s\nSuites: %s\nComponents:", $2, $3
			for (i = 4; i <= NF; i++) printf " %s", $i
			printf "\n\n" }'
} >"$A/sources.list.d/debian-src.sources.tmp"
[ -s "$A/sources.list.d/debian-src.sources.tmp" ] ||
	skip "no Debian bookworm entry in /etc/apt/sources.list(.d) to derive deb-src entries from"
mv "$A/sources.list.d/debian-src.sources.tmp" "$A/sources.list.d/debian-src.sources"
srcver() { apt-cache "${APT[@]}" showsrc qemu 2>/dev/null | sed -n 's/^Version: //p'; }
if [ -z "$(srcver)" ] || [ -n "$(find "$A/lists" -maxdepth 0 -mtime +7)" ]; then
	log "apt-get update for the deb-src entries ($A)"
	t 600 apt-get "${APT[@]}" update -q >&2 || true
	touch "$A/lists"
fi
[ -n "$(srcver)" ] || skip "apt has no source package qemu (deb-src entries in $A/sources.list.d)"
# The installed QEMU's version (its firmware in /usr/share/qemu matches),
# else the archive's candidate.
VER=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null || true)
if [ -z "$VER" ] || ! srcver | grep -qxF "$VER"; then
	VER=$(srcver | sort -V | tail -n 1)
fi
# What the binary is built from: a change to any of these rebuilds it.
CONFIGURE=(--target-list=x86_64-softmmu --without-default-features --without-default-devices
	--with-devices-x86_64=nvme-apst --disable-docs --disable-tools --disable-user --disable-kvm
	--disable-xen --disable-werror)
KEY=$( (echo "$VER" "${CONFIGURE[*]}" && cat "$PATCH" "$DEVICES") | sha256sum | cut -c1-16)
OUTDIR=$CACHE/qemu-apst-$KEY
if [ -x "$OUTDIR/qemu-system-x86_64" ]; then
	echo "$OUTDIR/qemu-system-x86_64"
	exit 0
fi

# ------------------------------------------------- build dependencies
# Beyond the project's own (gcc, pkg-config, ninja, meson, python3, glib):
# pixman and libfdt, which even a minimal x86 softmmu needs; dpkg-dev for
# dpkg-source; the firmware the binary runs with.
deps=(gcc pkg-config ninja-build python3 libglib2.0-dev libpixman-1-dev libfdt-dev dpkg-dev
	flex bison qemu-system-data seabios)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive t 1200 apt-get install -y -q -o DPkg::Lock::Timeout=600 \
		--no-install-recommends "${missing[@]}" >&2 || fail "apt-get install ${missing[*]} failed"
fi

# ---------------------------------------------------------------- build
mkdir -p "$CACHE"
B=$CACHE/qemu-build.tmp
rm -rf "$B"
mkdir -p "$B"
T0=$(date +%s)
log "apt-get source qemu=$VER"
(cd "$B" && t 900 apt-get "${APT[@]}" source --download-only -q "qemu=$VER" >&2) ||
	skip "apt-get source qemu=$VER failed"
(cd "$B" && t 600 dpkg-source -x --no-check qemu_*.dsc src >"$B/dpkg-source.log" 2>&1) ||
	{ tail -n 20 "$B/dpkg-source.log" >&2; fail "dpkg-source -x failed"; }
S=$B/src
(cd "$S" && patch -p1 --no-backup-if-mismatch <"$PATCH" >&2) || fail "nvme-apst.patch does not apply to qemu $VER"
cp "$DEVICES" "$S/configs/devices/x86_64-softmmu/nvme-apst.mak"
mkdir -p "$S/build"
log "configure (x86_64-softmmu, no default features or devices)"
(cd "$S/build" && t 1200 ../configure "${CONFIGURE[@]}" >"$B/configure.log" 2>&1) ||
	{ tail -n 40 "$B/configure.log" >&2; fail "configure failed"; }
log "ninja -j$JOBS qemu-system-x86_64"
(cd "$S/build" && t 5400 ninja -j"$JOBS" qemu-system-x86_64 >"$B/build.log" 2>&1) ||
	{ grep -E 'error|FAILED' "$B/build.log" | head -n 40 >&2; fail "build failed"; }
rm -rf "$CACHE"/qemu-apst-* # older patches' binaries
mkdir -p "$OUTDIR.tmp"
install -m755 "$S/build/qemu-system-x86_64" "$OUTDIR.tmp/qemu-system-x86_64"
echo "qemu $VER + nvme-apst.patch, built in $(($(date +%s) - T0)) s" >"$OUTDIR.tmp/BUILD-INFO"
mv "$OUTDIR.tmp" "$OUTDIR"
rm -rf "$B"
log "built $OUTDIR/qemu-system-x86_64 in $(($(date +%s) - T0)) s"
echo "$OUTDIR/qemu-system-x86_64"
