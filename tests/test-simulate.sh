#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `nvme-apstd simulate` end to end: real Identify files in both formats, both
# trace formats, the numbers worked out by hand (same tiny trace as tests/unit/test-sim.c's
# "tiny/*" cases: writes at 0, 50 and 300 ms on the INTEL SSDPEKKW256G7, PS0 idle
# 0.2 W, 100 µs per I/O), and the exit codes of the error paths.
#
#   test-simulate.sh NVME_APSTD IDCTRL_DIR
# Covers: src/cli/cmd-simulate.c, src/core/sim.c, src/core/trace.c, src/core/idctrl.c,
# src/core/apst.c.

set -u

bin=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
checks=0

fail() {
        echo "FAIL: $*" >&2
        failed=$((failed + 1))
}

# field JSON POLICY KEY: the number KEY in POLICY's line of a simulate JSON
field() {
        awk -v pol="$2" -v key="$3" '
                index($0, "{\"name\":\"" pol "\"") == 1 {
                        if (match($0, "\"" key "\":-?[0-9.eE+-]+")) { m = substr($0, RSTART, RLENGTH); sub(/^"[^"]*":/, "", m); print m }
                }' "$1"
}

# expect JSON POLICY KEY VALUE [TOLERANCE]: equal within TOLERANCE (default 1e-9) relative
expect() {
        checks=$((checks + 1))
        got=$(field "$1" "$2" "$3")
        if ! awk -v g="$got" -v w="$4" -v tol="${5:-1e-9}" \
                'BEGIN { d = g - w; if (d < 0) d = -d; exit !(g != "" && d <= tol * (w < 0 ? -w : w) + 1e-12) }'; then
                fail "$1: $2 $3 = '$got', expected $4"
        fi
}

intel_bin=$dir/00-intel-ssdpekkw256g7.bin
intel_json=$dir/00-intel-ssdpekkw256g7.json
printf '# tiny\n0 W 4096\n0.05 W 4096\n0.3 W 4096\n' >"$tmp/tiny.txt"
cat >"$tmp/tiny.blk" <<'EOF'
259,0    1        1     0.000000000  1234  Q  WS 2048 + 8 [fio]
259,0    1        2     0.000000000  1234  D  WS 2048 + 8 [fio]
259,0    0        1     0.000100000     0  C  WS 2048 + 8 [0]
259,0    1        3     0.050000000  1234  Q  WS 4096 + 8 [fio]
259,0    1        4     0.050000000  1234  D  WS 4096 + 8 [fio]
259,0    1        5     0.300000000  1234  Q  WS 8192 + 8 [fio]
259,0    1        6     0.300000000  1234  D  WS 8192 + 8 [fio]
CPU0 (259,0):
 Reads Queued:           0,        0KiB  Writes Queued:           3,       12KiB
EOF

for id in "$intel_bin" "$intel_json"; do
        for tr in "$tmp/tiny.txt" "$tmp/tiny.blk"; do
                out=$tmp/out.json
                checks=$((checks + 1))
                if ! "$bin" simulate --id-ctrl "$id" --trace "$tr" --idle-power-w 0.2 --json >"$out"; then
                        fail "simulate $id $tr exited $?"
                        continue
                fi
                # none: 300.1 ms x 200 mW = 60.02 mJ
                expect "$out" none energy_j 0.06002
                expect "$out" none stall_s 0
                # kernel (ps0..ps3 -> ps4 after 100 ms): P0 162.2 ms = 32.44 mJ + ps4 147.9 ms x 5 mW
                # = 0.7395 mJ -> 33.1795 mJ; io2 waits ps4's 10 ms exit
                expect "$out" kernel energy_j 0.0331795
                expect "$out" kernel stall_s 0.01
                expect "$out" kernel wakeups_total 1
                expect "$out" kernel max 0.01
                # optimum: gaps 49.9 and 249.9 ms in ps4 (2.5895 + 3.5895 mJ) + service 0.06 mJ
                expect "$out" optimum energy_j 0.006239
                # kernel / optimum = 33.1795 / 6.239 = 5.31808, printed with 6 decimals
                expect "$out" kernel energy_vs_optimum 5.318080 1e-6
        done
done

# With the 600p's PCI id the kernel's NO_DEEPEST_PS quirk leaves ps0..ps2 -> ps3 after 100 ms:
# ps0 until 150.1, entering ps3 (10 ms) until 160.1, ps3 until 300 (139.9 ms x 70 mW = 9.793 mJ),
# exit 0.3 ms. P0: 0.1 + 49.9 + 0.1 + 100 + 10 + 0.3 + 0.1 = 160.5 ms x 200 mW = 32.1 mJ.
out=$tmp/quirk.json
checks=$((checks + 1))
if "$bin" simulate --id-ctrl "$intel_bin" --trace "$tmp/tiny.txt" --idle-power-w 0.2 --pci 8086:f1a5 \
        --policy kernel --json >"$out"; then
        expect "$out" kernel energy_j 0.041893
        expect "$out" kernel stall_s 0.0003
else
        fail "simulate --pci exited $?"
fi

# A drive that wakes 3x slower than it says: the kernel's table is the same (it plans from the
# advertised 10 ms), but io2 now waits 30 ms for ps4's exit; the optimum still wakes in time.
out=$tmp/lie.json
checks=$((checks + 1))
if "$bin" simulate --id-ctrl "$intel_bin" --trace "$tmp/tiny.txt" --idle-power-w 0.2 --exlat-scale 3 \
        --json >"$out"; then
        expect "$out" kernel stall_s 0.03
        expect "$out" kernel max 0.03
        expect "$out" none stall_s 0
        grep -q '"exlat_scale":3' "$out" || fail "--exlat-scale: not in the model"
else
        fail "simulate --exlat-scale exited $?"
fi
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/tiny.txt" --exlat-scale 0 >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad --exlat-scale: rc $rc"

# The adaptive policy: writes every 300 ms for 15 s on the 970 EVO Plus (the kernel's table
# wakes ps4 for each), a short job: 50 gaps, what the stall budget's hold covers
# (ADAPT_TRUST_HOLD_GAPS); the policy programs its start table, then at least one learned one,
# each with its reason.
awk 'BEGIN { for (t = 0; t < 15; t += 0.3) printf "%.3f W 4096\n", t }' >"$tmp/periodic.txt"
for src in stat bpf; do
        out=$tmp/adaptive-$src.json
        checks=$((checks + 1))
        if "$bin" simulate --id-ctrl "$dir/05-samsung-ssd-970-evo-plus-2tb.bin" --trace "$tmp/periodic.txt" \
                --policy adaptive --watch-source $src --closed-loop --json >"$out"; then
                grep -q '^"policy":"adaptive"' "$out" || fail "adaptive ($src): not the chosen policy"
                grep -q "\"watch_source\":\"$src\"" "$out" || fail "adaptive ($src): source not in the model"
                case $src in
                stat) reason='"reason":"I/O every ~300 ms' ;;
                bpf) reason='"reason":"[0-9]* gaps of evidence' ;;
                esac
                grep '^"reprograms":' "$out" | grep -q "$reason" || fail "adaptive ($src): no reason for its table"
                if [ $src = bpf ]; then
                        # the shadow kernel's accounting (what the daemon reports) agrees with the
                        # simulator on both tables, within the gap buckets' resolution (5%)
                        expect "$out" adaptive kernel_energy_j "$(field "$out" kernel energy_j)" 0.05
                        expect "$out" adaptive kernel_wake_delay_s "$(field "$out" kernel stall_s)" 0.05
                        # every gap handed over, the last one too: one per wake-up; the shadow's
                        # own wake delay is the simulator's stall plus each gap's 0.1 ms of
                        # service (no request was seen awake, so a wake-up's measure holds its
                        # service: shadow.c errs on the side of having spent more)
                        expect "$out" adaptive gaps "$(field "$out" adaptive wakeups_total)"
                        expect "$out" adaptive wake_delay_s "$(awk -v s="$(field "$out" adaptive stall_s)" \
                                -v g="$(field "$out" adaptive gaps)" 'BEGIN { printf "%.9f", s + g * 0.0001 }')" 0.01
                fi
                # within its 1% stall budget (nothing learned yet), the kernel's table far over it
                awk -v a="$(field "$out" adaptive stall_s)" -v k="$(field "$out" kernel stall_s)" \
                        'BEGIN { exit !(a <= 0.15 && k > 0.25) }' || fail "adaptive ($src): stall $(field "$out" adaptive stall_s)"
        else
                fail "simulate --policy adaptive --watch-source $src exited $?"
        fi
