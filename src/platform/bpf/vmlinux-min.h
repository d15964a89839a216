/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The kernel types iogap.bpf.c reads, and only the members it reads. With
 * preserve_access_index, clang records each member access as a CO-RE
 * relocation and libbpf fixes the offsets up against the running kernel's BTF
 * (/sys/kernel/btf/vmlinux) when it loads the program: these declarations say
 * which members exist, not where. So the object does not depend on the kernel
 * it was built on, and loads on 6.1 (Debian 12) as on 6.18. Definitions:
 * include/linux/blk-mq.h (struct request), include/linux/blkdev.h (struct
 * request_queue, struct gendisk). gendisk.diskseq exists since 5.15.
 */

enum mq_rq_state {
        MQ_RQ_IDLE = 0,
        MQ_RQ_IN_FLIGHT = 1,
        MQ_RQ_COMPLETE = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct gendisk {
        unsigned long long diskseq;
};

struct request_queue {
        struct gendisk *disk;
};

struct request {
        struct request_queue *q;
        enum mq_rq_state state;    /* CO-RE matches a member's kind too: an enum, not an int */
        unsigned long long start_time_ns;   /* u64 in the kernel: blk-mq's stamp at allocation, or 0 */
};

#pragma clang attribute pop
