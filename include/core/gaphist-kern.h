/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the eBPF program (src/platform/bpf/iogap.bpf.c) and user space share:
 * the bucket of a gap, computed the same way on both sides, and the layout of
 * the kernel's maps. Plain C types only: this header is compiled for the BPF
 * target as well as for the host. gaphist.h is the reference; test-gaphist
 * checks that gapk_bucket() agrees with gaphist_bucket() at every bucket bound.
 */

/* Must equal gaphist.h's GAP_BASE_SHIFT, GAP_TOP_SHIFT, GAP_BUCKETS and GAP_HIDE_FLOORS (the loader checks). */
#define GAPK_BASE_SHIFT 16
#define GAPK_TOP_SHIFT 40
#define GAPK_BUCKETS 98
#define GAPK_HIDE_FLOORS 4
#define GAPK_HIDDEN_MIN_NS 1000000ULL
/* Disks the program tells apart (one slot each; several disks may share a slot: a controller's
 * namespaces are idle only when all of them are). */
#define GAPK_SLOTS 64

/* One bucket's counters side by side: the issue that ends a gap and the completion of its first
 * request each write one cache line of them, not one in each of four arrays. */
struct gapk_bucket {
        unsigned long long gaps;
        unsigned long long wake_count;
        unsigned long long wake_sum_ns;
        unsigned long long wake_max_ns;
};

/* Per slot and per CPU: GapHist's counters (bpfwatch.c turns them into one), laid out for the
 * program: first what every request writes, in one cache line, then per bucket. */
struct gapk_hist {
        unsigned long long requests;        /* completed */
        unsigned long long issued;          /* an activity hint for user space, not in GapHist */
        unsigned long long gap_sum_ns;
        unsigned long long unused;          /* the buckets at a 32-byte boundary */
        struct gapk_bucket b[GAPK_BUCKETS];
        unsigned long long hidden[GAPK_HIDE_FLOORS][GAPK_BUCKETS];
        unsigned long long hidden_after[GAPK_BUCKETS];
};

/* Per slot, shared by all CPUs. */
struct gapk_state {
        unsigned long long inflight;        /* requests issued and not completed */
        unsigned long long idle_since_ns;   /* bpf_ktime_get_ns() of the last completion; 0 = none yet */
        unsigned long long first_rq;        /* the request that ended the last gap, until it completes */
        unsigned long long first_issue_ns;
        unsigned long long first_bucket;
        unsigned long long last_issue_ns;   /* the last issue while the gap's first request waited */
        unsigned long long hid;             /* that wait hid a request already */
        unsigned long long hide_floors;     /* set by user space with the slot: how many floors */
        unsigned long long hide_floor_ns[GAPK_HIDE_FLOORS];   /* ... and they, ascending (the first 0) */
};

/* The program's global variables (its .bss): what user space writes there. */
struct gapk_globals {
        /* bumped by user space after every change of the disks map: each CPU's cached answers
         * of that map (iogap.bpf.c's disk_cache) from before are stale */
        unsigned long long disks_gen;
};

/* floor(log2(v)) for v > 0, without a count-leading-zeros instruction (BPF has none). */
static inline unsigned gapk_log2(unsigned long long v) {
        unsigned r = 0;

        if (v >> 32) { v >>= 32; r += 32; }
        if (v >> 16) { v >>= 16; r += 16; }
        if (v >> 8) { v >>= 8; r += 8; }
        if (v >> 4) { v >>= 4; r += 4; }
        if (v >> 2) { v >>= 2; r += 2; }
        if (v >> 1) { r += 1; }
        return r;
}

static inline unsigned gapk_bucket(unsigned long long gap_ns) {
        unsigned o;

        if (gap_ns < (1ULL << GAPK_BASE_SHIFT))
                return 0;
        o = gapk_log2(gap_ns);
        if (o >= GAPK_TOP_SHIFT)
                return GAPK_BUCKETS - 1;
        return 1 + (o - GAPK_BASE_SHIFT) * 4 + (unsigned) ((gap_ns >> (o - 2)) & 3);
}