done
# The human summary names the table the run started on (for the exact source, the kernel's,
# not the plan the stat source starts from) and how many the policy wrote after it
checks=$((checks + 1))
samsung=$dir/05-samsung-ssd-970-evo-plus-2tb.bin
"$bin" simulate -i "$samsung" -t "$tmp/periodic.txt" --closed-loop >"$tmp/adaptive.txt"
"$bin" simulate -i "$samsung" -t "$tmp/periodic.txt" --closed-loop --policy kernel >"$tmp/kernel.txt"
k=$(sed -n 's/^Policy: kernel: //p' "$tmp/kernel.txt")
n=$(grep '^"reprograms":' "$tmp/adaptive-bpf.json" | grep -o '{"t":' | wc -l)
[ -n "$k" ] && grep -qxF "Policy: adaptive: started on $k" "$tmp/adaptive.txt" ||
        fail "adaptive: the summary does not start on the kernel's table ($k): $(grep '^Policy' "$tmp/adaptive.txt")"
[ "$n" -gt 1 ] && grep -Eq "^ +$((n - 1)) tables? written since; the last at [0-9]+\.[0-9] s: ps0" "$tmp/adaptive.txt" ||
        fail "adaptive: $n tables in the JSON, the summary says $(sed -n 2p "$tmp/adaptive.txt" | grep written)"
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/tiny.txt" --watch-source ebpf >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad --watch-source: rc $rc"

