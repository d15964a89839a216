# shellcheck shell=bash
# shellcheck disable=SC2154 # fails: apst-guest.sh's count of failed checks
# apst-adaptive.sh - sourced by apst-guest.sh after apst-passive.sh (its
# ok/notok/check/note/step/t, ctrl_of, lying_props, ns_dev,
# table_targets, cursor, djson, APST_SERIALS).
# The default policy on a drive that lies, as a user meets it: the stock
# unit, the shipped defaults (policy adaptive, [watch] source auto), nothing
# learned, no stored calibration and no `calibrate`. The only change to the
# defaults keeps the daemon to the lying controller. Sporadic reads, each
# after 2.5 s idle: under the kernel's table every one wakes the drive from
# psN, which takes P % of what psN advertises. On its own, the daemon must
#  - watch the I/O with the eBPF program;
#  - measure the slow wake-ups and say so in the journal entry of the table
#    it chooses (MESSAGE_ID MSGID_ADAPT_TABLE, "measured wake-ups: psN ...");
#  - hold a table in the drive that no longer enters psN;
#  - have paid less wake delay since start than the kernel's table would
#    have on the same reads, three bursts later (its own account,
#    `nvme-apstd status --json`);
#  - put the table it found back at stop.
# Covers: src/core/adapt.c, src/core/watch.c, src/daemon/manager-watch.c, src/platform/bpfwatch.c.
AD_UNIT=nvme-apstd.service
# ad_entries CURSOR MSGID: the daemon's entries with MSGID after CURSOR, as a JSON array.
ad_entries() {
	journalctl --sync >/dev/null 2>&1
	djson "$1" | jq --arg id "$2" '[.[] | select(.MESSAGE_ID == $id)]'
}

