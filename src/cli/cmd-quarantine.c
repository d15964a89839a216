/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd quarantine`: the power states drives failed in (doc/quarantine.md). Lists the
 * files of STATE_DIR/quarantine/, removes those of the models named (--clear), or prints a
 * configuration drop-in per quarantine that carries it to other machines (--drop-in).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "log.h"
#include "macro.h"
#include "quarantine-store.h"
#include "verbs.h"

typedef enum QuarantineAction {
        ACTION_LIST,
        ACTION_CLEAR,
        ACTION_DROPIN,
} QuarantineAction;

static void help(void) {
        printf("Usage: nvme-apstd quarantine [OPTIONS]\n"
               "       nvme-apstd quarantine --clear MODEL...\n\n"
               "List the power states drives failed in and that the daemon keeps out of their\n"
               "tables (per model and firmware), clear them, or print a configuration drop-in\n"
               "that carries them to other machines.\n\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n"
               "     --clear         remove the quarantine of each MODEL named (every firmware); then\n"
               "                     `systemctl reload nvme-apstd` plans the states again\n"
               "     --drop-in       print a drop-in for /etc/nvme-apstd.conf.d/ per quarantine\n"
               "     --state-dir DIR the state directory (default $STATE_DIRECTORY, else /var/lib/nvme-apstd)\n");
}

static int parse_argv(int argc, char *argv[], QuarantineAction *ret) {
        enum { ARG_CLEAR = _CLI_ARG_FIRST_PRIVATE, ARG_DROPIN };
        static const struct option options[] = {
                { "clear", no_argument, NULL, ARG_CLEAR },
                { "drop-in", no_argument, NULL, ARG_DROPIN },
                CLI_COMMON_OPTIONS,
                {},
        };
        int c;

        optind = 0;
        while ((c = cli_getopt(argc, argv, "h", options, help)) >= 0) {
                switch (c) {
                case ARG_CLEAR:
                        *ret = ACTION_CLEAR;
                        break;
                case ARG_DROPIN:
                        *ret = ACTION_DROPIN;
                        break;
                default:
                        return 2;
                }
        }
        return c == CLI_GETOPT_EXIT ? 0 : 1;
}

static void print_one(const Quarantine *q) {
        char what[32];

        quarantine_describe(q->allow_below, what, sizeof what);
        printf("%s (firmware %s, vendor %04x): quarantined: %s; %u failure(s)\n", q->model, q->firmware, q->vendor,
               what, q->strikes);
        for (size_t i = 0; i < q->n_failures; i++) {
                const QuarantineFailure *f = &q->failures[i];
                char when[32] = "?";
                time_t t = (time_t) f->realtime_sec;
                struct tm tm;

                if (gmtime_r(&t, &tm))
                        (void) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
                printf("  %s: failed in ps%u (%s) after ", when, f->ps, nvme_failure_kind_to_string(f->kind));
                if (f->idle_ms == UINT64_MAX)
                        printf("an idle time not measured\n");
                else
                        printf("%" PRIu64 " ms idle\n", f->idle_ms);
        }
}

/* Other firmware of the same model: old evidence, not applied (a firmware update re-opens the question). */
static void print_other_firmware(const Quarantine *v, size_t n, size_t i) {
        for (size_t k = 0; k < n; k++)
                if (k != i && strcmp(v[k].model, v[i].model) == 0)
                        printf("  (firmware %s of this model: %s failure(s) there too, not applied to this one)\n",
                               v[k].firmware, v[k].strikes ? "with" : "no");
}

static int do_list(const Quarantine *v, size_t n) {
        if (n == 0) {
                printf("No power state is quarantined.\n");
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                print_one(&v[i]);
                print_other_firmware(v, n, i);
        }
        printf("Undo with: nvme-apstd quarantine --clear MODEL (see doc/quarantine.md).\n");
        return 0;
}

static int do_dropin(const Quarantine *v, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *name = NULL, *text = NULL;

                if (quarantine_dropin(&v[i], &name, &text) < 0)
                        continue;
                printf("%s# /etc/nvme-apstd.conf.d/%s\n%s", i ? "\n" : "", name, text);
        }
        return 0;
}

static int do_clear(const char *state_dir, const Quarantine *v, size_t n, char **models, size_t n_models) {
        int ret = 0;

        for (size_t m = 0; m < n_models; m++) {
                bool found = false;

                for (size_t i = 0; i < n; i++) {
                        int r;

                        if (strcmp(v[i].model, models[m]) != 0)
                                continue;
                        found = true;
                        r = quarantine_remove(state_dir, v[i].model, v[i].firmware);
                        if (r < 0) {
                                log_error_errno(r, "Cannot remove the quarantine of %s firmware %s: %m", v[i].model,
                                                v[i].firmware);
                                ret = 1;
                        } else
                                printf("Cleared the quarantine of %s firmware %s.\n", v[i].model, v[i].firmware);
                }
                if (!found) {
                        log_error("No quarantine for model '%s'.", models[m]);
                        ret = 1;
                }
        }
        if (ret == 0)
                printf("`systemctl reload nvme-apstd` plans the states again.\n");
        return ret;
}

int verb_quarantine(int argc, char *argv[]) {
        _cleanup_free_ Quarantine *v = NULL;
        QuarantineAction action = ACTION_LIST;
        char dir[4096];
        const char *state_dir;
        size_t n = 0;
        int r;

        r = parse_argv(argc, argv, &action);
        if (r != 1)
                return r;
        if ((action == ACTION_CLEAR) != (optind < argc)) {
                log_error(action == ACTION_CLEAR ? "--clear needs the models to clear." :
                                                   "Arguments are models, with --clear only.");
                return 2;
        }
        state_dir = cli_state_dir(dir, sizeof dir);
        r = quarantine_list(state_dir, &v, &n);
        if (r < 0) {
                log_error_errno(r, "Cannot list %s/quarantine: %m", state_dir);
                return 1;
        }
        switch (action) {
        case ACTION_LIST:
                return do_list(v, n);
        case ACTION_DROPIN:
                return do_dropin(v, n);
        case ACTION_CLEAR:
                return do_clear(state_dir, v, n, argv + optind, (size_t) (argc - optind));
        }
        return 1;
}
