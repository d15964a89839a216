/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The exact idle-gap histogram of one disk (pure: no I/O, no clock).
 *
 * A gap is the time from the moment a disk's last in-flight request completed
 * to the moment its next request was issued. Each gap that ended is counted in
 * the bucket of its length, and the service time (issue to completion) of the
 * first request after it is added to that bucket's wake figures: what the drive
 * charged for waking from wherever the gap took it.
 *
 * A gap can also be hidden: while the drive wakes for the request that ended a gap,
 * requests issued meanwhile wait behind it, and the disk shows no gap between them
 * however far apart they were issued. A drive that woke faster (a shallower state, or
 * none) would have served the first and gone idle before the next. Such gaps are counted
 * apart, in `hidden`, once per floor: a floor is how soon a table could have woken the
 * drive (0 for a drive awake, then the exit latencies of its states), and a request issued
 * while the gap's first request still waits, later than a floor after that one was issued,
 * counts the time from the later of the previous issue and that moment: the gap the disk
 * would have shown had it woken in the floor's time. `hidden_after` counts, by the length
 * of the gap before them, the wake-ups that hid at least one request (floor 0): which
 * state another table would have woken from there. Gaps the table in force did not let
 * the disk show, which a table waking faster would meet (doc/watch.md, "Gaps a wake-up
 * hides").
 *
 * Buckets: 4 per octave of nanoseconds. Bucket 0 holds every gap shorter than
 * 2^GAP_BASE_SHIFT ns (65.5 µs); bucket b >= 1 holds the gaps g with
 * floor(log2 g) = GAP_BASE_SHIFT + (b - 1) / 4 and the two bits below g's
 * leading bit equal to (b - 1) % 4. The last bucket also takes every longer gap
 * (from 2^40 ns, about 18 minutes, on). The eBPF program computes the same
 * index in the kernel (gaphist_bucket() is the reference), so user space never
 * sees single requests.
 */

#include <stddef.h>
#include <stdint.h>

#define GAP_BASE_SHIFT 16u
#define GAP_TOP_SHIFT 40u
#define GAP_BUCKETS_PER_OCTAVE 4u
#define GAP_BUCKETS (1u + (GAP_TOP_SHIFT - GAP_BASE_SHIFT) * GAP_BUCKETS_PER_OCTAVE + 1u)   /* 98 */
/* Floors for hidden gaps: 0 (awake), then the drive's distinct wake-up times (the shortest). */
#define GAP_HIDE_FLOORS 4u
/* A wake-up counts in hidden_after once it hid a gap this long at floor 0: no APST table acts
 * on less (its idle times are whole milliseconds, NVMe Base 5.21.1.12). */
#define GAP_HIDDEN_MIN_NS 1000000u

/* One disk's counters, as the kernel program keeps them (all only ever grow). */
typedef struct GapHist {
        uint64_t gaps[GAP_BUCKETS];          /* gaps that ended, by length */
        uint64_t wake_count[GAP_BUCKETS];    /* first requests after such a gap that completed */
        uint64_t wake_sum_ns[GAP_BUCKETS];   /* their service times, summed */
        uint64_t wake_max_ns[GAP_BUCKETS];   /* and the longest (not a counter: kept as the max seen) */
        uint64_t gap_sum_ns;                 /* all gaps' lengths, summed */
        uint64_t requests;                   /* requests completed */
        uint64_t hidden[GAP_HIDE_FLOORS][GAP_BUCKETS];  /* gaps a wake-up hid, per floor, by length */
        uint64_t hidden_after[GAP_BUCKETS];  /* wake-ups that hid any, by the gap before them */
} GapHist;

/* The bucket of a gap of @gap_ns. */
unsigned gaphist_bucket(uint64_t gap_ns);
/* The shortest gap bucket @b holds (0 for bucket 0). */
uint64_t gaphist_bucket_lower_ns(unsigned b);
/* The first gap length past bucket @b (UINT64_MAX for the last). */
uint64_t gaphist_bucket_upper_ns(unsigned b);

/* Count one gap of @gap_ns that ended with a first request whose service took @svc_ns. */
void gaphist_add_gap(GapHist *h, uint64_t gap_ns, uint64_t svc_ns);

/* Count one gap of @gap_ns that a wake-up hid, for floor @floor (< GAP_HIDE_FLOORS). */
void gaphist_add_hidden(GapHist *h, unsigned floor, uint64_t gap_ns);
/* Count a wake-up that hid requests, after a gap of @gap_ns. */
void gaphist_add_hidden_after(GapHist *h, uint64_t gap_ns);

/**
 * gaphist_delta() - what happened between two readings of the same counters.
 * @now, @prev: readings, @prev taken earlier (or all zero).
 * @ret: the counts since @prev; wake_max_ns is @now's (a max has no difference).
 * Return: 0, or -ERANGE when a counter went backwards (the program was reloaded
 * or the disk replaced): @ret then holds @now whole.
 */
int gaphist_delta(const GapHist *now, const GapHist *prev, GapHist *ret);

/* Add @src's counts to @dst (max for wake_max_ns). */
void gaphist_merge(GapHist *dst, const GapHist *src);

/* The counts of one row of buckets (gaps, a floor's hidden gaps, hidden_after), summed. */
uint64_t gaphist_row_total(const uint64_t row[static GAP_BUCKETS]);

/* Gaps counted, over all buckets. */
uint64_t gaphist_total_gaps(const GapHist *h);

/* Hidden gaps counted, over all floors and buckets. */
uint64_t gaphist_total_hidden(const GapHist *h);
