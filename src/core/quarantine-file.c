/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The quarantine file (STATE_DIR/quarantine/MODEL@FIRMWARE.quarantine) and its drop-in; see quarantine.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtext.h"
#include "macro.h"
#include "quarantine.h"

static void format_body(FILE *f, const void *userdata) {
        const Quarantine *q = userdata;

        fprintf(f, "vendor=%04" PRIx16 "\n", q->vendor);
        fprintf(f, "allow_below=%u\n", q->allow_below);
        fprintf(f, "max_latency_us=%" PRIu32 "\n", q->max_latency_us);
        fprintf(f, "strikes=%u\n", q->strikes);
        for (size_t i = 0; i < q->n_failures; i++) {
                const QuarantineFailure *x = &q->failures[i];
                fprintf(f, "failure=%" PRIu64 " ps=%u idle_ms=%" PRIu64 " kind=%s\n", x->realtime_sec, x->ps,
                        x->idle_ms, nvme_failure_kind_to_string(x->kind));
        }
}

int quarantine_format(const Quarantine *q, char **ret_text) {
        return kv_format("nvme-apstd quarantine: power states this drive failed in (doc/quarantine.md)",
                         QUARANTINE_FORMAT_VERSION, q->model, q->firmware, format_body, q, ret_text);
}

enum {
        HAVE_VENDOR = _KV_HAVE_NEXT << 0,
        HAVE_ALLOW = _KV_HAVE_NEXT << 1,
        HAVE_LATENCY = _KV_HAVE_NEXT << 2,
        HAVE_STRIKES = _KV_HAVE_NEXT << 3,
};

/* "WHEN ps=N idle_ms=N kind=NAME". */
static const char *parse_failure(const char *s, size_t n, QuarantineFailure *ret) {
        static const char *const keys[] = { "ps", "idle_ms" };
        static const char kind_key[] = " kind=";
        uint64_t when, v[ELEMENTSOF(keys)];
        char kind[32];
        const char *k = NULL;

        for (size_t i = 0; i + strlen(kind_key) <= n; i++)
                if (memcmp(s + i, kind_key, strlen(kind_key)) == 0)
                        k = s + i;
        if (!k)
                return "a failure line needs kind=";
        if (kv_parse_fields(s, (size_t) (k - s), &when, UINT64_MAX, keys, ELEMENTSOF(keys), UINT64_MAX, v) !=
            KV_FIELDS_OK)
                return "a failure line is WHEN ps=N idle_ms=N kind=NAME";
        if (v[0] >= IDCTRL_MAX_PS)
                return "power state above 31";
        if (kv_copy_printable(kind, sizeof kind, k + strlen(kind_key), n - (size_t) (k + strlen(kind_key) - s)) < 0)
                return "unknown failure kind";
        *ret = (QuarantineFailure) { .realtime_sec = when, .ps = (uint8_t) v[0], .idle_ms = v[1] };
        ret->kind = nvme_failure_kind_from_string(kind);
        if (ret->kind < 0)
                return "unknown failure kind";
        return NULL;
}

static const char *parse_vendor(const char *s, size_t n, uint16_t *ret) {
        char *end;
        char buf[5];
        unsigned long v;

        if (n != 4 || kv_copy_printable(buf, sizeof buf, s, n) < 0)
                return "vendor is 4 hex digits";
        v = strtoul(buf, &end, 16);
        if (*end || buf[0] == '+' || buf[0] == '-' || buf[0] == ' ')
                return "vendor is 4 hex digits";
        *ret = (uint16_t) v;
        return NULL;
}

static const char *parse_key(void *userdata, const KvLine *l, uint64_t version, unsigned *ret_bit) {
        Quarantine *q = userdata;
        uint64_t v;

        (void) version;   /* one version so far */
        *ret_bit = 0;
        if (kv_key_is(l, "vendor")) {
                *ret_bit = HAVE_VENDOR;
                return parse_vendor(l->val, l->val_len, &q->vendor);
        }
        if (kv_key_is(l, "allow_below")) {
                *ret_bit = HAVE_ALLOW;
                if (kv_parse_u64(l->val, l->val_len, QUARANTINE_NONE - 1, &v) < 0)
                        return "allow_below is a power state, 0..31";
                q->allow_below = (uint8_t) v;
                return NULL;
        }
        if (kv_key_is(l, "max_latency_us")) {
                *ret_bit = HAVE_LATENCY;
                if (kv_parse_u64(l->val, l->val_len, UINT32_MAX, &v) < 0)
                        return "not a number (0..4294967295)";
                q->max_latency_us = (uint32_t) v;
                return NULL;
        }
        if (kv_key_is(l, "strikes")) {
                *ret_bit = HAVE_STRIKES;
                if (kv_parse_u64(l->val, l->val_len, UINT32_MAX, &v) < 0)
                        return "not a number (0..4294967295)";
                q->strikes = (unsigned) v;
                return NULL;
        }
        if (kv_key_is(l, "failure")) {
                if (q->n_failures >= QUARANTINE_FAILURES_MAX)
                        return "more than 8 failure lines";
                return parse_failure(l->val, l->val_len, &q->failures[q->n_failures++]);
        }
        return "unknown key";
}

