/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Latency holds: validation, the set, the cap; see holds.h.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holds.h"
#include "macro.h"
#include "string-table.h"
#include "util.h"

static const char *const hold_arg_table[_HOLD_ARG_MAX] = {
        [HOLD_ARG_CONTROLLER] = "controller",
        [HOLD_ARG_LATENCY] = "max_latency_usec",
        [HOLD_ARG_REASON] = "reason",
        [HOLD_ARG_APPLICATION_ID] = "application_id",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(hold_arg, HoldArg);

bool hold_check_controller(const char *name) {
        size_t l = strlen(name);

        if (l == 0)
                return true;
        if (l >= HOLD_CONTROLLER_SIZE || l < 5 || strncmp(name, "nvme", 4) != 0)
                return false;
        if (name[4] == '0' && l > 5)   /* the kernel's "nvme%d" has no leading zero */
                return false;
        for (size_t i = 4; i < l; i++)
                if (name[i] < '0' || name[i] > '9')
                        return false;
        return true;
}

/* Why @s is refused as a reason or application id, or NULL when it is fine. */
static const char *text_problem(const char *s) {
        size_t off = 0;

        while (s[off]) {
                const unsigned char c = (unsigned char) s[off];
                size_t n = utf8_char_len(s + off);

                if (n == 0)
                        return "is not valid UTF-8";
                if (c < 0x20 || c == 0x7f)
                        return "contains a control character";
                /* C1 controls U+0080..U+009F: encoded as 0xc2 0x80..0x9f */
                if (c == 0xc2 && (unsigned char) s[off + 1] <= 0x9f)
                        return "contains a control character";
                off += n;
                if (off > HOLD_TEXT_MAX)
                        return "is longer than 255 bytes";
        }
        return NULL;
}

bool hold_check_text(const char *s) {
        return !text_problem(s);
}

/* Say which argument is refused and why ("reason: contains a control character"). */
static int refuse(HoldArg a, HoldArg *ret_bad, char *why, size_t n, const char *detail) {
        if (ret_bad)
                *ret_bad = a;
        if (why && n > 0)
                (void) snprintf(why, n, "%s: %s", hold_arg_to_string(a), detail);
        return -EINVAL;
}

int hold_validate(const char *controller, uint64_t max_latency_us, uint64_t latency_max_us, const char *reason,
                  const char *application_id, HoldArg *ret_bad, char *why, size_t n) {
        char detail[128];
        const char *p;

        if (!hold_check_controller(controller))
                return refuse(HOLD_ARG_CONTROLLER, ret_bad, why, n,
                              "not a controller name (\"nvme\" and its number, e.g. nvme0, or \"\" for every one)");
        if (max_latency_us > latency_max_us) {
                (void) snprintf(detail, sizeof detail, "%" PRIu64 " us is above the largest budget the "
                                "configuration accepts (%" PRIu64 " us)", max_latency_us, latency_max_us);
                return refuse(HOLD_ARG_LATENCY, ret_bad, why, n, detail);
        }
        p = text_problem(reason);
        if (p)
                return refuse(HOLD_ARG_REASON, ret_bad, why, n, p);
        p = text_problem(application_id);
        if (p)
                return refuse(HOLD_ARG_APPLICATION_ID, ret_bad, why, n, p);
        return 0;
}

void holds_init(HoldSet *s) {
        *s = (HoldSet) {};
}

void holds_done(HoldSet *s) {
        free(s->holds);
        holds_init(s);
}

size_t holds_count_owner(const HoldSet *s, const char *owner) {
        size_t k = 0;

        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->holds[i].owner, owner) == 0)
                        k++;
        return k;
}

const Hold *holds_find(const HoldSet *s, uint32_t cookie) {
        for (size_t i = 0; i < s->n; i++)
                if (s->holds[i].cookie == cookie)
                        return &s->holds[i];
        return NULL;
}

/* The next cookie after the last one given out that is neither 0 nor in force. The set holds at
 * most HOLDS_MAX, so at most HOLDS_MAX + 1 candidates are looked at. */
static uint32_t next_cookie(const HoldSet *s) {
        uint32_t c = s->last_cookie;

        do
                c++;
        while (c == 0 || holds_find(s, c));
        return c;
}

int holds_add(HoldSet *s, const Hold *h, uint32_t *ret_cookie) {
        if (holds_count_owner(s, h->owner) >= HOLDS_PER_OWNER_MAX)
                return -EDQUOT;
        if (s->n >= HOLDS_MAX)
                return -ENOSPC;
        if (s->n == s->allocated) {
                size_t want = s->allocated ? s->allocated * 2 : 4;
                Hold *t = realloc(s->holds, MIN(want, (size_t) HOLDS_MAX) * sizeof *t);

                if (!t)
                        return -ENOMEM;
                s->holds = t;
                s->allocated = MIN(want, (size_t) HOLDS_MAX);
        }
        s->holds[s->n] = *h;
        s->holds[s->n].cookie = s->last_cookie = next_cookie(s);
        s->n++;
        *ret_cookie = s->last_cookie;
        return 0;
}

int holds_remove(HoldSet *s, uint32_t cookie, Hold *ret) {
        for (size_t i = 0; i < s->n; i++) {
                if (s->holds[i].cookie != cookie)
                        continue;
                if (ret)
                        *ret = s->holds[i];
                memmove(s->holds + i, s->holds + i + 1, (s->n - i - 1) * sizeof *s->holds);
                s->n--;
                return 0;
        }
        return -ENOENT;
}

bool hold_applies(const Hold *h, const char *controller) {
        return h->controller[0] == 0 || strcmp(h->controller, controller) == 0;
}

uint32_t holds_cap_us(const HoldSet *s, const char *controller) {
        uint32_t cap = HOLD_NO_CAP;

        for (size_t i = 0; i < s->n; i++)
                if (hold_applies(&s->holds[i], controller))
                        cap = MIN(cap, s->holds[i].max_latency_us);
        return cap;
}

bool hold_sets_budget(const Hold *h, const char *controller, uint32_t configured_us, uint32_t cap_us) {
        return hold_applies(h, controller) && h->max_latency_us == cap_us && cap_us < configured_us;
}
