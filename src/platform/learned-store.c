/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The learned-state file on disk: load and atomic save (learned-store.h); the format is learned.c's. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "learned-store.h"
#include "macro.h"

#define LEARNED_FILE_MAX (64u * 1024u)

int learned_load(const char *state_dir, const char *model, const char *firmware, uint64_t serial_hash,
                 Learned *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL, *err = NULL;
        Learned l;
        size_t len;
        int r;

        r = learned_path(state_dir, model, firmware, serial_hash, &path);
        if (r < 0)
                return r;
        r = read_full_file(path, LEARNED_FILE_MAX, READ_FULL_NOFOLLOW, &text, &len);
        if (r < 0) {
                if (r != -ENOENT && ret_error && asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = learned_parse(text, len, &l, &err);
        if (r >= 0 && (strcmp(l.model, model) != 0 || strcmp(l.firmware, firmware) != 0 ||
                       l.serial_hash != serial_hash)) {
                r = -EINVAL;
                free(err);
                err = NULL;
                if (asprintf(&err, "learned on another drive (model \"%s\" firmware \"%s\")", l.model, l.firmware) < 0)
                        err = NULL;
        }
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "%s: %s", path, err ? err : strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        *ret = l;
        return 0;
}

int learned_save(const char *state_dir, const Learned *l) {
        _cleanup_free_ char *path = NULL, *dir = NULL, *text = NULL;
        int r;

        r = learned_path(state_dir, l->model, l->firmware, l->serial_hash, &path);
        if (r < 0)
                return r;
        if (asprintf(&dir, "%s/adaptive", state_dir) < 0)
                return -ENOMEM;
        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = learned_format(l, &text);
        if (r < 0)
                return r;
        return write_file_atomic(path, text, strlen(text), 0600);
}
