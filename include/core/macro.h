/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Small helpers shared by every module: scope-based cleanup, array sizes and
 * pointer hand-over. Modelled on systemd's macro.h and libnvme's cleanup.h;
 * no dependencies.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Take ownership of a pointer: the cleanup handler of the old variable then sees NULL. */
#define TAKE_PTR(p)                          \
        ({                                   \
                __typeof__(p) _p_ = (p);     \
                (p) = NULL;                  \
                _p_;                         \
        })

#define TAKE_FD(fd)                          \
        ({                                   \
                int _fd_ = (fd);             \
                (fd) = -EBADF;               \
                _fd_;                        \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

/* NOLINT below: @type is a type name, it cannot be parenthesised (bugprone-macro-parentheses) */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) { /* NOLINT */      \
                if (*p)                                         \
                        func(*p);                               \
        }

static inline const char *strempty(const char *s) {
        return s ? s : "";
}

static inline int negative_errno(void) {
        int e = errno; /* read once: a compiler or analyser may not assume errno is stable */
        return e > 0 ? -e : -EIO;
}
