/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Measured wake costs of one drive model + firmware, as `calibrate` saves them.
 *
 * PLACEHOLDER on branch calib-measure: the interface agreed with branch calib-use
 * (which owns this header and src/calib.c, with parsing, loading and tests), reduced to
 * what `calibrate` needs to save. On merge, calib-use's files replace these.
 */

#include <stddef.h>
#include <stdint.h>

typedef struct CalibState {
        uint8_t ps;                    /* power state index, a non-operational state */
        uint32_t advertised_enlat_us;  /* from the descriptor when measured */
        uint32_t advertised_exlat_us;
        uint32_t samples;
        uint32_t wake_median_us;       /* the read after sleeping in ps minus an awake read, median */
        uint32_t wake_p99_us;          /* the same, 99th percentile (nearest rank) */
} CalibState;

typedef struct Calibration {
        char model[41];                /* trimmed Identify strings */
        char firmware[9];
        uint64_t measured_realtime_usec;
        uint32_t awake_median_us;      /* median latency of one read on an awake drive */
        size_t n_states;
        CalibState states[32];
} Calibration;

int calib_format(const Calibration *c, char **ret_text);
/* STATE_DIR/calibration/<escaped model>@<escaped firmware>.calib */
int calib_path(const char *state_dir, const char *model, const char *firmware, char **ret_path);
/* atomic, mode 0644, directories created */
int calib_save(const char *state_dir, const Calibration *c);
