/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The eBPF I/O gap program in the daemon: runs its loader (nvme-apstd-bpf-load,
 * src/platform/bpf/iogap-load.c) and reads the maps it hands back. See
 * bpfwatch.h; the program is src/platform/bpf/iogap.bpf.c, doc/watch.md says
 * what it sees and why.
 */

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpfwatch.h"
#include "config-build.h"
#include "gaphist-kern.h"
#include "macro.h"

#if HAVE_BPF

#include <fcntl.h>
#include <linux/bpf.h>
#include <poll.h>

#include "clock.h"
#include "iogap-load.h"
#include "log.h"

_Static_assert(GAPK_BUCKETS == GAP_BUCKETS, "the program's buckets are gaphist.h's");
_Static_assert(GAPK_HIDE_FLOORS == GAP_HIDE_FLOORS && GAPK_HIDDEN_MIN_NS == GAP_HIDDEN_MIN_NS,
               "the program's floors are gaphist.h's");
_Static_assert(GAPK_BASE_SHIFT == GAP_BASE_SHIFT && GAPK_TOP_SHIFT == GAP_TOP_SHIFT, "same bounds");
_Static_assert(sizeof(((struct gapk_hist *) 0)->hidden) == sizeof(((GapHist *) 0)->hidden), "same hidden counters");
_Static_assert(sizeof(((struct gapk_hist *) 0)->hidden_after) == sizeof(((GapHist *) 0)->hidden_after), "same");

#define DISKS_PER_SLOT 32u
/* Where a build tree's daemon (the tests, bench/) finds the loader it was built with; the
 * installed daemon runs the one in libexecdir. */
#define BPF_LOADER_ENV "NVME_APSTD_BPF_LOADER"
/* How long the loader may take to answer. It answers in well under a second (libbpf parses the
 * kernel's BTF, loads and attaches); one that hangs must not hold the daemon's start until the
 * unit's start timeout: it is killed and the sampler watches instead. */
#define BPF_LOADER_TIMEOUT_MS 10000

/* What the daemon keeps of the loaded program: its maps, and the links that keep it attached
 * (iogap-load.h's IOGAP_FD_*). */
struct BpfWatch {
        int fds[_IOGAP_FD_MAX];
        int ncpus;
        struct gapk_hist *percpu;      /* one lookup's worth */
        bool used[GAPK_SLOTS];
        uint64_t seqs[GAPK_SLOTS][DISKS_PER_SLOT];
        size_t n_seqs[GAPK_SLOTS];
        struct gapk_globals globals;   /* what the program's .bss holds (only we write it) */
};

bool bpfwatch_built(void) {
        return true;
}

static int fail(int r, char *buf, size_t n, const char *what) {
        switch (-r) {
        case EPERM:
                (void) snprintf(buf, n, "%s: not permitted (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)", what);
                break;
        case EACCES:
                /* what the verifier answers for a program it refuses (or, on old kernels, a missing
                 * capability): its log is at debug level (NVME_APSTD_LOG_LEVEL=debug) */
                (void) snprintf(buf, n, "%s: refused by the kernel's verifier, or not permitted (the debug "
                                "log has the verifier's reasons)", what);
                break;
        case ENOSYS:
                (void) snprintf(buf, n, "%s: the bpf() system call is not available (CONFIG_BPF_SYSCALL, "
                                "or a seccomp filter denies it)", what);
                break;
        default:
                (void) snprintf(buf, n, "%s: %s", what, strerror(-r));
        }
        return r;
}

static const char *const load_step[_IOGAP_LOAD_MAX] = {
        [IOGAP_LOAD_CPUS] = "cannot count the possible CPUs",
        [IOGAP_LOAD_OPEN] = "cannot open the eBPF program",
        [IOGAP_LOAD_LOAD] = "cannot load the eBPF program",
        [IOGAP_LOAD_ATTACH] = "cannot attach to the block layer's tracepoints",
        [IOGAP_LOAD_LOADER] = "cannot run the eBPF program's loader",
};

