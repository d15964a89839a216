/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Crash records on disk; see record-file.h. */

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
