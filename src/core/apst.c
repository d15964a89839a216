/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * APST table building (pure: no I/O, no logging, no globals but const tables).
 *
 * APST_POLICY_KERNEL follows Linux's nvme_configure_apst() in
 * drivers/nvme/host/core.c (unchanged since v5.14, commit ebd8a93aa4f5; rules in
 * doc/kernel-apst.md), with the quirks of core.c's core_quirks[], pci.c's nvme_id_table[]
 * and pci.c's check_vendor_combination_bug(), and nvme_init_identify()'s handling of
 * force_apst. It is written from those rules, not copied. The one deliberate
 * difference: the kernel shifts apst_primary/secondary_timeout_ms into the entry
 * unclamped, so a timeout above 2^24-1 ms spills into the reserved bits 63:32; we
 * clamp every ITPT to APST_ITPT_MAX.
 *
 * APST_POLICY_BUDGET is ours; doc/policy.md explains it. In short: the budget
 * (max_latency_us) bounds enlat + exlat of every target, the chain only ever goes to
 * lower power, and each state is entered at the latest of its break-even time
 * (doc/energy-model.md), the kernel's tier for its latency and (enlat + exlat) /
 * stall_budget_pct.
 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "apst.h"
#include "macro.h"
#include "string-table.h"

#define APST_ENTRY_RESERVED_MASK (UINT64_C(0xFFFFFFFF00000000) | UINT64_C(0x7))

