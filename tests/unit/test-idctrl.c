/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Identify Controller decoding: the seventeen sample drives in both formats, values worked
 * out by hand from the bytes (tests/data/idctrl/), and broken input of every kind.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gaphist.h"
#include "idctrl.h"
#include "macro.h"

static const char *const drives[] = {
        "00-intel-ssdpekkw256g7",
        "02-intel-ssdpedmw012t4",
        "05-samsung-ssd-970-evo-plus-2tb",
        "06-zhitai-tipro7000-1tb",
        "07-zhitai-tiplus5000-1tb",
        "08-kingston-sa2000m81000g",
        "09-t-force-tm8fpl500g",
        "10-samsung-980-pro-with-heatsink-1tb",
        "14-wdc-wds500g2b0c-00pxh0",
        "16-kingston-rbusns8154p3128gj1",
        "18-patriot-m-2-p310-240gb",
        "20-670p-ssdpeknu512gz-nvme-intel-512gb",
        "21-sk-hynix-bc501-hfm256gdjtng-8310a",
        "23-ct1000e100ssd8",
        "26-kbg30zms256g-nvme-toshiba-256gb",
        "27-bg6-kioxia-512gb",
        "28-amazon-elastic-block-store",
};

/* Read a whole file, NUL-terminated (the NUL is not counted in *ret_len). */
static char *read_file(const char *name, const char *ext, size_t *ret_len) {
        char path[512];
        struct stat st;
        char *buf;
        ssize_t k;
        int fd;

        snprintf(path, sizeof(path), "%s/idctrl/%s.%s", TEST_DATA_DIR, name, ext);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "cannot open %s: %m\n", path);
                abort();
        }
        CHECK(fstat(fd, &st) == 0);
        buf = malloc((size_t) st.st_size + 1);
        REQUIRE(buf);
        k = read(fd, buf, (size_t) st.st_size);
        CHECK(k == st.st_size);
        buf[k] = '\0';
        close(fd);
        *ret_len = (size_t) k;
        return buf;
}

/* @src with the first occurrence of @from replaced by @to (must exist). */
static char *replace(const char *src, const char *from, const char *to) {
        const char *at = strstr(src, from);
        size_t head, n;
        char *out;

        REQUIRE(at);
        head = (size_t) (at - src);
        n = strlen(src) - strlen(from) + strlen(to);
        out = malloc(n + 1);
        REQUIRE(out);
        memcpy(out, src, head);
        strcpy(out + head, to);
        strcat(out, at + strlen(from));
        return out;
}

static bool psd_equal(const IdPsd *a, const IdPsd *b) {
        return a->max_power_uw == b->max_power_uw && a->non_operational == b->non_operational &&
               a->enlat_us == b->enlat_us && a->exlat_us == b->exlat_us && a->idle_power_uw == b->idle_power_uw &&
               a->active_power_uw == b->active_power_uw;
}

static bool idctrl_equal(const IdCtrl *a, const IdCtrl *b) {
        if (a->vid != b->vid || a->ssvid != b->ssvid || strcmp(a->serial, b->serial) != 0 ||
            strcmp(a->model, b->model) != 0 || strcmp(a->firmware, b->firmware) != 0 || a->npss != b->npss ||
            a->apst_supported != b->apst_supported)
                return false;
        for (unsigned i = 0; i < IDCTRL_MAX_PS; i++)
                if (!psd_equal(&a->psd[i], &b->psd[i]))
                        return false;
        return true;
}

/* A failing parse must leave *ret alone: fill it with a pattern first and check afterwards. */
static void check_untouched(const IdCtrl *id) {
        const unsigned char *p = (const unsigned char *) id;

        for (size_t i = 0; i < sizeof(*id); i++)
                CHECK(p[i] == 0xa5);
}

static int parse_json_untouched(const char *text) {
        IdCtrl id;
        int r;

        memset(&id, 0xa5, sizeof(id));
        r = idctrl_parse_json(text, &id);
        if (r < 0)
                check_untouched(&id);
        return r;
}

static int parse_binary_untouched(const void *buf, size_t len) {
        IdCtrl id;
        int r;

        memset(&id, 0xa5, sizeof(id));
        r = idctrl_parse_binary(buf, len, &id);
        if (r < 0)
                check_untouched(&id);
        return r;
}

