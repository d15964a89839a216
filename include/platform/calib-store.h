/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The calibration file on disk (STATE_DIR/calibration/MODEL@FIRMWARE.calib,
 * doc/calibrate.md): read, and replaced atomically. The format is calib.h's.
 */


#include "calib.h"

/* Read the measurement for @model/@firmware. -ENOENT: none; -EINVAL: malformed (*ret_error says
 * where, "PATH: line N: why"), or for another model or firmware. */
int calib_load(const char *state_dir, const char *model, const char *firmware, Calibration *ret,
               char **ret_error);

/* Write atomically (mode 0644), creating STATE_DIR/calibration. */
int calib_save(const char *state_dir, const Calibration *c);
