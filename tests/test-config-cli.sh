#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `nvme-apstd config` and `plan --root` on configuration trees under a temporary --root: the
# drop-in directories' precedence (same name, masking, order across directories, section merge),
# FILE.d for --config FILE, `config --check` reporting every error with its line, exit statuses.
#
#   test-config-cli.sh NVME_APSTD IDCTRL_FILE
# Covers: src/cli/cmd-config.c, src/platform/config-file.c, src/core/config-dropin.c.

set -u

bin=$1
idctrl=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
checks=0

fail() {
        echo "FAIL: $*" >&2
        failed=$((failed + 1))
}

# expect WHAT GOT WANTED
expect() {
        checks=$((checks + 1))
        [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# put PATH TEXT: a file under the root (printf's escapes in TEXT)
put() {
        mkdir -p "$(dirname "$tmp/root$1")"
        printf "$2" > "$tmp/root$1"
}

# planned ROOT: plan --json's max_latency_us for the Identify file
planned() {
        "$bin" plan --root "$1" -i "$idctrl" --json | sed -n 's/.*"max_latency_us": \([0-9]*\).*/\1/p'
}

# origin SECTION KEY: "value file-relative-to-root:line" of KEY in `config --json`
origin() {
        "$bin" config --root "$tmp/root" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in d["keys"]:
    if k["section"] == sys.argv[1] and k["key"] == sys.argv[2]:
        print(k["value"], k["file"][len(sys.argv[3]):] + ":" + str(k["line"]))' "$1" "$2" "$tmp/root"
}

put /etc/nvme-apstd.conf '[apst]\nmax_latency_us = 1000\nprimary_timeout_ms = 9\n'
expect "main file only" "$(planned "$tmp/root")" 1000

put /usr/lib/nvme-apstd.conf.d/50-vendor.conf '[apst]\nmax_latency_us = 2ms\n'
expect "a drop-in is read after the main file" "$(planned "$tmp/root")" 2000

put /etc/nvme-apstd.conf.d/50-vendor.conf '\n[apst]\nmax_latency_us = 3ms\n'
expect "/etc's 50-vendor.conf replaces /usr/lib's" "$(planned "$tmp/root")" 3000
expect "origin of the value in force" "$(origin apst max_latency_us)" "3ms /etc/nvme-apstd.conf.d/50-vendor.conf:3"

put /run/nvme-apstd.conf.d/10-early.conf '[apst]\nmax_latency_us = 9ms\n'
expect "names order across directories: 10-early (in /run) before 50-vendor (in /etc)" \
        "$(planned "$tmp/root")" 3000
put /usr/local/lib/nvme-apstd.conf.d/90-late.conf '[apst]\nmax_latency_us = 4ms\n'
expect "90-late (in /usr/local/lib) after 50-vendor (in /etc)" "$(planned "$tmp/root")" 4000

ln -s /dev/null "$tmp/root/etc/nvme-apstd.conf.d/90-late.conf"
expect "a symlink to /dev/null masks the name" "$(planned "$tmp/root")" 3000
rm "$tmp/root/etc/nvme-apstd.conf.d/90-late.conf"

put /etc/nvme-apstd.conf.d/60-device.conf '[device intel]\nmatch_model = INTEL*\n'
put /etc/nvme-apstd.conf.d/70-device.conf '[device intel]\nmax_latency_us = 0.5ms\n'
expect "[device NAME] in two files is one section" "$(planned "$tmp/root")" 500

# exit_latency_us from a drop-in: planned with where larger than the descriptor (ps3 advertises 300 µs)
put /etc/nvme-apstd.conf.d/75-measured.conf '[device intel]\nexit_latency_us = ps3:1.5ms\n'
"$bin" plan --root "$tmp/root" -i "$idctrl" > "$tmp/out"
checks=$((checks + 1))
grep -q " 3 .*1500 µs from configuration: planned with it" "$tmp/out" ||
        fail "plan: ps3 from configuration: $(cat "$tmp/out")"
got=$("$bin" plan --root "$tmp/root" -i "$idctrl" --json | python3 -c '
import json, sys
ps = json.load(sys.stdin)["controllers"][0]["power_states"]
print(" ".join(str(p["ps"]) for p in ps if p["from_configuration"]), ps[3]["planned_exlat_us"])')
expect "plan --json: only ps3 from configuration, planned with 1500 µs" "$got" "3 1500"
put /etc/nvme-apstd.conf.d/75-measured.conf '[device intel]\nexit_latency_us = ps3=1500\n'
"$bin" plan --root "$tmp/root" -i "$idctrl" > /dev/null 2> "$tmp/err"
expect "plan refuses a malformed exit_latency_us" $? 1
checks=$((checks + 1))
grep -qF "75-measured.conf:2: [device intel] exit_latency_us = ps3=1500: expected psN:LATENCY" "$tmp/err" ||
        fail "malformed exit_latency_us: $(cat "$tmp/err")"
rm "$tmp/root/etc/nvme-apstd.conf.d/75-measured.conf"

# --config FILE: FILE.d only, not the system directories
put /srv/my.conf '[apst]\nmax_latency_us = 100\n'
put /srv/my.conf.d/10-x.conf '[apst]\nmax_latency_us = 200\n'
got=$("$bin" plan --root "$tmp/root" -c /srv/my.conf -i "$idctrl" --json |
      sed -n 's/.*"max_latency_us": \([0-9]*\).*/\1/p')
expect "--config FILE reads FILE.d only" "$got" 200

# the text output names each key's file and line
"$bin" config --root "$tmp/root" > "$tmp/out"
checks=$((checks + 1))
grep -qx "primary_timeout_ms = 9    # $tmp/root/etc/nvme-apstd.conf:3" "$tmp/out" ||
        fail "config: primary_timeout_ms's origin: $(cat "$tmp/out")"

# --check: valid, then several errors in two files, each with its line
"$bin" config --check --root "$tmp/root"
expect "config --check on a valid tree" $? 0
put /etc/nvme-apstd.conf.d/80-bad.conf '[apst]\nmax_latency_us = 5 parsecs\nbogus = 1\n[cpu]\npin = x\n'
put /etc/nvme-apstd.conf.d/81-bad.conf '[apst]\nprimary_timeout_ms = 99999s\n'
"$bin" config --check --root "$tmp/root" 2> "$tmp/err"
expect "config --check with errors" $? 1
d="$tmp/root/etc/nvme-apstd.conf.d"
for want in "$d/80-bad.conf:2: [apst] max_latency_us = 5 parsecs: not a time span" \
            "$d/80-bad.conf:3: [apst] bogus = 1: unknown key" \
            "$d/80-bad.conf:5: [cpu] pin = x: unknown mode" \
            "$d/81-bad.conf:2: [apst] primary_timeout_ms = 99999s: out of range (0..16777215 ms)"; do
        checks=$((checks + 1))
        grep -qF "$want" "$tmp/err" || fail "config --check: no '$want' in: $(cat "$tmp/err")"
done
expect "config --check: four errors, four lines" "$(wc -l < "$tmp/err")" 4
"$bin" plan --root "$tmp/root" -i "$idctrl" > /dev/null 2>&1
expect "plan refuses a configuration with an error in a drop-in" $? 1

# --check FILE...: each file on its own
"$bin" config --check "$d/80-bad.conf" "$tmp/root/srv/my.conf" 2> "$tmp/err"
expect "config --check FILE with errors" $? 1
expect "config --check FILE: three errors" "$(wc -l < "$tmp/err")" 3
"$bin" config --check "$tmp/root/srv/my.conf"
expect "config --check FILE valid" $? 0
"$bin" config "$tmp/root/srv/my.conf" 2> /dev/null
expect "config FILE without --check is a usage error" $? 2

echo "$checks checks, $failed failed"
[ "$failed" -eq 0 ]
