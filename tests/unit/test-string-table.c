/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * include/core/string-table.h (headers only): the macro on enums of its own, then every table
 * the sources define with it (adapt.c, apst.c, config.c, cpufreq-policy.c, device.c, doctor.c,
 * holds.c, sim.c, situation.c, trace.c, engine/apply.c): each value has a name, names are
 * distinct, each name parses back to its value, and a value outside the table has no name.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "adapt.h"
#include "apply.h"
#include "apst.h"
#include "check.h"
#include "config.h"
#include "cpufreq-policy.h"
#include "device.h"
#include "doctor.h"
#include "holds.h"
#include "kmsg.h"
#include "quarantine.h"
#include "sim.h"
#include "situation.h"
#include "string-table.h"
#include "trace.h"

typedef enum Fruit {
        FRUIT_APPLE,
        FRUIT_PEAR,
        FRUIT_QUINCE,
        _FRUIT_MAX,
        _FRUIT_INVALID = -EINVAL,
} Fruit;

static const char *const fruit_table[_FRUIT_MAX] = {
        [FRUIT_APPLE] = "apple",
        [FRUIT_PEAR] = "pear",
        [FRUIT_QUINCE] = "quince",
};

const char *fruit_to_string(Fruit f);
Fruit fruit_from_string(const char *s);
DEFINE_STRING_TABLE_LOOKUP(fruit, Fruit);

/* A table with a hole: the value without a name prints as NULL and no string parses to it. */
typedef enum Hole {
        HOLE_NAMED,
        HOLE_UNNAMED,
        _HOLE_MAX,
        _HOLE_INVALID = -EINVAL,
} Hole;

static const char *const hole_table[_HOLE_MAX] = {
        [HOLE_NAMED] = "named",
};

const char *hole_to_string(Hole h);
Hole hole_from_string(const char *s);
DEFINE_STRING_TABLE_LOOKUP(hole, Hole);

/* The static variant, as a .c file's private enum uses it: no prototypes needed. */
typedef enum Tide {
        TIDE_EBB,
        TIDE_FLOOD,
        _TIDE_MAX,
        _TIDE_INVALID = -EINVAL,
} Tide;

static const char *const tide_table[_TIDE_MAX] = {
        [TIDE_EBB] = "ebb",
        [TIDE_FLOOD] = "flood",
};

DEFINE_PRIVATE_STRING_TABLE_LOOKUP(tide, Tide);

/* NULL-safe: a failed CHECK goes on, so a missing name must not crash the next one. */
static bool streq_null(const char *a, const char *b) {
        return a && b && strcmp(a, b) == 0;
}

static void test_macro(void) {
        current = "macro";
        for (Fruit f = 0; f < _FRUIT_MAX; f++)
                CHECK(fruit_from_string(fruit_to_string(f)) == f);
        CHECK(streq_null(fruit_to_string(FRUIT_PEAR), "pear"));
        CHECK(fruit_from_string("quince") == FRUIT_QUINCE);
        CHECK(fruit_to_string(_FRUIT_MAX) == NULL);
        CHECK(fruit_to_string(_FRUIT_INVALID) == NULL);
        CHECK(fruit_to_string((Fruit) -1) == NULL);
        CHECK(fruit_to_string((Fruit) 1000) == NULL);
        CHECK(fruit_from_string(NULL) == -EINVAL);
        CHECK(fruit_from_string("") == -EINVAL);
        CHECK(fruit_from_string("Pear") == -EINVAL);      /* case matters */
        CHECK(fruit_from_string("pear ") == -EINVAL);     /* the whole string */
        CHECK(fruit_from_string("pea") == -EINVAL);       /* not a prefix */

        CHECK(streq_null(hole_to_string(HOLE_NAMED), "named"));
        CHECK(hole_to_string(HOLE_UNNAMED) == NULL);
        CHECK(hole_from_string("named") == HOLE_NAMED);
        CHECK(hole_from_string("") == _HOLE_INVALID);

        CHECK(streq_null(tide_to_string(TIDE_FLOOD), "flood"));
        CHECK(tide_from_string("ebb") == TIDE_EBB);
        CHECK(tide_to_string(_TIDE_MAX) == NULL);
        CHECK(tide_from_string("neap") == _TIDE_INVALID);
}

/* Each of @n values has a non-empty name no other value has; value @n and -EINVAL have none. */
#define CHECK_TABLE(to_string, n)                                                       \
        do {                                                                            \
                current = #to_string;                                                   \
                for (int _i = 0; _i < (int) (n); _i++) {                                \
                        const char *_s = to_string(_i);                                 \
                        CHECK(_s && _s[0]);                                             \
                        for (int _k = 0; _k < _i; _k++)                                 \
                                CHECK(!streq_null(_s, to_string(_k)));                  \
                }                                                                       \
                CHECK(to_string(n) == NULL);                                            \
                CHECK(to_string(-EINVAL) == NULL);                                      \
        } while (0)

/* ... and each name parses back to its value; unknown names and NULL give -EINVAL. */
#define CHECK_ROUND_TRIP(to_string, from_string, n)                                     \
        do {                                                                            \
                CHECK_TABLE(to_string, n);                                              \
                for (int _i = 0; _i < (int) (n); _i++)                                  \
                        CHECK((int) from_string(to_string(_i)) == _i);                  \
                CHECK((int) from_string("no-such-name") == -EINVAL);                    \
                CHECK((int) from_string(NULL) == -EINVAL);                              \
        } while (0)

static void test_tables(void) {
        CHECK_ROUND_TRIP(apst_policy_to_string, apst_policy_from_string, _APST_POLICY_MAX);
        CHECK_ROUND_TRIP(nvme_failure_kind_to_string, nvme_failure_kind_from_string, _NVME_FAILURE_MAX);
        CHECK_ROUND_TRIP(quarantine_verdict_to_string, quarantine_verdict_from_string, _QUARANTINE_VERDICT_MAX);
        CHECK_ROUND_TRIP(adapt_source_to_string, adapt_source_from_string, _ADAPT_SOURCE_MAX);
        CHECK_ROUND_TRIP(cpu_pin_mode_to_string, cpu_pin_mode_from_string, _CPU_PIN_MAX);
        CHECK_ROUND_TRIP(watch_source_mode_to_string, watch_source_mode_from_string, _WATCH_SOURCE_MAX);
        CHECK_TABLE(apply_step_to_string, _APPLY_STEP_MAX);
        CHECK_TABLE(cpufreq_attr_to_string, _CPUFREQ_ATTR_MAX);
        CHECK_TABLE(device_verdict_to_string, _DEVICE_VERDICT_MAX);
        CHECK_TABLE(doctor_finding_id_to_string, _DOCTOR_FINDING_MAX);
        CHECK_TABLE(hold_arg_to_string, _HOLD_ARG_MAX);
        CHECK_TABLE(power_source_to_string, _POWER_SOURCE_MAX);
        CHECK_TABLE(sim_activity_to_string, _SIM_ACTIVITY_MAX);
        CHECK_TABLE(trace_format_to_string, _TRACE_FORMAT_MAX);
        CHECK_TABLE(trace_op_to_string, _TRACE_OP_MAX);
}

int main(void) {
        test_macro();
        test_tables();
        return check_exit_status();
}
