/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The shadow kernel: what the applied table and the kernel's cost on the same
 * observed gaps. See shadow.h and doc/policy.md.
 */

#include <math.h>
#include <stdio.h>

#include "shadow.h"

#define NS_PER_US 1000.0
static double dmin(double a, double b) {
        return a < b ? a : b;
}

static double dmax(double a, double b) {
        return a > b ? a : b;
}

uint32_t shadow_exlat_us(const ShadowDrive *d, unsigned s) {
        if (s >= SHADOW_STATES)
                return 0;
        return d->exlat_seen_us[s] > d->exlat_us[s] ? d->exlat_seen_us[s] : d->exlat_us[s];
}

static double power_uw(const ShadowDrive *d, unsigned s) {
        return s == 0 ? d->p0_uw : d->power_uw[s];
}

void shadow_chain_from_table(const ShadowDrive *d, bool apste, const uint64_t entry[SHADOW_STATES],
                             ShadowChain *ret) {
        ShadowChain c = {};
        bool seen[SHADOW_STATES] = { [0] = true };
        uint64_t t = 0;
        unsigned s = 0;

        while (apste && c.n < SHADOW_MAX_STEPS && s <= d->npss && s < SHADOW_STATES) {
                uint64_t e = entry[s];
                uint64_t itpt_ms = (e >> 8) & 0xFFFFFFu;
                unsigned to = (unsigned) ((e >> 3) & 0x1Fu);

                if (itpt_ms == 0 || to > d->npss || seen[to])
                        break;
                t += itpt_ms * UINT64_C(1000000);
                c.state[c.n] = to;
                c.start_ns[c.n++] = t;
                t += (uint64_t) d->enlat_us[to] * 1000u;
                seen[to] = true;
                s = to;
        }
        *ret = c;
}

/* One gap under @c: energy, wait, and (if @resident) the idle time resting in each state and
 * the entries begun. */
static void gap_walk(const ShadowDrive *d, const ShadowChain *c, double g, double *ret_e, double *ret_wait,
                     double *resident, double *entries) {
        double t = 0, e = 0, wait;
        unsigned cur = 0;

        for (unsigned k = 0; k < c->n; k++) {
                double start = (double) c->start_ns[k], enter = d->enlat_us[c->state[k]] * NS_PER_US;

                if (g <= start)
                        break;
                e += power_uw(d, cur) * (dmax(start, t) - t);
                if (resident)
                        resident[cur] += dmax(start, t) - t;
                t = dmax(start, t);
                if (entries)
                        *entries += 1;
                if (g < t + enter) {
                        wait = t + enter - g + shadow_exlat_us(d, c->state[k]) * NS_PER_US;
                        e += d->p0_uw * (g - t + wait);
                        *ret_e = e;
                        *ret_wait = wait;
                        return;
                }
                e += d->p0_uw * enter;
                t += enter;
                cur = c->state[k];
        }
        wait = cur == 0 ? 0 : shadow_exlat_us(d, cur) * NS_PER_US;
        e += power_uw(d, cur) * (g - t) + d->p0_uw * wait;
        if (resident)
                resident[cur] += g - t;
        *ret_e = e;
        *ret_wait = wait;
}

void shadow_gap_cost(const ShadowDrive *d, const ShadowChain *c, double g, double *ret_e, double *ret_wait) {
        gap_walk(d, c, g, ret_e, ret_wait, NULL, NULL);
}

/* The span the sub-points of bucket @b cover: the last bucket has no upper bound,
 * so it is taken as wide as the octave's quarter-steps before it. */
static void bucket_span(unsigned b, double *ret_lo, double *ret_hi) {
        double lo = (double) gaphist_bucket_lower_ns(b);
        double hi = b + 1 >= GAP_BUCKETS ? lo * 1.25 : (double) gaphist_bucket_upper_ns(b);

        *ret_lo = lo;
        *ret_hi = hi;
}

/* A bucket's cost: @n gaps spread evenly over it. With @sums, also their residency and entries
 * (added to it, scaled); with @ret_point_wait, the wait of one gap at each of its points. */
