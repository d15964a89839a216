/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * holds.c: HoldLatency's argument checks, the set of holds (limits, cookies,
 * order) and the cap they put on each controller's budget. Table-driven where
 * there are cases; each case has a path-like name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "holds.h"
#include "macro.h"
#include "util.h"

/* The configuration's largest max_latency_us (config.c: 10 s). */
#define MAX_US 10000000u

typedef struct ValidateCase {
        const char *name;
        const char *controller;
        uint64_t latency;
        const char *reason, *app;
        HoldArg bad;               /* _HOLD_ARG_INVALID: accepted */
        const char *why;           /* a part of the message, when refused */
} ValidateCase;

static const ValidateCase validate_cases[] = {
        { "/holds/validate/every-controller", "", 0, "", "", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/nvme0", "nvme0", 1000, "build", "org.example.Make", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/nvme123", "nvme123", 1000, "", "", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/ten-digits", "nvme4294967295", 0, "", "", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/latency-at-max", "nvme0", MAX_US, "", "", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/utf8-text", "", 0, "Übersetzung läuft → schnell", "日本語", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/four-byte-utf8", "", 0, "\xf0\x9f\x92\xbe", "", _HOLD_ARG_INVALID, NULL },
        { "/holds/validate/bad/namespace", "nvme0n1", 0, "", "", HOLD_ARG_CONTROLLER, "controller: not a" },
        { "/holds/validate/bad/bare-nvme", "nvme", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/leading-zero", "nvme01", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/path", "../nvme0", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/sda", "sda", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/upper", "NVME0", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/blank", "nvme0 ", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/too-long", "nvme123456789012", 0, "", "", HOLD_ARG_CONTROLLER, "controller:" },
        { "/holds/validate/bad/latency-above-max", "nvme0", MAX_US + 1, "", "", HOLD_ARG_LATENCY,
          "max_latency_usec: 10000001 us is above" },
        { "/holds/validate/bad/latency-u64", "", UINT64_MAX, "", "", HOLD_ARG_LATENCY, "max_latency_usec:" },
        { "/holds/validate/bad/reason-newline", "", 0, "a\nb", "", HOLD_ARG_REASON, "reason: contains a control" },
        { "/holds/validate/bad/reason-tab", "", 0, "a\tb", "", HOLD_ARG_REASON, "reason: contains a control" },
        { "/holds/validate/bad/reason-del", "", 0, "a\x7f", "", HOLD_ARG_REASON, "reason: contains a control" },
        { "/holds/validate/bad/reason-esc", "", 0, "\x1b[2J", "", HOLD_ARG_REASON, "reason: contains a control" },
        { "/holds/validate/bad/reason-c1", "", 0, "a\xc2\x9b", "", HOLD_ARG_REASON, "reason: contains a control" },
        { "/holds/validate/bad/reason-latin1", "", 0, "caf\xe9", "", HOLD_ARG_REASON, "reason: is not valid UTF-8" },
        { "/holds/validate/bad/reason-overlong", "", 0, "\xc0\xaf", "", HOLD_ARG_REASON, "not valid UTF-8" },
        { "/holds/validate/bad/reason-overlong-3", "", 0, "\xe0\x80\xaf", "", HOLD_ARG_REASON, "not valid UTF-8" },
        { "/holds/validate/bad/reason-surrogate", "", 0, "\xed\xa0\x80", "", HOLD_ARG_REASON, "not valid UTF-8" },
        { "/holds/validate/bad/reason-past-10ffff", "", 0, "\xf4\x90\x80\x80", "", HOLD_ARG_REASON, "not valid" },
        { "/holds/validate/bad/reason-cut", "", 0, "\xe2\x86", "", HOLD_ARG_REASON, "not valid UTF-8" },
        { "/holds/validate/bad/reason-stray", "", 0, "\x80", "", HOLD_ARG_REASON, "not valid UTF-8" },
        { "/holds/validate/bad/app-newline", "", 0, "", "x\n", HOLD_ARG_APPLICATION_ID, "application_id: contains" },
        { "/holds/validate/bad/first-wins", "bad", MAX_US + 1, "\n", "\n", HOLD_ARG_CONTROLLER, "controller:" },
};

