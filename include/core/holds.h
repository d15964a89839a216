/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Latency holds (pure): what an application asks for over D-Bus
 * (HoldLatency, doc/dbus-api.md "Holds"), checked before anything is decided;
 * the set of holds in force with its limits and cookies; and the cap they put
 * on each controller's budget. A hold only ever tightens: a controller's
 * budget is the smallest of the configured one and every hold on it (or on
 * every controller, ""). No I/O, no logging, no globals: the daemon
 * (src/daemon/manager-holds.c) owns one HoldSet and does the rest.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Holds one bus connection may have in force: a client wraps one command per hold, so 16 covers
 * a script holding a few drives separately with room to spare, and bounds what one local user's
 * connection costs the daemon (the limit). */
#define HOLDS_PER_OWNER_MAX 16u
/* Holds in force in all: with HOLDS_PER_OWNER_MAX, at least 16 clients at full use; the set stays
 * a few hundred kB at most and every scan of it trivial. */
#define HOLDS_MAX 256u
/* Bytes of a reason or application id, without the NUL: a line of text, as the API says. */
#define HOLD_TEXT_MAX 255u
/* Bytes of a controller name with its NUL: "nvme" and up to 10 digits (a 32-bit instance number,
 * which is what the kernel's ida gives out), rounded up. */
#define HOLD_CONTROLLER_SIZE 16u
/* Bytes of the owner (a bus connection's unique name, ":1.42") with its NUL: the D-Bus
 * specification bounds every bus name to 255 bytes. */
#define HOLD_OWNER_SIZE 256u
/* No hold applies: the cap holds_cap_us() gives then. */
#define HOLD_NO_CAP UINT32_MAX

/* The argument a validation refused (what the error names). */
typedef enum HoldArg {
        HOLD_ARG_CONTROLLER,
        HOLD_ARG_LATENCY,
        HOLD_ARG_REASON,
        HOLD_ARG_APPLICATION_ID,
        _HOLD_ARG_MAX,
        _HOLD_ARG_INVALID = -EINVAL,
} HoldArg;

/* "controller", "max_latency_usec", "reason", "application_id": the API's argument names. */
const char *hold_arg_to_string(HoldArg a);

/**
 * hold_check_controller() - is @name a controller name the API accepts?
 * "" (every controller) or "nvme" and decimal digits without a leading zero (the kernel's
 * "nvme%d"), shorter than HOLD_CONTROLLER_SIZE. Whether the daemon manages it is the caller's.
 */
bool hold_check_controller(const char *name);

/**
 * hold_check_text() - a reason or application id: valid UTF-8 (no overlong form, no surrogate,
 * nothing past U+10FFFF), at most HOLD_TEXT_MAX bytes, no control character (C0, DEL, C1).
 * May be empty.
 */
bool hold_check_text(const char *s);

/**
 * hold_validate() - check HoldLatency's arguments
 * @latency_max_us: the largest max_latency_us the configuration accepts
 * @ret_bad: on failure, the first argument refused (set only on failure)
 * @why: on failure, a sentence naming the argument and what is wrong with it
 * Return: 0, or -EINVAL.
 */
int hold_validate(const char *controller, uint64_t max_latency_us, uint64_t latency_max_us, const char *reason,
                  const char *application_id, HoldArg *ret_bad, char *why, size_t n);

/* One hold in force. */
typedef struct Hold {
        uint32_t cookie;                           /* never 0, unique among the holds in force */
        char controller[HOLD_CONTROLLER_SIZE];     /* "" = every controller */
        uint32_t max_latency_us;
        char reason[HOLD_TEXT_MAX + 1];
        char application_id[HOLD_TEXT_MAX + 1];
        char owner[HOLD_OWNER_SIZE];               /* who may release it: the connection that took it */
        uint32_t uid, pid;
        uint64_t since_usec;                       /* CLOCK_REALTIME, µs since the epoch */
        uint64_t since_mono_usec;                  /* CLOCK_MONOTONIC: for the duration at its end */
} Hold;

/* The holds in force, in the order they were taken. */
typedef struct HoldSet {
        Hold *holds;
        size_t n, allocated;
        uint32_t last_cookie;                      /* the cookie given out last */
} HoldSet;

void holds_init(HoldSet *s);
void holds_done(HoldSet *s);

/* Holds of @owner in force. */
size_t holds_count_owner(const HoldSet *s, const char *owner);

/**
 * holds_add() - put @h (its cookie ignored) into the set under a new cookie
 * The cookie follows the last one given out, wraps past UINT32_MAX, skips 0 and every cookie in
 * force: a client never releases someone else's hold with a stale cookie while that one lives.
 * Return: 0 (*ret_cookie set); -EDQUOT when @h->owner has HOLDS_PER_OWNER_MAX holds; -ENOSPC with
 * HOLDS_MAX in all; -ENOMEM.
 */
int holds_add(HoldSet *s, const Hold *h, uint32_t *ret_cookie);

/* The hold with @cookie, or NULL. */
const Hold *holds_find(const HoldSet *s, uint32_t cookie);

/**
 * holds_remove() - take the hold with @cookie out of the set
 * @ret: what it was, on success (may be NULL)
 * Return: 0, or -ENOENT.
 */
int holds_remove(HoldSet *s, uint32_t cookie, Hold *ret);

/* Does @h apply to @controller (it names it, or every controller)? */
bool hold_applies(const Hold *h, const char *controller);

/* The smallest max_latency_us of the holds that apply to @controller; HOLD_NO_CAP for none. */
uint32_t holds_cap_us(const HoldSet *s, const char *controller);

/* The budget in force: the configured one, lowered by @cap_us. 0 means no idle power state. */
static inline uint32_t holds_effective_us(uint32_t configured_us, uint32_t cap_us) {
        return cap_us < configured_us ? cap_us : configured_us;
}

/**
 * hold_sets_budget() - does @h set @controller's budget?
 * It applies, it is below the configured budget, and no hold that applies is lower: its cookie is
 * in the controller's HeldBy. A hold that sets no controller's budget has no effect.
 */
bool hold_sets_budget(const Hold *h, const char *controller, uint32_t configured_us, uint32_t cap_us);
