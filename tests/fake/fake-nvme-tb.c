/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fake-nvme-tb: umockdev testbed with fake NVMe controllers, for nvme-apstd's integration tests.
 *
 *   umockdev-wrapper fake-nvme-tb [OPTIONS] -- COMMAND [ARGS...]
 *
 * Builds a sysfs that looks like a real kernel's (recorded in a QEMU guest, kernel 6.1: PCI parent,
 * /sys/class/nvme/nvmeN, namespace nvmeNn1 with stat, nvme-subsystem, optional multipath layout,
 * DMI, nvme_core parameters, optional cpufreq), attaches a fake controller (fakectrl.c) to every
 * /dev/nvmeN, runs COMMAND under the umockdev preload in a GLib main loop, serves a control socket
 * (fake-nvme-ctl) while it runs, then prints every controller's state and the allow-list oracle's
 * violations. Exit: COMMAND's status, 1 if the oracle found a violation, 2 usage, 99 setup error.
 * See README.md and doc/testing.md. */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <umockdev.h>

#include "fakectrl.h"

#define NVME_CHAR_MAJOR 246 /* dynamic in the kernel; what the recorded QEMU guest had */
#define BLOCK_EXT_MAJOR 259 /* blkext: nvme namespaces */
#define EXIT_USAGE 2
#define EXIT_SETUP 99 /* meson: hard error, not a test failure */

typedef struct Harness Harness;

typedef struct Ctrl {
        Harness *h;
        char *name;     /* nvmeN */
        unsigned index; /* N */
        FakeCtrl model; /* guarded by h->lock, like every field the ioctl thread reads */
        bool removed;   /* after "remove": every ioctl fails with ENODEV */
        bool attached;  /* ioctl handler attached to /dev/nvmeN */
        bool ns_attached; /* ... and to the namespace node /dev/nvmeNn1 */
        unsigned seq;   /* commands seen */
        char *transport, *state;
        unsigned pci_vendor, pci_device;
        bool multipath;
        char *pci_syspath, *syspath, *ns_syspath, *hidden_ns_syspath, *subsys_syspath;
        char *diskseq;  /* diskseq=N: the I/O disk's diskseq, a real disk's for the eBPF source */
        int die_ps;     /* die-in=N: the controller fails once fully in psN (-1: never) */
        gint64 died_us; /* when it failed: admin commands fail, state resetting, until the reset (0: alive) */
        FILE *log;
        char *table_path;
} Ctrl;

/* ---------- FakeNvme: the UMockdevIoctlBase subclass answering NVMe ioctls ---------- */
typedef struct {
        UMockdevIoctlBase parent;
        Ctrl *ctrl;
        bool ns; /* the namespace node nvmeNn1: I/O commands go here */
} FakeNvme;
typedef struct {
        UMockdevIoctlBaseClass parent_class;
} FakeNvmeClass;
GType fake_nvme_get_type(void);
G_DEFINE_TYPE(FakeNvme, fake_nvme, UMOCKDEV_TYPE_IOCTL_BASE)

struct Harness {
        UMockdevTestbed *tb;
        char *sys;
        char *state_dir;
        bool state_dir_is_temp;
        bool allow_any;
        bool allow_read; /* --allow-read: the oracle accepts a one-block Read (calibrate tests only) */
        bool verbose;
        GMutex lock; /* the models, counters, logs and violations: the ioctl handler runs in its own thread */
        GPtrArray *ctrls;      /* Ctrl* */
        GPtrArray *violations; /* char* */
        GPtrArray *handlers;   /* FakeNvme* */
        GPtrArray *waiters;    /* Waiter*: "wait" requests not answered yet */
        GHashTable *supplies;  /* power_supply name -> syspath */
        GMainLoop *loop;
        GSocketService *ctl;
        char *ctl_path;
        GPid child;
        int child_status;
        bool child_done;
};

static Ctrl *ctrl_find(Harness *h, const char *name)
{
        for (guint i = 0; i < h->ctrls->len; i++) {
                Ctrl *c = h->ctrls->pdata[i];
                if (!strcmp(c->name, name))
                        return c;
        }
        return NULL;
}

static void ctrl_write_table_locked(Ctrl *c)
{
        g_autoptr(GError) err = NULL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                g_error("open_memstream: %m");
        fake_table_format(&c->model, f);
        fclose(f);
        /* atomic (rename): a script never reads half a table */
        if (!g_file_set_contents(c->table_path, buf, (gssize) len, &err))
                g_warning("%s: %s", c->table_path, err->message);
        free(buf);
}

/* " table=E0,E1,...": the entries a Set Features 0x0C carried, up to the last one that is not zero ("0"
 * for none), so that a test reads every table the daemon sent, not only the last one stored. Else "". */
static void format_sent_table(const FakeCmd *fc, char *buf, size_t n)
{
        uint64_t e[FAKE_APST_ENTRIES];
        size_t last = 0, off;

        buf[0] = 0;
        if (fc->opcode != nvme_admin_set_features || (fc->cdw10 & 0xff) != NVME_FEAT_FID_AUTO_PST || !fc->data ||
            fc->data_len < FAKE_APST_BYTES)
                return;
        for (size_t i = 0; i < FAKE_APST_ENTRIES; i++) {
                uint64_t le;

                memcpy(&le, (const uint8_t *) fc->data + i * 8, 8);
                e[i] = le64toh(le);
                if (e[i])
                        last = i + 1;
        }
        off = (size_t) snprintf(buf, n, " table=%s", last ? "" : "0");
        for (size_t i = 0; i < last && off < n; i++)
                off += (size_t) snprintf(buf + off, n - off, "%s0x%llx", i ? "," : "", (unsigned long long) e[i]);
}

static void log_cmd_locked(Ctrl *c, unsigned seq, const char *ioc, const FakeCmd *fc, int st, uint64_t result,
                           const char *why)
{
        char res[64], table[16 + FAKE_APST_ENTRIES * 20];

        if (st < 0) {
                const char *n = fake_errno_name(-st);
                if (n)
                        snprintf(res, sizeof(res), "errno=%s", n);
                else
                        snprintf(res, sizeof(res), "errno=%d", -st);
        } else
                snprintf(res, sizeof(res), "status=0x%04x result=0x%08llx", (unsigned) st,
                         (unsigned long long) result);
        format_sent_table(fc, table, sizeof(table));
        if (c->log) {
                fprintf(c->log, "seq=%u ioctl=%s opc=0x%02x nsid=0x%08x cdw10=0x%08x cdw11=0x%08x data_len=%u %s%s%s%s\n",
                        seq, ioc, fc->opcode, fc->nsid, fc->cdw10, fc->cdw11, fc->data_len, res, table,
                        why ? " VIOLATION: " : "", why ? why : "");
                fflush(c->log);
        }
        if (c->h->verbose)
                fprintf(stderr, "fake: %s: seq=%u ioctl=%s opc=0x%02x cdw10=0x%08x cdw11=0x%08x data_len=%u %s\n", c->name,
                        seq, ioc, fc->opcode, fc->cdw10, fc->cdw11, fc->data_len, res);
}

static void violation_locked(Ctrl *c, const char *ioc, const FakeCmd *fc, const char *why)
{
        c->model.n_violations++;
        g_ptr_array_add(c->h->violations,
                        g_strdup_printf("%s: seq=%u ioctl=%s opc=0x%02x nsid=0x%08x cdw10=0x%08x cdw11=0x%08x "
                                        "data_len=%u: %s",
                                        c->name, c->seq, ioc, fc->opcode, fc->nsid, fc->cdw10, fc->cdw11,
                                        fc->data_len, why));
}

/* umockdev reads a client's memory with a read that returns short, and no error, when the client dies
 * between asking for the ioctl and answering the read (SIGKILL in that window, which a test that kills
 * a daemon under valgrind hits now and then): the handler then sees zeros, not what was sent. So before
 * a command counts as a violation it is read again. A client that is gone cannot answer: its socket is
 * closed and the request fails. A live one, still blocked in its ioctl, sends the same bytes again.
 * Returns false when the client is gone; otherwise *bufd is resolved afresh (the reload drops it). */
static bool reread_cmd(UMockdevIoctlData *cmdd, UMockdevIoctlData **bufd)
{
        g_autoptr(GError) err = NULL;
        const struct nvme_passthru_cmd64 *pc = (const void *) cmdd->data;

        if (!umockdev_ioctl_data_reload(cmdd, &err))
                return false;
        if (*bufd) {
                g_clear_pointer(bufd, umockdev_ioctl_data_unref);
                *bufd = umockdev_ioctl_data_resolve(cmdd, offsetof(struct nvme_passthru_cmd, addr), pc->data_len,
                                                    &err);
                if (!*bufd)
                        return false;
        }
        return true;
}

/* A command the allow-list rejects (@fc): is its client still there (reread_cmd())? If so, @fc's
 * data points into the buffer read again. If not, what was read is not a command: nothing runs,
 * the log says so, and false is returned (the ioctl is completed). */
static bool client_still_there(Ctrl *c, UMockdevIoctlClient *client, const char *ioc, UMockdevIoctlData *cmdd,
                               UMockdevIoctlData **bufd, FakeCmd *fc)
{
        Harness *h = c->h;

        if (reread_cmd(cmdd, bufd)) {
                fc->data = *bufd ? (*bufd)->data : NULL;
                return true;
        }
        g_mutex_lock(&h->lock);
        c->seq++;
        if (c->log) {
                fprintf(c->log, "seq=%u ioctl=%s client gone before its command could be read: not run\n", c->seq,
                        ioc);
                fflush(c->log);
        }
        g_mutex_unlock(&h->lock);
        umockdev_ioctl_client_complete(client, -1, EFAULT);
        return false;
}

/* An I/O passthru command (NVME_IOCTL_IO_CMD/IO64_CMD) on the namespace node. The controller holds
 * a Read that finds it in a non-operational state for the rest of the entry plus the exit latency
 * (fake_ctrl_io()): the handler really sleeps that long, outside the lock, before completing. */
static void handle_io(Ctrl *c, UMockdevIoctlClient *client, UMockdevIoctlData *cmdd, UMockdevIoctlData **bufdp,
                      bool is64)
{
        Harness *h = c->h;
        struct nvme_passthru_cmd64 *pc = (void *) cmdd->data;
        const char *ioc = is64 ? "io64" : "io", *why = NULL;
        FakeCmd fc = {
                .opcode = pc->opcode, .nsid = pc->nsid, .cdw10 = pc->cdw10, .cdw11 = pc->cdw11,
                .cdw12 = pc->cdw12, .cdw13 = pc->cdw13, .cdw14 = pc->cdw14, .cdw15 = pc->cdw15,
                .data_len = *bufdp ? pc->data_len : 0, .data = *bufdp ? (*bufdp)->data : NULL,
        };
        uint64_t delay = 0;
        int st;

        if (!h->allow_any)
                why = fake_io_allowed(&fc, h->allow_read);
        if (why && !client_still_there(c, client, ioc, cmdd, bufdp, &fc))
                return;
        g_mutex_lock(&h->lock);
        c->seq++;
        if (why)
                violation_locked(c, ioc, &fc, why);
        st = c->removed ? -ENODEV : fake_ctrl_io(&c->model, &fc, (uint64_t) g_get_monotonic_time(), &delay);
        if (c->log) {
                fprintf(c->log, "seq=%u ioctl=%s opc=0x%02x nsid=0x%08x slba=0x%llx nlb=%u data_len=%u ", c->seq, ioc,
                        fc.opcode, fc.nsid, (unsigned long long) (fc.cdw10 | (uint64_t) fc.cdw11 << 32),
                        (fc.cdw12 & 0xffff) + 1, fc.data_len);
                if (st < 0)
                        fprintf(c->log, "errno=ENODEV");
                else
                        fprintf(c->log, "status=0x%04x delay_us=%llu", (unsigned) st, (unsigned long long) delay);
                fprintf(c->log, "%s%s\n", why ? " VIOLATION: " : "", why ? why : "");
                fflush(c->log);
        }
        if (h->verbose)
                fprintf(stderr, "fake: %s: seq=%u ioctl=%s opc=0x%02x delay_us=%llu\n", c->name, c->seq, ioc,
                        fc.opcode, (unsigned long long) delay);
        g_mutex_unlock(&h->lock);
        if (delay)
                g_usleep((gulong) delay);
        if (st < 0) {
                umockdev_ioctl_client_complete(client, -1, -st);
                return;
        }
        if (is64)
                pc->result = 0;
        else
                ((struct nvme_passthru_cmd *) pc)->result = 0;
        umockdev_ioctl_client_complete(client, st, 0);
}

