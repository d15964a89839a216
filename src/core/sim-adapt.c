/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The adaptive policy behind the simulator's seam (sim.h's SimPolicy): the same code the
 * daemon runs, fed by the simulated counters or gaps. Kept on the simulator's side so the
 * policy itself (adapt.h) does not depend on the simulator.
 */

#include <stdio.h>
#include <string.h>

#include "sim-adapt.h"

static int sim_start(void *userdata, ApstTable *ret_table) {
        const Adapt *a = userdata;

        *ret_table = a->current_table;
        return 0;
}

static int sim_sample(void *userdata, uint64_t now_ns, const SimBlockStat *st, ApstTable *ret_table) {
        Adapt *a = userdata;
        WatchStat w;

        if (now_ns < adapt_next(a))
                return 0;
        w = (WatchStat) {
                .ios = st->read_ios + st->write_ios + st->discard_ios + st->flush_ios,
                .ticks_ms = st->read_ticks + st->write_ticks + st->discard_ticks + st->flush_ticks,
                .in_flight = st->in_flight,
                .io_ticks_ms = st->io_ticks,
        };
        return adapt_feed(a, now_ns, &w, ret_table, NULL);
}

static void sim_reason(void *userdata, char *buf, size_t n) {
        const Adapt *a = userdata;

        if (n > 0 && snprintf(buf, n, "%s", a->last.reason) < 0)
                buf[0] = 0;
}

static int sim_gaps(void *userdata, uint64_t now_ns, const GapHist *delta, ApstTable *ret_table) {
        return adapt_observe_gaps(userdata, delta, now_ns, ret_table, NULL);
}

static uint64_t sim_recheck(void *userdata) {
        return adapt_recheck_ns(userdata);
}

static int sim_start_exact(void *userdata, ApstTable *ret_table) {
        return adapt_start_exact(userdata, ret_table);
}

/* What both sources share: the name, the reason, the policy. */
static SimPolicy sim_policy_base(Adapt *a) {
        return (SimPolicy) { .name = "adaptive", .reason = sim_reason, .userdata = a };
}

void adapt_sim_policy_gaps(SimPolicy *ret, Adapt *a) {
        *ret = sim_policy_base(a);
        ret->sample_period_ns = ADAPT_GAPS_PERIOD_NS;
        ret->start = sim_start_exact;
        ret->gaps = sim_gaps;
        ret->recheck = sim_recheck;
        /* the floors the policy weighs hidden gaps at (adapt_init()) */
        ret->hide_floors = a->hide_floors;
        memcpy(ret->hide_floor_ns, a->hide_floor_ns, sizeof ret->hide_floor_ns);
}

void adapt_sim_policy(SimPolicy *ret, Adapt *a) {
        *ret = sim_policy_base(a);
        ret->sample_period_ns = WATCH_FAST_NS;
        ret->start = sim_start;
        ret->sample = sim_sample;
}
