# shellcheck shell=bash
# shellcheck disable=SC2154 # fails: apst-guest.sh's count of failed checks
# apst-quarantine-reboot.sh - sourced by apst-quarantine.sh in the guest's second boot (its
# QU_UNIT, QU_REBOOT, qu_entries, qu_hex_targets; apst-guest.sh's ok/notok/check/note/step/t,
# ctrl_of, ns_dev, table_targets, DAEMON_J, the MESSAGE_IDs).
# The quarantine across a reboot: at the end of its first boot apst-quarantine.sh left the
# daemon enabled, its configuration in place and its state directory (/var/lib/nvme-apstd, on
# the root image) as the daemon had written it, with the quarantine file of the drive that died
# in psN, and rebooted the guest; QU_REBOOT says which controllers, psN and the idle time that
# took the first boot's table into psN. The controllers are the same (same Identify data, same
# apst-die-ps), in a new QEMU process: their log page 0xC0 starts at 0 and they die in psN again
# if anything takes them there. In this boot:
#  - the daemon started at boot, and its first table for the controller (this boot's journal)
#    leaves psN out, as does the table read back;
#  - `nvme-apstd quarantine` lists psN for the drive's model and firmware;
#  - after two idle spells past psN's old entry, the controller's log page 0xC0 counts no entry
#    into psN in this boot (and more into the shallower state), the kernel never found it down,
#    and the daemon logged no new quarantine.
# Without the quarantine file the daemon's first table at boot enters psN again (tried by hand:
# the drive dies in the second boot and five of these checks fail).
# Then the configuration, the state directory, the unit's enablement and the nvme driver's
# early load are put back.
# shellcheck disable=SC1090
. "$QU_REBOOT"
# qu_boot_json: the daemon's entries in this boot's journal, a JSON array.
qu_boot_json() {
	journalctl --sync >/dev/null 2>&1
	t 30 journalctl -q -b 0 -o json --no-pager | jq -s "[.[] | select($DAEMON_J)]"
}
check "quarantine reboot: this is a new boot (boot id $(cat /proc/sys/kernel/random/boot_id), the first's ${QU_BOOT_ID:-unknown})" \
	[ "$(cat /proc/sys/kernel/random/boot_id)" != "${QU_BOOT_ID:-}" ]