/* Run one admin command on the model; a new table (or power state) counts idle time from now, not
 * retroactively. FAKE_ADMIN_DELAYED: a `delay=` rule holds it; nothing done yet. */
static int admin_execute_locked(Ctrl *c, const FakeCmd *fc, uint64_t *result, unsigned *delay_ms)
{
        uint8_t anchor_ps = c->model.anchor_ps;
        uint64_t anchor_us = c->model.anchor_us;
        bool changes_power = fc->opcode == nvme_admin_set_features &&
                             ((fc->cdw10 & 0xff) == NVME_FEAT_FID_AUTO_PST ||
                              (fc->cdw10 & 0xff) == NVME_FEAT_FID_POWER_MGMT);
        int st;

        if (changes_power)
                fake_ctrl_power_rebase(&c->model, (uint64_t) g_get_monotonic_time());
        if (delay_ms)
                st = fake_ctrl_admin(&c->model, fc, result, delay_ms);
        else
                st = fake_ctrl_admin_delayed(&c->model, fc, result);
        if (changes_power && st != 0) {
                c->model.anchor_ps = anchor_ps;
                c->model.anchor_us = anchor_us;
        }
        if (st == 0 && fc->opcode == nvme_admin_set_features)
                ctrl_write_table_locked(c);
        return st;
}

static void admin_complete(UMockdevIoctlClient *client, UMockdevIoctlData *cmdd, bool is64, int st, uint64_t result)
{
        struct nvme_passthru_cmd64 *pc = (void *) cmdd->data;

        if (st < 0) {
                umockdev_ioctl_client_complete(client, -1, -st);
                return;
        }
        if (is64)
                pc->result = result;
        else
                ((struct nvme_passthru_cmd *) pc)->result = (uint32_t) result;
        umockdev_ioctl_client_complete(client, st, 0);
}

/* An admin command a `delay=` fault holds. Only its own client waits: the harness's loop (the control
 * socket, uevents, every other controller, other commands of this one) goes on, as the kernel serves
 * other controllers while one drive sits on a command. */
typedef struct Delayed {
        Ctrl *c;
        UMockdevIoctlClient *client;
        UMockdevIoctlData *cmdd, *bufd;     /* kept until complete() writes them back */
        FakeCmd fc;                         /* .data points into bufd */
        const char *ioc, *why;
        unsigned seq;
        bool is64;
} Delayed;

static gboolean on_delayed_done(gpointer userdata)
{
        Delayed *d = userdata;
        Harness *h = d->c->h;
        uint64_t result = 0;
        int st;

        g_mutex_lock(&h->lock);
        st = d->c->removed ? -ENODEV : admin_execute_locked(d->c, &d->fc, &result, NULL);
        log_cmd_locked(d->c, d->seq, d->ioc, &d->fc, st, result, d->why);
        g_mutex_unlock(&h->lock);
        admin_complete(d->client, d->cmdd, d->is64, st, result);
        g_clear_pointer(&d->bufd, umockdev_ioctl_data_unref);
        g_clear_pointer(&d->cmdd, umockdev_ioctl_data_unref);
        g_object_unref(d->client);
        g_free(d);
        return G_SOURCE_REMOVE;
}

static gboolean fake_nvme_handle_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client)
{
        Ctrl *c = ((FakeNvme *) base)->ctrl;
        bool ns = ((FakeNvme *) base)->ns, io = false;
        Harness *h = c->h;
        gulong req = umockdev_ioctl_client_get_request(client);
        UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client); /* unowned */
        g_autoptr(GError) err = NULL;
        g_autoptr(UMockdevIoctlData) cmdd = NULL, bufd = NULL;
        const char *ioc, *why = NULL;
        FakeCmd fc = {};
        uint64_t result = 0;
        bool is64;
        gsize sz;
        int st;

        if (req == NVME_IOCTL_ADMIN_CMD || req == NVME_IOCTL_ADMIN64_CMD) {
                is64 = req == NVME_IOCTL_ADMIN64_CMD;
                ioc = is64 ? "admin64" : "admin";
        } else if (ns && (req == NVME_IOCTL_IO_CMD || req == NVME_IOCTL_IO64_CMD)) {
                /* the kernel takes I/O passthru on the namespace node only */
                is64 = req == NVME_IOCTL_IO64_CMD;
                ioc = is64 ? "io64" : "io";
                io = true;
        } else if (ns && req == NVME_IOCTL_ID) {
                /* the namespace's NSID is the ioctl's return value */
                umockdev_ioctl_client_complete(client, c->removed ? -1 : (int) FAKE_NSID, c->removed ? ENODEV : 0);
                return TRUE;
        } else {
                /* Not an admin command. An NVMe ioctl that acts (IO_CMD, RESET, SUBSYS_RESET, RESCAN, ...)
                 * is something the daemon must never do: record it. NVME_IOCTL_ID (nvme-cli asks it) and
                 * others (TCGETS from isatty() on the PTY umockdev makes the node) get ENOTTY, as from
                 * the real driver's controller node. */
                bool forbidden = _IOC_TYPE(req) == 'N' && req != NVME_IOCTL_ID && !h->allow_any;

                g_mutex_lock(&h->lock);
                c->seq++;
                ioc = _IOC_TYPE(req) == 'N' ? "nvme-other" : "non-nvme";
                if (c->log) {
                        fprintf(c->log, "seq=%u ioctl=%s request=0x%08lx errno=%s%s\n", c->seq, ioc, req,
                                c->removed ? "ENODEV" : "ENOTTY",
                                forbidden ? " VIOLATION: NVMe ioctl other than ADMIN_CMD" : "");
                        fflush(c->log);
                }
                if (forbidden) {
                        c->model.n_violations++;
                        g_ptr_array_add(h->violations,
                                        g_strdup_printf("%s: seq=%u ioctl request 0x%08lx: NVMe ioctl other than "
                                                        "ADMIN_CMD",
                                                        c->name, c->seq, req));
                }
                st = c->removed ? ENODEV : ENOTTY;
                g_mutex_unlock(&h->lock);
                umockdev_ioctl_client_complete(client, -1, st);
                return TRUE;
        }

        sz = is64 ? sizeof(struct nvme_passthru_cmd64) : sizeof(struct nvme_passthru_cmd);
        /* copy the passthru struct from the client, then the buffer at ->addr (offset 24); complete()
         * writes the changed bytes of both back and restores addr (doc/testing.md) */
        cmdd = umockdev_ioctl_data_resolve(arg, 0, sz, &err);
        if (!cmdd) {
                g_warning("%s: resolve cmd: %s", c->name, err ? err->message : "?");
                umockdev_ioctl_client_complete(client, -1, EFAULT);
                return TRUE;
        }
        struct nvme_passthru_cmd64 *pc = (void *) cmdd->data; /* common prefix of both structs */
        if (pc->addr && pc->data_len) {
                bufd = umockdev_ioctl_data_resolve(cmdd, offsetof(struct nvme_passthru_cmd, addr), pc->data_len,
                                                   &err);
                if (!bufd) {
                        umockdev_ioctl_client_complete(client, -1, EFAULT);
                        return TRUE;
                }
        }
        if (io) {
                handle_io(c, client, cmdd, &bufd, is64);
                return TRUE;
        }
        fc = (FakeCmd) {
                .opcode = pc->opcode, .nsid = pc->nsid, .cdw10 = pc->cdw10, .cdw11 = pc->cdw11,
                .cdw12 = pc->cdw12, .cdw13 = pc->cdw13, .cdw14 = pc->cdw14, .cdw15 = pc->cdw15,
                .data_len = bufd ? pc->data_len : 0, .data = bufd ? bufd->data : NULL,
        };

        if (!h->allow_any)
                why = fake_cmd_allowed(&fc);
        if (why && !client_still_there(c, client, ioc, cmdd, &bufd, &fc))
                return TRUE;
        g_mutex_lock(&h->lock);
        c->seq++;
        if (why)
                violation_locked(c, ioc, &fc, why);
        if (c->removed)
                st = -ENODEV;
        else if (c->died_us)
                st = -EIO;      /* off the bus: the kernel's reset has not brought it back yet */
        else {
                unsigned delay_ms = 0;

                st = admin_execute_locked(c, &fc, &result, &delay_ms);
                if (st == FAKE_ADMIN_DELAYED) {
                        Delayed *d = g_new0(Delayed, 1);

                        *d = (Delayed) {
                                .c = c, .client = g_object_ref(client), .cmdd = g_steal_pointer(&cmdd),
                                .bufd = g_steal_pointer(&bufd), .fc = fc, .ioc = ioc, .why = why, .seq = c->seq,
                                .is64 = is64,
                        };
                        g_mutex_unlock(&h->lock);
                        /* held by this controller only: the harness's loop serves every other one */
                        g_timeout_add(delay_ms, on_delayed_done, d);
                        return TRUE;
                }
        }
        log_cmd_locked(c, c->seq, ioc, &fc, st, result, why);
        g_mutex_unlock(&h->lock);
        admin_complete(client, cmdd, is64, st, result);
        return TRUE;
}

static void fake_nvme_class_init(FakeNvmeClass *k)
{
        ((UMockdevIoctlBaseClass *) k)->handle_ioctl = fake_nvme_handle_ioctl;
}

static void fake_nvme_init(FakeNvme *self)
{
}

/* ---------- sysfs ---------- */

static void sys_write(Harness *h, const char *rel, const char *content)
{
        g_autofree char *p = g_build_filename(h->sys, rel, NULL);
        g_autofree char *d = g_path_get_dirname(p);
        g_autoptr(GError) err = NULL;

        if (g_mkdir_with_parents(d, 0755) < 0 || !g_file_set_contents(p, content, -1, &err))
                g_error("cannot write %s: %s", p, err ? err->message : g_strerror(errno));
}

static void sys_symlink(Harness *h, const char *target, const char *rel)
{
        g_autofree char *p = g_build_filename(h->sys, rel, NULL);
        g_autofree char *d = g_path_get_dirname(p);

        if (g_mkdir_with_parents(d, 0755) < 0 || symlink(target, p) < 0)
                g_error("cannot symlink %s: %m", p);
}

/* the kernel's part_stat_show() format */
static char *format_stat(const unsigned long long v[17])
{
        return g_strdup_printf("%8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu "
                               "%8llu %8llu %8llu %8llu\n",
                               v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12],
                               v[13], v[14], v[15], v[16]);
}

/* A umockdev record (what umockdev-record writes; add_from_string is the only call that creates
 * /dev nodes) for one controller: PCI parent, nvmeN, its namespace(s) and its nvme-subsystem. */
