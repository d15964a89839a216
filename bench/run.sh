#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The policy benchmark: every sample drive x every trace family x each policy,
# through `nvme-apstd simulate`, cold and warm, printed as one table. All figures are
# ratios against baselines computed in the same invocation (the offline optimum and
# the kernel's defaults), so they do not depend on the machine. Needs only a C
# compiler (for bench/tracegen.c), POSIX sh and awk; the pictures need
# matplotlib (Debian: python3-matplotlib) and are skipped, with a message,
# without it.
#
#   bench/run.sh -b BUILD/nvme-apstd [-D IDCTRL_DIR] [-p "none kernel budget adaptive adaptive-stat optimum hindsight"]
#                [-s SEED] [-d SECONDS] [-w IDLE_POWER_W] [-x EXLAT_SCALE] [-H SHARE] [-T POLICY] [-n] [-R]
#                [-F FAMILIES] [-N COPIES] [-j JOBS] [-X] [-r TRACE_DIR] [-o PICTURE_DIR] [-c CONFIG]
#
# The binary may also come from $NVME_APSTD. IDCTRL_DIR (NAME.bin, or NAME.json where there is
# no NAME.bin; file names as in tests/data/idctrl, NN-model) defaults to
# tests/data/idctrl. -x simulates every drive waking EXLAT_SCALE times slower than it
# advertises (--exlat-scale, every family; the policies still plan from the advertised
# latencies). -T names the policy whose targets are checked (default adaptive).
# hindsight (not in the default list) is the best static table knowing each trace, within
# the kernel's table's wake delay, and on the seed rows within what keeps the job under 1%
# added time where the kernel's table adds more (target 4 below holds every policy to it);
# -H gives it SHARE (0..1) of the kernel's wake delay instead, on every row.
# -F runs only the families listed (names as in the table; A and B stand for the halves
# below). -j runs JOBS drives at a time (default 2, this machine's cores). -X leaves out
# the second pass of target 5 (every family again on drives 3x slower to wake). -r takes
# the recorded families from TRACE_DIR instead of bench/traces (bench/traces/held-out: the
# recordings kept out of every choice, bench/README.md). -c gives every simulation the
# configuration file CONFIG (simulate --config: a stall_budget_pct the user set, say).
#
# Cold and warm. A policy that learns (adaptive, adaptive-stat) is scored twice on every
# trace: cold, knowing nothing (as a fresh install), and warm, the trace played COPIES
# times (-N, default 3) to the same policy and only the last copy scored (simulate
# --repeat; doc/simulator.md "Warm runs"); one invocation gives both, the first copy being
# the cold run. Three copies: the scored copy comes after twice the trace's span of
# evidence (two hours on the hour-long recordings, past the "within the first hour" the
# policy is held to), which is what the issue's outside measurement plays; more copies
# cost time and change nothing for a policy whose memory is shorter than two copies. The
# static tables (none, kernel, budget, optimum, hindsight) learn nothing: their warm
# figures are their cold ones, to the digit (tests/test-simulate.sh), so they are
# simulated once.
#
# Halves. The trace families are split into two halves, A and B, fixed before any result
# was looked at (bench/README.md): the generated families alternate in the order of
# $families below, the recorded ones in the alphabetical order of their names (the
# hour-long ones included). Constants are chosen on one half and reported on the other;
# the summary gives each half on its own.
#
# Pictures (bench/plot.py), in PICTURE_DIR (default build/bench-run):
#   tradeoff.svg  energy against total wake delay, both over the kernel's, one mark
#                 per policy and family (the per-family summary below, cold, and the
#                 learning policies warm as NAME-warm), plus each policy over all
#                 families; tradeoff.tsv holds the figures
#   timeline.svg  the first drive on the desktop trace: the power state over the
#                 first 20 s under none, kernel, budget and adaptive, I/Os marked
#                 (simulate --json --timeline)
#
# Each sample drive is simulated with its real PCI id (pci_id() below), so the
# kernel baseline and the daemon apply the kernel's quirks as they would on that
# drive (NO_DEEPEST_PS for 00, 06, 07, 08 and 14); -n simulates every drive with an
# unknown PCI id instead (no quirk applies). The optimum ignores quirks: it is the
# limit of the states the drive advertises.
#
# Columns (per drive, family, policy, run):
#   run       cold, or warm (printed for the learning policies only)
#   E/opt     energy over the offline optimum's (1.000 = the physical limit)
#   E/kern    energy over the kernel defaults' on the same trace
#   stall/k   total time I/O waited for wake-ups over the kernel's ("-" when both are 0)
#   p99ms     99th percentile of the added latency per I/O, ms
#   wall+s    seed job only: added wall time of the whole job (closed loop), s
# Families: desktop, writeback, hyperexp, poisson, seed (closed loop), seed-x3 (the
# same on a drive whose real exit latencies are 3x the advertised ones,
# --exlat-scale 3), adversarial (closed loop; its gaps end just after each entry of
# the *row's* policy chain, the kernel's for `none` and `optimum`), regime, and one
# real-NAME family per recorded trace in bench/traces/ (-R leaves them out). The
# policy `optimum` is the offline oracle's row. The summary lines give, cold and warm,
# per policy the geometric mean of E/opt and E/kern over all rows, total stall over the
# kernel's total, the worst p99 and the mean seed-job wall time; per family, each
# policy's total stall over the kernel's and its geometric mean E/kern; per half, the
# checked policy's means on each set; then the checked policy's targets (-T, default
# adaptive), each met or missed, all drives, PCI quirks as given:
#   1. recorded set (real-*), warm: mean energy (geometric mean of E/kern) <= 0.90x the
#      kernel's, total wake delay (stall) <= the kernel's
#   2. each one-hour recording (real-*-hour), warm: at least half the saving of the best
#      static table chosen with hindsight (simulate --policy hindsight, run here on those
#      traces whether or not it is in -p), on every drive where that saving is above 5%
#   3. generated set: mean energy <= 0.75x cold and <= 0.70x warm; total stall <= the
#      kernel's, cold and warm (the means without the seed rows exempt under 5 follow,
#      for the reading that the exemption covers the mean too)
#   4. the seed job (seed, seed-x3) under 1% added wall time on every drive, cold
#   5. no row, cold or warm, more than 2% worse than the kernel on energy or on stall (a
#      seed row that spends more energy than the kernel to keep the job under 1% is
#      exempt from the energy bound); and on drives that wake 3x slower than they
#      advertise (every family again with --exlat-scale 3, cold), none more than 2% worse
#      on stall. A row over on stall also says its excess in mean wake-ups of the kernel's
#      table on that row, beside what 2% is in the same unit ("+22 ms: 1.8 wake-ups, 2% 0.6":
#      on a quiet row 2% is less than one wake-up)
#   6. the seed job after each idle or quiet recording of TRACE_DIR, played in a row to one
#      policy, under 1% added wall time on every drive, as advertised and 3x slower to wake
#      (the checked policy when it learns; not with -R)
#   7. a day: the recordings of TRACE_DIR for a quiet hour, a package install and a build (or an
#      edit loop), then the seed job and two minutes of cache writes, played once in a row to one
#      policy (not with -R): the day's energy at most the best static table's for the whole day,
#      its wake delay at most the kernel's; the seed job's window under 1% (as advertised and 3x
#      slower); each workload's first minute judged by the rules ("judged by the rules" below)

set -eu

bin=${NVME_APSTD:-}
dir=
policies="none kernel budget adaptive adaptive-stat optimum"
real=yes
seed=1
duration=600
power=
quirks=yes
root=$(cd "$(dirname "$0")/.." && pwd)
pictures=$root/build/bench-run
xscale=
hshare=
checked=adaptive
only=
copies=3
jobs=2
x3pass=yes
traces=$root/bench/traces
config=

usage() {
        sed -n '/^#   bench/,/^#  *\[-F/p' "$0" | sed 's/^# *//' >&2
        exit 2
}

