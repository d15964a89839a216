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
 * and that request's service time (issue to completion) is added to the
 * bucket's wake figures when it completes. A request issued while that first
 * request still waits for the drive counts a gap the wake-up hid (gaphist.h),
 * once per floor the slot has: from the later of the previous issue and the
 * floor's time after the first one. Counters are per CPU, so a request
 * costs a hash lookup, two atomic operations on the slot and a few adds; no
 * event ever goes to user space. doc/watch.md explains the choices.
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
 * The disk of a request: rq->q->disk (struct gendisk, whose diskseq exists since 5.15).
 * tp_btf hands the program a typed, trusted pointer to the request, so the members are read with
 * plain loads: each one a CO-RE relocation (vmlinux-min.h's preserve_access_index) that libbpf
 * fixes up against the running kernel's BTF, and a fault-tolerant load for the verifier (a NULL
 * or bad pointer reads as 0). BPF_CORE_READ() would do the same through bpf_probe_read_kernel(),
 * one helper call per member: 150-250 ns more per request here (doc/watch.md).
 */
static __always_inline __u32 *slot_of(struct request *rq) {
        struct gendisk *disk;
        __u64 seq;

        /* Passthrough requests on a queue without a disk (the NVMe admin queue) have no disk. */
        disk = rq->q->disk;
        seq = disk ? disk->diskseq : 0;
        if (!seq)
                return 0;
        return bpf_map_lookup_elem(&disks, &seq);
}

/*
 * The slot of a request's disk, when it is watched: its state and, if @ret_h is not NULL, its
 * histogram. NULL for a disk not watched (or a slot the maps do not have).
 */
static __always_inline struct gapk_state *slot_maps(struct request *rq, struct gapk_hist **ret_h) {
        struct gapk_state *s;
        __u32 *slot, k;

        slot = slot_of(rq);
        if (!slot)
                return 0;
        k = *slot;
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

SEC("tp_btf/block_rq_issue")
int BPF_PROG(iogap_issue, struct request *rq) {
        struct gapk_state *s;
        struct gapk_hist *h;
        __u64 now, old, since, gap, b, last;

        s = slot_maps(rq, &h);
        if (!s)
                return 0;
        old = __sync_fetch_and_add(&s->inflight, 1);
        s->issued++;   /* an activity hint for user space: a lost increment under a race is harmless */
        if (old != 0) {
                /* Issued while the gap's first request waits for the drive: a gap the wake-up hid,
                 * had the drive woken in a floor's time. Once the first request completed, the
                 * drive is awake and requests wait for each other, not for it. */
                if (!s->first_rq || !s->hide_floors)
                        return 0;
                now = bpf_ktime_get_ns();
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
        now = bpf_ktime_get_ns();
        since = s->idle_since_ns;
        if (!since)
                return 0;
        gap = now > since ? now - since : 0;
        b = bucket_index(gapk_bucket(gap));
        h->gaps[b]++;
        h->gap_sum_ns += gap;
        s->first_issue_ns = now;
        s->last_issue_ns = now;
        s->hid = 0;
        s->first_bucket = b;
        s->first_rq = (__u64) rq;
        return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(iogap_complete, struct request *rq) {
        struct gapk_state *s;
        struct gapk_hist *h;
        __u64 now, svc, b;

        s = slot_maps(rq, &h);
        if (!s)
                return 0;
        now = bpf_ktime_get_ns();
        if (s->first_rq == (__u64) rq) {
                s->first_rq = 0;
                b = bucket_index(s->first_bucket);
                svc = now > s->first_issue_ns ? now - s->first_issue_ns : 0;
                h->wake_count[b]++;
                h->wake_sum_ns[b] += svc;
                if (svc > h->wake_max_ns[b])
                        h->wake_max_ns[b] = svc;
        }
        h->requests++;
        /* Written before the decrement: the issue that sees 0 in flight reads the time of the
         * completion that made it 0 (or of one concurrent with it). */
        s->idle_since_ns = now;
        if (__sync_fetch_and_add(&s->inflight, -1) == 0)
                /* issued before the program was attached: not ours to count */
                __sync_fetch_and_add(&s->inflight, 1);
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