static char *ctrl_record(Ctrl *c)
{
        const struct nvme_id_ctrl *id = &c->model.id;
        unsigned i = c->index;
        char mn[41], sn[21], fr[9], nqn[257];
        /* slots 04.0 .. 1f.0 for nvme0..27, then functions 1..7 of the same slots for nvme28..223: a PCI
         * device number has 5 bits, a function number 3 */
        g_autofree char *pci_addr = g_strdup_printf("0000:00:%02x.%u", 4 + i % 28, i / 28);
        g_autofree char *zero_stat = format_stat((const unsigned long long[17]) {});
        g_autofree char *address = NULL, *ns_name = g_strdup_printf("%sn1", c->name);
        GString *s = g_string_new(NULL);
        bool pcie = !strcmp(c->transport, "pcie");
        g_autofree char *uevent_addr = NULL; /* nvme_class_uevent(): NVME_TRADDR etc. when set */

        fake_ctrl_sysfs_string(id->mn, sizeof(id->mn), mn);
        fake_ctrl_sysfs_string(id->sn, sizeof(id->sn), sn);
        fake_ctrl_sysfs_string(id->fr, sizeof(id->fr), fr);
        if (id->subnqn[0])
                g_strlcpy(nqn, id->subnqn, MIN(sizeof(nqn), sizeof(id->subnqn) + 1));
        else /* the kernel's fallback NQN (nvme_init_subnqn) */
                snprintf(nqn, sizeof(nqn), "nqn.2014.08.org.nvmexpress:%04x%04x%.20s%.40s", le16toh(id->vid),
                         le16toh(id->ssvid), id->sn, id->mn);

        if (pcie) {
                c->pci_syspath = g_strdup_printf("/sys/devices/pci0000:00/%s", pci_addr);
                c->syspath = g_strdup_printf("%s/nvme/%s", c->pci_syspath, c->name);
                address = g_strdup(pci_addr);
                uevent_addr = g_strdup("");
                g_string_append_printf(s,
                                       "P: /devices/pci0000:00/%s\n"
                                       "E: DRIVER=nvme\n"
                                       "E: PCI_CLASS=10802\n"
                                       "E: PCI_ID=%04X:%04X\n"
                                       "E: PCI_SUBSYS_ID=%04X:0000\n"
                                       "E: PCI_SLOT_NAME=%s\n"
                                       "E: SUBSYSTEM=pci\n"
                                       "A: class=0x010802\\n\n"
                                       "A: vendor=0x%04x\\n\n"
                                       "A: device=0x%04x\\n\n"
                                       "A: subsystem_vendor=0x%04x\\n\n"
                                       "A: subsystem_device=0x0000\\n\n"
                                       "A: numa_node=-1\\n\n"
                                       "A: power/control=on\\n\n"
                                       "A: power/runtime_status=active\\n\n"
                                       "A: power_state=D0\\n\n\n",
                                       pci_addr, c->pci_vendor, c->pci_device, le16toh(id->ssvid), pci_addr,
                                       c->pci_vendor, c->pci_device, le16toh(id->ssvid));
        } else {
                /* fabrics controllers hang off the virtual nvme-fabrics "ctl" device, no PCI parent */
                c->syspath = g_strdup_printf("/sys/devices/virtual/nvme-fabrics/ctl/%s", c->name);
                address = g_strdup_printf("traddr=127.0.0.1,trsvcid=%u", 4420 + i);
                uevent_addr = g_strdup_printf("E: NVME_TRADDR=127.0.0.1\nE: NVME_TRSVCID=%u\n", 4420 + i);
        }

        g_string_append_printf(s,
                               "P: %s\n"
                               "N: %s\n"
                               "E: DEVNAME=/dev/%s\n"
                               "E: MAJOR=%u\n"
                               "E: MINOR=%u\n"
                               "E: NVME_TRTYPE=%s\n"
                               "%s"
                               "E: SUBSYSTEM=nvme\n"
                               "A: address=%s\\n\n"
                               "A: cntlid=%u\\n\n"
                               "A: cntrltype=io\\n\n"
                               "A: dctype=none\\n\n"
                               "A: dev=%u:%u\\n\n"
                               "A: firmware_rev=%s\\n\n"
                               "A: kato=0\\n\n"
                               "A: model=%s\\n\n"
                               "A: numa_node=-1\\n\n"
                               "A: power/async=disabled\\n\n"
                               "A: power/control=auto\\n\n"
                               "A: power/runtime_status=unsupported\\n\n"
                               "A: queue_count=2\\n\n"
                               "A: serial=%s\\n\n"
                               "A: sqsize=1023\\n\n"
                               "A: state=%s\\n\n"
                               "A: subsysnqn=%s\\n\n"
                               "A: transport=%s\\n\n",
                               c->syspath + strlen("/sys"), c->name, c->name, NVME_CHAR_MAJOR, i, c->transport,
                               uevent_addr, address, le16toh(id->cntlid), NVME_CHAR_MAJOR, i, fr, mn, sn, c->state, nqn,
                               c->transport);
        if (pcie) /* the PCI parent, relative to nvme/nvmeN */
                g_string_append_printf(s, "L: device=../../../%s\n", pci_addr);
        /* pm_qos_latency_tolerance_us exists only when the kernel enabled APST (doc/sysfs.md) */
        if (c->model.apst_cdw11 & 1)
                g_string_append(s, "A: power/pm_qos_latency_tolerance_us=100000\\n\n");
        g_string_append(s, "\n");

        c->subsys_syspath = g_strdup_printf("/sys/devices/virtual/nvme-subsystem/nvme-subsys%u", i);
        if (!c->multipath) {
                c->ns_syspath = g_strdup_printf("%s/%s", c->syspath, ns_name);
                g_string_append_printf(s,
                                       "P: %s\n"
                                       "N: %s\n"
                                       "E: DEVNAME=/dev/%s\n"
                                       "E: DEVTYPE=disk\n"
                                       "E: MAJOR=%u\n"
                                       "E: MINOR=%u\n"
                                       "E: SUBSYSTEM=block\n"
                                       "L: device=../../%s\n"
                                       "A: dev=%u:%u\\n\n"
                                       "A: hidden=0\\n\n"
                                       "A: inflight=       0        0\\n\n"
                                       "A: nsid=1\\n\n"
                                       "A: queue/logical_block_size=512\\n\n"
                                       "A: queue/rotational=0\\n\n"
                                       "A: removable=0\\n\n"
                                       "A: ro=0\\n\n"
                                       "A: size=2000409264\\n\n"
                                       "A: stat=%.*s\\n\n\n",
                                       c->ns_syspath + strlen("/sys"), ns_name, ns_name, BLOCK_EXT_MAJOR, 2 * i,
                                       c->name, BLOCK_EXT_MAJOR, 2 * i, (int) strlen(zero_stat) - 1, zero_stat);
        } else {
                /* nvme_core.multipath=Y: the visible disk lives under the subsystem and its stat stays
                 * zero; the I/O is counted on the hidden nvme<subsys>c<ctrl>n1 (doc/sysfs.md) */
                c->ns_syspath = g_strdup_printf("%s/%s", c->subsys_syspath, ns_name);
                c->hidden_ns_syspath = g_strdup_printf("%s/nvme%uc%un1", c->syspath, i, i);
                g_string_append_printf(s,
                                       "P: %s\n"
                                       "N: %s\n"
                                       "E: DEVNAME=/dev/%s\n"
                                       "E: DEVTYPE=disk\n"
                                       "E: MAJOR=%u\n"
                                       "E: MINOR=%u\n"
                                       "E: SUBSYSTEM=block\n"
                                       "L: device=../../nvme-subsys%u\n"
                                       "A: dev=%u:%u\\n\n"
                                       "A: hidden=0\\n\n"
                                       "A: inflight=       0        0\\n\n"
                                       "A: nsid=1\\n\n"
                                       "A: queue/logical_block_size=512\\n\n"
                                       "A: queue/rotational=0\\n\n"
                                       "A: removable=0\\n\n"
                                       "A: ro=0\\n\n"
                                       "A: size=2000409264\\n\n"
                                       "A: stat=%.*s\\n\n\n"
                                       "P: %s\n"
                                       "E: DEVTYPE=disk\n"
                                       "E: SUBSYSTEM=block\n"
                                       "L: device=../../%s\n"
                                       "A: dev=%u:%u\\n\n"
                                       "A: hidden=1\\n\n"
                                       "A: inflight=       0        0\\n\n"
                                       "A: nsid=1\\n\n"
                                       "A: size=2000409264\\n\n"
                                       "A: stat=%.*s\\n\n\n",
                                       c->ns_syspath + strlen("/sys"), ns_name, ns_name, BLOCK_EXT_MAJOR, 2 * i,
                                       i, BLOCK_EXT_MAJOR, 2 * i, (int) strlen(zero_stat) - 1, zero_stat,
                                       c->hidden_ns_syspath + strlen("/sys"), c->name, BLOCK_EXT_MAJOR,
                                       2 * i + 1, (int) strlen(zero_stat) - 1, zero_stat);
        }

        g_string_append_printf(s,
                               "P: %s\n"
                               "E: SUBSYSTEM=nvme-subsystem\n"
                               "A: firmware_rev=%s\\n\n"
                               "A: iopolicy=numa\\n\n"
                               "A: model=%s\\n\n"
                               "A: serial=%s\\n\n"
                               "A: subsysnqn=%s\\n\n"
                               "A: subsystype=nvm\\n\n"
                               "L: %s=../../%s%s\n\n",
                               c->subsys_syspath + strlen("/sys"), fr, mn, sn, nqn, c->name,
                               pcie ? "../pci0000:00/" : "nvme-fabrics/ctl/",
                               pcie ? c->syspath + strlen("/sys/devices/pci0000:00/") : c->name);
        return g_string_free(s, FALSE);
}

static void ctrl_free(Ctrl *c)
{
        if (!c)
                return;
        if (c->log)
                fclose(c->log);
        g_free(c->name);
        g_free(c->transport);
        g_free(c->state);
        g_free(c->pci_syspath);
        g_free(c->syspath);
        g_free(c->ns_syspath);
        g_free(c->hidden_ns_syspath);
        g_free(c->diskseq);
        g_free(c->subsys_syspath);
        g_free(c->table_path);
        g_free(c);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Ctrl, ctrl_free)

static bool parse_u16_hex(const char *s, unsigned *ret)
{
        char *end;
        unsigned long v;

        if (!g_ascii_isxdigit(*s))
                return false;
        v = strtoul(s, &end, 16);
        if (*end || v > 0xffff)
                return false;
        *ret = (unsigned) v;
        return true;
}

static bool load_table(const char *path, uint32_t *apste, uint64_t e[FAKE_APST_ENTRIES], GError **error)
{
        g_autofree char *text = NULL;

        if (!g_file_get_contents(path, &text, NULL, error))
                return false;
        if (fake_table_parse(text, apste, e) < 0) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                            "%s: not a table (apste=N, then up to 32 numbers)", path);
                return false;
        }
        return true;
}

