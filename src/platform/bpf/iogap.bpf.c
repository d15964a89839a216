/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The block layer's view of idle gaps, aggregated in the kernel.
 *
 * Attached (BTF-typed tracepoints, no tracefs needed) to block_rq_issue
 * (blk_mq_start_request(): the driver takes the request), block_rq_complete
 * (blk_update_request() / blk_complete_request(): the request is done) and
 * block_rq_requeue (a started request goes back to the queue and will be
 * issued again), all defined in include/trace/events/block.h.
 *
 * User space puts the diskseq of each disk it wants to watch in `disks`, with
 * a slot number. Per slot the program keeps the requests in flight and the
 * time the slot last went idle; the issue that takes it from 0 to 1 request in
 * flight ends an idle gap, which is counted in its bucket (gaphist-kern.h),
 * and that request's service time (arrival to completion) is added to the
 * bucket's wake figures when it completes. A request issued while that first
 * request still waits for the drive counts a gap the wake-up hid (gaphist.h),
 * once per floor the slot has: from the later of the previous arrival and the
 * floor's time after the first one. Counters are per CPU and each CPU caches
 * which slot a disk has, so a request costs a compare, two atomic operations on
 * the slot, a few adds and at most one clock read (the issue takes the time
 * blk-mq stamped on the request); no event ever goes to user space.
 * doc/watch.md explains the choices.
 */

#include <linux/types.h>
#include <linux/bpf.h>

#include "vmlinux-min.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gaphist-kern.h"

char LICENSE[] SEC("license") = "GPL";

/* diskseq -> slot */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 256);
        __type(key, __u64);
        __type(value, __u32);
} disks SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, GAPK_SLOTS);
        __type(key, __u32);
        __type(value, struct gapk_state);
} state SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, GAPK_SLOTS);
        __type(key, __u32);
        __type(value, struct gapk_hist);
} hist SEC(".maps");

/*
 * What this CPU last learned from `disks`, per disk (direct-mapped on the diskseq's low bits:
 * the disks of a machine have consecutive diskseqs, so they rarely share an entry): a request
 * costs a compare instead of a hash lookup, which only a disk change or a change of `disks`
 * (disks_gen, bumped by user space after each) pays. A disk not watched is cached too (slot
 * -1), so its requests cost the compare only. An entry is one word, stored and loaded at once:
 * a program run from an interrupt on this CPU may write the same entry in between two of ours
 * (the recursion guard is per program), and a torn entry would give one disk another's slot.
 */
#define DISK_CACHE 4
struct disk_cache {
        __u64 e[DISK_CACHE];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct disk_cache);
} disk_cache SEC(".maps");

/* A cache entry: the diskseq's low 32 bits, the generation's low 24 and the slot + 1 (0: not
 * watched) in the low 8 bits (GAPK_SLOTS < 255). 2^32 disks or 2^24 changes of `disks` between
 * two requests of one disk on one CPU would be needed to mistake an entry. */
static __always_inline __u64 cache_entry(__u64 seq, __u64 gen, __s64 slot) {
        return seq << 32 | (gen & 0xffffff) << 8 | (__u64) (slot + 1);
}

/* The program's .bss, which user space writes as a struct gapk_globals (gaphist-kern.h): this
 * one variable, so that the loader, which sees only the skeleton, needs no header of ours. */
__u64 disks_gen;

/*
 * The slot of a request's disk, -1 for none: rq->q->disk (struct gendisk, whose diskseq exists
 * since 5.15), through this CPU's cache of `disks`.
 * tp_btf hands the program a typed, trusted pointer to the request, so the members are read with
 * plain loads: each one a CO-RE relocation (vmlinux-min.h's preserve_access_index) that libbpf
 * fixes up against the running kernel's BTF, and a fault-tolerant load for the verifier (a NULL
 * or bad pointer reads as 0). BPF_CORE_READ() would do the same through bpf_probe_read_kernel(),
 * one helper call per member: 150-250 ns more per request here (doc/watch.md).
 */
static __always_inline __s64 slot_of(struct request *rq) {
        struct disk_cache *c;
        struct gendisk *disk;
        __u64 seq, gen, e;
        __u32 zero = 0, *slot;
        unsigned i;
        __s64 s;

        /* Passthrough requests on a queue without a disk (the NVMe admin queue) have no disk. */
        disk = rq->q->disk;
        seq = disk ? disk->diskseq : 0;
        if (!seq)
                return -1;
        c = bpf_map_lookup_elem(&disk_cache, &zero);
        if (!c)
                return -1;
        i = seq & (DISK_CACHE - 1);
        /* read before `disks`: an answer cached under a generation is at least that new */
        gen = *(volatile __u64 *) &disks_gen;
        e = *(volatile __u64 *) &c->e[i];
        if ((e & ~0xffULL) == cache_entry(seq, gen, -1))
                return (__s64) (e & 0xff) - 1;
        slot = bpf_map_lookup_elem(&disks, &seq);
        s = slot && *slot < GAPK_SLOTS ? (__s64) *slot : -1;
        *(volatile __u64 *) &c->e[i] = cache_entry(seq, gen, s);
        return s;
}

/*
 * The slot of a request's disk, when it is watched: its state and, if @ret_h is not NULL, its
 * histogram. NULL for a disk not watched (or a slot the maps do not have).
 */
static __always_inline struct gapk_state *slot_maps(struct request *rq, struct gapk_hist **ret_h) {
        struct gapk_state *s;
        __s64 slot;
        __u32 k;

        slot = slot_of(rq);
        if (slot < 0)
                return 0;
        k = (__u32) slot;
        s = bpf_map_lookup_elem(&state, &k);
        if (!s)
                return 0;
        if (ret_h) {
                *ret_h = bpf_map_lookup_elem(&hist, &k);
                if (!*ret_h)
                        return 0;
        }
        return s;
}

