/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's I/O watcher glue (see manager-watch.h): one sd-event timer per
 * watched controller on CLOCK_MONOTONIC, re-armed at the time the watcher
 * (watch.h) or the adaptive policy (adapt.h) wants its next reading, with
 * accuracy slack (watch_arm()) so that the timers of several controllers, and
 * of other programs, coalesce into one wake-up. A reading is the block
 * counters of the controller's namespaces (sysfs_ctrl_block_stat(): a sysfs
 * read, never a command to the drive). The watcher samples every 50 ms while
 * I/O happens and backs off to 5 s when idle, so an idle daemon wakes at most
 * 0.2 times a second however many controllers it watches.
 *
 * One watcher serves three users:
 *  - policy = adaptive: adapt_feed() may return a new table; it is written
 *    through the engine (controller_program()) and logged with its reason;
 *  - [cpu] pin = busy: any I/O seen is reported to cpupin_busy_hook(), and the
 *    timer also fires at the hook's release deadline;
 *  - verification: a watched controller that did I/O is re-checked at most
 *    every verify interval from here, so the verify timer need not wake for it.
 * What the policy learned lives in the Adapt (kept across resets, resume and
 * reloads) and in the engine's learned table; both are dropped only when the
 * configuration for that controller changed.
 *
 * Two sources ([watch] source, doc/watch.md). stat: the sampler above. bpf: the
 * eBPF program (bpfwatch.h) counts every idle gap of the controller's namespace
 * disks in the kernel; the timer reads its maps every ADAPT_GAPS_PERIOD_NS
 * while gaps end (when the policy decides), then backs off by doubling to
 * WATCH_BPF_IDLE_NS, on that period's grid of the monotonic clock (watch_idle_next()), so
 * that the idle readings of every controller come in the same wake-up: an idle daemon wakes
 * once in 20 s however many controllers it watches. Each delta
 * goes to adapt_observe_gaps() and to the passive calibration (passive-calib.h),
 * whose exit latencies the engine then plans with like a stored calibration's.
 * Where the program cannot load, the sampler takes over and the reason is said
 * once.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "adapt.h"
#include "apstd-ids.h"
#include "learned-store.h"
#include "bpfwatch.h"
#include "gaphist.h"
#include "log.h"
#include "manager-watch.h"
#include "passive-calib.h"
#include "quarantine.h"
#include "sysfs.h"
#include "watch.h"

#define NS_PER_USEC UINT64_C(1000)
#define WATCH_ACCURACY_MIN_USEC UINT64_C(1000)
#define WATCH_ACCURACY_LONG_USEC UINT64_C(1000000)
/* The eBPF source's longest wait between two readings of an idle disk: what it counts is exact
 * whenever it is read, so the wait only delays a decision; 20 s, on one grid for every
 * controller (watch_idle_next()), keeps an idle daemon at 0.05 wake-ups a second with any number
 * of controllers. */
#define WATCH_BPF_IDLE_NS UINT64_C(20000000000)
/* The shadow kernel's totals reach the metrics file at most this often while gaps end, and once
 * when they stop: nothing else writes it while the policy keeps its table, and an idle daemon
 * writes nothing. */
#define WATCH_METRICS_NS UINT64_C(10000000000)
/* Namespaces of one controller the program tells apart (bpfwatch.h: a slot's disks). */
#define WATCH_BPF_DISKS 32u
/* A passive estimate replans when it moved by more than this share from the one planned with. */
#define WATCH_PCAL_REPLAN_CHANGE 0.25

struct ManagerWatch {
        ManagerCtrl *ctrl;
        sd_event_source *timer;
        Adapt *adapt;              /* policy = adaptive; its own Watch is the watcher */
        ApstParams params;         /* what adapt was started with */
        ShadowReport report;       /* the journal's account of the shadow kernel's figures */
        Watch watch;               /* the watcher without the policy (pin = busy only) */
        bool known;                /* last_ios holds a reading */
        uint64_t last_ios;
        uint64_t verify_ios;       /* the I/O count at the last verification look */
        uint64_t verify_due_usec;
        /* what a failure is judged by (quarantine_idle()), either source */
        uint64_t last_done_usec;   /* stat: the first look that saw the last completion (0 = none seen) */
        QuarantineIdleMark idle_mark;

        /* source = bpf */
        AdaptSource source;
        bool no_bpf;               /* its disks cannot be watched with the program: the sampler for good */
        int slot;                  /* the program's slot for this controller's disks; -1 = none */
        GapHist last_hist;         /* the previous reading (cumulative since the slot was made) */
        uint64_t last_issued;
        unsigned idle_reads;       /* readings in a row without I/O: the wait doubles */
        uint64_t next_usec;
        uint64_t total_requests;   /* since the watcher (re)started */
        uint64_t total_excess_ns;  /* first requests' service beyond an awake one's: the wake-ups paid */
        PassiveCalib pcal;
        uint32_t pcal_logged;      /* states whose disagreement with the descriptor was said */
        bool metrics_due;          /* gaps accounted since the metrics file was last brought up to date */
        uint64_t metrics_usec;     /* when it was */
        uint64_t learned_usec;     /* when what the policy learned was last kept (or taken up) */
        double learned_gaps;       /* and how many gaps it had seen then */
};