/* Parse "nvmeN[,key=value...]" (the --ctrl and "add" syntax) into a new Ctrl, not yet in sysfs. */
static Ctrl *ctrl_parse(Harness *h, const char *spec, GError **error)
{
        g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
        g_autoptr(Ctrl) c = g_new0(Ctrl, 1);
        const char *idctrl = NULL, *model = NULL, *serial = NULL, *firmware = NULL, *pci = NULL;
        const char *initial = NULL, *apste = NULL, *apsta = NULL, *scale_pct = NULL, *scale_ps = NULL;
        char *end;
        int r;

        c->h = h;
        c->die_ps = -1;
        if (!g_str_has_prefix(parts[0], "nvme") || !g_ascii_isdigit(parts[0][4]) ||
            (c->index = (unsigned) strtoul(parts[0] + 4, &end, 10), *end) || c->index > 223) {
                /* N <= 223: the PCI parent is 0000:00:<4 + N % 28>.<N / 28> (5-bit device, 3-bit function) */
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "controller name '%s' is not nvmeN with N in 0..223", parts[0]);
                return NULL;
        }
        c->name = g_strdup(parts[0]);
        c->transport = g_strdup("pcie");
        c->state = g_strdup("live");
        for (char **p = parts + 1; *p; p++) {
                char *v = strchr(*p, '=');
                if (!v) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "'%s': expected key=value", *p);
                        return NULL;
                }
                *v++ = 0;
                if (!strcmp(*p, "idctrl"))
                        idctrl = v;
                else if (!strcmp(*p, "pci"))
                        pci = v;
                else if (!strcmp(*p, "model"))
                        model = v;
                else if (!strcmp(*p, "serial"))
                        serial = v;
                else if (!strcmp(*p, "firmware"))
                        firmware = v;
                else if (!strcmp(*p, "state"))
                        g_free(c->state), c->state = g_strdup(v);
                else if (!strcmp(*p, "transport"))
                        g_free(c->transport), c->transport = g_strdup(v);
                else if (!strcmp(*p, "diskseq"))
                        g_free(c->diskseq), c->diskseq = g_strdup(v);
                else if (!strcmp(*p, "multipath"))
                        c->multipath = !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true");
                else if (!strcmp(*p, "initial-table"))
                        initial = v;
                else if (!strcmp(*p, "apste"))
                        apste = v;
                else if (!strcmp(*p, "apsta"))
                        apsta = v;
                else if (!strcmp(*p, "exlat-scale-percent"))
                        scale_pct = v;
                else if (!strcmp(*p, "exlat-scale-ps"))
                        scale_ps = v;
                else if (!strcmp(*p, "die-in")) {
                        unsigned long ps = strtoul(v, &end, 10);
                        if (!g_ascii_isdigit(*v) || *end || ps > 31) {
                                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                            "die-in=%s: expected 0..31", v);
                                return NULL;
                        }
                        c->die_ps = (int) ps;
                } else {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "unknown controller option '%s'",
                                    *p);
                        return NULL;
                }
        }

        if (idctrl) {
                r = fake_ctrl_init_idctrl(&c->model, idctrl);
                if (r < 0) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", idctrl,
                                    r == -EINVAL ? "not 4096 bytes of Identify data" : g_strerror(-r));
                        return NULL;
                }
        } else
                fake_ctrl_init_default(&c->model);
        /* overrides go into the Identify data, so sysfs and Identify always agree */
#define SET_ID_STRING(field, val)                                                                          \
        do {                                                                                               \
                size_t l_ = strlen(val);                                                                   \
                memset(c->model.id.field, ' ', sizeof(c->model.id.field));                                 \
                memcpy(c->model.id.field, val, MIN(l_, sizeof(c->model.id.field)));                        \
        } while (0)
        if (model)
                SET_ID_STRING(mn, model);
        if (serial)
                SET_ID_STRING(sn, serial);
        if (firmware)
                SET_ID_STRING(fr, firmware);
#undef SET_ID_STRING
        if (apsta) {
                if (strcmp(apsta, "0") && strcmp(apsta, "1")) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "apsta=%s: 0 or 1", apsta);
                        return NULL;
                }
                c->model.id.apsta = apsta[0] == '1';
        }

        if (scale_pct) {
                unsigned long v = strtoul(scale_pct, &end, 10);
                if (!g_ascii_isdigit(*scale_pct) || *end || v < 1 || v > 100000) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                    "exlat-scale-percent=%s: expected 1..100000", scale_pct);
                        return NULL;
                }
                c->model.exlat_scale_percent = (unsigned) v;
        }
        if (scale_ps) {
                unsigned long v = strtoul(scale_ps, &end, 10);
                if (!g_ascii_isdigit(*scale_ps) || *end || v > 31) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "exlat-scale-ps=%s: expected 0..31",
                                    scale_ps);
                        return NULL;
                }
                c->model.exlat_scale_ps = (unsigned) v;
        }

        c->pci_vendor = le16toh(c->model.id.vid);
        c->pci_device = 0x0010;
        if (pci) {
                g_auto(GStrv) vd = g_strsplit(pci, ":", 2);
                if (!vd[1] || !parse_u16_hex(vd[0], &c->pci_vendor) || !parse_u16_hex(vd[1], &c->pci_device)) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "pci=%s: expected VVVV:DDDD",
                                    pci);
                        return NULL;
                }
        }

        if (initial && !strcmp(initial, "kernel"))
                fake_table_kernel(&c->model, &c->model.apst_cdw11, c->model.apst);
        else if (initial && strcmp(initial, "zero")) {
                if (!load_table(initial, &c->model.apst_cdw11, c->model.apst, error))
                        return NULL;
        }
        if (apste) {
                if (strcmp(apste, "0") && strcmp(apste, "1")) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "apste=%s: 0 or 1", apste);
                        return NULL;
                }
                c->model.apst_cdw11 = apste[0] == '1';
        }
        return g_steal_pointer(&c);
}

/* Put a parsed controller into sysfs and /dev, attach its ioctl handler, open its state files. */
static bool ctrl_add(Harness *h, Ctrl *c, GError **error)
{
        g_autofree char *rec = NULL, *log_path = NULL;
        FakeNvme *handler = NULL;
        g_autofree char *devnode = g_strdup_printf("/dev/%s", c->name);

        rec = ctrl_record(c);
        if (!umockdev_testbed_add_from_string(h->tb, rec, error))
                return false;
        /* The eBPF source tells disks apart by diskseq: naming a real disk's makes the kernel's
         * counts of that disk this controller's. */
        if (c->diskseq)
                umockdev_testbed_set_attribute(h->tb, c->hidden_ns_syspath ? c->hidden_ns_syspath : c->ns_syspath,
                                               "diskseq", c->diskseq);
        log_path = g_strdup_printf("%s/%s.log", h->state_dir, c->name);
        c->log = fopen(log_path, "ae"); /* O_APPEND | O_CLOEXEC */
        if (!c->log) {
                g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %m", log_path);
                return false;
        }
        c->table_path = g_strdup_printf("%s/%s.table", h->state_dir, c->name);
        g_mutex_lock(&h->lock);
        ctrl_write_table_locked(c);
        g_mutex_unlock(&h->lock);

        handler = g_object_new(fake_nvme_get_type(), NULL);
        handler->ctrl = c;
        if (!umockdev_testbed_attach_ioctl(h->tb, devnode, UMOCKDEV_IOCTL_BASE(handler), error)) {
                g_object_unref(handler);
                return false;
        }
        g_ptr_array_add(h->handlers, handler);
        c->attached = true;

        /* the namespace node takes the I/O passthru ioctls (and admin ones, as the kernel's does) */
        {
                g_autofree char *nsnode = g_strdup_printf("/dev/%sn1", c->name);
                handler = g_object_new(fake_nvme_get_type(), NULL);
                handler->ctrl = c;
                handler->ns = true;
                if (!umockdev_testbed_attach_ioctl(h->tb, nsnode, UMOCKDEV_IOCTL_BASE(handler), error)) {
                        g_object_unref(handler);
                        return false;
                }
                g_ptr_array_add(h->handlers, handler);
                c->ns_attached = true;
        }
        c->model.anchor_us = (uint64_t) g_get_monotonic_time();
        return true;
}

/* ---------- DMI, nvme_core parameters, cpufreq ---------- */

static void add_dmi(Harness *h, GPtrArray *dmi)
{
        g_autoptr(GError) err = NULL;
        GString *s = g_string_new("P: /devices/virtual/dmi/id\nE: SUBSYSTEM=dmi\n");
        /* what the recorded QEMU guest had (SeaBIOS: no board_name) unless overridden */
        const char *defaults[] = { "sys_vendor=QEMU", "product_name=Standard PC (Q35 + ICH9, 2009)",
                                   "bios_vendor=SeaBIOS", "chassis_type=1", NULL };
        GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);

        for (guint i = 0; i < dmi->len; i++) {
                const char *kv = dmi->pdata[i];
                g_autofree char *k = g_strndup(kv, strcspn(kv, "="));
                g_string_append_printf(s, "A: %s\\n\n", kv);
                g_hash_table_add(seen, g_steal_pointer(&k));
        }
        for (const char **d = defaults; *d; d++) {
                g_autofree char *k = g_strndup(*d, strcspn(*d, "="));
                if (!g_hash_table_contains(seen, k))
                        g_string_append_printf(s, "A: %s\\n\n", *d);
        }
        g_hash_table_foreach(seen, (GHFunc) (void (*)(void)) g_free, NULL);
        g_hash_table_unref(seen);
        if (!umockdev_testbed_add_from_string(h->tb, s->str, &err))
                g_error("dmi: %s", err->message);
        g_string_free(s, TRUE);
}

static void add_cpufreq(Harness *h, unsigned ncpu, bool shared, const char *driver)
{
        bool pstate = !strcmp(driver, "intel_pstate");
        g_autofree char *range = ncpu > 1 ? g_strdup_printf("0-%u\n", ncpu - 1) : g_strdup("0\n");

        sys_write(h, "devices/system/cpu/online", range);
        sys_write(h, "devices/system/cpu/present", range);
        sys_write(h, "devices/system/cpu/possible", range);
        if (pstate) {
                sys_write(h, "devices/system/cpu/intel_pstate/status", "active\n");
                sys_write(h, "devices/system/cpu/intel_pstate/no_turbo", "0\n");
        }
        for (unsigned cpu = 0; cpu < ncpu; cpu++) {
                /* with --cpufreq-shared, cpu1 belongs to policy0 (affected_cpus "0 1") */
                unsigned pol = shared && cpu == 1 ? 0 : cpu;
                g_autofree char *cpudir = g_strdup_printf("devices/system/cpu/cpu%u", cpu);
                g_autofree char *online = g_strdup_printf("%s/online", cpudir);
                g_autofree char *link = g_strdup_printf("%s/cpufreq", cpudir);
                g_autofree char *target = g_strdup_printf("../cpufreq/policy%u", pol);

                sys_write(h, online, "1\n");
                sys_symlink(h, target, link);
                if (pol != cpu)
                        continue;
                g_autofree char *cpus = shared && cpu == 0 && ncpu > 1 ? g_strdup("0 1\n")
                                                                       : g_strdup_printf("%u\n", cpu);
                struct {
                        const char *name, *value;
                } attrs[] = {
                        { "affected_cpus", cpus },
                        { "related_cpus", cpus },
                        { "cpuinfo_min_freq", "800000\n" },
                        { "cpuinfo_max_freq", "3600000\n" },
                        { "cpuinfo_transition_latency", pstate ? "0\n" : "10000\n" },
                        { "scaling_driver", pstate ? "intel_pstate\n" : "acpi-cpufreq\n" },
                        { "scaling_governor", pstate ? "powersave\n" : "schedutil\n" },
                        { "scaling_available_governors",
                          pstate ? "performance powersave\n"
                                 : "conservative ondemand userspace powersave performance schedutil\n" },
                        { "scaling_min_freq", "800000\n" },
                        { "scaling_max_freq", "3600000\n" },
                        { "scaling_cur_freq", "1200000\n" },
                        { pstate ? "energy_performance_preference" : NULL, "balance_performance\n" },
                        { pstate ? "energy_performance_available_preferences" : NULL,
                          "default performance balance_performance balance_power power \n" },
                        { pstate ? "base_frequency" : "scaling_available_frequencies",
                          pstate ? "2400000\n" : "3600000 2800000 2000000 1200000 800000 \n" },
                        { pstate ? NULL : "scaling_setspeed", "<unsupported>\n" },
                };
                for (size_t a = 0; a < G_N_ELEMENTS(attrs); a++) {
                        if (!attrs[a].name)
                                continue;
                        g_autofree char *rel = g_strdup_printf("devices/system/cpu/cpufreq/policy%u/%s", pol,
                                                               attrs[a].name);
                        sys_write(h, rel, attrs[a].value);
                }
        }
}

