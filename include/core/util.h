/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Small string helpers with checked results (pure: no I/O, no logging).
 * systemd's CODING_STYLE "Functions to Avoid": no atoi(), no unchecked strtoul();
 * every number that comes from a file or the command line goes through here.
 */

#include <stddef.h>
#include <stdint.h>

/**
 * safe_atou32() - parse an unsigned decimal number
 * @s: the text; digits only: no sign, no blanks, no "0x", no trailing garbage
 * @ret: the value, on success only
 *
 * Leading zeros are allowed ("007" is 7); there is no octal or hex form, and
 * no locale dependence (unlike strtoul(), which also accepts "-1" and blanks).
 * Return: 0; -EINVAL for an empty string or any character that is not a
 * decimal digit; -ERANGE when the value does not fit in 32 bits.
 */
int safe_atou32(const char *s, uint32_t *ret);

/* safe_atou32() of the @len bytes at @s (which need not be NUL-terminated). */
int safe_atou32_n(const char *s, size_t len, uint32_t *ret);

/**
 * safe_atod() - parse a finite number as strtod() reads it ("0.3", "2e-3"), the whole string
 * @ret: the value, on success only
 * Return: 0; -EINVAL for an empty string, trailing characters, or an infinity or NaN;
 * -ERANGE when strtod() overflows or underflows.
 */
int safe_atod(const char *s, double *ret);

/**
 * parse_time_span_usec() - a time span in microseconds: "1500", "1500us", "1.5ms", "2s"
 * @s: digits, optionally a '.' and more digits, optionally a unit right after the number (no blank):
 *     "us" (or "µs"), "ms", "s"; no unit means microseconds
 * @ret: the span in µs, on success only
 *
 * The daemon's latencies are whole microseconds, so a fraction must come out whole ("1.5ms",
 * "0.000001s"; trailing zeros are fine, "1.0005ms" is not): nothing is rounded behind the
 * user's back. No sign, no blanks, no exponent, no other unit (the command line's --max-latency,
 * and the configuration file's time keys once they take units).
 * Return: 0; -EINVAL for an empty string, a sign, a missing digit, an unknown unit or a fraction
 * finer than 1 µs; -ERANGE when the value does not fit in 64 bits.
 */
int parse_time_span_usec(const char *s, uint64_t *ret);

/**
 * parse_boolean() - "1", "yes", "true", "on" or their opposites "0", "no",
 * "false", "off" (case-insensitive; systemd also takes y/t/n/f, we do not).
 *
 * Return: 1 for true, 0 for false, -EINVAL for anything else.
 */
int parse_boolean(const char *s);

/**
 * utf8_char_len() - length of the UTF-8 sequence at @p (NUL-terminated), or 0 when it is not a
 * valid one: no stray continuation byte, no overlong form, no surrogate (U+D800..U+DFFF), nothing
 * past U+10FFFF (RFC 3629 section 4's table of well-formed sequences, which D-Bus also requires).
 */
size_t utf8_char_len(const char *p);