/* /idctrl/formats-agree: binary and JSON of each drive decode to the same IdCtrl. */
static void test_formats_agree(void) {
        for (size_t i = 0; i < ELEMENTSOF(drives); i++) {
                IdCtrl b, j, a1, a2;
                size_t blen, jlen;
                char *bin = read_file(drives[i], "bin", &blen);
                char *json = read_file(drives[i], "json", &jlen);

                CHECK(idctrl_parse_binary(bin, blen, &b) == 0);
                CHECK(idctrl_parse_json(json, &j) == 0);
                if (!idctrl_equal(&b, &j)) {
                        fprintf(stderr, "%s: binary and JSON differ\n", drives[i]);
                        abort();
                }
                CHECK(idctrl_parse_any(bin, blen, &a1) == 0);
                CHECK(idctrl_parse_any(json, jlen, &a2) == 0);
                CHECK(idctrl_equal(&a1, &b));
                CHECK(idctrl_equal(&a2, &b));
                /* psd beyond npss stay zero */
                for (unsigned k = b.npss + 1u; k < IDCTRL_MAX_PS; k++)
                        CHECK(b.psd[k].max_power_uw == 0 && b.psd[k].enlat_us == 0);
                free(bin);
                free(json);
        }
}

/* /idctrl/seed/values: INTEL SSDPEKKW256G7, read off the hex dump by hand:
 *   0x000: 86 80 86 80 -> vid = ssvid = 0x8086; sn "SAMPLE5899" + blanks; mn at 0x18;
 *   fr (0x40..0x47) all blanks -> ""; byte 263 = 04 (npss), byte 265 = 01 (apsta);
 *   PSD0 @0x800: 84 03 00 00 | 05 00 00 00 | 05 00 00 00 -> mp 900 x 0.01 W = 9 W, op, 5/5 µs;
 *   PSD3 @0x860: 07 00 00 02 | 10 27 00 00 | 2c 01 00 00 -> 7 x 0.01 W = 70 mW, NOPS, 10000/300 µs;
 *   PSD4 @0x880: 32 00 00 03 | d0 07 00 00 | 10 27 00 00 -> MXPS: 50 x 0.0001 W = 5 mW, NOPS, 2000/10000 µs.
 */
static void test_seed_values(void) {
        size_t len;
        char *bin = read_file(drives[0], "bin", &len);
        IdCtrl id;

        CHECK(idctrl_parse_binary(bin, len, &id) == 0);
        CHECK(id.vid == 0x8086 && id.ssvid == 0x8086);
        CHECK(strcmp(id.model, "INTEL SSDPEKKW256G7") == 0);
        CHECK(strcmp(id.serial, "SAMPLE5899") == 0);
        CHECK(strcmp(id.firmware, "") == 0);
        CHECK(id.npss == 4 && id.apst_supported);

        CHECK(id.psd[0].max_power_uw == 9000000 && !id.psd[0].non_operational);
        CHECK(id.psd[0].enlat_us == 5 && id.psd[0].exlat_us == 5);
        CHECK(id.psd[1].max_power_uw == 4600000 && id.psd[1].enlat_us == 30);
        CHECK(id.psd[2].max_power_uw == 3800000 && !id.psd[2].non_operational);
        CHECK(id.psd[3].max_power_uw == 70000 && id.psd[3].non_operational);
        CHECK(id.psd[3].enlat_us == 10000 && id.psd[3].exlat_us == 300);
        CHECK(id.psd[4].max_power_uw == 5000 && id.psd[4].non_operational);
        CHECK(id.psd[4].enlat_us == 2000 && id.psd[4].exlat_us == 10000);
        for (unsigned i = 0; i <= 4; i++)
                CHECK(id.psd[i].idle_power_uw == 0 && id.psd[i].active_power_uw == 0);
        free(bin);
}

/* /idctrl/others/values: the scale bit on the other drives (JSON "max_power", "flags").
 *   Kingston A2000 ps3: 450, flags 3 -> 450 x 100 µW = 45 mW; ps4: 40, flags 3 -> 4 mW.
 *   980 PRO ps3: 4, flags 2 -> 4 x 10000 µW = 40 mW (no MXPS). SN550 ps3: 250, flags 3 -> 25 mW.
 *   EBS: npss 0, ps0 operational, 1 x 0.01 W, latencies 1000000 µs, firmware "2.0".
 *   ZHITAI TiPro7000 ps4: 2, flags 2 -> 20 mW, exit 60000 µs. KIOXIA BG6 ps4: 30, flags 3 -> 3 mW. */
