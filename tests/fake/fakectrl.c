/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fake NVMe controller model: see fakectrl.h. */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fakectrl.h"

#define SC_INVALID_OPCODE 0x4001 /* DNR | Invalid Command Opcode */
#define SC_INVALID_FIELD 0x4002  /* DNR | Invalid Field in Command */
#define SC_INVALID_NS 0x400b     /* DNR | Invalid Namespace or Format */
#define SC_LBA_RANGE 0x4080      /* DNR | LBA Out of Range (NVM command set status 80h) */
#define IDENTIFY_BYTES 4096
#define CDW10_SV (UINT32_C(1) << 31) /* Set Features "Save": the kernel never sets it (doc/nvme-apst.md) */

static void pad(char *dst, size_t n, const char *s)
{
        size_t l = strlen(s);

        memset(dst, ' ', n);
        memcpy(dst, s, l < n ? l : n);
}

static void psd(struct nvme_id_psd *p, uint16_t mp, uint8_t flags, uint32_t enlat, uint32_t exlat, uint8_t rel)
{
        p->mp = htole16(mp);
        p->flags = flags;
        p->enlat = htole32(enlat);
        p->exlat = htole32(exlat);
        p->rrt = p->rrl = p->rwt = p->rwl = rel;
}

void fake_ctrl_init_default(FakeCtrl *c)
{
        *c = (FakeCtrl) {};
        c->id.vid = htole16(0x1b36); /* QEMU's vendor id: obviously not a real drive */
        c->id.ssvid = htole16(0x1af4);
        pad(c->id.sn, sizeof(c->id.sn), "FAKE0001");
        pad(c->id.mn, sizeof(c->id.mn), "nvme-apstd fake controller");
        pad(c->id.fr, sizeof(c->id.fr), "1.0");
        c->id.ver = htole32(0x00010400); /* NVMe 1.4 */
        c->id.cntlid = htole16(1);
        c->id.npss = 4;
        c->id.apsta = 1;
        /*             mp   flags                                      enlat exlat rel */
        psd(&c->id.psd[0], 620, 0, 0, 0, 0); /* 6.20 W */
        psd(&c->id.psd[1], 430, 0, 0, 0, 1);
        psd(&c->id.psd[2], 350, 0, 0, 0, 2);
        psd(&c->id.psd[3], 500, NVME_PSD_FLAGS_NOPS | NVME_PSD_FLAGS_MXPS, 210, 1200, 3); /* 0.05 W */
        psd(&c->id.psd[4], 50, NVME_PSD_FLAGS_NOPS | NVME_PSD_FLAGS_MXPS, 2000, 8000, 4);
        strcpy(c->id.subnqn, "nqn.2014.08.org.nvmexpress:fake-apstd");
        c->exlat_scale_percent = 100;
        c->exlat_scale_ps = FAKE_SCALE_ALL_PS;
}

int fake_ctrl_init_idctrl(FakeCtrl *c, const char *path)
{
        uint8_t buf[IDENTIFY_BYTES + 1];
        size_t got = 0;
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while ((n = read(fd, buf + got, sizeof(buf) - got)) > 0)
                got += (size_t) n;
        if (n < 0) {
                n = -errno;
                close(fd);
                return (int) n;
        }
        close(fd);
        if (got != IDENTIFY_BYTES)
                return -EINVAL;
        *c = (FakeCtrl) {};
        memcpy(&c->id, buf, sizeof(c->id));
        c->exlat_scale_percent = 100;
        c->exlat_scale_ps = FAKE_SCALE_ALL_PS;
        return 0;
}

static bool ps_nonop(const FakeCtrl *c, unsigned ps)
{
        return ps <= c->id.npss && (c->id.psd[ps].flags & NVME_PSD_FLAGS_NOPS);
}

/* A table that cycles (ps3 -> ps4 -> ps3 ...) keeps moving as long as the controller is idle; every
 * step takes at least 1 ms, so this bounds the walk to some minutes of idleness per call, after which
 * the fake simply stays where it got to. */