/* The loader beside the running program, in @buf: what a build tree has (src/nvme-apstd and
 * src/nvme-apstd-bpf-load are built in one folder). NULL when the running program is the
 * installed daemon (DAEMON_PATH: it runs only its installed loader) or has none beside it. */
static const char *loader_beside(char *buf, size_t n) {
        static const char name[] = "nvme-apstd-bpf-load";
        ssize_t len = readlink("/proc/self/exe", buf, n - 1);
        char *slash;

        if (len <= 0)
                return NULL;
        buf[len] = 0;
        slash = strrchr(buf, '/');
        if (strcmp(buf, DAEMON_PATH) == 0 || !slash || (size_t) (slash + 1 - buf) + sizeof name > n)
                return NULL;
        memcpy(slash + 1, name, sizeof name);
        return access(buf, X_OK) == 0 ? buf : NULL;
}

/* $NVME_APSTD_BPF_LOADER when set; else the installed loader (libexecdir) when it exists; else
 * the one beside the running program, so a build tree runs like the installed daemon with no
 * environment; else the installed path, which fails with loader_missing()'s advice. */
static const char *loader_path(char *buf, size_t n) {
        const char *e = getenv(BPF_LOADER_ENV), *beside;

        if (e && *e)
                return e;
        if (access(BPF_LOADER_PATH, F_OK) == 0)
                return BPF_LOADER_PATH;
        beside = loader_beside(buf, n);
        return beside ? beside : BPF_LOADER_PATH;
}

/* The child, between fork() and exec: only async-signal-safe calls (the daemon may have a step's
 * thread running). The socket goes to IOGAP_LOAD_FD without close-on-exec and every descriptor
 * above it is closed (a step's thread may hold a device open without close-on-exec); the
 * loader starts with no signal blocked (the daemon blocks those its event loop takes). An exec
 * that fails is said over the socket. _exit(): none of the daemon's exit handlers (they restore
 * drives) runs here. */
_noreturn_ static void loader_exec(int sock, const char *path) {
        char *const argv[] = { (char *) path, NULL };
        IogapLoadAnswer a = { .step = IOGAP_LOAD_LOADER };
        sigset_t none;

        if (sock == IOGAP_LOAD_FD ? fcntl(sock, F_SETFD, 0) < 0 : dup2(sock, IOGAP_LOAD_FD) < 0)
                _exit(127);
        (void) close_range(IOGAP_LOAD_FD + 1, ~0U, 0);
        (void) sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        (void) execve(path, argv, environ);
        a.r = -errno;
        (void) send(IOGAP_LOAD_FD, &a, sizeof a, MSG_NOSIGNAL);
        _exit(127);
}

/* No loader at @path: say how to get one. */
static int loader_missing(const char *path, char *buf, size_t n) {
        (void) snprintf(buf, n, "%s (%s): %s; install it (meson install), keep "
                        "nvme-apstd-bpf-load beside this program (as the build tree has it), or set %s "
                        "to one",
                        load_step[IOGAP_LOAD_LOADER], path, strerror(ENOENT), BPF_LOADER_ENV);
        return -ENOENT;
}

/* Wait until @sock has the loader's answer (or its end) for at most BPF_LOADER_TIMEOUT_MS;
 * -ETIMEDOUT if it gave none by then. */
static int answer_wait(int sock) {
        const uint64_t end = now_usec() + BPF_LOADER_TIMEOUT_MS * UINT64_C(1000);

        for (;;) {
                struct pollfd p = { .fd = sock, .events = POLLIN };
                uint64_t now = now_usec();
                int n;

                if (now >= end)
                        return -ETIMEDOUT;
                n = poll(&p, 1, (int) ((end - now + 999) / 1000));
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return negative_errno();
        }
}

/* Take the loader's answer from @sock: the descriptors into @b->fds. On failure, @failed_step
 * says which step failed (IOGAP_LOAD_*). */
