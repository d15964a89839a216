/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * APST table building (pure: no I/O, no logging).
 *
 * Set Features FID 0x0C takes 32 little-endian 64-bit entries; entry i says
 * what the controller does when idle in power state i: bits 7:3 ITPS (target
 * state), bits 31:8 ITPT (idle time in ms before the transition, 24 bits,
 * 0 = never), everything else reserved (doc/nvme-apst.md). CDW11 bit 0 is APSTE.
 *
 * Two policies sit behind apst_build():
 *  - APST_POLICY_KERNEL: bit-exact with Linux >= 5.14 nvme_configure_apst()
 *    (drivers/nvme/host/core.c, doc/kernel-apst.md), quirks included;
 *  - APST_POLICY_BUDGET: ours. The budget bounds the worst wait a command can
 *    see, enlat + exlat, and idle times come from break-even times (doc/energy-model.md).
 *
 * Every table built here has ITPT <= 0xFFFFFF, reserved bits zero, only
 * non-operational targets, and the Save bit is not ours to set (nvme-admin.c never sets it).
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idctrl.h"

#define APST_ENTRIES 32u
#define APST_ITPT_MAX 0xFFFFFFu          /* 24-bit field, ms */
/* PS0 idle power the budget policy assumes when psd[0] reports none: drives measure
 * 0.06-0.7 W idle in PS0 (doc/energy-model.md); 0.3 W sits inside that range. A higher P0 makes
 * sleeping pay off sooner (shorter idle times), a lower one later. */
#define APST_P0_DEFAULT_UW 300000u
#define APST_ITPS_SHIFT 3
#define APST_ITPT_SHIFT 8

typedef enum ApstPolicyKind {
        APST_POLICY_BUDGET,
        APST_POLICY_KERNEL,
        APST_POLICY_ADAPTIVE,              /* starts from apst_build()'s stall-bounded table, then adapt.c */
        _APST_POLICY_MAX,
        _APST_POLICY_INVALID = -EINVAL,
} ApstPolicyKind;

const char *apst_policy_to_string(ApstPolicyKind p);
ApstPolicyKind apst_policy_from_string(const char *s);

/* The knobs, named and defaulted like nvme_core's module parameters (doc/kernel-apst.md). */
/* Exit latencies per power state, in µs: bit N of @mask says psN's is in us[N]. */
typedef struct ApstExlat {
        uint32_t mask;
        uint32_t us[IDCTRL_MAX_PS];
} ApstExlat;

typedef struct ApstParams {
        ApstPolicyKind policy;             /* default APST_POLICY_ADAPTIVE */
        uint32_t max_latency_us;           /* default 100000; 0 = APST off (APSTE=0, all-zero table) */
        uint32_t primary_timeout_ms;       /* default 100 */
        uint32_t secondary_timeout_ms;     /* default 2000 */
        uint32_t primary_latency_tol_us;   /* default 15000 */
        uint32_t secondary_latency_tol_us; /* default 100000 */
        bool force;                        /* default false; true overrides the quirk list like force_apst */
        /* budget and adaptive: the share of elapsed time I/O may spend waiting for
         * wake-ups, in hundredths of a percent (100 = 1%); 0 = no wake-up may cost
         * anything. budget keeps it on every idle gap, adaptive on the observed I/O. */
        uint32_t stall_budget_pct_x100;
        /* budget and adaptive: plan with a calibration's measured exit latency where it is
         * larger than the descriptor's (calib.h); default true */
        bool use_calibration;
        /* [device NAME] exit_latency_us: measured exit latencies from the configuration (a drop-in
         * that `calibrate --drop-in` wrote on another machine); planned with as a calibration's are */
        ApstExlat exlat;
} ApstParams;

/* 1% of elapsed time: the seed job (13 s of sporadic small writes) may lose at most
 * 130 ms to wake-ups, not the 430 ms (3.3%) it lost on its drive; on the benchmark this
 * keeps the total wake delay at 0.45x the kernel's with the adaptive policy and 0.20x
 * with the budget policy (doc/policy.md). */
