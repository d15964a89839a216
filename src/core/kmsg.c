/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel log records and a failing NVMe controller's messages; see kmsg.h and doc/quarantine.md. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kmsg.h"
#include "macro.h"
#include "string-table.h"

static const char *const nvme_failure_kind_table[_NVME_FAILURE_MAX] = {
        [NVME_FAILURE_TIMEOUT] = "timeout",
        [NVME_FAILURE_FLR] = "flr",
        [NVME_FAILURE_NOT_READY] = "not-ready",
        [NVME_FAILURE_DOWN] = "down",
        [NVME_FAILURE_PM_HINT] = "pm-hint",
        [NVME_FAILURE_RESET_FAILED] = "reset-failed",
        [NVME_FAILURE_PROBE_FAILED] = "probe-failed",
};

DEFINE_STRING_TABLE_LOOKUP(nvme_failure_kind, NvmeFailureKind);

/* Decimal digits at @s (at most @n bytes), at least one, no overflow of 64 bits. Return: the digits used, 0 none. */
static size_t scan_u64(const char *s, size_t n, uint64_t *ret) {
        uint64_t v = 0;
        size_t i = 0;

        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
                unsigned d = (unsigned) (s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return 0;
                v = v * 10 + d;
        }
        if (i > 0)
                *ret = v;
        return i;
}

/* 1..8 hex digits at @s. Return: the digits used, 0 none or more than 8. */
static size_t scan_hex32(const char *s, size_t n, uint32_t *ret) {
        uint32_t v = 0;
        size_t i = 0;

        for (; i < n; i++) {
                char c = s[i];
                unsigned d;

                if (c >= '0' && c <= '9')
                        d = (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        d = (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        d = (unsigned) (c - 'A' + 10);
                else
                        break;
                if (i == 8)
                        return 0;
                v = v << 4 | d;
        }
        if (i > 0)
                *ret = v;
        return i;
}

static bool has_prefix(const char *s, size_t n, const char *p) {
        size_t l = strlen(p);

        return n >= l && memcmp(s, p, l) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *p) {
        size_t l = strlen(p);

        return n >= l && memcmp(s + n - l, p, l) == 0;
}

/* "PRIO,SEQ,USEC,FLAGS[,...];": the header's numbers. Return: the bytes up to and with ';', 0 not a header. */
static size_t parse_header(const char *buf, size_t len, KmsgRecord *r) {
        const char *semi = memchr(buf, ';', len), *nl = memchr(buf, '\n', len);
        uint64_t prio = 0;
        size_t i, k;

        if (!semi || (nl && nl < semi) || buf[0] < '0' || buf[0] > '9')
                return 0;
        i = scan_u64(buf, (size_t) (semi - buf), &prio);
        if (i == 0 || buf[i] != ',')
                return 0;
        i++;
        k = scan_u64(buf + i, (size_t) (semi - buf) - i, &r->seq);
        if (k == 0 || buf[i + k] != ',')
                return 0;
        i += k + 1;
        k = scan_u64(buf + i, (size_t) (semi - buf) - i, &r->usec);
        if (k == 0 || (buf + i + k != semi && buf[i + k] != ','))
                return 0;
        r->prio = (int) (prio & 7);  /* the facility is in the bits above the level */
        return (size_t) (semi - buf) + 1;
}

/* Copy @n bytes of @s into @dst if they fit and are [A-Za-z0-9:.]. */
static bool copy_name(char *dst, size_t size, const char *s, size_t n) {
        if (n == 0 || n >= size)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == ':' || s[i] == '.'))
                        return false;
        memcpy(dst, s, n);
        dst[n] = '\0';
        return true;
}

/* The continuation lines: " DEVICE=+nvme:nvmeN" names the controller. */
static void parse_dict(const char *p, const char *end, KmsgRecord *r) {
        static const char dev[] = " DEVICE=+nvme:";

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;

                if (has_prefix(p, (size_t) (le - p), dev) && !r->ctrl[0])
                        (void) copy_name(r->ctrl, sizeof r->ctrl, p + strlen(dev), (size_t) (le - p) - strlen(dev));
                p = nl ? nl + 1 : end;
        }
}

