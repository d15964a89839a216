/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The real CPU frequency backend: libcpupower for governor and limits, our own
 * writer for energy_performance_preference (the only file that includes
 * libcpupower's <cpufreq.h>; doc/cpu-pinning.md).
 */

#include "cpufreq-policy.h"

/* The libcpupower + sysfs backend; userdata unused. */
extern const CpufreqOps cpufreq_sysfs_ops;