static Watch *watcher(ManagerWatch *w) {
        return w->adapt ? &w->adapt->watch : &w->watch;
}

bool manager_watch_observed(const ManagerCtrl *c, uint64_t *ret_ios, uint64_t *ret_stall_us) {
        const ManagerWatch *w = c->watch;
        const Watch *x;

        *ret_ios = 0;
        *ret_stall_us = 0;
        if (!w)
                return false;
        if (w->source == ADAPT_SOURCE_BPF) {
                *ret_ios = w->total_requests;
                *ret_stall_us = (w->total_excess_ns + 500) / 1000;
                return true;
        }
        x = w->adapt ? &w->adapt->watch : &w->watch;
        *ret_ios = x->total_ios;
        *ret_stall_us = x->total_wake_ms > 0 ? (uint64_t) (x->total_wake_ms * 1000.0 + 0.5) : 0;
        return true;
}

bool manager_watch_idle_usec(const ManagerCtrl *c, uint64_t now_usec, uint64_t *ret) {
        const ManagerWatch *w = c->watch;
        const Manager *m = c->manager;

        if (!w)
                return false;
        /* A look now, not at the watcher's next reading: the I/O of the last few seconds counts. */
        if (w->source == ADAPT_SOURCE_BPF) {
                BpfSlotState st;
                GapHist h;

                if (w->slot < 0 || bpfwatch_read(m->bpf, (unsigned) w->slot, &h, &st) < 0)
                        return false;
                return quarantine_idle(&w->idle_mark, now_usec, st.inflight, h.requests,
                                       st.idle_since_ns / NS_PER_USEC, ret);
        }
        WatchStat st;
        if (!w->known || sysfs_ctrl_block_stat(m->sysfs_root, c->controller.name, &st) < 0)
                return false;
        /* completions since the last look: somewhere up to now, so now (the drive was awake) */
        return quarantine_idle(&w->idle_mark, now_usec, st.in_flight, st.ios,
                               st.ios != w->last_ios ? now_usec : w->last_done_usec, ret);
}

/* A look that found nothing in flight: the disk idle since @idle_usec, with @done completions counted. */
static void idle_mark_take(ManagerWatch *w, uint64_t idle_usec, uint64_t done) {
        w->idle_mark = (QuarantineIdleMark) { .idle_seen = true, .idle_usec = idle_usec, .idle_done = done };
}

void manager_watch_savings(const ManagerCtrl *c, ManagerSavings *ret) {
        const ManagerWatch *w = c->watch;

        *ret = (ManagerSavings) {};
        if (!w)
                return;
        ret->source = manager_watch_source(c);
        if (!w->adapt || w->source != ADAPT_SOURCE_BPF || w->adapt->source != ADAPT_SOURCE_BPF)
                return;
        ret->known = true;
        adapt_savings(w->adapt, &ret->total_applied, &ret->total_kernel, &ret->window_applied, &ret->window_kernel);
        ret->fallbacks = w->adapt->shadow.fallbacks;
}

/* The event loop's time of this iteration (sd_event_now()), not a fresh reading (clock.h's now_usec()). */
static uint64_t loop_now_usec(const Manager *m) {
        uint64_t t = 0;

        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &t);
        return t;
}

/* What the adaptive policy learned on the exact source outlives the daemon: kept per drive in
 * the state directory (learned.h) when the policy stops, taken up when it starts. The stat
 * source learns nothing that file keeps, so it never overwrites one. */
static void learned_keep(ManagerWatch *w) {
        const char *dir = w->ctrl->manager->state_dir;
        Learned l;
        int r;

        if (!w->adapt || w->adapt->source != ADAPT_SOURCE_BPF || !dir || !*dir)
                return;
        adapt_learned_capture(w->adapt, &l);
        r = learned_save(dir, &l);
        if (r < 0)
                log_warning_errno(r, "%s: cannot keep what the adaptive policy learned: %m",
                                  w->ctrl->controller.name);
}

/* A crash, or a drive that hangs the machine in a deep state, loses what was learned since the
 * last keep: while the policy learns, keep it at most every learned_keep_usec, at a reading that
 * saw gaps end (the disks were just busy, so the write seldom wakes one that sleeps), and only
 * when it has seen gaps since. */
static void learned_keep_while_learning(ManagerWatch *w, uint64_t now) {
        if (!w->adapt || w->adapt->gaps_seen <= w->learned_gaps ||
            now - w->learned_usec < w->ctrl->manager->learned_keep_usec)
                return;
        learned_keep(w);
        w->learned_usec = now;
        w->learned_gaps = w->adapt->gaps_seen;
}

static void learned_take(ManagerWatch *w) {
        const Controller *ct = &w->ctrl->controller;
        const IdCtrl *id = &ct->plan.plan_id;
        const char *dir = w->ctrl->manager->state_dir;
        _cleanup_free_ char *err = NULL;
        Learned l;
        int r;

        if (!dir || !*dir)
                return;
        r = learned_load(dir, id->model, id->firmware, learned_serial_hash(id->serial), &l, &err);
        if (r == -ENOENT)
                return;
        if (r >= 0)
                r = adapt_learned_restore(w->adapt, &l);
        if (r < 0)
                log_warning_errno(r, "%s: not taking up what the adaptive policy learned before: %s", ct->name,
                                  err ? err : strerror(-r));
        else
                log_debug("%s: the adaptive policy takes up what it learned before (%" PRIu64 " gaps).", ct->name,
                          l.gaps_seen);
}

