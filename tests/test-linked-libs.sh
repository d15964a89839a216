#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon's own program links neither libbpf (and what libbpf brings: libelf, libz) nor libm:
# each costs the idle daemon resident pages merely mapped (bench/README.md, "The idle daemon's
# memory with four controllers"). libbpf belongs to the eBPF program's loader alone
# (nvme-apstd-bpf-load, src/platform/bpf/iogap-load.c), libm's few functions are
# src/core/mathfn.c's. The loader, when built, links libbpf.
#   test-linked-libs.sh NVME_APSTD [BPF_LOADER]
set -euo pipefail
apstd=$1 loader=${2:-}
command -v readelf >/dev/null || { echo "SKIP: readelf (binutils) missing"; exit 77; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
fail=0
libs=$(needed "$apstd")
echo "nvme-apstd needs: $(echo $libs)"
for bad in libbpf libelf libz libm; do
        if grep -q "^$bad\.so" <<<"$libs"; then
                echo "FAIL: nvme-apstd links $bad"
                fail=1
        fi
done
if [ -n "$loader" ]; then
        echo "nvme-apstd-bpf-load needs: $(needed "$loader" | xargs)"
        needed "$loader" | grep -q '^libbpf\.so' || { echo "FAIL: the loader does not link libbpf"; fail=1; }
fi
exit "$fail"
