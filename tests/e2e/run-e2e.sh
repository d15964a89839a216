#!/bin/bash
# run-e2e.sh - system test of nvme-apstd under a real kernel and real systemd.
#
# Builds a Debian 12 guest (mmdebstrap: systemd, udev, nvme-cli, the daemon's
# runtime libraries) with the project installed by `meson install`, boots
# Debian's own kernel on it under QEMU TCG with an emulated NVMe controller,
# and runs guest-test.sh inside (systemctl start/reload/stop, journalctl -o
# json, nvme-apstd plan, a real controller reset, systemd-analyze security).
#
# Usage: run-e2e.sh [-s SOURCE_DIR] [-b BUILD_DIR] [-w WORK_DIR] [-t QEMU_TIMEOUT_SECS] [-k]
#                   [--id-ctrl FILE[@VVVV:DDDD]...]
#   -s  project source tree (default: two levels above this script)
#   -b  install from this configured and built meson build dir (meson test
#       passes its own); default: a build of its own in WORK_DIR/build with
#       --prefix=/usr --sysconfdir=/etc
#   -w  scratch dir for this run (default: a new dir under ${TMPDIR:-/tmp})
#   -t  timeout for the QEMU run (default 1000)
#   -k  keep the scratch dir (guest image, logs) after the run
#   --id-ctrl  the APST test instead (apst-host.sh): a patched QEMU emulates
#       one controller per Identify image; the kernel's APST table is checked
#       against `nvme-apstd plan`; report in WORK_DIR/apst-report.json
#
# Environment (all optional):
#   E2E_CACHE      cache dir (kernel, guest base rootfs, initramfs);
#                  default /var/cache/nvme-apstd-e2e. Delete it for a cold run.
#   E2E_REBUILD=1  rebuild the cached guest rootfs and initramfs
#   E2E_MESON_ARGS extra `meson setup` arguments for the guest build
#   KERNEL_PKG     Debian kernel package (default: what linux-image-amd64 depends on)
#   SMP (2), MEM (1024)
#
# Exit: 0 all checks passed; 1 a check or a step failed (the guest's journal
# is printed); 77 skipped, only when QEMU or the kernel image cannot be had.
# Needs root (mmdebstrap, file ownership in the image) and Debian's archive.
set -Eeuo pipefail
# Anything that fails unexpectedly is a FAIL (exit 1), never some other status
# meson could read as a skip (77).
trap 'echo "E2E FAIL: line $LINENO: $BASH_COMMAND (status $?)" >&2; exit 1' ERR

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
WORK='' QTMO=1000 KEEP=0 BUILD=''
# shellcheck source=apst-host.sh
. "$HERE/apst-host.sh"
apst_args "$@"
set -- "${APST_REST[@]}"
while getopts "s:b:w:t:kh" opt; do
	case $opt in
	s) SRC=$(cd "$OPTARG" && pwd) ;;
	b) BUILD=$(cd "$OPTARG" && pwd) ;;
	w) WORK=$OPTARG ;;
	t) QTMO=$OPTARG ;;
	k) KEEP=1 ;;
	*)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 2
		;;
	esac
done
CACHE=${E2E_CACHE:-/var/cache/nvme-apstd-e2e}
SMP=${SMP:-2} MEM=${MEM:-1024}
T_START=$(date +%s.%N)

log() { echo "[e2e $(date +%T) +$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T_START}")s] $*" >&2; }
fail() {
	echo "E2E FAIL: $*" >&2
	exit 1
}
skip() {
	echo "E2E SKIP: $*" >&2
	exit 77
}
# t SECS CMD...: every host step runs under a timeout.
t() { timeout --kill-after=10 "$@"; }

# ------------------------------------------------------------ preconditions
command -v qemu-system-x86_64 >/dev/null ||
	skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
[ "$(id -u)" = 0 ] || fail "must run as root (mmdebstrap --mode=root, root-owned files in the guest image)"
for tool in mmdebstrap:mmdebstrap mke2fs:e2fsprogs cpio:cpio depmod:kmod modprobe:kmod \
	meson:meson ninja:ninja-build apt-get:apt dpkg-deb:dpkg; do
	command -v "${tool%%:*}" >/dev/null || fail "missing tool ${tool%%:*} (apt-get install ${tool#*:})"
