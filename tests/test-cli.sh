#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every subcommand answers --help (usage on stdout, exit 0) and --version;
# an unknown command or option is a usage error (exit 2); --pci-id takes exactly VVVV:DDDD;
# plan --state-dir plans with a stored wake-up measurement (the seed drive, below).
# Usage: test-cli.sh NVME_APSTD VERSION IDCTRL_FILE
# Covers: src/cli/main.c, src/cli/verbs.c, src/cli/cli.c, the option parsing of every
# src/cli/cmd-*.c, src/cli/cmd-plan.c (--state-dir).
set -u
bin=$1 version=$2 idfile=$3 fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
for verb in "" run plan apply simulate doctor status calibrate observe hold; do
        out=$("$bin" $verb --help 2>&1); rc=$?
        check "nvme-apstd $verb --help exits 0 with a usage line" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^Usage: nvme-apstd"'
        out=$("$bin" $verb --version 2>&1); rc=$?
        check "nvme-apstd $verb --version prints $version" '[ $rc -eq 0 ] && [ "$out" = "nvme-apstd $version" ]'
done
"$bin" frobnicate >/dev/null 2>&1; rc=$?
check "an unknown command exits 2" '[ $rc -eq 2 ]'
for verb in plan apply run doctor status calibrate observe; do
        "$bin" $verb --no-such-option >/dev/null 2>&1; rc=$?
        check "nvme-apstd $verb --no-such-option exits 2" '[ $rc -eq 2 ]'
done
# hold: its own failures are 125 (env(1)'s and timeout(1)'s convention: 2 may be COMMAND's), and COMMAND
# never runs without the hold: not on a usage error, not without a system bus
hold_tmp=$(mktemp -d) || exit 1
for args in "--no-such-option -- touch $hold_tmp/ran" "--max-latency 1x -- touch $hold_tmp/ran" \
            "--max-latency -1 -- touch $hold_tmp/ran" "--max-latency 99999999999999999999 -- touch $hold_tmp/ran" \
            "nvme0 touch $hold_tmp/ran" "nvme0 --" ""; do
        # shellcheck disable=SC2086
        "$bin" hold $args >/dev/null 2>&1; rc=$?
        check "hold $args: usage error, exit 125, the command not run" '[ $rc -eq 125 ] && [ ! -e "$hold_tmp/ran" ]'
done
out=$(DBUS_SYSTEM_BUS_ADDRESS=unix:path=$hold_tmp/no-bus "$bin" hold -- touch "$hold_tmp/ran" 2>&1); rc=$?
check "hold without a system bus: exit 125, says so, the command not run" \
        '[ $rc -eq 125 ] && [ ! -e "$hold_tmp/ran" ] && printf "%s" "$out" | grep -q "cannot connect to the system bus"'
rm -rf "$hold_tmp"
# observe: --seconds is 1..86400; a name that is no whole disk is refused before anything loads
for n in 0 -1 x 86401; do
        "$bin" observe --seconds "$n" >/dev/null 2>&1; rc=$?
        check "observe --seconds $n refused as usage" '[ $rc -eq 2 ]'
done
out=$("$bin" observe --seconds 1 no-such-disk-here 2>&1); rc=$?
check "observe of a disk that does not exist exits 1 and names it" '[ $rc -eq 1 ] && printf "%s" "$out" | grep -q "no-such-disk-here: no such block disk"'
for id in 8086:f1a5 8086:F1A5; do
        "$bin" plan --id-ctrl "$idfile" --pci-id "$id" >/dev/null 2>&1; rc=$?
        check "plan --pci-id $id accepted" '[ $rc -eq 0 ]'
done
for id in 0x86:f1a5 " 86:f1a5" 8086:f1a5x 8086-f1a5 86:f1a5; do
        "$bin" plan --id-ctrl "$idfile" --pci-id "$id" >/dev/null 2>&1; rc=$?
        check "plan --pci-id '$id' refused as usage" '[ $rc -eq 2 ]'
done
# plan --state-dir: the seed drive (Intel 600p, firmware not reported, no PCI id so no quirk) under a
# 15000 us budget keeps ps4 (2000 + 10000 us advertised) from its descriptors, drops it with ps4
# measured at 30000 us; the kernel policy ignores the measurement; a malformed file is named with its
# line and the plan falls back to the descriptors.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/empty" "$tmp/state/calibration" "$tmp/bad/calibration"
printf '[apst]\nmax_latency_us = 15000\n' >"$tmp/budget.conf"
printf '[apst]\npolicy = kernel\nmax_latency_us = 15000\n' >"$tmp/kernel.conf"
cal="$tmp/state/calibration/INTEL%20SSDPEKKW256G7@.calib"
printf 'version=1\nmodel=INTEL SSDPEKKW256G7\nfirmware=\nmeasured_realtime_usec=1764600000000000\nawake_median_us=45\nstate=4 advertised_enlat_us=2000 advertised_exlat_us=10000 samples=20 wake_median_us=30000 wake_p99_us=31900\n' >"$cal"
head -n 4 "$cal" | sed 's/=1764600000000000/=soon/' >"$tmp/bad/calibration/INTEL%20SSDPEKKW256G7@.calib"
plan() { "$bin" plan --id-ctrl "$idfile" "$@" 2>"$tmp/err"; }
out=$(plan -c "$tmp/budget.conf" --state-dir "$tmp/empty"); rc=$?
check "plan --state-dir without a measurement: ps4 in the budget table" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^  APST: .*ps3 → ps4" && ! printf "%s" "$out" | grep -q measured'
out=$(plan -c "$tmp/budget.conf" --state-dir "$tmp/state"); rc=$?
check "plan --state-dir with ps4 measured at 30000 us: ps4 left out, the measured value shown" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^  APST: ps0–ps2 → ps3 after 1030 ms; worst wake 10.3 ms" && printf "%s" "$out" | grep -q "measured 30000 µs: planned with it" && printf "%s" "$out" | grep -q "from the descriptors alone: .*ps3 → ps4"'
out=$(plan -c "$tmp/budget.conf" --state-dir "$tmp/state" --json); rc=$?
check "plan --json: ps4 measured, planned with 30000 us, advertised 10000 us" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -Eq "\"ps\": 4, [^}]*\"exlat_us\": 10000, [^}]*\"planned_exlat_us\": 30000, \"measured\": true"'
out=$(STATE_DIRECTORY="$tmp/state" "$bin" plan --id-ctrl "$idfile" -c "$tmp/budget.conf"); rc=$?
check "plan reads \$STATE_DIRECTORY without --state-dir" '[ $rc -eq 0 ] && printf "%s" "$out" | grep -q "^  APST: ps0–ps2 → ps3 after 1030 ms;"'
a=$(plan -c "$tmp/kernel.conf" --state-dir "$tmp/empty" | grep "^  APST:") && b=$(plan -c "$tmp/kernel.conf" --state-dir "$tmp/state" | grep "^  APST:")
check "the kernel policy plans the same with and without the measurement" '[ -n "$a" ] && [ "$a" = "$b" ]'
out=$(plan -c "$tmp/budget.conf" --state-dir "$tmp/bad"); rc=$?
check "a malformed calibration: named with its line, planned from the descriptors" '[ $rc -eq 0 ] && grep -q "INTEL%20SSDPEKKW256G7@.calib: line 4: " "$tmp/err" && printf "%s" "$out" | grep -q "^  APST: .*ps3 → ps4"'
exit $fail