# The trace from standard input, and the human table
checks=$((checks + 1))
if ! "$bin" simulate -i "$intel_bin" -t - <"$tmp/tiny.txt" | grep -q '^kernel '; then
        fail "simulate from stdin: no kernel row"
fi

# Errors: a bad trace line names the line (exit 1); bad usage exits 2.
printf '0 W\n0.1 X\n' >"$tmp/bad.txt"
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/bad.txt" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "bad.txt:2: bad operation" "$tmp/err"; then
        fail "bad trace: rc $rc, $(cat "$tmp/err")"
fi
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "missing --trace: rc $rc"
# --policy hindsight: the best static table knowing the trace. One read every 3 s on the Intel
# 600p without its PCI id (ps4 allowed): its row spends less than the kernel's row, and waits
# no longer for wake-ups.
awk 'BEGIN { for (i = 0; i < 100; i++) printf "%d R 4096\n", 3 * i }' >"$tmp/sparse.txt"
checks=$((checks + 1))
if "$bin" simulate -i "$intel_bin" -t "$tmp/sparse.txt" --policy hindsight --json >"$tmp/h.json" 2>"$tmp/err"; then
        he=$(field "$tmp/h.json" hindsight energy_j) ke=$(field "$tmp/h.json" kernel energy_j)
        hs=$(field "$tmp/h.json" hindsight stall_s) ks=$(field "$tmp/h.json" kernel stall_s)
        awk -v he="$he" -v ke="$ke" -v hs="$hs" -v ks="$ks" \
                'BEGIN { exit !(he != "" && ke != "" && he < 0.9 * ke && hs <= ks) }' ||
                fail "hindsight: energy $he J (kernel $ke J), stall $hs s (kernel $ks s)"
else
        fail "simulate --policy hindsight: rc $?, $(cat "$tmp/err")"
fi
# --hindsight-share 0: only tables that never make an I/O wait qualify (one that waits longer
# than the 3 s gaps), at more energy than the kernel's; out of [0, 1] is a usage error.
checks=$((checks + 1))
if "$bin" simulate -i "$intel_bin" -t "$tmp/sparse.txt" -p hindsight --hindsight-share 0 --json >"$tmp/h0.json" 2>"$tmp/err"; then
        hs=$(field "$tmp/h0.json" hindsight stall_s) he=$(field "$tmp/h0.json" hindsight energy_j)
        ke=$(field "$tmp/h0.json" kernel energy_j)
        awk -v hs="$hs" -v he="$he" -v ke="$ke" 'BEGIN { exit !(hs != "" && hs == 0 && he > ke) }' ||
                fail "hindsight share 0: stall $hs s, energy $he J (kernel $ke J)"
else
        fail "simulate --hindsight-share 0: rc $?, $(cat "$tmp/err")"
