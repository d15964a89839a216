/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Helpers shared by the subcommands (src/cmd-*.c, src/main.c). */

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

/* Default configuration file: $CONFIGURATION_DIRECTORY/nvme-apstd.conf, else SYSCONFDIR/nvme-apstd.conf. */
const char *cli_default_config_path(char *buf, size_t n);

/**
 * cli_load_config() - load @path, or the default file when @path is NULL
 *
 * A missing default file means the built-in defaults; a missing explicit file,
 * or any error in either, is printed (naming file, section and key) and returned.
 */
int cli_load_config(const char *path, Config *ret);

/* Write @s as a JSON string literal (with quotes). */
void json_string(FILE *f, const char *s);

/* Where the daemon and apply look for sysfs and device nodes (overridable for tests). */
extern const char *arg_sysfs_root;
extern const char *arg_dev_dir;
extern const char *arg_proc_root;

int verb_plan(int argc, char *argv[]);
int verb_apply(int argc, char *argv[]);
int verb_run(int argc, char *argv[]);
