/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The string-table helper (string-table.h): the macro on an enum of its own, then every
 * table the sources define: each value has a name, names are distinct, each name parses back
 * to its value, and a value outside the table has no name.
 */
#undef NDEBUG

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "string-table.h"

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

static void test_macro(void) {
        for (Fruit f = 0; f < _FRUIT_MAX; f++)
                assert(fruit_from_string(fruit_to_string(f)) == f);
        assert(strcmp(fruit_to_string(FRUIT_PEAR), "pear") == 0);
        assert(fruit_from_string("quince") == FRUIT_QUINCE);
        assert(fruit_to_string(_FRUIT_MAX) == NULL);
        assert(fruit_to_string(_FRUIT_INVALID) == NULL);
        assert(fruit_to_string((Fruit) -1) == NULL);
        assert(fruit_to_string((Fruit) 1000) == NULL);
        assert(fruit_from_string(NULL) == -EINVAL);
        assert(fruit_from_string("") == -EINVAL);
        assert(fruit_from_string("Pear") == -EINVAL);      /* case matters */
        assert(fruit_from_string("pear ") == -EINVAL);     /* the whole string */
        assert(fruit_from_string("pea") == -EINVAL);       /* not a prefix */

        assert(strcmp(hole_to_string(HOLE_NAMED), "named") == 0);
        assert(hole_to_string(HOLE_UNNAMED) == NULL);
        assert(hole_from_string("named") == HOLE_NAMED);
        assert(hole_from_string("") == _HOLE_INVALID);
        printf("ok /string-table/macro\n");
}

int main(void) {
        test_macro();
        return 0;
}