static void test_validate(void) {
        for (size_t i = 0; i < ELEMENTSOF(validate_cases); i++) {
                const ValidateCase *t = &validate_cases[i];
                HoldArg bad = _HOLD_ARG_INVALID;
                char why[256] = "";
                int r;

                current = t->name;
                r = hold_validate(t->controller, t->latency, MAX_US, t->reason, t->app, &bad, why, sizeof why);
                if (t->bad == _HOLD_ARG_INVALID) {
                        CHECK(r == 0);
                        CHECK(bad == _HOLD_ARG_INVALID);   /* not written on success */
                        CHECK(why[0] == 0);
                } else {
                        CHECK(r == -EINVAL);
                        CHECK(bad == t->bad);
                        CHECK(strstr(why, t->why));
                }
        }
}

/* 255 bytes pass, 256 do not; a 2-byte character across the limit does not either. */
static void test_text_length(void) {
        char s[HOLD_TEXT_MAX + 2];

        current = "/holds/text/length";
        memset(s, 'a', HOLD_TEXT_MAX);
        s[HOLD_TEXT_MAX] = 0;
        CHECK(hold_check_text(s));
        s[HOLD_TEXT_MAX] = 'a';
        s[HOLD_TEXT_MAX + 1] = 0;
        CHECK(!hold_check_text(s));
        /* 254 ASCII bytes and "é" (2 bytes): 256 */
        memset(s, 'a', HOLD_TEXT_MAX - 1);
        memcpy(s + HOLD_TEXT_MAX - 1, "\xc3\xa9", 3);
        CHECK(!hold_check_text(s));
        /* 253 and "é": 255 */
        memcpy(s + HOLD_TEXT_MAX - 2, "\xc3\xa9", 3);
        CHECK(hold_check_text(s));
        CHECK(hold_check_text(""));
        CHECK(hold_arg_to_string(_HOLD_ARG_MAX) == NULL);
        CHECK(hold_arg_to_string(_HOLD_ARG_INVALID) == NULL);
        CHECK(strcmp(hold_arg_to_string(HOLD_ARG_APPLICATION_ID), "application_id") == 0);
}

static Hold hold(const char *owner, const char *controller, uint32_t latency) {
        Hold h = { .max_latency_us = latency };

        (void) snprintf(h.owner, sizeof h.owner, "%s", owner);
        (void) snprintf(h.controller, sizeof h.controller, "%s", controller);
        return h;
}

/* 16 per connection, 256 in all; the refused one is not added, the others' counts are untouched. */
static void test_limits(void) {
        HoldSet s;
        uint32_t cookie;
        char owner[32];
        Hold h;

        current = "/holds/limits";
        holds_init(&s);
        for (unsigned i = 0; i < HOLDS_PER_OWNER_MAX; i++) {
                h = hold(":1.1", "nvme0", 100);
                REQUIRE(holds_add(&s, &h, &cookie) == 0);
        }
        cookie = 4242;
        h = hold(":1.1", "", 0);
        CHECK(holds_add(&s, &h, &cookie) == -EDQUOT);
        CHECK(cookie == 4242);      /* not written on failure */
        CHECK(s.n == HOLDS_PER_OWNER_MAX);
        CHECK(holds_count_owner(&s, ":1.1") == HOLDS_PER_OWNER_MAX);
        /* another connection still may */
        h = hold(":1.2", "", 0);
        REQUIRE(holds_add(&s, &h, &cookie) == 0);
        /* fill up to 256 from other connections */
        for (unsigned i = 0; s.n < HOLDS_MAX; i++) {
                (void) snprintf(owner, sizeof owner, ":2.%u", i / HOLDS_PER_OWNER_MAX);
                h = hold(owner, "nvme1", 5);
                REQUIRE(holds_add(&s, &h, &cookie) == 0);
        }
        h = hold(":3.0", "nvme1", 5);
        CHECK(holds_add(&s, &h, &cookie) == -ENOSPC);
        CHECK(s.n == HOLDS_MAX);
        /* one released: room again */
        CHECK(holds_remove(&s, s.holds[3].cookie, NULL) == 0);
        REQUIRE(holds_add(&s, &h, &cookie) == 0);
        holds_done(&s);
        CHECK(s.n == 0 && !s.holds);
}

