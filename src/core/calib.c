/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Measured wake costs and their file; see calib.h and doc/calibrate.md. */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "kvtext.h"
#include "macro.h"


/* ------------------------------------------------------------------ text */

static void format_body(FILE *f, const void *userdata) {
        const Calibration *c = userdata;

        fprintf(f, "measured_realtime_usec=%" PRIu64 "\n", c->measured_realtime_usec);
        fprintf(f, "awake_median_us=%" PRIu32 "\n", c->awake_median_us);
        for (size_t i = 0; i < c->n_states; i++) {
                const CalibState *s = &c->states[i];
                fprintf(f,
                        "state=%u advertised_enlat_us=%" PRIu32 " advertised_exlat_us=%" PRIu32
                        " samples=%" PRIu32 " wake_median_us=%" PRIu32 " wake_p99_us=%" PRIu32 "\n",
                        s->ps, s->advertised_enlat_us, s->advertised_exlat_us, s->samples, s->wake_median_us,
                        s->wake_p99_us);
        }
}

int calib_format(const Calibration *c, char **ret_text) {
        return kv_format("nvme-apstd calibration: measured wake costs (nvme-apstd calibrate)", CALIB_FORMAT_VERSION,
                         c->model, c->firmware, format_body, c, ret_text);
}

static int parse_u32(const char *s, size_t n, uint32_t *ret) {
        uint64_t v;
        int r = kv_parse_u64(s, n, UINT32_MAX, &v);

        if (r < 0)
                return r;
        *ret = (uint32_t) v;
        return 0;
}

/* "state=4 advertised_enlat_us=2000 ..." : every key exactly once. */
static int parse_state(const char *s, size_t n, CalibState *ret, const char **ret_why) {
        static const char *const keys[] = { "state", "advertised_enlat_us", "advertised_exlat_us",
                                            "samples", "wake_median_us", "wake_p99_us" };
        uint64_t v[ELEMENTSOF(keys)];

        switch (kv_parse_fields(s, n, NULL, 0, keys, ELEMENTSOF(keys), UINT32_MAX, v)) {
        case KV_FIELDS_OK:
                break;
        case KV_FIELDS_LEAD:
        case KV_FIELDS_NOT_PAIR:
                *ret_why = "expected KEY=VALUE";
                return -EINVAL;
        case KV_FIELDS_UNKNOWN:
                *ret_why = "unknown key in a state line";
                return -EINVAL;
        case KV_FIELDS_REPEATED:
                *ret_why = "key repeated in a state line";
                return -EINVAL;
        case KV_FIELDS_NUMBER:
                *ret_why = "not a number (0..4294967295)";
                return -EINVAL;
        case KV_FIELDS_MISSING:
                *ret_why = "a state line needs state, advertised_enlat_us, advertised_exlat_us, samples, "
                           "wake_median_us and wake_p99_us";
                return -EINVAL;
        }
        if (v[0] >= IDCTRL_MAX_PS) {
                *ret_why = "power state above 31";
                return -EINVAL;
        }
        if (v[3] == 0 || v[5] < v[4]) {
                *ret_why = "samples must be at least 1 and wake_p99_us at least wake_median_us";
                return -EINVAL;
        }
        *ret = (CalibState) {
                .ps = (uint8_t) v[0],
                .advertised_enlat_us = (uint32_t) v[1],
                .advertised_exlat_us = (uint32_t) v[2],
                .samples = (uint32_t) v[3],
                .wake_median_us = (uint32_t) v[4],
                .wake_p99_us = (uint32_t) v[5],
        };
        return 0;
}

enum {
        HAVE_WHEN = _KV_HAVE_NEXT << 0,
        HAVE_AWAKE = _KV_HAVE_NEXT << 1,
};

