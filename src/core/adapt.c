/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The adaptive policy: see adapt.h for what it does and doc/policy.md for why.
 *
 * Candidates. A table is a chain of at most ADAPT_MAX_STEPS states taken, in
 * order, from apst_chain() (so every state used has enlat + exlat <=
 * max_latency_us), each entered when the idle time since the last completion
 * reaches a value from a fixed grid (1 ms .. 30 s). Each candidate is scored
 * on the watcher's idle-gap histogram with the model of doc/simulator.md:
 * energy of spending every gap under the chain (resting power, entries and
 * wake-ups at PS0 power) and the wake-up cost (rest of an entry + exit
 * latency x the exlat factor). The cheapest candidate whose cost stays within
 * both the stall budget (share of the elapsed time the histogram covers) and
 * the kernel table's cost on the same gaps wins.
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "adapt.h"
#include "macro.h"
#include "mathfn.h"
#include "string-table.h"

#define NS_PER_MS 1000000.0
#define NS_PER_US 1000.0
#define EXLAT_FACTOR_MAX 20.0
/* A measured wake-up this much slower than advertised is named in a decision's reason. */
#define EXLAT_LIE_SAY 1.2
/* Advertised wake cost the factor needs before it moves: a few wake-ups' worth. */
#define EXLAT_EVIDENCE_MS 5.0

static const uint32_t grid_ms[] = { 1,   2,   5,    10,   20,   35,   50,   75,    100,   150,  200,
                                    300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000 };

static double power_uw(const Adapt *a, unsigned s) {
        const IdPsd *p = &a->id.psd[s];

        if (s == 0)
                return a->p0_uw;
        return p->idle_power_uw ? p->idle_power_uw : p->max_power_uw;
}

/* One idle gap of @g ns under chain @c: energy (µW·ns) and wake-up wait (ns). */
static void gap_cost(const Adapt *a, const AdaptChain *c, double g, double xf, double *ret_e, double *ret_stall) {
        double t = 0, e = 0, stall;
        unsigned cur = 0;

        for (unsigned k = 0; k < c->n; k++) {
                double start = t + c->itpt_ms[k] * NS_PER_MS;
                double enter = a->id.psd[c->state[k]].enlat_us * NS_PER_US;

                if (g <= start)
                        break;
                e += power_uw(a, cur) * (start - t);
                if (g < start + enter) {
                        stall = start + enter - g + a->id.psd[c->state[k]].exlat_us * NS_PER_US * xf;
                        e += a->p0_uw * (g - start + stall);
                        *ret_e = e;
                        *ret_stall = stall;
                        return;
                }
                e += a->p0_uw * enter;
                t = start + enter;
                cur = c->state[k];
        }
        stall = cur == 0 ? 0 : a->id.psd[cur].exlat_us * NS_PER_US * xf;
        e += power_uw(a, cur) * (g - t) + a->p0_uw * stall;
        *ret_e = e;
        *ret_stall = stall;
}

/* A chain over the watcher's gap histogram: energy (µW·ns) and stall (ns), decayed sums. */
static void chain_score(const Adapt *a, const AdaptChain *c, double xf, double *ret_e, double *ret_stall) {
        double e = 0, s = 0;

        /* A bucket spans a factor 2^(1/4) and its gaps are only known to about a quarter of
         * their length: score each at its mean and a quarter below and above it, so a
         * threshold just inside the spread is not taken for a clean miss. */
        static const double spread[3] = { 0.75, 1.0, 1.25 }, weight[3] = { 0.25, 0.5, 0.25 };
        for (unsigned b = 0; b < WATCH_BUCKETS; b++) {
                double n = a->watch.gap_count[b], ge, gs;
                if (n <= 1e-6)
                        continue;
                double mean = a->watch.gap_sum_ns[b] / n;
                for (unsigned k = 0; k < 3; k++) {
                        gap_cost(a, c, mean * spread[k], xf, &ge, &gs);
                        e += weight[k] * n * ge;
                        s += weight[k] * n * gs;
                }
        }
        *ret_e = e;
        *ret_stall = s;
}

static void chain_from_table(const ApstTable *t, const IdCtrl *id, AdaptChain *ret) {
        AdaptChain c = {};
        unsigned s = 0;

        while (t->apste && c.n < ADAPT_MAX_STEPS && s <= id->npss) {
                uint64_t e = t->entry[s];
                unsigned to = apst_entry_itps(e);
                if (apst_entry_itpt(e) == 0 || to <= s)
                        break;
                c.state[c.n] = to;
                c.itpt_ms[c.n++] = apst_entry_itpt(e);
                s = to;
        }
        *ret = c;
}

static void chain_to_table(const Adapt *a, const AdaptChain *c, ApstTable *ret) {
        apst_table_from_chain(&a->id, c->state, c->itpt_ms, c->n, ret);
}

static void chain_to_shadow(const Adapt *a, const AdaptChain *c, ShadowChain *ret) {
        ApstTable t;

        chain_to_table(a, c, &t);
        shadow_chain_from_table(&a->sd, t.apste, t.entry, ret);
}

/* Two chains that make the drive do the same (the shadow kernel's comparison). */
static bool chain_equal(const Adapt *a, const AdaptChain *x, const AdaptChain *y) {
        ShadowChain sx, sy;

        chain_to_shadow(a, x, &sx);
        chain_to_shadow(a, y, &sy);
        return shadow_chain_equal(&sx, &sy);
}

void adapt_chain_describe(const AdaptChain *c, char *buf, size_t n) {
        size_t off = 0;

        if (n == 0)
                return;
        buf[0] = 0;
        if (c->n == 0) {
                (void) snprintf(buf, n, "no transitions");
                return;
        }
        for (unsigned k = 0; k < c->n && off < n; k++) {
                int w;
                if (k == 0)
                        w = snprintf(buf + off, n - off, "ps0→ps%u after %" PRIu32 " ms", c->state[0], c->itpt_ms[0]);
                else
                        w = snprintf(buf + off, n - off, ", ps%u after %" PRIu32 " ms more", c->state[k],
                                     c->itpt_ms[k]);
                if (w < 0)
                        return;
                off += (size_t) w;
        }
}

int adapt_init(Adapt *a, const IdCtrl *id, const ApstPlatform *plat, const ApstParams *p, uint64_t now_ns,
               ApstTable *ret_table) {
        ApstParams kp = APST_PARAMS_DEFAULT, ap;
        ApstPlan plan;
        int r;

        if (!a || !id || !p || !ret_table)
                return -EINVAL;
        ap = *p;
        *a = (Adapt) { .id = *id, .budget_pct_x100 = p->stall_budget_pct_x100, .exlat_factor = 1.0 };
        a->p0_uw = id->psd[0].idle_power_uw ? id->psd[0].idle_power_uw : APST_P0_DEFAULT_UW;

        ap.policy = APST_POLICY_ADAPTIVE;
        r = apst_build(id, plat, &ap, &plan);
        if (r < 0)
                return r;
        a->current_table = plan.outcome == APST_OUTCOME_PROGRAM ? plan.table : (ApstTable) {};
        a->enabled = plan.table.apste;
        if (a->enabled) {
                unsigned quirks = p->force ? 0 : plan.quirks;
                a->n_chain = apst_chain(id, quirks, p, a->chain);
                chain_from_table(&plan.table, id, &a->current);
        }

        /* The reference: the kernel's own table for this drive, with nvme_core's defaults. */
        kp.policy = APST_POLICY_KERNEL;
        kp.force = p->force;
        r = apst_build(id, plat, &kp, &plan);
        if (r < 0)
                return r;
        if (plan.outcome == APST_OUTCOME_PROGRAM)
                chain_from_table(&plan.table, id, &a->kernel);

        watch_init(&a->watch, now_ns);
        a->last_program_ns = now_ns;
        a->last_eval_ns = now_ns;

        /* The exact source's model and the shadow kernel. */
        a->params = *p;
        a->hide_floors = idctrl_wake_floors(id, a->hide_floor_ns, GAP_HIDE_FLOORS);
        a->budget_explicit = p->stall_budget_pct_x100 != APST_STALL_BUDGET_DEFAULT_PCT_X100;
        a->bucket_ns = (double) ADAPT_BUDGET_BURST_NS * a->budget_pct_x100 / 10000.0;
        a->recheck_ns = UINT64_MAX;
        a->kernel_table = plan.outcome == APST_OUTCOME_PROGRAM ? plan.table : (ApstTable) {};
        a->sd = (ShadowDrive) { .npss = id->npss, .p0_uw = a->p0_uw };
        for (unsigned i = 1; i <= id->npss && i < SHADOW_STATES; i++) {
                a->sd.power_uw[i] = power_uw(a, i);
                a->sd.enlat_us[i] = id->psd[i].enlat_us;
                a->sd.exlat_us[i] = id->psd[i].exlat_us;
                a->sd.non_operational[i] = id->psd[i].non_operational;
        }
        shadow_chain_from_table(&a->sd, a->kernel_table.apste, a->kernel_table.entry, &a->kernel_sc);
        a->sd_cand = a->sd;
        shadow_init(&a->shadow, now_ns);
        a->awake_svc_ns = -1;
        a->gaps_last_ns = now_ns;
        a->gaps_decide_ns = now_ns;
        *ret_table = a->current_table;
        return 0;
}

