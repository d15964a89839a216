/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Where the machine's power comes from, read from the kernel's power_supply
 * class (/sys/class/power_supply/NAME/{type,online,status,scope}). The
 * decision is power_source_decide() (situation.h, pure); this file only reads.
 * No UPower: the daemon follows the class's uevents (manager-power.c).
 *
 * power_profile_read() asks power-profiles-daemon once (the daemon follows
 * it with signals, manager-power.c).
 */

#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

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

/* power-profiles-daemon: since 0.20 it also owns the UPower name, which is the one to prefer; 0.12
 * (Debian 12) has only net.hadess. Each name has its object and interface of the same name. */
#define PPD_NAME "org.freedesktop.UPower.PowerProfiles"
#define PPD_PATH "/org/freedesktop/UPower/PowerProfiles"
#define PPD_OLD_NAME "net.hadess.PowerProfiles"
#define PPD_OLD_PATH "/net/hadess/PowerProfiles"

/* A Get(ActiveProfile) for @name at @path that never starts power-profiles-daemon. */
int power_profile_call(sd_bus *bus, const char *name, const char *path, sd_bus_message **ret);

/* The profile from a Get(ActiveProfile) reply into @buf; "" for an error reply. */
void power_profile_from_reply(sd_bus_message *reply, char *buf, size_t n);

/**
 * power_profile_read() - power-profiles-daemon's ActiveProfile now, synchronously
 * @bus: a system bus connection
 * @timeout_usec: per call; an absent daemon answers at once (the bus says "no owner")
 *
 * Asks the newer name first, then the older one. @buf gets "" when neither
 * answers: no profile (profile sections never apply).
 */
void power_profile_read(sd_bus *bus, uint64_t timeout_usec, char *buf, size_t n);

/**
 * situation_read_now() - the situation as the machine is now, for one-shot commands
 *
 * Power source from @sysroot, profile over the system bus (none when there is
 * no bus). Never fails: what cannot be read is AC / no profile.
 */
void situation_read_now(const char *sysroot, Situation *ret);