fi
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/sparse.txt" -p hindsight --hindsight-share 1.5 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--hindsight-share" "$tmp/err" || fail "--hindsight-share 1.5: rc $rc, $(cat "$tmp/err")"
# --repeat: the trace played three times, the policy keeping what it learned, the last copy
# scored. One read a second for 300 s on the Intel 600p without its PCI id. A table that does
# not learn (kernel) scores the same cold and warm, to the last digit; the adaptive policy
# starts its scored copy on a table it chose in the copies before (cold it starts on the
# kernel's), so its figure differs; --repeat 0 is a usage error.
awk 'BEGIN { for (i = 0; i < 300; i++) printf "%d R 4096\n", i }' >"$tmp/second.txt"
checks=$((checks + 1))
if "$bin" simulate -i "$intel_bin" -t "$tmp/second.txt" -p kernel --json >"$tmp/k1.json" 2>"$tmp/err" &&
        "$bin" simulate -i "$intel_bin" -t "$tmp/second.txt" -p kernel --repeat 3 --json >"$tmp/k3.json" 2>"$tmp/err"; then
        grep -q '"copies":3' "$tmp/k3.json" || fail "--repeat 3: not in the model"
        for key in energy_j stall_s wakeups_total p99; do
                [ -n "$(field "$tmp/k1.json" kernel $key)" ] &&
                        [ "$(field "$tmp/k1.json" kernel $key)" = "$(field "$tmp/k3.json" kernel $key)" ] ||
                        fail "--repeat 3, kernel: $key $(field "$tmp/k3.json" kernel $key), cold $(field "$tmp/k1.json" kernel $key)"
        done
else
        fail "simulate --repeat 3 -p kernel: rc $?, $(cat "$tmp/err")"
fi
checks=$((checks + 1))
if "$bin" simulate -i "$intel_bin" -t "$tmp/second.txt" -p adaptive --json >"$tmp/a1.json" 2>"$tmp/err" &&
        "$bin" simulate -i "$intel_bin" -t "$tmp/second.txt" -p adaptive --repeat 3 --json >"$tmp/a3.json" 2>"$tmp/err"; then
        first() { grep '^"reprograms"' "$1" | grep -o '"table":\[[^]]*\]' | head -1; }
        kern=$(grep '^"reprograms"' "$tmp/k1.json" | grep -o '"table":\[[^]]*\]' | head -1)
        [ -n "$kern" ] && [ "$(first "$tmp/a1.json")" = "$kern" ] && [ "$(first "$tmp/a3.json")" != "$kern" ] ||
                fail "--repeat 3, adaptive: its scored copy does not start on a learned table"
        [ "$(field "$tmp/a1.json" adaptive energy_j)" != "$(field "$tmp/a3.json" adaptive energy_j)" ] ||
                fail "--repeat 3, adaptive: the same energy cold and warm"
        # the first copy, reported beside the scored one, is the cold run
        for key in energy_j stall_s wakeups_total p99; do
                [ -n "$(field "$tmp/a1.json" adaptive $key)" ] &&
                        [ "$(field "$tmp/a1.json" adaptive $key)" = "$(field "$tmp/a3.json" adaptive-copy1 $key)" ] ||
                        fail "--repeat 3: adaptive-copy1 $key $(field "$tmp/a3.json" adaptive-copy1 $key), cold $(field "$tmp/a1.json" adaptive $key)"
        done
else
        fail "simulate --repeat 3 -p adaptive: rc $?, $(cat "$tmp/err")"
fi
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/second.txt" --repeat 0 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--repeat" "$tmp/err" || fail "--repeat 0: rc $rc, $(cat "$tmp/err")"
# A sequence: the tiny trace twice, the second closed loop. Each trace's figures add up to the
# whole run's; the second starts --segment-gap after the first one's last I/O (0.3 + 2 s).
checks=$((checks + 1))
if "$bin" simulate -i "$intel_bin" -t "$tmp/tiny.txt" -t "$tmp/tiny.txt" --closed-loop=2 --segment-gap 2 \
        --window 0.1 -p kernel --json >"$tmp/seq.json" 2>"$tmp/err"; then
        grep -q '"segments":\[{"file":"[^"]*tiny.txt","start_s":0.000000000,"ios":3,"closed_loop":false},{"file":"[^"]*tiny.txt","start_s":2.300000000,"ios":3,"closed_loop":true}\]' \
                "$tmp/seq.json" || fail "sequence: the trace's segments: $(grep '"trace"' "$tmp/seq.json")"
        awk 'index($0, "{\"name\":\"kernel\"") == 1 {
                whole = $0; sub(/,"segments".*/, "", whole)
                match(whole, /"energy_j":[0-9.eE+-]+/); w = substr(whole, RSTART + 11, RLENGTH - 11) + 0
                seg = $0; sub(/.*"segments":\[/, "", seg); n = 0; sum = 0
                while (match(seg, /"span_s":[0-9.]+,"energy_j":[0-9.eE+-]+/)) {
                        part = substr(seg, RSTART, RLENGTH); sub(/.*"energy_j":/, "", part)
                        # every other one is a window
                        if (n % 2 == 0) sum += part + 0
                        n++; seg = substr(seg, RSTART + RLENGTH)
                }
                found = 1; d = sum - w; if (d < 0) d = -d
                if (n != 4 || d > 1e-9 * w) { print "sequence: " n " figures, segments " sum " J, whole " w " J"; exit 1 }
        } END { if (!found) { print "sequence: no kernel row"; exit 1 } }' "$tmp/seq.json" >"$tmp/err" ||
                fail "$(cat "$tmp/err")"
