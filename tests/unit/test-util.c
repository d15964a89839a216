/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small helpers every module shares: the unsigned parser, the runtime
 * directory lookup, the retry schedule, the pin-mode names.
 */
#include <errno.h>
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
        test_runtime_directory();
        test_retry();
        test_pin_mode();
        return check_exit_status();
}
