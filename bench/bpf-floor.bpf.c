/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor bench/bpf-overhead.sh measures the I/O gap program against: two programs that do
 * nothing, on the same BTF-typed tracepoints as src/platform/bpf/iogap.bpf.c's issue and
 * completion programs. What the kernel counts for them (kernel.bpf_stats_enabled) is the price
 * of being called at all: the trampoline, the context, and the statistics' own clock reads.
 * Built and loaded by the bench itself (bench/bpf-floor-load.c), never installed.
 */

#include <linux/types.h>
#include <linux/bpf.h>

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/block_rq_issue")
int floor_issue(void *ctx) {
        (void) ctx;
        return 0;
}

SEC("tp_btf/block_rq_complete")
int floor_complete(void *ctx) {
        (void) ctx;
        return 0;
}
