/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The I/O watcher (pure: no I/O, no clock, no logging).
 *
 * Fed readings of /sys/block/<disk>/stat (and its in-flight count) at times
 * it chose itself, on whatever clock the caller runs (the daemon's monotonic
 * clock, the simulator's virtual one), it says:
 *  - activity: the I/O rate, and a histogram of the idle gaps between I/Os
 *    (estimated from the readings: a gap is seen to the precision of the
 *    sampling around it, see watch.c);
 *  - observed stall: per-I/O ticks beyond the awake baseline right after an
 *    idle gap, i.e. the wake-up cost the drive actually made the I/O pay
 *    (the ticks run from the request's start to its completion, so they
 *    include the wait for the drive to wake, honest drive or not);
 *  - when to read next: every WATCH_FAST_NS while I/O happens, then backing
 *    off to a quarter of the time since the last activity, up to
 *    WATCH_SLOW_NS, so an idle disk costs at most 1 / WATCH_SLOW_NS wake-ups.
 * Statistics decay with a half-life of WATCH_HALF_LIFE_NS, so they follow a
 * workload that changes. Reading sysfs never touches the drive.
 */

#include <stdbool.h>
#include <stdint.h>

#define WATCH_FAST_NS UINT64_C(50000000)          /* 50 ms while I/O happens */
#define WATCH_SLOW_NS UINT64_C(5000000000)        /* 5 s when idle: 0.2 wake-ups/s */
#define WATCH_HALF_LIFE_NS UINT64_C(30000000000)  /* statistics forget half in 30 s */
/* Idle-gap histogram: 4 buckets per octave from 1 ms; the last one takes everything
 * from ~2^17 ms (~2 min) on. */
#define WATCH_BUCKETS_PER_OCTAVE 4u
#define WATCH_BUCKETS 72u
/* Readings after an idle gap with at most this many I/Os tell the wake cost; in a
 * larger burst the queueing behind the first I/O blurs it. */
#define WATCH_SMALL_IOS 4u

/* The part of one /sys/block/<disk>/stat reading the watcher uses. */
typedef struct WatchStat {
        uint64_t ios;              /* completed reads + writes + discards + flushes */
        uint64_t ticks_ms;         /* their ticks: ms from start to completion, summed */
        uint64_t in_flight;
        uint64_t io_ticks_ms;      /* ms with at least one I/O in flight */
} WatchStat;

/**
 * watch_stat_parse() - decode the text of /sys/block/<disk>/stat (11, 15 or 17
 * decimal fields, Documentation/block/stat.rst; older kernels have fewer).
 * Return: 0 or -EINVAL.
 */
int watch_stat_parse(const char *text, WatchStat *ret);

/* What one reading told. */
typedef struct WatchReport {
        uint64_t dt_ns;            /* since the previous reading (0 for the first) */
        uint64_t ios;              /* I/Os completed since */
        bool active;               /* some completed or still in flight */
        uint64_t gap_ns;           /* the idle gap that ended in this interval, 0 = none */
        /* ticks beyond ios x the awake baseline (ms), when this interval follows an idle gap
         * and holds at most WATCH_SMALL_IOS I/Os (small = true); else 0 */
        double wake_ms;
        bool small;
        uint64_t wake_gap_ns;      /* with small: the idle gap that wake followed (0 = unknown) */
        uint64_t next_ns;          /* when to read next */
} WatchReport;

typedef struct Watch {
        bool started;
        uint64_t last_ns;          /* the previous reading */
        WatchStat last;
        bool prev_active;
        bool seen_active;
        bool wake_pending;            /* a gap ended, its I/O has not completed yet */
        uint64_t pending_gap_ns;
        uint64_t last_active_mid_ns;  /* middle of the last interval with activity */
        uint64_t last_active_ns;      /* end of it */
        uint64_t next_ns;

        /* decayed (half-life WATCH_HALF_LIFE_NS) */
        double elapsed_ns;
        double ios;
        double wake_ms;            /* observed wake cost */
        double gap_count[WATCH_BUCKETS];
        double gap_sum_ns[WATCH_BUCKETS];

        double baseline_ms;        /* ticks per I/O while awake; learned, starts at 0 */
        bool have_baseline;

        /* since the start */
        uint64_t readings;
        uint64_t total_ios;
        double total_wake_ms;
} Watch;

/* Start watching; the first reading is due at @now_ns. */
void watch_init(Watch *w, uint64_t now_ns);

/**
 * watch_feed() - one reading taken at @now_ns (>= the previous one)
 * Counters that went backwards (the disk was replaced, a counter wrapped) restart
 * the watcher from this reading. @ret may be NULL.
 */
void watch_feed(Watch *w, uint64_t now_ns, const WatchStat *st, WatchReport *ret);

static inline uint64_t watch_next(const Watch *w) {
        return w->next_ns;
}

/**
 * watch_idle_next() - when a reader that backs off while idle reads next: @now_ns + @wait_ns
 * while @wait_ns is below @cap_ns (the back-off still growing), and once it reaches the cap
 * the first multiple of @cap_ns after @now_ns. Every reader idle at the same cap, on the same
 * clock, then reads at the same instants whatever its phase, so one wake-up serves them all: an
 * idle daemon wakes once per @cap_ns however many controllers it watches, where readers each
 * @cap_ns after their own last reading would drift apart and wake it once each. The wait to the
 * first such reading is at most @cap_ns. A @cap_ns of 0 means no cap: @now_ns + @wait_ns.
 */
uint64_t watch_idle_next(uint64_t now_ns, uint64_t wait_ns, uint64_t cap_ns);

/* I/Os per second over the decayed window; 0 before two readings. */
double watch_io_rate(const Watch *w);
/* Observed wake cost over the decayed window, as a share of elapsed time (0..1). */
double watch_stall_fraction(const Watch *w);
/* The idle gap with @q (0..1) of the (decayed) gaps at or below it, ns; 0 without gaps. */
uint64_t watch_gap_quantile(const Watch *w, double q);
/* Decayed number of gaps. */
double watch_gap_total(const Watch *w);
/* The bucket a gap falls in, and the lower bound of a bucket, ns. */
unsigned watch_bucket(uint64_t gap_ns);
uint64_t watch_bucket_floor_ns(unsigned b);
