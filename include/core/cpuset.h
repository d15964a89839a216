/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A fixed-size CPU set and the kernel's CPU list syntax ("0-3,6"), as used by
 * /sys/devices/system/cpu/online, /proc/irq/N/effective_affinity_list and the
 * `cpus =` key of the configuration (pure).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUSET_MAX 1024u   /* CPUs we can name; matches glibc's CPU_SETSIZE */

typedef struct CpuSet {
        uint64_t bits[CPUSET_MAX / 64];
} CpuSet;

static inline void cpuset_add(CpuSet *s, unsigned cpu) {
        if (cpu < CPUSET_MAX)
                s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}
static inline bool cpuset_has(const CpuSet *s, unsigned cpu) {
        return cpu < CPUSET_MAX && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}
unsigned cpuset_count(const CpuSet *s);
bool cpuset_is_empty(const CpuSet *s);
void cpuset_or(CpuSet *a, const CpuSet *b);
void cpuset_and(CpuSet *a, const CpuSet *b);

/**
 * cpuset_parse() - parse a CPU list: "0-3,6", "7", surrounding blanks and one
 * trailing newline allowed. Empty string, "3-1", "1,,2", "a", a CPU >= CPUSET_MAX,
 * or trailing garbage: -EINVAL (@ret untouched).
 */
int cpuset_parse(const char *s, CpuSet *ret);

/*
 * Buffer size that always holds cpuset_format()'s output: a range "a-b," covers
 * at least 3 CPUs with its gap and takes at most 10 characters, a lone "a,"
 * covers 2 and takes at most 5, so 1024 CPUs need fewer than 1024 * 10 / 3 + 1
 * bytes (the worst case, "0-1,3-4,...", is 2673 characters).
 */
#define CPUSET_FORMAT_MAX 4096u

/*
 * Format as a canonical list ("0-3,6"); "" for an empty set. A buffer smaller
 * than CPUSET_FORMAT_MAX may cut the list, but only between whole ranges.
 */
void cpuset_format(const CpuSet *s, char *buf, size_t n);
