/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the calibration file parser (calib_parse(), what plan,
 * apply and the daemon run on the .calib files under /var/lib/nvme-apstd/calibration).
 * Whatever parses must format back to text that parses to the same values,
 * and calib_apply() must never lower an exit latency.
 * The input is copied to a heap buffer of exactly its size, not NUL-terminated.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Calibration c, back;
        char *buf, *err = NULL, *text = NULL;
        IdCtrl id = { .npss = 31 }, out;
        int r;

        if (size > 65536)
                return 0;
        buf = malloc(size ? size : 1);
        assert(buf);
        memcpy(buf, data, size);
        r = calib_parse(buf, size, &c, &err);
        if (r == 0) {
                assert(!err);
                assert(c.n_states <= IDCTRL_MAX_PS);
                assert(calib_format(&c, &text) == 0);
                assert(calib_parse(text, strlen(text), &back, NULL) == 0);
                assert(calib_equal(&c, &back));
                for (unsigned i = 0; i < IDCTRL_MAX_PS; i++)
                        id.psd[i].exlat_us = i * 1000u;
                (void) calib_apply(&c, &id, &out);
                for (unsigned i = 0; i < IDCTRL_MAX_PS; i++)
                        assert(out.psd[i].exlat_us >= id.psd[i].exlat_us);
                free(text);
        } else {
                assert(r == -EINVAL || r == -ENOMEM);
                assert(r == -ENOMEM || (err && strncmp(err, "line ", 5) == 0));
        }
        free(err);
        free(buf);
        return 0;
}