#define POWER_WALK_MAX_STEPS 100000u

void fake_ctrl_power_at(const FakeCtrl *c, uint64_t now_us, FakePowerPos *ret)
{
        unsigned ps = c->anchor_ps;
        uint64_t t = c->anchor_us;

        for (unsigned i = 0; i < POWER_WALK_MAX_STEPS && (c->apst_cdw11 & 1) && ps < FAKE_APST_ENTRIES; i++) {
                uint64_t e = c->apst[ps], start, end;
                unsigned itps = (unsigned) (e >> 3) & 0x1f, itpt = (unsigned) (e >> 8) & 0xffffff;

                if (!itpt || !ps_nonop(c, itps))
                        break;
                start = t + (uint64_t) itpt * 1000;
                if (start > now_us)
                        break;
                end = start + le32toh(c->id.psd[itps].enlat);
                if (end > now_us) {
                        *ret = (FakePowerPos) { .ps = (uint8_t) itps, .entering = true, .entry_end_us = end };
                        return;
                }
                ps = itps;
                t = end;
        }
        *ret = (FakePowerPos) { .ps = (uint8_t) ps };
}

void fake_ctrl_power_rebase(FakeCtrl *c, uint64_t now_us)
{
        FakePowerPos pos;

        fake_ctrl_power_at(c, now_us, &pos);
        c->anchor_ps = pos.ps;
        c->anchor_us = pos.entering ? pos.entry_end_us : now_us;
}

uint64_t fake_ctrl_exlat_us(const FakeCtrl *c, unsigned ps)
{
        uint64_t x = ps <= c->id.npss ? le32toh(c->id.psd[ps].exlat) : 0;

        if (c->exlat_scale_ps == FAKE_SCALE_ALL_PS || c->exlat_scale_ps == ps)
                x = x * c->exlat_scale_percent / 100;
        return x;
}

/* The most recent operational state: the one Set Features 0x02 chose (ps0 unless it was used). */
static uint8_t operational_ps(const FakeCtrl *c)
{
        unsigned ps = c->pm_cdw11 & 0x1f;

        return ps_nonop(c, ps) ? 0 : (uint8_t) ps;
}

int fake_ctrl_io(FakeCtrl *c, const FakeCmd *cmd, uint64_t now_us, uint64_t *ret_delay_us)
{
        uint64_t slba = cmd->cdw10 | (uint64_t) cmd->cdw11 << 32, delay = 0;
        unsigned nlb = (cmd->cdw12 & 0xffff) + 1;
        FakePowerPos pos;

        *ret_delay_us = 0;
        c->n_io++;
        if (cmd->opcode != nvme_cmd_read) {
                c->n_errors++;
                return SC_INVALID_OPCODE;
        }
        c->n_read++;
        if (cmd->nsid != FAKE_NSID) {
                c->n_errors++;
                return SC_INVALID_NS;
        }
        if (slba >= FAKE_NS_BLOCKS || nlb > FAKE_NS_BLOCKS - slba) {
                c->n_errors++;
                return SC_LBA_RANGE;
        }
        if (!cmd->data || cmd->data_len < (uint64_t) nlb * FAKE_LBA_BYTES) {
                c->n_errors++;
                return SC_INVALID_FIELD;
        }
        fake_ctrl_power_at(c, now_us, &pos);
        if (pos.entering)
                delay += pos.entry_end_us - now_us;
        if (pos.entering || ps_nonop(c, pos.ps))
                delay += fake_ctrl_exlat_us(c, pos.ps);
        memset(cmd->data, 0, (size_t) nlb * FAKE_LBA_BYTES);
        c->anchor_ps = operational_ps(c);
        c->anchor_us = now_us + delay;
        *ret_delay_us = delay;
        return 0;
}

