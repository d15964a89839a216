/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One controller as the daemon, `plan` and `apply` see it: where it sits
 * (sysfs), what it says about itself (Identify), which configuration applies,
 * and the resulting plan. device_plan() is pure, so the same decision is made
 * in the daemon, in `plan` and in tests.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "calib.h"
#include "config.h"
#include "idctrl.h"
#include "sysinfo.h"

typedef enum DeviceVerdict {
        DEVICE_MANAGE,             /* program plan.table */
        DEVICE_UNSUPPORTED,        /* apsta = 0: send nothing */
        DEVICE_DISABLED,           /* enable = no in its [device] section */
        DEVICE_NOT_PCIE,           /* transport tcp/rdma/fc/loop: not ours */
        _DEVICE_VERDICT_MAX,
        _DEVICE_VERDICT_INVALID = -EINVAL,
} DeviceVerdict;

/* "managed", "unsupported", "disabled", "not-pcie"; NULL outside the enum. */
const char *device_verdict_to_string(DeviceVerdict v);

/* No latency hold caps the budget (device_plan_capped()). */
#define DEVICE_NO_CAP UINT32_MAX

typedef struct DevicePlan {
        DeviceVerdict verdict;
        ApstParams params;         /* [apst] overlaid with the matching [device] section; max_latency_us
                                    * lowered to the holds' cap when that is smaller */
        uint32_t configured_max_latency_us; /* max_latency_us as the configuration says, before the cap */
        const char *section;       /* name of the matching [device] section, or NULL (points into Config) */
        ApstPlan plan;             /* valid when verdict is DEVICE_MANAGE */
        IdCtrl plan_id;            /* the descriptors the plan was made from: Identify's, with the exit
                                    * latencies a calibration measured larger raised (calib_apply()) */
        uint32_t calib_raised;     /* states whose measured exit latency was used (bit N = psN) */
        uint32_t config_raised;    /* of those, the ones whose latency is the configuration's exit_latency_us */
        bool calib_changed_table;  /* the measured latencies gave another table than the descriptors */
        ApstTable uncalibrated_table; /* the table from the descriptors alone, when calib_raised */
} DevicePlan;

/* Pure. @sys may be NULL (Identify from a file: no sysfs, PCI ids unknown unless @pci_* given). */
int device_plan(const Config *cfg, const SysPlatform *plat, const char *name, const SysCtrl *sys,
                const IdCtrl *id, DevicePlan *ret);

/* The same, with a drive's measured wake costs (@calib, for @id's model and firmware, or NULL):
 * the budget and adaptive policies plan with a measured exit latency where it is larger than the
 * descriptor's, unless use_calibration = no; the kernel policy always uses the descriptors. */
int device_plan_calibrated(const Config *cfg, const SysPlatform *plat, const char *name, const SysCtrl *sys,
                           const IdCtrl *id, const Calibration *calib, DevicePlan *ret);

/* The same, with max_latency_us lowered to @cap_us when that is smaller (a latency hold, holds.h;
 * DEVICE_NO_CAP: none). A cap only tightens: the table is built for the smaller budget. */
int device_plan_capped(const Config *cfg, const SysPlatform *plat, const char *name, const SysCtrl *sys,
                       const IdCtrl *id, const Calibration *calib, uint32_t cap_us, DevicePlan *ret);

/* What apst_build() needs to know of the platform: PCI ids from @sys, DMI strings from @plat
 * (either may be NULL). The strings point into @plat. Pure. */
void device_apst_platform(const SysPlatform *plat, const SysCtrl *sys, ApstPlatform *ret);

/* One-line reason for skipping, e.g. "transport tcp is not PCIe". */
const char *device_verdict_reason(DeviceVerdict v);

/* Quirk bits as words ("no-apst no-deepest-ps") or "none". */
void device_quirks_to_string(unsigned quirks, char *buf, size_t n);
