/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The calibration file on disk: load and atomic save (calib-store.h); the format is calib.c's. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calib-store.h"
#include "fileio.h"
#include "macro.h"

#define CALIB_FILE_MAX (64u * 1024u)

int calib_load(const char *state_dir, const char *model, const char *firmware, Calibration *ret,
               char **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL, *err = NULL;
        Calibration c;
        size_t len;
        int r;

        r = calib_path(state_dir, model, firmware, &path);
        if (r < 0)
                return r;
        r = read_full_file(path, CALIB_FILE_MAX, READ_FULL_NOFOLLOW, &text, &len);
        if (r < 0) {
                if (r != -ENOENT && ret_error && asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = calib_parse(text, len, &c, &err);
        if (r >= 0 && (strcmp(c.model, model) != 0 || strcmp(c.firmware, firmware) != 0)) {
                r = -EINVAL;
                free(err);
                err = NULL;
                if (asprintf(&err, "measured for model \"%s\" firmware \"%s\", not this drive", c.model,
                             c.firmware) < 0)
                        err = NULL;
        }
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "%s: %s", path, err ? err : strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        *ret = c;
        return 0;
}

int calib_save(const char *state_dir, const Calibration *c) {
        _cleanup_free_ char *path = NULL, *dir = NULL, *text = NULL;
        int r;

        r = calib_path(state_dir, c->model, c->firmware, &path);
        if (r < 0)
                return r;
        if (asprintf(&dir, "%s/calibration", state_dir) < 0)
                return -ENOMEM;
        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = calib_format(c, &text);
        if (r < 0)
                return r;
        return write_file_atomic(path, text, strlen(text), 0644);
}

const char *calib_default_state_dir(char *buf, size_t n) {
        const char *d = getenv("STATE_DIRECTORY");

        if (d && *d) {
                size_t l = strcspn(d, ":");
                (void) snprintf(buf, n, "%.*s", (int) l, d);
        } else
                (void) snprintf(buf, n, "/var/lib/nvme-apstd");
        return buf;
}
