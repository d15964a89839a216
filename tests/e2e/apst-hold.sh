# shellcheck shell=bash
# shellcheck disable=SC2317
# Sourced by apst-guest.sh after apst-daemon.sh (its helpers and its choice: DC/DS, the
# controller whose planned table differs from the kernel's, PLAN, readback, plan_of,
# wait_table, dhave, dshow; the daemon is stopped when it ends).
# Latency holds with real systemd, dbus and Debian's polkitd (doc/holds.md):
#  1. `nvme-apstd hold --max-latency 0 DC -- COMMAND` as root: COMMAND's own read-back of
#     the table (nvme get-feature -f 0x0c) is the held one (APSTE 0), and the planned table
#     is back after it exits;
#  2. a user without a login session is refused (exit 125, COMMAND never runs); a rules file
#     in /etc/polkit-1/rules.d/ allowing that user lets the same command hold;
#  3. `systemctl restart nvme-apstd` while a hold's COMMAND runs: the client takes the hold
#     again (the journal's "hold taken" within 2 s of the new daemon's start) and says so.
HOLD_USER=apstd-holder
HOLD_RULES=/etc/polkit-1/rules.d/50-e2e-nvme-apstd-hold.rules
APSTD=$(command -v nvme-apstd || echo /usr/sbin/nvme-apstd)

step "holds: root, an unprivileged user and polkit, a restart under a hold"
if [ -z "${DC:-}" ]; then
	notok "holds: no controller whose planned table differs from the kernel's (apst-daemon.sh found none)"
