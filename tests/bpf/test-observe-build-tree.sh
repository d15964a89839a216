#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The build tree runs like the installed daemon: with no environment variable, the build's
# `nvme-apstd observe` finds the eBPF loader beside it (src/nvme-apstd-bpf-load) when none is
# installed, and counts a loop device's reads (4 O_DIRECT reads: exactly 4 requests); a copy of
# nvme-apstd alone in a folder fails with an error that names the fixes. Needs root and eBPF
# (checked first with the loader named explicitly): else 77; an installed loader would be taken
# before the one beside: 77 too.
#   test-observe-build-tree.sh NVME_APSTD BPF_LOADER INSTALLED_LOADER
# Covers: src/platform/bpfwatch.c (loader_path, loader_missing).
set -euo pipefail
apstd=$1 loader=$2 installed=$3
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root (loop device, eBPF)"
command -v losetup >/dev/null || skip "losetup missing"
[ ! -e "$installed" ] || skip "a loader is installed ($installed): the build tree's would not be the one taken"
[ "$(dirname "$apstd")" = "$(dirname "$loader")" ] || fail "the loader is not built beside nvme-apstd"
tmp=$(mktemp -d /dev/shm/nvme-apstd-buildtree.XXXXXX)
loop=
trap '[ -n "$loop" ] && losetup -d "$loop"; rm -rf "$tmp"' EXIT
truncate -s 16M "$tmp/img"
loop=$(losetup -f --show "$tmp/img" 2>/dev/null) || { loop=; skip "losetup cannot set up a loop device here"; }
out=$(NVME_APSTD_BPF_LOADER=$loader "$apstd" observe --seconds 1 "${loop#/dev/}" 2>&1) ||
	skip "the eBPF program does not load here: $out"

unset NVME_APSTD_BPF_LOADER
env | grep -q '^NVME_APSTD' && fail "an NVME_APSTD variable is still set: $(env | grep '^NVME_APSTD')"
"$apstd" observe --json --seconds 3 "$loop" >"$tmp/out.json" 2>"$tmp/err" &
obs=$!
sleep 1
python3 - "$loop" <<'PY'
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
for i in range(4):
    time.sleep(0.05)
    os.preadv(fd, [buf], 4096 * i * 16)
os.close(fd)
PY
wait "$obs" || fail "observe from the build tree, no environment: $(cat "$tmp/err")"
python3 - "$tmp/out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["source"] == "bpf", j
assert j["disks"][0]["requests"] == 4, j["disks"][0]
print("ok: observe from the build tree with no environment: 4 requests counted with eBPF")
PY

# alone in a folder (no loader beside it, none installed): it fails and says how to fix it
cp "$apstd" "$tmp/nvme-apstd"
if "$tmp/nvme-apstd" observe --seconds 1 "$loop" >"$tmp/alone" 2>&1; then
	fail "observe with no loader anywhere succeeded: $(cat "$tmp/alone")"
fi
for fix in "$installed" "meson install" "beside this program" NVME_APSTD_BPF_LOADER; do
	grep -qF "$fix" "$tmp/alone" || fail "the error does not name '$fix': $(cat "$tmp/alone")"
done
echo "ok: with no loader the error names the installed path, meson install, beside, NVME_APSTD_BPF_LOADER"