void adapt_set_max_latency(Adapt *a, uint32_t max_latency_us) {
        a->params.max_latency_us = max_latency_us;
}

/* The candidates: every chain of up to ADAPT_MAX_STEPS steps, states in apst_chain()'s order
 * (those @usable accepts, all when NULL), entry times increasing on the grid, each handed to
 * @visit, the chain with no transitions first. */
typedef struct ChainWalk {
        const Adapt *a;
        bool (*usable)(const Adapt *a, unsigned state);
        void (*visit)(void *userdata, const AdaptChain *c);
        void *userdata;
        AdaptChain cur;
} ChainWalk;

/* Step @k of the candidate: chain state index @j entered when the idle time reaches
 * grid_ms[@g] (counted from the last completion), after the previous step's entry is
 * over at @reach_ms. Return: false when the grid point comes too early or the state is
 * not usable. */
static bool walk_step(ChainWalk *w, unsigned k, unsigned j, unsigned g, double reach_ms, double *ret_reach_ms) {
        unsigned state = w->a->chain[j];

        if (grid_ms[g] <= reach_ms || (w->usable && !w->usable(w->a, state)))
                return false;
        w->cur.n = k + 1;
        w->cur.state[k] = state;
        w->cur.itpt_ms[k] = (uint32_t) (grid_ms[g] - reach_ms);
        *ret_reach_ms = grid_ms[g] + ceil(w->a->id.psd[state].enlat_us / 1000.0);
        return true;
}

static void chain_walk(ChainWalk *w) {
        const unsigned nc = w->a->n_chain, ng = ELEMENTSOF(grid_ms);
        double r1, r2, r3;

        _Static_assert(ADAPT_MAX_STEPS == 3, "chain_walk() enumerates three steps");
        w->cur.n = 0;
        w->visit(w->userdata, &w->cur);
        for (unsigned j1 = 0; j1 < nc; j1++)
                for (unsigned g1 = 0; g1 < ng; g1++) {
                        if (!walk_step(w, 0, j1, g1, 0, &r1))
                                continue;
                        w->visit(w->userdata, &w->cur);
                        for (unsigned j2 = j1 + 1; j2 < nc; j2++)
                                for (unsigned g2 = g1 + 1; g2 < ng; g2++) {
                                        if (!walk_step(w, 1, j2, g2, r1, &r2))
                                                continue;
                                        w->visit(w->userdata, &w->cur);
                                        for (unsigned j3 = j2 + 1; j3 < nc; j3++)
                                                for (unsigned g3 = g2 + 1; g3 < ng; g3++)
                                                        if (walk_step(w, 2, j3, g3, r2, &r3))
                                                                w->visit(w->userdata, &w->cur);
                                }
                }
}

typedef struct Search {
        const Adapt *a;
        double xf, limit_ns;
        AdaptChain best;
        double best_e, best_s;
        bool found;
} Search;

static void consider(void *userdata, const AdaptChain *c) {
        Search *s = userdata;
        double e, st;

        chain_score(s->a, c, s->xf, &e, &st);
        if (st <= s->limit_ns && (!s->found || e < s->best_e)) {
                s->best = *c;
                s->best_e = e;
                s->best_s = st;
                s->found = true;
        }
}

/* A state the latency budget allows: its advertised entry and exit within max_latency_us, which a
 * latency hold may have lowered since apst_chain() (adapt_set_max_latency()). */
static bool within_max_latency(const Adapt *a, unsigned state) {
        return apst_psd_within_budget(&a->id.psd[state], a->params.max_latency_us);
}

/* Every candidate, scored on the watcher's gaps. */
static void search(Search *s) {
        ChainWalk w = { .a = s->a, .usable = within_max_latency, .visit = consider, .userdata = s };

        chain_walk(&w);
}

static void update_exlat_factor(Adapt *a, const WatchReport *r) {
        double e, stall;

        if (!r->small || r->wake_gap_ns == 0)
                return;
        gap_cost(a, &a->current, (double) r->wake_gap_ns, 1.0, &e, &stall);
        if (stall <= 0)
                return;
        /* Decay the evidence like the watcher's statistics, so a firmware update that
         * fixes the wake-up is believed again in minutes. */
        double f = mathfn_exp2(-(double) r->dt_ns / (double) WATCH_HALF_LIFE_NS);
        a->pred_wake_ms = a->pred_wake_ms * f + stall / NS_PER_MS;
        a->obs_wake_ms = a->obs_wake_ms * f + r->wake_ms;
        if (a->pred_wake_ms >= EXLAT_EVIDENCE_MS)
                a->exlat_factor = MIN(MAX(a->obs_wake_ms / a->pred_wake_ms, 1.0), EXLAT_FACTOR_MAX);
}

static void format_gap(uint64_t ns, char *buf, size_t n) {
        if (ns >= UINT64_C(10000000000))
                (void) snprintf(buf, n, "%.0f s", (double) ns * 1e-9);
        else if (ns >= UINT64_C(1000000000))
                (void) snprintf(buf, n, "%.1f s", (double) ns * 1e-9);
        else
                (void) snprintf(buf, n, "%.0f ms", (double) ns / NS_PER_MS);
}

