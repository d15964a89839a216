/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The quarantine files on disk: load, atomic save, list, remove (quarantine-store.h, through
 * state-file.h); the format is quarantine-file.c's. */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"
#include "quarantine-store.h"
#include "state-file.h"
#include "sysfs.h"
#include "util.h"

#define QUARANTINE_FILE_MAX (16u * 1024u)
#define QUARANTINE_LIST_MAX 1024u     /* files listed at most: far more models than a machine has */

typedef struct QuarantineOwner {
        const char *model, *firmware;
} QuarantineOwner;

static int parse_any(const char *text, size_t len, void *ret, char **ret_error) {
        return quarantine_parse(text, len, ret, ret_error);
}

static bool foreign(const void *parsed, const void *owner, char **ret_message) {
        const Quarantine *q = parsed;
        const QuarantineOwner *o = owner;

        if (!o || (strcmp(q->model, o->model) == 0 && strcmp(q->firmware, o->firmware) == 0))
                return false;
        if (asprintf(ret_message, "kept for model \"%s\" firmware \"%s\", not this drive", q->model, q->firmware) <
            0)
                *ret_message = NULL;
        return true;
}

static const StateFileType quarantine_file = {
        .max_size = QUARANTINE_FILE_MAX,
        .parse = parse_any,
        .foreign = foreign,
};

int quarantine_load(const char *state_dir, const char *model, const char *firmware, Quarantine *ret,
                    char **ret_error) {
        _cleanup_free_ char *path = NULL;
        Quarantine q;
        int r;

        r = quarantine_path(state_dir, model, firmware, &path);
        if (r < 0)
                return r;
        r = state_file_load(&quarantine_file, path, &(QuarantineOwner) { model, firmware }, &q, ret_error);
        if (r < 0)
                return r;
        *ret = q;
        return 0;
}

int quarantine_save(const char *state_dir, const Quarantine *q) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        r = quarantine_path(state_dir, q->model, q->firmware, &path);
        if (r < 0)
                return r;
        r = quarantine_format(q, &text);
        if (r < 0)
                return r;
        return state_file_save(state_dir, "quarantine", path, text, 0644);
}

static int cmp_name(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* The *.quarantine names in @dir, sorted. */
static int list_names(const char *dir, char ***ret, size_t *ret_n) {
        DIR *d = opendir(dir);
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;

        *ret = NULL;
        *ret_n = 0;
        if (!d)
                return 0;
        while ((de = readdir(d)) && n < QUARANTINE_LIST_MAX) {
                size_t l = strlen(de->d_name);
                char **t;

                if (l <= strlen(".quarantine") || strcmp(de->d_name + l - strlen(".quarantine"), ".quarantine") != 0)
                        continue;
                t = reallocarray(names, n + 1, sizeof *names);
                if (t)
                        names = t;
                if (!t || !(names[n] = strdup(de->d_name))) {
                        free_names(names, n);
                        closedir(d);
                        return -ENOMEM;
                }
                n++;
        }
        closedir(d);
        if (n > 1)
                qsort(names, n, sizeof *names, cmp_name);
        *ret = names;
        *ret_n = n;
        return 0;
}

int quarantine_list(const char *state_dir, Quarantine **ret, size_t *ret_n) {
        _cleanup_free_ char *dir = NULL;
        Quarantine *v = NULL;
        char **names;
        size_t n_names, n = 0;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (asprintf(&dir, "%s/quarantine", state_dir) < 0)
                return -ENOMEM;
        r = list_names(dir, &names, &n_names);
        if (r < 0)
                return r;
        if (n_names > 0 && !(v = calloc(n_names, sizeof *v))) {
                free_names(names, n_names);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_names; i++) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
                        break;
                if (state_file_load(&quarantine_file, path, NULL, &v[n], NULL) >= 0)
                        n++;
        }
        free_names(names, n_names);
        *ret = v;
        *ret_n = n;
        return 0;
}

int quarantine_remove(const char *state_dir, const char *model, const char *firmware) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = quarantine_path(state_dir, model, firmware, &path);
        if (r < 0)
                return r;
        return unlink(path) < 0 ? -errno : 0;
}

int quarantine_set_latency_tolerance(const char *sysroot, const char *name, uint32_t us) {
        char path[PATH_MAX], value[32];
        uint32_t now;
        int fd, l, r;

        (void) snprintf(path, sizeof path, "%s/class/nvme/%s/power/pm_qos_latency_tolerance_us", sysroot, name);
        r = sysfs_read_attr(path, value, sizeof value);
        if (r < 0)
                return r;
        value[strcspn(value, "\n")] = '\0';
        /* "auto" and "any" (no constraint) read as above everything */
        if (safe_atou32(value, &now) >= 0 && now <= us)
                return 0;
        l = snprintf(value, sizeof value, "%u\n", us);
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        r = write(fd, value, (size_t) l) == l ? 1 : -errno;
        (void) close(fd);
        return r;
}
