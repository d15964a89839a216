/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state files' KEY=VALUE parsers: numbers without sign, space or excess,
 * printable strings that fit, every field exactly once, and lines that name
 * the line a problem is on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kvtext.h"

#define S(x) x, strlen(x)

static void test_numbers(void) {
        uint64_t v = 7;

        CHECK(kv_parse_u64(S("42"), 100, &v) == 0 && v == 42);
        CHECK(kv_parse_u64(S("101"), 100, &v) == -ERANGE);
        CHECK(kv_parse_u64(S("18446744073709551615"), UINT64_MAX, &v) == 0 && v == UINT64_MAX);
        CHECK(kv_parse_u64(S("18446744073709551616"), UINT64_MAX, &v) == -ERANGE);
        CHECK(kv_parse_u64(S(""), 1, &v) == -EINVAL);
        CHECK(kv_parse_u64(S("-1"), 1, &v) == -EINVAL);
        CHECK(kv_parse_u64(S("1 "), 9, &v) == -EINVAL);
        CHECK(kv_parse_u64("12", 1, 9, &v) == 0 && v == 1);   /* the length, not the NUL, ends it */
        CHECK(kv_parse_hex64(S("00000000deadbeef"), &v) == 0 && v == 0xdeadbeef);
        CHECK(kv_parse_hex64(S("00000000DEADBEEF"), &v) == -EINVAL);
        CHECK(kv_parse_hex64(S("deadbeef"), &v) == -EINVAL);
}

static void test_strings(void) {
        char b[4];

        CHECK(kv_copy_printable(b, sizeof b, S("abc")) == 0 && strcmp(b, "abc") == 0);
        CHECK(kv_copy_printable(b, sizeof b, S("abcd")) == -ERANGE);
        CHECK(kv_copy_printable(b, sizeof b, S("a\tb")) == -EINVAL);
}

static void test_fields(void) {
        static const char *const keys[] = { "a", "b" };
        uint64_t v[2], lead;

        CHECK(kv_parse_fields(S("b=2 a=1"), NULL, 0, keys, 2, 9, v) == KV_FIELDS_OK && v[0] == 1 && v[1] == 2);
        CHECK(kv_parse_fields(S("3 a=1 b=2"), &lead, 5, keys, 2, 9, v) == KV_FIELDS_OK && lead == 3);
        CHECK(kv_parse_fields(S("6 a=1 b=2"), &lead, 5, keys, 2, 9, v) == KV_FIELDS_LEAD);
        CHECK(kv_parse_fields(S("a=1 b"), NULL, 0, keys, 2, 9, v) == KV_FIELDS_NOT_PAIR);
        CHECK(kv_parse_fields(S("a=1 c=2"), NULL, 0, keys, 2, 9, v) == KV_FIELDS_UNKNOWN);
        CHECK(kv_parse_fields(S("a=1 a=2"), NULL, 0, keys, 2, 9, v) == KV_FIELDS_REPEATED);
        CHECK(kv_parse_fields(S("a=1 b=10"), NULL, 0, keys, 2, 9, v) == KV_FIELDS_NUMBER);
        CHECK(kv_parse_fields(S("a=1"), NULL, 0, keys, 2, 9, v) == KV_FIELDS_MISSING);
}

static void test_lines(void) {
        const char text[] = "# comment\n\nk=v\nbare\n";
        const char *why = NULL;
        KvLine l = {};
        size_t p = 0;
        char *err = NULL;

        CHECK(kv_next_line(text, strlen(text), &p, &l, &why) == 1);
        CHECK(l.line == 3 && kv_key_is(&l, "k") && !kv_key_is(&l, "kk") && l.val_len == 1 && l.val[0] == 'v');
        CHECK(kv_next_line(text, strlen(text), &p, &l, &why) == -EINVAL && l.line == 4);
        CHECK(strcmp(why, "expected KEY=VALUE") == 0);
        CHECK(kv_next_line(text, strlen(text), &p, &l, &why) == 0);

        const char nul[] = "a=1\0b\n";
        p = 0;
        l = (KvLine) {};
        CHECK(kv_next_line(nul, sizeof nul - 1, &p, &l, &why) == -EINVAL && strcmp(why, "NUL byte") == 0);

        CHECK(kv_fail(&err, 4, "bad") == -EINVAL && strcmp(err, "line 4: bad") == 0);
        free(err);
        CHECK(kv_fail(NULL, 1, "x") == -EINVAL);
}

int main(void) {
        test_numbers();
        test_strings();
        test_fields();
        test_lines();
        return check_exit_status();
}
