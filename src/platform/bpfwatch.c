/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The eBPF I/O gap program's loader. See bpfwatch.h; the program is
 * src/platform/bpf/iogap.bpf.c, doc/watch.md says what it sees and why.
 */

#include <errno.h>
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

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "iogap.skel.h"
#include "log.h"

_Static_assert(GAPK_BUCKETS == GAP_BUCKETS, "the program's buckets are gaphist.h's");
_Static_assert(GAPK_BASE_SHIFT == GAP_BASE_SHIFT && GAPK_TOP_SHIFT == GAP_TOP_SHIFT, "same bounds");
_Static_assert(sizeof(struct gapk_hist) == sizeof(GapHist), "the map's value is a GapHist");

#define DISKS_PER_SLOT 32u

/* What the daemon keeps of the loaded program: its maps, and the links that keep it attached
 * (closing the last descriptor of a link detaches it). */
enum {
        FD_HIST,
        FD_STATE,
        FD_DISKS,
        FD_LINK_ISSUE,
        FD_LINK_COMPLETE,
        FD_LINK_REQUEUE,
        _FD_MAX,
};

struct BpfWatch {
        int fds[_FD_MAX];
        int ncpus;
        struct gapk_hist *percpu;      /* one lookup's worth */
        bool used[GAPK_SLOTS];
        uint64_t seqs[GAPK_SLOTS][DISKS_PER_SLOT];
        size_t n_seqs[GAPK_SLOTS];
};

bool bpfwatch_built(void) {
        return true;
}

/* libbpf's own messages are details: debug level, one journal line per line of theirs (a
 * verifier log runs to many). */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        _cleanup_free_ char *buf = NULL;
        char *line, *save = NULL;

        if (level == LIBBPF_DEBUG || log_get_max_level() < LOG_DEBUG)
                return 0;
        if (vasprintf(&buf, fmt, ap) < 0)
                return 0;
        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                log_debug("libbpf: %s", line);
        return 0;
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

/* What the loader sends back: 0, the possible CPUs and the descriptors, or the step that failed
 * and how. */
typedef struct LoadAnswer {
        int r;
        int step;       /* LOAD_* */
        int ncpus;
} LoadAnswer;

enum { LOAD_CPUS, LOAD_OPEN, LOAD_LOAD, LOAD_ATTACH, LOAD_LOADER };

static const char *const load_step[] = {
        [LOAD_CPUS] = "cannot count the possible CPUs",
        [LOAD_OPEN] = "cannot open the eBPF program",
        [LOAD_LOAD] = "cannot load the eBPF program",
        [LOAD_ATTACH] = "cannot attach to the block layer's tracepoints",
        [LOAD_LOADER] = "cannot run the eBPF program's loader",
};

/* The loader, in a child process: open, load and attach the skeleton, send the maps' and links'
 * descriptors over @sock and exit. Loading is libbpf's heaviest work (it parses the kernel's BTF,
 * relocates, runs through libelf: the daemon's peak RSS was 17.2 MiB for it, against 6.2 MiB
 * without) and is done once; the pages it touches die with the child, and the daemon keeps only
 * descriptors (map_op() below: it runs no libbpf code at all). */
_noreturn_ static void load_child(int sock) {
        int fds[_FD_MAX];
        LoadAnswer a = {};
        struct iovec iov = { .iov_base = &a, .iov_len = sizeof a };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof fds)];
        } c = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        struct iogap *skel = NULL;
        int r;

        libbpf_set_print(libbpf_print);
        a.ncpus = libbpf_num_possible_cpus();
        if (a.ncpus <= 0)
                a = (LoadAnswer) { a.ncpus < 0 ? a.ncpus : -EINVAL, LOAD_CPUS };
        else if (!(skel = iogap__open()))
                a = (LoadAnswer) { errno > 0 ? -errno : -ENOMEM, LOAD_OPEN };
        else if ((r = iogap__load(skel)) < 0)
                a = (LoadAnswer) { r, LOAD_LOAD };
        else if ((r = iogap__attach(skel)) < 0)
                a = (LoadAnswer) { r, LOAD_ATTACH };
        if (a.r == 0) {
                fds[FD_HIST] = bpf_map__fd(skel->maps.hist);
                fds[FD_STATE] = bpf_map__fd(skel->maps.state);
                fds[FD_DISKS] = bpf_map__fd(skel->maps.disks);
                fds[FD_LINK_ISSUE] = bpf_link__fd(skel->links.iogap_issue);
                fds[FD_LINK_COMPLETE] = bpf_link__fd(skel->links.iogap_complete);
                fds[FD_LINK_REQUEUE] = bpf_link__fd(skel->links.iogap_requeue);
                mh.msg_control = c.buf;
                mh.msg_controllen = sizeof c.buf;
                c.h.cmsg_level = SOL_SOCKET;
                c.h.cmsg_type = SCM_RIGHTS;
                c.h.cmsg_len = CMSG_LEN(sizeof fds);
                memcpy(CMSG_DATA(&c.h), fds, sizeof fds);
        }
        (void) sendmsg(sock, &mh, MSG_NOSIGNAL);
        /* _exit(): none of the daemon's exit handlers (they restore drives) runs in the loader */
        _exit(0);
}

/* Run the loader and take the descriptors it sends into @b->fds. On failure, @failed_step says
 * which step failed (LOAD_*). */
