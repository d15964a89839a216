/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trace parsing: both formats, the auto-detection, and the errors (each with
 * its line number).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "trace.h"

static int parse(const char *text, const TraceOptions *o, Trace *t, TraceError *e) {
        return trace_parse(text, strlen(text), o, t, e);
}

static void test_time(void) {
        uint64_t ns = 0;

        current = "time";
        CHECK(trace_parse_time("12.5", 4, &ns) == 0 && ns == UINT64_C(12500000000));
        CHECK(trace_parse_time("0.000000001", 11, &ns) == 0 && ns == 1);
        CHECK(trace_parse_time("0.0000000019", 12, &ns) == 0 && ns == 1);   /* 10th digit dropped */
        CHECK(trace_parse_time(".5", 2, &ns) == 0 && ns == UINT64_C(500000000));
        CHECK(trace_parse_time("7", 1, &ns) == 0 && ns == UINT64_C(7000000000));
        CHECK(trace_parse_time("1000000000", 10, &ns) == 0 && ns == UINT64_C(1000000000000000000));
        CHECK(trace_parse_time("1000000000.000", 14, &ns) == 0 && ns == UINT64_C(1000000000000000000));
        /* found by fuzz-trace: the fraction must not carry a time past TRACE_TIME_MAX_S */
        CHECK(trace_parse_time("1000000000.1", 12, &ns) == -EINVAL);
        CHECK(trace_parse_time("1000000000.000000001", 20, &ns) == -EINVAL);
        CHECK(trace_parse_time("1000000001", 10, &ns) == -EINVAL);
        CHECK(trace_parse_time("99999999999999999999999", 23, &ns) == -EINVAL);
        CHECK(trace_parse_time(".", 1, &ns) == -EINVAL);
        CHECK(trace_parse_time("", 0, &ns) == -EINVAL);
        CHECK(trace_parse_time("1.2.3", 5, &ns) == -EINVAL);
        CHECK(trace_parse_time("-1", 2, &ns) == -EINVAL);
        CHECK(trace_parse_time("1e3", 3, &ns) == -EINVAL);
        CHECK(trace_parse_time("+1", 2, &ns) == -EINVAL);
}

static void test_plain(void) {
        Trace t;
        TraceError e;

        current = "plain/good";
        const char *text =
                "# time op bytes\n"
                "\n"
                "0.5 W 8192\n"
                "1 r\n"
                "   2\t\n"
                "3.000000001 F\r\n"
                "4 D 1048576   # discard a MiB\n"
                "0.25 W 0\n"
                "5 65536\n";
        CHECK(parse(text, NULL, &t, &e) == 0);
        CHECK(t.format == TRACE_FORMAT_PLAIN && t.n == 7 && t.device[0] == 0 && t.action == 0);
        if (t.n == 7) {
                /* sorted by time: 0.25 (line 8) comes first */
                CHECK(t.io[0].t_ns == 250000000 && t.io[0].op == TRACE_OP_WRITE && t.io[0].bytes == 0 &&
                      t.io[0].line == 8);
                CHECK(t.io[1].t_ns == 500000000 && t.io[1].op == TRACE_OP_WRITE && t.io[1].bytes == 8192 &&
                      t.io[1].line == 3);
                CHECK(t.io[2].t_ns == UINT64_C(1000000000) && t.io[2].op == TRACE_OP_READ &&
                      t.io[2].bytes == TRACE_BYTES_DEFAULT);
                CHECK(t.io[3].t_ns == UINT64_C(2000000000) && t.io[3].op == TRACE_OP_READ && t.io[3].line == 5);
                CHECK(t.io[4].t_ns == UINT64_C(3000000001) && t.io[4].op == TRACE_OP_FLUSH && t.io[4].bytes == 0);
                CHECK(t.io[5].op == TRACE_OP_DISCARD && t.io[5].bytes == 1048576);
                CHECK(t.io[6].op == TRACE_OP_READ && t.io[6].bytes == 65536);
        }
        trace_done(&t);

        current = "plain/ties-keep-file-order";
        CHECK(parse("1 W\n1 R\n1 F\n", NULL, &t, &e) == 0);
        CHECK(t.n == 3 && t.io[0].op == TRACE_OP_WRITE && t.io[1].op == TRACE_OP_READ && t.io[2].op == TRACE_OP_FLUSH);
        trace_done(&t);

        current = "plain/empty";
        CHECK(parse("", NULL, &t, &e) == 0 && t.n == 0 && t.io == NULL);
        trace_done(&t);
        CHECK(parse("# nothing\n\n   \n", NULL, &t, &e) == 0 && t.n == 0);
        trace_done(&t);
        current = "plain/no-final-newline";
        CHECK(parse("1\n2", NULL, &t, &e) == 0 && t.n == 2);
        trace_done(&t);
}

