/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helper preload for the fake NVMe harness, loaded *before* libumockdev-preload (fake-nvme-tb puts
 * it first in the child's LD_PRELOAD). Why (doc/testing.md, doc/platform.md):
 *
 * - O_TRUNC on write-opens under /sys: real sysfs replaces an attribute's value on write, a fake
 *   regular file keeps the old tail ("powersave" over "performance" gives "powersavece").
 *   libcpupower opens attributes O_WRONLY without O_TRUNC.
 * - scandir() under /sys is redirected into the testbed: glibc's scandir calls its internal
 *   opendir, which umockdev does not see (so libnvme's nvme_scan() would find nothing).
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
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int in_sys(const char *p)
{
        return p && getenv("UMOCKDEV_DIR") && !strncmp(p, "/sys/", 5);
}

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
                if (in_sys(path) && (flags & O_ACCMODE) != O_RDONLY)                                       \
                        flags |= O_TRUNC;                                                                  \
                return real(path, flags, mode);                                                            \
        }
WRAP_OPEN(open)
WRAP_OPEN(open64)

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