/* ---------- power supplies ---------- */

/* The kernel's uevent key for a power_supply attribute: online -> POWER_SUPPLY_ONLINE. */
static char *supply_prop(const char *attr)
{
        g_autofree char *up = g_ascii_strup(attr, -1);
        return g_strconcat("POWER_SUPPLY_", up, NULL);
}

static bool supply_attr_ok(const char *k)
{
        static const char *const attrs[] = { "type", "online", "status", "scope", "capacity", "present", NULL };
        return g_strv_contains(attrs, k);
}

/* NAME,type=Mains|USB|Battery|...[,online=0|1][,status=S][,scope=System|Device][,capacity=N][,present=N]
 * under a platform parent, with its class link /sys/class/power_supply/NAME (as ACPI's ac and battery
 * drivers register them). */
static bool supply_add(Harness *h, const char *spec, GError **error)
{
        g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
        g_autofree char *syspath = NULL;
        GString *s;
        bool typed = false;
        bool ok;

        if (!parts[0] || !*parts[0] || strchr(parts[0], '/') || strchr(parts[0], '=')) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "expected NAME,type=T[,key=value...]");
                return false;
        }
        if (g_hash_table_contains(h->supplies, parts[0])) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS, "power supply %s exists", parts[0]);
                return false;
        }
        if (g_hash_table_size(h->supplies) == 0 &&
            !umockdev_testbed_add_from_string(h->tb, "P: /devices/platform/fake-power\nE: SUBSYSTEM=platform\n",
                                              error))
                return false;
        s = g_string_new(NULL);
        g_string_append_printf(s, "P: /devices/platform/fake-power/power_supply/%s\nE: SUBSYSTEM=power_supply\n"
                               "E: POWER_SUPPLY_NAME=%s\n", parts[0], parts[0]);
        for (char **kv = parts + 1; *kv; kv++) {
                g_auto(GStrv) p = g_strsplit(*kv, "=", 2);
                g_autofree char *prop = NULL;
                if (!p[1] || !supply_attr_ok(p[0]) || strchr(p[1], '\n')) {
                        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                    "%s: expected type|online|status|scope|capacity|present=VALUE", *kv);
                        g_string_free(s, TRUE);
                        return false;
                }
                typed |= !strcmp(p[0], "type");
                prop = supply_prop(p[0]);
                g_string_append_printf(s, "E: %s=%s\nA: %s=%s\\n\n", prop, p[1], p[0], p[1]);
        }
        if (!typed) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s: no type=", parts[0]);
                g_string_free(s, TRUE);
                return false;
        }
        ok = umockdev_testbed_add_from_string(h->tb, s->str, error);
        g_string_free(s, TRUE);
        if (!ok)
                return false;
        syspath = g_strdup_printf("/sys/devices/platform/fake-power/power_supply/%s", parts[0]);
        g_hash_table_insert(h->supplies, g_strdup(parts[0]), g_steal_pointer(&syspath));
        return true;
}

/* ---------- run-time control (fake-nvme-ctl) ---------- */

static void emit_uevent(Harness *h, const char *syspath, const char *action)
{
        if (h->verbose)
                fprintf(stderr, "fake: uevent %s %s\n", action, syspath);
        /* NB: umockdev aborts this process if a listener's queue is full (doc/testing.md): a daemon
         * that stops reading its monitor takes the test down, which is the point. */
        umockdev_testbed_uevent(h->tb, syspath, action);
}

static void set_attr(Harness *h, const char *syspath, const char *attr, const char *value)
{
        g_autofree char *v = g_str_has_suffix(value, "\n") ? g_strdup(value) : g_strconcat(value, "\n", NULL);
        umockdev_testbed_set_attribute(h->tb, syspath, attr, v);
}

/* Drop NVME_EVENT=connected from the uevent file again after the event: in the kernel it is only
 * in the event's environment, not in a later read of the device's properties. */
static void drop_uevent_property(Harness *h, const char *syspath, const char *key)
{
        g_autofree char *path = g_build_filename(h->sys, syspath + strlen("/sys"), "uevent", NULL);
        g_autofree char *text = NULL, *prefix = g_strconcat(key, "=", NULL);
        g_auto(GStrv) lines = NULL;
        GString *out = g_string_new(NULL);

        if (g_file_get_contents(path, &text, NULL, NULL)) {
                lines = g_strsplit(text, "\n", -1);
                for (char **l = lines; *l; l++)
                        if (**l && !g_str_has_prefix(*l, prefix))
                                g_string_append_printf(out, "%s\n", *l);
                (void) g_file_set_contents(path, out->str, -1, NULL);
        }
        g_string_free(out, TRUE);
}

static bool ctl_reset(Harness *h, Ctrl *c, const char *table, GString *out, GError **error)
{
        uint64_t e[FAKE_APST_ENTRIES] = {};
        uint32_t apste = 0;

        if (table && !load_table(table, &apste, e, error))
                return false;
        /* the kernel's order (doc/sysfs.md): resetting, connecting, APST rewritten in
         * nvme_init_ctrl_finish(), live, then one change uevent with NVME_EVENT=connected */
        set_attr(h, c->syspath, "state", "resetting");
        g_usleep(10000);
        set_attr(h, c->syspath, "state", "connecting");
        g_mutex_lock(&h->lock);
        /* a reset returns the controller to ps0, awake */
        c->model.anchor_ps = 0;
        c->model.anchor_us = (uint64_t) g_get_monotonic_time();
        c->model.pm_cdw11 = 0;
        c->model.apst_cdw11 = apste;
        memcpy(c->model.apst, e, sizeof(e));
        ctrl_write_table_locked(c);
        g_mutex_unlock(&h->lock);
        g_usleep(10000);
        set_attr(h, c->syspath, "state", "live");
        umockdev_testbed_set_property(h->tb, c->syspath, "NVME_EVENT", "connected");
        emit_uevent(h, c->syspath, "change");
        drop_uevent_property(h, c->syspath, "NVME_EVENT");
        g_string_append_printf(out, "reset %s apste=%u\n", c->name, apste);
        return true;
}

/* A write to power/pm_qos_latency_tolerance_us, as the kernel handles it (doc/kernel-apst.md):
 * nvme_set_latency_tolerance() rewrites APST inside the write() when the value changed (with the
 * file's table, else the kernel's for that limit), then the VFS reports the write (inotify
 * IN_MODIFY: the file is written in place, not replaced). No uevent, no sysfs_notify(). */
static bool ctl_pmqos(Harness *h, Ctrl *c, const char *us, const char *table, GString *out, GError **error)
{
        g_autofree char *path = g_build_filename(h->sys, c->syspath + strlen("/sys"), "power",
                                                 "pm_qos_latency_tolerance_us", NULL);
        g_autofree char *old = NULL, *text = g_strconcat(us, "\n", NULL);
        uint64_t e[FAKE_APST_ENTRIES] = {}, lat;
        uint32_t apste = 0;
        bool rewrite;
        char *end;
        int fd;

        if (!g_ascii_isdigit(*us) || (lat = g_ascii_strtoull(us, &end, 10), *end)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "pmqos: %s is not a number of us", us);
                return false;
        }
        if (!g_file_get_contents(path, &old, NULL, NULL)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                            "%s has no power/pm_qos_latency_tolerance_us (the kernel has APST off on it)", c->name);
                return false;
        }
        if (table && !load_table(table, &apste, e, error))
                return false;
        rewrite = g_ascii_strtoull(old, NULL, 10) != lat;
        if (rewrite) {
                g_mutex_lock(&h->lock);
                if (!table)
                        fake_table_kernel_latency(&c->model, lat, &apste, e);
                c->model.apst_cdw11 = apste;
                memcpy(c->model.apst, e, sizeof(e));
                ctrl_write_table_locked(c);
                g_mutex_unlock(&h->lock);
        }
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text)) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", path, g_strerror(errno));
                if (fd >= 0)
                        close(fd);
                return false;
        }
        close(fd);
        if (rewrite)
                g_string_append_printf(out, "pmqos %s %s apste=%u (table rewritten)\n", c->name, us, apste);
        else
                g_string_append_printf(out, "pmqos %s %s (unchanged: table left)\n", c->name, us);
        return true;
}

/* The second half of a removal: the devices and their uevents. */
static void remove_devices(Harness *h, Ctrl *c)
{
        /* the kernel removes the namespace disk(s) first, then the controller */
        emit_uevent(h, c->ns_syspath, "remove");
        umockdev_testbed_remove_device(h->tb, c->ns_syspath);
        if (c->hidden_ns_syspath)
                umockdev_testbed_remove_device(h->tb, c->hidden_ns_syspath);
        emit_uevent(h, c->syspath, "remove");
        umockdev_testbed_remove_device(h->tb, c->syspath);
        umockdev_testbed_remove_device(h->tb, c->subsys_syspath);
        if (c->pci_syspath)
                umockdev_testbed_remove_device(h->tb, c->pci_syspath);
}

typedef struct Removal {
        Harness *h;
        Ctrl *c;
} Removal;

static gboolean on_removal_due(gpointer userdata)
{
        Removal *r = userdata;

        remove_devices(r->h, r->c);
        return G_SOURCE_REMOVE;
}

/* As the kernel's nvme_remove(): the state first ("deleting"), so commands fail with ENODEV, then
 * the devices go, @delay_ms later (0: at once; a kernel tearing down its namespaces takes a while). */
static void ctl_remove(Harness *h, Ctrl *c, unsigned delay_ms)
{
        set_attr(h, c->syspath, "state", "deleting");
        g_mutex_lock(&h->lock);
        c->removed = true;
        g_mutex_unlock(&h->lock);
        if (delay_ms == 0) {
                remove_devices(h, c);
                return;
        }
        Removal *r = g_new(Removal, 1);
        *r = (Removal) { .h = h, .c = c };
        g_timeout_add_full(G_PRIORITY_DEFAULT, delay_ms, on_removal_due, r, g_free);
}

static bool parse_stat(const char *text, unsigned long long v[17])
{
        g_auto(GStrv) tok = g_strsplit_set(text, " \t\n", -1);
        unsigned n = 0;

        memset(v, 0, 17 * sizeof(v[0]));
        for (char **t = tok; *t; t++) {
                char *end;
                if (!**t)
                        continue;
                if (n == 17 || !g_ascii_isdigit(**t))
                        return false;
                v[n++] = g_ascii_strtoull(*t, &end, 10);
                if (*end)
                        return false;
        }
        return n == 11 || n == 15 || n == 17; /* the kernel's field count grew: 4.18 discard, 5.5 flush */
}

