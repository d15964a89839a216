#!/bin/bash
# Runs inside the QEMU guest when run-e2e.sh got --id-ctrl: the patched QEMU
# emulates one NVMe controller with power states and APST per Identify image.
# Parity: for each set of nvme_core parameters, the APST table Debian's
# kernel wrote (read back from the controller with nvme get-feature, and
# from the kernel's own dynamic-debug line) must equal `nvme-apstd plan`
# with policy = kernel and the same parameters, on the live controller (its
# Identify data and PCI ids as the guest sees them).
# Prints "ok N"/"not ok N" lines, one "E2E_APST_JSON {...}" line per
# controller and parameter set, and E2E_RESULT, on the second serial port.
# shellcheck disable=SC2317
# Covers: src/core/apst.c (policy = kernel against the kernel), src/cli/cmd-plan.c,
# src/core/idctrl.c.
set -u
OUT=/dev/ttyS1
stty -F "$OUT" raw -echo 2>/dev/null
exec >"$OUT" 2>&1
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=''
D=/usr/local/libexec/nvme-apstd-e2e
P=/sys/module/nvme_core/parameters
n=0 fails=0
T0=$(date +%s.%N)
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else notok "$d"; fi
}
note() { echo "# $*"; }
step() { echo "# --- $* (t=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N)-$T0}")s)"; }
t() { timeout --kill-after=5 "$@"; }

# apst.env (written by the host): APST_SERIALS="s1 s2 ..." and, per serial,
# APST_FILE_<serial>=the image's file name.
# shellcheck disable=SC1091
. "$D/apst.env"
note "kernel $(uname -r); controllers: $APST_SERIALS"
# The second boot: apst-quarantine.sh rebooted the guest at its end. Only that step runs again
# (its part after the reboot), numbering its checks on from the first boot's.
if [ -r /var/lib/nvme-apstd-e2e/quarantine-reboot.env ]; then
	# shellcheck disable=SC1091
	. /var/lib/nvme-apstd-e2e/quarantine-reboot.env
	n=$QU_N fails=$QU_FAILS APST_ONLY=quarantine
	note "second boot (the guest rebooted in the quarantine step; $fails of $n checks failed in the first)"
fi

# ctrl_of SERIAL: the nvmeX whose Identify serial is SERIAL (names change
# when the driver is rebound).
ctrl_of() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(sed 's/ *$//' "$c/serial" 2>/dev/null)" = "$1" ] && { basename "$c"; return 0; }
	done
	return 1
}
# lying_props SERIAL: "P N" when the host gave that controller apst-exlat-scale-percent=P and
# apst-exlat-scale-ps=N (psN wakes in P % of the time it advertises); fails otherwise.
lying_props() {
	local pv="APST_PROPS_$1" props
	props=${!pv:-}
	case $props in *apst-exlat-scale-percent=*) ;; *) return 1 ;; esac
	echo "$(sed -n 's/.*apst-exlat-scale-percent=\([0-9]*\).*/\1/p' <<<"$props")" \
		"$(sed -n 's/.*apst-exlat-scale-ps=\([0-9]*\).*/\1/p' <<<"$props")"
}
# ns_dev CTRL: /dev/nvmeXnY, the block device of CTRL's first namespace (the head of a hidden
# multipath disk nvmeXcZnY); fails when it has none.
ns_dev() {
	local d ns
	for d in /sys/class/nvme/"$1"/nvme*; do
		ns=$(basename "$d")
		if [[ $ns =~ ^nvme([0-9]+)c[0-9]+n([0-9]+)$ ]]; then ns=nvme${BASH_REMATCH[1]}n${BASH_REMATCH[2]}; fi
		[[ $ns =~ ^nvme[0-9]+n[0-9]+$ ]] && [ -b "/dev/$ns" ] && { echo "/dev/$ns"; return 0; }
	done
	return 1
}
# table_targets CTRL: the states CTRL's APST table enters ("3 3 3 4 "): the ITPS of every entry
# whose ITPT is not 0, read back with Get Features.
table_targets() {
	t 30 nvme get-feature "/dev/$1" -f 0x0c -b 2>/dev/null |
		od -An -tu1 -w8 -v | awk '$2 + $3 + $4 > 0 { printf "%d ", int($1 / 8) }'
}
# The daemon's journal: DAEMON_J selects its unit's entries (ids.sh names their MESSAGE_IDs);
# cursor: where the journal ends now; djson CURSOR: the daemon's entries after it, a JSON array.
DAEMON_J='(._SYSTEMD_UNIT == "nvme-apstd.service")'
# shellcheck disable=SC1091
[ -r "$D/ids.sh" ] && . "$D/ids.sh"
cursor() {
	journalctl --sync >/dev/null 2>&1
	t 30 journalctl -q -n 1 -o json --no-pager | jq -r '.__CURSOR'
}
djson() { t 30 journalctl -q -o json --no-pager --after-cursor="$1" | jq -s "[.[] | select($DAEMON_J)]"; }
all_live() {
	local s c
	for s in $APST_SERIALS; do
		c=$(ctrl_of "$s") || return 1
		[ "$(cat "/sys/class/nvme/$c/state" 2>/dev/null)" = live ] || return 1
	done
}
wait_live() {
	local i=0
	while ! all_live && [ $i -lt 120 ]; do sleep 0.5; i=$((i + 1)); done
	t 60 udevadm settle
	all_live
}