int adapt_feed(Adapt *a, uint64_t now_ns, const WatchStat *st, ApstTable *ret_table, AdaptDecision *ret_why) {
        WatchReport r;
        Search s;
        double cur_e, cur_s, k_e, k_s, elapsed;
        bool overrun;

        watch_feed(&a->watch, now_ns, st, &r);
        if (!a->enabled)
                return 0;
        update_exlat_factor(a, &r);

        if (now_ns - a->last_eval_ns < ADAPT_DECIDE_NS || watch_gap_total(&a->watch) < ADAPT_WARMUP_GAPS)
                return 0;
        a->last_eval_ns = now_ns;

        elapsed = a->watch.elapsed_ns;
        chain_score(a, &a->kernel, a->exlat_factor, &k_e, &k_s);
        chain_score(a, &a->current, a->exlat_factor, &cur_e, &cur_s);
        s = (Search) { .a = a, .xf = a->exlat_factor };
        double budget_ns = elapsed * a->budget_pct_x100 / 10000.0;
        s.limit_ns = MIN(budget_ns, k_s);
        /* Also a drive that stalls more than its advertised latencies explain: the observed
         * wake cost counts against the table in force. */
        /* Slack of a tenth of the budget, so gaps that hover around a threshold do not
         * make the limit flip the table back and forth. */
        overrun = cur_s > s.limit_ns * 1.1 + budget_ns / 20 ||
                  watch_stall_fraction(&a->watch) > 1.5 * a->budget_pct_x100 / 10000.0 + 1e-6;
        /* A band: a new table must fit in 80% of the budget (and the kernel's cost), the one
         * in force is kept up to 110% of its limit plus 5% of the budget, so the noise
         * of the estimates does not flip tables. */
        s.limit_ns = MIN(0.8 * budget_ns, k_s);
        search(&s);
        if (!s.found || chain_equal(a, &s.best, &a->current))
                return 0;
        if (overrun) {
                if (now_ns - a->last_program_ns < ADAPT_FIX_NS || s.best_s >= cur_s)
                        return 0;
        } else if ((a->programs > 0 && now_ns - a->last_program_ns < ADAPT_RATE_LIMIT_NS) ||
                   s.best_e > (1.0 - ADAPT_MIN_GAIN) * cur_e)
                /* The first change after the start table needs no wait: the start table is the
                 * cautious guess, the first estimate is already better informed. */
                return 0;

        AdaptDecision d = {
                .t_ns = now_ns,
                .chain = s.best,
                .io_rate = watch_io_rate(&a->watch),
                .median_gap_ns = watch_gap_quantile(&a->watch, 0.5),
                .observed_stall = watch_stall_fraction(&a->watch),
                .expected_stall = elapsed > 0 ? s.best_s / elapsed : 0,
                .kernel_stall = elapsed > 0 ? k_s / elapsed : 0,
                .limit_stall = elapsed > 0 ? s.limit_ns / elapsed : 0,
                .energy_vs_kernel = k_e > 0 ? s.best_e / k_e : 1,
                .exlat_factor = a->exlat_factor,
        };
        chain_to_table(a, &s.best, &d.table);

        char gap[32], chain[160], lie[64] = "";
        format_gap(d.median_gap_ns, gap, sizeof gap);
        adapt_chain_describe(&s.best, chain, sizeof chain);
        if (a->exlat_factor > EXLAT_LIE_SAY)
                (void) snprintf(lie, sizeof lie, "; the drive wakes %.1fx slower than it says", a->exlat_factor);
        if (snprintf(d.reason, sizeof d.reason,
                        "I/O every ~%s (%.1f/s)%s: the kernel's table would stall %.2f%% of the time, the table "
                        "in force %.2f%%, budget %.2f%%; %s: expected stall %.2f%%, idle energy %.0f%% of the kernel's",
                        gap, d.io_rate, lie, 100 * d.kernel_stall, elapsed > 0 ? 100 * cur_s / elapsed : 0,
                     a->budget_pct_x100 / 100.0, chain, 100 * d.expected_stall, 100 * d.energy_vs_kernel) < 0)
                d.reason[0] = 0;

        a->current = s.best;
        a->current_table = d.table;
        a->last_program_ns = now_ns;
        a->programs++;
        a->last = d;
        *ret_table = d.table;
        if (ret_why)
                *ret_why = d;
        return 1;
}

/* ---- The exact source ---- */

static const char *const adapt_source_table[_ADAPT_SOURCE_MAX] = {
        [ADAPT_SOURCE_STAT] = "stat",
        [ADAPT_SOURCE_BPF] = "bpf",
};

DEFINE_STRING_TABLE_LOOKUP(adapt_source, AdaptSource);

static double allowed_wake_ns(const Adapt *a, double k_w, double budget_w, bool hold);

/* The gaps wake-ups hid that chain @c would have met (gaphist.h). After a gap of length g the
 * drive under @c is in the state its chain reached by g and wakes in that state's advertised exit
 * latency (0 if still awake): the floor it meets the hidden gaps at is the longest no longer than
 * that. Each floor's hidden gaps count with the share of the wake-ups that hid any which came
 * after gaps that leave @c at that floor: @ret_share. Return false when none was hidden. */
static bool chain_hidden_share(const Adapt *a, const ShadowChain *c, double ret_share[GAP_HIDE_FLOORS]) {
        double total = 0;

        for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                ret_share[k] = 0;
        if (a->hide_floors == 0)
                return false;
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                double n = a->hidden_after.gaps[b];
                if (n <= 0)
                        continue;
                uint64_t lo = gaphist_bucket_lower_ns(b), hi = gaphist_bucket_upper_ns(b);
                uint64_t g = hi == UINT64_MAX ? lo : lo + (hi - lo) / 2, wake = 0;
                for (unsigned i = 0; i < c->n; i++)
                        if (c->start_ns[i] <= g)
                                wake = a->id.psd[c->state[i]].exlat_us * UINT64_C(1000);
                unsigned floor = 0;
                for (unsigned k = 1; k < a->hide_floors; k++)
                        if (a->hide_floor_ns[k] <= wake)
                                floor = k;
                ret_share[floor] += n;
                total += n;
        }
        if (total <= 0)
                return false;
        for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                ret_share[k] /= total;
        return true;
}

/* The kernel's table's wake delay on each floor's hidden gaps, for evidence_wake(). */
static void kernel_hidden_wake(const Adapt *a, double ret[GAP_HIDE_FLOORS]) {
        double e;

        for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                if (k < a->hide_floors)
                        shadow_hist_cost(&a->sd, &a->kernel_sc, &a->hidden[k], &e, &ret[k]);
                else
                        ret[k] = 0;
}

/* Chain @c's wake delay on the evidence (@w: on the gaps the disk showed) with the gaps wake-ups
 * hid that it would have met (chain_hidden_share(); @ret_hidden, as a histogram, if not NULL), and
 * the kernel's table's on the same gaps (@kw and @kernel_hidden: its wake delay on the gaps shown
 * and on each floor's hidden ones, kernel_hidden_wake()). */
static void evidence_wake(const Adapt *a, const ShadowDrive *sd, const ShadowChain *c, double w, double kw,
                          const double kernel_hidden[GAP_HIDE_FLOORS], ShadowHist *ret_hidden, double *ret_w,
                          double *ret_kernel_w) {
        double share[GAP_HIDE_FLOORS], e, hw = 0, khw = 0;
        ShadowHist hidden = {};

        if (chain_hidden_share(a, c, share)) {
                for (unsigned k = 0; k < a->hide_floors; k++) {
                        if (share[k] <= 0)
                                continue;
                        khw += share[k] * kernel_hidden[k];
                        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                                hidden.gaps[b] += share[k] * a->hidden[k].gaps[b];
                }
                shadow_hist_cost(sd, c, &hidden, &e, &hw);
        }
        if (ret_hidden)
                *ret_hidden = hidden;
        *ret_w = w + hw;
        *ret_kernel_w = kw + khw;
}

typedef struct GapSearch {
        const Adapt *a;
        double budget_ns;          /* the stall budget's wake delay on the evidence ... */
        bool hold;                 /* ... and whether it binds (allowed_wake_ns()) */
        double kernel_wait[GAP_BUCKETS];   /* the kernel's table: mean wait of a gap in each bucket */
        double recent_limit_ns;    /* > 0: our tables' wake delay on the recent gaps at most this */
        double kernel_ns;          /* the kernel's table's wake delay on the gaps the disk showed */
        double kernel_hidden_ns[GAP_HIDE_FLOORS];   /* ... and on each floor's hidden ones */
        /* the stall bucket, while it binds (burst_ns > 0): a new table's wake delay on the
         * burst's gaps, per ns of the time they stand for, at most burst_rate; the table in
         * force's, at most keep_rate */
        double burst_ns, burst_rate, keep_rate;
        AdaptChain best;
        double best_e, best_w, best_bound;
        double best_kernel_ns, best_limit_ns, best_tolerance_ns;   /* on the best one's evidence */
        bool found;
} GapSearch;

