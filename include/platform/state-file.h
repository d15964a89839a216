/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon's directories as systemd passes them, and the KEY=VALUE state files kept in the
 * state directory (calib-store.c: measured wake costs; learned-store.c: what the adaptive
 * policy learned): read with their owner checked, replaced atomically.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/**
 * runtime_directory() - the daemon's runtime directory: the first entry of
 * $RUNTIME_DIRECTORY (systemd passes one absolute path per RuntimeDirectory=
 * entry, colon-separated), else @fallback.
 * @ret: malloc'd
 * Return: 0 or -ENOMEM.
 */
int runtime_directory(const char *fallback, char **ret);

/* Where the state files are kept when nothing else is said: $STATE_DIRECTORY (the first, if
 * systemd passes several), else /var/lib/nvme-apstd. Return: @buf. */
const char *state_directory(char *buf, size_t n);

/* How one kind of state file is read: @parse as calib_parse() and learned_parse() (a message
 * with the line in *ret_error); @foreign whether what was read belongs to another drive than
 * @owner, and then the message in *ret_message (malloc'd, NULL without memory). */
typedef struct StateFileType {
        size_t max_size;
        int (*parse)(const char *text, size_t len, void *ret, char **ret_error);
        bool (*foreign)(const void *parsed, const void *owner, char **ret_message);
} StateFileType;

/* Read @path as @type into @ret (the caller's scratch: it holds the file's value only on
 * success, the caller copies it out then). -ENOENT: no file (no message); -EINVAL:
 * malformed or @owner's is not what it holds; other read errors. *ret_error (if given):
 * "PATH: why". */
int state_file_load(const StateFileType *type, const char *path, const void *owner, void *ret, char **ret_error);

/* Replace @path atomically with @text (mode @mode), creating @state_dir and its @subdir first. */
int state_file_save(const char *state_dir, const char *subdir, const char *path, const char *text, mode_t mode);