#define APST_STALL_BUDGET_DEFAULT_PCT_X100 100u
#define APST_STALL_BUDGET_MAX_PCT_X100 10000u

#define APST_PARAMS_DEFAULT                                                             \
        ((ApstParams) {                                                                 \
                .policy = APST_POLICY_ADAPTIVE,                                         \
                .max_latency_us = 100000,                                               \
                .primary_timeout_ms = 100,                                              \
                .secondary_timeout_ms = 2000,                                           \
                .primary_latency_tol_us = 15000,                                        \
                .secondary_latency_tol_us = 100000,                                     \
                .force = false,                                                         \
                .stall_budget_pct_x100 = APST_STALL_BUDGET_DEFAULT_PCT_X100,            \
                .use_calibration = true,                                                \
        })

/* Where the controller sits: what the kernel's quirk list matches on besides the model. */
typedef struct ApstPlatform {
        uint16_t pci_vendor;               /* 0 = unknown */
        uint16_t pci_device;
        const char *board_vendor;          /* DMI board_vendor, NULL = unknown/absent */
        const char *board_name;            /* DMI board_name, NULL = unknown/absent */
        const char *sys_vendor;            /* DMI sys_vendor, NULL = unknown/absent */
        const char *product_name;          /* DMI product_name, NULL = unknown/absent */
} ApstPlatform;

typedef enum ApstQuirk {
        APST_QUIRK_NO_APST = 1u << 0,       /* NVME_QUIRK_NO_APST */
        APST_QUIRK_NO_DEEPEST_PS = 1u << 1, /* NVME_QUIRK_NO_DEEPEST_PS */
} ApstQuirk;

/* What would be written: CDW11 bit 0 and the 256-byte payload (host order here). */
typedef struct ApstTable {
        bool apste;
        uint64_t entry[APST_ENTRIES];
} ApstTable;

typedef enum ApstOutcome {
        APST_OUTCOME_PROGRAM,              /* write the table (it may have APSTE=0) */
        APST_OUTCOME_UNSUPPORTED,          /* apsta = 0: send nothing, like the kernel */
        _APST_OUTCOME_MAX,
        _APST_OUTCOME_INVALID = -EINVAL,
} ApstOutcome;

typedef struct ApstPlan {
        ApstOutcome outcome;
        ApstTable table;
        unsigned quirks;                   /* ApstQuirk bits that matched (even when forced) */
        bool quirks_overridden;            /* force = yes ignored them */
        uint32_t worst_wake_us;            /* longest wait a command can see with this table:
                                            * max over reachable targets of enlat + exlat */
} ApstPlan;

/**
 * apst_quirks() - the kernel's quirk bits for this controller (doc/kernel-apst.md#quirks)
 *
 * Model entries match Identify vid + trimmed model exactly; DMI strings are
 * compared exactly like the kernel's dmi_match(), except that a trailing newline
 * (as read from /sys/class/dmi/id/) is ignored. @plat may be NULL (unknown).
 */
unsigned apst_quirks(const IdCtrl *id, const ApstPlatform *plat);

/**
 * apst_build() - plan the APST table for one controller
 * @id: decoded Identify Controller data
 * @plat: PCI ids and board, for quirks (may be NULL = unknown)
 * @params: policy and knobs
 * @ret: filled in on success
 *
 * Return: 0 or -ERANGE when id->npss > 31. apsta = 0 gives outcome UNSUPPORTED.
 */
int apst_build(const IdCtrl *id, const ApstPlatform *plat, const ApstParams *params, ApstPlan *ret);

/* What max_latency_us bounds for a state: the worst wait a command can see, entry + exit
 * latency (a command can arrive while the drive is still entering it). */
static inline bool apst_psd_within_budget(const IdPsd *psd, uint32_t max_latency_us) {
        return (uint64_t) psd->enlat_us + psd->exlat_us <= max_latency_us;
}

/**
 * apst_chain() - the states a budget or adaptive table may go to, shallow to deep:
 * non-operational, enlat + exlat <= max_latency_us, not excluded by @quirks
 * (effective quirk bits), each strictly below the previous one's power (PS0's first).
 * Return: how many (0..npss), written to @ret_states.
 */
