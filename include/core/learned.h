/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the adaptive policy learned about one drive, and the text file it is kept
 * in across restarts and reboots
 * (STATE_DIR/adaptive/MODEL@FIRMWARE@SERIALHASH.learned, doc/policy.md): the
 * decayed histogram of its idle gaps and of the gaps its wake-ups hid (gaphist.h,
 * per floor, and after which gaps those wake-ups came), the first-request service
 * times passive calibration summed per state (so its measured exit latencies), and
 * how much evidence the policy has seen. The serial number is never written: only a
 * 64-bit FNV-1a hash of it, enough to tell two drives of one model apart.
 *
 * learned_format(), learned_parse(), learned_path() and learned_serial_hash() are
 * pure; learned-store.h reads and writes the file.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaphist.h"
#include "idctrl.h"
#include "passive-calib.h"

/* 2 added the hidden gaps (hidden=, hidden_after=); a version 1 file is read as one without them. */
#define LEARNED_FORMAT_VERSION 2
#define LEARNED_FORMAT_MIN_VERSION 1
/* Bounds a file must keep: counts far past what a drive can see in a century. */
#define LEARNED_COUNT_MAX UINT64_C(1000000000000000)       /* 10^15 */
#define LEARNED_HIST_SCALE 1000u                            /* the decayed counts, in thousandths */

typedef struct Learned {
        char model[41];                 /* trimmed Identify strings */
        char firmware[9];
        uint64_t serial_hash;           /* learned_serial_hash() of the serial */
        uint64_t gaps_seen;             /* evidence: gaps of 1 ms or more since first watched */
        uint64_t hist_milli[GAP_BUCKETS];  /* the decision histogram, decayed counts x 1000 */
        uint64_t hist_elapsed_ms;       /* the time it covers, decayed the same */
        uint64_t hidden_milli[GAP_HIDE_FLOORS][GAP_BUCKETS];  /* gaps wake-ups hid, per floor, decayed x 1000 */
        uint64_t hidden_after_milli[GAP_BUCKETS];  /* the wake-ups that hid any, by the gap before them */
        PassiveCalibSum awake;          /* passive calibration's sums */
        PassiveCalibSum state[IDCTRL_MAX_PS];
} Learned;

/* FNV-1a (64 bit) of the serial, as the table record keeps it. */
uint64_t learned_serial_hash(const char *serial);

/* The file's text (versioned, one key per line; zero counts left out). Return 0 or -ENOMEM. */
int learned_format(const Learned *l, char **ret_text);

/* Strict: an unknown key, a bad number, a repeated line, a bucket or state out of range, sums
 * that cannot be (a maximum above the sum, a sum without a count), or a missing header is
 * -EINVAL with *ret_error (if given) saying "line N: why". */
int learned_parse(const char *text, size_t len, Learned *ret, char **ret_error);

bool learned_equal(const Learned *a, const Learned *b);

/* STATE_DIR/adaptive/MODEL@FIRMWARE@HASH.learned, every byte outside [A-Za-z0-9_-] of the model and
 * firmware written as %XX, the hash as 16 hex digits. Return 0, -EINVAL or -ENOMEM. */
int learned_path(const char *state_dir, const char *model, const char *firmware, uint64_t serial_hash,
                 char **ret_path);