static void adapt_stop(ManagerWatch *w) {
        learned_keep(w);
        free(w->adapt);
        w->adapt = NULL;
}

const char *manager_watch_source(const ManagerCtrl *c) {
        return c->watch ? adapt_source_to_string(c->watch->source) : NULL;
}

static void bpf_release_slot(ManagerWatch *w) {
        Manager *m = w->ctrl->manager;

        if (w->slot >= 0 && m->bpf)
                bpfwatch_slot_release(m->bpf, (unsigned) w->slot);
        w->slot = -1;
}

ManagerWatch *manager_watch_free(ManagerWatch *w) {
        if (!w)
                return NULL;
        bpf_release_slot(w);
        sd_event_source_disable_unref(w->timer);
        adapt_stop(w);
        free(w);
        return NULL;
}

/* While I/O happens the readings keep close to the watcher's times (a fifth of the wait as
 * slack); once it waits a second or more, half the wait: the timers of all controllers (and
 * of other programs, on sd-event's shared grid) then fall into one wake-up, and an idle
 * reading due every 5 s comes every 5 to 7.5 s. With pin = busy the first I/O after an idle
 * spell is what pins the CPUs: at most a second of slack, an idle reading every 5 to 6 s. */
static void watch_arm(ManagerWatch *w, uint64_t now, uint64_t due) {
        bool prompt = w->ctrl->manager->config.cpu.pin == CPU_PIN_BUSY;
        uint64_t acc, wait;

        if (due <= now)
                due = now + WATCH_ACCURACY_MIN_USEC;
        wait = due - now;
        if (wait >= WATCH_ACCURACY_LONG_USEC)
                acc = prompt ? MIN(wait / 5, WATCH_ACCURACY_LONG_USEC) : MIN(wait / 2, WATCH_SLOW_NS / NS_PER_USEC / 2);
        else
                acc = MAX(wait / 5, WATCH_ACCURACY_MIN_USEC);
        (void) sd_event_source_set_time(w->timer, due);
        (void) sd_event_source_set_time_accuracy(w->timer, acc);
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT);
}

static void fmt_pct(char *buf, size_t n, double share) {
        (void) snprintf(buf, n, "%.3f", 100.0 * share);
}

static void log_decision(const ManagerCtrl *c, const AdaptDecision *d) {
        const Controller *ct = &c->controller;
        char hex[32 * 19 + 1], obs[24], exp[24], kern[24], budget[24], energy[24], rate[24], gap[24], xf[24],
                wake[16], hidden[24], bucket[24];

        apst_table_to_hex(&d->table, hex, sizeof hex);
        fmt_pct(obs, sizeof obs, d->observed_stall);
        fmt_pct(exp, sizeof exp, d->expected_stall);
        fmt_pct(kern, sizeof kern, d->kernel_stall);
        (void) snprintf(budget, sizeof budget, "%.2f", ct->plan.params.stall_budget_pct_x100 / 100.0);
        (void) snprintf(energy, sizeof energy, "%.3f", d->energy_vs_kernel);
        (void) snprintf(rate, sizeof rate, "%.2f", d->io_rate);
        (void) snprintf(gap, sizeof gap, "%" PRIu64, d->median_gap_ns / 1000000u);
        (void) snprintf(xf, sizeof xf, "%.2f", d->exlat_factor);
        (void) snprintf(wake, sizeof wake, "%" PRIu32, apst_worst_wake_us(&d->table, &ct->plan.plan_id));
        (void) snprintf(hidden, sizeof hidden, "%.0f", d->hidden_gaps);
        (void) snprintf(bucket, sizeof bucket, "%.1f", d->bucket_ms);
        log_event(LOG_INFO, 0, MSGID_ADAPT_TABLE,
                  LOG_FIELDS({ "NVME_CTRL", ct->name }, { "NVME_MODEL", controller_model(ct) },
                             { "NVME_FIRMWARE", controller_firmware(ct) }, { "APST_POLICY", "adaptive" },
                             { "APST_REASON", d->backoff ? "backoff" : "adaptive" },
                             { "APST_STALL_BUCKET_MS", bucket }, { "APST_OBSERVED_STALL_PCT", obs },
                             { "APST_EXPECTED_STALL_PCT", exp }, { "APST_KERNEL_STALL_PCT", kern },
                             { "APST_STALL_BUDGET_PCT", budget }, { "APST_ENERGY_VS_KERNEL", energy },
                             { "APST_IO_RATE", rate }, { "APST_MEDIAN_GAP_MS", gap }, { "APST_EXLAT_FACTOR", xf },
                             { "APST_WORST_WAKE_US", wake }, { "APST_HIDDEN_GAPS", hidden }, { "APST_TABLE", hex }),
                  "%s: adaptive policy chose a new APST table: %s.", ct->name, d->reason);
}

