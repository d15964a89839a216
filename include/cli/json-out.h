/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Writing the `--json` outputs with json-c: every string escape and number is
 * json-c's serializer's. The helpers add what the outputs need on top: numbers
 * with a fixed number of digits (json_object_new_double_s(), so "0.3000"
 * stays "0.3000"), the 64-bit APST entries as hex strings, and a layout of one
 * member per line for `simulate --json`, which line-oriented tools read
 * (bench/run.sh).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put);

/* Flags every output uses: no "\/" for '/', UTF-8 passed through. */
#define JSON_OUT_FLAGS JSON_C_TO_STRING_NOSLASHESCAPE

/* @v printed as printf("%.*f", @decimals); JSON null (NULL) when not finite. */
struct json_object *json_out_fixed(double v, int decimals);
/* @v printed as printf("%.*g", @digits); JSON null (NULL) when not finite. */
struct json_object *json_out_general(double v, int digits);
/* "0x%016x" */
struct json_object *json_out_hex64(uint64_t v);
/* A string, or JSON null for NULL. */
struct json_object *json_out_string_or_null(const char *s);
/* The 32 entries of an APST table as "0x%016x" strings. */
struct json_object *json_out_apst_entries(const uint64_t *entries, size_t n);

/* One latency hold as `status --json` shows it: an entry of the daemon's Manager1.Holds (doc/dbus-api.md). */
typedef struct JsonHold {
        uint32_t cookie;
        char *controller;            /* "" = every controller */
        uint64_t max_latency_usec;
        char *application_id;
        char *reason;
        uint32_t uid, pid;
        uint64_t since_usec;         /* CLOCK_REALTIME, µs since the epoch */
} JsonHold;

/**
 * json_out_holds() - the holds as an array of objects
 * @sets: for each hold, the controllers whose budget it sets (their HeldBy names it), NULL-terminated;
 *        "in_effect" is whether there is any
 */
struct json_object *json_out_holds(const JsonHold *holds, size_t n, char **const *sets);

/* A power state the plan gave a larger exit latency than its descriptor's: an entry of the daemon's
 * Controller1.ExitLatencies (doc/dbus-api.md). */
typedef struct JsonExitLatency {
        uint32_t ps;
        uint32_t advertised_us;
        uint32_t planned_us;
        char source[16];             /* "configuration" or "measured" */
} JsonExitLatency;

/* The entries as objects with `plan --json`'s names: "ps", "exlat_us" (advertised), "planned_exlat_us",
 * "from_configuration"; and "source" as the daemon said it ("measured": by calibrate or the eBPF source). */
struct json_object *json_out_exit_latencies(const JsonExitLatency *l, size_t n);

/* @o on one line and a newline. Return: 0, -ENOMEM or -EIO. */
int json_out_print(FILE *f, struct json_object *o, int flags);

/**
 * json_out_print_lines() - the object @o with each member on a line of its own
 * @split: names of members (arrays) whose elements also get a line each; NULL-terminated
 * Return: 0, -EINVAL (@o not an object), -ENOMEM or -EIO.
 */
int json_out_print_lines(FILE *f, struct json_object *o, const char *const *split);
