/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure part of `calibrate`; see calib-plan.h. */

#include <stdlib.h>

#include "calib-plan.h"
#include "macro.h"

size_t calib_targets(const IdCtrl *id, unsigned quirks, bool force, uint8_t *ret_ps) {
        size_t n = 0;

        for (unsigned i = 0; i <= id->npss && i < IDCTRL_MAX_PS; i++) {
                if (!id->psd[i].non_operational)
                        continue;
                /* the kernel never enters the deepest state of a NO_DEEPEST_PS drive; nor do our policies */
                if (i == id->npss && (quirks & APST_QUIRK_NO_DEEPEST_PS) && !force)
                        continue;
                ret_ps[n++] = (uint8_t) i;
        }
        return n;
}

void calib_temp_table(const IdCtrl *id, uint8_t ps, uint32_t itpt_ms, ApstTable *ret) {
        ApstTable t = { .apste = true };

        itpt_ms = MAX(1u, MIN(itpt_ms, APST_ITPT_MAX));
        for (unsigned i = 0; i <= id->npss && i < IDCTRL_MAX_PS; i++)
                if (!id->psd[i].non_operational)
                        t.entry[i] = apst_entry_make(ps, itpt_ms);
        *ret = t;
}

uint64_t calib_idle_wait_us(uint32_t itpt_ms, uint32_t enlat_us) {
        return (uint64_t) itpt_ms * 1000 + (uint64_t) enlat_us + enlat_us / 2 + CALIB_MARGIN_US;
}

uint64_t calib_estimate_us(const IdCtrl *id, const uint8_t *ps, size_t n, unsigned samples, uint32_t itpt_ms) {
        uint64_t total = 0;

        for (size_t k = 0; k < n; k++) {
                const IdPsd *p = &id->psd[ps[k]];
                /* one sample: the idle wait, the wake-up, and two reads of about a millisecond at worst */
                total += (uint64_t) samples * (calib_idle_wait_us(itpt_ms, p->enlat_us) + 4 * (uint64_t) p->exlat_us +
                                               2000);
        }
        return total;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

uint32_t calib_median(uint32_t *v, size_t n) {
        if (n == 0)
                return 0;
        qsort(v, n, sizeof *v, cmp_u32);
        return v[(n - 1) / 2];
}

uint32_t calib_percentile(uint32_t *v, size_t n, unsigned pct) {
        size_t rank;

        if (n == 0)
                return 0;
        pct = MAX(1u, MIN(pct, 100u));
        qsort(v, n, sizeof *v, cmp_u32);
        /* nearest rank: the smallest value with at least pct% of the samples at or below it */
        rank = (n * pct + 99) / 100;
        return v[MAX(rank, (size_t) 1) - 1];
}

void calib_wake_costs(const uint32_t *asleep_us, size_t n, uint32_t awake_median_us, uint32_t *ret) {
        for (size_t i = 0; i < n; i++)
                ret[i] = asleep_us[i] > awake_median_us ? asleep_us[i] - awake_median_us : 0;
}

double calib_ratio(uint32_t measured_us, uint32_t advertised_us) {
        if (advertised_us == 0)
                return -1.0;
        return (double) measured_us / (double) advertised_us;
}
