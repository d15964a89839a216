/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The record of the original APST table; see apst-record.h. */

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "apst-record.h"
#include "macro.h"
#include "sysfs.h"

#define HEX_TABLE_SIZE (32 * 19 + 1)

/* FNV-1a of the serial: enough to tell drives apart without writing the serial anywhere. */
static uint64_t serial_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return h;
}

int apst_record_save(const char *path, const IdCtrl *id, const ApstTable *t) {
        char tmp[PATH_MAX + 8], hex[HEX_TABLE_SIZE];
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r, len;

        apst_table_to_hex(t, hex, sizeof hex);
        len = asprintf(&text, "model=%s\nserial_hash=%016" PRIx64 "\napste=%d\ntable=%s\n", id->model,
                       serial_hash(id->serial), t->apste ? 1 : 0, hex);
        if (len < 0)
                return -ENOMEM;
        if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
                return -ENAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        if (write(fd, text, (size_t) len) != len || fsync(fd) < 0) {
                r = errno > 0 ? -errno : -EIO;
                (void) unlink(tmp);
                return r;
        }
        if (close(TAKE_FD(fd)) < 0 || rename(tmp, path) < 0) {
                r = negative_errno();
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

int apst_record_load(const char *path, const IdCtrl *id, ApstTable *ret) {
        char buf[2048], want_model[64], *p;
        unsigned long long hash;
        ApstTable t = {};
        int apste;

        if (sysfs_read_attr(path, buf, sizeof buf) < 0)
                return -ENOENT;
        p = strstr(buf, "serial_hash=");
        if (!p || sscanf(p, "serial_hash=%16llx", &hash) != 1 || hash != serial_hash(id->serial))
                return -ESTALE;
        if (sscanf(buf, "model=%63[^\n]", want_model) != 1 || strcmp(want_model, id->model) != 0)
                return -ESTALE;
        p = strstr(buf, "apste=");
        if (!p || sscanf(p, "apste=%d", &apste) != 1)
                return -EBADMSG;
        t.apste = apste != 0;
        p = strstr(buf, "table=");
        if (!p)
                return -EBADMSG;
        p += strlen("table=");
        for (unsigned i = 0; i < APST_ENTRIES; i++) {
                unsigned long long v;
                int used;
                if (sscanf(p, " 0x%llx%n", &v, &used) != 1)
                        return -EBADMSG;
                t.entry[i] = v;
                p += used;
        }
        if (apst_table_check(&t, id) < 0)
                return -EBADMSG;
        *ret = t;
        return 0;
}
