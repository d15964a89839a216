/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading nvme-apstd.conf from disk (config-file.h): what the file must be
 * before its text goes to config_parse_string().
 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-file.h"
#include "fileio.h"
#include "macro.h"

_printf_(3, 4) static int load_fail(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return error;
}

int config_load(const char *path, Config *ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t size = 0;
        const char *nul;
        int r;

        /* O_NONBLOCK: opening a FIFO must not hang; we refuse it after fstat() anyway. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = negative_errno();
                return load_fail(ret_error, r, "%s: cannot open: %s", path, strerror(-r));
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                return load_fail(ret_error, r, "%s: cannot stat: %s", path, strerror(-r));
        }
        if (S_ISDIR(st.st_mode))
                return load_fail(ret_error, -EISDIR, "%s: is a directory, not a configuration file", path);
        if (!S_ISREG(st.st_mode))
                return load_fail(ret_error, -EINVAL, "%s: is not a regular file (mode %06o); refusing to use it",
                                 path, (unsigned) st.st_mode);
        if ((uintmax_t) st.st_size > CONFIG_MAX_SIZE)
                return load_fail(ret_error, -EFBIG, "%s: is larger than %u bytes (%jd); refusing to use it",
                                 path, CONFIG_MAX_SIZE, (intmax_t) st.st_size);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return load_fail(ret_error, -EPERM, "%s: is writable by %s (mode %04o); refusing to use it",
                                 path,
                                 (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "group and others" :
                                 st.st_mode & S_IWGRP ? "group" : "others",
                                 (unsigned) (st.st_mode & 07777));
        if (geteuid() == 0 && st.st_uid != 0)
                return load_fail(ret_error, -EPERM, "%s: is owned by uid %u, not root; refusing to use it",
                                 path, (unsigned) st.st_uid);

        r = read_full_fd(fd, CONFIG_MAX_SIZE, &text, &size);
        if (r == -EFBIG)
                return load_fail(ret_error, r, "%s: is larger than %u bytes; refusing to use it", path,
                                 CONFIG_MAX_SIZE);
        if (r < 0)
                return load_fail(ret_error, r, "%s: cannot read: %s", path, strerror(-r));
        if (!text)      /* read_full_fd() sets it when it returns 0; clang 14's analyzer loses -errno's sign */
                return load_fail(ret_error, -EIO, "%s: cannot read", path);

        nul = memchr(text, '\0', size);
        if (nul)
                return load_fail(ret_error, -EINVAL, "%s: contains a NUL byte at offset %zu; not a text file",
                                 path, (size_t) (nul - text));

        return config_parse_string(text, path, ret, ret_error);
}

int config_load_optional(const char *path, bool missing_ok, Config *ret, char **ret_error) {
        if (missing_ok && access(path, F_OK) < 0 && errno == ENOENT) {
                config_init(ret);
                return 0;
        }
        return config_load(path, ret, ret_error);
}