/* Cookies: never 0 (also past the wrap), never one in force, and a released one is not reused next. */
static void test_cookies(void) {
        HoldSet s;
        uint32_t a, b, c, d;
        Hold h = hold(":1.1", "", 0), got;

        current = "/holds/cookies";
        holds_init(&s);
        CHECK(holds_add(&s, &h, &a) == 0 && a == 1);
        CHECK(holds_add(&s, &h, &b) == 0 && b == 2);
        CHECK(holds_remove(&s, a, &got) == 0 && got.cookie == a);
        CHECK(holds_remove(&s, a, NULL) == -ENOENT);   /* unknown now */
        CHECK(holds_find(&s, a) == NULL);
        CHECK(holds_add(&s, &h, &c) == 0 && c == 3);   /* not 1 again at once */

        /* near the wrap: UINT32_MAX, then 0 is skipped, then 1 (free), then 2 and 3 are in force */
        s.last_cookie = UINT32_MAX - 1;
        CHECK(holds_add(&s, &h, &d) == 0 && d == UINT32_MAX);
        CHECK(holds_add(&s, &h, &d) == 0 && d == 1);
        CHECK(holds_add(&s, &h, &d) == 0 && d == 4);
        for (size_t i = 0; i < s.n; i++)
                for (size_t j = i + 1; j < s.n; j++)
                        CHECK(s.holds[i].cookie != s.holds[j].cookie);
        holds_done(&s);
}

/* The order the holds were taken in is kept across a removal in the middle. */
static void test_order(void) {
        HoldSet s;
        uint32_t k[4];

        current = "/holds/order";
        holds_init(&s);
        for (unsigned i = 0; i < 4; i++) {
                Hold h = hold(":1.1", "", 10 * i);
                REQUIRE(holds_add(&s, &h, &k[i]) == 0);
        }
        CHECK(holds_remove(&s, k[1], NULL) == 0);
        CHECK(s.n == 3);
        CHECK(s.holds[0].cookie == k[0] && s.holds[1].cookie == k[2] && s.holds[2].cookie == k[3]);
        CHECK(s.holds[1].max_latency_us == 20);
        holds_done(&s);
}

typedef struct CapCase {
        const char *name;
        const char *controller;
        uint32_t configured;
        uint32_t cap, effective;
        unsigned sets;             /* bit i: holds[i] sets the budget */
} CapCase;

/* The holds of cap_cases: nvme0 at 5000, every controller at 20000, nvme0 at 5000 again, nvme1 at 0. */
static const CapCase cap_cases[] = {
        { "/holds/cap/nvme0-below-config", "nvme0", 100000, 5000, 5000, 0x5 },
        { "/holds/cap/nvme0-config-lower", "nvme0", 3000, 5000, 3000, 0x0 },
        { "/holds/cap/nvme0-equal-config", "nvme0", 5000, 5000, 5000, 0x0 },
        { "/holds/cap/nvme1-zero", "nvme1", 100000, 0, 0, 0x8 },
        { "/holds/cap/nvme1-config-zero", "nvme1", 0, 0, 0, 0x0 },
        { "/holds/cap/nvme2-every", "nvme2", 100000, 20000, 20000, 0x2 },
        { "/holds/cap/nvme2-every-above", "nvme2", 10000, 20000, 10000, 0x0 },
        { "/holds/cap/nvme10-not-nvme1", "nvme10", 100000, 20000, 20000, 0x2 },
};

static void test_cap(void) {
        HoldSet s;
        uint32_t cookie;
        Hold hs[] = { hold(":1.1", "nvme0", 5000), hold(":1.2", "", 20000), hold(":1.3", "nvme0", 5000),
                      hold(":1.1", "nvme1", 0) };

        holds_init(&s);
        current = "/holds/cap/none";
        CHECK(holds_cap_us(&s, "nvme0") == HOLD_NO_CAP);
        CHECK(holds_effective_us(100000, HOLD_NO_CAP) == 100000);
        for (size_t i = 0; i < ELEMENTSOF(hs); i++)
                REQUIRE(holds_add(&s, &hs[i], &cookie) == 0);
        for (size_t i = 0; i < ELEMENTSOF(cap_cases); i++) {
                const CapCase *t = &cap_cases[i];
                uint32_t cap = holds_cap_us(&s, t->controller);

                current = t->name;
                CHECK(cap == t->cap);
                CHECK(holds_effective_us(t->configured, cap) == t->effective);
                for (size_t j = 0; j < s.n; j++)
                        CHECK(hold_sets_budget(&s.holds[j], t->controller, t->configured, cap) ==
                               !!(t->sets & (1u << j)));
        }
        /* released: the cap goes back up */
        current = "/holds/cap/after-release";
        CHECK(holds_remove(&s, s.holds[0].cookie, NULL) == 0);
        CHECK(holds_cap_us(&s, "nvme0") == 5000);
        CHECK(holds_remove(&s, s.holds[1].cookie, NULL) == 0);   /* the second nvme0 hold */
        CHECK(holds_cap_us(&s, "nvme0") == 20000);
        holds_done(&s);
}

int main(void) {
        test_validate();
        test_text_length();
        test_limits();
        test_cookies();
        test_order();
        test_cap();
        return check_exit_status();
}
