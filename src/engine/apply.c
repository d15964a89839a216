/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Remember, write, verify; see apply.h. */

#include <stdio.h>
#include <string.h>

#include "apply.h"
#include "apstd-ids.h"
#include "log.h"
#include "string-table.h"

static const char *const apply_step_table[_APPLY_STEP_MAX] = {
        [APPLY_STEP_NONE] = "none",
        [APPLY_STEP_GET_BEFORE] = "Get Features (read the current table)",
        [APPLY_STEP_SET] = "Set Features (write the table)",
        [APPLY_STEP_VERIFY] = "Get Features (verify the table)",
        [APPLY_STEP_RESTORE] = "Set Features (restore the previous table)",
        [APPLY_STEP_VERIFY_RESTORE] = "Get Features (verify the restored table)",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(apply_step, ApplyStep);

const char *apply_error_to_string(int error, uint16_t nvme_status, char *buf, size_t n) {
        if (error == -ERANGE)
                /* no admin ioctl fails with ERANGE: it is idctrl_parse_binary() refusing the answer */
                (void) snprintf(buf, n, "the controller's Identify data is invalid (npss > 31: more than 32 "
                                        "power states); leaving its APST alone");
        else if (error == -EREMOTEIO)
                (void) snprintf(buf, n, "NVMe status 0x%04x (%s)", nvme_status, admin_status_to_string(nvme_status));
        else
                (void) snprintf(buf, n, "%s", strerror(-error));
        return buf;
}

/* A command failed with ENODEV because the controller is being removed (ApplyTarget.leaving)? */
static bool leaving(const ApplyTarget *t, int error) {
        return error == -ENODEV && t->leaving && t->leaving(t->userdata);
}

/* @gone: the controller is being removed (leaving()): no error of ours, said at debug level. */
static void log_failure(const ApplyTarget *t, ApplyStep step, int error, uint16_t status, const ApstTable *want,
                        bool gone) {
        char hex[32 * 19 + 1], why[160], st[16] = "";

        if (gone) {
                log_debug("%s: %s failed: %s; the controller is being removed.", t->name, apply_step_to_string(step),
                          strerror(-error));
                return;
        }

        apst_table_to_hex(want, hex, sizeof hex);
        if (error == -EREMOTEIO)
                (void) snprintf(st, sizeof st, "0x%04x", status);
        if (error == -EBADMSG && (step == APPLY_STEP_VERIFY || step == APPLY_STEP_VERIFY_RESTORE))
                /* write_and_verify()'s own code: the read-back differs */
                (void) snprintf(why, sizeof why, "the controller reads back a different table");
        else
                (void) apply_error_to_string(error, status, why, sizeof why);
        log_event(LOG_ERR, error, MSGID_TABLE_FAILED,
                  LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model }, { "NVME_FIRMWARE", t->firmware },
                             { "APST_POLICY", t->policy }, { "APST_TABLE", hex }, { "NVME_STATUS", st[0] ? st : NULL },
                             { "APST_STEP", apply_step_to_string(step) }, { "APST_REASON", t->reason }),
                  "%s: %s failed: %s.", t->name, apply_step_to_string(step), why);
}

/* Write @tbl, read back and compare. On failure fills in the step and status and returns -errno. */
static int write_and_verify(AdminHandle *c, const ApstTable *tbl, ApplyStep set_step, ApplyStep verify_step,
                            ApplyStep *ret_step, uint16_t *ret_status, ApstTable *ret_readback) {
        ApstTable back;
        int r;

        r = admin_set_apst(c, tbl, ret_status);
        if (r < 0) {
                *ret_step = set_step;
                return r;
        }
        r = admin_get_apst(c, &back, ret_status);
        if (r < 0) {
                *ret_step = verify_step;
                return r;
        }
        *ret_readback = back;
        if (!apst_table_equal(&back, tbl)) {
                *ret_step = verify_step;
                return -EBADMSG;
        }
        return 0;
}

