/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash records (record-file.c, apst-record.c) and the file helpers under them
 * (fileio.c): a record round-trips; a truncated, garbage, foreign-kind,
 * foreign-version or another drive's record is refused and never half-used;
 * the unversioned APST record of earlier releases is still read; a crash
 * between writing and renaming (the temporary file left behind) neither
 * shadows the record nor blocks the next write. One name for a controller's
 * record (record_ctrl_path()), refused rather than cut short.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apst-record.h"
#include "check.h"
#include "cpufreq-policy.h"
#include "fileio.h"
#include "macro.h"
#include "record-file.h"

static char dir[] = "/tmp/test-record-XXXXXX";

static void path_of(char *buf, size_t n, const char *name) {
        (void) snprintf(buf, n, "%s/%s", dir, name);
}

static void put(const char *name, const char *text) {
        char p[256];
        FILE *f;

        path_of(p, sizeof p, name);
        f = fopen(p, "we");
        REQUIRE(f);
        CHECK(fwrite(text, 1, strlen(text), f) == strlen(text));
        CHECK(fclose(f) == 0);
}

/* A drive with ps3 and ps4 non-operational, and the table the budget policy would give it. */
static void drive(IdCtrl *id, ApstTable *t) {
        *id = (IdCtrl) { .npss = 4, .apst_supported = true };
        (void) snprintf(id->model, sizeof id->model, "Test Drive 1TB");
        (void) snprintf(id->serial, sizeof id->serial, "S123456789");
        id->psd[3].non_operational = true;
        id->psd[4].non_operational = true;
        *t = (ApstTable) { .apste = true };
        for (unsigned i = 0; i <= 2; i++)
                t->entry[i] = apst_entry_make(3, 100);
        t->entry[3] = apst_entry_make(4, 2000);
}

