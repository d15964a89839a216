/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small helpers every module shares: the unsigned parser, the runtime
 * directory lookup, the retry schedule, the pin-mode names.
 */
#undef NDEBUG

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "nvme-admin.h"
#include "macro.h"
#include "retry.h"
#include "util.h"

static void test_safe_atod(void) {
        double x = 7;

        assert(safe_atod("0.3", &x) == 0 && x == 0.3);
        assert(safe_atod("2e-3", &x) == 0 && x == 2e-3);
        assert(safe_atod("-1", &x) == 0 && x == -1);
        x = 7;
        assert(safe_atod("", &x) == -EINVAL && x == 7);
        assert(safe_atod(NULL, &x) == -EINVAL);
        assert(safe_atod("1 W", &x) == -EINVAL && x == 7);
        assert(safe_atod("0.5\n", &x) == -EINVAL);
        assert(safe_atod("inf", &x) == -EINVAL);
        assert(safe_atod("nan", &x) == -EINVAL);
        assert(safe_atod("1e999", &x) == -ERANGE && x == 7);
}

static void test_safe_atou32(void) {
        uint32_t v = 7;

        assert(safe_atou32("42", &v) == 0 && v == 42);
        assert(safe_atou32("0", &v) == 0 && v == 0);
        assert(safe_atou32("007", &v) == 0 && v == 7);
        assert(safe_atou32("4294967295", &v) == 0 && v == UINT32_MAX);
        v = 7;
        assert(safe_atou32("4294967296", &v) == -ERANGE);
        assert(safe_atou32("99999999999999999999", &v) == -ERANGE);
        assert(safe_atou32("", &v) == -EINVAL);
        assert(safe_atou32(NULL, &v) == -EINVAL);
        assert(safe_atou32(".", &v) == -EINVAL);
        assert(safe_atou32("-1", &v) == -EINVAL);
        assert(safe_atou32("+1", &v) == -EINVAL);
        assert(safe_atou32("1 ", &v) == -EINVAL);
        assert(safe_atou32(" 1", &v) == -EINVAL);
        assert(safe_atou32("42\n", &v) == -EINVAL);
        assert(safe_atou32("0x10", &v) == -EINVAL);
        assert(v == 7);
        /* a length: the rest of the string is not looked at */
        assert(safe_atou32_n("123abc", 3, &v) == 0 && v == 123);
        assert(safe_atou32_n("123", 0, &v) == -EINVAL);
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
                if (r != cases[i].r || (r == 0 && v != cases[i].usec) || (r < 0 && v != 42)) {
                        fprintf(stderr, "parse_time_span_usec(\"%s\") = %d, %llu; want %d, %llu\n", cases[i].in, r,
                                (unsigned long long) v, cases[i].r, (unsigned long long) cases[i].usec);
                        abort();
                }
        }
        assert(parse_time_span_usec(NULL, &v) == -EINVAL);
}

static void test_runtime_directory(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        assert(unsetenv("RUNTIME_DIRECTORY") == 0);
        assert(runtime_directory("/run/x", &a) == 0 && strcmp(a, "/run/x") == 0);
        assert(setenv("RUNTIME_DIRECTORY", "/run/nvme-apstd:/run/other", 1) == 0);
        assert(runtime_directory("/run/x", &b) == 0 && strcmp(b, "/run/nvme-apstd") == 0);
        assert(setenv("RUNTIME_DIRECTORY", "", 1) == 0);
        assert(runtime_directory("/run/x", &c) == 0 && strcmp(c, "/run/x") == 0);
        /* systemd passes absolute paths only: anything else is not from it */
        assert(setenv("RUNTIME_DIRECTORY", "relative", 1) == 0);
        assert(runtime_directory("/run/x", &d) == 0 && strcmp(d, "/run/x") == 0);
        assert(unsetenv("RUNTIME_DIRECTORY") == 0);
}

static void test_retry(void) {
        assert(retry_delay_usec(0) == 2000000u);
        assert(retry_delay_usec(1) == 4000000u);
        assert(retry_delay_usec(5) == 64000000u);
        assert(retry_delay_usec(6) == 64000000u);     /* capped: a dead controller does not keep us awake */
        assert(retry_delay_usec(1000) == 64000000u);
        assert(retry_is_transient(-EINTR, 0) && retry_is_transient(-EAGAIN, 0) && retry_is_transient(-EBUSY, 0) &&
               retry_is_transient(-ETIMEDOUT, 0));
        assert(!retry_is_transient(-ENODEV, 0) && !retry_is_transient(-EIO, 0) && !retry_is_transient(-EBADMSG, 0));
        assert(retry_is_transient(-EREMOTEIO, 0x0002));                        /* no DNR */
        assert(!retry_is_transient(-EREMOTEIO, 0x0002 | CTRL_STATUS_DNR));     /* Do Not Retry */
}

static void test_pin_mode(void) {
        for (CpuPinMode m = 0; m < _CPU_PIN_MAX; m++)
                assert(cpu_pin_mode_from_string(cpu_pin_mode_to_string(m)) == m);
        assert(strcmp(cpu_pin_mode_to_string(CPU_PIN_BUSY), "busy") == 0);
        assert(cpu_pin_mode_from_string("Busy") == _CPU_PIN_INVALID);
        assert(cpu_pin_mode_from_string(NULL) == _CPU_PIN_INVALID);
        assert(cpu_pin_mode_to_string(_CPU_PIN_MAX) == NULL && cpu_pin_mode_to_string(_CPU_PIN_INVALID) == NULL);
}

int main(void) {
        test_safe_atou32();
        test_safe_atod();
        test_parse_time_span_usec();
        test_runtime_directory();
        test_retry();
        test_pin_mode();
        return 0;
}
