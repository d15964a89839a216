#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The policy benchmark: every sample drive x every trace family x each policy,
# through `nvme-apstd simulate`, printed as one table. All figures are ratios
# against baselines computed in the same invocation (the offline optimum and
# the kernel's defaults), so they do not depend on the machine. Needs only a C
# compiler (for bench/tracegen.c), POSIX sh and awk.
#
#   bench/run.sh -b BUILD/nvme-apstd [-D IDCTRL_DIR] [-p "none kernel budget"]
#                [-s SEED] [-d SECONDS] [-w IDLE_POWER_W] [-n]
#
# The binary may also come from $NVME_APSTD. IDCTRL_DIR defaults to
# tests/data/idctrl.
#
# Each sample drive is simulated with its real PCI id (pci_id() below), so the
# kernel baseline and the daemon apply the kernel's quirks as they would on that
# drive (NO_DEEPEST_PS for 00, 08 and 14); -n simulates every drive with an
# unknown PCI id instead (no quirk applies). The optimum ignores quirks: it is the
# limit of the states the drive advertises.
#
# Columns (per drive, family, policy):
#   E/opt     energy over the offline optimum's (1.000 = the physical limit)
#   E/kern    energy over the kernel defaults' on the same trace
#   stall/k   total time I/O waited for wake-ups over the kernel's ("-" when both are 0)
#   p99ms     99th percentile of the added latency per I/O, ms
#   wall+s    seed job only: added wall time of the whole job (closed loop), s
# Families: desktop, writeback, hyperexp, poisson, seed (closed loop), adversarial
# (closed loop; its gaps end just after each entry of the *row's* policy chain, the
# kernel's for `none`), regime. The summary lines give, per policy, the geometric
# mean of E/opt and E/kern over all rows, total stall over the kernel's total, the
# worst p99 and the mean seed-job wall time.

set -eu

bin=${NVME_APSTD:-}
dir=
policies="none kernel budget"
seed=1
duration=600
power=
quirks=yes

usage() {
        sed -n '/^#   bench/,/^#  *\[-s/p' "$0" | sed 's/^# *//' >&2
        exit 2
}

while getopts b:D:p:s:d:w:nh opt; do
        case $opt in
        b) bin=$OPTARG ;;
        D) dir=$OPTARG ;;
        p) policies=$OPTARG ;;
        s) seed=$OPTARG ;;
        d) duration=$OPTARG ;;
        w) power=$OPTARG ;;
        n) quirks=no ;;
        *) usage ;;
        esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$dir" ]; then
        for d in "$root/tests/data/idctrl"; do
                if [ -d "$d" ]; then
                        dir=$d
                        break
                fi
        done
fi
[ -n "$bin" ] || { echo "run.sh: give the nvme-apstd binary with -b or \$NVME_APSTD" >&2; usage; }
[ -x "$bin" ] || { echo "run.sh: $bin is not executable" >&2; exit 1; }
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
        echo "run.sh: no Identify Controller directory (use -D)" >&2
        exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

${CC:-cc} -O2 -std=gnu11 -D_GNU_SOURCE -o "$tmp/tracegen" "$root/bench/tracegen.c" -lm

families="desktop writeback hyperexp poisson seed adversarial regime"
for f in $families; do
        [ "$f" = adversarial ] && continue
        "$tmp/tracegen" -s "$seed" -d "$duration" "$f" >"$tmp/$f.txt"
done
printf '0 W 4096\n' >"$tmp/probe.txt"

# PCI vendor:device of the sample drives (data/idctrl/README.md names their quirks;
# the ids are the models' public ones), by file name prefix.
pci_id() {
        case $(basename "$1") in
        00-*) echo 8086:f1a5 ;;   # Intel 600p: NO_DEEPEST_PS
        05-*) echo 144d:a808 ;;   # Samsung 970 EVO Plus
        08-*) echo 2646:2263 ;;   # Kingston A2000: NO_DEEPEST_PS
        10-*) echo 144d:a80a ;;   # Samsung 980 PRO
        14-*) echo 15b7:5009 ;;   # WD SN550: NO_DEEPEST_PS
        28-*) echo 1d0f:8061 ;;   # Amazon EBS
        esac
}

sim() {
        # sim POLICY TRACE [extra args]: one JSON object on stdout
        p=$1
        t=$2
        shift 2
        [ -n "$power" ] && set -- --idle-power-w "$power" "$@"
        pci=
        [ "$quirks" = yes ] && pci=$(pci_id "$drive")
        [ -n "$pci" ] && set -- --pci "$pci" "$@"
        "$bin" simulate --id-ctrl "$drive" --trace "$t" --policy "$p" --json "$@"
}

