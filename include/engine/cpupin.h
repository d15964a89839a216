/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * CPU frequency pinning: the stateful object the manager owns (one per
 * daemon). It acts through a CpufreqOps backend and logs (MSGID_CPU_*);
 * the decisions are cpufreq-policy.c's.
 *
 * Promise: every policy is put back exactly as first found. Before the first
 * change to any policy, all policies about to change are read and written to
 * <runtime_dir>/cpufreq-saved (tmp + fsync + rename); release restores from
 * that record and removes it; cpupin_recover() at start restores a record a
 * crashed or SIGKILLed daemon left behind. Under systemd the runtime directory
 * must survive a restart: RuntimeDirectory=nvme-apstd + RuntimeDirectoryPreserve=restart.
 *
 * A policy whose write the kernel refuses (EINVAL, EBUSY) is logged with CPU,
 * file and value, put back as it was before this call, and left out; the
 * others carry on. Without cpufreq at all, one line says so and nothing else
 * happens: none of these calls fails for that.
 *
 * Modes: CPU_PIN_OFF releases; CPU_PIN_ALWAYS pins in cpupin_apply();
 * CPU_PIN_BUSY pins on cpupin_busy_hook(busy=true) and releases after
 * release_after_ms of busy=false.
 */

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "cpufreq-policy.h"
#include "cpuset.h"
#include "macro.h"

typedef struct CpuPin CpuPin;

/* The file name of the record inside the runtime directory. */
#define CPUPIN_RECORD_NAME "cpufreq-saved"
/* Without $RUNTIME_DIRECTORY (not started by systemd). */
#define CPUPIN_RUNTIME_DIR_DEFAULT "/run/nvme-apstd"

/**
 * cpupin_new() - create the pinning state
 * @ops: backend; must outlive the object (&cpufreq_sysfs_ops for the daemon)
 * @runtime_dir: where the record lives; NULL = the first entry of
 *      $RUNTIME_DIRECTORY, else CPUPIN_RUNTIME_DIR_DEFAULT. Created (0700, as the
 *      unit's RuntimeDirectoryMode=) when missing at the first record write.
 *
 * Nothing is read or written here. Return: 0 or -ENOMEM.
 */
int cpupin_new(const CpufreqOps *ops, const char *runtime_dir, CpuPin **ret);

/* Free the object. Does not release: call cpupin_release() first. Accepts NULL; returns NULL. */
CpuPin *cpupin_free(CpuPin *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(CpuPin *, cpupin_free);

/**
 * cpupin_recover() - at start, undo what an earlier instance left pinned
 *
 * If a record file exists, restore every policy in it, log MSGID_CPU_RELEASED,
 * and remove the file (also when some write fails: each failure is logged,
 * and retrying forever at every start would not help). A record that does not
 * parse is logged and removed without writing anything.
 * Return: 1 when a record was restored, 0 when there was none, negative errno
 * when the record could not be read or removed.
 */
int cpupin_recover(CpuPin *p);

/**
 * cpupin_apply() - make the configuration true
 * @cfg: copied; the caller may free it afterwards
 * @nvme_irq_cpus: CPUs servicing the controllers' interrupts (cpus = nvme-irq),
 *      recomputed by the caller when controllers come and go; NULL = none known
 * @reason: for the journal ("start", "reload", "controller nvme1 added")
 *
 * OFF: release everything pinned. ALWAYS: pin the selected policies now,
 * restore pinned policies no longer selected. BUSY: remember @cfg; pin only on
 * cpupin_busy_hook(); if already pinned, re-pin with the new @cfg.
 * Return: 0 (also when some policies were refused or cpufreq is missing: those
 * are logged), or negative errno when the record could not be written (then
 * nothing was changed).
 */
int cpupin_apply(CpuPin *p, const CpuConfig *cfg, const CpuSet *nvme_irq_cpus, const char *reason);

/**
 * cpupin_release() - restore every pinned policy exactly as recorded
 *
 * Removes the record file. Failures are logged and do not stop the others.
 * Return: 0, or the first negative errno.
 */
int cpupin_release(CpuPin *p, const char *reason);

/**
 * cpupin_busy_hook() - I/O activity for `pin = busy` (called by the I/O watcher)
 * @busy: any watched drive had I/O since the last call
 * @now_usec: CLOCK_MONOTONIC
 * @ret_deadline_usec: when to call again at the latest, even without news
 *      (the release time), or UINT64_MAX; may be NULL; set on success only
 *
 * Does nothing unless the last cpupin_apply() had CPU_PIN_BUSY. busy pins at
 * once; release happens on the first call at least release_after_ms after the
 * last busy one.
 * Return: 0, or negative errno as cpupin_apply().
 */
int cpupin_busy_hook(CpuPin *p, bool busy, uint64_t now_usec, uint64_t *ret_deadline_usec);

/* Whether any policy is pinned now. */
bool cpupin_is_pinned(const CpuPin *p);

/* The policies pinned now, as first found (cpu: the policy's lowest CPU, cpus: its CPUs);
 * valid until the next call that changes the pins. Return: how many. */
size_t cpupin_pinned(const CpuPin *p, const CpufreqSettings **ret);

/**
 * cpupin_describe() - what the CPU policy would become (`nvme-apstd plan`)
 *
 * Reads the policies (no writes, no logging). One line per policy, e.g.
 * "cpu0-3: governor performance, min 3600000 kHz (max), max 3600000 kHz (max), epp performance",
 * or "cpu4-7: refused: governor 'x' is not in ...", or a single line for
 * pin = off, nothing selected, or no cpufreq.
 * Return: 0 (@ret malloc'd text, each line ending in '\n') or -ENOMEM.
 */
int cpupin_describe(CpuPin *p, const CpuConfig *cfg, const CpuSet *nvme_irq_cpus, char **ret);
