/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test-only LD_PRELOAD, loaded before libumockdev-preload.so.0, that makes a
 * fake cpufreq tree behave a little more like sysfs:
 *
 * 1. A write to a sysfs attribute replaces the value, but the fake's
 *    attributes are regular files and libcpupower opens them O_WRONLY without
 *    O_TRUNC ("performance" over "powersave"... is fine, "powersave" over
 *    "performance" gives "powersavece"; doc/platform.md). Add O_TRUNC to write-opens
 *    of /sys paths (same idea as tests/fake/sysfs_extras.c).
 * 2. The kernel refuses values (EINVAL, intel_pstate's EBUSY for EPP under
 *    `performance`); a file cannot. CPUPIN_TEST_REFUSE="PATH=ERRNO[;PATH=ERRNO]"
 *    (ERRNO: EBUSY, EINVAL, EIO) makes every write(2) to a file opened as
 *    PATH fail with that errno, as a sysfs store() returning it would; the
 *    file keeps its value (no O_TRUNC for it, whoever asked: sysfs ignores it).
 *
 * Built without sanitizers: it is preloaded into shells and other binaries.
 */
/* meson adds -D_FILE_OFFSET_BITS=64, which renames open to open64 in the
 * headers and makes the two wrappers collide. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FDS 1024

/* refused[fd] = errno to fail writes with, 0 = none */
static int refused[MAX_FDS];

static int in_sys(const char *p) {
        return p && getenv("UMOCKDEV_DIR") && strncmp(p, "/sys/", 5) == 0;
}

/* The errno configured for @path, or 0. */
static int refusal_for(const char *path) {
        const char *spec = getenv("CPUPIN_TEST_REFUSE"), *p;
        size_t n = strlen(path);

        for (p = spec; p && *p; ) {
                const char *end = strchr(p, ';'), *eq = strchr(p, '=');
                size_t len = end ? (size_t) (end - p) : strlen(p);

                if (eq && eq < p + len && (size_t) (eq - p) == n && strncmp(p, path, n) == 0) {
                        const char *e = eq + 1;
                        size_t elen = (size_t) (p + len - e);

                        if (elen == 5 && strncmp(e, "EBUSY", 5) == 0)
                                return EBUSY;
                        if (elen == 6 && strncmp(e, "EINVAL", 6) == 0)
                                return EINVAL;
                        return EIO;
                }
                p = end ? end + 1 : NULL;
        }
        return 0;
}

#define WRAP_OPEN(name)                                                                          \
        int name(const char *path, int flags, ...) {                                             \
                static int (*real)(const char *, int, ...);                                      \
                mode_t mode = 0;                                                                 \
                int fd, e;                                                                       \
                if (!real)                                                                       \
                        real = (int (*)(const char *, int, ...)) dlsym(RTLD_NEXT, #name);        \
                if (flags & (O_CREAT | O_TMPFILE)) {                                             \
                        va_list ap;                                                              \
                        va_start(ap, flags);                                                     \
                        mode = va_arg(ap, mode_t);                                               \
                        va_end(ap);                                                              \
                }                                                                                \
                e = in_sys(path) && (flags & O_ACCMODE) != O_RDONLY ? refusal_for(path) : 0;     \
                if (in_sys(path) && (flags & O_ACCMODE) != O_RDONLY)                             \
                        flags = e ? flags & ~O_TRUNC : flags | O_TRUNC;                          \
                fd = real(path, flags, mode);                                                    \
                if (fd >= 0 && fd < MAX_FDS)                                                     \
                        refused[fd] = e;                                                         \
                return fd;                                                                       \
        }
WRAP_OPEN(open)
WRAP_OPEN(open64)

ssize_t write(int fd, const void *buf, size_t n) {
        static ssize_t (*real)(int, const void *, size_t);

        if (!real)
                real = (ssize_t (*)(int, const void *, size_t)) dlsym(RTLD_NEXT, "write");
        if (fd >= 0 && fd < MAX_FDS && refused[fd]) {
                errno = refused[fd];
                return -1;
        }
        return real(fd, buf, n);
}

int close(int fd) {
        static int (*real)(int);

        if (!real)
                real = (int (*)(int)) dlsym(RTLD_NEXT, "close");
        if (fd >= 0 && fd < MAX_FDS)
                refused[fd] = 0;
        return real(fd);
}
