/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * I/O traces for the policy simulator (pure: parses a buffer the caller
 * read, never touches the file system, never prints).
 *
 * Two text formats, told apart by the first line that is not blank or a
 * comment:
 *
 *  - plain: one I/O per line, "TIME_S [R|W|F|D] [BYTES]", fields separated
 *    by blanks, '#' starts a comment. TIME_S is decimal seconds (at most nine
 *    fractional digits are kept, i.e. ns resolution; no sign, no exponent).
 *    The operation defaults to R and the size to 4096 bytes.
 *
 *  - blkparse: what `blkparse -i TRACE` prints by default, e.g.
 *      "259,0    1       10     0.000270532  1234  D  WS 2048 + 8 [fio]".
 *    Only the D (issued to the driver) or Q (queued) events of one device are kept: D when
 *    the device has any, else Q (or as TraceOptions asks). Other events and
 *    the summary blkparse prints at the end ("CPU0 (259,0):", "Total ...")
 *    are skipped.
 *
 * The parse is bounded for fuzzing: a line longer than TRACE_LINE_MAX is an
 * error, memory grows only with the number of I/Os kept (each needs at least
 * two input bytes), and every error names its 1-based line number. The I/Os
 * come back sorted by time (stable: ties keep file order), because
 * blkparse interleaves per-CPU streams.
 */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* Longest line accepted, newline excluded. A blkparse event line is < 200
 * bytes even with a long process name (TASK_COMM_LEN 16); 4 KiB leaves room
 * for comments without letting one line be unbounded. */
#define TRACE_LINE_MAX 4096u
/* Largest time accepted, in seconds: 10^9 s (31 years) keeps every time in
 * ns far from INT64_MAX, so sums of a few times cannot overflow. */
#define TRACE_TIME_MAX_S 1000000000u
/* Largest I/O size accepted: 1 TiB, far above any single request (the
 * kernel's max_hw_sectors_kb tops out in MiB) and safe to sum. */
#define TRACE_BYTES_MAX (UINT64_C(1) << 40)
/* Size of a plain-text I/O that gives none. */
#define TRACE_BYTES_DEFAULT 4096u

typedef enum TraceOp {
        TRACE_OP_READ,
        TRACE_OP_WRITE,
        TRACE_OP_FLUSH,
        TRACE_OP_DISCARD,
        _TRACE_OP_MAX,
        _TRACE_OP_INVALID = -EINVAL,
} TraceOp;

typedef enum TraceFormat {
        TRACE_FORMAT_PLAIN,
        TRACE_FORMAT_BLKPARSE,
        _TRACE_FORMAT_MAX,
        _TRACE_FORMAT_INVALID = -EINVAL,
} TraceFormat;

typedef struct TraceIo {
        uint64_t t_ns;          /* arrival, ns since the start of the trace */
        uint64_t bytes;         /* payload; 0 for a flush without data */
        TraceOp op;
        uint32_t line;          /* line of the input it came from */
} TraceIo;

typedef struct TraceOptions {
        const char *device;     /* blkparse: "MAJ,MIN" to keep; NULL = the only one there is */
        char action;            /* blkparse: 'D' or 'Q'; 0 = D if the device has any, else Q */
} TraceOptions;

typedef struct Trace {
        TraceIo *io;            /* sorted by t_ns; malloc'd, free with trace_done() */
        size_t n;
        TraceFormat format;
        char device[24];        /* blkparse: "MAJ,MIN" the events came from; "" for plain */
        char action;            /* blkparse: 'D' or 'Q' used; 0 for plain */
} Trace;

typedef struct TraceError {
        size_t line;            /* 1-based; 0 when the error is not about one line */
        const char *reason;     /* static string */
} TraceError;

/**
 * trace_parse() - parse a trace held in memory
 * @buf: the text (need not be NUL-terminated; a NUL byte is an error)
 * @len: its length
 * @opts: may be NULL (defaults above)
 * @ret: filled in on success only; free with trace_done()
 * @ret_error: on -EBADMSG, where and why (may be NULL)
 *
 * An empty trace (no I/O) is valid.
 * Return: 0, -EBADMSG (bad content, see @ret_error), -EINVAL (bad @opts),
 * -ENOMEM.
 */
int trace_parse(const char *buf, size_t len, const TraceOptions *opts, Trace *ret, TraceError *ret_error);

void trace_done(Trace *t);

const char *trace_op_to_string(TraceOp op);
const char *trace_format_to_string(TraceFormat f);

/**
 * trace_parse_time() - "12.5" -> 12500000000 ns; digits, at most one '.',
 * at most TRACE_TIME_MAX_S; fractional digits past the ninth are dropped.
 * Return: 0 or -EINVAL.
 */
int trace_parse_time(const char *s, size_t n, uint64_t *ret_ns);