for s in $QU_SERIALS; do
	dv="QU_DPS_$s" iv="QU_IDLE_$s"
	dps=${!dv:-} idle=${!iv:-}
	step "quarantine after the reboot: ps${dps:-?} (serial $s)"
	if [ -z "$dps" ] || [ -z "$idle" ]; then notok "quarantine reboot: the first boot left no state for serial $s"; continue; fi
	c=$(ctrl_of "$s") || { notok "quarantine reboot: no controller with serial $s"; continue; }
	dev=$(ns_dev "$c") || { notok "quarantine reboot: $c has no namespace block device"; continue; }
	qfails0=$fails
	check "quarantine reboot $c: $QU_UNIT started at boot (enabled, active)" \
		bash -c "systemctl is-enabled -q $QU_UNIT && systemctl is-active -q $QU_UNIT"
	fe='{}'
	for _ in $(seq 20); do
		fe=$(qu_boot_json | jq -c --arg w "$MSGID_TABLE_WRITTEN" --arg v "$MSGID_TABLE_VERIFIED" --arg c "$c" \
			'[.[] | select((.MESSAGE_ID == $w or .MESSAGE_ID == $v) and .NVME_CTRL == $c)] | first // {}')
		[ "$fe" != '{}' ] && break
		sleep 0.5
	done
	note "journal: $(jq -r '.MESSAGE // "no table entry in this boot"' <<<"$fe")"
	ftg=$(qu_hex_targets "$(jq -r '.APST_TABLE // ""' <<<"$fe")")
	check "quarantine reboot $c: the daemon's first table of this boot leaves ps$dps out: enters ${ftg:-nothing}" \
		bash -c "[ -n '$ftg' ] && ! grep -qw $dps <<<'$ftg'"
	rs=$(table_targets "$c")
	check "quarantine reboot $c: the table read back leaves ps$dps out: enters ${rs:-nothing}" \
		bash -c "[ -n '$rs' ] && ! grep -qw $dps <<<'$rs'"
	model=$(sed 's/ *$//' "/sys/class/nvme/$c/model") fw=$(sed 's/ *$//' "/sys/class/nvme/$c/firmware_rev")
	t 30 nvme-apstd quarantine >/tmp/qu-list.txt 2>&1
	sed 's/^/#   nvme-apstd quarantine: /' /tmp/qu-list.txt
	# shellcheck disable=SC2016 # (the inner shell's arguments)
	check "quarantine reboot $c: \`nvme-apstd quarantine\` lists \"$model (firmware $fw, ...): quarantined: ps$dps and deeper\"" \
		bash -c 'grep -F "$1 (firmware $2, " /tmp/qu-list.txt | grep -qF "quarantined: ps$3 and deeper"' _ "$model" "$fw" "$dps"

	# Idle as long as took the first boot's table into psN, twice: a drive that got there would
	# die, and a read would wait for the block layer's timeout (5 s, as in the first boot).
	qto=$(basename "$dev")
	qto_was=$(cat "/sys/block/$qto/queue/io_timeout")
	echo 5000 >"/sys/block/$qto/queue/io_timeout"
	echo "E2E_APST_MARK quarantine-reboot.$s" >/dev/kmsg
	shallow=$(awk '{ print $NF }' <<<"$rs")
	e0=$(qu_entries "$c" "$dps")
	es0=$(qu_entries "$c" "${shallow:-0}")
	note "log page 0xC0 at the start of this boot's idle spells: ps$dps ${e0:-unreadable}, ps${shallow:-?} ${es0:-unreadable}"
	sleep "$idle"
	t 60 dd if="$dev" of=/dev/null bs=4096 count=1 skip=768 iflag=direct status=none
	sleep "$idle"
	e2=$(qu_entries "$c" "$dps")
	es1=$(qu_entries "$c" "${shallow:-0}")
	check "quarantine reboot $c: idle ${idle} s twice: log page 0xC0 counts no entry into ps$dps in this boot (${e2:-unreadable}), ps${shallow:-?} was entered (${es0:-?} -> ${es1:-?})" \
		bash -c "[ '${e2:-x}' = 0 ] && [ '${es1:-0}' -gt '${es0:-0}' ]"
	dmesg | grep -a "nvme $c: controller is down" | sed 's/^/#   dmesg: /'
	check "quarantine reboot $c: the controller is live and the kernel never found it down in this boot" \
		bash -c "[ \"\$(cat /sys/class/nvme/$c/state)\" = live ] && ! dmesg | grep -aq 'nvme $c: controller is down'"
	nq=$(qu_boot_json | jq --arg id "$MSGID_STATE_QUARANTINED" '[.[] | select(.MESSAGE_ID == $id)] | length')
	check "quarantine reboot $c: the daemon logged no new quarantine in this boot (${nq:-?} entries)" [ "${nq:-x}" = 0 ]
	echo "$qto_was" >"/sys/block/$qto/queue/io_timeout"
	if [ "$fails" != "$qfails0" ]; then
		note "the daemon's journal in this boot (the checks above failed):"
		t 30 journalctl -q -b 0 --no-pager -o short-monotonic -u "$QU_UNIT" | tail -n 60 | sed 's/^/#   /'
		dmesg | grep -a -E "nvme $c: " | tail -n 40 | sed 's/^/#   dmesg: /'
	fi
done

# As it was before the quarantine step: the service and whether it starts at boot, its
# configuration and state directory.
t 90 systemctl stop "$QU_UNIT"
[ "${QU_WAS_ENABLED:-0}" = 1 ] || t 30 systemctl disable -q "$QU_UNIT"
if [ -f "$QU_E2E/nvme-apstd.conf.aside" ]; then mv "$QU_E2E/nvme-apstd.conf.aside" /etc/nvme-apstd.conf; fi
rm -rf /var/lib/nvme-apstd
[ -d /var/lib/nvme-apstd.e2e-qu-aside ] && mv /var/lib/nvme-apstd.e2e-qu-aside /var/lib/nvme-apstd
rm -f "$QU_REBOOT"
[ "${QU_WAS_ACTIVE:-0}" = 1 ] && t 90 systemctl start "$QU_UNIT"
