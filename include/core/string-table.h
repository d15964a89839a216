/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * An enum's names from one table, modelled on systemd's DEFINE_STRING_TABLE_LOOKUP
 * (src/basic/string-table.h). A module writes
 *
 *     static const char *const apst_policy_table[_APST_POLICY_MAX] = {
 *             [APST_POLICY_BUDGET] = "budget",
 *             ...
 *     };
 *     DEFINE_STRING_TABLE_LOOKUP(apst_policy, ApstPolicyKind);
 *
 * and gets apst_policy_to_string(ApstPolicyKind), NULL for a value outside the table, and
 * apst_policy_from_string(const char *), the value whose name is exactly @s (case matters)
 * or -EINVAL (the enum's _INVALID) for NULL or an unknown name. A module whose names are only
 * printed, never parsed, uses DEFINE_STRING_TABLE_LOOKUP_TO_STRING alone; an enum private to
 * one .c file uses DEFINE_PRIVATE_STRING_TABLE_LOOKUP (both functions static).
 *
 * The table's size is the enum's _MAX, so a value added to the enum without a name is a hole
 * (NULL) that the test of each table finds (tests/unit/test-string-table.c).
 */

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "macro.h"

/* (size_t) of a negative value (an enum's _INVALID) is past every table: one comparison for both ends */
#define _DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, scope)                \
        scope const char *name##_to_string(type i) {                            \
                if ((size_t) i >= ELEMENTSOF(name##_table))                     \
                        return NULL;                                            \
                return name##_table[i];                                         \
        }

#define _DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, scope)              \
        scope type name##_from_string(const char *s) {                          \
                if (!s)                                                         \
                        return (type) -EINVAL;                                  \
                for (size_t i = 0; i < ELEMENTSOF(name##_table); i++)           \
                        if (name##_table[i] && strcmp(name##_table[i], s) == 0) \
                                return (type) i;                                \
                return (type) -EINVAL;                                          \
        }

#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type) _DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, )
#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type) _DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, )

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                  \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                        \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)

/* The same, static: for an enum of one file, without a header to declare its lookups in. */
#define DEFINE_PRIVATE_STRING_TABLE_LOOKUP(name, type)                          \
        _DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type, static)               \
        _DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type, static)