static void log_guard(const ManagerCtrl *c, const AdaptDecision *d, const Shadow *sh) {
        const Controller *ct = &c->controller;
        ShadowSums a, k;
        char e[24], ke[24], w[24], kw[24];

        shadow_window(sh, &a, &k);
        (void) snprintf(e, sizeof e, "%.3f", a.energy_uwns / 1e15);
        (void) snprintf(ke, sizeof ke, "%.3f", k.energy_uwns / 1e15);
        (void) snprintf(w, sizeof w, "%.6f", a.wake_ns / 1e9);
        (void) snprintf(kw, sizeof kw, "%.6f", k.wake_ns / 1e9);
        log_event(LOG_NOTICE, 0, MSGID_ADAPT_GUARD,
                  LOG_FIELDS({ "NVME_CTRL", ct->name }, { "NVME_MODEL", controller_model(ct) },
                             { "NVME_FIRMWARE", controller_firmware(ct) }, { "APST_POLICY", "adaptive" },
                             { "APST_REASON", "guard" }, { "APST_ENERGY_J", e }, { "APST_KERNEL_ENERGY_J", ke },
                             { "APST_WAKE_DELAY_S", w }, { "APST_KERNEL_WAKE_DELAY_S", kw }),
                  "%s: %s.", ct->name, d->reason);
}

/* The drive's account since the last one, when due (shadow_report_due()). */
static void log_account(ManagerWatch *w, uint64_t now_ns) {
        const Controller *ct = &w->ctrl->controller;
        const Shadow *sh = &w->adapt->shadow;
        ShadowSums a, k;
        char words[200], res[256], tr[24], e[24], ke[24], wd[24], kwd[24], per[24];

        if (!w->report.started)
                shadow_report_init(&w->report, sh, now_ns);
        if (!shadow_report_due(&w->report, sh, now_ns))
                return;
        shadow_report_period(&w->report, sh, &a, &k);
        shadow_describe(&a, &k, words, sizeof words);
        shadow_residency_describe(&a, res, sizeof res);
        (void) snprintf(tr, sizeof tr, "%.0f", a.entries);
        (void) snprintf(e, sizeof e, "%.3f", a.energy_uwns / 1e15);
        (void) snprintf(ke, sizeof ke, "%.3f", k.energy_uwns / 1e15);
        (void) snprintf(wd, sizeof wd, "%.6f", a.wake_ns / 1e9);
        (void) snprintf(kwd, sizeof kwd, "%.6f", k.wake_ns / 1e9);
        (void) snprintf(per, sizeof per, "%.0f", (double) (now_ns - w->report.last_ns) / 1e9);
        log_event(LOG_INFO, 0, MSGID_APST_SAVINGS,
                  LOG_FIELDS({ "NVME_CTRL", ct->name }, { "NVME_MODEL", controller_model(ct) },
                             { "NVME_FIRMWARE", controller_firmware(ct) }, { "APST_POLICY", "adaptive" },
                             { "APST_SAVINGS", words }, { "APST_RESIDENCY", res }, { "APST_TRANSITIONS", tr },
                             { "APST_ENERGY_J", e }, { "APST_KERNEL_ENERGY_J", ke }, { "APST_WAKE_DELAY_S", wd },
                             { "APST_KERNEL_WAKE_DELAY_S", kwd }, { "APST_PERIOD_S", per }),
                  "%s: in the last %s s: %s; idle in %s; %s state entries.", ct->name, per, words, res, tr);
        shadow_report_mark(&w->report, sh, now_ns);
}

/* At most every verify interval, a controller that did I/O since the last look (@ios, its count of
 * I/Os so far, moved): it was awake. */
static bool verify_due(ManagerWatch *w, uint64_t now, uint64_t ios) {
        const Manager *m = w->ctrl->manager;
        bool due;

        if (now < w->verify_due_usec)
                return false;
        due = ios != w->verify_ios && w->ctrl->controller.have_written;
        w->verify_ios = ios;
        w->verify_due_usec = now + m->verify_interval_usec;
        return due;
}

/* [cpu] pin = busy: the tick's news for the pin. *@deadline is lowered to when the pin wants
 * to hear again (its release time). */
static void busy_hook(Manager *m, bool busy, uint64_t now, uint64_t *deadline) {
        bool was;

        if (!m->cpupin || m->config.cpu.pin != CPU_PIN_BUSY)
                return;
        was = cpupin_is_pinned(m->cpupin);
        (void) cpupin_busy_hook(m->cpupin, busy, now, deadline);
        if (cpupin_is_pinned(m->cpupin) != was)
                manager_publish(m, NULL);   /* pinned or released */
}

/* What a tick decided: the adaptive policy's new table (logged with why), else a look whether the
 * table is still in force. The engine step runs in the controller's thread; what it did is
 * published when it is back. */