/* One of the file's own keys (KvFormat.parse_key). */
static const char *parse_key(void *userdata, const KvLine *kvl, uint64_t version, unsigned *ret_bit) {
        Calibration *c = userdata;
        const char *val = kvl->val, *why = NULL;
        size_t vl = kvl->val_len;
        CalibState st;

        (void) version;   /* one version so far */
        *ret_bit = 0;
        if (kv_key_is(kvl, "measured_realtime_usec")) {
                *ret_bit = HAVE_WHEN;
                if (kv_parse_u64(val, vl, UINT64_MAX, &c->measured_realtime_usec) < 0)
                        why = "not a number";
        } else if (kv_key_is(kvl, "awake_median_us")) {
                *ret_bit = HAVE_AWAKE;
                if (parse_u32(val, vl, &c->awake_median_us) < 0)
                        why = "not a number (0..4294967295)";
        } else if (kv_key_is(kvl, "state")) {
                if (c->n_states >= IDCTRL_MAX_PS)
                        why = "more than 32 states";
                else if (parse_state(kvl->key, kvl->key_len + 1 + kvl->val_len, &st, &why) >= 0) {
                        if (calib_find(c, st.ps))
                                why = "power state measured twice";
                        else
                                c->states[c->n_states++] = st;
                }
        } else
                why = "unknown key";
        return why;
}

static const KvFormat calib_kv_format = {
        .version = CALIB_FORMAT_VERSION,
        .unsupported_why = "unsupported version (this nvme-apstd reads version 1)",
        .parse_key = parse_key,
        .required = KV_HAVE_VERSION | KV_HAVE_MODEL | KV_HAVE_FIRMWARE | HAVE_WHEN | HAVE_AWAKE,
        .incomplete_why = "incomplete: version, model, firmware, measured_realtime_usec and awake_median_us are "
                          "required",
};

int calib_parse(const char *text, size_t len, Calibration *ret, char **ret_error) {
        Calibration c = {};
        int r;

        r = kv_parse(text, len, &calib_kv_format, c.model, sizeof c.model, c.firmware, sizeof c.firmware, &c,
                     ret_error);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

/* ------------------------------------------------------------------ use */

bool calib_equal(const Calibration *a, const Calibration *b) {
        if (strcmp(a->model, b->model) != 0 || strcmp(a->firmware, b->firmware) != 0 ||
            a->measured_realtime_usec != b->measured_realtime_usec || a->awake_median_us != b->awake_median_us ||
            a->n_states != b->n_states)
                return false;
        for (size_t i = 0; i < a->n_states; i++) {
                const CalibState *x = &a->states[i], *y = &b->states[i];
                if (x->ps != y->ps || x->advertised_enlat_us != y->advertised_enlat_us ||
                    x->advertised_exlat_us != y->advertised_exlat_us || x->samples != y->samples ||
                    x->wake_median_us != y->wake_median_us || x->wake_p99_us != y->wake_p99_us)
                        return false;
        }
        return true;
}

int calib_raise(Calibration *c, const IdCtrl *id, uint8_t ps, uint32_t wake_us, uint32_t samples) {
        for (size_t i = 0; i < c->n_states; i++) {
                CalibState *s = &c->states[i];

                if (s->ps != ps)
                        continue;
                if (wake_us > s->wake_median_us) {
                        s->wake_median_us = wake_us;
                        s->wake_p99_us = MAX(s->wake_p99_us, wake_us);
                        s->samples = samples;
                }
                return 0;
        }
        if (c->n_states >= IDCTRL_MAX_PS || ps >= IDCTRL_MAX_PS)
                return -ENOSPC;
        c->states[c->n_states++] = (CalibState) {
                .ps = ps,
                .advertised_enlat_us = id->psd[ps].enlat_us,
                .advertised_exlat_us = id->psd[ps].exlat_us,
                .samples = samples,
                .wake_median_us = wake_us,
                .wake_p99_us = wake_us,
        };
        return 0;
}

const CalibState *calib_find(const Calibration *c, uint8_t ps) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_states; i++)
                if (c->states[i].ps == ps)
                        return &c->states[i];
        return NULL;
}

uint32_t calib_exlat_us(const Calibration *c, uint8_t ps, uint32_t advertised_exlat_us) {
        const CalibState *s = calib_find(c, ps);

        return s && s->wake_median_us > advertised_exlat_us ? s->wake_median_us : advertised_exlat_us;
}

