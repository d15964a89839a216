/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/bpf-floor-load OBJECT: load the empty programs of bench/bpf-floor.bpf.c from OBJECT,
 * attach them, say "attached" on stdout, and hold them until SIGINT or SIGTERM. The bench's
 * own tool (bench/bpf-overhead.sh builds it); exits 1 with libbpf's reason when it cannot.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

int main(int argc, char **argv) {
        struct bpf_object *obj;
        struct bpf_program *p;
        sigset_t ss;
        int sig, n = 0;

        if (argc != 2) {
                fprintf(stderr, "usage: %s OBJECT\n", argv[0]);
                return 2;
        }
        sigemptyset(&ss);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGTERM);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        obj = bpf_object__open_file(argv[1], NULL);
        if (!obj || bpf_object__load(obj) < 0) {
                fprintf(stderr, "bpf-floor-load: cannot load %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        bpf_object__for_each_program(p, obj) {
                if (!bpf_program__attach(p)) {
                        fprintf(stderr, "bpf-floor-load: cannot attach %s: %s\n", bpf_program__name(p),
                                strerror(errno));
                        return 1;
                }
                n++;
        }
        printf("attached %d\n", n);
        fflush(stdout);
        sigwait(&ss, &sig);
        bpf_object__close(obj);
        return 0;
}