/* Wilson score interval for a share: @k successes in @n trials, @z standard deviations
 * above the estimate (@z > 0) or below it (@z < 0). */
static double wilson(double k, double n, double z) {
        if (n <= 0)
                return z > 0 ? 1 : 0;
        double p = MIN(MAX(k / n, 0.0), 1.0), z2 = z * z;
        double c = (p + z2 / (2 * n) + z * sqrt(p * (1 - p) / n + z2 / (4 * n * n))) / (1 + z2 / n);
        return MIN(MAX(c, 0.0), 1.0);
}

/* How much more wake delay than the kernel's table a candidate may cost on the gaps to come,
 * at worst (see doc/policy.md, "The evidence"): per bucket of the evidence, the mean wait of a
 * gap under each table; where the candidate waits longer, each gap costs it that difference.
 * The share of gaps (of ADAPT_TRUST_MIN_GAP_NS or more) that fall where it waits longer is
 * bounded above (Wilson, ADAPT_CONFIDENCE_Z), and the gaps that bound adds to those seen are
 * taken at the worst difference there is, seen or not; the share where it waits less is
 * bounded below the same way and scales what it saves. A candidate that waits no longer at
 * any length has no bound to pay; one that gambles on lengths not seen pays in proportion to
 * how little has been seen. */
static double gap_excess_bound(const GapSearch *s, const ShadowChain *sc, const ShadowHist *hidden) {
        double wait[GAP_BUCKETS], loss = 0, k_loss = 0, worst = 0, save = 0, k_save = 0, n = 0;
        const unsigned first = gaphist_bucket(ADAPT_TRUST_MIN_GAP_NS);
        const double z = ADAPT_CONFIDENCE_Z;

        shadow_bucket_wait(&s->a->sd_cand, sc, wait);
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                double diff = wait[b] - s->kernel_wait[b],
                       c = s->a->hist.gaps[b] + hidden->gaps[b];
                if (b >= first)
                        n += c;
                if (diff > 0) {
                        loss += c * diff;
                        if (b >= first) {
                                k_loss += c;
                                worst = MAX(worst, diff);
                        }
                } else if (diff < 0) {
                        save -= c * diff;
                        if (b >= first)
                                k_save += c;
                }
        }
        if (worst > 0)
                loss += MAX(n * wilson(k_loss, n, z) - k_loss, 0.0) * worst;
        if (k_save > 0)
                save *= MIN(n * wilson(k_save, n, -z) / k_save, 1.0);
        return loss - save;
}

/* Would the stall bucket pay for chain @sc's wake-ups (with the model @sd) on the burst's gaps,
 * as a new table (@keep false) or as the table in force? */
static bool bucket_allows(const GapSearch *s, const ShadowDrive *sd, const ShadowChain *sc, bool keep) {
        double e, w;

        if (s->burst_ns <= 0)
                return true;
        shadow_hist_cost(sd, sc, &s->a->burst, &e, &w);
        return w <= MAX(keep ? s->keep_rate : s->burst_rate, 0.0) * s->burst_ns;
}

static void gap_consider(GapSearch *s, const AdaptChain *c, bool reference) {
        ShadowChain sc;
        double e, w;

        /* The kernel's table is judged on what was measured, as the shadow kernel judges it;
         * our candidates with unmeasured states slowed like the measured ones. Energy on the gaps
         * the disk showed; wake delay on those and the ones wake-ups hid that this table would
         * have met (evidence_wake()), the kernel's table judged on the same gaps. */
        const ShadowDrive *sd = reference ? &s->a->sd : &s->a->sd_cand;
        ShadowHist hidden;
        double kernel;
        chain_to_shadow(s->a, c, &sc);
        shadow_hist_cost(sd, &sc, &s->a->hist, &e, &w);
        if (s->found && e >= s->best_e)
                return;
        evidence_wake(s->a, sd, &sc, w, s->kernel_ns, s->kernel_hidden_ns, &hidden, &w, &kernel);
        double limit = allowed_wake_ns(s->a, kernel, s->budget_ns, s->hold), bound = 0;
        if (w > limit || !bucket_allows(s, sd, &sc, false))
                return;
        if (s->recent_limit_ns > 0 && !reference) {
                double re, rw;
                shadow_hist_cost(&s->a->sd_cand, &sc, &s->a->recent, &re, &rw);
                if (rw > s->recent_limit_ns)
                        return;
        }
        /* Our own tables must also keep the bound on their excess over the kernel's table within
         * the guard's tolerance; the kernel's is the reference. Computed only for a candidate that
         * would be the best so far. */
        if (!reference) {
                bound = gap_excess_bound(s, &sc, &hidden);
                if (w > kernel || bound > SHADOW_GUARD_TOLERANCE * kernel)
                        return;
        }
        s->best = *c;
        s->best_e = e;
        s->best_w = w;
        s->best_bound = bound;
        s->best_kernel_ns = kernel;
        s->best_limit_ns = limit;
        s->best_tolerance_ns = SHADOW_GUARD_TOLERANCE * kernel;
        s->found = true;
}

/* States a table may use: apst_chain()'s, and within max_latency_us with the exit latency seen. */
static bool state_usable(const Adapt *a, unsigned state) {
        return (uint64_t) a->sd.enlat_us[state] + shadow_exlat_us(&a->sd_cand, state) <= a->params.max_latency_us;
}

static void gap_visit(void *userdata, const AdaptChain *c) {
        gap_consider(userdata, c, false);
}

/* The kernel's own table, then every candidate within max_latency_us. */
static void gap_search(GapSearch *s) {
        ChainWalk w = { .a = s->a, .usable = state_usable, .visit = gap_visit, .userdata = s };

        gap_consider(s, &s->a->kernel, true);
        chain_walk(&w);
}

/* The gaps in buckets @first and up. */
static double hist_total_from(const ShadowHist *h, unsigned first) {
        double n = 0;

        for (unsigned b = first; b < GAP_BUCKETS; b++)
                n += h->gaps[b];
        return n;
}

static double hist_total(const ShadowHist *h) {
        return hist_total_from(h, 0);
}

/* Decay @h and the time it covers (*@elapsed_ns) over @dt_ns with @half_life_ns, then add @delta.
 * Return: the decay factor. */
static double hist_decay_add(ShadowHist *h, double *elapsed_ns, const GapHist *delta, uint64_t dt_ns,
                             uint64_t half_life_ns) {
        double f = mathfn_exp2(-(double) dt_ns / (double) half_life_ns);

        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                h->gaps[b] = h->gaps[b] * f + (double) delta->gaps[b];
        *elapsed_ns = *elapsed_ns * f + (double) dt_ns;
        return f;
}

/* The evidence (@h, and the time it covers, *@elapsed_ns) takes in @delta, which covers @dt_ns:
 * what it held fades by 1 / ADAPT_EVIDENCE_GAPS for each gap of ADAPT_TRUST_MIN_GAP_NS or more
 * the delta brings, so it remembers about that many such gaps however long they took to come:
 * seconds of a busy disk, hours of a quiet one. Return: the fading factor. */
static double evidence_add(ShadowHist *h, double *elapsed_ns, const GapHist *delta, uint64_t dt_ns) {
        double m = 0, f;

        for (unsigned b = gaphist_bucket(ADAPT_TRUST_MIN_GAP_NS); b < GAP_BUCKETS; b++)
                m += (double) delta->gaps[b];
        f = mathfn_pow(1.0 - 1.0 / ADAPT_EVIDENCE_GAPS, m);
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                h->gaps[b] = h->gaps[b] * f + (double) delta->gaps[b];
        *elapsed_ns = *elapsed_ns * f + (double) dt_ns;
        return f;
}