const char *fake_io_allowed(const FakeCmd *cmd, bool allow_read)
{
        if (cmd->opcode == nvme_cmd_write)
                return "Write (I/O opcode 0x01): nvme-apstd never writes data";
        if (cmd->opcode != nvme_cmd_read)
                return "I/O opcode other than Read";
        if (!allow_read)
                return "Read without --allow-read (only `nvme-apstd calibrate` may read)";
        if ((cmd->cdw12 & 0xffff) != 0)
                return "Read of more than one logical block";
        if (cmd->data_len < FAKE_LBA_BYTES)
                return "Read with a buffer smaller than one logical block";
        return NULL;
}

const char *fake_cmd_allowed(const FakeCmd *cmd)
{
        uint8_t fid = cmd->cdw10 & 0xff, sel = (cmd->cdw10 >> 8) & 0x7;

        switch (cmd->opcode) {
        case nvme_admin_identify:
                if ((cmd->cdw10 & 0xff) != NVME_IDENTIFY_CNS_CTRL)
                        return "Identify with CNS other than 01h";
                if (cmd->data_len < IDENTIFY_BYTES)
                        return "Identify Controller with a buffer smaller than 4096 bytes";
                return NULL;
        case nvme_admin_get_features:
                if (fid != NVME_FEAT_FID_AUTO_PST)
                        return "Get Features of a FID other than 0x0C";
                /* SEL 3 (supported capabilities) moves no data; the others DMA the 256-byte table */
                if (sel != NVME_GET_FEATURES_SEL_SUPPORTED && cmd->data_len < FAKE_APST_BYTES)
                        return "Get Features 0x0C with a buffer smaller than 256 bytes";
                return NULL;
        case nvme_admin_set_features:
                if (fid != NVME_FEAT_FID_AUTO_PST)
                        return "Set Features of a FID other than 0x0C";
                if (cmd->cdw10 & CDW10_SV)
                        return "Set Features with the Save bit (CDW10 bit 31)";
                if (cmd->data_len < FAKE_APST_BYTES)
                        return "Set Features 0x0C without a 256-byte table";
                return NULL;
        default:
                return "admin opcode other than Identify/Get Features/Set Features";
        }
}

static bool fault_matches(const FakeFault *f, const FakeCmd *cmd)
{
        uint8_t fid = cmd->cdw10 & 0xff;

        switch (f->match) {
        case FAKE_MATCH_ANY:
                return true;
        case FAKE_MATCH_IDENTIFY:
                return cmd->opcode == nvme_admin_identify;
        case FAKE_MATCH_GET_APST:
                return cmd->opcode == nvme_admin_get_features && fid == NVME_FEAT_FID_AUTO_PST;
        case FAKE_MATCH_SET_APST:
                return cmd->opcode == nvme_admin_set_features && fid == NVME_FEAT_FID_AUTO_PST;
        }
        return false;
}

/* Returns the fault that fires for @cmd, or NULL. Every matching rule counts the command, whether
 * or not an earlier rule fired, so "after=N" means N matching commands, full stop. */
static const FakeFault *fault_fire(FakeCtrl *c, const FakeCmd *cmd)
{
        FakeFault *chosen = NULL;

        for (unsigned i = 0; i < c->n_fault_rules; i++) {
                FakeFault *f = &c->faults[i];
                bool fire = false;

                if (!fault_matches(f, cmd))
                        continue;
                f->seen++;
                switch (f->when) {
                case FAKE_WHEN_ALWAYS:
                        fire = true;
                        break;
                case FAKE_WHEN_ONCE:
                        fire = !f->used;
                        break;
                case FAKE_WHEN_AFTER:
                        fire = f->seen > f->n;
                        break;
                }
                if (fire && !chosen) {
                        chosen = f;
                        f->used = true;
                }
        }
        return chosen;
}

