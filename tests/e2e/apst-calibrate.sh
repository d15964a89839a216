# shellcheck shell=bash
# apst-calibrate.sh - sourced by apst-guest.sh (its ok/notok/check/note/step/t,
# ctrl_of, lying_props, table_targets, APST_SERIALS). For each controller the host gave
# apst-exlat-scale-percent=P and apst-exlat-scale-ps=N (APST_PROPS_<serial>,
# apst-host.sh): `nvme-apstd calibrate` on it must measure ps N waking in
# P % of its advertised exit latency, within 20 %, and put the table back.
# Then the seed thread's fix, found automatically: the measurement saved, a
# 15000 µs budget (which 2000 + 10000 µs fits, by the descriptor) keeps ps N
# out of the daemon's table, and the journal says a measurement did it.
# The daemon is stopped meanwhile (calibrate refuses to run beside it).
# Covers: src/cli/cmd-calibrate.c, src/core/calib-plan.c, src/core/calib.c,
# src/platform/calib-store.c.
step "calibrate"
calib_daemon=0
if systemctl is-active -q nvme-apstd.service; then
	calib_daemon=1
	t 90 systemctl stop nvme-apstd.service
fi
for s in $APST_SERIALS; do
	pv="APST_PROPS_$s"
	props=${!pv:-} f="/tmp/calib-$s"
	lp=$(lying_props "$s") || continue
	read -r pct sps <<<"$lp"
	c=$(ctrl_of "$s") || { notok "calibrate: no controller with serial $s"; continue; }
	before=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	t 900 nvme-apstd calibrate "$c" --samples 10 --no-save >"$f".txt 2>"$f".err
	rc=$?
	sed "s/^/# calibrate $c: /" "$f".txt
	sed "s/^/# calibrate $c (stderr): /" "$f".err | head -20
	check "calibrate $c ($props) exits 0 (got $rc)" [ "$rc" = 0 ]
	t 900 nvme-apstd calibrate "$c" --samples 10 --json --no-save >"$f".json 2>/dev/null
	echo "E2E_CALIB_JSON $(jq -c . "$f".json 2>/dev/null)"
	ratio=$(jq -r ".controllers[0].states[] | select(.ps == ${sps:-255}) | .ratio" "$f".json 2>/dev/null)
	check "calibrate $c: ps$sps measured/advertised $ratio is $pct % within 20 %" \
		awk -v r="${ratio:-0}" -v p="$pct" 'BEGIN { exit !(r >= p / 100 * 0.8 && r <= p / 100 * 1.2) }'
	after=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	check "calibrate $c: the table it found is back" [ "${before:-none}" = "$after" ]

	# saved this time, into a state directory of the test's own
	sd=/tmp/calib-state-$s
	t 900 nvme-apstd calibrate "$c" --samples 10 --state-dir "$sd" >"$f".save 2>&1
	check "calibrate $c: a third run saves its results (rc $?)" \
		bash -c "ls '$sd'/calibration/*.calib >/dev/null 2>&1"
	sed "s/^/# calibrate $c (saved): /" "$f".save | tail -n 3
	conf=/tmp/calib-$s.conf
	printf '[apst]\npolicy = budget\nmax_latency_us = 15000\n[device seed]\nmatch_name = %s\n[device rest]\nmatch_name = *\nenable = no\n' \
		"$c" >"$conf"
	nvme-apstd plan --json -c "$conf" --state-dir "/tmp/calib-empty-$s" "$c" >"$f".plain.json 2>/dev/null
	nvme-apstd plan --json -c "$conf" --state-dir "$sd" "$c" >"$f".cal.json 2>/dev/null
	plain=$(jq -r '.controllers[0].description' "$f".plain.json 2>/dev/null)
	cal=$(jq -r '.controllers[0].description' "$f".cal.json 2>/dev/null)
	note "plan from the descriptors: $plain"
	note "plan with the measurement: $cal"
	check "seed fix: from the descriptors ps$sps fits 15000 µs (plan keeps it)" grep -q "→ ps$sps after" <<<"$plain"
	check "seed fix: with the measurement plan leaves ps$sps out" \
		bash -c "! grep -q '→ ps$sps after' <<<'$cal' && jq -e '.controllers[0].power_states[] | select(.ps == $sps) | .measured' '$f.cal.json' >/dev/null"
	# the daemon itself, in the foreground, on this controller only
	NVME_APSTD_LOG_TARGET=console RUNTIME_DIRECTORY=/tmp/calib-run-$s \
		nvme-apstd run -c "$conf" --state-dir "$sd" >"$f".daemon 2>&1 &
	dpid=$!
	i=0
	while ! grep -q "wrote and verified" "$f".daemon && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
	dtargets=$(table_targets "$c")
	note "daemon's table on $c enters: ${dtargets:-nothing}"
	grep -E "measured wake-ups changed|wrote and verified" "$f".daemon | sed "s/^/#   daemon: /" | head -n 4
	check "seed fix: the daemon's table leaves ps$sps out and keeps a shallower state" \
		bash -c "[ -n '$dtargets' ] && ! grep -qw '$sps' <<<'$dtargets'"
	check "seed fix: the daemon's journal says a measured wake-up changed the table" \
		grep -qE "measured wake-ups changed the table: (ps[0-9]+,)*ps${sps}[ ,]" "$f".daemon
	kill -TERM "$dpid"
	wait "$dpid"
	drc=$?
	stopped=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	check "seed fix: the daemon stopped (rc $drc) and put the table back" [ "$drc:$stopped" = "0:$before" ]
done
if [ $calib_daemon = 1 ]; then
	t 90 systemctl start nvme-apstd.service
fi
