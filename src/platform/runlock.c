/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The lock between the daemon and `calibrate`; see runlock.h. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "runlock.h"

int runlock_take(const char *runtime_dir, bool exclusive, bool wait, int *ret_fd) {
        char path[4096];
        int fd;

        if ((size_t) snprintf(path, sizeof path, "%s/" RUNLOCK_NAME, runtime_dir) >= sizeof path)
                return -ENAMETOOLONG;
        if (mkdir(runtime_dir, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return negative_errno();
        while (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)) < 0) {
                int r = negative_errno();
                if (r == -EINTR && wait)
                        continue;
                (void) close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}
