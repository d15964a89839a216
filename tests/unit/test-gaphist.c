/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exact idle-gap histogram: every gap length lands in the one bucket whose
 * bounds hold it, 4 buckets per octave, and the counter algebra the daemon
 * uses between two readings of the kernel's maps.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "gaphist.h"
#include "gaphist-kern.h"

static void test_buckets(void) {
        CHECK(GAP_BUCKETS == 98);
        CHECK(gaphist_bucket(0) == 0);
        CHECK(gaphist_bucket(65535) == 0);
        CHECK(gaphist_bucket(65536) == 1);
        /* 4 per octave: 2^16, 1.25, 1.5, 1.75 x 2^16, then 2^17 */
        CHECK(gaphist_bucket(81920) == 2);
        CHECK(gaphist_bucket(81919) == 1);
        CHECK(gaphist_bucket(98304) == 3);
        CHECK(gaphist_bucket(114688) == 4);
        CHECK(gaphist_bucket(131072) == 5);
        /* 1 ms = 1e6 ns: 2^19 <= 1e6 < 2^20, q = (1e6 >> 17) & 3 = 7 & 3 = 3 */
        CHECK(gaphist_bucket(1000000) == 1 + 3 * 4 + 3);
        CHECK(gaphist_bucket(UINT64_C(1) << 40) == GAP_BUCKETS - 1);
        CHECK(gaphist_bucket(UINT64_MAX) == GAP_BUCKETS - 1);
        CHECK(gaphist_bucket((UINT64_C(1) << 40) - 1) == GAP_BUCKETS - 2);

        /* every bucket's bounds hold exactly its gaps, and the buckets tile the line */
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                uint64_t lo = gaphist_bucket_lower_ns(b), hi = gaphist_bucket_upper_ns(b);

                CHECK(lo < hi);
                CHECK(gaphist_bucket(lo) == b);
                if (hi != UINT64_MAX) {
                        CHECK(gaphist_bucket(hi - 1) == b);
                        CHECK(gaphist_bucket(hi) == b + 1);
                        CHECK(gaphist_bucket_lower_ns(b + 1) == hi);
                }
                /* at most a quarter octave wide above bucket 0 */
                if (b > 0 && hi != UINT64_MAX)
                        CHECK((hi - lo) * 4 <= lo);
        }
}

static void test_counters(void) {
        GapHist a = {}, b = {}, d;

        gaphist_add_gap(&a, 1600000, 90000);        /* 1.6 ms gap, 90 µs service */
        a.requests = 3;
        b = a;
        gaphist_add_gap(&b, 1700000, 110000);
        gaphist_add_gap(&b, 5000000000, 4000000);   /* 5 s gap, 4 ms wake */
        b.requests = 10;

        unsigned k = gaphist_bucket(1600000);
        CHECK(gaphist_bucket(1700000) == k);
        CHECK(b.gaps[k] == 2 && b.wake_count[k] == 2 && b.wake_sum_ns[k] == 200000 && b.wake_max_ns[k] == 110000);

        CHECK(gaphist_delta(&b, &a, &d) == 0);
        CHECK(d.gaps[k] == 1 && d.wake_sum_ns[k] == 110000 && d.requests == 7);
        CHECK(d.gaps[gaphist_bucket(5000000000)] == 1);
        CHECK(gaphist_total_gaps(&d) == 2);
        CHECK(d.gap_sum_ns == 1700000 + UINT64_C(5000000000));

        /* counters that went backwards: the program was reloaded, take the new reading whole */
        CHECK(gaphist_delta(&a, &b, &d) == -ERANGE);
        CHECK(memcmp(&d, &a, sizeof d) == 0);

        GapHist m = a;
        gaphist_merge(&m, &d);
        CHECK(m.gaps[k] == 2 && m.requests == 6);
}

/* Gaps a wake-up hid: apart from the gaps shown, per floor, carried by delta and merge, and
 * counters of them that went backwards are a reload like any other. */
