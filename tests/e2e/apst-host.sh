# shellcheck shell=bash
# Sets variables run-e2e.sh uses:
# shellcheck disable=SC2034
# apst-host.sh - the APST part of run-e2e.sh (sourced by it): with
#   run-e2e.sh --id-ctrl FILE[@VVVV:DDDD][+PROP=V,...] [FILE...]
# the guest runs on QEMU built with tests/qemu-apst/nvme-apst.patch, with one
# emulated NVMe controller per Identify Controller image (`nvme id-ctrl -b`):
# its power states, APST support, model and firmware; @VVVV:DDDD gives the
# controller that PCI vendor:device id (the kernel applies some APST quirks
# by PCI id), else it keeps QEMU's 1b36:0010; +PROP=V,... adds properties
# of the patched controller (e.g. apst-exlat-scale-percent=300: a drive that
# wakes slower than it says, for apst-calibrate.sh; apst-die-ps=N: a drive that dies
# in psN, for apst-quarantine.sh alone, APST_DIE_SERIALS). The guest runs apst-guest.sh
# instead of guest-test.sh: the kernel's APST table against
# `nvme-apstd plan` (policy = kernel) under several nvme_core parameter sets.
# The report, one JSON object per controller and parameter set, is written
# to WORK/apst-report.json and summed up as a table.
#
# APST_QEMU=PATH uses that (patched) qemu-system-x86_64 instead of building.
# Variables it sets for run-e2e.sh: APST_FILES (empty: not in APST mode),
# QEMU_BIN, QEMU_ARGS (firmware path, machine options), NVME_ARGS (the
# controllers), KERNEL_APPEND_EXTRA.

APST_FILES=() APST_REST=() NVME_ARGS=() QEMU_ARGS=() QEMU_BIN=qemu-system-x86_64 KERNEL_APPEND_EXTRA=''

