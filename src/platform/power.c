/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading /sys/class/power_supply; see power.h. */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
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

int power_profile_call(sd_bus *bus, const char *name, const char *path, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, name, path, "org.freedesktop.DBus.Properties", "Get");
        if (r >= 0)
                r = sd_bus_message_append(call, "ss", name, "ActiveProfile");
        /* never start power-profiles-daemon because we asked: absent means absent */
        if (r >= 0)
                r = sd_bus_message_set_auto_start(call, false);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(call);
        return 0;
}

void power_profile_from_reply(sd_bus_message *reply, char *buf, size_t n) {
        const char *p = NULL;

        buf[0] = '\0';
        if (sd_bus_message_is_method_error(reply, NULL))
                return;
        if (sd_bus_message_read(reply, "v", "s", &p) < 0 || !p)
                return;
        (void) snprintf(buf, n, "%s", p);
}

void power_profile_read(sd_bus *bus, uint64_t timeout_usec, char *buf, size_t n) {
        static const char *const names[][2] = { { PPD_NAME, PPD_PATH }, { PPD_OLD_NAME, PPD_OLD_PATH } };

        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(names) && !buf[0]; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

                if (power_profile_call(bus, names[i][0], names[i][1], &call) < 0)
                        return;
                if (sd_bus_call(bus, call, timeout_usec, &e, &reply) < 0)
                        continue;
                power_profile_from_reply(reply, buf, n);
        }
}

/* One-shot commands wait this long at most for power-profiles-daemon. */
#define PROFILE_READ_TIMEOUT_USEC (500ULL * 1000ULL)

void situation_read_now(const char *sysroot, Situation *ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        Situation s = { .power_source = POWER_SOURCE_AC };

        if (power_source_read(sysroot, &s.power_source) < 0)
                s.power_source = POWER_SOURCE_AC;
        if (sd_bus_open_system(&bus) >= 0)
                power_profile_read(bus, PROFILE_READ_TIMEOUT_USEC, s.profile, sizeof s.profile);
        *ret = s;
}
