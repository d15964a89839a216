/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the configuration parser as config_load_all() and a reload run it on the main
 * file and its drop-ins (config_parse_sources(): the input split at "\n%%\n" into up to four files,
 * with units, exit_latency_us and sections continued across files), then config_resolve() of a few
 * controllers against whatever parsed; and config_dropins_order() on a listing the input's first
 * bytes make up (directories, repeated names, masks).
 * The input is copied to a NUL-terminated heap buffer of exactly its size.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config-dropin.h"
#include "config.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const DeviceIdent idents[] = {
        { .name = "nvme0", .model = "INTEL SSDPEKKW256G7", .serial = "BTPY1234", .firmware = "PSF109C",
          .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
        { .name = "nvme1", .model = "KINGSTON SA2000M81000G", .serial = "50026B76", .firmware = "S5Z42105",
          .pci_vendor = 0x2646, .pci_device = 0x2263 },
        { .name = "nvme12", .model = NULL, .serial = NULL, .firmware = NULL },
};

static const char *const names[] = { "fuzz.conf", "10-a.conf", "50-b.conf", "90-c.conf" };

/* Every line of @error names one of the files (or is the "... and N more" line). */
static void check_errors(const char *error, size_t n) {
        for (const char *l = error; l && *l; l += strcspn(l, "\n"), l += *l == '\n') {
                bool named = strncmp(l, "... and ", 8) == 0;

                for (size_t i = 0; i < n && !named; i++)
                        named = strncmp(l, names[i], strlen(names[i])) == 0 && l[strlen(names[i])] == ':';
                assert(named);
        }
}

/* The drop-in order on a listing from the input's bytes: names sorted, each once, none masked. */
static void fuzz_order(const uint8_t *data, size_t size) {
        static const char *const files[] = { "10-a.conf", "10-a.conf", "50-b.conf", ".x.conf", "README",
                                             "90-c.conf", "a.conf", "z.conf" };
        DropinEntry in[16];
        size_t n = size < ELEMENTSOF(in) ? size : ELEMENTSOF(in), *order = NULL, m = 0;

        for (size_t i = 0; i < n; i++)
                in[i] = (DropinEntry) { .dir = data[i] & 3, .name = files[(data[i] >> 2) & 7],
                                        .masked = data[i] >> 7 };
        assert(config_dropins_order(in, n, &order, &m) == 0);
        for (size_t i = 0; i < m; i++) {
                assert(!in[order[i]].masked && config_dropin_name_ok(in[order[i]].name));
                if (i > 0)
                        assert(strcmp(in[order[i - 1]].name, in[order[i]].name) < 0);
                for (size_t j = 0; j < n; j++)  /* the highest-priority copy of its name */
                        assert(strcmp(in[j].name, in[order[i]].name) != 0 || in[j].dir >= in[order[i]].dir);
        }
        free(order);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ConfigSource src[4];
        size_t n = 0;
        Config c;
        char *text, *error = NULL, *p;
        int r;

        /* config_load() refuses larger files; bigger inputs only slow the fuzzer */
        if (size > 65536)
                return 0;
        fuzz_order(data, size);
        text = malloc(size + 1);
        assert(text);
        memcpy(text, data, size);
        text[size] = 0;

        for (p = text; n < ELEMENTSOF(src); n++) {
                char *sep = n + 1 < ELEMENTSOF(src) ? strstr(p, "\n%%\n") : NULL;

                src[n] = (ConfigSource) { .path = names[n], .text = p };
                if (!sep) {
                        n++;
                        break;
                }
                sep[1] = '\0';
                p = sep + 4;
        }

        config_init(&c);
        r = config_parse_sources(src, n, &c, &error);
        if (r < 0) {
                /* every failure but out-of-memory says why, and names the file */
                assert(r == -EINVAL || r == -ENOMEM);
                if (r == -EINVAL) {
                        assert(error);
                        check_errors(error, n);
                }
        } else {
                assert(!error);
                assert(c.n_files == n);
                for (size_t i = 0; i < c.n_origins; i++)
                        assert(c.origins[i].file < n && c.origins[i].line > 0);
                for (size_t i = 0; i < sizeof idents / sizeof idents[0]; i++) {
                        ApstParams a;
                        const char *section = NULL;

                        (void) config_resolve(&c, &idents[i], &a, &section);
                        for (unsigned ps = 0; ps < IDCTRL_MAX_PS; ps++)
                                assert(!(a.exlat.mask & (1u << ps)) || a.exlat.us[ps] > 0);
                }
        }
        free(error);
        config_done(&c);
        free(text);
        return 0;
}
