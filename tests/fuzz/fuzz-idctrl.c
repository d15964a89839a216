/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: Identify Controller data, binary (`nvme id-ctrl -b`) and
 * nvme-cli JSON (`nvme id-ctrl -o json`), then the APST table builder on
 * whatever parsed.
 *
 * The first input byte selects the entry point (seeds in corpus/fuzz-idctrl
 * carry it), the rest is the data, copied to a heap buffer of exactly its
 * size so ASan sees any read past the end:
 *   sel % 4 == 0: idctrl_parse_binary() on the data as is (length checks)
 *   sel % 4 == 1: idctrl_parse_binary() on the data zero-padded/cut to 4096
 *                 bytes (lets the fuzzer reach the PSD decoding)
 *   sel % 4 == 2: idctrl_parse_json() on a NUL-terminated copy
 *   sel % 4 == 3: idctrl_parse_any_why() (format detection, JSON by length), with
 *                 a reason buffer whose size the first data byte picks (0..IDCTRL_REASON_MAX):
 *                 the reason is always NUL-terminated inside it, and empty on success
 */
#undef NDEBUG
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apst.h"
#include "idctrl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_string(const char *s, size_t n) {
        size_t l = strnlen(s, n);

        assert(l < n);
        for (size_t i = 0; i < l; i++)
                assert(s[i] >= 0x20 && s[i] < 0x7f);
}

static void use(const IdCtrl *id) {
        ApstParams params[3] = { APST_PARAMS_DEFAULT, APST_PARAMS_DEFAULT, APST_PARAMS_DEFAULT };
        ApstPlatform plat = {};
        ApstPlan plan;
        char buf[1024];

        assert(id->npss < IDCTRL_MAX_PS);
        check_string(id->serial, sizeof id->serial);
        check_string(id->model, sizeof id->model);
        check_string(id->firmware, sizeof id->firmware);
        for (unsigned i = id->npss + 1; i < IDCTRL_MAX_PS; i++)
                assert(id->psd[i].max_power_uw == 0 && id->psd[i].enlat_us == 0 && id->psd[i].exlat_us == 0);

        /* the builder must accept any decoded controller and produce a table
         * that its own checker accepts */
        params[1].policy = APST_POLICY_KERNEL;
        params[2].max_latency_us = 5000;
        params[2].force = true;
        for (unsigned k = 0; k < 3; k++) {
                if (apst_build(id, &plat, &params[k], &plan) < 0 || plan.outcome != APST_OUTCOME_PROGRAM)
                        continue;
                assert(apst_table_check(&plan.table, id) == 0);
                (void) apst_worst_wake_us(&plan.table, id);
                apst_describe(&plan.table, id, buf, sizeof buf);
                apst_summary(&plan.table, buf, sizeof buf);
        }
        (void) apst_quirks(id, &plat);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char why[IDCTRL_REASON_MAX];
        size_t why_size = 0;
        IdCtrl id;
        uint8_t *buf;
        size_t n;
        int r;

        if (size < 1)
                return 0;
        n = size - 1;

        switch (data[0] % 4) {
        case 0:
        case 3:
                buf = malloc(n ? n : 1);
                assert(buf);
                memcpy(buf, data + 1, n);
                if (data[0] % 4 == 0) {
                        r = idctrl_parse_binary(buf, n, &id);
                        break;
                }
                why_size = n > 0 ? buf[0] % (IDCTRL_REASON_MAX + 1) : sizeof(why);
                memset(why, 'x', sizeof(why));
                r = idctrl_parse_any_why(buf, n, &id, why_size ? why : NULL, why_size);
                if (why_size > 0) {
                        assert(strnlen(why, why_size) < why_size);
                        assert(r < 0 || why[0] == '\0');
                }
                break;
        case 1:
                buf = calloc(1, IDCTRL_SIZE);
                assert(buf);
                memcpy(buf, data + 1, n < IDCTRL_SIZE ? n : IDCTRL_SIZE);
                r = idctrl_parse_binary(buf, IDCTRL_SIZE, &id);
                break;
        default:
                buf = malloc(n + 1);
                assert(buf);
                memcpy(buf, data + 1, n);
                buf[n] = 0;
                r = idctrl_parse_json((const char *) buf, &id);
                break;
        }
        if (r >= 0)
                use(&id);
        free(buf);
        return 0;
}