static int load_answer(BpfWatch *b, int sock, int *failed_step) {
        IogapLoadAnswer a = { -EIO, IOGAP_LOAD_LOADER, 0 };   /* a loader that died without a word */
        struct iovec iov = { .iov_base = &a, .iov_len = sizeof a };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof b->fds)];
        } c = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf };
        struct cmsghdr *h;
        ssize_t n;

        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        h = n == (ssize_t) sizeof a ? CMSG_FIRSTHDR(&mh) : NULL;
        if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
                /* whatever came is ours to close, even from a confused loader */
                size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                int got[_IOGAP_FD_MAX];
                memcpy(got, CMSG_DATA(h), MIN(nfd, (size_t) _IOGAP_FD_MAX) * sizeof(int));
                if (a.r == 0 && a.ncpus > 0 && nfd == _IOGAP_FD_MAX) {
                        memcpy(b->fds, got, sizeof got);
                        b->ncpus = a.ncpus;
                        return 0;
                }
                for (size_t i = 0; i < MIN(nfd, (size_t) _IOGAP_FD_MAX); i++)
                        (void) close(got[i]);
        }
        if (n != (ssize_t) sizeof a || a.r >= 0)
                a = (IogapLoadAnswer) { -EIO, IOGAP_LOAD_LOADER, 0 };
        *failed_step = a.step >= 0 && a.step < _IOGAP_LOAD_MAX ? a.step : IOGAP_LOAD_LOADER;
        return a.r;
}

/* Run the loader (nvme-apstd-bpf-load, iogap-load.c) in a child and take the descriptors it
 * sends into @b->fds. Loading is libbpf's heaviest work (it parses the kernel's BTF, relocates,
 * runs through libelf: the daemon's peak RSS was 17.2 MiB for it, against 6.2 MiB without) and
 * is done once; the pages it touches die with the loader, and the daemon does not even map
 * libbpf (map_op() below reads the maps with bpf(2)). */
static int load_exec(BpfWatch *b, const char *path, int *failed_step) {
        int sv[2], r;
        pid_t pid;

        *failed_step = IOGAP_LOAD_LOADER;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return negative_errno();
        pid = fork();
        if (pid == 0)
                loader_exec(sv[1], path);
        r = pid < 0 ? negative_errno() : 0;
        (void) close(sv[1]);
        if (r >= 0) {
                r = answer_wait(sv[0]);
                if (r >= 0)
                        r = load_answer(b, sv[0], failed_step);
                /* Answered or given up on, it has nothing more to do: one that lingers (or hangs)
                 * must not hold the start in waitpid(). The descriptors it sent are the daemon's
                 * own; with no answer, what it holds (a half-attached program) goes with it. */
                (void) kill(pid, SIGKILL);
        }
        (void) close(sv[0]);
        while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        return r;
}

int bpfwatch_open(BpfWatch **ret, char *reason, size_t reason_size) {
        char buf[PATH_MAX], what[PATH_MAX + 64];
        const char *path = loader_path(buf, sizeof buf);
        BpfWatch *b;
        int r, step;

        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                (void) snprintf(reason, reason_size,
                                "the kernel has no BTF (/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF)");
                return -ENOENT;
        }
        b = calloc(1, sizeof *b);
        if (!b)
                return fail(-ENOMEM, reason, reason_size, "out of memory");
        for (size_t i = 0; i < _IOGAP_FD_MAX; i++)
                b->fds[i] = -EBADF;
        r = load_exec(b, path, &step);
        if (r < 0) {
                bpfwatch_free(b);
                if (step != IOGAP_LOAD_LOADER)
                        return fail(r, reason, reason_size, load_step[step]);
                if (r == -EIO) {        /* it ran, or not, and said nothing: how it ended is in the log */
                        (void) snprintf(reason, reason_size, "%s (%s): it ended without an answer",
                                        load_step[step], path);
                        return r;
                }
                if (r == -ETIMEDOUT) {
                        (void) snprintf(reason, reason_size, "%s (%s): it gave no answer within %d s, and was killed",
                                        load_step[step], path, BPF_LOADER_TIMEOUT_MS / 1000);
                        return r;
                }
                if (r == -ENOENT)
                        return loader_missing(path, reason, reason_size);
                (void) snprintf(what, sizeof what, "%s (%s)", load_step[step], path);
                return fail(r, reason, reason_size, what);
        }
        b->percpu = calloc((size_t) b->ncpus, sizeof *b->percpu);
        if (!b->percpu) {
                bpfwatch_free(b);
                return fail(-ENOMEM, reason, reason_size, "out of memory");
        }
        *ret = b;
        return 0;
}

