/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Crash records; see record.h. */

#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "record.h"
#include "util.h"

#define RECORD_PREFIX "# nvme-apstd "

int record_parse_header(const char *text, const char *kind, unsigned version, const char **ret_body) {
        const char *p = text, *nl;
        size_t klen = strlen(kind);
        char num[16];
        uint32_t v;

        if (!p || strncmp(p, RECORD_PREFIX, strlen(RECORD_PREFIX)) != 0)
                return -EBADMSG;
        p += strlen(RECORD_PREFIX);
        if (strncmp(p, kind, klen) != 0 || strncmp(p + klen, " record v", strlen(" record v")) != 0)
                return -EBADMSG;
        p += klen + strlen(" record v");
        nl = strchr(p, '\n');
        if (!nl || (size_t) (nl - p) >= sizeof num)
                return -EBADMSG;
        (void) snprintf(num, sizeof num, "%.*s", (int) (nl - p), p);
        if (safe_atou32(num, &v) < 0 || v == 0)
                return -EBADMSG;
        if (v != version)
                return -EPROTONOSUPPORT;
        *ret_body = nl + 1;
        return 0;
}

int record_store(const char *path, const char *text) {
        return write_file_atomic(path, text, strlen(text), 0600);
}

int record_load(const char *path, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        r = read_full_file(path, RECORD_MAX_SIZE, READ_FULL_NOFOLLOW, &buf, &len);
        if (r < 0)
                return r;
        if (memchr(buf, '\0', len))
                return -EBADMSG;
        *ret = TAKE_PTR(buf);
        return 0;
}

int record_remove(const char *path) {
        if (unlink(path) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}
