/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy lab's physical model: a one-server FIFO drive that follows an
 * APST chain while idle (doc/nvme-apst.md for the chain, doc/energy-model.md for the energy model).
 * See sim.h for the model in short and doc/simulator.md for the whole of it.
 *
 * One pass over the trace in time order. Busy time (waking + serving) is
 * charged when an I/O arrives, because its length is known then; idle time
 * is charged lazily by idle_advance(), which walks the chain up to the next
 * event (an arrival or a policy sample). Energy is summed in µW·ns
 * (1e-15 J) as a double: 2^53 µW·ns is ~9 J, beyond which the relative
 * rounding error stays at 1e-16 per addition.
 */

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "sim.h"
#include "string-table.h"

#define NS_PER_US UINT64_C(1000)
#define NS_PER_MS UINT64_C(1000000)
#define UWNS_PER_J 1e15

typedef enum Phase {
        PHASE_RESTING,             /* resting in state ps */
        PHASE_ENTERING,            /* entering state ps since phase_start */
} Phase;

typedef struct Sim {
        const SimDrive *d;
        ApstTable table;

        /* idle chain, meaningful from the last completion on */
        unsigned ps;
        Phase phase;
        uint64_t phase_start;

        uint64_t t_acc;            /* energy is accounted up to here */
        double energy_uwns;
        uint64_t resident_ns[APST_ENTRIES];
        uint64_t transition_ns;

        /* SimParams.timeline: the changes so far, or NULL when not asked */
        bool record;
        SimStateChange *tl;
        size_t n_tl, tl_allocated;
        int tl_error;
} Sim;

