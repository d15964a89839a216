#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/plot.py draws both pictures from what run.sh gives it: the trade-off
# from a tradeoff.tsv, the timeline from `simulate --json --timeline`; and
# bench/run.sh, short, still runs without matplotlib and says the pictures
# were skipped. SKIP (77) for the drawing when matplotlib is missing.
# Usage: test-bench-plot.sh NVME-APSTD-BINARY SOURCE-ROOT
# Covers: bench/plot.py, bench/run.sh, src/cli/cmd-simulate.c (--json --timeline).
set -eu
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# without matplotlib (an interpreter that has none): figures, and the message
PYTHON=false sh "$src/bench/run.sh" -b "$bin" -d 5 -R -p "none kernel budget optimum" -o "$tmp/pics" >"$tmp/run.txt" 2>&1 ||
        { cat "$tmp/run.txt"; echo "FAIL: bench/run.sh failed without matplotlib"; exit 1; }
grep -q "^pictures skipped: matplotlib is not installed" "$tmp/run.txt" || { tail -5 "$tmp/run.txt"; echo "FAIL: no 'pictures skipped'"; exit 1; }
grep -q "^desktop	kernel	1.000000	1.000000$" "$tmp/pics/tradeoff.tsv" || { cat "$tmp/pics/tradeoff.tsv"; echo "FAIL: the kernel is not (1, 1) in tradeoff.tsv"; exit 1; }
[ ! -e "$tmp/pics/tradeoff.svg" ] || { echo "FAIL: a picture was drawn without matplotlib"; exit 1; }
echo "ok   bench/run.sh without matplotlib: figures written, pictures skipped"

py=
for p in python3 /usr/bin/python3; do
        if "$p" -c 'import matplotlib' 2>/dev/null; then
                py=$p
                break
        fi
done
if [ -z "$py" ]; then
        echo "SKIP: matplotlib not installed (Debian python3-matplotlib, tests/deps.sh bench): nothing drawn"
        exit 77
fi

printf '# family\tpolicy\tE/kern geomean\tstall/kernel total\n' >"$tmp/t.tsv"
printf 'desktop\tkernel\t1\t1\ndesktop\tbudget\t1.5\t0.2\ndesktop\tadaptive\t0.8\t0.9\nregime\tbudget\t1\t-\nall\tbudget\t1.5\t0.2\nall\tadaptive\t0.8\t0.9\n' >>"$tmp/t.tsv"
"$py" "$src/bench/plot.py" tradeoff "$tmp/t.tsv" "$tmp/tradeoff.svg"
for want in "kernel (1, 1)" "budget, all" "adaptive, all" "better than the kernel on both" ">desktop<" "(regime)"; do
        grep -qF "$want" "$tmp/tradeoff.svg" || { echo "FAIL: tradeoff.svg has no '$want'"; exit 1; }
done
echo "ok   tradeoff.svg drawn"

printf '0 R 4096\n0.5 W 4096\n3 R 4096\n' >"$tmp/trace.txt"
"$bin" simulate --id-ctrl "$src/tests/data/idctrl/00-intel-ssdpekkw256g7.bin" --trace "$tmp/trace.txt" --policy budget --json --timeline \
        >"$tmp/sim.json"
"$py" "$src/bench/plot.py" timeline --from 0 --to 3.1 --trace "$tmp/trace.txt" "$tmp/timeline.svg" "$tmp/sim.json"
for want in ">none<" ">kernel<" ">budget<" "INTEL SSDPEKKW256G7" ">ps4<"; do
        grep -qF "$want" "$tmp/timeline.svg" || { echo "FAIL: timeline.svg has no '$want'"; exit 1; }
done
echo "ok   timeline.svg drawn"
echo "bench pictures: drawn, and skipped without matplotlib"
