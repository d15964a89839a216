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
#include "config-build.h"
#include "log.h"

static void help(void) {
        printf("Usage: nvme-apstd apply [OPTIONS] [nvmeX...]\n\n"
               "Program the planned APST table into each controller once, verify it, and exit.\n\n"
               "  -c --config FILE   configuration file (default: %s/nvme-apstd.conf)\n"
               "  -h --help          show this help\n"
               "     --version       show the version\n\n"
               "Exit status: 0 if every controller was programmed (or needs nothing), 1 otherwise.\n",
               SYSCONFDIR);
}

static int apply_one(const Config *cfg, const SysPlatform *plat, const SysCtrl *sys) {
        _cleanup_(ctrl_freep) Ctrl *ctrl = NULL;
        char why[160], desc[1024];
        uint16_t status = 0;
        DevicePlan dp;
        ApplyResult res;
        IdCtrl id;
        int r;

        if (strcmp(sys->transport, "pcie") != 0) {
                log_event(LOG_INFO, 0, MSGID_CTRL_SKIPPED,
                          LOG_FIELDS({ "NVME_CTRL", sys->name }, { "NVME_MODEL", sys->model },
                                     { "NVME_FIRMWARE", sys->firmware }, { "NVME_TRANSPORT", sys->transport }),
                          "%s: skipped: transport %s is not PCIe.", sys->name, sys->transport);
                printf("%s: skipped (transport %s is not PCIe)\n", sys->name, sys->transport);
                return 0;
        }
        if (strcmp(sys->state, "live") != 0) {
                /* as the daemon does: a resetting or dead controller gets no admin command */
                log_error("%s: controller is %s, not live; not programmed.", sys->name, sys->state);
                printf("%s: FAILED (controller is %s, not live)\n", sys->name, sys->state);
                return -EAGAIN;
        }
        r = ctrl_open(arg_dev_dir, sys->name, &ctrl);
        if (r < 0) {
                log_error_errno(r, "%s: cannot open %s/%s: %m", sys->name, arg_dev_dir, sys->name);
                printf("%s: FAILED (cannot open %s/%s: %s)\n", sys->name, arg_dev_dir, sys->name, strerror(-r));
                return r;
        }
        r = ctrl_identify(ctrl, &id, NULL, &status);
        if (r < 0) {
                char st[16];

                apply_error_to_string(r, status, why, sizeof why);
                (void) snprintf(st, sizeof st, "0x%04x", status);
                log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                          LOG_FIELDS({ "NVME_CTRL", sys->name }, { "NVME_MODEL", sys->model },
                                     { "NVME_FIRMWARE", sys->firmware },
                                     { "NVME_STATUS", r == -EREMOTEIO ? st : NULL }),
                          "%s: Identify Controller failed: %s.", sys->name, why);
                printf("%s: FAILED (Identify Controller: %s)\n", sys->name, why);
                return r;
        }
        r = device_plan(cfg, plat, sys->name, sys, &id, &dp);
        if (r < 0) {
                log_error_errno(r, "%s: cannot plan: %m", sys->name);
                printf("%s: FAILED (cannot plan: %s)\n", sys->name, strerror(-r));
                return r;
        }
        switch (dp.verdict) {
        case DEVICE_UNSUPPORTED:
                log_event(LOG_INFO, 0, MSGID_APST_UNSUPPORTED,
                          LOG_FIELDS({ "NVME_CTRL", sys->name }, { "NVME_MODEL", id.model },
                                     { "NVME_FIRMWARE", id.firmware }),
                          "%s: %s does not support APST (apsta = 0); nothing to program.", sys->name, id.model);
                printf("%s: APST not supported by the controller (apsta = 0); nothing written\n", sys->name);
                return 0;
        case DEVICE_DISABLED:
        case DEVICE_NOT_PCIE:
                log_event(LOG_INFO, 0, MSGID_CTRL_SKIPPED,
                          LOG_FIELDS({ "NVME_CTRL", sys->name }, { "NVME_MODEL", id.model },
                                     { "NVME_FIRMWARE", id.firmware }),
                          "%s: left alone: %s.", sys->name, device_verdict_reason(dp.verdict));
                printf("%s: left alone (%s)\n", sys->name, device_verdict_reason(dp.verdict));
                return 0;
        case DEVICE_MANAGE:
                break;
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                return -EINVAL;
        }

        ApplyTarget t = {
                .name = sys->name,
                .model = id.model,
                .firmware = id.firmware,
                .policy = apst_policy_to_string(dp.params.policy),
                .reason = "apply",
        };
        r = apply_table(ctrl, &t, &dp.plan.table, dp.plan.worst_wake_us, false, &res);
        if (r < 0) {
                apply_error_to_string(r == -EBADMSG ? -EBADMSG : res.error, res.nvme_status, why, sizeof why);
                printf("%s: FAILED (%s: %s)%s\n", sys->name, apply_step_to_string(res.failed_step),
                       r == -EBADMSG ? "read-back differs from what was written" : why,
                       res.failed_step != APPLY_STEP_VERIFY ? "; table unchanged"
                       : !res.put_back                      ? "; could NOT put back the previous table"
                       : res.dirty                          ? "; previous table written back, but not verified"
                                                            : "; previous table put back");
                return r;
        }
        apst_describe(&dp.plan.table, &id, desc, sizeof desc);
        printf("%s: programmed and verified, %s policy: %s\n", sys->name, t.policy, desc);
        return 0;
}

int verb_apply(int argc, char *argv[]) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_free_ SysCtrl *list = NULL;
        const char *config_path = NULL;
        SysPlatform plat;
        size_t n = 0;
        int c, r, failed = 0;
        Config cfg;

        optind = 0;
        while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0) {
                switch (cli_common_option(c, optarg, help)) {
                case CLI_OPTION_EXIT:
                        return 0;
                case CLI_OPTION_HANDLED:
                        continue;
                case CLI_OPTION_NOT_MINE:
                        break;
                }
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                default:
                        return 2;
                }
        }

        r = cli_load_config(config_path, &cfg);
        if (r < 0)
                return 1;
        sysfs_read_platform(arg_sysfs_root, &plat);
        r = sysfs_list_controllers(arg_sysfs_root, &list, &n);
        if (r < 0) {
                log_error_errno(r, "Cannot list %s/class/nvme: %m", arg_sysfs_root);
                config_done(&cfg);
                return 1;
        }
        for (int i = optind; i < argc; i++) {
                bool found = false;
                for (size_t k = 0; k < n; k++)
                        found = found || strcmp(list[k].name, argv[i]) == 0;
                if (!found) {
                        log_error("%s: no such NVMe controller in %s/class/nvme.", argv[i], arg_sysfs_root);
                        printf("%s: FAILED (no such controller)\n", argv[i]);
                        failed++;
                }
        }
        if (n == 0 && optind == argc)
                printf("No NVMe controllers found.\n");
        for (size_t k = 0; k < n; k++) {
                bool selected = optind == argc;
                for (int i = optind; i < argc; i++)
                        selected = selected || strcmp(argv[i], list[k].name) == 0;
                if (!selected)
                        continue;
                if (apply_one(&cfg, &plat, &list[k]) < 0)
                        failed++;
        }
        config_done(&cfg);
        return failed ? 1 : 0;
}