# apst_args ARGS...: takes --id-ctrl FILE... out of ARGS, the rest in APST_REST.
apst_args() {
	local in=0 a
	for a in "$@"; do
		case $a in
		--id-ctrl) in=1 ;;
		--id-ctrl=*) APST_FILES+=("${a#--id-ctrl=}") in=1 ;;
		-*) in=0 APST_REST+=("$a") ;;
		*) if [ $in = 1 ]; then APST_FILES+=("$a"); else APST_REST+=("$a"); fi ;;
		esac
	done
	local f
	for f in "${APST_FILES[@]}"; do
		f=${f%%+*}
		[ -r "${f%@*}" ] || { echo "E2E FAIL: --id-ctrl ${f%@*}: cannot read it" >&2; exit 1; }
		case $f in
		*@*) [[ ${f##*@} =~ ^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$ ]] ||
			{ echo "E2E FAIL: --id-ctrl $f: expected FILE@VVVV:DDDD" >&2; exit 1; } ;;
		esac
	done
	return 0
}

# apst_prepare: build (or take from the cache) the patched QEMU and lay out
# the controllers. Needs SRC, CACHE, WORK.
apst_prepare() {
	[ ${#APST_FILES[@]} -gt 0 ] || return 0
	local rc=0 i=0 f file pci
	if [ -n "${APST_QEMU:-}" ]; then # a patched QEMU built elsewhere
		QEMU_BIN=$APST_QEMU
	else
		log "building the patched QEMU (tests/qemu-apst/build-qemu.sh; cached by the patch's hash)"
		QEMU_BIN=$(t 5400 "$SRC/tests/qemu-apst/build-qemu.sh" -c "$CACHE") || rc=$?
		[ $rc = 77 ] && skip "the QEMU source cannot be had (apt-get source qemu)"
		[ $rc = 0 ] || fail "building the patched QEMU failed"
	fi
	"$QEMU_BIN" -device nvme,help 2>/dev/null | grep -q apst-idctrl ||
		fail "$QEMU_BIN has no apst-idctrl property: not built with nvme-apst.patch"
	log "patched QEMU: $QEMU_BIN"
	# The Debian source has no firmware: the installed packages' files.
	# S3 on the q35 machine's ICH9 LPC (disabled by default).
	QEMU_ARGS=(-L /usr/share/qemu -L /usr/share/seabios -global ICH9-LPC.disable_s3=0
		-qmp "unix:$WORK/qmp.sock,server=on,wait=off")
	mkdir -p "$WORK/idctrl"
	: >"$WORK/apst.env"
	local serials='' die_serials=''
	for f in "${APST_FILES[@]}"; do
		local props=''
		case $f in *+*) props=${f#*+} f=${f%%+*} ;; esac
		file=${f%@*} pci=''
		[ "$f" != "$file" ] && pci=${f##*@}
		cp "$file" "$WORK/idctrl/apst$i.bin"
		truncate -s 16M "$WORK/apst$i.img"
		local dev="nvme,serial=apst$i,drive=apst$i,apst-idctrl=$WORK/idctrl/apst$i.bin,apst-trace=on"
		[ -n "$pci" ] && dev+=",pci-vendor-id=0x${pci%:*},pci-device-id=0x${pci#*:}"
		[ -n "$props" ] && dev+=",$props"
		NVME_ARGS+=(-drive "file=$WORK/apst$i.img,if=none,id=apst$i,format=raw" -device "$dev")
		echo "APST_FILE_apst$i='$(basename "$file")'" >>"$WORK/apst.env"
		echo "APST_PROPS_apst$i='$props'" >>"$WORK/apst.env"
		# A controller that dies in a power state (apst-die-ps) is kept out of the other
		# steps: apst-quarantine.sh alone uses it.
		case $props in
		*apst-die-ps=*) die_serials+=" apst$i" ;;
		*) serials+=" apst$i" ;;
		esac
		i=$((i + 1))
	done
	{
		echo "APST_SERIALS='${serials# }'"
		echo "APST_DIE_SERIALS='${die_serials# }'"
		# E2E_APST_ONLY=quarantine: only apst-quarantine.sh's part (a quick run while working on it).
		echo "APST_ONLY='${E2E_APST_ONLY:-}'"
	} >>"$WORK/apst.env"
	# And one controller without the new properties: it must answer as stock QEMU.
	truncate -s 16M "$WORK/stock.img"
	NVME_ARGS+=(-drive "file=$WORK/stock.img,if=none,id=stock0,format=raw" -device "nvme,serial=stock0,drive=stock0")
	# The kernel prints each table it writes (dev_dbg in nvme_configure_apst).
	# no_console_suspend: the console shows what happens in suspend and resume.
	KERNEL_APPEND_EXTRA='nvme_core.dyndbg=+p no_console_suspend'
	# Boot the bzImage, not the PVH vmlinux: after a PVH boot, resuming from
	# S3 ends in a triple fault right after SeaBIOS's resume path (checked
	# with -d cpu_reset; q35 and pc, -cpu max and qemu64 alike), the guest
	# resets and -no-reboot ends QEMU. Through the bzImage it resumes.
	E2E_PVH=0
	# Which notifications pm_qos_latency_tolerance_us gives (apst-daemon.sh).
	t 120 cc -O2 -Wall -o "$WORK/apst-sysfs-watch" "$HERE/apst-sysfs-watch.c" ||
		fail "cannot compile apst-sysfs-watch.c"
}

# qmp CMD...: send QMP commands (JSON, one per argument) to the guest's QEMU;
# prints the replies.
qmp() {
	python3 - "$WORK/qmp.sock" "$@" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()  # greeting
for cmd in ['{"execute": "qmp_capabilities"}'] + sys.argv[2:]:
    f.write(cmd + "\n")
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "event" not in r:
            break
    print(json.dumps(r))
PY
}

# apst_watch_start / apst_watch_stop: while QEMU runs, wake the guest from
# S3 each time it asks for it (E2E_APST_SUSPEND on its output port) and is
# suspended: QMP system_wakeup, as a key press or a timer would.
apst_watch_start() {
	[ ${#APST_FILES[@]} -gt 0 ] || return 0
	(
		handled=0
		while sleep 1 && kill -0 $$ 2>/dev/null; do # (ends with run-e2e.sh)
			asked=$(grep -a -c E2E_APST_SUSPEND "$OUT" 2>/dev/null || true)
			[ "${asked:-0}" -gt "$handled" ] || continue
			for _ in $(seq 60); do
				qmp '{"execute": "query-status"}' 2>/dev/null | grep -q '"suspended"' && break
				sleep 0.5
			done
			sleep 2
			echo "[$(date +%T)] guest suspended (request $asked); system_wakeup" >>"$WORK/qmp.log"
			qmp '{"execute": "system_wakeup"}' >>"$WORK/qmp.log" 2>&1 || true
			handled=$asked
		done
	) &
	APST_WATCHER=$!
}
apst_watch_stop() {
	[ -n "${APST_WATCHER:-}" ] || return 0
	kill "$APST_WATCHER" 2>/dev/null || true
	wait "$APST_WATCHER" 2>/dev/null || true
	[ -s "$WORK/qmp.log" ] && sed 's/^/    qmp: /' "$WORK/qmp.log" >&2
	return 0
}

# apst_rebooted BOOT: whether the guest's BOOTth boot ended in the reboot apst-quarantine.sh
# asked for, so that run-e2e.sh boots the same root image and controllers again (QEMU's
# -no-reboot ended the process at the guest's reset): the guest printed its BOOTth
# E2E_APST_REBOOT and no result, and its kernel said "reboot: Restarting system" (not a triple
# fault, not a poweroff). At most one reboot.
apst_rebooted() {
	[ ${#APST_FILES[@]} -gt 0 ] && [ "$1" = 1 ] || return 1
	[ "$(tr -d '\r' <"$OUT" | grep -c '^E2E_APST_REBOOT$')" = "$1" ] || return 1
	! tr -d '\r' <"$OUT" | grep -q '^E2E_RESULT ' || return 1
	if ! grep -a -q 'reboot: Restarting system' "$CONSOLE"; then
		log "the guest asked for a reboot, but its kernel did not restart the machine"
		return 1
	fi
	log "the guest rebooted (apst-quarantine.sh): the second boot, same root image and controllers, a new QEMU process"
}

# apst_guest ROOT: the guest's part, and the e2e unit running it.
apst_guest() {
	[ ${#APST_FILES[@]} -gt 0 ] || return 0
	local d=$1/usr/local/libexec/nvme-apstd-e2e
	install -D -m755 "$HERE/apst-guest.sh" "$d/apst-guest.sh"
	[ -f "$HERE/apst-daemon.sh" ] && install -m755 "$HERE/apst-daemon.sh" "$d/apst-daemon.sh"
	[ -f "$HERE/apst-calibrate.sh" ] && install -m755 "$HERE/apst-calibrate.sh" "$d/apst-calibrate.sh"
	[ -f "$HERE/apst-passive.sh" ] && install -m755 "$HERE/apst-passive.sh" "$d/apst-passive.sh"
	[ -f "$HERE/apst-adaptive.sh" ] && install -m755 "$HERE/apst-adaptive.sh" "$d/apst-adaptive.sh"
	[ -f "$HERE/apst-hold.sh" ] && install -m755 "$HERE/apst-hold.sh" "$d/apst-hold.sh"
	[ -f "$HERE/apst-quarantine.sh" ] && install -m755 "$HERE/apst-quarantine.sh" "$d/apst-quarantine.sh"
	[ -f "$HERE/apst-quarantine-reboot.sh" ] && install -m755 "$HERE/apst-quarantine-reboot.sh" "$d/apst-quarantine-reboot.sh"
	install -m755 "$WORK/apst-sysfs-watch" "$d/apst-sysfs-watch"
	install -m644 "$WORK/apst.env" "$d/apst.env"
	mkdir -p "$1/etc/systemd/system/nvme-apstd-e2e.service.d"
	printf '[Service]\nExecStart=\nExecStart=%s\nTimeoutStartSec=%s\n' \
		/usr/local/libexec/nvme-apstd-e2e/apst-guest.sh "$((QTMO - 60))" \
		>"$1/etc/systemd/system/nvme-apstd-e2e.service.d/apst.conf"
}

# apst_report GUEST_OUTPUT: WORK/apst-report.json and a table on stderr.
apst_report() {
	[ ${#APST_FILES[@]} -gt 0 ] || return 0
	tr -d '\r' <"$1" | sed -n 's/^E2E_APST_JSON //p' | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin if l.strip()]
json.dump(recs, open(sys.argv[1], "w"), indent=1)
def short(t):
    if not t:
        return "-"
    out = []
    for i, e in enumerate(t):
        v = int(e, 16)
        if v:
            out.append("%d>%d@%d" % (i, (v >> 3) & 31, (v >> 8) & 0xffffff))
    return " ".join(out) or "all zero"
print("%-20s %-34s %-9s %-5s %s" % ("parameter set", "drive (PCI id)", "match", "APSTE", "kernel table (ps>target@ms) / plan if different"), file=sys.stderr)
for r in recs:
    k, p = r["kernel"], r["plan"]
    line = "%-20s %-34s %-9s %-5s %s" % (r["set"], ("%s (%s)" % (r["file"][:22], r["pci"])),
        "yes" if r["match"] else ("known" if r.get("known_difference") else "NO"),
        {True: "1", False: "0", None: "?"}[k["apste"]], short(k["table"]))
    if not r["match"]:
        line += "  | plan: " + short(p["table"]) + " APSTE " + str(p["apste"])
    print(line, file=sys.stderr)
print("%d controller x parameter set records, %d match, %d known differences" % (len(recs),
      sum(1 for r in recs if r["match"]), sum(1 for r in recs if not r["match"] and r.get("known_difference"))), file=sys.stderr)
for k in sorted({r["known_difference"] for r in recs if r.get("known_difference")}):
    print("known difference: " + k, file=sys.stderr)
' "$WORK/apst-report.json" || log "no APST report (python3 failed)"
	log "APST report: $WORK/apst-report.json"
}