/* Its kv_parse() description and parse function stand like calib.c's: the same parser described
 * for another file, each with its own keys and checks, not one logic written twice. */
static const KvFormat quarantine_kv_format = {
        .version = QUARANTINE_FORMAT_VERSION,
        .unsupported_why = "unsupported version (this nvme-apstd reads version 1)",
        .parse_key = parse_key,
        .required = KV_HAVE_VERSION | KV_HAVE_MODEL | KV_HAVE_FIRMWARE | HAVE_VENDOR | HAVE_ALLOW | HAVE_LATENCY |
                    HAVE_STRIKES,
        .incomplete_why = "incomplete: version, model, firmware, vendor, allow_below, max_latency_us and strikes "
                          "are required",
};

int quarantine_parse(const char *text, size_t len, Quarantine *ret, char **ret_error) {
        Quarantine q = {};
        int r;

        r = kv_parse(text, len, &quarantine_kv_format, q.model, sizeof q.model, q.firmware, sizeof q.firmware, &q,
                     ret_error);
        if (r < 0)
                return r;
        if (q.strikes < q.n_failures)
                return kv_fail(ret_error, 0, "strikes is less than the failure lines");
        *ret = q;
        return 0;
}

int quarantine_path(const char *state_dir, const char *model, const char *firmware, char **ret_path) {
        return kv_state_path(state_dir, "quarantine", model, firmware, ".quarantine", ret_path);
}

/* A byte a [device] section's name keeps; the rest become '_'. */
static char name_byte(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ? c : '_';
}

/* @s with fnmatch()'s special characters escaped, so the configuration's glob matches @s only. */
static void glob_escape(const char *s, char *buf, size_t n) {
        size_t o = 0;

        for (; *s && o + 2 < n; s++) {
                if (strchr("*?[]\\", *s))
                        buf[o++] = '\\';
                buf[o++] = *s;
        }
        buf[o] = '\0';
}

int quarantine_dropin(const Quarantine *q, char **ret_name, char **ret_text) {
        char model[2 * sizeof q->model], fw[2 * sizeof q->firmware], safe[sizeof q->model + sizeof q->firmware + 1],
                what[32];
        char *name = NULL, *text = NULL;
        size_t o = 0;

        if (q->allow_below >= QUARANTINE_NONE || !q->model[0] || !q->firmware[0] ||
            strpbrk(q->model, ";#") || strpbrk(q->firmware, ";#") || q->model[strlen(q->model) - 1] == ' ')
                return -EINVAL;
        for (const char *p = q->model; *p; p++)
                safe[o++] = name_byte(*p);
        safe[o++] = '-';
        for (const char *p = q->firmware; *p; p++)
                safe[o++] = name_byte(*p);
        safe[o] = '\0';
        if (asprintf(&name, "50-quarantine-%s.conf", safe) < 0)
                return -ENOMEM;
        /* [device NAME]: the configuration takes at most 48 bytes between the brackets */
        o = 0;
        for (const char *p = q->model; *p && o < 20; p++)
                safe[o++] = name_byte(*p);
        safe[o++] = '-';
        for (const char *p = q->firmware; *p; p++)
                safe[o++] = name_byte(*p);
        safe[o] = '\0';
        glob_escape(q->model, model, sizeof model);
        glob_escape(q->firmware, fw, sizeof fw);
        quarantine_describe(q->allow_below, what, sizeof what);
        if (asprintf(&text,
                     "# Written by `nvme-apstd quarantine --drop-in`: a %s, firmware %s, failed %u time(s) in a\n"
                     "# deep power state; out of its tables: %s (doc/quarantine.md).\n"
                     "[device quarantine-%s]\n"
                     "match_model = %s\n"
                     "match_firmware = %s\n"
                     "max_latency_us = %" PRIu32 "\n",
                     q->model, q->firmware, q->strikes, what, safe, model, fw,
                     q->allow_below == QUARANTINE_APST_OFF ? 0 : q->max_latency_us) < 0) {
                free(name);
                return -ENOMEM;
        }
        *ret_name = name;
        *ret_text = text;
        return 0;
}