/*
 * A bucket index the verifier can see is in range, whatever the compiler does with it: the check
 * and the clamp are on one 64-bit register. (Written in C, clang may compare one 32-bit copy and
 * index with another; 6.1's verifier does not carry the bound across that copy and refuses the
 * "unbounded" access, 6.18's does.) Every caller's value is below GAPK_BUCKETS already.
 */
static __always_inline __u64 bucket_index(__u64 b) {
        asm volatile("if %[b] < %[n] goto +1\n\t"
                     "%[b] = %[last]\n\t"
                     : [b] "+r"(b)
                     : [n] "i"(GAPK_BUCKETS), [last] "i"(GAPK_BUCKETS - 1));
        return b;
}

/*
 * When a request came to the block layer, without a clock read: blk-mq stamps every request at
 * allocation (rq->start_time_ns, ktime_get_ns() like bpf_ktime_get_ns(), through the plug's
 * cached time) wherever iostats or an I/O scheduler is on, the default of every disk. Where
 * neither is (start_time_ns 0), the clock. A request that ends a gap met an idle disk: it is
 * issued a few microseconds after that, so the gaps and the wake-ups measured from it are the
 * ones the application saw.
 */
static __always_inline __u64 rq_arrival_ns(struct request *rq) {
        __u64 t = rq->start_time_ns;

        return t ? t : bpf_ktime_get_ns();
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(iogap_issue, struct request *rq) {
        struct gapk_state *s;
        struct gapk_hist *h;
        __u64 now, old, since, gap, b, last;

        s = slot_maps(rq, &h);
        if (!s)
                return 0;
        old = __sync_fetch_and_add(&s->inflight, 1);
        h->issued++;
        if (old != 0) {
                /* Issued while the gap's first request waits for the drive: a gap the wake-up hid,
                 * had the drive woken in a floor's time. Once the first request completed, the
                 * drive is awake and requests wait for each other, not for it. */
                if (!s->first_rq || !s->hide_floors)
                        return 0;
                now = rq_arrival_ns(rq);
                last = s->last_issue_ns;
                s->last_issue_ns = now;
#pragma unroll
                for (int f = 0; f < GAPK_HIDE_FLOORS; f++) {
                        if (f >= s->hide_floors)
                                break;
                        since = s->first_issue_ns + s->hide_floor_ns[f];
                        if (last > since)
                                since = last;
                        if (now <= since)
                                break;   /* the floors ascend: the later ones start later still */
                        gap = now - since;
                        if (f == 0 && !s->hid && gap >= GAPK_HIDDEN_MIN_NS) {
                                s->hid = 1;
                                h->hidden_after[bucket_index(s->first_bucket)]++;
                        }
                        b = bucket_index(gapk_bucket(gap));
                        h->hidden[f][b]++;
                }
                return 0;
        }
        /* This request ends an idle gap (unless nothing completed since the program was loaded). */
        since = s->idle_since_ns;
        if (!since)
                return 0;
        now = rq_arrival_ns(rq);
        gap = now > since ? now - since : 0;
        b = bucket_index(gapk_bucket(gap));
        h->b[b].gaps++;
        h->gap_sum_ns += gap;
        s->first_issue_ns = now;
        s->last_issue_ns = now;
        s->hid = 0;
        s->first_bucket = b;
        s->first_rq = (__u64) rq;
        return 0;
}

/* The completion of a gap's first request: its service time, in the gap's bucket. */
static __always_inline void wake_done(struct gapk_state *s, struct gapk_hist *h, __u64 now) {
        __u64 svc, b;

        s->first_rq = 0;
        b = bucket_index(s->first_bucket);
        svc = now > s->first_issue_ns ? now - s->first_issue_ns : 0;
        h->b[b].wake_count++;
        h->b[b].wake_sum_ns += svc;
        if (svc > h->b[b].wake_max_ns)
                h->b[b].wake_max_ns = svc;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(iogap_complete, struct request *rq) {
        struct gapk_state *s;
        struct gapk_hist *h;
        __u64 now, old;
        _Bool first, last;

        s = slot_maps(rq, &h);
        if (!s)
                return 0;
        h->requests++;
        /* The clock only where its time is used: the gap's first request (its wake-up), and a
         * completion that leaves the slot idle (the next gap starts). One of many in flight
         * needs neither. */
        first = s->first_rq == (__u64) rq;
        last = s->inflight <= 1;
        if (first || last) {
                now = bpf_ktime_get_ns();
                if (first)
                        wake_done(s, h, now);
                /* Written before the decrement: the issue that sees 0 in flight reads the time of
                 * the completion that made it 0 (or of one concurrent with it). */
                if (last)
                        s->idle_since_ns = now;
        }
        old = __sync_fetch_and_add(&s->inflight, -1);
        if (old == 0)
                /* issued before the program was attached: not ours to count */
                __sync_fetch_and_add(&s->inflight, 1);
        else if (old == 1 && !last)
                /* the others in flight completed meanwhile, on other CPUs: this one left it idle
                 * after all (an issue in between, within nanoseconds, read an older time) */
                s->idle_since_ns = bpf_ktime_get_ns();
        return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(iogap_requeue, struct request *rq) {
        struct gapk_state *s;

        /* Only a started request was counted at issue; it will be issued again. */
        if (rq->state != MQ_RQ_IN_FLIGHT)
                return 0;
        s = slot_maps(rq, NULL);
        if (!s)
                return 0;
        if (s->first_rq == (__u64) rq)
                s->first_rq = 0;
        if (__sync_fetch_and_add(&s->inflight, -1) == 0)
                __sync_fetch_and_add(&s->inflight, 1);
        return 0;
}
