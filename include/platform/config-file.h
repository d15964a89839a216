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
 * config_load_optional() - config_load(), except that with @missing_ok a file
 * that does not exist gives the built-in defaults (config_init()): the default
 * path may be absent, a path the user named may not.
 */
int config_load_optional(const char *path, bool missing_ok, Config *ret, char **ret_error);
