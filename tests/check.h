/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The checks every C test uses. A failed CHECK prints where it is, the case running and what
 * failed, counts, and lets the test go on, so one run shows every failure; main() returns
 * check_exit_status(). REQUIRE is the check a test cannot go on after. Unlike assert(), both
 * are compiled under -DNDEBUG too, and a failure cannot be mistaken for a crash of the code
 * under test.
 *
 * A file includes this header once: the counters are the file's own (static).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned n_checks, n_failed;
/* The case running, named in failures; a test sets it at the start of each case. */
static const char *current __attribute__((unused)) = "";

#define CHECK(cond)                                                                                        \
        do {                                                                                               \
                n_checks++;                                                                                \
                if (!(cond)) {                                                                             \
                        n_failed++;                                                                        \
                        fprintf(stderr, "%s:%d: %s%scheck failed: %s\n", __FILE__, __LINE__, current,      \
                                *current ? ": " : "", #cond);                                              \
                }                                                                                          \
        } while (0)

/* For what the rest of the test cannot go on without (a buffer, a file it made): a failure is
 * counted and printed like CHECK's, and the test stops there with status 1. */
#define REQUIRE(cond)                                                                                      \
        do {                                                                                               \
                n_checks++;                                                                                \
                if (!(cond)) {                                                                             \
                        n_failed++;                                                                        \
                        fprintf(stderr, "%s:%d: %s%srequirement failed, stopping: %s\n", __FILE__,         \
                                __LINE__, current, *current ? ": " : "", #cond);                           \
                        exit(EXIT_FAILURE);                                                                \
                }                                                                                          \
        } while (0)

/* For the fake harness's clients, whose output is the harness's log: every check prints a line,
 * "ok:   " or "FAIL: " and the printf-style description that follows the condition. */
#define CHECK_SAY(cond, ...)                                                                               \
        do {                                                                                               \
                n_checks++;                                                                                \
                if (!(cond)) {                                                                             \
                        n_failed++;                                                                        \
                        printf("FAIL: " __VA_ARGS__);                                                      \
                } else                                                                                     \
                        printf("ok:   " __VA_ARGS__);                                                      \
                putchar('\n');                                                                             \
        } while (0)

/* main()'s return: 0 when every check held, 1 (a meson failure) when one did. */
static inline int check_exit_status(void) {
        printf("%s: %u checks, %u failed\n", program_invocation_short_name, n_checks, n_failed);
        return n_failed ? 1 : 0;
}
