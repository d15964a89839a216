#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The alert rules (contrib/prometheus/) and the dashboard (contrib/grafana/)
# name only metrics the daemon exports. The exported names are not listed
# here: they are the families metrics_format() declares, as `test-metrics
# print` prints them ("# TYPE name type"; every family is declared even
# without samples). A metric renamed in src/core/metrics.c without the rules or
# the dashboard following fails this test. Names with a colon are recording
# rules and must be defined in the rules file. A selector's exact label value
# (table="kernel") must be one the example state's samples carry, where they
# carry that label.
# Usage: test-contrib-metric-names.sh TEST-METRICS-BINARY SOURCE-ROOT
# Covers: contrib/prometheus/, contrib/grafana/, src/core/metrics.c.
set -eu
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" print >"$tmp/samples"
sed -n 's/^# TYPE \([a-zA-Z_:][a-zA-Z0-9_:]*\) .*/\1/p' "$tmp/samples" | sort -u >"$tmp/exported"
[ -s "$tmp/exported" ] || { echo "FAIL: $bin print declares no metric family"; exit 1; }
sed -n 's/^ *- record: *\([a-zA-Z_:][a-zA-Z0-9_:]*\).*/\1/p' "$src"/contrib/prometheus/*.rules.yml | sort -u >"$tmp/recorded"

fails=0
used=0
for f in "$src"/contrib/prometheus/*.rules.yml "$src"/contrib/grafana/*.json; do
        [ -f "$f" ] || continue
        case $f in *.test.yml) continue ;; esac
        # metric names: identifiers that contain nvme_apstd_
        grep -o '[a-zA-Z_:][a-zA-Z0-9_:]*' "$f" | sed 's/:*$//' | grep 'nvme_apstd_' | sort -u >"$tmp/names"
        while read -r n; do
                used=$((used + 1))
                case $n in
                *:*) list=$tmp/recorded; what="recording rule" ;;
                *) list=$tmp/exported; what="metric" ;;
                esac
                if ! grep -qx "$n" "$list"; then
                        echo "FAIL: ${f#"$src"/} names $what $n, which the daemon does not export"
                        fails=$((fails + 1))
                fi
        done <"$tmp/names"
        # label values a selector asks for exactly (label="value") must be ones the daemon
        # writes, where the example state has samples with that label
        sed 's/\\"/"/g' "$f" | grep -o 'nvme_apstd_[a-z_]*{[^}]*}' | sort -u >"$tmp/selectors" || true
        while read -r sel; do
                name=${sel%%\{*}
                echo "${sel#*\{}" | tr -d '}' | tr ',' '\n' | sed -n 's/^ *\([a-z_]*\) *= *"\([^"]*\)" *$/\1 \2/p' |
                while read -r label value; do
                        have=$(grep "^$name{" "$tmp/samples" | grep -o "[{,]$label=\"[^\"]*\"" | sed 's/^.[^=]*="//; s/"$//' | sort -u)
                        [ -n "$have" ] || continue
                        if ! echo "$have" | grep -qx "$value"; then
                                echo "FAIL: ${f#"$src"/}: $name{$label=\"$value\"}: the daemon writes $label = $(echo $have)"
                                echo x >>"$tmp/label-fails"
                        fi
                done
        done <"$tmp/selectors"
        echo "ok   ${f#"$src"/}: $(wc -l <"$tmp/names") names"
done
[ ! -s "$tmp/label-fails" ] || fails=$((fails + $(wc -l <"$tmp/label-fails")))
[ "$used" -gt 0 ] || { echo "FAIL: no metric name found under contrib/"; exit 1; }
[ "$fails" -eq 0 ] || { echo "exported: $(tr '\n' ' ' <"$tmp/exported")"; exit 1; }
echo "contrib: every nvme_apstd_ name is an exported family or a recording rule"
