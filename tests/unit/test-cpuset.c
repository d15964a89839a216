/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuset_parse()/cpuset_format() against the kernel's list syntax, and the
 * set operations. Table-driven: each case has a path-like name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cpuset.h"
#include "macro.h"

typedef struct ParseCase {
        const char *name;
        const char *input;
        int error;              /* expected return */
        const char *canonical;  /* cpuset_format() of the result, when error == 0 */
        unsigned count;
} ParseCase;

static const ParseCase parse_cases[] = {
        { "/cpuset/parse/single-zero", "0", 0, "0", 1 },
        { "/cpuset/parse/range-zero-zero", "0-0", 0, "0", 1 },
        { "/cpuset/parse/last-cpu", "1023", 0, "1023", 1 },
        { "/cpuset/parse/full-range", "0-1023", 0, "0-1023", 1024 },
        { "/cpuset/parse/list", "0-3,6", 0, "0-3,6", 5 },
        { "/cpuset/parse/merges-adjacent", "0,1,2,3", 0, "0-3", 4 },
        { "/cpuset/parse/unsorted-overlapping", "6,0-3,2-4", 0, "0-4,6", 6 },
        { "/cpuset/parse/blanks-around", " 0-3 ", 0, "0-3", 4 },
        { "/cpuset/parse/tab-around", "\t5\t", 0, "5", 1 },
        { "/cpuset/parse/trailing-newline", "0-3\n", 0, "0-3", 4 },
        { "/cpuset/parse/blank-then-newline", "0-3 \n", 0, "0-3", 4 },
        { "/cpuset/parse/leading-zeros", "007", 0, "7", 1 },
        { "/cpuset/parse/bad/past-max", "1024", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/range-past-max", "1000-1024", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/reversed", "3-1", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/lone-comma", ",", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/double-comma", "1,,2", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/trailing-comma", "1,", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/leading-comma", ",1", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/letter", "a", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/negative", "-1", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/open-range", "0-", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/double-dash", "0--3", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/range-of-range", "0-1-2", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/overflow-digits", "99999999999999999999999", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/overflow-u32", "4294967296", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/empty", "", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/only-blanks", "  ", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/only-newline", "\n", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/two-newlines", "0-3\n\n", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/inner-blank", "0 -3", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/blank-after-comma", "0, 3", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/stride", "0-7:2/4", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/sign", "+1", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/hex", "0x1", -EINVAL, NULL, 0 },
        { "/cpuset/parse/bad/trailing-garbage", "0-3x", -EINVAL, NULL, 0 },
};

static void test_parse(const ParseCase *c) {
        CpuSet s, sentinel;
        char buf[CPUSET_FORMAT_MAX];
        int r;

        memset(&s, 0xa5, sizeof(s));
        memcpy(&sentinel, &s, sizeof(sentinel));
        r = cpuset_parse(c->input, &s);
        if (r != c->error) {
                fprintf(stderr, "%s: got %d, expected %d\n", c->name, r, c->error);
                CHECK(false);
        }
        if (r < 0) {
                /* @ret untouched on failure */
                CHECK(memcmp(&s, &sentinel, sizeof(s)) == 0);
                return;
        }

        cpuset_format(&s, buf, sizeof(buf));
        if (strcmp(buf, c->canonical) != 0) {
                fprintf(stderr, "%s: formatted \"%s\", expected \"%s\"\n", c->name, buf, c->canonical);
                CHECK(false);
        }
        CHECK(cpuset_count(&s) == c->count);
        CHECK(!cpuset_is_empty(&s));

        /* Round trip: the canonical form parses back to the same set. */
        {
                CpuSet t;

                CHECK(cpuset_parse(buf, &t) == 0);
                CHECK(memcmp(&s, &t, sizeof(s)) == 0);
        }
}

