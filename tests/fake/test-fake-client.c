/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fake-client: drives fake-nvme-tb the way nvme-apstd will, for the harness's own tests.
 *
 *   test-fake-client setget NAME...            Identify, Set Features 0x0C, Get Features back; check the
 *                                              table, the state file and that sysfs matches Identify
 *   test-fake-client expect NAME OP RESULT...  OP identify|get|set; RESULT 0, an NVMe status or an errno
 *                                              name; triples repeat, run in order
 *   test-fake-client forbidden NAME KIND       send one command the allow-list must reject:
 *                                              fid2 (Set Features FID 0x02), sv (0x0C with Save),
 *                                              nodata (0x0C with no table), log (Get Log Page)
 *   test-fake-client reset NAME                sd-device monitor sees the reset uevent; table restored
 *   test-fake-client add-remove NAME           add and remove uevents; ioctls on the old fd get ENODEV
 *   test-fake-client stall NAME N              never read the monitor while N uevents are sent
 *   test-fake-client vanish NAME               ask for an admin command over umockdev's ioctl socket, then
 *                                              close it instead of answering the harness's read of the
 *                                              command: what a client killed mid-ioctl does
 *   test-fake-client lying NAME                arms get-apst=garble:once and set-apst=ignore:once at run
 *                                              time and checks what each answers
 *   test-fake-client threads ROUNDS NAME...    one thread per controller, each ROUNDS times: open, Identify,
 *                                              close, all at once, as the daemon's per-controller steps do;
 *                                              every Identify must succeed and come from the controller
 *                                              opened, by its serial (umockdev's unlocked fd table, README.md)
 *
 * Uses only libnvme's generic nvme_{identify,set_features,get_features}() (libnvme 1.3's typed APST
 * helpers are broken, doc/platform.md), open() on /dev and sd_device_enumerator_allow_uninitialized(), as
 * the harness README tells the daemon to. Exit 0 when every check holds, 1 otherwise.
 * Covers: the harness itself: tests/fake/fake-nvme-tb.c, tests/fake/fakectrl.c.
 */

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <systemd/sd-device.h>
#include <systemd/sd-event.h>
#include <libnvme.h>

#include "check.h"
#include "fakectrl.h"

#define _cleanup_(f) __attribute__((cleanup(f)))

static int open_ctrl(const char *name)
{
        char path[64];

        /* open(), not openat(): umockdev attaches the ioctl handler only on open() (README) */
        snprintf(path, sizeof(path), "/dev/%s", name);
        return open(path, O_RDWR | O_CLOEXEC);
}

static int do_identify(int fd, struct nvme_id_ctrl *id)
{
        struct nvme_identify_args args = {
                .args_size = sizeof(args), .fd = fd, .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .cns = NVME_IDENTIFY_CNS_CTRL, .nsid = NVME_NSID_NONE, .data = id,
                .csi = NVME_CSI_NVM,
        };
        return nvme_identify(&args);
}

static int do_set(int fd, uint32_t apste, const uint64_t e[32], bool save, uint8_t fid, uint32_t len)
{
        uint64_t le[32];
        __u32 result = 0;

        for (int i = 0; i < 32; i++)
                le[i] = htole64(e[i]);
        struct nvme_set_features_args args = {
                .args_size = sizeof(args), .fd = fd, .timeout = NVME_DEFAULT_IOCTL_TIMEOUT, .fid = fid,
                .cdw11 = apste, .save = save, .data_len = len, .data = len ? le : NULL, .result = &result,
        };
        return nvme_set_features(&args);
}

static int do_get(int fd, uint32_t *apste, uint64_t e[32])
{
        uint64_t le[32] = {};
        __u32 result = 0;
        struct nvme_get_features_args args = {
                .args_size = sizeof(args), .fd = fd, .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .fid = NVME_FEAT_FID_AUTO_PST, .sel = NVME_GET_FEATURES_SEL_CURRENT, .data_len = sizeof(le),
                .data = le, .result = &result,
        };
        int r = nvme_get_features(&args);

        if (r == 0) {
                *apste = result & 1;
                for (int i = 0; i < 32; i++)
                        e[i] = le64toh(le[i]);
        }
        return r;
}

