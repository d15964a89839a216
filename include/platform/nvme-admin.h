/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One NVMe controller's admin interface: the only code in the project that
 * talks to libnvme (src/platform/nvme-admin.c). libnvme's API changed between 1.x and the
 * copy inside nvme-cli 2.x/3.x; keeping it behind this header keeps that
 * churn in one file.
 *
 * The daemon may only ever send three admin commands, and nvme-admin.c refuses
 * anything else before it reaches the kernel:
 *   - Identify, CNS 01h (controller);
 *   - Get Features, FID 0x0C (APST);
 *   - Set Features, FID 0x0C, without the Save bit.
 * One I/O command exists for `nvme-apstd calibrate` alone: a Read (I/O opcode
 * 02h) of one logical block, sent only through a handle opened with
 * admin_open_namespace(), which sets the handle's read permission; a handle
 * from admin_open() (what the daemon, apply, plan and doctor use) refuses it
 * before it reaches the kernel. Never a write.
 * libnvme 1.3's typed APST helpers are broken (doc/platform.md): only the generic
 * nvme_get_features()/nvme_set_features()/nvme_identify() are used.
 *
 * Errors: 0 on success; -errno when the ioctl failed (ENODEV after removal,
 * EIO, EINTR, ETIMEDOUT ...); -EREMOTEIO when the controller completed the
 * command with a non-zero NVMe status, which is then stored in
 * *ret_nvme_status (status field incl. DNR/More bits, as libnvme returns it).
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "idctrl.h"
#include "macro.h"
#include "nvme-spec.h"

typedef struct AdminHandle AdminHandle;

/* Admin command timeout we ask the kernel for: 0, nvme_core's admin_timeout (60 s by default).
 * A timeout makes the PCIe driver reset the controller (drivers/nvme/host/pci.c nvme_timeout()),
 * so a shorter one would turn a slow drive into a reset. No caller waits on the command: it runs
 * in a thread of its own (ctrljob.h), and the caller gives up on it after its own deadline. */
#define ADMIN_TIMEOUT_MS 0u

/**
 * admin_command_allowed() - the allow-list, as a pure predicate
 * @opcode: admin opcode
 * @cdw10: command dword 10 (CNS for Identify; FID, SEL or SV for features)
 *
 * Return: true only for Identify CNS 01h, Get Features FID 0x0C and Set
 * Features FID 0x0C with SV clear.
 */
bool admin_command_allowed(uint8_t opcode, uint32_t cdw10);

/**
 * admin_open() - open /dev/@name (e.g. "nvme0") for admin commands
 * @devdir: directory of the device node, normally "/dev"
 *
 * Uses open(2), not openat(2): umockdev only attaches its ioctl emulation to
 * nodes opened that way (doc/testing.md). Return: 0 or -errno.
 */
int admin_open(const char *devdir, const char *name, AdminHandle **ret);

/**
 * admin_io_command_allowed() - the I/O allow-list, as a pure predicate
 * @reads_allowed: the handle was opened with admin_open_namespace()
 * @opcode: I/O opcode
 * @nlb: CDW12 bits 15:0, the 0-based number of logical blocks
 *
 * Return: true only for a Read (02h) of one block (@nlb == 0) on a handle that may read.
 */
bool admin_io_command_allowed(bool reads_allowed, uint8_t opcode, uint16_t nlb);

/**
 * admin_open_namespace() - open the namespace block device /dev/@ns_name (e.g. "nvme0n1")
 * for admin_read_block(): the only handle that may send a Read. Only `calibrate` calls it.
 * @nsid: the namespace's NSID (sysfs `nsid`): the kernel refuses a passthru command
 *      whose NSID is not the node's
 * @lba_bytes: its logical block size (queue/logical_block_size), 512..CTRL_READ_MAX_BYTES
 * Return: 0 or -errno (-EINVAL for a bad name or block size).
 */
int admin_open_namespace(const char *devdir, const char *ns_name, uint32_t nsid, uint32_t lba_bytes, AdminHandle **ret);

/**
 * admin_read_block() - NVMe Read of one logical block at @slba through NVME_IOCTL_IO_CMD; the
 * data is discarded. Timing it is the caller's business.
 * Return: 0, -EPERM on a handle from admin_open() (nothing sent), -EREMOTEIO with the status, -errno.
 */
int admin_read_block(AdminHandle *c, uint64_t slba, uint16_t *ret_nvme_status);
AdminHandle *admin_free(AdminHandle *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(AdminHandle *, admin_free);

const char *admin_name(const AdminHandle *c);

/* Identify Controller (CNS 01h), decoded. @ret_raw (4096 bytes) may be NULL. */
int admin_identify(AdminHandle *c, IdCtrl *ret, uint8_t *ret_raw, uint16_t *ret_nvme_status);

/* Get Features 0x0C, current value: APSTE from CQE dword 0, the 256-byte table. */
int admin_get_apst(AdminHandle *c, ApstTable *ret, uint16_t *ret_nvme_status);

/* Set Features 0x0C: CDW11 = APSTE, the 256-byte table; never saved (SV = 0). */
int admin_set_apst(AdminHandle *c, const ApstTable *t, uint16_t *ret_nvme_status);

/* What one thread's admin command is doing, for whoever waits for that thread (ctrljob.h): since
 * when the command it is in has been outstanding, and whether it may send another. */
typedef struct AdminInFlight {
        _Atomic uint64_t since_usec;   /* CLOCK_MONOTONIC when the outstanding command was sent; 0 = none */
        _Atomic bool cancel;           /* set: every later command fails with -ECANCELED, unsent */
} AdminInFlight;

/* Make @f the calling thread's marker (NULL: none, the default). Commands sent from this thread
 * then keep it up to date and honour its cancel flag. */
void admin_set_thread_in_flight(AdminInFlight *f);

/* "Invalid Field in Command" etc. for a status; never NULL. */
const char *admin_status_to_string(uint16_t status);
