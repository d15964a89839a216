/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The only file that includes <libnvme.h> (see ctrl.h for the contract).
 *
 * Every command goes through admin_submit(), which checks the allow-list first,
 * so a bug elsewhere cannot make the daemon send, say, a Format NVM or a
 * feature write with the Save bit set.
 */

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <libnvme.h>

#include "clock.h"
#include "nvme-admin.h"

struct AdminHandle {
        char *name;
        int fd;
        bool reads_allowed;        /* admin_open_namespace() only: calibrate's one-block Read */
        uint32_t nsid;
        uint32_t lba_bytes;
        void *buf;                 /* lba_bytes, page-aligned, for the Read's data */
};

bool admin_command_allowed(uint8_t opcode, uint32_t cdw10) {
        switch (opcode) {
        case CTRL_OPC_IDENTIFY:
                /* CNS is bits 7:0; CNTID (31:16) must be 0 for CNS 01h */
                return cdw10 == CTRL_CNS_CONTROLLER;
        case CTRL_OPC_GET_FEATURES:
                /* FID 7:0, SEL 10:8; everything else reserved */
                return (cdw10 & 0xffu) == CTRL_FID_APST && (cdw10 & ~UINT32_C(0x7ff)) == 0;
        case CTRL_OPC_SET_FEATURES:
                /* FID 7:0, SV 31; everything else reserved */
                return cdw10 == CTRL_FID_APST;
        default:
                return false;
        }
}

static int map_result(int r, uint16_t *ret_nvme_status);

bool admin_io_command_allowed(bool reads_allowed, uint8_t opcode, uint16_t nlb) {
        return reads_allowed && opcode == CTRL_IO_OPC_READ && nlb == 0;
}