step "adaptive default on a drive that lies (eBPF, nothing learned, no calibrate)"
for s in $APST_SERIALS; do
	lp=$(lying_props "$s") || continue
	read -r pct sps <<<"$lp"
	c=$(ctrl_of "$s") || { notok "adaptive: no controller with serial $s"; continue; }
	adv=$(t 30 nvme id-ctrl "/dev/$c" -o json 2>/dev/null | jq -r ".psds[$sps].exit_lat")
	dev=$(ns_dev "$c") || { notok "adaptive: $c has no namespace block device"; continue; }

	ad_was_active=0
	systemctl is-active -q "$AD_UNIT" && ad_was_active=1
	t 90 systemctl stop "$AD_UNIT"
	ad_before=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	ad_kt=$(table_targets "$c")
	note "the kernel's table on $c enters: ${ad_kt:-nothing}"
	# Nothing learned: the state directory (learned gaps and latencies, calibrations) set aside.
	rm -rf /var/lib/nvme-apstd.e2e-aside
	[ -d /var/lib/nvme-apstd ] && mv /var/lib/nvme-apstd /var/lib/nvme-apstd.e2e-aside
	cp -a /etc/nvme-apstd.conf /tmp/nvme-apstd.conf.e2e-aside 2>/dev/null
	# The shipped file, with only the lying controller left managed.
	{
		cat /tmp/nvme-apstd.conf.e2e-aside 2>/dev/null
		printf '\n[device lying]\nmatch_name = %s\n[device rest]\nmatch_name = *\nenable = no\n' "$c"
	} >/etc/nvme-apstd.conf
	check "adaptive $c: the configuration sets no policy, source or calibration of its own" \
		bash -c "! grep -qE '^[[:space:]]*(policy|source|stall_budget_pct|max_latency_us)[[:space:]]*=' /etc/nvme-apstd.conf"
	c0=$(cursor)
	ad_fails0=$fails
	check "adaptive $c: systemctl start $AD_UNIT (stock unit and defaults)" t 90 systemctl start "$AD_UNIT"
	src=$(ad_entries "$c0" "$MSGID_WATCH_SOURCE" | jq -r '[.[] | .APST_WATCH_SOURCE // empty] | last // "none"')
	check "adaptive $c: the daemon watches its I/O with the eBPF program (source: $src)" [ "$src" = bpf ]

	# Sporadic reads, one burst every ~2.5 s, until a table leaves psN out of the drive (at most
	# 40). Both the start table and the kernel's enter psN, so one that does not is the policy's.
	# Nothing else in the loop: under TCG a journalctl takes seconds and would stretch the gaps.
	reads=0 left=0
	for i in $(seq 1 40); do
		sleep 2.5
		t 30 dd if="$dev" of=/dev/null bs=4096 count=3 skip=$((i * 64)) iflag=direct status=none
		reads=$i
		tg=$(table_targets "$c")
		if [ -n "$tg" ] && ! grep -qw "$sps" <<<"$tg"; then left=1; break; fi
	done
	# Three more bursts on the policy's table, so its account has gaps it paid less for.
	if [ $left = 1 ]; then
		for i in 41 42 43; do
			sleep 2.5
			t 30 dd if="$dev" of=/dev/null bs=4096 count=3 skip=$((i * 64)) iflag=direct status=none
		done
	fi
	sleep 1
	note "after $reads sporadic reads the drive's table enters: $(table_targets "$c")"
	ad_entries "$c0" "$MSGID_ADAPT_TABLE" | jq -r '.[] | "#   journal: " + .MESSAGE' | head -n 6
	check "adaptive $c: after $reads reads a table the policy chose is in the drive, no longer enters ps$sps, keeps a shallower state" \
		[ "$left" = 1 ]
	check "adaptive $c: the passive estimate did not put the start table back over the policy's" \
		bash -c "! timeout 30 journalctl -q --no-pager -u $AD_UNIT --after-cursor='$c0' | grep -q 'measured wake-ups changed the table'"
	why=$(ad_entries "$c0" "$MSGID_ADAPT_TABLE" | jq -r '[.[] | .MESSAGE] | last // ""')
	ms=$(sed -n "s/.*measured wake-ups: .*ps$sps \([0-9.]*\) ms not.*/\1/p" <<<"$why")
	check "adaptive $c: the journal says why: ps$sps measured ${ms:-nothing} ms, $pct % of $adv µs within 25 %" \
		awk -v m="${ms:-0}" -v a="$adv" -v p="$pct" 'BEGIN { t = a * p / 100 / 1000; exit !(m >= t * 0.75 && m <= t * 1.25) }'
	factor=$(ad_entries "$c0" "$MSGID_ADAPT_TABLE" | jq -r '[.[] | .APST_EXLAT_FACTOR] | last // "0"')
	check "adaptive $c: its APST_EXLAT_FACTOR ($factor) says the drive wakes slower than it says" \
		awk -v f="$factor" 'BEGIN { exit !(f > 1.5) }'
	st=$(t 30 nvme-apstd status --json 2>/dev/null | jq -c --arg c "$c" \
		'.controllers[] | select(.name == $c) | {watch_source, wake_delay_usec, kernel_wake_delay_usec, energy_uj, kernel_energy_uj}')
	note "status: $st"
	echo "E2E_ADAPTIVE_JSON {\"ctrl\": \"$c\", \"ps\": $sps, \"advertised_us\": $adv, \"reads\": $reads, \"measured_ms\": ${ms:-null}, \"status\": ${st:-null}}"
	check "adaptive $c: since start it paid less wake delay than the kernel's table would have on the same reads" \
		jq -e '.wake_delay_usec < .kernel_wake_delay_usec' <<<"${st:-null}"
	if [ "$fails" != "$ad_fails0" ]; then
		note "the daemon's journal since its start (the checks above failed):"
		t 30 journalctl -q --no-pager -o short-monotonic --after-cursor="$c0" -u "$AD_UNIT" | tail -n 60 | sed 's/^/#   /'
	fi

	t 90 systemctl stop "$AD_UNIT"
	stopped=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | od -An -tx1 | tr -d ' \n')
	check "adaptive $c: the daemon stopped and put the table it found back" [ "$stopped" = "$ad_before" ]

	# As it was: the configuration, the state directory, the service.
	if [ -f /tmp/nvme-apstd.conf.e2e-aside ]; then mv /tmp/nvme-apstd.conf.e2e-aside /etc/nvme-apstd.conf; fi
	rm -rf /var/lib/nvme-apstd
	[ -d /var/lib/nvme-apstd.e2e-aside ] && mv /var/lib/nvme-apstd.e2e-aside /var/lib/nvme-apstd
	[ $ad_was_active = 1 ] && t 90 systemctl start "$AD_UNIT"
done
