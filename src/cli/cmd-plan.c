/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd plan`: the dry run. Reads Identify data from the live
 * controllers (through nvme-admin.c) or from files nvme-cli wrote, and prints what
 * the daemon would program, in words or as JSON. Sends nothing but Identify.
 */

#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cpufreq-sysfs.h"
#include "cli.h"
#include "plan.h"
#include "verbs.h"
#include "config-build.h"
#include "controller.h"
#include "cpupin.h"
#include "device.h"
#include "fileio.h"
#include "json-out.h"
#include "log.h"
#include "sysfs.h"

#define ID_FILE_MAX (1024u * 1024u) /* an nvme-cli JSON dump is ~10 KiB; refuse anything absurd */

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
        size_t len = 0;   /* set by read_full_file() on success; 0 keeps clang-analyzer's -errno path quiet */
        int r;

        r = read_full_file(path, ID_FILE_MAX, 0, &buf, &len);
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
        printf("  power states (npss %u, APST %s):\n", e->id.npss,
               e->id.apst_supported ? "supported" : "not supported");
        printf("    ps  max power    type             enlat µs     exlat µs\n");
        for (unsigned i = 0; i <= e->id.npss && i < IDCTRL_MAX_PS; i++) {
                const IdPsd *s = &e->id.psd[i];
                format_watts(s->max_power_uw, w, sizeof w);
                printf("    %2u  %-11s  %-15s  %10" PRIu32 "   %10" PRIu32, i, w,
                       s->non_operational ? "non-operational" : "operational", s->enlat_us, s->exlat_us);
                if (e->plan.config_raised & (1u << i))
                        printf("   %" PRIu32 " µs from configuration: planned with it",
                               e->plan.plan_id.psd[i].exlat_us);
                else if (e->plan.calib_raised & (1u << i))
                        printf("   measured %" PRIu32 " µs: planned with it", e->plan.plan_id.psd[i].exlat_us);
                printf("\n");
        }
        switch (e->plan.verdict) {
        case DEVICE_MANAGE:
                apst_describe(&p->table, &e->plan.plan_id, desc, sizeof desc);
                device_quirks_to_string(p->quirks, q, sizeof q);
                printf("  policy %s, max latency %" PRIu32 " µs%s%s%s, quirks: %s%s\n",
                       apst_policy_to_string(e->plan.params.policy), e->plan.params.max_latency_us,
                       e->plan.section ? " (from [device " : "", e->plan.section ? e->plan.section : "",
                       e->plan.section ? "])" : "", q, p->quirks_overridden ? " (overridden by force = yes)" : "");
                printf("  APST: %s\n", desc);
                if (e->quarantine_below != QUARANTINE_NONE) {
                        quarantine_describe(e->quarantine_below, q, sizeof q);
                        printf("  quarantine: %s (a failure in a power state; nvme-apstd quarantine)\n", q);
                }
                if (e->plan.params.policy == APST_POLICY_ADAPTIVE && p->table.apste)
                        printf("  adaptive: starts here (on exact gaps, eBPF: on the kernel's table), then the least\n"
                               "  energy whose wake-up delay is no more than the kernel's table's on the same I/O;\n"
                               "  back to the kernel's table when its own does more than 2%% worse\n");
                if (e->plan.calib_changed_table) {
                        apst_describe(&e->plan.uncalibrated_table, &e->id, desc, sizeof desc);
                        printf("  (from the descriptors alone: %s)\n", desc);
                }
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

static struct json_object *json_quirks(const ApstPlan *p, bool manage) {
        struct json_object *a = json_object_new_array();

        if (manage && (p->quirks & APST_QUIRK_NO_APST))
                (void) json_object_array_add(a, json_object_new_string("no-apst"));
        if (manage && (p->quirks & APST_QUIRK_NO_DEEPEST_PS))
                (void) json_object_array_add(a, json_object_new_string("no-deepest-ps"));
        return a;
}

static struct json_object *json_power_states(const IdCtrl *id, const DevicePlan *plan) {
        struct json_object *a = json_object_new_array();

        for (unsigned i = 0; i <= id->npss && i < IDCTRL_MAX_PS; i++) {
                const IdPsd *s = &id->psd[i];
                struct json_object *o = json_object_new_object();

                (void) json_object_object_add(o, "ps", json_object_new_int((int) i));
                (void) json_object_object_add(o, "max_power_w", json_out_fixed(s->max_power_uw / 1e6, 4));
                (void) json_object_object_add(o, "non_operational", json_object_new_boolean(s->non_operational));
                (void) json_object_object_add(o, "enlat_us", json_object_new_uint64(s->enlat_us));
                (void) json_object_object_add(o, "exlat_us", json_object_new_uint64(s->exlat_us));
                (void) json_object_object_add(o, "idle_power_w", json_out_fixed(s->idle_power_uw / 1e6, 4));
                /* the exit latency the plan used: a measured one where it was larger */
                (void) json_object_object_add(o, "planned_exlat_us",
                                              json_object_new_uint64(plan->plan_id.psd[i].exlat_us));
                (void) json_object_object_add(o, "measured", json_object_new_boolean(plan->calib_raised & (1u << i)));
                (void) json_object_object_add(o, "from_configuration",
                                              json_object_new_boolean(plan->config_raised & (1u << i)));
                (void) json_object_array_add(a, o);
        }
        return a;
}

static struct json_object *json_entry(const PlanEntry *e) {
        struct json_object *o = json_object_new_object();
        const ApstPlan *p = &e->plan.plan;
        bool manage = e->plan.verdict == DEVICE_MANAGE;
        ApstTable none = {};
        char desc[1024], pci[16];

        (void) json_object_object_add(o, "name", json_object_new_string(e->name));
        (void) json_object_object_add(o, "model", json_object_new_string(e->id.model));
        (void) json_object_object_add(o, "firmware", json_object_new_string(e->id.firmware));
        if (e->have_sys && e->sys.pci_vendor) {
                (void) snprintf(pci, sizeof pci, "%04x:%04x", e->sys.pci_vendor, e->sys.pci_device);
                (void) json_object_object_add(o, "pci", json_object_new_string(pci));
        }
        (void) json_object_object_add(o, "npss", json_object_new_int(e->id.npss));
        (void) json_object_object_add(o, "apsta", json_object_new_boolean(e->id.apst_supported));
        (void) json_object_object_add(o, "verdict", json_object_new_string(device_verdict_to_string(e->plan.verdict)));
        (void) json_object_object_add(o, "policy",
                                      json_object_new_string(apst_policy_to_string(e->plan.params.policy)));
        (void) json_object_object_add(o, "max_latency_us", json_object_new_uint64(e->plan.params.max_latency_us));
        (void) json_object_object_add(o, "section", json_out_string_or_null(e->plan.section));
        (void) json_object_object_add(o, "quirks", json_quirks(p, manage));
        (void) json_object_object_add(o, "quirks_overridden", json_object_new_boolean(manage && p->quirks_overridden));
        (void) json_object_object_add(o, "power_states", json_power_states(&e->id, &e->plan));
        (void) json_object_object_add(o, "apste", json_object_new_boolean(manage && p->table.apste));
        (void) json_object_object_add(o, "worst_wake_us", json_object_new_uint64(manage ? p->worst_wake_us : 0));
        (void) json_object_object_add(o, "quarantine_below",
                                      e->quarantine_below == QUARANTINE_NONE ? NULL
                                                                              : json_object_new_int(e->quarantine_below));
        if (manage) {
                apst_describe(&p->table, &e->plan.plan_id, desc, sizeof desc);
                (void) json_object_object_add(o, "description", json_object_new_string(desc));
        }
        (void) json_object_object_add(o, "table", json_out_apst_entries(manage ? p->table.entry : none.entry,
                                                                         APST_ENTRIES));
        return o;
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
               "     --root DIR        read the configuration and its drop-ins under DIR\n"
               "  -j --json            print one JSON object\n"
               "  -i --id-ctrl FILE    read Identify data from FILE (`nvme id-ctrl -b` or `-o json`)\n"
               "                       instead of the live controllers; repeatable\n"
               "     --pci-id VVVV:DDDD  PCI ids of the drive of the preceding --id-ctrl (for quirks)\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n",
               SYSCONFDIR);
}

typedef struct PlanArgs {
        const char *config_path;
        bool json;
        PlanEntry *files;          /* one per --id-ctrl, argc long */
        size_t n_files;
        char **names;              /* controllers named on the command line */
        int n_names;
} PlanArgs;

/* Return: 1 to go on, 0 to exit 0 (--help), 2 (bad usage). */
static int parse_argv(int argc, char *argv[], PlanArgs *a) {
        enum { ARG_PCI_ID = _CLI_ARG_FIRST_PRIVATE, ARG_ROOT };
        static const struct option options[] = {
                CLI_CONFIG_OPTION,
                { "root", required_argument, NULL, ARG_ROOT },
                { "json", no_argument, NULL, 'j' },
                { "id-ctrl", required_argument, NULL, 'i' },
                { "pci-id", required_argument, NULL, ARG_PCI_ID },
                CLI_COMMON_OPTIONS,
                {},
        };
        PlanEntry *e;
        int c;

        optind = 0;
        while ((c = cli_getopt_config(argc, argv, "c:ji:h", options, help, &a->config_path)) >= 0) {
                switch (c) {
                case 'j':
                        a->json = true;
                        break;
                case 'i':
                        e = &a->files[a->n_files++];
                        (void) snprintf(e->name, sizeof e->name, "%s", optarg);
                        /* no sysfs: planned as a PCIe drive whose PCI ids are unknown (0) */
                        (void) snprintf(e->sys.transport, sizeof e->sys.transport, "pcie");
                        break;
                case ARG_ROOT:
                        arg_config_root = optarg;
                        break;
                case ARG_PCI_ID:
                        if (a->n_files == 0) {
                                log_error("--pci-id must follow an --id-ctrl FILE.");
                                return 2;
                        }
                        e = &a->files[a->n_files - 1];
                        if (cli_parse_pci_id(optarg, &e->sys.pci_vendor, &e->sys.pci_device) < 0) {
                                log_error("--pci-id %s: expected VVVV:DDDD in hex.", optarg);
                                return 2;
                        }
                        e->have_sys = true;
                        break;
                default:
                        return 2;
                }
        }
        if (c == CLI_GETOPT_EXIT)
                return 0;
        a->names = argv + optind;
        a->n_names = argc - optind;
        if (a->n_files > 0 && a->n_names > 0) {
                log_error("Controller names and --id-ctrl cannot be combined.");
                return 2;
        }
        return 1;
}

/* Identify data from files: the engine's planning step only. Return: 0 or -errno (logged). */
static int plan_files(const ControllerContext *ctx, PlanEntry *entries, size_t n) {
        for (size_t i = 0; i < n; i++) {
                PlanEntry *e = &entries[i];
                Controller c;
                int r;

                controller_init(&c, e->name);
                r = load_id_file(e->name, &c.id);
                if (r < 0)
                        return r;
                c.identified = true;    /* the file is its Identify data: its quarantine applies too */
                c.sys = e->sys;
                r = controller_replan(&c, ctx, NULL);
                if (r < 0)
                        return r;
                e->id = c.id;
                e->plan = c.plan;
                e->quarantine_below = c.quarantine_below;
        }
        return 0;
}

/* The live controllers (all, or those named): gate, Identify, plan through the engine.
 * Return: the number that could not be planned, or -errno. */
static int plan_live(const ControllerContext *ctx, char **names, size_t n_names, PlanEntry **ret, size_t *ret_n) {
        _cleanup_(cli_selection_done) CliSelection sel = {};
        _cleanup_free_ PlanEntry *entries = NULL;
        size_t n = 0;
        int r, failed;

        r = cli_select_controllers(names, n_names, &sel);
        if (r < 0)
                return r;
        failed = (int) sel.n_unknown;
        entries = calloc(sel.n + 1, sizeof *entries);
        if (!entries)
                return log_error_errno(-ENOMEM, "Out of memory.");
        for (size_t k = 0; k < sel.n; k++) {
                PlanEntry *e = &entries[n];
                ControllerOutcome o;
                Controller c;

                controller_init(&c, sel.ctrls[k].name);
                (void) controller_sync(&c, ctx, "plan", &o);
                if (o.result == CONTROLLER_LEFT_ALONE && c.plan.verdict == DEVICE_NOT_PCIE && !c.id.model[0])
                        continue;   /* not PCIe: not shown (the engine said so) */
                if (o.result != CONTROLLER_PLANNED && o.result != CONTROLLER_LEFT_ALONE) {
                        failed++;
                        continue;
                }
                (void) snprintf(e->name, sizeof e->name, "%s", c.name);
                e->have_sys = true;
                e->sys = c.sys;
                e->id = c.id;
                e->plan = c.plan;
                e->quarantine_below = c.quarantine_below;
                n++;
        }
        *ret = TAKE_PTR(entries);
        *ret_n = n;
        return failed;
}

/* The CPU plan's lines, one JSON string each. */
static struct json_object *json_cpu_lines(const char *cpu_text) {
        struct json_object *a = json_object_new_array();

        for (const char *line = cpu_text, *nl; line && *line; line = nl + 1) {
                nl = strchrnul(line, '\n');
                (void) json_object_array_add(a, json_object_new_string_len(line, (int) (nl - line)));
                if (!*nl)
                        break;
        }
        return a;
}

struct json_object *plan_to_json(const Config *cfg, const PlanResult *p) {
        struct json_object *doc = json_object_new_object();
        struct json_object *ctrls = json_object_new_array(), *cpu = json_object_new_object();

        for (size_t i = 0; i < p->n; i++)
                (void) json_object_array_add(ctrls, json_entry(&p->entries[i]));
        (void) json_object_object_add(doc, "controllers", ctrls);
        (void) json_object_object_add(cpu, "pin",
                                      json_object_new_string(strempty(cpu_pin_mode_to_string(cfg->cpu.pin))));
        (void) json_object_object_add(cpu, "plan", json_cpu_lines(p->cpu_text));
        (void) json_object_object_add(doc, "cpu", cpu);
        return doc;
}

void plan_print_text(const Config *cfg, const PlanResult *p) {
        const char *cpu_text = p->cpu_text;

        if (p->n == 0)
                printf("No NVMe controllers found.\n");
        for (size_t i = 0; i < p->n; i++) {
                if (i)
                        printf("\n");
                print_human(&p->entries[i]);
        }
        printf("\nCPU frequency policy (pin = %s):\n", strempty(cpu_pin_mode_to_string(cfg->cpu.pin)));
        for (const char *line = cpu_text, *nl; line && *line; line = nl + 1) {
                nl = strchrnul(line, '\n');
                printf("  %.*s\n", (int) (nl - line), line);
                if (!*nl)
                        break;
        }
        if (!cpu_text)
                printf("  (could not be described)\n");
}

/* The plan of the files in @files, or else of the live controllers named in @names (all when none).
 * Return: 0 or negative errno (logged); @ret->failed counts the controllers that could not be planned. */
static int plan_collect_from(const Config *cfg, PlanEntry *files, size_t n_files, char **names, size_t n_names,
                             PlanResult *ret) {
        _cleanup_free_ PlanEntry *live = NULL;
        SysPlatform plat = {};
        char state_dir[4096];
        ControllerContext ctx = cli_controller_context(CONTROLLER_MODE_PLAN, cfg, NULL, state_dir, sizeof state_dir);
        PlanResult p = { .entries = files, .n = n_files };
        int r;

        if (n_files > 0) {
                r = plan_files(&ctx, files, n_files);
                if (r < 0)
                        return r;
        } else {
                sysfs_read_platform(arg_sysfs_root, &plat);
                ctx.platform = &plat;
                r = plan_live(&ctx, names, n_names, &live, &p.n);
                if (r < 0)
                        return r;
                p.failed = r;
                p.entries = live;
                p.owned = TAKE_PTR(live);
        }
        p.cpu_text = describe_cpu(cfg, p.entries, p.n, n_files == 0);
        *ret = p;
        return 0;
}

int plan_collect(const Config *cfg, char **names, size_t n_names, PlanResult *ret) {
        return plan_collect_from(cfg, NULL, 0, names, n_names, ret);
}

void plan_result_done(PlanResult *p) {
        free(p->owned);
        free(p->cpu_text);
        *p = (PlanResult) {};
}

static int plan_run(const PlanArgs *a, Config *cfg) {
        _cleanup_(plan_result_done) PlanResult p = {};
        int r;

        r = plan_collect_from(cfg, a->files, a->n_files, a->names, (size_t) a->n_names, &p);
        if (r < 0)
                return r;
        if (a->json) {
                _cleanup_(json_object_putp) struct json_object *doc = plan_to_json(cfg, &p);
                r = json_out_print(stdout, doc, JSON_OUT_FLAGS | JSON_C_TO_STRING_SPACED);
                if (r < 0)
                        return log_error_errno(r, "Cannot write the JSON output: %m");
        } else
                plan_print_text(cfg, &p);
        return p.failed;
}

int verb_plan(int argc, char *argv[]) {
        _cleanup_free_ PlanEntry *files = NULL;
        _cleanup_(config_done) Config cfg;
        PlanArgs a = {};
        int r;

        config_init(&cfg);
        files = calloc((size_t) argc + 1, sizeof *files);
        if (!files) {
                log_error_errno(-ENOMEM, "Out of memory.");
                return 1;
        }
        a.files = files;
        r = parse_argv(argc, argv, &a);
        if (r != 1)
                return r;
        if (cli_load_config(a.config_path, &cfg) < 0)
                return 1;
        r = plan_run(&a, &cfg);
        return r != 0 ? 1 : 0;
}