static const char *const sim_activity_table[_SIM_ACTIVITY_MAX] = {
        [SIM_ACTIVITY_SERVE] = "serve",
        [SIM_ACTIVITY_REST] = "rest",
        [SIM_ACTIVITY_ENTER] = "enter",
        [SIM_ACTIVITY_EXIT] = "exit",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(sim_activity, SimActivity);

/* Record that the drive does @a in @ps from @t on. A change at the time of the last one
 * replaces it (what the drive does from then on); an unchanged one is not repeated. */
static void note(Sim *s, uint64_t t, unsigned ps, SimActivity a) {
        SimStateChange *last;

        if (!s->record || s->tl_error < 0)
                return;
        last = s->n_tl > 0 ? &s->tl[s->n_tl - 1] : NULL;
        if (last && last->t_ns == t) {
                *last = (SimStateChange) { .t_ns = t, .ps = ps, .activity = a };
                if (s->n_tl > 1 && last[-1].ps == ps && last[-1].activity == a)
                        s->n_tl--;
                return;
        }
        if (last && last->ps == ps && last->activity == a)
                return;
        if (!s->tl || s->n_tl == s->tl_allocated) {
                size_t m = s->tl_allocated ? s->tl_allocated * 2 : 64;
                SimStateChange *q;
                if (s->n_tl >= SIM_TIMELINE_MAX) {
                        s->tl_error = -E2BIG;
                        return;
                }
                q = reallocarray(s->tl, m, sizeof(SimStateChange));
                if (!q) {
                        s->tl_error = -ENOMEM;
                        return;
                }
                s->tl = q;
                s->tl_allocated = m;
        }
        s->tl[s->n_tl++] = (SimStateChange) { .t_ns = t, .ps = ps, .activity = a };
}

int sim_drive_from_idctrl(const IdCtrl *id, uint32_t p0_fallback_uw, SimDrive *ret) {
        SimDrive d = { .npss = id->npss };

        if (id->npss >= APST_ENTRIES)
                return -ERANGE;
        for (unsigned i = 0; i <= id->npss; i++) {
                const IdPsd *p = &id->psd[i];
                d.ps[i] = (SimState) {
                        .power_uw = p->idle_power_uw ? p->idle_power_uw : p->max_power_uw,
                        .enlat_us = p->enlat_us,
                        .exlat_us = p->exlat_us,
                        .non_operational = p->non_operational,
                };
        }
        /* PS0's max power is its active ceiling, not what it draws idle. */
        d.p0_reported = id->psd[0].idle_power_uw != 0;
        d.ps[0].power_uw = d.p0_reported ? id->psd[0].idle_power_uw : p0_fallback_uw;
        *ret = d;
        return 0;
}

int sim_drive_scale_exlat(SimDrive *d, double scale) {
        if (!(scale > 0 && scale <= SIM_EXLAT_SCALE_MAX))   /* also refuses NaN */
                return -EINVAL;
        for (unsigned i = 0; i <= d->npss && i < APST_ENTRIES; i++) {
                double x = (double) d->ps[i].exlat_us * scale + 0.5;
                d->ps[i].exlat_us = x >= (double) UINT32_MAX ? UINT32_MAX : (uint32_t) x;
        }
        return 0;
}

int sim_table_check(const SimDrive *d, const ApstTable *t) {
        if (!t->apste)
                return 0;
        for (unsigned s = 0; s < APST_ENTRIES; s++) {
                uint64_t e = t->entry[s];
                if (e & ~(UINT64_C(0xffffffff) & ~UINT64_C(0x7)))
                        return -EINVAL;
                if (s > d->npss) {
                        if (e != 0)
                                return -EINVAL;
                        continue;
                }
                if (apst_entry_itpt(e) == 0)
                        continue;
                unsigned target = apst_entry_itps(e);
                if (target > d->npss || target == s || !d->ps[target].non_operational)
                        return -EINVAL;
        }
        /* Follow the chain from every state: more steps than states means a cycle. */
        for (unsigned s = 0; s <= d->npss; s++) {
                unsigned cur = s;
                for (unsigned steps = 0;; steps++) {
                        uint64_t e = t->entry[cur];
                        if (apst_entry_itpt(e) == 0)
                                break;
                        if (steps > d->npss)
                                return -ELOOP;
                        cur = apst_entry_itps(e);
                }
        }
        return 0;
}

static void charge(Sim *s, uint32_t power_uw, uint64_t ns) {
        s->energy_uwns += (double) power_uw * (double) ns;
}

/* Where the chain leaves the resting state, or UINT64_MAX when it stays. */
static uint64_t rest_deadline(const Sim *s) {
        uint64_t e = s->table.entry[s->ps];
        uint32_t itpt = apst_entry_itpt(e);

        if (!s->table.apste || itpt == 0)
                return UINT64_MAX;
        return s->phase_start + (uint64_t) itpt * NS_PER_MS;
}

/* Walk the idle chain from s->t_acc to @to, charging energy. At an exact
 * deadline the drive has not left yet: an arrival at ITPT finds it resting. */
static void idle_advance(Sim *s, uint64_t to) {
        while (s->t_acc < to) {
                if (s->phase == PHASE_RESTING) {
                        uint64_t deadline = rest_deadline(s), until = MIN(deadline, to);
                        charge(s, s->d->ps[s->ps].power_uw, until - s->t_acc);
                        s->resident_ns[s->ps] += until - s->t_acc;
                        s->t_acc = until;
                        if (deadline >= to)
                                return;
                        s->ps = apst_entry_itps(s->table.entry[s->ps]);
                        s->phase = PHASE_ENTERING;
                        s->phase_start = deadline;
                        note(s, deadline, s->ps, SIM_ACTIVITY_ENTER);
                } else {
                        uint64_t end = s->phase_start + s->d->ps[s->ps].enlat_us * NS_PER_US;
                        uint64_t until = MIN(end, to);
                        charge(s, s->d->ps[0].power_uw, until - s->t_acc);
                        s->transition_ns += until - s->t_acc;
                        s->t_acc = until;
                        if (end > to)
                                return;
                        s->phase = PHASE_RESTING;
                        s->phase_start = end;
                        note(s, end, s->ps, SIM_ACTIVITY_REST);
                }
        }
        /* A zero-length entry that ends exactly here completes now. */
        if (s->phase == PHASE_ENTERING && s->phase_start + s->d->ps[s->ps].enlat_us * NS_PER_US <= to) {
                s->phase = PHASE_RESTING;
                s->phase_start = to;
                note(s, to, s->ps, SIM_ACTIVITY_REST);
        }
}

/* How long an I/O arriving now (s->t_acc) waits for the drive; 0 in PS0. */
static uint64_t wake_wait(const Sim *s) {
        uint64_t exit_ns = s->d->ps[s->ps].exlat_us * NS_PER_US;

        if (s->phase == PHASE_ENTERING)
                return s->phase_start + s->d->ps[s->ps].enlat_us * NS_PER_US - s->t_acc + exit_ns;
        return s->ps == 0 ? 0 : exit_ns;
}

static int add_reprogram(SimResult *r, size_t *allocated, uint64_t t_ns, const ApstTable *t) {
        if (r->n_reprograms == *allocated) {
                size_t m = *allocated ? *allocated * 2 : 4;
                SimReprogram *q = reallocarray(r->reprograms, m, sizeof(SimReprogram));
                if (!q)
                        return -ENOMEM;
                r->reprograms = q;
                *allocated = m;
        }
        r->reprograms[r->n_reprograms++] = (SimReprogram) { .t_ns = t_ns, .table = *t };
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of @zeros zeros followed by the sorted @v[0..@n-1]: the value at
 * rank ceil((zeros + n) * permille / 1000). */
static uint64_t percentile(uint64_t zeros, const uint64_t *v, size_t n, uint64_t per_thousand) {
        uint64_t total = zeros + n;

        if (total == 0)
                return 0;
        uint64_t rank = (total * per_thousand + 999) / 1000;
        rank = rank == 0 ? 0 : rank - 1;
        return rank < zeros ? 0 : v[rank - zeros];
}

static int check_input(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p) {
        if (d->npss >= APST_ENTRIES || p->service_ns == 0 || p->service_ns > UINT64_C(1000000000))
                return -EINVAL;
        for (size_t k = 0; k < n; k++) {
                if (io[k].t_ns > (uint64_t) TRACE_TIME_MAX_S * UINT64_C(1000000000))
                        return -EINVAL;
                if (io[k].op < 0 || io[k].op >= _TRACE_OP_MAX)   /* indexes the counters */
                        return -EINVAL;
                if (k > 0 && io[k].t_ns < io[k - 1].t_ns)
                        return -EINVAL;
        }
        /* Bound the schedule: n * service_ns must stay far from overflow. */
        if (n > 0 && (uint64_t) n > (UINT64_C(1) << 62) / p->service_ns)
                return -EINVAL;
        /* Segments: each begins with an I/O of its own, in order, no later than that I/O and no
         * earlier than the one before it. */
        if (p->n_segments > 0 && (!p->segments || p->n_segments > SIM_SEGMENTS_MAX))
                return -EINVAL;
        for (size_t i = 0; i < p->n_segments; i++) {
                const SimSegment *g = &p->segments[i];
                if ((i == 0 && g->first != 0) || (i > 0 && g->first <= p->segments[i - 1].first) || g->first >= n)
                        return -EINVAL;
                if (g->start_ns > io[g->first].t_ns || (i > 0 && g->start_ns < io[g->first - 1].t_ns))
                        return -EINVAL;
        }
        return 0;
}

/* Block-layer counters as the kernel keeps them, fed by arrivals and completions. */
typedef struct Counters {
        SimBlockStat st;
        uint64_t rw_ns[_TRACE_OP_MAX];   /* per-op response time sum of completed I/Os */
        size_t arrived, done;
        double sum_arrival_ns;           /* over arrived I/Os */
        double sum_arrival_done_ns;      /* over completed I/Os */
        uint64_t busy_closed_ns, busy_start;
} Counters;

static void counters_snapshot(Counters *c, const TraceIo *io, const uint64_t *arr, const uint64_t *comp,
                              uint64_t now, SimBlockStat *ret) {
        while (c->done < c->arrived && comp[c->done] <= now) {
                size_t k = c->done++;
                uint64_t sectors = io[k].bytes / 512, resp = comp[k] - arr[k];
                c->sum_arrival_done_ns += (double) arr[k];
                c->rw_ns[io[k].op] += resp;
                switch (io[k].op) {
                case TRACE_OP_READ:
                        c->st.read_ios++;
                        c->st.read_sectors += sectors;
                        break;
                case TRACE_OP_WRITE:
                        c->st.write_ios++;
                        c->st.write_sectors += sectors;
                        break;
                case TRACE_OP_DISCARD:
                        c->st.discard_ios++;
                        c->st.discard_sectors += sectors;
                        break;
                case TRACE_OP_FLUSH:
                        c->st.flush_ios++;
                        break;
                case _TRACE_OP_MAX:
                case _TRACE_OP_INVALID:
                        break;
                }
        }
        c->st.read_ticks = c->rw_ns[TRACE_OP_READ] / NS_PER_MS;
        c->st.write_ticks = c->rw_ns[TRACE_OP_WRITE] / NS_PER_MS;
        c->st.discard_ticks = c->rw_ns[TRACE_OP_DISCARD] / NS_PER_MS;
        c->st.flush_ticks = c->rw_ns[TRACE_OP_FLUSH] / NS_PER_MS;
        c->st.in_flight = c->arrived - c->done;

        uint64_t busy = c->busy_closed_ns;
        if (c->arrived > 0)
                busy += MIN(now, comp[c->arrived - 1]) - c->busy_start;
        c->st.io_ticks = busy / NS_PER_MS;

        double queue_ns = 0;
        for (unsigned op = 0; op < _TRACE_OP_MAX; op++)
                queue_ns += (double) c->rw_ns[op];
        queue_ns += (double) c->st.in_flight * (double) now - (c->sum_arrival_ns - c->sum_arrival_done_ns);
        c->st.time_in_queue = (uint64_t) (queue_ns / (double) NS_PER_MS);
        *ret = c->st;
}

/* @acc += @x, field by field: the counters of two stretches of time one after the other.
 * in_flight is a level, not a count: @x's (the later stretch's) is the one in force. */
static void stat_add(SimBlockStat *acc, const SimBlockStat *x) {
        acc->read_ios += x->read_ios;
        acc->read_merges += x->read_merges;
        acc->read_sectors += x->read_sectors;
        acc->read_ticks += x->read_ticks;
        acc->write_ios += x->write_ios;
        acc->write_merges += x->write_merges;
        acc->write_sectors += x->write_sectors;
        acc->write_ticks += x->write_ticks;
        acc->in_flight = x->in_flight;
        acc->io_ticks += x->io_ticks;
        acc->time_in_queue += x->time_in_queue;
        acc->discard_ios += x->discard_ios;
        acc->discard_merges += x->discard_merges;
        acc->discard_sectors += x->discard_sectors;
        acc->discard_ticks += x->discard_ticks;
        acc->flush_ios += x->flush_ios;
        acc->flush_ticks += x->flush_ticks;
}

static int set_table(Sim *s, SimResult *r, size_t *allocated, uint64_t now, const ApstTable *t) {
        int q = sim_table_check(s->d, t);
        if (q < 0)
                return q;
        s->table = *t;
        return add_reprogram(r, allocated, now, t);
}

/* Mean and percentiles of the added latencies; most are 0 (only the first I/O after a gap
 * waits), so only the others are sorted: the same figures, at a fraction of the cost on a
 * long trace. Reorders @added. */
static void finish_latency(SimResult *r, uint64_t *added, size_t n) {
        double sum = 0;
        size_t nz = 0;

        if (n == 0)
                return;
        for (size_t k = 0; k < n; k++) {
                sum += (double) added[k];
                if (added[k] > 0)
                        added[nz++] = added[k];
        }
        qsort(added, nz, sizeof(uint64_t), cmp_u64);
        r->added_mean_ns = sum / (double) n;
        r->added_p99_ns = percentile(n - nz, added, nz, 990);
        r->added_p999_ns = percentile(n - nz, added, nz, 999);
        r->added_max_ns = nz > 0 ? added[nz - 1] : 0;
}

/* One run beside the drive model: the result being built, the block counters the policy
 * samples, and the sampling clock. */
typedef struct Run {
        Sim s;
        SimResult res;
        size_t allocated;                /* of res.reprograms */
        Counters cnt;
        const SimPolicy *pol;
        const TraceIo *io;
        uint64_t *arr, *comp;            /* per I/O: arrival as issued, completion */
        uint64_t *added;                 /* per I/O: response time over no power management's */
        uint64_t shadow_done;            /* completion of the last I/O without power management */
        uint64_t next_sample, n_samples;
        /* the exact source: gaps whose first request completed, not yet delivered */
        GapHist delta;
        bool pending;                    /* a gap whose first request is still in service */
        uint64_t pending_gap, pending_svc, pending_done;
        size_t completed;                /* I/Os completed by the last delivery */
        bool continued;                  /* SimParams.continued */
        uint64_t first_arr, first_done;  /* the request that ended the last gap: issue, completion */
        uint64_t first_gap;              /* ... and that gap */
        bool hid;                        /* its wake-up hid a request already (gaphist.h) */
        /* SimParams.segments: the one the next I/O belongs to, and the running totals taken at
         * each segment's start and at the end of its window (sim_marks()) */
        const SimSegment *segments;
        size_t n_segments, seg;
        uint64_t window_ns;
        SimFigures *at_start, *at_window;
        bool *window_taken;
        int64_t *added_wall;             /* per segment: its last completion's lateness */
        size_t next_start;               /* segments whose start was not yet taken */
        size_t arrived;                  /* I/Os that arrived so far */
} Run;

/* The running totals now: what SimFigures are differences of. */
static SimFigures run_totals(const Run *run, uint64_t t) {
        return (SimFigures) {
                .energy_j = run->s.energy_uwns / UWNS_PER_J,
                .stall_ns = run->res.stall_ns,
                .wakeups = run->res.wakeups_total,
                .ios = run->arrived,
                .span_ns = t,
        };
}

static SimFigures figures_between(const SimFigures *from, const SimFigures *to) {
        return (SimFigures) {
                .energy_j = to->energy_j - from->energy_j,
                .stall_ns = to->stall_ns - from->stall_ns,
                .wakeups = to->wakeups - from->wakeups,
                .ios = to->ios - from->ios,
                .span_ns = to->span_ns - from->span_ns,
        };
}

/* Take the running totals at every segment start and window end up to @until (no I/O arrives
 * before it), the drive's idle chain walked up to each when it is idle by then (@prev_done: the
 * last completion). A mark passed while the drive serves is taken with the service charged. */
static void run_marks(Run *run, uint64_t until, uint64_t prev_done) {
        for (;;) {
                uint64_t t = UINT64_MAX;
                size_t w = SIZE_MAX;
                bool start = false;

                if (run->next_start < run->n_segments && run->segments[run->next_start].start_ns <= until) {
                        t = run->segments[run->next_start].start_ns;
                        start = true;
                }
                for (size_t i = 0; i < run->next_start && run->window_ns > 0; i++)
                        if (!run->window_taken[i] && run->segments[i].start_ns + run->window_ns <= until &&
                            run->segments[i].start_ns + run->window_ns < t) {
                                t = run->segments[i].start_ns + run->window_ns;
                                w = i;
                                start = false;
                        }
                if (t == UINT64_MAX)
                        return;
                if (t >= prev_done)
                        idle_advance(&run->s, t);
                if (start) {
                        run->at_start[run->next_start] = run_totals(run, t);
                        /* A window that reaches past the next segment's start ends there. */
                        if (run->next_start > 0 && !run->window_taken[run->next_start - 1]) {
                                run->at_window[run->next_start - 1] = run->at_start[run->next_start];
                                run->window_taken[run->next_start - 1] = true;
                        }
                        run->next_start++;
                } else {
                        run->at_window[w] = run_totals(run, t);
                        run->window_taken[w] = true;
                }
        }
}

/* One policy sample at @now; @idle when nothing is in flight then. */
static int run_sample(Run *run, uint64_t now, bool idle) {
        const SimPolicy *pol = run->pol;
        SimBlockStat st;
        ApstTable t;
        int q;

        if (++run->n_samples > SIM_MAX_SAMPLES)
                return -E2BIG;
        if (idle)
                idle_advance(&run->s, now);
        t = run->s.table;
        if (pol->gaps) {
                if (run->pending && run->pending_done <= now) {
                        gaphist_add_gap(&run->delta, run->pending_gap, run->pending_svc);
                        run->pending = false;
                }
                while (run->completed < run->cnt.arrived && run->comp[run->completed] <= now) {
                        run->completed++;
                        run->delta.requests++;
                }
                if (gaphist_total_gaps(&run->delta) == 0 && gaphist_total_hidden(&run->delta) == 0 &&
                    !(pol->recheck && now >= pol->recheck(pol->userdata)))
                        return 0;
                q = pol->gaps(pol->userdata, now, &run->delta, &t);
                run->delta = (GapHist) {};
        } else {
                counters_snapshot(&run->cnt, run->io, run->arr, run->comp, now, &st);
                q = pol->sample(pol->userdata, now, &st, &t);
        }
        if (q <= 0)
                return q;
        q = set_table(&run->s, &run->res, &run->allocated, now, &t);
        if (q < 0)
                return q;
        if (pol->reason)
                pol->reason(pol->userdata, run->res.reprograms[run->res.n_reprograms - 1].reason, SIM_REASON_MAX);
        /* Idle: the admin command restarts the idle timer where the drive rests.
         * Busy: the new chain starts from PS0 at the next completion anyway. */
        if (idle && run->s.phase == PHASE_RESTING)
                run->s.phase_start = now;
        return 0;
}

/* Samples strictly before @until; an arrival at the sample time goes first. */
static int run_samples(Run *run, uint64_t prev_done, uint64_t until) {
        while (run->pol->sample_period_ns > 0 && (run->pol->sample || run->pol->gaps) && run->next_sample < until) {
                run_marks(run, run->next_sample, prev_done);
                int q = run_sample(run, run->next_sample, run->next_sample >= prev_done);

                if (q < 0)
                        return q;
                run->next_sample += run->pol->sample_period_ns;
        }
        return 0;
}

/* The exact source: the trace's last gap, whose request completed with the trace (@last_done),
 * is handed over then; a table the policy answers with is where a later copy starts. */
static int run_last_gap(Run *run, uint64_t last_done) {
        if (!run->pol->gaps || !run->pending)
                return 0;
        return run_sample(run, last_done, false);
}

/* An arrival at @a finds the drive idle: walk the chain, then wake if asleep.
 * Return when service starts. */
static uint64_t wake_for_arrival(Sim *s, SimResult *res, uint64_t a) {
        uint64_t wait;

        idle_advance(s, a);
        wait = wake_wait(s);
        if (s->ps != 0 || s->phase == PHASE_ENTERING) {
                res->wakeups[s->ps]++;
                res->wakeups_total++;
        }
        res->stall_ns += wait;
        res->transition_ns += wait;
        charge(s, s->d->ps[0].power_uw, wait);
        if (wait > 0)
                note(s, a, s->ps, SIM_ACTIVITY_EXIT);
        note(s, a + wait, 0, SIM_ACTIVITY_SERVE);
        return a + wait;
}

/* The exact source: a gap of @gap_ns ended; its first request takes @svc_ns and completes at
 * @done_ns. The previous gap's first request completed by now. */
static void gap_ended(Run *run, uint64_t gap_ns, uint64_t svc_ns, uint64_t done_ns) {
        if (run->pending)
                gaphist_add_gap(&run->delta, run->pending_gap, run->pending_svc);
        run->pending = true;
        run->pending_gap = gap_ns;
        run->pending_svc = svc_ns;
        run->pending_done = done_ns;
}

/* Serve I/O @k issued at @a: after a wake-up if the drive was idle, else behind the previous one. */
static void run_io(Run *run, size_t k, uint64_t a, uint64_t service_ns) {
        uint64_t prev_done = k > 0 ? run->comp[k - 1] : 0, start;

        if (k == 0 || a >= prev_done) {
                start = wake_for_arrival(&run->s, &run->res, a);
                /* The exact source counts the gap that ended here, with this request's
                 * service time once it completes (the previous gap's completed by now);
                 * a later copy's first request ends the gap since the copy before. */
                if (k > 0 || run->continued)
                        gap_ended(run, a - prev_done, start + service_ns - a, start + service_ns);
                /* (as the program: no gap ended, no wait to hide requests in) */
                run->first_arr = a;
                run->first_done = k > 0 || run->continued ? start + service_ns : 0;
                run->first_gap = a - prev_done;
                run->hid = false;
                /* A new busy period: close the previous one for io_ticks. */
                if (k > 0)
                        run->cnt.busy_closed_ns += prev_done - run->cnt.busy_start;
                run->cnt.busy_start = a;
        } else {
                start = prev_done;
                note(&run->s, start, 0, SIM_ACTIVITY_SERVE);
                /* The exact source: issued while the gap's first request still waits for the
                 * drive, a gap the wake-up hid (SimPolicy.hide_floor_ns, gaphist.h). */
                for (unsigned f = 0; a < run->first_done && f < run->pol->hide_floors && f < GAP_HIDE_FLOORS; f++) {
                        uint64_t from = MAX(run->arr[k - 1], run->first_arr + run->pol->hide_floor_ns[f]);
                        if (a <= from)
                                break;
                        if (f == 0 && !run->hid && a - from >= GAP_HIDDEN_MIN_NS) {
                                run->hid = true;
                                gaphist_add_hidden_after(&run->delta, run->first_gap);
                        }
                        gaphist_add_hidden(&run->delta, f, a - from);
                }
        }

        run->comp[k] = start + service_ns;
        run->arr[k] = a;
        charge(&run->s, run->s.d->ps[0].power_uw, service_ns);
        run->cnt.arrived++;
        run->cnt.sum_arrival_ns += (double) a;

        /* The chain restarts from PS0 at this completion (until the next arrival says otherwise). */
        run->s.t_acc = run->comp[k];
        run->s.ps = 0;
        run->s.phase = PHASE_RESTING;
        run->s.phase_start = run->comp[k];
        note(&run->s, run->comp[k], 0, SIM_ACTIVITY_REST);
}

/* Totals once every I/O completed; @shadow_done is the last completion without power management. */
static void finish_result(Run *run, size_t n, uint64_t *added, uint64_t shadow_done) {
        SimResult *res = &run->res;

        res->ios = n;
        res->duration_ns = n > 0 ? run->comp[n - 1] : 0;
        res->energy_j = run->s.energy_uwns / UWNS_PER_J;
        res->mean_power_w = res->duration_ns > 0 ? res->energy_j / ((double) res->duration_ns * 1e-9) : 0;
        memcpy(res->resident_ns, run->s.resident_ns, sizeof res->resident_ns);
        res->transition_ns += run->s.transition_ns;
        res->added_wall_ns = n > 0 ? (int64_t) (run->comp[n - 1] - shadow_done) : 0;
        finish_latency(res, added, n);
        if (run->pol->sample)   /* only a policy that reads the counters carries them on */
                counters_snapshot(&run->cnt, run->io, run->arr, run->comp, res->duration_ns, &res->end_stat);
}

/* Each segment's figures, once every I/O completed at @end_ns (the marks not reached by then are
 * taken now). */
static int finish_segments(Run *run, uint64_t end_ns, const int64_t *added_wall) {
        SimSegmentResult *r;
        SimFigures end;

        if (run->n_segments == 0)
                return 0;
        run_marks(run, end_ns, end_ns);
        end = run_totals(run, end_ns);
        r = calloc(run->n_segments, sizeof(SimSegmentResult));
        if (!r)
                return -ENOMEM;
        for (size_t i = 0; i < run->n_segments; i++) {
                const SimFigures *to = i + 1 < run->n_segments ? &run->at_start[i + 1] : &end;
                r[i].whole = figures_between(&run->at_start[i], to);
                r[i].window = figures_between(&run->at_start[i], run->window_taken[i] ? &run->at_window[i] : to);
                r[i].added_wall_ns = added_wall[i];
        }
        run->res.segments = r;
        run->res.n_segments = run->n_segments;
        return 0;
}

/* The per-I/O and per-segment buffers of @run; run_release() frees them. */
static int run_alloc(Run *run, size_t n) {
        if (n > 0) {
                run->arr = calloc(n, sizeof(uint64_t));
                run->comp = calloc(n, sizeof(uint64_t));
                run->added = calloc(n, sizeof(uint64_t));
                if (!run->arr || !run->comp || !run->added)
                        return -ENOMEM;
        }
        if (run->n_segments > 0) {
                run->at_start = calloc(run->n_segments, sizeof(SimFigures));
                run->at_window = calloc(run->n_segments, sizeof(SimFigures));
                run->window_taken = calloc(run->n_segments, sizeof(bool));
                run->added_wall = calloc(run->n_segments, sizeof(int64_t));
                if (!run->at_start || !run->at_window || !run->window_taken || !run->added_wall)
                        return -ENOMEM;
        }
        return 0;
}

static void run_release(Run *run) {
        free(run->arr);
        free(run->comp);
        free(run->added);
        free(run->at_start);
        free(run->at_window);
        free(run->window_taken);
        free(run->added_wall);
}

/* When I/O @k arrives: as recorded, or in closed loop as late as the one before completed late. */
static uint64_t run_arrival(Run *run, size_t k, const SimParams *p) {
        bool closed = p->closed_loop;
        size_t first = 0;

        if (run->n_segments > 0) {
                while (run->seg + 1 < run->n_segments && run->segments[run->seg + 1].first <= k)
                        run->seg++;
                closed = run->segments[run->seg].closed_loop;
                first = run->segments[run->seg].first;
        }
        if (closed && k > first)
                return run->io[k].t_ns + (run->comp[k - 1] - run->shadow_done);
        return run->io[k].t_ns;
}

/* The same I/O @k with no power management (open loop, original arrival), and what power
 * management added to its response time, >= 0 (see doc/simulator.md). */
static void run_shadow(Run *run, size_t k, uint64_t a, uint64_t service_ns) {
        uint64_t shadow_arrival = run->io[k].t_ns;

        run->shadow_done = MAX(shadow_arrival, k > 0 ? run->shadow_done : 0) + service_ns;
        uint64_t resp = run->comp[k] - a, shadow_resp = run->shadow_done - shadow_arrival;
        run->added[k] = resp > shadow_resp ? resp - shadow_resp : 0;
        if (run->n_segments > 0)
                run->added_wall[run->seg] = (int64_t) (run->comp[k] - run->shadow_done);
}

/* Every I/O in order, with the samples and gap deliveries due before each. */
static int run_all(Run *run, size_t n, const SimParams *p) {
        for (size_t k = 0; k <= n; k++) {
                uint64_t prev_done = k > 0 ? run->comp[k - 1] : 0;
                uint64_t a = k < n ? run_arrival(run, k, p) : 0;
                /* after the last I/O: the trailing samples, up to the last completion */
                uint64_t until = k < n ? a : prev_done;
                int q;

                q = run_samples(run, prev_done, until);
                if (q >= 0 && k == n)
                        q = run_last_gap(run, prev_done);
                if (q < 0)
                        return q;
                if (k == n)
                        break;
                run_marks(run, a, prev_done);
                run_io(run, k, a, p->service_ns);
                run->arrived++;
                run_shadow(run, k, a, p->service_ns);
        }
        return 0;
}

static int run_play(Run *run, size_t n, const SimParams *p) {
        ApstTable t = {};
        int q;

        q = run_alloc(run, n);
        if (q < 0)
                return q;
        q = run->pol->start(run->pol->userdata, &t);
        if (q < 0)
                return q;
        q = set_table(&run->s, &run->res, &run->allocated, 0, &t);
        if (q < 0)
                return q;
        note(&run->s, 0, 0, SIM_ACTIVITY_REST);
        q = run_all(run, n, p);
        if (q < 0)
                return q;
        q = run->s.tl_error;
        if (q < 0)
                return q;
        q = finish_segments(run, n > 0 ? run->comp[n - 1] : 0, run->added_wall);
        if (q < 0)
                return q;
        finish_result(run, n, run->added, run->shadow_done);
        return 0;
}

int sim_run(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p, const SimPolicy *pol,
            SimResult *ret) {
        Run run = {
                .s = { .d = d, .phase = PHASE_RESTING, .record = p->timeline },
                .pol = pol,
                .io = io,
                .next_sample = pol->sample_period_ns,
                .continued = p->continued,
                .segments = p->segments,
                .n_segments = p->n_segments,
                .window_ns = p->window_ns,
        };
        int q;

        q = check_input(d, io, n, p);
        if (q < 0)
                return q;
        q = run_play(&run, n, p);
        run_release(&run);
        if (q < 0) {
                free(run.res.reprograms);
                free(run.res.segments);
                free(run.s.tl);
                return q;
        }
        run.res.timeline = run.s.tl;
        run.res.n_timeline = run.s.n_tl;
        *ret = run.res;
        return 0;
}

/* A policy played a later copy of the trace: its clock and counters carry on from the
 * copies before (sim_run_repeat()). */
typedef struct Later {
        const SimPolicy *inner;
        uint64_t offset_ns;        /* the earlier copies' durations */
        SimBlockStat base;         /* the counters at the end of the earlier copies */
} Later;

static int later_start(void *userdata, ApstTable *ret_table) {
        const Later *l = userdata;

        return l->inner->start(l->inner->userdata, ret_table);
}

static int later_sample(void *userdata, uint64_t now_ns, const SimBlockStat *st, ApstTable *ret_table) {
        const Later *l = userdata;
        SimBlockStat sum = l->base;

        stat_add(&sum, st);
        return l->inner->sample(l->inner->userdata, now_ns + l->offset_ns, &sum, ret_table);
}

static int later_gaps(void *userdata, uint64_t now_ns, const GapHist *delta, ApstTable *ret_table) {
        const Later *l = userdata;

        return l->inner->gaps(l->inner->userdata, now_ns + l->offset_ns, delta, ret_table);
}

static uint64_t later_recheck(void *userdata) {
        const Later *l = userdata;
        uint64_t t = l->inner->recheck(l->inner->userdata);

        return t == UINT64_MAX ? t : t > l->offset_ns ? t - l->offset_ns : 0;
}

static void later_reason(void *userdata, char *buf, size_t n) {
        const Later *l = userdata;

        l->inner->reason(l->inner->userdata, buf, n);
}

int sim_run_repeat(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p, const SimPolicy *pol,
                   unsigned copies, SimResult *ret, SimResult *ret_first) {
        SimParams quiet = *p;
        Later later = { .inner = pol };
        SimPolicy wrapped = {
                .name = pol->name,
                .sample_period_ns = pol->sample_period_ns,
                .start = later_start,
                .sample = pol->sample ? later_sample : NULL,
                .gaps = pol->gaps ? later_gaps : NULL,
                .recheck = pol->recheck ? later_recheck : NULL,
                .reason = pol->reason ? later_reason : NULL,
                .userdata = &later,
        };
        SimResult first = {};
        int q;

        wrapped.hide_floors = pol->hide_floors;
        memcpy(wrapped.hide_floor_ns, pol->hide_floor_ns, sizeof wrapped.hide_floor_ns);
        if (copies < 1 || copies > SIM_COPIES_MAX)
                return -EINVAL;
        SimParams last = *p;

        quiet.timeline = false;   /* only the scored copy's picture is asked for */
        /* Every copy but the first starts where the one before ended (its last completion). */
        last.continued = copies > 1;
        for (unsigned c = 1; c < copies; c++) {
                SimResult r;

                quiet.continued = c > 1;
                q = sim_run(d, io, n, &quiet, &wrapped, &r);
                if (q < 0)
                        goto fail;
                later.offset_ns += r.duration_ns;
                stat_add(&later.base, &r.end_stat);
                if (c == 1 && ret_first)
                        first = r;
                else
                        sim_result_done(&r);
        }
        q = sim_run(d, io, n, &last, &wrapped, ret);
        if (q < 0)
                goto fail;
        if (copies > 1 && ret_first)
                *ret_first = first;
        return 0;
fail:
        sim_result_done(&first);
        return q;
}

double sim_gap_optimum(const SimDrive *d, uint64_t gap_ns, unsigned *ret_state) {
        double best = (double) d->ps[0].power_uw * (double) gap_ns;
        unsigned best_state = 0;

        for (unsigned i = 1; i <= d->npss && i < APST_ENTRIES; i++) {
                const SimState *st = &d->ps[i];
                uint64_t tr = ((uint64_t) st->enlat_us + st->exlat_us) * NS_PER_US;
                if (!st->non_operational || tr > gap_ns)
                        continue;
                double e = (double) d->ps[0].power_uw * (double) tr + (double) st->power_uw * (double) (gap_ns - tr);
                if (e < best) {
                        best = e;
                        best_state = i;
                }
        }
        if (ret_state)
                *ret_state = best_state;
        return best / UWNS_PER_J;
}

int sim_optimum(const SimDrive *d, const TraceIo *io, size_t n, const SimParams *p, SimResult *ret) {
        SimResult res = {};
        double energy_j = 0;
        uint64_t done = 0;
        int q;

        q = check_input(d, io, n, p);
        if (q < 0)
                return q;
        for (size_t k = 0; k < n; k++) {
                if (io[k].t_ns > done) {
                        uint64_t gap = io[k].t_ns - done;
                        unsigned st;
                        energy_j += sim_gap_optimum(d, gap, &st);
                        if (st != 0) {
                                uint64_t tr = ((uint64_t) d->ps[st].enlat_us + d->ps[st].exlat_us) * NS_PER_US;
                                res.wakeups[st]++;
                                res.wakeups_total++;
                                res.resident_ns[st] += gap - tr;
                                res.transition_ns += tr;
                        } else
                                res.resident_ns[0] += gap;
                        done = io[k].t_ns;
                }
                done += p->service_ns;
                energy_j += (double) d->ps[0].power_uw * (double) p->service_ns / UWNS_PER_J;
        }
        res.ios = n;
        res.duration_ns = done;
        res.energy_j = energy_j;
        res.mean_power_w = done > 0 ? energy_j / ((double) done * 1e-9) : 0;
        *ret = res;
        return 0;
}

static int static_start(void *userdata, ApstTable *ret_table) {
        *ret_table = *(const ApstTable *) userdata;
        return 0;
}

void sim_policy_static(SimPolicy *ret, const char *name, const ApstTable *table) {
        *ret = (SimPolicy) {
                .name = name,
                .start = static_start,
                .userdata = (void *) table,
        };
}

void sim_result_done(SimResult *r) {
        if (!r)
                return;
        free(r->reprograms);
        free(r->timeline);
        free(r->segments);
        *r = (SimResult) {};
}
