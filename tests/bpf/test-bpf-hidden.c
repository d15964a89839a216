/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The eBPF program counts the gaps a wake-up hides (gaphist.h), on a real block device that
 * takes as long to answer as a drive waking from a deep state: a loop device over a file on a
 * FUSE file system whose every read takes 40 ms (tests/bpf/slow-fuse.py). After an idle gap,
 * read A; 11.5 ms and 23 ms after it, reads B and C, issued while A still waits: gaps a drive
 * that answered at once would have shown. With floors 0 and 5 ms the program must count, at
 * floor 0, B's and C's time since the read before (11.5 ms each), and at floor 5 ms, B's time
 * since 5 ms after A (6.5 ms) and C's since B (11.5 ms); nothing at the floors it was not
 * given; one wake-up that hid them, in the bucket of the gap before A. Read D, issued once A
 * has completed (the drive "awake") while B and C still wait, is hidden by nothing: it waits
 * for them, not for a wake-up.
 *
 * Each read's issue follows its call within scheduling noise: each expected gap is checked
 * in the buckets within 2 ms of it.
 *
 * Needs root, a kernel with BTF and eBPF, losetup, /dev/fuse and python3-fusepy: else exit 77.
 * Usage: test-bpf-hidden SLOW-FUSE-SCRIPT
 * Covers: src/platform/bpf/iogap.bpf.c, src/platform/bpfwatch.c, src/core/gaphist.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpfwatch.h"
#include "check.h"
#include "gaphist.h"
#include "loop-disk.h"

#define BLOCK 4096
#define MS(x) ((uint64_t) ((x) * 1e6))

static char mnt[64], loopdev[64];
static pid_t server = -1;
static BpfWatch *bw;

static void cleanup(void) {
        bw = bpfwatch_free(bw);
        loop_detach(loopdev);
        if (mnt[0]) {
                (void) umount2(mnt, MNT_DETACH);
                if (server > 0) {
                        (void) kill(server, SIGTERM);
                        (void) waitpid(server, NULL, 0);
                        server = -1;
                }
                (void) rmdir(mnt);
                mnt[0] = 0;
        }
}

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

typedef struct Reader {
        int fd;
        off_t offset;
        uint64_t at, call, ret;   /* when to call (0: at once), when it did, when it returned */
        bool ok;
        pthread_t thread;
} Reader;

static void *reader(void *userdata) {
        Reader *r = userdata;
        void *buf;

        if (posix_memalign(&buf, BLOCK, BLOCK) != 0)
                return NULL;
        if (r->at)
                sleep_until(r->at);
        r->call = now_ns();
        r->ok = pread(r->fd, buf, BLOCK, r->offset) == BLOCK;
        r->ret = now_ns();
        free(buf);
        return NULL;
}

/* Counts in @row over the buckets within 2 ms of @gap_ns. */
static uint64_t near(const uint64_t *row, uint64_t gap_ns) {
        uint64_t n = 0;

        for (unsigned b = gaphist_bucket(gap_ns > MS(2) ? gap_ns - MS(2) : 0); b <= gaphist_bucket(gap_ns + MS(2)); b++)
                n += row[b];
        return n;
}

