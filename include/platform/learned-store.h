/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The adaptive policy's learned-state file on disk
 * (STATE_DIR/adaptive/MODEL@FIRMWARE@SERIALHASH.learned, doc/policy.md): read, and
 * replaced atomically. The format is learned.h's.
 */

#include "learned.h"

/* Read what was learned about the drive @model/@firmware with serial hash @serial_hash.
 * -ENOENT: nothing yet; -EINVAL: malformed (*ret_error says where, "PATH: line N: why"), or
 * for another drive. */
int learned_load(const char *state_dir, const char *model, const char *firmware, uint64_t serial_hash,
                 Learned *ret, char **ret_error);

/* Write atomically (mode 0600: a usage profile of the machine), creating STATE_DIR/adaptive. */
int learned_save(const char *state_dir, const Learned *l);