/* Total variation distance between the shapes of two histograms (0..1). */
static double hist_distance(const ShadowHist *x, const ShadowHist *y) {
        double nx = hist_total(x), ny = hist_total(y), d = 0;

        if (nx <= 0 || ny <= 0)
                return nx > 0 || ny > 0 ? 1 : 0;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                d += fabs(x->gaps[b] / nx - y->gaps[b] / ny);
        return d / 2;
}

/* After a fallback: has the evidence changed enough to try our own tables again? */
static bool evidence_changed(const Adapt *a, uint64_t now_ns) {
        if (now_ns - a->fallback_ns < ADAPT_RETRY_NS)
                return false;
        for (unsigned s = 1; s <= a->sd.npss && s < SHADOW_STATES; s++) {
                double was = a->fallback_exlat_us[s], is = a->sd.exlat_seen_us[s];
                if (fabs(is - was) > ADAPT_RETRY_EXLAT_CHANGE * MAX(was, 1.0))
                        return true;
        }
        /* A gap histogram that moved, or evidence of which that share is new since the fallback
         * (the evidence remembers ADAPT_EVIDENCE_GAPS gaps: on a busy disk that is the same
         * test, on a quiet one its shape moves slowly and the new gaps are what counts). */
        double renewed = 1.0 - mathfn_pow(1.0 - 1.0 / ADAPT_EVIDENCE_GAPS, a->gaps_seen - a->fallback_gaps);
        return renewed >= ADAPT_RETRY_HIST_DISTANCE ||
               hist_distance(&a->hist, &a->fallback_hist) > ADAPT_RETRY_HIST_DISTANCE;
}

static int return_new_table(Adapt *a, const AdaptChain *c, const ApstTable *t, AdaptDecision *d, uint64_t now_ns,
                   ApstTable *ret_table, AdaptDecision *ret_why) {
        d->t_ns = now_ns;
        d->chain = *c;
        d->table = *t;
        a->current = *c;
        a->current_table = *t;
        a->table_changed = true;
        a->last_program_ns = now_ns;
        a->programs++;
        a->last = *d;
        *ret_table = *t;
        if (ret_why)
                *ret_why = *d;
        return 1;
}

/* The exit latencies measured so far into the model (where larger than advertised: shadow_exlat_us()). */
static void update_exlat(Adapt *a) {
        const PassiveCalib *pc = &a->pcal;
        bool measured[SHADOW_STATES] = {};
        double factor = 1.0;

        if (pc->awake.count >= PASSIVE_CALIB_MIN_SAMPLES)
                a->awake_svc_ns = (double) pc->awake.sum_ns / (double) pc->awake.count;
        _Static_assert(SHADOW_STATES == IDCTRL_MAX_PS, "one index for both");
        for (unsigned s = 1; s <= a->sd.npss && s < SHADOW_STATES; s++) {
                PassiveCalibEstimate e;
                uint64_t ns;

                if (passive_calib_estimate(pc, s, &e) == 0)
                        ns = e.exlat_ns;
                else if (pc->state[s].count >= ADAPT_EXLAT_EARLY_SAMPLES) {
                        uint64_t mean = pc->state[s].sum_ns / pc->state[s].count;
                        /* Too few for passive calibration's own estimate, or no awake request
                         * seen yet (every request came after a long gap, as in the seed job):
                         * the whole first-request time less what is known of the service, an
                         * upper bound, so neither the wake delay allowed nor the kernel's
                         * table's is judged on a latency the drive was seen to exceed. */
                        ns = mean - (uint64_t) MIN(MAX(a->awake_svc_ns, 0.0), (double) mean);
                } else
                        continue;
                uint64_t us = (ns + 500) / 1000;
                a->sd.exlat_seen_us[s] = us > UINT32_MAX ? UINT32_MAX : (uint32_t) us;
                measured[s] = true;
                if (a->sd.exlat_us[s] > 0)
                        factor = MAX(factor, (double) a->sd.exlat_seen_us[s] / a->sd.exlat_us[s]);
        }
        /* A drive seen to wake slower than it says in one state is not believed in the others
         * until they are measured: for our own candidates, their advertised exit latencies take
         * the same factor. The kernel's table is judged on what was measured only, so the
         * guess never makes the reference look worse than it is. */
        factor = MIN(factor, EXLAT_FACTOR_MAX);
        a->sd_cand = a->sd;
        for (unsigned s = 1; s <= a->sd.npss && s < SHADOW_STATES; s++)
                if (!measured[s])
                        a->sd_cand.exlat_seen_us[s] = (uint32_t) MIN(a->sd.exlat_us[s] * factor, (double) UINT32_MAX);
}

/* The wake delay a table may cost on the evidence: the kernel's table's (@k_w); while little
 * is known (@hold), or always when the user set it, no more than the stall budget's either. */
static double allowed_wake_ns(const Adapt *a, double k_w, double budget_w, bool hold) {
        if (a->budget_explicit || hold)
                return MIN(k_w, budget_w);
        return k_w;
}

/* The stall budget's rate: wake delay per ns of time (ApstParams.stall_budget_pct_x100). */
static double budget_rate(const Adapt *a) {
        return a->budget_pct_x100 / 10000.0;
}

/* The stall bucket's capacity: ADAPT_BUDGET_BURST_NS of the budget. */
static double bucket_capacity_ns(const Adapt *a) {
        return budget_rate(a) * (double) ADAPT_BUDGET_BURST_NS;
}

/* How long the bucket takes to refill from empty: a gap this long pays for its own wake-up. */
static double bucket_refill_ns(const Adapt *a) {
        (void) a;
        return (double) ADAPT_BUDGET_BURST_NS / ADAPT_BUCKET_FILL;
}

/* The mean length of the gaps in histogram bucket @b (its middle; the last one's lower end). */
static double bucket_mid_ns(unsigned b) {
        uint64_t lo = gaphist_bucket_lower_ns(b), hi = gaphist_bucket_upper_ns(b);

        return hi == UINT64_MAX ? (double) lo : ((double) lo + (double) hi) / 2;
}


/* The stall bucket takes in @dt_ns of refill, up to its capacity, and pays the wake delay
 * @spent_ns the drive was measured to cost over it (what it cannot pay is a debt, repaid from the
 * refill). The burst's histogram takes the gaps of @delta short enough that the bucket does not
 * refill within one. No gap ending for the refill time: the disk was idle, and what came before
 * is another burst. */
static void bucket_take(Adapt *a, const GapHist *delta, uint64_t dt_ns, double spent_ns) {
        double refill = bucket_refill_ns(a);
        double f = (double) dt_ns >= refill ? 0 : mathfn_exp2(-(double) dt_ns / (double) ADAPT_GAPS_FAST_HALF_LIFE_NS);

        a->bucket_ns = MIN(a->bucket_ns + ADAPT_BUCKET_FILL * budget_rate(a) * (double) dt_ns, bucket_capacity_ns(a)) -
                       spent_ns;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                a->burst.gaps[b] = a->burst.gaps[b] * f +
                                   ((double) gaphist_bucket_upper_ns(b) <= refill ? (double) delta->gaps[b] : 0);
}

/* Where the user set the stall budget, what a table may cost on the burst's gaps
 * (GapSearch.burst_*); elsewhere nothing (burst_ns 0). */
static void bucket_limits(const Adapt *a, GapSearch *s) {
        s->burst_ns = 0;
        if (!a->budget_explicit)
                return;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                s->burst_ns += a->burst.gaps[b] * bucket_mid_ns(b);
        /* a new table: the refill, less the debt spread over the horizon; the table in force
         * may also spend what the bucket holds over it */
        s->burst_rate = ADAPT_BUCKET_FILL * budget_rate(a) + MIN(a->bucket_ns, 0.0) / (double) ADAPT_BUDGET_HORIZON_NS;
        s->keep_rate = ADAPT_BUCKET_FILL * budget_rate(a) + a->bucket_ns / (double) ADAPT_BUDGET_HORIZON_NS;
}

