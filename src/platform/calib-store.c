/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The calibration file on disk: load and atomic save (calib-store.h, through state-file.h); the
 * format is calib.c's. */

#include <stdio.h>
#include <string.h>

#include "calib-store.h"
#include "macro.h"
#include "state-file.h"

#define CALIB_FILE_MAX (64u * 1024u)

typedef struct CalibOwner {
        const char *model, *firmware;
} CalibOwner;

static int calib_parse_any(const char *text, size_t len, void *ret, char **ret_error) {
        return calib_parse(text, len, ret, ret_error);
}

static bool calib_foreign(const void *parsed, const void *owner, char **ret_message) {
        const Calibration *c = parsed;
        const CalibOwner *o = owner;

        if (strcmp(c->model, o->model) == 0 && strcmp(c->firmware, o->firmware) == 0)
                return false;
        if (asprintf(ret_message, "measured for model \"%s\" firmware \"%s\", not this drive", c->model,
                     c->firmware) < 0)
                *ret_message = NULL;
        return true;
}

static const StateFileType calib_file = {
        .max_size = CALIB_FILE_MAX,
        .parse = calib_parse_any,
        .foreign = calib_foreign,
};

int calib_load(const char *state_dir, const char *model, const char *firmware, Calibration *ret,
               char **ret_error) {
        _cleanup_free_ char *path = NULL;
        Calibration c;
        int r;

        r = calib_path(state_dir, model, firmware, &path);
        if (r < 0)
                return r;
        r = state_file_load(&calib_file, path, &(CalibOwner) { model, firmware }, &c, ret_error);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

int calib_save(const char *state_dir, const Calibration *c) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        r = calib_path(state_dir, c->model, c->firmware, &path);
        if (r < 0)
                return r;
        r = calib_format(c, &text);
        if (r < 0)
                return r;
        return state_file_save(state_dir, "calibration", path, text, 0644);
}
