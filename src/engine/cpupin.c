/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU frequency pinning (see cpupin.h): record, pin, restore, log.
 *
 * Order of events for a pin, and why:
 *  1. read every policy (through CpufreqOps);
 *  2. plan each selected one against its record (cpufreq-policy.c);
 *  3. write the record of every policy about to change, atomically, before
 *     any change (a crash between 3 and 5 leaves a record of pristine values);
 *  4. write each policy; on a refusal put that policy back as it was before
 *     this call and carry on with the next;
 *  5. rewrite the record without the policies that were refused or restored.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apstd-ids.h"
#include "cpupin.h"
#include "log.h"
#include "record-file.h"
#include "state-file.h"

struct CpuPin {
        const CpufreqOps *ops;
        char *runtime_dir;
        char *record_path;

        CpufreqSettings *saved;     /* one per pinned policy, as first found (= the record file) */
        size_t n_saved;

        CpuConfig cfg;              /* deep copy of the last cpupin_apply() configuration */
        bool have_cfg;
        CpuSet irq_cpus;
        bool have_irq_cpus;

        bool busy_active;           /* busy mode: pinned phase (until release_after_ms of idleness) */
        uint64_t last_busy_usec;

        bool unavailable_logged;    /* "CPU frequency pinning is unavailable" only once */
};

static void cpu_config_done(CpuConfig *c) {
        free(c->governor);
        free(c->epp);
        *c = (CpuConfig) {};
}

