/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The test drives the policy's unit tests share (test-adapt, test-learned, test-hindsight). Each
 * has a model, firmware and serial, as the learned file needs to match a drive.
 */

#include <string.h>

#include "idctrl.h"

/* Samsung 970 EVO Plus-like: ps3 70 mW (enlat 210, exlat 1200 µs), ps4 5 mW (2000, 8000 µs). */
static inline IdCtrl drive_970_like(void) {
        IdCtrl id = { .vid = 0x144d, .npss = 4, .apst_supported = true };
        strcpy(id.model, "test drive");
        strcpy(id.firmware, "1.0");
        strcpy(id.serial, "S4EWNX0R123456");
        id.psd[0] = (IdPsd) { .max_power_uw = 7500000 };
        id.psd[1] = (IdPsd) { .max_power_uw = 5900000 };
        id.psd[2] = (IdPsd) { .max_power_uw = 3600000 };
        id.psd[3] = (IdPsd) { .max_power_uw = 70000, .non_operational = true, .enlat_us = 210, .exlat_us = 1200 };
        id.psd[4] = (IdPsd) { .max_power_uw = 5000, .non_operational = true, .enlat_us = 2000, .exlat_us = 8000 };
        return id;
}

/* Slow to enter its shallow state, like an Intel 670p: ps3 5 ms in and 5 ms out, ps4 3 ms in and
 * 12 ms out, so its wake floors (idctrl_wake_floors()) are 0, 5 and 12 ms. Where the gaps a
 * wake-up hides matter (test-adapt's exact/hidden, test-learned's restore-hidden). */
static inline IdCtrl drive_slow_entry(void) {
        IdCtrl id = { .vid = 0x8086, .npss = 4, .apst_supported = true };
        strcpy(id.model, "slow entry");
        strcpy(id.firmware, "2.0");
        strcpy(id.serial, "BTNH0000000000");
        id.psd[0] = (IdPsd) { .max_power_uw = 3500000 };
        id.psd[1] = (IdPsd) { .max_power_uw = 2700000 };
        id.psd[2] = (IdPsd) { .max_power_uw = 2000000 };
        id.psd[3] = (IdPsd) { .max_power_uw = 25000, .non_operational = true, .enlat_us = 5000, .exlat_us = 5000 };
        id.psd[4] = (IdPsd) { .max_power_uw = 4000, .non_operational = true, .enlat_us = 3000, .exlat_us = 12000 };
        return id;
}
