/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Identify Controller decoding (pure: no I/O, no globals, no logging).
 *
 * Two inputs end up in one IdCtrl:
 *  - the 4096 bytes of Identify Controller data (CNS 01h), little endian, as
 *    the drive returns them and as `nvme id-ctrl -b` writes them
 *    (doc/nvme-apst.md has the layout);
 *  - the JSON `nvme id-ctrl -o json` prints (nvme-cli 2.3: "vid", "ssvid",
 *    "sn", "mn", "fr", "npss", "apsta", "psds": [{"max_power", "flags",
 *    "entry_lat", "exit_lat", "idle_power", "idle_scale", "active_power",
 *    "active_scale", ...}]).
 *
 * Both come from outside (a drive's firmware or a file a user hands us). The
 * binary decoder reads fixed offsets of a buffer of exactly IDCTRL_SIZE bytes
 * and allocates nothing. The JSON is parsed by json-c (a parsing library, no
 * I/O) within fixed bounds on size and nesting, and the tree is freed before
 * returning; only the fields above are kept. Both are fuzzed
 * (tests/fuzz/fuzz-idctrl.c).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "idctrl.h"
#include "macro.h"

/* Byte offsets in Identify Controller data (NVMe base spec, Identify Controller). */
#define IDCTRL_OFF_VID 0
#define IDCTRL_OFF_SSVID 2
#define IDCTRL_OFF_SN 4
#define IDCTRL_LEN_SN 20
#define IDCTRL_OFF_MN 24
#define IDCTRL_LEN_MN 40
#define IDCTRL_OFF_FR 64
#define IDCTRL_LEN_FR 8
#define IDCTRL_OFF_NPSS 263
#define IDCTRL_OFF_APSTA 265
#define IDCTRL_OFF_PSD 2048
#define IDCTRL_PSD_SIZE 32

/* Byte offsets inside one 32-byte power state descriptor (libnvme struct nvme_id_psd). */
#define PSD_OFF_MP 0          /* 16 bits */
#define PSD_OFF_FLAGS 3       /* bit 0 MXPS, bit 1 NOPS */
#define PSD_OFF_ENLAT 4       /* 32 bits, µs */
#define PSD_OFF_EXLAT 8       /* 32 bits, µs */
#define PSD_OFF_IDLP 16       /* 16 bits */
#define PSD_OFF_IPS 18        /* bits 7:6 */
#define PSD_OFF_ACTP 20       /* 16 bits */
#define PSD_OFF_APWS 22       /* bits 2:0 APW, bits 7:6 APS */

#define PSD_FLAG_MXPS 0x01u
#define PSD_FLAG_NOPS 0x02u

/* Power scales in µW per unit: MP in 0.01 W, or 0.0001 W with MXPS; IPS/APS 01b = 0.0001 W,
 * 10b = 0.01 W, 00b = not reported, 11b = reserved (treated as not reported). */
#define UW_PER_CENTIWATT 10000u
#define UW_PER_DECIMILLIWATT 100u

/* Far above anything nvme-cli prints (about 3 KiB for five states, 16 KiB for 32): bounds the work. */
#define IDCTRL_JSON_MAX (1024u * 1024u)
/* nvme-cli output nests three levels (object, psds array, psd object); allow some slack, no more:
 * the tokener refuses deeper input before it builds anything for it. */
#define JSON_MAX_DEPTH 16u

static uint16_t get_le16(const uint8_t *p) {
        return (uint16_t) (p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p) {
        return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static uint32_t max_power_uw(uint16_t mp, uint8_t flags) {
        return (uint32_t) mp * ((flags & PSD_FLAG_MXPS) ? UW_PER_DECIMILLIWATT : UW_PER_CENTIWATT);
}

/* @scale is the 2-bit field value (IPS or APS), already shifted down. */
static uint32_t scaled_power_uw(uint16_t value, unsigned scale) {
        switch (scale) {
        case 1:
                return (uint32_t) value * UW_PER_DECIMILLIWATT;
        case 2:
                return (uint32_t) value * UW_PER_CENTIWATT;
        default:
                return 0;
        }
}

static bool is_blank(char c) {
        return c == ' ' || c == '\0';
}

void idctrl_copy_string(char *dst, const void *src, size_t n) {
        const unsigned char *s = src;
        size_t len = n;

        /* Identify strings are space padded; tolerate NUL padding too (some firmware does it). */
        while (len > 0 && is_blank((char) s[len - 1]))
                len--;
        for (size_t i = 0; i < len; i++)
                dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? (char) s[i] : '?';
        dst[len] = '\0';
}

static int idctrl_check(const IdCtrl *id) {
        /* The kernel gives up on APST for npss > 31 ("NPSS is invalid"); PSDs stop at 31. */
        if (id->npss >= IDCTRL_MAX_PS)
                return -ERANGE;
        return 0;
}

int idctrl_parse_binary(const void *buf, size_t len, IdCtrl *ret) {
        const uint8_t *b = buf;
        IdCtrl id = {};
        int r;

        if (!buf || !ret)
                return -EINVAL;
        if (len != IDCTRL_SIZE)
                return -EBADMSG;

        id.vid = get_le16(b + IDCTRL_OFF_VID);
        id.ssvid = get_le16(b + IDCTRL_OFF_SSVID);
        idctrl_copy_string(id.serial, b + IDCTRL_OFF_SN, IDCTRL_LEN_SN);
        idctrl_copy_string(id.model, b + IDCTRL_OFF_MN, IDCTRL_LEN_MN);
        idctrl_copy_string(id.firmware, b + IDCTRL_OFF_FR, IDCTRL_LEN_FR);
        id.npss = b[IDCTRL_OFF_NPSS];
        id.apst_supported = b[IDCTRL_OFF_APSTA] & 0x01;

        r = idctrl_check(&id);
        if (r < 0)
                return r;

        for (unsigned i = 0; i <= id.npss; i++) {
                const uint8_t *p = b + IDCTRL_OFF_PSD + IDCTRL_PSD_SIZE * i;
                uint8_t flags = p[PSD_OFF_FLAGS];

                id.psd[i] = (IdPsd) {
                        .max_power_uw = max_power_uw(get_le16(p + PSD_OFF_MP), flags),
                        .non_operational = flags & PSD_FLAG_NOPS,
                        .enlat_us = get_le32(p + PSD_OFF_ENLAT),
                        .exlat_us = get_le32(p + PSD_OFF_EXLAT),
                        .idle_power_uw = scaled_power_uw(get_le16(p + PSD_OFF_IDLP), p[PSD_OFF_IPS] >> 6),
                        .active_power_uw = scaled_power_uw(get_le16(p + PSD_OFF_ACTP), p[PSD_OFF_APWS] >> 6),
                };
        }

        *ret = id;
        return 0;
}

/*
 * JSON, through json-c (fuzzed upstream; libnvme already links it).
 *
 * json-c checks the syntax and builds a tree; this part only bounds the input
 * (IDCTRL_JSON_MAX bytes, JSON_MAX_DEPTH levels of nesting, enforced by the
 * tokener before it allocates anything deeper) and checks each field nvme-cli
 * prints: its type, its range, and that every field we need is there. Errors:
 * -EBADMSG for anything that is not JSON or not the shape nvme-cli prints,
 * -ERANGE for a number that does not fit its field; @why names the field.
 */

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_tokener *, json_tokener_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put);

typedef struct Why {
        char *buf;      /* NULL: the caller does not want the reason */
        size_t size;
} Why;

_printf_(3, 4) static int fail(Why *why, int r, const char *fmt, ...) {
        va_list ap;

        if (why->buf && why->size > 0) {
                va_start(ap, fmt);
                (void) vsnprintf(why->buf, why->size, fmt, ap);
                va_end(ap);
        }
        return r;
}

/* An unsigned integer no larger than @max: -ERANGE when negative or too large, -EBADMSG if not an
 * integer. json-c saturates integers beyond 64 bits, which stay out of range. @where names it. */
static int json_uint(struct json_object *v, uint64_t max, const char *where, Why *why, uint64_t *ret) {
        uint64_t u;

        if (!json_object_is_type(v, json_type_int))
                return fail(why, -EBADMSG, "%s: not an unsigned integer", where);
        if (json_object_get_int64(v) < 0)
                return fail(why, -ERANGE, "%s: negative", where);
        u = json_object_get_uint64(v);
        if (u > max)
                return fail(why, -ERANGE, "%s: %" PRIu64 " is larger than %" PRIu64, where, u, max);
        *ret = u;
        return 0;
}

/* A JSON string into an IdCtrl field of @n bytes (+1 for the NUL), sanitised like binary data. One
 * character per code point, as the field has one byte per character: ASCII stays, every other code
 * point (a UTF-8 lead byte; its continuation bytes are dropped) becomes 0x7f, which
 * idctrl_copy_string() turns into '?'. */
static int json_field_string(struct json_object *v, const char *name, char *dst, size_t n, Why *why) {
        char raw[IDCTRL_LEN_MN];
        const unsigned char *s;
        size_t len = 0, slen;

        if (n > sizeof(raw))
                return -EINVAL;
        if (!json_object_is_type(v, json_type_string))
                return fail(why, -EBADMSG, "\"%s\": not a string", name);
        s = (const unsigned char *) json_object_get_string(v);
        slen = (size_t) json_object_get_string_len(v);
        for (size_t i = 0; i < slen; i++) {
                if (s[i] >= 0x80 && s[i] < 0xc0)
                        continue;
                if (len == n)
                        return fail(why, -EBADMSG, "\"%s\": longer than the %zu bytes of its Identify field",
                                    name, n);
                raw[len++] = s[i] < 0x80 ? (char) s[i] : 0x7f;
        }
        idctrl_copy_string(dst, raw, len);
        return 0;
}

/* One element of "psds", @index for the messages. Unknown keys are ignored. */
static int json_psd(struct json_object *o, unsigned index, Why *why, IdPsd *ret) {
        enum { MAX_POWER, FLAGS, ENTRY_LAT, EXIT_LAT, IDLE_POWER, IDLE_SCALE, ACTIVE_POWER, ACTIVE_SCALE,
               MXPS, NOPS, N_FIELDS };
        static const struct {
                const char *key;
                uint64_t max;
                bool required;
        } fields[N_FIELDS] = {
                [MAX_POWER] = { "max_power", UINT16_MAX, true },
                [FLAGS] = { "flags", UINT8_MAX, false },
                [ENTRY_LAT] = { "entry_lat", UINT32_MAX, true },
                [EXIT_LAT] = { "exit_lat", UINT32_MAX, true },
                [IDLE_POWER] = { "idle_power", UINT16_MAX, false },
                [IDLE_SCALE] = { "idle_scale", 3, false },
                [ACTIVE_POWER] = { "active_power", UINT16_MAX, false },
                [ACTIVE_SCALE] = { "active_scale", 3, false },
                [MXPS] = { "max_power_scale", 1, false },        /* newer nvme-cli, instead of "flags" */
                [NOPS] = { "non-operational_state", 1, false },  /* newer nvme-cli, instead of "flags" */
        };
        uint64_t val[N_FIELDS] = {};
        bool have[N_FIELDS] = {};
        uint8_t flags;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return fail(why, -EBADMSG, "psds[%u]: not an object", index);

        for (size_t i = 0; i < N_FIELDS; i++) {
                struct json_object *v;
                char where[64];

                if (!json_object_object_get_ex(o, fields[i].key, &v)) {
                        if (fields[i].required)
                                return fail(why, -EBADMSG, "psds[%u]: \"%s\" missing", index, fields[i].key);
                        continue;
                }
                (void) snprintf(where, sizeof(where), "psds[%u].%s", index, fields[i].key);
                r = json_uint(v, fields[i].max, where, why, &val[i]);
                if (r < 0)
                        return r;
                have[i] = true;
        }

        if (have[FLAGS])
                flags = (uint8_t) val[FLAGS];
        else if (have[MXPS] && have[NOPS])
                flags = (uint8_t) ((val[MXPS] ? PSD_FLAG_MXPS : 0) | (val[NOPS] ? PSD_FLAG_NOPS : 0));
        else
                return fail(why, -EBADMSG,
                            "psds[%u]: \"flags\" missing (or \"max_power_scale\" with \"non-operational_state\")",
                            index);

        *ret = (IdPsd) {
                .max_power_uw = max_power_uw((uint16_t) val[MAX_POWER], flags),
                .non_operational = flags & PSD_FLAG_NOPS,
                .enlat_us = (uint32_t) val[ENTRY_LAT],
                .exlat_us = (uint32_t) val[EXIT_LAT],
                .idle_power_uw = scaled_power_uw((uint16_t) val[IDLE_POWER], (unsigned) val[IDLE_SCALE]),
                .active_power_uw = scaled_power_uw((uint16_t) val[ACTIVE_POWER], (unsigned) val[ACTIVE_SCALE]),
        };
        return 0;
}

/* "psds": [ {...}, ... ] into @psd; *@ret_n gets the number of elements (at most IDCTRL_MAX_PS). */
static int json_psds(struct json_object *a, IdPsd psd[static IDCTRL_MAX_PS], Why *why, unsigned *ret_n) {
        size_t n;
        int r;

        if (!json_object_is_type(a, json_type_array))
                return fail(why, -EBADMSG, "\"psds\": not an array");
        n = json_object_array_length(a);
        if (n > IDCTRL_MAX_PS)
                return fail(why, -EBADMSG, "\"psds\": %zu power states, the structure has room for %u", n,
                            IDCTRL_MAX_PS);
        for (size_t i = 0; i < n; i++) {
                r = json_psd(json_object_array_get_idx(a, i), (unsigned) i, why, &psd[i]);
                if (r < 0)
                        return r;
        }
        *ret_n = (unsigned) n;
        return 0;
}

/* Look up a top-level field we need. */
static int json_need(struct json_object *top, const char *key, Why *why, struct json_object **ret) {
        if (!json_object_object_get_ex(top, key, ret))
                return fail(why, -EBADMSG, "\"%s\" missing", key);
        return 0;
}

static int json_need_string(struct json_object *top, const char *key, char *dst, size_t len, Why *why) {
        struct json_object *v;
        int r;

        r = json_need(top, key, why, &v);
        if (r < 0)
                return r;
        return json_field_string(v, key, dst, len, why);
}

static int json_need_uint(struct json_object *top, const char *key, uint64_t max, Why *why, uint64_t *ret) {
        struct json_object *v;
        char where[16];
        int r;

        r = json_need(top, key, why, &v);
        if (r < 0)
                return r;
        (void) snprintf(where, sizeof(where), "\"%s\"", key);
        return json_uint(v, max, where, why, ret);
}

/* Parse @len bytes of JSON text (any bytes after the value but blanks are an error) into a tree. */
static int json_parse_bounded(const char *text, size_t len, Why *why, struct json_object **ret) {
        _cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
        struct json_object *o;
        size_t end;

        if (len > IDCTRL_JSON_MAX)
                return fail(why, -EBADMSG, "larger than %u bytes", IDCTRL_JSON_MAX);
        /* json-c counts every value on the path as a level, a scalar in the deepest container too:
         * 16 nested containers are fine, 15 if the innermost holds a number or a string. */
        tok = json_tokener_new_ex(JSON_MAX_DEPTH);
        if (!tok)
                return -ENOMEM;
        /* trailing characters are checked below, to say so */
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
        o = json_tokener_parse_ex(tok, text, (int) len);
        if (!o) {
                enum json_tokener_error e = json_tokener_get_error(tok);

                if (e == json_tokener_continue)
                        return fail(why, -EBADMSG, "JSON ends early");
                if (e == json_tokener_success)       /* the text is the literal null */
                        return fail(why, -EBADMSG, "not a JSON object");
                return fail(why, -EBADMSG, "not JSON: %s at byte %zu", json_tokener_error_desc(e),
                            json_tokener_get_parse_end(tok));
        }
        for (end = json_tokener_get_parse_end(tok); end < len; end++)
                if (text[end] != ' ' && text[end] != '\t' && text[end] != '\n' && text[end] != '\r') {
                        json_object_put(o);
                        return fail(why, -EBADMSG, "not JSON: garbage after the object at byte %zu", end);
                }
        *ret = o;
        return 0;
}

static int idctrl_parse_json_len(const char *text, size_t len, IdCtrl *ret, Why *why) {
        _cleanup_(json_object_putp) struct json_object *top = NULL;
        struct json_object *v;
        IdPsd psd[IDCTRL_MAX_PS] = {};
        unsigned npsd = 0;
        IdCtrl id = {};
        uint64_t u = 0; /* set on every success; 0 keeps the analyser's view of fail() simple */
        int r;

        r = json_parse_bounded(text, len, why, &top);
        if (r < 0)
                return r;
        if (!json_object_is_type(top, json_type_object))
                return fail(why, -EBADMSG, "not a JSON object");

        /* Identity for the quirk list and the power states: what a file must have for us to plan. */
        r = json_need_uint(top, "vid", UINT16_MAX, why, &u);
        if (r < 0)
                return r;
        id.vid = (uint16_t) u;
        if (json_object_object_get_ex(top, "ssvid", &v)) {
                r = json_uint(v, UINT16_MAX, "\"ssvid\"", why, &u);
                if (r < 0)
                        return r;
                id.ssvid = (uint16_t) u;
        }
        if (json_object_object_get_ex(top, "sn", &v)) {
                r = json_field_string(v, "sn", id.serial, IDCTRL_LEN_SN, why);
                if (r < 0)
                        return r;
        }
        r = json_need_string(top, "mn", id.model, IDCTRL_LEN_MN, why);
        if (r < 0)
                return r;
        r = json_need_string(top, "fr", id.firmware, IDCTRL_LEN_FR, why);
        if (r < 0)
                return r;
        r = json_need_uint(top, "npss", UINT8_MAX, why, &u);
        if (r < 0)
                return r;
        id.npss = (uint8_t) u;
        r = json_need_uint(top, "apsta", UINT8_MAX, why, &u);
        if (r < 0)
                return r;
        id.apst_supported = u & 0x01;
        r = json_need(top, "psds", why, &v);
        if (r < 0)
                return r;
        r = json_psds(v, psd, why, &npsd);
        if (r < 0)
                return r;

        r = idctrl_check(&id);
        if (r < 0)
                return fail(why, r, "\"npss\": %u is larger than %u", id.npss, IDCTRL_MAX_PS - 1);
        /* nvme-cli prints psd[0..npss]: anything else is not its output. */
        if (npsd != (unsigned) id.npss + 1)
                return fail(why, -EBADMSG, "\"npss\" is %u but \"psds\" has %u power states (want npss + 1)",
                            id.npss, npsd);
        memcpy(id.psd, psd, sizeof(IdPsd) * npsd);

        *ret = id;
        return 0;
}

int idctrl_parse_json(const char *text, IdCtrl *ret) {
        Why why = {};

        if (!text || !ret)
                return -EINVAL;
        return idctrl_parse_json_len(text, strnlen(text, IDCTRL_JSON_MAX + 1), ret, &why);
}

int idctrl_parse_any_why(const void *buf, size_t len, IdCtrl *ret, char *reason, size_t reason_size) {
        Why why = { .buf = reason, .size = reason_size };
        const char *s = buf;
        size_t i = 0;

        if (reason && reason_size > 0)
                reason[0] = '\0';
        if (!buf || !ret)
                return -EINVAL;

        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                i++;
        if (i < len && s[i] == '{') {
                /* A file read whole may end in a NUL terminator its reader added: not part of the text. */
                while (len > 0 && s[len - 1] == '\0')
                        len--;
                return idctrl_parse_json_len(s, len, ret, &why);
        }
        if (len == IDCTRL_SIZE) {
                int r = idctrl_parse_binary(buf, len, ret);

                return r == -ERANGE ? fail(&why, r, "npss %u is larger than %u",
                                           ((const uint8_t *) buf)[IDCTRL_OFF_NPSS], IDCTRL_MAX_PS - 1)
                                    : r;
        }
        return fail(&why, -EBADMSG, "%zu bytes: neither the %u bytes of `nvme id-ctrl -b` nor JSON", len,
                    IDCTRL_SIZE);
}

int idctrl_parse_any(const void *buf, size_t len, IdCtrl *ret) {
        return idctrl_parse_any_why(buf, len, ret, NULL, 0);
}

size_t idctrl_wake_floors(const IdCtrl *id, uint64_t *ret, size_t n) {
        size_t k = 1;

        for (size_t i = 0; i < n; i++)
                ret[i] = 0;
        if (n == 0)
                return 0;
        /* Insertion into the sorted list, the longest dropped when it is full. */
        for (unsigned s = 1; s <= id->npss && s < IDCTRL_MAX_PS; s++) {
                uint64_t x = id->psd[s].exlat_us * UINT64_C(1000);
                size_t i = 0;

                if (!id->psd[s].non_operational || x == 0)
                        continue;
                while (i < k && ret[i] < x)
                        i++;
                if (i < k && ret[i] == x)
                        continue;
                if (i >= n)
                        continue;
                for (size_t j = MIN(k, n - 1); j > i; j--)
                        ret[j] = ret[j - 1];
                ret[i] = x;
                k = MIN(k + 1, n);
        }
        return k > 1 ? k : 0;
}
