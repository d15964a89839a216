/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The I/O watcher: block-layer counters in, activity and observed stall out,
 * and when to look again. See watch.h for what it says; here is how.
 *
 * Gaps. A reading at t_k covers (t_{k-1}, t_k]. I/Os that arrived in it are
 * the completions plus the growth of in_flight. An interval with arrivals
 * after one or more intervals without any ends an idle gap, estimated as the
 * distance between the middles of the two active intervals: exact to half of
 * each interval, which is why the watcher samples fast around activity and
 * backs off only in proportion to how long it has been idle (a gap of T is
 * seen to about T/4). Several arrivals in one interval are spread evenly over
 * it (over its second half when a gap ended in it): the watcher cannot see
 * inside an interval, and assuming evenly spread I/O makes short gaps look
 * longer than a burst's, which errs on the side of fewer wake-ups.
 *
 * Stall. The kernel adds to a request's ticks its time from start to
 * completion, so the first I/O after an idle gap carries the wake-up. When
 * an interval after an idle gap completes at most WATCH_SMALL_IOS I/Os, its
 * ticks beyond ios x the awake baseline (ticks per I/O in intervals that
 * follow activity, when the drive was awake) are the wake cost paid. Ticks
 * are whole ms, but their sum is kept in ns by the kernel, so the sum over
 * many intervals is exact to a ms.
 */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mathfn.h"
#include "watch.h"

#define NS_PER_MS 1000000.0

int watch_stat_parse(const char *text, WatchStat *ret) {
        uint64_t f[17] = {};
        const char *p = text;
        unsigned n = 0;

        if (!text || !ret)
                return -EINVAL;
        while (n < 17) {
                char *end;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (*p == '\n' || *p == 0)
                        break;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                errno = 0;
                unsigned long long v = strtoull(p, &end, 10);
                if (errno != 0)
                        return -EINVAL;
                f[n++] = v;
                p = end;
        }
        while (*p == ' ' || *p == '\t' || *p == '\n')
                p++;
        if (*p != 0 || (n != 11 && n != 15 && n != 17))
                return -EINVAL;
        /* read ios 0, ticks 3; write ios 4, ticks 7; in_flight 8; io_ticks 9;
         * discard ios 11, ticks 14; flush ios 15, ticks 16 */
        *ret = (WatchStat) {
                .ios = f[0] + f[4] + f[11] + f[15],
                .ticks_ms = f[3] + f[7] + f[14] + f[16],
                .in_flight = f[8],
                .io_ticks_ms = f[9],
        };
        return 0;
}

unsigned watch_bucket(uint64_t gap_ns) {
        double ms = (double) gap_ns / NS_PER_MS;

        if (ms < 1.0)
                return 0;
        double b = floor(mathfn_log2(ms) * WATCH_BUCKETS_PER_OCTAVE);
        return b >= WATCH_BUCKETS - 1 ? WATCH_BUCKETS - 1 : (unsigned) b;
}

uint64_t watch_bucket_floor_ns(unsigned b) {
        return (uint64_t) (NS_PER_MS * mathfn_exp2((double) b / WATCH_BUCKETS_PER_OCTAVE));
}

void watch_init(Watch *w, uint64_t now_ns) {
        *w = (Watch) { .next_ns = now_ns };
}

static void add_gaps(Watch *w, double count, uint64_t gap_ns) {
        unsigned b = watch_bucket(gap_ns);

        w->gap_count[b] += count;
        w->gap_sum_ns[b] += count * (double) gap_ns;
}

static void decay(Watch *w, uint64_t dt_ns) {
        double f = mathfn_exp2(-(double) dt_ns / (double) WATCH_HALF_LIFE_NS);

        w->elapsed_ns *= f;
        w->ios *= f;
        w->wake_ms *= f;
        for (unsigned b = 0; b < WATCH_BUCKETS; b++) {
                w->gap_count[b] *= f;
                w->gap_sum_ns[b] *= f;
        }
}

static uint64_t next_interval(const Watch *w, uint64_t now_ns, bool active) {
        uint64_t idle;

        if (active || !w->seen_active)
                idle = active ? 0 : now_ns;
        else
                idle = now_ns - w->last_active_ns;
        /* A quarter of the time idle so far, in whole fast periods (so the readings of a
         * simulated policy fall on its sampling grid), between the two bounds. */
        uint64_t iv = idle / 4 / WATCH_FAST_NS * WATCH_FAST_NS;
        return MIN(MAX(iv, WATCH_FAST_NS), WATCH_SLOW_NS);
}

/* The first reading (or the first of a new disk): where counting starts. */
static void first_reading(Watch *w, uint64_t now_ns, const WatchStat *st, WatchReport *r) {
        w->started = true;
        w->last = *st;
        w->last_ns = now_ns;
        w->prev_active = st->in_flight > 0;
        if (w->prev_active) {
                w->seen_active = true;
                w->last_active_mid_ns = w->last_active_ns = now_ns;
        }
        w->readings++;
        w->next_ns = now_ns + next_interval(w, now_ns, w->prev_active);
        r->active = w->prev_active;
        r->next_ns = w->next_ns;
}

