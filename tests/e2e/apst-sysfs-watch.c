/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * apst-sysfs-watch FILE TIMEOUT_MS: which notifications a sysfs attribute
 * gives when it changes, for the APST system test. Watches FILE with inotify
 * (IN_MODIFY, IN_CLOSE_WRITE, IN_ATTRIB) and with poll() on an open
 * descriptor (POLLPRI|POLLERR: what sysfs_notify() wakes) for TIMEOUT_MS, and
 * prints one line per event seen ("inotify IN_MODIFY", "poll POLLPRI ...") and
 * "done" at the end. Prints "ready" once both watches are set up.
 * Test helper only (built by tests/e2e/apst-host.sh, run in the guest).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char *argv[]) {
        char buf[4096];
        long long end;
        int in, fd;

        if (argc != 3) {
                fprintf(stderr, "usage: %s FILE TIMEOUT_MS\n", argv[0]);
                return 2;
        }
        end = now_ms() + atoll(argv[2]);
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (in < 0 || inotify_add_watch(in, argv[1], IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB) < 0) {
                perror("inotify");
                return 1;
        }
        fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, buf, sizeof buf) < 0) { /* sysfs_notify() needs a read first */
                perror(argv[1]);
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                struct pollfd p[2] = { { .fd = in, .events = POLLIN }, { .fd = fd, .events = POLLPRI | POLLERR } };
                long long left = end - now_ms();
                int r;

                if (left <= 0)
                        break;
                r = poll(p, 2, (int) left);
                if (r < 0 && errno != EINTR) {
                        perror("poll");
                        return 1;
                }
                if (p[0].revents & POLLIN) {
                        ssize_t n = read(in, buf, sizeof buf);
                        for (char *b = buf; n > 0 && b < buf + n;) {
                                const struct inotify_event *e = (const struct inotify_event *) (void *) b;
                                printf("inotify%s%s%s\n", e->mask & IN_MODIFY ? " IN_MODIFY" : "",
                                       e->mask & IN_CLOSE_WRITE ? " IN_CLOSE_WRITE" : "",
                                       e->mask & IN_ATTRIB ? " IN_ATTRIB" : "");
                                b += sizeof *e + e->len;
                        }
                }
                if (p[1].revents & (POLLPRI | POLLERR)) {
                        printf("poll%s%s\n", p[1].revents & POLLPRI ? " POLLPRI" : "",
                               p[1].revents & POLLERR ? " POLLERR" : "");
                        (void) lseek(fd, 0, SEEK_SET); /* re-arm */
                        (void) read(fd, buf, sizeof buf);
                }
                fflush(stdout);
        }
        printf("done\n");
        return 0;
}
