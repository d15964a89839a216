/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Identify Controller decoding (pure: no I/O, no allocation, no globals).
 *
 * Two inputs end up in one IdCtrl:
 *  - the 4096 bytes of Identify Controller data (CNS 01h), little endian, as
 *    the drive returns them and as `nvme id-ctrl -b` writes them;
 *  - the JSON `nvme id-ctrl -o json` prints (nvme-cli 2.3: "vid", "ssvid",
 *    "sn", "mn", "fr", "npss", "apsta", "psds": [{"max_power", "flags",
 *    "entry_lat", "exit_lat", "idle_power", "idle_scale", "active_power",
 *    "active_scale", ...}]).
 *
 * Both come from outside (a drive's firmware or a file a user hands us), and
 * the JSON parser will be fuzzed: it is a small strict RFC 8259 parser that
 * works on (pointer, length), never reads past the end, nests at most
 * JSON_MAX_DEPTH levels deep (the only recursion), and keeps nothing but the
 * fields above.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
/* nvme-cli output nests two levels (object, psds array, psd object); allow some slack, no more. */
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

static bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
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
 * JSON
 *
 * A cursor over [p, end). Every read checks p < end first. Errors: -EBADMSG for
 * anything that is not JSON or not the shape nvme-cli prints, -ERANGE for a number
 * that does not fit its field.
 */

typedef struct JsonCursor {
        const char *p;
        const char *end;
} JsonCursor;

static void json_skip_ws(JsonCursor *c) {
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
                c->p++;
}

/* Consume @ch (after blanks) or fail. */
static int json_expect(JsonCursor *c, char ch) {
        json_skip_ws(c);
        if (c->p >= c->end || *c->p != ch)
                return -EBADMSG;
        c->p++;
        return 0;
}

/* Peek at the next non-blank character: 0 at the end. */
static char json_peek(JsonCursor *c) {
        json_skip_ws(c);
        return c->p < c->end ? *c->p : 0;
}

static int hex_value(char ch) {
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
                return ch - 'A' + 10;
        return -1;
}

/*
 * Parse a string. Decoded bytes go to @out (capacity @size, may be NULL to only
 * validate); *@ret_len gets the decoded length, which may exceed @size (then @out
 * holds the first @size bytes). Escaped code points above 0x7e decode to 0x7f,
 * which idctrl_copy_string() turns into '?', as it does raw bytes >= 0x80.
 */
static int json_string(JsonCursor *c, char *out, size_t size, size_t *ret_len) {
        size_t len = 0;
        int r;

        r = json_expect(c, '"');
        if (r < 0)
                return r;

        for (;;) {
                unsigned char ch;

                if (c->p >= c->end)
                        return -EBADMSG;
                ch = (unsigned char) *c->p++;
                if (ch == '"')
                        break;
                if (ch < 0x20)
                        return -EBADMSG;        /* control characters must be escaped */
                if (ch == '\\') {
                        if (c->p >= c->end)
                                return -EBADMSG;
                        switch (*c->p++) {
                        case '"':
                                ch = '"';
                                break;
                        case '\\':
                                ch = '\\';
                                break;
                        case '/':
                                ch = '/';
                                break;
                        case 'b':
                                ch = '\b';
                                break;
                        case 'f':
                                ch = '\f';
                                break;
                        case 'n':
                                ch = '\n';
                                break;
                        case 'r':
                                ch = '\r';
                                break;
                        case 't':
                                ch = '\t';
                                break;
                        case 'u': {
                                unsigned cp = 0;

                                if (c->end - c->p < 4)
                                        return -EBADMSG;
                                for (unsigned i = 0; i < 4; i++) {
                                        int h = hex_value(c->p[i]);

                                        if (h < 0)
                                                return -EBADMSG;
                                        cp = (cp << 4) | (unsigned) h;
                                }
                                c->p += 4;
                                /* Only ASCII survives sanitising anyway; surrogates need no pairing. */
                                ch = cp < 0x7f ? (unsigned char) cp : 0x7f;
                                break;
                        }
                        default:
                                return -EBADMSG;
                        }
                }
                if (out && len < size)
                        out[len] = (char) ch;
                if (len < SIZE_MAX)
                        len++;
        }

        if (ret_len)
                *ret_len = len;
        return 0;
}

typedef enum JsonNumberKind {
        JSON_NUMBER_UINT,       /* non-negative integer that fits uint64_t */
        JSON_NUMBER_NEGATIVE,
        JSON_NUMBER_OVERFLOW,
        JSON_NUMBER_FRACTION,   /* has a fraction or an exponent */
} JsonNumberKind;

/* Validate a number per RFC 8259 §6 and tell what kind it is; *@ret_value is set for UINT. */
static int json_number(JsonCursor *c, uint64_t *ret_value, JsonNumberKind *ret_kind) {
        JsonNumberKind kind = JSON_NUMBER_UINT;
        uint64_t v = 0;
        bool neg = false;

        json_skip_ws(c);
        if (c->p < c->end && *c->p == '-') {
                neg = true;
                c->p++;
        }
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
                return -EBADMSG;
        if (*c->p == '0') {
                c->p++;
        } else {
                while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
                        unsigned d = (unsigned) (*c->p - '0');

                        if (v > (UINT64_MAX - d) / 10)
                                kind = JSON_NUMBER_OVERFLOW;
                        else
                                v = v * 10 + d;
                        c->p++;
                }
        }
        if (c->p < c->end && *c->p == '.') {
                c->p++;
                if (c->p >= c->end || *c->p < '0' || *c->p > '9')
                        return -EBADMSG;
                while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
                        c->p++;
                kind = JSON_NUMBER_FRACTION;
        }
        if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
                c->p++;
                if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
                        c->p++;
                if (c->p >= c->end || *c->p < '0' || *c->p > '9')
                        return -EBADMSG;
                while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
                        c->p++;
                kind = JSON_NUMBER_FRACTION;
        }
        if (neg && kind != JSON_NUMBER_FRACTION && v != 0)
                kind = JSON_NUMBER_NEGATIVE;

        *ret_kind = kind;
        *ret_value = kind == JSON_NUMBER_UINT ? v : 0;
        return 0;
}