static void test_header(void) {
        const char *body = NULL;

        CHECK(record_parse_header(RECORD_HEADER("apst", 1) "x\n", "apst", 1, &body) == 0 && strcmp(body, "x\n") == 0);
        CHECK(record_parse_header(RECORD_HEADER("apst", 1), "apst", 1, &body) == 0 && *body == 0);
        /* another version of the same kind */
        CHECK(record_parse_header(RECORD_HEADER("apst", 2) "x\n", "apst", 1, &body) == -EPROTONOSUPPORT);
        CHECK(record_parse_header("# nvme-apstd apst record v10\n", "apst", 1, &body) == -EPROTONOSUPPORT);
        /* another kind, a prefix of the kind, garbage, truncated header */
        CHECK(record_parse_header(RECORD_HEADER("cpufreq", 1), "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd aps record v1\n", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd apstx record v1\n", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd apst record v1", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd apst record v\n", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd apst record v0\n", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd apst record v-1\n", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("# nvme-apstd apst record v1 \n", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("\x7f" "ELF\x02\x01", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header("", "apst", 1, &body) == -EBADMSG);
        CHECK(record_parse_header(NULL, "apst", 1, &body) == -EBADMSG);
        /* the CPU record's header is the same scheme */
        CHECK(strcmp(CPUFREQ_RECORD_HEADER, "# nvme-apstd cpufreq record v1\n") == 0);
}

static void test_apst_round_trip(void) {
        _cleanup_free_ char *text = NULL;
        IdCtrl id;
        ApstTable t, back = {};

        drive(&id, &t);
        CHECK(apst_table_check(&t, &id) == 0);
        CHECK(apst_record_format(&id, &t, &text) == 0);
        CHECK(strncmp(text, "# nvme-apstd apst record v1\nmodel=Test Drive 1TB\nserial_hash=", 61) == 0);
        CHECK(!strstr(text, id.serial));   /* the serial is never written */
        CHECK(apst_record_parse(text, &id, &back) == 0 && apst_table_equal(&t, &back));
}

static void test_apst_refused(void) {
        _cleanup_free_ char *text = NULL;
        IdCtrl id, other;
        ApstTable t, back;
        char buf[2048];
        size_t len;

        drive(&id, &t);
        CHECK(apst_record_format(&id, &t, &text) == 0);
        len = strlen(text);

        /* truncated at every length: never accepted (the last line must end in a newline) */
        for (size_t k = 0; k < len; k++) {
                int r;

                memcpy(buf, text, k);
                buf[k] = 0;
                back = (ApstTable) { .entry = { 42 } };
                r = apst_record_parse(buf, &id, &back);
                if (r != -EBADMSG || back.entry[0] != 42) {
                        fprintf(stderr, "apst-record/truncated/%zu: r=%d\n", k, r);
                        abort();
                }
        }

        /* another drive: model or serial differ */
        other = id;
        other.serial[0] = 'X';
        CHECK(apst_record_parse(text, &other, &back) == -ESTALE);
        other = id;
        other.model[0] = 'X';
        CHECK(apst_record_parse(text, &other, &back) == -ESTALE);
        /* a table that this drive may not be given: ps2 is operational */
        other = id;
        other.psd[3].non_operational = false;
        CHECK(apst_record_parse(text, &other, &back) == -EBADMSG);

        /* foreign version, garbage, keys missing, repeated or unknown, bad values */
        static const char *const bad[] = {
                RECORD_HEADER("apst", 2) "model=Test Drive 1TB\n",
                RECORD_HEADER("cpufreq", 1) "policy cpu=0\n",
                "garbage\n",
                "\x01\x02\x03",
                RECORD_HEADER("apst", 1),
                RECORD_HEADER("apst", 1) "model=Test Drive 1TB\n",
                RECORD_HEADER("apst", 1) "model=Test Drive 1TB\nmodel=Test Drive 1TB\n",
                RECORD_HEADER("apst", 1) "model=Test Drive 1TB\nserial_hash=zz\napste=1\ntable=0x0\n",
                RECORD_HEADER("apst", 1) "unknown=1\n",
                RECORD_HEADER("apst", 1) "\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = apst_record_parse(bad[i], &id, &back);
                if (r != -EBADMSG && !(i == 0 && r == -EPROTONOSUPPORT)) {
                        fprintf(stderr, "apst-record/refused/%zu: r=%d\n", i, r);
                        abort();
                }
        }
        /* each value altered in place */
        static const struct {
                const char *from, *to;
        } edits[] = {
                { "apste=1", "apste=2" },
                { "apste=1", "apste=" },
                { "table=0x", "table=0X" },
                { "table=0x", "table= 0x" },
                { "serial_hash=", "serial_hash=0" },
        };
        for (size_t i = 0; i < ELEMENTSOF(edits); i++) {
                char *p = strstr(text, edits[i].from);
                CHECK(p);
                (void) snprintf(buf, sizeof buf, "%.*s%s%s", (int) (p - text), text, edits[i].to,
                                p + strlen(edits[i].from));
                if (apst_record_parse(buf, &id, &back) != -EBADMSG) {
                        fprintf(stderr, "apst-record/edit/%s: accepted\n", edits[i].to);
                        abort();
                }
        }
}

/* What releases before versioned records wrote: the same lines without the header. */
static void test_apst_legacy(void) {
        _cleanup_free_ char *text = NULL;
        IdCtrl id;
        ApstTable t, back = {};
        const char *body;

        drive(&id, &t);
        CHECK(apst_record_format(&id, &t, &text) == 0);
        body = strchr(text, '\n') + 1;
        CHECK(strncmp(body, "model=", 6) == 0);
        CHECK(apst_record_parse(body, &id, &back) == 0 && apst_table_equal(&t, &back));
}

static void test_files(void) {
        _cleanup_free_ char *text = NULL, *got = NULL;
        char path[256], tmp[256];
        IdCtrl id;
        ApstTable t, back = {};
        struct stat st;

        drive(&id, &t);
        path_of(path, sizeof path, "ctrl-nvme0.orig");
        path_of(tmp, sizeof tmp, ".ctrl-nvme0.orig.tmp");

        /* no record */
        CHECK(apst_record_load(path, &id, &back) == -ENOENT);

        /* half-renamed: a crash left the temporary file (complete or not) and no record */
        CHECK(apst_record_format(&id, &t, &text) == 0);
        put(".ctrl-nvme0.orig.tmp", text);
        CHECK(apst_record_load(path, &id, &back) == -ENOENT);
        /* ... the next save replaces it, and leaves no temporary behind */
        CHECK(apst_record_save(path, &id, &t) == 0);
        CHECK(access(tmp, F_OK) < 0 && errno == ENOENT);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
        CHECK(apst_record_load(path, &id, &back) == 0 && apst_table_equal(&t, &back));
        /* a half-written temporary next to a good record: the record is what counts */
        put(".ctrl-nvme0.orig.tmp", "# nvme-apstd apst rec");
        CHECK(apst_record_load(path, &id, &back) == 0 && apst_table_equal(&t, &back));

        /* truncated on disk, NUL bytes, too large */
        put("ctrl-nvme0.orig", "# nvme-apstd apst record v1\nmodel=Test Drive 1TB\nserial_ha");
        CHECK(apst_record_load(path, &id, &back) == -EBADMSG);
        {
                int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
                CHECK(fd >= 0 && write(fd, "model=\0x\n", 9) == 9 && close(fd) == 0);
        }
        CHECK(record_load(path, &got) == -EBADMSG);
        {
                int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
                CHECK(fd >= 0 && ftruncate(fd, RECORD_MAX_SIZE + 1) == 0 && close(fd) == 0);
        }
        CHECK(record_load(path, &got) == -EFBIG);
        /* a symbolic link is not followed */
        CHECK(unlink(path) == 0 && symlink("/etc/hostname", path) == 0);
        CHECK(record_load(path, &got) == -ELOOP);

        CHECK(record_remove(path) == 0);
        CHECK(record_remove(path) == 0);   /* already gone: fine */
        CHECK(unlink(tmp) == 0);
}

static void test_read_full(void) {
        _cleanup_free_ char *buf = NULL;
        char path[256];
        size_t len = 0;

        path_of(path, sizeof path, "f");
        put("f", "hello\n");
        CHECK(read_full_file(path, 6, 0, &buf, &len) == 0 && len == 6 && strcmp(buf, "hello\n") == 0);
        free(buf);
        buf = NULL;
        CHECK(read_full_file(path, 5, 0, &buf, &len) == -EFBIG && !buf);
        CHECK(read_full_file(dir, 100, 0, &buf, &len) == -EISDIR);
        path_of(path, sizeof path, "missing");
        CHECK(read_full_file(path, 100, 0, &buf, &len) == -ENOENT);
        /* a pipe has no size: the bound holds while reading */
        {
                int p[2];
                CHECK(pipe(p) == 0);
                CHECK(write(p[1], "abcdef", 6) == 6 && close(p[1]) == 0);
                CHECK(read_full_fd(p[0], 5, &buf, &len) == -EFBIG);
                CHECK(close(p[0]) == 0);
        }
        path_of(path, sizeof path, "f");
        CHECK(unlink(path) == 0);
}

static void test_ctrl_path(void) {
        char buf[32] = "untouched";

        CHECK(record_ctrl_path("/run/nvme-apstd", "nvme0", buf, sizeof buf) == 0);
        CHECK(strcmp(buf, "/run/nvme-apstd/ctrl-nvme0.orig") == 0);
        /* exactly the 31 characters plus the NUL fit; one byte less is refused, @buf kept */
        CHECK(record_ctrl_path("/run/nvme-apstd", "nvme10", buf, sizeof buf) == -ENAMETOOLONG);
        CHECK(strcmp(buf, "/run/nvme-apstd/ctrl-nvme0.orig") == 0);
        CHECK(record_ctrl_path("/run/nvme-apstd", "nvme1", buf, 31) == -ENAMETOOLONG);
        CHECK(record_ctrl_path("", "nvme3", buf, sizeof buf) == 0);
        CHECK(strcmp(buf, "/ctrl-nvme3.orig") == 0);
}

int main(void) {
        REQUIRE(mkdtemp(dir));
        test_header();
        test_apst_round_trip();
        test_apst_refused();
        test_apst_legacy();
        test_files();
        test_read_full();
        test_ctrl_path();
        CHECK(rmdir(dir) == 0);
        return check_exit_status();
}
