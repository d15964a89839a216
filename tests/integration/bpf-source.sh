#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon's eBPF source against a real block device: a loop device (a file on tmpfs) whose
# diskseq the fake controller's namespace carries, so the kernel program counts the loop
# device's requests as nvme0's. Then test-daemon.py SCENARIO runs under the fake harness.
#   bpf-source.sh NVME_APSTD FAKE_TB TEST_DAEMON_PY SCENARIO FAKE_CTRL_ARGS
# Needs root, eBPF and losetup: else exit 77.
# Covers: src/platform/bpfwatch.c, src/platform/bpf/iogap.bpf.c, src/daemon/manager-watch.c,
# src/core/gaphist.c, src/core/passive-calib.c.
set -euo pipefail
apstd=$1 tb=$2 py=$3 scenario=$4 ctrl=$5
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (loop device, eBPF)"
command -v losetup >/dev/null || skip "losetup missing"
img=$(mktemp /dev/shm/nvme-apstd-bpf-source.XXXXXX)
loop=
cleanup() {
	# the daemon may still be closing the device: a few tries
	if [ -n "$loop" ]; then
		for _ in 1 2 3 4 5; do
			losetup -d "$loop" 2>/dev/null && break
			sleep 1
		done
	fi
	rm -f "$img"
}
trap cleanup EXIT
truncate -s 64M "$img"
loop=$(losetup -f --show "$img" 2>/dev/null) || { loop=; skip "losetup cannot set up a loop device here"; }
seq=$(cat "/sys/class/block/${loop#/dev/}/diskseq" 2>/dev/null) || skip "no diskseq (kernel < 5.15)"
out=$("$apstd" observe --seconds 1 "${loop#/dev/}" 2>&1) || skip "the eBPF program does not load here: $out"
export APSTD_LOOPDEV=$loop
rc=0
# its own session: the harness ends its process group when it is done, which must not take
# this script (and its clean-up) with it
setsid -w umockdev-wrapper "$tb" --ctrl "$ctrl,diskseq=$seq" -- python3 "$py" "$scenario" || rc=$?
exit "$rc"
