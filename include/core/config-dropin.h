/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Which drop-in files make up the configuration, and in which order: systemd's rules
 * ("Configuration Directories and Precedence" in logind.conf(5), conf_files_list() in
 * systemd's src/basic/conf-files.c). Pure: the directory listing is the caller's
 * (config-file.c reads it).
 *
 *  - only names ending in ".conf" count, and not hidden ones (a leading '.');
 *  - all files are ordered by file name (strcmp(), byte order), whatever their directory;
 *  - a name in a directory of higher priority replaces the same name in a lower one;
 *  - a symlink to /dev/null masks the name: neither it nor a lower one is read.
 */

#include <stdbool.h>
#include <stddef.h>

/* The directories of drop-ins with the default main file, highest priority first. */
#define CONFIG_DROPIN_DIRS_N 4u
extern const char *const config_dropin_dirs[CONFIG_DROPIN_DIRS_N];

typedef struct DropinEntry {
        unsigned dir;               /* priority of its directory: 0 is the highest */
        const char *name;           /* the file name, without directory */
        bool masked;                /* a symlink to /dev/null */
} DropinEntry;

/**
 * config_dropins_order() - the drop-ins to read
 * @in: every entry of every directory, in any order
 * @ret_order: indices into @in of the files to read, in reading order (malloc'd; NULL when none)
 * @ret_n: how many
 * Return: 0 or -ENOMEM; the ret_ arguments are written only on success.
 */
int config_dropins_order(const DropinEntry *in, size_t n, size_t **ret_order, size_t *ret_n);

/* Whether @name is one config_dropins_order() looks at: "*.conf", not hidden. */
bool config_dropin_name_ok(const char *name);
