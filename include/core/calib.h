/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Measured wake costs of one drive model + firmware, as `nvme-apstd calibrate`
 * finds them, and the text file they are kept in
 * (STATE_DIR/calibration/MODEL@FIRMWARE.calib, doc/calibrate.md).
 *
 * calib_format(), calib_parse(), calib_find(), calib_exlat_us() and
 * calib_apply() are pure; calib-store.h reads and writes the file.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idctrl.h"

#define CALIB_FORMAT_VERSION 1

typedef struct CalibState {
        uint8_t ps;                    /* power state index, a non-operational state */
        uint32_t advertised_enlat_us;  /* from the descriptor when measured */
        uint32_t advertised_exlat_us;
        uint32_t samples;
        uint32_t wake_median_us;       /* wake cost: the read after sleeping in ps minus an awake read, median */
        uint32_t wake_p99_us;          /* the same, 99th percentile (nearest rank) */
} CalibState;

typedef struct Calibration {
        char model[41];                /* trimmed Identify strings, as sysfs and idctrl.c give them */
        char firmware[9];
        uint64_t measured_realtime_usec;
        uint32_t awake_median_us;      /* median latency of one read on an awake drive */
        size_t n_states;
        CalibState states[IDCTRL_MAX_PS];
} Calibration;

/* The file's text (versioned, one key per line). Return 0 or -ENOMEM. */
int calib_format(const Calibration *c, char **ret_text);

/* Strict: an unknown key, a bad number, a repeated state or a missing header is -EINVAL with
 * *ret_error (if given) saying "line N: why". */
int calib_parse(const char *text, size_t len, Calibration *ret, char **ret_error);

/* Field by field (padding bytes are not part of a value). */
bool calib_equal(const Calibration *a, const Calibration *b);

/* The measurement of @ps, or NULL. */
const CalibState *calib_find(const Calibration *c, uint8_t ps);

/* The exit latency a policy should plan with: the measured median wake when it is larger than
 * @advertised_exlat_us, else @advertised_exlat_us (also when @c is NULL or @ps not measured). */
uint32_t calib_exlat_us(const Calibration *c, uint8_t ps, uint32_t advertised_exlat_us);

/**
 * calib_raise() - merge a measurement of @ps (a wake cost of @wake_us over @samples wake-ups, from
 * another source: the eBPF program's passive calibration) into @c: a new state is added with
 * @id's descriptors, a known one keeps the larger wake cost. @c must be for @id's model and
 * firmware. Return: 0, or -ENOSPC when @c has no room (it never has more than IDCTRL_MAX_PS).
 */
int calib_raise(Calibration *c, const IdCtrl *id, uint8_t ps, uint32_t wake_us, uint32_t samples);

/* *ret = *id with each measured state's exit latency raised per calib_exlat_us(). Return the
 * mask of the states raised (bit N = psN). @c must be for @id's model and firmware. */
uint32_t calib_apply(const Calibration *c, const IdCtrl *id, IdCtrl *ret);

/**
 * calib_dropin() - @c as a configuration drop-in, so a fleet can plan with it everywhere
 * @ret_name: "50-calibrated-MODEL-FIRMWARE.conf", every byte outside [A-Za-z0-9._-] as '_'
 * @ret_text: one [device NAME] section whose match_model and match_firmware match exactly @c's
 *            model and firmware (glob characters escaped) and whose exit_latency_us has each
 *            measured state's median wake-up
 * Return: 0, -ENOMEM, or -EINVAL when @c has no measured state, no firmware revision, or a model
 * or firmware the configuration's syntax cannot hold (a " ;" or " #" would start a comment).
 */
int calib_dropin(const Calibration *c, char **ret_name, char **ret_text);

/* STATE_DIR/calibration/MODEL@FIRMWARE.calib, every byte outside [A-Za-z0-9_-] of the model and
 * firmware written as %XX, so no name can leave the directory. Return 0, -EINVAL or -ENOMEM. */
int calib_path(const char *state_dir, const char *model, const char *firmware, char **ret_path);
