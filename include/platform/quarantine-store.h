/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The quarantine files on disk (STATE_DIR/quarantine/MODEL@FIRMWARE.quarantine,
 * doc/quarantine.md): read, replaced atomically, listed and removed. The format
 * is quarantine.h's.
 */

#include <stddef.h>
#include <stdint.h>

#include "quarantine.h"

/* Read the quarantine of @model/@firmware. -ENOENT: none; -EINVAL: malformed (*ret_error says where,
 * "PATH: line N: why"), or for another model or firmware. */
int quarantine_load(const char *state_dir, const char *model, const char *firmware, Quarantine *ret,
                    char **ret_error);

/* Write atomically (mode 0644), creating STATE_DIR/quarantine. */
int quarantine_save(const char *state_dir, const Quarantine *q);

/* Every readable quarantine file, in name order (malformed ones left out). Return: 0 (*@ret may be
 * NULL with *@ret_n 0: none, or no directory), -ENOMEM. */
int quarantine_list(const char *state_dir, Quarantine **ret, size_t *ret_n);

/* Remove the file of @model/@firmware. Return: 0, -ENOENT (none), or -errno. */
int quarantine_remove(const char *state_dir, const char *model, const char *firmware);

/* Lower @sysroot/class/nvme/@name/power/pm_qos_latency_tolerance_us to @us if it is above it, so the
 * kernel's own table (after a reset while the daemon is not running) leaves the quarantined states
 * out. Return: 1 written, 0 already at or below, -ENOENT (the kernel has APST off: no attribute), -errno. */
int quarantine_set_latency_tolerance(const char *sysroot, const char *name, uint32_t us);
