/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A drive that fails in a power state loses it (see manager-quarantine.h, doc/quarantine.md).
 *
 * The kernel log is an I/O source: it wakes the loop only when a record arrives. A record that
 * names one of our controllers with a failure (kmsg.h) opens a pending failure for it, with what
 * the daemon knew at that moment: the table in force and how long the drive had been idle. A
 * failure sends no uevent, so the controller's sysfs state is then read every
 * QUARANTINE_POLL_USEC until it is live again (or dead, or gone): a timer that exists only while a
 * failure is pending. Then quarantine_blame() decides; a blamed state is stepped down in the drive's
 * file and every controller is re-planned (only changed tables are written: the other drives keep
 * theirs), within one poll of live.
 *
 * Meanwhile the controller's engine steps are held (manager_quarantine_holds()): the re-check on its
 * `connected` uevent, a retry, a verification, the adaptive policy's table wait in its queue. Each would
 * write the table it failed with, the blamed state in it, into a drive just back from the reset, half a
 * second before the verdict replaces it. Once the pending failure is dropped they are released
 * (manager_ctrl_release()): after a blame the re-plan's table is what they write, after no blame the
 * table it had, within one poll of live either way.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apstd-ids.h"
#include "kernel-log.h"
#include "log.h"
#include "macro.h"
#include "manager-quarantine.h"
#include "manager-watch.h"
#include "quarantine-store.h"
#include "sysfs.h"

/* How often a failed controller's state is read while it is not yet live again: the quarantine is in
 * force at most this long (plus one engine step) after live, well within the second the contract says. */
#define QUARANTINE_POLL_USEC (100u * 1000u)
/* A controller still live this long after its failure record, without a state seen otherwise: the
 * reset was quicker than a poll (or came before the record was read); decide now. */
#define QUARANTINE_LIVE_SETTLE_USEC (500u * 1000u)
/* Give up on a controller that is neither live, dead nor gone after this long: a reset takes at most
 * nvme_core's admin_timeout (60 s) per try, and the kernel tries a few times. */
#define QUARANTINE_PENDING_MAX_USEC (300u * 1000000u)
#define QUARANTINE_PENDING_MAX 64u

typedef struct Pending {
        char name[32];
        NvmeFailure failure;       /* the strongest record */
        char record[160];          /* its text, for the journal */
        uint64_t since_usec;       /* the first record (CLOCK_MONOTONIC) */
        bool seen_not_live;
        bool idle_known;
        uint64_t idle_ms;
        IdCtrl id;                 /* the drive's Identify data: the controller may be gone when it is decided */
        ApstTable table;           /* in force when it failed */
        uint8_t allow_below;
        bool resume;
} Pending;

struct ManagerQuarantine {
        KernelLog *log;
        sd_event_source *io;
        sd_event_source *timer;    /* only while a failure is pending */
        Pending pending[QUARANTINE_PENDING_MAX];
        size_t n_pending;
        bool sleeping;
        uint64_t resume_usec;      /* the last resume, CLOCK_MONOTONIC; 0 = none */
        uint64_t steps, not_blamed;
};

static uint64_t loop_now(const Manager *m) {
        uint64_t t = 0;

        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &t);
        return t;
}

static Pending *pending_find(const ManagerQuarantine *q, const char *name) {
        for (size_t i = 0; i < q->n_pending; i++)
                if (strcmp(q->pending[i].name, name) == 0)
                        return (Pending *) &q->pending[i];
        return NULL;
}

static void pending_drop(ManagerQuarantine *q, Pending *p) {
        size_t i = (size_t) (p - q->pending);

        memmove(q->pending + i, q->pending + i + 1, (q->n_pending - i - 1) * sizeof *p);
        q->n_pending--;
}

static int on_poll(sd_event_source *s, uint64_t usec, void *userdata);

