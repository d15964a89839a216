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
 * parse_boolean() - "1", "yes", "true", "on" or their opposites "0", "no",
 * "false", "off" (case-insensitive; systemd also takes y/t/n/f, we do not).
 *
 * Return: 1 for true, 0 for false, -EINVAL for anything else.
 */
int parse_boolean(const char *s);