/* Write back @orig and verify it; *ret_step is the step that failed (APPLY_STEP_NONE on success). */
static int restore(AdminHandle *c, const ApplyTarget *t, const ApstTable *orig, ApplyStep *ret_step) {
        char hex[32 * 19 + 1], desc[512];
        uint16_t status = 0;
        ApstTable back;
        int r;

        apst_table_to_hex(orig, hex, sizeof hex);
        apst_summary(orig, desc, sizeof desc);
        r = write_and_verify(c, orig, APPLY_STEP_RESTORE, APPLY_STEP_VERIFY_RESTORE, ret_step, &status, &back);
        if (r < 0) {
                log_failure(t, *ret_step, r, status, orig, leaving(t, r));
                return r;
        }
        *ret_step = APPLY_STEP_NONE;
        log_event(LOG_INFO, 0, MSGID_TABLE_RESTORED,
                  LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model }, { "NVME_FIRMWARE", t->firmware },
                             { "APST_POLICY", t->policy }, { "APST_TABLE", hex }, { "APST_REASON", t->reason }),
                  "%s: restored the APST table it had before (%s).", t->name, desc);
        return 0;
}

/* The table found is not the one we wrote last: say so (most likely the kernel rewrote it). */
static void log_overwritten(const ApplyTarget *t, const ApstTable *found) {
        char hex[32 * 19 + 1], wrote[32 * 19 + 1], s[256];

        apst_table_to_hex(found, hex, sizeof hex);
        apst_table_to_hex(t->last_written, wrote, sizeof wrote);
        apst_summary(found, s, sizeof s);
        log_event(LOG_NOTICE, 0, MSGID_TABLE_OVERWRITTEN,
                  LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model }, { "NVME_FIRMWARE", t->firmware },
                             { "APST_POLICY", t->policy }, { "APST_TABLE", hex }, { "APST_TABLE_WRITTEN", wrote },
                             { "APST_REASON", t->reason }),
                  "%s: the APST table was overwritten (found %s after %s, most likely by the kernel); "
                  "writing ours again.", t->name, s, t->reason);
}

/* The write or its verification failed (res->failed_step, res->error): log it, and after a failed
 * verification put back what was there. If that fails too, the controller may hold what we just
 * wrote: say so, the caller must know (res->dirty). A failed Set changed nothing. */
static void handle_write_failure(AdminHandle *c, const ApplyTarget *t, const ApstTable *want, const ApstTable *back,
                                 ApplyResult *res) {
        char hex[32 * 19 + 1], got[32 * 19 + 1], desc[512];
        ApplyStep step = APPLY_STEP_NONE;
        int r = res->error;

        apst_table_to_hex(want, hex, sizeof hex);
        if (r == -EBADMSG) {
                apst_table_to_hex(back, got, sizeof got);
                log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                          LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model },
                                     { "NVME_FIRMWARE", t->firmware }, { "APST_POLICY", t->policy },
                                     { "APST_TABLE", hex }, { "APST_TABLE_READ", got }, { "APST_REASON", t->reason }),
                          "%s: the controller accepted the APST table but reads back a different one; "
                          "putting back the table it had.", t->name);
        } else {
                res->gone = leaving(t, r);
                log_failure(t, res->failed_step, r, res->nvme_status, want, res->gone);
        }
        /* a controller on its way out gets nothing more */
        if (res->failed_step != APPLY_STEP_VERIFY || res->gone)
                return;

        res->dirty = restore(c, t, &res->before, &step) < 0;
        res->put_back = step != APPLY_STEP_RESTORE;
        if (!res->dirty)
                return;
        apst_summary(want, desc, sizeof desc);
        log_event(LOG_ERR, r, MSGID_TABLE_FAILED,
                  LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model }, { "NVME_FIRMWARE", t->firmware },
                             { "APST_POLICY", t->policy }, { "APST_TABLE", hex }, { "APST_REASON", t->reason }),
                  res->put_back ? "%s: wrote back the previous APST table but could not verify it; the controller "
                                  "may still hold the one just written (%s)."
                                : "%s: could not put back the previous APST table; the controller may still hold "
                                  "the one just written (%s).",
                  t->name, desc);
}