static bool ctl_execute(Harness *h, char **argv, GString *out, GError **error)
{
        guint argc = g_strv_length(argv);
        Ctrl *c = NULL;

#define FAIL(...)                                                                                          \
        do {                                                                                               \
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, __VA_ARGS__);                  \
                return false;                                                                              \
        } while (0)

        if (argc < 2)
                FAIL("usage: COMMAND NAME [ARGS]; commands: reset pmqos add remove fault clear set-attr stat table "
                     "report uevent wait supply supply-add");
        if (!strcmp(argv[0], "supply-add") && argc == 2)
                return supply_add(h, argv[1], error);
        if (!strcmp(argv[0], "supply") && argc >= 3) {
                /* like the kernel's power_supply_changed(): the attributes change, then one "change" */
                const char *syspath = g_hash_table_lookup(h->supplies, argv[1]);
                if (!syspath)
                        FAIL("no power supply %s", argv[1]);
                for (guint i = 2; i < argc; i++) {
                        g_auto(GStrv) kv = g_strsplit(argv[i], "=", 2);
                        g_autofree char *prop = NULL;
                        if (!kv[1] || !supply_attr_ok(kv[0]))
                                FAIL("supply %s: expected type|online|status|scope|capacity|present=VALUE", argv[i]);
                        prop = supply_prop(kv[0]);
                        set_attr(h, syspath, kv[0], kv[1]);
                        umockdev_testbed_set_property(h->tb, syspath, prop, kv[1]);
                }
                emit_uevent(h, syspath, "change");
                g_string_append_printf(out, "supply %s changed\n", argv[1]);
                return true;
        }
        if (strcmp(argv[0], "add")) {
                c = ctrl_find(h, argv[1]);
                if (!c || (c->removed && strcmp(argv[0], "table") && strcmp(argv[0], "report")))
                        FAIL("no controller %s", argv[1]);
        }

        if (!strcmp(argv[0], "reset") && argc <= 3)
                return ctl_reset(h, c, argv[2], out, error);
        if (!strcmp(argv[0], "pmqos") && (argc == 3 || argc == 4))
                return ctl_pmqos(h, c, argv[2], argc == 4 ? argv[3] : NULL, out, error);
        if (!strcmp(argv[0], "add") && argc == 2) {
                g_autoptr(Ctrl) n = ctrl_parse(h, argv[1], error);
                if (!n)
                        return false;
                bool goes_live;
                if (ctrl_find(h, n->name))
                        FAIL("%s exists (re-adding a removed controller is not supported)", n->name);
                /* Like the kernel: the class device is announced (uevent "add") in state "new", before
                 * the controller can take admin commands; it becomes live later, announced with a
                 * "change" uevent carrying NVME_EVENT=connected. A state= given explicitly is kept. */
                goes_live = !strcmp(n->state, "live");
                if (goes_live)
                        g_free(n->state), n->state = g_strdup("new");
                if (!ctrl_add(h, n, error))
                        return false;
                c = g_steal_pointer(&n);
                g_mutex_lock(&h->lock);
                g_ptr_array_add(h->ctrls, c);
                g_mutex_unlock(&h->lock);
                /* no "add" from us: add_from_string() already sent one for every device it created */
                if (goes_live) {
                        set_attr(h, c->syspath, "state", "connecting");
                        set_attr(h, c->syspath, "state", "live");
                        umockdev_testbed_set_property(h->tb, c->syspath, "NVME_EVENT", "connected");
                        emit_uevent(h, c->syspath, "change");
                        drop_uevent_property(h, c->syspath, "NVME_EVENT");
                }
                g_string_append_printf(out, "added %s\n", c->name);
                return true;
        }
        if (!strcmp(argv[0], "remove") && (argc == 2 || argc == 3)) {
                unsigned long delay_ms = 0;
                char *end = NULL;

                if (argc == 3 && (!g_ascii_isdigit(argv[2][0]) || (delay_ms = strtoul(argv[2], &end, 10), *end) ||
                                  delay_ms > FAKE_DELAY_MAX_MS))
                        FAIL("bad delay '%s': milliseconds, at most %u", argv[2], FAKE_DELAY_MAX_MS);
                ctl_remove(h, c, (unsigned) delay_ms);
                g_string_append_printf(out, "removed %s\n", c->name);
                return true;
        }
        if (!strcmp(argv[0], "fault") && argc == 3) {
                FakeFault f;
                int r;
                if (fake_fault_parse(argv[2], &f) < 0)
                        FAIL("bad fault '%s': WHAT=RESULT[:WHEN]", argv[2]);
                g_mutex_lock(&h->lock);
                r = fake_ctrl_add_fault(&c->model, &f);
                g_mutex_unlock(&h->lock);
                if (r < 0)
                        FAIL("too many faults on %s", c->name);
                g_string_append_printf(out, "fault %s %s\n", c->name, argv[2]);
                return true;
        }
        if (!strcmp(argv[0], "clear") && argc == 2) {
                g_mutex_lock(&h->lock);
                fake_ctrl_clear_faults(&c->model);
                g_mutex_unlock(&h->lock);
                return true;
        }
        if (!strcmp(argv[0], "set-attr") && argc == 4) {
                if (strstr(argv[2], "..") || argv[2][0] == '/')
                        FAIL("bad attribute name");
                set_attr(h, c->syspath, argv[2], argv[3]);
                return true;
        }
        if (!strcmp(argv[0], "stat") && argc == 4) {
                unsigned long long v[17];
                const char *p = NULL;
                g_autofree char *s = NULL;
                if (g_str_equal(argv[2], strrchr(c->ns_syspath, '/') + 1))
                        p = c->ns_syspath;
                else if (c->hidden_ns_syspath && g_str_equal(argv[2], strrchr(c->hidden_ns_syspath, '/') + 1))
                        p = c->hidden_ns_syspath;
                else
                        FAIL("%s has no namespace disk %s", c->name, argv[2]);
                if (!parse_stat(argv[3], v))
                        FAIL("stat: expected 11, 15 or 17 non-negative numbers");
                s = format_stat(v);
                umockdev_testbed_set_attribute(h->tb, p, "stat", s);
                return true;
        }
        if (!strcmp(argv[0], "table") && argc == 2) {
                char *buf = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&buf, &len);
                if (!f)
                        FAIL("open_memstream: %m");
                g_mutex_lock(&h->lock);
                fake_table_format(&c->model, f);
                g_mutex_unlock(&h->lock);
                fclose(f);
                g_string_append_len(out, buf, (gssize) len);
                free(buf);
                return true;
        }
        if (!strcmp(argv[0], "report") && argc == 2) {
                char *buf = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&buf, &len);
                if (!f)
                        FAIL("open_memstream: %m");
                g_mutex_lock(&h->lock);
                fake_ctrl_report(&c->model, c->name, f);
                g_mutex_unlock(&h->lock);
                fclose(f);
                g_string_append_len(out, buf, (gssize) len);
                free(buf);
                return true;
        }
        if (!strcmp(argv[0], "uevent") && argc >= 3) {
                for (guint i = 3; i < argc; i++) {
                        g_auto(GStrv) kv = g_strsplit(argv[i], "=", 2);
                        if (!kv[1])
                                FAIL("uevent property '%s': expected KEY=VALUE", argv[i]);
                        umockdev_testbed_set_property(h->tb, c->syspath, kv[0], kv[1]);
                }
                emit_uevent(h, c->syspath, argv[2]);
                for (guint i = 3; i < argc; i++) {
                        g_autofree char *k = g_strndup(argv[i], strcspn(argv[i], "="));
                        drop_uevent_property(h, c->syspath, k);
                }
                return true;
        }
        FAIL("unknown command or wrong number of arguments: %s", argv[0]);
#undef FAIL
}

static void ctl_reply(Harness *h, GSocketConnection *conn, const char *what, bool ok, const char *text)
{
        GOutputStream *o = g_io_stream_get_output_stream(G_IO_STREAM(conn));
        g_autoptr(GString) reply = g_string_new(ok ? "ok\n" : "error: ");
        g_autoptr(GError) err = NULL;

        g_string_append(reply, text);
        if (h->verbose)
                fprintf(stderr, "fake: ctl %s -> %s", what, reply->str);
        if (!g_output_stream_write_all(o, reply->str, reply->len, NULL, NULL, &err))
                g_warning("control reply: %s", err->message);
        (void) g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
}

/* "wait nvmeN COUNTER N [TIMEOUT_MS]": answered once the counter reaches N, so a test script can
 * wait for the daemon to act without sleeping. Checked every 10 ms from the main loop. */
typedef struct Waiter {
        GSocketConnection *conn;
        Ctrl *ctrl;
        char *counter;
        unsigned target;
        gint64 deadline;
} Waiter;

static void waiter_free(Waiter *w)
{
        g_object_unref(w->conn);
        g_free(w->counter);
        g_free(w);
}

static const char *const wait_counters[] = { "admin", "identify", "get-apst", "set-apst", "errors", "violations",
                                             "read", NULL };

static unsigned counter_locked(const Ctrl *c, const char *name)
{
        const FakeCtrl *m = &c->model;

        if (!strcmp(name, "admin"))
                return m->n_admin;
        if (!strcmp(name, "identify"))
                return m->n_identify;
        if (!strcmp(name, "get-apst"))
                return m->n_get_apst;
        if (!strcmp(name, "set-apst"))
                return m->n_set_apst;
        if (!strcmp(name, "errors"))
                return m->n_errors;
        if (!strcmp(name, "read"))
                return m->n_read;
        return m->n_violations;
}

/* die-in=N: what the kernel prints for a controller that fell off the bus (drivers/nvme/host/pci.c
 * nvme_warn_reset()), as /dev/kmsg records, to $FAKE_NVME_STATE/kmsg when a reader has it open. */
static void die_records(Harness *h, Ctrl *c)
{
        g_autofree char *path = g_build_filename(h->state_dir, "kmsg", NULL);
        g_autofree char *text = NULL;
        gint64 now = g_get_monotonic_time();
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

        if (fd < 0)
                return;   /* nobody reads the kernel log: lost, as kmsg records a stopped daemon misses */
        text = g_strdup_printf(
                "4,%u,%" G_GINT64_FORMAT ",-;nvme %s: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10\n"
                " SUBSYSTEM=nvme\n DEVICE=+nvme:%s\n"
                "4,%u,%" G_GINT64_FORMAT ",-;nvme %s: Does your device have a faulty power saving mode enabled?\n"
                " SUBSYSTEM=nvme\n DEVICE=+nvme:%s\n",
                c->seq * 2, now, c->name, c->name, c->seq * 2 + 1, now, c->name, c->name);
        if (write(fd, text, strlen(text)) < 0)
                fprintf(stderr, "fake: %s: kernel log record not written: %m\n", c->name);
        close(fd);
}

/* The kernel's reset brings a dead controller back after this long (its own table: APSTE 0). */
#define DIE_RESET_US 300000

static void die_tick(Harness *h, Ctrl *c, gint64 now)
{
        FakePowerPos pos;

        if (c->die_ps < 0 || c->removed)
                return;
        if (c->died_us) {
                g_autoptr(GString) out = g_string_new(NULL);
                if (now - c->died_us < DIE_RESET_US)
                        return;
                g_mutex_lock(&h->lock);
                c->died_us = 0;
                g_mutex_unlock(&h->lock);
                (void) ctl_reset(h, c, NULL, out, NULL);
                fprintf(stderr, "fake: %s: reset after its failure in ps%d\n", c->name, c->die_ps);
                return;
        }
        g_mutex_lock(&h->lock);
        fake_ctrl_power_at(&c->model, (uint64_t) now, &pos);
        if (pos.ps == c->die_ps && !pos.entering)
                c->died_us = now;
        g_mutex_unlock(&h->lock);
        if (!c->died_us)
                return;
        fprintf(stderr, "fake: %s: died in ps%d\n", c->name, c->die_ps);
        set_attr(h, c->syspath, "state", "resetting");
        die_records(h, c);
}