static void bucket_cost(const ShadowDrive *d, const ShadowChain *c, unsigned b, double n, double *ret_e,
                        double *ret_wait, double *ret_wakes, ShadowSums *sums,
                        double ret_point_wait[SHADOW_SUBPOINTS]) {
        double lo, hi, e = 0, w = 0, k = 0, resident[SHADOW_STATES] = {}, entries = 0;

        bucket_span(b, &lo, &hi);
        for (unsigned i = 0; i < SHADOW_SUBPOINTS; i++) {
                double g = lo + (hi - lo) * (i + 0.5) / SHADOW_SUBPOINTS, ge, gw;

                gap_walk(d, c, g, &ge, &gw, sums ? resident : NULL, sums ? &entries : NULL);
                if (ret_point_wait)
                        ret_point_wait[i] = gw;
                e += ge;
                w += gw;
                k += gw > 0;
        }
        *ret_e = e * n / SHADOW_SUBPOINTS;
        *ret_wait = w * n / SHADOW_SUBPOINTS;
        if (ret_wakes)
                *ret_wakes = k * n / SHADOW_SUBPOINTS;
        if (sums) {
                for (unsigned st = 0; st < SHADOW_STATES; st++)
                        sums->resident_ns[st] += resident[st] * n / SHADOW_SUBPOINTS;
                sums->entries += entries * n / SHADOW_SUBPOINTS;
        }
}

void shadow_hist_from_gaphist(const GapHist *h, ShadowHist *ret) {
        for (unsigned b = 0; b < GAP_BUCKETS; b++)
                ret->gaps[b] = (double) h->gaps[b];
}

void shadow_hist_cost(const ShadowDrive *d, const ShadowChain *c, const ShadowHist *h, double *ret_e,
                      double *ret_wait) {
        double e = 0, w = 0;

        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                double be, bw;

                if (h->gaps[b] <= 0)
                        continue;
                bucket_cost(d, c, b, h->gaps[b], &be, &bw, NULL, NULL, NULL);
                e += be;
                w += bw;
        }
        *ret_e = e;
        *ret_wait = w;
}

void shadow_bucket_wait(const ShadowDrive *d, const ShadowChain *c, double ret_wait[GAP_BUCKETS]) {
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                double e;

                bucket_cost(d, c, b, 1.0, &e, &ret_wait[b], NULL, NULL, NULL);
        }
}

void shadow_init(Shadow *s, uint64_t now_ns) {
        *s = (Shadow) { .slot_start_ns = now_ns, .started = true };
}

static void advance(Shadow *s, uint64_t now_ns) {
        if (!s->started)
                shadow_init(s, now_ns);
        if (now_ns < s->slot_start_ns + SHADOW_SLOT_NS)
                return;
        uint64_t steps = (now_ns - s->slot_start_ns) / SHADOW_SLOT_NS;
        for (uint64_t i = 0; i < steps && i < SHADOW_SLOTS; i++) {
                s->slot = (s->slot + 1) % SHADOW_SLOTS;
                s->slot_applied[s->slot] = (ShadowSums) {};
                s->slot_kernel[s->slot] = (ShadowSums) {};
                s->slot_wake_diff2[s->slot] = 0;
        }
        s->slot_start_ns += steps * SHADOW_SLOT_NS;
}

static void add(ShadowSums *x, double e, double w, double gaps, double wakes) {
        x->energy_uwns += e;
        x->wake_ns += w;
        x->gaps += gaps;
        x->wakes += wakes;
}

bool shadow_chain_equal(const ShadowChain *x, const ShadowChain *y) {
        if (x->n != y->n)
                return false;
        for (unsigned k = 0; k < x->n; k++)
                if (x->state[k] != y->state[k] || x->start_ns[k] != y->start_ns[k])
                        return false;
        return true;
}

