/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The metrics file: replaced atomically when its text changed (metrics-file.h). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "metrics-file.h"

/* World-readable: node_exporter runs as its own user (prometheus). */
#define METRICS_FILE_MODE 0644

int metrics_writer_init(MetricsWriter *w, const char *path) {
        *w = (MetricsWriter) {};
        w->path = strdup(path);
        return w->path ? 0 : -ENOMEM;
}

void metrics_writer_done(MetricsWriter *w) {
        if (!w)
                return;
        free(w->path);
        free(w->last);
        *w = (MetricsWriter) {};
}

int metrics_writer_update(MetricsWriter *w, const MetricsState *s, bool *ret_new_error) {
        _cleanup_free_ char *text = NULL;
        int r;

        if (ret_new_error)
                *ret_new_error = false;
        r = metrics_format(s, &text);
        if (r >= 0 && w->last && strcmp(w->last, text) == 0)
                return 0;
        if (r >= 0)
                r = write_file_atomic(w->path, text, strlen(text), METRICS_FILE_MODE);
        if (r < 0) {
                if (ret_new_error)
                        *ret_new_error = r != w->error;
                w->error = r;
                return r;
        }
        free(w->last);
        w->last = TAKE_PTR(text);
        w->error = 0;
        return 1;
}

void metrics_strerror(const char *path, int error, char *buf, size_t n) {
        const char *slash = strrchr(path, '/');
        int dl = slash && slash != path ? (int) (slash - path) : 1;

        switch (error) {
        case -ENOENT:
        case -ENOTDIR:
                (void) snprintf(buf, n, "cannot write %s: directory %.*s does not exist (create it, or change "
                                "[metrics] path)", path, dl, path);
                break;
        case -EACCES:
        case -EPERM:
                (void) snprintf(buf, n, "cannot write %s: directory %.*s is not writable by the daemon "
                                "(see ReadWritePaths= in the unit)", path, dl, path);
                break;
        case -EROFS:
                (void) snprintf(buf, n, "cannot write %s: %.*s is on a read-only file system", path, dl, path);
                break;
        default:
                (void) snprintf(buf, n, "cannot write %s: %s", path, strerror(-error));
                break;
        }
}