/* An Identify string field (space padded, not NUL terminated) as the kernel's sysfs shows it:
 * "%.*s\n", the padding kept. */
static void id_string_sysfs(char *buf, size_t size, const char *field, size_t len)
{
        snprintf(buf, size, "%.*s\n", (int) strnlen(field, len), field);
}

static char *read_text(const char *path)
{
        static char buf[8192];
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return NULL;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return NULL;
        buf[n] = 0;
        return buf;
}

static int cmd_setget(const char *name)
{
        struct nvme_id_ctrl id;
        uint64_t e[32] = {}, got[32];
        uint32_t apste = 0;
        char path[256], want[64];
        const char *s;
        int fd, r, target = -1;

        fd = open_ctrl(name);
        CHECK_SAY(fd >= 0, "%s: open /dev/%s", name, name);
        if (fd < 0)
                return 1;
        r = do_identify(fd, &id);
        CHECK_SAY(r == 0, "%s: identify -> %d", name, r);
        if (r != 0)
                return close(fd), 1;

        /* sysfs must show the Identify strings as the kernel does ("%.*s\n", space padding kept) */
        snprintf(path, sizeof(path), "/sys/class/nvme/%s/model", name);
        id_string_sysfs(want, sizeof(want), id.mn, sizeof(id.mn));
        s = read_text(path);
        CHECK_SAY(s && !strcmp(s, want), "%s: sysfs model '%s' = Identify mn", name, s ? s : "(none)");
        snprintf(path, sizeof(path), "/sys/class/nvme/%s/firmware_rev", name);
        id_string_sysfs(want, sizeof(want), id.fr, sizeof(id.fr));
        s = read_text(path);
        CHECK_SAY(s && !strcmp(s, want), "%s: sysfs firmware_rev = Identify fr", name);
        snprintf(path, sizeof(path), "/sys/class/nvme/%s/device/vendor", name);
        snprintf(want, sizeof(want), "0x%04x\n", le16toh(id.vid));
        s = read_text(path);
        CHECK_SAY(s && !strcmp(s, want), "%s: PCI vendor %s", name, want);

        /* ps(i) -> the shallowest non-operational state, ITPT 250 + i ms, for each operational state */
        for (int i = 0; i <= id.npss; i++)
                if (id.psd[i].flags & NVME_PSD_FLAGS_NOPS) {
                        target = i;
                        break;
                }
        if (target <= 0) {
                /* nothing to program (e.g. Amazon EBS): any ITPS is refused */
                printf("info: %s: no non-operational state\n", name);
                e[0] = (1ULL << 3) | (100ULL << 8);
                r = do_set(fd, 1, e, false, NVME_FEAT_FID_AUTO_PST, 256);
                CHECK_SAY(r == 0x4002, "%s: table naming ps1 refused with 0x4002 (got %d)", name, r);
                close(fd);
                return 0;
        }
        for (int i = 0; i < target; i++)
                e[i] = ((uint64_t) target << 3) | ((uint64_t) (250 + i) << 8);
        r = do_set(fd, 1, e, false, NVME_FEAT_FID_AUTO_PST, 256);
        CHECK_SAY(r == 0, "%s: set features 0x0C -> %d", name, r);
        r = do_get(fd, &apste, got);
        CHECK_SAY(r == 0 && apste == 1 && !memcmp(e, got, sizeof(e)),
                  "%s: get features returns the table (r=%d apste=%u)", name, r, apste);

        /* the state file says the same */
        snprintf(path, sizeof(path), "%s/%s.table", getenv("FAKE_NVME_STATE"), name);
        s = read_text(path);
        if (s) {
                uint64_t fe[32];
                uint32_t fa;
                CHECK_SAY(fake_table_parse(s, &fa, fe) == 0 && fa == 1 && !memcmp(fe, e, sizeof(e)),
                          "%s: %s matches", name, path);
        } else
                CHECK_SAY(false, "%s: %s readable", name, path);

        /* an invalid table (ITPS naming operational ps0) is refused like a real controller does */
        e[0] = (0ULL << 3) | (100ULL << 8);
        r = do_set(fd, 1, e, false, NVME_FEAT_FID_AUTO_PST, 256);
        CHECK_SAY(r == 0x4002, "%s: ITPS=ps0 (operational) refused with 0x4002 (got %d)", name, r);
        r = do_get(fd, &apste, got);
        CHECK_SAY(r == 0 && got[0] != e[0], "%s: refused table not stored", name);
        close(fd);
        return 0;
}

