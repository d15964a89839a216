/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What `nvme-apstd plan` shows, as data: collected once through the engine
 * (Identify only), then printed in words or turned into JSON. `status`
 * without a running daemon shows the same data.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "config.h"
#include "device.h"
#include "idctrl.h"
#include "quarantine.h"
#include "sysinfo.h"

typedef struct PlanEntry {
        char name[PATH_MAX];
        bool have_sys;
        SysCtrl sys;
        IdCtrl id;
        DevicePlan plan;
        uint8_t quarantine_below;  /* Controller.quarantine_below: QUARANTINE_NONE, or the states left out */
} PlanEntry;

typedef struct PlanResult {
        PlanEntry *entries;
        size_t n;
        char *cpu_text;            /* what [cpu] would do, NULL when it could not be described */
        int failed;                /* controllers that could not be planned (or named and absent) */
        PlanEntry *owned;          /* freed by plan_result_done() */
} PlanResult;

/* The plan of the live controllers named in @names (every one when none). Return: 0 or -errno (logged). */
int plan_collect(const Config *cfg, char **names, size_t n_names, PlanResult *ret);
void plan_result_done(PlanResult *p);

/* The words `plan` prints. */
void plan_print_text(const Config *cfg, const PlanResult *p);
/* `plan --json`'s object (the caller owns it). */
struct json_object *plan_to_json(const Config *cfg, const PlanResult *p);
