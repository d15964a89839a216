/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Power states a drive failed in: blame, step-down, planning limits, the file; see quarantine.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtext.h"
#include "macro.h"
#include "quarantine.h"
#include "string-table.h"

static const char *const quarantine_verdict_table[_QUARANTINE_VERDICT_MAX] = {
        [QUARANTINE_BLAMED] = "blamed",
        [QUARANTINE_NO_FAILURE] = "no-failure-record",
        [QUARANTINE_REMOVED] = "removed",
        [QUARANTINE_RESUME] = "resume",
        [QUARANTINE_BUSY] = "busy",
        [QUARANTINE_APST_DISABLED] = "apst-off",
        [QUARANTINE_IDLE_UNKNOWN] = "idle-unknown",
        [QUARANTINE_ALREADY] = "already",
};

DEFINE_STRING_TABLE_LOOKUP(quarantine_verdict, QuarantineVerdict);

/* ------------------------------------------------------------------ blame */

unsigned apst_reached(const ApstTable *t, uint64_t idle_ms) {
        unsigned ps = 0;

        if (!t->apste)
                return 0;
        /* a table goes deeper at each step (apst_table_check()), so 32 steps end any walk */
        for (unsigned step = 0; step < APST_ENTRIES; step++) {
                uint64_t e = t->entry[ps];
                uint32_t itpt = apst_entry_itpt(e);
                unsigned next = apst_entry_itps(e);

                if (itpt == 0 || next == ps || idle_ms < itpt)
                        break;
                idle_ms -= itpt;
                ps = next;
        }
        return ps;
}

unsigned apst_deepest(const ApstTable *t) {
        return apst_reached(t, UINT64_MAX);
}

bool quarantine_idle(const QuarantineIdleMark *mark, uint64_t now_usec, uint64_t in_flight, uint64_t done,
                     uint64_t idle_since_usec, uint64_t *ret_usec) {
        uint64_t since;

        if (in_flight == 0)
                since = idle_since_usec;
        else if (mark->idle_seen && done == mark->idle_done)
                since = mark->idle_usec;        /* nothing answered since it went idle */
        else if (mark->idle_seen)
                since = now_usec;               /* it answered while this request waited: awake */
        else
                return false;
        *ret_usec = now_usec - MIN(now_usec, since);
        return true;
}

static bool operational(const IdCtrl *id, unsigned ps) {
        return ps > id->npss || !id->psd[ps].non_operational;
}

void quarantine_blame(const QuarantineEvidence *e, const IdCtrl *id, QuarantineBlame *ret) {
        QuarantineBlame b = { .verdict = QUARANTINE_BLAMED };
        bool strong = e->have_failure && (nvme_failure_off_bus(&e->failure) ||
                                          e->failure.kind == NVME_FAILURE_RESET_FAILED ||
                                          e->failure.kind == NVME_FAILURE_PROBE_FAILED);

        if (!e->have_failure) {
                b.verdict = e->removed ? QUARANTINE_REMOVED : QUARANTINE_NO_FAILURE;
                goto done;
        }
        if (e->resume) {
                b.verdict = QUARANTINE_RESUME;
                goto done;
        }
        if (!e->table || !e->table->apste || e->allow_below == QUARANTINE_APST_OFF) {
                b.verdict = QUARANTINE_APST_DISABLED;
                goto done;
        }
        if (e->idle_known) {
                /* a timeout is printed io_timeout after its command was sent: the idleness ended then */
                b.idle_ms = e->idle_ms;
                if (e->failure.kind == NVME_FAILURE_TIMEOUT)
                        b.idle_ms = e->idle_ms > QUARANTINE_IO_TIMEOUT_MS ? e->idle_ms - QUARANTINE_IO_TIMEOUT_MS : 0;
                b.ps = (uint8_t) apst_reached(e->table, b.idle_ms);
        } else if (strong) {
                /* no watcher: a drive that fell off the bus is taken to have got as deep as it could */
                b.idle_ms = UINT64_MAX;
                b.ps = (uint8_t) apst_deepest(e->table);
        } else {
                b.verdict = QUARANTINE_IDLE_UNKNOWN;
                goto done;
        }
        if (operational(id, b.ps))
                b.verdict = QUARANTINE_BUSY;
        else if (b.ps >= e->allow_below)
                b.verdict = QUARANTINE_ALREADY;
done:
        *ret = b;
}

