/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the eBPF program's loader (nvme-apstd-bpf-load, iogap-load.c) and the
 * daemon's side of it (src/platform/bpfwatch.c) say to each other: the loader
 * finds a SOCK_SEQPACKET socket at IOGAP_LOAD_FD, sends one IogapLoadAnswer
 * and, when it loaded and attached the program, the descriptors below in the
 * same message (SCM_RIGHTS, unix(7)), then exits. Only these two files include
 * this header; the loader is the only program that links libbpf.
 */

#include <stdint.h>

/* The socket's descriptor in the loader: the first after stdin, stdout and stderr, as
 * sd_listen_fds() hands sockets to a service (SD_LISTEN_FDS_START). */
#define IOGAP_LOAD_FD 3

/* The descriptors sent, in this order: the maps, and the links that keep the program attached
 * (closing the last descriptor of a link detaches it). */
enum {
        IOGAP_FD_HIST,
        IOGAP_FD_STATE,
        IOGAP_FD_DISKS,
        IOGAP_FD_GLOBALS,     /* the program's .bss: a struct gapk_globals */
        IOGAP_FD_LINK_ISSUE,
        IOGAP_FD_LINK_COMPLETE,
        IOGAP_FD_LINK_REQUEUE,
        _IOGAP_FD_MAX,
};

/* The step that failed, for the daemon's words (bpfwatch.c's load_step[]). */
enum {
        IOGAP_LOAD_CPUS,
        IOGAP_LOAD_OPEN,
        IOGAP_LOAD_LOAD,
        IOGAP_LOAD_ATTACH,
        IOGAP_LOAD_LOADER,   /* the loader did not run, or said nothing */
        _IOGAP_LOAD_MAX,
};

/* 0, the possible CPUs (the per-CPU histogram's width) and the descriptors; or a negative errno
 * and the step that failed. */
typedef struct IogapLoadAnswer {
        int32_t r;
        int32_t step;
        int32_t ncpus;
} IogapLoadAnswer;
