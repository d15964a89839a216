# shellcheck shell=bash
# shellcheck disable=SC2317
# Sourced by apst-guest.sh after the parity sets (its helpers: check, note,
# step, t, ctrl_of, hex64, json_lines, dmesg_line, dmesg_table, cursor, djson,
# DAEMON_J, the MSGID_* of ids.sh, /tmp/kt-*.json
# = the kernel's table under the default parameters).
# The daemon keeping its table against the real kernel, on the emulated
# controllers with APST:
#  1. start: every controller holds the daemon's planned table;
#  2. reset_controller: the kernel writes its own table again, the daemon
#     writes its own back, and its journal entry names the table it found
#     (the kernel's);
#  3. a pm_qos_latency_tolerance_us write: the kernel rewrites without any
#     uevent. What notices it (inotify, poll); the daemon's inotify watch puts
#     its table back with no I/O, and how long that took;
#  4. suspend to RAM and resume (QMP system_wakeup from the host): the kernel
#     rewrites on resume, the daemon re-applies;
#  5. stop: the table found at start (the kernel's) is back in the controller.
# Covers: src/daemon/manager.c, src/daemon/manager-qos.c, src/engine/controller.c.
UNIT=nvme-apstd.service
VERIFY_MS=5000
# dhave SECS CURSOR FILTER: a daemon entry after CURSOR matching FILTER.
dhave() {
	local end=$((SECONDS + $1))
	while :; do
		djson "$2" | jq -e "[.[] | select($3)] | length > 0" >/dev/null 2>&1 && return 0
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
dshow() {
	djson "$1" | jq -r ".[] | select($2) | \"#   \" + (.MESSAGE | tostring) + \"  [\" +
	  ([to_entries[] | select(.key | test(\"^(NVME_CTRL|APST_REASON|APST_TABLE|APST_TABLE_WRITTEN)$\"))
	    | \"\(.key)=\(.value | tostring)\"] | join(\" \")) + \"]\"" 2>/dev/null | head -n 20
}
readback() { t 30 nvme get-feature "/dev/$1" -f 0x0c -b 2>/dev/null | hex64 | json_lines; }
plan_of() { t 60 nvme-apstd plan --json "$1" 2>/dev/null | jq -c '.controllers[0].table'; }
# wait_table SECS CTRL JSON: the controller holds JSON within SECS; TOOK =
# the seconds it took.
wait_table() {
	local start=$SECONDS end=$((SECONDS + $1))
	while :; do
		[ "$(readback "$2")" = "$3" ] && { TOOK=$((SECONDS - start)); return 0; }
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
hexline() { echo "$1" | jq -r 'join(" ")'; }

step "daemon: start (policy budget, verify every ${VERIFY_MS} ms)"
# The budget policy, said explicitly (the default is adaptive, which on the eBPF source picks its
# own table from the first gaps: these checks are about the daemon keeping a planned table).
# [cpu] pin = busy keeps an I/O watcher on every controller all the same (no cpufreq here, so
# nothing is pinned): the unit must load the eBPF program for it.
printf '[apst]\npolicy = budget\n[cpu]\npin = busy\n' >/etc/nvme-apstd.conf
# The stock unit, with a shorter verify interval so the test waits seconds.
mkdir -p /etc/systemd/system/$UNIT.d
printf '[Service]\nExecStart=\nExecStart=%s run --verify-interval-ms=%s\n' \
	"$(command -v nvme-apstd)" "$VERIFY_MS" >/etc/systemd/system/$UNIT.d/e2e-verify.conf
systemctl daemon-reload
# The daemon's controller for the rest: the first whose plan differs from
# the kernel's table (else a rewrite could not be told from ours).
DS='' DC=''
declare -A PLAN
for s in $APST_SERIALS; do
	c=$(ctrl_of "$s") || continue
	PLAN[$s]=$(plan_of "$c")
	if [ -z "$DS" ] && [ "${PLAN[$s]}" != "$(cat "/tmp/kt-$s.json")" ]; then DS=$s DC=$c; fi
done
c0=$(cursor)
check "systemctl start $UNIT" t 90 systemctl start "$UNIT"
for s in $APST_SERIALS; do
	c=$(ctrl_of "$s") || continue
	f=APST_FILE_$s
	check "start: ${!f} ($c) holds the daemon's planned table" wait_table 20 "$c" "${PLAN[$s]}"
done
check "journal: the daemon wrote and verified the tables" dhave 10 "$c0" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_TABLE_WRITTEN\")"
# The unit's sandbox lets it load the eBPF I/O gap program (CAP_BPF, CAP_PERFMON, bpf()) on
# Debian's kernel: the I/O watchers (pin = busy) use it.
check "journal: under its unit the daemon watches I/O with the eBPF program (APST_WATCH_SOURCE=bpf)" \
	dhave 20 "$c0" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_WATCH_SOURCE\") and (.APST_WATCH_SOURCE == \"bpf\")"
dshow "$c0" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_WATCH_SOURCE\")"
dshow "$c0" "$DAEMON_J"
if [ -z "$DC" ]; then
	notok "no controller where the daemon's table differs from the kernel's: cannot test rewrites"
	DS=${APST_SERIALS%% *} DC=$(ctrl_of "$DS")
fi
f=APST_FILE_$DS
note "rewrite tests on $DC (${!f}): kernel $(hexline "$(cat "/tmp/kt-$DS.json")" | tr ' ' '\n' | grep -vc 0x0000000000000000) non-zero entries, daemon's plan $(hexline "${PLAN[$DS]}" | tr ' ' '\n' | grep -vc 0x0000000000000000)"
KT=$(cat "/tmp/kt-$DS.json")

step "daemon: reset_controller"
c1=$(cursor)
mark="reset.$RANDOM"
echo "E2E_APST_MARK $mark" >/dev/kmsg
echo 1 >"/sys/class/nvme/$DC/reset_controller"
wait_live
kwrote=$(dmesg_table "$DC" "$mark" | json_lines)
note "kernel's debug line after the reset: $(dmesg_line "$DC" "$mark")"
# (the debug line holds the first 8 entries)
# same_head JSON: the kernel's debug line (its first entries) == JSON's start
same_head() { [ -n "$kwrote" ] && [ "$kwrote" = "$(echo "$1" | jq -c ".[0:$(echo "$kwrote" | jq length)]")" ]; }
check "reset: the kernel wrote its own table again (its debug line == its table at probe)" same_head "$KT"
if wait_table 30 "$DC" "${PLAN[$DS]}"; then
	ok "reset: the daemon's table is back in $DC after ${TOOK} s"
else
	notok "reset: the daemon's table is not back in $DC within 30 s (holds $(readback "$DC"))"
fi
check "journal: 'table overwritten' names what the kernel had written (APST_TABLE == the kernel's table)" \
	dhave 10 "$c1" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_TABLE_OVERWRITTEN\") and (.NVME_CTRL == \"$DC\") and (.APST_TABLE == \"$(hexline "$KT")\")"
dshow "$c1" "$DAEMON_J"

step "daemon: pm_qos_latency_tolerance_us write"
QOS=/sys/class/nvme/$DC/power/pm_qos_latency_tolerance_us
old_qos=$(cat "$QOS")
new_qos=$((old_qos - 1000))
t 60 udevadm monitor --kernel --property >/tmp/qos-uevents.txt 2>&1 &
mon=$!
"$D/apst-sysfs-watch" "$QOS" 4000 >/tmp/qos-watch.txt 2>&1 &
watch=$!
for _ in $(seq 20); do grep -q ready /tmp/qos-watch.txt && break; sleep 0.2; done
sleep 1
io0=$(awk '{print $1 + $5}' "/sys/class/nvme/$DC/${DC}n1/stat" 2>/dev/null || echo '?')
mark="qos.$RANDOM"
echo "E2E_APST_MARK $mark" >/dev/kmsg
c2=$(cursor)
# The daemon watches the attribute (inotify IN_MODIFY) and puts its table
# back at once, with admin commands only: no I/O on the idle drive. The
# bound measured: from the write to our table read back (polled).
qos_t0=$(date +%s%N)
echo "$new_qos" >"$QOS"
back=0
for _ in $(seq 200); do
	[ "$(readback "$DC")" = "${PLAN[$DS]}" ] && { back=1; break; }
	sleep 0.05
done
qos_ms=$((($(date +%s%N) - qos_t0) / 1000000))
wait "$watch"
sleep 1
kill "$mon" 2>/dev/null
wait "$mon" 2>/dev/null
note "kernel's debug line after the write: $(dmesg_line "$DC" "$mark")"
note "notifications on $QOS: $(grep -v -e ready -e 'done' /tmp/qos-watch.txt | sort | uniq -c | tr -s ' \n' ' ')"
note "uevents during the write: $(grep -c '^KERNEL\[' /tmp/qos-uevents.txt) ($(grep '^KERNEL\[' /tmp/qos-uevents.txt | tr -s ' ' | cut -d' ' -f2-4 | tr '\n' ';'))"
qos_head=$(dmesg_table "$DC" "$mark" | json_lines)
rewrote() { [ -n "$(dmesg_line "$DC" "$mark")" ] && [ "$qos_head" != "$(echo "${PLAN[$DS]}" | jq -c ".[0:$(echo "$qos_head" | jq length)]")" ]; }
check "pm_qos: the kernel rewrote the table inside the write (its debug line, a table other than the daemon's)" rewrote
check "pm_qos: no uevent for it (nothing for the daemon's udev monitor)" \
	bash -c "! grep -q '^KERNEL\[' /tmp/qos-uevents.txt"
check "pm_qos: inotify reports the write (IN_MODIFY on the attribute)" \
	grep -q 'inotify.*IN_MODIFY' /tmp/qos-watch.txt
if grep -q 'poll POLLPRI' /tmp/qos-watch.txt; then note "poll(POLLPRI) fired too (sysfs_notify)"; else note "poll(POLLPRI) did not fire (no sysfs_notify for this attribute)"; fi
io1=$(awk '{print $1 + $5}' "/sys/class/nvme/$DC/${DC}n1/stat" 2>/dev/null || echo '?')
note "I/O requests on ${DC}n1 before/after: $io0/$io1"
if [ "$back" = 1 ]; then
	ok "pm_qos: the daemon's table is back in $DC ${qos_ms} ms after the write (no verify tick, no I/O)"
else
	notok "pm_qos: the daemon's table is not back in $DC within 10 s of the write (holds $(readback "$DC"))"
fi
echo "E2E_APST_QOS_MS=$qos_ms"
# The daemon's own part: from the write to its 'wrote and verified' entry
# (journald's receive time), without nvme-cli's start-up under TCG.
qos_j=$(djson "$c2" | jq -r "[.[] | select(.MESSAGE_ID == \"$MSGID_TABLE_WRITTEN\" and .APST_REASON == \"pm_qos\" and .NVME_CTRL == \"$DC\")][0].__REALTIME_TIMESTAMP // empty")
[ -n "$qos_j" ] && echo "E2E_APST_QOS_JOURNAL_MS=$(((qos_j - qos_t0 / 1000) / 1000))"
check "pm_qos: the drive stayed idle (I/O counters $io0 -> $io1)" [ "$io0" = "$io1" ]
check "journal: the pm_qos write logged (PM_QOS_LATENCY_TOLERANCE_US=$new_qos)" \
	dhave 10 "$c2" "$DAEMON_J and (.NVME_CTRL == \"$DC\") and (.PM_QOS_LATENCY_TOLERANCE_US == \"$new_qos\")"
check "journal: 'table overwritten' (APST_REASON=pm_qos) names the kernel's table (APST_TABLE starts with its debug line's entries)" \
	dhave 10 "$c2" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_TABLE_OVERWRITTEN\") and (.NVME_CTRL == \"$DC\") and (.APST_REASON == \"pm_qos\") and ((.APST_TABLE // \"\") | startswith(\"$(hexline "${qos_head:-[\"none\"]}")\"))"
dshow "$c2" "$DAEMON_J"
echo "$old_qos" >"$QOS"
wait_table 10 "$DC" "${PLAN[$DS]}" || note "pm_qos back to $old_qos: the daemon's table is not back within 10 s"

step "daemon: suspend to RAM and resume"
note "/sys/power/mem_sleep: $(cat /sys/power/mem_sleep 2>/dev/null)"
c3=$(cursor)
mark="s3.$RANDOM"
echo "E2E_APST_MARK $mark" >/dev/kmsg
# Ask the host to wake the guest (QMP system_wakeup) once it is suspended.
echo "E2E_APST_SUSPEND"
sync
t 60 systemctl suspend
i=0
while ! dmesg | awk -v m="E2E_APST_MARK $mark" 'index($0, m) {on = 1} on && /PM: suspend exit/ {f = 1} END {exit !f}' && [ $i -lt 120 ]; do
	sleep 0.5
	i=$((i + 1))
done
check "suspend: the guest went to S3 (deep) and came back (dmesg after the mark: 'PM: suspend entry (deep)', 'PM: suspend exit')" \
	bash -c "dmesg | awk -v m='E2E_APST_MARK $mark' 'index(\$0, m) {on = 1} on' | grep -q 'PM: suspend entry (deep)' &&
		dmesg | awk -v m='E2E_APST_MARK $mark' 'index(\$0, m) {on = 1} on' | grep -q 'PM: suspend exit'"
dmesg | awk -v m="E2E_APST_MARK $mark" 'index($0, m) {on = 1} on' | grep -E 'PM: suspend|ACPI: PM|nvme' | head -n 12 | sed 's/^/#   dmesg: /'
wait_live
kwrote=$(dmesg_table "$DC" "$mark" | json_lines)
check "resume: the kernel wrote its own table on resume (its debug line)" same_head "$KT"
if wait_table 30 "$DC" "${PLAN[$DS]}"; then
	ok "resume: the daemon's table is back in $DC after ${TOOK} s"
else
	notok "resume: the daemon's table is not back in $DC within 30 s"
fi
check "journal: the daemon noticed the resume (logind's PrepareForSleep(false) or the connected uevent)" \
	dhave 10 "$c3" "$DAEMON_J and ((.MESSAGE | tostring | test(\"Resumed from sleep\")) or ((.NVME_CTRL == \"$DC\") and (.APST_REASON == \"reset\")))"
check "journal: after resume, 'table overwritten' names what the kernel had written (APST_TABLE == the kernel's table)" \
	dhave 10 "$c3" "$DAEMON_J and (.MESSAGE_ID == \"$MSGID_TABLE_OVERWRITTEN\") and (.NVME_CTRL == \"$DC\") and (.APST_TABLE == \"$(hexline "$KT")\")"
dshow "$c3" "$DAEMON_J"

step "daemon: stop"
c4=$(cursor)
check "systemctl stop $UNIT" t 60 systemctl stop "$UNIT"
for s in $APST_SERIALS; do
	c=$(ctrl_of "$s") || continue
	f=APST_FILE_$s
	check "stop: ${!f} ($c) holds the kernel's table again (read back from the controller)" \
		[ "$(readback "$c")" = "$(cat "/tmp/kt-$s.json")" ]
done
dshow "$c4" "$DAEMON_J"
# journald turns a field given twice into an array, which breaks every
# consumer that reads .FIELD as a string: none in any entry of the run, the
# ones written while the kernel reset, rewrote and resumed included.
all=$(djson "$c0")
entries=$(echo "$all" | jq length 2>/dev/null)
dups=$(echo "$all" | jq -r '.[] | to_entries[] | select(.value | type == "array") | .key' 2>/dev/null |
	sort | uniq -c | tr -s ' \n' ' ')
check "journal: no daemon entry from start to stop has a field twice (${entries:-no} entries; fields twice: ${dups:-none})" \
	test "${entries:-0}" -gt 0 -a -z "$dups"
echo "# ======== journalctl -u $UNIT"
t 30 journalctl -q -b -u "$UNIT" --no-pager -o short-monotonic | tail -n 60