static gboolean on_wait_tick(gpointer userdata)
{
        Harness *h = userdata;
        gint64 now = g_get_monotonic_time();

        for (guint i = 0; i < h->ctrls->len; i++)
                die_tick(h, h->ctrls->pdata[i], now);

        for (guint i = 0; i < h->waiters->len;) {
                Waiter *w = h->waiters->pdata[i];
                unsigned v;

                g_mutex_lock(&h->lock);
                v = counter_locked(w->ctrl, w->counter);
                g_mutex_unlock(&h->lock);
                if (v >= w->target || now >= w->deadline) {
                        g_autofree char *text = g_strdup_printf("%s %s=%u%s\n", w->ctrl->name, w->counter, v,
                                                                v >= w->target ? "" : " (timed out)");
                        ctl_reply(h, w->conn, "wait", v >= w->target, text);
                        g_ptr_array_remove_index(h->waiters, i); /* frees w */
                } else
                        i++;
        }
        return G_SOURCE_CONTINUE;
}

static bool ctl_wait(Harness *h, GSocketConnection *conn, char **argv, GError **error)
{
        guint argc = g_strv_length(argv);
        unsigned long target, timeout_ms = 10000;
        Waiter *w;
        Ctrl *c;
        char *end;

        if (argc < 4 || argc > 5 || !g_strv_contains(wait_counters, argv[2])) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "usage: wait nvmeN admin|identify|get-apst|set-apst|errors|violations N [TIMEOUT_MS]");
                return false;
        }
        c = ctrl_find(h, argv[1]);
        if (!c) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "no controller %s", argv[1]);
                return false;
        }
        target = strtoul(argv[3], &end, 10);
        if (!g_ascii_isdigit(argv[3][0]) || *end || target > UINT32_MAX ||
            (argc == 5 && (!g_ascii_isdigit(argv[4][0]) || (timeout_ms = strtoul(argv[4], &end, 10), *end) ||
                           timeout_ms > 3600000))) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "wait: bad number");
                return false;
        }
        w = g_new0(Waiter, 1);
        w->conn = g_object_ref(conn);
        w->ctrl = c;
        w->counter = g_strdup(argv[2]);
        w->target = (unsigned) target;
        w->deadline = g_get_monotonic_time() + (gint64) timeout_ms * 1000;
        g_ptr_array_add(h->waiters, w);
        on_wait_tick(h); /* answer at once if already there */
        return true;
}

/* One request per connection: NUL-separated arguments until EOF; the reply is "ok\n" or
 * "error: MESSAGE\n", then the command's output. Sent only after the command is done. */
static gboolean on_ctl_incoming(GSocketService *service, GSocketConnection *conn, GObject *source, gpointer userdata)
{
        Harness *h = userdata;
        GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
        g_autoptr(GByteArray) req = g_byte_array_new();
        g_autoptr(GPtrArray) args = g_ptr_array_new();
        g_autoptr(GError) err = NULL;
        g_autoptr(GString) out = g_string_new(NULL);
        guint8 buf[4096];
        gssize n;

        /* the client sends its whole request at once: a short blocking read is fine here */
        g_socket_set_timeout(g_socket_connection_get_socket(conn), 5);
        while ((n = g_input_stream_read(in, buf, sizeof(buf), NULL, &err)) > 0) {
                g_byte_array_append(req, buf, (guint) n);
                if (req->len > 65536)
                        break;
        }
        if (n < 0 || req->len > 65536) {
                g_warning("control request: %s", err ? err->message : "too long");
                return TRUE;
        }
        g_byte_array_append(req, (const guint8 *) "", 1);
        for (guint off = 0; off + 1 < req->len; off += (guint) strlen((char *) req->data + off) + 1)
                g_ptr_array_add(args, req->data + off);
        g_ptr_array_add(args, NULL);

        if (args->len > 1 && !strcmp(args->pdata[0], "wait")) {
                /* answered later, by on_wait_tick() */
                if (!ctl_wait(h, conn, (char **) args->pdata, &err)) {
                        g_autofree char *text = g_strconcat(err->message, "\n", NULL);
                        ctl_reply(h, conn, "wait", false, text);
                }
                return TRUE;
        }
        if (ctl_execute(h, (char **) args->pdata, out, &err))
                ctl_reply(h, conn, args->len > 1 ? args->pdata[0] : "?", true, out->str);
        else {
                g_autofree char *text = g_strconcat(err->message, "\n", out->str, NULL);
                ctl_reply(h, conn, args->len > 1 ? args->pdata[0] : "?", false, text);
        }
        return TRUE;
}

/* ---------- main ---------- */

static void on_child_exit(GPid pid, gint status, gpointer userdata)
{
        Harness *h = userdata;

        h->child_status = status;
        h->child_done = true;
        g_spawn_close_pid(pid);
        g_main_loop_quit(h->loop);
}

