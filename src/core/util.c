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

int runtime_directory(const char *fallback, char **ret) {
        const char *e = getenv("RUNTIME_DIRECTORY");
        char *d;

        if (e && e[0] == '/')
                d = strndup(e, strcspn(e, ":"));
        else
                d = strdup(fallback);
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
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
