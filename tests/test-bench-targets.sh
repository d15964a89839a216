#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/run.sh's target lines agree with its own per-row table: target 1's means
# are the geometric means of the adaptive rows' E/kern, and the means printed
# without the seed rows exempt from the energy bound leave out exactly those rows
# (a seed row over 1.02x the kernel's energy, at no more than 1.02x its wake
# delay, whose job gained under 1%) and as many as target 3 counts. A short run
# (30 s traces, generated families only): about a second.
# Usage: test-bench-targets.sh NVME-APSTD-BINARY SOURCE-ROOT
set -eu
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

PYTHON=false sh "$src/bench/run.sh" -b "$bin" -d 30 -R -p "kernel adaptive" -o "$tmp/pics" >"$tmp/run.txt" 2>&1 ||
        { cat "$tmp/run.txt"; echo "FAIL: bench/run.sh failed"; exit 1; }

awk '
        # the per-row table: DRIVE FAMILY POLICY E/opt E/kern stall/k p99ms wall+s
        NF == 8 && $3 == "adaptive" && $5 ~ /^[0-9.]+$/ { n++; key[n] = $1 "/" $2; fam[n] = $2; e[n] = $5; st[n] = $6 }
        # target 4 lists each seed row as DRIVE/FAMILY/POLICY PERCENT%
        /^4\. seed job/ { getline; for (i = 1; i <= NF; i += 2) if ($i ~ /\/adaptive$/) { k = $i; sub(/\/adaptive$/, "", k); wall[k] = $(i + 1) + 0 } }
        /^1\. mean energy/ { getline; mean = $2 + 0; getline; if ($0 ~ /without the/) { ex1 = $3 + 0; meanx = $NF + 0 } }
        /^3\. no row/ { match($0, /[0-9]+ seed rows exempt/); ex3 = substr($0, RSTART, RLENGTH) + 0 }
        END {
                if (n != drives * 8) { printf "FAIL: %d adaptive rows, not %d drives x 8 families\n", n, drives; exit 1 }
                for (i = 1; i <= n; i++) {
                        l += log(e[i])
                        s = (st[i] == "-") ? 1 : st[i] + 0
                        if (fam[i] ~ /^seed/ && e[i] > 1.02 && s <= 1.02 && (key[i] in wall) && wall[key[i]] < 1) { nx++; continue }
                        lx += log(e[i]); m++
                }
                want = exp(l / n); wantx = exp(lx / m)
                if (mean == 0 || (mean - want) ^ 2 > 1e-6) { printf "FAIL: target 1 says %.3f, the rows give %.3f\n", mean, want; exit 1 }
                if (nx == 0) { print "FAIL: no exempt seed row on this run (the check below would prove nothing)"; exit 1 }
                if (ex1 != nx || ex3 != nx) { printf "FAIL: %d exempt rows in the table, target 1 says %d, target 3 %d\n", nx, ex1, ex3; exit 1 }
                if ((meanx - wantx) ^ 2 > 1e-6) { printf "FAIL: without the exempt rows target 1 says %.3f, the rows give %.3f\n", meanx, wantx; exit 1 }
                if (!(meanx < mean)) { printf "FAIL: leaving out rows over 1.02x did not lower the mean (%.3f, %.3f)\n", meanx, mean; exit 1 }
                printf "ok   target 1: %.3f over %d rows, %.3f without the %d exempt seed rows (as target 3 counts them)\n", mean, n, meanx, nx
        }' drives="$(ls "$src"/tests/data/idctrl/*.bin | wc -l)" "$tmp/run.txt" || { grep -A9 "^targets" "$tmp/run.txt"; exit 1; }