static void test_other_values(void) {
        size_t len;
        char *kingston = read_file("08-kingston-sa2000m81000g", "json", &len);
        char *pro = read_file("10-samsung-980-pro-with-heatsink-1tb", "bin", &len);
        char *wdc = read_file("14-wdc-wds500g2b0c-00pxh0", "bin", &len);
        char *ebs = read_file("28-amazon-elastic-block-store", "bin", &len);
        char *zhitai = read_file("06-zhitai-tipro7000-1tb", "bin", &len);
        char *kioxia = read_file("27-bg6-kioxia-512gb", "bin", &len);
        IdCtrl id;

        CHECK(idctrl_parse_json(kingston, &id) == 0);
        CHECK(strcmp(id.model, "KINGSTON SA2000M81000G") == 0 && strcmp(id.firmware, "S5Z42105") == 0);
        CHECK(id.psd[3].max_power_uw == 45000 && id.psd[3].enlat_us == 2000 && id.psd[3].exlat_us == 2000);
        CHECK(id.psd[4].max_power_uw == 4000 && id.psd[4].enlat_us == 15000 && id.psd[4].non_operational);
        CHECK(id.psd[0].max_power_uw == 9000000 && id.psd[0].enlat_us == 0);

        CHECK(idctrl_parse_binary(pro, len, &id) == 0);
        CHECK(id.psd[3].max_power_uw == 40000 && id.psd[3].enlat_us == 2000 && id.psd[3].exlat_us == 1200);
        CHECK(id.psd[2].exlat_us == 1000 && !id.psd[2].non_operational);

        CHECK(idctrl_parse_binary(wdc, len, &id) == 0);
        CHECK(strcmp(id.model, "WDC WDS500G2B0C-00PXH0") == 0);
        CHECK(id.psd[3].max_power_uw == 25000 && id.psd[4].exlat_us == 39000);

        CHECK(idctrl_parse_binary(ebs, len, &id) == 0);
        CHECK(id.npss == 0 && !id.psd[0].non_operational && id.psd[0].max_power_uw == 10000);
        CHECK(id.psd[0].enlat_us == 1000000 && strcmp(id.firmware, "2.0") == 0);

        CHECK(idctrl_parse_binary(zhitai, len, &id) == 0);
        CHECK(strcmp(id.model, "ZHITAI TiPro7000 1TB") == 0 && id.npss == 4);
        CHECK(id.psd[4].max_power_uw == 20000 && id.psd[4].exlat_us == 60000 && id.psd[4].non_operational);
        CHECK(idctrl_parse_binary(kioxia, len, &id) == 0);
        CHECK(id.psd[4].max_power_uw == 3000 && id.psd[4].enlat_us == 3000 && id.psd[4].exlat_us == 25000);
        free(zhitai);
        free(kioxia);
        free(kingston);
        free(pro);
        free(wdc);
        free(ebs);
}

/* /idctrl/binary/power-scales: IDLP/IPS and ACTP/APS patched into the seed's PSD0.
 *   IDLP = 0x0123 = 291; IPS (byte 18, bits 7:6) 01 -> 291 x 100 µW = 29100 µW,
 *   10 -> 291 x 10000 = 2910000 µW, 00 and 11 -> not reported (0).
 *   ACTP = 0x00c8 = 200 with byte 22 = 0x82 (APS 10, APW 2) -> 2000000 µW;
 *   byte 22 = 0x43 (APS 01, APW 3) -> 200 x 100 µW = 20000 µW (APW must not leak into the scale). */
static void test_binary_power_scales(void) {
        static const struct {
                const char *name;
                uint8_t ips;
                uint32_t want_uw;
        } cases[] = {
                { "/idctrl/binary/ips/not-reported", 0x00, 0 },
                { "/idctrl/binary/ips/0.0001W", 0x40, 29100 },
                { "/idctrl/binary/ips/0.01W", 0x80, 2910000 },
                { "/idctrl/binary/ips/reserved", 0xc0, 0 },
                { "/idctrl/binary/ips/low-bits-ignored", 0x7f, 29100 },
        };
        size_t len;
        char *bin = read_file(drives[0], "bin", &len);
        uint8_t *psd0 = (uint8_t *) bin + 2048;

        psd0[16] = 0x23;
        psd0[17] = 0x01;
        psd0[20] = 0xc8;
        psd0[21] = 0x00;
        psd0[22] = 0x82;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                IdCtrl id;

                psd0[18] = cases[i].ips;
                CHECK(idctrl_parse_binary(bin, len, &id) == 0);
                if (id.psd[0].idle_power_uw != cases[i].want_uw) {
                        fprintf(stderr, "%s: got %u\n", cases[i].name, id.psd[0].idle_power_uw);
                        abort();
                }
                CHECK(id.psd[0].active_power_uw == 2000000);
        }
        psd0[22] = 0x43;
        {
                IdCtrl id;

                CHECK(idctrl_parse_binary(bin, len, &id) == 0);
                CHECK(id.psd[0].active_power_uw == 20000);
        }
        /* largest MP with 0.01 W units fits: 65535 x 10000 µW */
        psd0[0] = 0xff;
        psd0[1] = 0xff;
        {
                IdCtrl id;

                CHECK(idctrl_parse_binary(bin, len, &id) == 0);
                CHECK(id.psd[0].max_power_uw == 655350000u);
        }
        free(bin);
}

