#!/bin/bash
# Runs inside the QEMU guest (real Debian kernel + nvme driver, systemd as
# PID 1), started by nvme-apstd-e2e.service after multi-user.target.
# Prints TAP-like "ok N - ..." / "not ok N - ..." lines to the second serial
# port (/dev/ttyS1, a file on the host), then the daemon's journal, then
# E2E_RESULT. On any failure it also prints the whole boot's journal.
# Every command that can block runs under `timeout`.
# Functions below are called through check(), which shellcheck cannot follow.
# shellcheck disable=SC2317
# Covers: the installed package under systemd: systemd/nvme-apstd.service, src/cli/cmd-run.c,
# src/daemon/manager.c, src/cli/cmd-plan.c, src/platform/nvme-admin.c.
set -u
OUT=/dev/ttyS1
stty -F "$OUT" raw -echo 2>/dev/null # no \n -> \r\n on the host side
exec >"$OUT" 2>&1
export SYSTEMD_COLORS=0 SYSTEMD_PAGER='' SYSTEMD_LESS='' # plain text on the serial line

UNIT=nvme-apstd.service
CONF=/etc/nvme-apstd.conf
n=0 fails=0 NODAEMON=0
T0=$(date +%s.%N)

ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
# check DESCRIPTION COMMAND...: one assertion
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}
note() { echo "# $*"; }
step() { echo "# --- $* (t=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T0}")s)"; }
t() { timeout --kill-after=5 "$@"; } # every step gets a timeout

