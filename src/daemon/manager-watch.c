/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's I/O watcher glue (see manager.h): one sd-event timer per
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
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "adapt.h"
#include "apstd-ids.h"
#include "learned-store.h"
#include "log.h"
#include "manager.h"
#include "watch.h"

#define NS_PER_USEC UINT64_C(1000)
#define WATCH_ACCURACY_MIN_USEC UINT64_C(1000)
#define WATCH_ACCURACY_LONG_USEC UINT64_C(1000000)

struct ManagerWatch {
        ManagerCtrl *ctrl;
        sd_event_source *timer;
        Adapt *adapt;              /* policy = adaptive; its own Watch is the watcher */
        ApstParams params;         /* what adapt was started with */
        Watch watch;               /* the watcher without the policy (pin = busy only) */
        bool known;                /* last_ios holds a reading */
        uint64_t last_ios;
        uint64_t verify_ios;       /* the I/O count at the last verification look */
        uint64_t verify_due_usec;
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
        x = w->adapt ? &w->adapt->watch : &w->watch;
        *ret_ios = x->total_ios;
        *ret_stall_us = x->total_wake_ms > 0 ? (uint64_t) (x->total_wake_ms * 1000.0 + 0.5) : 0;
        return true;
}

static uint64_t now_usec(const Manager *m) {
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

ManagerWatch *manager_watch_free(ManagerWatch *w) {
        if (!w)
                return NULL;
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
                wake[16];

        apst_table_to_hex(&d->table, hex, sizeof hex);
        fmt_pct(obs, sizeof obs, d->observed_stall);
        fmt_pct(exp, sizeof exp, d->expected_stall);
        fmt_pct(kern, sizeof kern, d->kernel_stall);
        (void) snprintf(budget, sizeof budget, "%.2f", ct->plan.params.stall_budget_cpct / 100.0);
        (void) snprintf(energy, sizeof energy, "%.3f", d->energy_vs_kernel);
        (void) snprintf(rate, sizeof rate, "%.2f", d->io_rate);
        (void) snprintf(gap, sizeof gap, "%" PRIu64, d->median_gap_ns / 1000000u);
        (void) snprintf(xf, sizeof xf, "%.2f", d->exlat_factor);
        (void) snprintf(wake, sizeof wake, "%" PRIu32, apst_worst_wake_us(&d->table, &ct->plan.plan_id));
        log_event(LOG_INFO, 0, MSGID_ADAPT_TABLE,
                  LOG_FIELDS({ "NVME_CTRL", ct->name }, { "NVME_MODEL", controller_model(ct) },
                             { "NVME_FIRMWARE", controller_firmware(ct) }, { "APST_POLICY", "adaptive" },
                             { "APST_REASON", "adaptive" }, { "APST_OBSERVED_STALL_PCT", obs },
                             { "APST_EXPECTED_STALL_PCT", exp }, { "APST_KERNEL_STALL_PCT", kern },
                             { "APST_STALL_BUDGET_PCT", budget }, { "APST_ENERGY_VS_KERNEL", energy },
                             { "APST_IO_RATE", rate }, { "APST_MEDIAN_GAP_MS", gap }, { "APST_EXLAT_FACTOR", xf },
                             { "APST_WORST_WAKE_US", wake }, { "APST_TABLE", hex }),
                  "%s: adaptive policy chose a new APST table: %s.", ct->name, d->reason);
}

/* At most every verify interval, a controller that did I/O since the last look: it was awake. */
static bool verify_due(ManagerWatch *w, uint64_t now, const WatchStat *st) {
        const Manager *m = w->ctrl->manager;
        bool due;

        if (now < w->verify_due_usec)
                return false;
        due = st->ios != w->verify_ios && w->ctrl->controller.have_written;
        w->verify_ios = st->ios;
        w->verify_due_usec = now + m->verify_interval_usec;
        return due;
}

static int on_watch_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ManagerWatch *w = userdata;
        ManagerCtrl *c = w->ctrl;
        Manager *m = c->manager;
        uint64_t now = now_usec(m), due, deadline = UINT64_MAX;
        AdaptDecision why;
        ApstTable table;
        WatchStat st;
        bool busy, program = false, verify;

        if (sysfs_ctrl_block_stat(m->sysfs_root, c->controller.name, &st) < 0) {
                /* no namespace (yet): look again when idle would */
                watch_arm(w, now, now + WATCH_SLOW_NS / NS_PER_USEC);
                return 0;
        }
        busy = w->known && (st.ios != w->last_ios || st.in_flight > 0);
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
        if (m->cpupin && m->config.cpu.pin == CPU_PIN_BUSY) {
                bool was = cpupin_is_pinned(m->cpupin);
                (void) cpupin_busy_hook(m->cpupin, busy, now, &deadline);
                if (cpupin_is_pinned(m->cpupin) != was)
                        manager_metrics_update(m);   /* pinned or released */
        }

        due = watch_next(watcher(w)) / NS_PER_USEC;
        if (deadline != UINT64_MAX)
                due = MIN(due, deadline);
        watch_arm(w, now, due);
        verify = verify_due(w, now, &st);

        /* The engine step runs in the controller's thread; what it did is published when it is back. */
        if (program) {
                log_decision(c, &why);
                manager_ctrl_program(c, &table, "adaptive");
        } else if (verify)
                manager_ctrl_sync(c, "verify");
        return 0;
}

static bool wants_adapt(const ManagerCtrl *c) {
        const Controller *ct = &c->controller;

        return ct->identified && ct->plan.verdict == DEVICE_MANAGE && ct->plan.params.policy == APST_POLICY_ADAPTIVE;
}

/* Start the policy for the configuration in force; NULL adapt on failure (watch only). */
static void adapt_start(ManagerWatch *w, uint64_t now) {
        const Controller *ct = &w->ctrl->controller;
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
        r = adapt_init(w->adapt, &ct->plan.plan_id, &plat, &ct->plan.params, now * NS_PER_USEC, &initial);
        if (r < 0) {
                log_warning_errno(r, "%s: cannot start the adaptive policy: %m; keeping the initial table.", ct->name);
                free(w->adapt);
                w->adapt = NULL;
                return;
        }
        w->params = ct->plan.params;
        learned_take(w);
        log_debug("%s: adaptive policy started.", ct->name);
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
        now = now_usec(m);
        if (!w) {
                w = calloc(1, sizeof *w);
                if (!w) {
                        (void) log_error_errno(-ENOMEM, "Out of memory.");
                        return;
                }
                w->ctrl = c;
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
        if (!w->adapt || !apst_params_equal(&w->params, &c->controller.plan.params) ||
            (w->adapt->programs > 0 && !c->controller.have_learned)) {
                adapt_start(w, now);
                watch_arm(w, now, now);
        }
}

void manager_watch_all(Manager *m) {
        for (size_t i = 0; i < m->n_ctrls; i++)
                manager_watch_ctrl(m->ctrls[i]);
        verify_timer_update(m);
}