/* /idctrl/json/power-scales: the same through nvme-cli's "idle_scale"/"active_scale" (2-bit values). */
static void test_json_power_scales(void) {
        size_t len;
        char *json = read_file(drives[0], "json", &len);
        char *a = replace(json, "\"idle_power\":0,\n      \"idle_scale\":0,\n      \"active_power\":0,",
                          "\"idle_power\":291,\n      \"idle_scale\":1,\n      \"active_power\":200,");
        char *b = replace(a, "\"active_scale\":0", "\"active_scale\":2");
        char *c = replace(json, "\"idle_power\":0,\n      \"idle_scale\":0,",
                          "\"idle_power\":291,\n      \"idle_scale\":2,");
        IdCtrl id;

        CHECK(idctrl_parse_json(b, &id) == 0);
        CHECK(id.psd[0].idle_power_uw == 29100 && id.psd[0].active_power_uw == 2000000);
        CHECK(idctrl_parse_json(c, &id) == 0);
        CHECK(id.psd[0].idle_power_uw == 2910000);
        free(json);
        free(a);
        free(b);
        free(c);
}

/* /idctrl/binary/bad: sizes, npss, strings. */
static void test_binary_bad(void) {
        size_t len;
        char *bin = read_file(drives[0], "bin", &len);
        IdCtrl id;

        CHECK(parse_binary_untouched(bin, 4095) == -EBADMSG);
        CHECK(parse_binary_untouched(bin, 0) == -EBADMSG);
        {
                char *big = calloc(1, 4097);

                REQUIRE(big);
                memcpy(big, bin, 4096);
                CHECK(parse_binary_untouched(big, 4097) == -EBADMSG);
                memset(&id, 0xa5, sizeof(id));
                CHECK(idctrl_parse_any(big, 4097, &id) == -EBADMSG);
                check_untouched(&id);
                free(big);
        }
        memset(&id, 0xa5, sizeof(id));
        CHECK(idctrl_parse_any(bin, 4095, &id) == -EBADMSG);
        check_untouched(&id);

        /* npss = 32 (byte 263): one past the last PSD; 31 is still fine, 255 is not */
        bin[263] = 32;
        CHECK(parse_binary_untouched(bin, len) == -ERANGE);
        bin[263] = (char) 255;
        CHECK(parse_binary_untouched(bin, len) == -ERANGE);
        bin[263] = 31;
        CHECK(idctrl_parse_binary(bin, len, &id) == 0 && id.npss == 31);
        bin[263] = 4;

        /* apsta: only bit 0 counts */
        bin[265] = 0x02;
        CHECK(idctrl_parse_binary(bin, len, &id) == 0 && !id.apst_supported);
        bin[265] = 0x01;

        /* non-printable model bytes become '?', trailing blanks go */
        bin[24] = 0x01;
        bin[25] = (char) 0xc3;
        CHECK(idctrl_parse_binary(bin, len, &id) == 0);
        CHECK(strcmp(id.model, "??TEL SSDPEKKW256G7") == 0);
        /* a model that fills all 40 bytes keeps them all */
        memset(bin + 24, 'M', 40);
        CHECK(idctrl_parse_binary(bin, len, &id) == 0);
        CHECK(strlen(id.model) == 40 && id.model[39] == 'M');
        /* NUL padding is trimmed like space padding */
        memset(bin + 24, 0, 40);
        memcpy(bin + 24, "ABC", 3);
        CHECK(idctrl_parse_binary(bin, len, &id) == 0 && strcmp(id.model, "ABC") == 0);
        free(bin);
}