# hex64 < 256 raw bytes: 32 little-endian 64-bit entries as "0x%016x" lines.
hex64() { od -An -v -tx8 -w8 | awk '{printf "0x%016s\n", $1}'; }
# dmesg_table CTRL MARK: the table of the kernel's last "APST enabled" debug
# line for CTRL after the kmsg marker MARK (hex bytes in memory order), as
# hex64 lines; "disabled" when it said APST disabled; nothing if no line.
# The kernel prints it with %*phN, which stops at 64 bytes: the first 8
# entries (ps0..ps7), enough for every drive with npss < 8.
# (MARK "boot": from the start of the log; DMESG=FILE: read that instead)
dmesg_line() {
	if [ -n "${DMESG:-}" ]; then cat "$DMESG"; else dmesg; fi |
		awk -v m="E2E_APST_MARK $2" -v boot="$([ "$2" = boot ] && echo 1)" -v c="nvme $1: " '
		BEGIN {on = boot == 1} !on && index($0, m) {on = 1; line = ""; next}
		on && index($0, c) && /APST (enabled|disabled)/ {line = $0} END {print line}'
}
dmesg_table() {
	local line hex
	line=$(dmesg_line "$1" "$2")
	case $line in
	*"APST disabled"*) echo disabled ;;
	*"no non-operational states"*) # APSTE = 1 with an all-zero table
		for _ in $(seq 32); do echo 0x0000000000000000; done ;;
	*"table = "*)
		hex=${line##*table = }
		echo "$hex" | sed 's/[^0-9a-f]//g' | fold -w 16 | while read -r h; do
			# bytes of one entry in memory order -> the little-endian value
			printf '0x%s\n' "$(echo "$h" | fold -w 2 | tac | tr -d '\n')"
		done
		;;
	esac
}
json_lines() { jq -R . | jq -s -c .; }

# One parameter set: NAME, then nvme_core parameters as k=v (the others at
# their defaults), then how the kernel is made to write its table: "probe"
# (driver unbound and bound again: default_ps_max_latency_us only counts at
# probe) or "pmqos=US" (a write to power/pm_qos_latency_tolerance_us).
declare -A DEF
for k in default_ps_max_latency_us apst_primary_timeout_ms apst_secondary_timeout_ms \
	apst_primary_latency_tol_us apst_secondary_latency_tol_us force_apst; do
	DEF[$k]=$(cat "$P/$k")
done
note "nvme_core defaults: $(for k in "${!DEF[@]}"; do printf '%s=%s ' "$k" "${DEF[$k]}"; done)"

rebind() {
	local s c dev devs=()
	for s in $APST_SERIALS; do
		c=$(ctrl_of "$s") || continue
		dev=$(basename "$(readlink -f "/sys/class/nvme/$c/device")")
		devs+=("$dev")
	done
	for dev in "${devs[@]}"; do echo "$dev" >/sys/bus/pci/drivers/nvme/unbind; done
	for dev in "${devs[@]}"; do echo "$dev" >/sys/bus/pci/drivers/nvme/bind; done
	wait_live
}

