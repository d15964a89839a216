/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test driver for cpupin.c with the real backend (libcpupower + sysfs), without
 * the daemon (which calls cpupin.c through manager-cpu.c), so that
 * tests/cpu/test-cpupin-sysfs.sh can pin, crash and recover step by step.
 * Runs steps in order, in one process:
 *
 *   cpupin-driver RUNTIME_DIR STEP...
 *     recover                 cpupin_recover()
 *     irq:SYSFS:PROC:DEV[,DEV] CPUs of the devices' interrupts, for cpus = nvme-irq
 *     apply:CONFIG            parse CONFIG ([cpu] section) and cpupin_apply()
 *     describe:CONFIG         print cpupin_describe() on stdout
 *     release                 cpupin_release()
 *     hang                    print "ready" on stdout and wait: SIGTERM/SIGINT
 *                             release and exit 0 (a clean stop); SIGKILL leaves
 *                             the policies pinned (a crash)
 *
 * Without a release step the process exits with the policies still pinned,
 * which is what a crash leaves behind. Exit status: 0, or 1 on a failed step.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpufreq-sysfs.h"
#include "config.h"
#include "cpufreq-policy.h"
#include "cpupin.h"
#include "log.h"
#include "macro.h"

static int read_file(const char *path, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, size = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (len + 1 >= size) {
                        char *nb = realloc(buf, size = size * 2 + 4096);

                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                k = read(fd, buf + len, size - len - 1);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                len += (size_t) k;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

static int load(const char *path, Config *ret) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        int r;

        r = read_file(path, &text);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", path);
        r = config_parse_string(text, path, ret, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ? error : "Failed to parse the configuration");
        return 0;
}

static int irq_step(const char *arg, CpuSet *ret) {
        _cleanup_free_ char *copy = strdup(arg);
        char *sysfs, *proc, *devs, *save = NULL;
        const char *list[16];
        size_t n = 0;
        char cpus[256];
        int r;

        if (!copy)
                return -ENOMEM;
        sysfs = copy;
        proc = strchr(sysfs, ':');
        if (!proc)
                return log_error_errno(-EINVAL, "irq:SYSFS:PROC:DEV expected");
        *proc++ = '\0';
        devs = strchr(proc, ':');
        if (!devs)
                return log_error_errno(-EINVAL, "irq:SYSFS:PROC:DEV expected");
        *devs++ = '\0';
        for (char *d = strtok_r(devs, ",", &save); d && n < ELEMENTSOF(list); d = strtok_r(NULL, ",", &save))
                list[n++] = d;

        r = cpufreq_sysfs_irq_cpus(sysfs, proc, list, n, ret);
        if (r < 0)
                return log_error_errno(r, "No interrupt CPUs found: %m");
        cpuset_format(ret, cpus, sizeof cpus);
        printf("irq cpus: %s\n", cpus);
        return 0;
}

static int hang(CpuPin *p) {
        sigset_t mask;
        int sig = 0;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        printf("ready\n");
        fflush(stdout);
        if (sigwait(&mask, &sig) != 0)
                return -EINTR;
        return cpupin_release(p, "stop");
}

int main(int argc, char *argv[]) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        CpuSet irq = {};
        bool have_irq = false;
        int r;

        log_open();
        if (argc < 3) {
                fprintf(stderr, "usage: %s RUNTIME_DIR STEP...\n", argv[0]);
                return 2;
        }
        r = cpupin_new(&cpufreq_sysfs_ops, argv[1], &p);
        if (r < 0)
                return 1;

        for (int i = 2; i < argc; i++) {
                const char *step = argv[i];

                if (strcmp(step, "recover") == 0)
                        r = cpupin_recover(p);
                else if (strcmp(step, "release") == 0)
                        r = cpupin_release(p, "stop");
                else if (strcmp(step, "hang") == 0)
                        r = hang(p);
                else if (strncmp(step, "irq:", 4) == 0) {
                        r = irq_step(step + 4, &irq);
                        have_irq = r >= 0;
                } else if (strncmp(step, "apply:", 6) == 0 || strncmp(step, "describe:", 9) == 0) {
                        bool apply = step[0] == 'a';
                        Config c;

                        r = load(step + (apply ? 6 : 9), &c);
                        if (r >= 0) {
                                if (apply)
                                        r = cpupin_apply(p, &c.cpu, have_irq ? &irq : NULL,
                                                         i == 2 || strcmp(argv[i - 1], "recover") == 0 ?
                                                         "start" : "reload");
                                else {
                                        _cleanup_free_ char *text = NULL;

                                        r = cpupin_describe(p, &c.cpu, have_irq ? &irq : NULL, &text);
                                        if (r >= 0)
                                                fputs(text, stdout);
                                }
                                config_done(&c);
                        }
                } else {
                        fprintf(stderr, "unknown step '%s'\n", step);
                        return 2;
                }
                if (r < 0) {
                        fprintf(stderr, "step '%s' failed: %s\n", step, strerror(-r));
                        return 1;
                }
        }
        return 0;
}
