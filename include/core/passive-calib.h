/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Passive calibration (pure: no I/O, no clock, no logging).
 *
 * The exact idle-gap histogram (gaphist.h) says, per gap bucket, how long the
 * first request after such a gap took from issue to completion. The table in
 * force says where an idle drive is after a gap of a given length: in PS0
 * before the first step's ITPT, entering state s between the moment it is
 * due and that moment plus s's entry latency, settled in s from then until
 * the next step is due. So the first requests after the gaps of the buckets
 * that lie wholly inside one state's settled span each paid that state's exit
 * latency on top of an awake service time, and the first requests after the
 * gaps that lie wholly before the first step show the awake service time
 * itself. A state's measured exit latency is the mean service time of the
 * first group minus the mean of the second: no Set Features, no extra I/O.
 *
 * Buckets that straddle a boundary (a quarter octave wide, gaphist.h), or
 * fall in an entry span (the request then also waits out the rest of the
 * entry), or within PASSIVE_CALIB_MARGIN_SHIFT of a boundary (the drive's idle clock
 * starts a little before the block layer sees the completion), are left
 * out: they are not evidence for one state. doc/watch.md has the whole of it.
 *
 * The caller feeds histogram deltas together with the table that was in force
 * while they were counted (the daemon reads the kernel's maps before it writes
 * a new table, so every delta has one table).
 */

#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "gaphist.h"
#include "idctrl.h"

/* First requests needed before a mean is trusted: the awake mean and each state's. A mean of 5
 * wake-ups of one state is within the 25 % the accuracy test asks for when the drive is steady;
 * fewer leave a single slow request (a cache miss, a queue flush) too much weight. */
#define PASSIVE_CALIB_MIN_SAMPLES 5u
/* The buckets next to a boundary B are left out up to B / 2^PASSIVE_CALIB_MARGIN_SHIFT (6.25 %) away. */
#define PASSIVE_CALIB_MARGIN_SHIFT 4u
/* A measured exit latency disagrees with the descriptor when it differs by more than a quarter of
 * the advertised figure and by more than PASSIVE_CALIB_DISAGREE_MIN_US: the accuracy passive measurement
 * can vouch for (doc/watch.md). */
#define PASSIVE_CALIB_DISAGREE_MIN_US 200u

/* Where the table in force takes an idle drive, in idle time since the last completion. */
typedef struct PassiveCalibReach {
        unsigned n;                             /* steps of the chain from PS0 (0: the drive stays awake) */
        uint8_t state[IDCTRL_MAX_PS];           /* the state of step k */
        uint64_t due_ns[IDCTRL_MAX_PS];         /* step k begins: its entry starts */
        uint64_t settled_ns[IDCTRL_MAX_PS];     /* step k's entry is over: from here to due_ns[k+1] a
                                                 * request pays exactly state[k]'s exit latency */
} PassiveCalibReach;

/**
 * passive_calib_reach_from_table() - the chain an idle drive walks under @t from PS0: each
 * state's entry ITPT and ITPS, until a state that goes nowhere, a state already
 * visited, or APSTE = 0. The entry latencies are @id's descriptors (0 = not reported).
 */
void passive_calib_reach_from_table(const ApstTable *t, const IdCtrl *id, PassiveCalibReach *ret);

/* Running sums of first-request service times. */
typedef struct PassiveCalibSum {
        uint64_t count;
        uint64_t sum_ns;
        uint64_t max_ns;
} PassiveCalibSum;

typedef struct PassiveCalib {
        PassiveCalibSum awake;          /* after gaps too short to leave PS0 */
        PassiveCalibSum state[IDCTRL_MAX_PS];  /* after gaps wholly inside the state's settled span */
        uint64_t gaps_fed;              /* gaps in every delta fed, used or not */
} PassiveCalib;

/* Add the gaps of one histogram delta, counted while @reach's table was in force. */
void passive_calib_feed(PassiveCalib *pc, const GapHist *delta, const PassiveCalibReach *reach);

typedef struct PassiveCalibEstimate {
        uint64_t samples;               /* first requests after gaps that settled in the state */
        uint64_t awake_samples;
        uint64_t awake_mean_ns;         /* service time of a first request to an awake drive */
        uint64_t wake_mean_ns;          /* ... to a drive settled in the state */
        uint64_t wake_max_ns;
        uint64_t exlat_ns;              /* wake_mean_ns - awake_mean_ns, at least 0 */
} PassiveCalibEstimate;

/**
 * passive_calib_estimate() - the measured exit latency of @ps
 * Return: 0 with @ret filled in; -ENODATA while the state or the awake service time has fewer
 * than PASSIVE_CALIB_MIN_SAMPLES first requests; -EINVAL for @ps out of range.
 */
int passive_calib_estimate(const PassiveCalib *pc, unsigned ps, PassiveCalibEstimate *ret);

/* Does a measured exit latency disagree with the descriptor's (see PASSIVE_CALIB_DISAGREE_MIN_US)? */
bool passive_calib_disagrees(uint64_t measured_ns, uint32_t advertised_us);

/**
 * passive_calib_apply() - *ret = *id with each state's exit latency raised to its measured one where that
 * is larger (the policies' max(advertised, measured), as calib_apply() does for a stored
 * calibration). Return: the mask of the states raised (bit N = psN).
 */
uint32_t passive_calib_apply(const PassiveCalib *pc, const IdCtrl *id, IdCtrl *ret);
