/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The learned-state file on disk: load and atomic save (learned-store.h, through state-file.h);
 * the format is learned.c's. */

#include <stdio.h>
#include <string.h>

#include "learned-store.h"
#include "macro.h"
#include "state-file.h"

#define LEARNED_FILE_MAX (64u * 1024u)

typedef struct LearnedOwner {
        const char *model, *firmware;
        uint64_t serial_hash;
} LearnedOwner;

static int learned_parse_any(const char *text, size_t len, void *ret, char **ret_error) {
        return learned_parse(text, len, ret, ret_error);
}

static bool learned_foreign(const void *parsed, const void *owner, char **ret_message) {
        const Learned *l = parsed;
        const LearnedOwner *o = owner;

        if (strcmp(l->model, o->model) == 0 && strcmp(l->firmware, o->firmware) == 0 &&
            l->serial_hash == o->serial_hash)
                return false;
        if (asprintf(ret_message, "learned on another drive (model \"%s\" firmware \"%s\")", l->model,
                     l->firmware) < 0)
                *ret_message = NULL;
        return true;
}

static const StateFileType learned_file = {
        .max_size = LEARNED_FILE_MAX,
        .parse = learned_parse_any,
        .foreign = learned_foreign,
};

int learned_load(const char *state_dir, const char *model, const char *firmware, uint64_t serial_hash,
                 Learned *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        Learned l;
        int r;

        r = learned_path(state_dir, model, firmware, serial_hash, &path);
        if (r < 0)
                return r;
        r = state_file_load(&learned_file, path, &(LearnedOwner) { model, firmware, serial_hash }, &l, ret_error);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

int learned_save(const char *state_dir, const Learned *l) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        r = learned_path(state_dir, l->model, l->firmware, l->serial_hash, &path);
        if (r < 0)
                return r;
        r = learned_format(l, &text);
        if (r < 0)
                return r;
        return state_file_save(state_dir, "adaptive", path, text, 0600);
}
