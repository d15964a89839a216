/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd apply`: one shot. For each controller: Get Features 0x0C
 * (remember), Set Features 0x0C, Get Features again (verify), report. A
 * failing controller does not stop the others; the exit status says whether
 * any failed. apsta = 0 is reported as "not supported", not as an error.
 */

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apply.h"
#include "apstd-ids.h"
#include "cli.h"
#include "verbs.h"
#include "config-build.h"
#include "controller.h"
#include "ctrljob.h"
#include "log.h"
#include "sysfs.h"

static void help(void) {
        printf("Usage: nvme-apstd apply [OPTIONS] [nvmeX...]\n\n"
               "Program the planned APST table into each controller once, verify it, and exit.\n\n"
               "  -c --config FILE   configuration file (default: %s/nvme-apstd.conf)\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "Exit status: 0 if every controller was programmed (or needs nothing), 1 otherwise.\n",
               SYSCONFDIR);
}

/* The drive did not answer an admin command within @secs: say so, name it. Its table is as found,
 * unless the command it holds is the Set Features, which the drive may still carry out. */
static int report_unresponsive(const char *name, unsigned secs) {
        char s[16];

        (void) snprintf(s, sizeof s, "%u", secs);
        log_event(LOG_ERR, -ETIMEDOUT, MSGID_CTRL_UNRESPONSIVE,
                  LOG_FIELDS({ "NVME_CTRL", name }, { "APST_REASON", "apply" }, { "NVME_DEADLINE_SEC", s }),
                  "%s: no answer to an admin command for %u s; giving up on the controller.", name, secs);
        printf("%s: FAILED (no answer to an admin command within %u s: the controller is unresponsive; "
               "giving up on it)\n", name, secs);
        return -ETIMEDOUT;
}

/* One line on stdout per controller; the journal entries are the engine's. */
static int apply_one(const ControllerContext *ctx, const SysCtrl *sys) {
        _cleanup_(ctrljob_freep) CtrlJob *j = NULL;
        char why[160], desc[1024];
        ControllerOutcome o;
        Controller c;
        const ApplyResult *res = &o.apply;
        int r;

        controller_init(&c, sys->name);
        /* in a thread of its own: a drive that does not answer is given up on after the deadline */
        r = ctrljob_new(CTRL_JOB_SYNC, &c, ctx, "apply", NULL, &j);
        if (r >= 0)
                r = ctrljob_run(j, (uint64_t) ctx->config->daemon.unresponsive_after_sec * 1000000u);
        if (r == -ETIMEDOUT) {
                TAKE_PTR(j);   /* its thread's until the kernel ends the command */
                return report_unresponsive(sys->name, ctx->config->daemon.unresponsive_after_sec);
        }
        if (r < 0) {
                printf("%s: FAILED (%s)\n", c.name, strerror(-r));
                return r;
        }
        c = j->controller;
        c.plan.section = config_section_name(ctx->config, j->controller.plan.section);
        o = j->outcome;
        r = j->r;
        switch (o.result) {
        case CONTROLLER_PROGRAMMED:
                apst_describe(&c.plan.plan.table, &c.id, desc, sizeof desc);
                printf("%s: programmed and verified, %s policy: %s\n", c.name,
                       apst_policy_to_string(c.plan.params.policy), desc);
                return 0;
        case CONTROLLER_LEFT_ALONE:
                if (!c.id.model[0] && c.plan.verdict == DEVICE_NOT_PCIE)
                        printf("%s: skipped (transport %s is not PCIe)\n", c.name, c.sys.transport);
                else if (c.plan.verdict == DEVICE_UNSUPPORTED)
                        printf("%s: APST not supported by the controller (apsta = 0); nothing written\n", c.name);
                else
                        printf("%s: left alone (%s)\n", c.name, device_verdict_reason(c.plan.verdict));
                return 0;
        case CONTROLLER_NOT_LIVE:
                printf("%s: FAILED (controller is %s, not live)\n", c.name, c.sys.state);
                return -EAGAIN;
        case CONTROLLER_GONE:
                printf("%s: FAILED (gone: %s)\n", c.name, strerror(-o.error));
                return o.error;
        case CONTROLLER_FAILED:
                break;
        case CONTROLLER_PLANNED:   /* not in CONTROLLER_MODE_APPLY */
        case CONTROLLER_RESTORED:
        case _CONTROLLER_RESULT_MAX:
        case _CONTROLLER_RESULT_INVALID:
                return r < 0 ? r : -EINVAL;
        }
        switch (o.failed_step) {
        case CONTROLLER_STEP_OPEN:
                printf("%s: FAILED (cannot open %s/%s: %s)\n", c.name, ctx->dev_dir, c.name, strerror(-o.error));
                break;
        case CONTROLLER_STEP_IDENTIFY:
                printf("%s: FAILED (Identify Controller: %s)\n", c.name,
                       apply_error_to_string(o.error, o.nvme_status, why, sizeof why));
                break;
        case CONTROLLER_STEP_WRITE:
                apply_error_to_string(r == -EBADMSG ? -EBADMSG : res->error, res->nvme_status, why, sizeof why);
                printf("%s: FAILED (%s: %s)%s\n", c.name, apply_step_to_string(res->failed_step),
                       r == -EBADMSG ? "read-back differs from what was written" : why,
                       res->failed_step != APPLY_STEP_VERIFY ? "; table unchanged"
                       : !res->put_back                      ? "; could NOT put back the previous table"
                       : res->dirty                          ? "; previous table written back, but not verified"
                                                             : "; previous table put back");
                break;
        case CONTROLLER_STEP_PLAN:
        case CONTROLLER_STEP_NONE:
        case _CONTROLLER_STEP_MAX:
        case _CONTROLLER_STEP_INVALID:
                printf("%s: FAILED (cannot plan: %s)\n", c.name, strerror(-o.error));
                break;
        }
        return r;
}

/* Return: 1 to go on, 0 after --help or --version, -EINVAL on bad usage. */
static int parse_argv(int argc, char *argv[], const char **ret_config_path) {
        static const struct option options[] = {
                CLI_CONFIG_OPTION,
                CLI_COMMON_OPTIONS,
                {},
        };
        int c;

        optind = 0;
        c = cli_getopt_config(argc, argv, "c:h", options, help, ret_config_path);
        if (c >= 0)
                return -EINVAL;        /* apply has no option of its own */
        return c == CLI_GETOPT_EXIT ? 0 : 1;
}

int verb_apply(int argc, char *argv[]) {
        CliSelection sel = {};
        const char *config_path = NULL;
        SysPlatform plat;
        int r, failed = 0;
        Config cfg;
        char state_dir[4096];
        ControllerContext ctx;

        r = parse_argv(argc, argv, &config_path);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        r = cli_load_config(config_path, &cfg);
        if (r < 0)
                return 1;
        sysfs_read_platform(arg_sysfs_root, &plat);
        ctx = cli_controller_context(CONTROLLER_MODE_APPLY, &cfg, &plat, state_dir, sizeof state_dir);
        r = cli_select_controllers(argv + optind, (size_t) (argc - optind), &sel);
        if (r < 0) {
                config_done(&cfg);
                return 1;
        }
        for (size_t i = 0; i < sel.n_unknown; i++)
                printf("%s: FAILED (no such controller)\n", sel.unknown[i]);
        failed = (int) sel.n_unknown;
        if (sel.n_present == 0 && optind == argc)
                printf("No NVMe controllers found.\n");
        for (size_t k = 0; k < sel.n; k++)
                if (apply_one(&ctx, &sel.ctrls[k]) < 0)
                        failed++;
        cli_selection_done(&sel);
        config_done(&cfg);
        return failed ? 1 : 0;
}