static bool parse_result(const char *s, int *status, int *err)
{
        FakeFault f;
        char spec[64];

        *status = *err = 0;
        if (!strcmp(s, "0"))
                return true;
        snprintf(spec, sizeof(spec), "any=%s", s);
        if (fake_fault_parse(spec, &f) < 0)
                return false;
        *status = f.nvme_status;
        *err = f.err;
        return true;
}

static int cmd_expect(int argc, char **argv)
{
        const char *name = argv[0];
        int fd = open_ctrl(name);

        CHECK_SAY(fd >= 0, "%s: open", name);
        if (fd < 0)
                return 1;
        for (int i = 1; i + 1 < argc; i += 2) {
                struct nvme_id_ctrl id;
                uint64_t e[32] = { (3ULL << 3) | (100ULL << 8) };
                uint32_t apste;
                int status, err, r;

                if (!parse_result(argv[i + 1], &status, &err)) {
                        printf("bad result %s\n", argv[i + 1]);
                        return 2;
                }
                errno = 0;
                if (!strcmp(argv[i], "identify"))
                        r = do_identify(fd, &id);
                else if (!strcmp(argv[i], "get"))
                        r = do_get(fd, &apste, e);
                else if (!strcmp(argv[i], "set"))
                        r = do_set(fd, 1, e, false, NVME_FEAT_FID_AUTO_PST, 256);
                else {
                        printf("bad op %s\n", argv[i]);
                        return 2;
                }
                if (err)
                        CHECK_SAY(r == -1 && errno == err, "%s: %s -> -1 errno %s (got %d, %s)", name, argv[i],
                                  argv[i + 1], r, strerror(errno));
                else
                        CHECK_SAY(r == status, "%s: %s -> %s (got %d = 0x%x, errno %s)", name, argv[i], argv[i + 1], r,
                                  r, strerror(errno));
        }
        close(fd);
        return 0;
}

/* The `garble` and `ignore` fault results, armed here with fake-nvme-ctl at run time:
 * get-apst=garble:once makes one Get Features answer another table, set-apst=ignore:once makes one
 * Set Features succeed without storing anything. */
static int cmd_lying(const char *name)
{
        uint64_t t1[32] = { (3ULL << 3) | (100ULL << 8), (4ULL << 3) | (2000ULL << 8) }, t2[32] = { (4ULL << 3) | (50ULL << 8) };
        uint64_t got[32];
        uint32_t apste;
        char cmd[256];
        int fd = open_ctrl(name), r;

        CHECK_SAY(fd >= 0, "%s: open", name);
        if (fd < 0)
                return 1;
        r = do_set(fd, 1, t1, false, NVME_FEAT_FID_AUTO_PST, 256);
        CHECK_SAY(r == 0, "%s: set table 1 (%d)", name, r);
        snprintf(cmd, sizeof(cmd), "\"$FAKE_NVME_CTL_PROG\" fault %s get-apst=garble:once", name);
        CHECK_SAY(system(cmd) == 0, "%s", cmd);
        r = do_get(fd, &apste, got);
        CHECK_SAY(r == 0 && apste == 1 && got[0] == (t1[0] ^ 0x100) && !memcmp(got + 1, t1 + 1, sizeof(got) - 8),
                  "%s: garbled get: entry[0] 0x%llx = table 1's with ITPT bit 0 flipped, the rest intact", name,
                  (unsigned long long) got[0]);
        r = do_get(fd, &apste, got);
        CHECK_SAY(r == 0 && !memcmp(got, t1, sizeof(got)), "%s: next get answers table 1 again", name);
        snprintf(cmd, sizeof(cmd), "\"$FAKE_NVME_CTL_PROG\" fault %s set-apst=ignore:once", name);
        CHECK_SAY(system(cmd) == 0, "%s", cmd);
        r = do_set(fd, 1, t2, false, NVME_FEAT_FID_AUTO_PST, 256);
        CHECK_SAY(r == 0, "%s: ignored set answers success (%d)", name, r);
        r = do_get(fd, &apste, got);
        CHECK_SAY(r == 0 && !memcmp(got, t1, sizeof(got)), "%s: ignored set stored nothing", name);
        r = do_set(fd, 1, t2, false, NVME_FEAT_FID_AUTO_PST, 256);
        r |= do_get(fd, &apste, got);
        CHECK_SAY(r == 0 && !memcmp(got, t2, sizeof(got)), "%s: the next set is stored", name);
        close(fd);
        return 0;
}

