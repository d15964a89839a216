#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The bash completion (shell-completion/bash/nvme-apstd) driven through bash's
# own machinery: COMP_WORDS/COMP_CWORD set as bash sets them for a command
# line, the function `complete -p nvme-apstd` names called, COMPREPLY read.
# Controllers and disks come from a fake sysfs tree (_NVME_APSTD_SYSFS).
# Usage: test-completion.sh COMPLETION-FILE
# Covers: shell-completion/bash/nvme-apstd.
set -u

script=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sys=$tmp/sys
mkdir -p "$sys/class/nvme/nvme0/device" "$sys/class/nvme/nvme1" "$sys/block/nvme0n1" "$sys/block/sda" \
         "$sys/block/loop0"
echo 0x8086 >"$sys/class/nvme/nvme0/device/vendor"
echo 0xf1a5 >"$sys/class/nvme/nvme0/device/device"
export _NVME_APSTD_SYSFS=$sys

# shellcheck source=/dev/null
source "$script" || { echo "FAIL: cannot source $script"; exit 1; }
func=$(complete -p nvme-apstd 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[ -n "$func" ] || { echo "FAIL: $script registers no completion function for nvme-apstd"; exit 1; }

fails=0
# complete LINE: the completions for the last word of LINE (a trailing space = an empty word),
# split into words as bash does with the default COMP_WORDBREAKS ('=' is a word of its own).
complete_line() {
        local line=$1
        COMP_LINE=$line
        COMP_POINT=${#line}
        # shellcheck disable=SC2206
        COMP_WORDS=($(sed 's/=/ = /g' <<<"$line"))
        [[ $line == *" " || $line == *"=" ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        "$func" nvme-apstd "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

# expect LINE WANT: the completions are exactly WANT (sorted, space-separated)
expect() {
        local got
        got=$(complete_line "$1")
        if [ "$got" = "$2" ]; then
                echo "ok   '$1' -> $got"
        else
                echo "FAIL '$1': got '$got', want '$2'"
                fails=$((fails + 1))
        fi
}

# expect_has LINE WORD...: the completions include each WORD
expect_has() {
        local line=$1 got w
        shift
        got=" $(complete_line "$line") "
        for w in "$@"; do
                if [[ $got != *" $w "* ]]; then
                        echo "FAIL '$line': '$w' not in '$got'"
                        fails=$((fails + 1))
                        return
                fi
        done
        echo "ok   '$line' has $*"
}

expect "nvme-apstd " "apply calibrate config doctor hold observe plan quarantine run simulate status"
expect "nvme-apstd config --r" "--root"
expect "nvme-apstd plan --ro" "--root"
expect "nvme-apstd ca" "calibrate"
expect "nvme-apstd s" "simulate status"
expect "nvme-apstd h" "hold"
expect "nvme-apstd --" "--config --help --state-dir --version"
expect "nvme-apstd status --" "--config --help --json --state-dir --version"
expect "nvme-apstd doctor --k" "--kernel-log"
expect "nvme-apstd calibrate --s" "--samples --state-dir"
expect "nvme-apstd observe --" "--help --json --seconds --state-dir --version"
expect "nvme-apstd quarantine --" "--clear --drop-in --help --state-dir --version"
# controllers for the verbs that take them, disks (not loop devices) for observe
expect "nvme-apstd plan " "nvme0 nvme1"
expect "nvme-apstd apply --config /etc/nvme-apstd.conf nvme" "nvme0 nvme1"
expect "nvme-apstd doctor --json nvme1" "nvme1"
expect "nvme-apstd calibrate -n 5 " "nvme0 nvme1"
expect "nvme-apstd observe " "nvme0n1 sda"
expect "nvme-apstd observe --seconds 10 s" "sda"
expect "nvme-apstd status " ""
# hold: its options, controllers before "--", a command right after it, files after that
expect "nvme-apstd hold --" "--app-id --help --max-latency --reason --state-dir --version"
expect "nvme-apstd hold --max-latency " ""
expect "nvme-apstd hold --max-latency 1ms nvme" "nvme0 nvme1"
expect "nvme-apstd hold --reason=" ""
expect "nvme-apstd hold nvme0 -- --" ""
expect "nvme-apstd hold -- nvme-apstd-no-such-comman" ""
expect_has "nvme-apstd hold nvme1 -- " sh
expect "nvme-apstd hold -- ba" "$(compgen -c -- ba | sort | tr '\n' ' ' | sed 's/ $//')"
expect "nvme-apstd simulate " ""
# enumerated values, also as --opt=value
expect "nvme-apstd simulate --policy " "adaptive budget hindsight kernel none"
expect "nvme-apstd simulate --policy=b" "budget"
expect "nvme-apstd simulate -p k" "kernel"
expect "nvme-apstd simulate --event " "D Q"
expect "nvme-apstd plan --id-ctrl x.bin --pci-id " "8086:f1a5"
# a value that is no word to complete: nothing, and not a verb
expect "nvme-apstd calibrate --samples " ""
expect "nvme-apstd observe --seconds " ""
# options first: that is the daemon, which takes no verb after them
expect "nvme-apstd --config /x " ""
expect "nvme-apstd --config=/x --" "--config --help --state-dir --version"
expect "nvme-apstd bogus --" ""
# files for --config, --trace, --id-ctrl, --kernel-log; directories for --state-dir
mkdir -p "$tmp/files/sub"
: >"$tmp/files/trace.txt"
: >"$tmp/files/idctrl.bin"
expect "nvme-apstd simulate --trace $tmp/files/t" "$tmp/files/trace.txt"
expect "nvme-apstd simulate --id-ctrl=$tmp/files/i" "$tmp/files/idctrl.bin"
expect "nvme-apstd plan -i $tmp/files/id" "$tmp/files/idctrl.bin"
expect "nvme-apstd doctor --kernel-log $tmp/files/" "$tmp/files/idctrl.bin $tmp/files/sub $tmp/files/trace.txt"
expect "nvme-apstd --config $tmp/files/t" "$tmp/files/trace.txt"
expect "nvme-apstd hold -l 0 -- sh $tmp/files/tr" "$tmp/files/trace.txt"
expect "nvme-apstd calibrate --state-dir $tmp/files/" "$tmp/files/sub"
expect_has "nvme-apstd simulate --" --id-ctrl --trace --policy --closed-loop --exlat-scale --pci --event

if [ "$fails" -ne 0 ]; then
        echo "$fails completion(s) wrong"
        exit 1
fi
echo "bash completion: all command lines complete as expected"
