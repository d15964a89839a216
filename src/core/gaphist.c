/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exact idle-gap histogram: bucket arithmetic and counter algebra. See gaphist.h.
 */

#include <errno.h>

#include "gaphist.h"

unsigned gaphist_bucket(uint64_t gap_ns) {
        unsigned o, q;

        if (gap_ns < (UINT64_C(1) << GAP_BASE_SHIFT))
                return 0;
        o = 63u - (unsigned) __builtin_clzll(gap_ns);
        if (o >= GAP_TOP_SHIFT)
                return GAP_BUCKETS - 1;
        q = (unsigned) (gap_ns >> (o - 2)) & 3u;
        return 1u + (o - GAP_BASE_SHIFT) * GAP_BUCKETS_PER_OCTAVE + q;
}

uint64_t gaphist_bucket_lower_ns(unsigned b) {
        unsigned o, q;

        if (b == 0)
                return 0;
        if (b >= GAP_BUCKETS - 1)
                return UINT64_C(1) << GAP_TOP_SHIFT;
        o = GAP_BASE_SHIFT + (b - 1) / GAP_BUCKETS_PER_OCTAVE;
        q = (b - 1) % GAP_BUCKETS_PER_OCTAVE;
        return (UINT64_C(4) + q) << (o - 2);
}

uint64_t gaphist_bucket_upper_ns(unsigned b) {
        if (b >= GAP_BUCKETS - 1)
                return UINT64_MAX;
        return gaphist_bucket_lower_ns(b + 1);
}

void gaphist_add_gap(GapHist *h, uint64_t gap_ns, uint64_t svc_ns) {
        unsigned b = gaphist_bucket(gap_ns);

        h->gaps[b]++;
        h->gap_sum_ns += gap_ns;
        h->wake_count[b]++;
        h->wake_sum_ns[b] += svc_ns;
        if (svc_ns > h->wake_max_ns[b])
                h->wake_max_ns[b] = svc_ns;
}

void gaphist_add_hidden(GapHist *h, unsigned floor, uint64_t gap_ns) {
        if (floor < GAP_HIDE_FLOORS)
                h->hidden[floor][gaphist_bucket(gap_ns)]++;
}

void gaphist_add_hidden_after(GapHist *h, uint64_t gap_ns) {
        h->hidden_after[gaphist_bucket(gap_ns)]++;
}

int gaphist_delta(const GapHist *now, const GapHist *prev, GapHist *ret) {
        GapHist d;

        if (now->requests < prev->requests || now->gap_sum_ns < prev->gap_sum_ns)
                goto reset;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                if (now->gaps[b] < prev->gaps[b] || now->wake_count[b] < prev->wake_count[b] ||
                    now->wake_sum_ns[b] < prev->wake_sum_ns[b] || now->hidden_after[b] < prev->hidden_after[b])
                        goto reset;
        for (unsigned f = 0; f < GAP_HIDE_FLOORS; f++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        if (now->hidden[f][b] < prev->hidden[f][b])
                                goto reset;

        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                d.gaps[b] = now->gaps[b] - prev->gaps[b];
                d.wake_count[b] = now->wake_count[b] - prev->wake_count[b];
                d.wake_sum_ns[b] = now->wake_sum_ns[b] - prev->wake_sum_ns[b];
                d.wake_max_ns[b] = now->wake_max_ns[b];
                d.hidden_after[b] = now->hidden_after[b] - prev->hidden_after[b];
        }
        for (unsigned f = 0; f < GAP_HIDE_FLOORS; f++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        d.hidden[f][b] = now->hidden[f][b] - prev->hidden[f][b];
        d.gap_sum_ns = now->gap_sum_ns - prev->gap_sum_ns;
        d.requests = now->requests - prev->requests;
        *ret = d;
        return 0;

reset:
        *ret = *now;
        return -ERANGE;
}

void gaphist_merge(GapHist *dst, const GapHist *src) {
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                dst->gaps[b] += src->gaps[b];
                dst->wake_count[b] += src->wake_count[b];
                dst->wake_sum_ns[b] += src->wake_sum_ns[b];
                if (src->wake_max_ns[b] > dst->wake_max_ns[b])
                        dst->wake_max_ns[b] = src->wake_max_ns[b];
                dst->hidden_after[b] += src->hidden_after[b];
        }
        for (unsigned f = 0; f < GAP_HIDE_FLOORS; f++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        dst->hidden[f][b] += src->hidden[f][b];
        dst->gap_sum_ns += src->gap_sum_ns;
        dst->requests += src->requests;
}

uint64_t gaphist_row_total(const uint64_t row[static GAP_BUCKETS]) {
        uint64_t n = 0;

        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                n += row[b];
        return n;
}

uint64_t gaphist_total_gaps(const GapHist *h) {
        return gaphist_row_total(h->gaps);
}

uint64_t gaphist_total_hidden(const GapHist *h) {
        uint64_t n = 0;

        for (unsigned f = 0; f < GAP_HIDE_FLOORS; f++)
                n += gaphist_row_total(h->hidden[f]);
        return n;
}
