/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Replacing a small file atomically: write a temporary file in the same
 * directory, then rename(2) it over the target, so a reader (node_exporter,
 * a daemon restarted after a crash) sees either the old or the new contents,
 * never a partial one.
 */

#include <stddef.h>
#include <sys/types.h>

typedef enum WriteFileFlags {
        WRITE_FILE_SYNC = 1u << 0,  /* fsync the data before the rename and the directory after it */
} WriteFileFlags;

/**
 * write_file_atomic() - replace @path with @len bytes of @data
 * @mode: permissions of the new file (not subject to the umask: fchmod)
 * @flags: WriteFileFlags
 *
 * The temporary file is "<dir>/.<name>.XXXXXX" (mkostemp, O_CLOEXEC), removed
 * again on any failure. @path must not end in '/'.
 * Return: 0, or negative errno: -ENOENT (the directory does not exist),
 * -EACCES / -EROFS (not writable), -ENOSPC, -EINVAL, -ENAMETOOLONG ...
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags);