static void tick_act(ManagerWatch *w, bool program, const AdaptDecision *why, const ApstTable *table,
                     bool verify) {
        ManagerCtrl *c = w->ctrl;

        if (program && apst_worst_wake_us(table, &c->controller.id) > c->controller.plan.params.max_latency_us) {
                /* a latency hold lowered the budget: the policy goes on observing, its choice waits */
                log_debug("%s: the adaptive policy's choice wakes slower than the held budget (%" PRIu32 " us); "
                          "not written.", c->controller.name, c->controller.plan.params.max_latency_us);
                program = false;
        }
        if (program) {
                if (why->guard)
                        log_guard(c, why, &w->adapt->shadow);
                else
                        log_decision(c, why);
                manager_ctrl_program(c, table, "adaptive");
        } else if (verify)
                manager_ctrl_verify(c);
}

/* Say once per state when a passive estimate disagrees with the descriptor, and hand estimates that
 * exceed what the plan uses to the engine. Return whether the controller should be planned again. */
static bool pcal_review(ManagerWatch *w, const PassiveCalibReach *reach) {
        Controller *ct = &w->ctrl->controller;
        bool replan = false;

        for (unsigned k = 0; k < reach->n; k++) {
                unsigned ps = reach->state[k];
                uint32_t adv = ct->id.psd[ps].exlat_us, old = ct->passive_exlat_us[ps];
                char meas[24], advs[24], n[24], awake[24], pss[8];
                PassiveCalibEstimate e;
                uint64_t us;

                if (passive_calib_estimate(&w->pcal, ps, &e) < 0)
                        continue;
                us = (e.exlat_ns + 999) / 1000;
                if (!(w->pcal_logged & (1u << ps)) && passive_calib_disagrees(e.exlat_ns, adv)) {
                        w->pcal_logged |= 1u << ps;
                        (void) snprintf(pss, sizeof pss, "ps%u", ps);
                        (void) snprintf(meas, sizeof meas, "%" PRIu64, us);
                        (void) snprintf(advs, sizeof advs, "%" PRIu32, adv);
                        (void) snprintf(n, sizeof n, "%" PRIu64, e.samples);
                        (void) snprintf(awake, sizeof awake, "%" PRIu64, (e.awake_mean_ns + 500) / 1000);
                        log_event(LOG_NOTICE, 0, MSGID_PASSIVE_CALIBRATION,
                                  LOG_FIELDS({ "NVME_CTRL", ct->name }, { "NVME_MODEL", controller_model(ct) },
                                             { "NVME_FIRMWARE", controller_firmware(ct) },
                                             { "APST_POWER_STATE", pss }, { "APST_MEASURED_EXLAT_US", meas },
                                             { "APST_ADVERTISED_EXLAT_US", advs }, { "APST_SAMPLES", n },
                                             { "APST_AWAKE_SERVICE_US", awake }),
                                  "%s: %s wakes in %s µs as the block layer sees it (%s wake-ups after an idle "
                                  "gap that reached it, %s µs for an awake request), not the %s µs its "
                                  "descriptor advertises.",
                                  ct->name, pss, meas, n, awake, advs);
                }
                /* Planned with only when longer than advertised (max(advertised, measured)), and
                 * again when it moved by more than a quarter. Not while an engine step works on
                 * its copy of the controller: the next reading hands it over. */
                if (w->ctrl->job || us <= adv || us > UINT32_MAX)
                        continue;
                if (old != 0 && (double) us <= old * (1.0 + WATCH_PCAL_REPLAN_CHANGE) &&
                    (double) us >= old * (1.0 - WATCH_PCAL_REPLAN_CHANGE))
                        continue;
                ct->passive_exlat_us[ps] = (uint32_t) us;
                ct->passive_samples[ps] = e.samples > UINT32_MAX ? UINT32_MAX : (uint32_t) e.samples;
                replan = true;
        }
        return replan;
}

/* The slot's disks: the controller's namespaces, looked up again at every reading (a namespace
 * may come or go, a rescan gives a disk a new diskseq). */
static int bpf_refresh_disks(ManagerWatch *w) {
        Manager *m = w->ctrl->manager;
        uint64_t seqs[WATCH_BPF_DISKS];
        size_t n = 0;
        int r;

        r = sysfs_ctrl_diskseqs(m->sysfs_root, w->ctrl->controller.name, seqs, ELEMENTSOF(seqs), &n);
        if (r < 0)
                return r;
        return bpfwatch_slot_set_disks(m->bpf, (unsigned) w->slot, seqs, n);
}

static void set_source(ManagerWatch *w, AdaptSource source, uint64_t now);

/* The shadow kernel's totals in the metrics file (WATCH_METRICS_NS): @gaps, this reading
 * accounted some. */
static void metrics_account(ManagerWatch *w, bool gaps, uint64_t now) {
        if (!w->adapt)
                return;
        if (gaps)
                w->metrics_due = true;
        if (!w->metrics_due || (gaps && now < w->metrics_usec + WATCH_METRICS_NS / NS_PER_USEC))
                return;
        manager_publish(w->ctrl->manager, NULL);     /* the metrics file among what goes out */
        w->metrics_due = false;
        w->metrics_usec = now;
}

/* What the table in force charged for @delta's gaps: where it took the drive to sleep, the
 * passive calibration fed with the wake-ups, the wake time beyond an awake request's. Return:
 * whether the passive calibration asks for a new plan. */