uint8_t quarantine_step_down(uint8_t allow_below, unsigned ps, unsigned strikes, const IdCtrl *id) {
        uint8_t limit = (uint8_t) MIN((unsigned) allow_below, ps);

        if (strikes >= QUARANTINE_STRIKES_OFF)
                return QUARANTINE_APST_OFF;
        for (unsigned s = 1; s < limit && s <= id->npss; s++)
                if (id->psd[s].non_operational)
                        return limit;
        return QUARANTINE_APST_OFF;
}

/* ------------------------------------------------------------------ planning */

void quarantine_limit_id(const IdCtrl *id, uint8_t allow_below, IdCtrl *ret) {
        IdCtrl out = *id;

        if (allow_below != QUARANTINE_APST_OFF && allow_below <= id->npss) {
                out.npss = (uint8_t) (allow_below - 1);
                for (unsigned ps = allow_below; ps < IDCTRL_MAX_PS; ps++)
                        out.psd[ps] = (IdPsd) {};
        }
        *ret = out;
}

/* The deepest target below @allow_below and deeper than @ps that @t uses; 0 = none. */
static unsigned allowed_target(const ApstTable *t, unsigned ps, uint8_t allow_below) {
        unsigned best = 0;

        for (unsigned i = 0; i < allow_below && i < APST_ENTRIES; i++) {
                unsigned to = apst_entry_itps(t->entry[i]);
                if (apst_entry_itpt(t->entry[i]) != 0 && to > ps && to < allow_below && to > best)
                        best = to;
        }
        return best;
}

bool quarantine_filter_table(ApstTable *t, uint8_t allow_below) {
        ApstTable out = *t;

        if (allow_below == QUARANTINE_APST_OFF)
                out = (ApstTable) {};
        else
                for (unsigned ps = 0; ps < APST_ENTRIES; ps++) {
                        uint64_t e = t->entry[ps];
                        unsigned to;

                        if (ps >= allow_below) {
                                out.entry[ps] = 0;
                                continue;
                        }
                        if (apst_entry_itpt(e) == 0 || apst_entry_itps(e) < allow_below)
                                continue;
                        to = allowed_target(t, ps, allow_below);
                        out.entry[ps] = to ? apst_entry_make(to, apst_entry_itpt(e)) : 0;
                }
        if (apst_table_equal(&out, t))
                return false;
        *t = out;
        return true;
}

uint32_t quarantine_latency_tolerance_us(const IdCtrl *id, uint8_t allow_below) {
        uint32_t min = UINT32_MAX;

        if (allow_below == QUARANTINE_APST_OFF)
                return 0;
        for (unsigned ps = allow_below; ps <= id->npss && ps < IDCTRL_MAX_PS; ps++)
                if (id->psd[ps].non_operational)
                        min = MIN(min, id->psd[ps].exlat_us);
        if (min == UINT32_MAX)
                return UINT32_MAX;
        return min > 0 ? min - 1 : 0;
}

bool quarantine_add_failure(Quarantine *q, const IdCtrl *id, const QuarantineFailure *f) {
        uint8_t old = q->allow_below;

        if (q->n_failures == QUARANTINE_FAILURES_MAX) {
                memmove(q->failures, q->failures + 1, (QUARANTINE_FAILURES_MAX - 1) * sizeof q->failures[0]);
                q->n_failures--;
        }
        q->failures[q->n_failures++] = *f;
        q->strikes++;
        q->allow_below = quarantine_step_down(q->allow_below, f->ps, q->strikes, id);
        q->max_latency_us = quarantine_latency_tolerance_us(id, q->allow_below);
        if (q->max_latency_us == UINT32_MAX)
                q->max_latency_us = 0;
        return q->allow_below != old;
}

void quarantine_describe(uint8_t allow_below, char *buf, size_t n) {
        if (allow_below == QUARANTINE_APST_OFF)
                (void) snprintf(buf, n, "APST off");
        else if (allow_below >= QUARANTINE_NONE)
                (void) snprintf(buf, n, "none");
        else
                (void) snprintf(buf, n, "ps%u and deeper", allow_below);
}
