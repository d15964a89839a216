/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The few NVMe command fields nvme-apstd names (NVM Express Base
 * Specification: Admin Command Set, Identify, Get/Set Features; NVM Command
 * Set: Read). Constants only, shared by the admin adapter's allow-list and
 * the pure retry rules.
 */

#include <stdint.h>

/* Admin opcodes and the Identify/Features fields the allow-list checks. */
#define CTRL_OPC_SET_FEATURES 0x09u
#define CTRL_OPC_GET_FEATURES 0x0Au
#define CTRL_OPC_IDENTIFY 0x06u
#define CTRL_CNS_CONTROLLER 0x01u
#define CTRL_FID_APST 0x0Cu
#define CTRL_SET_FEATURES_SAVE (UINT32_C(1) << 31)
/* NVM command set I/O opcode: Read (doc/calibrate.md: the NVM Command Set Specification's Read command) */
#define CTRL_IO_OPC_READ 0x02u
/* The largest logical block we read (the NVM command set allows LBA data sizes of 2^9..2^16 bytes
 * in practice; 4 KiB is what drives use, 64 KiB bounds the buffer) */
#define CTRL_READ_MAX_BYTES 65536u
/* Do Not Retry, bit 14 of the status field as libnvme returns it */
#define CTRL_STATUS_DNR 0x4000u
