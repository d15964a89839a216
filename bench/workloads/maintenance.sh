#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A machine's daily maintenance: what Debian's timers run once a day or a week (apt-daily,
# dpkg-db-backup, man-db, systemd-tmpfiles-clean, fstrim), each run by hand at the minute
# given below, as the timers' randomised delays spread them over a morning; idle between.
#   maintenance.sh SECONDS   (as root; needs the network for apt-get update)
# Recorded for bench/traces/held-out/maintenance.txt.gz with
#   bench/record.py vda 1260 -- bench/workloads/maintenance.sh 1200
set -u
secs=${1:?usage: maintenance.sh SECONDS}
at() {  # at SECONDS COMMAND...: wait until SECONDS into the run, then run COMMAND
        local t=$1
        shift
        [ $SECONDS -lt "$t" ] && sleep $((t - SECONDS))
        echo "$SECONDS s: $*" >&2
        "$@" >/dev/null 2>&1 || echo "  (exit $?)" >&2
}
at 60 apt-get -q update                               # apt-daily.timer
at 240 /usr/libexec/dpkg/dpkg-db-backup               # dpkg-db-backup.timer
at 420 mandb --create --quiet                         # man-db.timer (a full rebuild, as after an upgrade)
at 720 systemd-tmpfiles --clean                       # systemd-tmpfiles-clean.timer
at 840 fstrim --verbose /                             # fstrim.timer
[ $SECONDS -lt "$secs" ] && sleep $((secs - SECONDS))
exit 0