/* Take in the gaps of @delta (@now_ns never before the last call): the evidence, the recent
 * histogram, the count of gaps seen, passive calibration, and what
 * the table in force (@ret_applied) and the kernel's cost on them. */
static void gaps_account(Adapt *a, const GapHist *delta, uint64_t now_ns, ShadowChain *ret_applied) {
        ShadowChain applied;
        PassiveCalibReach reach;
        uint64_t dt = now_ns - a->gaps_last_ns;
        double f;

        /* The evidence: the last ADAPT_EVIDENCE_GAPS gaps, plus this delta; the recent histogram
         * forgets in seconds. */
        f = evidence_add(&a->hist, &a->hist_elapsed_ns, delta, now_ns - a->gaps_last_ns);
        /* The gaps wake-ups hid (gaphist.h) over the same span, faded with it. */
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                        a->hidden[k].gaps[b] = a->hidden[k].gaps[b] * f + (double) delta->hidden[k][b];
                a->hidden_after.gaps[b] = a->hidden_after.gaps[b] * f + (double) delta->hidden_after[b];
        }
        (void) hist_decay_add(&a->recent, &a->recent_elapsed_ns, delta, now_ns - a->gaps_last_ns,
                              ADAPT_GAPS_FAST_HALF_LIFE_NS);
        /* Evidence: the time this delta covers, up to the period a busy disk is read at (an idle
         * disk is not read at all, and a long quiet spell is no more evidence than a period). */
        a->observed_ns += (double) MIN(now_ns - a->gaps_last_ns, 2 * ADAPT_GAPS_PERIOD_NS);
        a->gaps_last_ns = now_ns;
        for (unsigned b = gaphist_bucket(ADAPT_TRUST_MIN_GAP_NS); b < GAP_BUCKETS; b++)
                a->gaps_seen += (double) delta->gaps[b];

        /* What the table in force cost, and what the kernel's would have, on these gaps,
         * with the exit latencies the first requests showed. */
        /* The first delta after a new table holds gaps that began under the old one: no
         * evidence for either table's states. */
        passive_calib_reach_from_table(&a->current_table, &a->id, &reach);
        if (!a->table_changed)
                passive_calib_feed(&a->pcal, delta, &reach);
        a->table_changed = false;
        update_exlat(a);
        shadow_chain_from_table(&a->sd, a->current_table.apste, a->current_table.entry, &applied);
        double spent_before = a->shadow.total_applied.wake_ns;
        /* An awake service time not yet seen counts as 0: the wake-ups paid then include the
         * service, which errs on the side of having spent more. */
        shadow_account(&a->shadow, &a->sd, &applied, &a->kernel_sc, delta, MAX(a->awake_svc_ns, 0.0), now_ns);
        a->spent_wake_ns = a->spent_wake_ns * f + (a->shadow.total_applied.wake_ns - spent_before);
        bucket_take(a, delta, dt, a->shadow.total_applied.wake_ns - spent_before);
        *ret_applied = applied;
}

/* The exit latency, as seen (shadow_exlat_us()), of the slowest state chain @c enters. */
static double chain_slowest_wake_ns(const Adapt *a, const ShadowChain *c) {
        double worst = 0;

        for (unsigned i = 0; i < c->n; i++)
                worst = MAX(worst, shadow_exlat_us(&a->sd, c->state[i]) * NS_PER_US);
        return worst;
}

/* The guard's slack on wake delay: what the phase of the gaps alone can put the table in force
 * (@applied, its chain) ahead of the kernel's table or behind it over the window, so that an excess
 * within it is not yet evidence. Two things bound it from below:
 * - whole wake-ups: a table that trades some wake-ups for others is ahead or behind by whole
 *   wake-ups of either table's states (ps3 ones of ours against the kernel's ps4 ones): one
 *   wake-up of the slowest state either enters, as seen (shadow_exlat_us());
 * - the spread of the gaps: over many gaps where the two tables wait differently, the
 *   difference of the two sums wanders by ADAPT_CONFIDENCE_Z standard deviations
 *   (shadow_window_wake_spread_ns()), the same confidence the decision's bound takes. */
static double guard_wake_slack_ns(const Adapt *a, const ShadowChain *applied) {
        double wake = MAX(chain_slowest_wake_ns(a, applied), chain_slowest_wake_ns(a, &a->kernel_sc));

        return MAX(wake, ADAPT_CONFIDENCE_Z * shadow_window_wake_spread_ns(&a->shadow));
}

/* Would the stall bucket, while it binds, pay for chain @c's wake-ups (model @sd) as the table
 * in force? */
static bool bucket_pays(const Adapt *a, const ShadowDrive *sd, const ShadowChain *c) {
        GapSearch s = { .a = a };

        bucket_limits(a, &s);
        return bucket_allows(&s, sd, c, true);
}

/* The guard: the table in force (@applied, its chain) worse than the kernel's over the window puts
 * the kernel's back, and nothing else is tried until the evidence changes. *@ret_done: the guard
 * decided (its result returned). */
static int gaps_guard(Adapt *a, const ShadowChain *applied, uint64_t now_ns, ApstTable *ret_table,
                      AdaptDecision *ret_why, bool *ret_done) {
        AdaptDecision d = {};

        *ret_done = false;
        if (!a->fallen_back) {
                char why[256];
                ShadowVerdict v = shadow_guard(&a->shadow, guard_wake_slack_ns(a, applied), why, sizeof why);
                /* Energy is judged on a table once it has had a slot of its own: over its first
                 * seconds the window is the previous tables' and a handful of its own gaps. */
                if (v == SHADOW_WORSE_ENERGY && a->programs > 0 && now_ns - a->last_program_ns < ADAPT_GUARD_DWELL_NS)
                        v = SHADOW_OK;
                if (v != SHADOW_OK) {
                        a->fallen_back = true;
                        a->fallback_ns = now_ns;
                        a->shadow.fallbacks++;
                        memcpy(a->fallback_exlat_us, a->sd.exlat_seen_us, sizeof a->fallback_exlat_us);
                        a->fallback_hist = a->hist;
                        a->fallback_gaps = a->gaps_seen;
                        d.guard = true;
                        if (snprintf(d.reason, sizeof d.reason, "the kernel's table again: the table in force spent %s",
                                     why) < 0)
                                d.reason[0] = 0;
                        *ret_done = true;
                        if (chain_equal(a, &a->current, &a->kernel) &&
                            apst_table_equal(&a->current_table, &a->kernel_table))
                                return 0;
                        return return_new_table(a, &a->kernel, &a->kernel_table, &d, now_ns, ret_table, ret_why);
                }
        } else {
                /* The stall bucket is not the guard's to hold: a kernel's table it can no longer
                 * pay is left at once (gaps_decide()). */
                if (!evidence_changed(a, now_ns)) {
                        *ret_done = chain_equal(a, &a->current, &a->kernel) &&
                                    bucket_pays(a, &a->sd_cand, applied);
                        return 0;
                }
                a->fallen_back = false;
        }

        return 0;
}

/* The largest measured / advertised exit latency over the states measured so far (1 when none
 * wakes slower than it says). Each state over EXLAT_LIE_SAY is named in @buf ("; measured wake-ups:
 * ps3 1.0 ms not 0.3, ps4 30.1 ms not 10.0"), so a decision on a drive that lies says so. */