run_set() {
	local name=$1 how=$2 kv k s c mark conf maxlat plan2
	shift 2
	step "parameter set $name ($how; $*)"
	for k in "${!DEF[@]}"; do echo "${DEF[$k]}" >"$P/$k"; done
	for kv in "$@"; do echo "${kv#*=}" >"$P/${kv%%=*}"; done
	mark="$name.$RANDOM"
	[ "$how" = boot ] && mark=boot
	echo "E2E_APST_MARK $mark" >/dev/kmsg
	case $how in
	boot) ;;
	probe) rebind || note "not every controller came back live after the rebind" ;;
	pmqos=*)
		for s in $APST_SERIALS; do
			c=$(ctrl_of "$s") || continue
			if [ -w "/sys/class/nvme/$c/power/pm_qos_latency_tolerance_us" ]; then
				echo "${how#pmqos=}" >"/sys/class/nvme/$c/power/pm_qos_latency_tolerance_us"
			fi
		done
		;;
	esac
	maxlat=$(cat "$P/default_ps_max_latency_us")
	[ "${how%%=*}" = pmqos ] && maxlat=${how#pmqos=}
	conf=/tmp/plan-$name.conf
	printf '[apst]\npolicy = kernel\nmax_latency_us = %s\nprimary_timeout_ms = %s\nsecondary_timeout_ms = %s\nprimary_latency_tol_us = %s\nsecondary_latency_tol_us = %s\n' \
		"$maxlat" "$(cat $P/apst_primary_timeout_ms)" "$(cat $P/apst_secondary_timeout_ms)" \
		"$(cat $P/apst_primary_latency_tol_us)" "$(cat $P/apst_secondary_latency_tol_us)" >"$conf"
	dmesg >/tmp/dmesg-set.txt
	local DMESG=/tmp/dmesg-set.txt
	for s in $APST_SERIALS; do
		local file=APST_FILE_$s rb_apste rb_table dm_table dm_line plan pci qos match known=''
		file=${!file}
		if ! c=$(ctrl_of "$s"); then
			notok "$name: $file: no controller with serial $s"
			continue
		fi
		pci="$(sed 's/^0x//' "/sys/class/nvme/$c/device/vendor"):$(sed 's/^0x//' "/sys/class/nvme/$c/device/device")"
		qos=$(cat "/sys/class/nvme/$c/power/pm_qos_latency_tolerance_us" 2>/dev/null || echo absent)
		# What the controller holds now: APSTE from the completion, the
		# table from the data (nvme-cli sizes the buffer for FID 0x0c).
		rb_apste=$(t 30 nvme get-feature "/dev/$c" -f 0x0c 2>/dev/null |
			sed -n 's/.*Current value: *\(0x[0-9a-fA-F]*\).*/\1/p' | head -n 1)
		rb_table=$(t 30 nvme get-feature "/dev/$c" -f 0x0c -b 2>/dev/null | hex64 | json_lines)
		dm_line=$(dmesg_line "$c" "$mark")
		dm_table=$(dmesg_table "$c" "$mark" | json_lines)
		plan=$(t 60 nvme-apstd plan --json -c "$conf" "$c" 2>/tmp/plan.err | jq -c '.controllers[0]')
		[ -n "$plan" ] || plan=null
		rec=$(jq -n -c --arg set "$name" --arg how "$how" --arg ctrl "$c" --arg serial "$s" \
			--arg file "$file" --arg pci "$pci" --arg qos "$qos" --arg apste "${rb_apste:-}" \
			--argjson rb "${rb_table:-[]}" --argjson dm "${dm_table:-[]}" --arg dmline "$dm_line" \
			--argjson plan "$plan" --rawfile conf "$conf" '
			{set: $set, how: $how, ctrl: $ctrl, serial: $serial, file: $file, pci: $pci,
			 model: ($plan.model // null), pm_qos_latency_tolerance_us: $qos, plan_config: $conf,
			 kernel: {apste: (if $apste == "" then null else ($apste | ltrimstr("0x") | tonumber? // null) end),
			          table: $rb},
			 kernel_dmesg: {line: $dmline,
			          apste: (if ($dm | length) == 0 then null elif $dm == ["disabled"] then false else true end),
			          table_head: (if ($dm | length) > 1 then $dm else null end)},
			 plan: {verdict: ($plan.verdict // null), apste: ($plan.apste // null), quirks: ($plan.quirks // null),
			        max_latency_us: ($plan.max_latency_us // null), table: ($plan.table // null)}}
			| .kernel.apste = (if .kernel.apste == null then null else (.kernel.apste % 2 == 1) end)
			| .match = ((.kernel.table | length) == 32 and .kernel.table == .plan.table
			            and .kernel.apste == .plan.apste
			            and (.kernel_dmesg.apste == null or .kernel_dmesg.apste == .plan.apste)
			            and (.kernel_dmesg.table_head == null
			                 or .kernel_dmesg.table_head == .plan.table[0:(.kernel_dmesg.table_head | length)]))')
		match=$(echo "$rec" | jq -r .match)
		# A PCI-id quirk the plan applies (from the upstream list) that this
		# kernel's nvme module does not have (no alias for the PCI id): the
		# kernel's table must then be the plan without quirks for that id.
		if [ "$match" != true ] && [ "$(echo "$plan" | jq -r '.quirks | length')" != 0 ] &&
			! modinfo -F alias nvme | grep -qi "^pci:v0000${pci%:*}d0000${pci#*:}sv"; then
			printf '[device e2e-pci-%s]\nmatch_pci = %s\nforce = yes\n' "${pci/:/-}" "$pci" >>"$conf"
			plan2=$(t 60 nvme-apstd plan --json -c "$conf" "$c" 2>/dev/null | jq -c '.controllers[0].table')
			if [ "$plan2" = "$(echo "$rec" | jq -c .kernel.table)" ]; then
				known="this kernel's nvme module has no quirk entry for PCI $pci; the plan applies $(echo "$plan" | jq -c .quirks) from the newer upstream list (with force = yes for $pci the plan equals the kernel's table)"
				rec=$(echo "$rec" | jq -c --arg k "$known" '.known_difference = $k')
			fi
			sed -i '/^\[device e2e-pci-/,$d' "$conf"
		fi
		echo "E2E_APST_JSON $rec"
		echo "${rb_table:-[]}" >"/tmp/kt-$s.json" # the kernel's last table (apst-daemon.sh)
		desc=$(echo "$rec" | jq -r '[.kernel.table | to_entries[] | select(.value != "0x0000000000000000")
			| (.value | ltrimstr("0x") | explode | map(if . >= 97 then . - 87 else . - 48 end)
			   | reduce .[] as $d (0; . * 16 + $d)) as $v
			| "ps\(.key)->ps\(($v / 8 | floor) % 32)@\(($v / 256 | floor) % 16777216)ms"] | join(" ")')
		if [ -n "$known" ]; then
			ok "$name: $file ($c, PCI $pci, pm_qos $qos): KNOWN DIFFERENCE: $known; kernel: $desc"
			continue
		fi
		check "$name: $file ($c, PCI $pci, pm_qos $qos): kernel's table == plan (APSTE $(echo "$rec" | jq -c '[.kernel.apste, .plan.apste]'); dmesg line $( [ -n "$dm_line" ] && echo seen || echo missing); $desc)" \
			[ "$match" = true ]
		if [ "$match" != true ]; then
			echo "$rec" | jq . | sed 's/^/#   /'
			sed 's/^/#   plan: /' /tmp/plan.err
		fi
	done
}

# The guest image holds the Debian package when run-e2e.sh built it (else the
# meson install is in place): install it, without starting it yet
# (policy-rc.d), so `plan` and the daemon steps use the packaged files.
if ! command -v nvme-apstd >/dev/null && [ -r "$D/package.sh" ]; then
	# shellcheck disable=SC1091
	. "$D/package.sh"
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	check "dpkg -i $(basename "$PKG_DEB1")" t 300 dpkg -i "$PKG_DEB1"
	rm -f /usr/sbin/policy-rc.d
fi
step "waiting for the controllers"
t 60 udevadm settle
check "the nvme driver bound every emulated controller ($APST_SERIALS)" wait_live
for s in $APST_SERIALS; do
	c=$(ctrl_of "$s") && note "$c: $(sed "s/ *$//" "/sys/class/nvme/$c/model"), PCI $(cat "/sys/class/nvme/$c/device/vendor"):$(cat "/sys/class/nvme/$c/device/device")"
done
dmesg | grep -E 'nvme nvme[0-9]+: APST' | sed 's/^/#   dmesg: /'
check "the kernel logs its APST table with dynamic debug (nvme_core.dyndbg=+p)" \
	bash -c 'dmesg | grep -qE "nvme nvme[0-9]+: APST (enabled|disabled)"'

# The controller without the new properties answers as QEMU 7.2 does.
if sc=$(ctrl_of stock0); then
	step "stock controller ($sc)"
	t 30 nvme id-ctrl "/dev/$sc" -o json >/tmp/stock-id.json 2>&1
	check "stock: Identify says npss 0, apsta 0, model QEMU NVMe Ctrl, ps0 mp 0x9c4 enlat 16 exlat 4" \
		jq -e '.npss == 0 and .apsta == 0 and (.mn | test("QEMU NVMe Ctrl")) and .psds[0].max_power == 2500
			and .psds[0].entry_lat == 16 and .psds[0].exit_lat == 4' /tmp/stock-id.json
	t 30 nvme get-feature "/dev/$sc" -f 0x0c >/tmp/stock-gf.txt 2>&1
	check "stock: Get Features 0x0C fails with Invalid Field (0x4002): $(tr '\n' ' ' </tmp/stock-gf.txt | cut -c1-120)" \
		grep -qiE 'INVALID_FIELD|0x4002|0x2\)' /tmp/stock-gf.txt
	t 30 nvme set-feature "/dev/$sc" -f 2 -v 1 >/tmp/stock-sf.txt 2>&1
	check "stock: Set Features 0x02 fails with Feature Not Changeable (0x410e): $(tr '\n' ' ' </tmp/stock-sf.txt | cut -c1-120)" \
		grep -qiE 'NOT_CHANGEABLE|0x410e|0x10e|0xe\)' /tmp/stock-sf.txt
fi

if [ "${APST_ONLY:-}" != quarantine ]; then
# Probe at boot, under the defaults; then rebound under other parameters.
run_set default boot
run_set max-latency-11000 probe default_ps_max_latency_us=11000
run_set legacy-timeout-0 probe apst_primary_timeout_ms=0
run_set no-secondary probe apst_secondary_timeout_ms=0
run_set pm-qos-5500 pmqos=5500
run_set pm-qos-100000 pmqos=100000

# calibrate's part (measuring a controller that wakes slower than it says), when present.
if [ -x "$D/apst-calibrate.sh" ]; then
	# shellcheck disable=SC1091
	. "$D/apst-calibrate.sh"
fi

# Passive calibration through the eBPF program (the same lying controller), when present.
if [ -x "$D/apst-passive.sh" ]; then
	# shellcheck disable=SC1091
	. "$D/apst-passive.sh"
fi

# The default policy on the same lying controller, on its own (no calibrate), when present.
if [ -x "$D/apst-adaptive.sh" ]; then
	# shellcheck disable=SC1091
	. "$D/apst-adaptive.sh"
fi

# The daemon's part (keeping its table against the kernel) runs next, when present.
if [ -x "$D/apst-daemon.sh" ]; then
	# shellcheck disable=SC1091
	. "$D/apst-daemon.sh"
fi

# Latency holds (nvme-apstd hold, polkit), after the daemon's part and with its choice of controller.
if [ -x "$D/apst-hold.sh" ] && [ -x "$D/apst-daemon.sh" ]; then
	# shellcheck disable=SC1091
	. "$D/apst-hold.sh"
fi
fi # APST_ONLY

# A drive that dies in a power state (apst-die-ps): the daemon's quarantine under the real kernel.
if [ -x "$D/apst-quarantine.sh" ] && [ -n "${APST_DIE_SERIALS:-}" ]; then
	# shellcheck disable=SC1091
	. "$D/apst-quarantine.sh"
fi

step "done"
echo "1..$n"
echo "E2E_RESULT tests=$n failed=$fails"
sync
exit 0
