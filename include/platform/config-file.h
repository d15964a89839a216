/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* nvme-apstd.conf from disk: the checks a configuration file must pass, then config.h's grammar. */

#include <stdbool.h>

#include "config.h"

/**
 * config_load() - read and parse a file
 *
 * Refuses (with a message naming the file) a file that is not a regular file,
 * is larger than CONFIG_MAX_SIZE, contains NUL bytes, or that a non-root user
 * can write (group/other write bit, or not owned by root when we run as root).
 * Messages are "FILE: reason", e.g. "/etc/nvme-apstd.conf: is writable by
 * group (mode 0664); refusing to use it", or those of config_parse_string().
 * Return: 0 or negative errno: that of open()/read() (-ENOENT, -EACCES, ...),
 * -EISDIR, -EINVAL (not a regular file, NUL byte, bad content), -EFBIG,
 * -EPERM (writable by others), -ENOMEM. @ret and @ret_error as for
 * config_parse_string().
 */
#define CONFIG_MAX_SIZE (1024u * 1024u)
int config_load(const char *path, Config *ret, char **ret_error);

/**
 * config_load_optional() - config_load_all() of @path: with @missing_ok (the default
 * path, which may be absent; a path the user named may not) the four drop-in
 * directories, else "@path.d".
 */
int config_load_optional(const char *path, bool missing_ok, Config *ret, char **ret_error);

/* config_load()'s checks and reading, without the parse: @ret_text is the file's text (malloc'd). */
int config_read_text(const char *path, char **ret_text, char **ret_error);

/* What config_load_all() reads. */
typedef struct ConfigLoad {
        const char *root;           /* every path below read under this directory (--root); NULL = / */
        const char *path;           /* the main file */
        bool missing_ok;            /* the main file may be absent (the default path) */
        bool system_dropins;        /* drop-ins from config_dropin_dirs (the default path), else PATH.d */
} ConfigLoad;

/**
 * config_load_all() - the main file and its drop-ins, as one configuration
 *
 * The drop-ins are "*.conf" of the four config_dropin_dirs, or of "PATH.d" for a
 * path the user named, in config_dropins_order()'s order, each read as config_load()
 * reads the main file. Every file is read and parsed even when one fails, and
 * @ret_error has every error, one a line. Nothing read at all (no main file where
 * that is allowed, no drop-in) gives the defaults.
 * Return: as config_load(); @ret written only on success.
 */
int config_load_all(const ConfigLoad *o, Config *ret, char **ret_error);