static void test_plain_bad(void) {
        static const struct {
                const char *text;
                size_t line;
        } cases[] = {
                { "abc\n", 1 },
                { "1 W\n2 X\n", 2 },            /* unknown operation */
                { "1 W\n\n# c\n2 W 12x\n", 4 }, /* bad size */
                { "1 W 10 extra\n", 1 },
                { "1 WR 10\n", 1 },
                { "-1 W\n", 1 },
                { "1e3 W\n", 1 },
                { "1000000001\n", 1 },          /* beyond TRACE_TIME_MAX_S */
                { "1 W 1099511627777\n", 1 },   /* 2^40 + 1 bytes */
                { "1\n2\n3,5\n", 3 },
        };
        Trace t;
        TraceError e;

        current = "plain/bad";
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                e = (TraceError) {};
                CHECK(parse(cases[i].text, NULL, &t, &e) == -EBADMSG);
                CHECK(e.line == cases[i].line && e.reason != NULL);
                if (e.line != cases[i].line)
                        fprintf(stderr, "  case %zu: line %zu, expected %zu\n", i, e.line, cases[i].line);
        }

        current = "plain/long-line";
        size_t n = TRACE_LINE_MAX + 10;
        char *big = malloc(n + 8);
        CHECK(big != NULL);
        if (big) {
                memcpy(big, "1\n", 2);
                memset(big + 2, ' ', n);
                memcpy(big + 2 + n, "2\n", 3);
                e = (TraceError) {};
                CHECK(parse(big, NULL, &t, &e) == -EBADMSG && e.line == 2);
                /* cut it to exactly TRACE_LINE_MAX blanks: accepted, "          2" follows */
                big[2 + TRACE_LINE_MAX] = '\n';
                CHECK(parse(big, NULL, &t, &e) == 0 && t.n == 2);
                trace_done(&t);
                free(big);
        }
        char ok[TRACE_LINE_MAX + 3];
        memset(ok, ' ', TRACE_LINE_MAX);
        ok[0] = '7';
        ok[TRACE_LINE_MAX] = '\n';
        ok[TRACE_LINE_MAX + 1] = 0;
        CHECK(parse(ok, NULL, &t, &e) == 0 && t.n == 1);
        trace_done(&t);

        current = "plain/nul";
        e = (TraceError) {};
        CHECK(trace_parse("1\n2\0\n", 5, NULL, &t, &e) == -EBADMSG && e.line == 2);
}

static const char blk[] =
        "# recorded with blktrace -d /dev/nvme0n1 -o - | blkparse -i -\n"
        "259,0    1        1     0.000000000  1234  Q  WS 2048 + 8 [fio]\n"
        "259,0    1        2     0.000001000  1234  G  WS 2048 + 8 [fio]\n"
        "259,0    1        3     0.000002000  1234  D  WS 2048 + 8 [fio]\n"
        "259,0    0        1     0.000050000     0  C  WS 2048 + 8 [0]\n"
        "259,0    1        4     0.500000000  1234  Q   R 4096 + 16 [cat]\n"
        "259,0    1        5     0.500001000  1234  D   R 4096 + 16 [cat]\n"
        "259,0    1        6     0.700000000   567  Q FWS [jbd2/nvme0n1p2-]\n"
        "259,0    1        7     0.700001000   567  D  FN [jbd2/nvme0n1p2-]\n"
        "259,0    0        2     0.900000000   567  Q  DS 8192 + 2048 [fstrim]\n"
        "259,0    0        3     0.900001000   567  D  DS 8192 + 2048 [fstrim]\n"
        "259,0    1        8     0.800000000  1234  Q  WM 100 + 8 [kworker/1:1H]\n"
        "259,0    1        9     0.800002000  1234  D  WM 100 + 8 [kworker/1:1H]\n"
        "259,0    0        0     0.950000000     0  m   N some message here\n"
        "CPU0 (259,0):\n"
        " Reads Queued:           0,        0KiB  Writes Queued:           0,        0KiB\n"
        "Total (259,0):\n"
        " Reads Queued:           1,        8KiB  Writes Queued:           1,        4KiB\n"
        "Throughput (R/W): 8KiB/s / 4KiB/s\n"
        "Events (259,0): 13 entries\n"
        "Skips: 0 forward (0 -   0.0%)\n";