else
        fail "simulate with two --trace: rc $?, $(cat "$tmp/err")"
fi
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/tiny.txt" -t "$tmp/tiny.txt" --closed-loop=3 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "trace 3 was not given" "$tmp/err" || fail "--closed-loop=3 of two traces: rc $rc, $(cat "$tmp/err")"
checks=$((checks + 1))
"$bin" simulate -i "$intel_bin" -t "$tmp/tiny.txt" --policy fastest >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad --policy: rc $rc"
checks=$((checks + 1))
"$bin" simulate -i "$tmp/tiny.txt" -t "$tmp/tiny.txt" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || fail "a trace as Identify data: rc $rc"
checks=$((checks + 1))
"$bin" simulate --help | grep -q -- '--id-ctrl' || fail "--help"


# One [device] section, one meaning: `plan` and `simulate` make the same decision for
# the same drive (device_plan(), as the daemon and `apply` do).
# enable = no: the daemon leaves the drive alone, so the kernel's own table runs.
printf '[apst]\nmax_latency_us = 5000\n\n[device intel]\nmatch_model = INTEL*\nenable = no\n' >"$tmp/off.conf"
# a [device] section with its own budget: 0 turns APST off
printf '[apst]\nmax_latency_us = 5000\n\n[device intel]\nmatch_model = INTEL*\nmax_latency_us = 0\n' >"$tmp/zero.conf"
chmod 0644 "$tmp/off.conf" "$tmp/zero.conf"
checks=$((checks + 1))
"$bin" plan --json -c "$tmp/off.conf" -i "$intel_bin" >"$tmp/plan-off.json" 2>"$tmp/err" ||
        fail "plan, enable = no: $(cat "$tmp/err")"
grep -q '"verdict": "disabled"' "$tmp/plan-off.json" && grep -q '"section": "intel"' "$tmp/plan-off.json" ||
        fail "plan, enable = no: not reported as disabled by [device intel]: $(cat "$tmp/plan-off.json")"
checks=$((checks + 1))
"$bin" simulate --json -c "$tmp/off.conf" -i "$intel_bin" -t "$tmp/tiny.txt" >"$tmp/sim-off.json" 2>"$tmp/err" ||
        fail "simulate, enable = no: $(cat "$tmp/err")"
grep -q '^"policy":"kernel",$' "$tmp/sim-off.json" && grep -q '^"config_section":"intel",$' "$tmp/sim-off.json" ||
        fail "simulate, enable = no: the chosen row is not the kernel's table: $(grep '"policy"' "$tmp/sim-off.json")"
checks=$((checks + 1))
"$bin" plan --json -c "$tmp/zero.conf" -i "$intel_bin" >"$tmp/plan-zero.json" 2>"$tmp/err" ||
        fail "plan, max_latency_us = 0: $(cat "$tmp/err")"
grep -q '"verdict": "managed".*"max_latency_us": 0, "section": "intel"' "$tmp/plan-zero.json" &&
        grep -q '"apste": false' "$tmp/plan-zero.json" ||
        fail "plan, max_latency_us = 0 in [device intel]: $(cat "$tmp/plan-zero.json")"
checks=$((checks + 1))
"$bin" simulate --json -c "$tmp/zero.conf" -i "$intel_bin" -t "$tmp/tiny.txt" >"$tmp/sim-zero.json" 2>"$tmp/err" ||
        fail "simulate, max_latency_us = 0: $(cat "$tmp/err")"
# APST off: the chosen policy's first programmed table has APSTE clear, and it spends what "none" spends
grep -q '^"policy":"adaptive",$' "$tmp/sim-zero.json" && grep -q '^"config_section":"intel",$' "$tmp/sim-zero.json" &&
        [ "$(field "$tmp/sim-zero.json" adaptive energy_j)" = "$(field "$tmp/sim-zero.json" none energy_j)" ] ||
        fail "simulate, max_latency_us = 0 in [device intel]: adaptive is not APST off"

echo "$checks checks, $failed failed"
[ $failed -eq 0 ]