void shadow_account(Shadow *s, const ShadowDrive *d, const ShadowChain *applied, const ShadowChain *kernel,
                    const GapHist *delta, double awake_svc_ns, uint64_t now_ns) {
        /* When the kernel's table is the one in force, what it cost is what was measured. */
        bool same = shadow_chain_equal(applied, kernel);

        advance(s, now_ns);
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                double n = (double) delta->gaps[b], ae, aw, ak, ke, kw, kk;
                double apw[SHADOW_SUBPOINTS], kpw[SHADOW_SUBPOINTS];
                ShadowSums occ = {};

                if (n <= 0)
                        continue;
                bucket_cost(d, applied, b, n, &ae, &aw, &ak, &occ, same ? NULL : apw);
                bucket_cost(d, kernel, b, n, &ke, &kw, &kk, NULL, same ? NULL : kpw);
                /* The applied table's wake delay as the drive charged it, where it was measured. */
                double measured = awake_svc_ns >= 0 ? (double) delta->wake_count[b] : 0;
                if (measured > 0) {
                        double m = dmin(measured, n);
                        double paid = dmax((double) delta->wake_sum_ns[b] - measured * awake_svc_ns, 0) * m / measured;
                        double model_rest = aw * (n - m) / n;
                        /* The energy follows the wait actually paid, at PS0 power. */
                        ae += d->p0_uw * (paid + model_rest - aw);
                        aw = paid + model_rest;
                }
                if (same) {
                        ke = ae;
                        kw = aw;
                        kk = ak;
                }
                add(&s->total_applied, ae, aw, n, ak);
                add(&s->total_kernel, ke, kw, n, kk);
                /* where the applied tables kept the drive (the model's residency) */
                for (unsigned st = 0; st < SHADOW_STATES; st++)
                        s->total_applied.resident_ns[st] += occ.resident_ns[st];
                s->total_applied.entries += occ.entries;
                /* The window judges our own tables: time on the kernel's says nothing. */
                if (!same) {
                        add(&s->slot_applied[s->slot], ae, aw, n, ak);
                        add(&s->slot_kernel[s->slot], ke, kw, n, kk);
                        for (unsigned i = 0; i < SHADOW_SUBPOINTS; i++)
                                s->slot_wake_diff2[s->slot] +=
                                        (apw[i] - kpw[i]) * (apw[i] - kpw[i]) * n / SHADOW_SUBPOINTS;
                }
        }
}

void shadow_window(const Shadow *s, ShadowSums *ret_applied, ShadowSums *ret_kernel) {
        ShadowSums a = {}, k = {};

        for (unsigned i = 0; i < SHADOW_SLOTS; i++) {
                add(&a, s->slot_applied[i].energy_uwns, s->slot_applied[i].wake_ns, s->slot_applied[i].gaps,
                    s->slot_applied[i].wakes);
                add(&k, s->slot_kernel[i].energy_uwns, s->slot_kernel[i].wake_ns, s->slot_kernel[i].gaps,
                    s->slot_kernel[i].wakes);
        }
        *ret_applied = a;
        *ret_kernel = k;
}

static void format_seconds(double ns, char *buf, size_t n) {
        double s = ns / 1e9;

        if (s >= 10 || s == 0)
                (void) snprintf(buf, n, "%.0f s", s);
        else if (s >= 1)
                (void) snprintf(buf, n, "%.1f s", s);
        else
                (void) snprintf(buf, n, "%.0f ms", s * 1e3);
}

double shadow_window_wake_spread_ns(const Shadow *s) {
        double q = 0;

        for (unsigned i = 0; i < SHADOW_SLOTS; i++)
                q += s->slot_wake_diff2[i];
        return sqrt(q);
}

ShadowVerdict shadow_guard(const Shadow *s, double wake_slack_ns, char *why, size_t n) {
        ShadowSums a, k;
        ShadowVerdict v = SHADOW_OK;
        const double tol = 1.0 + SHADOW_GUARD_TOLERANCE;

        shadow_window(s, &a, &k);
        bool wake_evidence = a.gaps >= SHADOW_GUARD_MIN_GAPS &&
                             dmax(a.wake_ns, k.wake_ns) >= (double) SHADOW_GUARD_MIN_WAKE_NS;
        if (wake_evidence && a.wake_ns > tol * k.wake_ns + dmax(wake_slack_ns, 0.0))
                v = SHADOW_WORSE_WAKE;
        else if (k.energy_uwns > 0 && a.gaps >= SHADOW_GUARD_MIN_GAPS && a.energy_uwns > tol * k.energy_uwns &&
                 a.wake_ns * tol >= k.wake_ns)
                v = SHADOW_WORSE_ENERGY;
        if (why && n > 0) {
                char fig[200], slack[32], allowed[64] = "";
                shadow_describe(&a, &k, fig, sizeof fig);
                if (v == SHADOW_WORSE_WAKE) {
                        format_seconds(dmax(wake_slack_ns, 0.0), slack, sizeof slack);
                        (void) snprintf(allowed, sizeof allowed, "; allowed %.0f%% more and %s",
                                        100.0 * SHADOW_GUARD_TOLERANCE, slack);
                }
                if (snprintf(why, n, "%s over the last %.0f s: %s%s",
                             v == SHADOW_WORSE_WAKE     ? "more wake delay than the kernel's table"
                             : v == SHADOW_WORSE_ENERGY ? "more energy than the kernel's table for no less wake delay"
                                                        : "within the kernel's table",
                             (double) SHADOW_WINDOW_NS / 1e9, fig, allowed) < 0)
                        why[0] = 0;
        }
        return v;
}

