/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The kernel log, read as records (doc/quarantine.md "The records"): /dev/kmsg, or
 * the file $NVME_APSTD_KERNEL_LOG names, typically a FIFO whose writers come and go
 * (the tests write records there). The descriptor is non-blocking and meant for an
 * I/O event source: read only when it has data, never on a timer.
 *
 * /dev/kmsg is read from its end (what was logged before the start is history, not a
 * new failure), one record per read(). A FIFO is opened for reading and writing, so
 * that it never reaches end-of-file or hangs up when its last writer leaves (no
 * wake-up storm, no reopening); its text is split into records, a line starting with
 * a space continuing the record before it.
 */

#include <stdbool.h>

#include "kmsg.h"

#define KERNEL_LOG_ENV "NVME_APSTD_KERNEL_LOG"
#define KERNEL_LOG_DEFAULT "/dev/kmsg"

typedef struct KernelLog KernelLog;

/* @path: NULL = $NVME_APSTD_KERNEL_LOG, else /dev/kmsg. Return: 0, or -errno (-EBADF: neither a
 * character device nor a FIFO). */
int kernel_log_open(const char *path, KernelLog **ret);
KernelLog *kernel_log_free(KernelLog *k);
int kernel_log_fd(const KernelLog *k);
const char *kernel_log_path(const KernelLog *k);

/**
 * kernel_log_read() - read what is there and hand each record to @fn
 * Return: 0 (all read: EAGAIN), 1 the file was reopened (end-of-file: a new descriptor for the event
 * source), or -errno.
 */
int kernel_log_read(KernelLog *k, void (*fn)(const KmsgRecord *rec, void *userdata), void *userdata);

/* The controller (under @sysroot/class/nvme) whose device is the PCI function @pci ("0000:01:00.0"),
 * for the records that name the PCI device only. Return: 0 with @ret filled in, -ENOENT. */
int kernel_log_pci_ctrl(const char *sysroot, const char *pci, char *ret, size_t size);
