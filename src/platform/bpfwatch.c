/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The eBPF I/O gap program's loader. See bpfwatch.h; the program is
 * src/platform/bpf/iogap.bpf.c, doc/watch.md says what it sees and why.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpfwatch.h"
#include "config-build.h"
#include "gaphist-kern.h"
#include "macro.h"

#if HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iogap.skel.h"
#include "log.h"

_Static_assert(GAPK_BUCKETS == GAP_BUCKETS, "the program's buckets are gaphist.h's");
_Static_assert(GAPK_BASE_SHIFT == GAP_BASE_SHIFT && GAPK_TOP_SHIFT == GAP_TOP_SHIFT, "same bounds");
_Static_assert(sizeof(struct gapk_hist) == sizeof(GapHist), "the map's value is a GapHist");

#define DISKS_PER_SLOT 32u

struct BpfWatch {
        struct iogap *skel;
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

int bpfwatch_open(BpfWatch **ret, char *reason, size_t reason_size) {
        BpfWatch *b;
        int r;

        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                (void) snprintf(reason, reason_size,
                                "the kernel has no BTF (/sys/kernel/btf/vmlinux: CONFIG_DEBUG_INFO_BTF)");
                return -ENOENT;
        }
        libbpf_set_print(libbpf_print);
        b = calloc(1, sizeof *b);
        if (!b)
                return fail(-ENOMEM, reason, reason_size, "out of memory");
        b->ncpus = libbpf_num_possible_cpus();
        if (b->ncpus <= 0) {
                r = b->ncpus < 0 ? b->ncpus : -EINVAL;
                bpfwatch_free(b);
                return fail(r, reason, reason_size, "cannot count the possible CPUs");
        }
        b->percpu = calloc((size_t) b->ncpus, sizeof *b->percpu);
        b->skel = iogap__open();
        if (!b->percpu || !b->skel) {
                r = b->percpu ? -errno : -ENOMEM;
                bpfwatch_free(b);
                return fail(r ? r : -ENOMEM, reason, reason_size, "cannot open the eBPF program");
        }
        r = iogap__load(b->skel);
        if (r < 0) {
                bpfwatch_free(b);
                return fail(r, reason, reason_size, "cannot load the eBPF program");
        }
        r = iogap__attach(b->skel);
        if (r < 0) {
                bpfwatch_free(b);
                return fail(r, reason, reason_size, "cannot attach to the block layer's tracepoints");
        }
        *ret = b;
        return 0;
}

BpfWatch *bpfwatch_free(BpfWatch *b) {
        if (!b)
                return NULL;
        iogap__destroy(b->skel);
        free(b->percpu);
        free(b);
        return NULL;
}

static int slot_zero(BpfWatch *b, unsigned slot) {
        struct gapk_state st = {};
        uint32_t k = slot;
        int r;

        memset(b->percpu, 0, (size_t) b->ncpus * sizeof *b->percpu);
        r = bpf_map__update_elem(b->skel->maps.hist, &k, sizeof k, b->percpu,
                                 (size_t) b->ncpus * sizeof *b->percpu, BPF_ANY);
        if (r < 0)
                return r;
        return bpf_map__update_elem(b->skel->maps.state, &k, sizeof k, &st, sizeof st, BPF_ANY);
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
                (void) bpf_map__delete_elem(b->skel->maps.disks, &b->seqs[slot][i], sizeof(uint64_t), 0);
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
                int r = bpf_map__update_elem(b->skel->maps.disks, &diskseq[i], sizeof(uint64_t), &v, sizeof v,
                                             BPF_ANY);
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
        r = bpf_map__lookup_elem(b->skel->maps.hist, &k, sizeof k, b->percpu,
                                 (size_t) b->ncpus * sizeof *b->percpu, 0);
        if (r < 0)
                return r;
        for (int c = 0; c < b->ncpus; c++) {
                GapHist one;
                memcpy(&one, &b->percpu[c], sizeof one);
                gaphist_merge(&sum, &one);
        }
        if (ret_state) {
                r = bpf_map__lookup_elem(b->skel->maps.state, &k, sizeof k, &st, sizeof st, 0);
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
