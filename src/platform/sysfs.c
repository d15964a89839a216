/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sysfs readers for NVMe controllers; see sysfs.h. */

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idctrl.h"
#include "macro.h"
#include "sysfs.h"
#include "watch.h"
#include "util.h"

bool sysfs_is_ctrl_name(const char *name) {
        if (strncmp(name, "nvme", 4) != 0 || !name[4])
                return false;
        for (const char *p = name + 4; *p; p++)
                if (!isdigit((unsigned char) *p))
                        return false;
        return strlen(name) < sizeof(((SysCtrl *) NULL)->name);
}

int sysfs_read_attr(const char *path, char *buf, size_t n) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t k;

        if (n == 0)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        k = read(fd, buf, n - 1);
        if (k < 0)
                return negative_errno();
        buf[k] = '\0';
        while (k > 0 && isspace((unsigned char) buf[k - 1]))
                buf[--k] = '\0';
        return 0;
}

static void read_string(const char *dir, const char *attr, char *dst, size_t n) {
        char path[512], raw[256];

        dst[0] = '\0';
        if ((size_t) snprintf(path, sizeof path, "%s/%s", dir, attr) >= sizeof path)
                return;
        if (sysfs_read_attr(path, raw, sizeof raw) < 0)
                return;
        /* same sanitising as Identify strings: printable ASCII, trimmed */
        idctrl_copy_string(dst, raw, MIN(strlen(raw), n - 1));
}

static uint16_t read_hex16(const char *dir, const char *attr) {
        char path[512], raw[32], *end;
        unsigned long v;

        if ((size_t) snprintf(path, sizeof path, "%s/%s", dir, attr) >= sizeof path)
                return 0;
        if (sysfs_read_attr(path, raw, sizeof raw) < 0)
                return 0;
        errno = 0;
        v = strtoul(raw, &end, 16);
        if (errno != 0 || end == raw || *end || v > 0xffff)
                return 0;
        return (uint16_t) v;
}

int sysfs_read_controller(const char *sysroot, const char *name, SysCtrl *ret) {
        char dir[256], dev[300], probe[320], raw[sizeof(((SysCtrl *) NULL)->state)];
        SysCtrl c = {};

        if (!sysfs_is_ctrl_name(name))
                return -EINVAL;
        if ((size_t) snprintf(dir, sizeof dir, "%s/class/nvme/%s", sysroot, name) >= sizeof dir)
                return -ENAMETOOLONG;
        /* the controller is gone if its state cannot be read */
        (void) snprintf(probe, sizeof probe, "%s/state", dir);
        if (sysfs_read_attr(probe, raw, sizeof raw) < 0)
                return -ENOENT;
        /* it ends up in log lines and STATUS=: printable ASCII only, like every other string */
        idctrl_copy_string(c.state, raw, MIN(strlen(raw), sizeof c.state - 1));
        (void) snprintf(c.name, sizeof c.name, "%s", name);
        read_string(dir, "transport", c.transport, sizeof c.transport);
        read_string(dir, "model", c.model, sizeof c.model);
        read_string(dir, "serial", c.serial, sizeof c.serial);
        read_string(dir, "firmware_rev", c.firmware, sizeof c.firmware);
        if (strcmp(c.transport, "pcie") == 0) {
                (void) snprintf(dev, sizeof dev, "%s/device", dir);
                c.pci_vendor = read_hex16(dev, "vendor");
                c.pci_device = read_hex16(dev, "device");
        }
        *ret = c;
        return 0;
}

/* digits only (sysfs_is_ctrl_name()); a number past 32 bits sorts last instead of overflowing atoi() */
static uint32_t ctrl_index(const char *name) {
        uint32_t i = UINT32_MAX;

        (void) safe_atou32(name + 4, &i);
        return i;
}

static int cmp_ctrl(const void *a, const void *b) {
        uint32_t x = ctrl_index(((const SysCtrl *) a)->name), y = ctrl_index(((const SysCtrl *) b)->name);

        return (x > y) - (x < y);
}