int main(int argc, char **argv) {
        static const uint64_t floors[] = { 0, MS(5) };
        char reason[256], img[96];
        struct stat st;
        uint64_t seq;
        GapHist h;
        int fd, slot, r;

        signal(SIGABRT, on_abort);
        setvbuf(stdout, NULL, _IONBF, 0);
        if (argc != 2)
                return 2;
        if (geteuid() != 0)
                return skip("needs root (loop devices, FUSE, eBPF)");
        if (access("/dev/fuse", R_OK | W_OK) < 0)
                return skip("no /dev/fuse");
        if (system("/usr/bin/python3 -c 'import fusepy' 2>/dev/null") != 0)
                return skip("needs /usr/bin/python3 with fusepy (python3-fusepy, tests/deps.sh test)");
        r = bpfwatch_open(&bw, reason, sizeof reason);
        if (r < 0)
                return skip(reason);

        /* the slow file system, and a loop device over its file */
        strcpy(mnt, "/dev/shm/nvme-apstd-hidden.XXXXXX");
        if (!mkdtemp(mnt)) {
                mnt[0] = 0;
                return skip("cannot make a directory on /dev/shm");
        }
        server = fork();
        if (server == 0) {
                execl("/usr/bin/python3", "python3", argv[1], mnt, "0.040", (char *) NULL);
                _exit(127);
        }
        (void) snprintf(img, sizeof img, "%s/disk.img", mnt);
        for (int i = 0; i < 100 && stat(img, &st) < 0; i++)
                usleep(100000);
        if (stat(img, &st) < 0)
                return skip("the FUSE file system did not come up");
        const char *why = loop_attach(img, loopdev, sizeof loopdev, &seq);
        if (why)
                return skip(why);
        fd = open(loopdev, O_RDONLY | O_DIRECT);
        if (fd < 0)
                return skip("cannot open the loop device with O_DIRECT");

        sleep(1);   /* whatever set-up I/O the new disk got is over */
        slot = bpfwatch_slot_new(bw, floors, 2);
        REQUIRE(slot >= 0);
        CHECK(bpfwatch_slot_set_disks(bw, (unsigned) slot, &seq, 1) == 0);

        /* one read to start from (the program counts gaps from a completion), then 300 ms idle */
        Reader first = { .fd = fd, .offset = 0 };
        reader(&first);
        REQUIRE(first.ok);
        uint64_t t0 = first.ret + MS(300);
        Reader a = { .fd = fd, .offset = 1 << 20, .at = t0 }, b = { .fd = fd, .offset = 2 << 20, .at = t0 + MS(11.5) },
               c = { .fd = fd, .offset = 3 << 20, .at = t0 + MS(23) }, d = { .fd = fd, .offset = 4 << 20 };
        REQUIRE(pthread_create(&a.thread, NULL, reader, &a) == 0);
        REQUIRE(pthread_create(&b.thread, NULL, reader, &b) == 0);
        REQUIRE(pthread_create(&c.thread, NULL, reader, &c) == 0);
        REQUIRE(pthread_join(a.thread, NULL) == 0);
        /* A is done: D goes in behind B and C, which still wait */
        reader(&d);
        REQUIRE(pthread_join(b.thread, NULL) == 0);
        REQUIRE(pthread_join(c.thread, NULL) == 0);
        CHECK(a.ok && b.ok && c.ok && d.ok);
        usleep(1000);
        CHECK(bpfwatch_read(bw, (unsigned) slot, &h, NULL) == 0);

        bool waited = b.call < a.ret && c.call < a.ret && d.call >= a.ret;
        printf("%s: A waited %.1f ms; B issued %.1f ms after A, C %.1f ms after B, D %.1f ms after A returned; "
               "hidden at floor 0: %" PRIu64 ", at 5 ms: %" PRIu64 "\n",
               loopdev, (a.ret - a.call) / 1e6, (b.call - a.call) / 1e6, (c.call - b.call) / 1e6,
               (d.call - a.ret) / 1e6, gaphist_row_total(h.hidden[0]), gaphist_row_total(h.hidden[1]));
        /* the schedule itself: B and C went in while A waited, D after it returned */
        CHECK(waited);
        /* floor 0: from the read before */
        CHECK(gaphist_row_total(h.hidden[0]) == 2);
        CHECK(near(h.hidden[0], b.call - a.call) >= 1 && near(h.hidden[0], c.call - b.call) >= 1);
        /* floor 5 ms: B from 5 ms after A, C from B */
        CHECK(gaphist_row_total(h.hidden[1]) == 2);
        CHECK(near(h.hidden[1], b.call - a.call - MS(5)) >= 1 && near(h.hidden[1], c.call - b.call) >= 1);
        /* no floors past the two given */
        CHECK(gaphist_row_total(h.hidden[2]) == 0 && gaphist_row_total(h.hidden[3]) == 0);
        /* one wake-up hid them, after the 300 ms gap */
        CHECK(gaphist_row_total(h.hidden_after) == 1 && near(h.hidden_after, a.call - first.ret) == 1);
        /* and the gaps the disk showed: the 300 ms one only (the first read ended none) */
        CHECK(gaphist_total_gaps(&h) == 1);

        close(fd);
        cleanup();
        return check_exit_status();
}