BpfWatch *bpfwatch_free(BpfWatch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < _IOGAP_FD_MAX; i++)
                if (b->fds[i] >= 0)
                        (void) close(b->fds[i]);
        free(b->percpu);
        free(b);
        return NULL;
}

/* One bpf(2) map command on @fd (BPF_MAP_LOOKUP_ELEM, _UPDATE_ELEM, _DELETE_ELEM: union bpf_attr's
 * map_fd, key, value, flags; include/uapi/linux/bpf.h). libbpf's bpf_map_*_elem() are these same
 * few lines; called here, the daemon needs no libbpf at all (only the loader links it). */
static int map_op(int cmd, int fd, const void *key, void *value, uint64_t flags) {
        union bpf_attr attr;

        memset(&attr, 0, sizeof attr);
        attr.map_fd = (uint32_t) fd;
        attr.key = (uint64_t) (uintptr_t) key;
        attr.value = (uint64_t) (uintptr_t) value;
        attr.flags = flags;
        return syscall(__NR_bpf, cmd, &attr, sizeof attr) < 0 ? negative_errno() : 0;
}

static int slot_zero(BpfWatch *b, unsigned slot, const uint64_t *hide_floor_ns, size_t n_floors) {
        struct gapk_state st = { .hide_floors = MIN(n_floors, (size_t) GAP_HIDE_FLOORS) };
        uint32_t k = slot;
        int r;

        for (unsigned f = 0; f < st.hide_floors; f++)
                st.hide_floor_ns[f] = hide_floor_ns[f];
        memset(b->percpu, 0, (size_t) b->ncpus * sizeof *b->percpu);
        r = map_op(BPF_MAP_UPDATE_ELEM, b->fds[IOGAP_FD_HIST], &k, b->percpu, BPF_ANY);
        if (r < 0)
                return r;
        return map_op(BPF_MAP_UPDATE_ELEM, b->fds[IOGAP_FD_STATE], &k, &st, BPF_ANY);
}

int bpfwatch_slot_new(BpfWatch *b, const uint64_t *hide_floor_ns, size_t n_floors) {
        for (unsigned s = 0; s < GAPK_SLOTS; s++) {
                if (b->used[s])
                        continue;
                int r = slot_zero(b, s, hide_floor_ns, n_floors);
                if (r < 0)
                        return r;
                b->used[s] = true;
                b->n_seqs[s] = 0;
                return (int) s;
        }
        return -ENOSPC;
}

/* After each change of the disks map: the program's CPUs drop what they cached of it. */
static int disks_changed(BpfWatch *b) {
        uint32_t k = 0;

        b->globals.disks_gen++;
        return map_op(BPF_MAP_UPDATE_ELEM, b->fds[IOGAP_FD_GLOBALS], &k, &b->globals, BPF_ANY);
}

static void slot_forget(BpfWatch *b, unsigned slot) {
        for (size_t i = 0; i < b->n_seqs[slot]; i++)
                (void) map_op(BPF_MAP_DELETE_ELEM, b->fds[IOGAP_FD_DISKS], &b->seqs[slot][i], NULL, 0);
        if (b->n_seqs[slot] > 0)
                (void) disks_changed(b);
        b->n_seqs[slot] = 0;
}

void bpfwatch_slot_release(BpfWatch *b, unsigned slot) {
        if (slot >= GAPK_SLOTS || !b->used[slot])
                return;
        slot_forget(b, slot);
        b->used[slot] = false;
}

