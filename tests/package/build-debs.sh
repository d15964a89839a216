#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build the Debian package from this tree the way a user would
# (dpkg-buildpackage), check it with lintian, and build a second package with
# a higher version for the upgrade test of the QEMU system test (tests/e2e).
#
# Usage: build-debs.sh [-s SOURCE_DIR] -o OUT_DIR
#   OUT_DIR/nvme-apstd_V_ARCH.deb, nvme-apstd-dbgsym_V_ARCH.deb   the package
#   OUT_DIR/upgrade/nvme-apstd_V+e2e1_ARCH.deb   the same tree, meson's and
#       the changelog's version raised to V+e2e1 (so `nvme-apstd --version`
#       tells the two binaries apart)
#   OUT_DIR/lintian.txt   lintian's output over the source and binary packages
#   OUT_DIR/info.txt      sizes, Depends, file list, build times
# Nothing is rebuilt when OUT_DIR was built from the same files (a hash of
# every file of the tree as git lists them, but tests/e2e/); the QEMU test and the 'package'
# suite share OUT_DIR that way.
#
# Exit: 0 built and lintian-clean (no error or warning; overrides need a
# reason); 1 a build failed or lintian reported an error or warning;
# 77 skipped, only when the packaging tools cannot be installed.
set -Eeuo pipefail
trap 'echo "PACKAGE FAIL: line $LINENO: $BASH_COMMAND (status $?)" >&2; exit 1' ERR

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
OUT=''
while getopts "s:o:h" opt; do
	case $opt in
	s) SRC=$(cd "$OPTARG" && pwd) ;;
	o) OUT=$OPTARG ;;
	*)
		sed -n '3,/^set -E/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 2
		;;
	esac
done
[ -n "$OUT" ] || { echo "usage: $0 [-s SOURCE_DIR] -o OUT_DIR" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
log() { echo "[package $(date +%T) +$(($(date +%s) - T0))s] $*" >&2; }
fail() { echo "PACKAGE FAIL: $*" >&2; exit 1; }
skip() { echo "PACKAGE SKIP: $*" >&2; exit 77; }

# ---------------------------------------------------------- the tree's files
# As git lists them (tracked and untracked, not ignored: no build dirs), or
# every file but build directories and .git outside a git checkout.
list_files() {
	if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$SRC" ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
			[ -f "$SRC/$f" ] && printf '%s\0' "$f" # (deleted but not yet committed)
		done
	else
		(cd "$SRC" && find . -path ./.git -prune -o -path './build*' -prune -o -type f -printf '%P\0')
	fi
}
exec 8>"$OUT/.lock"
flock -w 1800 8 || fail "could not lock $OUT/.lock"
# The QEMU test's own files (tests/e2e/) are neither in the package nor in the
# tests its build runs: editing them does not rebuild it.
HASH=$( (cd "$SRC" && list_files | grep -zv '^tests/e2e/' | sort -z | xargs -0 sha256sum && echo v1) |
	sha256sum | cut -c1-16)
if [ "$(cat "$OUT/.stamp" 2>/dev/null)" = "$HASH" ]; then
	log "up to date ($HASH): $OUT"
	cat "$OUT/lintian.txt" "$OUT/info.txt"
	exit 0
fi

# ------------------------------------------------------------------ tools
# (checked after the stamp: reusing the packages needs none of them)
tools_ok() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null &&
		command -v lintian >/dev/null && command -v dpkg-checkbuilddeps >/dev/null
}
if ! tools_ok && [ "$(id -u)" = 0 ] && [ -x "$SRC/tests/deps.sh" ]; then
	log "installing the packaging tools (tests/deps.sh package)"
	"$SRC/tests/deps.sh" package >&2 || true