static bool bpf_account_wakes(ManagerWatch *w, const GapHist *delta) {
        const ManagerCtrl *c = w->ctrl;
        PassiveCalibReach reach;

        passive_calib_reach_from_table(&c->controller.written, &c->controller.plan.plan_id, &reach);
        passive_calib_feed(&w->pcal, delta, &reach);
        if (w->pcal.awake.count > 0) {
                uint64_t awake = w->pcal.awake.sum_ns / w->pcal.awake.count;
                for (unsigned b = 0; b < GAP_BUCKETS; b++)
                        if (delta->wake_sum_ns[b] > delta->wake_count[b] * awake)
                                w->total_excess_ns += delta->wake_sum_ns[b] - delta->wake_count[b] * awake;
        }
        return pcal_review(w, &reach);
}

static int on_bpf_timer(ManagerWatch *w) {
        ManagerCtrl *c = w->ctrl;
        Manager *m = c->manager;
        uint64_t now = loop_now_usec(m), wait, cap, deadline = UINT64_MAX;
        bool busy, program = false, verify, replan = false;
        GapHist h, delta;
        BpfSlotState st;
        AdaptDecision why;
        ApstTable table;
        uint64_t gaps;
        int r;

        r = bpf_refresh_disks(w);
        if (r >= 0)
                r = bpfwatch_read(m->bpf, (unsigned) w->slot, &h, &st);
        if (r < 0) {
                /* Its namespaces went away (or lost their diskseq): the sampler, which waits for them. */
                log_debug_errno(r, "%s: cannot read the eBPF program's counters: %m; sampling its block stat.",
                                c->controller.name);
                set_source(w, ADAPT_SOURCE_STAT, now);
                w->no_bpf = true;
                watch_arm(w, now, now + WATCH_SLOW_NS / NS_PER_USEC);
                return 0;
        }
        if (gaphist_delta(&h, &w->last_hist, &delta) < 0)
                log_debug("%s: the program's counters went back; counting from here.", c->controller.name);
        w->last_hist = h;
        gaps = gaphist_total_gaps(&delta);
        busy = delta.requests > 0 || st.inflight > 0 || st.issued != w->last_issued;
        if (st.inflight == 0)
                idle_mark_take(w, st.idle_since_ns / NS_PER_USEC, h.requests);
        w->last_issued = st.issued;
        w->total_requests += delta.requests;

        if (gaps > 0 && c->controller.have_written)
                replan = bpf_account_wakes(w, &delta);
        if (w->adapt && w->adapt->source != ADAPT_SOURCE_BPF) {
                /* The exact source from now on: a drive with nothing learned yet goes to the kernel's
                 * table (adapt_start_exact()), which its first deltas then move from. */
                (void) adapt_start_exact(w->adapt, &table);
                program = !c->controller.have_written || !apst_table_equal(&table, &c->controller.written);
                why = (AdaptDecision) { .t_ns = now * NS_PER_USEC, .table = table };
                (void) snprintf(why.reason, sizeof why.reason,
                                "every idle gap seen from now on: the kernel's own table until they say otherwise");
        }
        /* A table the stall bucket held back from is due once it has refilled, gaps or not
         * (adapt_recheck_ns(): one look, not a periodic wake-up). */
        bool recheck = w->adapt && now * NS_PER_USEC >= adapt_recheck_ns(w->adapt);
        if (w->adapt && (gaps > 0 || gaphist_total_hidden(&delta) > 0 || recheck) &&
            adapt_observe_gaps(w->adapt, &delta, now * NS_PER_USEC, &table, &why) > 0)
                program = true;
        if (w->adapt && gaps > 0) {
                log_account(w, now * NS_PER_USEC);
                learned_keep_while_learning(w, now);
        }
        metrics_account(w, gaps > 0, now);
        busy_hook(m, busy, now, &deadline);

        /* While gaps end, read as often as the policy decides; then back off to the idle wait
         * (pin = busy needs to see the first I/O of a busy spell within WATCH_SLOW_NS). */
        if (busy || gaps > 0)
                w->idle_reads = 0;
        else if (w->idle_reads < 16)
                w->idle_reads++;
        wait = ADAPT_GAPS_PERIOD_NS << w->idle_reads;
        cap = m->config.cpu.pin == CPU_PIN_BUSY ? WATCH_SLOW_NS : WATCH_BPF_IDLE_NS;
        /* idle for good: on the cap's grid, shared by every controller (watch_idle_next()) */
        w->next_usec = watch_idle_next(now * NS_PER_USEC, MIN(wait, cap), cap) / NS_PER_USEC;
        if (w->adapt && adapt_recheck_ns(w->adapt) != UINT64_MAX)
                w->next_usec = MIN(w->next_usec, adapt_recheck_ns(w->adapt) / NS_PER_USEC + 1);
        watch_arm(w, now, deadline != UINT64_MAX ? MIN(w->next_usec, deadline) : w->next_usec);
        verify = verify_due(w, now, w->total_requests);

        /* Not under the adaptive policy, which chooses with what it measures itself: a new plan
         * would put the start table over the policy's (doc/watch.md). */
        if (replan && !w->adapt && manager_replan_all(m, "passive-calibration") > 0)
                return 0;
        tick_act(w, program, &why, &table, verify);
        return 0;
}

