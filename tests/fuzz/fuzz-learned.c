/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the adaptive policy's learned-state file parser
 * (learned_parse(), what the daemon reads from STATE_DIR/adaptive/ *.learned at start).
 * Whatever parses must keep its bounds (no count above 10^15, sums that fit their
 * counts) and format back to text that parses to the same values.
 * The input is copied to a heap buffer of exactly its size, not NUL-terminated.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "learned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Learned l, back;
        char *buf, *err = NULL, *text = NULL;
        int r;

        if (size > 65536)
                return 0;
        buf = malloc(size ? size : 1);
        assert(buf);
        memcpy(buf, data, size);
        r = learned_parse(buf, size, &l, &err);
        if (r == 0) {
                assert(!err);
                assert(l.gaps_seen <= LEARNED_COUNT_MAX && l.hist_elapsed_ms <= LEARNED_COUNT_MAX);
                assert(strlen(l.model) < sizeof l.model && strlen(l.firmware) < sizeof l.firmware);
                for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                        assert(l.hist_milli[b] <= LEARNED_COUNT_MAX && l.hidden_after_milli[b] <= LEARNED_COUNT_MAX);
                        for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                                assert(l.hidden_milli[k][b] <= LEARNED_COUNT_MAX);
                }
                assert(l.state[0].count == 0);
                for (unsigned s = 0; s < IDCTRL_MAX_PS; s++) {
                        const PassiveCalibSum *p = &l.state[s];
                        assert(p->count <= LEARNED_COUNT_MAX && p->max_ns <= p->sum_ns);
                        assert(p->count > 0 || (p->sum_ns == 0 && p->max_ns == 0));
                }
                assert(learned_format(&l, &text) == 0);
                assert(learned_parse(text, strlen(text), &back, NULL) == 0);
                assert(learned_equal(&l, &back));
                free(text);
        } else {
                assert(r == -EINVAL || r == -ENOMEM);
                assert(r == -ENOMEM || (err && strncmp(err, "line ", 5) == 0));
        }
        free(err);
        free(buf);
        return 0;
}