void shadow_report_init(ShadowReport *r, const Shadow *s, uint64_t now_ns) {
        *r = (ShadowReport) { .started = true, .last_ns = now_ns, .applied_at = s->total_applied,
                              .kernel_at = s->total_kernel, .fallbacks_at = s->fallbacks, .last_ratio = -1 };
}

static void sums_diff(const ShadowSums *now, const ShadowSums *then, ShadowSums *ret) {
        ShadowSums x = {
                .energy_uwns = now->energy_uwns - then->energy_uwns,
                .wake_ns = now->wake_ns - then->wake_ns,
                .gaps = now->gaps - then->gaps,
                .wakes = now->wakes - then->wakes,
                .entries = now->entries - then->entries,
        };
        for (unsigned i = 0; i < SHADOW_STATES; i++)
                x.resident_ns[i] = now->resident_ns[i] - then->resident_ns[i];
        *ret = x;
}

void shadow_report_period(const ShadowReport *r, const Shadow *s, ShadowSums *ret_applied, ShadowSums *ret_kernel) {
        sums_diff(&s->total_applied, &r->applied_at, ret_applied);
        sums_diff(&s->total_kernel, &r->kernel_at, ret_kernel);
}

bool shadow_report_due(const ShadowReport *r, const Shadow *s, uint64_t now_ns) {
        ShadowSums a, k;

        if (!r->started || now_ns < r->last_ns)
                return false;
        shadow_report_period(r, s, &a, &k);
        if (a.gaps <= 0)
                return false;
        if (now_ns - r->last_ns >= SHADOW_REPORT_EVERY_NS)
                return true;
        if (now_ns - r->last_ns < SHADOW_REPORT_SOONEST_NS)
                return false;
        if (s->fallbacks != r->fallbacks_at)
                return true;
        return r->last_ratio >= 0 && k.energy_uwns > 0 &&
               fabs(a.energy_uwns / k.energy_uwns - r->last_ratio) > SHADOW_REPORT_MARKED;
}

void shadow_report_mark(ShadowReport *r, const Shadow *s, uint64_t now_ns) {
        ShadowSums a, k;

        shadow_report_period(r, s, &a, &k);
        r->last_ratio = k.energy_uwns > 0 ? a.energy_uwns / k.energy_uwns : -1;
        r->last_ns = now_ns;
        r->applied_at = s->total_applied;
        r->kernel_at = s->total_kernel;
        r->fallbacks_at = s->fallbacks;
}

void shadow_residency_describe(const ShadowSums *x, char *buf, size_t n) {
        double total = 0;
        size_t off = 0;

        if (n == 0)
                return;
        buf[0] = 0;
        for (unsigned i = 0; i < SHADOW_STATES; i++)
                total += x->resident_ns[i];
        for (unsigned i = 0; i < SHADOW_STATES && total > 0 && off < n; i++) {
                int w;
                if (x->resident_ns[i] <= 0)
                        continue;
                w = snprintf(buf + off, n - off, "%sps%u %.1f%%", off ? ", " : "", i,
                             100.0 * x->resident_ns[i] / total);
                if (w < 0)
                        return;
                off += (size_t) w;
        }
}

void shadow_describe(const ShadowSums *a, const ShadowSums *k, char *buf, size_t n) {
        double ea = a->energy_uwns / 1e15, ek = k->energy_uwns / 1e15, diff = ek - ea;
        char wa[32], wk[32];

        if (n == 0)
                return;
        format_seconds(a->wake_ns, wa, sizeof wa);
        format_seconds(k->wake_ns, wk, sizeof wk);
        if (snprintf(buf, n,
                     fabs(diff) >= 10 ? "%.0f J (%.0f%%) %s than the kernel's table, wake delay %s against its %s"
                                      : "%.2g J (%.0f%%) %s than the kernel's table, wake delay %s against its %s",
                     fabs(diff), ek > 0 ? 100.0 * fabs(diff) / ek : 0.0, diff >= 0 ? "less" : "more", wa, wk) < 0)
                buf[0] = 0;
}
