/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Runs a libFuzzer target's LLVMFuzzerTestOneInput() once on every file of
 * the given directories (or files), without libFuzzer: the corpora become a
 * regression test in every build (gcc, ASan + UBSan, valgrind), not only in
 * the clang fuzzing build.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
        FILE *f = fopen(path, "rb");
        uint8_t *buf;
        long n;

        if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                if (f)
                        fclose(f);
                return -1;
        }
        /* exactly the file's size, so a sanitizer sees a read past its end */
        buf = malloc(n > 0 ? (size_t) n : 1);
        if (!buf || (n > 0 && fread(buf, 1, (size_t) n, f) != (size_t) n)) {
                fprintf(stderr, "%s: cannot read\n", path);
                free(buf);
                fclose(f);
                return -1;
        }
        fclose(f);
        (void) LLVMFuzzerTestOneInput(buf, (size_t) n);
        free(buf);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;
                DIR *d;
                struct dirent *de;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (run_file(argv[i]) < 0)
                                return 1;
                        n++;
                        continue;
                }
                d = opendir(argv[i]);
                if (!d)
                        return 1;
                while ((de = readdir(d))) {
                        char path[4096];

                        if (de->d_name[0] == '.')
                                continue;
                        (void) snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
                        if (run_file(path) < 0) {
                                closedir(d);
                                return 1;
                        }
                        n++;
                }
                closedir(d);
        }
        printf("%s: %u inputs, no failure\n", argv[0], n);
        return 0;
}