int admin_open(const char *devdir, const char *name, AdminHandle **ret) {
        _cleanup_free_ char *path = NULL;
        AdminHandle *c;
        int fd;

        if (!name || strchr(name, '/') || strncmp(name, "nvme", 4) != 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%s", devdir, name) < 0)
                return -ENOMEM;
        /* open(), not openat(): see the header */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        c = calloc(1, sizeof *c);
        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        c->fd = fd;
        c->name = strdup(name);
        if (!c->name) {
                admin_free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

int admin_open_namespace(const char *devdir, const char *ns_name, uint32_t nsid, uint32_t lba_bytes,
                         AdminHandle **ret) {
        _cleanup_(admin_freep) AdminHandle *c = NULL;
        _cleanup_free_ void *buf = NULL;
        int r;

        if (!ns_name || !strchr(ns_name, 'n') || nsid == 0 || nsid == UINT32_MAX || lba_bytes < 512 ||
            lba_bytes > CTRL_READ_MAX_BYTES || (lba_bytes & (lba_bytes - 1)))
                return -EINVAL;
        /* page-aligned, as the kernel maps the user buffer of a passthru command */
        if (posix_memalign(&buf, 4096, lba_bytes) != 0)
                return -ENOMEM;
        /* defined bytes before the first Read: the kernel only writes into it, but a passthrough
         * that looks at the buffer (umockdev's recorder, valgrind) must not see garbage */
        memset(buf, 0, lba_bytes);
        r = admin_open(devdir, ns_name, &c);
        if (r < 0)
                return r;
        if (!c)         /* admin_open() sets it on success; said for the static analyzer */
                return -EINVAL;
        c->buf = TAKE_PTR(buf);
        c->reads_allowed = true;
        c->nsid = nsid;
        c->lba_bytes = lba_bytes;
        *ret = TAKE_PTR(c);
        return 0;
}

/* The fields every libnvme argument struct here shares: where the result and the data go, the
 * struct's size (libnvme's ABI check), the handle, and the kernel's own timeout (ADMIN_TIMEOUT_MS:
 * never shorter). One place, so no command can be sent with another timeout. */
#define LIBNVME_ARGS_COMMON(c, res, buffer)                                                                 \
        .result = (res), .data = (buffer), .args_size = sizeof args, .fd = (c)->fd, .timeout = ADMIN_TIMEOUT_MS

/* ... and what Get and Set Features of APST share on top: FID 0x0C, the controller's (no
 * namespace), the 256-byte table. */
#define LIBNVME_ARGS_APST(c, res, buffer)                                                                   \
        LIBNVME_ARGS_COMMON(c, res, buffer), .nsid = 0, .data_len = 256, .fid = NVME_FEAT_FID_AUTO_PST

int admin_read_block(AdminHandle *c, uint64_t slba, uint16_t *ret_nvme_status) {
        uint32_t result = 0;
        int r;

        if (!admin_io_command_allowed(c->reads_allowed, CTRL_IO_OPC_READ, 0))
                return -EPERM;
        struct nvme_io_args args = {
                .slba = slba,
                LIBNVME_ARGS_COMMON(c, &result, c->buf),
                .nsid = c->nsid,
                .data_len = c->lba_bytes,
                .nlb = 0,          /* 0-based: one block */
        };
        r = nvme_read(&args);
        return map_result(r, ret_nvme_status);
}

AdminHandle *admin_free(AdminHandle *c) {
        if (!c)
                return NULL;
        if (c->fd >= 0)
                (void) close(c->fd);
        free(c->buf);
        free(c->name);
        free(c);
        return NULL;
}

const char *admin_name(const AdminHandle *c) {
        return c->name;
}

/* libnvme returns 0, an NVMe status > 0, or -1 with errno. */
static int map_result(int r, uint16_t *ret_nvme_status) {
        if (r == 0)
                return 0;
        if (r > 0) {
                if (ret_nvme_status)
                        *ret_nvme_status = (uint16_t) r;
                return -EREMOTEIO;
        }
        return negative_errno();
}

static _Thread_local AdminInFlight *thread_in_flight;

void admin_set_thread_in_flight(AdminInFlight *f) {
        thread_in_flight = f;
}

typedef enum AdminCmd {
        ADMIN_CMD_IDENTIFY_CTRL,
        ADMIN_CMD_GET_APST,
        ADMIN_CMD_SET_APST,
} AdminCmd;

/* The one place a command is sent. @buf is 4096 bytes for Identify, 256 otherwise. */
static int admin_submit_one(AdminHandle *c, AdminCmd cmd, void *buf, uint32_t cdw11, uint32_t *ret_result,
                            uint16_t *ret_nvme_status) {
        uint32_t result = 0;
        int r;

        switch (cmd) {
        case ADMIN_CMD_IDENTIFY_CTRL: {
                if (!admin_command_allowed(CTRL_OPC_IDENTIFY, CTRL_CNS_CONTROLLER))
                        return -EPERM;
                /* alike in shape to cmd-calibrate.c's request (designated members), by accident */
                struct nvme_identify_args args = {
                        LIBNVME_ARGS_COMMON(c, &result, buf),
                        .cns = NVME_IDENTIFY_CNS_CTRL,
                        .csi = NVME_CSI_NVM,
                        .nsid = NVME_NSID_NONE,
                        .cntid = NVME_CNTLID_NONE,
                        .cns_specific_id = NVME_CNSSPECID_NONE,
                        .uuidx = NVME_UUID_NONE,
                };
                r = nvme_identify(&args);
                break;
        }
        case ADMIN_CMD_GET_APST: {
                if (!admin_command_allowed(CTRL_OPC_GET_FEATURES, CTRL_FID_APST | (NVME_GET_FEATURES_SEL_CURRENT << 8)))
                        return -EPERM;
                struct nvme_get_features_args args = {
                        LIBNVME_ARGS_APST(c, &result, buf),
                        .sel = NVME_GET_FEATURES_SEL_CURRENT,
                };
                r = nvme_get_features(&args);
                break;
        }
        case ADMIN_CMD_SET_APST: {
                struct nvme_set_features_args args = {
                        LIBNVME_ARGS_APST(c, &result, buf),
                        .cdw11 = cdw11,
                        .save = false,
                };
                if (!admin_command_allowed(CTRL_OPC_SET_FEATURES,
                                           args.fid | (args.save ? CTRL_SET_FEATURES_SAVE : 0)))
                        return -EPERM;
                r = nvme_set_features(&args);
                break;
        }
        default:
                return -EPERM;
        }

        r = map_result(r, ret_nvme_status);
        if (r >= 0 && ret_result)
                *ret_result = result;
        return r;
}

/* admin_submit_one(), with the calling thread's marker kept (admin_set_thread_in_flight()). */
static int admin_submit(AdminHandle *c, AdminCmd cmd, void *buf, uint32_t cdw11, uint32_t *ret_result,
                        uint16_t *ret_nvme_status) {
        AdminInFlight *f = thread_in_flight;
        int r;

        if (!f)
                return admin_submit_one(c, cmd, buf, cdw11, ret_result, ret_nvme_status);
        if (atomic_load(&f->cancel))
                return -ECANCELED;
        atomic_store(&f->since_usec, MAX(now_usec(), UINT64_C(1)));
        r = admin_submit_one(c, cmd, buf, cdw11, ret_result, ret_nvme_status);
        atomic_store(&f->since_usec, 0);
        return r;
}

int admin_identify(AdminHandle *c, IdCtrl *ret, uint8_t *ret_raw, uint16_t *ret_nvme_status) {
        _Alignas(8) uint8_t buf[IDCTRL_SIZE] = {};
        IdCtrl id;
        int r;

        _Static_assert(sizeof(struct nvme_id_ctrl) == IDCTRL_SIZE, "Identify Controller is 4 KiB");
        r = admin_submit(c, ADMIN_CMD_IDENTIFY_CTRL, buf, 0, NULL, ret_nvme_status);
        if (r < 0)
                return r;
        r = idctrl_parse_binary(buf, sizeof buf, &id);
        if (r < 0)
                return r;
        *ret = id;
        if (ret_raw)
                memcpy(ret_raw, buf, sizeof buf);
        return 0;
}

int admin_get_apst(AdminHandle *c, ApstTable *ret, uint16_t *ret_nvme_status) {
        _Alignas(8) uint8_t buf[256] = {};
        uint32_t result = 0;
        int r;

        _Static_assert(sizeof(struct nvme_feat_auto_pst) == 256, "APST data is 256 bytes");
        r = admin_submit(c, ADMIN_CMD_GET_APST, buf, 0, &result, ret_nvme_status);
        if (r < 0)
                return r;
        apst_table_from_wire(buf, result & 1, ret);
        return 0;
}

int admin_set_apst(AdminHandle *c, const ApstTable *t, uint16_t *ret_nvme_status) {
        _Alignas(8) uint8_t buf[256];

        apst_table_to_wire(t, buf);
        return admin_submit(c, ADMIN_CMD_SET_APST, buf, t->apste ? 1 : 0, NULL, ret_nvme_status);
}

const char *admin_status_to_string(uint16_t status) {
        const char *s = nvme_status_to_string(status, false);
        return s ? s : "unknown status";
}