static void child_setup(gpointer userdata)
{
        /* if the harness dies (umockdev's uevent sender aborts it when a listener's queue is full),
         * COMMAND must not outlive it holding meson's output pipe until the timeout */
        (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
}

static gboolean on_term(gpointer userdata)
{
        Harness *h = userdata;

        /* meson's timeout: pass it on, and report when the child is gone */
        if (!h->child_done)
                kill(h->child, SIGTERM);
        return G_SOURCE_CONTINUE;
}

static int rm_rf(const char *path)
{
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *n;

        if (d)
                while ((n = g_dir_read_name(d))) {
                        g_autofree char *p = g_build_filename(path, n, NULL);
                        if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
                                rm_rf(p);
                        else
                                (void) unlink(p);
                }
        return rmdir(path);
}

static void usage(FILE *f, const char *prog)
{
        fprintf(f,
                "usage: umockdev-wrapper %s [OPTIONS] -- COMMAND [ARGS...]\n"
                "  --ctrl nvmeN[,idctrl=FILE][,pci=VVVV:DDDD][,model=S][,serial=S][,firmware=S][,state=S]\n"
                "         [,transport=pcie|tcp|rdma|fc|loop][,multipath=1][,apsta=0|1]\n"
                "         [,initial-table=FILE|kernel|zero][,apste=0|1]       (repeatable; default: --ctrl nvme0)\n"
                "         [,exlat-scale-percent=P][,exlat-scale-ps=N]   a drive that wakes slower than it says\n"
                "         [,diskseq=N]   the namespace disk's diskseq (a real disk's: the eBPF source counts it)\n"
                "  --no-ctrl                no controller at all\n"
                "  --fault nvmeN:WHAT=RESULT[:WHEN]  WHAT identify|get-apst|set-apst|any, RESULT 0x4002|EIO|...,\n"
                "                           WHEN always|once|after=N (repeatable)\n"
                "  --board NAME             /sys/class/dmi/id/board_name (absent by default)\n"
                "  --dmi KEY=VALUE          any other /sys/class/dmi/id attribute (repeatable)\n"
                "  --nvme-core PARAM=VALUE  /sys/module/nvme_core/parameters/PARAM (repeatable)\n"
                "  --cpufreq N              fake cpufreq for N CPUs; --cpufreq-shared: cpu0+cpu1 share policy0;\n"
                "  --cpufreq-driver intel_pstate|acpi-cpufreq   (default intel_pstate)\n"
                "  --power-supply NAME,type=T[,online=N][,status=S][,scope=S][,capacity=N]\n"
                "                           /sys/class/power_supply/NAME (repeatable)\n"
                "  --state-dir DIR          state files and control socket (default: a temp dir, removed at exit)\n"
                "  --allow-any              disable the allow-list oracle\n"
                "  --allow-read             the oracle accepts a one-block NVMe Read (calibrate tests only)\n"
                "  --preload LIB            extra preload before umockdev's (default $FAKE_EXTRA_PRELOAD, else the\n"
                "                           built sysfs_extras)\n"
                "  --verbose                echo commands, uevents and control requests to stderr\n",
                prog);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "ctrl", required_argument, NULL, 'c' },
                { "no-ctrl", no_argument, NULL, 'N' },
                { "fault", required_argument, NULL, 'f' },
                { "board", required_argument, NULL, 'b' },
                { "dmi", required_argument, NULL, 'd' },
                { "nvme-core", required_argument, NULL, 'm' },
                { "cpufreq", required_argument, NULL, 'C' },
                { "cpufreq-shared", no_argument, NULL, 'S' },
                { "cpufreq-driver", required_argument, NULL, 'D' },
                { "power-supply", required_argument, NULL, 'P' },
                { "state-dir", required_argument, NULL, 's' },
                { "allow-any", no_argument, NULL, 'a' },
                { "allow-read", no_argument, NULL, 'R' },
                { "preload", required_argument, NULL, 'p' },
                { "verbose", no_argument, NULL, 'v' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        g_autoptr(GPtrArray) ctrl_specs = g_ptr_array_new(), faults = g_ptr_array_new(), dmi = g_ptr_array_new(),
                             params = g_ptr_array_new(), supplies = g_ptr_array_new();
        g_autoptr(GError) err = NULL;
        const char *preload = getenv("FAKE_EXTRA_PRELOAD"), *cpufreq_driver = "intel_pstate";
        g_autofree char *board = NULL, *dmi_board = NULL;
        unsigned ncpu = 0;
        bool no_ctrl = false, cpufreq_shared = false;
        Harness h = { .child = -1 };
        g_auto(GStrv) env = NULL;
        g_autofree char *ld_preload = NULL;
        int opt, rc;

        if (!preload || !*preload)
                preload = FAKE_PRELOAD_DEFAULT;
        while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'c':
                        g_ptr_array_add(ctrl_specs, optarg);
                        break;
                case 'N':
                        no_ctrl = true;
                        break;
                case 'f':
                        g_ptr_array_add(faults, optarg);
                        break;
                case 'b':
                        g_free(board);
                        board = g_strdup(optarg);
                        break;
                case 'd':
                        if (!strchr(optarg, '=') || strchr(optarg, '/')) {
                                fprintf(stderr, "--dmi %s: expected KEY=VALUE\n", optarg);
                                return EXIT_USAGE;
                        }
                        g_ptr_array_add(dmi, optarg);
                        break;
                case 'm':
                        if (!strchr(optarg, '=') || strchr(optarg, '/')) {
                                fprintf(stderr, "--nvme-core %s: expected PARAM=VALUE\n", optarg);
                                return EXIT_USAGE;
                        }
                        g_ptr_array_add(params, optarg);
                        break;
                case 'C': {
                        char *end;
                        unsigned long v = strtoul(optarg, &end, 10);
                        if (!g_ascii_isdigit(*optarg) || *end || v < 1 || v > 256) {
                                fprintf(stderr, "--cpufreq %s: expected 1..256\n", optarg);
                                return EXIT_USAGE;
                        }
                        ncpu = (unsigned) v;
                        break;
                }
                case 'S':
                        cpufreq_shared = true;
                        break;
                case 'D':
                        if (strcmp(optarg, "intel_pstate") && strcmp(optarg, "acpi-cpufreq")) {
                                fprintf(stderr, "--cpufreq-driver: intel_pstate or acpi-cpufreq\n");
                                return EXIT_USAGE;
                        }
                        cpufreq_driver = optarg;
                        break;
                case 'P':
                        g_ptr_array_add(supplies, optarg);
                        break;
                case 's':
                        h.state_dir = g_strdup(optarg);
                        break;
                case 'a':
                        h.allow_any = true;
                        break;
                case 'R':
                        h.allow_read = true;
                        break;
                case 'p':
                        preload = optarg;
                        break;
                case 'v':
                        h.verbose = true;
                        break;
                case 'h':
                        usage(stdout, argv[0]);
                        return 0;
                default:
                        usage(stderr, argv[0]);
                        return EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                usage(stderr, argv[0]);
                return EXIT_USAGE;
        }
        if (cpufreq_shared && ncpu < 2) {
                fprintf(stderr, "--cpufreq-shared needs --cpufreq 2 or more\n");
                return EXIT_USAGE;
        }
        if (!no_ctrl && ctrl_specs->len == 0)
                g_ptr_array_add(ctrl_specs, (char *) "nvme0");
        if (access(preload, R_OK) < 0) {
                fprintf(stderr, "fake: preload %s: %m\n", preload);
                return EXIT_SETUP;
        }

        h.tb = umockdev_testbed_new();
        h.sys = umockdev_testbed_get_sys_dir(h.tb);
        g_mutex_init(&h.lock);
        h.ctrls = g_ptr_array_new_with_free_func((GDestroyNotify) ctrl_free);
        h.violations = g_ptr_array_new_with_free_func(g_free);
        h.handlers = g_ptr_array_new_with_free_func(g_object_unref);
        h.waiters = g_ptr_array_new_with_free_func((GDestroyNotify) waiter_free);
        h.supplies = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        /* add_device() checks parents through the redirected /sys, so the harness itself must run under
         * the preload; in_mock_environment() caches its answer: ask only after Testbed.new() */
        if (!umockdev_in_mock_environment()) {
                fprintf(stderr, "fake: run me under umockdev-wrapper\n");
                rc = EXIT_SETUP;
                goto out;
        }
        if (h.state_dir) {
                if (g_mkdir_with_parents(h.state_dir, 0755) < 0) {
                        fprintf(stderr, "fake: %s: %m\n", h.state_dir);
                        rc = EXIT_SETUP;
                        goto out;
                }
        } else {
                h.state_dir = g_dir_make_tmp("fake-nvme-XXXXXX", &err);
                if (!h.state_dir) {
                        fprintf(stderr, "fake: %s\n", err->message);
                        rc = EXIT_SETUP;
                        goto out;
                }
                h.state_dir_is_temp = true;
        }

        /* sysfs */
        for (guint i = 0; i < ctrl_specs->len; i++) {
                Ctrl *c = ctrl_parse(&h, ctrl_specs->pdata[i], &err);
                if (!c) {
                        fprintf(stderr, "fake: --ctrl %s: %s\n", (char *) ctrl_specs->pdata[i], err->message);
                        rc = EXIT_USAGE;
                        goto out;
                }
                if (ctrl_find(&h, c->name)) {
                        fprintf(stderr, "fake: --ctrl %s given twice\n", c->name);
                        ctrl_free(c);
                        rc = EXIT_USAGE;
                        goto out;
                }
                g_ptr_array_add(h.ctrls, c);
                if (!ctrl_add(&h, c, &err)) {
                        fprintf(stderr, "fake: %s: %s\n", c->name, err->message);
                        rc = EXIT_SETUP;
                        goto out;
                }
        }
        for (guint i = 0; i < faults->len; i++) {
                const char *spec = faults->pdata[i], *colon = strchr(spec, ':');
                g_autofree char *name = colon ? g_strndup(spec, (gsize) (colon - spec)) : NULL;
                Ctrl *c = name ? ctrl_find(&h, name) : NULL;
                FakeFault f;
                if (!c || fake_fault_parse(colon + 1, &f) < 0 || fake_ctrl_add_fault(&c->model, &f) < 0) {
                        fprintf(stderr, "fake: --fault %s: expected nvmeN:WHAT=RESULT[:WHEN] for a --ctrl\n", spec);
                        rc = EXIT_USAGE;
                        goto out;
                }
        }
        if (board) {
                dmi_board = g_strconcat("board_name=", board, NULL);
                g_ptr_array_add(dmi, dmi_board);
        }
        add_dmi(&h, dmi);
        {
                /* nvme_core's parameters with their defaults (doc/kernel-apst.md), then overrides */
                const char *defaults[] = { "default_ps_max_latency_us=100000", "apst_primary_timeout_ms=100",
                                           "apst_secondary_timeout_ms=2000", "apst_primary_latency_tol_us=15000",
                                           "apst_secondary_latency_tol_us=100000", "force_apst=N",
                                           "multipath=Y", NULL };
                for (const char **d = defaults; *d; d++)
                        g_ptr_array_insert(params, 0, (char *) *d);
                for (guint i = 0; i < params->len; i++) {
                        const char *kv = params->pdata[i];
                        g_autofree char *rel = g_strdup_printf("module/nvme_core/parameters/%.*s",
                                                               (int) strcspn(kv, "="), kv);
                        g_autofree char *val = g_strconcat(strchr(kv, '=') + 1, "\n", NULL);
                        sys_write(&h, rel, val);
                }
        }
        if (ncpu)
                add_cpufreq(&h, ncpu, cpufreq_shared, cpufreq_driver);
        for (guint i = 0; i < supplies->len; i++)
                if (!supply_add(&h, supplies->pdata[i], &err)) {
                        fprintf(stderr, "fake: --power-supply %s: %s\n", (char *) supplies->pdata[i], err->message);
                        rc = EXIT_USAGE;
                        goto out;
                }

        /* control socket */
        h.ctl_path = g_build_filename(h.state_dir, "ctl.sock", NULL);
        (void) unlink(h.ctl_path);
        {
                g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(h.ctl_path);
                h.ctl = g_socket_service_new();
                if (!g_socket_listener_add_address(G_SOCKET_LISTENER(h.ctl), addr, G_SOCKET_TYPE_STREAM,
                                                   G_SOCKET_PROTOCOL_DEFAULT, NULL, NULL, &err)) {
                        fprintf(stderr, "fake: control socket %s: %s\n", h.ctl_path, err->message);
                        rc = EXIT_SETUP;
                        goto out;
                }
                g_signal_connect(h.ctl, "incoming", G_CALLBACK(on_ctl_incoming), &h);
                g_socket_service_start(h.ctl);
        }

        /* The eBPF source (a --ctrl with diskseq=): libbpf reads the kernel's BTF and the possible
         * CPUs under /sys, which the preload redirects here: point them at the real files (the
         * kernel follows an absolute symlink from the real root). */
        for (guint i = 0; i < h.ctrls->len; i++) {
                g_autofree char *possible = g_build_filename(h.sys, "devices/system/cpu/possible", NULL);

                if (!((Ctrl *) h.ctrls->pdata[i])->diskseq)
                        continue;
                sys_symlink(&h, "/sys/kernel/btf/vmlinux", "kernel/btf/vmlinux");
                if (!g_file_test(possible, G_FILE_TEST_EXISTS))
                        sys_symlink(&h, "/sys/devices/system/cpu/possible", "devices/system/cpu/possible");
                break;
        }

        /* child: the testbed's environment (UMOCKDEV_DIR), our preload before umockdev's */
        env = g_get_environ();
        {
                const char *old = g_environ_getenv(env, "LD_PRELOAD");
                ld_preload = old && *old ? g_strconcat(preload, ":", old, NULL) : g_strdup(preload);
        }
        env = g_environ_setenv(env, "LD_PRELOAD", ld_preload, TRUE);
        env = g_environ_setenv(env, "FAKE_NVME_STATE", h.state_dir, TRUE);
        env = g_environ_setenv(env, "FAKE_NVME_CTL", h.ctl_path, TRUE);
        env = g_environ_setenv(env, "FAKE_NVME_CTL_PROG", FAKE_CTL_DEFAULT, TRUE);

        h.loop = g_main_loop_new(NULL, FALSE);
        if (!g_spawn_async(NULL, argv + optind, env,
                           G_SPAWN_SEARCH_PATH_FROM_ENVP | G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_CHILD_INHERITS_STDIN,
                           child_setup, NULL, &h.child, &err)) {
                fprintf(stderr, "fake: cannot run %s: %s\n", argv[optind], err->message);
                rc = EXIT_SETUP;
                goto out;
        }
        g_child_watch_add(h.child, on_child_exit, &h);
        guint wait_tick = g_timeout_add(10, on_wait_tick, &h);
        guint sig_term = g_unix_signal_add(SIGTERM, on_term, &h), sig_int = g_unix_signal_add(SIGINT, on_term, &h);
        g_main_loop_run(h.loop);
        g_source_remove(wait_tick);
        g_source_remove(sig_term);
        g_source_remove(sig_int);

        if (WIFEXITED(h.child_status))
                rc = WEXITSTATUS(h.child_status);
        else if (WIFSIGNALED(h.child_status))
                rc = 128 + WTERMSIG(h.child_status);
        else
                rc = 1;

        /* the report; lock: a grandchild the command left behind may still send ioctls */
        fflush(stdout);
        g_mutex_lock(&h.lock);
        for (guint i = 0; i < h.ctrls->len; i++) {
                Ctrl *c = h.ctrls->pdata[i];
                fake_ctrl_report(&c->model, c->name, stdout);
                if (c->removed)
                        printf("fake: %s: removed\n", c->name);
        }
        printf("fake: violations: %u%s\n", h.violations->len, h.allow_any ? " (--allow-any: oracle off)" : "");
        for (guint i = 0; i < h.violations->len; i++)
                printf("fake: VIOLATION %s\n", (char *) h.violations->pdata[i]);
        if (h.violations->len > 0 && (rc == 0 || rc == 77))
                rc = 1;
        g_mutex_unlock(&h.lock);
        printf("fake: exit %d (command %s %d)\n", rc, WIFEXITED(h.child_status) ? "exit" : "signal",
               WIFEXITED(h.child_status) ? WEXITSTATUS(h.child_status) : WTERMSIG(h.child_status));
        fflush(stdout);

out:
        while (h.waiters->len > 0) { /* COMMAND is gone; a grandchild may still wait */
                Waiter *w = h.waiters->pdata[0];
                ctl_reply(&h, w->conn, "wait", false, "harness exiting\n");
                g_ptr_array_remove_index(h.waiters, 0);
        }
        g_ptr_array_free(h.waiters, TRUE);
        if (h.ctl) {
                g_socket_service_stop(h.ctl);
                g_socket_listener_close(G_SOCKET_LISTENER(h.ctl));
                g_object_unref(h.ctl);
        }
        if (h.ctl_path)
                (void) unlink(h.ctl_path);
        for (guint i = 0; i < h.ctrls->len; i++) {
                Ctrl *c = h.ctrls->pdata[i];
                g_autofree char *devnode = g_strdup_printf("/dev/%s", c->name);
                if (c->attached)
                        (void) umockdev_testbed_detach_ioctl(h.tb, devnode, NULL);
                if (c->ns_attached) {
                        g_autofree char *nsnode = g_strdup_printf("/dev/%sn1", c->name);
                        (void) umockdev_testbed_detach_ioctl(h.tb, nsnode, NULL);
                }
        }
        g_ptr_array_free(h.handlers, TRUE);
        g_ptr_array_free(h.ctrls, TRUE);
        g_ptr_array_free(h.violations, TRUE);
        g_hash_table_unref(h.supplies);
        g_clear_pointer(&h.loop, g_main_loop_unref);
        g_object_unref(h.tb);
        if (h.state_dir && h.state_dir_is_temp)
                (void) rm_rf(h.state_dir);
        g_free(h.state_dir);
        g_free(h.ctl_path);
        g_free(h.sys);
        g_mutex_clear(&h.lock);
        return rc;
}