/* The gaps an interval of @dt with @arrivals new I/Os holds: one that ended at its middle when the disk
 * was idle before, the rest spread evenly. */
static void count_gaps(Watch *w, uint64_t dt, uint64_t mid, uint64_t arrivals, WatchReport *r) {
        uint64_t inner = arrivals;
        uint64_t span = dt;

        if (!w->prev_active) {
                if (w->seen_active) {
                        r->gap_ns = mid - w->last_active_mid_ns;
                        add_gaps(w, 1, r->gap_ns);
                }
                inner--;
                span = dt / 2;
        }
        if (inner > 0)
                add_gaps(w, (double) inner, span / (inner + (w->prev_active ? 0 : 1)));
}

/* The I/O that ended a gap may complete only in a later interval (it was in flight at the reading): its
 * ticks, wake-up included, land there. A few I/Os right after a gap tell the wake-up; I/Os that all
 * started in an interval on an awake drive tell the awake baseline. */
static void account_ticks(Watch *w, uint64_t dios, uint64_t dticks, uint64_t arrivals, WatchReport *r) {
        if (dios > 0) {
                double per = (double) dticks / (double) dios;
                bool after_gap = !w->prev_active || w->wake_pending;
                if (after_gap && dios <= WATCH_SMALL_IOS) {
                        double wake = (double) dticks - (double) dios * w->baseline_ms;
                        r->small = true;
                        r->wake_ms = wake > 0 ? wake : 0;
                        r->wake_gap_ns = w->wake_pending ? w->pending_gap_ns : r->gap_ns;
                        w->wake_ms += r->wake_ms;
                        w->total_wake_ms += r->wake_ms;
                } else if (!after_gap && w->last.in_flight == 0) {
                        w->baseline_ms = w->have_baseline ? 0.9 * w->baseline_ms + 0.1 * per : per;
                        w->have_baseline = true;
                }
                w->wake_pending = false;
        } else if (arrivals > 0 && !w->prev_active) {
                w->wake_pending = true;
                w->pending_gap_ns = r->gap_ns;
        }
}

void watch_feed(Watch *w, uint64_t now_ns, const WatchStat *st, WatchReport *ret) {
        WatchReport r = {};

        if (w->started && (now_ns < w->last_ns || st->ios < w->last.ios || st->ticks_ms < w->last.ticks_ms)) {
                /* Time or counters went backwards: a new disk behind the name. Keep what was
                 * learned about the workload, restart the counters from here. */
                w->started = false;
                w->prev_active = false;
        }
        if (!w->started) {
                first_reading(w, now_ns, st, &r);
                if (ret)
                        *ret = r;
                return;
        }

        uint64_t dt = now_ns - w->last_ns;
        uint64_t dios = st->ios - w->last.ios;
        uint64_t dticks = st->ticks_ms - w->last.ticks_ms;
        uint64_t arrivals = dios + (st->in_flight > w->last.in_flight ? st->in_flight - w->last.in_flight : 0);
        uint64_t mid = w->last_ns + dt / 2;
        bool active = arrivals > 0 || st->in_flight > 0;

        decay(w, dt);
        w->elapsed_ns += (double) dt;
        w->ios += (double) dios;
        w->total_ios += dios;

        if (arrivals > 0)
                count_gaps(w, dt, mid, arrivals, &r);
        account_ticks(w, dios, dticks, arrivals, &r);

        if (active) {
                w->seen_active = true;
                w->last_active_mid_ns = mid;
                w->last_active_ns = now_ns;
        }
        w->prev_active = active;
        w->last = *st;
        w->last_ns = now_ns;
        w->readings++;
        w->next_ns = now_ns + next_interval(w, now_ns, active);

        r.dt_ns = dt;
        r.ios = dios;
        r.active = active;
        r.next_ns = w->next_ns;
        if (ret)
                *ret = r;
}

double watch_io_rate(const Watch *w) {
        return w->elapsed_ns > 0 ? w->ios / (w->elapsed_ns * 1e-9) : 0;
}

double watch_stall_fraction(const Watch *w) {
        return w->elapsed_ns > 0 ? w->wake_ms * NS_PER_MS / w->elapsed_ns : 0;
}

double watch_gap_total(const Watch *w) {
        double n = 0;

        for (unsigned b = 0; b < WATCH_BUCKETS; b++)
                n += w->gap_count[b];
        return n;
}

uint64_t watch_gap_quantile(const Watch *w, double q) {
        double total = watch_gap_total(w), acc = 0;

        if (total <= 0)
                return 0;
        for (unsigned b = 0; b < WATCH_BUCKETS; b++) {
                acc += w->gap_count[b];
                if (w->gap_count[b] > 0 && acc >= q * total)
                        return (uint64_t) (w->gap_sum_ns[b] / w->gap_count[b]);
        }
        return 0;
}

uint64_t watch_idle_next(uint64_t now_ns, uint64_t wait_ns, uint64_t cap_ns) {
        if (cap_ns == 0 || wait_ns < cap_ns)
                return now_ns + wait_ns;
        return (now_ns / cap_ns + 1) * cap_ns;
}