static int load_forked(BpfWatch *b, int *failed_step) {
        LoadAnswer a = { -EIO, LOAD_LOADER };     /* what a loader that died without a word says */
        struct iovec iov = { .iov_base = &a, .iov_len = sizeof a };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof b->fds)];
        } c = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf };
        struct cmsghdr *h;
        int sv[2], r;
        ssize_t n;
        pid_t pid;

        *failed_step = LOAD_LOADER;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return negative_errno();
        pid = fork();
        if (pid == 0) {
                (void) close(sv[0]);
                load_child(sv[1]);
        }
        r = pid < 0 ? negative_errno() : 0;
        (void) close(sv[1]);
        if (r < 0) {
                (void) close(sv[0]);
                return r;
        }
        do
                n = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        (void) close(sv[0]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t) sizeof a)
                return -EIO;
        h = CMSG_FIRSTHDR(&mh);
        if (a.r == 0 && h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
            h->cmsg_len == CMSG_LEN(sizeof b->fds) && a.ncpus > 0) {
                memcpy(b->fds, CMSG_DATA(h), sizeof b->fds);
                b->ncpus = a.ncpus;
                return 0;
        }
        *failed_step = a.r < 0 && a.step >= LOAD_CPUS && a.step <= LOAD_LOADER ? a.step : LOAD_LOADER;
        return a.r < 0 ? a.r : -EIO;
}

int bpfwatch_open(BpfWatch **ret, char *reason, size_t reason_size) {
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
        for (size_t i = 0; i < _FD_MAX; i++)
                b->fds[i] = -EBADF;
        r = load_forked(b, &step);
        if (r < 0) {
                bpfwatch_free(b);
                return fail(r, reason, reason_size, load_step[step]);
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
        for (size_t i = 0; i < _FD_MAX; i++)
                if (b->fds[i] >= 0)
                        (void) close(b->fds[i]);
        free(b->percpu);
        free(b);
        return NULL;
}

/* One bpf(2) map command on @fd (BPF_MAP_LOOKUP_ELEM, _UPDATE_ELEM, _DELETE_ELEM: union bpf_attr's
 * map_fd, key, value, flags; include/uapi/linux/bpf.h). libbpf's bpf_map_*_elem() are these same
 * few lines; called here, the daemon runs no libbpf code after the load and none of libbpf's
 * pages need to stay resident for it. */
static int map_op(int cmd, int fd, const void *key, void *value, uint64_t flags) {
        union bpf_attr attr;

        memset(&attr, 0, sizeof attr);
        attr.map_fd = (uint32_t) fd;
        attr.key = (uint64_t) (uintptr_t) key;
        attr.value = (uint64_t) (uintptr_t) value;
        attr.flags = flags;
        return syscall(__NR_bpf, cmd, &attr, sizeof attr) < 0 ? negative_errno() : 0;
}

static int slot_zero(BpfWatch *b, unsigned slot) {
        struct gapk_state st = {};
        uint32_t k = slot;
        int r;

        memset(b->percpu, 0, (size_t) b->ncpus * sizeof *b->percpu);
        r = map_op(BPF_MAP_UPDATE_ELEM, b->fds[FD_HIST], &k, b->percpu, BPF_ANY);
        if (r < 0)
                return r;
        return map_op(BPF_MAP_UPDATE_ELEM, b->fds[FD_STATE], &k, &st, BPF_ANY);
}

int bpfwatch_slot_new(BpfWatch *b) {
        for (unsigned s = 0; s < GAPK_SLOTS; s++) {
                if (b->used[s])
                        continue;
                int r = slot_zero(b, s);
                if (r < 0)
                        return r;
                b->used[s] = true;
                b->n_seqs[s] = 0;
                return (int) s;
        }
        return -ENOSPC;
}

static void slot_forget(BpfWatch *b, unsigned slot) {
        for (size_t i = 0; i < b->n_seqs[slot]; i++)
                (void) map_op(BPF_MAP_DELETE_ELEM, b->fds[FD_DISKS], &b->seqs[slot][i], NULL, 0);
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
                int r = map_op(BPF_MAP_UPDATE_ELEM, b->fds[FD_DISKS], &diskseq[i], &v, BPF_ANY);
                if (r < 0)
                        return r;
                b->seqs[slot][b->n_seqs[slot]++] = diskseq[i];
        }
        return 0;
}

int bpfwatch_read(BpfWatch *b, unsigned slot, GapHist *ret, BpfSlotState *ret_state) {
        struct gapk_state st;
        uint32_t k = slot;
        GapHist sum = {};
        int r;

        if (slot >= GAPK_SLOTS || !b->used[slot])
                return -EINVAL;
        r = map_op(BPF_MAP_LOOKUP_ELEM, b->fds[FD_HIST], &k, b->percpu, 0);
        if (r < 0)
                return r;
        for (int c = 0; c < b->ncpus; c++) {
                GapHist one;
                memcpy(&one, &b->percpu[c], sizeof one);
                gaphist_merge(&sum, &one);
        }
        if (ret_state) {
                r = map_op(BPF_MAP_LOOKUP_ELEM, b->fds[FD_STATE], &k, &st, 0);
                if (r < 0)
                        return r;
                *ret_state = (BpfSlotState) {
                        .inflight = st.inflight,
                        .idle_since_ns = st.idle_since_ns,
                        .issued = st.issued,
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

int bpfwatch_slot_new(BpfWatch *b) {
        (void) b;
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
