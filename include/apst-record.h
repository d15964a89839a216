/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The record of a controller's original APST table (the one found before the
 * daemon first wrote), kept in $RUNTIME_DIRECTORY/ctrl-NAME.orig so that a
 * daemon restarted after a crash restores what the kernel had, not what its
 * predecessor wrote. Bound to the drive by model and a hash of the serial (the
 * serial itself is never written).
 */

#include "apst.h"
#include "idctrl.h"

/* Write the record atomically. Return: 0 or -errno. */
int apst_record_save(const char *path, const IdCtrl *id, const ApstTable *t);

/* Return: 0; -ENOENT (no record), -ESTALE (another drive's), -EBADMSG (unusable). */
int apst_record_load(const char *path, const IdCtrl *id, ApstTable *ret);
