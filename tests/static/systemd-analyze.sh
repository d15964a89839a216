#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The systemd unit: `systemd-analyze verify` must be silent, and
# `systemd-analyze security` must rate it below 2.3 (every hardening setting
# that is left out is explained in systemd/nvme-apstd.service.in).
#   systemd-analyze.sh UNIT DAEMON-BINARY [MAX-EXPOSURE]
set -uo pipefail
unit=${1:?usage: $0 UNIT DAEMON [MAX]}
daemon=${2:?usage: $0 UNIT DAEMON [MAX]}
max=${3:-2.3}
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
systemd-analyze --version | head -1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# verify checks that ExecStart= exists: point it at the built binary.
sed "s|^ExecStart=[^ ]*nvme-apstd|ExecStart=$daemon|" "$unit" >"$tmp/nvme-apstd.service"
rc=0
# --man=no: the man pages are checked below against doc/, not the installed system
if ! out=$(systemd-analyze verify --man=no "$tmp/nvme-apstd.service" 2>&1) || [ -n "$out" ]; then
        echo "$out"
        echo "FAIL: systemd-analyze verify"
        rc=1
else
        echo "systemd-analyze verify: clean"
fi
doc=$(dirname "$0")/../../doc
for m in $(sed -n 's/^Documentation=//p' "$unit"); do
        case $m in man:*)
                page=${m#man:}; name=${page%(*}; sec=${page#*(}; sec=${sec%)}
                [ -f "$doc/$name.$sec" ] || echo "WARNING: Documentation=$m: no doc/$name.$sec in the source tree";;
        esac
done
sec_out=$(systemd-analyze security --offline=true "$tmp/nvme-apstd.service" 2>&1)
echo "$sec_out" | grep '✗'
line=$(echo "$sec_out" | grep 'Overall exposure level')
echo "$line"
exposure=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
if [ -z "$exposure" ]; then
        echo "FAIL: no exposure figure from systemd-analyze security"
        exit 1
fi
echo "exposure: $exposure (must be below $max)"
if ! awk -v e="$exposure" -v m="$max" 'BEGIN { exit !(e < m) }'; then
        echo "FAIL: exposure $exposure >= $max"
        rc=1
fi
exit "$rc"