static int cmd_forbidden(const char *name, const char *kind)
{
        uint64_t e[32] = {};
        int fd = open_ctrl(name), r;

        if (fd < 0)
                return 1;
        if (!strcmp(kind, "fid2"))
                r = do_set(fd, 2, e, false, NVME_FEAT_FID_POWER_MGMT, 0);
        else if (!strcmp(kind, "sv"))
                r = do_set(fd, 0, e, true, NVME_FEAT_FID_AUTO_PST, 256);
        else if (!strcmp(kind, "nodata")) /* what libnvme 1.3's nvme_set_features_auto_pst() sends */
                r = do_set(fd, 1, e, false, NVME_FEAT_FID_AUTO_PST, 0);
        else if (!strcmp(kind, "log")) {
                uint8_t buf[512];
                r = nvme_get_log_smart(fd, NVME_NSID_ALL, false, (struct nvme_smart_log *) buf);
        } else
                return 2;
        printf("forbidden %s sent: result %d\n", kind, r);
        close(fd);
        return 0; /* the harness, not this client, must fail the run */
}

/* Speaks umockdev's ioctl socket protocol by hand (the preload library would answer the read), so the
 * client "dies" at the one point a SIGKILL cannot be aimed at: after the harness asked for the
 * command's bytes, before they were sent. The harness must not take what it reads then for a command. */
static int cmd_vanish(const char *name)
{
        struct nvme_passthru_cmd cmd = { .opcode = nvme_admin_identify, .cdw10 = NVME_IDENTIFY_CNS_CTRL };
        unsigned long req[3] = { 1 /* ioctl */, NVME_IOCTL_ADMIN_CMD, (unsigned long) &cmd };
        const char *dir = getenv("UMOCKDEV_DIR");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (!dir)
                return 2;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ioctl//dev/%s", dir, name);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK_SAY(fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0, "%s: connected to %s", name,
                  sa.sun_path);
        if (n_failed)
                return 1;
        CHECK_SAY(send(fd, req, sizeof(req), MSG_NOSIGNAL) == (ssize_t) sizeof(req), "%s: ioctl asked for", name);
        CHECK_SAY(recv(fd, req, sizeof(req), MSG_WAITALL) == (ssize_t) sizeof(req) && req[0] == 5 /* READ_MEM */ &&
                      req[1] == (unsigned long) &cmd && req[2] == sizeof(cmd),
                  "%s: the harness reads the command's %zu bytes", name, sizeof(cmd));
        close(fd);
        printf("%s: gone without answering\n", name);
        return 0;
}

typedef struct Wait {
        const char *sysname, *action, *prop, *value;
        bool seen;
        unsigned count;     /* matching events: the kernel sends exactly one */
        unsigned connected; /* change events with NVME_EVENT=connected on sysname, whatever awaited */
} Wait;

static int on_uevent(sd_device_monitor *m, sd_device *d, void *userdata)
{
        Wait *w = userdata;
        const char *sysname = NULL, *value = NULL;
        sd_device_action_t a = _SD_DEVICE_ACTION_INVALID;
        char astr[16] = "?";

        (void) sd_device_get_sysname(d, &sysname);
        if (sd_device_get_action(d, &a) >= 0) {
                static const char *const names[] = { "add", "remove", "change", "move", "online", "offline",
                                                     "bind", "unbind" };
                if (a >= 0 && (size_t) a < sizeof(names) / sizeof(names[0]))
                        snprintf(astr, sizeof(astr), "%s", names[a]);
        }
        if (sysname && !strcmp(sysname, w->sysname) && !strcmp(astr, "change") &&
            sd_device_get_property_value(d, "NVME_EVENT", &value) >= 0 && !strcmp(value, "connected"))
                w->connected++;
        value = NULL;
        if (w->prop)
                (void) sd_device_get_property_value(d, w->prop, &value);
        printf("uevent: %s %s %s=%s\n", astr, sysname ? sysname : "?", w->prop ? w->prop : "-", value ? value : "-");
        if (sysname && !strcmp(sysname, w->sysname) && !strcmp(astr, w->action) &&
            (!w->prop || (value && !strcmp(value, w->value)))) {
                w->seen = true;
                w->count++;
        }
        return 0;
}

