# shellcheck shell=bash
# apst-passive.sh - sourced by apst-guest.sh after apst-calibrate.sh (its
# ok/notok/check/note/step/t, ctrl_of, lying_props, ns_dev, table_targets, APST_SERIALS).
# Passive calibration against a drive that lies: for each controller the host
# gave apst-exlat-scale-percent=P and apst-exlat-scale-ps=N, the daemon (in the
# foreground, on that controller only, [watch] source = bpf, no stored
# calibration, no `calibrate`) sees sporadic reads that reach psN through the
# eBPF program on Debian's kernel. Its passive estimate of psN's exit latency
# must be P % of the advertised one within 25 %, and the budget policy must
# then plan with it as with a stored calibration: under a 15000 µs budget,
# which 2000 + 10000 µs fits by the descriptor and 2000 + 3 x 10000 does not,
# psN leaves the table and the journal says a measured wake-up did it.
# Covers: src/platform/bpfwatch.c, src/platform/bpf/iogap.bpf.c, src/core/passive-calib.c,
# src/daemon/manager-watch.c.
step "passive calibration (eBPF)"
pc_daemon=0
if systemctl is-active -q nvme-apstd.service; then
	pc_daemon=1
	t 90 systemctl stop nvme-apstd.service
fi
for s in $APST_SERIALS; do
	f="/tmp/passive-$s"
	lp=$(lying_props "$s") || continue
	read -r pct sps <<<"$lp"
	c=$(ctrl_of "$s") || { notok "passive: no controller with serial $s"; continue; }
	adv=$(t 30 nvme id-ctrl "/dev/$c" -o json 2>/dev/null | jq -r ".psds[$sps].exit_lat")
	truth=$((adv * pct / 100))
	dev=$(ns_dev "$c") || { notok "passive: $c has no namespace block device"; continue; }
	before=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	conf=$f.conf
	# pin = busy keeps the I/O watcher on a budget table (which the policy does not move);
	# no cpufreq here, so nothing is pinned
	printf '[apst]\npolicy = budget\nmax_latency_us = 15000\n[cpu]\npin = busy\n[watch]\nsource = bpf\n[device seed]\nmatch_name = %s\n[device rest]\nmatch_name = *\nenable = no\n' \
		"$c" >"$conf"
	NVME_APSTD_LOG_TARGET=console RUNTIME_DIRECTORY=$f-run \
		nvme-apstd run -c "$conf" --state-dir "$f-state" >"$f".daemon 2>&1 &
	dpid=$!
	i=0
	while ! grep -q "wrote and verified" "$f".daemon && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
	check "passive $c: the daemon watches its I/O with the eBPF program on $(uname -r)" \
		grep -q "Watching I/O with the eBPF program" "$f".daemon
	grep -E "eBPF|wrote and verified" "$f".daemon | sed "s/^/#   daemon: /" | head -n 4
	# Sporadic reads: each after 2.5 s idle (the budget table enters ps$sps after about 1.2 s),
	# three in a row so that the second and third find the drive awake.
	for i in $(seq 1 10); do
		sleep 2.5
		t 30 dd if="$dev" of=/dev/null bs=4096 count=3 skip=$((i * 64)) iflag=direct status=none
		grep -q "ps$sps wakes in" "$f".daemon && break
	done
	i=0
	while ! grep -q "ps$sps wakes in" "$f".daemon && [ $i -lt 40 ]; do sleep 0.5; i=$((i + 1)); done
	line=$(grep "ps$sps wakes in" "$f".daemon | head -n 1)
	note "daemon: ${line%% \{*}"
	meas=$(echo "$line" | sed -n "s/.*ps$sps wakes in \([0-9]*\) µs.*/\1/p")
	echo "E2E_PASSIVE_JSON {\"ctrl\": \"$c\", \"ps\": $sps, \"advertised_us\": $adv, \"truth_us\": $truth, \"measured_us\": ${meas:-null}}"
	check "passive $c: ps$sps measured ${meas:-nothing} µs without calibrate, $pct % of $adv µs = $truth µs within 25 %" \
		awk -v m="${meas:-0}" -v t="$truth" 'BEGIN { exit !(m >= t * 0.75 && m <= t * 1.25) }'
	i=0
	while ! grep -q "measured wake-ups changed the table" "$f".daemon && [ $i -lt 40 ]; do sleep 0.5; i=$((i + 1)); done
	check "passive $c: the budget policy planned with it (the journal says a measured wake-up changed the table)" \
		grep -qE "measured wake-ups changed the table: (ps[0-9]+,)*ps${sps}[ ,]" "$f".daemon
	sleep 1
	dtargets=$(table_targets "$c")
	note "daemon's table on $c now enters: ${dtargets:-nothing}"
	check "passive $c: the table in the drive leaves ps$sps out and keeps a shallower state" \
		bash -c "[ -n '$dtargets' ] && ! grep -qw '$sps' <<<'$dtargets'"
	kill -TERM "$dpid"
	wait "$dpid"
	drc=$?
	stopped=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	check "passive $c: the daemon stopped (rc $drc) and put the table back" [ "$drc:$stopped" = "0:$before" ]
done
if [ $pc_daemon = 1 ]; then
	t 90 systemctl start nvme-apstd.service
fi