/* An unsigned integer no larger than @max: -ERANGE when negative or too large, -EBADMSG if not an integer. */
static int json_uint(JsonCursor *c, uint64_t max, uint64_t *ret) {
        JsonNumberKind kind;
        uint64_t v;
        int r;

        if (json_peek(c) != '-' && (json_peek(c) < '0' || json_peek(c) > '9'))
                return -EBADMSG;        /* a string, object, true ... where a number belongs */
        r = json_number(c, &v, &kind);
        if (r < 0)
                return r;
        switch (kind) {
        case JSON_NUMBER_UINT:
                break;
        case JSON_NUMBER_NEGATIVE:
        case JSON_NUMBER_OVERFLOW:
                return -ERANGE;
        case JSON_NUMBER_FRACTION:
                return -EBADMSG;
        }
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int json_literal(JsonCursor *c, const char *word) {
        size_t n = strlen(word);

        json_skip_ws(c);
        if ((size_t) (c->end - c->p) < n || memcmp(c->p, word, n) != 0)
                return -EBADMSG;
        c->p += n;
        return 0;
}

/* Validate and skip any value; @depth counts the containers we are already in. The recursion is
 * bounded by JSON_MAX_DEPTH (fuzzed: tests/fuzz/fuzz-idctrl.c). */
static int json_skip_value(JsonCursor *c, unsigned depth) { /* NOLINT(misc-no-recursion): bounded */
        uint64_t v;
        JsonNumberKind kind;
        int r;

        switch (json_peek(c)) {
        case '"':
                return json_string(c, NULL, 0, NULL);
        case 't':
                return json_literal(c, "true");
        case 'f':
                return json_literal(c, "false");
        case 'n':
                return json_literal(c, "null");
        case '{':
                if (depth >= JSON_MAX_DEPTH)
                        return -EBADMSG;
                c->p++;
                if (json_peek(c) == '}') {
                        c->p++;
                        return 0;
                }
                for (;;) {
                        r = json_string(c, NULL, 0, NULL);
                        if (r < 0)
                                return r;
                        r = json_expect(c, ':');
                        if (r < 0)
                                return r;
                        r = json_skip_value(c, depth + 1);
                        if (r < 0)
                                return r;
                        if (json_peek(c) == ',') {
                                c->p++;
                                continue;
                        }
                        return json_expect(c, '}');
                }
        case '[':
                if (depth >= JSON_MAX_DEPTH)
                        return -EBADMSG;
                c->p++;
                if (json_peek(c) == ']') {
                        c->p++;
                        return 0;
                }
                for (;;) {
                        r = json_skip_value(c, depth + 1);
                        if (r < 0)
                                return r;
                        if (json_peek(c) == ',') {
                                c->p++;
                                continue;
                        }
                        return json_expect(c, ']');
                }
        default:
                return json_number(c, &v, &kind);
        }
}

/*
 * Iterate over the members of an object: call with *@first = true; returns 1 with the
 * key in @key (truncated to @size - 1, NUL-terminated; a longer key gets an empty
 * name so it matches nothing) and the cursor on the value, 0 at the closing brace.
 */
static int json_next_member(JsonCursor *c, bool *first, char *key, size_t size) {
        size_t len;
        int r;

        if (*first) {
                *first = false;
                r = json_expect(c, '{');
                if (r < 0)
                        return r;
                if (json_peek(c) == '}') {
                        c->p++;
                        return 0;
                }
        } else {
                if (json_peek(c) == '}') {
                        c->p++;
                        return 0;
                }
                r = json_expect(c, ',');
                if (r < 0)
                        return r;
        }

        r = json_string(c, key, size - 1, &len);
        if (r < 0)
                return r;
        if (len > size - 1 || memchr(key, '\0', len))
                len = 0;
        key[len] = '\0';
        r = json_expect(c, ':');
        if (r < 0)
                return r;
        return 1;
}

/* A JSON string into an IdCtrl field of @n bytes (+1 for the NUL), sanitised like binary data. */
static int json_field_string(JsonCursor *c, char *dst, size_t n) {
        char raw[IDCTRL_LEN_MN];
        size_t len;
        int r;

        if (n > sizeof(raw))
                return -EINVAL;
        r = json_string(c, raw, n, &len);
        if (r < 0)
                return r;
        if (len > n)
                return -EBADMSG;        /* longer than the Identify field it claims to be */
        idctrl_copy_string(dst, raw, len);
        return 0;
}

enum {
        PSD_HAVE_MAX_POWER = 1u << 0,
        PSD_HAVE_FLAGS = 1u << 1,
        PSD_HAVE_ENTRY_LAT = 1u << 2,
        PSD_HAVE_EXIT_LAT = 1u << 3,
        PSD_HAVE_IDLE_POWER = 1u << 4,
        PSD_HAVE_IDLE_SCALE = 1u << 5,
        PSD_HAVE_ACTIVE_POWER = 1u << 6,
        PSD_HAVE_ACTIVE_SCALE = 1u << 7,
        PSD_HAVE_MXPS = 1u << 8,        /* newer nvme-cli: "max_power_scale" */
        PSD_HAVE_NOPS = 1u << 9,        /* newer nvme-cli: "non-operational_state" */
};

/* One element of "psds". */
static int json_psd(JsonCursor *c, IdPsd *ret) {
        static const struct {
                const char *key;
                unsigned bit;
                uint64_t max;
        } fields[] = {
                { "max_power", PSD_HAVE_MAX_POWER, UINT16_MAX },
                { "flags", PSD_HAVE_FLAGS, UINT8_MAX },
                { "entry_lat", PSD_HAVE_ENTRY_LAT, UINT32_MAX },
                { "exit_lat", PSD_HAVE_EXIT_LAT, UINT32_MAX },
                { "idle_power", PSD_HAVE_IDLE_POWER, UINT16_MAX },
                { "idle_scale", PSD_HAVE_IDLE_SCALE, 3 },
                { "active_power", PSD_HAVE_ACTIVE_POWER, UINT16_MAX },
                { "active_scale", PSD_HAVE_ACTIVE_SCALE, 3 },
                { "max_power_scale", PSD_HAVE_MXPS, 1 },
                { "non-operational_state", PSD_HAVE_NOPS, 1 },
        };
        uint64_t val[ELEMENTSOF(fields)] = {};
        unsigned have = 0;
        bool first = true;
        char key[32];
        uint8_t flags;
        int r;

        if (json_peek(c) != '{')
                return -EBADMSG;

        while ((r = json_next_member(c, &first, key, sizeof(key))) > 0) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(fields); i++)
                        if (streq(key, fields[i].key))
                                break;
                if (i == ELEMENTSOF(fields)) {
                        r = json_skip_value(c, 2);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (have & fields[i].bit)
                        return -EBADMSG;        /* duplicate key: which one would nvme-cli mean? */
                r = json_uint(c, fields[i].max, &val[i]);
                if (r < 0)
                        return r;
                have |= fields[i].bit;
        }
        if (r < 0)
                return r;

        if (have & PSD_HAVE_FLAGS)
                flags = (uint8_t) val[1];
        else if ((have & (PSD_HAVE_MXPS | PSD_HAVE_NOPS)) == (PSD_HAVE_MXPS | PSD_HAVE_NOPS))
                flags = (uint8_t) ((val[8] ? PSD_FLAG_MXPS : 0) | (val[9] ? PSD_FLAG_NOPS : 0));
        else
                return -EBADMSG;
        if ((have & (PSD_HAVE_MAX_POWER | PSD_HAVE_ENTRY_LAT | PSD_HAVE_EXIT_LAT)) !=
            (PSD_HAVE_MAX_POWER | PSD_HAVE_ENTRY_LAT | PSD_HAVE_EXIT_LAT))
                return -EBADMSG;

        *ret = (IdPsd) {
                .max_power_uw = max_power_uw((uint16_t) val[0], flags),
                .non_operational = flags & PSD_FLAG_NOPS,
                .enlat_us = (uint32_t) val[2],
                .exlat_us = (uint32_t) val[3],
                .idle_power_uw = scaled_power_uw((uint16_t) val[4], (unsigned) val[5]),
                .active_power_uw = scaled_power_uw((uint16_t) val[6], (unsigned) val[7]),
        };
        return 0;
}