/* Run the control command, then wait (5 s) for the uevent. The harness replies only after emitting
 * it, so the event is already queued on the monitor by the time the control command returns. */
static bool ctl_and_wait(sd_event *e, const char *ctl_args, Wait *w)
{
        char cmd[512];
        uint64_t deadline;
        int r;

        w->seen = false;
        w->count = w->connected = 0;
        snprintf(cmd, sizeof(cmd), "\"$FAKE_NVME_CTL_PROG\" %s", ctl_args);
        r = system(cmd);
        CHECK_SAY(r == 0, "fake-nvme-ctl %s", ctl_args);
        (void) sd_event_now(e, CLOCK_MONOTONIC, &deadline);
        deadline += 5 * 1000000;
        for (;;) {
                uint64_t now;
                (void) sd_event_now(e, CLOCK_MONOTONIC, &now);
                if (w->seen || now >= deadline)
                        break;
                r = sd_event_run(e, deadline - now);
                if (r < 0)
                        break;
        }
        /* drain 200 ms more: a duplicate event is a harness bug */
        while (sd_event_run(e, 200000) > 0)
                ;
        CHECK_SAY(w->seen && w->count == 1, "uevent %s on %s seen exactly once (%u)", w->action, w->sysname, w->count);
        return w->seen;
}

static int count_nvme(void)
{
        _cleanup_(sd_device_enumerator_unrefp) sd_device_enumerator *en = NULL;
        int n = 0;

        if (sd_device_enumerator_new(&en) < 0)
                return -1;
        /* no udev database under umockdev: without this, devices with a /dev node are skipped (doc/sysfs.md) */
        (void) sd_device_enumerator_allow_uninitialized(en);
        (void) sd_device_enumerator_add_match_subsystem(en, "nvme", true);
        for (sd_device *d = sd_device_enumerator_get_device_first(en); d; d = sd_device_enumerator_get_device_next(en))
                n++;
        return n;
}

static sd_device_monitor *new_monitor(sd_event *e, Wait *w)
{
        sd_device_monitor *mon = NULL;

        if (!e || sd_device_monitor_new(&mon) < 0)
                return NULL;
        if (sd_device_monitor_filter_add_match_subsystem_devtype(mon, "nvme", NULL) < 0 ||
            sd_device_monitor_attach_event(mon, e) < 0 || sd_device_monitor_start(mon, on_uevent, w) < 0)
                return sd_device_monitor_unref(mon);
        return mon;
}

static sd_event *new_event(void)
{
        sd_event *e = NULL;

        return sd_event_new(&e) < 0 ? NULL : e;
}

static int cmd_reset(const char *name)
{
        Wait w = { .sysname = name, .action = "change", .prop = "NVME_EVENT", .value = "connected" };
        _cleanup_(sd_event_unrefp) sd_event *e = new_event();
        _cleanup_(sd_device_monitor_unrefp) sd_device_monitor *mon = new_monitor(e, &w);
        uint64_t t[32], zero[32] = {};
        uint32_t apste = 9;
        char path[128], args[128];
        const char *s;
        int fd = open_ctrl(name), r;

        CHECK_SAY(fd >= 0 && mon, "%s: open + monitor", name);
        if (fd < 0 || !mon)
                return 1;
        r = do_get(fd, &apste, t);
        CHECK_SAY(r == 0 && apste == 1, "%s: before reset APSTE=1 (initial-table=kernel)", name);
        CHECK_SAY(count_nvme() >= 1, "sd_device_enumerator sees nvme controllers (%d)", count_nvme());
        snprintf(args, sizeof(args), "reset %s", name);
        ctl_and_wait(e, args, &w);
        r = do_get(fd, &apste, t);
        CHECK_SAY(r == 0 && apste == 0 && !memcmp(t, zero, sizeof(t)), "%s: after reset APSTE=0, all-zero table", name);
        snprintf(path, sizeof(path), "/sys/class/nvme/%s/state", name);
        s = read_text(path);
        CHECK_SAY(s && !strcmp(s, "live\n"), "%s: state live after reset", name);
        snprintf(path, sizeof(path), "/sys/class/nvme/%s/uevent", name);
        s = read_text(path);
        CHECK_SAY(s && !strstr(s, "NVME_EVENT"), "%s: NVME_EVENT only in the event, not in the uevent file", name);
        close(fd);
        return 0;
}

