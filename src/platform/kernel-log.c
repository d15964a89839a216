/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel log as records: /dev/kmsg or a FIFO (kernel-log.h). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "kernel-log.h"
#include "macro.h"

/* A FIFO's text waiting for the rest of its line: one record at most, with its dictionary. */
#define FIFO_BUF (2u * KMSG_RECORD_MAX)
/* Records handed out per call: the rest waits for the next wake-up, so a flood cannot hold the loop. */
#define READ_BUDGET 256u

struct KernelLog {
        char *path;
        int fd;
        bool fifo;
        size_t len;
        char buf[FIFO_BUF];
};

static int open_log(KernelLog *k) {
        struct stat st;
        int fd;

        if (stat(k->path, &st) < 0)
                return -errno;
        k->fifo = S_ISFIFO(st.st_mode);
        if (!k->fifo && !S_ISCHR(st.st_mode))
                return -EBADF;
        fd = open(k->path, (k->fifo ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (!k->fifo)
                (void) lseek(fd, 0, SEEK_END);   /* /dev/kmsg: from the next record on */
        k->fd = fd;
        k->len = 0;
        return 0;
}

int kernel_log_open(const char *path, KernelLog **ret) {
        KernelLog *k;
        int r;

        if (!path)
                path = getenv(KERNEL_LOG_ENV);
        if (!path || !*path)
                path = KERNEL_LOG_DEFAULT;
        k = calloc(1, sizeof *k);
        if (!k)
                return -ENOMEM;
        k->fd = -EBADF;
        k->path = strdup(path);
        if (!k->path) {
                free(k);
                return -ENOMEM;
        }
        r = open_log(k);
        if (r < 0) {
                kernel_log_free(k);
                return r;
        }
        *ret = k;
        return 0;
}

KernelLog *kernel_log_free(KernelLog *k) {
        if (!k)
                return NULL;
        if (k->fd >= 0)
                (void) close(k->fd);
        free(k->path);
        free(k);
        return NULL;
}

int kernel_log_fd(const KernelLog *k) {
        return k->fd;
}

const char *kernel_log_path(const KernelLog *k) {
        return k->path;
}

static int reopen(KernelLog *k) {
        (void) close(k->fd);
        k->fd = -EBADF;
        return open_log(k);
}

/* /dev/kmsg: one record per read(). */
static int read_kmsg(KernelLog *k, void (*fn)(const KmsgRecord *rec, void *userdata), void *userdata) {
        for (unsigned n = 0; n < READ_BUDGET; n++) {
                char rec[KMSG_RECORD_MAX];
                ssize_t l = read(k->fd, rec, sizeof rec);
                KmsgRecord r;

                if (l < 0 && (errno == EPIPE || errno == EINTR))
                        continue;   /* EPIPE: overwritten while we were away; the next one follows */
                if (l < 0)
                        return errno == EAGAIN ? 0 : -errno;
                if (l == 0)
                        return reopen(k) < 0 ? -EIO : 1;
                if (kmsg_parse_record(rec, (size_t) l, &r) >= 0)
                        fn(&r, userdata);
        }
        return 0;
}

/* The length of the record at @p (its first line and the " KEY=value" lines after it), if complete
 * within @n: a record ends before a line that does not start with a space, or at the buffer's end
 * when @flush. Return: the bytes, 0 incomplete. */
static size_t record_len(const char *p, size_t n, bool flush) {
        const char *nl = memchr(p, '\n', n);

        while (nl) {
                size_t at = (size_t) (nl - p) + 1;
                if (at == n)
                        return at;   /* a writer writes a whole record at once */
                if (p[at] != ' ')
                        return at;
                nl = memchr(p + at, '\n', n - at);
        }
        return flush ? n : 0;
}

static int read_fifo(KernelLog *k, void (*fn)(const KmsgRecord *rec, void *userdata), void *userdata) {
        for (unsigned n = 0; n < READ_BUDGET; n++) {
                ssize_t l = read(k->fd, k->buf + k->len, sizeof k->buf - k->len);
                size_t off = 0, rl;

                if (l < 0 && errno == EINTR)
                        continue;
                if (l < 0)
                        return errno == EAGAIN ? 0 : -errno;
                if (l == 0)
                        return reopen(k) < 0 ? -EIO : 1;
                k->len += (size_t) l;
                while ((rl = record_len(k->buf + off, k->len - off, k->len == sizeof k->buf)) > 0) {
                        KmsgRecord r;
                        if (kmsg_parse_record(k->buf + off, rl, &r) >= 0)
                                fn(&r, userdata);
                        off += rl;
                }
                memmove(k->buf, k->buf + off, k->len - off);
                k->len -= off;
        }
        return 0;
}

int kernel_log_read(KernelLog *k, void (*fn)(const KmsgRecord *rec, void *userdata), void *userdata) {
        if (k->fd < 0) {
                int r = open_log(k);
                if (r < 0)
                        return r;
                return 1;
        }
        return k->fifo ? read_fifo(k, fn, userdata) : read_kmsg(k, fn, userdata);
}

int kernel_log_pci_ctrl(const char *sysroot, const char *pci, char *ret, size_t size) {
        _cleanup_free_ char *dir = NULL;
        struct dirent *de;
        DIR *d;
        int r = -ENOENT;

        if (asprintf(&dir, "%s/class/nvme", sysroot) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return -ENOENT;
        while (r < 0 && (de = readdir(d))) {
                char link[PATH_MAX], target[PATH_MAX];
                const char *base;
                ssize_t l;

                if (de->d_name[0] == '.')
                        continue;
                (void) snprintf(link, sizeof link, "%s/%s/device", dir, de->d_name);
                l = readlink(link, target, sizeof target - 1);
                if (l <= 0)
                        continue;
                target[l] = '\0';
                base = strrchr(target, '/');
                base = base ? base + 1 : target;
                if (strcmp(base, pci) == 0 && strlen(de->d_name) < size) {
                        (void) snprintf(ret, size, "%s", de->d_name);
                        r = 0;
                }
        }
        closedir(d);
        return r;
}
