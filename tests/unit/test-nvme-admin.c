/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The admin-command allow-list, admin_command_allowed(): the only gate between
 * the daemon and the kernel's NVMe passthrough (src/platform/nvme-admin.c submits nothing it
 * refuses). The integration tests cannot drive the daemon into a forbidden
 * command, so this test holds the predicate itself to the contract in
 * include/platform/nvme-admin.h and README.md:
 *   - Identify, CNS 01h (CDW10 = 0x00000001: CNTID 31:16 zero, nothing else);
 *   - Get Features, FID 0x0C, any SEL (10:8), nothing else in CDW10;
 *   - Set Features, FID 0x0C, SV (bit 31) clear, nothing else in CDW10.
 * Every other opcode, every other CNS/FID, the Save bit and every reserved bit
 * must be refused. The expected answer is computed by allowed_by_spec(), the
 * test's own reading of the contract, never by the code under test; the
 * exhaustive loops cover every opcode x every FID/CNS x SV x SEL, every single
 * reserved bit on top of each allowed command, and a named list of the
 * commands that would do harm.
 *
 * The one I/O command, calibrate's one-block Read: admin_io_command_allowed()
 * over every opcode and block count, and the handle's permission: a handle
 * from admin_open() (the daemon's) refuses admin_read_block() before any ioctl
 * (-EPERM on a regular file, where an ioctl would answer ENOTTY), a handle from
 * admin_open_namespace() sends it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "nvme-admin.h"

static unsigned n_checked;

static bool allowed_by_spec(uint8_t opc, uint32_t cdw10) {
        if (opc == 0x06)
                return cdw10 == 0x01;
        if (opc == 0x0a)
                return (cdw10 & 0xff) == 0x0c && (cdw10 >> 11) == 0;
        if (opc == 0x09)
                return cdw10 == 0x0c;
        return false;
}

static void check(uint8_t opc, uint32_t cdw10) {
        bool want = allowed_by_spec(opc, cdw10), got = admin_command_allowed(opc, cdw10);

        if (got != want) {
                fprintf(stderr, "opcode 0x%02x cdw10 0x%08x: %s, expected %s\n", opc, cdw10,
                        got ? "allowed" : "refused", want ? "allowed" : "refused");
                CHECK(got == want);
        }
        n_checked++;
}

/* The three allowed commands, spelled with the header's constants too. */
static void test_allowed(void) {
        CHECK(admin_command_allowed(0x06, 0x00000001));                  /* Identify controller */
        CHECK(admin_command_allowed(CTRL_OPC_IDENTIFY, CTRL_CNS_CONTROLLER));
        CHECK(admin_command_allowed(0x0a, 0x0000000c));                  /* Get Features APST, current */
        for (uint32_t sel = 0; sel < 8; sel++)                           /* current, default, saved, caps */
                CHECK(admin_command_allowed(CTRL_OPC_GET_FEATURES, CTRL_FID_APST | sel << 8));
        CHECK(admin_command_allowed(0x09, 0x0000000c));                  /* Set Features APST, not saved */
        CHECK(admin_command_allowed(CTRL_OPC_SET_FEATURES, CTRL_FID_APST));
}

/* Commands that would do real harm, refused by name. */
static void test_refused_named(void) {
        static const struct {
                uint8_t opc;
                uint32_t cdw10;
                const char *what;
        } bad[] = {
                { 0x09, 0x8000000c, "Set Features APST with the Save bit" },
                { 0x09, 0x00000002, "Set Features Power Management" },
                { 0x09, 0x80000002, "Set Features Power Management, saved" },
                { 0x09, 0x00000006, "Set Features Volatile Write Cache" },
                { 0x09, 0x00000004, "Set Features Temperature Threshold" },
                { 0x09, 0x0000000d, "Set Features Host Memory Buffer" },
                { 0x09, 0x00000000, "Set Features FID 0 (reserved)" },
                { 0x0a, 0x00000002, "Get Features Power Management" },
                { 0x0a, 0x8000000c, "Get Features APST with bit 31" },
                { 0x06, 0x00000000, "Identify namespace (CNS 00h)" },
                { 0x06, 0x00000002, "Identify active namespace list" },
                { 0x06, 0x00010001, "Identify controller with CNTID 1" },
                { 0x06, 0x00000101, "Identify controller with reserved bits 15:8" },
                { 0x02, 0x007f0002, "Get Log Page (SMART)" },
                { 0x80, 0x00000000, "Format NVM" },
                { 0x84, 0x00000001, "Sanitize" },
                { 0x10, 0x00000009, "Firmware Commit" },
                { 0x11, 0x00000000, "Firmware Image Download" },
                { 0x0d, 0x00000000, "Namespace Management" },
                { 0x15, 0x00000000, "Namespace Attachment" },
                { 0x81, 0x00000000, "Security Send" },
                { 0x82, 0x00000000, "Security Receive" },
                { 0x14, 0x00000000, "Device Self-test" },
                { 0x19, 0x00000000, "Directive Send" },
                { 0x1c, 0x00000000, "Virtualization Management" },
                { 0x7c, 0x00000000, "Doorbell Buffer Config" },
                { 0x08, 0x00000000, "Abort" },
                { 0x0c, 0x00000000, "Asynchronous Event Request" },
                { 0x00, 0x0000000c, "Delete I/O Submission Queue" },
                { 0x01, 0x0000000c, "Create I/O Submission Queue" },
                { 0xc0, 0x0000000c, "vendor-specific admin command" },
                { 0xff, 0x0000000c, "vendor-specific admin command 0xff" },
        };

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                if (admin_command_allowed(bad[i].opc, bad[i].cdw10)) {
                        fprintf(stderr, "allowed: %s (opcode 0x%02x cdw10 0x%08x)\n", bad[i].what,
                                bad[i].opc, bad[i].cdw10);
                        CHECK(false);
                }
        }
}