static int cmd_add_remove(const char *name)
{
        Wait w = { .sysname = name, .action = "add" };
        _cleanup_(sd_event_unrefp) sd_event *e = new_event();
        _cleanup_(sd_device_monitor_unrefp) sd_device_monitor *mon = new_monitor(e, &w);
        struct nvme_id_ctrl id;
        char args[128], path[128];
        int before = count_nvme(), fd, r;

        CHECK_SAY(mon != NULL, "monitor");
        if (!mon)
                return 1;
        snprintf(args, sizeof(args), "add %s,model=hotplugged", name);
        ctl_and_wait(e, args, &w);
        /* the kernel announces a new controller in state "new", then a change with NVME_EVENT=connected
         * once it is live: a daemon must wait for that before sending admin commands */
        CHECK_SAY(w.connected == 1, "%s: change NVME_EVENT=connected after the add (%u)", name, w.connected);
        snprintf(path, sizeof(path), "/sys/class/nvme/%s/state", name);
        CHECK_SAY(!strcmp(read_text(path) ? read_text(path) : "", "live\n"), "%s: state live", name);
        CHECK_SAY(count_nvme() == before + 1, "enumerator: %d -> %d controllers", before, count_nvme());
        fd = open_ctrl(name);
        CHECK_SAY(fd >= 0, "%s: open new node", name);
        r = do_identify(fd, &id);
        CHECK_SAY(r == 0 && !strncmp(id.mn, "hotplugged ", 11), "%s: identify the new controller", name);

        w = (Wait) { .sysname = name, .action = "remove" };
        snprintf(args, sizeof(args), "remove %s", name);
        ctl_and_wait(e, args, &w);
        errno = 0;
        r = do_identify(fd, &id);
        CHECK_SAY(r == -1 && errno == ENODEV, "%s: ioctl on the old fd -> ENODEV (r=%d %s)", name, r, strerror(errno));
        snprintf(path, sizeof(path), "/dev/%s", name);
        CHECK_SAY(access(path, F_OK) < 0, "%s gone", path);
        snprintf(path, sizeof(path), "/sys/class/nvme/%s", name);
        CHECK_SAY(access(path, F_OK) < 0, "%s gone", path);
        CHECK_SAY(count_nvme() == before, "enumerator: back to %d", before);
        close(fd);
        return 0;
}

/* A daemon bug on purpose: a monitor that is never read while uevents keep coming. */
static int cmd_stall(const char *name, int n)
{
        Wait w = { .sysname = name, .action = "change" };
        _cleanup_(sd_event_unrefp) sd_event *e = new_event();
        _cleanup_(sd_device_monitor_unrefp) sd_device_monitor *mon = new_monitor(e, &w);
        char cmd[256];
        int r = 0;

        if (!mon)
                return 1;
        snprintf(cmd, sizeof(cmd), "\"$FAKE_NVME_CTL_PROG\" uevent %s change", name);
        for (int i = 0; i < n && r == 0; i++) {
                r = system(cmd);
                printf("uevent %d sent: %d\n", i + 1, r);
        }
        return 0;
}

/* Every controller's thread opens, identifies and closes at the same time as the others. Without the
 * preload's lock around umockdev's open and close, two opens can take one slot of umockdev's fd table
 * and the losing fd's ioctl reaches the testbed's plain file: ENOTTY. */
typedef struct {
        pthread_t thread;
        const char *name;
        char sn[64];               /* the controller's serial number as sysfs shows it */
        int rounds, failed, misrouted, first_errno, first_round;
} Racer;

