/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd simulate`: what would a setting cost on this drive and this
 * workload? Reads an Identify Controller file and an I/O trace, builds the
 * chosen policy's table with the daemon's own apst_build() (and, in the same
 * run, APST off, the kernel's defaults and the offline optimum), runs each
 * through the model in sim.c and prints energy and added latency, as text or
 * as one JSON object. The model and every assumption: doc/simulator.md.
 *
 * This file is the only part of the simulator that does I/O or prints.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapt.h"
#include "sim-adapt.h"
#include "apst.h"
#include "config-file.h"
#include "device.h"
#include "fileio.h"
#include "hindsight.h"
#include "idctrl.h"
#include "json-out.h"
#include "log.h"
#include "macro.h"
#include "sim.h"
#include "string-table.h"
#include "trace.h"
#include "util.h"
#include "verbs.h"

/* Identify data is 4 KiB binary or ~3 KiB of JSON; 1 MiB is ample and bounded. */
#define IDCTRL_FILE_MAX (1024u * 1024u)
/* A trace file: 1 GiB holds ~10^7 blkparse events (each line < 100 bytes), hours of a busy disk. */
#define TRACE_FILE_MAX (UINT64_C(1) << 30)

/* The policy of the first row: the daemon's own three, and two only the simulator knows. */
typedef enum SimulatePolicy {
        SIMULATE_POLICY_BUDGET,
        SIMULATE_POLICY_KERNEL,
        SIMULATE_POLICY_ADAPTIVE,
        SIMULATE_POLICY_NONE,            /* APST off */
        SIMULATE_POLICY_HINDSIGHT,       /* the best static table knowing the trace (hindsight.h) */
        _SIMULATE_POLICY_MAX,
        _SIMULATE_POLICY_INVALID = -EINVAL,
} SimulatePolicy;

static SimulatePolicy simulate_policy_from_apst(ApstPolicyKind k) {
        switch (k) {
        case APST_POLICY_BUDGET:
                return SIMULATE_POLICY_BUDGET;
        case APST_POLICY_KERNEL:
                return SIMULATE_POLICY_KERNEL;
        case APST_POLICY_ADAPTIVE:
                return SIMULATE_POLICY_ADAPTIVE;
        case _APST_POLICY_MAX:
        case _APST_POLICY_INVALID:
                break;
        }
        return _SIMULATE_POLICY_INVALID;
}

/* The daemon's policy @k stands for. Return: 0, or -EINVAL for the simulator's own (none, hindsight). */
static int simulate_policy_to_apst(SimulatePolicy k, ApstPolicyKind *ret) {
        switch (k) {
        case SIMULATE_POLICY_BUDGET:
                *ret = APST_POLICY_BUDGET;
                return 0;
        case SIMULATE_POLICY_KERNEL:
                *ret = APST_POLICY_KERNEL;
                return 0;
        case SIMULATE_POLICY_ADAPTIVE:
                *ret = APST_POLICY_ADAPTIVE;
                return 0;
        case SIMULATE_POLICY_NONE:
        case SIMULATE_POLICY_HINDSIGHT:
        case _SIMULATE_POLICY_MAX:
        case _SIMULATE_POLICY_INVALID:
                break;
        }
        return -EINVAL;
}

/* The daemon's three spelt as apst_policy_table spells them (config.c's `policy =`). */
static const char *const simulate_policy_table[_SIMULATE_POLICY_MAX] = {
        [SIMULATE_POLICY_BUDGET] = "budget",
        [SIMULATE_POLICY_KERNEL] = "kernel",
        [SIMULATE_POLICY_ADAPTIVE] = "adaptive",
        [SIMULATE_POLICY_NONE] = "none",
        [SIMULATE_POLICY_HINDSIGHT] = "hindsight",
};

DEFINE_PRIVATE_STRING_TABLE_LOOKUP(simulate_policy, SimulatePolicy);

typedef struct Options {
        const char *id_ctrl, *trace, *config, *policy, *device;
        /* --trace given more than once: a sequence of workloads, played one after the other */
        const char *traces[SIM_SEGMENTS_MAX];
        size_t n_traces;
        bool closed_segment[SIM_SEGMENTS_MAX];   /* --closed-loop=LIST */
        uint64_t window_ns;          /* --window: each segment's first stretch, scored apart */
        uint64_t segment_gap_ns;     /* --segment-gap: idle between one segment's last I/O and the next's first */
        char event;
        uint32_t p0_uw;
        ApstPlatform platform;       /* PCI ids from --pci; DMI unknown */
        uint64_t service_ns;
        double exlat_scale;          /* real exit latency / advertised; 1 = honest drive */
        double hindsight_share;      /* --policy hindsight: wake delay allowed / the kernel's table's */
        AdaptSource source;          /* what the adaptive policy watches the drive with */
        unsigned copies;             /* --repeat: the trace played this many times, the last scored */
        bool closed_loop, json, timeline;
} Options;

static void help(void) {
        printf("Usage: nvme-apstd simulate --id-ctrl FILE --trace FILE [OPTIONS]\n"
               "\n"
               "Score an APST policy on an I/O trace: energy and added latency against APST off,\n"
               "the kernel's defaults and the offline optimum. See doc/simulator.md.\n"
               "\n"
               "  -i --id-ctrl FILE     Identify Controller data (`nvme id-ctrl -b` or `-o json`)\n"
               "  -t --trace FILE       I/O trace: \"TIME_S [R|W|F|D] [BYTES]\" lines or blkparse\n"
               "                        text output; - reads standard input. Given more than once\n"
               "                        (up to %u): a sequence of workloads played one after the\n"
               "                        other to the same policy, each scored on its own too\n"
               "     --segment-gap S    sequence: seconds idle between one trace's last I/O and the\n"
               "                        next one's first (default 1)\n"
               "     --window S         sequence: also score each trace's first S seconds (default 60)\n"
               "  -c --config FILE      nvme-apstd.conf to take the policy and its knobs from\n"
               "                        (the drive is matched as controller \"sim0\")\n"
               "  -p --policy NAME      adaptive (default), budget, kernel or none; overrides the config;\n"
               "                        hindsight: the least-energy static table knowing the whole\n"
               "                        trace, within the kernel's table's wake delay (a baseline)\n"
               "     --hindsight-share S  hindsight: wake delay allowed, a share of the kernel's\n"
               "                        table's (0..1, default 1)\n"
               "  -w --idle-power-w W   PS0 idle power when the drive reports none (default %.1f)\n"
               "  -s --service-us US    time to serve one I/O (default %u)\n"
               "  -x --exlat-scale X    the drive really wakes X times slower than it advertises\n"
               "                        (policies still plan from the advertised latencies)\n"
               "  -W --watch-source S  what the adaptive policy observes: bpf (default: every idle\n"
               "                        gap and each wake-up's cost, as the eBPF source) or stat\n"
               "                        (/sys/block/X/stat sampled every 50 ms to 5 s)\n"
               "     --repeat N         play the trace N times to the same policy, which keeps what it\n"
               "                        learned; score the last copy only (a warm run; default 1)\n"
               "  -l --closed-loop[=N,...]  each I/O waits for the previous one (one synchronous job):\n"
               "                        lateness shifts every later I/O; with a list, only in those\n"
               "                        traces of a sequence (1 = the first --trace)\n"
               "  -P --pci VVVV:DDDD    the drive's PCI vendor:device, for the kernel's quirks and\n"
               "                        match_pci (default: unknown, no PCI quirk applies)\n"
               "  -d --device MAJ,MIN   blkparse: the device to keep (default: the only one)\n"
               "  -e --event D|Q        blkparse: issue or queue events (default: D if present)\n"
               "  -j --json             print one JSON object\n"
               "     --timeline         with --json: each policy's power state over time\n"
               "  -h --help             show this help\n"
               "     --version          show the version\n",
               SIM_SEGMENTS_MAX, SIM_P0_DEFAULT_UW / 1e6, (unsigned) (SIM_SERVICE_DEFAULT_NS / 1000));
}

/* --idle-power-w: 100 W is beyond any NVMe drive's PS0 (the spec's MP tops out at 655 W, real
 * ones at ~25 W); 1 µW is the model's unit. */
static int parse_watts(const char *arg, uint32_t *ret_uw) {
        double w;

        if (safe_atod(arg, &w) < 0 || w < 1e-6 || w > 100) {
                log_error("--idle-power-w: expected watts in 0.000001..100, got \"%s\"", arg);
                return -EINVAL;
        }
        *ret_uw = (uint32_t) (w * 1e6 + 0.5);     /* nearest: w > 0 (no libm for lround) */
        return 0;
}

/* --service-us: one second per I/O is far past any drive; the model needs > 0. */
static int parse_service_us(const char *arg, uint64_t *ret_ns) {
        uint32_t us;

        if (safe_atou32(arg, &us) < 0 || us == 0 || us > 1000000) {
                log_error("--service-us: expected microseconds in 1..1000000, got \"%s\"", arg);
                return -EINVAL;
        }
        *ret_ns = (uint64_t) us * 1000;
        return 0;
}

/* --policy: one the daemon knows, or none (the kernel's table). */
static int parse_policy(const char *arg, const char **ret) {
        if (simulate_policy_from_string(arg) < 0) {
                log_error("--policy: expected budget, kernel, adaptive, none or hindsight, got \"%s\"", arg);
                return -EINVAL;
        }
        *ret = arg;
        return 0;
}

/* --exlat-scale: a factor on the drive's exit latencies, > 0 and at most SIM_EXLAT_SCALE_MAX. */
static int parse_exlat_scale(const char *arg, double *ret) {
        double x;

        if (safe_atod(arg, &x) < 0 || x <= 0 || x > SIM_EXLAT_SCALE_MAX) {
                log_error("--exlat-scale: expected a factor in (0, %g], got \"%s\"", SIM_EXLAT_SCALE_MAX, arg);
                return -EINVAL;
        }
        *ret = x;
        return 0;
}

/* --hindsight-share: the wake delay --policy hindsight may spend, as a share of the kernel's table's, in [0, 1]. */
static int parse_share(const char *arg, double *ret) {
        double x;

        if (safe_atod(arg, &x) < 0 || x < 0 || x > 1) {
                log_error("--hindsight-share: expected a share in [0, 1], got \"%s\"", arg);
                return -EINVAL;
        }
        *ret = x;
        return 0;
}

/* --repeat: 1..SIM_COPIES_MAX copies of the trace. */
static int parse_copies(const char *arg, unsigned *ret) {
        uint32_t n;

        if (safe_atou32(arg, &n) < 0 || n < 1 || n > SIM_COPIES_MAX) {
                log_error("--repeat: expected a number of copies in 1..%u, got \"%s\"", SIM_COPIES_MAX, arg);
                return -EINVAL;
        }
        *ret = n;
        return 0;
}

/* --watch-source: bpf or stat. */
static int parse_source(const char *arg, AdaptSource *ret) {
        AdaptSource s = adapt_source_from_string(arg);

        if (s < 0) {
                log_error("--watch-source: expected bpf or stat, got \"%s\"", arg);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

/* --event: which blkparse events are the I/Os, D (issued) or Q (queued). */
static int parse_event(const char *arg, char *ret) {
        if ((arg[0] != 'D' && arg[0] != 'Q') || arg[1] != 0) {
                log_error("--event: expected D or Q, got \"%s\"", arg);
                return -EINVAL;
        }
        *ret = arg[0];
        return 0;
}

/* --window, --segment-gap: seconds, 0..TRACE_TIME_MAX_S. */
static int parse_seconds(const char *name, const char *arg, uint64_t *ret_ns) {
        double v;

        if (safe_atod(arg, &v) < 0 || v < 0 || v > TRACE_TIME_MAX_S) {
                log_error("--%s: expected seconds in 0..%u, got \"%s\"", name, (unsigned) TRACE_TIME_MAX_S, arg);
                return -EINVAL;
        }
        *ret_ns = (uint64_t) (v * 1e9 + 0.5);
        return 0;
}

/* --closed-loop=N,M,...: the traces of a sequence (1-based) played closed loop. */
static int parse_closed_list(const char *arg, bool ret[static SIM_SEGMENTS_MAX]) {
        const char *p = arg;

        if (!*p)
                goto bad;
        while (*p) {
                char *end;
                errno = 0;
                unsigned long v = strtoul(p, &end, 10);
                if (errno || end == p || v < 1 || v > SIM_SEGMENTS_MAX || (*end && *end != ','))
                        goto bad;
                ret[v - 1] = true;
                p = *end ? end + 1 : end;
                if (*end && !*p)
                        goto bad;
        }
        return 0;
bad:
        log_error("--closed-loop: expected trace numbers 1..%u separated by commas, got \"%s\"", SIM_SEGMENTS_MAX, arg);
        return -EINVAL;
}

/* After the options: no arguments, and both inputs given. Return: 1 or -EINVAL. */
static int options_complete(const Options *o, int argc, char *argv[]) {
        if (verb_check_args("simulate", argc, argv) < 0)
                return -EINVAL;
        if (!o->id_ctrl || !o->trace) {
                log_error("--id-ctrl and --trace are required (see --help)");
                return -EINVAL;
        }
        if (o->timeline && !o->json) {
                log_error("--timeline needs --json");
                return -EINVAL;
        }
        for (size_t i = o->n_traces; i < SIM_SEGMENTS_MAX; i++)
                if (o->closed_segment[i]) {
                        log_error("--closed-loop: trace %zu was not given (%zu --trace)", i + 1, o->n_traces);
                        return -EINVAL;
                }
        return 1;
}

/* simulate's long-only options */
enum { ARG_TIMELINE = _CLI_ARG_FIRST_PRIVATE, ARG_HINDSIGHT_SHARE, ARG_REPEAT, ARG_WINDOW, ARG_SEGMENT_GAP };

/* One option of simulate's. Return: 0, or -EINVAL (said why). */
/* The options that say what is played and how it is scored; 1 when @c is not one of them. */
static int parse_scenario_option(int c, const char *arg, Options *o) {
        switch (c) {
        case 't':
                if (o->n_traces == SIM_SEGMENTS_MAX) {
                        log_error("--trace: at most %u traces", SIM_SEGMENTS_MAX);
                        return -EINVAL;
                }
                if (!o->trace)
                        o->trace = arg;
                o->traces[o->n_traces++] = arg;
                return 0;
        case 'l':
                if (!arg)
                        o->closed_loop = true;
                else if (parse_closed_list(arg, o->closed_segment) < 0)
                        return -EINVAL;
                return 0;
        case ARG_TIMELINE:
                o->timeline = true;
                return 0;
        case ARG_HINDSIGHT_SHARE:
                return parse_share(arg, &o->hindsight_share) < 0 ? -EINVAL : 0;
        case ARG_REPEAT:
                return parse_copies(arg, &o->copies) < 0 ? -EINVAL : 0;
        case ARG_WINDOW:
                return parse_seconds("window", arg, &o->window_ns) < 0 ? -EINVAL : 0;
        case ARG_SEGMENT_GAP:
                return parse_seconds("segment-gap", arg, &o->segment_gap_ns) < 0 ? -EINVAL : 0;
        default:
                return 1;
        }
}

static int parse_option(int c, const char *arg, Options *o) {
        int r = parse_scenario_option(c, arg, o);
        if (r <= 0)
                return r;

        switch (c) {
        case 'i':
                o->id_ctrl = arg;
                break;
        case 'c':
                o->config = arg;
                break;
        case 'p':
                if (parse_policy(arg, &o->policy) < 0)
                        return -EINVAL;
                break;
        case 'w':
                if (parse_watts(arg, &o->p0_uw) < 0)
                        return -EINVAL;
                break;
        case 's':
                if (parse_service_us(arg, &o->service_ns) < 0)
                        return -EINVAL;
                break;
        case 'x':
                if (parse_exlat_scale(arg, &o->exlat_scale) < 0)
                        return -EINVAL;
                break;
        case 'W':
                if (parse_source(arg, &o->source) < 0)
                        return -EINVAL;
                break;
        case 'd':
                o->device = arg;
                break;
        case 'P':
                if (cli_parse_pci_id(arg, &o->platform.pci_vendor, &o->platform.pci_device) < 0) {
                        log_error("--pci: expected VVVV:DDDD in hex, got \"%s\"", arg);
                        return -EINVAL;
                }
                break;
        case 'e':
                if (parse_event(arg, &o->event) < 0)
                        return -EINVAL;
                break;
        case 'j':
                o->json = true;
                break;
        case '?':
                return -EINVAL;
        default:
                abort();
        }
        return 0;
}

static int parse_argv(int argc, char *argv[], Options *o) {
        static const struct option options[] = {
                { "id-ctrl", required_argument, NULL, 'i' },
                { "trace", required_argument, NULL, 't' },
                { "config", required_argument, NULL, 'c' },
                { "policy", required_argument, NULL, 'p' },
                { "idle-power-w", required_argument, NULL, 'w' },
                { "service-us", required_argument, NULL, 's' },
                { "closed-loop", optional_argument, NULL, 'l' },
                { "exlat-scale", required_argument, NULL, 'x' },
                { "watch-source", required_argument, NULL, 'W' },
                { "device", required_argument, NULL, 'd' },
                { "pci", required_argument, NULL, 'P' },
                { "event", required_argument, NULL, 'e' },
                { "json", no_argument, NULL, 'j' },
                { "timeline", no_argument, NULL, ARG_TIMELINE },
                { "hindsight-share", required_argument, NULL, ARG_HINDSIGHT_SHARE },
                { "repeat", required_argument, NULL, ARG_REPEAT },
                { "window", required_argument, NULL, ARG_WINDOW },
                { "segment-gap", required_argument, NULL, ARG_SEGMENT_GAP },
                CLI_COMMON_OPTIONS,
                {}
        };
        int c;

        optind = 0;   /* a full reset: main.c may have run getopt already */
        while ((c = cli_getopt(argc, argv, "i:t:c:p:w:s:l::x:W:d:P:e:jh", options, help)) >= 0) {
                if (parse_option(c, optarg, o) < 0)
                        return -EINVAL;
        }
        if (c == CLI_GETOPT_EXIT)
                return 0;
        return options_complete(o, argc, argv);
}

/* Which policy and knobs: the daemon's own decision (device_plan(), as `run`, `apply` and `plan`
 * make it) for the drive as controller "sim0" under the config (or the built-in defaults), then
 * --policy. enable = no: the daemon leaves the drive alone, so the kernel's table, built with
 * nvme_core's own defaults, is what runs. */
static int resolve_policy(const Options *o, const IdCtrl *id, ApstParams *ret_params, SimulatePolicy *ret_kind,
                          char *section, size_t section_size) {
        _cleanup_(config_done) Config c;
        _cleanup_free_ char *error = NULL;
        SysCtrl sys = { .name = "sim0", .transport = "pcie",
                        .pci_vendor = o->platform.pci_vendor, .pci_device = o->platform.pci_device };
        SimulatePolicy kind;
        ApstParams params;
        DevicePlan dp;
        int r;

        config_init(&c);
        if (o->config) {
                r = config_load(o->config, &c, &error);
                if (r < 0) {
                        if (error)
                                log_error("%s", error);
                        else
                                log_error("%s: %s", o->config, strerror(-r));
                        return r;
                }
        }
        r = device_plan(&c, NULL, sys.name, &sys, id, &dp);
        if (r < 0) {
                log_error("cannot plan the APST table: %s", strerror(-r));
                return r;
        }
        (void) snprintf(section, section_size, "%s", strempty(dp.section));
        params = dp.verdict == DEVICE_DISABLED ? APST_PARAMS_DEFAULT : dp.params;
        kind = dp.verdict == DEVICE_DISABLED ? SIMULATE_POLICY_KERNEL : simulate_policy_from_apst(params.policy);
        if (o->policy) {
                kind = simulate_policy_from_string(o->policy);
                if (kind < 0) {
                        log_error("--policy: expected budget, kernel, adaptive, none or hindsight, got \"%s\"",
                                  o->policy);
                        return -EINVAL;
                }
        }
        (void) simulate_policy_to_apst(kind, &params.policy);    /* none and hindsight keep the plan's */
        *ret_params = params;
        *ret_kind = kind;
        return 0;
}

/* The table the daemon would program; APST off for apsta = 0 (nothing is sent then). */
static int build_table(const IdCtrl *id, const ApstPlatform *plat, const ApstParams *params, SimulatePolicy kind,
                       ApstTable *ret) {
        ApstPlan plan;
        int r;

        /* hindsight's is found on the trace (hindsight_row()) */
        if (kind == SIMULATE_POLICY_NONE || kind == SIMULATE_POLICY_HINDSIGHT) {
                *ret = (ApstTable) {};
                return 0;
        }
        r = apst_build(id, plat, params, &plan);
        if (r < 0)
                return r;
        *ret = plan.outcome == APST_OUTCOME_PROGRAM ? plan.table : (ApstTable) {};
        return 0;
}

typedef struct Row {
        const char *name;
        SimResult res;
        const Adapt *shadow;         /* the adaptive policy on the exact source, else NULL */
} Row;

static struct json_object *json_reprograms(const SimResult *r) {
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < r->n_reprograms; i++) {
                struct json_object *o = json_object_new_object();

                (void) json_object_object_add(o, "t", json_out_fixed((double) r->reprograms[i].t_ns * 1e-9, 9));
                (void) json_object_object_add(o, "apste", json_object_new_boolean(r->reprograms[i].table.apste));
                (void) json_object_object_add(o, "table", json_out_apst_entries(r->reprograms[i].table.entry,
                                                                                 APST_ENTRIES));
                if (r->reprograms[i].reason[0])
                        (void) json_object_object_add(o, "reason", json_object_new_string(r->reprograms[i].reason));
                (void) json_object_array_add(a, o);
        }
        return a;
}

/* [[t_s, ps, "rest"|"enter"|"exit"|"serve"], ...]: from each t on, until the next. */
static struct json_object *json_timeline(const SimResult *r) {
        struct json_object *a = json_object_new_array_ext((int) MIN(r->n_timeline, (size_t) INT32_MAX));

        for (size_t i = 0; i < r->n_timeline; i++) {
                const SimStateChange *c = &r->timeline[i];
                struct json_object *e = json_object_new_array_ext(3);

                (void) json_object_array_add(e, json_out_fixed((double) c->t_ns * 1e-9, 9));
                (void) json_object_array_add(e, json_object_new_uint64(c->ps));
                (void) json_object_array_add(e, json_object_new_string(sim_activity_to_string(c->activity)));
                (void) json_object_array_add(a, e);
        }
        return a;
}

static double ratio(double a, double b) {
        return b > 0 ? a / b : (a > 0 ? INFINITY : 1.0);
}

static struct json_object *json_drive(const Options *o, const IdCtrl *id, const SimDrive *d) {
        struct json_object *drive = json_object_new_object(), *states = json_object_new_array();
        char pci[16];

        (void) json_object_object_add(drive, "model", json_object_new_string(id->model));
        (void) json_object_object_add(drive, "firmware", json_object_new_string(id->firmware));
        if (o->platform.pci_vendor || o->platform.pci_device) {
                (void) snprintf(pci, sizeof pci, "%04x:%04x", o->platform.pci_vendor, o->platform.pci_device);
                (void) json_object_object_add(drive, "pci", json_object_new_string(pci));
        }
        (void) json_object_object_add(drive, "npss", json_object_new_uint64(d->npss));
        (void) json_object_object_add(drive, "apsta", json_object_new_boolean(id->apst_supported));
        (void) json_object_object_add(drive, "p0_idle_w", json_out_fixed(d->ps[0].power_uw / 1e6, 6));
        (void) json_object_object_add(drive, "p0_reported", json_object_new_boolean(d->p0_reported));
        for (unsigned i = 0; i <= d->npss; i++) {
                struct json_object *st = json_object_new_object();

                (void) json_object_object_add(st, "ps", json_object_new_uint64(i));
                (void) json_object_object_add(st, "power_w", json_out_fixed(d->ps[i].power_uw / 1e6, 6));
                (void) json_object_object_add(st, "enlat_us", json_object_new_uint64(d->ps[i].enlat_us));
                (void) json_object_object_add(st, "exlat_us", json_object_new_uint64(d->ps[i].exlat_us));
                (void) json_object_object_add(st, "non_operational", json_object_new_boolean(d->ps[i].non_operational));
                (void) json_object_array_add(states, st);
        }
        (void) json_object_object_add(drive, "states", states);
        return drive;
}

static struct json_object *json_trace(const Options *o, const Trace *t, const SimSegment *segs, size_t n_segs) {
        struct json_object *trace = json_object_new_object();
        char event[2] = { t->action, 0 };

        (void) json_object_object_add(trace, "file", json_object_new_string(o->trace));
        (void) json_object_object_add(trace, "format", json_object_new_string(trace_format_to_string(t->format)));
        (void) json_object_object_add(trace, "ios", json_object_new_uint64(t->n));
        if (t->format == TRACE_FORMAT_BLKPARSE) {
                (void) json_object_object_add(trace, "device", json_object_new_string(t->device));
                (void) json_object_object_add(trace, "event", json_object_new_string(event));
        }
        if (n_segs > 0) {
                struct json_object *a = json_object_new_array();
                for (size_t i = 0; i < n_segs; i++) {
                        struct json_object *g = json_object_new_object();
                        (void) json_object_object_add(g, "file", json_object_new_string(o->traces[i]));
                        (void) json_object_object_add(g, "start_s", json_out_fixed((double) segs[i].start_ns * 1e-9, 9));
                        (void) json_object_object_add(g, "ios", json_object_new_uint64(
                                                                     (i + 1 < n_segs ? segs[i + 1].first : t->n) - segs[i].first));
                        (void) json_object_object_add(g, "closed_loop", json_object_new_boolean(segs[i].closed_loop));
                        (void) json_object_array_add(a, g);
                }
                (void) json_object_object_add(trace, "segments", a);
                (void) json_object_object_add(trace, "window_s", json_out_fixed((double) o->window_ns * 1e-9, 9));
        }
        return trace;
}

/* The shadow kernel's accounting of the adaptive policy on the exact source: what the
 * daemon would report (status, metrics) for this trace. */
static struct json_object *json_shadow(const Adapt *a) {
        struct json_object *o = json_object_new_object();
        ShadowSums ta, tk, wa, wk;

        adapt_savings(a, &ta, &tk, &wa, &wk);
        (void) json_object_object_add(o, "energy_j", json_out_general(ta.energy_uwns / 1e15, 9));
        (void) json_object_object_add(o, "kernel_energy_j", json_out_general(tk.energy_uwns / 1e15, 9));
        (void) json_object_object_add(o, "wake_delay_s", json_out_fixed(ta.wake_ns * 1e-9, 9));
        (void) json_object_object_add(o, "kernel_wake_delay_s", json_out_fixed(tk.wake_ns * 1e-9, 9));
        (void) json_object_object_add(o, "gaps", json_object_new_uint64((uint64_t) ta.gaps));
        (void) json_object_object_add(o, "guard_fallbacks", json_object_new_uint64(a->shadow.fallbacks));
        return o;
}

static struct json_object *json_figures(const SimFigures *f) {
        struct json_object *o = json_object_new_object();

        (void) json_object_object_add(o, "span_s", json_out_fixed((double) f->span_ns * 1e-9, 9));
        (void) json_object_object_add(o, "energy_j", json_out_general(f->energy_j, 9));
        (void) json_object_object_add(o, "stall_s", json_out_fixed((double) f->stall_ns * 1e-9, 9));
        (void) json_object_object_add(o, "wakeups", json_object_new_uint64(f->wakeups));
        (void) json_object_object_add(o, "ios", json_object_new_uint64(f->ios));
        return o;
}

/* A sequence's segments, one row each: the whole of it, its first --window, its added run time. */
static struct json_object *json_segments(const SimResult *r) {
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; i < r->n_segments; i++) {
                const SimSegmentResult *g = &r->segments[i];
                struct json_object *o = json_figures(&g->whole);

                (void) json_object_object_add(o, "window", json_figures(&g->window));
                (void) json_object_object_add(o, "added_wall_s", json_out_fixed((double) g->added_wall_ns * 1e-9, 9));
                (void) json_object_array_add(a, o);
        }
        return a;
}

static struct json_object *json_row(const SimDrive *d, const Row *row, const Row *opt, bool timeline) {
        struct json_object *o = json_object_new_object(), *wk = json_object_new_object(),
                           *added = json_object_new_object();
        const SimResult *r = &row->res;
        char name[8];

        (void) json_object_object_add(o, "name", json_object_new_string(row->name));
        (void) json_object_object_add(o, "energy_j", json_out_general(r->energy_j, 9));
        (void) json_object_object_add(o, "mean_power_w", json_out_general(r->mean_power_w, 9));
        (void) json_object_object_add(o, "duration_s", json_out_fixed((double) r->duration_ns * 1e-9, 9));
        (void) json_object_object_add(o, "ios", json_object_new_uint64(r->ios));
        (void) json_object_object_add(o, "energy_vs_optimum", json_out_fixed(ratio(r->energy_j, opt->res.energy_j), 6));
        for (unsigned s = 1; s <= d->npss; s++)
                if (d->ps[s].non_operational) {
                        (void) snprintf(name, sizeof name, "ps%u", s);
                        (void) json_object_object_add(wk, name, json_object_new_uint64(r->wakeups[s]));
                }
        (void) json_object_object_add(o, "wakeups", wk);
        (void) json_object_object_add(o, "wakeups_total", json_object_new_uint64(r->wakeups_total));
        (void) json_object_object_add(o, "stall_s", json_out_fixed((double) r->stall_ns * 1e-9, 9));
        (void) json_object_object_add(added, "mean", json_out_fixed(r->added_mean_ns * 1e-9, 9));
        (void) json_object_object_add(added, "p99", json_out_fixed((double) r->added_p99_ns * 1e-9, 9));
        (void) json_object_object_add(added, "p999", json_out_fixed((double) r->added_p999_ns * 1e-9, 9));
        (void) json_object_object_add(added, "max", json_out_fixed((double) r->added_max_ns * 1e-9, 9));
        (void) json_object_object_add(o, "added_latency_s", added);
        (void) json_object_object_add(o, "added_wall_s", json_out_fixed((double) r->added_wall_ns * 1e-9, 9));
        (void) json_object_object_add(o, "reprograms", json_reprograms(r));
        if (r->n_segments > 0)
                (void) json_object_object_add(o, "segments", json_segments(r));
        if (row->shadow)
                (void) json_object_object_add(o, "shadow", json_shadow(row->shadow));
        if (timeline && row != opt)
                (void) json_object_object_add(o, "timeline", json_timeline(r));
        return o;
}

/* One member a line and one policy a line: bench/run.sh reads it line by line. */
static int print_json(const Options *o, const IdCtrl *id, const SimDrive *d, const Trace *t, const SimSegment *segs,
                      size_t n_segs, const char *chosen, const char *section, const Row *rows, size_t n_rows,
                      const Row *opt) {
        static const char *const split[] = { "policies", NULL };
        _cleanup_(json_object_putp) struct json_object *doc = json_object_new_object();
        struct json_object *model = json_object_new_object(), *policies = json_object_new_array();

        (void) json_object_object_add(doc, "drive", json_drive(o, id, d));
        (void) json_object_object_add(doc, "trace", json_trace(o, t, segs, n_segs));
        (void) json_object_object_add(model, "service_us", json_out_fixed((double) o->service_ns / 1e3, 3));
        (void) json_object_object_add(model, "closed_loop", json_object_new_boolean(o->closed_loop));
        (void) json_object_object_add(model, "copies", json_object_new_uint64(o->copies));
        (void) json_object_object_add(model, "exlat_scale", json_out_general(o->exlat_scale, 6));
        (void) json_object_object_add(model, "watch_source", json_object_new_string(adapt_source_to_string(o->source)));
        (void) json_object_object_add(doc, "model", model);
        (void) json_object_object_add(doc, "policy", json_object_new_string(chosen));
        (void) json_object_object_add(doc, "config_section", json_out_string_or_null(section[0] ? section : NULL));
        for (size_t i = 0; i <= n_rows; i++)
                (void) json_object_array_add(policies, json_row(d, i < n_rows ? &rows[i] : opt, opt, o->timeline));
        (void) json_object_object_add(doc, "policies", policies);
        (void) json_object_object_add(doc, "reprograms", json_reprograms(&rows[0].res));
        return json_out_print_lines(stdout, doc, split);
}

static void print_human(const Options *o, const IdCtrl *id, const SimDrive *d, const Trace *t,
                        const SimSegment *segs, size_t n_segs, const char *chosen, const char *section,
                        const Row *rows, size_t n_rows, const Row *opt, const ApstTable *chosen_table) {
        char desc[512];
        uint64_t span = t->n ? t->io[t->n - 1].t_ns : 0;

        printf("Drive:  %s (fw %s), %u power states, APST %s\n", id->model, id->firmware, d->npss + 1,
               id->apst_supported ? "supported" : "NOT supported");
        printf("        PS0 idle %.3f W (%s)\n", d->ps[0].power_uw / 1e6,
               d->p0_reported ? "reported by the drive" : "assumed: the drive does not report it; --idle-power-w");
        if (n_segs > 0)
                printf("Trace:  a sequence of %zu: %s, %zu I/Os over %.3f s", n_segs, trace_format_to_string(t->format),
                       t->n, (double) span * 1e-9);
        else
                printf("Trace:  %s: %s, %zu I/Os over %.3f s", o->trace, trace_format_to_string(t->format), t->n,
                       (double) span * 1e-9);
        if (t->format == TRACE_FORMAT_BLKPARSE)
                printf(" (device %s, %c events)", t->device, t->action);
        printf("\nModel:  %.0f µs per I/O, %s loop", (double) o->service_ns / 1e3, o->closed_loop ? "closed" : "open");
        if (o->exlat_scale != 1.0)
                printf(", exit latencies %g x the advertised ones", o->exlat_scale);
        if (o->copies > 1)
                printf(", the last of %u copies scored (the policy kept what it learned)", o->copies);
        printf("\n");
        /* The table the run started on, which for the adaptive policy's exact source is the kernel's,
         * not adapt_init()'s plan; and, when the policy changed it, how often and to what last. */
        const SimResult *res = &rows[0].res;
        apst_describe(res->n_reprograms > 0 ? &res->reprograms[0].table : chosen_table, id, desc, sizeof desc);
        printf("Policy: %s%s%s%s: %s%s\n", chosen, section[0] ? " (config section " : "", section,
               section[0] ? ")" : "", res->n_reprograms > 1 ? "started on " : "", desc);
        if (res->n_reprograms > 1) {
                const SimReprogram *last = &res->reprograms[res->n_reprograms - 1];
                apst_describe(&last->table, id, desc, sizeof desc);
                printf("        %zu table%s written since; the last at %.1f s: %s\n", res->n_reprograms - 1,
                       res->n_reprograms > 2 ? "s" : "", (double) last->t_ns * 1e-9, desc);
        }
        printf("\n");

        printf("%-14s %11s %9s %8s %8s %9s %9s %9s %9s %9s %9s  %s\n", "policy", "energy J", "mean W", "vs opt",
               "I/Os", "stall s", "add mean", "add p99", "add p99.9", "add max", "wall +s", "wake-ups");
        for (size_t i = 0; i <= n_rows; i++) {
                const Row *row = i < n_rows ? &rows[i] : opt;
                const SimResult *r = &row->res;
                char wk[256] = "";
                size_t off = 0;
                for (unsigned s = 1; s <= d->npss && off < sizeof wk; s++)
                        if (r->wakeups[s])
                                off += (size_t) snprintf(wk + off, sizeof wk - off, "%sps%u:%" PRIu64, off ? " " : "",
                                                         s, r->wakeups[s]);
                printf("%-14s %11.6f %9.6f %8.3f %8" PRIu64 " %9.6f %8.3fms %7.3fms %7.3fms %7.3fms %9.6f  %s\n",
                       row->name, r->energy_j, r->mean_power_w, ratio(r->energy_j, opt->res.energy_j), r->ios,
                       (double) r->stall_ns * 1e-9, r->added_mean_ns * 1e-6, (double) r->added_p99_ns * 1e-6,
                       (double) r->added_p999_ns * 1e-6, (double) r->added_max_ns * 1e-6,
                       (double) r->added_wall_ns * 1e-9, wk[0] ? wk : "-");
        }
        if (n_segs == 0)
                return;
        /* A sequence: each trace on its own, and its first --window, against the kernel's table. */
        const SimResult *k = &rows[2].res;
        printf("\n%-3s %-28s %-6s %9s %9s %9s %9s %12s %12s\n", "#", "trace", "loop", "span s", "E/kern", "stall/k",
               "wall +%", "first E/kern", "first stall/k");
        for (size_t i = 0; i < n_segs && i < res->n_segments && i < k->n_segments; i++) {
                const SimSegmentResult *g = &res->segments[i], *gk = &k->segments[i];
                uint64_t job = g->whole.span_ns > (uint64_t) MAX(g->added_wall_ns, 0) ?
                                       g->whole.span_ns - (uint64_t) MAX(g->added_wall_ns, 0) : 0;
                printf("%-3zu %-28.28s %-6s %9.1f %9.3f %9.3f %9.3f %12.3f %12.3f\n", i + 1, o->traces[i],
                       segs[i].closed_loop ? "closed" : "open", (double) g->whole.span_ns * 1e-9,
                       ratio(g->whole.energy_j, gk->whole.energy_j),
                       ratio((double) g->whole.stall_ns, (double) gk->whole.stall_ns),
                       job > 0 ? 100.0 * (double) g->added_wall_ns / (double) job : 0.0,
                       ratio(g->window.energy_j, gk->window.energy_j),
                       ratio((double) g->window.stall_ns, (double) gk->window.stall_ns));
        }
}

/* The drive: Identify data from a file, as the model sees it. */
static int load_drive(const Options *o, IdCtrl *id, SimDrive *d) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;   /* set by read_full_file() on success; see cmd-plan.c */
        int r;

        r = read_full_file(o->id_ctrl, IDCTRL_FILE_MAX, READ_FULL_ALLOW_STDIN, &buf, &len);
        if (r < 0) {
                log_error("%s: %s", o->id_ctrl, strerror(-r));
                return r;
        }
        r = idctrl_parse_any(buf, len, id);
        if (r < 0) {
                log_error("%s: not Identify Controller data (binary or nvme-cli JSON): %s", o->id_ctrl,
                          strerror(-r));
                return r;
        }
        r = sim_drive_from_idctrl(id, o->p0_uw, d);
        if (r >= 0)
                r = sim_drive_scale_exlat(d, o->exlat_scale);
        if (r < 0)
                log_error("%s: %s", o->id_ctrl, strerror(-r));
        return r;
}

/* One trace file (or standard input). */
static int load_one_trace(const Options *o, const char *path, Trace *t) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        TraceError te = {};
        TraceOptions topts = { .device = o->device, .action = o->event };
        int r;

        r = read_full_file(path, TRACE_FILE_MAX, READ_FULL_ALLOW_STDIN, &buf, &len);
        if (r < 0) {
                log_error("%s: %s", path, strerror(-r));
                return r;
        }
        r = trace_parse(buf, len, &topts, t, &te);
        if (r == -EBADMSG) {
                log_error("%s:%zu: %s", strcmp(path, "-") == 0 ? "<stdin>" : path, te.line, te.reason);
                return r;
        }
        if (r < 0) {
                log_error("%s: %s", path, strerror(-r));
                return r;
        }
        if (t->n == 0)
                log_warning("%s: no I/O in the trace", path);
        return 0;
}

/* The workload: one trace, or a sequence of them (--trace given more than once) played one after
 * the other as one trace with its segments (@segs, @ret_n_segs: 0 for a single trace): each one
 * starts --segment-gap after the previous one's last I/O, its own times kept relative to that. */
static int load_trace(const Options *o, Trace *t, SimSegment segs[static SIM_SEGMENTS_MAX], size_t *ret_n_segs) {
        Trace all = {};
        uint64_t start = 0;
        int r;

        *ret_n_segs = 0;
        if (o->n_traces <= 1)
                return load_one_trace(o, o->trace, t);
        for (size_t i = 0; i < o->n_traces; i++) {
                _cleanup_(trace_done) Trace one = {};

                r = load_one_trace(o, o->traces[i], &one);
                if (r < 0)
                        goto fail;
                if (one.n == 0) {
                        log_error("%s: a trace of a sequence needs at least one I/O", o->traces[i]);
                        r = -EINVAL;
                        goto fail;
                }
                if (one.io[one.n - 1].t_ns > (uint64_t) TRACE_TIME_MAX_S * UINT64_C(1000000000) - start) {
                        log_error("%s: the sequence lasts longer than %u s", o->traces[i], (unsigned) TRACE_TIME_MAX_S);
                        r = -E2BIG;
                        goto fail;
                }
                TraceIo *q = reallocarray(all.io, all.n + one.n, sizeof(TraceIo));
                if (!q) {
                        r = -ENOMEM;
                        goto fail;
                }
                all.io = q;
                segs[i] = (SimSegment) { .first = all.n, .start_ns = start,
                                         .closed_loop = o->closed_loop || o->closed_segment[i] };
                for (size_t k = 0; k < one.n; k++) {
                        all.io[all.n + k] = one.io[k];
                        all.io[all.n + k].t_ns += start;
                }
                all.n += one.n;
                if (i == 0) {
                        all.format = one.format;
                        memcpy(all.device, one.device, sizeof all.device);
                        all.action = one.action;
                }
                start = all.io[all.n - 1].t_ns + o->segment_gap_ns;
        }
        *t = all;
        *ret_n_segs = o->n_traces;
        return 0;
fail:
        trace_done(&all);
        return r;
}

/* The chosen policy's table, then the baselines': APST off and the kernel's defaults. Return: 0 or -errno
 * (said). */
static int build_tables(const Options *o, const IdCtrl *id, const ApstParams *params, SimulatePolicy kind,
                        ApstTable tables[3]) {
        ApstParams kernel_params = APST_PARAMS_DEFAULT;
        int r;

        kernel_params.policy = APST_POLICY_KERNEL;
        r = build_table(id, &o->platform, params, kind, &tables[0]);
        if (r >= 0)
                r = build_table(id, &o->platform, NULL, SIMULATE_POLICY_NONE, &tables[1]);
        if (r >= 0)
                r = build_table(id, &o->platform, &kernel_params, SIMULATE_POLICY_KERNEL, &tables[2]);
        if (r < 0)
                log_error("cannot build the APST table: %s", strerror(-r));
        return r;
}

/* Run the trace through one row's table; @kind SIMULATE_POLICY_ADAPTIVE (with @params) runs the daemon's own
 * decision code in @adapt, fed what it would observe; adapt_init() writes its starting table into @table,
 * and on the exact source the row reports @adapt's shadow kernel. With --repeat, @first (may be NULL) gets
 * the first copy's figures. Return: 0 or -errno (said). */
static int simulate_row(const Options *o, const IdCtrl *id, const SimDrive *d, const Trace *t, const SimParams *sp,
                        const ApstParams *params, SimulatePolicy kind, Adapt *adapt, ApstTable *table, Row *row,
                        Row *first) {
        SimPolicy pol;
        int r;

        sim_policy_static(&pol, row->name, table);
        if (kind == SIMULATE_POLICY_ADAPTIVE) {
                r = adapt_init(adapt, id, &o->platform, params, 0, table);
                if (r < 0)
                        return log_error_errno(r, "adaptive policy: %s", strerror(-r));
                if (o->source == ADAPT_SOURCE_BPF) {
                        adapt_sim_policy_gaps(&pol, adapt);
                        row->shadow = adapt;
                } else
                        adapt_sim_policy(&pol, adapt);
        }
        r = sim_run_repeat(d, t->io, t->n, sp, &pol, o->copies, &row->res, first ? &first->res : NULL);
        if (r < 0)
                return log_error_errno(r, "simulating %s: %s", row->name, strerror(-r));
        return 0;
}

/* The hindsight row: the least-energy static table on this trace within --hindsight-share of the wake
 * delay of the kernel's table (@kernel) on it, the drive's quirks honoured. Return: 0 or -errno (said). */
static int hindsight_row(const Options *o, const IdCtrl *id, const SimDrive *d, const Trace *t, const SimParams *sp,
                         const ApstParams *params, const ApstTable *kernel, ApstTable *table, Row *row) {
        unsigned quirks = params->force ? 0 : apst_quirks(id, &o->platform);
        HindsightResult h;
        int r;

        r = hindsight_search(id, quirks, params, d, t->io, t->n, sp, kernel, o->hindsight_share, &h);
        if (r < 0)
                return log_error_errno(r, "hindsight: %s", strerror(-r));
        log_debug("hindsight: %u tables tried, %s", h.candidates,
                  h.kernel_won ? "the kernel's won" : "one beat the kernel's");
        *table = h.table;
        row->res = h.res;
        return 0;
}

static int run(const Options *o) {
        _cleanup_free_ Adapt *adapt = NULL;
        IdCtrl id;
        SimDrive d;
        Trace t = {};
        ApstParams params;
        ApstTable tables[3];
        char section[128];
        SimulatePolicy kind;
        SimSegment segs[SIM_SEGMENTS_MAX];
        size_t n_segs;
        int r;

        r = load_drive(o, &id, &d);
        if (r < 0)
                return r;
        r = load_trace(o, &t, segs, &n_segs);
        if (r < 0)
                return r;

        r = resolve_policy(o, &id, &params, &kind, section, sizeof section);
        if (r < 0)
                goto finish;

        /* Rows: the chosen policy, then the baselines every run reports; with --repeat, the chosen
         * policy's first copy (a cold run) last. */
        char first_name[32];
        const char *names[3] = { simulate_policy_to_string(kind), "none", "kernel" };
        bool with_first = o->copies > 1 && kind != SIMULATE_POLICY_HINDSIGHT;
        (void) snprintf(first_name, sizeof first_name, "%s-copy1", names[0] ? names[0] : "policy");
        r = build_tables(o, &id, &params, kind, tables);
        if (r < 0)
                goto finish;

        SimParams sp = { .service_ns = o->service_ns, .closed_loop = o->closed_loop, .timeline = o->timeline,
                         .segments = n_segs > 0 ? segs : NULL, .n_segments = n_segs, .window_ns = o->window_ns };
        Row rows[4] = { [3] = { .name = first_name } }, opt = { .name = "optimum" };
        size_t done = 0;
        adapt = calloc(1, sizeof(Adapt));
        if (!adapt) {
                r = -ENOMEM;
                goto finish;
        }
        for (; done < 3; done++) {
                rows[done].name = names[done];
                if (done == 0 && kind == SIMULATE_POLICY_HINDSIGHT) {
                        r = hindsight_row(o, &id, &d, &t, &sp, &params, &tables[2], &tables[0], &rows[0]);
                        if (r < 0)
                                goto free_rows;
                        continue;
                }
                r = simulate_row(o, &id, &d, &t, &sp, done == 0 ? &params : NULL,
                                 done == 0 ? kind : _SIMULATE_POLICY_INVALID, adapt, &tables[done], &rows[done],
                                 done == 0 && with_first ? &rows[3] : NULL);
                if (r < 0)
                        goto free_rows;
        }
        r = sim_optimum(&d, t.io, t.n, &sp, &opt.res);
        if (r < 0) {
                log_error("computing the optimum: %s", strerror(-r));
                goto free_rows;
        }

        if (o->json)
                r = print_json(o, &id, &d, &t, segs, n_segs, names[0], section, rows, with_first ? 4 : 3, &opt);
        else
                print_human(o, &id, &d, &t, segs, n_segs, names[0], section, rows, with_first ? 4 : 3, &opt,
                            &tables[0]);
        if (r < 0 || fflush(stdout) != 0 || ferror(stdout)) {
                r = -EIO;
                log_error("writing the output failed");
        }
        sim_result_done(&opt.res);
free_rows:
        for (size_t i = 0; i < done; i++)
                sim_result_done(&rows[i].res);
        sim_result_done(&rows[3].res);
finish:
        trace_done(&t);
        return r;
}

int verb_simulate(int argc, char *argv[]) {
        Options o = { .p0_uw = SIM_P0_DEFAULT_UW, .service_ns = SIM_SERVICE_DEFAULT_NS, .exlat_scale = 1.0,
                      .hindsight_share = 1.0, .copies = 1, .window_ns = UINT64_C(60000000000),
                      .segment_gap_ns = UINT64_C(1000000000),
                      .source = ADAPT_SOURCE_BPF };
        int r;

        r = parse_argv(argc, argv, &o);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        return run(&o) < 0 ? 1 : 0;
}
