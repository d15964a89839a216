/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nvme-apstd-bpf-load: the eBPF I/O gap program's loader. bpfwatch_open() runs it in a child of
 * the daemon (or of `observe`) with a socket at IOGAP_LOAD_FD; it opens, loads and attaches the
 * skeleton of src/platform/bpf/iogap.bpf.c, sends the maps' and links' descriptors back over the
 * socket (iogap-load.h) and exits. A separate program so that the daemon does not link libbpf,
 * libelf and libz at all: they cost the idle daemon about 0.3 MiB merely mapped, and loading
 * (parsing the kernel's BTF) took its peak RSS to 17 MiB. doc/watch.md, "Loaded in a child
 * process".
 */

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iogap-load.h"
#include "iogap.skel.h"

/* libbpf's own messages are details: only with NVME_APSTD_LOG_LEVEL=debug (the daemon's debug
 * switch, inherited), on stderr, which is the daemon's (the journal under systemd). */
static int print_debug(enum libbpf_print_level level, const char *fmt, va_list ap) {
        if (level == LIBBPF_DEBUG)
                return 0;
        (void) fputs("nvme-apstd-bpf-load: libbpf: ", stderr);
        return vfprintf(stderr, fmt, ap);
}

static int print_none(enum libbpf_print_level level, const char *fmt, va_list ap) {
        (void) level;
        (void) fmt;
        (void) ap;
        return 0;
}

static int send_answer(const IogapLoadAnswer *a, const int *fds) {
        struct iovec iov = { .iov_base = (void *) a, .iov_len = sizeof *a };
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int) * _IOGAP_FD_MAX)];
        } c = {};
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (fds) {
                mh.msg_control = c.buf;
                mh.msg_controllen = sizeof c.buf;
                c.h.cmsg_level = SOL_SOCKET;
                c.h.cmsg_type = SCM_RIGHTS;
                c.h.cmsg_len = CMSG_LEN(sizeof(int) * _IOGAP_FD_MAX);
                memcpy(CMSG_DATA(&c.h), fds, sizeof(int) * _IOGAP_FD_MAX);
        }
        return sendmsg(IOGAP_LOAD_FD, &mh, MSG_NOSIGNAL) == (ssize_t) sizeof *a ? 0 : -errno;
}

int main(void) {
        const char *level = getenv("NVME_APSTD_LOG_LEVEL");
        IogapLoadAnswer a = {};
        struct iogap *skel = NULL;
        int fds[_IOGAP_FD_MAX];
        int r;

        (void) libbpf_set_print(level && strcmp(level, "debug") == 0 ? print_debug : print_none);
        a.ncpus = libbpf_num_possible_cpus();
        if (a.ncpus <= 0)
                a = (IogapLoadAnswer) { a.ncpus < 0 ? a.ncpus : -EINVAL, IOGAP_LOAD_CPUS, 0 };
        else if (!(skel = iogap__open()))
                a = (IogapLoadAnswer) { errno > 0 ? -errno : -ENOMEM, IOGAP_LOAD_OPEN, 0 };
        else if ((r = iogap__load(skel)) < 0)
                a = (IogapLoadAnswer) { r, IOGAP_LOAD_LOAD, 0 };
        else if ((r = iogap__attach(skel)) < 0)
                a = (IogapLoadAnswer) { r, IOGAP_LOAD_ATTACH, 0 };
        if (a.r == 0) {
                fds[IOGAP_FD_HIST] = bpf_map__fd(skel->maps.hist);
                fds[IOGAP_FD_STATE] = bpf_map__fd(skel->maps.state);
                fds[IOGAP_FD_DISKS] = bpf_map__fd(skel->maps.disks);
                fds[IOGAP_FD_GLOBALS] = bpf_map__fd(skel->maps.bss);
                fds[IOGAP_FD_LINK_ISSUE] = bpf_link__fd(skel->links.iogap_issue);
                fds[IOGAP_FD_LINK_COMPLETE] = bpf_link__fd(skel->links.iogap_complete);
                fds[IOGAP_FD_LINK_REQUEUE] = bpf_link__fd(skel->links.iogap_requeue);
        }
        r = send_answer(&a, a.r == 0 ? fds : NULL);
        /* the daemon holds its copies of the descriptors now: ours go with this process (no
         * iogap__destroy(), which would detach the links before the process ends anyway) */
        return r < 0 || a.r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