static int set_features(FakeCtrl *c, const FakeCmd *cmd, uint64_t *res)
{
        uint8_t fid = cmd->cdw10 & 0xff;

        switch (fid) {
        case NVME_FEAT_FID_POWER_MGMT: {
                unsigned ps = cmd->cdw11 & 0x1f, wh = (cmd->cdw11 >> 5) & 0x7;

                if (ps > c->id.npss || (cmd->cdw11 & ~0xffu))
                        return SC_INVALID_FIELD;
                c->pm_cdw11 = ps | wh << 5;
                *res = c->pm_cdw11;
                return 0;
        }
        case NVME_FEAT_FID_AUTO_PST: {
                uint64_t e[FAKE_APST_ENTRIES];

                /* QEMU 7.2 answers 0x4002 when apsta = 0 (doc/testing.md); so do we */
                if (!(c->id.apsta & NVME_CTRL_APSTA_APST))
                        return SC_INVALID_FIELD;
                /* A real controller DMAs 256 bytes from the buffer whatever data_len says: without
                 * them there is nothing sensible to store. */
                if (!cmd->data || cmd->data_len < FAKE_APST_BYTES)
                        return SC_INVALID_FIELD;
                memcpy(e, cmd->data, sizeof(e));
                for (int i = 0; i < FAKE_APST_ENTRIES; i++) {
                        uint64_t v = le64toh(e[i]);
                        unsigned itps = (v >> 3) & 0x1f, itpt = (v >> 8) & 0xffffff;

                        if (!itpt)
                                continue;
                        /* the spec: ITPS must name a non-operational state, else Invalid Field */
                        if (itps > c->id.npss || !(c->id.psd[itps].flags & NVME_PSD_FLAGS_NOPS))
                                return SC_INVALID_FIELD;
                }
                for (int i = 0; i < FAKE_APST_ENTRIES; i++)
                        c->apst[i] = le64toh(e[i]);
                c->apst_cdw11 = cmd->cdw11 & 1;
                return 0;
        }
        default:
                return SC_INVALID_FIELD;
        }
}

static int get_features(FakeCtrl *c, const FakeCmd *cmd, uint64_t *res)
{
        uint8_t fid = cmd->cdw10 & 0xff, sel = (cmd->cdw10 >> 8) & 0x7;

        if (fid == NVME_FEAT_FID_AUTO_PST && !(c->id.apsta & NVME_CTRL_APSTA_APST))
                return SC_INVALID_FIELD;
        if (sel == NVME_GET_FEATURES_SEL_SUPPORTED) {
                *res = 0x4; /* changeable, not saveable, controller scope */
                return 0;
        }
        switch (fid) {
        case NVME_FEAT_FID_POWER_MGMT:
                *res = sel == NVME_GET_FEATURES_SEL_CURRENT ? c->pm_cdw11 : 0;
                return 0;
        case NVME_FEAT_FID_AUTO_PST:
                /* not saveable: SEL default and saved both give the default, APSTE=0 all-zero */
                if (cmd->data && cmd->data_len >= FAKE_APST_BYTES) {
                        uint64_t e[FAKE_APST_ENTRIES] = {};

                        if (sel == NVME_GET_FEATURES_SEL_CURRENT)
                                for (int i = 0; i < FAKE_APST_ENTRIES; i++)
                                        e[i] = htole64(c->apst[i]);
                        memcpy(cmd->data, e, sizeof(e));
                }
                *res = sel == NVME_GET_FEATURES_SEL_CURRENT ? c->apst_cdw11 : 0;
                return 0;
        default:
                return SC_INVALID_FIELD;
        }
}

