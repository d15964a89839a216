/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd plan`: the dry run. Reads Identify data from the live
 * controllers (through ctrl.c) or from files nvme-cli wrote, and prints what
 * the daemon would program, in words or as JSON. Sends nothing but Identify.
 */

#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "apply.h"
#include "cli.h"
#include "config-build.h"
#include "cpupin.h"
#include "ctrl.h"
#include "device.h"
#include "log.h"

#define ID_FILE_MAX (1024u * 1024u) /* an nvme-cli JSON dump is ~10 KiB; refuse anything absurd */

typedef struct PlanEntry {
        char name[PATH_MAX];
        bool have_sys;
        SysCtrl sys;
        IdCtrl id;
        DevicePlan plan;
} PlanEntry;

static const char *parse_error_reason(int r) {
        switch (r) {
        case -ERANGE:
                return "npss is larger than 31 (or a field is out of range); the kernel rejects such a controller";
        case -EBADMSG:
                return "neither the 4096-byte binary of `nvme id-ctrl -b` nor the JSON of `nvme id-ctrl -o json` "
                       "(wrong size, truncated, or missing fields)";
        default:
                return strerror(-r);
        }
}

static int load_id_file(const char *path, IdCtrl *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;   /* set by cli_read_file() on success; 0 keeps clang-analyzer's -errno path quiet */
        int r;

        r = cli_read_file(path, ID_FILE_MAX, false, &buf, &len);
        if (r < 0)
                return log_error_errno(r, "%s: cannot read Identify data: %s", path,
                                       r == -EFBIG ? "file too large" : strerror(-r));
        r = idctrl_parse_any(buf, len, ret);
        if (r < 0)
                return log_error_errno(r, "%s: not usable Identify Controller data: %s.", path, parse_error_reason(r));
        return 0;
}

static void format_watts(uint32_t uw, char *buf, size_t n) {
        (void) snprintf(buf, n, "%u.%04u W", uw / 1000000, (uw % 1000000) / 100);
}

static void print_human(const PlanEntry *e) {
        const ApstPlan *p = &e->plan.plan;
        char desc[1024], q[64], w[32];

        printf("%s: %s (firmware %s", e->name, e->id.model, e->id.firmware[0] ? e->id.firmware : "not reported");
        if (e->have_sys && e->sys.pci_vendor)
                printf(", PCI %04x:%04x", e->sys.pci_vendor, e->sys.pci_device);
        printf(")\n");
        printf("  power states (npss %u, APST %s):\n", e->id.npss, e->id.apst_supported ? "supported" : "not supported");
        printf("    ps  max power    type             enlat µs     exlat µs\n");
        for (unsigned i = 0; i <= e->id.npss && i < IDCTRL_MAX_PS; i++) {
                const IdPsd *s = &e->id.psd[i];
                format_watts(s->max_power_uw, w, sizeof w);
                printf("    %2u  %-11s  %-15s  %10" PRIu32 "   %10" PRIu32 "\n", i, w,
                       s->non_operational ? "non-operational" : "operational", s->enlat_us, s->exlat_us);
        }
        switch (e->plan.verdict) {
        case DEVICE_MANAGE:
                apst_describe(&p->table, &e->id, desc, sizeof desc);
                device_quirks_to_string(p->quirks, q, sizeof q);
                printf("  policy %s, max latency %" PRIu32 " µs%s%s%s, quirks: %s%s\n",
                       apst_policy_to_string(e->plan.params.policy), e->plan.params.max_latency_us,
                       e->plan.section ? " (from [device " : "", e->plan.section ? e->plan.section : "",
                       e->plan.section ? "])" : "", q, p->quirks_overridden ? " (overridden by force = yes)" : "");
                printf("  APST: %s\n", desc);
                break;
        case DEVICE_UNSUPPORTED:
        case DEVICE_DISABLED:
        case DEVICE_NOT_PCIE:
                printf("  not programmed: %s\n", device_verdict_reason(e->plan.verdict));
                break;
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                break;
        }
}

static void print_json_entry(const PlanEntry *e) {
        const ApstPlan *p = &e->plan.plan;
        char desc[1024];
        bool manage = e->plan.verdict == DEVICE_MANAGE;

        printf("{\"name\": ");
        json_string(stdout, e->name);
        printf(", \"model\": ");
        json_string(stdout, e->id.model);
        printf(", \"firmware\": ");
        json_string(stdout, e->id.firmware);
        if (e->have_sys && e->sys.pci_vendor)
                printf(", \"pci\": \"%04x:%04x\"", e->sys.pci_vendor, e->sys.pci_device);
        printf(", \"npss\": %u, \"apsta\": %s", e->id.npss, e->id.apst_supported ? "true" : "false");
        printf(", \"verdict\": \"%s\", \"policy\": \"%s\", \"max_latency_us\": %" PRIu32,
               device_verdict_to_string(e->plan.verdict), apst_policy_to_string(e->plan.params.policy),
               e->plan.params.max_latency_us);
        printf(", \"section\": ");
        if (e->plan.section)
                json_string(stdout, e->plan.section);
        else
                printf("null");
        printf(", \"quirks\": [");
        if (manage && (p->quirks & APST_QUIRK_NO_APST))
                printf("\"no-apst\"%s", p->quirks & APST_QUIRK_NO_DEEPEST_PS ? ", " : "");
        if (manage && (p->quirks & APST_QUIRK_NO_DEEPEST_PS))
                printf("\"no-deepest-ps\"");
        printf("], \"quirks_overridden\": %s", manage && p->quirks_overridden ? "true" : "false");
        printf(", \"power_states\": [");
        for (unsigned i = 0; i <= e->id.npss && i < IDCTRL_MAX_PS; i++) {
                const IdPsd *s = &e->id.psd[i];
                printf("%s{\"ps\": %u, \"max_power_w\": %.4f, \"non_operational\": %s, \"enlat_us\": %" PRIu32
                       ", \"exlat_us\": %" PRIu32 ", \"idle_power_w\": %.4f}",
                       i ? ", " : "", i, s->max_power_uw / 1e6, s->non_operational ? "true" : "false", s->enlat_us,
                       s->exlat_us, s->idle_power_uw / 1e6);
        }
        printf("], \"apste\": %s", manage && p->table.apste ? "true" : "false");
        printf(", \"worst_wake_us\": %" PRIu32, manage ? p->worst_wake_us : 0);
        if (manage) {
                apst_describe(&p->table, &e->id, desc, sizeof desc);
                printf(", \"description\": ");
                json_string(stdout, desc);
        }
        printf(", \"table\": [");
        for (unsigned i = 0; i < APST_ENTRIES; i++)
                printf("%s\"0x%016" PRIx64 "\"", i ? ", " : "", manage ? p->table.entry[i] : UINT64_C(0));
        printf("]}");
}


static const char *pin_mode_name(CpuPinMode p) {
        switch (p) {
        case CPU_PIN_OFF:
                return "off";
        case CPU_PIN_ALWAYS:
                return "always";
        case CPU_PIN_BUSY:
                return "busy";
        case _CPU_PIN_MAX:
        case _CPU_PIN_INVALID:
                break;
        }
        return "invalid";
}

/* What [cpu] would do on this machine (reads cpufreq, writes nothing). NULL on failure. */
static char *describe_cpu(const Config *cfg, const PlanEntry *entries, size_t n, bool live) {
        _cleanup_(cpupin_freep) CpuPin *pin = NULL;
        CpuSet irq = {};
        bool have_irq = false;
        char *text = NULL;

        if (cfg->cpu.select == CPU_SELECT_NVME_IRQ && live && n > 0) {
                const char *names[n];
                for (size_t i = 0; i < n; i++)
                        names[i] = entries[i].name;
                have_irq = cpufreq_sysfs_nvme_irq_cpus(arg_sysfs_root, arg_proc_root, names, n, &irq) >= 0;
        }
        if (cpupin_new(&cpufreq_sysfs_ops, "/nonexistent", &pin) < 0)
                return NULL;
        if (cpupin_describe(pin, &cfg->cpu, have_irq ? &irq : NULL, &text) < 0)
                return NULL;
        return text;
}

static void help(void) {
        printf("Usage: nvme-apstd plan [OPTIONS] [nvmeX...]\n\n"
               "Show the APST table the daemon would program, without writing anything.\n\n"
               "  -c --config FILE     configuration file (default: %s/nvme-apstd.conf)\n"
               "  -j --json            print one JSON object\n"
               "  -i --id-ctrl FILE    read Identify data from FILE (`nvme id-ctrl -b` or `-o json`)\n"
               "                       instead of the live controllers; repeatable\n"
               "     --pci-id VVVV:DDDD  PCI ids of the drive of the preceding --id-ctrl (for quirks)\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n",
               SYSCONFDIR);
}

static bool name_selected(char **names, int n, const char *name) {
        if (n == 0)
                return true;
        for (int i = 0; i < n; i++)
                if (strcmp(names[i], name) == 0)
                        return true;
        return false;
}

int verb_plan(int argc, char *argv[]) {
        enum { ARG_PCI_ID = _CLI_ARG_FIRST_PRIVATE };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "json", no_argument, NULL, 'j' },
                { "id-ctrl", required_argument, NULL, 'i' },
                { "pci-id", required_argument, NULL, ARG_PCI_ID },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_free_ PlanEntry *entries = NULL;
        char *cpu_text = NULL;
        const char *config_path = NULL;
        size_t n = 0, n_files = 0;
        bool json = false;
        Config cfg;
        SysPlatform plat = {};
        int c, r, failed = 0;

        entries = calloc((size_t) argc + 1, sizeof *entries);
        if (!entries)
                return log_error_errno(-ENOMEM, "Out of memory.");

        optind = 0;
        while ((c = getopt_long(argc, argv, "c:ji:h", options, NULL)) >= 0) {
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
                case 'j':
                        json = true;
                        break;
                case 'i': {
                        PlanEntry *e = &entries[n_files];
                        (void) snprintf(e->name, sizeof e->name, "%s", optarg);
                        n_files++;
                        break;
                }
                case ARG_PCI_ID:
                        if (n_files == 0) {
                                log_error("--pci-id must follow an --id-ctrl FILE.");
                                return 2;
                        }
                        if (cli_parse_pci_id(optarg, &entries[n_files - 1].sys.pci_vendor,
                                      &entries[n_files - 1].sys.pci_device) < 0) {
                                log_error("--pci-id %s: expected VVVV:DDDD in hex.", optarg);
                                return 2;
                        }
                        entries[n_files - 1].have_sys = true;
                        (void) snprintf(entries[n_files - 1].sys.transport, sizeof entries[0].sys.transport, "pcie");
                        break;
                default:
                        return 2;
                }
        }

        r = cli_load_config(config_path, &cfg);
        if (r < 0)
                return 1;

        if (n_files > 0) {
                if (optind < argc) {
                        log_error("Controller names and --id-ctrl cannot be combined.");
                        config_done(&cfg);
                        return 2;
                }
                for (size_t i = 0; i < n_files; i++) {
                        r = load_id_file(entries[i].name, &entries[i].id);
                        if (r < 0) {
                                config_done(&cfg);
                                return 1;
                        }
                }
                n = n_files;
        } else {
                _cleanup_free_ SysCtrl *list = NULL;
                size_t nl = 0;

                sysfs_read_platform(arg_sysfs_root, &plat);
                r = sysfs_list_controllers(arg_sysfs_root, &list, &nl);
                if (r < 0) {
                        log_error_errno(r, "Cannot list %s/class/nvme: %m", arg_sysfs_root);
                        config_done(&cfg);
                        return 1;
                }
                for (int i = optind; i < argc; i++) {
                        bool found = false;
                        for (size_t k = 0; k < nl; k++)
                                found = found || strcmp(list[k].name, argv[i]) == 0;
                        if (!found) {
                                log_error("%s: no such NVMe controller in %s/class/nvme.", argv[i], arg_sysfs_root);
                                failed++;
                        }
                }
                PlanEntry *t = realloc(entries, (nl + 1) * sizeof *t);
                if (!t) {
                        config_done(&cfg);
                        return log_error_errno(-ENOMEM, "Out of memory."), 1;
                }
                entries = t;
                for (size_t k = 0; k < nl; k++) {
                        _cleanup_(ctrl_freep) Ctrl *ctrl = NULL;
                        PlanEntry *e = &entries[n];
                        uint16_t status = 0;

                        if (!name_selected(argv + optind, argc - optind, list[k].name))
                                continue;
                        memset(e, 0, sizeof *e);
                        (void) snprintf(e->name, sizeof e->name, "%s", list[k].name);
                        e->sys = list[k];
                        e->have_sys = true;
                        if (strcmp(list[k].transport, "pcie") != 0) {
                                log_info("%s: skipped, transport %s is not PCIe (APST is a PCIe drive's business).",
                                         list[k].name, list[k].transport);
                                continue;
                        }
                        r = ctrl_open(arg_dev_dir, list[k].name, &ctrl);
                        if (r >= 0)
                                r = ctrl_identify(ctrl, &e->id, NULL, &status);
                        if (r < 0) {
                                char why[160];
                                log_error("%s: Identify Controller failed: %s.", list[k].name,
                                          apply_error_to_string(r, status, why, sizeof why));
                                failed++;
                                continue;
                        }
                        n++;
                }
        }

        for (size_t i = 0; i < n; i++) {
                r = device_plan(&cfg, n_files ? NULL : &plat, entries[i].name,
                                entries[i].have_sys ? &entries[i].sys : NULL, &entries[i].id, &entries[i].plan);
                if (r < 0) {
                        log_error_errno(r, "%s: cannot plan: %m", entries[i].name);
                        config_done(&cfg);
                        return 1;
                }
        }

        cpu_text = describe_cpu(&cfg, entries, n, n_files == 0);
        if (json) {
                printf("{\"controllers\": [");
                for (size_t i = 0; i < n; i++) {
                        printf(i ? ", " : "");
                        print_json_entry(&entries[i]);
                }
                printf("], \"cpu\": {\"pin\": \"%s\", \"plan\": [", pin_mode_name(cfg.cpu.pin));
                for (char *line = cpu_text, *nl; line && *line; line = nl + 1) {
                        nl = strchrnul(line, '\n');
                        char save = *nl;
                        *nl = '\0';
                        printf("%s", line != cpu_text ? ", " : "");
                        json_string(stdout, line);
                        *nl = save;
                        if (!save)
                                break;
                }
                printf("]}}\n");
        } else {
                if (n == 0)
                        printf("No NVMe controllers found.\n");
                for (size_t i = 0; i < n; i++) {
                        if (i)
                                printf("\n");
                        print_human(&entries[i]);
                }
                printf("\nCPU frequency policy (pin = %s):\n", pin_mode_name(cfg.cpu.pin));
                for (char *line = cpu_text, *nl; line && *line; line = nl + 1) {
                        nl = strchrnul(line, '\n');
                        printf("  %.*s\n", (int) (nl - line), line);
                        if (!*nl)
                                break;
                }
                if (!cpu_text)
                        printf("  (could not be described)\n");
        }
        free(cpu_text);
        config_done(&cfg);
        return failed ? 1 : 0;
}