/* "nvme nvmeN: " or "nvme 0000:01:00.0: " at the start of the message. */
static void parse_prefix(KmsgRecord *r) {
        const char *m = r->msg, *colon;
        size_t n = r->msg_len;

        r->text = m;
        r->text_len = n;
        if (!has_prefix(m, n, "nvme "))
                return;
        /* the name ends at ": " (a PCI address has colons of its own, never followed by a space) */
        for (colon = m + 5; colon + 1 < m + n; colon++)
                if (colon[0] == ':' && colon[1] == ' ')
                        break;
        if (colon + 1 >= m + n)
                return;
        if (has_prefix(m + 5, n - 5, "nvme")) {
                char name[sizeof r->ctrl];
                if (!copy_name(name, sizeof name, m + 5, (size_t) (colon - m - 5)))
                        return;
                memcpy(r->ctrl, name, sizeof name);
        } else if (!copy_name(r->pci, sizeof r->pci, m + 5, (size_t) (colon - m - 5)))
                return;
        r->text = colon + 2;
        r->text_len = n - (size_t) (colon + 2 - m);
}

int kmsg_parse_record(const char *buf, size_t len, KmsgRecord *ret) {
        KmsgRecord r = { .prio = -1 };
        const char *nl, *end = buf + len;
        size_t h;

        h = parse_header(buf, len, &r);
        if (h == 0 && len > 0 && buf[0] == '[') {
                /* dmesg's "[  12.345678] " */
                const char *close = memchr(buf, ']', len);
                if (close && close + 1 < end && close[1] == ' ')
                        h = (size_t) (close + 2 - buf);
        }
        r.msg = buf + h;
        nl = memchr(r.msg, '\n', (size_t) (end - r.msg));
        r.msg_len = (size_t) ((nl ? nl : end) - r.msg);
        if (r.msg_len == 0)
                return -EINVAL;
        if (r.prio >= 0 && nl)
                parse_dict(nl + 1, end, &r);
        parse_prefix(&r);
        *ret = r;
        return 0;
}

/* "CSTS=0x%x" at @p. */
static bool scan_csts(const char *p, size_t n, NvmeFailure *f) {
        if (!has_prefix(p, n, "CSTS=0x"))
                return false;
        f->have_csts = scan_hex32(p + 7, n - 7, &f->csts) > 0;
        return f->have_csts;
}

/* "I/O tag %d (%04x) opcode %#x (%s) QID %d timeout, reset controller" or "I/O %d QID %d timeout, reset controller". */
static bool match_timeout(const char *t, size_t n, NvmeFailure *f) {
        static const char tail[] = " timeout, reset controller";
        uint64_t qid;
        size_t k;

        if (!has_prefix(t, n, "I/O ") || !has_suffix(t, n, tail))
                return false;
        for (size_t i = 4; i + 5 <= n - strlen(tail); i++) {
                if (memcmp(t + i, " QID ", 5) != 0)
                        continue;
                k = scan_u64(t + i + 5, n - i - 5, &qid);
                if (k == 0 || i + 5 + k != n - strlen(tail) || qid > UINT32_MAX)
                        return false;
                f->kind = NVME_FAILURE_TIMEOUT;
                f->have_qid = true;
                f->qid = (uint32_t) qid;
                return true;
        }
        return false;
}

int kmsg_match_failure(const KmsgRecord *rec, NvmeFailure *ret) {
        static const char down[] = "controller is down; will reset: ", not_ready[] = "Device not ready; aborting reset, ";
        const char *t = rec->text;
        size_t n = rec->text_len;
        NvmeFailure f = {};

        if (!rec->ctrl[0] && !rec->pci[0])
                return 0;
        if (has_prefix(t, n, down)) {
                f.kind = NVME_FAILURE_DOWN;
                (void) scan_csts(t + strlen(down), n - strlen(down), &f);
        } else if (has_prefix(t, n, "Does your device have a faulty power saving mode enabled?"))
                f.kind = NVME_FAILURE_PM_HINT;
        else if (has_prefix(t, n, not_ready)) {
                f.kind = NVME_FAILURE_NOT_READY;
                (void) scan_csts(t + strlen(not_ready), n - strlen(not_ready), &f);
        } else if (has_prefix(t, n, "Disabling device after reset failure: "))
                f.kind = NVME_FAILURE_RESET_FAILED;
        else if (has_prefix(t, n, "Removing after probe failure status: "))
                f.kind = NVME_FAILURE_PROBE_FAILED;
        else if (n == strlen("controller reset completed after pcie flr") &&
                 has_prefix(t, n, "controller reset completed after pcie flr"))
                f.kind = NVME_FAILURE_FLR;
        else if (!match_timeout(t, n, &f))
                return 0;
        *ret = f;
        return 1;
}
