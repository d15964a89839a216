/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading nvme-apstd.conf from disk (config-file.h): what the file must be
 * before its text goes to config_parse_string().
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-dropin.h"
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

int config_read_text(const char *path, char **ret_text, char **ret_error) {
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

        *ret_text = TAKE_PTR(text);
        return 0;
}

int config_load(const char *path, Config *ret, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = config_read_text(path, &text, ret_error);
        if (r < 0)
                return r;
        return config_parse_string(text, path, ret, ret_error);
}

int config_load_optional(const char *path, bool missing_ok, Config *ret, char **ret_error) {
        const ConfigLoad o = { .path = path, .missing_ok = missing_ok, .system_dropins = missing_ok };

        return config_load_all(&o, ret, ret_error);
}

/* Room for @n elements of @size in *@p (reallocarray(), *@p kept on failure). false: out of memory. */
static bool grow(void *p, size_t n, size_t size) {
        void *q = reallocarray(*(void **) p, n, size);

        if (!q)
                return false;
        *(void **) p = q;
        return true;
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

/* The files of the configuration, read: the main file then the drop-ins, with what failed. */
typedef struct LoadSet {
        ConfigSource *src;
        char **texts, **paths;
        size_t n;
        char *errors;           /* read errors, one a line */
        int error;
} LoadSet;

static void load_set_done(LoadSet *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->texts[i]);
                free(s->paths[i]);
        }
        free(s->src);
        free(s->texts);
        free(s->paths);
        free(s->errors);
}

static void load_set_error(LoadSet *s, int error, const char *message) {
        char *n = NULL;

        if (s->error == 0 || s->error == -ENOENT)
                s->error = error;
        if (asprintf(&n, "%s%s%s", s->errors ?: "", s->errors ? "\n" : "", message ?: strerror(-error)) < 0)
                return;
        free(s->errors);
        s->errors = n;
}

/* Read @path into the set; with @missing_ok a missing file is left out. */
static int load_set_add(LoadSet *s, const char *path, bool missing_ok) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        int r;

        if (missing_ok && access(path, F_OK) < 0 && errno == ENOENT)
                return 0;
        r = config_read_text(path, &text, &err);
        if (r < 0) {
                load_set_error(s, r, err);
                return r == -ENOMEM ? r : 0;
        }
        if (!grow(&s->texts, s->n + 1, sizeof(char *)) || !grow(&s->paths, s->n + 1, sizeof(char *)))
                return -ENOMEM;
        s->paths[s->n] = strdup(path);
        if (!s->paths[s->n])
                return -ENOMEM;
        s->texts[s->n] = TAKE_PTR(text);
        s->n++;
        return 0;
}

static char *path_join3(const char *a, const char *b, const char *c) {
        char *p = NULL;

        if (asprintf(&p, "%s%s%s", a ?: "", b, c ?: "") < 0)
                return NULL;
        return p;
}

/* One directory's "*.conf" into @entries, with @dir as their priority; a missing directory has none. */
static int dropin_list_dir(const char *path, unsigned dir, DropinEntry **entries, char ***names, size_t *n) {
        _cleanup_(closedirp) DIR *d = opendir(path);
        struct dirent *de;

        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();
        while ((de = readdir(d))) {
                char target[16];
                ssize_t l;
                char *name;

                if (!config_dropin_name_ok(de->d_name))
                        continue;
                /* systemd masks a name with a symlink to /dev/null (null_or_empty_path()). */
                l = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
                if (l >= 0)
                        target[l] = '\0';
                name = strdup(de->d_name);
                if (!name || !grow(entries, *n + 1, sizeof(DropinEntry)) || !grow(names, *n + 1, sizeof(char *))) {
                        free(name);
                        return -ENOMEM;
                }
                (*names)[*n] = name;
                (*entries)[*n] = (DropinEntry) { .dir = dir, .name = name,
                                                 .masked = l >= 0 && strcmp(target, "/dev/null") == 0 };
                (*n)++;
        }
        return 0;
}

/* The drop-in directories of @o, under its root: the four of the default file, or "FILE.d". */
static int dropin_dirs(const ConfigLoad *o, char **ret, size_t *ret_n) {
        size_t n = o->system_dropins ? CONFIG_DROPIN_DIRS_N : 1;

        for (size_t i = 0; i < n; i++) {
                ret[i] = o->system_dropins ? path_join3(o->root, config_dropin_dirs[i], NULL) :
                                             path_join3(o->root, o->path, ".d");
                if (!ret[i])
                        return -ENOMEM;
        }
        *ret_n = n;
        return 0;
}

static int load_dropins(const ConfigLoad *o, LoadSet *s) {
        char *dirs[CONFIG_DROPIN_DIRS_N] = {};
        _cleanup_free_ DropinEntry *entries = NULL;
        _cleanup_free_ size_t *order = NULL;
        char **names = NULL;
        size_t n_dirs = 0, n = 0, n_order = 0;
        int r;

        r = dropin_dirs(o, dirs, &n_dirs);
        for (size_t i = 0; i < n_dirs && r >= 0; i++) {
                r = dropin_list_dir(dirs[i], (unsigned) i, &entries, &names, &n);
                if (r < 0 && r != -ENOMEM) {
                        _cleanup_free_ char *m = NULL;

                        if (asprintf(&m, "%s: cannot read the directory: %s", dirs[i], strerror(-r)) >= 0)
                                load_set_error(s, r, m);
                        r = 0;
                }
        }
        if (r >= 0)
                r = config_dropins_order(entries, n, &order, &n_order);
        for (size_t i = 0; entries && i < n_order && r >= 0; i++) {
                _cleanup_free_ char *p = NULL;

                p = path_join3(dirs[entries[order[i]].dir], "/", entries[order[i]].name);
                r = p ? load_set_add(s, p, false) : -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        for (size_t i = 0; i < n_dirs; i++)
                free(dirs[i]);
        return r;
}

int config_load_all(const ConfigLoad *o, Config *ret, char **ret_error) {
        _cleanup_free_ char *main_path = NULL, *parse_error = NULL;
        _cleanup_(load_set_done) LoadSet s = {};
        Config c;
        int r;

        main_path = path_join3(o->root, o->path, NULL);
        if (!main_path)
                return -ENOMEM;
        r = load_set_add(&s, main_path, o->missing_ok);
        if (r >= 0)
                r = load_dropins(o, &s);
        if (r < 0)
                return load_fail(ret_error, r, "%s: out of memory", main_path);

        if (s.n == 0 && s.error == 0) {
                config_init(ret);
                return 0;
        }
        s.src = calloc(s.n ?: 1, sizeof(ConfigSource));
        if (!s.src)
                return load_fail(ret_error, -ENOMEM, "%s: out of memory", main_path);
        for (size_t i = 0; i < s.n; i++)
                s.src[i] = (ConfigSource) { .path = s.paths[i], .text = s.texts[i] };
        /* Parsed even when a file could not be read, so one report says everything that is wrong. */
        config_init(&c);        /* nothing allocated: config_done() below is harmless when nothing was parsed */
        r = s.n > 0 ? config_parse_sources(s.src, s.n, &c, &parse_error) : 0;
        if (r < 0 || s.error < 0) {
                if (r >= 0)
                        config_done(&c);
                else
                        load_set_error(&s, r, parse_error);
                if (ret_error)
                        *ret_error = TAKE_PTR(s.errors);
                return s.error < 0 ? s.error : r;
        }
        *ret = c;
        return 0;
}