int sysfs_list_controllers(const char *sysroot, SysCtrl **ret, size_t *ret_n) {
        _cleanup_free_ SysCtrl *list = NULL;
        char path[256];
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;

        (void) snprintf(path, sizeof path, "%s/class/nvme", sysroot);
        d = opendir(path);
        if (!d) {
                if (errno != ENOENT)
                        return negative_errno();
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        while ((de = readdir(d))) {
                SysCtrl c;

                if (!sysfs_is_ctrl_name(de->d_name))
                        continue;
                if (sysfs_read_controller(sysroot, de->d_name, &c) < 0)
                        continue; /* vanished between readdir and read */
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 8;
                        SysCtrl *t = realloc(list, ncap * sizeof *t);
                        if (!t) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        list = t;
                        cap = ncap;
                }
                list[n++] = c;
        }
        closedir(d);
        if (n > 1)
                qsort(list, n, sizeof *list, cmp_ctrl);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

void sysfs_read_platform(const char *sysroot, SysPlatform *ret) {
        char dir[256];
        SysPlatform p = {};

        (void) snprintf(dir, sizeof dir, "%s/class/dmi/id", sysroot);
        read_string(dir, "board_vendor", p.board_vendor, sizeof p.board_vendor);
        read_string(dir, "board_name", p.board_name, sizeof p.board_name);
        read_string(dir, "sys_vendor", p.sys_vendor, sizeof p.sys_vendor);
        read_string(dir, "product_name", p.product_name, sizeof p.product_name);
        *ret = p;
}

/* "nvme<N>n<M>" or "nvme<N>c<C>n<M>" for controller "nvme<N>" */
static bool is_namespace_of(const char *ctrl, const char *entry) {
        size_t l = strlen(ctrl);
        const char *p;

        if (strncmp(entry, ctrl, l) != 0)
                return false;
        p = entry + l;
        if (*p == 'c') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return false;
                while (isdigit((unsigned char) *p))
                        p++;
        }
        if (*p != 'n' || !isdigit((unsigned char) p[1]))
                return false;
        for (p++; *p; p++)
                if (!isdigit((unsigned char) *p))
                        return false;
        return true;
}

/* Open SYSROOT/class/nvme/NAME (its path into @dir). Return: the directory, or NULL with errno set
 * (EINVAL: not a controller name). */
static DIR *open_ctrl_dir(const char *sysroot, const char *name, char *dir, size_t n) {
        if (!sysfs_is_ctrl_name(name)) {
                errno = EINVAL;
                return NULL;
        }
        (void) snprintf(dir, n, "%s/class/nvme/%s", sysroot, name);
        return opendir(dir);
}

int sysfs_ctrl_block_stat(const char *sysroot, const char *name, WatchStat *ret) {
        char dir[256], path[600], buf[512];
        WatchStat total = {};
        bool found = false;
        struct dirent *de;
        DIR *d;

        d = open_ctrl_dir(sysroot, name, dir, sizeof dir);
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                WatchStat st;

                if (!is_namespace_of(name, de->d_name))
                        continue;
                (void) snprintf(path, sizeof path, "%s/%s/stat", dir, de->d_name);
                /* Documentation/block/stat.rst; field 9 (in flight) is the sum the disk's
                 * `inflight` file splits into reads and writes (block/genhd.c) */
                if (sysfs_read_attr(path, buf, sizeof buf) < 0 || watch_stat_parse(buf, &st) < 0)
                        continue;
                total.ios += st.ios;
                total.ticks_ms += st.ticks_ms;
                total.in_flight += st.in_flight;
                total.io_ticks_ms = MAX(total.io_ticks_ms, st.io_ticks_ms);
                found = true;
        }
        closedir(d);
        if (!found)
                return -ENOENT;
        *ret = total;
        return 0;
}

int sysfs_ctrl_io_count(const char *sysroot, const char *name, uint64_t *ret) {
        WatchStat st = {};
        int r;

        r = sysfs_ctrl_block_stat(sysroot, name, &st);
        if (r < 0)
                return r;
        *ret = st.ios;
        return 0;
}

