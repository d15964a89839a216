#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what is needed, build, and run the main job (as root on Debian 12).
#
# With NVMe controllers: `nvme-apstd plan` on them, then `nvme-apstd apply`
# (writes each controller's table and verifies it; the kernel's table comes
# back on the next reset, or run the daemon to keep it).
# Without (CI, VMs): the same `plan` and `apply`, and a short daemon run,
# against the bundled fake controller loaded with a real drive's Identify data:
# the Intel 600p (SSDPEKKW256G7, PCI 8086:f1a5) of the 3% regression thread.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-$PWD/build}

tests/deps.sh build test
[ -f "$build/build.ninja" ] || meson setup "$build"
meson compile -C "$build"
apstd=$build/src/nvme-apstd

if [ -z "${QUICKSTART_FAKE:-}" ] && ls /sys/class/nvme/nvme* >/dev/null 2>&1; then
        echo "== nvme-apstd plan (your controllers)"
        "$apstd" plan
        echo
        echo "== nvme-apstd apply"
        exec "$apstd" apply
fi

echo "No NVMe controller here: using the fake controller with a real drive's Identify data."
demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
cat > "$demo/demo.sh" <<'DEMO'
set -u
apstd=$1
echo "== nvme-apstd plan"
"$apstd" plan
echo
echo "== nvme-apstd plan --json (first controller, table only)"
"$apstd" plan --json | /usr/bin/python3 -c 'import json,sys; c=json.load(sys.stdin)["controllers"][0]; print(c["model"], c["policy"], c["apste"], c["table"][:5], "...")'
echo
echo "== the daemon: start, a kernel reset overwrites the table, stop"
NVME_APSTD_LOG_TARGET=console RUNTIME_DIRECTORY=$(mktemp -d) "$apstd" run &
pid=$!
sleep 1
"$FAKE_NVME_CTL_PROG" reset nvme0 >/dev/null
sleep 1
kill -TERM $pid
wait $pid
echo "daemon exited with status $? (the kernel's table is back)"
echo
echo "== nvme-apstd apply"
"$apstd" apply
echo
echo "== nvme get-feature -f 0x0c -H (nvme-cli reads the table back)"
nvme get-feature /dev/nvme0 -f 0x0c -H 2>&1 | head -12
echo
DEMO
export NVME_APSTD_LOG_TARGET=console
intel=$PWD/tests/data/idctrl/00-intel-ssdpekkw256g7.bin
# The fake starts with the table the kernel would have written at probe: our
# bit-exact `kernel` policy, quirks included (8086:f1a5 is NO_DEEPEST_PS).
printf '[apst]\npolicy = kernel\n' > "$demo/kernel.conf"
"$apstd" plan --json --config "$demo/kernel.conf" --id-ctrl "$intel" --pci-id 8086:f1a5 |
        /usr/bin/python3 -c 'import json,sys; c=json.load(sys.stdin)["controllers"][0]; print("apste=%d" % c["apste"]); print("\n".join(c["table"]))' \
        > "$demo/kernel.table"
umockdev-wrapper "$build/tests/fake/fake-nvme-tb" \
        --ctrl "nvme0,idctrl=$intel,pci=8086:f1a5,initial-table=$demo/kernel.table" \
        --state-dir "$demo/state" -- bash "$demo/demo.sh" "$apstd"
