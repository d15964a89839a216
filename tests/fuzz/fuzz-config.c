/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the configuration parser (config_parse_string(), what
 * config_load() and a reload run on /etc/nvme-apstd.conf), then
 * config_resolve() of a few controllers against whatever parsed.
 * The input is copied to a NUL-terminated heap buffer of exactly its size.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const DeviceIdent idents[] = {
        { .name = "nvme0", .model = "INTEL SSDPEKKW256G7", .serial = "BTPY1234", .firmware = "PSF109C",
          .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
        { .name = "nvme1", .model = "KINGSTON SA2000M81000G", .serial = "50026B76", .firmware = "S5Z42105",
          .pci_vendor = 0x2646, .pci_device = 0x2263 },
        { .name = "nvme12", .model = NULL, .serial = NULL, .firmware = NULL },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Config c;
        char *text, *error = NULL;
        int r;

        /* config_load() refuses larger files; bigger inputs only slow the fuzzer */
        if (size > 65536)
                return 0;
        text = malloc(size + 1);
        assert(text);
        memcpy(text, data, size);
        text[size] = 0;

        config_init(&c);
        r = config_parse_string(text, "fuzz.conf", &c, &error);
        if (r < 0) {
                /* every failure but out-of-memory says why, and names the file */
                assert(r == -EINVAL || r == -ENOMEM);
                if (r == -EINVAL)
                        assert(error && strncmp(error, "fuzz.conf", 9) == 0);
        } else {
                assert(!error);
                for (size_t i = 0; i < sizeof idents / sizeof idents[0]; i++) {
                        ApstParams p;
                        const char *section = NULL;

                        (void) config_resolve(&c, &idents[i], &p, &section);
                }
        }
        free(error);
        config_done(&c);
        free(text);
        return 0;
}
