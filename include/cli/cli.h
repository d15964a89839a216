/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Helpers shared by the verbs (src/cli/cmd-*.c) and main() (src/cli/main.c), in src/cli/cli.c. */

#include <getopt.h>
#include <stdint.h>

#include "config.h"
#include "controller.h"
#include "sysinfo.h"

/* Default configuration file: $CONFIGURATION_DIRECTORY/nvme-apstd.conf, else SYSCONFDIR/nvme-apstd.conf. */
const char *cli_default_config_path(char *buf, size_t n);

/**
 * cli_config_path() - the configuration file a verb reads: @given (from --config), else the default
 * @ret_missing_ok: whether the file may be missing (the built-in defaults then): only the default may
 * Return: @given, or the default path written into @buf.
 */
const char *cli_config_path(const char *given, char *buf, size_t n, bool *ret_missing_ok);

/**
 * cli_load_config() - load @path, or the default file when @path is NULL
 *
 * A missing default file means the built-in defaults; a missing explicit file,
 * or any error in either, is printed (naming file, section and key) and returned.
 */
int cli_load_config(const char *path, Config *ret);

/* Print each line of @errors (config_load_all()'s), or "@path: strerror" when NULL. Return: @error. */
int cli_log_config_errors(int error, const char *errors, const char *path);
/* --root of plan and config: the configuration (main file and drop-ins) read under it; NULL = / */
extern const char *arg_config_root;

/* "8086:f1a5": exactly four hex digits, ':', four hex digits. Return 0 or -EINVAL. */
int cli_parse_pci_id(const char *s, uint16_t *ret_vendor, uint16_t *ret_device);


/* Where the verbs and the daemon look for sysfs, device nodes and /proc (overridable for tests):
 * with arg_state_dir, the only command-line globals; every other option is a verb's own. */
extern const char *arg_sysfs_root;
extern const char *arg_dev_dir;
extern const char *arg_proc_root;
/* Where measured wake costs are kept (calib.h); NULL: state_directory() (state-file.h). */
extern const char *arg_state_dir;
/* arg_state_dir, or the default ($STATE_DIRECTORY, else /var/lib/nvme-apstd) in @buf. */
const char *cli_state_dir(char *buf, size_t n);

/* The engine's context for a verb in @mode: the command line's roots, @cfg, @plat (may be NULL) and the
 * state directory (written into @state_dir, which must outlive the context). */
ControllerContext cli_controller_context(ControllerMode mode, const Config *cfg, const SysPlatform *plat,
                                         char *state_dir, size_t n);

/* The controllers a verb works on: every one in SYSFS/class/nvme, or those named on its command line. */
typedef struct CliSelection {
        SysCtrl *ctrls;            /* selected, in discovery order */
        size_t n;
        size_t n_present;          /* controllers in sysfs, selected or not */
        char **unknown;            /* names given that name no controller (pointers into argv) */
        size_t n_unknown;
} CliSelection;

/**
 * cli_select_controllers() - list SYSFS/class/nvme and keep the controllers in @names
 * @names, @n_names: controller names from the command line; none selects every controller
 * @ret: the selection; each unknown name is logged ("nvme9: no such NVMe controller in
 *       /sys/class/nvme.") and kept in @ret->unknown for the verb's own report
 * Return: 0, or negative errno when sysfs cannot be listed (logged).
 */
int cli_select_controllers(char **names, size_t n_names, CliSelection *ret);
void cli_selection_done(CliSelection *s);

/* Options every subcommand shares: --help, --version, and the hidden roots tests point
 * at fake trees. Put CLI_COMMON_OPTIONS in the option table and read the options
 * with cli_getopt(). */
enum {
        CLI_ARG_VERSION = 0x100,
        CLI_ARG_SYSFS_ROOT,
        CLI_ARG_DEV_DIR,
        CLI_ARG_PROC_ROOT,
        CLI_ARG_STATE_DIR,
        _CLI_ARG_FIRST_PRIVATE, /* a subcommand's own long-only options start here */
};
#define CLI_COMMON_OPTIONS                                                      \
        { "help", no_argument, NULL, 'h' },                                     \
        { "version", no_argument, NULL, CLI_ARG_VERSION },                      \
        { "sysfs-root", required_argument, NULL, CLI_ARG_SYSFS_ROOT },          \
        { "dev-dir", required_argument, NULL, CLI_ARG_DEV_DIR },                \
        { "proc-root", required_argument, NULL, CLI_ARG_PROC_ROOT },            \
        { "state-dir", required_argument, NULL, CLI_ARG_STATE_DIR }

/* -c --config FILE, spelled the same by every verb that reads the configuration (cli_getopt_config()). */
#define CLI_CONFIG_OPTION { "config", required_argument, NULL, 'c' }

/* cli_getopt()'s answer after --help or --version was printed: exit 0. */
#define CLI_GETOPT_EXIT (-2)

/**
 * cli_getopt() - getopt_long() that handles CLI_COMMON_OPTIONS itself
 *
 * Return: the next option that is the subcommand's own ('?' for an unknown
 * one, as getopt_long()), -1 at the end, or CLI_GETOPT_EXIT once --help
 * (through @help) or --version is printed. Set optind = 0 before the first call.
 */
int cli_getopt(int argc, char *argv[], const char *shortopts, const struct option *options, void (*help)(void));

/* cli_getopt() that also takes CLI_CONFIG_OPTION ('c' in @shortopts) into *@ret_config_path. */
int cli_getopt_config(int argc, char *argv[], const char *shortopts, const struct option *options,
                      void (*help)(void), const char **ret_config_path);
