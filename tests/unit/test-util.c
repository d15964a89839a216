/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small helpers every module shares: the unsigned parser, the runtime
 * directory lookup, the retry schedule, the pin-mode names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "nvme-admin.h"
#include "macro.h"
#include "retry.h"
#include "state-file.h"
#include "util.h"

static void test_safe_atod(void) {
        double x = 7;

        CHECK(safe_atod("0.3", &x) == 0 && x == 0.3);
        CHECK(safe_atod("2e-3", &x) == 0 && x == 2e-3);
        CHECK(safe_atod("-1", &x) == 0 && x == -1);
        x = 7;
        CHECK(safe_atod("", &x) == -EINVAL && x == 7);
        CHECK(safe_atod(NULL, &x) == -EINVAL);
        CHECK(safe_atod("1 W", &x) == -EINVAL && x == 7);
        CHECK(safe_atod("0.5\n", &x) == -EINVAL);
        CHECK(safe_atod("inf", &x) == -EINVAL);
        CHECK(safe_atod("nan", &x) == -EINVAL);
        CHECK(safe_atod("1e999", &x) == -ERANGE && x == 7);
}

static void test_safe_atou32(void) {
        uint32_t v = 7;

        CHECK(safe_atou32("42", &v) == 0 && v == 42);
        CHECK(safe_atou32("0", &v) == 0 && v == 0);
        CHECK(safe_atou32("007", &v) == 0 && v == 7);
        CHECK(safe_atou32("4294967295", &v) == 0 && v == UINT32_MAX);
        v = 7;
        CHECK(safe_atou32("4294967296", &v) == -ERANGE);
        CHECK(safe_atou32("99999999999999999999", &v) == -ERANGE);
        CHECK(safe_atou32("", &v) == -EINVAL);
        CHECK(safe_atou32(NULL, &v) == -EINVAL);
        CHECK(safe_atou32(".", &v) == -EINVAL);
        CHECK(safe_atou32("-1", &v) == -EINVAL);
        CHECK(safe_atou32("+1", &v) == -EINVAL);
        CHECK(safe_atou32("1 ", &v) == -EINVAL);
        CHECK(safe_atou32(" 1", &v) == -EINVAL);
        CHECK(safe_atou32("42\n", &v) == -EINVAL);
        CHECK(safe_atou32("0x10", &v) == -EINVAL);
        CHECK(v == 7);
        /* a length: the rest of the string is not looked at */
        CHECK(safe_atou32_n("123abc", 3, &v) == 0 && v == 123);
        CHECK(safe_atou32_n("123", 0, &v) == -EINVAL);
}

static void test_parse_time_span_usec(void) {
        static const struct {
                const char *in;
                int r;
                uint64_t usec;
        } cases[] = {
                { "0", 0, 0 },
                { "1500", 0, 1500 },
                { "1500us", 0, 1500 },
                { "7\xc2\xb5s", 0, 7 },
                { "1ms", 0, 1000 },
                { "1.5ms", 0, 1500 },
                { "0.001ms", 0, 1 },
                { "2.50ms", 0, 2500 },
                { "1.0000ms", 0, 1000 },          /* trailing zeros past 1 µs are fine */
                { "2s", 0, 2000000 },
                { "0.000001s", 0, 1 },
                { "007ms", 0, 7000 },
                { "18446744073709551615", 0, UINT64_MAX },
                { "18446744073709551615us", 0, UINT64_MAX },
                { "18446744073709s", 0, UINT64_C(18446744073709000000) },
                { "18446744073709.551615s", 0, UINT64_MAX },
                /* overflow: of the digits, and of the product with the unit */
                { "18446744073709551616", -ERANGE, 0 },
                { "18446744073710s", -ERANGE, 0 },
                { "18446744073709.551616s", -ERANGE, 0 },
                { "99999999999999999999999ms", -ERANGE, 0 },
                /* a fraction finer than a microsecond is refused, not rounded */
                { "1.5", -EINVAL, 0 },
                { "1.5us", -EINVAL, 0 },
                { "1.0005ms", -EINVAL, 0 },
                { "0.0000001s", -EINVAL, 0 },
                /* no sign, blank, exponent, other unit or half a number */
                { "", -EINVAL, 0 },
                { "-1", -EINVAL, 0 },
                { "-1ms", -EINVAL, 0 },
                { "+1", -EINVAL, 0 },
                { " 1", -EINVAL, 0 },
                { "1 ms", -EINVAL, 0 },
                { "1ms ", -EINVAL, 0 },
                { "1e3", -EINVAL, 0 },
                { "1min", -EINVAL, 0 },
                { "1h", -EINVAL, 0 },
                { "1MS", -EINVAL, 0 },
                { "1ns", -EINVAL, 0 },
                { "ms", -EINVAL, 0 },
                { ".5ms", -EINVAL, 0 },
                { "1.ms", -EINVAL, 0 },
                { "1..5ms", -EINVAL, 0 },
                { "1.5.1ms", -EINVAL, 0 },
                { "0x10", -EINVAL, 0 },
                { "1msms", -EINVAL, 0 },
        };
        uint64_t v;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int r;

                v = 42;
                r = parse_time_span_usec(cases[i].in, &v);
                current = cases[i].in;
                CHECK(r == cases[i].r);
                CHECK(r != 0 || v == cases[i].usec);
                CHECK(r == 0 || v == 42);   /* not written on failure */
        }
        current = "NULL";
        CHECK(parse_time_span_usec(NULL, &v) == -EINVAL);
        current = "";
}

