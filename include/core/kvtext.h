/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The strict KEY=VALUE text the state files are written in (calib.c's
 * calibration, learned.c's adaptive learning): the reader, the value parsers
 * and the file names they share.
 * Pure. Every parser takes a length, not a NUL-terminated string, and refuses
 * rather than guesses: no sign, no spaces, no leading "0x", nothing after the
 * value.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decimal digits only, at most @max. Return: 0, -EINVAL (not a number), -ERANGE (above @max). */
int kv_parse_u64(const char *s, size_t n, uint64_t max, uint64_t *ret);
/* Exactly 16 lower-case hex digits. Return: 0 or -EINVAL. */
int kv_parse_hex64(const char *s, size_t n, uint64_t *ret);
/* Printable ASCII only, shorter than @size (NUL-terminated into @dst). Return: 0, -ERANGE, -EINVAL. */
int kv_copy_printable(char *dst, size_t size, const char *s, size_t n);

/* What kv_parse_fields() found wrong. */
typedef enum KvFieldsError {
        KV_FIELDS_OK = 0,
        KV_FIELDS_LEAD = -1,         /* @lead asked for, and no number first */
        KV_FIELDS_NOT_PAIR = -2,     /* a word without '=' */
        KV_FIELDS_UNKNOWN = -3,      /* a key not in @keys */
        KV_FIELDS_REPEATED = -4,     /* a key given twice */
        KV_FIELDS_NUMBER = -5,       /* a value that is not a number up to @max */
        KV_FIELDS_MISSING = -6,      /* a key of @keys not given */
} KvFieldsError;

/**
 * kv_parse_fields() - "[LEAD ]k1=v1 k2=v2 ..." separated by spaces
 * @lead: if not NULL, a bare number (at most @lead_max) comes first
 * @keys, @n_keys: every key exactly once, in any order (at most 32)
 * @v: the values, in the order of @keys, each at most @max
 * Return: KV_FIELDS_OK or the first error.
 */
KvFieldsError kv_parse_fields(const char *s, size_t n, uint64_t *lead, uint64_t lead_max, const char *const *keys,
                              size_t n_keys, uint64_t max, uint64_t *v);

/* "line N: WHY" into *@ret_error (if not NULL; replacing what was there). Return: -EINVAL, or -ENOMEM. */
int kv_fail(char **ret_error, unsigned line, const char *why);

/* One KEY=VALUE line. */
typedef struct KvLine {
        unsigned line;             /* 1-based */
        const char *key, *val;
        size_t key_len, val_len;
} KvLine;

/**
 * kv_next_line() - the next KEY=VALUE line of @text, blank lines and "#" comments skipped
 * @pos: where to read from; advanced past the line
 * @ret: the line; ret->line counts every line read, so a caller starts it at 0
 * Return: 1 a line, 0 the end, or -EINVAL with *@ret_why ("NUL byte", "expected KEY=VALUE").
 */
int kv_next_line(const char *text, size_t len, size_t *pos, KvLine *ret, const char **ret_why);
/* Is @l's key @key? */
bool kv_key_is(const KvLine *l, const char *key);

/* What kv_header_key() read: the bits of a state file's first keys. */
enum {
        KV_HAVE_VERSION = 1 << 0,
        KV_HAVE_MODEL = 1 << 1,
        KV_HAVE_FIRMWARE = 1 << 2,
        _KV_HAVE_NEXT = 1 << 3,      /* a file's own keys' bits start here */
};

/**
 * kv_header_key() - the keys every state file starts with: version= first, then model= and firmware=
 * @have: the KV_HAVE_ bits read so far
 * @min_version, @version: the versions this reads; @unsupported_why: the words for another one
 * @ret_bit: the key's KV_HAVE_ bit (0 for a key after the header); *@ret_version: the version read, when
 * @l is version=
 * Return: 1 @l was one of them or came before version= (*@ret_why set when it is wrong), 0 it is the file's own.
 */
int kv_header_key(const KvLine *l, unsigned have, uint64_t min_version, uint64_t version, const char *unsupported_why,
                  char *model, size_t model_size, char *firmware, size_t firmware_size, unsigned *ret_bit,
                  uint64_t *ret_version, const char **ret_why);

/**
 * kv_format() - a state file's text: the header kv_header_key() reads ("# COMMENT", then version=,
 * model= and firmware= lines), then the file's own lines, written by @body(@f, @userdata)
 * Return: 0 or -ENOMEM.
 */
int kv_format(const char *comment, unsigned version, const char *model, const char *firmware,
              void (*body)(FILE *f, const void *userdata), const void *userdata, char **ret_text);

/* A state file's own part, for kv_parse(): what follows its header, and what it needs. */
typedef struct KvFormat {
        uint64_t version;               /* the version= this writes, the newest it reads */
        uint64_t min_version;           /* the oldest it reads (0: @version only) */
        const char *unsupported_why;    /* the words for another one */
        /* One of the file's own keys, in a file of @version. Return: why it is wrong, or NULL; *@ret_bit
         * its bit (0: may repeat). */
        const char *(*parse_key)(void *userdata, const KvLine *l, uint64_t version, unsigned *ret_bit);
        unsigned required;              /* the bits a whole file has, KV_HAVE_ ones included */
        const char *incomplete_why;     /* the words for a file without them */
} KvFormat;

/**
 * kv_parse() - read a state file: its header (kv_header_key()) into @model and @firmware, each of its
 * own keys through @fmt->parse_key(@userdata), every key with a bit at most once
 * Return: 0, or -EINVAL with *@ret_error (if not NULL) "line N: WHY", or -ENOMEM.
 */
int kv_parse(const char *text, size_t len, const KvFormat *fmt, char *model, size_t model_size, char *firmware,
             size_t firmware_size, void *userdata, char **ret_error);

/**
 * kv_state_path() - STATE_DIR/DIR/MODEL@FIRMWARE SUFFIX, the name of a drive's state file
 * Every byte outside [A-Za-z0-9_-] of @model and @firmware is written as %XX, so no name can leave
 * the directory.
 * Return: 0, -EINVAL (no @state_dir or @model) or -ENOMEM.
 */
int kv_state_path(const char *state_dir, const char *dir, const char *model, const char *firmware,
                  const char *suffix, char **ret_path);
