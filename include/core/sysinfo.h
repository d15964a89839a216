/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What sysfs says about one NVMe controller and about the machine, as plain
 * values (sysfs.c reads them; the pure decisions in device.c and doctor.c
 * take them as arguments).
 */

#include <stdint.h>

typedef struct SysCtrl {
        char name[32];             /* "nvme0" */
        char transport[16];        /* "pcie", "tcp", "rdma", "fc", "loop" */
        char state[32];            /* "live", "resetting", "connecting", ... */
        char model[41];
        char serial[21];           /* never logged */
        char firmware[9];
        uint16_t pci_vendor;       /* 0 when not a PCI device or unreadable */
        uint16_t pci_device;
} SysCtrl;

typedef struct SysPlatform {
        char board_vendor[128];    /* "" when absent (QEMU's SeaBIOS has no DMI board) */
        char board_name[128];
        char sys_vendor[128];
        char product_name[128];
} SysPlatform;
