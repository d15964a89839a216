/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pure per-controller planning glue; see device.h. */

#include <stdio.h>
#include <string.h>

#include "device.h"
#include "string-table.h"

static const char *const device_verdict_table[_DEVICE_VERDICT_MAX] = {
        [DEVICE_MANAGE] = "managed",
        [DEVICE_UNSUPPORTED] = "unsupported",
        [DEVICE_DISABLED] = "disabled",
        [DEVICE_NOT_PCIE] = "not-pcie",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(device_verdict, DeviceVerdict);

const char *device_verdict_reason(DeviceVerdict v) {
        switch (v) {
        case DEVICE_MANAGE:
                return "managed";
        case DEVICE_UNSUPPORTED:
                return "the controller does not support APST (apsta = 0)";
        case DEVICE_DISABLED:
                return "enable = no in its [device] section";
        case DEVICE_NOT_PCIE:
                return "not a PCIe controller";
        case _DEVICE_VERDICT_MAX:
        case _DEVICE_VERDICT_INVALID:
                break;
        }
        return "invalid";
}

void device_quirks_to_string(unsigned quirks, char *buf, size_t n) {
        (void) snprintf(buf, n, "%s%s%s", quirks & APST_QUIRK_NO_APST ? "no-apst" : "",
                        (quirks & APST_QUIRK_NO_APST) && (quirks & APST_QUIRK_NO_DEEPEST_PS) ? " " : "",
                        quirks & APST_QUIRK_NO_DEEPEST_PS ? "no-deepest-ps" : "");
        if (quirks == 0)
                (void) snprintf(buf, n, "none");
}

static const char *nonempty(const char *s) {
        return s && *s ? s : NULL;
}

void device_apst_platform(const SysPlatform *plat, const SysCtrl *sys, ApstPlatform *ret) {
        ApstPlatform ap = {};

        if (sys) {
                ap.pci_vendor = sys->pci_vendor;
                ap.pci_device = sys->pci_device;
        }
        if (plat) {
                ap.board_vendor = nonempty(plat->board_vendor);
                ap.board_name = nonempty(plat->board_name);
                ap.sys_vendor = nonempty(plat->sys_vendor);
                ap.product_name = nonempty(plat->product_name);
        }
        *ret = ap;
}

int device_plan(const Config *cfg, const SysPlatform *plat, const char *name, const SysCtrl *sys,
                const IdCtrl *id, DevicePlan *ret) {
        return device_plan_calibrated(cfg, plat, name, sys, id, NULL, ret);
}

/* @calib (may be NULL) with @x's latencies merged in (calib_raise(): the larger stays). false: nothing. */
static bool calib_with_config(const Calibration *calib, const IdCtrl *id, const ApstExlat *x, Calibration *ret) {
        if (!calib && x->mask == 0)
                return false;
        if (calib)
                *ret = *calib;
        else {
                *ret = (Calibration) {};
                (void) snprintf(ret->model, sizeof ret->model, "%s", id->model);
                (void) snprintf(ret->firmware, sizeof ret->firmware, "%s", id->firmware);
        }
        for (unsigned ps = 0; ps <= id->npss && ps < IDCTRL_MAX_PS; ps++)
                if (x->mask & (1u << ps))
                        (void) calib_raise(ret, id, (uint8_t) ps, x->us[ps], 0);
        return true;
}

int device_plan_calibrated(const Config *cfg, const SysPlatform *plat, const char *name, const SysCtrl *sys,
                           const IdCtrl *id, const Calibration *calib, DevicePlan *ret) {
        return device_plan_capped(cfg, plat, name, sys, id, calib, DEVICE_NO_CAP, ret);
}

int device_plan_capped(const Config *cfg, const SysPlatform *plat, const char *name, const SysCtrl *sys,
                       const IdCtrl *id, const Calibration *calib, uint32_t cap_us, DevicePlan *ret) {
        DevicePlan d = { .plan_id = *id };
        ApstPlatform ap;
        DeviceIdent ident = {
                .name = name,
                .model = id->model,
                .serial = id->serial,
                .firmware = id->firmware,
        };
        int r;

        if (sys) {
                ident.pci_vendor = sys->pci_vendor;
                ident.pci_device = sys->pci_device;
        }
        device_apst_platform(plat, sys, &ap);

        if (!config_resolve(cfg, &ident, &d.params, &d.section)) {
                d.verdict = DEVICE_DISABLED;
                *ret = d;
                return 0;
        }
        d.configured_max_latency_us = d.params.max_latency_us;
        if (cap_us < d.params.max_latency_us)
                d.params.max_latency_us = cap_us;
        if (sys && strcmp(sys->transport, "pcie") != 0) {
                d.verdict = DEVICE_NOT_PCIE;
                *ret = d;
                return 0;
        }
        if (d.params.use_calibration && d.params.policy != APST_POLICY_KERNEL) {
                Calibration merged;

                /* The configuration's exit_latency_us counts as a measurement: the larger of it, the
                 * saved calibration's and the descriptor's is planned with. */
                if (calib_with_config(calib, id, &d.params.exlat, &merged)) {
                        d.calib_raised = calib_apply(&merged, id, &d.plan_id);
                        for (unsigned ps = 0; ps < IDCTRL_MAX_PS; ps++)
                                if ((d.calib_raised & (1u << ps)) && (d.params.exlat.mask & (1u << ps)) &&
                                    d.plan_id.psd[ps].exlat_us == d.params.exlat.us[ps])
                                        d.config_raised |= 1u << ps;
                }
        }
        r = apst_build(&d.plan_id, &ap, &d.params, &d.plan);
        if (r < 0)
                return r;
        if (d.calib_raised) {
                ApstPlan plain;
                r = apst_build(id, &ap, &d.params, &plain);
                if (r < 0)
                        return r;
                d.uncalibrated_table = plain.table;
                d.calib_changed_table = !apst_table_equal(&plain.table, &d.plan.table);
        }
        d.verdict = d.plan.outcome == APST_OUTCOME_UNSUPPORTED ? DEVICE_UNSUPPORTED : DEVICE_MANAGE;
        *ret = d;
        return 0;
}
