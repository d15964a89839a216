/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared subcommand helpers; see cli.h. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-file.h"
#include "cli.h"
#include "config-build.h"
#include "log.h"
#include "power.h"
#include "state-file.h"
#include "sysfs.h"

const char *arg_sysfs_root = "/sys";
const char *arg_dev_dir = "/dev";
const char *arg_proc_root = "/proc";
const char *arg_state_dir = NULL;

const char *cli_state_dir(char *buf, size_t n) {
        if (arg_state_dir) {
                (void) snprintf(buf, n, "%s", arg_state_dir);
                return buf;
        }
        return state_directory(buf, n);
}

ControllerContext cli_controller_context(ControllerMode mode, const Config *cfg, const SysPlatform *plat,
                                         char *state_dir, size_t n) {
        return (ControllerContext) {
                .mode = mode,
                .sysfs_root = arg_sysfs_root,
                .dev_dir = arg_dev_dir,
                .state_dir = cli_state_dir(state_dir, n),
                .config = cfg,
                .platform = plat,
        };
}

const char *cli_default_config_path(char *buf, size_t n) {
        const char *d = getenv("CONFIGURATION_DIRECTORY");

        /* systemd may pass several directories separated by ':'; ours is the first */
        if (d && *d) {
                size_t l = strcspn(d, ":");
                (void) snprintf(buf, n, "%.*s/nvme-apstd.conf", (int) l, d);
        } else
                (void) snprintf(buf, n, "%s/nvme-apstd.conf", SYSCONFDIR);
        return buf;
}

const char *cli_config_path(const char *given, char *buf, size_t n, bool *ret_missing_ok) {
        *ret_missing_ok = !given;
        return given ?: cli_default_config_path(buf, n);
}

const char *arg_config_root = NULL;

int cli_log_config_errors(int error, const char *errors, const char *path) {
        for (const char *e = errors; e && *e; e += strcspn(e, "\n"), e += *e == '\n')
                (void) log_error_errno(error, "%.*s", (int) strcspn(e, "\n"), e);
        return errors ? error : log_error_errno(error, "%s: %m", path);
}

int cli_load_config(const char *given, Config *ret) {
        _cleanup_free_ char *err = NULL;
        char def[4096];
        bool missing_ok;
        const char *path = cli_config_path(given, def, sizeof def, &missing_ok);
        Config loaded;
        Situation now;
        char words[96];
        int r;

        if (missing_ok && access(path, F_OK) < 0 && errno == ENOENT)
                log_debug("%s does not exist, using the built-in defaults.", path);
        r = config_load_all(&(ConfigLoad) { .root = arg_config_root, .path = path, .missing_ok = missing_ok,
                                            .system_dropins = missing_ok }, &loaded, &err);
        if (r < 0)
                return cli_log_config_errors(r, err, path);
        /* what the daemon would use now: the sections for this power source and profile */
        situation_read_now(arg_sysfs_root, &now);
        situation_describe(&now, words, sizeof words);
        log_debug("Configuration resolved for the situation now: %s.", words);
        r = config_situate(&loaded, &now, ret);
        config_done(&loaded);
        if (r < 0)
                return log_error_errno(r, "Out of memory.");
        return 0;
}

int cli_getopt(int argc, char *argv[], const char *shortopts, const struct option *options, void (*help)(void)) {
        for (;;) {
                int c = getopt_long(argc, argv, shortopts, options, NULL);

                switch (c) {
                case 'h':
                        help();
                        return CLI_GETOPT_EXIT;
                case CLI_ARG_VERSION:
                        printf("nvme-apstd %s\n", PACKAGE_VERSION);
                        return CLI_GETOPT_EXIT;
                case CLI_ARG_SYSFS_ROOT:
                        arg_sysfs_root = optarg;
                        break;
                case CLI_ARG_DEV_DIR:
                        arg_dev_dir = optarg;
                        break;
                case CLI_ARG_PROC_ROOT:
                        arg_proc_root = optarg;
                        break;
                case CLI_ARG_STATE_DIR:
                        arg_state_dir = optarg;
                        break;
                default:
                        return c;
                }
        }
}

int cli_getopt_config(int argc, char *argv[], const char *shortopts, const struct option *options,
                      void (*help)(void), const char **ret_config_path) {
        int c;

        while ((c = cli_getopt(argc, argv, shortopts, options, help)) == 'c')
                *ret_config_path = optarg;
        return c;
}

static int hex4(const char *s, uint16_t *ret) {
        unsigned v = 0;

        for (unsigned i = 0; i < 4; i++) {
                const char *digits = "0123456789abcdef", *q;
                char c = s[i];
                if (c >= 'A' && c <= 'F')
                        c = (char) (c - 'A' + 'a');
                if (c == 0 || !(q = strchr(digits, c)))
                        return -EINVAL;
                v = v * 16 + (unsigned) (q - digits);
        }
        *ret = (uint16_t) v;
        return 0;
}

int cli_parse_pci_id(const char *s, uint16_t *ret_vendor, uint16_t *ret_device) {
        uint16_t v, d;

        if (strlen(s) != 9 || s[4] != ':' || hex4(s, &v) < 0 || hex4(s + 5, &d) < 0)
                return -EINVAL;
        *ret_vendor = v;
        *ret_device = d;
        return 0;
}

static bool name_given(char **names, size_t n_names, const char *name) {
        for (size_t i = 0; i < n_names; i++)
                if (strcmp(names[i], name) == 0)
                        return true;
        return false;
}

int cli_select_controllers(char **names, size_t n_names, CliSelection *ret) {
        _cleanup_free_ SysCtrl *list = NULL;
        _cleanup_free_ char **unknown = NULL;
        size_t n = 0, k = 0, u = 0;
        int r;

        r = sysfs_list_controllers(arg_sysfs_root, &list, &n);
        if (r < 0)
                return log_error_errno(r, "Cannot list %s/class/nvme: %m", arg_sysfs_root);
        unknown = calloc(n_names + 1, sizeof *unknown);
        if (!unknown)
                return log_error_errno(-ENOMEM, "Out of memory.");
        for (size_t i = 0; i < n_names; i++) {
                bool found = false;
                for (size_t j = 0; j < n; j++)
                        found = found || strcmp(list[j].name, names[i]) == 0;
                if (!found) {
                        log_error("%s: no such NVMe controller in %s/class/nvme.", names[i], arg_sysfs_root);
                        unknown[u++] = names[i];
                }
        }
        for (size_t j = 0; j < n; j++)
                if (n_names == 0 || name_given(names, n_names, list[j].name))
                        list[k++] = list[j];
        *ret = (CliSelection) {
                .ctrls = TAKE_PTR(list),
                .n = k,
                .n_present = n,
                .unknown = TAKE_PTR(unknown),
                .n_unknown = u,
        };
        return 0;
}

void cli_selection_done(CliSelection *s) {
        free(s->ctrls);
        free(s->unknown);
        *s = (CliSelection) {};
}
