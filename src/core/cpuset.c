/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU sets and the kernel's CPU list syntax (see cpuset.h).
 *
 * The lists we read come from the kernel's "%*pbl" formatter (online,
 * effective_affinity_list) or from the configuration, so we accept exactly
 * that grammar: list := range ("," range)*, range := N | N "-" M with N <= M,
 * N and M decimal CPU numbers below CPUSET_MAX. The stride form the kernel's
 * bitmap_parselist() also takes ("0-7:2/4") is never printed by the kernel
 * and is refused here.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpuset.h"
#include "macro.h"

unsigned cpuset_count(const CpuSet *s) {
        unsigned n = 0;

        for (size_t i = 0; i < ELEMENTSOF(s->bits); i++)
                n += (unsigned) __builtin_popcountll(s->bits[i]);
        return n;
}

bool cpuset_is_empty(const CpuSet *s) {
        for (size_t i = 0; i < ELEMENTSOF(s->bits); i++)
                if (s->bits[i] != 0)
                        return false;
        return true;
}

void cpuset_or(CpuSet *a, const CpuSet *b) {
        for (size_t i = 0; i < ELEMENTSOF(a->bits); i++)
                a->bits[i] |= b->bits[i];
}

void cpuset_and(CpuSet *a, const CpuSet *b) {
        for (size_t i = 0; i < ELEMENTSOF(a->bits); i++)
                a->bits[i] &= b->bits[i];
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* One CPU number: decimal digits, value < CPUSET_MAX. Advances *p past it. */
static int parse_cpu(const char **p, unsigned *ret) {
        const char *s = *p;
        unsigned v = 0;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                v = v * 10 + (unsigned) (*s - '0');
                /* Stops the loop long before unsigned could overflow. */
                if (v >= CPUSET_MAX)
                        return -EINVAL;
        }

        *p = s;
        *ret = v;
        return 0;
}

int cpuset_parse(const char *s, CpuSet *ret) {
        CpuSet set = {};
        const char *p, *end;
        int r;

        if (!s)
                return -EINVAL;

        /* Blanks around the list and one trailing newline, as read from sysfs. */
        end = s + strlen(s);
        if (end > s && end[-1] == '\n')
                end--;
        while (end > s && is_blank(end[-1]))
                end--;
        p = s;
        while (p < end && is_blank(*p))
                p++;
        if (p == end)
                return -EINVAL;

        for (;;) {
                unsigned a, b;

                r = parse_cpu(&p, &a);
                if (r < 0)
                        return r;
                b = a;
                if (p < end && *p == '-') {
                        p++;
                        r = parse_cpu(&p, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                }
                if (p > end)    /* a digit run cannot cross end, but be sure */
                        return -EINVAL;

                for (unsigned c = a; c <= b; c++)
                        cpuset_add(&set, c);

                if (p == end)
                        break;
                if (*p != ',')
                        return -EINVAL;
                p++;
        }

        *ret = set;
        return 0;
}

void cpuset_format(const CpuSet *s, char *buf, size_t n) {
        size_t len = 0;

        if (n == 0)
                return;
        buf[0] = '\0';

        for (unsigned c = 0; c < CPUSET_MAX; c++) {
                unsigned last;
                int k;

                if (!cpuset_has(s, c))
                        continue;
                last = c;
                while (last + 1 < CPUSET_MAX && cpuset_has(s, last + 1))
                        last++;

                if (last == c)
                        k = snprintf(buf + len, n - len, "%s%u", len > 0 ? "," : "", c);
                else
                        k = snprintf(buf + len, n - len, "%s%u-%u", len > 0 ? "," : "", c, last);
                if (k < 0 || (size_t) k >= n - len) {
                        /* Too small: keep only whole ranges, never a misleading "0-1" for "0-100". */
                        buf[len] = '\0';
                        return;
                }
                len += (size_t) k;
                c = last;
        }
}
