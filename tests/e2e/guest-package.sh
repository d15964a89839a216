# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Debian package's life cycle in the QEMU guest, sourced by guest-test.sh
# (it uses its check/have/cursor/... helpers) when the host put the packages
# built by tests/package/build-debs.sh into the guest:
#   pkg_install    before guest-test.sh's checks: `apt-get install ./….deb`
#                  instead of `meson install`; enabled, active, catalog updated
#   pkg_lifecycle  after them: edit the conffile, upgrade to the package one
#                  version up (edit kept, no prompt, daemon restarted on the
#                  new binary), `apt-get remove` (stopped, tables restored,
#                  conffile kept), `apt-get purge` (every file gone)
# Every apt-get runs non-interactively with stdin from /dev/null: a conffile
# prompt would fail it instead of hanging.
# Functions below are called through check(), which shellcheck cannot follow.
# shellcheck disable=SC2317

PKG_ENV=/usr/local/libexec/nvme-apstd-e2e/package.sh
# shellcheck disable=SC1090
. "$PKG_ENV" # PKG_DEB1 PKG_VER1 PKG_DEB2 PKG_VER2
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -y -q --no-install-recommends -o Dpkg::Use-Pty=0)

# What is on the root file system and in /run/nvme-apstd, minus what changes
# on any dpkg run (dpkg's and apt's databases, caches, logs, the journal).
# The systemd catalog database is rebuilt by a dpkg trigger: its name stays.
snapshot() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /var/tmp \
		-o -path /var/log -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg \) \
		-prune -o -print | LC_ALL=C sort
	find /run/nvme-apstd 2>/dev/null | LC_ALL=C sort
}
pkg_status() { dpkg-query -W -f='${Status} ${Version}' nvme-apstd 2>/dev/null; }
# apt_run LOG ARGS...: apt-get under a timeout, output kept in LOG and shown
apt_run() {
	local log=$1 rc
	shift
	t 300 "${APT[@]}" "$@" </dev/null >"$log" 2>&1
	rc=$?
	grep -v '^\(Reading\|Building\|Reading state\)' "$log" | sed 's/^/#   /' | head -n 40
	return $rc
}
no_prompt() { ! grep -qiE "configuration file .*(modified|==>)|\(Y/I/N/O/D/Z\)" "$1"; }
# catalog_has ID: journalctl --list-catalog lists ID
catalog_has() { t 60 journalctl --list-catalog --no-pager 2>/dev/null | grep -qi "^$1"; }
STARTED_ID=${MSGID_DAEMON_STARTED:-6c1d1fa7ce35494dbc688104667e6390}
not() { ! "$@"; }
enabled_active() {
	[ "$(t 30 systemctl is-enabled "$UNIT")" = enabled ] && is_active active
}
conf_is() { [ "$(md5sum <"$CONF")" = "$1" ]; }
restarted() { is_active active && [ "$2" != 0 ] && [ "$2" != "$1" ]; }
stopped() { ! is_active active && ! kill -0 "$1" 2>/dev/null; }
# runs_installed_binary PID: PID runs /usr/sbin/nvme-apstd as installed now
# (an old binary replaced by dpkg shows as "/usr/sbin/nvme-apstd (deleted)")
runs_installed_binary() {
	[ "$(exe_of "$1")" = /usr/sbin/nvme-apstd ] &&
		[ "$(md5sum <"/proc/$1/exe" | cut -d' ' -f1)" = "$(dpkg_md5)" ]
}
# restarted_in_journal CURSOR OLDPID NEWPID
restarted_in_journal() {
	have 20 "$1" "$DAEMON and (._PID == \"$2\") and $(kind MSGID_DAEMON_STOPPED 'stop|exit')" &&
		have 20 "$1" "$DAEMON and (._PID == \"$3\") and $(kind MSGID_DAEMON_STARTED started)"
}
is_conffile() {
	dpkg-query -W -f='${Conffiles}\n' nvme-apstd | grep -qE '^ /etc/nvme-apstd\.conf [0-9a-f]{32}$'
}
none_exist() {
	local f
	for f in "$@"; do [ ! -e "$f" ] || { note "still there: $f"; return 1; }; done
}
version_is() { nvme-apstd --version 2>&1 | grep -qF -- "$1"; }
pkg_status_matches() { pkg_status | grep -qE "$1"; }
exe_of() { readlink "/proc/$1/exe" 2>/dev/null; }
# md5 of the installed binary, as dpkg recorded it
dpkg_md5() { awk '$2 == "usr/sbin/nvme-apstd" {print $1}' /var/lib/dpkg/info/nvme-apstd.md5sums; }

