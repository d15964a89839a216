/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state files' KEY=VALUE reader, value parsers and names; see kvtext.h. */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtext.h"

int kv_parse_u64(const char *s, size_t n, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (n == 0 || n > 20)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                if (v > (UINT64_MAX - (uint64_t) (s[i] - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int kv_parse_hex64(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;

        if (n != 16)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                unsigned d;
                if (s[i] >= '0' && s[i] <= '9')
                        d = (unsigned) (s[i] - '0');
                else if (s[i] >= 'a' && s[i] <= 'f')
                        d = (unsigned) (s[i] - 'a' + 10);
                else
                        return -EINVAL;
                v = v << 4 | d;
        }
        *ret = v;
        return 0;
}

int kv_copy_printable(char *dst, size_t size, const char *s, size_t n) {
        if (n >= size)
                return -ERANGE;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] > 0x7e)
                        return -EINVAL;
        memcpy(dst, s, n);
        dst[n] = 0;
        return 0;
}

KvFieldsError kv_parse_fields(const char *s, size_t n, uint64_t *lead, uint64_t lead_max, const char *const *keys,
                              size_t n_keys, uint64_t max, uint64_t *v) {
        uint32_t seen = 0;
        size_t i = 0;

        if (lead) {
                while (i < n && s[i] != ' ')
                        i++;
                if (kv_parse_u64(s, i, lead_max, lead) < 0)
                        return KV_FIELDS_LEAD;
                while (i < n && s[i] == ' ')
                        i++;
        }
        while (i < n) {
                size_t w = i, eq, k;
                while (i < n && s[i] != ' ')
                        i++;
                for (eq = w; eq < i && s[eq] != '='; eq++)
                        ;
                if (eq == i)
                        return KV_FIELDS_NOT_PAIR;
                for (k = 0; k < n_keys; k++)
                        if (strlen(keys[k]) == eq - w && !memcmp(keys[k], s + w, eq - w))
                                break;
                if (k == n_keys)
                        return KV_FIELDS_UNKNOWN;
                if (seen & (UINT32_C(1) << k))
                        return KV_FIELDS_REPEATED;
                if (kv_parse_u64(s + eq + 1, i - eq - 1, max, &v[k]) < 0)
                        return KV_FIELDS_NUMBER;
                seen |= UINT32_C(1) << k;
                while (i < n && s[i] == ' ')
                        i++;
        }
        if (seen != (UINT32_C(1) << n_keys) - 1)
                return KV_FIELDS_MISSING;
        return KV_FIELDS_OK;
}

int kv_fail(char **ret_error, unsigned line, const char *why) {
        if (ret_error) {
                char *m = NULL;
                if (asprintf(&m, "line %u: %s", line, why) < 0)
                        return -ENOMEM;
                free(*ret_error);
                *ret_error = m;
        }
        return -EINVAL;
}

int kv_next_line(const char *text, size_t len, size_t *pos, KvLine *ret, const char **ret_why) {
        while (*pos < len) {
                const char *s = text + *pos, *eol = memchr(s, '\n', len - *pos), *eq;
                size_t n = eol ? (size_t) (eol - s) : len - *pos;

                *pos += n + (eol ? 1 : 0);
                ret->line++;
                if (eol == s || s[0] == '#')
                        continue;
                if (memchr(s, 0, n)) {
                        *ret_why = "NUL byte";
                        return -EINVAL;
                }
                eq = memchr(s, '=', n);
                if (!eq) {
                        *ret_why = "expected KEY=VALUE";
                        return -EINVAL;
                }
                ret->key = s;
                ret->key_len = (size_t) (eq - s);
                ret->val = eq + 1;
                ret->val_len = n - ret->key_len - 1;
                return 1;
        }
        return 0;
}

bool kv_key_is(const KvLine *l, const char *key) {
        return l->key_len == strlen(key) && memcmp(l->key, key, l->key_len) == 0;
}

int kv_header_key(const KvLine *l, unsigned have, uint64_t min_version, uint64_t version, const char *unsupported_why,
                  char *model, size_t model_size, char *firmware, size_t firmware_size, unsigned *ret_bit,
                  uint64_t *ret_version, const char **ret_why) {
        uint64_t v;

        *ret_bit = 0;
        if (kv_key_is(l, "version")) {
                *ret_bit = KV_HAVE_VERSION;
                if (kv_parse_u64(l->val, l->val_len, UINT32_MAX, &v) < 0 || v < min_version || v > version)
                        *ret_why = unsupported_why;
                else
                        *ret_version = v;
        } else if (!(have & KV_HAVE_VERSION))
                *ret_why = "the first key must be version=";
        else if (kv_key_is(l, "model")) {
                *ret_bit = KV_HAVE_MODEL;
                if (kv_copy_printable(model, model_size, l->val, l->val_len) < 0)
                        *ret_why = "model: at most 40 printable characters";
        } else if (kv_key_is(l, "firmware")) {
                *ret_bit = KV_HAVE_FIRMWARE;
                if (kv_copy_printable(firmware, firmware_size, l->val, l->val_len) < 0)
                        *ret_why = "firmware: at most 8 printable characters";
        } else
                return 0;
        return 1;
}

/* The text written to @f, an open_memstream() of *@buf, into *@ret. Return: 0 or -ENOMEM. */
static int memstream_finish(FILE *f, char **buf, char **ret) {
        if (fclose(f) != 0) {
                free(*buf);
                return -ENOMEM;
        }
        *ret = *buf;
        return 0;
}

int kv_format(const char *comment, unsigned version, const char *model, const char *firmware,
              void (*body)(FILE *f, const void *userdata), const void *userdata, char **ret_text) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, "# %s\nversion=%u\nmodel=%s\nfirmware=%s\n", comment, version, model, firmware);
        body(f, userdata);
        return memstream_finish(f, &buf, ret_text);
}

int kv_parse(const char *text, size_t len, const KvFormat *fmt, char *model, size_t model_size, char *firmware,
             size_t firmware_size, void *userdata, char **ret_error) {
        uint64_t min_version = fmt->min_version ? fmt->min_version : fmt->version, version = fmt->version;
        unsigned have = 0;
        KvLine kvl = {};
        size_t p = 0;
        int r;

        for (;;) {
                const char *why = NULL;
                unsigned bit = 0;

                r = kv_next_line(text, len, &p, &kvl, &why);
                if (r < 0)
                        return kv_fail(ret_error, kvl.line, why);
                if (r == 0)
                        break;
                if (!kv_header_key(&kvl, have, min_version, fmt->version, fmt->unsupported_why, model, model_size,
                                   firmware, firmware_size, &bit, &version, &why))
                        why = fmt->parse_key(userdata, &kvl, version, &bit);
                if (!why && bit && (have & bit))
                        why = "key given twice";
                if (why)
                        return kv_fail(ret_error, kvl.line, why);
                have |= bit;
        }
        if ((have & fmt->required) != fmt->required)
                return kv_fail(ret_error, kvl.line, fmt->incomplete_why);
        return 0;
}

static void escape(FILE *f, const char *s) {
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '-')
                        fputc(ch, f);
                else
                        fprintf(f, "%%%02X", ch);
        }
}

int kv_state_path(const char *state_dir, const char *dir, const char *model, const char *firmware,
                  const char *suffix, char **ret_path) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (!state_dir || !*state_dir || !model || !*model || !firmware)
                return -EINVAL;
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, "%s/%s/", state_dir, dir);
        escape(f, model);
        fputc('@', f);
        escape(f, firmware);
        fputs(suffix, f);
        return memstream_finish(f, &buf, ret_path);
}