# The think times after which POLICY's chain on this drive has just finished entering
# each state (µs, comma-separated): ITPT of each step plus the target's entry latency,
# accumulated. Empty when the policy programs no transition.
chain_times() {
        sim "$1" "$tmp/probe.txt" | awk '
                function hex(s,   v, i) {
                        s = tolower(substr(s, 3)); v = 0
                        for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
                        return v
                }
                /^\{"drive"/ {
                        n = split($0, st, "\\{\"ps\":")
                        for (i = 2; i <= n; i++) {
                                ps = st[i] + 0
                                match(st[i], /"enlat_us":[0-9]+/)
                                enlat[ps] = substr(st[i], RSTART + 11, RLENGTH - 11) + 0
                        }
                }
                /^"reprograms":/ {
                        if (!(0 in enlat)) { print "run.sh: no drive states in the JSON" > "/dev/stderr"; exit 1 }
                        if ($0 !~ /"apste":true/) exit
                        match($0, /"table":\[[^]]*\]/)
                        n = split(substr($0, RSTART + 9, RLENGTH - 10), e, ",")
                        for (i = 1; i <= n; i++) { gsub(/"/, "", e[i]); ent[i - 1] = hex(e[i]) }
                        s = 0; t = 0; out = ""
                        for (step = 0; step < 32; step++) {
                                itpt = int(ent[s] / 256) % 16777216
                                if (itpt == 0) break
                                tgt = int(ent[s] / 8) % 32
                                t += itpt * 1000 + enlat[tgt]
                                out = out (out == "" ? "" : ",") t
                                s = tgt
                        }
                        print out
                }'
}

# One line of the table from a simulate JSON: DRIVE FAMILY POLICY and the figures.
row() {
        awk -v drv="$1" -v fam="$2" -v pol="$3" '
                function num(line, key,   m) {
                        if (!match(line, "\"" key "\":-?[0-9.eE+-]+")) return 0
                        m = substr(line, RSTART, RLENGTH); sub(/^"[^"]*":/, "", m); return m + 0
                }
                /^\{"name":/ {
                        match($0, /"name":"[^"]*"/); name = substr($0, RSTART + 8, RLENGTH - 9)
                        E[name] = num($0, "energy_j"); S[name] = num($0, "stall_s")
                        P99[name] = num($0, "p99"); W[name] = num($0, "added_wall_s")
                }
                END {
                        if (!(pol in E) || !("kernel" in E) || !("optimum" in E)) { print "run.sh: missing rows" > "/dev/stderr"; exit 1 }
                        eo = E["optimum"] > 0 ? E[pol] / E["optimum"] : 1
                        ek = E["kernel"] > 0 ? E[pol] / E["kernel"] : 1
                        if (S["kernel"] > 0) sk = sprintf("%.3f", S[pol] / S["kernel"])
                        else sk = S[pol] > 0 ? "inf" : "-"
                        wall = fam == "seed" ? sprintf("%.3f", W[pol]) : "-"
                        printf "%s %s %s %.3f %.3f %s %.3f %s %.9g %.9g\n", drv, fam, pol, eo, ek, sk, P99[pol] * 1e3, wall, S[pol], S["kernel"]
                }'
}

start=$(date +%s)
for drive in "$dir"/*.bin; do
        name=$(basename "$drive" .bin | cut -d- -f1-2)
        for fam in $families; do
                for pol in $policies; do
                        extra=
                        trace=$tmp/$fam.txt
                        case $fam in
                        seed) extra=--closed-loop ;;
                        adversarial)
                                extra=--closed-loop
                                target=$pol
                                [ "$pol" = none ] && target=kernel
                                at=$(chain_times "$target")
                                trace=$tmp/adv-$target.txt
                                if [ -n "$at" ]; then
                                        "$tmp/tracegen" -s "$seed" -d "$duration" -a "$at" adversarial >"$trace"
                                else
                                        "$tmp/tracegen" -s "$seed" -d "$duration" adversarial >"$trace"
                                fi
                                ;;
                        esac
                        # shellcheck disable=SC2086
                        sim "$pol" "$trace" $extra | row "$name" "$fam" "$pol"
                done
        done
done >"$tmp/rows"
end=$(date +%s)

awk -v secs=$((end - start)) -v seed="$seed" -v dur="$duration" -v power="${power:-default}" -v quirks="$quirks" '
        BEGIN {
                printf "nvme-apstd policy benchmark: seed %s, %s s per trace, PS0 idle power %s, PCI quirks %s\n\n", seed, dur, power, quirks
                printf "%-11s %-11s %-7s %8s %8s %8s %9s %8s\n", "drive", "family", "policy", "E/opt", "E/kern", "stall/k", "p99ms", "wall+s"
        }
        {
                printf "%-11s %-11s %-7s %8s %8s %8s %9s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8
                n[$3]++; lo[$3] += log($4); lk[$3] += log($5); st[$3] += $9; sk[$3] += $10
                if ($7 > worst[$3]) worst[$3] = $7
                if ($2 == "seed") { wall[$3] += $8; nw[$3]++ }
                if (!($3 in seen)) { seen[$3] = 1; order[++np] = $3 }
        }
        END {
                printf "\nsummary over %d drives x families (geometric means of the ratios)\n", n[order[1]]
                printf "%-7s %10s %10s %14s %12s %16s\n", "policy", "E/opt", "E/kern", "stall/kernel", "worst p99ms", "seed wall+s mean"
                for (i = 1; i <= np; i++) {
                        p = order[i]
                        printf "%-7s %10.3f %10.3f %14s %12.3f %16.3f\n", p, exp(lo[p] / n[p]), exp(lk[p] / n[p]),
                               (sk[p] > 0 ? sprintf("%.3f", st[p] / sk[p]) : "-"), worst[p], (nw[p] ? wall[p] / nw[p] : 0)
                }
                printf "\n(%d s)\n", secs
        }' "$tmp/rows"
