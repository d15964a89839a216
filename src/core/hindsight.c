/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The best static table with hindsight (hindsight.h): every chain of the
 * drive's usable states with ITPTs from a grid, each run through the
 * simulator on the whole trace, the least energy within the wake delay
 * allowed kept.
 */

#include <errno.h>
#include <string.h>

#include "hindsight.h"

/* From "enter at once" to five seconds: the scale the kernel's (100 ms, 2 s) and
 * the adaptive policy's tables live on. */
static const uint32_t grid_ms[HINDSIGHT_GRID_N] = { 1, 5, 10, 20, 35, 50, 75, 100, 200, 500, 1000, 2000, 5000 };

typedef struct Search {
        const SimDrive *d;
        const TraceIo *io;
        size_t n;
        SimParams sp;           /* the caller's, without the timeline */
        uint64_t max_stall_ns;
        ApstTable best;
        double best_j;
        bool found;
        unsigned candidates;
} Search;

/* Run @t on the trace: its energy and total wake delay. */
static int run_table(Search *s, const ApstTable *t, double *ret_j, uint64_t *ret_stall_ns) {
        SimPolicy pol;
        SimResult r;
        int ret;

        sim_policy_static(&pol, "hindsight", t);
        ret = sim_run(s->d, s->io, s->n, &s->sp, &pol, &r);
        if (ret < 0)
                return ret;
        s->candidates++;
        *ret_j = r.energy_j;
        *ret_stall_ns = r.stall_ns;
        sim_result_done(&r);
        return 0;
}

/* Keep @t if it is within the wake delay allowed and spends less than the best so far. */
static void consider(Search *s, const ApstTable *t, double j, uint64_t stall_ns) {
        if (stall_ns <= s->max_stall_ns && (!s->found || j < s->best_j)) {
                s->best = *t;
                s->best_j = j;
                s->found = true;
        }
}

static int try_table(Search *s, const ApstTable *t) {
        uint64_t stall;
        double j;
        int r = run_table(s, t, &j, &stall);

        if (r < 0)
                return r;
        consider(s, t, j, stall);
        return 0;
}

/* Every ITPT combination for the chain @states[0..@k-1]: an odometer over the grid, one digit a step. */
static int try_itpts(Search *s, const IdCtrl *id, const unsigned *states, unsigned k) {
        unsigned digit[HINDSIGHT_MAX_STEPS] = {};
        uint32_t itpt[HINDSIGHT_MAX_STEPS];

        for (;;) {
                ApstTable t;
                unsigned i;
                int r;

                for (i = 0; i < k; i++)
                        itpt[i] = grid_ms[digit[i]];
                apst_table_from_chain(id, states, itpt, k, &t);
                r = try_table(s, &t);
                if (r < 0)
                        return r;
                for (i = 0; i < k && ++digit[i] == HINDSIGHT_GRID_N; i++)
                        digit[i] = 0;
                if (i == k)
                        return 0;
        }
}

int hindsight_search(const IdCtrl *id, unsigned quirks, const ApstParams *params, const SimDrive *d,
                     const TraceIo *io, size_t n, const SimParams *sp, const ApstTable *kernel_table,
                     double share, HindsightResult *ret) {
        unsigned chain[IDCTRL_MAX_PS], m, states[HINDSIGHT_MAX_STEPS];
        Search s = { .d = d, .io = io, .n = n, .sp = *sp };
        uint64_t kernel_stall;
        double kernel_j;
        SimPolicy pol;
        int r;

        if (!id || !params || !d || !sp || !kernel_table || !ret || !(share >= 0 && share <= 1))
                return -EINVAL;
        s.sp.timeline = false;
        /* The kernel's table first: its wake delay sets what the others may spend. */
        r = run_table(&s, kernel_table, &kernel_j, &kernel_stall);
        if (r < 0)
                return r;
        s.max_stall_ns = (uint64_t) ((double) kernel_stall * share);
        consider(&s, kernel_table, kernel_j, kernel_stall);
        m = apst_chain(id, quirks, params, chain);
        /* 2^m subsets: the deepest 8 states are plenty (drives have 1-4 non-operational ones) */
        if (m > 8) {
                memmove(chain, chain + (m - 8), 8 * sizeof chain[0]);
                m = 8;
        }
        /* every non-empty subset of the chain of at most HINDSIGHT_MAX_STEPS states, in order */
        for (unsigned mask = 1; mask < (1u << m); mask++) {
                unsigned k = 0;

                if ((unsigned) __builtin_popcount(mask) > HINDSIGHT_MAX_STEPS)
                        continue;
                for (unsigned j = 0; j < m; j++)
                        if (mask & (1u << j))
                                states[k++] = chain[j];
                r = try_itpts(&s, id, states, k);
                if (r < 0)
                        return r;
        }

        /* The kernel's table is within its own wake delay, so something was found when
         * @share is 1; otherwise the kernel's table stands. */
        *ret = (HindsightResult) { .table = s.found ? s.best : *kernel_table, .candidates = s.candidates };
        ret->kernel_won = !s.found || apst_table_equal(&ret->table, kernel_table);
        sim_policy_static(&pol, "hindsight", &ret->table);
        return sim_run(d, io, n, sp, &pol, &ret->res);
}

void hindsight_result_done(HindsightResult *r) {
        if (r)
                sim_result_done(&r->res);
}
