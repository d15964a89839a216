/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A test drive whose shallow state is slow to enter, like an Intel 670p: ps3 5 ms in and 5 ms out,
 * ps4 3 ms in and 12 ms out, so its wake floors (idctrl_wake_floors()) are 0, 5 and 12 ms. Used
 * where the gaps a wake-up hides matter (test-adapt's exact/hidden, test-learned's restore-hidden).
 */

#include <string.h>

#include "idctrl.h"

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
