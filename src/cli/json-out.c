/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* json-c output helpers; see json-out.h. */

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "json-out.h"

static struct json_object *formatted_double(double v, const char *text) {
        return json_object_new_double_s(v, text);
}

struct json_object *json_out_fixed(double v, int decimals) {
        char buf[64];

        if (!isfinite(v))
                return NULL;    /* JSON has no infinity */
        (void) snprintf(buf, sizeof buf, "%.*f", decimals, v);
        return formatted_double(v, buf);
}

struct json_object *json_out_general(double v, int digits) {
        char buf[64];

        if (!isfinite(v))
                return NULL;
        (void) snprintf(buf, sizeof buf, "%.*g", digits, v);
        return formatted_double(v, buf);
}

struct json_object *json_out_hex64(uint64_t v) {
        char buf[24];

        (void) snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
        return json_object_new_string(buf);
}

struct json_object *json_out_string_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

struct json_object *json_out_apst_entries(const uint64_t *entries, size_t n) {
        struct json_object *a = json_object_new_array_ext((int) n);

        for (size_t i = 0; a && i < n; i++)
                (void) json_object_array_add(a, json_out_hex64(entries[i]));
        return a;
}

static struct json_object *hold_to_json(const JsonHold *h, char *const *sets) {
        struct json_object *o = json_object_new_object(), *a = json_object_new_array();
        bool any = sets && sets[0];

        if (!o || !a) {
                json_object_put(o);
                json_object_put(a);
                return NULL;
        }
        for (size_t i = 0; sets && sets[i]; i++)
                (void) json_object_array_add(a, json_object_new_string(sets[i]));
        (void) json_object_object_add(o, "cookie", json_object_new_uint64(h->cookie));
        (void) json_object_object_add(o, "controller", json_object_new_string(h->controller));
        (void) json_object_object_add(o, "max_latency_usec", json_object_new_uint64(h->max_latency_usec));
        (void) json_object_object_add(o, "application_id", json_object_new_string(h->application_id));
        (void) json_object_object_add(o, "reason", json_object_new_string(h->reason));
        (void) json_object_object_add(o, "uid", json_object_new_uint64(h->uid));
        (void) json_object_object_add(o, "pid", json_object_new_uint64(h->pid));
        (void) json_object_object_add(o, "since_usec", json_object_new_uint64(h->since_usec));
        (void) json_object_object_add(o, "in_effect", json_object_new_boolean(any));
        (void) json_object_object_add(o, "sets_budget_of", a);
        return o;
}

struct json_object *json_out_holds(const JsonHold *holds, size_t n, char **const *sets) {
        struct json_object *a = json_object_new_array_ext((int) n);

        for (size_t i = 0; a && i < n; i++)
                (void) json_object_array_add(a, hold_to_json(&holds[i], sets ? sets[i] : NULL));
        return a;
}

struct json_object *json_out_exit_latencies(const JsonExitLatency *l, size_t n) {
        struct json_object *a = json_object_new_array_ext((int) n);

        for (size_t i = 0; a && i < n; i++) {
                struct json_object *o = json_object_new_object();

                (void) json_object_object_add(o, "ps", json_object_new_int((int) l[i].ps));
                (void) json_object_object_add(o, "exlat_us", json_object_new_uint64(l[i].advertised_us));
                (void) json_object_object_add(o, "planned_exlat_us", json_object_new_uint64(l[i].planned_us));
                (void) json_object_object_add(o, "source", json_object_new_string(l[i].source));
                (void) json_object_object_add(o, "from_configuration",
                                              json_object_new_boolean(strcmp(l[i].source, "configuration") == 0));
                (void) json_object_array_add(a, o);
        }
        return a;
}

int json_out_print(FILE *f, struct json_object *o, int flags) {
        const char *s = json_object_to_json_string_ext(o, flags);

        if (!s)
                return -ENOMEM;
        return fprintf(f, "%s\n", s) < 0 ? -EIO : 0;
}

static bool is_split(const char *key, const char *const *split) {
        for (; split && *split; split++)
                if (strcmp(key, *split) == 0)
                        return true;
        return false;
}

/* "key": with the key escaped by json-c */
static int print_key(FILE *f, const char *key) {
        _cleanup_(json_object_putp) struct json_object *k = json_object_new_string(key);
        const char *s = k ? json_object_to_json_string_ext(k, JSON_OUT_FLAGS) : NULL;

        if (!s)
                return -ENOMEM;
        return fprintf(f, "%s:", s) < 0 ? -EIO : 0;
}

static int print_value(FILE *f, struct json_object *v) {
        const char *s = json_object_to_json_string_ext(v, JSON_OUT_FLAGS);

        if (!s)
                return -ENOMEM;
        return fputs(s, f) < 0 ? -EIO : 0;
}

static int print_split_array(FILE *f, struct json_object *a) {
        size_t n = json_object_array_length(a);
        int r;

        if (fputs("[\n", f) < 0)
                return -EIO;
        for (size_t i = 0; i < n; i++) {
                r = print_value(f, json_object_array_get_idx(a, i));
                if (r < 0)
                        return r;
                if (fputs(i + 1 < n ? ",\n" : "\n", f) < 0)
                        return -EIO;
        }
        return fputs("]", f) < 0 ? -EIO : 0;
}

int json_out_print_lines(FILE *f, struct json_object *o, const char *const *split) {
        bool first = true;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;
        if (fputs("{", f) < 0)
                return -EIO;
        json_object_object_foreach(o, key, val) {
                if (!first && fputs(",\n", f) < 0)
                        return -EIO;
                first = false;
                r = print_key(f, key);
                if (r >= 0)
                        r = is_split(key, split) && json_object_is_type(val, json_type_array)
                                    ? print_split_array(f, val)
                                    : print_value(f, val);
                if (r < 0)
                        return r;
        }
        return fputs("}\n", f) < 0 ? -EIO : 0;
}
