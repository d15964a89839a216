/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's learned table (controller.c), on the parts that need no device:
 * controller_program() refuses a table beyond max_latency_us or invalid for the
 * controller before anything is opened, and controller_replan() keeps the learned
 * table for an unchanged configuration and drops it for a changed one.
 */
#undef NDEBUG
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "controller.h"
#include "fileio.h"
#include "idctrl.h"

static void load_samsung(IdCtrl *id) {
        char *buf = NULL;
        size_t len = 0;

        assert(read_full_file(TEST_DATA_DIR "/idctrl/05-samsung-ssd-970-evo-plus-2tb.bin", 1 << 20, 0, &buf, &len) ==
               0);
        assert(idctrl_parse_any(buf, len, id) == 0);
        free(buf);
}

static void setup(Controller *c, Config *cfg, ControllerContext *ctx, SysPlatform *plat) {
        controller_init(c, "nvme0");
        load_samsung(&c->id);
        (void) snprintf(c->sys.transport, sizeof c->sys.transport, "pcie");
        (void) snprintf(c->sys.state, sizeof c->sys.state, "live");
        c->identified = true;
        *plat = (SysPlatform) {};
        *ctx = (ControllerContext) {
                .mode = CONTROLLER_MODE_DAEMON,
                .sysfs_root = "/nonexistent",
                .dev_dir = "/nonexistent",
                .config = cfg,
                .platform = plat,
        };
        assert(controller_replan(c, ctx, NULL) == 0);
        assert(c->plan.verdict == DEVICE_MANAGE);
}

int main(void) {
        Controller c;
        Config cfg;
        ControllerContext ctx;
        SysPlatform plat;
        ControllerOutcome o;
        ApstTable t = {};
        bool changed = true;
        unsigned st[1] = { 4 };
        uint32_t itpt[1] = { 100 };

        config_init(&cfg);
        cfg.apst.policy = APST_POLICY_ADAPTIVE;
        cfg.apst.max_latency_us = 5000;   /* ps3 (210 + 1200 us) fits, ps4 (2000 + 8000 us) does not */
        setup(&c, &cfg, &ctx, &plat);

        /* ps0 -> ps4 after 100 ms: a 10 ms wake, beyond max_latency_us */
        apst_table_from_chain(&c.id, st, itpt, 1, &t);
        assert(controller_program(&c, &ctx, &t, "adaptive", &o) == -ERANGE);
        assert(o.result == CONTROLLER_FAILED && o.failed_step == CONTROLLER_STEP_PLAN);
        assert(!c.have_learned && !c.have_written);
        printf("ok: a table beyond max_latency_us is refused before anything is sent\n");

        /* a target beyond npss is not a table for this controller */
        t = (ApstTable) { .apste = true };
        t.entry[0] = apst_entry_make(7, 100);
        assert(controller_program(&c, &ctx, &t, "adaptive", &o) == -EINVAL);
        assert(!c.have_learned);
        printf("ok: an invalid table is refused\n");

        /* the learned table is what a sync writes; an unchanged reload keeps it */
        st[0] = 3;
        apst_table_from_chain(&c.id, st, itpt, 1, &t);
        c.learned = t;
        c.have_learned = true;
        assert(apst_table_equal(controller_table(&c), &t));
        assert(controller_replan(&c, &ctx, &changed) == 0);
        assert(!changed && c.have_learned);
        printf("ok: an unchanged configuration keeps the learned table\n");

        /* a changed knob (the stall budget) drops it: the plan's table is written again */
        cfg.apst.stall_budget_cpct = 50;
        assert(controller_replan(&c, &ctx, &changed) == 0);
        assert(!c.have_learned);
        assert(changed == !apst_table_equal(&t, &c.plan.plan.table));
        assert(apst_table_equal(controller_table(&c), &c.plan.plan.table));
        printf("ok: a changed configuration drops the learned table\n");

        config_done(&cfg);
        return 0;
}
