/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * libcpupower's header is called <cpufreq.h>, like ours, and our include/
 * directory comes first in the search path, so a plain #include finds ours.
 * #include_next continues the search after include/ and finds the system
 * one. Only src/cpufreq-sysfs.c includes this.
 */

#include_next <cpufreq.h>