pkg_install() {
	step "0. apt-get install ./$(basename "$PKG_DEB1")"
	snapshot >/tmp/files.before
	C_INSTALL=$(cursor)
	check "apt-get install ./$(basename "$PKG_DEB1") succeeds offline (every dependency is in the guest already)" \
		apt_run /tmp/apt-install.txt install "$PKG_DEB1"
	check "dpkg: nvme-apstd $PKG_VER1 installed ($(pkg_status))" \
		[ "$(pkg_status)" = "install ok installed $PKG_VER1" ]
	check "the package enabled the unit (is-enabled = $(t 30 systemctl is-enabled "$UNIT" 2>&1))" \
		[ "$(t 30 systemctl is-enabled "$UNIT" 2>&1)" = enabled ]
	check "the package started the unit (is-active = active)" is_active active
	check "/etc/nvme-apstd.conf is a conffile of the package" is_conffile
	check "the journal catalog has the package's entries (systemd's dpkg trigger ran journalctl --update-catalog)" \
		catalog_has "$STARTED_ID"
	note "dpkg -L nvme-apstd:"
	dpkg -L nvme-apstd | sed 's/^/#   /'
	snapshot >/tmp/files.installed
	note "files the installation added (snapshot diff; dpkg's and apt's own databases left out):"
	LC_ALL=C comm -13 /tmp/files.before /tmp/files.installed | sed 's/^/#   + /'
	LC_ALL=C comm -23 /tmp/files.before /tmp/files.installed | sed 's/^/#   - /'
}

