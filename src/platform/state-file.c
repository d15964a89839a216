/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's directories and the state files in them (state-file.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "macro.h"
#include "state-file.h"

int runtime_directory(const char *fallback, char **ret) {
        const char *e = getenv("RUNTIME_DIRECTORY");
        char *d;

        if (e && e[0] == '/')
                d = strndup(e, strcspn(e, ":"));
        else
                d = strdup(fallback);
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

const char *state_directory(char *buf, size_t n) {
        const char *d = getenv("STATE_DIRECTORY");

        if (d && *d) {
                size_t l = strcspn(d, ":");
                (void) snprintf(buf, n, "%.*s", (int) l, d);
        } else
                (void) snprintf(buf, n, "/var/lib/nvme-apstd");
        return buf;
}

int state_file_load(const StateFileType *type, const char *path, const void *owner, void *ret, char **ret_error) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        size_t len;
        int r;

        r = read_full_file(path, type->max_size, READ_FULL_NOFOLLOW, &text, &len);
        if (r < 0) {
                if (r != -ENOENT && ret_error && asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = type->parse(text, len, ret, &err);
        if (r >= 0) {
                char *foreign = NULL;

                if (type->foreign(ret, owner, &foreign)) {
                        free(err);
                        err = foreign;
                        r = -EINVAL;
                }
        }
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "%s: %s", path, err ? err : strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        return 0;
}

int state_file_save(const char *state_dir, const char *subdir, const char *path, const char *text, mode_t mode) {
        _cleanup_free_ char *dir = NULL;

        if (asprintf(&dir, "%s/%s", state_dir, subdir) < 0)
                return -ENOMEM;
        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return write_file_atomic(path, text, strlen(text), mode);
}
