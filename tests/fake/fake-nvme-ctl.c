/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fake-nvme-ctl: act on a running fake-nvme-tb from a test script.
 *
 *   fake-nvme-ctl [--socket PATH] COMMAND NAME [ARGS...]
 *
 * Connects to the harness's control socket ($FAKE_NVME_CTL, set for the harness's child), sends the
 * arguments NUL-separated, and waits for the reply, which the harness sends only once the command
 * is done (for "reset": after the change uevent). Prints the command's output.
 * Exit: 0 done, 1 the harness refused the command, 2 cannot reach the harness. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int write_all(int fd, const void *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p = (const char *) p + w;
                n -= (size_t) w;
        }
        return 0;
}

int main(int argc, char **argv)
{
        const char *path = getenv("FAKE_NVME_CTL");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char buf[4096], *reply = NULL;
        size_t len = 0;
        ssize_t n;
        int fd, i = 1;

        if (argc > 2 && !strcmp(argv[1], "--socket")) {
                path = argv[2];
                i = 3;
        }
        if (i >= argc || !strcmp(argv[i], "--help")) {
                fprintf(stderr,
                        "usage: fake-nvme-ctl [--socket PATH] COMMAND NAME [ARGS...]\n"
                        "  reset nvmeN [TABLE-FILE]   kernel-style reset + change uevent NVME_EVENT=connected\n"
                        "  pmqos nvmeN US [TABLE-FILE]   a pm_qos_latency_tolerance_us write: table rewritten, no uevent\n"
                        "  add nvmeN[,opts as --ctrl] remove nvmeN\n"
                        "  fault nvmeN WHAT=RESULT[:WHEN]   clear nvmeN\n"
                        "  set-attr nvmeN ATTR VALUE   stat nvmeN DISK \"11|15|17 numbers\"\n"
                        "  table nvmeN   report nvmeN   uevent nvmeN ACTION [KEY=VALUE...]\n"
                        "  wait nvmeN admin|identify|get-apst|set-apst|errors|violations N [TIMEOUT_MS]\n");
                return 2;
        }
        if (!path || !*path) {
                fprintf(stderr, "fake-nvme-ctl: FAKE_NVME_CTL is not set (run under fake-nvme-tb)\n");
                return 2;
        }
        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "fake-nvme-ctl: socket path too long: %s\n", path);
                return 2;
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "fake-nvme-ctl: %s: %m\n", path);
                return 2;
        }
        for (; i < argc; i++)
                if (write_all(fd, argv[i], strlen(argv[i]) + 1) < 0) {
                        fprintf(stderr, "fake-nvme-ctl: write: %m\n");
                        return 2;
                }
        if (shutdown(fd, SHUT_WR) < 0) {
                fprintf(stderr, "fake-nvme-ctl: shutdown: %m\n");
                return 2;
        }
        while ((n = read(fd, buf, sizeof(buf))) != 0) {
                char *r;
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "fake-nvme-ctl: read: %m\n");
                        free(reply);
                        return 2;
                }
                r = realloc(reply, len + (size_t) n + 1);
                if (!r) {
                        free(reply);
                        return 2;
                }
                reply = r;
                memcpy(reply + len, buf, (size_t) n);
                len += (size_t) n;
                reply[len] = 0;
        }
        close(fd);
        if (!reply) {
                fprintf(stderr, "fake-nvme-ctl: no reply (harness gone?)\n");
                return 2;
        }
        if (!strncmp(reply, "ok\n", 3)) {
                fputs(reply + 3, stdout);
                free(reply);
                return 0;
        }
        fprintf(stderr, "fake-nvme-ctl: %s", reply);
        free(reply);
        return 1;
}