static pthread_barrier_t racers_ready;

static void *racer(void *userdata)
{
        Racer *r = userdata;
        struct nvme_id_ctrl id;

        for (int i = 0; i < r->rounds; i++) {
                int fd;

                /* every round starts together: the opens and closes meet, as a stop's restores do */
                pthread_barrier_wait(&racers_ready);
                fd = open_ctrl(r->name);
                int k = fd < 0 ? -1 : do_identify(fd, &id);

                if (k != 0 && r->failed++ == 0) {
                        r->first_errno = k < 0 ? errno : 0;
                        r->first_round = i;
                }
                /* an fd whose slot took another fd's socket is answered by the other controller:
                 * the whole padded string is compared ("RACE1" is not "RACE10") */
                char sn[64];
                id_string_sysfs(sn, sizeof(sn), id.sn, sizeof(id.sn));
                if (k == 0 && strcmp(sn, r->sn) != 0)
                        r->misrouted++;
                if (fd >= 0)
                        close(fd);
        }
        return NULL;
}

static int cmd_threads(int rounds, int n, char **names)
{
        Racer *rs = calloc(n, sizeof(*rs));

        if (!rs || rounds <= 0)
                return 2;
        pthread_barrier_init(&racers_ready, NULL, n);
        for (int i = 0; i < n; i++) {
                char path[256];
                const char *sn;

                rs[i] = (Racer) { .name = names[i], .rounds = rounds };
                snprintf(path, sizeof(path), "/sys/class/nvme/%s/serial", names[i]);
                sn = read_text(path);
                if (!sn)
                        return 2;
                snprintf(rs[i].sn, sizeof(rs[i].sn), "%.*s", (int) sizeof(rs[i].sn) - 1, sn);
                if (pthread_create(&rs[i].thread, NULL, racer, &rs[i]) != 0)
                        return 2;
        }
        for (int i = 0; i < n; i++) {
                pthread_join(rs[i].thread, NULL);
                CHECK_SAY(rs[i].failed == 0, "%s: %d of %d open+Identify failed (first at round %d: %s)",
                          rs[i].name, rs[i].failed, rounds, rs[i].first_round,
                          rs[i].first_errno ? strerror(rs[i].first_errno) : "an NVMe status");
                CHECK_SAY(rs[i].misrouted == 0, "%s: %d of %d Identify answered by another controller",
                          rs[i].name, rs[i].misrouted, rounds);
                printf("%s: %d rounds, %d failed, %d misrouted\n", rs[i].name, rounds, rs[i].failed,
                       rs[i].misrouted);
        }
        pthread_barrier_destroy(&racers_ready);
        free(rs);
        return 0;
}

int main(int argc, char **argv)
{
        int r = 2;

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc >= 3 && !strcmp(argv[1], "setget")) {
                r = 0;
                for (int i = 2; i < argc; i++)
                        r |= cmd_setget(argv[i]);
        } else if (argc >= 5 && !strcmp(argv[1], "expect"))
                r = cmd_expect(argc - 2, argv + 2);
        else if (argc == 4 && !strcmp(argv[1], "forbidden"))
                r = cmd_forbidden(argv[2], argv[3]);
        else if (argc == 3 && !strcmp(argv[1], "reset"))
                r = cmd_reset(argv[2]);
        else if (argc == 4 && !strcmp(argv[1], "stall"))
                r = cmd_stall(argv[2], atoi(argv[3]));
        else if (argc == 3 && !strcmp(argv[1], "vanish"))
                r = cmd_vanish(argv[2]);
        else if (argc == 3 && !strcmp(argv[1], "lying"))
                r = cmd_lying(argv[2]);
        else if (argc == 3 && !strcmp(argv[1], "add-remove"))
                r = cmd_add_remove(argv[2]);
        else if (argc >= 4 && !strcmp(argv[1], "threads"))
                r = cmd_threads(atoi(argv[2]), argc - 3, argv + 3);
        else
                fprintf(stderr, "usage: see the comment at the top of test-fake-client.c\n");
        if (r == 0 && n_failed)
                r = 1;
        printf("%s: %u failure(s)\n", argv[0], n_failed);
        return r;
}