int bpfwatch_slot_set_disks(BpfWatch *b, unsigned slot, const uint64_t *diskseq, size_t n) {
        uint32_t v = slot;

        if (slot >= GAPK_SLOTS || !b->used[slot] || n > DISKS_PER_SLOT)
                return -EINVAL;
        if (n == b->n_seqs[slot] && memcmp(diskseq, b->seqs[slot], n * sizeof *diskseq) == 0)
                return 0;
        slot_forget(b, slot);
        for (size_t i = 0; i < n; i++) {
                int r = map_op(BPF_MAP_UPDATE_ELEM, b->fds[IOGAP_FD_DISKS], &diskseq[i], &v, BPF_ANY);
                if (r < 0) {
                        (void) disks_changed(b);   /* those added so far count from now */
                        return r;
                }
                b->seqs[slot][b->n_seqs[slot]++] = diskseq[i];
        }
        return n > 0 ? disks_changed(b) : 0;
}

/* One CPU's counters of a slot, from the program's layout (gaphist-kern.h) into a GapHist. */
static void gapk_to_gaphist(const struct gapk_hist *k, GapHist *ret) {
        *ret = (GapHist) { .gap_sum_ns = k->gap_sum_ns, .requests = k->requests };
        for (unsigned i = 0; i < GAP_BUCKETS; i++) {
                ret->gaps[i] = k->b[i].gaps;
                ret->wake_count[i] = k->b[i].wake_count;
                ret->wake_sum_ns[i] = k->b[i].wake_sum_ns;
                ret->wake_max_ns[i] = k->b[i].wake_max_ns;
        }
        memcpy(ret->hidden, k->hidden, sizeof ret->hidden);
        memcpy(ret->hidden_after, k->hidden_after, sizeof ret->hidden_after);
}

int bpfwatch_read(BpfWatch *b, unsigned slot, GapHist *ret, BpfSlotState *ret_state) {
        struct gapk_state st;
        uint32_t k = slot;
        GapHist sum = {};
        uint64_t issued = 0;
        int r;

        if (slot >= GAPK_SLOTS || !b->used[slot])
                return -EINVAL;
        r = map_op(BPF_MAP_LOOKUP_ELEM, b->fds[IOGAP_FD_HIST], &k, b->percpu, 0);
        if (r < 0)
                return r;
        for (int c = 0; c < b->ncpus; c++) {
                GapHist one;
                gapk_to_gaphist(&b->percpu[c], &one);
                gaphist_merge(&sum, &one);
                issued += b->percpu[c].issued;
        }
        if (ret_state) {
                r = map_op(BPF_MAP_LOOKUP_ELEM, b->fds[IOGAP_FD_STATE], &k, &st, 0);
                if (r < 0)
                        return r;
                *ret_state = (BpfSlotState) {
                        .inflight = st.inflight,
                        .idle_since_ns = st.idle_since_ns,
                        .issued = issued,
                };
        }
        if (ret)
                *ret = sum;
        return 0;
}

#else /* !HAVE_BPF */

struct BpfWatch {
        int unused;
};

bool bpfwatch_built(void) {
        return false;
}

int bpfwatch_open(BpfWatch **ret, char *reason, size_t reason_size) {
        (void) ret;
        (void) snprintf(reason, reason_size, "built without eBPF support (-Dbpf=disabled)");
        return -EOPNOTSUPP;
}

BpfWatch *bpfwatch_free(BpfWatch *b) {
        free(b);
        return NULL;
}

int bpfwatch_slot_new(BpfWatch *b, const uint64_t *hide_floor_ns, size_t n_floors) {
        (void) b;
        (void) hide_floor_ns;
        (void) n_floors;
        return -EOPNOTSUPP;
}

void bpfwatch_slot_release(BpfWatch *b, unsigned slot) {
        (void) b;
        (void) slot;
}

int bpfwatch_slot_set_disks(BpfWatch *b, unsigned slot, const uint64_t *diskseq, size_t n) {
        (void) b;
        (void) slot;
        (void) diskseq;
        (void) n;
        return -EOPNOTSUPP;
}

int bpfwatch_read(BpfWatch *b, unsigned slot, GapHist *ret, BpfSlotState *ret_state) {
        (void) b;
        (void) slot;
        (void) ret;
        (void) ret_state;
        return -EOPNOTSUPP;
}

#endif
