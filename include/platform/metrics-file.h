/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The metrics file. MetricsWriter remembers the last text written and
 * replaces the file (write_file_atomic(): temporary file + rename) only when
 * the text changed, so a daemon that calls metrics_writer_update() after every
 * event of its loop writes nothing while idle. It never stats the file or
 * wakes by itself. The text is metrics.h's.
 */

#include <stdbool.h>

#include "metrics.h"

typedef struct MetricsWriter {
        char *path;                     /* the [metrics] path */
        char *last;                     /* text last written successfully, NULL = none yet */
        int error;                      /* negative errno of the last failed write, 0 after a success */
} MetricsWriter;

/* @path is copied. Return: 0 or -ENOMEM. */
int metrics_writer_init(MetricsWriter *w, const char *path);
/* Free; NULL and a second call are fine. The file is left in place. */
void metrics_writer_done(MetricsWriter *w);

/**
 * metrics_writer_update() - write @s if its text differs from the last one written
 * @ret_new_error: may be NULL; set to true when this call failed with another
 *      error than the previous call (so the caller logs a failure once, not on
 *      every event), false otherwise
 *
 * A failed write is tried again on the next update, even with the same text.
 * Return: 1 written, 0 unchanged (nothing done), or negative errno of
 * metrics_format() or write_file_atomic() (-ENOENT: no such directory,
 * -EACCES/-EROFS: not writable); metrics_strerror() words it.
 */
int metrics_writer_update(MetricsWriter *w, const MetricsState *s, bool *ret_new_error);

/* One sentence for a metrics_writer_update() error, naming the path:
 * "cannot write /x/y.prom: directory /x does not exist". */
void metrics_strerror(const char *path, int error, char *buf, size_t n);