static void test_format_empty(void) {
        CpuSet s = {};
        char buf[8] = "xxxxxxx";

        CHECK(cpuset_is_empty(&s));
        CHECK(cpuset_count(&s) == 0);
        cpuset_format(&s, buf, sizeof(buf));
        CHECK(strcmp(buf, "") == 0);
        /* n = 0 writes nothing */
        buf[0] = 'x';
        cpuset_format(&s, buf, 0);
        CHECK(buf[0] == 'x');
}

/* Patterns that make the longest lists; all must fit CPUSET_FORMAT_MAX and round-trip. */
static void test_format_worst_case(void) {
        static const struct {
                const char *name;
                unsigned period, on;
        } patterns[] = {
                { "/cpuset/format/every-other", 2, 1 },
                { "/cpuset/format/pairs", 3, 2 },
                { "/cpuset/format/every-third", 3, 1 },
                { "/cpuset/format/all", 1, 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(patterns); i++) {
                CpuSet s = {}, t;
                char buf[CPUSET_FORMAT_MAX];

                for (unsigned c = 0; c < CPUSET_MAX; c++)
                        if (c % patterns[i].period < patterns[i].on)
                                cpuset_add(&s, c);
                cpuset_format(&s, buf, sizeof(buf));
                CHECK(strlen(buf) + 1 < sizeof(buf));
                CHECK(cpuset_parse(buf, &t) == 0);
                CHECK(memcmp(&s, &t, sizeof(s)) == 0);
                printf("ok %s (%zu chars)\n", patterns[i].name, strlen(buf));
        }
}

/* A short buffer keeps whole ranges only. */
static void test_format_truncated(void) {
        CpuSet s;
        char buf[9];

        CHECK(cpuset_parse("0-3,6,100-200", &s) == 0);
        cpuset_format(&s, buf, sizeof(buf));
        CHECK(strcmp(buf, "0-3,6") == 0);
        cpuset_format(&s, buf, 4);
        CHECK(strcmp(buf, "0-3") == 0);
        cpuset_format(&s, buf, 3);
        CHECK(strcmp(buf, "") == 0);
}

static void test_ops(void) {
        CpuSet a, b, c;
        char buf[CPUSET_FORMAT_MAX];

        CHECK(cpuset_parse("0-3,8", &a) == 0);
        CHECK(cpuset_parse("2-5,1023", &b) == 0);

        c = a;
        cpuset_or(&c, &b);
        cpuset_format(&c, buf, sizeof(buf));
        CHECK(strcmp(buf, "0-5,8,1023") == 0);
        CHECK(cpuset_count(&c) == 8);

        c = a;
        cpuset_and(&c, &b);
        cpuset_format(&c, buf, sizeof(buf));
        CHECK(strcmp(buf, "2-3") == 0);
        CHECK(cpuset_count(&c) == 2);

        CHECK(cpuset_parse("9", &b) == 0);
        c = a;
        cpuset_and(&c, &b);
        CHECK(cpuset_is_empty(&c));

        /* add/has ignore CPUs past the end instead of writing out of bounds */
        c = (CpuSet) {};
        cpuset_add(&c, CPUSET_MAX);
        cpuset_add(&c, UINT32_MAX);
        CHECK(cpuset_is_empty(&c));
        CHECK(!cpuset_has(&c, CPUSET_MAX));
        cpuset_add(&c, 63);
        cpuset_add(&c, 64);
        CHECK(cpuset_has(&c, 63) && cpuset_has(&c, 64) && !cpuset_has(&c, 65));
        cpuset_format(&c, buf, sizeof(buf));
        CHECK(strcmp(buf, "63-64") == 0);
        printf("ok /cpuset/ops\n");
}

int main(void) {
        for (size_t i = 0; i < ELEMENTSOF(parse_cases); i++) {
                test_parse(&parse_cases[i]);
                printf("ok %s\n", parse_cases[i].name);
        }
        test_format_empty();
        printf("ok /cpuset/format/empty\n");
        test_format_worst_case();
        test_format_truncated();
        printf("ok /cpuset/format/truncated\n");
        test_ops();
        return check_exit_status();
}
