#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An idle Debian 12 system, for a recording of what a machine left alone writes: its systemd
# timers, journald (persistent journal), cron, udev. Builds the system with mmdebstrap,
# boots it under QEMU (TCG) with its root file system on a loop device used as the guest's
# disk with cache=none, so each guest I/O is one host I/O on that loop device, and prints the
# loop device's name; record it from the host with bench/record.py, nothing run in the guest:
#
#   dev=$(bench/workloads/idle-guest.sh WORK_DIR)       # as root; boots in about a minute
#   sleep 60; bench/record.py "${dev#/dev/}" 3720 > idle-hour.txt
#
# The guest has no network (its apt timers fail quickly, as on an offline laptop) and no
# login session. Stop it with: pkill -f "qemu-system-x86_64.*$(basename "$dev")".
set -euo pipefail
work=${1:?usage: idle-guest.sh WORK_DIR}
mkdir -p "$work"
R=$work/root
mmdebstrap --variant=minbase --mode=root \
        --include=systemd-sysv,udev,dbus,cron,logrotate,man-db,apt-utils,e2fsprogs,util-linux,procps,kmod,linux-image-amd64,initramfs-tools,zstd \
        bookworm "$R" >"$work/mmdebstrap.log" 2>&1
echo idle-guest >"$R/etc/hostname"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$R/etc/fstab"
mkdir -p "$R/var/log/journal"              # a persistent journal, as an installed system has
chroot "$R" passwd -d root >/dev/null
truncate -s 3G "$work/root.img"
mke2fs -q -F -t ext4 -d "$R" "$work/root.img"
dev=$(losetup -f --show "$work/root.img")
cp "$R"/boot/vmlinuz-* "$work/vmlinuz"
cp "$R"/boot/initrd.img-* "$work/initrd.img"
nohup qemu-system-x86_64 -M pc -accel tcg -m 1024 -smp 1 -nographic -no-reboot \
        -kernel "$work/vmlinuz" -initrd "$work/initrd.img" -append "root=/dev/vda rw console=ttyS0 quiet" \
        -drive "file=$dev,format=raw,if=virtio,cache=none,aio=native" -nic none \
        -serial "file:$work/console.log" -monitor none >"$work/qemu.log" 2>&1 &
echo "$dev"