static void arm_poll(Manager *m) {
        ManagerQuarantine *q = m->quarantine;

        if (q->n_pending == 0) {
                q->timer = sd_event_source_disable_unref(q->timer);
                return;
        }
        if (q->timer) {
                (void) sd_event_source_set_time_relative(q->timer, QUARANTINE_POLL_USEC);
                (void) sd_event_source_set_enabled(q->timer, SD_EVENT_ONESHOT);
                return;
        }
        if (sd_event_add_time_relative(m->event, &q->timer, CLOCK_MONOTONIC, QUARANTINE_POLL_USEC, 0, on_poll, m) >= 0)
                manager_track_source(q->timer, "quarantine-poll");
}

/* What the daemon knows at the failure: the table in force, the idle time, a resume. */
static void pending_open(Manager *m, Pending *p, ManagerCtrl *c, uint64_t now) {
        ManagerQuarantine *q = m->quarantine;
        const Controller *ct = &c->controller;
        uint64_t idle_usec;

        p->since_usec = now;
        p->id = ct->id;
        p->table = ct->have_written ? ct->written : *controller_table(ct);
        p->allow_below = ct->quarantine_below;
        p->idle_known = manager_watch_idle_usec(c, now, &idle_usec);
        p->idle_ms = p->idle_known ? idle_usec / 1000u : 0;
        p->resume = q->sleeping || (q->resume_usec > 0 && now - q->resume_usec < QUARANTINE_RESUME_WINDOW_USEC);
}

static void on_record(const KmsgRecord *rec, void *userdata) {
        Manager *m = userdata;
        ManagerQuarantine *q = m->quarantine;
        char name[32];
        NvmeFailure f;
        ManagerCtrl *c;
        Pending *p;

        if (kmsg_match_failure(rec, &f) <= 0)
                return;
        if (rec->ctrl[0])
                (void) snprintf(name, sizeof name, "%s", rec->ctrl);
        else if (kernel_log_pci_ctrl(m->sysfs_root, rec->pci, name, sizeof name) < 0)
                return;
        c = manager_ctrl_find(m, name);
        if (!c || !c->controller.identified)
                return;
        p = pending_find(q, name);
        if (!p) {
                if (q->n_pending >= QUARANTINE_PENDING_MAX)
                        return;
                p = &q->pending[q->n_pending++];
                *p = (Pending) { .failure = f };
                (void) snprintf(p->name, sizeof p->name, "%s", name);
                pending_open(m, p, c, loop_now(m));
        } else if (f.kind < p->failure.kind && p->record[0])
                return;   /* a weaker record after a stronger one adds nothing */
        p->failure = f;
        (void) snprintf(p->record, sizeof p->record, "%.*s", (int) MIN(rec->text_len, sizeof p->record - 1),
                        rec->text);
        log_debug("%s: kernel: %s (%s)", name, p->record, nvme_failure_kind_to_string(f.kind));
        arm_poll(m);
}

static void log_not_blamed(const Pending *p, QuarantineVerdict v) {
        log_event(LOG_NOTICE, 0, MSGID_FAILURE_NOT_BLAMED,
                  LOG_FIELDS({ "NVME_CTRL", p->name }, { "NVME_MODEL", p->id.model },
                             { "NVME_FIRMWARE", p->id.firmware }, { "NVME_FAILURE_RECORD", p->record },
                             { "NVME_NOT_BLAMED_REASON", quarantine_verdict_to_string(v) }),
                  "%s: controller failed (\"%s\"); not blamed on a power state: %s.", p->name, p->record,
                  quarantine_verdict_to_string(v));
}

