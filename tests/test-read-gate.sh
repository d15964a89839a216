#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Only `calibrate` may send a Read: admin_open_namespace() (the one handle that may) is defined in
# src/platform/nvme-admin.c and called from calibrate's sequence, src/engine/calibrate.c, alone; no other source names it, nothing but
# nvme-admin.c names nvme_read/nvme_io, and nothing anywhere names a write helper.
# Usage: test-read-gate.sh SRCDIR
# Covers: src/platform/nvme-admin.c, src/cli/cmd-calibrate.c (and every other file of src/, which
# must not name the calls).
set -u
src=$1 fail=0
users=$(grep -l 'admin_open_namespace' "$src"/src/*/*.c | xargs -n1 basename | sort | tr '\n' ' ')
if [ "$users" = "calibrate.c nvme-admin.c " ]; then echo "ok: admin_open_namespace only in nvme-admin.c and calibrate.c"
else echo "FAIL: admin_open_namespace used in: $users"; fail=1; fi
io=$(grep -lE '\bnvme_(read|io|submit_io_passthru)\b' "$src"/src/*/*.c | xargs -n1 basename | tr '\n' ' ')
if [ "$io" = "nvme-admin.c " ]; then echo "ok: libnvme's I/O calls only in nvme-admin.c"
else echo "FAIL: libnvme I/O calls in: $io"; fail=1; fi
if grep -nE '\bnvme_(write|write_zeros|write_uncorrectable|dsm|format_nvm|sanitize_nvm)\b' "$src"/src/*/*.c; then
        echo "FAIL: a libnvme call that changes data"; fail=1
else echo "ok: no libnvme call that changes data"; fi
exit $fail
