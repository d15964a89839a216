/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The kernel log as records, and the messages of an NVMe controller that failed
 * (doc/quarantine.md "What the kernel says when a controller fails").
 *
 * A /dev/kmsg record (Documentation/ABI/testing/dev-kmsg) is
 * "PRIO,SEQ,USEC,FLAGS[,...];MESSAGE" and then continuation lines " KEY=value"
 * (SUBSYSTEM=, DEVICE=). A text line without that header (dmesg's output, a
 * saved journal) is taken as a bare message. The nvme driver's messages start
 * "nvme nvmeN: " (dev_warn() on the controller's class device) or
 * "nvme 0000:01:00.0: " (on the PCI device); kmsg_match_failure() matches what
 * follows against the format strings of drivers/nvme/host/pci.c and core.c.
 *
 * Pure: no I/O. The record's message points into the caller's buffer.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one read() of /dev/kmsg may return: a record's text is at most about 1 KiB (the kernel's
 * PRINTK_MESSAGE_MAX), its dictionary lines a few more; devkmsg_read() fails with EINVAL when the
 * buffer is too small for the record, so take plenty. */
#define KMSG_RECORD_MAX 8192u

typedef struct KmsgRecord {
        int prio;                  /* the syslog level, 0..7 (the facility taken off); -1 = a bare line */
        uint64_t seq;              /* 0 for a bare line */
        uint64_t usec;             /* CLOCK_MONOTONIC in µs when it was logged; 0 for a bare line */
        const char *msg;           /* the message, not NUL-terminated, without its trailing newline */
        size_t msg_len;
        char ctrl[16];             /* "nvme0" from the "nvme nvme0: " prefix or DEVICE=+nvme:nvme0, or "" */
        char pci[16];              /* "0000:01:00.0" from the "nvme 0000:01:00.0: " prefix, or "" */
        const char *text;          /* the message after the "nvme X: " prefix (msg when there is none) */
        size_t text_len;
} KmsgRecord;

/**
 * kmsg_parse_record() - one /dev/kmsg record, or one line of text
 * @buf, @len: what one read() of /dev/kmsg gave (no NUL needed)
 * Return: 0, or -EINVAL for an empty message. A header that is not numbers makes the whole a bare line.
 */
int kmsg_parse_record(const char *buf, size_t len, KmsgRecord *ret);

/* The failures matched. */
typedef enum NvmeFailureKind {
        NVME_FAILURE_TIMEOUT,      /* "I/O tag %d (%04x) opcode %#x (%s) QID %d timeout, reset controller",
                                    * older "I/O %d QID %d timeout, reset controller" (pci.c nvme_timeout()) */
        NVME_FAILURE_FLR,          /* "controller reset completed after pcie flr" (pci.c) */
        NVME_FAILURE_NOT_READY,    /* "Device not ready; aborting reset, CSTS=0x%x" (core.c nvme_wait_ready()) */
        NVME_FAILURE_DOWN,         /* "controller is down; will reset: CSTS=0x%x, ..." (pci.c nvme_warn_reset()) */
        NVME_FAILURE_PM_HINT,      /* "Does your device have a faulty power saving mode enabled?" (the same) */
        NVME_FAILURE_RESET_FAILED, /* "Disabling device after reset failure: %d" (pci.c nvme_reset_work()) */
        NVME_FAILURE_PROBE_FAILED, /* "Removing after probe failure status: %d" (older pci.c) */
        _NVME_FAILURE_MAX,
        _NVME_FAILURE_INVALID = -EINVAL,
} NvmeFailureKind;

/* "timeout", "flr", "not-ready", "down", "pm-hint", "reset-failed", "probe-failed". */
const char *nvme_failure_kind_to_string(NvmeFailureKind k);
NvmeFailureKind nvme_failure_kind_from_string(const char *s);

typedef struct NvmeFailure {
        NvmeFailureKind kind;
        bool have_csts;
        uint32_t csts;             /* NVME_FAILURE_DOWN, _NOT_READY: the status register; ~0 = off the bus */
        bool have_qid;
        uint32_t qid;              /* NVME_FAILURE_TIMEOUT: the queue (0 = the admin queue) */
} NvmeFailure;

/**
 * kmsg_match_failure() - is @rec's message one of a failing NVMe controller?
 * Only records with a "nvme X: " prefix are matched; other timeouts ("completion polled",
 * "aborting"), AER, firmware activation and PCIe error recovery messages are not.
 * Return: 1 with *@ret filled in, 0 not a failure.
 */
int kmsg_match_failure(const KmsgRecord *rec, NvmeFailure *ret);

/* The failure says the controller's registers read all ones (CSTS=0xffffffff): it left the bus. */
static inline bool nvme_failure_off_bus(const NvmeFailure *f) {
        return f->kind == NVME_FAILURE_PM_HINT || (f->have_csts && f->csts == UINT32_MAX);
}