# The cursor of the newest journal entry: later queries read only what
# happened after it.
cursor() {
	journalctl --sync >/dev/null 2>&1
	t 30 journalctl -q -n 1 -o json --no-pager | jq -r '.__CURSOR'
}
# unit_json [CURSOR]: the unit's journal entries (the daemon's and systemd's
# about it) as one JSON array. Not `journalctl -u --after-cursor`: in systemd
# 252 that skips the first matching entry when the cursor's own entry does not
# match (it steps twice from the cursor), so filter in jq instead. The daemon's
# entries without a unit count too (UNITLESS): journald takes the unit from the
# sender's /proc entry, and the daemon's last line before it exits can reach
# journald after the process is gone (systemd issue #2913), as the stop line did
# once under apt-get remove. Only a service logs to the journal by itself (the CLI
# writes to stderr), so nothing else carries that identifier.
UNITLESS='(._SYSTEMD_UNIT == null and .SYSLOG_IDENTIFIER == "nvme-apstd" and ._TRANSPORT == "journal")'
unit_json() {
	if [ -n "${1:-}" ]; then
		t 30 journalctl -q -o json --no-pager --after-cursor="$1" |
			jq -s --arg u "$UNIT" "[.[] | select(._SYSTEMD_UNIT == \$u or .UNIT == \$u or $UNITLESS)]"
	else
		t 30 journalctl -q -u "$UNIT" -o json --no-pager | jq -s '.'
	fi
}
# have SECS CURSOR JQ-FILTER: wait up to SECS for a daemon entry after CURSOR
# for which FILTER is true. Strings only: journald gives a field as an array
# when it is repeated, and as a byte array when it is not UTF-8.
have() {
	local end=$((SECONDS + $1)) cur=$2 filter=$3
	# No daemon, nothing more to wait for: look once (keeps a broken run short).
	[ "$NODAEMON" = 0 ] || end=$SECONDS
	while :; do
		if unit_json "$cur" | jq -e "[.[] | select(($filter))] | length > 0" >/dev/null 2>&1; then
			return 0
		fi
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
# Show the entries that matched (for the record).
show() {
	unit_json "$1" | jq -r ".[] | select(($2)) |
	  \"#   \" + (.MESSAGE | tostring) + \"  [\" +
	  ([to_entries[] | select(.key | test(\"^(MESSAGE_ID|NVME_[A-Z_]+|APST_[A-Z_]+|PRIORITY|CONFIG_[A-Z_]+)$\"))
	    | \"\(.key)=\(.value | tostring)\"] | join(\" \")) + \"]\"" 2>/dev/null | head -n 20
}
prop() { t 30 systemctl show -p "$1" --value "$UNIT"; }
is_active() { [ "$(t 30 systemctl is-active "$UNIT")" = "$1" ]; }
# none CURSOR JQ-FILTER: no daemon entry after CURSOR matches FILTER.
none() { [ "$(unit_json "$1" | jq "[.[] | select(($2))] | length")" = 0 ]; }
# same_process: active, still the first MainPID, never restarted.
same_process() {
	is_active active && [ "$(prop MainPID)" = "$PID" ] && [ "$(prop NRestarts)" = 0 ]
}
clean_exit() {
	[ "$(prop Result)" = success ] && [ "$(prop ExecMainCode)" = 1 ] && [ "$(prop ExecMainStatus)" = 0 ]
}

# Fields every entry about the controller must carry (the journal contract in README.md, "Observing it").
CTRL_ENTRY='(.NVME_CTRL == "nvme0") and (.MESSAGE_ID | type == "string" and test("^[0-9a-f]{32}$"))
  and (.NVME_MODEL | type == "string" and test("QEMU"))
  and (.NVME_FIRMWARE | type == "string" and length > 0)'
DAEMON="((._SYSTEMD_UNIT == \"nvme-apstd.service\") or $UNITLESS)"
# The daemon's MESSAGE_IDs (include/platform/apstd-ids.h, copied in by the host as
# MSGID_NAME=hex lines). kind NAME REGEX: a jq filter for entries of that kind;
# without the id it falls back to matching the message text.
# shellcheck disable=SC1091
[ -r /usr/local/libexec/nvme-apstd-e2e/ids.sh ] && . /usr/local/libexec/nvme-apstd-e2e/ids.sh
kind() {
	if [ -n "${!1:-}" ]; then
		echo "(.MESSAGE_ID == \"${!1}\")"
	else
		echo "(.MESSAGE | tostring | test(\"$2\"; \"i\"))"
	fi
}

note "kernel $(uname -r), systemd $(systemctl --version | head -n 1 | cut -d' ' -f2)"
note "uptime at test start: $(cut -d' ' -f1 /proc/uptime) s"
# The nvme driver is loaded by udev from the controller's modalias (coldplug).
t 60 udevadm settle
i=0
while [ ! -c /dev/nvme0 ] && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
check "the real nvme driver bound the QEMU controller (/dev/nvme0, $(sed 's/ *$//' /sys/class/nvme/nvme0/model 2>/dev/null))" \
	test -c /dev/nvme0
# The Debian package, when the host built one (tests/package/build-debs.sh):
# installed here with apt-get instead of meson install; upgraded, removed and
# purged after the other checks (guest-package.sh).
PKG=0
if [ -r /usr/local/libexec/nvme-apstd-e2e/package.sh ]; then
	PKG=1
	# shellcheck disable=SC1091
	. /usr/local/libexec/nvme-apstd-e2e/guest-package.sh
	pkg_install
fi
check "nvme-apstd is installed (binary and unit)" \
	test -x "$(command -v nvme-apstd)" -a -n "$(systemctl cat "$UNIT" 2>/dev/null)"

# ---------------------------------------------------------------- 1. start
step "1. systemctl start"
c0=${C_INSTALL:-$(cursor)} # (the package started the daemon already)
check "systemctl start $UNIT succeeds (Type=notify: READY=1 received)" t 90 systemctl start "$UNIT"
check "is-active = active" is_active active
PID=$(prop MainPID)
note "MainPID=$PID"
if ! is_active active; then
	NODAEMON=1
	note "the daemon is not running: later journal checks look once instead of waiting"
	t 30 systemctl status --no-pager -l "$UNIT" 2>&1 | sed 's/^/#   /'
fi
check "journal: daemon started entry" \
	have 20 "$c0" "$DAEMON and $(kind MSGID_DAEMON_STARTED started)"
check "journal: controller found, as an entry with MESSAGE_ID, NVME_CTRL=nvme0, NVME_MODEL, NVME_FIRMWARE (journalctl -o json)" \
	have 20 "$c0" "$DAEMON and $(kind MSGID_CTRL_ADDED found) and $CTRL_ENTRY"
# The power states come from Identify Controller, an admin command on
# /dev/nvme0: this entry proves the unit's sandbox let the daemon open it.
check "journal: the controller's power states are logged (ps0, read through /dev/nvme0 inside the sandbox)" \
	have 20 "$c0" "$DAEMON and (.NVME_CTRL == \"nvme0\") and ([.NVME_POWER_STATES, .MESSAGE] | map(tostring) | any(test(\"ps ?0\")))"
check "journal: APST not supported (QEMU apsta=0), with the controller fields, not as an error" \
	have 20 "$c0" "$DAEMON and $(kind MSGID_APST_UNSUPPORTED 'not support|unsupported') and $CTRL_ENTRY and ((.PRIORITY | tonumber) > 3)"
check "journal: no error-level entry from the daemon at start" \
	none "$c0" "$DAEMON and ((.PRIORITY | tonumber) <= 3)"
show "$c0" "$DAEMON"

# ----------------------------------------------------------------- 2. plan
step "2. nvme-apstd plan"
if t 60 nvme-apstd plan >/tmp/plan.txt 2>&1; then prc=0; else prc=$?; fi
sed 's/^/#   /' /tmp/plan.txt | head -n 40
check "nvme-apstd plan exits 0 on the live controller" [ "$prc" = 0 ]
# shellcheck disable=SC2016
check "plan names the controller and prints a table" \
	bash -c 'grep -q nvme0 /tmp/plan.txt && [ "$(grep -c . /tmp/plan.txt)" -ge 2 ]'
if t 60 nvme-apstd plan --json >/tmp/plan.json 2>/tmp/plan.err; then prc=0; else prc=$?; fi
check "nvme-apstd plan --json exits 0 and prints valid JSON naming nvme0" \
	bash -c "[ $prc = 0 ] && jq -e . /tmp/plan.json >/dev/null && grep -q nvme0 /tmp/plan.json"
head -c 1500 /tmp/plan.json | sed 's/^/#   /'
echo

# --------------------------------------------------------------- 3. reload
step "3. reload"
if [ -f "$CONF" ]; then cp "$CONF" /tmp/conf.orig; else : >/tmp/conf.orig; fi
note "installed $CONF:"
sed 's/^/#   /' /tmp/conf.orig
printf '[apst]\npolicy = budget\nmax_latency_us = 5000\n' >"$CONF"
c1=$(cursor)
check "systemctl reload with an edited config succeeds" t 60 systemctl reload "$UNIT"
check "journal: the reload is logged" \
	have 20 "$c1" "$DAEMON and $(kind MSGID_CONFIG_RELOADED reload)"
show "$c1" "$DAEMON"
check "still active after reload, same MainPID" same_process

printf '[apst]\npolicy = budget\nmax_latency_us = banana\n' >"$CONF"
c2=$(cursor)
t 60 systemctl reload "$UNIT"
note "systemctl reload with a broken config: rc=$?"
check "journal: the broken config is refused, naming file, section and key" \
	have 20 "$c2" "$DAEMON and $(kind MSGID_CONFIG_REJECTED 'not reloaded|refus|reject') and (.MESSAGE | tostring | (test(\"$CONF\") and test(\"apst\") and test(\"max_latency_us\")))"
show "$c2" "$DAEMON"
sleep 2
check "after the refused reload: still active, same MainPID, no restart" same_process
cp /tmp/conf.orig "$CONF"
c3=$(cursor)
check "reload with the original config is accepted again" \
	bash -c "timeout 60 systemctl reload $UNIT && [ \"\$(systemctl is-active $UNIT)\" = active ]"
have 20 "$c3" "$DAEMON and $(kind MSGID_CONFIG_RELOADED reload)" ||
	note "(no reload entry after restoring the config)"

# ------------------------------------------------------ 4. controller reset
step "4. reset_controller"
t 60 udevadm monitor --kernel --property --subsystem-match=nvme >/tmp/uevents.txt 2>&1 &
mon=$!
sleep 1
c4=$(cursor)
check "echo 1 > /sys/class/nvme/nvme0/reset_controller" bash -c 'echo 1 > /sys/class/nvme/nvme0/reset_controller'
i=0
while [ "$(cat /sys/class/nvme/nvme0/state 2>/dev/null)" != live ] && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
check "controller is live again after the reset" [ "$(cat /sys/class/nvme/nvme0/state)" = live ]
i=0
while ! grep -q NVME_EVENT=connected /tmp/uevents.txt && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
kill "$mon" 2>/dev/null
wait "$mon" 2>/dev/null
check "the kernel sent change NVME_EVENT=connected (seen by udevadm monitor)" grep -q NVME_EVENT=connected /tmp/uevents.txt
RECHECK='(.MESSAGE | tostring | test("nvme0") and test("re-?check|reset|reconnect"; "i"))'
check "journal: the daemon logged that it re-checked nvme0 after the reset" \
	have 30 "$c4" "$DAEMON and $RECHECK"
check "journal: ... as a structured entry (MESSAGE_ID, NVME_CTRL=nvme0, NVME_MODEL, NVME_FIRMWARE)" \
	have 5 "$c4" "$DAEMON and $RECHECK and $CTRL_ENTRY"
show "$c4" "$DAEMON"
check "still active after the reset, same MainPID" same_process
note "daemon memory: $(prop MemoryCurrent) bytes (cgroup MemoryCurrent), tasks: $(prop TasksCurrent)"

# ------------------------------------------------------------- 4b. D-Bus API
# The read-only API on the guest's real system bus (doc/dbus-api.md), and
# `nvme-apstd status` reading it under the real systemd.
step "4b. D-Bus API and nvme-apstd status"
BUSNAME=io.github.nvme_apstd
CTRLOBJ=/io/github/nvme_apstd/controller/nvme0
owner=$(t 30 busctl --json=short call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
	GetConnectionUnixProcessID s "$BUSNAME" 2>/dev/null | jq -r '.data[0]')
check "the unit owns $BUSNAME on the system bus (owner pid ${owner:-none} = MainPID $(prop MainPID))" \
	[ "${owner:-none}" = "$(prop MainPID)" ]
check "systemctl show BusName=$BUSNAME" [ "$(prop BusName)" = "$BUSNAME" ]
t 30 busctl introspect --no-pager "$BUSNAME" "$CTRLOBJ" 2>&1 | sed 's/^/#   /'
bstate=$(t 30 busctl --json=short get-property "$BUSNAME" "$CTRLOBJ" io.github.nvme_apstd.Controller1 State 2>/dev/null |
	jq -r '.data')
bmodel=$(t 30 busctl --json=short get-property "$BUSNAME" "$CTRLOBJ" io.github.nvme_apstd.Controller1 Model 2>/dev/null |
	jq -r '.data')
check "busctl reads nvme0's properties: State=$bstate (QEMU: apsta=0), Model=$bmodel" \
	bash -c "[ '$bstate' = unsupported ] && [[ '$bmodel' == QEMU* ]]"
check "busctl set-property is refused (the API is read-only)" \
	bash -c "! timeout 30 busctl set-property $BUSNAME $CTRLOBJ io.github.nvme_apstd.Controller1 Policy s kernel"
if t 30 nvme-apstd status >/tmp/status.txt 2>&1; then src=0; else src=$?; fi
sed 's/^/#   /' /tmp/status.txt
check "nvme-apstd status exits 0 and shows nvme0 left unsupported (rc=$src)" \
	bash -c "[ $src = 0 ] && grep -q '^. nvme0 - QEMU' /tmp/status.txt && grep -q 'State: unsupported' /tmp/status.txt"
check "nvme-apstd status --json: running, nvme0 unsupported, power source known" \
	bash -c "timeout 30 nvme-apstd status --json | jq -e '.running == true and .controllers[0].name == \"nvme0\" and
		.controllers[0].state == \"unsupported\" and (.power_source | length > 0)' >/dev/null"

# ----------------------------------------------------------------- 5. stop
step "5. systemctl stop"
c5=$(cursor)
check "systemctl stop succeeds" t 60 systemctl stop "$UNIT"
check "is-active = inactive" is_active inactive
res=$(t 30 systemctl show -p Result -p ExecMainCode -p ExecMainStatus "$UNIT" | tr '\n' ' ')
note "$res"
check "clean exit: Result=success, exited (ExecMainCode=1) with status 0" clean_exit
# systemd's own record of it (SD_MESSAGE_UNIT_SUCCESS), independent of the
# unit staying loaded.
check "journal: systemd logged \"Deactivated successfully\" for the stop" \
	have 10 "$c5" '(.MESSAGE_ID == "7ad2d189f7e94e70a38c781354912448") and (.UNIT == "nvme-apstd.service")'

check "journal: daemon stopped entry" \
	have 10 "$c5" "$DAEMON and $(kind MSGID_DAEMON_STOPPED 'stop|exit')"
show "$c5" "$DAEMON"
if t 60 nvme-apstd status >/tmp/status-stopped.txt 2>&1; then src=0; else src=$?; fi
sed 's/^/#   /' /tmp/status-stopped.txt | head -n 12
check "nvme-apstd status with the daemon stopped: says so, shows the plan, exit 3 (rc=$src)" \
	bash -c "[ $src = 3 ] && grep -q 'not running' /tmp/status-stopped.txt && grep -q '^nvme0: QEMU' /tmp/status-stopped.txt"
# journald turns a field given twice into an array, which breaks every
# consumer that reads .FIELD as a string.
check "journal: no daemon entry in the whole run has a field twice (-o json arrays)" \
	none "$c0" "$DAEMON and ([.[] | type == \"array\"] | any)"
dups=$(unit_json "$c0" | jq -r ".[] | select($DAEMON) | to_entries[] | select(.value | type == \"array\") | .key" | sort | uniq -c | tr '\n' ' ')
[ -z "$dups" ] || note "fields given twice (count of entries): $dups"
# Every MESSAGE_ID the daemon logged has an explanation in its installed
# catalog (journalctl -x).
t 60 journalctl --update-catalog
t 60 journalctl --list-catalog --no-pager >/tmp/catalog.txt 2>&1
logged_ids=$(unit_json "$c0" | jq -r ".[] | select($DAEMON) | .MESSAGE_ID | select(type == \"string\")" | sort -u)
missing=$(for i in $logged_ids; do grep -qi "^$i" /tmp/catalog.txt || echo "$i"; done | tr '\n' ' ')
check "journal catalog explains every MESSAGE_ID the daemon logged ($(echo "$logged_ids" | grep -c .) ids; missing: ${missing:-none})" \
	[ -z "$missing" -a -n "$logged_ids" ]
check "journal: no sandbox denial (EPERM/EACCES, cannot open /dev/nvme*) from the daemon in the whole run" \
	none "$c0" "$DAEMON and (.MESSAGE | tostring | test(\"Permission denied|Operation not permitted|EACCES|EPERM|cannot open /dev/nvme\"))"

# The [Install] section works: what a package's postinst would do.
check "systemctl enable/disable $UNIT (its [Install] section)" \
	bash -c "timeout 60 systemctl enable $UNIT 2>/dev/null && [ \"\$(systemctl is-enabled $UNIT)\" = enabled ] &&
		timeout 60 systemctl disable $UNIT 2>/dev/null && [ \"\$(systemctl is-enabled $UNIT)\" = disabled ]"

# ------------------------------------------------------ 6. security exposure
step "6. systemd-analyze security"
t 120 systemd-analyze security --no-pager "$UNIT" >/tmp/security.txt 2>&1
src=$?
grep -E '^(✗|✓)' /tmp/security.txt | grep '^✗' | sed 's/^/#   /' | head -n 60
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: *\([0-9.]*\) *\(.*\)$/\1 \2/p' /tmp/security.txt)
echo "E2E_EXPOSURE=$exposure"
check "systemd-analyze security reports an exposure level (rc=$src): $exposure" [ -n "$exposure" ]
t 60 systemd-analyze verify "$UNIT" >/tmp/verify.txt 2>&1
note "systemd-analyze verify rc=$?: $(tr '\n' ' ' </tmp/verify.txt)"

[ "$PKG" = 0 ] || pkg_lifecycle

# ------------------------------------------------------------------ report
step "done"
echo "# ======== journalctl -u $UNIT (this boot)"
t 30 journalctl -q -b -u "$UNIT" --no-pager -o short-monotonic
if [ "$fails" -gt 0 ]; then
	echo "# ======== journalctl -u $UNIT -o json"
	t 30 journalctl -q -b -u "$UNIT" --no-pager -o json
	echo "# ======== journalctl -b (whole boot)"
	t 60 journalctl -q -b --no-pager -o short-monotonic
	echo "# ======== dmesg"
	dmesg | tail -n 80
fi
echo "1..$n"
echo "E2E_RESULT tests=$n failed=$fails"
sync
exit 0
