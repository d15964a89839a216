#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The shipped polkit action (polkit/io.github.nvme_apstd.policy): valid against polkit's DTD,
# the action the daemon's source asks about, with the defaults doc/holds.md promises (active
# session yes, everything else auth_admin), and a description and message for the dialog.
# The shipped bus policy lets everyone call the hold methods and nothing else of Manager1.
# Usage: test-polkit-policy.sh SOURCE-ROOT
set -u
src=$1 fail=0
policy=$src/polkit/io.github.nvme_apstd.policy
conf=$src/dbus/io.github.nvme_apstd.conf
dtd=/usr/share/polkit-1/policyconfig-1.dtd
action=io.github.nvme_apstd.hold-latency
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
command -v xmllint >/dev/null || { echo "SKIP: xmllint (libxml2-utils) not installed"; exit 77; }
if [ -r "$dtd" ]; then
        check "the action file is valid against polkit's DTD" 'xmllint --noout --dtdvalid "$dtd" "$policy"'
else
        echo "note: $dtd missing (polkitd not installed): well-formedness only"
        check "the action file is well-formed XML" 'xmllint --noout "$policy"'
fi
xp() { xmllint --xpath "$1" "$policy" 2>/dev/null; }
check "it declares exactly one action, $action" '[ "$(xp "count(//action)")" = 1 ] && [ "$(xp "string(//action/@id)")" = "$action" ]'
check "allow_active yes" '[ "$(xp "string(//action/defaults/allow_active)")" = yes ]'
check "allow_inactive auth_admin" '[ "$(xp "string(//action/defaults/allow_inactive)")" = auth_admin ]'
check "allow_any auth_admin" '[ "$(xp "string(//action/defaults/allow_any)")" = auth_admin ]'
check "a description and a message for the authentication dialog" \
        '[ -n "$(xp "string(//action/description)")" ] && [ -n "$(xp "string(//action/message)")" ]'
# the daemon's source names the same action (a typo on either side would refuse every user)
used=$(grep -rhoE '"io\.github\.nvme_apstd\.[a-z-]+"' "$src/src" "$src/include" | tr -d '"' | grep -v '\.[A-Z]' |
       grep -vx 'io.github.nvme_apstd' | sort -u)
if [ -n "$used" ]; then
        check "the action the daemon asks polkit about is the one shipped ($used)" '[ "$used" = "$action" ]'
else
        echo "note: the daemon's source names no polkit action yet"
fi
cx() { xmllint --xpath "$1" "$conf" 2>/dev/null; }
members=$(cx '//policy[@context="default"]/allow[@send_interface="io.github.nvme_apstd.Manager1"]/@send_member' |
          sed 's/ *send_member="\([^"]*\)"/\1\n/g' | sed '/^$/d' | sort | tr '\n' ' ')
check "the bus policy lets everyone call HoldLatency and ReleaseLatency on Manager1, nothing else ($members)" \
        '[ "$members" = "HoldLatency ReleaseLatency " ]'
check "the bus policy allows no Properties.Set" \
        '[ "$(cx "count(//allow[@send_member=\"Set\"])")" = 0 ] && [ "$(cx "count(//allow[@send_interface=\"org.freedesktop.DBus.Properties\"][not(@send_member)])")" = 0 ]'
check "only root may own the name" '[ "$(cx "count(//allow[@own])")" = 1 ] && [ "$(cx "string(//policy[@user=\"root\"]/allow/@own)")" = io.github.nvme_apstd ]'
exit $fail