static int on_watch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerWatch *w = userdata;
        ManagerCtrl *c = w->ctrl;
        Manager *m = c->manager;
        uint64_t now = loop_now_usec(m), due, deadline = UINT64_MAX;
        AdaptDecision why;
        ApstTable table;
        WatchStat st;
        bool busy, done, program = false, verify;

        if (w->source == ADAPT_SOURCE_BPF)
                return on_bpf_timer(w);
        if (sysfs_ctrl_block_stat(m->sysfs_root, c->controller.name, &st) < 0) {
                /* no namespace (yet): look again when idle would */
                watch_arm(w, now, now + WATCH_SLOW_NS / NS_PER_USEC);
                return 0;
        }
        done = w->known && st.ios != w->last_ios;
        busy = done || (w->known && st.in_flight > 0);
        if (done)
                w->last_done_usec = now;
        if (st.in_flight == 0)
                idle_mark_take(w, w->last_done_usec, st.ios);
        w->last_ios = st.ios;
        if (!w->known)
                w->verify_ios = st.ios;
        w->known = true;

        if (now * NS_PER_USEC >= watch_next(watcher(w))) {
                if (w->adapt)
                        program = adapt_feed(w->adapt, now * NS_PER_USEC, &st, &table, &why) > 0;
                else
                        watch_feed(&w->watch, now * NS_PER_USEC, &st, NULL);
        }
        busy_hook(m, busy, now, &deadline);

        due = watch_next(watcher(w)) / NS_PER_USEC;
        if (deadline != UINT64_MAX)
                due = MIN(due, deadline);
        watch_arm(w, now, due);
        verify = verify_due(w, now, st.ios);
        tick_act(w, program, &why, &table, verify);
        return 0;
}

static bool wants_adapt(const ManagerCtrl *c) {
        const Controller *ct = &c->controller;

        return ct->identified && ct->plan.verdict == DEVICE_MANAGE && ct->plan.params.policy == APST_POLICY_ADAPTIVE;
}

/* The controller's parameters as configured: a latency hold's cap is not a new configuration, the
 * policy goes on under it with its choices bounded (adapt_set_max_latency()). */
static ApstParams configured_params(const Controller *ct) {
        ApstParams p = ct->plan.params;

        p.max_latency_us = ct->plan.configured_max_latency_us;
        return p;
}

/* Start the policy for the configuration in force; NULL adapt on failure (watch only). */
static void adapt_start(ManagerWatch *w, uint64_t now) {
        const Controller *ct = &w->ctrl->controller;
        ApstParams configured = configured_params(ct);
        ApstPlatform plat;
        ApstTable initial;
        int r;

        adapt_stop(w);
        w->adapt = calloc(1, sizeof *w->adapt);
        if (!w->adapt) {
                (void) log_error_errno(-ENOMEM, "Out of memory.");
                return;
        }
        device_apst_platform(&w->ctrl->manager->platform, &ct->sys, &plat);
        r = adapt_init(w->adapt, &ct->plan.plan_id, &plat, &configured, now * NS_PER_USEC, &initial);
        if (r < 0) {
                log_warning_errno(r, "%s: cannot start the adaptive policy: %m; keeping the initial table.", ct->name);
                free(w->adapt);
                w->adapt = NULL;
                return;
        }
        adapt_set_max_latency(w->adapt, ct->plan.params.max_latency_us);
        w->params = configured;
        w->report = (ShadowReport) {};
        learned_take(w);
        w->learned_usec = now;
        w->learned_gaps = w->adapt->gaps_seen;
        log_debug("%s: adaptive policy started.", ct->name);
}

/* The source the configuration asks for and the machine allows; loading the program is tried
 * (and its failure said) once per start or reload. */
static AdaptSource wanted_source(Manager *m) {
        char reason[256];
        int r;

        if (m->config.watch.source == WATCH_SOURCE_STAT)
                return ADAPT_SOURCE_STAT;
        if (!m->bpf && !m->bpf_tried) {
                m->bpf_tried = true;
                r = bpfwatch_open(&m->bpf, reason, sizeof reason);
                if (r < 0)
                        log_event(m->config.watch.source == WATCH_SOURCE_BPF ? LOG_WARNING : LOG_INFO, r,
                                  MSGID_WATCH_SOURCE,
                                  LOG_FIELDS({ "APST_WATCH_SOURCE", "stat" }, { "APST_WATCH_SOURCE_REASON", reason }),
                                  "Cannot watch I/O with eBPF: %s; sampling /sys/block/*/stat instead.", reason);
                else
                        log_event(LOG_INFO, 0, MSGID_WATCH_SOURCE, LOG_FIELDS({ "APST_WATCH_SOURCE", "bpf" }),
                                  "Watching I/O with the eBPF program: every idle gap, counted in the kernel.");
        }
        return m->bpf ? ADAPT_SOURCE_BPF : ADAPT_SOURCE_STAT;
}

