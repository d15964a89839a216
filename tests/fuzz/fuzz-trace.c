/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the I/O trace parser (plain and blkparse text) that
 * `nvme-apstd simulate --trace` runs on a user's file.
 *
 * The first input byte selects the TraceOptions (no device / "259,0",
 * action auto / D / Q); the rest is the trace, copied to a heap buffer of
 * exactly its size, not NUL-terminated, as trace_parse() allows.
 */
#undef NDEBUG
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char actions[] = { 0, 'D', 'Q' };
        TraceOptions opts = {};
        TraceError err = {};
        Trace t;
        char *buf;
        size_t n;
        int r;

        if (size < 1)
                return 0;
        n = size - 1;
        opts.device = data[0] & 1 ? "259,0" : NULL;
        opts.action = actions[(data[0] >> 1) % 3];

        buf = malloc(n ? n : 1);
        assert(buf);
        memcpy(buf, data + 1, n);

        r = trace_parse(buf, n, &opts, &t, &err);
        if (r == 0) {
                for (size_t i = 0; i < t.n; i++) {
                        assert(i == 0 || t.io[i - 1].t_ns <= t.io[i].t_ns);
                        assert(t.io[i].t_ns <= (uint64_t) TRACE_TIME_MAX_S * 1000000000u);
                        assert(t.io[i].bytes <= TRACE_BYTES_MAX);
                        assert(t.io[i].op >= 0 && t.io[i].op < _TRACE_OP_MAX);
                        assert(t.io[i].line >= 1);
                        (void) trace_op_to_string(t.io[i].op);
                }
                (void) trace_format_to_string(t.format);
                assert(memchr(t.device, 0, sizeof t.device));
                trace_done(&t);
        } else {
                assert(r == -EBADMSG || r == -ENOMEM);
                if (r == -EBADMSG)
                        assert(err.reason);
        }
        free(buf);
        return 0;
}