/* utf8_char_len(): RFC 3629's well-formed sequences only. */
static void test_utf8_char_len(void) {
        static const struct {
                const char *in;
                size_t len;
        } cases[] = {
                { "a", 1 }, { "\x7f", 1 }, { "\xc3\xa9", 2 }, { "\xe2\x86\x92", 3 }, { "\xf0\x9f\x92\xbe", 4 },
                { "\xef\xbf\xbf", 3 }, { "\xf4\x8f\xbf\xbf", 4 },   /* U+FFFF, U+10FFFF */
                { "\x80", 0 }, { "\xc0\xaf", 0 }, { "\xc1\xbf", 0 },          /* stray, overlong */
                { "\xe0\x80\xaf", 0 }, { "\xf0\x80\x80\xaf", 0 },          /* overlong */
                { "\xed\xa0\x80", 0 }, { "\xf4\x90\x80\x80", 0 }, { "\xf5\x80\x80\x80", 0 },
                { "\xe2\x86", 0 }, { "\xc3", 0 },                          /* cut short */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                current = cases[i].in;
                CHECK(utf8_char_len(cases[i].in) == cases[i].len);
        }
        current = "";
}

static void test_runtime_directory(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        CHECK(unsetenv("RUNTIME_DIRECTORY") == 0);
        CHECK(runtime_directory("/run/x", &a) == 0 && strcmp(a, "/run/x") == 0);
        CHECK(setenv("RUNTIME_DIRECTORY", "/run/nvme-apstd:/run/other", 1) == 0);
        CHECK(runtime_directory("/run/x", &b) == 0 && strcmp(b, "/run/nvme-apstd") == 0);
        CHECK(setenv("RUNTIME_DIRECTORY", "", 1) == 0);
        CHECK(runtime_directory("/run/x", &c) == 0 && strcmp(c, "/run/x") == 0);
        /* systemd passes absolute paths only: anything else is not from it */
        CHECK(setenv("RUNTIME_DIRECTORY", "relative", 1) == 0);
        CHECK(runtime_directory("/run/x", &d) == 0 && strcmp(d, "/run/x") == 0);
        CHECK(unsetenv("RUNTIME_DIRECTORY") == 0);
}

static void test_retry(void) {
        CHECK(retry_delay_usec(0) == 2000000u);
        CHECK(retry_delay_usec(1) == 4000000u);
        CHECK(retry_delay_usec(5) == 64000000u);
        CHECK(retry_delay_usec(6) == 64000000u);     /* capped: a dead controller does not keep us awake */
        CHECK(retry_delay_usec(1000) == 64000000u);
        CHECK(retry_is_transient(-EINTR, 0) && retry_is_transient(-EAGAIN, 0) && retry_is_transient(-EBUSY, 0) &&
              retry_is_transient(-ETIMEDOUT, 0));
        CHECK(!retry_is_transient(-ENODEV, 0) && !retry_is_transient(-EIO, 0) && !retry_is_transient(-EBADMSG, 0));
        CHECK(retry_is_transient(-EREMOTEIO, 0x0002));                        /* no DNR */
        CHECK(!retry_is_transient(-EREMOTEIO, 0x0002 | CTRL_STATUS_DNR));     /* Do Not Retry */
}

static void test_pin_mode(void) {
        for (CpuPinMode m = 0; m < _CPU_PIN_MAX; m++)
                CHECK(cpu_pin_mode_from_string(cpu_pin_mode_to_string(m)) == m);
        CHECK(strcmp(cpu_pin_mode_to_string(CPU_PIN_BUSY), "busy") == 0);
        CHECK(cpu_pin_mode_from_string("Busy") == _CPU_PIN_INVALID);
        CHECK(cpu_pin_mode_from_string(NULL) == _CPU_PIN_INVALID);
        CHECK(cpu_pin_mode_to_string(_CPU_PIN_MAX) == NULL && cpu_pin_mode_to_string(_CPU_PIN_INVALID) == NULL);
}

int main(void) {
        test_safe_atou32();
        test_safe_atod();
        test_parse_time_span_usec();
        test_utf8_char_len();
        test_runtime_directory();
        test_retry();
        test_pin_mode();
        return check_exit_status();
}