else
	printf '[apst]\npolicy = budget\n' >/etc/nvme-apstd.conf
	check "holds: polkitd is installed and the action is known to it" \
		t 30 pkaction --action-id io.github.nvme_apstd.hold-latency
	check "holds: systemctl start $UNIT" t 90 systemctl start "$UNIT"
	check "holds: $DC holds the planned table" wait_table 30 "$DC" "${PLAN[$DS]}"
	printf '[apst]\npolicy = budget\nmax_latency_us = 0\n' >/tmp/hold-zero.conf
	HELD=$(t 60 nvme-apstd plan --json --config /tmp/hold-zero.conf "$DC" 2>/dev/null | jq -c '.controllers[0].table')
	export -f hex64 json_lines     # for COMMAND's own read-back, in a shell of its own

	# 1. root: COMMAND reads the table back itself, first thing
	c0=$(cursor)
	rm -f /tmp/hold-during.json /tmp/hold-during.apste
	t 120 "$APSTD" hold --max-latency 0 --reason e2e --app-id e2e.root "$DC" -- \
		bash -c "nvme get-feature /dev/$DC -f 0x0c -b | hex64 | json_lines >/tmp/hold-during.json
			nvme get-feature /dev/$DC -f 0x0c >/tmp/hold-during.apste; exit 7"
	rc=$?
	check "hold (root): exit status 7, COMMAND's" [ "$rc" = 7 ]
	note "hold (root): read back by COMMAND: $(cut -c1-120 /tmp/hold-during.json 2>/dev/null); $(head -n 1 /tmp/hold-during.apste 2>/dev/null)"
	check "hold (root): the table COMMAND read back is the one planned for 0 us (all zero)" \
		[ "$(cat /tmp/hold-during.json 2>/dev/null)" = "$HELD" ]
	check "hold (root): APSTE 0 while COMMAND ran (nvme get-feature -f 0x0c: Current value 0)" \
		grep -Eq 'Current value: *(0x)?0+$' /tmp/hold-during.apste
	check "hold (root): the planned table back after COMMAND exited" wait_table 10 "$DC" "${PLAN[$DS]}"
	check "hold (root): APSTE 1 again" bash -c "nvme get-feature /dev/$DC -f 0x0c | grep -Eq 'Current value: *(0x)?0*1$'"
	check "journal: the hold's start and end, with its application id" \
		dhave 10 "$c0" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_HOLD_ENDED\") and (.HOLD_APPLICATION_ID == \"e2e.root\")"

	# 2. a user without a session: refused; allowed through a rules file
	id "$HOLD_USER" >/dev/null 2>&1 || useradd -M -s /bin/sh "$HOLD_USER"
	rm -f /tmp/hold-user-ran "$HOLD_RULES"
	t 120 setpriv --reuid="$HOLD_USER" --regid="$HOLD_USER" --init-groups \
		"$APSTD" hold --max-latency 0 "$DC" -- touch /tmp/hold-user-ran </dev/null 2>/tmp/hold-user.err
	rc=$?
	note "hold ($HOLD_USER, no session): $(head -c 300 /tmp/hold-user.err)"
	check "hold ($HOLD_USER, no session): refused by polkit, exit 125" [ "$rc" = 125 ]
	check "hold ($HOLD_USER, no session): COMMAND never ran" [ ! -e /tmp/hold-user-ran ]
	check "hold ($HOLD_USER, no session): the table untouched" [ "$(readback "$DC")" = "${PLAN[$DS]}" ]
	cat >"$HOLD_RULES" <<-EOF
		polkit.addRule(function(action, subject) {
		        if (action.id == "io.github.nvme_apstd.hold-latency" && subject.user == "$HOLD_USER")
		                return polkit.Result.YES;
		});
	EOF
	# polkitd reads rules.d again when it changes; give it a moment, then ask until it answers yes
	rc=1
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		sleep 1
		t 120 setpriv --reuid="$HOLD_USER" --regid="$HOLD_USER" --init-groups \
			"$APSTD" hold --max-latency 0 "$DC" -- sh -c 'touch /tmp/hold-user-ran; while [ ! -e /tmp/hold-user-stop ]; do sleep 0.2; done' \
			</dev/null 2>/tmp/hold-user.err &
		hp=$!
		i=0
		while [ ! -e /tmp/hold-user-ran ] && kill -0 "$hp" 2>/dev/null && [ $i -lt 240 ]; do sleep 0.25; i=$((i + 1)); done
		[ -e /tmp/hold-user-ran ] && break
		wait "$hp"
	done
	check "hold ($HOLD_USER, allowed by $HOLD_RULES): COMMAND runs" [ -e /tmp/hold-user-ran ]
	check "hold ($HOLD_USER): $DC holds the table planned for 0 us while it runs" wait_table 10 "$DC" "$HELD"
	touch /tmp/hold-user-stop
	wait "$hp"
	rc=$?
	check "hold ($HOLD_USER): exit 0 once COMMAND is done" [ "$rc" = 0 ]
	check "hold ($HOLD_USER): the planned table back" wait_table 10 "$DC" "${PLAN[$DS]}"
	rm -f "$HOLD_RULES" /tmp/hold-user-stop

	# 3. systemctl restart during a hold
	rm -f /tmp/hold-restart-ran /tmp/hold-restart-stop
	"$APSTD" hold --max-latency 0 "$DC" -- sh -c 'touch /tmp/hold-restart-ran; while [ ! -e /tmp/hold-restart-stop ]; do sleep 0.2; done' \
		</dev/null 2>/tmp/hold-restart.err &
	hp=$!
	i=0
	while [ ! -e /tmp/hold-restart-ran ] && [ $i -lt 240 ]; do sleep 0.25; i=$((i + 1)); done
	check "hold (restart): COMMAND runs under the hold" wait_table 10 "$DC" "$HELD"
	c1=$(cursor)
	check "systemctl restart $UNIT during the hold" t 120 systemctl restart "$UNIT"
	check "hold (restart): $DC holds the table planned for 0 us again" wait_table 20 "$DC" "$HELD"
	# from the new daemon's start entry to its "hold taken" entry, by the journal's clock
	took=$(djson "$c1" | jq -r --arg s "$MSGID_DAEMON_STARTED" --arg h "$MSGID_HOLD_STARTED" '
		([.[] | select(.MESSAGE_ID == $s) | .__REALTIME_TIMESTAMP | tonumber] | last) as $t0 |
		([.[] | select(.MESSAGE_ID == $h) | .__REALTIME_TIMESTAMP | tonumber] | last) as $t1 |
		if $t0 and $t1 then (($t1 - $t0) / 1000000) else "none" end' 2>/dev/null)
	note "hold (restart): taken again ${took} s after the daemon's start entry"
	# shellcheck disable=SC2016
	check "hold (restart): taken again within 2 s of the new daemon's start" \
		[ "$(jq -n --arg x "$took" '($x | tonumber? // 99) <= 2')" = true ]
	check "hold (restart): the client said so on stderr" grep -q "in force again" /tmp/hold-restart.err
	touch /tmp/hold-restart-stop
	wait "$hp"
	rc=$?
	check "hold (restart): exit 0 once COMMAND is done" [ "$rc" = 0 ]
	check "hold (restart): the planned table back" wait_table 10 "$DC" "${PLAN[$DS]}"
	sed 's/^/#   client: /' /tmp/hold-restart.err | head -n 10
	dshow "$c0" "$DAEMON_J and ((.MESSAGE_ID == \"$MSGID_HOLD_STARTED\") or (.MESSAGE_ID == \"$MSGID_HOLD_ENDED\"))"
	check "holds: systemctl stop $UNIT" t 60 systemctl stop "$UNIT"
fi
