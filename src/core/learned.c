/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the adaptive policy learned about one drive, and its file; see learned.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtext.h"
#include "learned.h"
#include "macro.h"

uint64_t learned_serial_hash(const char *serial) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (const unsigned char *p = (const unsigned char *) (serial ? serial : ""); *p; p++) {
                h ^= *p;
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

static void format_sum(FILE *f, const char *what, int ps, const PassiveCalibSum *s) {
        fprintf(f, "%s=", what);
        if (ps >= 0)
                fprintf(f, "%d ", ps);
        fprintf(f, "count=%" PRIu64 " sum_ns=%" PRIu64 " max_ns=%" PRIu64 "\n", s->count, s->sum_ns, s->max_ns);
}

static void format_body(FILE *f, const void *userdata) {
        const Learned *l = userdata;

        fprintf(f, "serial_hash=%016" PRIx64 "\n", l->serial_hash);
        fprintf(f, "gaps_seen=%" PRIu64 "\n", l->gaps_seen);
        fprintf(f, "hist_elapsed_ms=%" PRIu64 "\n", l->hist_elapsed_ms);
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                if (l->hist_milli[b])
                        fprintf(f, "bucket=%u gaps_milli=%" PRIu64 "\n", b, l->hist_milli[b]);
        for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        if (l->hidden_milli[k][b])
                                fprintf(f, "hidden=%u floor=%u gaps_milli=%" PRIu64 "\n", b, k, l->hidden_milli[k][b]);
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                if (l->hidden_after_milli[b])
                        fprintf(f, "hidden_after=%u gaps_milli=%" PRIu64 "\n", b, l->hidden_after_milli[b]);
        if (l->awake.count)
                format_sum(f, "awake", -1, &l->awake);
        for (unsigned s = 0; s < IDCTRL_MAX_PS; s++)
                if (l->state[s].count)
                        format_sum(f, "state", (int) s, &l->state[s]);
}

int learned_format(const Learned *l, char **ret_text) {
        return kv_format("nvme-apstd adaptive policy: what it learned about one drive", LEARNED_FORMAT_VERSION,
                         l->model, l->firmware, format_body, l, ret_text);
}

/* "[LEAD ]k1=v1 k2=v2 ...": kv_parse_fields(), its error in words. */
static const char *parse_fields(const char *s, size_t n, uint64_t *lead, uint64_t lead_max, const char *const *keys,
                                size_t n_keys, uint64_t max, uint64_t *v) {
        switch (kv_parse_fields(s, n, lead, lead_max, keys, n_keys, max, v)) {
        case KV_FIELDS_OK:
                return NULL;
        case KV_FIELDS_LEAD:
                return "expected a number first";
        case KV_FIELDS_NOT_PAIR:
                return "expected KEY=VALUE";
        case KV_FIELDS_UNKNOWN:
                return "unknown key";
        case KV_FIELDS_REPEATED:
                return "key repeated";
        case KV_FIELDS_NUMBER:
                return "not a number in range";
        case KV_FIELDS_MISSING:
                return "a field is missing";
        }
        return "invalid";
}

static const char *parse_sum(const char *s, size_t n, uint64_t *lead, PassiveCalibSum *ret) {
        static const char *const keys[] = { "count", "sum_ns", "max_ns" };
        uint64_t v[3];
        const char *why = parse_fields(s, n, lead, IDCTRL_MAX_PS - 1, keys, 3, UINT64_MAX, v);

        if (why)
                return why;
        /* A sum without a count, a count without a sum's worth, or a maximum above the sum
         * or below the mean cannot come from passive calibration. */
        if (v[0] == 0 || v[0] > LEARNED_COUNT_MAX || v[2] > v[1] || v[2] < v[1] / v[0])
                return "count, sum_ns and max_ns do not fit together";
        *ret = (PassiveCalibSum) { .count = v[0], .sum_ns = v[1], .max_ns = v[2] };
        return NULL;
}

enum {
        HAVE_SERIAL = _KV_HAVE_NEXT << 0,
        HAVE_GAPS = _KV_HAVE_NEXT << 1,
        HAVE_AWAKE = _KV_HAVE_NEXT << 2,
        HAVE_ELAPSED = _KV_HAVE_NEXT << 3,
};

/* What a learned file's lines add up to, while they are read. */
typedef struct LearnedParse {
        Learned l;
        uint32_t states;
        bool bucket_seen[GAP_BUCKETS];
        bool hidden_seen[GAP_HIDE_FLOORS][GAP_BUCKETS];
        bool hidden_after_seen[GAP_BUCKETS];
} LearnedParse;

/* "BUCKET [floor=K ]gaps_milli=N" (@floor NULL: no floor=), into *@ret (0 never: a line with no
 * gaps is not written), @seen marking the ones given. */
static const char *parse_bucket(const char *val, size_t vl, uint64_t *floor, bool seen[], uint64_t *ret_b,
                                uint64_t *ret_v) {
        static const char *const keys_floor[] = { "floor", "gaps_milli" }, *const keys[] = { "gaps_milli" };
        uint64_t b, v[2];
        const char *why = floor ? parse_fields(val, vl, &b, GAP_BUCKETS - 1, keys_floor, 2, LEARNED_COUNT_MAX, v)
                                : parse_fields(val, vl, &b, GAP_BUCKETS - 1, keys, 1, LEARNED_COUNT_MAX, v);
        uint64_t n = floor ? v[1] : v[0];

        if (why)
                return why;
        if (floor && v[0] >= GAP_HIDE_FLOORS)
                return "floor: 0 to 3";
        if (seen[(floor ? v[0] * GAP_BUCKETS : 0) + b])
                return "bucket given twice";
        if (n == 0)
                return "a bucket line with no gaps";
        seen[(floor ? v[0] * GAP_BUCKETS : 0) + b] = true;
        if (floor)
                *floor = v[0];
        *ret_b = b;
        *ret_v = n;
        return NULL;
}

/* One of the file's own keys (KvFormat.parse_key). */
static const char *parse_key(void *userdata, const KvLine *kvl, uint64_t version, unsigned *ret_bit) {
        LearnedParse *lp = userdata;
        const char *val = kvl->val, *why = NULL;
        size_t vl = kvl->val_len;
        Learned *l = &lp->l;

        *ret_bit = 0;
#define KEY(k) kv_key_is(kvl, k)
        if (KEY("serial_hash")) {
                *ret_bit = HAVE_SERIAL;
                if (kv_parse_hex64(val, vl, &l->serial_hash) < 0)
                        why = "serial_hash: 16 lower-case hex digits";
        } else if (KEY("gaps_seen")) {
                *ret_bit = HAVE_GAPS;
                if (kv_parse_u64(val, vl, LEARNED_COUNT_MAX, &l->gaps_seen) < 0)
                        why = "gaps_seen: a number up to 10^15";
        } else if (KEY("hist_elapsed_ms")) {
                *ret_bit = HAVE_ELAPSED;
                if (kv_parse_u64(val, vl, LEARNED_COUNT_MAX, &l->hist_elapsed_ms) < 0)
                        why = "hist_elapsed_ms: a number up to 10^15";
        } else if (KEY("bucket")) {
                uint64_t b, v;
                why = parse_bucket(val, vl, NULL, lp->bucket_seen, &b, &v);
                if (!why)
                        l->hist_milli[b] = v;
        } else if (version >= 2 && KEY("hidden")) {
                uint64_t k, b, v;
                why = parse_bucket(val, vl, &k, &lp->hidden_seen[0][0], &b, &v);
                if (!why)
                        l->hidden_milli[k][b] = v;
        } else if (version >= 2 && KEY("hidden_after")) {
                uint64_t b, v;
                why = parse_bucket(val, vl, NULL, lp->hidden_after_seen, &b, &v);
                if (!why)
                        l->hidden_after_milli[b] = v;
        } else if (KEY("awake")) {
                *ret_bit = HAVE_AWAKE;
                why = parse_sum(val, vl, NULL, &l->awake);
        } else if (KEY("state")) {
                uint64_t ps = 0;
                PassiveCalibSum sum;
                why = parse_sum(val, vl, &ps, &sum);
                if (!why && (ps == 0 || (lp->states & (UINT32_C(1) << ps))))
                        why = ps == 0 ? "state 0 is not a sleep state" : "state given twice";
                else if (!why) {
                        lp->states |= UINT32_C(1) << ps;
                        l->state[ps] = sum;
                }
        } else
                why = "unknown key";
#undef KEY
        return why;
}

static const KvFormat learned_kv_format = {
        .version = LEARNED_FORMAT_VERSION,
        .min_version = LEARNED_FORMAT_MIN_VERSION,
        .unsupported_why = "unsupported version (this nvme-apstd reads versions 1 and 2)",
        .parse_key = parse_key,
        /* awake= and the bucket=, hidden=, hidden_after= and state= lines are left out when there is
         * nothing to say */
        .required = KV_HAVE_VERSION | KV_HAVE_MODEL | KV_HAVE_FIRMWARE | HAVE_SERIAL | HAVE_GAPS | HAVE_ELAPSED,
        .incomplete_why = "incomplete: version, model, firmware, serial_hash, gaps_seen and hist_elapsed_ms are "
                          "required",
};

int learned_parse(const char *text, size_t len, Learned *ret, char **ret_error) {
        _cleanup_free_ LearnedParse *lp = calloc(1, sizeof *lp);
        int r;

        if (!lp)
                return -ENOMEM;
        r = kv_parse(text, len, &learned_kv_format, lp->l.model, sizeof lp->l.model, lp->l.firmware,
                     sizeof lp->l.firmware, lp, ret_error);
        if (r < 0)
                return r;
        *ret = lp->l;
        return 0;
}

static bool sum_equal(const PassiveCalibSum *a, const PassiveCalibSum *b) {
        return a->count == b->count && a->sum_ns == b->sum_ns && a->max_ns == b->max_ns;
}

bool learned_equal(const Learned *a, const Learned *b) {
        if (strcmp(a->model, b->model) != 0 || strcmp(a->firmware, b->firmware) != 0 ||
            a->serial_hash != b->serial_hash || a->gaps_seen != b->gaps_seen ||
            a->hist_elapsed_ms != b->hist_elapsed_ms || !sum_equal(&a->awake, &b->awake))
                return false;
        if (memcmp(a->hist_milli, b->hist_milli, sizeof a->hist_milli) != 0 ||
            memcmp(a->hidden_milli, b->hidden_milli, sizeof a->hidden_milli) != 0 ||
            memcmp(a->hidden_after_milli, b->hidden_after_milli, sizeof a->hidden_after_milli) != 0)
                return false;
        for (unsigned s = 0; s < IDCTRL_MAX_PS; s++)
                if (!sum_equal(&a->state[s], &b->state[s]))
                        return false;
        return true;
}

int learned_path(const char *state_dir, const char *model, const char *firmware, uint64_t serial_hash,
                 char **ret_path) {
        char suffix[sizeof "@0123456789abcdef.learned"];

        (void) snprintf(suffix, sizeof suffix, "@%016" PRIx64 ".learned", serial_hash);
        return kv_state_path(state_dir, "adaptive", model, firmware, suffix, ret_path);
}