static void test_blkparse(void) {
        Trace t;
        TraceError e;
        TraceOptions q = { .action = 'Q' };

        current = "blkparse/issue";
        CHECK(parse(blk, NULL, &t, &e) == 0);
        CHECK(t.format == TRACE_FORMAT_BLKPARSE && t.action == 'D' && strcmp(t.device, "259,0") == 0);
        CHECK(t.n == 5);
        if (t.n == 5) {
                CHECK(t.io[0].t_ns == 2000 && t.io[0].op == TRACE_OP_WRITE && t.io[0].bytes == 4096 &&
                      t.io[0].line == 4);
                CHECK(t.io[1].t_ns == 500001000 && t.io[1].op == TRACE_OP_READ && t.io[1].bytes == 8192);
                CHECK(t.io[2].t_ns == 700001000 && t.io[2].op == TRACE_OP_FLUSH && t.io[2].bytes == 0);
                /* sorted: the 0.8 s write (line 13) before the 0.9 s discard (line 11) */
                CHECK(t.io[3].t_ns == 800002000 && t.io[3].op == TRACE_OP_WRITE && t.io[3].line == 13);
                CHECK(t.io[4].t_ns == 900001000 && t.io[4].op == TRACE_OP_DISCARD && t.io[4].bytes == 2048 * 512);
        }
        trace_done(&t);

        current = "blkparse/queue";
        CHECK(parse(blk, &q, &t, &e) == 0);
        CHECK(t.action == 'Q' && t.n == 5);
        if (t.n == 5) {
                CHECK(t.io[0].t_ns == 0 && t.io[0].op == TRACE_OP_WRITE);
                CHECK(t.io[2].t_ns == 700000000 && t.io[2].op == TRACE_OP_FLUSH);  /* "FWS" without data */
        }
        trace_done(&t);

        current = "blkparse/only-queue-events";
        CHECK(parse("8,0 0 1 0.5 1 Q R 0 + 8 [a]\n8,0 0 2 1.5 1 C R 0 + 8 [0]\n8,0 0 3 2.5 1 Q W 8 + 8 [a]\n",
                    NULL, &t, &e) == 0);
        CHECK(t.action == 'Q' && t.n == 2 && strcmp(t.device, "8,0") == 0);
        trace_done(&t);

        current = "blkparse/devices";
        const char *two = "8,0 0 1 0.5 1 D R 0 + 8 [a]\n"
                          "8,16 0 1 0.6 1 D W 0 + 8 [a]\n"
                          "8,0 0 2 0.7 1 D W 8 + 8 [a]\n";
        e = (TraceError) {};
        CHECK(parse(two, NULL, &t, &e) == -EBADMSG && e.line == 2);
        TraceOptions dev = { .device = "8,16" };
        CHECK(parse(two, &dev, &t, &e) == 0 && t.n == 1 && t.io[0].op == TRACE_OP_WRITE &&
              strcmp(t.device, "8,16") == 0);
        trace_done(&t);
        dev.device = "8,0";
        CHECK(parse(two, &dev, &t, &e) == 0 && t.n == 2);
        trace_done(&t);
        dev.device = "9,9";
        CHECK(parse(two, &dev, &t, &e) == 0 && t.n == 0);
        trace_done(&t);

        current = "blkparse/bad-options";
        dev.device = "sda";
        CHECK(parse(two, &dev, &t, &e) == -EINVAL);
        TraceOptions act = { .action = 'C' };
        CHECK(parse(two, &act, &t, &e) == -EINVAL);
}

static void test_blkparse_bad(void) {
        static const struct {
                const char *text;
                size_t line;
        } cases[] = {
                /* a plain line in the middle of events */
                { "8,0 0 1 0.5 1 D R 0 + 8 [a]\n1.0 W\n", 2 },
                { "8,0 0 1 0.5 1 D R 0 + 8 [a]\n8,0 0 2 0.6 1 D W 8 - 8 [a]\n", 2 },   /* '-' for '+' */
                { "8,0 0 1 0.5 1 D R 0 + x [a]\n", 1 },
                { "8,0 0 1 0.5 1 D R 12 [a]\n", 1 },
                { "8,0 0 1 0.5 1 D Z 0 + 8 [a]\n", 1 },       /* bad RWBS */
                { "8,0 0 1 0.5 1 D\n", 1 },                   /* no RWBS */
                { "# c\n8,0 0 1 0.5 1 Q R 0 + 8 [a]\n8,0 0 1 0.5x 1 Q R 0 + 8 [a]\n", 3 },
        };
        Trace t;
        TraceError e;

        current = "blkparse/bad";
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                e = (TraceError) {};
                CHECK(parse(cases[i].text, NULL, &t, &e) == -EBADMSG);
                CHECK(e.line == cases[i].line && e.reason != NULL);
                if (e.line != cases[i].line)
                        fprintf(stderr, "  case %zu: line %zu, expected %zu\n", i, e.line, cases[i].line);
        }

        /* An "N" (no data, no flush) request is skipped, not an error. */
        current = "blkparse/no-data";
        CHECK(parse("8,0 0 1 0.5 1 D N [a]\n8,0 0 2 0.6 1 D R 0 + 8 [a]\n", NULL, &t, &e) == 0 && t.n == 1);
        trace_done(&t);
}

int main(void) {
        test_time();
        test_plain();
        test_plain_bad();
        test_blkparse();
        test_blkparse_bad();

        printf("%u checks, %u failed\n", n_checks, n_failed);
        return n_failed ? 1 : 0;
}