uint32_t calib_apply(const Calibration *c, const IdCtrl *id, IdCtrl *ret) {
        IdCtrl out = *id;
        uint32_t mask = 0;

        for (unsigned ps = 0; ps <= id->npss && ps < IDCTRL_MAX_PS; ps++) {
                uint32_t x = calib_exlat_us(c, (uint8_t) ps, id->psd[ps].exlat_us);
                if (x != id->psd[ps].exlat_us) {
                        out.psd[ps].exlat_us = x;
                        mask |= 1u << ps;
                }
        }
        *ret = out;
        return mask;
}

/* @s with fnmatch()'s special characters escaped, so the glob matches @s only. */
static void glob_escape(const char *s, char *buf, size_t n) {
        size_t o = 0;

        for (; *s && o + 2 < n; s++) {
                if (strchr("*?[]\\", *s))
                        buf[o++] = '\\';
                buf[o++] = *s;
        }
        buf[o] = '\0';
}

/* Bytes a file or section name may hold; the rest become '_'. */
static void name_safe(const char *s, char *buf, size_t n, bool dot) {
        size_t o = 0;

        for (; *s && o + 1 < n; s++)
                buf[o++] = (char) ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                                   *s == '-' || *s == '_' || (dot && *s == '.') ? *s : '_');
        buf[o] = '\0';
}

/* inih would cut a value at " ;" (an inline comment); the configuration refuses " #" and control bytes. */
static bool ini_value_ok(const char *s) {
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f || ((*p == ';' || *p == '#') && p > s && p[-1] == ' '))
                        return false;
        return *s && *s != ' ' && s[strlen(s) - 1] != ' ';
}

/* FNV-1a of model, NUL, firmware: two models cut to the same section name still get two sections. */
static uint32_t ident_hash(const Calibration *c) {
        uint32_t h = 2166136261u;      /* FNV-1a's 32-bit offset basis */

        for (const char *p = c->model;; p++) {
                h = (h ^ (uint8_t) *p) * 16777619u;   /* FNV's 32-bit prime */
                if (!*p)
                        break;
        }
        for (const char *p = c->firmware; *p; p++)
                h = (h ^ (uint8_t) *p) * 16777619u;
        return h;
}

int calib_dropin(const Calibration *c, char **ret_name, char **ret_text) {
        char model[2 * sizeof c->model], fw[2 * sizeof c->firmware], safe_model[sizeof c->model],
                safe_fw[sizeof c->firmware], list[IDCTRL_MAX_PS * 24] = "", *name = NULL, *text = NULL;
        size_t o = 0;

        for (size_t i = 0; i < c->n_states; i++)
                if (c->states[i].samples > 0 && c->states[i].wake_median_us > 0)
                        o += (size_t) snprintf(list + o, sizeof list - o, "%sps%u:%" PRIu32, o ? " " : "",
                                               c->states[i].ps, c->states[i].wake_median_us);
        if (o == 0 || !c->firmware[0] || !ini_value_ok(c->model) || !ini_value_ok(c->firmware))
                return -EINVAL;
        glob_escape(c->model, model, sizeof model);
        glob_escape(c->firmware, fw, sizeof fw);
        name_safe(c->model, safe_model, sizeof safe_model, true);
        name_safe(c->firmware, safe_fw, sizeof safe_fw, true);
        if (asprintf(&name, "50-calibrated-%s-%s.conf", safe_model, safe_fw) < 0)
                return -ENOMEM;
        /* [device NAME]: the configuration takes at most 48 bytes between the brackets */
        name_safe(c->model, safe_model, 20, false);
        if (asprintf(&text,
                     "# Written by `nvme-apstd calibrate --drop-in`: the median wake-up of each power state\n"
                     "# measured on a %s, firmware %s (nvme-apstd.conf(5), exit_latency_us).\n"
                     "[device calibrated-%s-%08" PRIx32 "]\n"
                     "match_model = %s\n"
                     "match_firmware = %s\n"
                     "exit_latency_us = %s\n",
                     c->model, c->firmware, safe_model, ident_hash(c), model, fw, list) < 0) {
                free(name);
                return -ENOMEM;
        }
        *ret_name = name;
        *ret_text = text;
        return 0;
}

/* ------------------------------------------------------------------ files */

int calib_path(const char *state_dir, const char *model, const char *firmware, char **ret_path) {
        return kv_state_path(state_dir, "calibration", model, firmware, ".calib", ret_path);
}