static void log_quarantined(const Pending *p, const Quarantine *qf, const QuarantineBlame *b) {
        const IdCtrl *id = &p->id;
        char ps[8], idle[24], what[32], strikes[16];

        (void) snprintf(ps, sizeof ps, "ps%u", b->ps);
        if (b->idle_ms == UINT64_MAX)   /* not watched: blamed as deep as the table goes (quarantine_blame()) */
                (void) snprintf(idle, sizeof idle, "unmeasured");
        else
                (void) snprintf(idle, sizeof idle, "%" PRIu64, b->idle_ms);
        (void) snprintf(strikes, sizeof strikes, "%u", qf->strikes);
        quarantine_describe(qf->allow_below, what, sizeof what);
        log_event(LOG_WARNING, 0, MSGID_STATE_QUARANTINED,
                  LOG_FIELDS({ "NVME_CTRL", p->name }, { "NVME_MODEL", id->model },
                             { "NVME_FIRMWARE", id->firmware }, { "APST_POWER_STATE", ps },
                             { "NVME_FAILURE_RECORD", p->record }, { "NVME_IDLE_MS", idle },
                             { "APST_QUARANTINED", what }, { "NVME_STRIKES", strikes }),
                  "%s: controller failed in power state %s (\"%s\") after %s ms idle; quarantined for %s firmware "
                  "%s: %s. Undo: nvme-apstd quarantine --clear '%s'.",
                  p->name, ps, p->record, idle, id->model, id->firmware, what, id->model);
}

/* Step the drive's file down for a failure blamed on @b->ps. Return: 0, or -errno (said). */
static int step_down(Manager *m, const Pending *p, const QuarantineBlame *b) {
        const IdCtrl *id = &p->id;
        QuarantineFailure f = { .realtime_sec = (uint64_t) time(NULL), .ps = b->ps, .idle_ms = b->idle_ms,
                                .kind = p->failure.kind };
        Quarantine qf;
        int r;

        if (quarantine_load(m->state_dir, id->model, id->firmware, &qf, NULL) < 0 || qf.vendor != id->vid) {
                qf = (Quarantine) { .vendor = id->vid, .allow_below = QUARANTINE_NONE };
                (void) snprintf(qf.model, sizeof qf.model, "%s", id->model);
                (void) snprintf(qf.firmware, sizeof qf.firmware, "%s", id->firmware);
        }
        (void) quarantine_add_failure(&qf, id, &f);
        r = quarantine_save(m->state_dir, &qf);
        if (r < 0)
                return log_error_errno(r, "%s: cannot keep its quarantine in %s: %m", p->name, m->state_dir);
        m->quarantine->steps++;
        log_quarantined(p, &qf, b);
        return 0;
}

static void decide(Manager *m, Pending *p, bool removed) {
        QuarantineEvidence e;
        QuarantineBlame b;

        e = (QuarantineEvidence) {
                .have_failure = true, .failure = p->failure, .removed = removed, .resume = p->resume,
                .idle_known = p->idle_known, .idle_ms = p->idle_ms, .table = &p->table,
                .allow_below = p->allow_below,
        };
        quarantine_blame(&e, &p->id, &b);
        if (b.verdict != QUARANTINE_BLAMED) {
                m->quarantine->not_blamed++;
                log_not_blamed(p, b.verdict);
                return;
        }
        if (step_down(m, p, &b) >= 0)
                (void) manager_replan_all(m, "quarantine");
}

/* Return: whether @p is done with. */
static bool poll_one(Manager *m, Pending *p, uint64_t now) {
        SysCtrl sys;

        if (sysfs_read_controller(m->sysfs_root, p->name, &sys) < 0 || strcmp(sys.state, "dead") == 0 ||
            strncmp(sys.state, "deleting", 8) == 0) {
                decide(m, p, true);
                return true;
        }
        if (strcmp(sys.state, "live") != 0) {
                p->seen_not_live = true;
                if (now - p->since_usec < QUARANTINE_PENDING_MAX_USEC)
                        return false;
                log_warning("%s: controller still %s %" PRIu64 " s after its failure; no longer following it.",
                            p->name, sys.state, (now - p->since_usec) / 1000000u);
                return true;
        }
        if (!p->seen_not_live && now - p->since_usec < QUARANTINE_LIVE_SETTLE_USEC)
                return false;
        decide(m, p, false);
        return true;
}