fi
tools_ok || skip "dpkg-buildpackage, debhelper or lintian not installed and not installable (tests/deps.sh package)"
# An override must say why: a comment line right above it.
for f in "$SRC"/debian/*lintian-overrides "$SRC"/debian/source/lintian-overrides; do
	[ -f "$f" ] || continue
	awk -v f="$f" '/^[^#[:space:]]/ && prev !~ /^#/ {print f ":" NR ": override without a reason comment above it: " $0; bad=1}
		{prev=$0} END {exit bad}' "$f" || fail "lintian override without its reason"
done
(cd "$SRC" && dpkg-checkbuilddeps) || fail "build dependencies missing (debian/control Build-Depends; tests/deps.sh build)"

rm -rf "$OUT"/*.deb "$OUT"/upgrade "$OUT"/work "$OUT"/*.txt "$OUT/.stamp"

# copy_tree DIR: the tree's files into DIR (dpkg-buildpackage writes its
# results next to the tree, so each build gets a directory of its own)
copy_tree() {
	mkdir -p "$1"
	(cd "$SRC" && list_files | tar --null -T - -cf -) | tar -C "$1" -xf -
}
VER=$(cd "$SRC" && dpkg-parsechangelog -S Version)
UPVER=$(sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$SRC/meson.build" | head -n 1)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
[ "$VER" = "$UPVER" ] || fail "debian/changelog's version $VER is not meson.build's $UPVER (a native package: keep them equal)"

# 1. The package: source and binaries, with the unit suite (debian/rules).
W1=$OUT/work/v1
copy_tree "$W1/nvme-apstd-$VER"
log "dpkg-buildpackage -us -uc (version $VER)"
t1=$(date +%s)
(cd "$W1/nvme-apstd-$VER" && dpkg-buildpackage -us -uc) >"$OUT/build.log" 2>&1 ||
	{ tail -n 60 "$OUT/build.log" >&2; fail "dpkg-buildpackage failed (log: $OUT/build.log)"; }
b1=$(($(date +%s) - t1))
cp "$W1"/*.deb "$OUT/"

# 2. lintian over all of it (source package, both .debs, buildinfo). Info and
# pedantic tags are shown; errors and warnings fail.
log "lintian"
t1=$(date +%s)
set +e
lintian --fail-on error,warning -I --pedantic --show-overrides "$W1/nvme-apstd_${VER}_$ARCH.changes" \
	>"$OUT/lintian.txt" 2>"$OUT/lintian.err"
lrc=$?
set -e
lt=$(($(date +%s) - t1))
grep -v 'running with root privileges is not recommended' "$OUT/lintian.err" >&2 || true

# 3. The same tree one version up, without the unit suite (run above).
V2=$VER+e2e1
W2=$OUT/work/v2
copy_tree "$W2/nvme-apstd-$V2"
sed -i "0,/version: '$UPVER'/s//version: '$V2'/" "$W2/nvme-apstd-$V2/meson.build"
{
	printf 'nvme-apstd (%s) unstable; urgency=medium\n\n' "$V2"
	printf '  * Upgrade test build: the same tree, one version up.\n\n'
	printf ' -- %s  %s\n\n' "$(cd "$SRC" && dpkg-parsechangelog -S Maintainer)" "$(date -R)"
	cat "$SRC/debian/changelog"
} >"$W2/nvme-apstd-$V2/debian/changelog"
log "dpkg-buildpackage -us -uc -b (version $V2, nocheck)"
t1=$(date +%s)
(cd "$W2/nvme-apstd-$V2" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} nocheck" dpkg-buildpackage -us -uc -b) \
	>"$OUT/build-upgrade.log" 2>&1 ||
	{ tail -n 60 "$OUT/build-upgrade.log" >&2; fail "dpkg-buildpackage (upgrade) failed (log: $OUT/build-upgrade.log)"; }
b2=$(($(date +%s) - t1))
mkdir -p "$OUT/upgrade"
cp "$W2/nvme-apstd_${V2}_$ARCH.deb" "$OUT/upgrade/"
rm -rf "$OUT/work"

DEB=$OUT/nvme-apstd_${VER}_$ARCH.deb
{
	echo "== $(basename "$DEB"): $(stat -c %s "$DEB") bytes, Installed-Size $(dpkg-deb -f "$DEB" Installed-Size) KiB"
	echo "   dbgsym: $(stat -c %s "$OUT/nvme-apstd-dbgsym_${VER}_$ARCH.deb") bytes"
	echo "   Depends: $(dpkg-deb -f "$DEB" Depends)"
	echo "   conffiles: $(dpkg-deb --ctrl-tarfile "$DEB" | tar -xOf - ./conffiles | tr '\n' ' ')"
	dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print "   " $1, $3, $6}'
	echo "== build: ${b1}s (with the unit suite), upgrade build: ${b2}s (nocheck), lintian: ${lt}s"
} >"$OUT/info.txt"
echo "== lintian (exit $lrc):"
cat "$OUT/lintian.txt"
cat "$OUT/info.txt"
[ "$lrc" = 0 ] || fail "lintian reported errors or warnings (exit $lrc): $OUT/lintian.txt"
echo "$HASH" >"$OUT/.stamp"
log "done: $DEB"
