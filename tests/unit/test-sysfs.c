/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs.c against a real kernel's NVMe sysfs, recorded with umockdev-record
 * (tests/data/sysfs). Run as: umockdev-run -d RECORD -- test-sysfs plain|multipath
 * Without umockdev's testbed (UMOCKDEV_DIR unset) it skips with 77, after the order check,
 * which builds its own tree.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "sysfs.h"

/* Controllers come sorted by number, not by name: nvme2 before nvme10; a number past 32 bits
 * (a name sysfs_is_ctrl_name() accepts; atoi() made it 1) sorts last. */
static void test_order(void) {
        static const char *const names[] = { "nvme4294967297", "nvme10", "nvme2", "nvme0" };
        const char *tmp = getenv("TMPDIR");
        char root[256], path[400];
        SysCtrl *list = NULL;
        size_t n = 0;

        current = "/sysfs/order";
        (void) snprintf(root, sizeof root, "%s/test-sysfs-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        REQUIRE(mkdtemp(root));
        (void) snprintf(path, sizeof path, "%s/class", root);
        REQUIRE(mkdir(path, 0755) == 0);
        (void) snprintf(path, sizeof path, "%s/class/nvme", root);
        REQUIRE(mkdir(path, 0755) == 0);
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                FILE *f;

                (void) snprintf(path, sizeof path, "%s/class/nvme/%s", root, names[i]);
                REQUIRE(mkdir(path, 0755) == 0);
                (void) snprintf(path, sizeof path, "%s/class/nvme/%s/state", root, names[i]);
                REQUIRE((f = fopen(path, "we")));
                fputs("live\n", f);
                REQUIRE(fclose(f) == 0);
        }
        CHECK(sysfs_list_controllers(root, &list, &n) == 0);
        REQUIRE(n == 4);
        CHECK(strcmp(list[0].name, "nvme0") == 0);
        CHECK(strcmp(list[1].name, "nvme2") == 0);
        CHECK(strcmp(list[2].name, "nvme10") == 0);
        CHECK(strcmp(list[3].name, "nvme4294967297") == 0);
        free(list);
        (void) snprintf(path, sizeof path, "rm -rf '%s'", root);
        CHECK(system(path) == 0);
        current = "";
}

int main(int argc, char *argv[]) {
        SysCtrl *list = NULL, one;
        SysPlatform plat;
        uint64_t io = 0;
        size_t n = 0;

        test_order();
        if (!getenv("UMOCKDEV_DIR")) {
                printf("SKIP: not running under umockdev-run with a recorded sysfs\n");
                return 77;
        }
        CHECK(argc == 2);

        CHECK(sysfs_list_controllers("/sys", &list, &n) == 0);
        CHECK(n == 1);
        /* the kernel pads model/serial/firmware with blanks: trimmed */
        CHECK(strcmp(list[0].name, "nvme0") == 0);
        CHECK(strcmp(list[0].model, "QEMU NVMe Ctrl") == 0);
        CHECK(strcmp(list[0].firmware, "7.2.22") == 0);
        CHECK(strcmp(list[0].serial, "e2e0001") == 0);
        CHECK(strcmp(list[0].transport, "pcie") == 0);
        CHECK(strcmp(list[0].state, "live") == 0);
        /* PCI ids through the `device` link */
        CHECK(list[0].pci_vendor == 0x1b36 && list[0].pci_device == 0x0010);
        printf("ok: %s: %s, firmware %s, %s, %s, PCI %04x:%04x\n", list[0].name, list[0].model, list[0].firmware,
               list[0].transport, list[0].state, list[0].pci_vendor, list[0].pci_device);
        free(list);

        CHECK(sysfs_read_controller("/sys", "nvme0", &one) == 0);
        CHECK(sysfs_read_controller("/sys", "nvme1", &one) == -ENOENT);
        CHECK(sysfs_read_controller("/sys", "../nvme0", &one) == -EINVAL);

        /* QEMU's SeaBIOS has no board_name: absent is "" */
        sysfs_read_platform("/sys", &plat);
        CHECK(strcmp(plat.sys_vendor, "QEMU") == 0);
        CHECK(strcmp(plat.product_name, "Standard PC (Q35 + ICH9, 2009)") == 0);
        CHECK(plat.board_name[0] == '\0');
        printf("ok: DMI sys_vendor '%s', product '%s', no board_name\n", plat.sys_vendor, plat.product_name);

        /* 10 reads completed in both recordings: on nvme0n1 (plain) or on the hidden
         * per-path disk nvme0c0n1 (multipath), whose head nvme0n1 stays all zero */
        CHECK(sysfs_ctrl_io_count("/sys", "nvme0", &io) == 0);
        CHECK(io == 10);
        printf("ok: %s layout: 10 I/Os counted\n", argv[1]);

        /* what the I/O watcher reads: the same disk, with its ticks (7 ms plain, 6 ms on the
         * hidden path disk in the multipath recording) and io_ticks (4 and 8 ms) */
        WatchStat st;
        bool multipath = strcmp(argv[1], "multipath") == 0;
        CHECK(sysfs_ctrl_block_stat("/sys", "nvme0", &st) == 0);
        CHECK(st.ios == 10 && st.in_flight == 0);
        CHECK(st.ticks_ms == (multipath ? 6u : 7u));
        CHECK(st.io_ticks_ms == (multipath ? 8u : 4u));
        CHECK(sysfs_ctrl_block_stat("/sys", "nvme1", &st) == -ENOENT);
        printf("ok: %s layout: watcher reading %llu I/Os, %llu ms ticks\n", argv[1], (unsigned long long) st.ios,
               (unsigned long long) st.ticks_ms);
        return check_exit_status();
}