static bool streq_ptr(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

static const char *const apst_policy_table[_APST_POLICY_MAX] = {
        [APST_POLICY_BUDGET] = "budget",
        [APST_POLICY_KERNEL] = "kernel",
        [APST_POLICY_ADAPTIVE] = "adaptive",
};

DEFINE_STRING_TABLE_LOOKUP(apst_policy, ApstPolicyKind);

/*
 * Quirks
 */

/* core.c core_quirks[]: Identify vid + model (the kernel compares the space-padded field
 * exactly, which is equality on our trimmed string). Only the APST-relevant entries. */
static const struct {
        uint16_t vid;
        const char *model;
        unsigned quirks;
} model_quirks[] = {
        /* Toshiba: dies using any APST state (Launchpad #1678184). */
        { 0x1179, "THNSF5256GPUK TOSHIBA", APST_QUIRK_NO_APST },
        /* Kioxia CD6-V / HPE PE8030: I/O timeouts under load with APST. */
        { 0x1e0f, "KCD6XVUL6T40", APST_QUIRK_NO_APST },
        /* External Samsung X5: shares its PCI id with the 970 EVO Plus, hence matched by model. */
        { 0x144d, "Samsung Portable SSD X5", APST_QUIRK_NO_DEEPEST_PS },
};

/* pci.c nvme_id_table[]: the entries whose driver_data has NVME_QUIRK_NO_DEEPEST_PS. */
static const struct {
        uint16_t vendor;
        uint16_t device;
} pci_no_deepest_ps[] = {
        { 0x8086, 0xf1a5 }, /* Intel 600P/P3100 */
        { 0x126f, 0x1001 }, /* Silicon Motion generic */
        { 0x126f, 0x2262 }, /* Silicon Motion generic */
        { 0x15b7, 0x5009 }, /* Sandisk/WD SN550 */
        { 0x1cc1, 0x8201 }, /* ADATA SX8200PNP 512GB */
        { 0x2646, 0x2262 }, /* Kingston SKC2000 */
        { 0x2646, 0x2263 }, /* Kingston A2000 */
        { 0x1e49, 0x0021 }, /* ZHITAI TiPro5000 */
        { 0x1e49, 0x0041 }, /* ZHITAI TiPro7000 */
        { 0x025e, 0xf1ac }, /* Solidigm P44 Pro */
};

/* The kernel's dmi_match() is strcmp() against the DMI string; sysfs adds a newline,
 * which a caller may have left in: ignore trailing newlines on our side only. */
static bool dmi_is(const char *field, const char *want) {
        size_t n;

        if (!field)
                return false;
        n = strlen(field);
        while (n > 0 && field[n - 1] == '\n')
                n--;
        return n == strlen(want) && memcmp(field, want, n) == 0;
}

/* pci.c check_vendor_combination_bug(), APST-relevant branches, in its order (it returns
 * the first match, so the board-wide LXKT check is not reached for a matched Samsung). */
static unsigned platform_quirks(const ApstPlatform *p) {
        if (p->pci_vendor == 0x144d && p->pci_device == 0xa802) {
                /* SM951/PM951/950 PRO drop off the bus in the deepest state on two Dell laptops. */
                if (dmi_is(p->sys_vendor, "Dell Inc.") &&
                    (dmi_is(p->product_name, "XPS 15 9550") || dmi_is(p->product_name, "Precision 5510")))
                        return APST_QUIRK_NO_DEEPEST_PS;
        } else if (p->pci_vendor == 0x144d && p->pci_device == 0xa804) {
                /* 960 EVO drops off the bus on two ASUS boards. */
                if (dmi_is(p->board_vendor, "ASUSTeK COMPUTER INC.") &&
                    (dmi_is(p->board_name, "PRIME B350M-A") || dmi_is(p->board_name, "PRIME Z370-A")))
                        return APST_QUIRK_NO_APST;
        }
        /* Lenovo N60z: any NVMe drive may not wake up after hours idle. */
        if (dmi_is(p->board_name, "LXKT-ZXEG-N6"))
                return APST_QUIRK_NO_APST;
        return 0;
}

unsigned apst_quirks(const IdCtrl *id, const ApstPlatform *plat) {
        unsigned q = 0;

        if (id)
                for (size_t i = 0; i < ELEMENTSOF(model_quirks); i++)
                        if (id->vid == model_quirks[i].vid && streq_ptr(id->model, model_quirks[i].model))
                                q |= model_quirks[i].quirks;

        if (plat) {
                for (size_t i = 0; i < ELEMENTSOF(pci_no_deepest_ps); i++)
                        if (plat->pci_vendor == pci_no_deepest_ps[i].vendor &&
                            plat->pci_device == pci_no_deepest_ps[i].device)
                                q |= APST_QUIRK_NO_DEEPEST_PS;
                q |= platform_quirks(plat);
        }
        return q;
}

/*
 * Policies. Both fill @t (already zeroed) for an APST-capable, not disabled controller.
 */

static uint32_t clamp_itpt(uint64_t ms) {
        return ms > APST_ITPT_MAX ? APST_ITPT_MAX : (uint32_t) ms;
}

/*
 * nvme_apst_get_transition_time(): which timeout a state with this total latency gets, if
 * any. @last_index is 1 once a primary target was taken, 2 after a secondary one; deeper
 * states are seen first, so each tier is used at most once and never above a shallower tier.
 */
static bool kernel_transition_time(const ApstParams *p, uint64_t total_us, uint64_t *ret_ms, unsigned *last_index) {
        if (total_us <= p->primary_latency_tol_us) {
                if (*last_index == 1)
                        return false;
                *last_index = 1;
                *ret_ms = p->primary_timeout_ms;
                return true;
        }
        if (p->secondary_timeout_ms != 0 && total_us <= p->secondary_latency_tol_us) {
                if (*last_index <= 2)
                        return false;
                *last_index = 2;
                *ret_ms = p->secondary_timeout_ms;
                return true;
        }
        return false;
}

static void build_kernel(const IdCtrl *id, unsigned quirks, const ApstParams *p, ApstTable *t) {
        unsigned last_index = UINT_MAX;
        uint64_t target = 0;

        /* From the deepest state up: each state gets the last target accepted below it. */
        for (int state = id->npss; state >= 0; state--) {
                const IdPsd *psd = &id->psd[state];
                uint64_t total_us, ms;

                if (target != 0)
                        t->entry[state] = target;

                if (state == id->npss && (quirks & APST_QUIRK_NO_DEEPEST_PS))
                        continue;
                if (!psd->non_operational)
                        continue;
                /* Exit latency alone, since da87591bea92 (2017); before that it was enlat + exlat. */
                if (psd->exlat_us > p->max_latency_us)
                        continue;

                total_us = (uint64_t) psd->enlat_us + psd->exlat_us;
                if (p->primary_timeout_ms != 0 && p->primary_latency_tol_us != 0) {
                        if (!kernel_transition_time(p, total_us, &ms, &last_index))
                                continue;
                } else
                        /* Legacy: 2% of the time in transitions, i.e. wait 50 x total: ceil(total/20) ms. */
                        ms = (total_us + 19) / 20;

                /* The legacy path clamps to 2^24-1 in the kernel too; the modern one does not (see top). */
                target = apst_entry_make((unsigned) state, clamp_itpt(ms));
        }
}

/* Power in a non-operational state: its idle power when reported, else its max power
 * (which for a state that processes no commands is what it draws). */
static uint64_t state_power_uw(const IdPsd *psd) {
        return psd->idle_power_uw != 0 ? psd->idle_power_uw : psd->max_power_uw;
}

static uint32_t us_to_itpt(uint64_t us) {
        uint64_t ms = us / 1000 + (us % 1000 != 0);

        return clamp_itpt(MAX(ms, UINT64_C(1)));
}

/*
 * Break-even idle time for going from a state drawing @from_uw to target @to, with both
 * transitions (e + x) charged at P0 (doc/energy-model.md): staying costs from·T, going costs
 * P0·(e+x) + to·(T − (e+x)); they are equal at T = (e+x)·(P0 − to)/(from − to).
 * From the operational states (from = P0) this is e + x. Callers ensure from > to.
 * Bounds: a chain target has e + x <= budget < 2^32 µs and P0 − to < 2^32 µW, so the
 * product stays below 2^64 whatever IdCtrl a simulator feeds us.
 */
static uint64_t break_even_us(uint64_t p0_uw, uint64_t from_uw, const IdPsd *to) {
        uint64_t tau = (uint64_t) to->enlat_us + to->exlat_us;
        uint64_t to_uw = state_power_uw(to);
        uint64_t num, den;

        if (from_uw >= p0_uw)
                return tau;
        num = tau * (p0_uw - to_uw);
        den = from_uw - to_uw;
        return num / den + (num % den != 0);
}

unsigned apst_chain(const IdCtrl *id, unsigned quirks, const ApstParams *p, unsigned ret_states[IDCTRL_MAX_PS]) {
        const uint64_t p0_uw = id->psd[0].idle_power_uw != 0 ? id->psd[0].idle_power_uw : APST_P0_DEFAULT_UW;
        uint64_t prev_uw = p0_uw;
        unsigned n = 0;

        /* Non-operational states, shallow to deep, each within the budget and strictly below
         * the previous one's power (PS0's first). ps0 is never a target: nothing is above it. */
        for (unsigned s = 1; s <= id->npss && s < IDCTRL_MAX_PS; s++) {
                const IdPsd *psd = &id->psd[s];

                if (!psd->non_operational)
                        continue;
                if (s == id->npss && (quirks & APST_QUIRK_NO_DEEPEST_PS))
                        continue;
                if (!apst_psd_within_budget(psd, p->max_latency_us))
                        continue;
                if (state_power_uw(psd) >= prev_uw)
                        continue;
                ret_states[n++] = s;
                prev_uw = state_power_uw(psd);
        }
        return n;
}

void apst_table_from_chain(const IdCtrl *id, const unsigned *states, const uint32_t *itpt_ms, unsigned n,
                           ApstTable *ret) {
        ApstTable t = { .apste = true };

        for (unsigned s = 0, k = 0; s <= id->npss && s < APST_ENTRIES && k < n; s++) {
                while (k < n && states[k] <= s)
                        k++;
                if (k == n)
                        break;
                t.entry[s] = apst_entry_make(states[k], clamp_itpt(MAX(itpt_ms[k], UINT32_C(1))));
        }
        *ret = t;
}

/* The break-even ITPT of each step of @chain (doc/energy-model.md), ms. */
static void chain_break_even(const IdCtrl *id, const unsigned *chain, unsigned n, uint32_t *ret_ms) {
        const uint64_t p0_uw = id->psd[0].idle_power_uw != 0 ? id->psd[0].idle_power_uw : APST_P0_DEFAULT_UW;

        for (unsigned k = 0; k < n; k++) {
                uint64_t from_uw = k > 0 ? state_power_uw(&id->psd[chain[k - 1]]) : p0_uw;
                ret_ms[k] = us_to_itpt(break_even_us(p0_uw, from_uw, &id->psd[chain[k]]));
        }
}

/* The idle time, from the last completion, before a wake-up from chain state @psd may
 * cost its whole enlat + exlat: tau / budget, in ms rounded up. */
static uint64_t stall_start_ms(const IdPsd *psd, uint32_t budget_pct_x100) {
        uint64_t tau_us = (uint64_t) psd->enlat_us + psd->exlat_us;

        return (tau_us * 10000 + (uint64_t) budget_pct_x100 * 1000 - 1) / ((uint64_t) budget_pct_x100 * 1000);
}

/*
 * The kernel's tier for a state with total latency @tau_us (nvme_apst_get_transition_time(),
 * doc/kernel-apst.md): primary_timeout_ms up to primary_latency_tol_us, else
 * secondary_timeout_ms (also beyond secondary_latency_tol_us, which only a raised
 * max_latency_us lets into the chain). 0 when the kernel would use its legacy rule.
 */
static uint64_t kernel_tier_ms(const ApstParams *p, uint64_t tau_us) {
        if (p->primary_timeout_ms == 0 || p->primary_latency_tol_us == 0)
                return 0;
        if (tau_us <= p->primary_latency_tol_us || p->secondary_timeout_ms == 0)
                return p->primary_timeout_ms;
        return MAX(p->secondary_timeout_ms, p->primary_timeout_ms);
}

/* When chain state @psd may be entered at the earliest, from the last completion: tau /
 * budget, and with @tiers no earlier than the kernel's tier for it. */
static uint64_t earliest_start_ms(const IdPsd *psd, uint32_t budget_pct_x100, const ApstParams *tiers) {
        uint64_t start_ms = stall_start_ms(psd, budget_pct_x100);

        if (tiers)
                start_ms = MAX(start_ms, kernel_tier_ms(tiers, (uint64_t) psd->enlat_us + psd->exlat_us));
        return start_ms;
}

static unsigned stall_bounded(const IdCtrl *id, const unsigned *chain, unsigned n, uint32_t budget_pct_x100,
                              const ApstParams *tiers, uint32_t ret_itpt_ms[IDCTRL_MAX_PS]) {
        uint32_t be[IDCTRL_MAX_PS];
        uint64_t reach_ms = 0;      /* when the previous step's entry is over, from the last completion */

        if (budget_pct_x100 == 0)
                return 0;
        chain_break_even(id, chain, n, be);
        for (unsigned k = 0; k < n; k++) {
                const IdPsd *psd = &id->psd[chain[k]];
                /* A wake-up during or after this entry costs at most tau; the idle time before
                 * the entry starts must be at least tau / budget. */
                uint64_t start_ms = earliest_start_ms(psd, budget_pct_x100, tiers);
                uint64_t itpt = start_ms > reach_ms ? start_ms - reach_ms : 1;

                itpt = MAX(itpt, (uint64_t) be[k]);
                if (reach_ms + itpt > APST_ITPT_MAX)
                        return k;
                ret_itpt_ms[k] = (uint32_t) itpt;
                reach_ms += itpt + (psd->enlat_us + 999) / 1000;
        }
        return n;
}

unsigned apst_stall_bounded(const IdCtrl *id, const unsigned *chain, unsigned n, uint32_t budget_pct_x100,
                            uint32_t ret_itpt_ms[IDCTRL_MAX_PS]) {
        return stall_bounded(id, chain, n, budget_pct_x100, NULL, ret_itpt_ms);
}

static void build_budget(const IdCtrl *id, unsigned quirks, const ApstParams *p, ApstTable *t) {
        unsigned chain[IDCTRL_MAX_PS] = {};   /* stall_bounded() may shorten n; the analyzer cannot tell */
        uint32_t itpt[IDCTRL_MAX_PS];
        unsigned n = apst_chain(id, quirks, p, chain);

        /* Each chain state is entered no earlier than its break-even time, no earlier than
         * the kernel would enter a state of its latency (its tier: primary_timeout_ms or
         * secondary_timeout_ms), and no earlier than tau / stall budget after the last
         * completion, so an idle gap of any length loses at most the stall budget's share
         * of itself to the wake-up that ends it. Every state above a chain state goes to
         * the next chain state below it. The deepest chain state stays. */
        n = stall_bounded(id, chain, n, p->stall_budget_pct_x100, p, itpt);
        if (n == 0)
                return;
        apst_table_from_chain(id, chain, itpt, n, t);
        /* A state off the chain (operational, or skipped) leaves from PS0-like power, from
         * the last completion: the later of the target's break-even against PS0 and the
         * target's stall-bounded start. */
        const uint64_t p0_uw = id->psd[0].idle_power_uw != 0 ? id->psd[0].idle_power_uw : APST_P0_DEFAULT_UW;
        for (unsigned s = 0, k = 0; s <= id->npss && k < n; s++) {
                bool on_chain = false;
                for (unsigned j = 0; j < n; j++)
                        on_chain = on_chain || chain[j] == s;
                while (k < n && chain[k] <= s)
                        k++;
                if (k == n)
                        break;
                if (!on_chain) {
                        const IdPsd *to = &id->psd[chain[k]];
                        uint64_t ms = MAX((uint64_t) us_to_itpt(break_even_us(p0_uw, p0_uw, to)),
                                          earliest_start_ms(to, p->stall_budget_pct_x100, p));
                        t->entry[s] = apst_entry_make(chain[k], clamp_itpt(ms));
                }
        }
}

static void build_adaptive_start(const IdCtrl *id, unsigned quirks, const ApstParams *p, ApstTable *t) {
        unsigned chain[IDCTRL_MAX_PS];
        uint32_t itpt[IDCTRL_MAX_PS];
        unsigned n = apst_chain(id, quirks, p, chain);

        n = apst_stall_bounded(id, chain, n, p->stall_budget_pct_x100, itpt);
        apst_table_from_chain(id, chain, itpt, n, t);
}

int apst_build(const IdCtrl *id, const ApstPlatform *plat, const ApstParams *params, ApstPlan *ret) {
        ApstPlan plan = {};
        unsigned effective;

        if (!id || !params || !ret)
                return -EINVAL;
        if (id->npss >= IDCTRL_MAX_PS)
                return -ERANGE;
        if (params->policy < 0 || params->policy >= _APST_POLICY_MAX)
                return -EINVAL;

        plan.quirks = apst_quirks(id, plat);
        /* Like force_apst, which nvme_init_identify() applies to NO_APST and NO_DEEPEST_PS alike. */
        plan.quirks_overridden = params->force && plan.quirks != 0;
        effective = params->force ? 0 : plan.quirks;

        if (!id->apst_supported) {
                /* The kernel sends nothing, force_apst or not. */
                plan.outcome = APST_OUTCOME_UNSUPPORTED;
                *ret = plan;
                return 0;
        }

        plan.outcome = APST_OUTCOME_PROGRAM;
        if ((effective & APST_QUIRK_NO_APST) || params->max_latency_us == 0) {
                /* APSTE=0 with an all-zero table. */
                *ret = plan;
                return 0;
        }

        plan.table.apste = true;
        switch (params->policy) {
        case APST_POLICY_KERNEL:
                build_kernel(id, effective, params, &plan.table);
                break;
        case APST_POLICY_BUDGET:
                build_budget(id, effective, params, &plan.table);
                break;
        case APST_POLICY_ADAPTIVE:
                build_adaptive_start(id, effective, params, &plan.table);
                break;
        case _APST_POLICY_MAX:
        case _APST_POLICY_INVALID:
                return -EINVAL;
        }
        plan.worst_wake_us = apst_worst_wake_us(&plan.table, id);

        *ret = plan;
        return 0;
}

/*
 * Inspecting tables
 */

bool apst_table_equal(const ApstTable *a, const ApstTable *b) {
        return a->apste == b->apste && memcmp(a->entry, b->entry, sizeof(a->entry)) == 0;
}

int apst_table_check(const ApstTable *t, const IdCtrl *id) {
        if (!t || !id || id->npss >= IDCTRL_MAX_PS)
                return -EINVAL;

        for (unsigned i = 0; i < APST_ENTRIES; i++) {
                uint64_t e = t->entry[i];
                unsigned itps;

                if (e == 0)
                        continue;
                if (e & APST_ENTRY_RESERVED_MASK)
                        return -EINVAL;
                if (i > id->npss)
                        return -EINVAL;
                itps = apst_entry_itps(e);
                if (itps > id->npss || !id->psd[itps].non_operational)
                        return -EINVAL;
        }
        return 0;
}

/* Bit i set: the controller can be in state i with this table, starting from any operational
 * state the host may select (ps0 always), following entries with a non-zero ITPT. */
static uint32_t reachable_states(const ApstTable *t, const IdCtrl *id) {
        uint32_t seen = 0, todo = 1;

        for (unsigned s = 0; s <= id->npss && s < IDCTRL_MAX_PS; s++)
                if (!id->psd[s].non_operational)
                        todo |= UINT32_C(1) << s;

        while (todo != 0) {
                unsigned s = (unsigned) __builtin_ctz(todo);
                uint64_t e = t->entry[s];

                todo &= ~(UINT32_C(1) << s);
                seen |= UINT32_C(1) << s;
                if (apst_entry_itpt(e) != 0) {
                        unsigned to = apst_entry_itps(e);

                        if (to < APST_ENTRIES && !(seen & (UINT32_C(1) << to)))
                                todo |= UINT32_C(1) << to;
                }
        }
        return seen;
}

uint32_t apst_worst_wake_us(const ApstTable *t, const IdCtrl *id) {
        uint64_t worst = 0;
        uint32_t reach;

        if (!t || !id || !t->apste || id->npss >= IDCTRL_MAX_PS)
                return 0;

        reach = reachable_states(t, id);
        for (unsigned s = 0; s < APST_ENTRIES; s++) {
                uint64_t e = t->entry[s];
                unsigned to;

                if (!(reach & (UINT32_C(1) << s)) || apst_entry_itpt(e) == 0)
                        continue;
                to = apst_entry_itps(e);
                if (to > id->npss)
                        continue;
                worst = MAX(worst, (uint64_t) id->psd[to].enlat_us + id->psd[to].exlat_us);
        }
        return worst > UINT32_MAX ? UINT32_MAX : (uint32_t) worst;
}

/* Bounded appending to a fixed buffer: never overflows, always NUL-terminated when n > 0. */
typedef struct Appender {
        char *buf;
        size_t n;
        size_t pos;
} Appender;

_printf_(2, 3) static void append(Appender *a, const char *fmt, ...) {
        va_list ap;
        int k;

        if (a->n == 0 || a->pos >= a->n - 1)
                return;
        va_start(ap, fmt);
        k = vsnprintf(a->buf + a->pos, a->n - a->pos, fmt, ap);
        va_end(ap);
        if (k < 0)
                return;
        if (a->pos + (size_t) k <= a->n - 1) {
                a->pos += (size_t) k;
                return;
        }

        /* Truncated: do not leave half of a UTF-8 sequence ("→", "–") at the end. */
        a->pos = a->n - 1;
        for (size_t back = 0; back < 4 && back < a->pos; back++) {
                unsigned char ch = (unsigned char) a->buf[a->pos - 1 - back];
                size_t need;

                if ((ch & 0xc0) == 0x80)
                        continue;       /* continuation byte: keep looking for the lead byte */
                need = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc0 ? 2 : 1;
                if (need > back + 1)
                        a->pos -= back + 1;
                break;
        }
        a->buf[a->pos] = '\0';
}

static void append_state_range(Appender *a, unsigned first, unsigned last) {
        if (first == last)
                append(a, "ps%u", first);
        else
                append(a, "ps%u–ps%u", first, last);
}

void apst_describe(const ApstTable *t, const IdCtrl *id, char *buf, size_t n) {
        Appender a = { .buf = buf, .n = n };
        unsigned npss, groups = 0;
        uint32_t worst;

        if (!buf || n == 0)
                return;
        buf[0] = '\0';
        if (!t || !id)
                return;
        if (!t->apste) {
                append(&a, "APST disabled (APSTE=0)");
                return;
        }

        npss = MIN((unsigned) id->npss, APST_ENTRIES - 1);
        for (unsigned s = 0; s <= npss;) {
                uint64_t e = t->entry[s];
                unsigned last = s;

                /* cppcheck 2.10 thinks npss < 1 here (it misreads the MIN() above): false positive */
                /* cppcheck-suppress knownConditionTrueFalse */
                while (last + 1 <= npss && t->entry[last + 1] == e)
                        last++;
                if (apst_entry_itpt(e) != 0) {
                        if (groups++ > 0)
                                append(&a, ", ");
                        append_state_range(&a, s, last);
                        append(&a, " → ps%u after %" PRIu32 " ms", apst_entry_itps(e), apst_entry_itpt(e));
                }
                s = last + 1;
        }
        if (groups == 0) {
                append(&a, "no idle transitions");
                return;
        }

        /* One decimal, rounded to the nearest 0.1 ms. */
        worst = apst_worst_wake_us(t, id);
        append(&a, "; worst wake %" PRIu64 ".%" PRIu64 " ms", ((uint64_t) worst + 50) / 1000,
               (((uint64_t) worst + 50) / 100) % 10);
}

void apst_summary(const ApstTable *t, char *buf, size_t n) {
        Appender a = { .buf = buf, .n = n };
        uint32_t seen = 1;
        unsigned s = 0;

        if (!buf || n == 0)
                return;
        buf[0] = '\0';
        if (!t)
                return;
        if (!t->apste) {
                append(&a, "off");
                return;
        }

        /* Follow the chain from ps0 until a state without a transition, or a loop. */
        for (unsigned steps = 0; steps < APST_ENTRIES; steps++) {
                uint64_t e = t->entry[s];
                unsigned to = apst_entry_itps(e);

                if (apst_entry_itpt(e) == 0)
                        break;
                append(&a, "%sps%u@%" PRIu32 "ms", steps > 0 ? "→" : "", to, apst_entry_itpt(e));
                if (seen & (UINT32_C(1) << to))
                        break;
                seen |= UINT32_C(1) << to;
                s = to;
        }
        if (a.pos == 0)
                append(&a, "none");
}

void apst_table_to_wire(const ApstTable *t, uint8_t out[256]) {
        for (unsigned i = 0; i < APST_ENTRIES; i++)
                for (unsigned b = 0; b < 8; b++)
                        out[8 * i + b] = (uint8_t) (t->entry[i] >> (8 * b));
}

void apst_table_from_wire(const uint8_t in[256], bool apste, ApstTable *ret) {
        ApstTable t = { .apste = apste };

        for (unsigned i = 0; i < APST_ENTRIES; i++)
                for (unsigned b = 0; b < 8; b++)
                        t.entry[i] |= (uint64_t) in[8 * i + b] << (8 * b);
        *ret = t;
}

void apst_table_to_hex(const ApstTable *t, char *buf, size_t n) {
        Appender a = { .buf = buf, .n = n };

        if (!buf || n == 0)
                return;
        buf[0] = '\0';
        for (unsigned i = 0; i < APST_ENTRIES; i++)
                append(&a, "%s0x%016" PRIx64, i > 0 ? " " : "", t->entry[i]);
}

bool apst_params_equal(const ApstParams *a, const ApstParams *b) {
        return a->policy == b->policy && a->max_latency_us == b->max_latency_us &&
               a->primary_timeout_ms == b->primary_timeout_ms && a->secondary_timeout_ms == b->secondary_timeout_ms &&
               a->primary_latency_tol_us == b->primary_latency_tol_us &&
               a->secondary_latency_tol_us == b->secondary_latency_tol_us && a->force == b->force &&
               a->stall_budget_pct_x100 == b->stall_budget_pct_x100 && a->use_calibration == b->use_calibration &&
               apst_exlat_equal(&a->exlat, &b->exlat);
}

bool apst_exlat_equal(const ApstExlat *a, const ApstExlat *b) {
        if (a->mask != b->mask)
                return false;
        for (unsigned ps = 0; ps < IDCTRL_MAX_PS; ps++)
                if ((a->mask & (1u << ps)) && a->us[ps] != b->us[ps])
                        return false;
        return true;
}
