/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd config`: the merged configuration with the file and line of every key, then the
 * settings each controller present gets in the situation now (systemd-analyze cat-config, plus
 * the origins). `config --check [FILE...]`: every error, nothing else, exit 0 or 1; no daemon, no
 * drive touched.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config-build.h"
#include "config-file.h"
#include "json-out.h"
#include "log.h"
#include "power.h"
#include "sysfs.h"
#include "verbs.h"

static void help(void) {
        printf("nvme-apstd config [OPTIONS]\n"
               "nvme-apstd config --check [FILE...]\n\n"
               "Show the configuration in force: every key with the file and line that set it (the main file,\n"
               "then the drop-ins of nvme-apstd.conf(5)), then what each controller present gets now.\n"
               "With --check, report every error (file, line, section and key) and exit 1 if there is any.\n\n"
               "  -c --config FILE     configuration file (default: %s/nvme-apstd.conf); its drop-ins are\n"
               "                       FILE.d/*.conf\n"
               "     --root DIR        read the configuration under DIR (an image, a container)\n"
               "     --check           validate; FILE... each checked on its own, else the whole configuration\n"
               "  -j --json            print one JSON object\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n",
               SYSCONFDIR);
}

typedef struct ConfigArgs {
        const char *config_path;
        bool json, check;
} ConfigArgs;

/* Return: 1 to go on, 0 to exit 0 (--help), 2 (bad usage). */
static int parse_argv(int argc, char *argv[], ConfigArgs *a) {
        enum { ARG_ROOT = _CLI_ARG_FIRST_PRIVATE, ARG_CHECK };
        static const struct option options[] = {
                CLI_CONFIG_OPTION,
                { "json", no_argument, NULL, 'j' },
                { "root", required_argument, NULL, ARG_ROOT },
                { "check", no_argument, NULL, ARG_CHECK },
                CLI_COMMON_OPTIONS,
                {},
        };
        int c;

        optind = 0;
        while ((c = cli_getopt_config(argc, argv, "c:jh", options, help, &a->config_path)) >= 0)
                switch (c) {
                case 'j':
                        a->json = true;
                        break;
                case ARG_ROOT:
                        arg_config_root = optarg;
                        break;
                case ARG_CHECK:
                        a->check = true;
                        break;
                default:
                        return 2;
                }
        if (c == CLI_GETOPT_EXIT)
                return 0;
        if (!a->check && optind < argc) {
                log_error("config: FILE arguments are for --check.");
                return 2;
        }
        return 1;
}

/* The whole configuration: the main file (the default, or --config) and its drop-ins, under --root. */
static int load(const ConfigArgs *a, Config *ret, char **ret_error) {
        char def[4096];
        bool missing_ok;
        const char *path = cli_config_path(a->config_path, def, sizeof def, &missing_ok);

        return config_load_all(&(ConfigLoad) { .root = arg_config_root, .path = path, .missing_ok = missing_ok,
                                               .system_dropins = missing_ok }, ret, ret_error);
}

static int check(const ConfigArgs *a, int n, char **files) {
        bool bad = false;

        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *text = NULL, *err = NULL;
                Config c;
                int r;

                r = config_read_text(files[i], &text, &err);
                if (r >= 0)
                        r = config_parse_string(text, files[i], &c, &err);
                if (r < 0) {
                        (void) cli_log_config_errors(r, err, files[i]);
                        bad = true;
                } else
                        config_done(&c);
        }
        if (n == 0) {
                _cleanup_free_ char *err = NULL;
                Config c;
                int r = load(a, &c, &err);

                if (r < 0) {
                        (void) cli_log_config_errors(r, err, a->config_path ?: "configuration");
                        bad = true;
                } else
                        config_done(&c);
        }
        return bad ? 1 : 0;
}

/* Each section's keys, sections in the order first set, with "# FILE:LINE". */
static void print_origins(const Config *c) {
        for (size_t i = 0; i < c->n_files; i++)
                printf("%s %s\n", i == 0 ? "# Read, in this order:" : "#                     ", c->files[i]);
        for (size_t i = 0; i < c->n_origins; i++) {
                const ConfigOrigin *o = &c->origins[i];
                bool first = true;

                for (size_t j = 0; j < i && first; j++)
                        first = strcmp(c->origins[j].section, o->section) != 0;
                if (!first)
                        continue;
                printf("\n[%s]\n", o->section);
                for (size_t j = i; j < c->n_origins; j++)
                        if (strcmp(c->origins[j].section, o->section) == 0)
                                printf("%s = %s    # %s:%u\n", c->origins[j].key, c->origins[j].value,
                                       c->files[c->origins[j].file], c->origins[j].line);
        }
}

static struct json_object *origins_json(const Config *c) {
        struct json_object *files = json_object_new_array(), *keys = json_object_new_array(), *top;

        for (size_t i = 0; i < c->n_files; i++)
                (void) json_object_array_add(files, json_object_new_string(c->files[i]));
        for (size_t i = 0; i < c->n_origins; i++) {
                const ConfigOrigin *o = &c->origins[i];
                struct json_object *k = json_object_new_object();

                (void) json_object_object_add(k, "section", json_object_new_string(o->section));
                (void) json_object_object_add(k, "key", json_object_new_string(o->key));
                (void) json_object_object_add(k, "value", json_object_new_string(o->value));
                (void) json_object_object_add(k, "file", json_object_new_string(c->files[o->file]));
                (void) json_object_object_add(k, "line", json_object_new_int64(o->line));
                (void) json_object_array_add(keys, k);
        }
        top = json_object_new_object();
        (void) json_object_object_add(top, "files", files);
        (void) json_object_object_add(top, "keys", keys);
        return top;
}

/* What one controller gets in the situation now: config_resolve() on the situated configuration. */
static struct json_object *controller_json(const Config *now, const SysCtrl *s) {
        DeviceIdent ident = { .name = s->name, .model = s->model, .serial = s->serial, .firmware = s->firmware,
                              .pci_vendor = s->pci_vendor, .pci_device = s->pci_device };
        struct json_object *o = json_object_new_object();
        const char *section = NULL;
        ApstParams p;
        bool manage = config_resolve(now, &ident, &p, &section);

        (void) json_object_object_add(o, "controller", json_object_new_string(s->name));
        (void) json_object_object_add(o, "model", json_object_new_string(s->model));
        (void) json_object_object_add(o, "firmware", json_object_new_string(s->firmware));
        (void) json_object_object_add(o, "section", json_out_string_or_null(section));
        (void) json_object_object_add(o, "enable", json_object_new_boolean(manage));
        (void) json_object_object_add(o, "policy", json_object_new_string(apst_policy_to_string(p.policy)));
        (void) json_object_object_add(o, "max_latency_us", json_object_new_int64(p.max_latency_us));
        (void) json_object_object_add(o, "primary_timeout_ms", json_object_new_int64(p.primary_timeout_ms));
        (void) json_object_object_add(o, "secondary_timeout_ms", json_object_new_int64(p.secondary_timeout_ms));
        (void) json_object_object_add(o, "primary_latency_tol_us", json_object_new_int64(p.primary_latency_tol_us));
        (void) json_object_object_add(o, "secondary_latency_tol_us",
                                      json_object_new_int64(p.secondary_latency_tol_us));
        (void) json_object_object_add(o, "stall_budget_pct_x100", json_object_new_int64(p.stall_budget_pct_x100));
        (void) json_object_object_add(o, "use_calibration", json_object_new_boolean(p.use_calibration));
        (void) json_object_object_add(o, "force", json_object_new_boolean(p.force));
        return o;
}

static void controller_print(struct json_object *o) {
        struct json_object *v;

        printf("\n# %s (%s, firmware %s):", json_object_get_string(json_object_object_get(o, "controller")),
               json_object_get_string(json_object_object_get(o, "model")),
               json_object_get_string(json_object_object_get(o, "firmware")));
        v = json_object_object_get(o, "section");
        printf(" %s%s%s\n", v ? "[device " : "[apst] only", v ? json_object_get_string(v) : "", v ? "]" : "");
        json_object_object_foreach(o, key, val) {
                if (strcmp(key, "controller") == 0 || strcmp(key, "model") == 0 || strcmp(key, "firmware") == 0 ||
                    strcmp(key, "section") == 0)
                        continue;
                printf("#   %s = %s\n", key, json_object_get_string(val));
        }
}

static int show(const ConfigArgs *a) {
        _cleanup_(json_object_putp) struct json_object *top = NULL, *ctrls = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ SysCtrl *list = NULL;
        Config c, now;
        Situation sit;
        char words[96];
        size_t n = 0;
        int r;

        r = load(a, &c, &err);
        if (r < 0)
                return cli_log_config_errors(r, err, a->config_path ?: "configuration"), 1;
        situation_read_now(arg_sysfs_root, &sit);
        situation_describe(&sit, words, sizeof words);
        r = config_situate(&c, &sit, &now);
        if (r < 0) {
                config_done(&c);
                return log_error_errno(r, "Out of memory."), 1;
        }
        if (sysfs_list_controllers(arg_sysfs_root, &list, &n) < 0)
                n = 0;          /* no controller (or no sysfs under --root): the merged file only */
        ctrls = json_object_new_array();
        for (size_t i = 0; i < n; i++)
                (void) json_object_array_add(ctrls, controller_json(&now, &list[i]));
        if (a->json) {
                top = origins_json(&c);
                (void) json_object_object_add(top, "situation", json_object_new_string(words));
                (void) json_object_object_add(top, "controllers", json_object_get(ctrls));
                r = json_out_print(stdout, top, JSON_OUT_FLAGS | JSON_C_TO_STRING_SPACED);
        } else {
                print_origins(&c);
                if (n > 0)
                        printf("\n# Resolved for the situation now (%s):\n", words);
                for (size_t i = 0; i < n; i++)
                        controller_print(json_object_array_get_idx(ctrls, i));
                r = 0;
        }
        config_done(&now);
        config_done(&c);
        return r < 0 ? 1 : 0;
}

int verb_config(int argc, char *argv[]) {
        ConfigArgs a = {};
        int r;

        r = parse_argv(argc, argv, &a);
        if (r != 1)
                return r;
        if (a.check)
                return check(&a, argc - optind, argv + optind);
        return show(&a);
}
