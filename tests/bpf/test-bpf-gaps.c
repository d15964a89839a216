/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The eBPF program on a real block device: O_DIRECT reads to a loop device
 * (backed by a file on tmpfs, so nothing else does I/O to it) at scheduled
 * times, with idle gaps of known lengths from 2 ms to 0.7 s. Every gap must be
 * counted in its bucket, each bucket as often as it was scheduled, with one
 * first-request service time per gap, and every read counted as a request.
 * Then the disk moves to another slot: its next reads count there, none in the old one.
 *
 * Each gap is scheduled an eighth of the way into its bucket, measured from the
 * moment the previous read returned to user space; the test knows the gap the
 * block layer saw to within the two reads' system call times, and checks each
 * count against that.
 *
 * Needs root, a kernel with BTF and eBPF, and losetup: else exit 77.
 * Covers: src/platform/bpfwatch.c, src/platform/bpf/iogap.bpf.c, src/core/gaphist.c,
 * src/platform/sysfs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpfwatch.h"
#include "check.h"
#include "gaphist.h"
#include "loop-disk.h"

#define BACKING "/dev/shm/nvme-apstd-test-bpf-gaps.img"
#define BLOCK 4096

static char loopdev[64];

static void cleanup(void) {
        loop_detach(loopdev);
        (void) unlink(BACKING);
}

