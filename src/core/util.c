/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Checked string-to-number and boolean parsing; see util.h.
 */

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "util.h"

int safe_atou32_n(const char *s, size_t len, uint32_t *ret) {
        uint32_t v = 0;

        if (!s || len == 0)
                return -EINVAL;

        for (size_t i = 0; i < len; i++) {
                unsigned d;

                /* Not isdigit(): that one depends on the locale. */
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                d = (unsigned) (s[i] - '0');
                if (v > (UINT32_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }

        *ret = v;
        return 0;
}

int safe_atou32(const char *s, uint32_t *ret) {
        return safe_atou32_n(s, s ? strlen(s) : 0, ret);
}

int safe_atod(const char *s, double *ret) {
        char *end;
        double x;

        if (!s || !ret)
                return -EINVAL;
        errno = 0;
        x = strtod(s, &end);
        if (errno != 0)
                return -ERANGE;
        if (end == s || *end != 0 || !isfinite(x))
                return -EINVAL;
        *ret = x;
        return 0;
}

/* The units parse_time_span_usec() takes: µs per unit and the decimal digits of a fraction that stay whole. */
static const struct {
        const char *name;
        uint64_t usec;
        unsigned frac_digits;
} time_units[] = {
        { "us", 1, 0 },
        { "\xc2\xb5s", 1, 0 },        /* "µs" in UTF-8 */
        { "ms", 1000, 3 },
        { "s", 1000000, 6 },
};

int parse_time_span_usec(const char *s, uint64_t *ret) {
        uint64_t whole = 0, frac = 0, mult = 1;
        size_t n_int, n_frac = 0;
        unsigned frac_digits = 0;
        const char *p, *unit;

        if (!s)
                return -EINVAL;
        n_int = strspn(s, "0123456789");
        if (n_int == 0)
                return -EINVAL;
        p = s + n_int;
        if (*p == '.') {
                n_frac = strspn(p + 1, "0123456789");
                if (n_frac == 0)
                        return -EINVAL;
                p += 1 + n_frac;
        }
        unit = p;
        if (*unit) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(time_units) && strcmp(unit, time_units[i].name) != 0; i++)
                        ;
                if (i == ELEMENTSOF(time_units))
                        return -EINVAL;
                mult = time_units[i].usec;
                frac_digits = time_units[i].frac_digits;
        }
        for (size_t i = 0; i < n_int; i++) {
                unsigned d = (unsigned) (s[i] - '0');
                if (whole > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                whole = whole * 10 + d;
        }
        /* the fraction's first frac_digits digits, scaled to µs; any digit past them must be 0 */
        for (size_t i = 0; i < frac_digits; i++)
                frac = frac * 10 + (i < n_frac ? (unsigned) (s[n_int + 1 + i] - '0') : 0);
        for (size_t i = frac_digits; i < n_frac; i++)
                if (s[n_int + 1 + i] != '0')
                        return -EINVAL;
        if (whole > (UINT64_MAX - frac) / mult)
                return -ERANGE;
        *ret = whole * mult + frac;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "true", "on" };
        static const char *const no[] = { "0", "no", "false", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

size_t utf8_char_len(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        unsigned char lo = 0x80, hi = 0xbf;   /* the second byte's range (RFC 3629 section 4) */
        size_t n;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                n = 2;
        else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                n = 3;
                if (p[0] == 0xe0)
                        lo = 0xa0;    /* below: overlong */
                else if (p[0] == 0xed)
                        hi = 0x9f;    /* above: surrogates */
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                n = 4;
                if (p[0] == 0xf0)
                        lo = 0x90;    /* below: overlong */
                else if (p[0] == 0xf4)
                        hi = 0x8f;    /* above: past U+10FFFF */
        } else
                return 0;
        if (p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
        return n;
}