static int cpu_config_copy(const CpuConfig *src, CpuConfig *ret) {
        CpuConfig c = *src;

        c.governor = NULL;
        c.epp = NULL;
        if (src->governor && !(c.governor = strdup(src->governor)))
                return -ENOMEM;
        if (src->epp && !(c.epp = strdup(src->epp))) {
                free(c.governor);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

int cpupin_new(const CpufreqOps *ops, const char *runtime_dir, CpuPin **ret) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        _cleanup_free_ char *env_dir = NULL;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->ops = ops;

        if (!runtime_dir) {
                if (runtime_directory(CPUPIN_RUNTIME_DIR_DEFAULT, &env_dir) < 0)
                        return -ENOMEM;
                runtime_dir = env_dir;
        }

        p->runtime_dir = strdup(runtime_dir);
        if (!p->runtime_dir ||
            asprintf(&p->record_path, "%s/" CPUPIN_RECORD_NAME, runtime_dir) < 0) {
                p->record_path = NULL;
                return -ENOMEM;
        }

        *ret = TAKE_PTR(p);
        return 0;
}

CpuPin *cpupin_free(CpuPin *p) {
        if (!p)
                return NULL;
        free(p->runtime_dir);
        free(p->record_path);
        free(p->saved);
        cpu_config_done(&p->cfg);
        free(p);
        return NULL;
}

bool cpupin_is_pinned(const CpuPin *p) {
        return p->n_saved > 0;
}

size_t cpupin_pinned(const CpuPin *p, const CpufreqSettings **ret) {
        *ret = p->saved;
        return p->n_saved;
}

/* --- the record file ------------------------------------------------------------------------ */

/* Replace the record with @v (remove it when @n is 0), atomically (record_store()). */
static int saved_store(CpuPin *p, const CpufreqSettings *v, size_t n) {
        _cleanup_free_ char *text = NULL;
        int r;

        if (n == 0)
                return record_remove(p->record_path);
        r = cpufreq_record_format(v, n, &text);
        if (r < 0)
                return r;
        if (mkdir(p->runtime_dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        return record_store(p->record_path, text);
}

/* --- reading and writing policies ----------------------------------------------------------- */

static bool cpufreq_missing(int r) {
        return r == -ENOENT || r == -ENODEV;
}

static void log_unavailable(CpuPin *p, int r) {
        if (p->unavailable_logged)
                return;
        p->unavailable_logged = true;
        log_event(LOG_WARNING, r, MSGID_CPU_UNAVAILABLE, LOG_FIELDS({ "CPUFREQ_CPUS", NULL }),
                  "CPU frequency pinning is unavailable: %s; carrying on without it",
                  r == -ENODEV ? "no CPU has cpufreq in sysfs (VM or container?)" :
                  r == -ENOENT ? "no /sys/devices/system/cpu" : "cannot list cpufreq CPUs");
}

/* Every policy of the online cpufreq CPUs, each once. */
static int read_policies(CpuPin *p, CpufreqPolicyState **ret, size_t *ret_n, CpuSet *ret_online) {
        _cleanup_free_ CpufreqPolicyState *v = NULL;
        CpuSet online = {}, seen = {};
        size_t n = 0;
        int r;

        r = p->ops->list_cpus(p->ops->userdata, &online);
        if (r < 0)
                return r;
        if (cpuset_is_empty(&online))
                return -ENODEV;

        for (unsigned cpu = 0; cpu < CPUSET_MAX; cpu++) {
                CpufreqPolicyState st, *nv;

                if (!cpuset_has(&online, cpu) || cpuset_has(&seen, cpu))
                        continue;
                r = p->ops->read_policy(p->ops->userdata, cpu, &st);
                if (r < 0) {
                        log_debug_errno(r, "cpu%u: cannot read the cpufreq policy, skipping it: %m", cpu);
                        cpuset_add(&seen, cpu);
                        continue;
                }
                nv = reallocarray(v, n + 1, sizeof *v);
                if (!nv)
                        return -ENOMEM;
                v = nv;
                v[n++] = st;
                cpuset_add(&seen, cpu);
                cpuset_or(&seen, &st.cpus);
        }

        *ret = TAKE_PTR(v);
        *ret_n = n;
        if (ret_online)
                *ret_online = online;
        return 0;
}

static bool sets_overlap(const CpuSet *a, const CpuSet *b) {
        CpuSet both = *a;

        cpuset_and(&both, b);
        return !cpuset_is_empty(&both);
}

/* The record entry of the policy @st, or -1. */
static ssize_t saved_find(const CpufreqSettings *saved, size_t n, const CpufreqPolicyState *st) {
        for (size_t i = 0; i < n; i++)
                if (saved[i].cpu == st->cpu || sets_overlap(&saved[i].cpus, &st->cpus))
                        return (ssize_t) i;
        return -1;
}

static void settings_blank(CpufreqSettings *s, CpufreqAttr a) {
        switch (a) {
        case CPUFREQ_ATTR_GOVERNOR:
                s->governor[0] = '\0';
                break;
        case CPUFREQ_ATTR_MIN:
                s->min_khz = 0;
                break;
        case CPUFREQ_ATTR_MAX:
                s->max_khz = 0;
                break;
        case CPUFREQ_ATTR_EPP:
                s->epp[0] = '\0';
                break;
        case _CPUFREQ_ATTR_MAX:
        case _CPUFREQ_ATTR_INVALID:
                break;
        }
}

/**
 * Write @want to the policy read as @now, attribute by attribute in
 * cpufreq_write_order(), skipping what already holds. The governor can change
 * EPP behind our back (intel_pstate), so the policy is re-read after it.
 * A refusal of an attribute in @required stops here (*ret_attr names it); a
 * refusal of another one (a value put back on reload, e.g. EPP under the
 * `performance` governor) is logged and left for the release to restore.
 * Return: 1 if something was written, 0 if nothing needed to, negative errno.
 */
static int policy_write(CpuPin *p, const CpufreqPolicyState *now, const CpufreqSettings *want,
                        unsigned required, CpufreqAttr *ret_attr) {
        CpufreqSettings cur;
        CpufreqAttr order[_CPUFREQ_ATTR_MAX];
        bool wrote = false;
        int r;

        cpufreq_settings_from_state(now, &cur);
        cpufreq_write_order(&cur, want, order);

        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                char value[CPUFREQ_NAME_MAX];

                if (!cpufreq_attr_differs(&cur, want, order[i]))
                        continue;
                cpufreq_attr_value(want, order[i], value, sizeof value);
                r = p->ops->write(p->ops->userdata, now->cpu, order[i], value);
                if (r < 0) {
                        if (required & (1u << order[i])) {
                                *ret_attr = order[i];
                                return r;
                        }
                        log_full_errno(LOG_NOTICE, r, "cpu%u: cannot put %s back to %s for now: %m; "
                                       "it is restored on release", now->cpu,
                                       cpufreq_attr_to_string(order[i]), value);
                        continue;
                }
                wrote = true;
                log_debug("cpu%u: %s=%s", now->cpu, cpufreq_attr_to_string(order[i]), value);

                if (order[i] == CPUFREQ_ATTR_GOVERNOR) {
                        CpufreqPolicyState again;

                        if (p->ops->read_policy(p->ops->userdata, now->cpu, &again) >= 0)
                                cpufreq_settings_from_state(&again, &cur);
                        else
                                strcpy(cur.governor, want->governor);
                }
        }
        return wrote;
}

/* --- journal entries -------------------------------------------------------------------------- */

/* Policies with the same values get one entry (usually all of them). */
typedef struct LogGroup {
        CpufreqSettings values;     /* .cpus = union */
} LogGroup;

static void group_add(LogGroup *g, size_t *n, const CpufreqSettings *s) {
        for (size_t i = 0; i < *n; i++)
                if (strcmp(g[i].values.governor, s->governor) == 0 && strcmp(g[i].values.epp, s->epp) == 0 &&
                    g[i].values.min_khz == s->min_khz && g[i].values.max_khz == s->max_khz) {
                        cpuset_or(&g[i].values.cpus, &s->cpus);
                        return;
                }
        g[(*n)++].values = *s;
}

static void group_log(const LogGroup *g, size_t n, bool pinned, const char *reason) {
        for (size_t i = 0; i < n; i++) {
                const CpufreqSettings *s = &g[i].values;
                char cpus[256], min[16], max[16];

                cpuset_format(&s->cpus, cpus, sizeof cpus);
                (void) snprintf(min, sizeof min, "%" PRIu32, s->min_khz);
                (void) snprintf(max, sizeof max, "%" PRIu32, s->max_khz);
                log_event(LOG_INFO, 0, pinned ? MSGID_CPU_PINNED : MSGID_CPU_RELEASED,
                          LOG_FIELDS({ "CPUFREQ_CPUS", cpus },
                                     { "CPUFREQ_GOVERNOR", s->governor },
                                     { "CPUFREQ_MIN_KHZ", min },
                                     { "CPUFREQ_MAX_KHZ", max },
                                     { "CPUFREQ_EPP", s->epp[0] ? s->epp : NULL },
                                     { "CPUFREQ_REASON", reason }),
                          "%s CPU frequency policy of cpu%s: governor %s, min %s kHz, max %s kHz%s%s (%s)",
                          pinned ? "Pinned" : "Restored", cpus, s->governor, min, max,
                          s->epp[0] ? ", epp " : "", s->epp, strempty(reason));
        }
}

static void log_refused(const CpufreqPolicyState *st, CpufreqAttr attr, const CpufreqSettings *want,
                        int error, const char *what, const char *reason) {
        char cpus[256], cpu[16], value[CPUFREQ_NAME_MAX];
        const char *file = cpufreq_attr_to_string(attr);

        cpuset_format(&st->cpus, cpus, sizeof cpus);
        (void) snprintf(cpu, sizeof cpu, "%u", st->cpu);
        cpufreq_attr_value(want, attr, value, sizeof value);
        log_event(LOG_WARNING, error, MSGID_CPU_PIN_FAILED,
                  LOG_FIELDS({ "CPUFREQ_CPUS", cpus },
                             { "CPUFREQ_CPU", cpu },
                             { "CPUFREQ_ATTR", file },
                             { "CPUFREQ_VALUE", value },
                             { "CPUFREQ_REASON", reason }),
                  "cpu%u: the kernel refused %s=%s: %m; %s cpu%s as it was",
                  st->cpu, file, value, what, cpus);
}

/* --- release ---------------------------------------------------------------------------------- */

/* Read the policy recorded as @s through any of its CPUs that is still there. */
static int read_saved_policy(CpuPin *p, const CpufreqSettings *s, CpufreqPolicyState *ret) {
        int r = p->ops->read_policy(p->ops->userdata, s->cpu, ret);

        for (unsigned cpu = 0; r < 0 && cpu < CPUSET_MAX; cpu++)
                if (cpu != s->cpu && cpuset_has(&s->cpus, cpu))
                        r = p->ops->read_policy(p->ops->userdata, cpu, ret);
        return r;
}

/*
 * A recorded policy that cannot be read back (an attribute unreadable or empty, e.g. a
 * write interrupted by SIGKILL in a fake tree, where a write is truncate + write) is
 * still ours to put back: write every recorded value without comparing. max, min, max:
 * whatever the current limits, the last two writes leave both as recorded.
 * Return: 0, or the first negative errno.
 */
static int policy_write_blind(CpuPin *p, const CpufreqSettings *want) {
        static const CpufreqAttr order[] = { CPUFREQ_ATTR_GOVERNOR, CPUFREQ_ATTR_MAX, CPUFREQ_ATTR_MIN,
                                             CPUFREQ_ATTR_MAX, CPUFREQ_ATTR_EPP };
        int ret = 0;

        for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                char value[CPUFREQ_NAME_MAX];
                int r;

                switch (order[i]) {
                case CPUFREQ_ATTR_GOVERNOR:
                        (void) snprintf(value, sizeof value, "%s", want->governor);
                        break;
                case CPUFREQ_ATTR_MIN:
                        (void) snprintf(value, sizeof value, "%" PRIu32, want->min_khz);
                        break;
                case CPUFREQ_ATTR_MAX:
                        (void) snprintf(value, sizeof value, "%" PRIu32, want->max_khz);
                        break;
                case CPUFREQ_ATTR_EPP:
                        if (!want->epp[0])
                                continue;
                        (void) snprintf(value, sizeof value, "%s", want->epp);
                        break;
                case _CPUFREQ_ATTR_MAX:
                case _CPUFREQ_ATTR_INVALID:
                        continue;
                }
                r = p->ops->write(p->ops->userdata, want->cpu, order[i], value);
                /* min before max may be refused the first time: only the final state counts */
                if (r < 0 && ret == 0 && !(order[i] == CPUFREQ_ATTR_MAX && i == 1))
                        ret = r;
        }
        return ret;
}

/*
 * Write @want to its policy (read through any of its CPUs). Each attribute the
 * kernel refuses is logged and skipped, and the others are still written: for
 * a restore, every attribute put back is one less wrong.
 * Return: 0 if everything holds now, else the first negative errno.
 */
static int policy_write_all(CpuPin *p, const CpufreqSettings *want, const char *what, const char *reason) {
        CpufreqSettings rest = *want;
        int ret = 0, r;

        for (unsigned tries = 0; tries <= _CPUFREQ_ATTR_MAX; tries++) {
                CpufreqPolicyState now;
                CpufreqAttr attr = CPUFREQ_ATTR_GOVERNOR;

                r = read_saved_policy(p, want, &now);
                if (r < 0) {
                        char cpus[256];

                        cpuset_format(&want->cpus, cpus, sizeof cpus);
                        log_event(LOG_WARNING, r, MSGID_CPU_PIN_FAILED,
                                  LOG_FIELDS({ "CPUFREQ_CPUS", cpus }, { "CPUFREQ_REASON", reason }),
                                  "cpu%s: cannot read the cpufreq policy (%m); writing the recorded values "
                                  "without comparing, %s", cpus, reason);
                        r = policy_write_blind(p, want);
                        return ret < 0 ? ret : r;
                }
                r = policy_write(p, &now, &rest, CPUFREQ_ATTRS_ALL, &attr);
                if (r >= 0)
                        break;
                log_refused(&now, attr, &rest, r, what, reason);
                if (ret == 0)
                        ret = r;
                settings_blank(&rest, attr);
        }
        return ret;
}

/* What becomes of one entry of the record during pin(). */
typedef enum EntryFate {
        ENTRY_KEEP,                /* still pinned, or not touched */
        ENTRY_RESTORE,             /* no longer selected: put back and forget */
        ENTRY_DROP,                /* a fresh pin that was refused and put back already: forget */
} EntryFate;

/* Restore entries [i] of p->saved whose @fate[i] is ENTRY_RESTORE (all when NULL); drop them from p->saved. */
static int restore_saved(CpuPin *p, const EntryFate *fate, const char *reason) {
        LogGroup *groups;
        size_t n_groups = 0, kept = 0;
        int ret = 0, r;

        if (p->n_saved == 0)
                return 0;
        groups = calloc(p->n_saved, sizeof *groups);
        if (!groups)
                return -ENOMEM;

        for (size_t i = 0; i < p->n_saved; i++) {
                const CpufreqSettings *s = &p->saved[i];

                if (fate && fate[i] != ENTRY_RESTORE) {
                        p->saved[kept++] = *s;
                        continue;
                }
                r = policy_write_all(p, s, "could not restore", reason);
                if (r < 0) {
                        if (ret == 0)
                                ret = r;
                        continue;
                }
                group_add(groups, &n_groups, s);
        }
        p->n_saved = kept;

        group_log(groups, n_groups, false, reason);
        free(groups);
        return ret;
}

int cpupin_release(CpuPin *p, const char *reason) {
        int r, k;

        p->busy_active = false;
        if (p->n_saved == 0)
                return 0;

        r = restore_saved(p, NULL, reason);
        /* Restored or not, the record has served: a retry at every start would not do better. */
        k = saved_store(p, NULL, 0);
        if (k < 0) {
                log_error_errno(k, "Failed to remove %s: %m", p->record_path);
                if (r == 0)
                        r = k;
        }
        free(p->saved);
        p->saved = NULL;
        p->n_saved = 0;
        return r;
}

int cpupin_recover(CpuPin *p) {
        _cleanup_free_ char *text = NULL;
        CpufreqSettings *v = NULL;
        size_t n = 0;
        int r;

        r = record_load(p->record_path, &text);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_error_errno(r, "Failed to read the recorded CPU frequency policy %s: %m",
                                       p->record_path);

        r = cpufreq_record_parse(text, &v, &n);
        if (r < 0) {
                log_error_errno(r, "%s is not a valid CPU frequency record, removing it without restoring "
                                "anything", p->record_path);
                r = saved_store(p, NULL, 0);
                return r < 0 ? log_error_errno(r, "Failed to remove %s: %m", p->record_path) : 0;
        }

        log_info("Found %s: an earlier instance did not stop cleanly; restoring %zu CPU frequency "
                 "polic%s", p->record_path, n, n == 1 ? "y" : "ies");
        /* Anything from this instance would be lost: recover runs before the first apply. */
        free(p->saved);
        p->saved = v;
        p->n_saved = n;
        if (n == 0) {
                r = saved_store(p, NULL, 0);
                return r < 0 ? log_error_errno(r, "Failed to remove %s: %m", p->record_path) : 1;
        }
        (void) cpupin_release(p, "restoring the state recorded before an unclean stop");
        return 1;
}

/* --- pin -------------------------------------------------------------------------------------- */

typedef enum PolicyAction {
        ACTION_NONE,
        ACTION_PIN,
        ACTION_RESTORE,
} PolicyAction;

/* One cpufreq policy as pin() sees it. */
typedef struct PinStep {
        const CpufreqPolicyState *st;   /* as read now */
        PolicyAction action;
        ssize_t slot;                   /* its entry in the record, or -1 */
        CpufreqSettings want;           /* ACTION_PIN: what to write */
} PinStep;

/* The record as pin() rebuilds it: p->saved's entries first, then the policies pinned afresh. */
typedef struct PinRecord {
        CpufreqSettings *saved;
        EntryFate *fate;
        size_t n;
        size_t n_old;                   /* entries [0, n_old) were in p->saved before */
        bool grew;
} PinRecord;

/* Decide what to do with one policy; a policy to be pinned afresh gets its record entry. */
static void pin_plan_one(const CpuConfig *cfg, const CpuSet *selected, PinStep *s, PinRecord *rec,
                         const char *reason) {
        ssize_t k = saved_find(rec->saved, rec->n, s->st);
        CpufreqSettings found;
        char error[512], cpus[256], cpu[16];
        int r;

        s->slot = k;
        s->action = k >= 0 ? ACTION_RESTORE : ACTION_NONE;
        if (!sets_overlap(&s->st->cpus, selected))
                return;
        if (k >= 0)
                found = rec->saved[k];
        else
                cpufreq_settings_from_state(s->st, &found);

        r = cpufreq_plan_policy(cfg, s->st, &found, &s->want, error, sizeof error);
        if (r < 0) {
                cpuset_format(&s->st->cpus, cpus, sizeof cpus);
                (void) snprintf(cpu, sizeof cpu, "%u", s->st->cpu);
                log_event(LOG_WARNING, r, MSGID_CPU_PIN_FAILED,
                          LOG_FIELDS({ "CPUFREQ_CPUS", cpus }, { "CPUFREQ_CPU", cpu }, { "CPUFREQ_REASON", reason }),
                          "cpu%s: not pinning: %s; leaving cpu%s as %s", cpus, error, cpus,
                          k >= 0 ? "first found" : "it is");
                return;
        }
        s->action = ACTION_PIN;
        if (k < 0) {
                s->slot = (ssize_t) rec->n;
                rec->saved[rec->n++] = found;
                rec->grew = true;
        }
}

/* Write one planned policy (or mark its entry for restoring). */
static void pin_act_one(CpuPin *p, const CpuConfig *cfg, const PinStep *s, PinRecord *rec, LogGroup *groups,
                        size_t *n_groups, const char *reason) {
        CpufreqAttr attr = CPUFREQ_ATTR_GOVERNOR;
        bool fresh = s->slot >= (ssize_t) rec->n_old;
        CpufreqSettings target, before;
        unsigned required;
        int r;

        if (s->action == ACTION_RESTORE)
                rec->fate[s->slot] = ENTRY_RESTORE;
        if (s->action != ACTION_PIN)
                return;

        required = cpufreq_config_attrs(cfg, s->st);
        target = s->want;
        /* A fresh pin writes only what is configured: the rest is as found, unless
         * the governor moves it (intel_pstate's EPP under `performance`), and then
         * the kernel knows better. An earlier pin's leftovers go back to the record. */
        if (fresh)
                for (CpufreqAttr a = 0; a < _CPUFREQ_ATTR_MAX; a++)
                        if (!(required & (1u << a)))
                                settings_blank(&target, a);
        r = policy_write(p, s->st, &target, required, &attr);
        if (r < 0) {
                log_refused(s->st, attr, &s->want, r, "leaving", reason);
                /* As it was before this call: pristine for a fresh policy, else the old pin. */
                cpufreq_settings_from_state(s->st, &before);
                (void) policy_write_all(p, &before, "could not put back", reason);
                if (fresh)
                        rec->fate[s->slot] = ENTRY_DROP;
                return;
        }
        /* Log newly pinned policies and changed pins; a re-apply that changes nothing is quiet. */
        if (fresh || r > 0)
                group_add(groups, n_groups, &s->want);
}

/* The record becomes p->saved, without the dropped entries; restore what is no longer selected. */
static void pin_settle(CpuPin *p, PinRecord *rec, const char *reason) {
        bool any_restore = false;
        size_t kept = 0;
        int r;

        for (size_t i = 0; i < rec->n; i++) {
                if (rec->fate[i] == ENTRY_DROP)
                        continue;
                rec->fate[kept] = rec->fate[i];
                rec->saved[kept++] = rec->saved[i];
                any_restore = any_restore || rec->fate[i] == ENTRY_RESTORE;
        }
        free(p->saved);
        p->saved = TAKE_PTR(rec->saved);   /* restore_saved() works on p->saved */
        p->n_saved = kept;
        if (any_restore)
                (void) restore_saved(p, rec->fate, reason);
        if (any_restore || rec->grew) {
                r = saved_store(p, p->saved, p->n_saved);
                if (r < 0)
                        log_warning_errno(r, "Failed to update %s: %m", p->record_path);
        }
}

static void log_selection(const CpuConfig *cfg, const CpuSet *selected, const CpuSet *missing, const char *reason) {
        char list[256];

        if (!cpuset_is_empty(missing)) {
                cpuset_format(missing, list, sizeof list);
                log_debug("cpu%s: selected but without cpufreq (offline or absent), ignored", list);
        }
        if (cpuset_is_empty(selected))
                log_info("CPU frequency pinning: no CPU selected%s (%s)",
                         cfg->select == CPU_SELECT_NVME_IRQ ? " (no NVMe interrupt known yet)" : "",
                         strempty(reason));
}

/* Plan every policy, record what is about to change, write, then restore what is no longer selected. */
static int pin(CpuPin *p, const CpuConfig *cfg, const char *reason) {
        _cleanup_free_ CpufreqPolicyState *st = NULL;
        _cleanup_free_ PinStep *steps = NULL;
        _cleanup_free_ LogGroup *groups = NULL;
        _cleanup_free_ CpufreqSettings *saved = NULL;
        _cleanup_free_ EntryFate *fate = NULL;
        CpuSet online, selected, missing;
        size_t n = 0, n_groups = 0;
        PinRecord rec;
        int r;

        r = read_policies(p, &st, &n, &online);
        if (cpufreq_missing(r)) {
                log_unavailable(p, r);
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to read the CPU frequency policies: %m");
        cpufreq_select_cpus(cfg, &online, p->have_irq_cpus ? &p->irq_cpus : NULL, &selected, &missing);
        log_selection(cfg, &selected, &missing, reason);

        /* Room for every old entry plus one new entry per policy. */
        steps = calloc(n + 1, sizeof *steps);
        groups = calloc(n + 1, sizeof *groups);
        saved = calloc(p->n_saved + n + 1, sizeof *saved);
        fate = calloc(p->n_saved + n + 1, sizeof *fate);
        if (!steps || !groups || !saved || !fate)
                return log_error_errno(-ENOMEM, "Out of memory");
        if (p->n_saved > 0)
                memcpy(saved, p->saved, p->n_saved * sizeof *saved);
        rec = (PinRecord) { .saved = TAKE_PTR(saved), .fate = fate, .n = p->n_saved, .n_old = p->n_saved };

        /* Plan. Nothing is written here. */
        for (size_t i = 0; i < n; i++) {
                steps[i].st = &st[i];
                pin_plan_one(cfg, &selected, &steps[i], &rec, reason);
        }
        /* Record every policy about to change before the first change (doc/testing.md#cpufreq-policies). */
        if (rec.grew) {
                r = saved_store(p, rec.saved, rec.n);
                if (r < 0) {
                        free(rec.saved);
                        return log_error_errno(r, "Failed to record the CPU frequency policies in %s, "
                                               "not pinning: %m", p->record_path);
                }
        }
        for (size_t i = 0; i < n; i++)
                pin_act_one(p, cfg, &steps[i], &rec, groups, &n_groups, reason);
        group_log(groups, n_groups, true, reason);
        pin_settle(p, &rec, reason);
        return 0;
}

int cpupin_apply(CpuPin *p, const CpuConfig *cfg, const CpuSet *nvme_irq_cpus, const char *reason) {
        CpuConfig copy;
        int r;

        r = cpu_config_copy(cfg, &copy);
        if (r < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        cpu_config_done(&p->cfg);
        p->cfg = copy;
        p->have_cfg = true;
        p->have_irq_cpus = nvme_irq_cpus != NULL;
        p->irq_cpus = nvme_irq_cpus ? *nvme_irq_cpus : (CpuSet) {};

        switch (cfg->pin) {
        case CPU_PIN_OFF:
                return cpupin_release(p, reason);
        case CPU_PIN_ALWAYS:
                p->busy_active = false;
                return pin(p, &p->cfg, reason);
        case CPU_PIN_BUSY:
                if (p->busy_active)
                        return pin(p, &p->cfg, reason);
                return cpupin_release(p, reason);
        case _CPU_PIN_MAX:
        case _CPU_PIN_INVALID:
                break;
        }
        return -EINVAL;
}

int cpupin_busy_hook(CpuPin *p, bool busy, uint64_t now_usec, uint64_t *ret_deadline_usec) {
        uint64_t hold, deadline = UINT64_MAX;
        int r = 0;

        if (!p->have_cfg || p->cfg.pin != CPU_PIN_BUSY) {
                if (ret_deadline_usec)
                        *ret_deadline_usec = UINT64_MAX;
                return 0;
        }
        hold = (uint64_t) p->cfg.release_after_ms * 1000;

        if (busy) {
                p->last_busy_usec = now_usec;
                if (!p->busy_active) {
                        r = pin(p, &p->cfg, "I/O on a watched drive");
                        /* Could not even record: try again on the next busy report. */
                        p->busy_active = r >= 0;
                }
                deadline = now_usec + hold;
        } else if (p->busy_active) {
                if (now_usec >= p->last_busy_usec + hold) {
                        char why[64];

                        (void) snprintf(why, sizeof why, "no I/O for %" PRIu32 " ms", p->cfg.release_after_ms);
                        r = cpupin_release(p, why);
                } else
                        deadline = p->last_busy_usec + hold;
        }

        if (r < 0)
                return r;
        if (ret_deadline_usec)
                *ret_deadline_usec = deadline;
        return 0;
}

/* --- plan ------------------------------------------------------------------------------------- */

int cpupin_describe(CpuPin *p, const CpuConfig *cfg, const CpuSet *nvme_irq_cpus, char **ret) {
        _cleanup_free_ CpufreqPolicyState *st = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0, size = 0;
        CpuSet online, selected, missing;
        FILE *f;
        int r;

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;

        switch (cfg->pin) {
        case CPU_PIN_OFF:
                fputs("CPU frequency: pin = off, left as it is\n", f);
                goto done;
        case CPU_PIN_ALWAYS:
                fputs("CPU frequency: pin = always, pinned while the daemon runs\n", f);
                break;
        case CPU_PIN_BUSY:
                fprintf(f, "CPU frequency: pin = busy, pinned while a watched drive has I/O, released after %"
                        PRIu32 " ms without\n", cfg->release_after_ms);
                break;
        case _CPU_PIN_MAX:
        case _CPU_PIN_INVALID:
                fputs("CPU frequency: invalid pin mode\n", f);
                goto done;
        }

        r = read_policies(p, &st, &n, &online);
        if (r < 0) {
                fprintf(f, "CPU frequency pinning is unavailable: %s\n",
                        cpufreq_missing(r) ? "no cpufreq in sysfs" : strerror(-r));
                goto done;
        }
        cpufreq_select_cpus(cfg, &online, nvme_irq_cpus, &selected, &missing);
        if (!cpuset_is_empty(&missing)) {
                char list[256];

                cpuset_format(&missing, list, sizeof list);
                fprintf(f, "cpu%s: no cpufreq (offline or absent), ignored\n", list);
        }
        if (cpuset_is_empty(&selected))
                fprintf(f, "no CPU selected%s\n",
                        cfg->select == CPU_SELECT_NVME_IRQ ? " (no NVMe interrupt known)" : "");

        for (size_t i = 0; i < n; i++) {
                ssize_t k = saved_find(p->saved, p->n_saved, &st[i]);
                CpufreqSettings found, want;
                char error[512], line[512];

                if (!sets_overlap(&st[i].cpus, &selected))
                        continue;
                if (k >= 0)
                        found = p->saved[k];
                else
                        cpufreq_settings_from_state(&st[i], &found);
                r = cpufreq_plan_policy(cfg, &st[i], &found, &want, error, sizeof error);
                if (r < 0) {
                        cpuset_format(&st[i].cpus, line, sizeof line);
                        fprintf(f, "cpu%s: refused, left as it is: %s\n", line, error);
                        continue;
                }
                cpufreq_describe(cfg, &want, line, sizeof line);
                fprintf(f, "%s\n", line);
        }

done:
        if (ferror(f)) {
                fclose(f);
                return -ENOMEM;
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}
