/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Crash records on disk; see record-file.h. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "record-file.h"
#include "record-format.h"

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

/* record_ctrl_path(): the name apst-record.h documents, and the daemon has always used */
#define CTRL_RECORD_FORMAT "%s/ctrl-%s.orig"

int record_ctrl_path(const char *dir, const char *ctrl, char *buf, size_t n) {
        int l = snprintf(NULL, 0, CTRL_RECORD_FORMAT, dir, ctrl);

        if (l < 0 || (size_t) l >= n)
                return -ENAMETOOLONG;
        (void) snprintf(buf, n, CTRL_RECORD_FORMAT, dir, ctrl);
        return 0;
}
