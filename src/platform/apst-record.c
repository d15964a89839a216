/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The record of the original APST table; see apst-record.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "apst-record.h"
#include "macro.h"
#include "record-file.h"
#include "record-format.h"

_Static_assert(APST_RECORD_VERSION == 1, "apst_record_format() writes version 1");

#define HEX_TABLE_SIZE (APST_ENTRIES * 19 + 1)

/* FNV-1a of the serial: enough to tell drives apart without writing the serial anywhere. */
static uint64_t serial_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

int apst_record_format(const IdCtrl *id, const ApstTable *t, char **ret) {
        char hex[HEX_TABLE_SIZE];

        apst_table_to_hex(t, hex, sizeof hex);
        if (asprintf(ret,
                     RECORD_HEADER(APST_RECORD_KIND, 1) "model=%s\nserial_hash=%016" PRIx64 "\napste=%d\ntable=%s\n",
                     id->model, serial_hash(id->serial), t->apste ? 1 : 0, hex) < 0)
                return -ENOMEM;
        return 0;
}

/* "0x%016x" x 32, one blank apart, nothing else. */
static int parse_table(const char *v, size_t len, ApstTable *t) {
        char one[19];

        if (len != APST_ENTRIES * 19 - 1)
                return -EBADMSG;
        for (unsigned i = 0; i < APST_ENTRIES; i++, v += 19) {
                char *end;

                if (v[0] != '0' || v[1] != 'x' || (i < APST_ENTRIES - 1 && v[18] != ' '))
                        return -EBADMSG;
                memcpy(one, v + 2, 16);
                one[16] = 0;
                if (strspn(one, "0123456789abcdef") != 16)
                        return -EBADMSG;
                t->entry[i] = strtoull(one, &end, 16);
        }
        return 0;
}

enum { K_MODEL = 1 << 0, K_HASH = 1 << 1, K_APSTE = 1 << 2, K_TABLE = 1 << 3 };

/* One "key=value" line. Return: the key's bit, or negative errno. */
static int parse_line(const char *line, size_t len, const IdCtrl *id, ApstTable *t, bool *ret_other_drive) {
        const char *eq = memchr(line, '=', len);
        const char *v;
        size_t klen, vlen;
        char hash[17];

        if (!eq)
                return -EBADMSG;
        klen = (size_t) (eq - line);
        v = eq + 1;
        vlen = len - klen - 1;
#define KEY(k) (klen == strlen(k) && memcmp(line, k, klen) == 0)
        if (KEY("model")) {
                if (vlen != strlen(id->model) || memcmp(v, id->model, vlen) != 0)
                        *ret_other_drive = true;
                return K_MODEL;
        }
        if (KEY("serial_hash")) {
                (void) snprintf(hash, sizeof hash, "%016" PRIx64, serial_hash(id->serial));
                if (vlen != 16 || strspn(v, "0123456789abcdef") < 16)
                        return -EBADMSG;
                if (memcmp(v, hash, 16) != 0)
                        *ret_other_drive = true;
                return K_HASH;
        }
        if (KEY("apste")) {
                if (vlen != 1 || (v[0] != '0' && v[0] != '1'))
                        return -EBADMSG;
                t->apste = v[0] == '1';
                return K_APSTE;
        }
        if (KEY("table"))
                return parse_table(v, vlen, t) < 0 ? -EBADMSG : K_TABLE;
#undef KEY
        return -EBADMSG;
}

int apst_record_parse(const char *text, const IdCtrl *id, ApstTable *ret) {
        const char *body;
        bool other_drive = false;
        unsigned seen = 0;
        ApstTable t = {};
        int r;

        r = record_parse_header(text, APST_RECORD_KIND, APST_RECORD_VERSION, &body);
        if (r == -EBADMSG && text && strncmp(text, "model=", strlen("model=")) == 0)
                body = text;    /* written before records had a header: the same lines */
        else if (r < 0)
                return r;

        for (const char *p = body; *p;) {
                const char *nl = strchr(p, '\n');

                if (!nl)
                        return -EBADMSG;        /* every line ends in a newline: a cut-off file is no record */
                r = parse_line(p, (size_t) (nl - p), id, &t, &other_drive);
                if (r < 0)
                        return r;
                if (seen & (unsigned) r)
                        return -EBADMSG;
                seen |= (unsigned) r;
                p = nl + 1;
        }
        if (seen != (K_MODEL | K_HASH | K_APSTE | K_TABLE))
                return -EBADMSG;
        if (other_drive)
                return -ESTALE;
        if (apst_table_check(&t, id) < 0)
                return -EBADMSG;
        *ret = t;
        return 0;
}

int apst_record_save(const char *path, const IdCtrl *id, const ApstTable *t) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = apst_record_format(id, t, &text);
        if (r < 0)
                return r;
        return record_store(path, text);
}

int apst_record_load(const char *path, const IdCtrl *id, ApstTable *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = record_load(path, &text);
        if (r < 0)
                return r;
        return apst_record_parse(text, id, ret);
}

int apst_record_take_original(const char *path, const IdCtrl *id, const ApstTable *found, ApstTable *ret_orig,
                              bool *ret_from_record, int *ret_load_error) {
        ApstTable rec;
        int r;

        r = apst_record_load(path, id, &rec);
        *ret_from_record = r >= 0;
        if (ret_load_error)
                *ret_load_error = r == -ENOENT ? 0 : MIN(r, 0);
        *ret_orig = r >= 0 ? rec : *found;
        return apst_record_save(path, id, ret_orig);
}
