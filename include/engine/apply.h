/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Writing one controller's APST table the careful way, shared by `apply` and
 * the daemon: Get Features (remember what was there), Set Features, Get
 * Features again and compare. If the read-back differs, the table found is
 * put back, so a failed apply never leaves a half-understood state behind.
 * Each step is logged as one structured journal entry.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "apst.h"
#include "nvme-admin.h"

typedef enum ApplyStep {
        APPLY_STEP_NONE,
        APPLY_STEP_GET_BEFORE,
        APPLY_STEP_SET,
        APPLY_STEP_VERIFY,
        APPLY_STEP_RESTORE,
        APPLY_STEP_VERIFY_RESTORE,
        _APPLY_STEP_MAX,
        _APPLY_STEP_INVALID = -EINVAL,
} ApplyStep;

/* "Set Features (write the table)", ...; NULL outside the enum. */
const char *apply_step_to_string(ApplyStep s);

/* What the journal entries say about the controller. */
typedef struct ApplyTarget {
        const char *name;          /* "nvme0" */
        const char *model;
        const char *firmware;
        const char *policy;        /* "budget", "kernel" */
        const char *reason;        /* why we write now: "start", "apply", "reset", "resume", "reload" */
        const ApstTable *last_written; /* what we wrote before, or NULL: a different table found is
                                        * logged as overwritten (MSGID_TABLE_OVERWRITTEN) before rewriting */
        /* Called with the table found, after the first Get Features and before any Set Features
         * (the daemon records the original there, so a crash can never lose it); may be NULL. */
        void (*before_write)(const ApstTable *found, void *userdata);
        /* Called right before the Set Features, when one is to be sent: a negative errno sends
         * nothing (@withheld in the result). The daemon asks sysfs whether the controller is still
         * live: a reset may have begun since its state was read, a Get Features ago. May be NULL. */
        int (*may_write)(void *userdata);
        /* Called when a command failed with ENODEV: is the controller being removed (gone from
         * sysfs, or its state says it is being deleted)? Then the failure is no error of ours: it
         * is logged at debug level only, and @gone is set in the result; the removal's own event
         * says what happened. May be NULL (every failure is an error). */
        bool (*leaving)(void *userdata);
        void *userdata;
} ApplyTarget;

typedef struct ApplyResult {
        bool have_before;          /* @before was read */
        ApstTable before;          /* what the controller had (first Get Features) */
        ApplyStep failed_step;     /* APPLY_STEP_NONE on success */
        int error;                 /* negative errno of the failed step; -EREMOTEIO = NVMe status */
        uint16_t nvme_status;      /* when error == -EREMOTEIO */
        bool unchanged;            /* the table was already in place: nothing written */
        bool withheld;             /* may_write() said no: nothing written (@error is its errno) */
        bool put_back;             /* after a failed verification, the controller accepted @before again */
        bool dirty;                /* ... but it could not be read back (or not even written back): the
                                    * controller may hold a table other than @before */
        bool gone;                 /* it failed because the controller is being removed (leaving()) */
} ApplyResult;

/**
 * apply_table() - remember, write, verify (and put back on a bad read-back)
 * @skip_if_equal: do not write when Get Features already shows @want
 *
 * Logs MSGID_TABLE_WRITTEN / _VERIFIED / _FAILED / _RESTORED entries.
 * Return: 0 or the negative errno of the failed step (also in @ret).
 */
int apply_table(AdminHandle *c, const ApplyTarget *t, const ApstTable *want, uint32_t worst_wake_us,
                bool skip_if_equal, ApplyResult *ret);

/**
 * apply_restore() - write back @orig (the table found before we first wrote)
 * and verify it. Logs MSGID_TABLE_RESTORED or _FAILED; a failure says whether
 * the Set Features itself failed (nothing changed) or only its verification.
 */
int apply_restore(AdminHandle *c, const ApplyTarget *t, const ApstTable *orig);

/* "NVMe status 0x4002 (Invalid Field in Command)" or strerror; @buf >= 128 bytes. */
const char *apply_error_to_string(int error, uint16_t nvme_status, char *buf, size_t n);

/* Set Features, Get Features and compare, nothing logged (calibrate's temporary tables).
 * Return: 0, -EBADMSG (the read-back differs), or negative errno (-EREMOTEIO: *ret_status). */
int apply_set_verified(AdminHandle *c, const ApstTable *t, uint16_t *ret_status);