pkg_lifecycle() {
	local pid1 pid2 c sum rc written
	# ------------------------------------------------------------ upgrade
	step "7. upgrade to $PKG_VER2 with an edited /etc/nvme-apstd.conf"
	# The enable/disable check above left the unit disabled; back to the
	# state the installation left it in.
	t 90 systemctl enable --now "$UNIT" 2>/dev/null
	check "enabled and active again before the upgrade" enabled_active
	pid1=$(prop MainPID)
	sed -i 's/^#max_latency_us = 100000$/max_latency_us = 5000/' "$CONF"
	printf '# edited by the e2e test\n' >>"$CONF"
	sum=$(md5sum <"$CONF")
	check "the conffile edit is in place (max_latency_us = 5000, uncommented)" grep -qx 'max_latency_us = 5000' "$CONF"
	c=$(cursor)
	check "apt-get install ./$(basename "$PKG_DEB2") (upgrade) succeeds non-interactively" \
		apt_run /tmp/apt-upgrade.txt install "$PKG_DEB2"
	check "no conffile prompt and no conffile question in apt's output" no_prompt /tmp/apt-upgrade.txt
	check "dpkg: nvme-apstd $PKG_VER2 installed ($(pkg_status))" \
		[ "$(pkg_status)" = "install ok installed $PKG_VER2" ]
	check "the edited /etc/nvme-apstd.conf survived the upgrade unchanged" conf_is "$sum"
	check "no .dpkg-new/.dpkg-dist/.dpkg-old next to it" \
		not compgen -G "$CONF.dpkg-*"
	pid2=$(prop MainPID)
	note "MainPID before $pid1, after $pid2; exe $(exe_of "$pid2")"
	check "the daemon was restarted (active, new MainPID)" \
		restarted "$pid1" "$pid2"
	check "it runs the new binary: /proc/PID/exe is /usr/sbin/nvme-apstd, not deleted, and its md5 is the package's" \
		runs_installed_binary "$pid2"
	check "nvme-apstd --version says $PKG_VER2 ($(nvme-apstd --version 2>&1 | head -n 1))" \
		version_is "$PKG_VER2"
	check "journal: the old daemon (PID $pid1) logged its stop, the new one (PID $pid2) its start" \
		restarted_in_journal "$c" "$pid1" "$pid2"
	show "$c" "$DAEMON or (.UNIT == \"$UNIT\")"

	# ------------------------------------------------------------- remove
	step "8. apt-get remove"
	c=$(cursor)
	check "apt-get remove nvme-apstd succeeds" apt_run /tmp/apt-remove.txt remove nvme-apstd
	check "the service is stopped (inactive) and its process gone" stopped "$pid2"
	check "journal: the daemon logged its stop (it puts back every table and CPU policy on SIGTERM)" \
		have 20 "$c" "$DAEMON and (._PID == \"$pid2\") and $(kind MSGID_DAEMON_STOPPED 'stop|exit')"
	# A table restored for every table written: QEMU's own controller has no
	# APST (nothing written, nothing to restore), an APST-capable one has.
	written=$(unit_json "$C_INSTALL" | jq "[.[] | select($DAEMON and $(kind MSGID_TABLE_WRITTEN 'table written'))] | length")
	if [ "${written:-0}" -gt 0 ]; then
		check "journal: the APST table was restored on stop (tables written since the install: $written)" \
			have 20 "$c" "$DAEMON and $(kind MSGID_TABLE_RESTORED restored)"
	else
		note "no APST table was written since the install (QEMU's controller has no APST): nothing to restore"
	fi
	check "journal: systemd logged the stop (\"Deactivated successfully\")" \
		have 10 "$c" '(.MESSAGE_ID == "7ad2d189f7e94e70a38c781354912448") and (.UNIT == "nvme-apstd.service")'
	show "$c" "$DAEMON or (.UNIT == \"$UNIT\")"
	check "dpkg: removed, its conffile kept ($(pkg_status))" \
		[ "$(pkg_status)" = "deinstall ok config-files $PKG_VER2" ]
	check "the edited /etc/nvme-apstd.conf is still there, unchanged" conf_is "$sum"
	check "binary, unit, catalog and man pages are gone; /run/nvme-apstd too" \
		none_exist /usr/sbin/nvme-apstd /lib/systemd/system/nvme-apstd.service \
		/usr/lib/systemd/catalog/nvme-apstd.catalog /usr/share/man/man8/nvme-apstd.8.gz /run/nvme-apstd
	note "dpkg -L nvme-apstd after remove:"
	dpkg -L nvme-apstd 2>&1 | sed 's/^/#   /'

	# -------------------------------------------------------------- purge
	step "9. apt-get purge"
	check "apt-get purge nvme-apstd succeeds" apt_run /tmp/apt-purge.txt purge nvme-apstd
	check "dpkg: nvme-apstd is gone ($(pkg_status))" \
		not pkg_status_matches 'ok (installed|config-files)'
	check "/etc/nvme-apstd.conf is gone" test ! -e "$CONF"
	snapshot >/tmp/files.purged
	note "files before the installation vs after the purge:"
	LC_ALL=C comm -3 /tmp/files.before /tmp/files.purged | sed 's/^\t/+ /; s/^\([^+]\)/- \1/; s/^/#   /'
	check "every file the package or the daemon created is gone (file lists before install and after purge are equal)" \
		cmp -s /tmp/files.before /tmp/files.purged
	check "the journal catalog no longer has the package's entries (the trigger ran again on removal)" \
		not catalog_has "$STARTED_ID"
	rc=$(t 30 systemctl is-enabled "$UNIT" 2>&1)
	note "systemctl is-enabled after purge: $rc"
}