/* /idctrl/copy-string: sanitising and trimming on its own. */
static void test_copy_string(void) {
        static const struct {
                const char *name;
                const char *src;
                size_t n;
                const char *want;
        } cases[] = {
                { "/idctrl/copy-string/padded", "AB  ", 4, "AB" },
                { "/idctrl/copy-string/leading-kept", "  AB", 4, "  AB" },
                { "/idctrl/copy-string/blank", "    ", 4, "" },
                { "/idctrl/copy-string/inner-space", "A B ", 4, "A B" },
                { "/idctrl/copy-string/tab", "A\tB", 3, "A?B" },
                { "/idctrl/copy-string/del", "A\x7f", 2, "A?" },
                { "/idctrl/copy-string/high", "\xff\x80Z", 3, "??Z" },
                { "/idctrl/copy-string/nul-inside", "A\0B", 3, "A?B" },
                { "/idctrl/copy-string/not-terminated", "ABCDEFGH", 4, "ABCD" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char dst[16];

                memset(dst, 'x', sizeof(dst));
                idctrl_copy_string(dst, cases[i].src, cases[i].n);
                if (strcmp(dst, cases[i].want) != 0) {
                        fprintf(stderr, "%s: got \"%s\"\n", cases[i].name, dst);
                        abort();
                }
        }
}

/* /idctrl/json/bad: each case edits the seed's JSON and expects an error. */
static void test_json_bad(void) {
        static const struct {
                const char *name;
                const char *from;
                const char *to;
                int want;
        } cases[] = {
                { "/idctrl/json/npss-32", "\"npss\":4", "\"npss\":32", -ERANGE },
                { "/idctrl/json/npss-negative", "\"npss\":4", "\"npss\":-1", -ERANGE },
                { "/idctrl/json/npss-256", "\"npss\":4", "\"npss\":256", -ERANGE },
                { "/idctrl/json/npss-fraction", "\"npss\":4", "\"npss\":4.5", -EBADMSG },
                { "/idctrl/json/npss-exponent", "\"npss\":4", "\"npss\":4e0", -EBADMSG },
                { "/idctrl/json/npss-string", "\"npss\":4", "\"npss\":\"4\"", -EBADMSG },
                { "/idctrl/json/npss-leading-zero", "\"npss\":4", "\"npss\":04", -EBADMSG },
                { "/idctrl/json/npss-huge", "\"npss\":4", "\"npss\":123456789012345678901234567890", -ERANGE },
                { "/idctrl/json/npss-3-for-5-psds", "\"npss\":4", "\"npss\":3", -EBADMSG },
                { "/idctrl/json/npss-missing", "\"npss\":4,", "", -EBADMSG },
                { "/idctrl/json/mn-missing", "\"mn\":", "\"mnx\":", -EBADMSG },
                { "/idctrl/json/psds-missing", "\"psds\":", "\"psdx\":", -EBADMSG },
                { "/idctrl/json/apsta-missing", "\"apsta\":1,", "", -EBADMSG },
                { "/idctrl/json/vid-range", "\"vid\":32902", "\"vid\":65536", -ERANGE },
                { "/idctrl/json/mn-too-long", "\"mn\":\"INTEL SSDPEKKW256G7                     \"",
                  "\"mn\":\"INTEL SSDPEKKW256G7                      \"", -EBADMSG },
                { "/idctrl/json/mn-bad-escape", "\"mn\":\"INTEL", "\"mn\":\"\\xINTEL", -EBADMSG },
                { "/idctrl/json/mn-short-unicode", "\"mn\":\"INTEL", "\"mn\":\"\\u12", -EBADMSG },
                { "/idctrl/json/mn-too-long-unicode", "\"mn\":\"INTEL", "\"mn\":\"\u00e9INTEL", -EBADMSG },
                { "/idctrl/json/fr-not-string", "\"fr\":\"        \"", "\"fr\":109", -EBADMSG },
                { "/idctrl/json/apsta-null", "\"apsta\":1", "\"apsta\":null", -EBADMSG },
                { "/idctrl/json/psd-exit-missing", "\"exit_lat\":5,", "", -EBADMSG },
                { "/idctrl/json/psd-flags-missing", "\"flags\":0,", "", -EBADMSG },
                { "/idctrl/json/psd-max-power-range", "\"max_power\":900", "\"max_power\":65536", -ERANGE },
                { "/idctrl/json/psd-exit-range", "\"exit_lat\":5", "\"exit_lat\":4294967296", -ERANGE },
                { "/idctrl/json/psd-idle-scale-range", "\"idle_scale\":0", "\"idle_scale\":4", -ERANGE },
                { "/idctrl/json/psd-not-object", "\"psds\":[\n    {", "\"psds\":[ 1, {", -EBADMSG },
                { "/idctrl/json/psds-not-array", "\"psds\":[", "\"psds\":{\"a\":[", -EBADMSG },
                { "/idctrl/json/trailing-comma", "\"ofcs\":0,", "\"ofcs\":0,,", -EBADMSG },
                { "/idctrl/json/missing-colon", "\"ofcs\":0", "\"ofcs\" 0", -EBADMSG },
                { "/idctrl/json/comment", "\"ofcs\":0", "/* c */ \"ofcs\":0", -EBADMSG },
                { "/idctrl/json/nan", "\"npss\":4", "\"npss\":NaN", -EBADMSG },
                { "/idctrl/json/bad-literal", "\"ofcs\":0", "\"ofcs\":tru", -EBADMSG },
                { "/idctrl/json/garbage-after", "\n}\n", "\n}\n}", -EBADMSG },
                { "/idctrl/json/not-object", "{\n  \"vid\"", "[\n  \"vid\"", -EBADMSG },
        };
        size_t len;
        char *json = read_file(drives[0], "json", &len);

        unsigned failed = 0;

        CHECK(parse_json_untouched(json) == 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *t = replace(json, cases[i].from, cases[i].to);
                int r = parse_json_untouched(t);

                if (r != cases[i].want) {
                        fprintf(stderr, "%s: got %d, want %d\n", cases[i].name, r, cases[i].want);
                        failed++;
                }
                free(t);
        }
        free(json);
        CHECK(failed == 0);
}

/* /idctrl/json/accepted: valid variations that must still decode. */
static void test_json_accepted(void) {
        size_t len;
        char *json = read_file(drives[0], "json", &len);
        IdCtrl ref, id;
        char *t;

        CHECK(idctrl_parse_json(json, &ref) == 0);

        /* escapes in the model: \u0001 is not printable, \u00e9 not ASCII, \/ is '/' */
        t = replace(json, "\"mn\":\"INTEL SSDPEKKW256G7", "\"mn\":\"\\u0001NTEL\\/SSDPEKKW256G\\u00e9");
        CHECK(idctrl_parse_json(t, &id) == 0);
        CHECK(strcmp(id.model, "?NTEL/SSDPEKKW256G?") == 0);
        free(t);

        /* unknown keys with nested values are skipped */
        t = replace(json, "\"ofcs\":0", "\"ofcs\":0, \"x\":{\"a\":[1,-2.5e3,true,false,null,\"s\"],\"b\":{}}");
        CHECK(idctrl_parse_json(t, &id) == 0 && idctrl_equal(&id, &ref));
        free(t);

        /* json-c's grammar, for text nvme-cli (which writes with json-c) never prints: a key given twice
         * counts once, the last time (as in jq or Python); single-quoted names and raw control characters
         * in strings are read as what they plainly mean, the latter sanitised like any byte. */
        t = replace(json, "\"ssvid\":32902", "\"vid\":4660");
        CHECK(idctrl_parse_json(t, &id) == 0 && id.vid == 4660 && id.ssvid == 0);
        free(t);
        t = replace(json, "\"flags\":0,", "\"flags\":0, \"flags\":2,");
        CHECK(idctrl_parse_json(t, &id) == 0 && id.psd[0].non_operational && !ref.psd[0].non_operational);
        free(t);
        t = replace(json, "\"ofcs\":0", "'ofcs':0");
        CHECK(idctrl_parse_json(t, &id) == 0 && idctrl_equal(&id, &ref));
        free(t);
        t = replace(json, "\"mn\":\"INTEL", "\"mn\":\"\nNTEL");
        CHECK(idctrl_parse_json(t, &id) == 0 && strcmp(id.model, "?NTEL SSDPEKKW256G7") == 0);
        free(t);

        /* one character per code point: a 40-character model with a non-ASCII one still fits */
        t = replace(json, "\"mn\":\"INTEL SSDPEKKW256G7                     \"",
                    "\"mn\":\"\u00e9NTEL SSDPEKKW256G7                   \u20acX\"");
        CHECK(idctrl_parse_json(t, &id) == 0);
        CHECK(strcmp(id.model, "?NTEL SSDPEKKW256G7                   ?X") == 0);
        free(t);

        /* newer nvme-cli: "max_power_scale" + "non-operational_state" instead of "flags" */
        t = replace(json, "\"flags\":3,", "\"max_power_scale\":1, \"non-operational_state\":1,");
        CHECK(idctrl_parse_json(t, &id) == 0 && idctrl_equal(&id, &ref));
        free(t);

        /* parse_any: leading blanks, and a trailing NUL from a reader */
        t = malloc(len + 4);
        REQUIRE(t);
        memcpy(t, " \n\t", 3);
        memcpy(t + 3, json, len + 1);
        CHECK(idctrl_parse_any(t, len + 4, &id) == 0 && idctrl_equal(&id, &ref));
        free(t);
        free(json);
}

/* /idctrl/json/robust: truncation at every length, deep nesting, not JSON at all. */
static void test_json_robust(void) {
        static const char *const junk[] = {
                "", " ", "{", "}", "{}", "[]", "null", "\"mn\"", "hello", "{\"npss\":4", "{\"npss\"}", "{,}",
                "{\"a\":1,}", "{\"a\" : [1,]}", "{\"a\":\"\\", "{\"a\":\"\\u00", "{\"a\":-}", "{\"a\":1.}",
                "{\"a\":1e}", "{\"a\":01}",
        };
        size_t len;
        char *json = read_file(drives[0], "json", &len);
        char *prefix = malloc(len + 1);
        size_t last_brace = len;
        char *deep;
        IdCtrl id;

        CHECK(prefix);
        while (last_brace > 0 && json[last_brace - 1] != '}')
                last_brace--;
        /* every strict prefix that ends before the closing brace is incomplete */
        for (size_t n = 0; n < last_brace; n++) {
                memcpy(prefix, json, n);
                prefix[n] = '\0';
                CHECK(parse_json_untouched(prefix) == -EBADMSG);
                CHECK(idctrl_parse_any(json, n, &id) == -EBADMSG);
        }
        free(prefix);

        for (size_t i = 0; i < ELEMENTSOF(junk); i++)
                if (parse_json_untouched(junk[i]) != -EBADMSG) {
                        fprintf(stderr, "/idctrl/json/junk/%zu accepted\n", i);
                        abort();
                }
        memset(&id, 0xa5, sizeof(id));
        CHECK(idctrl_parse_any("hello", 5, &id) == -EBADMSG);
        check_untouched(&id);

        /* 100000 nested arrays in an unknown key: refused, no stack overflow */
        deep = malloc(200100);
        REQUIRE(deep);
        strcpy(deep, "{\"x\":");
        memset(deep + 5, '[', 100000);
        memset(deep + 100005, ']', 100000);
        strcpy(deep + 200005, "}");
        CHECK(parse_json_untouched(deep) == -EBADMSG);
        /* ... while 10 levels are fine JSON, though without the fields we need */
        CHECK(parse_json_untouched("{\"x\":[[[[[[[[[[]]]]]]]]]]}") == -EBADMSG);
        free(deep);

        /* the nesting bound exactly: the seed with 16 levels in an unknown key parses, 17 do not */
        for (unsigned levels = 16; levels <= 17; levels++) {
                char nest[64] = "\"ofcs\":";
                size_t k = strlen(nest);
                char *t;

                for (unsigned l = 1; l < levels; l++)   /* the top-level object is the first level */
                        nest[k++] = '[';
                for (unsigned l = 1; l < levels; l++)
                        nest[k++] = ']';
                nest[k] = '\0';
                t = replace(json, "\"ofcs\":0", nest);
                CHECK(idctrl_parse_json(t, &id) == (levels <= 16 ? 0 : -EBADMSG));
                free(t);
        }

        /* the size bound: the seed padded with blanks to just over 1 MiB is refused, to 1 MiB not */
        for (size_t total = 1024 * 1024; total <= 1024 * 1024 + 1; total++) {
                char *big = malloc(total + 1);

                CHECK(big && len < total);
                memcpy(big, json, len);
                memset(big + len, ' ', total - len);
                big[total] = '\0';
                CHECK(idctrl_parse_json(big, &id) == (total <= 1024 * 1024 ? 0 : -EBADMSG));
                CHECK(idctrl_parse_any(big, total, &id) == (total <= 1024 * 1024 ? 0 : -EBADMSG));
                free(big);
        }
        free(json);
}

/* /idctrl/json/psd-count: 32 descriptors (npss 31) are the most the structure holds; a 33rd is refused
 * before it is stored anywhere. Each psd N: non-operational, max_power N, enlat 10·N, exlat N. */
static void test_json_psd_count(void) {
        for (unsigned count = 31; count <= 33; count++) {
                size_t size = 256 + 128 * count;
                char *t = malloc(size);
                size_t pos;
                IdCtrl id;
                int r;

                REQUIRE(t);
                pos = (size_t) snprintf(t, size, "{\"vid\":1,\"mn\":\"M\",\"fr\":\"F\",\"npss\":31,\"apsta\":1,\"psds\":[");
                for (unsigned i = 0; i < count; i++)
                        pos += (size_t) snprintf(t + pos, size - pos,
                                                 "%s{\"max_power\":%u,\"flags\":2,\"entry_lat\":%u,\"exit_lat\":%u}",
                                                 i > 0 ? "," : "", i, 10 * i, i);
                pos += (size_t) snprintf(t + pos, size - pos, "]}");
                CHECK(pos < size);

                r = parse_json_untouched(t);
                if (count == 32) {
                        CHECK(r == 0);
                        CHECK(idctrl_parse_json(t, &id) == 0);
                        CHECK(id.npss == 31 && id.psd[31].max_power_uw == 310000 && id.psd[31].enlat_us == 310);
                        CHECK(id.psd[31].exlat_us == 31 && id.psd[31].non_operational);
                        CHECK(strcmp(id.model, "M") == 0 && strcmp(id.serial, "") == 0 && id.ssvid == 0);
                } else
                        CHECK(r == -EBADMSG);
                free(t);
        }
}

/* /idctrl/why: a failure names the field and what is wrong with it. */
static void test_why(void) {
        static const struct {
                const char *from;
                const char *to;
                int want;
                const char *reason;
        } cases[] = {
                { "\"npss\":4", "\"npss\":32", -ERANGE, "\"npss\": 32 is larger than 31" },
                { "\"npss\":4", "\"npss\":-1", -ERANGE, "\"npss\": negative" },
                { "\"npss\":4", "\"npss\":3", -EBADMSG, "\"npss\" is 3 but \"psds\" has 5 power states (want npss + 1)" },
                { "\"apsta\":1,", "", -EBADMSG, "\"apsta\" missing" },
                { "\"vid\":32902", "\"vid\":65536", -ERANGE, "\"vid\": 65536 is larger than 65535" },
                { "\"vid\":32902", "\"vid\":\"8086\"", -EBADMSG, "\"vid\": not an unsigned integer" },
                { "\"exit_lat\":5", "\"exit_lat\":4294967296", -ERANGE,
                  "psds[0].exit_lat: 4294967296 is larger than 4294967295" },
                { "\"exit_lat\":5,", "", -EBADMSG, "psds[0]: \"exit_lat\" missing" },
                { "\"psds\":[\n    {", "\"psds\":[ 1, {", -EBADMSG, "psds[0]: not an object" },
                { "\"mn\":\"INTEL SSDPEKKW256G7                     \"",
                  "\"mn\":\"INTEL SSDPEKKW256G7                      \"", -EBADMSG,
                  "\"mn\": longer than the 40 bytes of its Identify field" },
                { "\n}\n", "\n}\n}", -EBADMSG, "not JSON: garbage after the object at byte" },
                { "\"ofcs\":0", "\"ofcs\":tru", -EBADMSG, "not JSON: " },
        };
        size_t len;
        char *json = read_file(drives[0], "json", &len);
        char why[IDCTRL_REASON_MAX];
        unsigned failed = 0;
        IdCtrl id;

        CHECK(idctrl_parse_any_why(json, len, &id, why, sizeof(why)) == 0 && why[0] == '\0');
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *t = replace(json, cases[i].from, cases[i].to);
                int r = idctrl_parse_any_why(t, strlen(t), &id, why, sizeof(why));

                if (r != cases[i].want || strncmp(why, cases[i].reason, strlen(cases[i].reason)) != 0) {
                        fprintf(stderr, "/idctrl/why/%zu: got %d \"%s\", want %d \"%s\"\n", i, r, why, cases[i].want,
                                cases[i].reason);
                        failed++;
                }
                free(t);
        }
        free(json);

        /* the binary format and neither format have reasons too; a NULL reason buffer is fine */
        CHECK(idctrl_parse_any_why("hello", 5, &id, why, sizeof(why)) == -EBADMSG);
        CHECK(strcmp(why, "5 bytes: neither the 4096 bytes of `nvme id-ctrl -b` nor JSON") == 0);
        json = read_file(drives[0], "bin", &len);
        json[263] = 40;
        CHECK(idctrl_parse_any_why(json, len, &id, why, sizeof(why)) == -ERANGE);
        CHECK(strcmp(why, "npss 40 is larger than 31") == 0);
        CHECK(idctrl_parse_any_why(json, len, &id, NULL, 0) == -ERANGE);
        /* a short buffer truncates the reason, never overflows it */
        CHECK(idctrl_parse_any_why(json, len, &id, why, 8) == -ERANGE && strcmp(why, "npss 40") == 0);
        free(json);
        CHECK(failed == 0);
}

