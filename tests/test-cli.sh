#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every subcommand answers --help (usage on stdout, exit 0) and --version;
# an unknown command or option is a usage error (exit 2); --pci-id takes exactly VVVV:DDDD.
# Usage: test-cli.sh NVME_APSTD VERSION IDCTRL_FILE
set -u
bin=$1 version=$2 idfile=$3 fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
for verb in "" run plan apply simulate doctor status calibrate; do
        out=$("$bin" $verb --help 2>&1); rc=$?
        check "nvme-apstd $verb --help exits 0 with a usage line" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^Usage: nvme-apstd"'
        out=$("$bin" $verb --version 2>&1); rc=$?
        check "nvme-apstd $verb --version prints $version" '[ $rc -eq 0 ] && [ "$out" = "nvme-apstd $version" ]'
done
"$bin" frobnicate >/dev/null 2>&1; rc=$?
check "an unknown command exits 2" '[ $rc -eq 2 ]'
for verb in plan apply run doctor status calibrate; do
        "$bin" $verb --no-such-option >/dev/null 2>&1; rc=$?
        check "nvme-apstd $verb --no-such-option exits 2" '[ $rc -eq 2 ]'
done
for id in 8086:f1a5 8086:F1A5; do
        "$bin" plan --id-ctrl "$idfile" --pci-id "$id" >/dev/null 2>&1; rc=$?
        check "plan --pci-id $id accepted" '[ $rc -eq 0 ]'
done
for id in 0x86:f1a5 " 86:f1a5" 8086:f1a5x 8086-f1a5 86:f1a5; do
        "$bin" plan --id-ctrl "$idfile" --pci-id "$id" >/dev/null 2>&1; rc=$?
        check "plan --pci-id '$id' refused as usage" '[ $rc -eq 2 ]'
done
exit $fail
