/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Passive calibration: exit latencies from the first-request service times of
 * the exact idle-gap histogram. See passive-calib.h.
 */

#include <errno.h>

#include "passive-calib.h"

#define NS_PER_US UINT64_C(1000)
#define NS_PER_MS UINT64_C(1000000)

void passive_calib_reach_from_table(const ApstTable *t, const IdCtrl *id, PassiveCalibReach *ret) {
        PassiveCalibReach r = {};
        bool seen[APST_ENTRIES] = {};
        unsigned cur = 0;
        uint64_t at = 0;

        if (t->apste) {
                while (r.n < IDCTRL_MAX_PS) {
                        uint64_t e = t->entry[cur];
                        uint32_t itpt = apst_entry_itpt(e);
                        unsigned next = apst_entry_itps(e);

                        seen[cur] = true;
                        if (itpt == 0 || next == cur || next > id->npss || seen[next])
                                break;
                        at += (uint64_t) itpt * NS_PER_MS;
                        r.state[r.n] = (uint8_t) next;
                        r.due_ns[r.n] = at;
                        at += (uint64_t) id->psd[next].enlat_us * NS_PER_US;
                        r.settled_ns[r.n] = at;
                        r.n++;
                        cur = next;
                }
        }
        *ret = r;
}

static uint64_t margin(uint64_t boundary_ns) {
        return boundary_ns >> PASSIVE_CALIB_MARGIN_SHIFT;
}

static void sum_add(PassiveCalibSum *s, const GapHist *h, unsigned b) {
        s->count += h->wake_count[b];
        s->sum_ns += h->wake_sum_ns[b];
        if (h->wake_max_ns[b] > s->max_ns)
                s->max_ns = h->wake_max_ns[b];
}

/* Is the bucket [lo, hi) wholly before @boundary, with the margin? */
static bool before(uint64_t hi, uint64_t boundary) {
        return hi != UINT64_MAX && hi <= boundary - margin(boundary);
}

void passive_calib_feed(PassiveCalib *pc, const GapHist *delta, const PassiveCalibReach *reach) {
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                uint64_t lo = gaphist_bucket_lower_ns(b), hi = gaphist_bucket_upper_ns(b);

                pc->gaps_fed += delta->gaps[b];
                if (delta->wake_count[b] == 0)
                        continue;
                if (reach->n == 0 || before(hi, reach->due_ns[0])) {
                        sum_add(&pc->awake, delta, b);
                        continue;
                }
                for (unsigned k = 0; k < reach->n; k++) {
                        uint64_t settled = reach->settled_ns[k];

                        if (lo < settled + margin(settled))
                                break;   /* in (or too near) step k's entry: evidence for no one state */
                        if (k + 1 < reach->n && !before(hi, reach->due_ns[k + 1]))
                                continue;
                        sum_add(&pc->state[reach->state[k]], delta, b);
                        break;
                }
        }
}

static uint64_t mean(const PassiveCalibSum *s) {
        return s->count > 0 ? (s->sum_ns + s->count / 2) / s->count : 0;
}

int passive_calib_estimate(const PassiveCalib *pc, unsigned ps, PassiveCalibEstimate *ret) {
        const PassiveCalibSum *s;
        PassiveCalibEstimate e;

        if (ps >= IDCTRL_MAX_PS)
                return -EINVAL;
        s = &pc->state[ps];
        if (s->count < PASSIVE_CALIB_MIN_SAMPLES || pc->awake.count < PASSIVE_CALIB_MIN_SAMPLES)
                return -ENODATA;
        e = (PassiveCalibEstimate) {
                .samples = s->count,
                .awake_samples = pc->awake.count,
                .awake_mean_ns = mean(&pc->awake),
                .wake_mean_ns = mean(s),
                .wake_max_ns = s->max_ns,
        };
        e.exlat_ns = e.wake_mean_ns > e.awake_mean_ns ? e.wake_mean_ns - e.awake_mean_ns : 0;
        *ret = e;
        return 0;
}

bool passive_calib_disagrees(uint64_t measured_ns, uint32_t advertised_us) {
        uint64_t adv = (uint64_t) advertised_us * NS_PER_US;
        uint64_t diff = measured_ns > adv ? measured_ns - adv : adv - measured_ns;

        return diff * 4 > adv && diff > (uint64_t) PASSIVE_CALIB_DISAGREE_MIN_US * NS_PER_US;
}

uint32_t passive_calib_apply(const PassiveCalib *pc, const IdCtrl *id, IdCtrl *ret) {
        IdCtrl out = *id;
        uint32_t mask = 0;

        for (unsigned ps = 0; ps <= id->npss && ps < IDCTRL_MAX_PS; ps++) {
                PassiveCalibEstimate e;
                uint64_t us;

                if (passive_calib_estimate(pc, ps, &e) < 0)
                        continue;
                us = (e.exlat_ns + NS_PER_US - 1) / NS_PER_US;
                if (us > UINT32_MAX)
                        us = UINT32_MAX;
                if (us > out.psd[ps].exlat_us) {
                        out.psd[ps].exlat_us = (uint32_t) us;
                        mask |= UINT32_C(1) << ps;
                }
        }
        *ret = out;
        return mask;
}