static int admin_run(FakeCtrl *c, const FakeCmd *cmd, const FakeFault *f, uint64_t *res)
{
        int st;

        if (f && f->action == FAKE_ACTION_FAIL) {
                c->n_faults++;
                c->n_errors++;
                return f->err > 0 ? -f->err : f->nvme_status;
        }
        if (f && f->action == FAKE_ACTION_IGNORE && cmd->opcode == nvme_admin_set_features &&
            (cmd->cdw10 & 0xff) == NVME_FEAT_FID_AUTO_PST) {
                /* a controller that acknowledges the table and keeps its old one */
                c->n_faults++;
                return 0;
        }
        switch (cmd->opcode) {
        case nvme_admin_identify:
                if ((cmd->cdw10 & 0xff) != NVME_IDENTIFY_CNS_CTRL || !cmd->data || cmd->data_len < IDENTIFY_BYTES)
                        st = SC_INVALID_FIELD;
                else {
                        memcpy(cmd->data, &c->id, IDENTIFY_BYTES);
                        st = 0;
                }
                break;
        case nvme_admin_set_features:
                st = set_features(c, cmd, res);
                break;
        case nvme_admin_get_features:
                st = get_features(c, cmd, res);
                break;
        default:
                st = SC_INVALID_OPCODE;
        }
        if (st)
                c->n_errors++;
        else if (f && f->action == FAKE_ACTION_GARBLE && cmd->opcode == nvme_admin_get_features &&
                 (cmd->cdw10 & 0xff) == NVME_FEAT_FID_AUTO_PST && ((cmd->cdw10 >> 8) & 0x7) != 3 && cmd->data &&
                 cmd->data_len >= FAKE_APST_BYTES) {
                /* entry[0] is little-endian: byte 1 bit 0 is ITPT bit 0 */
                ((uint8_t *) cmd->data)[1] ^= 0x01;
                c->n_faults++;
        }
        return st;
}

int fake_ctrl_admin(FakeCtrl *c, const FakeCmd *cmd, uint64_t *res, unsigned *ret_delay_ms)
{
        const FakeFault *f;

        *res = 0;
        *ret_delay_ms = 0;
        c->n_admin++;
        if (cmd->opcode == nvme_admin_identify)
                c->n_identify++;
        else if (cmd->opcode == nvme_admin_get_features && (cmd->cdw10 & 0xff) == NVME_FEAT_FID_AUTO_PST)
                c->n_get_apst++;
        else if (cmd->opcode == nvme_admin_set_features && (cmd->cdw10 & 0xff) == NVME_FEAT_FID_AUTO_PST)
                c->n_set_apst++;
        f = fault_fire(c, cmd);
        if (f && f->action == FAKE_ACTION_DELAY) {
                /* a slow drive holds this command only: the caller completes it later
                 * (fake_ctrl_admin_delayed()), everything else goes on */
                c->n_faults++;
                *ret_delay_ms = f->delay_ms;
                return FAKE_ADMIN_DELAYED;
        }
        return admin_run(c, cmd, f, res);
}

int fake_ctrl_admin_delayed(FakeCtrl *c, const FakeCmd *cmd, uint64_t *res)
{
        *res = 0;
        return admin_run(c, cmd, NULL, res);
}

static const struct {
        const char *name;
        int err;
} errnos[] = {
        { "EIO", EIO },       { "ENODEV", ENODEV }, { "EINTR", EINTR },   { "ETIMEDOUT", ETIMEDOUT },
        { "EBUSY", EBUSY },   { "EAGAIN", EAGAIN }, { "ENOTTY", ENOTTY }, { "EPERM", EPERM },
        { "EACCES", EACCES }, { "EFAULT", EFAULT }, { "EINVAL", EINVAL }, { "ENXIO", ENXIO },
};