static double worst_exlat_ratio(const Adapt *a, char *buf, size_t n) {
        double worst = 1.0;
        size_t l = 0;

        if (n > 0)
                buf[0] = 0;
        for (unsigned s = 1; s <= a->sd.npss && s < SHADOW_STATES; s++) {
                if (a->sd.exlat_seen_us[s] == 0 || a->sd.exlat_us[s] == 0)
                        continue;
                double f = (double) a->sd.exlat_seen_us[s] / a->sd.exlat_us[s];
                worst = MAX(worst, f);
                if (f > EXLAT_LIE_SAY && l < n)
                        l += (size_t) MAX(snprintf(buf + l, n - l, "%sps%u %.1f ms not %.1f",
                                                   l ? ", " : "; measured wake-ups: ", s,
                                                   a->sd.exlat_seen_us[s] / 1000.0, a->sd.exlat_us[s] / 1000.0),
                                          0);
        }
        return worst;
}

/* The decision's figures and its reason in words, for @s's choice. */
static void gaps_describe(const Adapt *a, const GapSearch *s, double k_e, double k_w, double limit, bool shift,
                          AdaptDecision *d) {
        char chain[160];

        adapt_chain_describe(&s->best, chain, sizeof chain);
        d->io_rate = a->hist_elapsed_ns > 0 ? hist_total(&a->hist) / (a->hist_elapsed_ns * 1e-9) : 0;
        d->expected_stall = a->hist_elapsed_ns > 0 ? s->best_w / a->hist_elapsed_ns : 0;
        d->kernel_stall = a->hist_elapsed_ns > 0 ? k_w / a->hist_elapsed_ns : 0;
        d->limit_stall = a->hist_elapsed_ns > 0 ? limit / a->hist_elapsed_ns : 0;
        d->energy_vs_kernel = k_e > 0 ? s->best_e / k_e : 1;
        char lie[160], risk[128] = "", hid[64] = "";
        d->exlat_factor = worst_exlat_ratio(a, lie, sizeof lie);
        /* The gaps the drive's wake-ups hid (every one is counted at the first floor, 0): requests
         * that queued behind a wake-up, which the choice weighed too. */
        d->hidden_gaps = a->hide_floors > 0 ? hist_total(&a->hidden[0]) : 0;
        if (d->hidden_gaps >= 0.5 && snprintf(hid, sizeof hid, " and %.0f hidden by wake-ups", d->hidden_gaps) < 0)
                hid[0] = 0;
        /* A choice that waits longer than the kernel's table at some gap lengths says what it
         * risks there, at worst. */
        if (s->best_bound > 0 &&
            snprintf(risk, sizeof risk,
                     "; at worst %.1f ms more wake delay than the kernel's table (tolerated %.1f ms)",
                     s->best_bound / 1e6, s->best_tolerance_ns / 1e6) < 0)
                risk[0] = 0;
        /* So does a change of workload. */
        const char *busier = shift ? "; the last seconds' gaps woke it more than the kernel's table would" : "";
        /* And a back-off: the stall bucket could no longer pay the table in force. */
        char back[128] = "";
        d->bucket_ms = a->bucket_ns / 1e6;
        if (d->backoff && snprintf(back, sizeof back,
                                   "; backed off: the stall budget's bucket could not pay the table in force's "
                                   "wake-ups (%.1f ms left)",
                                   d->bucket_ms) < 0)
                back[0] = 0;
        if (snprintf(d->reason, sizeof d->reason,
                     "%.0f gaps of evidence (%.2g/s)%s%s: %s would wait %.2f%% of the time for wake-ups "
                     "(the kernel's table %.2f%%, allowed %.2f%%) for %.0f%% of the kernel's idle energy%s%s%s",
                     hist_total(&a->hist), d->io_rate, hid, lie, chain, 100 * d->expected_stall, 100 * d->kernel_stall,
                     100 * d->limit_stall, 100 * d->energy_vs_kernel, risk, busier, back) < 0)
                d->reason[0] = 0;
}

/* A change of workload (ADAPT_SHIFT_HORIZON_NS): on the recent gaps, and enough of them, the
 * table in force (@applied_chain) spends more than the kernel's would, fast enough to use up
 * what the guard's window saved within the horizon. Return: true to choose again at once;
 * until the horizon, candidates must stay within that rate on the recent gaps too (@s). */
static bool workload_shift(Adapt *a, const ShadowChain *applied_chain, uint64_t now_ns, GapSearch *s) {
        double rk_e, rk_w, rc_e, rc_w;
        ShadowSums wa, wk;

        shadow_window(&a->shadow, &wa, &wk);
        shadow_hist_cost(&a->sd, &a->kernel_sc, &a->recent, &rk_e, &rk_w);
        shadow_hist_cost(&a->sd_cand, applied_chain, &a->recent, &rc_e, &rc_w);
        double headroom = MAX(wk.wake_ns - wa.wake_ns, 0.0);
        double recent_limit = MAX(rk_w + headroom * a->recent_elapsed_ns / (double) ADAPT_SHIFT_HORIZON_NS, 1.0);
        bool shift = hist_total_from(&a->recent, gaphist_bucket(ADAPT_TRUST_MIN_GAP_NS)) >= SHADOW_GUARD_MIN_GAPS &&
                     rc_w > recent_limit + 1.0;
        if (shift)
                a->shift_until_ns = now_ns + ADAPT_SHIFT_HORIZON_NS;
        if (now_ns < a->shift_until_ns)
                s->recent_limit_ns = recent_limit;
        return shift;
}

/* How long until the stall bucket is full again, and no less than the time a new burst takes
 * to begin (bucket_refill_ns()) or decisions are apart. */
static uint64_t bucket_wait_ns(const Adapt *a) {
        double wait = MAX(bucket_capacity_ns(a) - a->bucket_ns, 0.0) / (ADAPT_BUCKET_FILL * budget_rate(a));

        return MAX((uint64_t) MAX(wait, bucket_refill_ns(a)), ADAPT_GAPS_DECIDE_NS);
}

/* The bucket held the choice back (@bound, against the same search without it, @unbound): look
 * again once it has refilled, gaps or not (adapt_recheck_ns()). */
static void bucket_recheck(Adapt *a, GapSearch *unbound, const GapSearch *bound, uint64_t now_ns) {
        a->recheck_ns = UINT64_MAX;
        if (bound->burst_ns <= 0)
                return;
        unbound->burst_ns = 0;
        gap_search(unbound);
        if (unbound->found && bound->found && chain_equal(a, &unbound->best, &bound->best))
                return;
        a->recheck_ns = now_ns + bucket_wait_ns(a);
}

/* After the guard's fallback and a back-off from the kernel's table: that table again, once the
 * stall bucket (@s, its limits now) pays for it. */
static int kernel_again(Adapt *a, const GapSearch *s, uint64_t now_ns, ApstTable *ret_table, AdaptDecision *ret_why) {
        AdaptDecision d = {};

        if (chain_equal(a, &a->current, &a->kernel))
                return 0;
        if (!bucket_allows(s, &a->sd, &a->kernel_sc, false)) {
                a->recheck_ns = now_ns + bucket_wait_ns(a);
                return 0;
        }
        if (snprintf(d.reason, sizeof d.reason,
                     "the kernel's table again: the stall budget's bucket pays for its wake-ups again (%.1f ms)",
                     a->bucket_ns / 1e6) < 0)
                d.reason[0] = 0;
        d.bucket_ms = a->bucket_ns / 1e6;
        return return_new_table(a, &a->kernel, &a->kernel_table, &d, now_ns, ret_table, ret_why);
}

/* The least-energy table whose wake delay on the evidence is within what is allowed, and whose
 * bound on its excess over the kernel's table is within the guard's tolerance; programmed when
 * it gains enough. */
