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
