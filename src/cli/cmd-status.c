/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd status`: what the running daemon is doing, read over its D-Bus
 * API (bus-api.h, doc/dbus-api.md) -- one block per controller, the way
 * `systemctl status` shows a unit, or one JSON object. Without a daemon on
 * the bus it says so and shows what `plan` computes instead.
 *
 * The output is built from whatever properties the objects have: a property
 * added to the API later shows up in --json without a change here.
 */

#include <getopt.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "bus-api.h"
#include "cli.h"
#include "json-out.h"
#include "plan.h"
#include "log.h"
#include "shadow.h"
#include "verbs.h"

#define STATUS_MAX_PROPS 48
/* Manager1.Holds (doc/dbus-api.md): an array of (cookie, controller, max_latency_usec, application_id,
 * reason, uid, pid, since) */
#define HOLDS_SIGNATURE "a(ustssuut)"
/* Controller1.ExitLatencies: an array of (power state, advertised µs, planned µs, source) */
#define EXIT_LATENCIES_SIGNATURE "a(yuus)"

typedef struct Prop {
        char name[48];
        char type;                 /* 's', 'o', 't', 'b', 'a' (at / au / ao), 'h' (the holds) or 'x' (the exit
                                    * latencies) */
        char elem;                 /* of an 'a': 't', 'u' or 'o' */
        char *str;                 /* s, o */
        uint64_t u;                /* t, b */
        uint64_t *arr;             /* at, au */
        char **strv;               /* ao */
        size_t n_arr;
        JsonHold *holds;           /* a(ustssuut): Manager1.Holds */
        size_t n_holds;
        JsonExitLatency *exlat;    /* a(yuus): Controller1.ExitLatencies */
        size_t n_exlat;
} Prop;

typedef struct Props {
        Prop p[STATUS_MAX_PROPS];
        size_t n;
} Props;

static void holds_free(JsonHold *h, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(h[i].controller);
                free(h[i].application_id);
                free(h[i].reason);
        }
        free(h);
}

static void props_done(Props *ps) {
        for (size_t i = 0; i < ps->n; i++) {
                holds_free(ps->p[i].holds, ps->p[i].n_holds);
                free(ps->p[i].str);
                free(ps->p[i].arr);
                free(ps->p[i].exlat);
                if (ps->p[i].strv)
                        for (size_t j = 0; j < ps->p[i].n_arr; j++)
                                free(ps->p[i].strv[j]);
                free(ps->p[i].strv);
        }
        ps->n = 0;
}

static const Prop *prop(const Props *ps, const char *name) {
        for (size_t i = 0; i < ps->n; i++)
                if (strcmp(ps->p[i].name, name) == 0)
                        return &ps->p[i];
        return NULL;
}

static const char *prop_s(const Props *ps, const char *name) {
        const Prop *p = prop(ps, name);
        return p && p->str ? p->str : "";
}

static uint64_t prop_t(const Props *ps, const char *name) {
        const Prop *p = prop(ps, name);
        return p ? p->u : 0;
}

/* An "at" or "au" variant into p->arr (64-bit either way). */
static int read_numbers(sd_bus_message *m, const char *contents, Prop *p) {
        const void *a;
        size_t sz = 0, width = contents[1] == 't' ? sizeof(uint64_t) : sizeof(uint32_t);
        int r;

        p->type = 'a';
        p->elem = contents[1];
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r >= 0)
                r = sd_bus_message_read_array(m, contents[1], &a, &sz);
        if (r < 0)
                return r;
        p->n_arr = sz / width;
        if (p->n_arr > 0) {
                p->arr = calloc(p->n_arr, sizeof(uint64_t));
                if (!p->arr)
                        return -ENOMEM;
                for (size_t i = 0; i < p->n_arr; i++) {
                        uint32_t u32;

                        if (width == sizeof(uint64_t))
                                memcpy(&p->arr[i], (const uint8_t *) a + i * width, width);
                        else {
                                memcpy(&u32, (const uint8_t *) a + i * width, width);
                                p->arr[i] = u32;
                        }
                }
        }
        return sd_bus_message_exit_container(m);
}

/* Manager1.Holds, a(ustssuut) (doc/dbus-api.md): (cookie, controller, max latency, application id, reason,
 * uid, pid, since) per hold. */
static int read_holds(sd_bus_message *m, Prop *p) {
        const char *ctrl, *app, *reason;
        JsonHold h = {};
        int r;

        p->type = 'h';
        r = sd_bus_message_enter_container(m, 'v', HOLDS_SIGNATURE);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', HOLDS_SIGNATURE + 1);
        while (r >= 0 && (r = sd_bus_message_read(m, "(ustssuut)", &h.cookie, &ctrl, &h.max_latency_usec, &app,
                                                  &reason, &h.uid, &h.pid, &h.since_usec)) > 0) {
                JsonHold *n = reallocarray(p->holds, p->n_holds + 1, sizeof *n);

                if (!n)
                        return -ENOMEM;
                p->holds = n;
                h.controller = strdup(ctrl);
                h.application_id = strdup(app);
                h.reason = strdup(reason);
                p->holds[p->n_holds++] = h;
                if (!h.controller || !h.application_id || !h.reason)
                        return -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

/* Controller1.ExitLatencies, a(yuus) (doc/dbus-api.md). */
static int read_exit_latencies(sd_bus_message *m, Prop *p) {
        const char *source;
        uint8_t ps;
        uint32_t advertised, planned;
        int r;

        p->type = 'x';
        r = sd_bus_message_enter_container(m, 'v', EXIT_LATENCIES_SIGNATURE);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', EXIT_LATENCIES_SIGNATURE + 1);
        while (r >= 0 && (r = sd_bus_message_read(m, "(yuus)", &ps, &advertised, &planned, &source)) > 0) {
                JsonExitLatency *n = reallocarray(p->exlat, p->n_exlat + 1, sizeof *n);

                if (!n)
                        return -ENOMEM;
                p->exlat = n;
                n[p->n_exlat] = (JsonExitLatency) { .ps = ps, .advertised_us = advertised, .planned_us = planned };
                (void) snprintf(n[p->n_exlat].source, sizeof n[p->n_exlat].source, "%s", source);
                p->n_exlat++;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r;
}

static int read_variant(sd_bus_message *m, Prop *p) {
        const char *contents = NULL, *s;
        char type = 0;
        int r, b;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        if (strcmp(contents, "s") == 0 || strcmp(contents, "o") == 0) {
                r = sd_bus_message_read(m, "v", contents, &s);
                if (r < 0)
                        return r;
                p->type = contents[0];
                p->str = strdup(s);
                return p->str ? 0 : -ENOMEM;
        }
        if (strcmp(contents, "t") == 0) {
                p->type = 't';
                return sd_bus_message_read(m, "v", "t", &p->u);
        }
        if (strcmp(contents, "u") == 0) {   /* a number like the others (EventSources) */
                uint32_t u32;

                p->type = 't';
                r = sd_bus_message_read(m, "v", "u", &u32);
                p->u = u32;
                return r;
        }
        if (strcmp(contents, "b") == 0) {
                p->type = 'b';
                r = sd_bus_message_read(m, "v", "b", &b);
                p->u = b != 0;
                return r;
        }
        if (strcmp(contents, "at") == 0 || strcmp(contents, "au") == 0)
                return read_numbers(m, contents, p);
        if (strcmp(contents, HOLDS_SIGNATURE) == 0)
                return read_holds(m, p);
        if (strcmp(contents, EXIT_LATENCIES_SIGNATURE) == 0)
                return read_exit_latencies(m, p);
        if (strcmp(contents, "ao") == 0) {
                char **l = NULL;

                p->type = 'a';
                p->elem = 'o';
                r = sd_bus_message_enter_container(m, 'v', "ao");
                if (r >= 0)
                        r = sd_bus_message_read_strv(m, &l);
                if (r < 0)
                        return r;
                p->strv = l;
                while (l && l[p->n_arr])
                        p->n_arr++;
                return sd_bus_message_exit_container(m);
        }
        return sd_bus_message_skip(m, "v");   /* a type this version does not know: left out */
}

/* GetAll on @path's @iface into @ret. */
static int get_all(sd_bus *bus, const char *path, const char *iface, sd_bus_error *error, Props *ret) {
        sd_bus_message *reply = NULL;
        const char *name;
        int r;

        r = sd_bus_call_method(bus, BUS_API_NAME, path, "org.freedesktop.DBus.Properties", "GetAll", error, &reply,
                               "s", iface);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                Prop *p = &ret->p[ret->n];

                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        break;
                if (ret->n >= STATUS_MAX_PROPS) {
                        r = sd_bus_message_skip(reply, "v");
                } else {
                        *p = (Prop) {};
                        (void) snprintf(p->name, sizeof p->name, "%s", name);
                        ret->n++;
                        r = read_variant(reply, p);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

/* ---- output ---- */

/* "MaxLatencyUSec" -> "max_latency_usec" */
static void snake_case(const char *in, char *out, size_t n) {
        size_t k = 0;

        for (size_t i = 0; in[i] && k + 2 < n; i++) {
                char c = in[i];
                bool upper = c >= 'A' && c <= 'Z';
                bool prev_lower = i > 0 && ((in[i - 1] >= 'a' && in[i - 1] <= 'z') ||
                                            (in[i - 1] >= '0' && in[i - 1] <= '9'));

                if (upper && prev_lower)
                        out[k++] = '_';
                out[k++] = upper ? (char) (c - 'A' + 'a') : c;
        }
        out[k] = 0;
}

/* One JSON string, escaped by json-c like every other --json output. */
static void json_string(FILE *f, const char *s) {
        struct json_object *o = json_object_new_string(s ? s : "");

        fputs(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "\"\"",
              f);
        json_object_put(o);
}

/* Every property but those the caller prints itself (@skip_a, @skip_b; NULL for none). */
static void json_props(const Props *ps, const char *skip_a, const char *skip_b) {
        bool first = true;

        for (size_t i = 0; i < ps->n; i++) {
                const Prop *p = &ps->p[i];
                char key[64];

                if ((skip_a && strcmp(p->name, skip_a) == 0) || (skip_b && strcmp(p->name, skip_b) == 0) ||
                    p->type == 'h' || p->type == 'x')
                        continue;
                snake_case(p->name, key, sizeof key);
                printf("%s\"%s\": ", first ? "" : ", ", key);
                first = false;
                switch (p->type) {
                case 's':
                case 'o':
                        json_string(stdout, p->str);
                        break;
                case 't':
                        printf("%" PRIu64, p->u);
                        break;
                case 'b':
                        printf("%s", p->u ? "true" : "false");
                        break;
                case 'a':
                        printf("[");
                        for (size_t j = 0; j < p->n_arr; j++) {
                                printf(j ? ", " : "");
                                if (p->arr && p->elem == 'u')
                                        printf("%" PRIu64, p->arr[j]);
                                else if (p->arr)
                                        printf("\"0x%016" PRIx64 "\"", p->arr[j]);
                                else
                                        json_string(stdout, p->strv[j]);
                        }
                        printf("]");
                        break;
                default:
                        printf("null");
                }
        }
}

static void format_since(uint64_t usec, char *buf, size_t n) {
        struct timespec now;
        struct tm tm;
        time_t t = (time_t) (usec / 1000000u);
        char when[64];
        uint64_t ago;

        if (usec == 0 || !localtime_r(&t, &tm) || strftime(when, sizeof when, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0) {
                (void) snprintf(buf, n, "never");
                return;
        }
        (void) clock_gettime(CLOCK_REALTIME, &now);
        ago = (uint64_t) now.tv_sec > usec / 1000000u ? (uint64_t) now.tv_sec - usec / 1000000u : 0;
        if (ago >= 86400)
                (void) snprintf(buf, n, "%s; %" PRIu64 "d %" PRIu64 "h ago", when, ago / 86400, ago % 86400 / 3600);
        else if (ago >= 3600)
                (void) snprintf(buf, n, "%s; %" PRIu64 "h %" PRIu64 "min ago", when, ago / 3600, ago % 3600 / 60);
        else if (ago >= 60)
                (void) snprintf(buf, n, "%s; %" PRIu64 "min %" PRIu64 "s ago", when, ago / 60, ago % 60);
        else
                (void) snprintf(buf, n, "%s; %" PRIu64 "s ago", when, ago);
}

/* 100000 -> "100 ms", 10300 -> "10.3 ms", 800 -> "800 us" */
static void format_usec(uint64_t us, char *buf, size_t n) {
        if (us < 1000)
                (void) snprintf(buf, n, "%" PRIu64 " us", us);
        else if (us % 1000 == 0)
                (void) snprintf(buf, n, "%" PRIu64 " ms", us / 1000);
        else
                (void) snprintf(buf, n, "%" PRIu64 ".%" PRIu64 " ms", us / 1000, us % 1000 / 100);
}

static const char *state_mark(const char *state) {
        if (strcmp(state, "programmed") == 0)
                return "●";
        if (strcmp(state, "failed") == 0)
                return "×";
        return "○";
}

/* A hold sets the budget in force (HeldBy, EffectiveMaxLatencyUSec: doc/dbus-api.md "Holds"). */
static void print_ctrl_held(const Props *c) {
        const Prop *by = prop(c, "HeldBy");
        char t[32];

        if (!by || !by->arr || by->n_arr == 0)
                return;
        format_usec(prop_t(c, "EffectiveMaxLatencyUSec"), t, sizeof t);
        printf("       Held: latency budget %s in force, set by hold", t);
        for (size_t i = 0; i < by->n_arr; i++)
                printf("%s %" PRIu64, i ? "," : "", by->arr[i]);
        printf("\n");
}

/* The states planned with a larger exit latency than advertised, in `plan`'s words (cmd-plan.c). */
static void print_ctrl_exit_latencies(const Props *c) {
        const Prop *x = prop(c, "ExitLatencies");

        for (size_t i = 0; x && i < x->n_exlat; i++) {
                const JsonExitLatency *e = &x->exlat[i];

                printf("%s ps%" PRIu32 ": ", i ? "            " : "    Wake-up:", e->ps);
                if (strcmp(e->source, "configuration") == 0)
                        printf("%" PRIu32 " µs from configuration", e->planned_us);
                else
                        printf("%s %" PRIu32 " µs", e->source, e->planned_us);
                printf(": planned with it (advertised %" PRIu32 " µs)\n", e->advertised_us);
        }
}

static void print_ctrl(const Props *c) {
        const char *state = prop_s(c, "State"), *policy = prop_s(c, "Policy"), *section = prop_s(c, "DeviceSection");
        const char *fw = prop_s(c, "Firmware");
        char since[128], t1[32], t2[32];

        printf("%s %s - %s%s%s%s\n", state_mark(state), prop_s(c, "Name"), prop_s(c, "Model"),
               fw[0] ? " (firmware " : "", fw, fw[0] ? ")" : "");
        format_since(prop_t(c, "LastChangeUSec"), since, sizeof since);
        printf("      State: %s; table last written: %s\n", state, since);
        if (prop_t(c, "LastChangeUSec"))
                printf("     Reason: %s\n", prop_s(c, "LastChangeReason"));
        if (policy[0]) {
                format_usec(prop_t(c, "MaxLatencyUSec"), t1, sizeof t1);
                printf("        Why: %s policy, latency budget %s", policy, t1);
                if (section[0])
                        printf(", [device %s]", section);
                printf("\n");
                print_ctrl_held(c);
                print_ctrl_exit_latencies(c);
        } else if (strcmp(state, "unsupported") == 0)
                printf("        Why: the controller does not support APST (apsta = 0)\n");
        else if (strcmp(state, "left-alone") == 0)
                printf("        Why: enable = no in its [device] section\n");
        else if (strcmp(state, "not-pcie") == 0)
                printf("        Why: not a PCIe controller\n");
        if (prop_s(c, "Table")[0]) {
                printf("      Table: %s\n", prop_s(c, "Table"));
                printf("             %s\n", prop_s(c, "TableDescription"));
        }
        printf("     Writes: %" PRIu64 ", kernel overwrites seen: %" PRIu64 ", errors: %" PRIu64 "\n",
               prop_t(c, "TableWrites"), prop_t(c, "KernelOverwrites"), prop_t(c, "Errors"));
        if (prop(c, "QuarantinedBelow") && prop_t(c, "QuarantinedBelow") < QUARANTINE_NONE) {
                char q[32];
                quarantine_describe((uint8_t) prop_t(c, "QuarantinedBelow"), q, sizeof q);
                printf(" Quarantine: %s (it failed in a power state; nvme-apstd quarantine)\n", q);
        }
        if (prop(c, "Watched") && prop_t(c, "Watched")) {   /* only a watched controller has observations */
                format_usec(prop_t(c, "ObservedStallUSec"), t2, sizeof t2);
                printf("   Observed: %" PRIu64 " I/Os, %s of stall (source: %s)\n", prop_t(c, "ObservedIOs"), t2,
                       prop(c, "WatchSource") && prop_s(c, "WatchSource")[0] ? prop_s(c, "WatchSource") : "stat");
        }
        if (prop(c, "SavingsKnown") && prop_t(c, "SavingsKnown")) {
                /* the shadow kernel: what the applied tables cost beside what the kernel's would have */
                ShadowSums a = { .energy_uwns = (double) prop_t(c, "EnergyUJ") * 1e9,
                                 .wake_ns = (double) prop_t(c, "WakeDelayUSec") * 1e3 },
                           k = { .energy_uwns = (double) prop_t(c, "KernelEnergyUJ") * 1e9,
                                 .wake_ns = (double) prop_t(c, "KernelWakeDelayUSec") * 1e3 },
                           wa = { .energy_uwns = (double) prop_t(c, "WindowEnergyUJ") * 1e9,
                                  .wake_ns = (double) prop_t(c, "WindowWakeDelayUSec") * 1e3 },
                           wk = { .energy_uwns = (double) prop_t(c, "WindowKernelEnergyUJ") * 1e9,
                                  .wake_ns = (double) prop_t(c, "WindowKernelWakeDelayUSec") * 1e3 };
                char total[200], window[200];

                shadow_describe(&a, &k, total, sizeof total);
                printf("    Savings: since start: %s;\n", total);
                if (wk.energy_uwns > 0) {
                        shadow_describe(&wa, &wk, window, sizeof window);
                        printf("             last %u s: %s\n", (unsigned) (SHADOW_WINDOW_NS / 1000000000u),
                               window);
                } else
                        printf("             last %u s: on the kernel's table\n",
                               (unsigned) (SHADOW_WINDOW_NS / 1000000000u));
                if (prop_t(c, "GuardFallbacks"))
                        printf("             the guard put the kernel's table back %" PRIu64 " time%s\n",
                               prop_t(c, "GuardFallbacks"), prop_t(c, "GuardFallbacks") == 1 ? "" : "s");
        }
}

/* ---- no daemon: the plan ---- */

/* What the daemon would program: `plan`'s data, in its words or nested in our JSON object.
 * Return: 0, or 1 when the configuration or a controller could not be read (logged). */
static int show_plan(const char *config_path, bool json, const char *why) {
        _cleanup_(plan_result_done) PlanResult p = {};
        _cleanup_(config_done) Config cfg;
        int r;

        config_init(&cfg);
        r = cli_load_config(config_path, &cfg);
        if (r >= 0)
                r = plan_collect(&cfg, NULL, 0, &p);
        if (!json) {
                printf("nvme-apstd is not running (%s).\nWhat it would program (nvme-apstd plan):\n\n", why);
                if (r >= 0)
                        plan_print_text(&cfg, &p);
                return r < 0 || p.failed ? 1 : 0;
        }

        _cleanup_(json_object_putp) struct json_object *top = json_object_new_object();
        (void) json_object_object_add(top, "running", json_object_new_boolean(false));
        (void) json_object_object_add(top, "reason", json_object_new_string(why));
        (void) json_object_object_add(top, "plan", r >= 0 ? plan_to_json(&cfg, &p) : NULL);
        if (json_out_print(stdout, top, JSON_OUT_FLAGS | JSON_C_TO_STRING_SPACED) < 0) {
                log_error("Cannot write the JSON output.");
                return 1;
        }
        return r < 0 || p.failed ? 1 : 0;
}

/* ---- the verb ---- */

static void help(void) {
        printf("Usage: nvme-apstd status [OPTIONS]\n\n"
               "Show what the running daemon does to each controller, read over its D-Bus API.\n"
               "Without a running daemon, say so and show `nvme-apstd plan`.\n\n"
               "  -j --json            print one JSON object\n"
               "  -c --config FILE     configuration for the plan shown when no daemon runs\n"
               "  -h --help            show this help\n"
               "     --version         show the version\n\n"
               "Exit status: 0 the daemon answered, 3 it is not running, 1 any other failure.\n");
}

static bool is_not_running(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

/* ---- the holds ---- */

/* Whether controller @c says hold @cookie sets its budget (its HeldBy). */
static bool held_by(const Props *c, uint32_t cookie) {
        const Prop *p = prop(c, "HeldBy");

        for (size_t i = 0; p && p->arr && i < p->n_arr; i++)
                if (p->arr[i] == cookie)
                        return true;
        return false;
}

/* For each hold, the names of the controllers whose budget it sets: NULL-terminated lists of pointers into
 * @ctrls (freed with holds_sets_free()). NULL when out of memory. */
static char ***holds_sets(const Prop *holds, const Props *ctrls, size_t n_ctrls) {
        char ***sets = calloc(holds->n_holds + 1, sizeof *sets);

        for (size_t i = 0; sets && i < holds->n_holds; i++) {
                size_t k = 0;

                sets[i] = calloc(n_ctrls + 1, sizeof *sets[i]);
                if (!sets[i])
                        return NULL;    /* the caller frees what there is */
                for (size_t j = 0; j < n_ctrls; j++)
                        if (held_by(&ctrls[j], holds->holds[i].cookie))
                                sets[i][k++] = (char *) prop_s(&ctrls[j], "Name");
        }
        return sets;
}

static void holds_sets_free(char ***sets, size_t n) {
        for (size_t i = 0; sets && i < n; i++)
                free(sets[i]);
        free(sets);
}

/* "uid 1000 (alice)" */
static void format_uid(uint32_t uid, char *buf, size_t n) {
        struct passwd pw, *found = NULL;
        char text[1024];

        if (getpwuid_r((uid_t) uid, &pw, text, sizeof text, &found) == 0 && found)
                (void) snprintf(buf, n, "uid %" PRIu32 " (%s)", uid, found->pw_name);
        else
                (void) snprintf(buf, n, "uid %" PRIu32, uid);
}

static void print_holds(const Prop *holds, char ***sets) {
        if (!holds)
                return;
        if (holds->n_holds == 0) {
                printf("      Holds: none\n");
                return;
        }
        printf("      Holds: %zu in force\n", holds->n_holds);
        for (size_t i = 0; i < holds->n_holds; i++) {
                const JsonHold *h = &holds->holds[i];
                char lat[32], since[128], who[96];

                format_usec(h->max_latency_usec, lat, sizeof lat);
                format_since(h->since_usec, since, sizeof since);
                format_uid(h->uid, who, sizeof who);
                printf("             hold %" PRIu32 ": %s, at most %s; %s%s%s, %s, pid %" PRIu32 "\n", h->cookie,
                       h->controller[0] ? h->controller : "every controller", lat,
                       h->application_id[0] ? h->application_id : "(no application id)",
                       h->reason[0] ? ": " : "", h->reason, who, h->pid);
                printf("                     since %s; ", since);
                if (sets && sets[i] && sets[i][0]) {
                        printf("sets the budget of");
                        for (size_t j = 0; sets[i][j]; j++)
                                printf("%s %s", j ? "," : "", sets[i][j]);
                        printf("\n");
                } else
                        printf("no effect: not below the budget in force\n");
        }
}

/* ---- the daemon's state ---- */

/* GetAll of every controller in @list into a new array (a controller removed meanwhile is left out). */
static Props *get_controllers(sd_bus *bus, const Prop *list, size_t *ret_n) {
        Props *ctrls = calloc(list && list->n_arr ? list->n_arr : 1, sizeof *ctrls);
        sd_bus_error error = SD_BUS_ERROR_NULL;
        size_t n = 0;

        for (size_t i = 0; ctrls && list && i < list->n_arr; i++) {
                if (get_all(bus, list->strv[i], BUS_API_IFACE_CONTROLLER, &error, &ctrls[n]) < 0) {
                        /* removed between the two calls */
                        log_debug("%s: %s", list->strv[i], error.message ? error.message : "gone");
                        sd_bus_error_free(&error);
                        props_done(&ctrls[n]);
                        continue;
                }
                n++;
        }
        *ret_n = n;
        return ctrls;
}

/* ", \"exit_latencies\": [...]" when the daemon has the property (json_props() leaves it out). */
static void print_json_exit_latencies(const Props *c) {
        const Prop *x = prop(c, "ExitLatencies");
        _cleanup_(json_object_putp) struct json_object *a = x ? json_out_exit_latencies(x->exlat, x->n_exlat) : NULL;
        const char *text = a ? json_object_to_json_string_ext(a, JSON_OUT_FLAGS | JSON_C_TO_STRING_SPACED) : NULL;

        if (x)
                printf(", \"exit_latencies\": %s", text ? text : "null");
}

static void print_json(const Props *man, const Props *ctrls, size_t n, char ***sets) {
        const Prop *holds = prop(man, "Holds");

        printf("{\"running\": true, ");
        json_props(man, "Controllers", "Holds");
        if (holds) {
                _cleanup_(json_object_putp) struct json_object *a = json_out_holds(holds->holds, holds->n_holds, sets);
                const char *text = a ? json_object_to_json_string_ext(a, JSON_OUT_FLAGS | JSON_C_TO_STRING_SPACED)
                                     : NULL;

                printf(", \"holds\": %s", text ? text : "null");
        }
        printf(", \"controllers\": [");
        for (size_t i = 0; i < n; i++) {
                printf("%s{", i ? ", " : "");
                json_props(&ctrls[i], NULL, NULL);
                print_json_exit_latencies(&ctrls[i]);
                printf("}");
        }
        printf("]}\n");
}

static void print_text(const Props *man, const Props *ctrls, size_t n, char ***sets) {
        printf("● nvme-apstd %s - running\n", prop_s(man, "Version"));
        printf("     Config: %s\n", prop_s(man, "ConfigFile"));
        printf("      Power: %s, power profile: %s\n", prop_s(man, "PowerSource"),
               prop_s(man, "ActiveProfile")[0] ? prop_s(man, "ActiveProfile") : "(none known)");
        print_holds(prop(man, "Holds"), sets);
        if (n == 0)
                printf("\nNo NVMe controllers.\n");
        for (size_t i = 0; i < n; i++) {
                printf("\n");
                print_ctrl(&ctrls[i]);
        }
}

static int status_show(sd_bus *bus, bool json) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const Prop *holds;
        Props man = {}, *ctrls;
        char ***sets = NULL;
        size_t n = 0;
        int r;

        r = get_all(bus, BUS_API_PATH, BUS_API_IFACE_MANAGER, &error, &man);
        if (r < 0) {
                if (is_not_running(&error)) {
                        sd_bus_error_free(&error);
                        props_done(&man);
                        return -ESRCH;
                }
                log_error("Cannot read the daemon's state over D-Bus: %s",
                          error.message ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                props_done(&man);
                return r;
        }
        ctrls = get_controllers(bus, prop(&man, "Controllers"), &n);
        holds = prop(&man, "Holds");
        if (ctrls && holds)
                sets = holds_sets(holds, ctrls, n);
        if (!ctrls || (holds && !sets))
                r = log_error_errno(-ENOMEM, "Out of memory.");
        else if (json)
                print_json(&man, ctrls, n, sets);
        else
                print_text(&man, ctrls, n, sets);
        holds_sets_free(sets, holds ? holds->n_holds : 0);
        for (size_t i = 0; ctrls && i < n; i++)
                props_done(&ctrls[i]);
        free(ctrls);
        props_done(&man);
        return r < 0 ? r : 0;
}

/* Return: 1 to go on, 0 to exit 0 (--help, --version), 2 (bad usage). */
static int parse_argv(int argc, char *argv[], const char **ret_config_path, bool *ret_json) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                CLI_CONFIG_OPTION,
                CLI_COMMON_OPTIONS,
                {},
        };
        int c;

        optind = 0;
        while ((c = cli_getopt_config(argc, argv, "jc:h", options, help, ret_config_path)) >= 0) {
                switch (c) {
                case 'j':
                        *ret_json = true;
                        break;
                default:
                        return 2;
                }
        }
        if (c == CLI_GETOPT_EXIT)
                return 0;
        if (verb_check_args("status", argc, argv) < 0)
                return 2;
        return 1;
}

int verb_status(int argc, char *argv[]) {
        const char *config_path = NULL;
        sd_bus *bus = NULL;
        bool json = false;
        char why[160];
        int r;

        r = parse_argv(argc, argv, &config_path, &json);
        if (r != 1)
                return r;

        r = sd_bus_open_system(&bus);
        if (r >= 0) {
                r = status_show(bus, json);
                sd_bus_flush_close_unref(bus);
                if (r >= 0)
                        return 0;
                if (r != -ESRCH)
                        return 1;
                (void) snprintf(why, sizeof why, "%s is not on the system bus", BUS_API_NAME);
        } else
                (void) snprintf(why, sizeof why, "no system bus: %s", strerror(-r));
        r = show_plan(config_path, json, why);
        return r == 0 ? 3 : 1;
}