/* "psds": [ {...}, ... ]; *@ret_n gets the number of elements (at most IDCTRL_MAX_PS). */
static int json_psds(JsonCursor *c, IdPsd psd[static IDCTRL_MAX_PS], unsigned *ret_n) {
        unsigned n = 0;
        int r;

        r = json_expect(c, '[');
        if (r < 0)
                return r;
        if (json_peek(c) == ']') {
                c->p++;
                *ret_n = 0;
                return 0;
        }
        for (;;) {
                if (n >= IDCTRL_MAX_PS)
                        return -EBADMSG;        /* the structure has room for 32 */
                r = json_psd(c, &psd[n]);
                if (r < 0)
                        return r;
                n++;
                if (json_peek(c) == ',') {
                        c->p++;
                        continue;
                }
                r = json_expect(c, ']');
                if (r < 0)
                        return r;
                break;
        }
        *ret_n = n;
        return 0;
}

enum {
        TOP_HAVE_VID = 1u << 0,
        TOP_HAVE_SSVID = 1u << 1,
        TOP_HAVE_SN = 1u << 2,
        TOP_HAVE_MN = 1u << 3,
        TOP_HAVE_FR = 1u << 4,
        TOP_HAVE_NPSS = 1u << 5,
        TOP_HAVE_APSTA = 1u << 6,
        TOP_HAVE_PSDS = 1u << 7,
};