static int on_poll(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        ManagerQuarantine *q = m->quarantine;
        uint64_t now = loop_now(m);

        for (size_t i = 0; i < q->n_pending;) {
                char name[sizeof q->pending[i].name];
                ManagerCtrl *c;

                if (!poll_one(m, &q->pending[i], now)) {
                        i++;
                        continue;
                }
                /* decided (its re-plan queued behind the hold) or given up on: what waited runs now */
                (void) snprintf(name, sizeof name, "%s", q->pending[i].name);
                pending_drop(q, &q->pending[i]);
                c = manager_ctrl_find(m, name);
                if (c)
                        manager_ctrl_release(c);
        }
        arm_poll(m);
        manager_publish(m, NULL);
        return 0;
}

static int on_log(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        ManagerQuarantine *q = m->quarantine;
        int r;

        r = kernel_log_read(q->log, on_record, m);
        if (r == 1)
                r = sd_event_source_set_io_fd(s, kernel_log_fd(q->log));
        if (r < 0) {
                log_warning_errno(r, "Cannot read the kernel log %s any more: %m; drive failures are no longer seen.",
                                  kernel_log_path(q->log));
                q->io = sd_event_source_disable_unref(q->io);
        }
        return 0;
}

int manager_quarantine_start(Manager *m) {
        ManagerQuarantine *q;
        int r;

        if (m->quarantine)
                return 0;
        q = calloc(1, sizeof *q);
        if (!q)
                return log_error_errno(-ENOMEM, "Out of memory.");
        m->quarantine = q;
        r = kernel_log_open(NULL, &q->log);
        if (r < 0) {
                log_full_errno(LOG_NOTICE, r, "Cannot read the kernel log (%s): %m; a drive failing in a power state will not "
                                    "be noticed.", getenv(KERNEL_LOG_ENV) ?: KERNEL_LOG_DEFAULT);
                return 0;
        }
        r = sd_event_add_io(m->event, &q->io, kernel_log_fd(q->log), EPOLLIN, on_log, m);
        if (r < 0) {
                log_full_errno(LOG_NOTICE, r, "Cannot watch the kernel log %s: %m; drive failures will not be noticed.",
                                 kernel_log_path(q->log));
                q->log = kernel_log_free(q->log);
                return 0;
        }
        manager_track_source(q->io, "kernel-log");
        return 0;
}

void manager_quarantine_free(Manager *m) {
        ManagerQuarantine *q = m->quarantine;

        if (!q)
                return;
        sd_event_source_disable_unref(q->io);
        sd_event_source_disable_unref(q->timer);
        kernel_log_free(q->log);
        free(q);
        m->quarantine = NULL;
}

void manager_quarantine_sleep(Manager *m, bool sleeping) {
        ManagerQuarantine *q = m->quarantine;

        if (!q)
                return;
        q->sleeping = sleeping;
        if (!sleeping)
                q->resume_usec = loop_now(m);
}

bool manager_quarantine_holds(const ManagerCtrl *c) {
        const ManagerQuarantine *q = c->manager->quarantine;

        return q && pending_find(q, c->controller.name);
}

void manager_quarantine_ctrl(ManagerCtrl *c) {
        const Controller *ct = &c->controller;
        uint32_t tol;
        int r;

        if (ct->quarantine_below == QUARANTINE_NONE || !ct->identified)
                return;
        tol = quarantine_latency_tolerance_us(&ct->id, ct->quarantine_below);
        if (tol == UINT32_MAX)
                return;
        r = quarantine_set_latency_tolerance(c->manager->sysfs_root, ct->name, tol);
        if (r < 0 && r != -ENOENT)
                log_debug_errno(r, "%s: cannot lower pm_qos_latency_tolerance_us to %" PRIu32 ": %m", ct->name, tol);
        else if (r > 0)
                log_info("%s: pm_qos_latency_tolerance_us lowered to %" PRIu32 " µs, so the kernel's own table leaves "
                         "the quarantined states out too.", ct->name, tol);
}

uint64_t manager_quarantine_steps(const Manager *m) {
        return m->quarantine ? m->quarantine->steps : 0;
}

uint64_t manager_quarantine_not_blamed(const Manager *m) {
        return m->quarantine ? m->quarantine->not_blamed : 0;
}