/* The floors for gaps a wake-up hides: 0, then each non-operational state's advertised exit
 * latency once, ascending, the shortest kept when there are more. */
static void test_wake_floors(void) {
        IdCtrl id = { .npss = 4 };
        uint64_t f[GAP_HIDE_FLOORS];

        CHECK(idctrl_wake_floors(&id, f, GAP_HIDE_FLOORS) == 0 && f[0] == 0 && f[1] == 0);   /* no state */
        id.psd[3] = (IdPsd) { .non_operational = true, .exlat_us = 8000 };
        id.psd[4] = (IdPsd) { .non_operational = true, .exlat_us = 1200 };
        id.psd[2] = (IdPsd) { .non_operational = false, .exlat_us = 30 };     /* operational: not a floor */
        CHECK(idctrl_wake_floors(&id, f, GAP_HIDE_FLOORS) == 3);
        CHECK(f[0] == 0 && f[1] == 1200000 && f[2] == 8000000 && f[3] == 0);
        id.npss = 8;
        id.psd[5] = (IdPsd) { .non_operational = true, .exlat_us = 1200 };   /* the same: once */
        id.psd[6] = (IdPsd) { .non_operational = true, .exlat_us = 500 };
        id.psd[7] = (IdPsd) { .non_operational = true, .exlat_us = 30000 };   /* the longest: dropped */
        id.psd[8] = (IdPsd) { .non_operational = true, .exlat_us = 0 };       /* none reported */
        CHECK(idctrl_wake_floors(&id, f, GAP_HIDE_FLOORS) == 4);
        CHECK(f[0] == 0 && f[1] == 500000 && f[2] == 1200000 && f[3] == 8000000);
}

int main(void) {
        test_formats_agree();
        test_seed_values();
        test_other_values();
        test_binary_power_scales();
        test_json_power_scales();
        test_binary_bad();
        test_copy_string();
        test_json_bad();
        test_json_accepted();
        test_json_robust();
        test_json_psd_count();
        test_why();
        test_wake_floors();
        return check_exit_status();
}