while getopts b:D:p:s:d:w:x:H:T:F:N:j:nRXr:o:c:h opt; do
        case $opt in
        b) bin=$OPTARG ;;
        D) dir=$OPTARG ;;
        p) policies=$OPTARG ;;
        s) seed=$OPTARG ;;
        d) duration=$OPTARG ;;
        w) power=$OPTARG ;;
        x) xscale=$OPTARG ;;
        H) hshare=$OPTARG ;;
        T) checked=$OPTARG ;;
        F) only=$OPTARG ;;
        N) copies=$OPTARG ;;
        j) jobs=$OPTARG ;;
        n) quirks=no ;;
        R) real=no ;;
        X) x3pass=no ;;
        r) traces=$OPTARG ;;
        o) pictures=$OPTARG ;;
        c) config=$OPTARG ;;
        *) usage ;;
        esac
done

if [ -z "$dir" ] && [ -d "$root/tests/data/idctrl" ]; then
        dir=$root/tests/data/idctrl
fi
[ -n "$bin" ] || { echo "run.sh: give the nvme-apstd binary with -b or \$NVME_APSTD" >&2; usage; }
[ -x "$bin" ] || { echo "run.sh: $bin is not executable" >&2; exit 1; }
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
        echo "run.sh: no Identify Controller directory (use -D)" >&2
        exit 1
