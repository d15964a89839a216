# shellcheck shell=bash
# apst-calibrate.sh - sourced by apst-guest.sh (its ok/notok/check/note/step/t,
# ctrl_of, APST_SERIALS). For each controller the host gave
# apst-exlat-scale-percent=P and apst-exlat-scale-ps=N (APST_PROPS_<serial>,
# apst-host.sh): `nvme-apstd calibrate` on it must measure ps N waking in
# P % of its advertised exit latency, within 20 %, and put the table back.
# The daemon is stopped meanwhile (calibrate refuses to run beside it).
step "calibrate"
calib_daemon=0
if systemctl is-active -q nvme-apstd.service; then
	calib_daemon=1
	t 90 systemctl stop nvme-apstd.service
fi
for s in $APST_SERIALS; do
	pv="APST_PROPS_$s"
	props=${!pv:-} f="/tmp/calib-$s"
	case $props in *apst-exlat-scale-percent=*) ;; *) continue ;; esac
	pct=$(echo "$props" | sed -n 's/.*apst-exlat-scale-percent=\([0-9]*\).*/\1/p')
	sps=$(echo "$props" | sed -n 's/.*apst-exlat-scale-ps=\([0-9]*\).*/\1/p')
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
done
if [ $calib_daemon = 1 ]; then
	t 90 systemctl start nvme-apstd.service
fi
