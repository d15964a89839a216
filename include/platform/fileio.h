/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Whole files in and out: the one reader and the one atomic writer every
 * module uses (configuration, Identify dumps, traces, crash records).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * read_full_fd() - read all of @fd, at most @max bytes
 * @ret: malloc'd and NUL-terminated (the file may contain NULs: use @ret_len)
 * Return: 0, -EFBIG (more than @max bytes), -ENOMEM or -errno of read().
 */
int read_full_fd(int fd, uint64_t max, char **ret, size_t *ret_len);

typedef enum ReadFullFlags {
        READ_FULL_ALLOW_STDIN = 1 << 0,   /* "-" is standard input */
        READ_FULL_NOFOLLOW = 1 << 1,      /* refuse a symbolic link (O_NOFOLLOW) */
} ReadFullFlags;

/**
 * read_full_file() - open @path and read_full_fd() it
 * Refuses a directory (-EISDIR) and a regular file larger than @max (-EFBIG)
 * before reading. Return: 0 or negative errno (-ENOENT when it does not exist).
 */
int read_full_file(const char *path, uint64_t max, ReadFullFlags flags, char **ret, size_t *ret_len);

/**
 * write_file_atomic() - replace @path with @len bytes of @data
 *
 * Writes "DIR/.NAME.tmp" (mode @mode exactly, umask or not; never following a link), loops over
 * short writes, fsyncs it, renames it over @path and fsyncs the directory, so
 * that after a crash @path holds either the old or the new contents, never a
 * mix; a stale temporary file left by a crash is overwritten. On failure the
 * temporary file is removed and @path is untouched.
 * Return: 0 or -errno.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
