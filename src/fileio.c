/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Atomic file replacement; see fileio.h. */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, unsigned flags) {
        char tmp[PATH_MAX], dir[PATH_MAX];
        const char *slash, *base;
        const char *p = data;
        int fd, r = 0;

        if (!path || !*path || path[strlen(path) - 1] == '/')
                return -EINVAL;
        slash = strrchr(path, '/');
        base = slash ? slash + 1 : path;
        if (slash == path)
                (void) snprintf(dir, sizeof dir, "/");
        else if ((size_t) snprintf(dir, sizeof dir, "%.*s", slash ? (int) (slash - path) : 1, slash ? path : ".") >=
                 sizeof dir)
                return -ENAMETOOLONG;
        if ((size_t) snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, base) >= sizeof tmp)
                return -ENAMETOOLONG;

        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, mode) < 0)
                r = negative_errno();
        while (r >= 0 && len > 0) {
                ssize_t k = write(fd, p, len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = negative_errno();
                        break;
                }
                p += k;
                len -= (size_t) k;
        }
        if (r >= 0 && (flags & WRITE_FILE_SYNC) && fsync(fd) < 0)
                r = negative_errno();
        /* no early return between mkostemp() and here; a failed close() can be the first
         * report of a failed write (NFS, quotas) */
        if (close(fd) < 0 && r >= 0)
                r = negative_errno();
        if (r >= 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        if (flags & WRITE_FILE_SYNC) {
                _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd >= 0)
                        (void) fsync(dfd);
        }
        return 0;
}
