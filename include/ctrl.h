/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One NVMe controller's admin interface: the only code in the project that
 * talks to libnvme (src/ctrl.c). libnvme's API changed between 1.x and the
 * copy inside nvme-cli 2.x/3.x; keeping it behind this header keeps that
 * churn in one file.
 *
 * The daemon may only ever send three admin commands, and ctrl.c refuses
 * anything else before it reaches the kernel:
 *   - Identify, CNS 01h (controller);
 *   - Get Features, FID 0x0C (APST);
 *   - Set Features, FID 0x0C, without the Save bit.
 * libnvme 1.3's typed APST helpers are broken (doc/platform.md): only the generic
 * nvme_get_features()/nvme_set_features()/nvme_identify() are used.
 *
 * Errors: 0 on success; -errno when the ioctl failed (ENODEV after removal,
 * EIO, EINTR, ETIMEDOUT ...); -EREMOTEIO when the controller completed the
 * command with a non-zero NVMe status, which is then stored in
 * *ret_nvme_status (status field incl. DNR/More bits, as libnvme returns it).
 */

#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "idctrl.h"
#include "macro.h"

typedef struct Ctrl Ctrl;

/* Admin opcodes and the Identify/Features fields the allow-list checks. */
#define CTRL_OPC_SET_FEATURES 0x09u
#define CTRL_OPC_GET_FEATURES 0x0Au
#define CTRL_OPC_IDENTIFY 0x06u
#define CTRL_CNS_CONTROLLER 0x01u
#define CTRL_FID_APST 0x0Cu
#define CTRL_SET_FEATURES_SAVE (UINT32_C(1) << 31)
/* Do Not Retry, bit 14 of the status field as libnvme returns it */
#define CTRL_STATUS_DNR 0x4000u

/* Admin command timeout we ask the kernel for: the event loop waits for every
 * command, and systemd's watchdog (WatchdogSec=30s) must not fire first. */
#define CTRL_ADMIN_TIMEOUT_MS 5000u

/**
 * ctrl_command_allowed() - the allow-list, as a pure predicate
 * @opcode: admin opcode
 * @cdw10: command dword 10 (CNS for Identify; FID, SEL or SV for features)
 *
 * Return: true only for Identify CNS 01h, Get Features FID 0x0C and Set
 * Features FID 0x0C with SV clear.
 */
bool ctrl_command_allowed(uint8_t opcode, uint32_t cdw10);

/**
 * ctrl_open() - open /dev/@name (e.g. "nvme0") for admin commands
 * @devdir: directory of the device node, normally "/dev"
 *
 * Uses open(2), not openat(2): umockdev only attaches its ioctl emulation to
 * nodes opened that way (doc/testing.md). Return: 0 or -errno.
 */
int ctrl_open(const char *devdir, const char *name, Ctrl **ret);
Ctrl *ctrl_free(Ctrl *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Ctrl *, ctrl_free);

const char *ctrl_name(const Ctrl *c);

/* Identify Controller (CNS 01h), decoded. @ret_raw (4096 bytes) may be NULL. */
int ctrl_identify(Ctrl *c, IdCtrl *ret, uint8_t *ret_raw, uint16_t *ret_nvme_status);

/* Get Features 0x0C, current value: APSTE from CQE dword 0, the 256-byte table. */
int ctrl_get_apst(Ctrl *c, ApstTable *ret, uint16_t *ret_nvme_status);

/* Set Features 0x0C: CDW11 = APSTE, the 256-byte table; never saved (SV = 0). */
int ctrl_set_apst(Ctrl *c, const ApstTable *t, uint16_t *ret_nvme_status);

/* "Invalid Field in Command" etc. for a status; never NULL. */
const char *ctrl_status_to_string(uint16_t status);
