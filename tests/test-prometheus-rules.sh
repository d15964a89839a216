#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# contrib/prometheus/nvme-apstd.rules.yml: promtool check rules (syntax,
# PromQL, templates), promtool test rules (nvme-apstd.rules.test.yml), and
# that every alert has a test where it fires and one where it does not, and a
# runbook section in doc/alerts.md that its runbook annotation names.
# Usage: test-prometheus-rules.sh SOURCE-ROOT
# Covers: contrib/prometheus/nvme-apstd.rules.yml, contrib/prometheus/nvme-apstd.rules.test.yml,
# doc/alerts.md.
set -eu
if ! command -v promtool >/dev/null 2>&1; then
        echo "SKIP: promtool not installed (Debian package prometheus, tests/deps.sh test)"
        exit 77
fi
src=$1
dir=$src/contrib/prometheus
rules=$dir/nvme-apstd.rules.yml
tests=$dir/nvme-apstd.rules.test.yml
runbook=$src/doc/alerts.md

promtool check rules "$rules"
# test rules resolves rule_files against the test file's directory
promtool test rules "$tests"

fails=0
alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$rules")
[ -n "$alerts" ] || { echo "FAIL: no alert in $rules"; exit 1; }
for a in $alerts; do
        # after "alertname: A", the next exp_alerts line is "exp_alerts: []" (not firing)
        # or "exp_alerts:" followed by expected alerts (firing)
        cases=$(awk -v a="$a" '
                $1 == "alertname:" { cur = ($2 == a); next }
                cur && $1 == "exp_alerts:" { print ($2 == "[]" ? "quiet" : "fires"); cur = 0 }' "$tests" | sort -u | tr '\n' ' ')
        case $cases in
        "fires quiet ") echo "ok   $a: tested firing and not firing" ;;
        *) echo "FAIL: $a: tests in $tests cover only: '${cases:-none}' (need fires and quiet)"; fails=$((fails + 1)) ;;
        esac
        anchor=$(echo "$a" | tr 'A-Z' 'a-z')
        if ! grep -q "runbook: \"doc/alerts.md#$anchor\"" "$rules"; then
                echo "FAIL: $a: no runbook annotation doc/alerts.md#$anchor"
                fails=$((fails + 1))
        elif ! grep -q "^## $a\$" "$runbook"; then
                echo "FAIL: $a: no section '## $a' in doc/alerts.md"
                fails=$((fails + 1))
        fi
done
# a runbook section for an alert that no longer exists is stale
for a in $(sed -n 's/^## \(NvmeApstd[A-Za-z0-9]*\)$/\1/p' "$runbook"); do
        echo "$alerts" | grep -qx "$a" || { echo "FAIL: doc/alerts.md has a section for $a, which is no alert"; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ] || exit 1
echo "prometheus rules: $(echo "$alerts" | wc -l) alerts checked, tested and documented"