static int read_u64_attr(const char *path, uint64_t *ret) {
        char buf[32], *end;
        unsigned long long v;
        int r;

        r = sysfs_read_attr(path, buf, sizeof buf);
        if (r < 0)
                return r;
        if (buf[0] < '0' || buf[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(buf, &end, 10);
        if (errno != 0 || *end != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int sysfs_ctrl_diskseqs(const char *sysroot, const char *name, uint64_t *ret, size_t max, size_t *ret_n) {
        char dir[256], path[600];
        struct dirent *de;
        size_t n = 0;
        DIR *d;

        d = open_ctrl_dir(sysroot, name, dir, sizeof dir);
        if (!d)
                return negative_errno();
        while ((de = readdir(d)) && n < max) {
                uint64_t seq;

                if (!is_namespace_of(name, de->d_name))
                        continue;
                (void) snprintf(path, sizeof path, "%s/%s/diskseq", dir, de->d_name);
                if (read_u64_attr(path, &seq) < 0 || seq == 0)
                        continue;
                ret[n++] = seq;
        }
        closedir(d);
        if (n == 0)
                return -ENOENT;
        *ret_n = n;
        return 0;
}

int sysfs_block_diskseq(const char *sysroot, const char *disk, uint64_t *ret) {
        char path[600];
        int r;

        if (!disk[0] || strchr(disk, '/') || strcmp(disk, ".") == 0 || strcmp(disk, "..") == 0)
                return -EINVAL;
        (void) snprintf(path, sizeof path, "%s/class/block/%s", sysroot, disk);
        if (access(path, F_OK) < 0)
                return negative_errno();
        (void) snprintf(path, sizeof path, "%s/class/block/%s/partition", sysroot, disk);
        if (access(path, F_OK) == 0)
                return -EINVAL;
        (void) snprintf(path, sizeof path, "%s/class/block/%s/diskseq", sysroot, disk);
        r = read_u64_attr(path, ret);
        if (r == -ENOENT)
                return -EINVAL;
        return r;
}

static int cmp_name(const void *a, const void *b) {
        return strverscmp(a, b);
}

int sysfs_list_disks(const char *sysroot, char (**ret)[32], size_t *ret_n) {
        char (*names)[32] = NULL, path[600];
        size_t n = 0, cap = 0;
        struct dirent *de;
        DIR *d;

        (void) snprintf(path, sizeof path, "%s/class/block", sysroot);
        d = opendir(path);
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                uint64_t seq;

                if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof names[0] ||
                    sysfs_block_diskseq(sysroot, de->d_name, &seq) < 0)
                        continue;
                if (n == cap) {
                        char (*nn)[32] = reallocarray(names, cap ? cap * 2 : 16, sizeof *names);
                        if (!nn) {
                                free(names);
                                closedir(d);
                                return -ENOMEM;
                        }
                        names = nn;
                        cap = cap ? cap * 2 : 16;
                }
                (void) snprintf(names[n++], sizeof names[0], "%s", de->d_name);
        }
        closedir(d);
        if (n > 0)
                qsort(names, n, sizeof *names, cmp_name);
        *ret = names;
        *ret_n = n;
        return 0;
}

/* The lowest-numbered namespace disk under the controller directory @dir (nvmeXnY, or the hidden
 * nvmeXcYnZ under multipath), in version order. Return 0, -ENOENT or -errno. */
static int first_namespace(const char *dir, const char *name, char *best, size_t size) {
        struct dirent *de;
        DIR *d;

        best[0] = 0;
        d = opendir(dir);
        if (!d)
                return negative_errno();
        while ((de = readdir(d)))
                if (is_namespace_of(name, de->d_name) && strlen(de->d_name) < size &&
                    (!best[0] || strverscmp(de->d_name, best) < 0))
                        (void) snprintf(best, size, "%s", de->d_name);
        closedir(d);
        return best[0] ? 0 : -ENOENT;
}

int sysfs_ctrl_queue_limits(const char *sysroot, const char *name, char *disk, size_t disk_size,
                            uint32_t *ret_max_hw_kb, uint32_t *ret_max_kb) {
        char dir[256], best[64] = "", path[600], buf[32];
        uint32_t hw, soft;
        int r;

        if (!sysfs_is_ctrl_name(name) || disk_size == 0)
                return -EINVAL;
        (void) snprintf(dir, sizeof dir, "%s/class/nvme/%s", sysroot, name);
        r = first_namespace(dir, name, best, sizeof best);
        if (r < 0)
                return r;
        (void) snprintf(disk, disk_size, "%s", best);
        (void) snprintf(path, sizeof path, "%s/%s/queue/max_hw_sectors_kb", dir, best);
        if (sysfs_read_attr(path, buf, sizeof buf) < 0 || safe_atou32(buf, &hw) < 0)
                return -ENODATA;
        (void) snprintf(path, sizeof path, "%s/%s/queue/max_sectors_kb", dir, best);
        if (sysfs_read_attr(path, buf, sizeof buf) < 0 || safe_atou32(buf, &soft) < 0)
                return -ENODATA;
        *ret_max_hw_kb = hw;
        *ret_max_kb = soft;
        return 0;
}

int sysfs_ctrl_namespace(const char *sysroot, const char *name, char *ret_dev, size_t dev_size, uint32_t *ret_nsid,
                         uint32_t *ret_lba_bytes) {
        char dir[256], best[64] = "", dev[64], path[600], buf[32];
        uint32_t nsid, lba;
        const char *c;
        int r;

        if (!sysfs_is_ctrl_name(name) || dev_size == 0)
                return -EINVAL;
        (void) snprintf(dir, sizeof dir, "%s/class/nvme/%s", sysroot, name);
        r = first_namespace(dir, name, best, sizeof best);
        if (r < 0)
                return r;
        /* nvme<S>c<C>n<M> (hidden, no /dev node) -> its head nvme<S>n<M> */
        c = strchr(best + 4, 'c');
        if (c)
                (void) snprintf(dev, sizeof dev, "%.*s%s", (int) (c - best), best, strchr(c, 'n'));
        else
                (void) snprintf(dev, sizeof dev, "%s", best);
        (void) snprintf(path, sizeof path, "%s/%s/nsid", dir, best);
        if (sysfs_read_attr(path, buf, sizeof buf) < 0 || safe_atou32(buf, &nsid) < 0)
                return -ENODATA;
        (void) snprintf(path, sizeof path, "%s/class/block/%s/queue/logical_block_size", sysroot, dev);
        if (sysfs_read_attr(path, buf, sizeof buf) < 0) {
                (void) snprintf(path, sizeof path, "%s/%s/queue/logical_block_size", dir, best);
                if (sysfs_read_attr(path, buf, sizeof buf) < 0)
                        return -ENODATA;
        }
        if (safe_atou32(buf, &lba) < 0)
                return -ENODATA;
        (void) snprintf(ret_dev, dev_size, "%s", dev);
        *ret_nsid = nsid;
        *ret_lba_bytes = lba;
        return 0;
}
