/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading /sys/class/power_supply; see power.h. */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "power.h"
#include "sysfs.h"

/* DIR/NAME/ATTR into @buf, trimmed; -ENAMETOOLONG or that of sysfs_read_attr(). */
static int read_attr(const char *dir, const char *name, const char *attr, char *buf, size_t n) {
        char path[PATH_MAX];
        int k;

        k = snprintf(path, sizeof path, "%s/%s/%s", dir, name, attr);
        if (k < 0 || (size_t) k >= sizeof path)
                return -ENAMETOOLONG;
        return sysfs_read_attr(path, buf, n);
}

static int read_supply(const char *dir, const char *name, PowerSupplyInfo *ret) {
        PowerSupplyInfo s = { .online = -1 };
        char v[32];
        int r;

        r = read_attr(dir, name, "type", s.type, sizeof s.type);
        if (r < 0)
                return r;
        if (read_attr(dir, name, "online", v, sizeof v) >= 0)
                s.online = strcmp(v, "0") == 0 ? 0 : v[0] >= '1' && v[0] <= '9' ? 1 : -1;
        if (read_attr(dir, name, "status", s.status, sizeof s.status) < 0)
                s.status[0] = '\0';
        if (read_attr(dir, name, "scope", v, sizeof v) >= 0)
                s.device_scope = strcmp(v, "Device") == 0;
        *ret = s;
        return 0;
}

int power_source_read(const char *sysroot, PowerSource *ret) {
        PowerSupplyInfo list[POWER_SUPPLIES_MAX];
        char dir[PATH_MAX];
        struct dirent *de;
        size_t n = 0;
        DIR *d;
        int k;

        k = snprintf(dir, sizeof dir, "%s/class/power_supply", sysroot);
        if (k < 0 || (size_t) k >= sizeof dir)
                return -ENAMETOOLONG;
        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT) {
                        *ret = POWER_SOURCE_AC;
                        return 0;
                }
                return negative_errno();
        }
        while ((de = readdir(d)) && n < POWER_SUPPLIES_MAX) {
                if (de->d_name[0] == '.')
                        continue;
                if (read_supply(dir, de->d_name, &list[n]) >= 0)
                        n++;
        }
        closedir(d);
        *ret = power_source_decide(list, n);
        return 0;
}