done
if ! [ -x /bin/busybox ] || ! /bin/busybox --list | grep -qx switch_root; then
	fail "need a static busybox at /bin/busybox (apt-get install busybox-static)"
fi
case $(ldd /bin/busybox 2>&1 || true) in
*"not a dynamic"*) ;;
*) fail "/bin/busybox is not static (apt-get install busybox-static)" ;;
esac

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
t 1800 flock 9 || fail "could not lock $CACHE/.lock" # one run fills the cache at a time

if [ -z "$WORK" ]; then WORK=$(mktemp -d "${TMPDIR:-/tmp}/nvme-apstd-e2e.XXXXXX"); fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cleanup() {
	if [ "$KEEP" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK/root" "$WORK/stage" "$WORK"/*.img; fi
}
trap cleanup EXIT
log "source $SRC, scratch $WORK, cache $CACHE"
apst_prepare

# ------------------------------------------------------------------ kernel
# Debian's own kernel, fetched with apt-get download and unpacked (never
# installed: that would run initramfs and bootloader hooks on the host).
kpkg() {
	{ apt-cache depends linux-image-amd64 2>/dev/null || true; } |
		awk '/Depends: linux-image-[0-9]/{print $2; exit}'
}
pkg=${KERNEL_PKG:-$(kpkg)}
if [ -z "$pkg" ]; then # a fresh machine may have no package lists yet
	log "apt-get update (no package lists to resolve linux-image-amd64)"
	t 600 apt-get update -q >&2 || true
	pkg=$(kpkg)
fi
[ -n "$pkg" ] || skip "cannot resolve linux-image-amd64 to a kernel package: the kernel image cannot be had"
KDIR=$CACHE/kernel-$pkg
if [ ! -f "$KDIR/.done" ]; then
	log "fetching $pkg with apt-get download"
	rm -rf "$CACHE"/kernel-* "$CACHE/dl" # an older ABI's kernel is not needed any more
	mkdir -p "$CACHE/dl" "$KDIR"
	(cd "$CACHE/dl" && t 600 apt-get download -o APT::Sandbox::User=root "$pkg" >&2) ||
		skip "apt-get download $pkg failed: the kernel image cannot be had"
	t 300 dpkg-deb -x "$CACHE"/dl/linux-image-*.deb "$KDIR" || fail "dpkg-deb -x failed"
	rm -rf "$CACHE/dl"
	touch "$KDIR/.done"
fi
k=("$KDIR"/boot/vmlinuz-*) m=("$KDIR"/lib/modules/*)
{ [ -f "${k[0]}" ] && [ -d "${m[0]}" ]; } || skip "no vmlinuz or modules in $pkg"
KERNEL=${k[0]} MODDIR=${m[0]}
KVER=$(basename "$MODDIR")
[ -f "$MODDIR/modules.dep" ] || t 300 depmod -b "$KDIR" "$KVER" || fail "depmod failed"
# Under TCG, decompressing the bzImage costs seconds at every boot; Debian's
# kernel has CONFIG_PVH, so QEMU can boot the uncompressed vmlinux directly.
BOOTK=$KERNEL
# (E2E_PVH=0: the bzImage; S3 resume fails after a PVH boot, see apst-host.sh)
if [ "${E2E_PVH:-1}" = 1 ] && grep -qs '^CONFIG_PVH=y' "$KDIR/boot/config-$KVER" && command -v python3 >/dev/null; then
	VMLINUX=$KDIR/vmlinux.elf
	if [ ! -s "$VMLINUX" ]; then
		t 120 python3 "$HERE/extract-vmlinux.py" "$KERNEL" "$VMLINUX" || rm -f "$VMLINUX"
	fi
	[ -s "$VMLINUX" ] && BOOTK=$VMLINUX
fi
log "kernel $KVER ($(basename "$BOOTK"))"

# ------------------------------------------------------- build the project
# Installed with `meson install --destdir`, as a package would ship it: from
# the build dir meson test runs in (-b), or from a build of its own with a
# distribution's paths (prefix /usr, config in /etc).
if [ -n "$BUILD" ]; then
	prefix=$(meson introspect --buildoptions "$BUILD" 2>/dev/null |
		python3 -c 'import json,sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}["prefix"])' 2>/dev/null || true)
	[ "$prefix" = /usr ] || log "warning: $BUILD has prefix '$prefix', not /usr: the guest gets that layout"
else
	BUILD=$WORK/build
fi
if [ ! -f "$BUILD/build.ninja" ]; then
	log "meson setup $BUILD"
	# shellcheck disable=SC2086
	t 600 meson setup "$BUILD" "$SRC" --prefix=/usr --sysconfdir=/etc --localstatedir=/var \
		--buildtype=debugoptimized --wrap-mode=nodownload ${E2E_MESON_ARGS:-} >"$WORK/meson-setup.log" 2>&1 ||
		{ tail -n 40 "$WORK/meson-setup.log" >&2; fail "meson setup failed"; }
fi
if [ "$BUILD" = "$WORK/build" ]; then # (meson test has built its own already)
	log "meson compile"
	t 900 meson compile -C "$BUILD" >"$WORK/meson-compile.log" 2>&1 ||
		{ tail -n 40 "$WORK/meson-compile.log" >&2; fail "meson compile failed"; }
fi
rm -rf "$WORK/stage"
t 300 meson install -C "$BUILD" --destdir "$WORK/stage" --no-rebuild >"$WORK/meson-install.log" 2>&1 ||
	{ tail -n 40 "$WORK/meson-install.log" >&2; fail "meson install failed"; }
sed 's/^/    /' "$WORK/meson-install.log" | grep -E 'Installing' >&2 || true
DAEMON=$(find "$WORK/stage" -type f -name nvme-apstd -perm -u+x -print -quit)
[ -n "$DAEMON" ] || fail "meson install put no nvme-apstd executable in $WORK/stage"
[ -n "$(find "$WORK/stage" -name nvme-apstd.service)" ] || fail "meson install put no nvme-apstd.service"

# ------------------------------------------------------ the Debian package
# What the guest installs: the package tests/package/build-debs.sh builds
# from the source tree (reused if the 'package' suite built it from the same
# files), and the one a version up for the upgrade check. Only when the
# packaging tools cannot be installed does the guest get the meson install
# above instead (and no package checks).
DEBDIR=$BUILD/tests/package/debs
PKG=0
# The APST test (apst-guest.sh) runs instead of guest-test.sh, whose
# guest-package.sh installs the package: it gets the meson install.
if [ ${#APST_FILES[@]} -gt 0 ]; then
	log "APST test: the guest gets the meson install (apst-guest.sh does not install packages)"
elif log "building the Debian packages (tests/package/build-debs.sh -o $DEBDIR)" &&
	t 1800 "$SRC/tests/package/build-debs.sh" -s "$SRC" -o "$DEBDIR" >"$WORK/package.log" 2>&1; then
	PKG=1
	DEB1=$(find "$DEBDIR" -maxdepth 1 -name 'nvme-apstd_*.deb' -print -quit)
	DEB2=$(find "$DEBDIR/upgrade" -maxdepth 1 -name 'nvme-apstd_*.deb' -print -quit)
	if [ -z "$DEB1" ] || [ -z "$DEB2" ]; then fail "build-debs.sh put no packages in $DEBDIR"; fi
	sed -n '/^== /,$p' "$WORK/package.log" | sed 's/^/    /' >&2
else
	prc=$?
	tail -n 40 "$WORK/package.log" >&2
	[ "$prc" = 77 ] || fail "building the Debian package failed (log: $WORK/package.log)"
	log "no packaging tools: the guest gets the meson install, without the package checks"
fi

# --------------------------------------------------- guest base root fs
# Packages: the base list plus whatever Debian package provides each library
# the installed executables link (so a new dependency needs no edit here).
# procps: /bin/kill, which the unit's ExecReload= runs (minbase lacks it; every
# standard Debian install has it). jq: the guest script's JSON assertions. polkitd: what authorises
# latency holds (apst-hold.sh; the package recommends it, apt-get installs recommends by default).
PKGS="systemd systemd-sysv udev dbus kmod procps nvme-cli libnvme1 libsystemd0 libcpupower1 libinih1 jq polkitd"
# ... and what the package depends on, so that apt-get installs it offline.
[ "$PKG" = 0 ] || PKGS="$PKGS $(dpkg-deb -f "$DEB1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g')"
libpkgs() {
	local f lib real p
	find "$WORK/stage" -type f -perm -u+x | while read -r f; do
		{ ldd "$f" 2>/dev/null || true; } | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}'
	done | sort -u | while read -r lib; do
		real=$(readlink -f "$lib")
		for p in "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"; do
			dpkg -S "$p" 2>/dev/null | grep -v '^diversion' | sed -n '1s/:.*//p' | grep . && break
		done || true
	done
}
EXTRA=$(libpkgs | sed 's/,.*//' | sort -u | tr '\n' ' ')
ALL=$(echo "$PKGS $EXTRA" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ',' | sed 's/,$//')
log "guest packages: $ALL"
# The archive apt uses here: the host's Debian bookworm entries, deb822
# stanzas and one-line entries alike (other vendors' repositories left out).
SRCS=()
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	awk 'BEGIN{RS=""; ORS="\n\n"} /Suites:[^\n]*bookworm/ && !/Enabled: *no/' "$f"
done >"$WORK/debian.sources"
[ -s "$WORK/debian.sources" ] && SRCS+=("$WORK/debian.sources")
cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
	grep -E '^deb [^#]*bookworm' >"$WORK/debian.list" || true
[ -s "$WORK/debian.list" ] && SRCS+=("$WORK/debian.list")
[ ${#SRCS[@]} -gt 0 ] || fail "no Debian bookworm entry in /etc/apt/sources.list(.d)"
KEY=$( (echo "$ALL" && cat "${SRCS[@]}" && echo v1) | sha256sum | cut -c1-16)
BASE=$CACHE/rootfs-$KEY.tar
# Rebuilt after a week too, so the guest follows the archive's updates.
if [ ! -s "$BASE" ] || [ "${E2E_REBUILD:-0}" = 1 ] || [ -n "$(find "$BASE" -mtime +7)" ]; then
	log "mmdebstrap bookworm minbase -> $BASE (not cached yet)"
	rm -f "$CACHE"/rootfs-*.tar "$BASE.tmp"
	t 1200 mmdebstrap --variant=minbase --mode=root --format=tar --include="$ALL" \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
		bookworm "$BASE.tmp" "${SRCS[@]}" >"$WORK/mmdebstrap.log" 2>&1 ||
		{ tail -n 40 "$WORK/mmdebstrap.log" >&2; fail "mmdebstrap failed"; }
	mv "$BASE.tmp" "$BASE"
fi

# ------------------------------------------------------------ initramfs
# busybox + the modules needed to mount the root file system; nothing else.
IMODS="virtio_pci virtio_blk crc32c_generic ext4"
INITRD=$CACHE/initrd-$KVER-$( (echo "$IMODS" && cat "$HERE/initramfs-init") | sha256sum | cut -c1-12).cpio.gz
if [ ! -s "$INITRD" ] || [ "${E2E_REBUILD:-0}" = 1 ]; then
	log "building initramfs ($IMODS)"
	rm -f "$CACHE"/initrd-*.cpio.gz
	S=$WORK/initramfs
	rm -rf "$S"
	mkdir -p "$S"/{bin,sbin,proc,sys,dev,newroot,etc}
	ln -s ../bin/busybox "$S/sbin/modprobe" # the kernel calls it for crypto modules
	cp /bin/busybox "$S/bin/busybox"
	for a in sh mount umount modprobe insmod sleep cat cut mkdir poweroff switch_root echo; do
		ln -s busybox "$S/bin/$a"
	done
	for m in $IMODS; do
		t 60 modprobe -d "$KDIR" -S "$KVER" --show-depends "$m" | awk '/^insmod/{print $2}' |
			while read -r ko; do
				install -D -m644 "$ko" "$S${ko#"$KDIR"}"
			done
	done
	cp "$MODDIR"/modules.{order,builtin,builtin.modinfo} "$S/lib/modules/$KVER/" 2>/dev/null || true
	t 60 depmod -b "$S" "$KVER"
	echo "$IMODS" >"$S/etc/e2e-modules"
	install -m755 "$HERE/initramfs-init" "$S/init"
	(cd "$S" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$S"
fi

# ------------------------------------------------------- per-run guest image
log "assembling the guest root file system"
R=$WORK/root
rm -rf "$R"
mkdir -p "$R"
t 300 tar -C "$R" -xf "$BASE" || fail "unpacking $BASE failed"
if [ "$PKG" = 1 ]; then
	# The packages, for the guest to install with apt-get (guest-package.sh);
	# dpkg there installs every file (no mmdebstrap path-exclude of man pages
	# and /usr/share/doc), as on any Debian system.
	G=/usr/local/libexec/nvme-apstd-e2e
	install -D -m644 "$DEB1" "$R$G/debs/$(basename "$DEB1")"
	install -D -m644 "$DEB2" "$R$G/debs/$(basename "$DEB2")"
	install -D -m644 "$HERE/guest-package.sh" "$R$G/guest-package.sh"
	printf 'PKG_DEB1=%s\nPKG_VER1=%s\nPKG_DEB2=%s\nPKG_VER2=%s\n' \
		"$G/debs/$(basename "$DEB1")" "$(dpkg-deb -f "$DEB1" Version)" \
		"$G/debs/$(basename "$DEB2")" "$(dpkg-deb -f "$DEB2" Version)" >"$R$G/package.sh"
	rm -f "$R/etc/dpkg/dpkg.cfg.d/99mmdebstrap"
else
	# The project, as `meson install` laid it out (/lib → /usr/lib on merged-/usr
	# Debian: keep the guest's directory symlinks).
	tar -C "$WORK/stage" -cf - . | tar -C "$R" -xf - --keep-directory-symlink ||
		fail "copying the installed project into the guest failed"
fi
# The kernel's modules that udev loads by modalias: the NVMe driver (and its
# dependencies); then depmod so the guest's modprobe finds them.
t 60 modprobe -d "$KDIR" -S "$KVER" --show-depends nvme | awk '/^insmod/{print $2}' |
	while read -r ko; do install -D -m644 "$ko" "$R/usr${ko#"$KDIR"}"; done
cp "$MODDIR"/modules.{order,builtin,builtin.modinfo} "$R/usr/lib/modules/$KVER/" 2>/dev/null || true
t 60 depmod -b "$R/usr" "$KVER" || t 60 depmod -b "$R" "$KVER"
install -D -m755 "$HERE/guest-test.sh" "$R/usr/local/libexec/nvme-apstd-e2e/guest-test.sh"
# The daemon's MESSAGE_IDs, so the guest checks each kind of entry by its id.
if [ -r "$SRC/include/platform/apstd-ids.h" ]; then
	sed -n 's/^#define \(MSGID_[A-Z0-9_]*\) "\([0-9a-f]\{32\}\)".*/\1=\2/p' "$SRC/include/platform/apstd-ids.h" \
		>"$R/usr/local/libexec/nvme-apstd-e2e/ids.sh"
fi
install -D -m644 "$HERE/nvme-apstd-e2e.service" "$R/etc/systemd/system/nvme-apstd-e2e.service"
ln -sf ../nvme-apstd-e2e.service "$R/etc/systemd/system/multi-user.target.wants/nvme-apstd-e2e.service"
# A fixed identity, so systemd does not treat this as a first boot (which
# would run systemd-firstboot's prompts on the console).
tr -d '-' </proc/sys/kernel/random/uuid >"$R/etc/machine-id"
echo e2e-guest >"$R/etc/hostname"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$R/etc/fstab"
# Nothing here needs timers, gettys or first-boot setup; they only cost time.
for u in systemd-firstboot.service getty@tty1.service serial-getty@ttyS0.service getty.target \
	apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
	e2scrub_reap.service fstrim.timer systemd-tmpfiles-clean.timer; do
	ln -sf /dev/null "$R/etc/systemd/system/$u"
done
apst_guest "$R"
MB=$(($(du -sm "$R" | cut -f1) + 256))
t 300 mke2fs -q -F -t ext4 -L e2e-root -d "$R" "$WORK/root.img" "${MB}M" ||
	fail "mke2fs -d failed"
rm -rf "$R"
truncate -s 64M "$WORK/nvme.img"
# shellcheck disable=SC2054 # (commas inside QEMU's option values)
[ ${#NVME_ARGS[@]} -gt 0 ] || NVME_ARGS=(-drive "file=$WORK/nvme.img,if=none,id=nvm0,format=raw"
	-device nvme,serial=e2e0001,drive=nvm0)

# -------------------------------------------------------------------- boot
CONSOLE=$WORK/console.log OUT=$WORK/guest-output.txt
: >"$CONSOLE"
: >"$OUT"
: >"$WORK/qemu.log"
t0=$(date +%s.%N)
apst_watch_start
# -no-reboot: a guest that resets ends QEMU. Only a reboot the APST guest asks for
# (apst-quarantine.sh) boots the same images again, in a new QEMU process (apst_rebooted);
# the serial files are appended to (append=on), so they hold both boots.
boot=1
while :; do
	log "booting $KVER under QEMU TCG (smp $SMP, ${MEM} MiB, timeout ${QTMO}s; boot $boot)"
	tb=$(date +%s.%N)
	set +e
	t "$QTMO" "$QEMU_BIN" "${QEMU_ARGS[@]}" \
		-accel tcg -machine q35 -cpu max -smp "$SMP" -m "$MEM" \
		-nodefaults -nographic -no-reboot -monitor none \
		-chardev "file,id=con0,path=$CONSOLE,append=on" -serial chardev:con0 \
		-chardev "file,id=out0,path=$OUT,append=on" -serial chardev:out0 \
		-kernel "$BOOTK" -initrd "$INITRD" \
		-append "console=ttyS0 panic=-1 printk.time=1 systemd.show_status=1 systemd.log_color=0 $KERNEL_APPEND_EXTRA" \
		-drive "file=$WORK/root.img,if=none,id=root,format=raw,cache=unsafe" \
		-device virtio-blk-pci,drive=root \
		"${NVME_ARGS[@]}" \
		</dev/null >>"$WORK/qemu.log" 2>&1
	qrc=$?
	set -e
	log "qemu exited rc=$qrc after $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$tb}")s (boot $boot)"
	if [ $qrc != 0 ] || ! apst_rebooted "$boot"; then break; fi
	boot=$((boot + 1))
done
apst_watch_stop
t1=$(date +%s.%N)
log "qemu ran $(awk "BEGIN{printf \"%.1f\", $t1-$t0}")s in $boot boot(s)"
grep -a -h -E 'E2E_(INITRAMFS|SWITCH_ROOT)' "$CONSOLE" | tr -d '\r' | sed 's/^/    /' >&2 || true
tr -d '\r' <"$OUT"
echo
console_tail() {
	echo "---- last 60 lines of the guest console ($CONSOLE) ----" >&2
	tr -d '\r' <"$CONSOLE" | tail -n 60 >&2
	cat "$WORK/qemu.log" >&2
}
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
	console_tail
	fail "QEMU run timed out after ${QTMO}s"
fi
res=$(tr -d '\r' <"$OUT" | sed -n 's/^E2E_RESULT tests=\([0-9]*\) failed=\([0-9]*\)$/\1 \2/p' | tail -n 1)
if [ -z "$res" ]; then
	console_tail
	fail "the guest reported no result (qemu rc=$qrc)"
fi
read -r ntests nfailed <<<"$res"
apst_report "$OUT"
exposure=$(tr -d '\r' <"$OUT" | sed -n 's/^E2E_EXPOSURE=//p' | tail -n 1)
log "systemd-analyze security nvme-apstd.service: ${exposure:-not reported}"
log "total $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T_START}")s"
[ "$ntests" -gt 0 ] || fail "the guest ran no check"
[ "$nfailed" = 0 ] || fail "$nfailed of $ntests guest checks failed (the guest's journal is printed above)"
echo "E2E PASS: $ntests checks"