/* Switch @w to @source (a new slot, or the sampler from scratch). */
static void set_source(ManagerWatch *w, AdaptSource source, uint64_t now) {
        Manager *m = w->ctrl->manager;
        int slot = -1;

        if (source == ADAPT_SOURCE_BPF) {
                uint64_t seqs[WATCH_BPF_DISKS];
                size_t n;

                /* Disks are told apart by diskseq (kernel >= 5.15): without one, the sampler. */
                if (sysfs_ctrl_diskseqs(m->sysfs_root, w->ctrl->controller.name, seqs, ELEMENTSOF(seqs), &n) < 0) {
                        log_debug("%s: no namespace disk with a diskseq; sampling its block stat.",
                                  w->ctrl->controller.name);
                        source = ADAPT_SOURCE_STAT;
                        w->no_bpf = true;
                }
        }
        if (source == ADAPT_SOURCE_BPF) {
                uint64_t floors[GAP_HIDE_FLOORS];
                size_t n = idctrl_wake_floors(&w->ctrl->controller.id, floors, GAP_HIDE_FLOORS);
                slot = bpfwatch_slot_new(m->bpf, floors, n);
                if (slot < 0) {
                        log_warning_errno(slot, "%s: no room in the eBPF program: %m; sampling its block stat.",
                                          w->ctrl->controller.name);
                        source = ADAPT_SOURCE_STAT;
                }
        }
        bpf_release_slot(w);
        if (source == ADAPT_SOURCE_BPF)
                w->slot = slot;
        w->source = source;
        w->last_hist = (GapHist) {};
        w->last_issued = 0;
        w->idle_reads = 0;
        w->total_requests = w->total_excess_ns = 0;
        w->pcal = (PassiveCalib) {};
        w->pcal_logged = 0;
        w->known = false;
        w->last_done_usec = 0;
        w->idle_mark = (QuarantineIdleMark) {};
        watch_init(&w->watch, now * NS_PER_USEC);
        log_debug("%s: watching its I/O with %s.", w->ctrl->controller.name, adapt_source_to_string(source));
}

void manager_watch_release_bpf(Manager *m) {
        for (size_t i = 0; i < m->n_ctrls; i++)
                if (m->ctrls[i]->watch)
                        bpf_release_slot(m->ctrls[i]->watch);
        m->bpf = bpfwatch_free(m->bpf);
        m->bpf_tried = false;
}

/* The verify timer only runs for controllers no watcher looks after. */
static void verify_timer_update(Manager *m) {
        bool any = false;

        for (size_t i = 0; i < m->n_ctrls; i++)
                if (!m->ctrls[i]->watch)
                        any = true;
        if (m->verify_timer)
                (void) sd_event_source_set_enabled(m->verify_timer, any ? SD_EVENT_ON : SD_EVENT_OFF);
}

void manager_watch_ctrl(ManagerCtrl *c) {
        Manager *m = c->manager;
        ManagerWatch *w = c->watch;
        bool adaptive = wants_adapt(c);
        uint64_t now;
        int r;

        if (!adaptive && m->config.cpu.pin != CPU_PIN_BUSY) {
                c->watch = manager_watch_free(w);
                verify_timer_update(m);
                return;
        }
        if (!m->event)
                return;
        now = loop_now_usec(m);
        if (!w) {
                w = calloc(1, sizeof *w);
                if (!w) {
                        (void) log_error_errno(-ENOMEM, "Out of memory.");
                        return;
                }
                w->ctrl = c;
                w->slot = -1;
                r = sd_event_add_time(m->event, &w->timer, CLOCK_MONOTONIC, now, WATCH_ACCURACY_MIN_USEC,
                                      on_watch_timer, w);
                if (r < 0) {
                        log_warning_errno(r, "%s: cannot watch its I/O: %m", c->controller.name);
                        free(w);
                        return;
                }
                manager_track_source(w->timer, "io-watch");
                w->verify_due_usec = now + m->verify_interval_usec;
                watch_init(&w->watch, now * NS_PER_USEC);
                c->watch = w;
                verify_timer_update(m);
                set_source(w, wanted_source(m), now);
        } else {
                AdaptSource want = wanted_source(m);
                if (want == ADAPT_SOURCE_BPF && w->no_bpf)
                        want = ADAPT_SOURCE_STAT;
                if (want != w->source) {
                        set_source(w, want, now);
                        watch_arm(w, now, now);
                }
        }
        if (!adaptive) {
                if (w->adapt) {
                        adapt_stop(w);
                        watch_init(&w->watch, now * NS_PER_USEC);
                        watch_arm(w, now, now);
                }
                return;
        }
        /* Restart the policy when the configuration for this controller changed: other knobs,
         * or the engine dropped the table the policy had chosen (controller_replan()). */
        ApstParams configured = configured_params(&c->controller);
        if (!w->adapt || !apst_params_equal(&w->params, &configured) ||
            (w->adapt->programs > 0 && !c->controller.have_learned)) {
                adapt_start(w, now);
                watch_arm(w, now, now);
        } else
                adapt_set_max_latency(w->adapt, c->controller.plan.params.max_latency_us);
}

void manager_watch_all(Manager *m) {
        /* source = stat now: the watchers go back to the sampler and the program is unloaded */
        if (m->config.watch.source == WATCH_SOURCE_STAT && (m->bpf || m->bpf_tried))
                manager_watch_release_bpf(m);
        for (size_t i = 0; i < m->n_ctrls; i++)
                manager_watch_ctrl(m->ctrls[i]);
        verify_timer_update(m);
}
