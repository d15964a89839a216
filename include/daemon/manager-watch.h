/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The I/O watcher and the adaptive policy (src/daemon/manager-watch.c): one sd-event timer per
 * watched controller, re-armed when the watcher wants its next reading. A controller is
 * watched while its policy is adaptive or [cpu] pin = busy; the watcher then also takes
 * over its verification (the verify timer runs only for controllers nobody watches).
 * It asks the manager for engine steps and publication through manager-state.h only.
 */

#include <stdbool.h>
#include <stdint.h>

#include "manager-state.h"
#include "shadow.h"

typedef struct ManagerWatch ManagerWatch;   /* one controller's I/O watcher */

void manager_watch_ctrl(ManagerCtrl *c);        /* start, restart or stop to match the config and plan */
void manager_watch_all(Manager *m);
ManagerWatch *manager_watch_free(ManagerWatch *w);
/* What @c's watcher has seen since it (re)started: I/Os completed and time the I/O waited for the
 * drive to wake. Return: false (and zeros) when the controller is not watched. */
bool manager_watch_observed(const ManagerCtrl *c, uint64_t *ret_ios, uint64_t *ret_stall_us);
/* How long @c's drive has been idle at @now_usec (CLOCK_MONOTONIC), as its counter sampler saw it (the
 * quarantine's blame, doc/quarantine.md). Return: false when unknown (not watched, or the eBPF source). */
bool manager_watch_idle_usec(const ManagerCtrl *c, uint64_t now_usec, uint64_t *ret);
/* "bpf" or "stat": where @c's watcher sees its I/O; NULL when it is not watched. */
const char *manager_watch_source(const ManagerCtrl *c);
/* Unload the eBPF program once no watcher reads it (stop, or a reload to source = stat). */
void manager_watch_release_bpf(Manager *m);

/* The shadow kernel's figures for one controller (the adaptive policy on the exact source). */
typedef struct ManagerSavings {
        const char *source;             /* "bpf", "stat"; NULL when the controller is not watched */
        bool known;                     /* the figures below are meaningful (exact source) */
        ShadowSums total_applied, total_kernel;     /* since the policy started */
        ShadowSums window_applied, window_kernel;   /* the guard's window (SHADOW_WINDOW_NS) */
        uint64_t fallbacks;             /* times the guard put the kernel's table back */
} ManagerSavings;
void manager_watch_savings(const ManagerCtrl *c, ManagerSavings *ret);