unsigned apst_chain(const IdCtrl *id, unsigned quirks, const ApstParams *p, unsigned ret_states[IDCTRL_MAX_PS]);

/**
 * apst_table_from_chain() - the table that walks @states (ascending) with ITPT
 * @itpt_ms[k] before entering states[k], counted in the state before it
 * (PS0 for k = 0). Operational states and non-chain states go to the next chain
 * state below them after the ITPT of that step; the last chain state stays.
 * @n = 0 gives APSTE=1 with no transitions. ITPTs are clamped to 1..APST_ITPT_MAX.
 */
void apst_table_from_chain(const IdCtrl *id, const unsigned *states, const uint32_t *itpt_ms, unsigned n,
                           ApstTable *ret);

/**
 * apst_stall_bounded() - ITPTs for @chain such that every wake-up from states[k]
 * (at most enlat + exlat) follows an idle time of at least (enlat + exlat) / budget,
 * so on any workload wake-ups cost at most @budget_pct_x100 / 100 % of elapsed time (if the
 * drive keeps its word); never below each step's break-even time. 0 steps when
 * @budget_pct_x100 is 0. Return: the number of steps kept (a prefix of @chain).
 */
unsigned apst_stall_bounded(const IdCtrl *id, const unsigned *chain, unsigned n, uint32_t budget_pct_x100,
                            uint32_t ret_itpt_ms[IDCTRL_MAX_PS]);

/* Field helpers. */
static inline uint64_t apst_entry_make(unsigned itps, uint32_t itpt_ms) {
        return ((uint64_t) (itpt_ms & APST_ITPT_MAX) << APST_ITPT_SHIFT) |
               ((uint64_t) (itps & 0x1f) << APST_ITPS_SHIFT);
}
static inline unsigned apst_entry_itps(uint64_t e) {
        return (unsigned) (e >> APST_ITPS_SHIFT) & 0x1f;
}
static inline uint32_t apst_entry_itpt(uint64_t e) {
        return (uint32_t) (e >> APST_ITPT_SHIFT) & APST_ITPT_MAX;
}

bool apst_table_equal(const ApstTable *a, const ApstTable *b);
/* Every knob the same (the policy included). */
bool apst_params_equal(const ApstParams *a, const ApstParams *b);
/* The same states with the same latencies (what is outside @mask does not count). */
bool apst_exlat_equal(const ApstExlat *a, const ApstExlat *b);

/**
 * apst_table_check() - is this a table we may write to this controller?
 *
 * ITPT <= 0xFFFFFF by construction of the field, reserved bits (2:0, 63:32)
 * zero, targets only non-operational states <= npss, no entry beyond npss.
 * Return: 0 or -EINVAL.
 */
int apst_table_check(const ApstTable *t, const IdCtrl *id);

/**
 * apst_worst_wake_us() - the longest wait a command can see under table @t:
 * max over all target states reachable of enlat + exlat. 0 when APSTE=0.
 */
uint32_t apst_worst_wake_us(const ApstTable *t, const IdCtrl *id);

/**
 * apst_describe() - the transitions in words, e.g.
 * "ps0–ps2 → ps3 after 100 ms, ps3 → ps4 after 2000 ms; worst wake 10.3 ms",
 * or "APST disabled (APSTE=0)". Writes at most @n bytes (NUL-terminated).
 */
void apst_describe(const ApstTable *t, const IdCtrl *id, char *buf, size_t n);

/**
 * apst_summary() - a short form for STATUS= lines: "ps3@100ms→ps4@2000ms", "off".
 */
void apst_summary(const ApstTable *t, char *buf, size_t n);

/* 256-byte little-endian payload <-> table entries. */
void apst_table_to_wire(const ApstTable *t, uint8_t out[256]);
void apst_table_from_wire(const uint8_t in[256], bool apste, ApstTable *ret);

/* "0x%016llx" x 32 joined by spaces, for logs (APST_TABLE=); @n >= 32*19. */
void apst_table_to_hex(const ApstTable *t, char *buf, size_t n);