/* What a file must have for us to plan a table: identity for the quirk list, and the states. */
#define TOP_REQUIRED (TOP_HAVE_VID | TOP_HAVE_MN | TOP_HAVE_FR | TOP_HAVE_NPSS | TOP_HAVE_APSTA | TOP_HAVE_PSDS)

static int idctrl_parse_json_len(const char *text, size_t len, IdCtrl *ret) {
        static const struct {
                const char *key;
                unsigned bit;
        } keys[] = {
                { "vid", TOP_HAVE_VID },     { "ssvid", TOP_HAVE_SSVID }, { "sn", TOP_HAVE_SN },
                { "mn", TOP_HAVE_MN },       { "fr", TOP_HAVE_FR },       { "npss", TOP_HAVE_NPSS },
                { "apsta", TOP_HAVE_APSTA }, { "psds", TOP_HAVE_PSDS },
        };
        JsonCursor c = { .p = text, .end = text + len };
        IdPsd psd[IDCTRL_MAX_PS] = {};
        unsigned have = 0, npsd = 0;
        bool first = true;
        IdCtrl id = {};
        char key[32];
        int r;

        if (len > IDCTRL_JSON_MAX)
                return -EBADMSG;
        if (json_peek(&c) != '{')
                return -EBADMSG;

        while ((r = json_next_member(&c, &first, key, sizeof(key))) > 0) {
                unsigned bit = 0;
                uint64_t v;

                for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                        if (streq(key, keys[i].key))
                                bit = keys[i].bit;
                if (bit == 0) {
                        r = json_skip_value(&c, 1);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (have & bit)
                        return -EBADMSG;
                have |= bit;

                switch (bit) {
                case TOP_HAVE_VID:
                        r = json_uint(&c, UINT16_MAX, &v);
                        id.vid = (uint16_t) v;
                        break;
                case TOP_HAVE_SSVID:
                        r = json_uint(&c, UINT16_MAX, &v);
                        id.ssvid = (uint16_t) v;
                        break;
                case TOP_HAVE_SN:
                        r = json_field_string(&c, id.serial, IDCTRL_LEN_SN);
                        break;
                case TOP_HAVE_MN:
                        r = json_field_string(&c, id.model, IDCTRL_LEN_MN);
                        break;
                case TOP_HAVE_FR:
                        r = json_field_string(&c, id.firmware, IDCTRL_LEN_FR);
                        break;
                case TOP_HAVE_NPSS:
                        r = json_uint(&c, UINT8_MAX, &v);
                        id.npss = (uint8_t) v;
                        break;
                case TOP_HAVE_APSTA:
                        r = json_uint(&c, UINT8_MAX, &v);
                        id.apst_supported = v & 0x01;
                        break;
                case TOP_HAVE_PSDS:
                        r = json_psds(&c, psd, &npsd);
                        break;
                }
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        json_skip_ws(&c);
        if (c.p != c.end)
                return -EBADMSG;        /* trailing garbage after the object */

        if ((have & TOP_REQUIRED) != TOP_REQUIRED)
                return -EBADMSG;
        r = idctrl_check(&id);
        if (r < 0)
                return r;
        /* nvme-cli prints psd[0..npss]: anything else is not its output. */
        if (npsd != (unsigned) id.npss + 1)
                return -EBADMSG;
        memcpy(id.psd, psd, sizeof(IdPsd) * npsd);

        *ret = id;
        return 0;
}

int idctrl_parse_json(const char *text, IdCtrl *ret) {
        if (!text || !ret)
                return -EINVAL;
        return idctrl_parse_json_len(text, strnlen(text, IDCTRL_JSON_MAX + 1), ret);
}

int idctrl_parse_any(const void *buf, size_t len, IdCtrl *ret) {
        const char *s = buf;
        size_t i = 0;

        if (!buf || !ret)
                return -EINVAL;

        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                i++;
        if (i < len && s[i] == '{') {
                /* A file read whole may end in a NUL terminator its reader added: not part of the text. */
                while (len > 0 && s[len - 1] == '\0')
                        len--;
                return idctrl_parse_json_len(s, len, ret);
        }
        if (len == IDCTRL_SIZE)
                return idctrl_parse_binary(buf, len, ret);
        return -EBADMSG;
}
