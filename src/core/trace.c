/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trace parsing for the simulator: plain "TIME [OP] [BYTES]" lines and
 * blkparse's default text output. See trace.h for the formats and limits.
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "string-table.h"
#include "trace.h"

/* A line cut into blank-separated tokens. 16 is more than any blkparse
 * event needs before its payload ("dev cpu seq time pid act rwbs sector +
 * n [comm]" is 11); further tokens are not looked at. */
#define MAX_TOKENS 16

typedef struct Token {
        const char *p;
        size_t n;
} Token;

typedef struct Raw {
        TraceIo io;
        uint32_t dev_major, dev_minor;
        char action;            /* 'Q', 'D'; 0 for plain */
} Raw;

typedef struct Parser {
        Raw *raw;
        size_t n, allocated;
} Parser;

static const char *const trace_op_table[_TRACE_OP_MAX] = {
        [TRACE_OP_READ] = "read",
        [TRACE_OP_WRITE] = "write",
        [TRACE_OP_FLUSH] = "flush",
        [TRACE_OP_DISCARD] = "discard",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(trace_op, TraceOp);

static const char *const trace_format_table[_TRACE_FORMAT_MAX] = {
        [TRACE_FORMAT_PLAIN] = "plain",
        [TRACE_FORMAT_BLKPARSE] = "blkparse",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(trace_format, TraceFormat);

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool token_eq(const Token *t, const char *s) {
        size_t l = strlen(s);
        return t->n == l && memcmp(t->p, s, l) == 0;
}

/* Split at blanks; a '#' at the start of a token ends the line when @comments. */
static size_t tokenize(const char *p, size_t n, bool comments, Token tok[static MAX_TOKENS]) {
        size_t k = 0, i = 0;

        while (i < n && k < MAX_TOKENS) {
                while (i < n && is_blank(p[i]))
                        i++;
                if (i >= n || (comments && p[i] == '#'))
                        break;
                size_t start = i;
                while (i < n && !is_blank(p[i]) && !(comments && p[i] == '#'))
                        i++;
                tok[k++] = (Token) { p + start, i - start };
        }
        return k;
}

int trace_parse_time(const char *s, size_t n, uint64_t *ret_ns) {
        uint64_t sec = 0, frac = 0;
        unsigned frac_digits = 0;
        bool dot = false, any = false;

        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (c == '.') {
                        if (dot)
                                return -EINVAL;
                        dot = true;
                        continue;
                }
                if (!is_digit(c))
                        return -EINVAL;
                any = true;
                if (!dot) {
                        sec = sec * 10 + (uint64_t) (c - '0');
                        if (sec > TRACE_TIME_MAX_S)
                                return -EINVAL;
                } else if (frac_digits < 9) {
                        frac = frac * 10 + (uint64_t) (c - '0');
                        frac_digits++;
                }
        }
        if (!any)
                return -EINVAL;
        for (; frac_digits < 9; frac_digits++)
                frac *= 10;
        /* the bound is on the whole time: "1000000000.1" is past it too */
        if (sec * UINT64_C(1000000000) + frac > (uint64_t) TRACE_TIME_MAX_S * UINT64_C(1000000000))
                return -EINVAL;
        *ret_ns = sec * UINT64_C(1000000000) + frac;
        return 0;
}

static int parse_u64(const Token *t, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (t->n == 0)
                return -EINVAL;
        for (size_t i = 0; i < t->n; i++) {
                if (!is_digit(t->p[i]))
                        return -EINVAL;
                v = v * 10 + (uint64_t) (t->p[i] - '0');
                if (v > max)
                        return -ERANGE;
        }
        *ret = v;
        return 0;
}

static int parser_add(Parser *ps, const Raw *r) {
        if (ps->n == ps->allocated) {
                size_t m = ps->allocated ? ps->allocated * 2 : 256;
                Raw *q = reallocarray(ps->raw, m, sizeof(Raw));
                if (!q)
                        return -ENOMEM;
                ps->raw = q;
                ps->allocated = m;
        }
        ps->raw[ps->n++] = *r;
        return 0;
}

/* "TIME_S [R|W|F|D] [BYTES]" */
static int parse_plain_line(const Token *tok, size_t k, Raw *ret, const char **ret_reason) {
        Raw r = { .io.op = TRACE_OP_READ, .io.bytes = TRACE_BYTES_DEFAULT };
        size_t i = 1;

        if (trace_parse_time(tok[0].p, tok[0].n, &r.io.t_ns) < 0) {
                *ret_reason = "bad time: expected seconds like 12.5 (at most 1e9)";
                return -EBADMSG;
        }
        if (i < k && tok[i].n == 1 && !is_digit(tok[i].p[0])) {
                switch (tok[i].p[0]) {
                case 'R': case 'r':
                        r.io.op = TRACE_OP_READ;
                        break;
                case 'W': case 'w':
                        r.io.op = TRACE_OP_WRITE;
                        break;
                case 'F': case 'f':
                        r.io.op = TRACE_OP_FLUSH;
                        r.io.bytes = 0;
                        break;
                case 'D': case 'd':
                        r.io.op = TRACE_OP_DISCARD;
                        break;
                default:
                        *ret_reason = "bad operation: expected R, W, F or D";
                        return -EBADMSG;
                }
                i++;
        } else if (i < k && !is_digit(tok[i].p[0])) {
                *ret_reason = "bad operation: expected R, W, F or D";
                return -EBADMSG;
        }
        if (i < k) {
                if (parse_u64(&tok[i], TRACE_BYTES_MAX, &r.io.bytes) < 0) {
                        *ret_reason = "bad size: expected bytes, at most 2^40";
                        return -EBADMSG;
                }
                i++;
        }
        if (i < k) {
                *ret_reason = "trailing garbage: expected TIME_S [R|W|F|D] [BYTES]";
                return -EBADMSG;
        }
        *ret = r;
        return 0;
}

static int parse_dev(const Token *t, uint32_t *ret_major, uint32_t *ret_minor) {
        const char *comma = memchr(t->p, ',', t->n);
        uint64_t ma, mi;

        if (!comma)
                return -EINVAL;
        Token a = { t->p, (size_t) (comma - t->p) }, b = { comma + 1, t->n - (size_t) (comma - t->p) - 1 };
        /* dev_t majors are 12 bits, minors 20 bits */
        if (parse_u64(&a, 0xfff, &ma) < 0 || parse_u64(&b, 0xfffff, &mi) < 0)
                return -EINVAL;
        *ret_major = (uint32_t) ma;
        *ret_minor = (uint32_t) mi;
        return 0;
}

/* Does the line look like a blkparse event: "MAJ,MIN CPU SEQ SECS.NSECS PID ACTION RWBS ..."? */
static bool looks_like_blkparse(const Token *tok, size_t k) {
        uint32_t ma, mi;
        uint64_t v, ns;

        return k >= 6 && parse_dev(&tok[0], &ma, &mi) >= 0 && parse_u64(&tok[1], UINT32_MAX, &v) >= 0 &&
               parse_u64(&tok[2], UINT64_MAX / 10, &v) >= 0 && memchr(tok[3].p, '.', tok[3].n) &&
               trace_parse_time(tok[3].p, tok[3].n, &ns) >= 0;
}

/* The summary blkparse prints after the events: "CPU0 (8,0):", "Total (8,0):". */
static bool is_blkparse_summary(const Token *tok, size_t k) {
        if (k < 2 || tok[1].n < 2 || tok[1].p[0] != '(')
                return false;
        if (token_eq(&tok[0], "Total"))
                return true;
        if (tok[0].n > 3 && memcmp(tok[0].p, "CPU", 3) == 0) {
                for (size_t i = 3; i < tok[0].n; i++)
                        if (!is_digit(tok[0].p[i]))
                                return false;
                return true;
        }
        return false;
}

/* Map blkparse's RWBS letters: D discard, R/W with data read/write, F without data a flush.
 * Return 0 and the op, or 1 for an event that moves no data and is no flush ("N"). */
static int rwbs_to_op(const Token *t, bool has_data, TraceOp *ret) {
        bool r = false, w = false, d = false, f = false;

        for (size_t i = 0; i < t->n; i++)
                switch (t->p[i]) {
                case 'R': r = true; break;
                case 'W': w = true; break;
                case 'D': d = true; break;
                case 'F': f = true; break;
                case 'N': case 'S': case 'M': case 'A': case 'E': case 'B':
                        break;
                default:
                        return -EINVAL;
                }
        if (d)
                *ret = TRACE_OP_DISCARD;
        else if (has_data && w)
                *ret = TRACE_OP_WRITE;
        else if (has_data && r)
                *ret = TRACE_OP_READ;
        else if (f)
                *ret = TRACE_OP_FLUSH;
        else if (w)
                *ret = TRACE_OP_WRITE;
        else if (r)
                *ret = TRACE_OP_READ;
        else
                return 1;
        return 0;
}

/* One event line. Return 0 and fill @ret, 1 to skip the line, -EBADMSG. */
static int parse_blkparse_line(const Token *tok, size_t k, Raw *ret, const char **ret_reason) {
        Raw r = {};
        uint64_t sector, nsect = 0;
        bool has_data = false;
        int q;

        if (!looks_like_blkparse(tok, k)) {
                *ret_reason = "not a blkparse event line";
                return -EBADMSG;
        }
        /* Only Q and D matter; everything else (G, I, C, M, m messages, ...) is skipped unread. */
        if (!token_eq(&tok[5], "Q") && !token_eq(&tok[5], "D"))
                return 1;
        if (k < 7) {
                *ret_reason = "blkparse event without RWBS field";
                return -EBADMSG;
        }
        (void) parse_dev(&tok[0], &r.dev_major, &r.dev_minor);
        (void) trace_parse_time(tok[3].p, tok[3].n, &r.io.t_ns);
        r.action = tok[5].p[0];
        /* Payload: "SECTOR + NSECT [comm]", or just "[comm]" for a request without data. */
        if (k >= 10 && parse_u64(&tok[7], UINT64_MAX, &sector) >= 0) {
                if (!token_eq(&tok[8], "+") || parse_u64(&tok[9], TRACE_BYTES_MAX / 512, &nsect) < 0) {
                        *ret_reason = "bad blkparse payload: expected SECTOR + COUNT";
                        return -EBADMSG;
                }
                has_data = nsect > 0;
        } else if (k >= 8 && is_digit(tok[7].p[0])) {
                *ret_reason = "bad blkparse payload: expected SECTOR + COUNT";
                return -EBADMSG;
        }
        q = rwbs_to_op(&tok[6], has_data, &r.io.op);
        if (q < 0) {
                *ret_reason = "bad blkparse RWBS field";
                return -EBADMSG;
        }
        if (q > 0)
                return 1;
        r.io.bytes = nsect * 512;
        *ret = r;
        return 0;
}

static int cmp_io(const void *a, const void *b) {
        const TraceIo *x = a, *y = b;

        if (x->t_ns != y->t_ns)
                return x->t_ns < y->t_ns ? -1 : 1;
        return x->line < y->line ? -1 : x->line > y->line;
}

static int fail(TraceError *ret_error, size_t line, const char *reason) {
        if (ret_error)
                *ret_error = (TraceError) { line, reason };
        return -EBADMSG;
}

/* What is wrong with a line before it is tokenized, or NULL. */
static const char *line_problem(const char *p, size_t n, size_t line) {
        if (line > UINT32_MAX)
                return "too many lines";
        if (n > TRACE_LINE_MAX)
                return "line too long";
        if (memchr(p, '\0', n))
                return "NUL byte in trace";
        return NULL;
}

/* Parse every line into @ps; the first line with tokens decides the format, and blkparse's
 * closing summary ends the events. On failure @ps->raw is still the caller's to free. */
static int parse_lines(const char *buf, size_t len, Parser *ps, TraceFormat *ret_format, TraceError *ret_error) {
        TraceFormat format = _TRACE_FORMAT_INVALID;
        bool summary = false;
        size_t line = 0, pos = 0;
        int r;

        while (pos < len) {
                const char *p = buf + pos, *nl = memchr(p, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - p) : len - pos;
                Token tok[MAX_TOKENS];
                const char *reason;
                size_t k;
                Raw rw;

                pos += n + (nl ? 1 : 0);
                line++;
                reason = line_problem(p, n, line);
                if (reason)
                        return fail(ret_error, line, reason);

                /* blkparse event lines carry no comments, but '#' is harmless to honour there too:
                 * a process name in brackets is the last token and is never parsed. */
                k = tokenize(p, n, true, tok);
                if (k == 0 || summary)
                        continue;
                if (format < 0)
                        format = looks_like_blkparse(tok, k) ? TRACE_FORMAT_BLKPARSE : TRACE_FORMAT_PLAIN;

                if (format == TRACE_FORMAT_PLAIN)
                        r = parse_plain_line(tok, k, &rw, &reason);
                else if (is_blkparse_summary(tok, k)) {
                        summary = true;
                        continue;
                } else
                        r = parse_blkparse_line(tok, k, &rw, &reason);
                if (r < 0)
                        return fail(ret_error, line, reason);
                if (r > 0)
                        continue;
                rw.io.line = (uint32_t) line;
                r = parser_add(ps, &rw);
                if (r < 0)
                        return r;
        }
        *ret_format = format < 0 ? TRACE_FORMAT_PLAIN : format;
        return 0;
}

/* Which events of a blkparse trace are kept: one device, one action (Q or D). */
typedef struct Stream {
        bool dev_given, dev_known;
        uint32_t major, minor;
        char action;
} Stream;

static bool stream_has_dev(const Stream *s, const Raw *r) {
        return r->dev_major == s->major && r->dev_minor == s->minor;
}

/* Unless given, the device is the first one seen (and must be the only one), the action D
 * when that device has D events, else Q. */
static int choose_blkparse_stream(const Parser *ps, Stream *s, TraceError *ret_error) {
        bool have_d = false;

        for (size_t i = 0; i < ps->n; i++) {
                const Raw *r = &ps->raw[i];

                if (!s->dev_known) {
                        s->dev_known = true;
                        s->major = r->dev_major;
                        s->minor = r->dev_minor;
                } else if (!s->dev_given && !stream_has_dev(s, r))
                        return fail(ret_error, r->io.line, "events of several devices: choose one with --device");
                if (stream_has_dev(s, r) && r->action == 'D')
                        have_d = true;
        }
        if (s->action == 0)
                s->action = have_d ? 'D' : 'Q';
        return 0;
}

static bool keep_event(TraceFormat format, const Stream *s, const Raw *r) {
        return format != TRACE_FORMAT_BLKPARSE || (stream_has_dev(s, r) && r->action == s->action);
}

/* Copy the kept events out of @ps, sorted by time (then line). */
static int collect_events(const Parser *ps, TraceFormat format, const Stream *s, TraceIo **ret_io, size_t *ret_n) {
        TraceIo *io = NULL;
        size_t m = 0;

        for (size_t i = 0; i < ps->n; i++)
                if (keep_event(format, s, &ps->raw[i]))
                        m++;
        if (m > 0) {
                size_t j = 0;

                io = calloc(m, sizeof(TraceIo));
                if (!io)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n; i++)
                        if (keep_event(format, s, &ps->raw[i]))
                                io[j++] = ps->raw[i].io;
                qsort(io, m, sizeof(TraceIo), cmp_io);
        }
        *ret_io = io;
        *ret_n = m;
        return 0;
}