/* An abort (glibc's, a sanitizer's) must not leave the loop device behind either. */
static void on_abort(int sig) {
        cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

static int skip(const char *why) {
        printf("SKIP: %s\n", why);
        cleanup();
        return 77;
}

int main(void) {
        /* buckets (by their lower bound, ms) and how many gaps of each: all different */
        static const struct {
                double ms;
                unsigned count;
        } plan[] = { { 2.10, 4 }, { 4.19, 5 }, { 12.6, 2 }, { 29.4, 3 }, { 41.9, 6 }, { 134, 1 }, { 268, 2 },
                     { 671, 1 } };
        unsigned order[64], n = 0, bucket_of[8];
        char reason[256];
        BpfWatch *bw = NULL;
        void *buf = NULL;
        uint64_t seq;
        GapHist h;
        int fd, slot, r;

        signal(SIGABRT, on_abort);
        setvbuf(stdout, NULL, _IONBF, 0);   /* what a failed check or a crash leaves must be seen */
        if (geteuid() != 0)
                return skip("needs root (loop devices, eBPF)");
        r = bpfwatch_open(&bw, reason, sizeof reason);
        if (r < 0)
                return skip(reason);

        fd = open(BACKING, O_CREAT | O_TRUNC | O_WRONLY, 0600);
        if (fd < 0 || ftruncate(fd, 16 << 20) < 0)
                return skip("cannot create a file on /dev/shm");
        close(fd);
        const char *why = loop_attach(BACKING, loopdev, sizeof loopdev, &seq);
        if (why)
                return skip(why);
        fd = open(loopdev, O_RDONLY | O_DIRECT);
        if (fd < 0 || posix_memalign(&buf, BLOCK, BLOCK) != 0)
                return skip("cannot open the loop device with O_DIRECT");

        /* the buckets, and an interleaved order in which their gaps come */
        for (unsigned i = 0; i < 8; i++) {
                bucket_of[i] = gaphist_bucket((uint64_t) (plan[i].ms * 1e6) + 1000);
        }
        for (unsigned round = 0; round < 6; round++)
                for (unsigned i = 0; i < 8; i++)
                        if (round < plan[i].count)
                                order[n++] = i;
        CHECK(n == 24);

        /* keep the schedule from being preempted by other work on the machine, where allowed */
        struct sched_param sp = { .sched_priority = 10 };
        (void) sched_setscheduler(0, SCHED_FIFO, &sp);

        sleep(1);    /* whatever set-up I/O the new disk got is over */
        slot = bpfwatch_slot_new(bw, (const uint64_t[]) { 0 }, 1);   /* any gap hidden counts */
        REQUIRE(slot >= 0);
        CHECK(bpfwatch_slot_set_disks(bw, (unsigned) slot, &seq, 1) == 0);

        /* n gaps need n + 1 reads; the first read's gap started before the program counted.
         * The block layer's gap runs from the previous read's completion (between its call and
         * its return) to this read's issue (between its call and its return): it lies in
         * [call - previous return, return - previous call]. A gap whose bounds fall in one bucket
         * must be counted there; on a busy machine a late wake-up or a slow return can leave the
         * bounds in two buckets, and then either may count it. */
        uint64_t lo_count[GAP_BUCKETS] = {}, may_count[GAP_BUCKETS] = {};
        uint64_t prev_call = now_ns(), prev_ret;
        unsigned ambiguous = 0;

        /* The schedule runs again (its gaps counted too) while more than a quarter of the gaps of
         * 10 ms or more so far fell between two buckets: under load (a sanitizer build, parallel
         * tests) one pass can be mostly ambiguous, and then it says little about the buckets. The
         * 2 and 4 ms gaps do not count there: their buckets are 0.5-1 ms wide, and on a loaded
         * machine each read takes 0.3 ms or more from call to return, so their bounds straddle a
         * bucket edge every time (they are still checked: counted in a bucket their bounds allow). */
        unsigned rounds = 0, total = 0, long_total = 0, long_ambiguous = 0;
        CHECK(pread(fd, buf, BLOCK, 0) == BLOCK);
        prev_ret = now_ns();
        do {
                rounds++;
                for (unsigned i = 0; i < n; i++, total++) {
                        unsigned b = bucket_of[order[i]], blo, bhi;
                        uint64_t lo = gaphist_bucket_lower_ns(b), hi = gaphist_bucket_upper_ns(b), call, ret;

                        sleep_until(prev_ret + lo + (hi - lo) / 8);
                        call = now_ns();
                        CHECK(pread(fd, buf, BLOCK, (off_t) ((total % 64) + 1) * BLOCK * 16) == BLOCK);
                        ret = now_ns();
                        blo = gaphist_bucket(call - prev_ret);
                        bhi = gaphist_bucket(ret - prev_call);
                        bool long_gap = lo >= UINT64_C(10000000);
                        long_total += long_gap;
                        if (blo == bhi)
                                lo_count[blo]++;
                        else {
                                ambiguous++;
                                long_ambiguous += long_gap;
                                printf("gap %u (scheduled in bucket %u): between %" PRIu64 " and %" PRIu64
                                       " ns, buckets %u..%u\n", total, b, call - prev_ret, ret - prev_call, blo, bhi);
                        }
                        for (unsigned k = blo; k <= bhi; k++)
                                may_count[k]++;
                        prev_call = call;
                        prev_ret = ret;
                }
        } while (long_ambiguous > long_total / 4 && rounds < 8);
        usleep(1000);
        CHECK(bpfwatch_read(bw, (unsigned) slot, &h, NULL) == 0);

        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                if (h.gaps[b] < lo_count[b] || h.gaps[b] > may_count[b] || h.wake_count[b] != h.gaps[b])
                        printf("bucket %u [%" PRIu64 ", %" PRIu64 ") ns: %" PRIu64 " gaps, %" PRIu64
                               " first requests; expected %" PRIu64 "..%" PRIu64 "\n",
                               b, gaphist_bucket_lower_ns(b), gaphist_bucket_upper_ns(b), h.gaps[b], h.wake_count[b],
                               lo_count[b], may_count[b]);
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                CHECK(h.gaps[b] >= lo_count[b] && h.gaps[b] <= may_count[b]);
                CHECK(h.wake_count[b] == h.gaps[b]);
                if (h.gaps[b] > 0) {
                        /* a read from tmpfs through the loop worker: between 1 µs and a scheduling slice */
                        CHECK(h.wake_sum_ns[b] >= h.gaps[b] * 1000u);
                        CHECK(h.wake_max_ns[b] > 0 && h.wake_max_ns[b] <= h.wake_sum_ns[b]);
                }
        }
        CHECK(gaphist_total_gaps(&h) == total);
        /* one read at a time: none was issued while another waited, so no gap was hidden
         * (test-bpf-hidden: the ones that are) */
        CHECK(gaphist_total_hidden(&h) == 0);
        /* most gaps came where they were scheduled: the test says something about the buckets */
        CHECK(long_ambiguous <= long_total / 4);
        CHECK(h.requests == total + 1);
        printf("%s: %u gaps in %zu buckets (%u pass%s), %" PRIu64 " requests, every gap in its bucket (%u between two, %u of them 10 ms or more)\n",
               loopdev, total, sizeof plan / sizeof plan[0], rounds, rounds == 1 ? "" : "es", h.requests, ambiguous,
               long_ambiguous);

        /* The disk moved to another slot: its next requests count there and none more in the old
         * one (each CPU drops what it cached of the disks map when user space changes it). */
        int slot2 = bpfwatch_slot_new(bw, (const uint64_t[]) { 0 }, 1);
        GapHist h_old, h_new;
        REQUIRE(slot2 >= 0);
        CHECK(bpfwatch_slot_set_disks(bw, (unsigned) slot, NULL, 0) == 0);
        CHECK(bpfwatch_slot_set_disks(bw, (unsigned) slot2, &seq, 1) == 0);
        for (unsigned i = 0; i < 4; i++)
                CHECK(pread(fd, buf, BLOCK, (off_t) (i + 1) * BLOCK * 32) == BLOCK);
        usleep(1000);
        CHECK(bpfwatch_read(bw, (unsigned) slot, &h_old, NULL) == 0);
        CHECK(bpfwatch_read(bw, (unsigned) slot2, &h_new, NULL) == 0);
        CHECK(h_old.requests == h.requests);
        CHECK(h_new.requests == 4);
        printf("moved to slot %d: %" PRIu64 " requests there, %" PRIu64 " more in the old slot\n", slot2,
               h_new.requests, h_old.requests - h.requests);

        free(buf);
        close(fd);
        bpfwatch_free(bw);
        cleanup();
        return check_exit_status();
}