static int gaps_decide(Adapt *a, const ShadowChain *applied_chain, uint64_t now_ns, ApstTable *ret_table,
                       AdaptDecision *ret_why) {
        AdaptDecision d = {};

        if (now_ns - a->gaps_decide_ns < ADAPT_GAPS_DECIDE_NS || a->gaps_seen < ADAPT_GAPS_WARMUP)
                return 0;
        a->gaps_decide_ns = now_ns;

        /* The wake delay allowed on the evidence: the kernel's table's; while little is known
         * (or always, when the user set a stall budget), also the stall budget's share of the time. */
        double k_e, cur_e, cur_w, cur_kw;
        GapSearch s = { .a = a };
        shadow_hist_cost(&a->sd, &a->kernel_sc, &a->hist, &k_e, &s.kernel_ns);
        shadow_hist_cost(&a->sd_cand, applied_chain, &a->hist, &cur_e, &cur_w);
        kernel_hidden_wake(a, s.kernel_hidden_ns);
        evidence_wake(a, &a->sd_cand, applied_chain, cur_w, s.kernel_ns, s.kernel_hidden_ns, NULL, &cur_w, &cur_kw);
        /* The stall budget holds over the time the evidence covers with what was already paid:
         * wake delay the tables in force spent beyond it is taken off what the next may spend. */
        double budget_w = MAX((double) a->hist_elapsed_ns, (double) ADAPT_BUDGET_MIN_SPAN_NS) * a->budget_pct_x100 /
                          10000.0;
        /* A new table must fit in ADAPT_BUDGET_FILL of it: the gaps to come are not exactly
         * the gaps seen, and a table right at the limit would overrun as often as not. */
        budget_w = MAX(ADAPT_BUDGET_FILL * budget_w - MAX(a->spent_wake_ns - budget_w, 0.0), 0.0);
        s.hold = a->gaps_seen < ADAPT_TRUST_HOLD_GAPS;
        s.budget_ns = budget_w;
        double limit = allowed_wake_ns(a, cur_kw, budget_w, s.hold);

        shadow_bucket_wait(&a->sd, &a->kernel_sc, s.kernel_wait);
        bool shift = workload_shift(a, applied_chain, now_ns, &s);
        bucket_limits(a, &s);
        bool backoff = !bucket_allows(&s, &a->sd_cand, applied_chain, true);
        /* After the guard's fallback only the bucket moves the table (gaps_guard()): off the
         * kernel's table when it cannot pay for it, back to it once it can. */
        if (a->fallen_back && !backoff)
                return kernel_again(a, &s, now_ns, ret_table, ret_why);
        GapSearch unbound = s;
        gap_search(&s);
        bucket_recheck(a, &unbound, &s, now_ns);
        if (!s.found || chain_equal(a, &s.best, &a->current))
                return 0;
        bool overrun = shift || backoff || cur_w > limit * 1.05 + 1e6;
        if (!overrun && ((a->programs > 0 && now_ns - a->last_program_ns < ADAPT_GAPS_ENERGY_NS) ||
                         s.best_e > (1.0 - ADAPT_GAPS_MIN_GAIN) * cur_e))
                return 0;

        ApstTable t;
        chain_to_table(a, &s.best, &t);
        d.backoff = backoff;
        gaps_describe(a, &s, k_e, s.best_kernel_ns, s.best_limit_ns, shift, &d);
        return return_new_table(a, &s.best, &t, &d, now_ns, ret_table, ret_why);
}

int adapt_observe_gaps(Adapt *a, const GapHist *delta, uint64_t now_ns, ApstTable *ret_table,
                       AdaptDecision *ret_why) {
        ShadowChain applied;
        bool done;
        int r;

        if (!a || !delta || !ret_table)
                return -EINVAL;
        a->source = ADAPT_SOURCE_BPF;
        if (now_ns < a->gaps_last_ns)
                now_ns = a->gaps_last_ns;
        /* a look again that was due is this one; a decision sets the next (bucket_recheck()) */
        if (now_ns >= a->recheck_ns)
                a->recheck_ns = UINT64_MAX;
        gaps_account(a, delta, now_ns, &applied);
        if (!a->enabled)
                return 0;
        r = gaps_guard(a, &applied, now_ns, ret_table, ret_why, &done);
        if (done)
                return r;
        return gaps_decide(a, &applied, now_ns, ret_table, ret_why);
}

uint64_t adapt_recheck_ns(const Adapt *a) {
        return a->enabled && a->source == ADAPT_SOURCE_BPF ? a->recheck_ns : UINT64_MAX;
}

int adapt_start_exact(Adapt *a, ApstTable *ret_table) {
        if (!a || !ret_table)
                return -EINVAL;
        a->source = ADAPT_SOURCE_BPF;
        a->bucket_ns = bucket_capacity_ns(a);
        a->burst = (ShadowHist) {};
        a->recheck_ns = UINT64_MAX;
        if (a->enabled && a->programs == 0) {
                a->current = a->kernel;
                a->current_table = a->kernel_table;
        }
        *ret_table = a->current_table;
        return 0;
}

/* A decayed count as the learned file keeps it. */
static uint64_t learned_milli(double n) {
        return (uint64_t) MIN(MAX(n, 0.0) * LEARNED_HIST_SCALE + 0.5, (double) LEARNED_COUNT_MAX);
}

void adapt_learned_capture(const Adapt *a, Learned *ret) {
        Learned l = {};

        (void) snprintf(l.model, sizeof l.model, "%s", a->id.model);
        (void) snprintf(l.firmware, sizeof l.firmware, "%s", a->id.firmware);
        l.serial_hash = learned_serial_hash(a->id.serial);
        l.gaps_seen = (uint64_t) MIN(a->gaps_seen, (double) LEARNED_COUNT_MAX);
        l.hist_elapsed_ms = (uint64_t) MIN(a->hist_elapsed_ns / 1e6, (double) LEARNED_COUNT_MAX);
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                l.hist_milli[b] = learned_milli(a->hist.gaps[b]);
        for (unsigned k = 0; k < a->hide_floors; k++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        l.hidden_milli[k][b] = learned_milli(a->hidden[k].gaps[b]);
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                l.hidden_after_milli[b] = learned_milli(a->hidden_after.gaps[b]);
        l.awake = a->pcal.awake;
        for (unsigned s = 0; s < IDCTRL_MAX_PS; s++)
                l.state[s] = a->pcal.state[s];
        *ret = l;
}

int adapt_learned_restore(Adapt *a, const Learned *l) {
        if (strcmp(l->model, a->id.model) != 0 || strcmp(l->firmware, a->id.firmware) != 0 ||
            l->serial_hash != learned_serial_hash(a->id.serial))
                return -ESTALE;
        /* Hidden gaps at a floor this drive does not have cannot come from it. */
        for (unsigned k = a->hide_floors; k < GAP_HIDE_FLOORS; k++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        if (l->hidden_milli[k][b])
                                return -ESTALE;
        a->gaps_seen = (double) l->gaps_seen;
        a->hist_elapsed_ns = (double) l->hist_elapsed_ms * 1e6;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                a->hist.gaps[b] = (double) l->hist_milli[b] / LEARNED_HIST_SCALE;
        for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        a->hidden[k].gaps[b] = (double) l->hidden_milli[k][b] / LEARNED_HIST_SCALE;
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                a->hidden_after.gaps[b] = (double) l->hidden_after_milli[b] / LEARNED_HIST_SCALE;
        a->pcal.awake = l->awake;
        for (unsigned s = 0; s < IDCTRL_MAX_PS; s++)
                a->pcal.state[s] = l->state[s];
        update_exlat(a);
        return 0;
}

void adapt_savings(const Adapt *a, ShadowSums *ret_total_applied, ShadowSums *ret_total_kernel,
                   ShadowSums *ret_window_applied, ShadowSums *ret_window_kernel) {
        *ret_total_applied = a->shadow.total_applied;
        *ret_total_kernel = a->shadow.total_kernel;
        shadow_window(&a->shadow, ret_window_applied, ret_window_kernel);
}
