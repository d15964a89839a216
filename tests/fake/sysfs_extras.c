/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helper preload for the fake NVMe harness, loaded *before* libumockdev-preload (fake-nvme-tb puts
 * it first in the child's LD_PRELOAD). Why (doc/testing.md, doc/platform.md):
 *
 * - O_TRUNC on write-opens under /sys: real sysfs replaces an attribute's value on write, a fake
 *   regular file keeps the old tail ("powersave" over "performance" gives "powersavece").
 *   libcpupower opens attributes O_WRONLY without O_TRUNC.
 * - scandir() under /sys is redirected into the testbed: glibc's scandir calls its internal
 *   opendir, which umockdev does not see (so libnvme's nvme_scan() would find nothing).
 * - Opens of /dev paths and every close are serialized by one lock around umockdev's own wrappers.
 *   umockdev (0.17 to at least 0.19) keeps the fds it emulates in a fixed table that open fills and
 *   close empties with no lock: two threads opening /dev/nvme0 and /dev/nvme1 at once can both take
 *   one slot, and the fd that loses it is no longer emulated, so its ioctls reach the testbed's
 *   plain file and fail with ENOTTY. The daemon opens controllers from one thread per controller,
 *   as it should on a real kernel. What is left unlocked: umockdev's ioctl looks an fd up under its
 *   own lock, which does not cover the table's writers; that needs a stale slot holding the same fd
 *   number and has not been seen.
 *
 * Build it without sanitizers: it is loaded into sh, nvme-cli and other unsanitized programs.
 * glob() and openat() on /dev are NOT fixed here: see README.md. */

/* meson adds -D_FILE_OFFSET_BITS=64, which renames open->open64 etc. in the headers and makes our
 * open/open64 wrappers collide: build this file without it. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int in_sys(const char *p)
{
        return p && getenv("UMOCKDEV_DIR") && !strncmp(p, "/sys/", 5);
}

/* A write-open under /sys replaces the attribute's value, as real sysfs does */
static int sys_flags(const char *path, int flags)
{
        return in_sys(path) && (flags & O_ACCMODE) != O_RDONLY ? flags | O_TRUNC : flags;
}

/* Recursive: umockdev's wrappers may call a public open or close, which resolves back to ours. */
static pthread_mutex_t fd_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/* A fork taken while another thread holds the lock would leave the child's copy locked for good. */
static void fd_lock_reset(void)
{
        fd_lock = (pthread_mutex_t) PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
}

__attribute__((constructor)) static void fd_lock_init(void)
{
        pthread_atfork(NULL, NULL, fd_lock_reset);
}

/* umockdev attaches its ioctl handler to a path that starts with "/dev/", as given */
static int in_dev(const char *p)
{
        return p && !strncmp(p, "/dev/", 5);
}

#define LOCKED_IF(cond, call)                                                                              \
        ({                                                                                                 \
                int _locked = (cond);                                                                      \
                if (_locked)                                                                               \
                        pthread_mutex_lock(&fd_lock);                                                      \
                __typeof__(call) _r = (call);                                                              \
                if (_locked) {                                                                             \
                        int _e = errno;                                                                    \
                        pthread_mutex_unlock(&fd_lock);                                                    \
                        errno = _e;                                                                        \
                }                                                                                          \
                _r;                                                                                        \
        })

#define WRAP_OPEN(name)                                                                                    \
        int name(const char *path, int flags, ...)                                                         \
        {                                                                                                  \
                static int (*real)(const char *, int, ...);                                                \
                mode_t mode = 0;                                                                           \
                if (!real)                                                                                 \
                        real = (int (*)(const char *, int, ...)) dlsym(RTLD_NEXT, #name);                  \
                if (flags & (O_CREAT | O_TMPFILE)) {                                                       \
                        va_list ap;                                                                        \
                        va_start(ap, flags);                                                               \
                        mode = va_arg(ap, mode_t);                                                         \
                        va_end(ap);                                                                        \
                }                                                                                          \
                return LOCKED_IF(in_dev(path), real(path, sys_flags(path, flags), mode));                  \
        }
WRAP_OPEN(open)
WRAP_OPEN(open64)

/* _FORTIFY_SOURCE's checked opens, which umockdev wraps too (declared by glibc only under fortify) */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
#define WRAP_OPEN_2(name)                                                                                  \
        int name(const char *path, int flags)                                                              \
        {                                                                                                  \
                static int (*real)(const char *, int);                                                     \
                if (!real)                                                                                 \
                        real = (int (*)(const char *, int)) dlsym(RTLD_NEXT, #name);                       \
                return LOCKED_IF(in_dev(path), real(path, sys_flags(path, flags)));                        \
        }
WRAP_OPEN_2(__open_2)
WRAP_OPEN_2(__open64_2)

#define WRAP_FOPEN(name)                                                                                   \
        FILE *name(const char *path, const char *mode)                                                     \
        {                                                                                                  \
                static FILE *(*real)(const char *, const char *);                                          \
                if (!real)                                                                                 \
                        real = (FILE * (*) (const char *, const char *)) dlsym(RTLD_NEXT, #name);          \
                return LOCKED_IF(in_dev(path), real(path, mode));                                          \
        }
WRAP_FOPEN(fopen)
WRAP_FOPEN(fopen64)

int close(int fd)
{
        static int (*real)(int);

        if (!real)
                real = (int (*)(int)) dlsym(RTLD_NEXT, "close");
        return LOCKED_IF(1, real(fd));
}

int fclose(FILE *f)
{
        static int (*real)(FILE *);

        if (!real)
                real = (int (*)(FILE *)) dlsym(RTLD_NEXT, "fclose");
        return LOCKED_IF(1, real(f));
}

#define WRAP_SCANDIR(name, dirent_t)                                                                       \
        int name(const char *dir, struct dirent_t ***nl, int (*sel)(const struct dirent_t *),              \
                 int (*cmp)(const struct dirent_t **, const struct dirent_t **))                           \
        {                                                                                                  \
                static int (*real)(const char *, struct dirent_t ***, int (*)(const struct dirent_t *),    \
                                   int (*)(const struct dirent_t **, const struct dirent_t **));           \
                char buf[PATH_MAX];                                                                        \
                if (!real)                                                                                 \
                        real = (int (*)(const char *, struct dirent_t ***, int (*)(const struct dirent_t *), \
                                        int (*)(const struct dirent_t **, const struct dirent_t **)))      \
                                dlsym(RTLD_NEXT, #name);                                                   \
                if (in_sys(dir)) {                                                                         \
                        snprintf(buf, sizeof buf, "%s%s", getenv("UMOCKDEV_DIR"), dir);                    \
                        dir = buf;                                                                         \
                }                                                                                          \
                return real(dir, nl, sel, cmp);                                                            \
        }
WRAP_SCANDIR(scandir, dirent)
WRAP_SCANDIR(scandir64, dirent64)