const char *fake_errno_name(int err)
{
        for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                if (errnos[i].err == err)
                        return errnos[i].name;
        return NULL;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
        unsigned long v;
        char *end;

        if (!*s || *s == '-' || *s == '+')
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 0);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int fake_fault_parse(const char *s, FakeFault *ret)
{
        static const char *const matches[] = {
                [FAKE_MATCH_IDENTIFY] = "identify",
                [FAKE_MATCH_GET_APST] = "get-apst",
                [FAKE_MATCH_SET_APST] = "set-apst",
                [FAKE_MATCH_ANY] = "any",
        };
        FakeFault f = {};
        char what[32], result[32], when[32] = "always";
        const char *eq = strchr(s, '='), *colon;
        unsigned long v;
        size_t i;

        if (!eq || (size_t) (eq - s) >= sizeof(what))
                return -EINVAL;
        memcpy(what, s, (size_t) (eq - s));
        what[eq - s] = 0;
        colon = strchr(eq + 1, ':');
        if (colon) {
                if ((size_t) (colon - eq - 1) >= sizeof(result) || strlen(colon + 1) >= sizeof(when))
                        return -EINVAL;
                memcpy(result, eq + 1, (size_t) (colon - eq - 1));
                result[colon - eq - 1] = 0;
                strcpy(when, colon + 1);
        } else {
                if (strlen(eq + 1) >= sizeof(result))
                        return -EINVAL;
                strcpy(result, eq + 1);
        }

        for (i = 0; i < sizeof(matches) / sizeof(matches[0]); i++)
                if (!strcmp(what, matches[i]))
                        break;
        if (i == sizeof(matches) / sizeof(matches[0]))
                return -EINVAL;
        f.match = (FakeMatch) i;

        if (!strcmp(result, "garble"))
                f.action = FAKE_ACTION_GARBLE;
        else if (!strcmp(result, "ignore"))
                f.action = FAKE_ACTION_IGNORE;
        else if (!strncmp(result, "delay=", 6)) {
                if (parse_uint(result + 6, FAKE_DELAY_MAX_MS, &v) < 0 || v == 0)
                        return -EINVAL;
                f.action = FAKE_ACTION_DELAY;
                f.delay_ms = (unsigned) v;
        }
        else if (result[0] == 'E') {
                for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
                        if (!strcmp(result, errnos[i].name))
                                f.err = errnos[i].err;
                if (!f.err)
                        return -EINVAL;
        } else if (!strncasecmp(result, "errno", 5)) {
                if (parse_uint(result + 5, 4095, &v) < 0 || v == 0)
                        return -EINVAL;
                f.err = (int) v;
        } else {
                /* an NVMe status as the ioctl returns it: SCT/SC plus DNR/More, 15 bits */
                if (parse_uint(result, 0x7fff, &v) < 0 || v == 0)
                        return -EINVAL;
                f.nvme_status = (int) v;
        }

        if (!strcmp(when, "always"))
                f.when = FAKE_WHEN_ALWAYS;
        else if (!strcmp(when, "once"))
                f.when = FAKE_WHEN_ONCE;
        else if (!strncmp(when, "after=", 6)) {
                if (parse_uint(when + 6, 1000000, &v) < 0)
                        return -EINVAL;
                f.when = FAKE_WHEN_AFTER;
                f.n = (unsigned) v;
        } else
                return -EINVAL;
        *ret = f;
        return 0;
}

int fake_ctrl_add_fault(FakeCtrl *c, const FakeFault *f)
{
        if (c->n_fault_rules >= FAKE_MAX_FAULTS)
                return -ENOSPC;
        c->faults[c->n_fault_rules++] = *f;
        return 0;
}

void fake_ctrl_clear_faults(FakeCtrl *c)
{
        c->n_fault_rules = 0;
}

int fake_table_parse(const char *text, uint32_t *ret_apste, uint64_t ret_entries[FAKE_APST_ENTRIES])
{
        uint64_t e[FAKE_APST_ENTRIES] = {};
        uint32_t apste = 0;
        unsigned n = 0;
        const char *p = text;

        while (*p) {
                char tok[64];
                size_t l;

                if (*p == '#') {
                        p += strcspn(p, "\n");
                        continue;
                }
                if (strchr(" \t\r\n", *p)) {
                        p++;
                        continue;
                }
                l = strcspn(p, " \t\r\n#");
                if (l >= sizeof(tok))
                        return -EINVAL;
                memcpy(tok, p, l);
                tok[l] = 0;
                p += l;
                if (!strncmp(tok, "apste=", 6)) {
                        if (strcmp(tok + 6, "0") && strcmp(tok + 6, "1"))
                                return -EINVAL;
                        apste = tok[6] == '1';
                } else {
                        char *end;

                        if (n >= FAKE_APST_ENTRIES || tok[0] == '-')
                                return -EINVAL;
                        errno = 0;
                        e[n++] = strtoull(tok, &end, 0);
                        if (errno || *end)
                                return -EINVAL;
                }
        }
        *ret_apste = apste;
        memcpy(ret_entries, e, sizeof(e));
        return 0;
}