fi
# The drives: every NAME.bin in IDCTRL_DIR (`nvme id-ctrl -b`), and every NAME.json
# (`nvme id-ctrl -o json`) with no NAME.bin beside it, as some drives' data is published
# only that way; one file name a line, in the order of their names (listed once, in $drives).
drive_files() {
        for f in "$dir"/*.bin "$dir"/*.json; do
                [ -f "$f" ] || continue
                case $f in *.json) [ -f "${f%.json}.bin" ] && continue ;; esac
                echo "$f"
        done | LC_ALL=C sort
}
drive_stem() {
        b=$(basename "$1")
        echo "${b%.*}"
}
drives=$(drive_files)
[ -n "$drives" ] || { echo "run.sh: no Identify Controller data (*.bin, *.json) in $dir" >&2; exit 1; }
case $copies in ''|*[!0-9]*|0) echo "run.sh: -N: expected a number of copies >= 1, got '$copies'" >&2; exit 2 ;; esac
case $jobs in ''|*[!0-9]*|0) echo "run.sh: -j: expected a number of jobs >= 1, got '$jobs'" >&2; exit 2 ;; esac
[ -n "$xscale" ] && x3pass=no   # the whole run is on slow drives already

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

${CC:-cc} -O2 -std=gnu11 -D_GNU_SOURCE -o "$tmp/tracegen" "$root/bench/tracegen.c" -lm

# The halves (bench/README.md): chosen before any result was seen, never to be changed
# to suit one. A recorded family added later belongs to neither until it is written here,
# before its first result: to the half with fewer hour-long recordings (A on a tie).
half_a="desktop hyperexp seed adversarial real-apt real-build real-editor-hour real-idle real-quiet real-guest-idle-hour"
half_b="writeback poisson seed-x3 regime real-browser-hour real-desktop real-git real-sqlite"

families="desktop writeback hyperexp poisson seed seed-x3 adversarial regime"
if [ "$real" = yes ]; then
        for t in "$traces"/*.txt.gz; do
                [ -f "$t" ] || continue
                families="$families real-$(basename "$t" .txt.gz)"
        done
fi
# -F: keep the families named (A and B: a half's, those of it that exist); a name that is
# no family is an error.
if [ -n "$only" ]; then
        want=
        for f in $only; do
                case $f in
                A) want="$want $half_a" ;;
                B) want="$want $half_b" ;;
                *)
                        case " $families " in
                        *" $f "*) want="$want $f" ;;
                        *) echo "run.sh: -F: no family '$f' (families: $families)" >&2; exit 2 ;;
                        esac
                        ;;
                esac
        done
        kept=
        for f in $families; do
                case " $want " in *" $f "*) kept="$kept $f" ;; esac
        done
        families=${kept# }
        [ -n "$families" ] || { echo "run.sh: -F '$only': no family left" >&2; exit 2; }
fi
for f in $families; do
        case $f in
        adversarial) ;;
        seed-x3) "$tmp/tracegen" -s "$seed" -d "$duration" seed >"$tmp/$f.txt" ;;
        real-*) gzip -dc "$traces/${f#real-}.txt.gz" >"$tmp/$f.txt" ;;
        *) "$tmp/tracegen" -s "$seed" -d "$duration" "$f" >"$tmp/$f.txt" ;;
        esac
done
printf '0 W 4096\n' >"$tmp/probe.txt"

# PCI vendor:device of the sample drives, by file name prefix (data/idctrl/README.md names
# their quirks). Identify gives only the vendor ids (vid, ssvid), so each device id is the
# controller's public one: from pci.ids (Debian package pci.ids, /usr/share/misc/pci.ids)
# and the kernel's nvme_id_table[] (drivers/nvme/host/pci.c), as each line says. Where the
# device id is not known the vendor's id is given with device 0000, which no quirk names:
# the kernel then treats the drive as any unquirked one, as it would the real id unless
# the real id has a quirk this list does not know of.
pci_id() {
        case $(basename "$1") in
        00-*) echo 8086:f1a5 ;;   # Intel 600p (pci.ids "SSD 600P Series"): NO_DEEPEST_PS
        02-*) echo 8086:0953 ;;   # Intel 750 (pci.ids "PCIe Data Center SSD", the 750/P3x00 id): no APST quirk
        05-*) echo 144d:a808 ;;   # Samsung 970 EVO Plus (pci.ids NVMe SSD Controller SM981/PM981/PM983)
        06-*) echo 1e49:0041 ;;   # ZHITAI TiPro7000 (pci.ids, pci.c): NO_DEEPEST_PS
        # ZHITAI TiPlus5000: pci.ids and pci.c name 1e49:0021 "TiPro5000"; the TiPlus5000
        # is reported under the same id (the 5000 line's one): NO_DEEPEST_PS
        07-*) echo 1e49:0021 ;;
        08-*) echo 2646:2263 ;;   # Kingston A2000 (pci.ids, pci.c): NO_DEEPEST_PS
        # T-FORCE TM8FPL500G and Patriot P310: Phison DRAM-less controllers (the firmware
        # string's xxFM90.1 form is Phison's); which one is not certain: 1987:5013 (pci.ids
        # "PS5013 E13 NVMe Controller") is the likeliest. No APST quirk names a Phison id.
        09-*) echo 1987:5013 ;;
        10-*) echo 144d:a80a ;;   # Samsung 980 PRO (pci.ids NVMe SSD Controller PM9A1/PM9A3/980PRO)
        14-*) echo 15b7:5009 ;;   # WD SN550 (pci.c): NO_DEEPEST_PS
        16-*) echo 2646:5008 ;;   # Kingston OEM SNS8154P3, Phison E8 (pci.ids "U-SNS8154P3 NVMe SSD"): no quirk
        18-*) echo 1987:5013 ;;   # Patriot P310: see 09
        # Intel 670p: 8086:f1aa in pci.ids releases after 2023 ("SSD 670p Series"); the
        # Debian 12 copy stops at f1a8 (660p). No quirk names it.
        20-*) echo 8086:f1aa ;;
        21-*) echo 1c5c:1327 ;;   # SK hynix BC501 (pci.ids "BC501 NVMe Solid State Drive"): no quirk
        23-*) echo c0a9:0000 ;;   # Crucial E100: controller and device id not known (pci.ids has P1/P2/P5 Plus only)
        26-*) echo 1179:0113 ;;   # Toshiba BG3 (pci.ids "BG3 NVMe SSD Controller"); its model has no quirk
        27-*) echo 1e0f:0000 ;;   # KIOXIA BG6: device id not known (pci.ids has BG4 0001, not BG5/BG6)
        28-*) echo 1d0f:8061 ;;   # Amazon EBS (pci.ids "NVMe EBS Controller")
        esac
}

sim() {
        # sim POLICY TRACE [extra args]: one JSON object on stdout
        p=$1
        t=$2
        shift 2
        [ -n "$power" ] && set -- --idle-power-w "$power" "$@"
        [ -n "$config" ] && set -- --config "$config" "$@"
        [ -n "$xscale" ] && set -- --exlat-scale "$xscale" "$@"
        [ "$p" = hindsight ] && [ -n "$hshare" ] && set -- --hindsight-share "$hshare" "$@"
        pci=
        [ "$quirks" = yes ] && pci=$(pci_id "$drive")
        [ -n "$pci" ] && set -- --pci "$pci" "$@"
        [ "$p" = optimum ] && p=kernel   # every run reports the optimum
        # adaptive watches with the exact (eBPF) source, adaptive-stat with /sys/block/X/stat
        if [ "$p" = adaptive-stat ]; then
                p=adaptive
                set -- --watch-source stat "$@"
        fi
        "$bin" simulate --id-ctrl "$drive" --trace "$t" --policy "$p" --json "$@"
}

# The awk functions every parser of simulate's JSON shares, put before its program: num(), the
# number after "KEY": in a line; hex(), a "0x..." table entry; drive_exlat(), each state's exit
# latency (s, --exlat-scale applied) from the "drive" line into X; table_deepest(), the deepest
# state the first "table" of a line enters from ps0 (-1 without a table).
json_awk='
        function num(line, key,   m) {
                if (!match(line, "\"" key "\":-?[0-9.eE+-]+")) return 0
                m = substr(line, RSTART, RLENGTH); sub(/^"[^"]*":/, "", m); return m + 0
        }
        function hex(s,   v, i) {
                s = tolower(substr(s, 3)); v = 0
                for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
                return v
        }
        function drive_exlat(line, X,   n, st, i) {
                n = split(line, st, "\\{\"ps\":")
                for (i = 2; i <= n; i++)
                        if (match(st[i], /"exlat_us":[0-9]+/)) X[st[i] + 0] = substr(st[i], RSTART + 11, RLENGTH - 11) / 1e6
        }
        function table_deepest(line,   n, t, e, i, s) {
                if (!match(line, /"table":\[[^]]*\]/)) return -1
                n = split(substr(line, RSTART + 9, RLENGTH - 10), t, ",")
                for (i = 1; i <= n; i++) { gsub(/"/, "", t[i]); e[i - 1] = hex(t[i]) }
                s = 0
                for (i = 0; i < 32; i++) {
                        if (int(e[s] / 256) % 16777216 == 0 || int(e[s] / 8) % 32 == s) break
                        s = int(e[s] / 8) % 32
                }
                return s
        }
'

# The think times after which POLICY's chain on this drive has just finished entering
# each state (µs, comma-separated): ITPT of each step plus the target's entry latency,
# accumulated. Empty when the policy programs no transition.
chain_times() {
        sim "$1" "$tmp/probe.txt" | awk "$json_awk"'
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


# The share of the kernel's table's wake delay that keeps the seed job (a simulate JSON on stdin,
# closed loop: every wake-up delays the rest of the job) under 1% added time, for hindsight on
# the seed rows: target 4 holds every policy to that, and the best static table is no reference
# for a policy that keeps it unless it is held to it too. 1 where the kernel's table is under it.
seed_share() {
        awk "$json_awk"'
                /^\{"name":"kernel"/ { w = num($0, "added_wall_s"); job = num($0, "duration_s") - w }
                END {
                        s = (w > 0 && job > 0) ? 0.01 * job / w : 1
                        printf "%.6f\n", s < 1 ? s : 1
                }'
}

# One line of the table from a simulate JSON on stdin: DRIVE FAMILY POLICY RUN, then the
# figures of the JSON's row KEY against its kernel and optimum rows.
row() {
        awk -v drv="$1" -v fam="$2" -v pol="$3" -v run="$4" -v key="$5" "$json_awk"'
                /^\{"drive"/ { drive_exlat($0, X) }
                /^\{"name":/ {
                        match($0, /"name":"[^"]*"/); name = substr($0, RSTART + 8, RLENGTH - 9)
                        E[name] = num($0, "energy_j"); S[name] = num($0, "stall_s")
                        P99[name] = num($0, "p99"); W[name] = num($0, "added_wall_s"); D[name] = num($0, "duration_s")
                        N[name] = num($0, "wakeups_total")
                        # the kernel table: the exit latency of the deepest state it enters
                        if (name == "kernel" && (d = table_deepest($0)) >= 0) KX = d in X ? X[d] : 0
                }
                END {
                        if (!(key in E) || !("kernel" in E) || !("optimum" in E)) { print "run.sh: missing rows" > "/dev/stderr"; exit 1 }
                        eo = E["optimum"] > 0 ? E[key] / E["optimum"] : 1
                        ek = E["kernel"] > 0 ? E[key] / E["kernel"] : 1
                        if (S["kernel"] > 0) sk = sprintf("%.3f", S[key] / S["kernel"])
                        else sk = S[key] > 0 ? "inf" : "-"
                        wall = fam ~ /^seed/ ? sprintf("%.3f", W[key]) : "-"
                        # job time without power management, for the added share of the seed job
                        job = D[key] - W[key]
                        printf "%s %s %s %s %.3f %.3f %s %.3f %s %.9g %.9g %.9g %.9g %.9g %d %.9g %.9g\n", drv, fam, pol, run, eo, ek, sk, P99[key] * 1e3, wall, S[key], S["kernel"], E[key], E["kernel"], (job > 0 ? W[key] / job : 0), N["kernel"], D["kernel"], KX + 0
                }'
}

# One line of target 6 from a simulate JSON of a two-trace sequence on stdin: DRIVE QUIET SCALE,
# the quiet trace's energy over the kernel's table's, the seed job's added share of its run
# time, and the kernel's table's.
seq_row() {
        awk -v drv="$1" -v fam="$2" -v xs="$3" -v key="$4" "$json_awk"'
                /^\{"name":/ {
                        match($0, /"name":"[^"]*"/); name = substr($0, RSTART + 8, RLENGTH - 9)
                        if (!match($0, /"segments":\[.*\]/)) next
                        n = split(substr($0, RSTART, RLENGTH), seg, /\},\{"span_s"/)
                        if (n < 2) next
                        E[name] = num(seg[1], "energy_j"); W[name] = num(seg[2], "added_wall_s")
                        J[name] = num("\"span_s\"" seg[2], "span_s") - W[name]
                }
                END {
                        if (!(key in E) || !("kernel" in E)) { print "run.sh: missing sequence rows" > "/dev/stderr"; exit 1 }
                        printf "%s %s %s %.4f %.6f %.6f\n", drv, fam, xs, (E["kernel"] > 0 ? E[key] / E["kernel"] : 1),
                               (J[key] > 0 ? W[key] / J[key] : 0), (J["kernel"] > 0 ? W["kernel"] / J["kernel"] : 0)
                }'
}

# One line of target 7 from simulate JSONs of the day (stdin; @5: the same with hindsight):
# DRIVE SCALE, the day's energy over the kernel's table's, its wake delay and the kernel's, the
# best static table's energy over the kernel's and its wake delay, the seed job's added share
# of its run time (and the kernel's), the exit latency of the kernel table's deepest state (s),
# then per segment: NAME, its first minute's energy over the kernel's, its wake delay and the
# kernel's, and the minute's span.
day_row() {
        awk -v drv="$1" -v xs="$2" -v key="$3" -v names="$4" -v href="$5" -v seedseg="$day_seed" "$json_awk"'
                function take(line,   name, n, seg, i, w, d) {
                        match(line, /"name":"[^"]*"/); name = substr(line, RSTART + 8, RLENGTH - 9)
                        E[name] = num(line, "energy_j"); S[name] = num(line, "stall_s")
                        if (name == "kernel" && (d = table_deepest(line)) >= 0) KX = d in X ? X[d] : 0
                        if (!match(line, /"segments":\[.*\]/)) return
                        n = split(substr(line, RSTART, RLENGTH), seg, /\},\{"span_s"/)
                        for (i = 1; i <= n; i++) {
                                if (i > 1) seg[i] = "\"span_s\"" seg[i]
                                w = match(seg[i], /"window":\{[^}]*\}/) ? substr(seg[i], RSTART, RLENGTH) : ""
                                WE[name, i] = num(w, "energy_j"); WS[name, i] = num(w, "stall_s"); WD[name, i] = num(w, "span_s")
                                if (i == seedseg) { SA[name] = num(seg[i], "added_wall_s"); SD[name] = num(seg[i], "span_s") }
                        }
                        NS = n
                }
                /^\{"drive"/ { drive_exlat($0, X) }
                /^\{"name":/ { take($0) }
                END {
                        while ((getline line < href) > 0)
                                if (line ~ /^\{"name":"hindsight"/) { HE = num(line, "energy_j"); HS = num(line, "stall_s") }
                        if (!(key in E) || !("kernel" in E) || HE == "") { print "run.sh: missing day rows" > "/dev/stderr"; exit 1 }
                        k = split(names, nm, " ")
                        if (k != NS) { print "run.sh: the day has " NS " segments, not " k > "/dev/stderr"; exit 1 }
                        printf "%s %s %.6f %.9g %.9g %.6f %.9g %.6f %.6f %.9g", drv, xs, E[key] / E["kernel"], S[key], S["kernel"], HE / E["kernel"], HS,
                               (SD[key] - SA[key] > 0 ? SA[key] / (SD[key] - SA[key]) : 0), (SD["kernel"] - SA["kernel"] > 0 ? SA["kernel"] / (SD["kernel"] - SA["kernel"]) : 0), KX + 0
                        for (i = 1; i <= NS; i++)
                                printf " %s %.6f %.9g %.9g %.9g", nm[i], (WE["kernel", i] > 0 ? WE[key, i] / WE["kernel", i] : 1), WS[key, i], WS["kernel", i], WD["kernel", i]
                        printf "\n"
                }'
}

# A drive's name in the table: its file's number and first word (two when the first is
# short: 09-t-force, 21-sk-hynix), at most 12 characters.
drive_name() {
        drive_stem "$1" | awk -F- '{ n = $1 "-" $2; if (length($2) < 3 && NF > 2) n = n "-" $3; print substr(n, 1, 12) }'
}

learner() { case $1 in adaptive|adaptive-stat) return 0 ;; esac; return 1; }
baseline() { case $1 in none|kernel|optimum) return 0 ;; esac; return 1; }
# the row of a simulate JSON that is POLICY's (adaptive-stat runs as adaptive)
key_of() { if [ "$1" = adaptive-stat ]; then echo adaptive; else echo "$1"; fi; }

# The trace POLICY runs in family FAM on this drive: adversarial ones are made for its
# chain (the kernel's for none and optimum), once per drive and chain.
fam_trace() {
        if [ "$1" != adversarial ]; then
                echo "$tmp/$1.txt"
                return
        fi
        target=$2
        case $target in none|optimum) target=kernel ;; esac
        out=$wd/adv-$target.txt
        if [ ! -f "$out" ]; then
                at=$(chain_times "$target")
                if [ -n "$at" ]; then
                        "$tmp/tracegen" -s "$seed" -d "$duration" -a "$at" adversarial >"$out"
                else
                        "$tmp/tracegen" -s "$seed" -d "$duration" adversarial >"$out"
                fi
        fi
        echo "$out"
}

want_base=no
for pol in $policies; do baseline "$pol" && want_base=yes; done
case " $policies " in *" hindsight "*) want_hindsight=no ;; *) want_hindsight=yes ;; esac

# Every row of one drive on stdout (RUN cold, warm, ref or x3): each family's policies
# cold and warm; none, kernel and optimum from another policy's run on the same trace
# (every simulate run reports them); the hindsight reference of the hour-long recordings
# (target 2) when hindsight is not in -p; the checked policy on slow drives (target 5).
drive_rows() {
        drive=$1
        name=$(drive_name "$drive")
        wd=$tmp/work-$name
        mkdir -p "$wd"
        for fam in $families; do
                extra=
                case $fam in
                seed|adversarial) extra=--closed-loop ;;
                seed-x3) extra="--closed-loop --exlat-scale 3" ;;
                esac
                base=
                for pol in $policies; do
                        baseline "$pol" && continue
                        rep=
                        if learner "$pol" && [ "$copies" -gt 1 ]; then rep="--repeat $copies"; fi
                        if [ "$pol" = hindsight ] && [ -z "$hshare" ]; then
                                case $fam in
                                seed*)
                                        # shellcheck disable=SC2086
                                        rep="--hindsight-share $(sim kernel "$(fam_trace "$fam" kernel)" $extra | seed_share)"
                                        ;;
                                esac
                        fi
                        # shellcheck disable=SC2086
                        sim "$pol" "$(fam_trace "$fam" "$pol")" $extra $rep >"$wd/$pol.json"
                        if [ -z "$base" ] && [ "$fam" != adversarial ]; then base=$wd/$pol.json; fi
                done
                if [ "$want_base" = yes ] && [ -z "$base" ]; then
                        # shellcheck disable=SC2086
                        sim kernel "$(fam_trace "$fam" kernel)" $extra >"$wd/base.json"
                        base=$wd/base.json
                fi
                for pol in $policies; do
                        json=$wd/$pol.json
                        baseline "$pol" && json=$base
                        k=$(key_of "$pol")
                        if learner "$pol" && [ "$copies" -gt 1 ]; then
                                row "$name" "$fam" "$pol" cold "$k-copy1" <"$json"
                        else
                                row "$name" "$fam" "$pol" cold "$k" <"$json"
                        fi
                        row "$name" "$fam" "$pol" warm "$k" <"$json"
                done
                case $fam in
                real-*-hour)
                        if [ "$want_hindsight" = yes ]; then
                                sim hindsight "$tmp/$fam.txt" >"$wd/ref.json"
                                row "$name" "$fam" hindsight ref hindsight <"$wd/ref.json"
                        fi
                        ;;
                esac
                if [ "$x3pass" = yes ]; then
                        # shellcheck disable=SC2086
                        sim "$checked" "$(fam_trace "$fam" "$checked")" $extra --exlat-scale 3 >"$wd/x3.json"
                        row "$name" "$fam" "$checked" x3 "$(key_of "$checked")" <"$wd/x3.json"
                fi
        done
        # Target 6: each quiet recording, then the seed job, played in a row to one policy (simulate
        # with two --trace), on the drive as it says and 3x slower to wake.
        for fam in $seq_quiet; do
                for xs in 1 3; do
                        sim "$checked" "$tmp/$fam.txt" --trace "$tmp/seq-seed.txt" --closed-loop=2 --exlat-scale "$xs" \
                                >"$wd/seq.json"
                        seq_row "$name" "$fam" "x$xs" "$(key_of "$checked")" <"$wd/seq.json" >>"$tmp/seq-$(drive_stem "$drive")"
                done
        done
        # Target 7: the day, as the drive says and 3x slower to wake; the best static table for
        # the whole day beside it.
        if [ -n "$day_args" ]; then
                for xs in 1 3; do
                        # shellcheck disable=SC2086
                        sim "$checked" "$day_first" $day_args --closed-loop="$day_seed" --exlat-scale "$xs" >"$wd/day.json"
                        # shellcheck disable=SC2086
                        sim hindsight "$day_first" $day_args --closed-loop="$day_seed" --exlat-scale "$xs" >"$wd/day-h.json"
                        day_row "$name" "x$xs" "$(key_of "$checked")" "$day_names" "$wd/day-h.json" <"$wd/day.json" \
                                >>"$tmp/day-$(drive_stem "$drive")"
                done
        fi
}

# Target 6's quiet recordings: those in TRACE_DIR named for an idle or a quiet machine; the
# checked policy must learn for the sequence to say anything.
seq_quiet=
if [ "$real" = yes ] && learner "$checked"; then
        for t in "$traces"/*.txt.gz; do
                case $(basename "$t") in *idle*|*quiet*) ;; *) continue ;; esac
                f=real-$(basename "$t" .txt.gz)
                [ -f "$tmp/$f.txt" ] || gzip -dc "$t" >"$tmp/$f.txt"
                seq_quiet="$seq_quiet $f"
        done
        "$tmp/tracegen" -s "$seed" -d "$duration" seed >"$tmp/seq-seed.txt"
fi

# Target 7's day: workloads one after another, played once to one policy that learns through
# them: a quiet spell (the first quiet-hour or idle-hour recording of TRACE_DIR), a package
# install (*apt*), a build or an edit loop (*build*, else *edit-loop*), the seed job (closed
# loop: each write waits for the one before) and two minutes of cache writes (generated
# writeback). Each segment that TRACE_DIR lacks is left out; the seed job is always there.
day_args=
day_names=
day_seed=0
if [ "$real" = yes ] && learner "$checked"; then
        n=0
        for pat in '*quiet-hour*' '*idle-hour*' '*apt*' '*build*' '*edit-loop*'; do
                case $pat in '*idle-hour*') [ -n "$day_names" ] && continue ;; esac
                case $pat in '*edit-loop*') case $day_names in *build*) continue ;; esac ;; esac
                for t in "$traces"/$pat.txt.gz; do
                        [ -f "$t" ] || continue
                        f=real-$(basename "$t" .txt.gz)
                        [ -f "$tmp/$f.txt" ] || gzip -dc "$t" >"$tmp/$f.txt"
                        day_args="$day_args --trace $tmp/$f.txt"
                        day_names="$day_names $f"
                        n=$((n + 1))
                        break
                done
        done
        "$tmp/tracegen" -s "$seed" -d "$duration" seed >"$tmp/day-seed.txt"
        "$tmp/tracegen" -s "$seed" -d 120 writeback >"$tmp/day-writeback.txt"
        day_seed=$((n + 1))
        day_args="$day_args --trace $tmp/day-seed.txt --trace $tmp/day-writeback.txt"
        day_names="$day_names seed writeback"
        # the first segment is sim's trace, the others follow it
        day_first=${day_args# --trace }
        day_first=${day_first%% *}
        day_args=${day_args#" --trace $day_first"}
fi

# The drives, JOBS at a time (a slot is a line in a FIFO); each writes its own rows file,
# concatenated in the drives' order afterwards, so the table does not depend on -j.
start=$(date +%s)
mkfifo "$tmp/slots"
exec 3<>"$tmp/slots"
i=0
while [ "$i" -lt "$jobs" ]; do
        echo >&3
        i=$((i + 1))
done
for drive in $drives; do
        read -r slot <&3
        (
                set +e
                out=$tmp/rows-$(drive_stem "$drive")
                # not `if ( ... )`: set -e is ignored inside a condition, and a failed
                # simulation must stop the drive's rows
                (
                        set -e
                        drive_rows "$drive"
                ) >"$out.part" 2>"$out.err"
                # shellcheck disable=SC2181
                [ $? -eq 0 ] && mv "$out.part" "$out"
                echo "$slot" >&3
        ) &
done
wait
exec 3>&-
for drive in $drives; do
        f=$tmp/rows-$(drive_stem "$drive")
        if [ ! -f "$f" ]; then
                echo "run.sh: $(basename "$drive"): a simulation failed:" >&2
                cat "$f.err" >&2
                exit 1
        fi
        cat "$f"
done >"$tmp/rows"
end=$(date +%s)

# The stall budget the rows are judged by: the configuration's (-c), else the default 1%.
stall_budget=0.01
if [ -n "$config" ]; then
        b=$(sed -n 's/^[[:space:]]*stall_budget_pct[[:space:]]*=[[:space:]]*\([0-9.]*\).*/\1/p' "$config" | tail -1)
        [ -n "$b" ] && stall_budget=$(awk -v b="$b" 'BEGIN { print b / 100 }')
fi

awk -v secs=$((end - start)) -v seed="$seed" -v dur="$duration" -v power="${power:-default}" -v quirks="$quirks" \
    -v xscale="${xscale:-1}" -v tp="$checked" -v copies="$copies" -v ha="$half_a" -v hb="$half_b" \
    -v x3pass="$x3pass" -v ndrives="$(echo "$drives" | wc -l)" -v budget="$stall_budget" '
        BEGIN {
                printf "nvme-apstd policy benchmark: seed %s, %s s per trace, PS0 idle power %s, PCI quirks %s, exit latencies x%s, %d drives, warm = the last of %s copies\n\n", seed, dur, power, quirks, xscale, ndrives, copies
                printf "%-12s %-17s %-13s %-4s %8s %8s %8s %9s %8s\n", "drive", "family", "policy", "run", "E/opt", "E/kern", "stall/k", "p99ms", "wall+s"
                learner["adaptive"] = learner["adaptive-stat"] = 1
                n = split(ha, x, " "); for (i = 1; i <= n; i++) half[x[i]] = "A"
                n = split(hb, x, " "); for (i = 1; i <= n; i++) half[x[i]] = "B"
        }
        {
                if ($4 == "cold" || ($4 == "warm" && ($3 in learner)))
                        printf "%-12s %-17s %-13s %-4s %8s %8s %8s %9s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9
                nr++; D[nr] = $1; F[nr] = $2; P[nr] = $3; R[nr] = $4; EO[nr] = $5; EK[nr] = $6; P99[nr] = $8
                W[nr] = $9; S[nr] = $10; SK[nr] = $11; WP[nr] = $14; NK[nr] = $15; DK[nr] = $16; KX[nr] = $17
                if ($4 == "cold" && !($3 in seen)) { seen[$3] = 1; order[++np] = $3 }
                if (!($2 in seenf)) { seenf[$2] = 1; fo[++nf] = $2 }
        }
        END {
                summary("cold", "cold: each policy knowing nothing")
                summary("warm", "warm: the last of " copies " copies scored; the static tables learn nothing, so theirs are their cold figures")
                families()
                if (tp in seen) { halves(tp); targets(tp); judged(tp) }
                printf "\n(%d s)\n", secs
        }
        function summary(run, what,   i, p, n, lo, lk, st, sk, worst, wall, nw) {
                for (i = 1; i <= nr; i++) {
                        if (R[i] != run) continue
                        p = P[i]; n[p]++; lo[p] += log(EO[i]); lk[p] += log(EK[i]); st[p] += S[i]; sk[p] += SK[i]
                        if (P99[i] > worst[p]) worst[p] = P99[i]
                        if (F[i] == "seed") { wall[p] += W[i]; nw[p]++ }
                }
                printf "\nsummary, %s (over %d drives x families; geometric means of the ratios)\n", what, n[order[1]]
                printf "%-13s %10s %10s %14s %12s %16s\n", "policy", "E/opt", "E/kern", "stall/kernel", "worst p99ms", "seed wall+s mean"
                for (i = 1; i <= np; i++) {
                        p = order[i]
                        printf "%-13s %10.3f %10.3f %14s %12.3f %16.3f\n", p, exp(lo[p] / n[p]), exp(lk[p] / n[p]),
                               (sk[p] > 0 ? sprintf("%.3f", st[p] / sk[p]) : "-"), worst[p], (nw[p] ? wall[p] / nw[p] : 0)
                }
        }
        # total stall over the kernel total ("-" when neither waits, "inf" when only the policy does)
        function sratio(s, k) { return k > 0 ? sprintf("%.3f", s / k) : (s > 0 ? "inf" : "-") }
        # Per family over the drives, each policy cold and the learning ones warm too: total
        # stall over the kernel total, and the geometric mean of E/kern.
        function families(   i, c, nc, col, cname, f, ss, sk, le, ne, line) {
                for (i = 1; i <= np; i++) { col[++nc] = order[i] SUBSEP "cold"; cname[nc] = order[i] }
                for (i = 1; i <= np; i++)
                        if (order[i] in learner) { col[++nc] = order[i] SUBSEP "warm"; cname[nc] = order[i] "-warm" }
                for (i = 1; i <= nr; i++) {
                        c = F[i] SUBSEP P[i] SUBSEP R[i]
                        ss[c] += S[i]; sk[c] += SK[i]; le[c] += log(EK[i]); ne[c]++
                }
                printf "\nper family over the drives: total stall / kernel total stall, geometric mean E/kern\n"
                line = sprintf("%-17s", "family")
                for (i = 1; i <= nc; i++) line = line sprintf(" %19s", cname[i])
                print line
                for (f = 1; f <= nf; f++) {
                        line = sprintf("%-17s", fo[f])
                        for (i = 1; i <= nc; i++) {
                                c = fo[f] SUBSEP col[i]
                                line = line sprintf(" %8s E %8.3f", sratio(ss[c], sk[c]), (ne[c] ? exp(le[c] / ne[c]) : 0))
                        }
                        print line
                }
        }
        function setof(f) { return f ~ /^real-/ ? "recorded" : "generated" }
        # Row i: its stall over the kernel total (1 when neither waits).
        function stallk(i) { return (SK[i] > 0) ? S[i] / SK[i] : (S[i] > 0 ? 1e9 : 1) }
        # A seed row that spends more energy than the kernel to keep the job under 1%, at no
        # more wake delay: exempt from the energy bound.
        function exempt(i) { return F[i] ~ /^seed/ && EK[i] > 1.02 && WP[i] < 0.01 && stallk(i) <= 1.02 }
        function over(i) { return stallk(i) > 1.02 || (EK[i] > 1.02 && !exempt(i)) }
        # A row over on wake delay: its excess in mean wake-ups of the kernel table on that row,
        # beside what 2% is in the same unit (on a quiet row 2% is less than one wake-up).
        function excess(i) {
                if (stallk(i) <= 1.02 || SK[i] <= 0 || NK[i] <= 0) return ""
                return sprintf(", +%.0f ms: %.1f wake-ups, 2%% %.1f", 1e3 * (S[i] - SK[i]), (S[i] - SK[i]) * NK[i] / SK[i], 0.02 * NK[i])
        }
        # Each half on its own, the checked policy: the figures of targets 1 and 3, and the rows over 2%.
        function halves(p,   i, h, s, c, le, ne, ss, sk, ov, hs, sets, k, line) {
                for (i = 1; i <= nr; i++) {
                        if (P[i] != p || (R[i] != "cold" && R[i] != "warm")) continue
                        h = (F[i] in half) ? half[F[i]] : "-"
                        c = h SUBSEP setof(F[i]) SUBSEP R[i]
                        le[c] += log(EK[i]); ne[c]++; ss[c] += S[i]; sk[c] += SK[i]; ov[c] += over(i)
                }
                printf "\nhalves (bench/README.md), %s: geometric mean E/kern, total stall / kernel total, rows >2%% worse\n", p
                printf "%-5s %-10s %6s %9s %11s %9s %11s %12s\n", "half", "set", "rows", "cold E", "cold stall", "warm E", "warm stall", "over c/w"
                split("A B -", hs, " "); split("generated recorded", sets, " ")
                for (h = 1; h <= 3; h++)
                        for (s = 1; s <= 2; s++) {
                                k = hs[h] SUBSEP sets[s]
                                if (!ne[k SUBSEP "cold"]) continue
                                printf "%-5s %-10s %6d %9.3f %11s %9.3f %11s %12s\n", hs[h] == "-" ? "none" : hs[h], sets[s], ne[k SUBSEP "cold"],
                                       exp(le[k SUBSEP "cold"] / ne[k SUBSEP "cold"]), sratio(ss[k SUBSEP "cold"], sk[k SUBSEP "cold"]),
                                       exp(le[k SUBSEP "warm"] / ne[k SUBSEP "warm"]), sratio(ss[k SUBSEP "warm"], sk[k SUBSEP "warm"]),
                                       (ov[k SUBSEP "cold"] + 0) "/" (ov[k SUBSEP "warm"] + 0)
                        }
        }
        # The rules every row is judged by (bench/README.md, "Rules of judgement"): the seed job
        # by its 1% alone (out of the energy means and of the rows worse); a row where the
        # kernel table waits more than the stall budget of its trace on wake delay only; worse
        # on wake delay only beyond 2% and beyond max(1 ms, two wake-ups from the deepest state
        # the kernel table enters on that drive).
        function wake_floor(i) { return KX[i] * 2 > 0.001 ? KX[i] * 2 : 0.001 }
        function judged_wake_over(i) { return stallk(i) > 1.02 && S[i] - SK[i] > wake_floor(i) }
        function energy_judged(i) { return F[i] !~ /^seed/ && !(DK[i] > 0 && SK[i] / DK[i] > budget) }
        function judged_over(i) { return F[i] !~ /^seed/ && (judged_wake_over(i) || (EK[i] > 1.02 && energy_judged(i))) }
        function judged(p,   i, c, le, ne, ss, sk, x, xs, m, miss, w, n5, nw, oc) {
                for (i = 1; i <= nr; i++) {
                        if (P[i] != p || (R[i] != "cold" && R[i] != "warm") || F[i] ~ /^seed/) continue
                        c = setof(F[i]) SUBSEP R[i]
                        le[c] += log(EK[i]); ne[c]++; ss[c] += S[i]; sk[c] += SK[i]
                        if (!energy_judged(i)) nw[R[i]]++
                        if (judged_over(i)) { miss++; oc[R[i]]++; w = w sprintf(" %s/%s/%s(E %.3f, stall %.3f%s)", D[i], F[i], R[i], EK[i], stallk(i), excess(i)) }
                }
                printf "\njudged by the rules (seed rows out of the means and of 5; a row whose kernel'"'"'s table waits over %.2f%% of its trace on wake delay only; worse on wake delay beyond 2%% and max(1 ms, two of the kernel'"'"'s deepest wake-ups)), %s\n", 100 * budget, p
                split("recorded cold 0.925 recorded warm 0.85 generated cold 0.70 generated warm 0.65", m, " ")
                for (i = 1; i <= 12; i += 3) {
                        c = m[i] SUBSEP m[i + 1]
                        if (!ne[c]) continue
                        x = exp(le[c] / ne[c]); xs = sk[c] > 0 ? ss[c] / sk[c] : (ss[c] > 0 ? 1e9 : 0)
                        printf "   %-9s %-4s E %.3f (<= %s) stall %s (<= 1): %s (%d rows)\n", m[i], m[i + 1], x, m[i + 2], sratio(ss[c], sk[c]), verdict(x <= m[i + 2] + 0 && xs <= 1.0), ne[c]
                }
                printf "   rows worse: %s (%d: %d cold, %d warm; judged on wake delay only: %d cold, %d warm)\n", verdict(!miss), miss, oc["cold"], oc["warm"], nw["cold"], nw["warm"]
                if (w != "") printf "  %s\n", w
                miss = 0; w = ""; n5 = 0
                for (i = 1; i <= nr; i++) {
                        if (P[i] != p || R[i] != "x3") continue
                        n5++
                        if (judged_wake_over(i)) { miss++; w = w sprintf(" %s/%s(stall %.3f%s)", D[i], F[i], stallk(i), excess(i)) }
                }
                if (n5) printf "   with --exlat-scale 3, rows worse on wake delay: %s (%d of %d)%s\n", verdict(!miss), miss, n5, w == "" ? "" : "\n  " w
        }
        function dash(x) { return x == "" ? "-" : x }
        function verdict(ok) { return ok ? "met" : "MISSED" }
        function targets(p,   i, c, le, ne, ss, sk, lx, nx, x, xs, ok, m, hk, key, sh, sa, nh, nlow, miss, ex, w, n5, ok4,
                         worst, sd, dord, nd, sw, exr, lh, nhs, sh3, sk3) {
                printf "\ntargets (%s)\n", p
                for (i = 1; i <= nr; i++) {
                        if (P[i] == "hindsight" && (R[i] == "cold" || R[i] == "ref")) hk[D[i] SUBSEP F[i]] = EK[i]
                        if (P[i] == "hindsight" && R[i] == "cold" && setof(F[i]) == "generated") {
                                lh += log(EK[i]); nhs++; sh3 += S[i]; sk3 += SK[i]
                        }
                        if (P[i] != p) continue
                        c = setof(F[i]) SUBSEP R[i]
                        le[c] += log(EK[i]); ne[c]++; ss[c] += S[i]; sk[c] += SK[i]
                        if (!exempt(i)) { lx[c] += log(EK[i]); nx[c]++ }
                }
                # 1. recorded, warm
                c = "recorded" SUBSEP "warm"
                if (ne[c]) {
                        x = exp(le[c] / ne[c]); xs = sk[c] > 0 ? ss[c] / sk[c] : (ss[c] > 0 ? 1e9 : 0)
                        printf "1. recorded set, warm: mean energy <= 0.90x kernel, total stall <= kernel: %s\n", verdict(x <= 0.90 && xs <= 1.0)
                        printf "   warm E %.3f stall %s (cold E %.3f stall %s) over %d rows\n", x, sratio(ss[c], sk[c]),
                               exp(le["recorded" SUBSEP "cold"] / ne["recorded" SUBSEP "cold"]), sratio(ss["recorded" SUBSEP "cold"], sk["recorded" SUBSEP "cold"]), ne[c]
                } else
                        printf "1. recorded set, warm: not measured (no recorded family in this run)\n"
                # 2. hour-long recordings, warm, against hindsight
                ok = 1; m = ""; nh = 0; nlow = 0
                for (i = 1; i <= nr; i++) {
                        if (P[i] != p || R[i] != "warm" || F[i] !~ /^real-.*-hour$/) continue
                        key = D[i] SUBSEP F[i]
                        if (!(key in hk)) continue
                        sh = 1 - hk[key]; sa = 1 - EK[i]
                        if (sh <= 0.05) { nlow++; continue }
                        nh++
                        if (sa < 0.5 * sh) { ok = 0; m = m sprintf(" %s/%s(hindsight %.1f%%, %s %.1f%% SHORT)", D[i], F[i], 100 * sh, p, 100 * sa) }
                        else m = m sprintf(" %s/%s(%.1f%%, %.1f%%)", D[i], F[i], 100 * sh, 100 * sa)
                }
                if (nh + nlow)
                        printf "2. one-hour recordings, warm: >= half of hindsight'"'"'s saving where it is above 5%%: %s (%d drive x recording pairs checked, %d with hindsight saving <= 5%%)\n  %s\n", verdict(ok), nh, nlow, m
                else
                        printf "2. one-hour recordings, warm: not measured (no real-*-hour family in this run)\n"
                # 3. generated, cold and warm
                ok = 1; m = ""
                for (w = 0; w <= 1; w++) {
                        c = "generated" SUBSEP (w ? "warm" : "cold")
                        if (!ne[c]) continue
                        x = exp(le[c] / ne[c]); xs = sk[c] > 0 ? ss[c] / sk[c] : (ss[c] > 0 ? 1e9 : 0)
                        if (x > (w ? 0.70 : 0.75) || xs > 1.0) ok = 0
                        m = m sprintf(" %s E %.3f stall %s;", w ? "warm" : "cold", x, sratio(ss[c], sk[c]))
                }
                if (ne["generated" SUBSEP "cold"]) {
                        printf "3. generated set: mean energy <= 0.75x kernel cold, <= 0.70x warm; total stall <= kernel: %s\n  %s\n", verdict(ok), m
                        m = ""; ex = 0
                        for (w = 0; w <= 1; w++) {
                                c = "generated" SUBSEP (w ? "warm" : "cold")
                                ex += ne[c] - nx[c]
                                m = m sprintf(" %s %.3f (%d exempt)", w ? "warm" : "cold", nx[c] ? exp(lx[c] / nx[c]) : 1, ne[c] - nx[c])
                        }
                        if (ex) printf "   without the seed rows exempt from the energy bound (5.):%s\n", m
                        if (nhs) printf "   the best static table knowing each trace (hindsight; on the seed rows, within the 1%% of 4.): E %.3f stall %s\n", exp(lh / nhs), sratio(sh3, sk3)
                } else
                        printf "3. generated set: not measured (no generated family in this run)\n"
                # 4. seed job, cold: one line per drive, the checked policy and the kernel
                ok4 = 1; m = ""; worst = -1
                for (i = 1; i <= nr; i++)
                        if (F[i] ~ /^seed/ && R[i] == "cold" && (P[i] == p || P[i] == "kernel")) {
                                if (!(D[i] in sd)) { sd[D[i]] = 1; dord[++nd] = D[i] }
                                sw[D[i], F[i], P[i]] = sprintf("%.2f%%", 100 * WP[i])
                                if (P[i] != p) continue
                                if (WP[i] >= 0.01) ok4 = 0
                                if (WP[i] > worst) { worst = WP[i]; m = D[i] "/" F[i] }
                        }
                if (nd) {
                        printf "4. seed job added wall time < 1%% on every drive, cold (seed and seed-x3): %s (worst %.2f%%, %s)\n", verdict(ok4), 100 * worst, m
                        for (i = 1; i <= nd; i++)
                                printf "   %-12s seed %s (kernel %s)  seed-x3 %s (kernel %s)\n", dord[i], dash(sw[dord[i], "seed", p]),
                                       dash(sw[dord[i], "seed", "kernel"]), dash(sw[dord[i], "seed-x3", p]), dash(sw[dord[i], "seed-x3", "kernel"])
                } else
                        printf "4. seed job: not measured (no seed family in this run)\n"
                # 5. no row over 2%, cold and warm; then on slow drives
                miss = 0; w = ""
                for (i = 1; i <= nr; i++) {
                        if (P[i] != p || (R[i] != "cold" && R[i] != "warm")) continue
                        if (exempt(i)) exr[R[i]]++
                        if (over(i)) { miss++; w = w sprintf(" %s/%s/%s(E %.3f, stall %.3f%s)", D[i], F[i], R[i], EK[i], stallk(i), excess(i)) }
                }
                printf "5. no row, cold or warm, >2%% worse than kernel on energy or stall: %s (%d rows over; seed rows exempt from energy: %d cold, %d warm)\n",
                       verdict(!miss), miss, exr["cold"], exr["warm"]
                if (w != "") printf "  %s\n", w
                miss = 0; w = ""; n5 = 0
                for (i = 1; i <= nr; i++) {
                        if (P[i] != p || R[i] != "x3") continue
                        n5++
                        if (stallk(i) > 1.02) { miss++; w = w sprintf(" %s/%s(stall %.3f%s)", D[i], F[i], stallk(i), excess(i)) }
                }
                if (n5)
                        printf "   with --exlat-scale 3 (cold), no row >2%% worse on stall: %s (%d rows over of %d)%s\n", verdict(!miss), miss, n5,
                               w == "" ? "" : "\n  " w
                else if (xscale != 1)
                        printf "   this whole run is at exit latencies x%s: the stall bound above is the slow-drive check\n", xscale
                else
                        printf "   with --exlat-scale 3: not measured (-X)\n"
        }' "$tmp/rows"

# 6. The seed job after a quiet recording, cold: what was learned in the quiet spell must not
# be applied to the job. Per drive the worst sequence, and the quiet spells' mean energy.
if [ -n "$seq_quiet" ]; then
        for drive in $drives; do cat "$tmp/seq-$(drive_stem "$drive")"; done | awk -v p="$checked" '
                { n++; le += log($4); if (!($1 in seen)) { seen[$1] = 1; ord[++nd] = $1 }
                  if ($5 >= 0.01) { miss++; m = m sprintf(" %s/%s/%s(%.2f%%, kernel %.2f%%)", $1, $2, $3, 100 * $5, 100 * $6) }
                  if (!($1 in wd) || $5 > wd[$1]) { wd[$1] = $5; wk[$1] = $6; wq[$1] = $2 "/" $3 }
                  if ($5 > worst) { worst = $5; wn = $1 "/" $2 "/" $3 } }
                END {
                        printf "6. seed job after each quiet recording (%s), one policy for both, < 1%% added on every drive (as advertised and 3x slower): %s (worst %.2f%%, %s; %d sequences)\n",
                               p, miss ? "MISSED" : "met", 100 * worst, wn, n
                        printf "   the quiet recordings'"'"' energy over the kernel'"'"'s table'"'"'s (geometric mean): %.3f\n", exp(le / n)
                        if (miss) printf "  %s\n", m
                        for (i = 1; i <= nd; i++)
                                printf "   %-12s worst %.2f%% (kernel %.2f%%, %s)\n", ord[i], 100 * wd[ord[i]], 100 * wk[ord[i]], wq[ord[i]]
                }'
else
        echo "6. seed job after a quiet recording: not measured (no recorded idle or quiet family, or $checked does not learn)"
fi

# 7. The day, played once: its energy against the best static table for the whole day, its wake
# delay against the kernel's table's, the seed job's window under 1%, and each workload's first
# minute judged by the rules (a minute where the kernel's table waits over the budget on wake
# delay only; worse on wake delay beyond 2% and two of the kernel's deepest wake-ups).
if [ -n "$day_args" ]; then
        for drive in $drives; do cat "$tmp/day-$(drive_stem "$drive")"; done | awk -v p="$checked" -v names="$day_names" -v budget="$stall_budget" '
                { n++
                  if ($2 == "x1") { nd++; le += log($3); lh += log($6); ss += $4; sk += $5; sh += $7 }
                  if ($8 >= 0.01) { smiss++; sm = sm sprintf(" %s/%s(%.2f%%, kernel %.2f%%)", $1, $2, 100 * $8, 100 * $9) }
                  if ($8 > sworst) { sworst = $8; sw = $1 "/" $2 }
                  floor = 2 * $10 > 0.001 ? 2 * $10 : 0.001
                  for (i = 11; i + 4 <= NF; i += 5) {
                          f = $i; ek = $(i + 1); s = $(i + 2); k = $(i + 3); span = $(i + 4)
                          if (f == "seed") continue
                          if (!(f in seen)) { seen[f] = 1; ord[++nf] = f }
                          if ($2 == "x1") { fl[f] += log(ek); fn[f]++; fs[f] += s; fk[f] += k }
                          wake = (k > 0 ? s / k : (s > 0 ? 1e9 : 1)) > 1.02 && s - k > floor
                          energy = $2 == "x1" && ek > 1.02 && !(span > 0 && k / span > budget)
                          if (wake || energy) { fmiss++; fm = fm sprintf(" %s/%s/%s(E %.3f, wake %.0f ms, kernel %.0f ms)", $1, $2, f, ek, 1e3 * s, 1e3 * k) }
                  } }
                END {
                        if (!nd) exit
                        sub(/^ +/, "", names)
                        printf "7. a day played once (%s), one policy learning through it\n", names
                        printf "   the day: E %.3f the kernel'"'"'s, the best static table for the day %.3f; wake delay %s the kernel'"'"'s (best static %s): %s\n",
                               exp(le / nd), exp(lh / nd), (sk > 0 ? sprintf("%.3f", ss / sk) : "-"), (sk > 0 ? sprintf("%.3f", sh / sk) : "-"),
                               (exp(le / nd) <= exp(lh / nd) && ss <= sk) ? "met" : "MISSED"
                        printf "   the seed job'"'"'s window < 1%% on every drive (as advertised and 3x slower): %s (worst %.2f%%, %s)\n", smiss ? "MISSED" : "met", 100 * sworst, sw
                        if (smiss) printf "  %s\n", sm
                        printf "   each workload'"'"'s first minute, judged by the rules: %s (%d of %d minutes worse)\n", fmiss ? "MISSED" : "met", fmiss, n * nf
                        for (i = 1; i <= nf; i++)
                                printf "     %-22s E %.3f the kernel'"'"'s, wake delay %s\n", ord[i], exp(fl[ord[i]] / fn[ord[i]]),
                                       (fk[ord[i]] > 0 ? sprintf("%.3f", fs[ord[i]] / fk[ord[i]]) : (fs[ord[i]] > 0 ? "inf" : "-"))
                        if (fmiss) printf "  %s\n", fm
                }'
fi

# The pictures. Per family over the drives, as in the per-family summary: the geometric
# mean of E/kern and total stall over the kernel's total ("-" when the kernel never
# waits); family "all" over every row. Cold rows, and the learning policies' warm ones
# as NAME-warm.
mkdir -p "$pictures"
awk '
        $4 == "cold" || ($4 == "warm" && ($3 == "adaptive" || $3 == "adaptive-stat")) {
          p = $4 == "warm" ? $3 "-warm" : $3
          k = $2 SUBSEP p; if (!(k in n)) order[++m] = k; n[k]++; le[k] += log($6); s[k] += $10; sk[k] += $11
          a = "all" SUBSEP p; if (!(a in n)) alls[++na] = a; n[a]++; le[a] += log($6); s[a] += $10; sk[a] += $11 }
        function out(k,   f) { split(k, f, SUBSEP)
                printf "%s\t%s\t%.6f\t%s\n", f[1], f[2], exp(le[k] / n[k]), (sk[k] > 0 ? sprintf("%.6f", s[k] / sk[k]) : "-") }
        END { print "# family\tpolicy\tE/kern geomean\tstall/kernel total"
              for (i = 1; i <= m; i++) out(order[i]); for (i = 1; i <= na; i++) out(alls[i]) }' "$tmp/rows" >"$pictures/tradeoff.tsv"
for drive in $drives; do break; done
[ -f "$tmp/desktop.txt" ] || "$tmp/tracegen" -s "$seed" -d "$duration" desktop >"$tmp/desktop.txt"
sim budget "$tmp/desktop.txt" --timeline >"$tmp/timeline-budget.json"
sim adaptive "$tmp/desktop.txt" --timeline >"$tmp/timeline-adaptive.json"
py=
# $PYTHON: the interpreter to draw with, and only that one (tests set it to one without matplotlib)
for p in ${PYTHON:-python3 /usr/bin/python3}; do
        if "$p" -c 'import matplotlib' 2>/dev/null; then
                py=$p
                break
        fi
done
if [ -z "$py" ]; then
        echo "pictures skipped: matplotlib is not installed (Debian: apt-get install python3-matplotlib); figures in $pictures/tradeoff.tsv"
else
        "$py" "$root/bench/plot.py" tradeoff "$pictures/tradeoff.tsv" "$pictures/tradeoff.svg"
        "$py" "$root/bench/plot.py" timeline --from 0 --to 20 --trace "$tmp/desktop.txt" "$pictures/timeline.svg" \
                "$tmp/timeline-budget.json" "$tmp/timeline-adaptive.json"
        echo "pictures: $pictures/tradeoff.svg $pictures/timeline.svg"
fi
