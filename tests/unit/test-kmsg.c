/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel log records and a failing controller's messages (kmsg.c): the /dev/kmsg
 * header and its DEVICE= line, a dmesg line, the "nvme nvmeN: " and PCI address
 * prefixes; every format string of doc/quarantine.md's table is matched with its
 * CSTS or QID, in the new and the old kernels' forms, and the messages that are
 * not a failure (completion polled, aborting, AER, firmware activation, another
 * driver's words) are not.
 */
#include <string.h>

#include "check.h"
#include "kmsg.h"

static int parse(const char *s, KmsgRecord *r) {
        return kmsg_parse_record(s, strlen(s), r);
}

static bool text_is(const KmsgRecord *r, const char *s) {
        return r->text_len == strlen(s) && memcmp(r->text, s, r->text_len) == 0;
}

static void test_record(void) {
        KmsgRecord r;

        current = "/kmsg/record/header";
        REQUIRE(parse("4,1234,5678901,-;nvme nvme0: controller is down; will reset: CSTS=0xffffffff, "
                      "PCI_STATUS=0x10\n SUBSYSTEM=nvme\n DEVICE=+nvme:nvme0\n", &r) == 0);
        CHECK(r.prio == 4);
        CHECK(r.seq == 1234);
        CHECK(r.usec == 5678901);
        CHECK(strcmp(r.ctrl, "nvme0") == 0);
        CHECK(text_is(&r, "controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10"));

        current = "/kmsg/record/facility";
        REQUIRE(parse("28,1,2,c;nvme nvme3: x", &r) == 0);     /* facility 3 (daemon), level 4 */
        CHECK(r.prio == 4);
        CHECK(strcmp(r.ctrl, "nvme3") == 0);

        current = "/kmsg/record/extra-fields";
        REQUIRE(parse("3,7,99,-,caller=T12;nvme nvme1: Device not ready; aborting reset, CSTS=0x1\n", &r) == 0);
        CHECK(r.usec == 99);
        CHECK(strcmp(r.ctrl, "nvme1") == 0);

        current = "/kmsg/record/device-line-only";
        REQUIRE(parse("4,8,100,-;some message\n DEVICE=+nvme:nvme2\n", &r) == 0);
        CHECK(strcmp(r.ctrl, "nvme2") == 0);
        CHECK(text_is(&r, "some message"));

        current = "/kmsg/record/pci";
        REQUIRE(parse("4,9,100,-;nvme 0000:01:00.0: Removing after probe failure status: -19\n"
                      " SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0\n", &r) == 0);
        CHECK(r.ctrl[0] == '\0');
        CHECK(strcmp(r.pci, "0000:01:00.0") == 0);
        CHECK(text_is(&r, "Removing after probe failure status: -19"));

        current = "/kmsg/record/dmesg-line";
        REQUIRE(parse("[ 1234.567890] nvme nvme0: Disabling device after reset failure: -19", &r) == 0);
        CHECK(r.prio == -1);
        CHECK(strcmp(r.ctrl, "nvme0") == 0);
        CHECK(text_is(&r, "Disabling device after reset failure: -19"));

        current = "/kmsg/record/bare";
        REQUIRE(parse("nvme nvme10: controller reset completed after pcie flr", &r) == 0);
        CHECK(strcmp(r.ctrl, "nvme10") == 0);

        current = "/kmsg/record/not-nvme";
        REQUIRE(parse("6,1,2,-;usb 1-1: new device", &r) == 0);
        CHECK(r.ctrl[0] == '\0' && r.pci[0] == '\0');

        current = "/kmsg/record/bad";
        CHECK(parse("", &r) == -EINVAL);
        CHECK(parse("4,1,2,-;\n", &r) == -EINVAL);
        /* a bad header is taken as text, not as a record */
        REQUIRE(parse("4,x,2,-;nvme nvme0: y", &r) == 0);
        CHECK(r.prio == -1);
        CHECK(r.ctrl[0] == '\0');
}

typedef struct Case {
        const char *name, *line;
        int matched;
        NvmeFailureKind kind;
        bool have_csts;
        uint32_t csts;
        bool have_qid;
        uint32_t qid;
} Case;

static const Case cases[] = {
        { "/kmsg/match/down", "nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10", 1,
          NVME_FAILURE_DOWN, true, 0xffffffff, false, 0 },
        { "/kmsg/match/down-pci-read-failed",
          "nvme nvme0: controller is down; will reset: CSTS=0x3, PCI_STATUS read failed (134)", 1, NVME_FAILURE_DOWN,
          true, 3, false, 0 },
        { "/kmsg/match/hint", "nvme nvme0: Does your device have a faulty power saving mode enabled?", 1,
          NVME_FAILURE_PM_HINT, false, 0, false, 0 },
        { "/kmsg/match/timeout-new",
          "nvme nvme0: I/O tag 12 (100c) opcode 0x6 (Identify) QID 0 timeout, reset controller", 1,
          NVME_FAILURE_TIMEOUT, false, 0, true, 0 },
        { "/kmsg/match/timeout-io-queue",
          "nvme nvme1: I/O tag 512 (0200) opcode 0x2 (I/O Cmd) QID 3 timeout, reset controller", 1,
          NVME_FAILURE_TIMEOUT, false, 0, true, 3 },
        { "/kmsg/match/timeout-old", "nvme nvme0: I/O 5 QID 0 timeout, reset controller", 1, NVME_FAILURE_TIMEOUT,
          false, 0, true, 0 },
        { "/kmsg/match/not-ready", "nvme nvme0: Device not ready; aborting reset, CSTS=0x1", 1,
          NVME_FAILURE_NOT_READY, true, 1, false, 0 },
        { "/kmsg/match/reset-failed", "nvme nvme0: Disabling device after reset failure: -19", 1,
          NVME_FAILURE_RESET_FAILED, false, 0, false, 0 },
        { "/kmsg/match/probe-failed", "nvme 0000:01:00.0: Removing after probe failure status: -19", 1,
          NVME_FAILURE_PROBE_FAILED, false, 0, false, 0 },
        { "/kmsg/match/flr", "nvme nvme0: controller reset completed after pcie flr", 1, NVME_FAILURE_FLR, false, 0,
          false, 0 },
        /* not a failure of a power state */
        { "/kmsg/match/polled", "nvme nvme0: I/O tag 3 (0003) QID 2 timeout, completion polled", 0 },
        { "/kmsg/match/aborting",
          "nvme nvme0: I/O tag 3 (0003) opcode 0x1 (I/O Cmd) QID 2 timeout, aborting req_op:WRITE(1) size:4096", 0 },
        { "/kmsg/match/old-aborting", "nvme nvme0: I/O 5 QID 2 timeout, aborting", 0 },
        { "/kmsg/match/aer", "nvme nvme0: resetting controller due to persistent internal error", 0 },
        { "/kmsg/match/fw", "nvme nvme0: Fw activation timeout, reset controller", 0 },
        { "/kmsg/match/not-ready-shutdown", "nvme nvme0: Device not ready; aborting shutdown, CSTS=0x1", 0 },
        { "/kmsg/match/other-driver", "ahci 0000:00:17.0: controller is down; will reset: CSTS=0x1", 0 },
        { "/kmsg/match/no-prefix", "controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10", 0 },
        { "/kmsg/match/flr-longer", "nvme nvme0: controller reset completed after pcie flr!", 0 },
        { "/kmsg/match/timeout-garbled", "nvme nvme0: I/O tag 1 (0001) QID x timeout, reset controller", 0 },
};

static void test_match(void) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const Case *c = &cases[i];
                KmsgRecord r;
                NvmeFailure f = {};

                current = c->name;
                REQUIRE(parse(c->line, &r) == 0);
                CHECK(kmsg_match_failure(&r, &f) == c->matched);
                if (!c->matched)
                        continue;
                CHECK(f.kind == c->kind);
                CHECK(f.have_csts == c->have_csts);
                CHECK(!c->have_csts || f.csts == c->csts);
                CHECK(f.have_qid == c->have_qid);
                CHECK(!c->have_qid || f.qid == c->qid);
        }

        current = "/kmsg/match/off-bus";
        {
                NvmeFailure down = { .kind = NVME_FAILURE_DOWN, .have_csts = true, .csts = 0xffffffff };
                NvmeFailure down1 = { .kind = NVME_FAILURE_DOWN, .have_csts = true, .csts = 1 };
                NvmeFailure hint = { .kind = NVME_FAILURE_PM_HINT };
                CHECK(nvme_failure_off_bus(&down));
                CHECK(!nvme_failure_off_bus(&down1));
                CHECK(nvme_failure_off_bus(&hint));
        }

        current = "/kmsg/names";
        CHECK(strcmp(nvme_failure_kind_to_string(NVME_FAILURE_RESET_FAILED), "reset-failed") == 0);
        CHECK(nvme_failure_kind_from_string("pm-hint") == NVME_FAILURE_PM_HINT);
        CHECK(nvme_failure_kind_from_string("nope") == -EINVAL);
}

int main(void) {
        test_record();
        test_match();
        return check_exit_status();
}