static void test_hidden(void) {
        GapHist a = {}, b, d;
        unsigned k = gaphist_bucket(3000000);

        gaphist_add_gap(&a, 2000000000, 8000000);          /* a 2 s gap, an 8 ms wake-up ... */
        b = a;
        gaphist_add_hidden_after(&b, 2000000000);          /* ... that hid requests: */
        gaphist_add_hidden(&b, 0, 3000000);                /* 3 ms from the one before, awake */
        gaphist_add_hidden(&b, 1, 3000000);                /* and from the first floor on */
        gaphist_add_hidden(&b, 1, 3000000);
        gaphist_add_hidden(&b, GAP_HIDE_FLOORS, 3000000);  /* no such floor: nothing */
        CHECK(gaphist_total_gaps(&b) == 1);                 /* not gaps the disk showed */
        CHECK(gaphist_total_hidden(&b) == 3);
        CHECK(b.hidden[0][k] == 1 && b.hidden[1][k] == 2);
        CHECK(gaphist_row_total(b.hidden[1]) == 2 && gaphist_row_total(b.hidden[2]) == 0);
        CHECK(gaphist_row_total(b.hidden_after) == 1 && gaphist_row_total(b.gaps) == 1);
        CHECK(b.hidden_after[gaphist_bucket(2000000000)] == 1);

        CHECK(gaphist_delta(&b, &a, &d) == 0);
        CHECK(d.hidden[1][k] == 2 && d.hidden_after[gaphist_bucket(2000000000)] == 1 && gaphist_total_gaps(&d) == 0);
        GapHist m = a;
        gaphist_merge(&m, &d);
        CHECK(memcmp(m.hidden, b.hidden, sizeof m.hidden) == 0);
        CHECK(memcmp(m.hidden_after, b.hidden_after, sizeof m.hidden_after) == 0);
        /* hidden counters that went backwards alone */
        GapHist c = b;
        c.hidden[2][k] = 1;
        CHECK(gaphist_delta(&b, &c, &d) == -ERANGE);
        c = b;
        c.hidden_after[0] = 1;
        CHECK(gaphist_delta(&b, &c, &d) == -ERANGE);
}

/* The eBPF program's bucket function (gaphist-kern.h) is the same function: at every bound, on
 * both sides of it, and at a spread of values in between. */
static void test_kernel_side(void) {
        uint64_t x = 1;

        CHECK(GAPK_BUCKETS == GAP_BUCKETS && GAPK_BASE_SHIFT == GAP_BASE_SHIFT && GAPK_TOP_SHIFT == GAP_TOP_SHIFT);
        CHECK(GAPK_HIDE_FLOORS == GAP_HIDE_FLOORS && GAPK_HIDDEN_MIN_NS == GAP_HIDDEN_MIN_NS);
        /* a bucket's four counters in one half of a cache line (the program's layout) */
        CHECK(offsetof(struct gapk_hist, b) % 32 == 0 && sizeof(struct gapk_bucket) == 32);
        CHECK(offsetof(struct gapk_hist, gap_sum_ns) < 64);
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                uint64_t lo = gaphist_bucket_lower_ns(b);

                CHECK(gapk_bucket(lo) == b);
                if (lo > 0)
                        CHECK(gapk_bucket(lo - 1) == gaphist_bucket(lo - 1));
                CHECK(gapk_bucket(lo + 1) == gaphist_bucket(lo + 1));
        }
        for (unsigned i = 0; i < 100000; i++) {
                x = x * 6364136223846793005u + 1442695040888963407u;   /* every magnitude */
                uint64_t v = x >> (x % 64);
                CHECK(gapk_bucket(v) == gaphist_bucket(v));
        }
        CHECK(gapk_bucket(0) == 0 && gapk_bucket(UINT64_MAX) == GAP_BUCKETS - 1);
}

int main(void) {
        test_buckets();
        test_kernel_side();
        test_counters();
        test_hidden();
        return check_exit_status();
}
