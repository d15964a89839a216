/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Where the machine's power comes from, read from the kernel's power_supply
 * class (/sys/class/power_supply/NAME/{type,online,status,scope}). The
 * decision is power_source_decide() (situation.h, pure); this file only reads.
 * No UPower: the daemon follows the class's uevents (manager-power.c).
 */

#include "situation.h"

/* Longest list of supplies read; real machines have 2 to 5 (AC, BAT0, BAT1, USB-C ports, a mouse). */
#define POWER_SUPPLIES_MAX 64u

/**
 * power_source_read() - the power source now
 * @sysroot: "/sys", or a test tree
 *
 * A missing /sys/class/power_supply (no such class: a desktop, a VM) is AC.
 * A supply that vanishes while it is read is skipped.
 * Return: 0, or negative errno when the class directory exists but cannot be read.
 */
int power_source_read(const char *sysroot, PowerSource *ret);
