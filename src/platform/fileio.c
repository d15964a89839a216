/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole-file reading and atomic writing; see fileio.h. */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "macro.h"

int read_full_fd(int fd, uint64_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, allocated = 0;

        for (;;) {
                ssize_t k;

                if (len == allocated) {
                        uint64_t m = allocated ? (uint64_t) allocated * 2 : 4096;
                        char *q;

                        if (m > max + 1)
                                m = max + 1;    /* one byte more than allowed tells "too large" */
                        if (m <= len || m >= SIZE_MAX)
                                return -EFBIG;
                        q = realloc(buf, (size_t) m + 1);
                        if (!q)
                                return -ENOMEM;
                        buf = q;
                        allocated = (size_t) m;
                }
                k = read(fd, buf + len, allocated - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > max)
                        return -EFBIG;
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int read_full_file(const char *path, uint64_t max, ReadFullFlags flags, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if ((flags & READ_FULL_ALLOW_STDIN) && strcmp(path, "-") == 0)
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        else
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | ((flags & READ_FULL_NOFOLLOW) ? O_NOFOLLOW : 0));
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (S_ISREG(st.st_mode) && (uint64_t) st.st_size > max)
                return -EFBIG;
        return read_full_fd(fd, max, ret, ret_len);
}

static int write_all(int fd, const char *p, size_t len) {
        while (len > 0) {
                ssize_t k = write(fd, p, len);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EIO;
                p += k;
                len -= (size_t) k;
        }
        return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode) {
        char dir[PATH_MAX], tmp[PATH_MAX];
        const char *slash = strrchr(path, '/');
        const char *name = slash ? slash + 1 : path;
        _cleanup_close_ int fd = -EBADF, dfd = -EBADF;
        int r, k;

        if (!*name)
                return -EINVAL;
        k = slash ? snprintf(dir, sizeof dir, "%.*s", (int) (slash - path), path) : snprintf(dir, sizeof dir, ".");
        if (k < 0 || (size_t) k >= sizeof dir)
                return -ENAMETOOLONG;
        if (slash == path)
                (void) snprintf(dir, sizeof dir, "/");
        k = snprintf(tmp, sizeof tmp, "%s/.%s.tmp", slash ? dir : ".", name);
        if (k < 0 || (size_t) k >= sizeof tmp)
                return -ENAMETOOLONG;

        /* A temporary file left by a crash goes first: O_EXCL then gives ours its own mode. */
        (void) unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return negative_errno();
        /* exactly @mode, whatever the umask (the unit's UMask=0077 would hide a 0644 file) */
        r = fchmod(fd, mode) < 0 ? negative_errno() : 0;
        if (r >= 0)
                r = write_all(fd, data, len);
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (close(TAKE_FD(fd)) < 0 && r >= 0)
                r = negative_errno();
        if (r >= 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        /* The rename is durable once the directory is synced (tmpfs /run: a no-op). */
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void) fsync(dfd);
        return 0;
}