int trace_parse(const char *buf, size_t len, const TraceOptions *opts, Trace *ret, TraceError *ret_error) {
        Parser ps = {};
        Stream s = { .action = opts ? opts->action : 0 };
        TraceFormat format;
        TraceIo *io;
        size_t m;
        int r;

        if (s.action != 0 && s.action != 'D' && s.action != 'Q')
                return -EINVAL;
        if (opts && opts->device) {
                Token t = { opts->device, strlen(opts->device) };
                if (parse_dev(&t, &s.major, &s.minor) < 0)
                        return -EINVAL;
                s.dev_given = s.dev_known = true;
        }

        r = parse_lines(buf, len, &ps, &format, ret_error);
        if (r >= 0 && format == TRACE_FORMAT_BLKPARSE)
                r = choose_blkparse_stream(&ps, &s, ret_error);
        if (r >= 0)
                r = collect_events(&ps, format, &s, &io, &m);
        free(ps.raw);
        if (r < 0)
                return r;

        *ret = (Trace) { .io = io, .n = m, .format = format };
        if (format == TRACE_FORMAT_BLKPARSE) {
                ret->action = s.action;
                if (s.dev_known)
                        (void) snprintf(ret->device, sizeof ret->device, "%u,%u", s.major, s.minor);
        }
        return 0;
}

void trace_done(Trace *t) {
        if (!t)
                return;
        free(t->io);
        *t = (Trace) {};
}
