/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: HoldLatency's argument checks (hold_validate(), what the
 * daemon runs on every call any local user can make over D-Bus) and the set of
 * holds they feed. The input is split at its first three NUL bytes into
 * controller, reason and application id (what is missing is ""); the 8 bytes
 * after the third NUL, if any, are the latency. What is accepted must keep the
 * promises: a controller name of "nvme" and digits or "", texts of at most 255
 * bytes with no control character (every byte checked here again, apart from
 * the UTF-8 decoder), a latency within the maximum; what is refused names one
 * argument. An accepted hold goes into a set, whose cap must be its latency.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holds.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The configuration's largest max_latency_us (config.c). */
#define MAX_US 10000000u

/* The next NUL-terminated field of @buf (@size bytes, the last one NUL) from *@off; "" past the end. */
static const char *field(const char *buf, size_t size, size_t *off) {
        const char *f;

        if (*off >= size)
                return "";
        f = buf + *off;
        *off = MIN(size, *off + strlen(f) + 1);
        return f;
}

static void check_text(const char *s) {
        size_t l = strlen(s);

        assert(l <= HOLD_TEXT_MAX);
        for (size_t i = 0; i < l; i++)
                assert((unsigned char) s[i] >= 0x20 && (unsigned char) s[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *controller, *reason, *app;
        uint64_t latency = 0;
        HoldArg bad = _HOLD_ARG_INVALID;
        char *buf, why[256] = "";
        size_t off = 0;
        int r;

        if (size > 4096)
                return 0;
        /* one byte more, NUL: the last field ends inside the buffer */
        buf = calloc(1, size + 1);
        assert(buf);
        memcpy(buf, data, size);
        controller = field(buf, size + 1, &off);
        reason = field(buf, size + 1, &off);
        app = field(buf, size + 1, &off);
        if (off + sizeof latency <= size)
                memcpy(&latency, buf + off, sizeof latency);

        r = hold_validate(controller, latency, MAX_US, reason, app, &bad, why, sizeof why);
        if (r == 0) {
                HoldSet s;
                Hold h = { .max_latency_us = (uint32_t) latency };
                uint32_t cookie = 0;

                assert(bad == _HOLD_ARG_INVALID);
                assert(latency <= MAX_US);
                assert(hold_check_controller(controller));
                assert(controller[0] == 0 || strncmp(controller, "nvme", 4) == 0);
                assert(strspn(controller + (controller[0] ? 4 : 0), "0123456789") == strlen(controller) -
                       (controller[0] ? 4 : 0));
                check_text(reason);
                check_text(app);
                holds_init(&s);
                (void) snprintf(h.controller, sizeof h.controller, "%s", controller);
                assert(holds_add(&s, &h, &cookie) == 0 && cookie != 0);
                assert(holds_cap_us(&s, controller[0] ? controller : "nvme0") == latency);
                assert(hold_sets_budget(&s.holds[0], controller[0] ? controller : "nvme0", MAX_US + 1,
                                        (uint32_t) latency));
                holds_done(&s);
        } else {
                assert(r == -EINVAL);
                assert(bad >= 0 && bad < _HOLD_ARG_MAX);
                assert(strncmp(why, hold_arg_to_string(bad), strlen(hold_arg_to_string(bad))) == 0);
        }
        free(buf);
        return 0;
}