/* Every opcode x every value of the low byte (FID or CNS) x SV x SEL x CNTID. */
static void test_exhaustive_fields(void) {
        for (unsigned opc = 0; opc < 256; opc++)
                for (uint32_t low = 0; low < 256; low++)
                        for (uint32_t sv = 0; sv < 2; sv++)
                                for (uint32_t sel = 0; sel < 8; sel++) {
                                        uint32_t cdw10 = low | sel << 8 | sv << 31;

                                        check((uint8_t) opc, cdw10);
                                        check((uint8_t) opc, cdw10 | UINT32_C(1) << 16); /* CNTID / reserved */
                                }
}

/* Each allowed command with any one more bit set in CDW10. */
static void test_every_extra_bit(void) {
        static const struct {
                uint8_t opc;
                uint32_t cdw10;
        } ok[] = { { 0x06, 0x01 }, { 0x0a, 0x0c }, { 0x0a, 0x70c }, { 0x09, 0x0c } };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
                for (unsigned bit = 0; bit < 32; bit++) {
                        uint32_t v = ok[i].cdw10 ^ UINT32_C(1) << bit;

                        check(ok[i].opc, v);
                        check(ok[i].opc, ok[i].cdw10 | UINT32_C(1) << bit);
                        if (bit >= 11)  /* beyond FID/SEL/CNS: always refused */
                                CHECK(!admin_command_allowed(ok[i].opc, ok[i].cdw10 | UINT32_C(1) << bit));
                }
        /* the Save bit, alone, on every allowed form */
        CHECK(!admin_command_allowed(CTRL_OPC_SET_FEATURES, CTRL_FID_APST | CTRL_SET_FEATURES_SAVE));
        CHECK(!admin_command_allowed(CTRL_OPC_GET_FEATURES, CTRL_FID_APST | CTRL_SET_FEATURES_SAVE));
        CHECK(!admin_command_allowed(CTRL_OPC_IDENTIFY, CTRL_CNS_CONTROLLER | CTRL_SET_FEATURES_SAVE));
}

static void test_io_allowed(void) {
        static const uint16_t nlbs[] = { 0, 1, 7, 0xffff };

        for (unsigned opc = 0; opc <= 0xff; opc++)
                for (size_t k = 0; k < sizeof nlbs / sizeof nlbs[0]; k++) {
                        /* no handle but calibrate's may send I/O, and it only a one-block Read */
                        CHECK(!admin_io_command_allowed(false, (uint8_t) opc, nlbs[k]));
                        CHECK(admin_io_command_allowed(true, (uint8_t) opc, nlbs[k]) == (opc == 0x02 && nlbs[k] == 0));
                        n_checked += 2;
                }
        /* the write opcode, by name */
        CHECK(!admin_io_command_allowed(true, 0x01, 0));
}

static void test_read_needs_namespace_handle(void) {
        char dir[] = "/tmp/test-ctrl-XXXXXX", path[64];
        uint16_t status = 0;
        AdminHandle *c = NULL;
        int fd;

        REQUIRE(mkdtemp(dir));
        (void) snprintf(path, sizeof path, "%s/nvme0n1", dir);
        fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        CHECK(close(fd) == 0);

        /* the daemon's handle: refused before the kernel (an ioctl on a file would say ENOTTY) */
        CHECK(admin_open(dir, "nvme0n1", &c) == 0);
        CHECK(admin_read_block(c, 0, &status) == -EPERM);
        c = admin_free(c);

        /* calibrate's: the Read reaches the ioctl */
        CHECK(admin_open_namespace(dir, "nvme0n1", 1, 512, &c) == 0);
        CHECK(admin_read_block(c, 0, &status) == -ENOTTY);
        c = admin_free(c);

        /* block sizes that are no logical block size, and NSIDs that name no single namespace */
        CHECK(admin_open_namespace(dir, "nvme0n1", 1, 511, &c) == -EINVAL);
        CHECK(admin_open_namespace(dir, "nvme0n1", 1, 768, &c) == -EINVAL);
        CHECK(admin_open_namespace(dir, "nvme0n1", 1, 131072, &c) == -EINVAL);
        CHECK(admin_open_namespace(dir, "nvme0n1", 0, 512, &c) == -EINVAL);
        CHECK(admin_open_namespace(dir, "nvme0n1", 0xffffffffu, 512, &c) == -EINVAL);
        CHECK(!c);

        CHECK(unlink(path) == 0);
        CHECK(rmdir(dir) == 0);
}

int main(void) {
        test_io_allowed();
        test_read_needs_namespace_handle();
        test_allowed();
        test_refused_named();
        test_exhaustive_fields();
        test_every_extra_bit();
        printf("test-nvme-admin: %u combinations checked\n", n_checked);
        return check_exit_status();
}