void fake_table_format(const FakeCtrl *c, FILE *out)
{
        fprintf(out, "apste=%u\n", c->apst_cdw11 & 1);
        for (int i = 0; i < FAKE_APST_ENTRIES; i++)
                fprintf(out, "0x%016llx\n", (unsigned long long) c->apst[i]);
}

void fake_table_kernel(const FakeCtrl *c, uint32_t *ret_apste, uint64_t ret_entries[FAKE_APST_ENTRIES])
{
        fake_table_kernel_latency(c, 100000, ret_apste, ret_entries);
}

void fake_table_kernel_latency(const FakeCtrl *c, uint64_t max_lat_us, uint32_t *ret_apste,
                               uint64_t ret_entries[FAKE_APST_ENTRIES])
{
        /* drivers/nvme/host/core.c nvme_configure_apst() with the default module parameters */
        const uint64_t prim_ms = 100, sec_ms = 2000, prim_tol = 15000, sec_tol = 100000;
        uint64_t target = 0;
        unsigned last_index = UINT32_MAX;

        memset(ret_entries, 0, FAKE_APST_BYTES);
        *ret_apste = 0;
        if (!(c->id.apsta & NVME_CTRL_APSTA_APST) || c->id.npss > 31)
                return;
        if (max_lat_us == 0) /* the kernel then sends APSTE 0 with an all-zero table */
                return;
        *ret_apste = 1;
        for (int state = c->id.npss; state >= 0; state--) {
                uint64_t exlat, total, ms;

                if (target)
                        ret_entries[state] = target;
                if (!(c->id.psd[state].flags & NVME_PSD_FLAGS_NOPS))
                        continue;
                exlat = le32toh(c->id.psd[state].exlat);
                if (exlat > max_lat_us)
                        continue;
                total = exlat + le32toh(c->id.psd[state].enlat);
                if (total <= prim_tol) {
                        if (last_index == 1)
                                continue;
                        last_index = 1;
                        ms = prim_ms;
                } else if (total <= sec_tol) {
                        if (last_index <= 2)
                                continue;
                        last_index = 2;
                        ms = sec_ms;
                } else
                        continue;
                target = ((uint64_t) state << 3) | (ms << 8);
        }
}

void fake_ctrl_report(const FakeCtrl *c, const char *name, FILE *out)
{
        fprintf(out,
                "fake: %s: apste=%u admin=%u identify=%u get_apst=%u set_apst=%u errors=%u faults=%u "
                "violations=%u io=%u read=%u\n",
                name, c->apst_cdw11 & 1, c->n_admin, c->n_identify, c->n_get_apst, c->n_set_apst, c->n_errors,
                c->n_faults, c->n_violations, c->n_io, c->n_read);
        for (int i = 0; i < FAKE_APST_ENTRIES; i++)
                if (c->apst[i])
                        fprintf(out, "fake: %s:   entry[%d] = 0x%016llx: ps%d -> ps%u after %u ms\n", name, i,
                                (unsigned long long) c->apst[i], i, (unsigned) (c->apst[i] >> 3) & 0x1f,
                                (unsigned) (c->apst[i] >> 8) & 0xffffff);
}

void fake_ctrl_sysfs_string(const char *field, size_t len, char *buf)
{
        /* the kernel prints these with "%.*s\n": up to the first NUL, padding spaces kept */
        size_t l = strnlen(field, len);

        memcpy(buf, field, l);
        buf[l] = 0;
}
