/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Drop-ins: config_dropins_order() (which files, in which order, masking), config_parse_sources()
 * (later keys win, sections of the same name merge, every file's errors reported) and
 * config_load_all() (config-file.c) on directory trees under --root in $TMPDIR.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config-dropin.h"
#include "config-file.h"
#include "config.h"
#include "macro.h"

/* The names config_dropins_order() picked, "dir:name" joined by blanks. */
static void order_string(const DropinEntry *in, size_t n, char *buf, size_t size) {
        _cleanup_free_ size_t *order = NULL;
        size_t m = 0, o = 0;

        buf[0] = '\0';
        REQUIRE(config_dropins_order(in, n, &order, &m) == 0);
        for (size_t i = 0; i < m; i++)
                o += (size_t) snprintf(buf + o, size - o, "%s%u:%s", i ? " " : "", in[order[i]].dir,
                                       in[order[i]].name);
}

static void test_order(void) {
        char got[256];
        const DropinEntry across[] = {
                { 3, "10-vendor.conf", false },
                { 0, "90-admin.conf", false },
                { 1, "50-boot.conf", false },
                { 2, "20-local.conf", false },
        };
        const DropinEntry same_name[] = {
                { 3, "50-x.conf", false },
                { 0, "50-x.conf", false },
                { 1, "50-x.conf", false },
        };
        const DropinEntry masked[] = {
                { 3, "50-x.conf", false },
                { 0, "50-x.conf", true },
                { 3, "60-y.conf", false },
        };
        const DropinEntry mask_below_is_none[] = {
                { 0, "50-x.conf", false },
                { 3, "50-x.conf", true },
        };
        const DropinEntry names[] = {
                { 0, "README", false },
                { 0, ".hidden.conf", false },
                { 0, "x.conf.dpkg-old", false },
                { 0, ".conf", false },
                { 0, "a.conf", false },
        };

        current = "/config-dropin/order/by-name-across-directories";
        order_string(across, ELEMENTSOF(across), got, sizeof got);
        CHECK_SAY(strcmp(got, "3:10-vendor.conf 2:20-local.conf 1:50-boot.conf 0:90-admin.conf") == 0, "%s", got);
        current = "/config-dropin/order/same-name-highest-priority";
        order_string(same_name, ELEMENTSOF(same_name), got, sizeof got);
        CHECK_SAY(strcmp(got, "0:50-x.conf") == 0, "%s", got);
        current = "/config-dropin/order/dev-null-masks";
        order_string(masked, ELEMENTSOF(masked), got, sizeof got);
        CHECK_SAY(strcmp(got, "3:60-y.conf") == 0, "%s", got);
        current = "/config-dropin/order/mask-in-lower-directory-masks-nothing";
        order_string(mask_below_is_none, ELEMENTSOF(mask_below_is_none), got, sizeof got);
        CHECK_SAY(strcmp(got, "0:50-x.conf") == 0, "%s", got);
        current = "/config-dropin/order/only-conf-not-hidden";
        order_string(names, ELEMENTSOF(names), got, sizeof got);
        CHECK_SAY(strcmp(got, "0:a.conf") == 0, "%s", got);
        current = "/config-dropin/order/empty";
        order_string(NULL, 0, got, sizeof got);
        CHECK(got[0] == '\0');
}

static const ConfigOrigin *origin(const Config *c, const char *section, const char *key) {
        for (size_t i = 0; i < c->n_origins; i++)
                if (strcmp(c->origins[i].section, section) == 0 && strcmp(c->origins[i].key, key) == 0)
                        return &c->origins[i];
        return NULL;
}

static void test_sources(void) {
        const ConfigSource merge[] = {
                { "main.conf", "[apst]\nmax_latency_us = 100\nprimary_timeout_ms = 7\n"
                               "[device ssd]\nmatch_model = Samsung*\nmax_latency_us = 200\n" },
                { "10-a.conf", "[apst]\nmax_latency_us = 300\n[device ssd]\nenable = no\n" },
                { "20-b.conf", "\n[apst]\nmax_latency_us = 400\n[device ssd]\nmax_latency_us = 500\n" },
        };
        const ConfigSource twice_in_one[] = {
                { "main.conf", "[device ssd]\nmatch_model = x\n" },
                { "10-a.conf", "[device ssd]\nenable = no\n[device ssd]\nenable = yes\n" },
        };
        const ConfigSource errors[] = {
                { "main.conf", "[apst]\nmax_latency_us = x\n" },
                { "10-a.conf", "[apst]\nbogus = 1\n[nosuch]\nkey = 1\n[cpu]\npin = sometimes\n" },
        };
        _cleanup_free_ char *err = NULL;
        const ConfigOrigin *o;
        Config c;

        current = "/config-dropin/sources/later-key-wins-section-merges";
        REQUIRE(config_parse_sources(merge, ELEMENTSOF(merge), &c, NULL) == 0);
        CHECK(c.apst.max_latency_us == 400);
        CHECK(c.apst.primary_timeout_ms == 7);
        CHECK(c.n_devices == 1);
        CHECK(strcmp(c.devices[0].match_model, "Samsung*") == 0);
        CHECK(!c.devices[0].enable);
        CHECK(c.devices[0].apst.max_latency_us == 500);
        CHECK(c.n_files == 3 && strcmp(c.files[2], "20-b.conf") == 0);
        o = origin(&c, "apst", "max_latency_us");
        CHECK(o && o->file == 2 && o->line == 3 && strcmp(o->value, "400") == 0);
        o = origin(&c, "apst", "primary_timeout_ms");
        CHECK(o && o->file == 0 && o->line == 3);
        o = origin(&c, "device ssd", "enable");
        CHECK(o && o->file == 1 && o->line == 4);
        config_done(&c);

        current = "/config-dropin/sources/same-section-twice-in-one-file";
        CHECK(config_parse_sources(twice_in_one, ELEMENTSOF(twice_in_one), &c, &err) == -EINVAL);
        CHECK_SAY(err && strcmp(err, "10-a.conf:3: [device ssd]: device section name used twice") == 0, "%s", err);
        free(err);
        err = NULL;

        current = "/config-dropin/sources/every-error-of-every-file";
        CHECK(config_parse_sources(errors, ELEMENTSOF(errors), &c, &err) == -EINVAL);
        CHECK_SAY(err && strcmp(err,
                  "main.conf:2: [apst] max_latency_us = x: not a time span (a number, optionally followed by us, "
                  "ms or s: 1500, 1.5ms)\n"
                  "10-a.conf:2: [apst] bogus = 1: unknown key\n"
                  "10-a.conf:3: [nosuch]: unknown section (expected [apst], [cpu], [metrics], [daemon], [watch], [holds] "
                  "or [device NAME])\n"
                  "10-a.conf:6: [cpu] pin = sometimes: unknown mode (off, always or busy)") == 0, "%s", err);
}

static char root[512];

static void put(const char *rel, const char *text) {
        _cleanup_free_ char *path = NULL;
        int fd;

        REQUIRE(asprintf(&path, "%s%s", root, rel) > 0);
        for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                (void) mkdir(path, 0755);
                *s = '/';
        }
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        REQUIRE(fd >= 0);
        CHECK(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        CHECK(close(fd) == 0);
}

static void test_load_all(void) {
        const ConfigLoad sys = { .root = root, .path = "/etc/nvme-apstd.conf", .missing_ok = true,
                                 .system_dropins = true };
        const ConfigLoad custom = { .root = root, .path = "/srv/my.conf", .system_dropins = false };
        _cleanup_free_ char *err = NULL, *masked = NULL;
        Config c;

        /* $TMPDIR when set: the tests write nothing under /tmp when told where. */
        snprintf(root, sizeof root, "%s/test-config-dropin-XXXXXX", getenv("TMPDIR") ?: "/tmp");
        REQUIRE(mkdtemp(root));

        current = "/config-dropin/load/no-main-file-dropins-only";
        put("/usr/lib/nvme-apstd.conf.d/50-vendor.conf", "[apst]\nmax_latency_us = 111\n");
        REQUIRE(config_load_all(&sys, &c, NULL) == 0);
        CHECK(c.apst.max_latency_us == 111);
        config_done(&c);

        current = "/config-dropin/load/etc-replaces-same-name-and-order-across";
        put("/etc/nvme-apstd.conf", "[apst]\nmax_latency_us = 1\nprimary_timeout_ms = 9\n");
        put("/etc/nvme-apstd.conf.d/50-vendor.conf", "[apst]\nprimary_timeout_ms = 5\n");
        put("/run/nvme-apstd.conf.d/60-run.conf", "[apst]\nsecondary_timeout_ms = 6\n");
        put("/usr/local/lib/nvme-apstd.conf.d/40-local.conf", "[apst]\nsecondary_timeout_ms = 4\n"
            "max_latency_us = 44\n");
        REQUIRE(config_load_all(&sys, &c, NULL) == 0);
        /* 40-local (max 44), then 50-vendor from /etc (replacing /usr/lib's 111), then 60-run */
        CHECK(c.apst.max_latency_us == 44);
        CHECK(c.apst.primary_timeout_ms == 5);
        CHECK(c.apst.secondary_timeout_ms == 6);
        CHECK(c.n_files == 4);
        config_done(&c);

        current = "/config-dropin/load/dev-null-masks";
        REQUIRE(asprintf(&masked, "%s/etc/nvme-apstd.conf.d/60-run.conf", root) > 0);
        REQUIRE(symlink("/dev/null", masked) == 0);
        REQUIRE(config_load_all(&sys, &c, NULL) == 0);
        CHECK(c.apst.secondary_timeout_ms == 4);
        config_done(&c);

        current = "/config-dropin/load/custom-file-reads-only-its-d";
        put("/srv/my.conf", "[apst]\nmax_latency_us = 7\n");
        put("/srv/my.conf.d/10-x.conf", "[apst]\nmax_latency_us = 8\n");
        put("/srv/my.conf.d/ignored.txt", "[apst]\nmax_latency_us = 9\n");
        REQUIRE(config_load_all(&custom, &c, NULL) == 0);
        CHECK(c.apst.max_latency_us == 8);
        CHECK(c.apst.primary_timeout_ms == APST_PARAMS_DEFAULT.primary_timeout_ms);
        config_done(&c);

        current = "/config-dropin/load/named-file-missing";
        {
                const ConfigLoad missing = { .root = root, .path = "/srv/none.conf" };
                _cleanup_free_ char *e = NULL;

                CHECK(config_load_all(&missing, &c, &e) == -ENOENT);
                CHECK_SAY(e && strstr(e, "/srv/none.conf: cannot open: No such file or directory"), "%s", e);
        }
        current = "/config-dropin/load/named-file-a-directory-with-dropins";
        {
                const ConfigLoad dir = { .root = root, .path = "/srv/my.conf.d" };
                _cleanup_free_ char *e = NULL;

                CHECK(config_load_all(&dir, &c, &e) == -EISDIR);
                CHECK_SAY(e && strstr(e, "is a directory"), "%s", e);
        }

        current = "/config-dropin/load/errors-in-two-files";
        put("/srv/my.conf.d/20-bad.conf", "[apst]\nmax_latency_us = 99s\n");
        put("/srv/my.conf.d/30-bad.conf", "[apst]\nforce = perhaps\n");
        CHECK(config_load_all(&custom, &c, &err) == -EINVAL);
        CHECK_SAY(err && strstr(err, "/srv/my.conf.d/20-bad.conf:2: [apst] max_latency_us = 99s: out of range") &&
                  strstr(err, "/srv/my.conf.d/30-bad.conf:2: [apst] force = perhaps: not a boolean") &&
                  strchr(err, '\n'), "%s", err);
}

int main(void) {
        test_order();
        test_sources();
        test_load_all();
        return check_exit_status();
}
