/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The eBPF I/O gap program (with its loader, src/platform/bpf/iogap-load.c,
 * the only code that knows eBPF).
 *
 * bpfwatch_open() has nvme-apstd-bpf-load (libexecdir; where that is not installed,
 * the one beside the running program, as in a build tree; $NVME_APSTD_BPF_LOADER
 * overrides both) load src/platform/bpf/iogap.bpf.c
 * and attaches it to the block layer's request issue, completion and requeue
 * tracepoints. Disks are watched in slots: each slot is one unit of idleness
 * (a controller's namespaces share one; `observe` gives each disk its own),
 * named by the disks' diskseq (sysfs `diskseq`, set for hidden multipath disks
 * too, unlike `dev`). bpfwatch_read() sums the per-CPU counters of a slot into
 * a GapHist (gaphist.h). Reading never wakes a drive: it is two map lookups.
 *
 * Built with -Dbpf=disabled, or where the program cannot load, bpfwatch_open()
 * fails with a reason in words for the log (once) and the callers use the
 * sysfs sampler instead.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaphist.h"

typedef struct BpfWatch BpfWatch;

/* The slot state user space can see besides the histogram. */
typedef struct BpfSlotState {
        uint64_t inflight;
        uint64_t idle_since_ns;    /* CLOCK_MONOTONIC of the completion that left it idle; 0 = none seen */
        uint64_t issued;
} BpfSlotState;

/* Was the program built in (-Dbpf)? */
bool bpfwatch_built(void);

/**
 * bpfwatch_open() - load and attach the program
 * @ret_reason: on failure, why, in words (a static or @reason_buf string)
 * Return: 0, -EOPNOTSUPP (built without), -ENOENT (no kernel BTF), -EPERM, -ENOSYS, or another
 * -errno from loading or attaching.
 */
int bpfwatch_open(BpfWatch **ret, char *reason_buf, size_t reason_size);
BpfWatch *bpfwatch_free(BpfWatch *b);
static inline void bpfwatch_freep(BpfWatch **b) {
        if (*b)
                bpfwatch_free(*b);
}

/* A free slot, its counters zeroed; gaps a wake-up hid are counted at the first @n_floors of
 * @hide_floor_ns (idctrl_wake_floors(): 0, then ascending; at most GAP_HIDE_FLOORS, 0 counts
 * none). Return the slot number (>= 0) or -ENOSPC. */
int bpfwatch_slot_new(BpfWatch *b, const uint64_t *hide_floor_ns, size_t n_floors);
/* Forget the slot's disks and give it back. */
void bpfwatch_slot_release(BpfWatch *b, unsigned slot);
/**
 * bpfwatch_slot_set_disks() - the disks (by diskseq) counted in @slot, replacing the ones before
 * Return: 0 or -errno (the map is full: -E2BIG).
 */
int bpfwatch_slot_set_disks(BpfWatch *b, unsigned slot, const uint64_t *diskseq, size_t n);
/* The slot's counters since bpfwatch_slot_new(), summed over the CPUs, and its state. */
int bpfwatch_read(BpfWatch *b, unsigned slot, GapHist *ret, BpfSlotState *ret_state);