/* MSGID_TABLE_VERIFIED (already in place, nothing written) or MSGID_TABLE_WRITTEN. */
static void log_in_place(const ApplyTarget *t, const ApstTable *want, uint32_t worst_wake_us, bool written) {
        char hex[32 * 19 + 1], wake[32], desc[512];

        apst_table_to_hex(want, hex, sizeof hex);
        (void) snprintf(wake, sizeof wake, "%u", worst_wake_us);
        apst_summary(want, desc, sizeof desc);
        if (!written)
                log_event(LOG_INFO, 0, MSGID_TABLE_VERIFIED,
                          LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model },
                                     { "NVME_FIRMWARE", t->firmware }, { "APST_POLICY", t->policy },
                                     { "APST_TABLE", hex }, { "APST_WORST_WAKE_US", wake },
                                     { "APST_REASON", t->reason }),
                          "%s: APST table already in place (%s policy: %s), nothing written.", t->name, t->policy,
                          desc);
        else
                log_event(LOG_INFO, 0, MSGID_TABLE_WRITTEN,
                          LOG_FIELDS({ "NVME_CTRL", t->name }, { "NVME_MODEL", t->model },
                                     { "NVME_FIRMWARE", t->firmware }, { "APST_POLICY", t->policy },
                                     { "APST_TABLE", hex }, { "APST_WORST_WAKE_US", wake },
                                     { "APST_REASON", t->reason }),
                          "%s: wrote and verified the APST table (%s policy: %s; worst wake %u.%01u ms).", t->name,
                          t->policy, desc, worst_wake_us / 1000, (worst_wake_us % 1000) / 100);
}

int apply_table(AdminHandle *c, const ApplyTarget *t, const ApstTable *want, uint32_t worst_wake_us,
                bool skip_if_equal, ApplyResult *ret) {
        ApplyResult res = { .failed_step = APPLY_STEP_NONE };
        ApstTable back = {};
        int r;

        r = admin_get_apst(c, &res.before, &res.nvme_status);
        if (r < 0) {
                res.failed_step = APPLY_STEP_GET_BEFORE;
                res.error = r;
                res.gone = leaving(t, r);
                log_failure(t, res.failed_step, r, res.nvme_status, want, res.gone);
                *ret = res;
                return r;
        }
        res.have_before = true;
        if (t->last_written && !apst_table_equal(&res.before, t->last_written))
                log_overwritten(t, &res.before);
        if (t->before_write)
                t->before_write(&res.before, t->userdata);

        if (skip_if_equal && apst_table_equal(&res.before, want)) {
                res.unchanged = true;
                log_in_place(t, want, worst_wake_us, false);
                *ret = res;
                return 0;
        }
        if (t->may_write) {
                r = t->may_write(t->userdata);
                if (r < 0) {
                        res.withheld = true;
                        res.error = r;
                        *ret = res;
                        return r;
                }
        }
        r = write_and_verify(c, want, APPLY_STEP_SET, APPLY_STEP_VERIFY, &res.failed_step, &res.nvme_status, &back);
        if (r < 0) {
                res.error = r;
                handle_write_failure(c, t, want, &back, &res);
                *ret = res;
                return r;
        }
        log_in_place(t, want, worst_wake_us, true);
        *ret = res;
        return 0;
}

int apply_restore(AdminHandle *c, const ApplyTarget *t, const ApstTable *orig) {
        ApplyStep step = APPLY_STEP_NONE;

        return restore(c, t, orig, &step);
}

int apply_set_verified(AdminHandle *c, const ApstTable *t, uint16_t *ret_status) {
        ApplyStep step;
        ApstTable back;

        return write_and_verify(c, t, APPLY_STEP_SET, APPLY_STEP_VERIFY, &step, ret_status, &back);
}
