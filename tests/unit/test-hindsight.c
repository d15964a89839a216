/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The best static table with hindsight (src/core/hindsight.c): what it may use,
 * what it must never exceed, and that it finds the saving a trace plainly offers.
 */
#include <stdio.h>
#include <string.h>

#include "apst.h"
#include "check.h"
#include "hindsight.h"
#include "sim.h"
#include "test-drives.h"

#define MS(x) ((uint64_t) ((x) * 1000000.0 + 0.5))

/* The states a table enters, as a bit mask. */
static unsigned targets(const ApstTable *t) {
        unsigned m = 0;

        for (unsigned i = 0; i < APST_ENTRIES; i++)
                if (apst_entry_itpt(t->entry[i]) > 0)
                        m |= 1u << apst_entry_itps(t->entry[i]);
        return m;
}

/* One 4 KiB read every @period_ms. */
static void periodic_trace(TraceIo *io, size_t n, double period_ms) {
        for (size_t i = 0; i < n; i++)
                io[i] = (TraceIo) { .t_ns = MS(period_ms) * i, .bytes = 4096, .op = TRACE_OP_READ };
}

typedef struct Case {
        IdCtrl id;
        SimDrive d;
        ApstParams p;
        ApstPlan kernel;
        SimResult k;
} Case;

static void setup(Case *c, const TraceIo *io, size_t n, unsigned quirks_pci) {
        ApstPlatform plat = {};
        SimPolicy pol;
        SimParams sp = SIM_PARAMS_DEFAULT;

        c->id = drive_970_like();
        CHECK(sim_drive_from_idctrl(&c->id, APST_P0_DEFAULT_UW, &c->d) == 0);
        c->p = APST_PARAMS_DEFAULT;
        c->p.policy = APST_POLICY_KERNEL;
        if (quirks_pci) {   /* the Intel 600p's PCI id, which the kernel gives NO_DEEPEST_PS */
                plat.pci_vendor = 0x8086;
                plat.pci_device = 0xf1a5;
        }
        CHECK(apst_build(&c->id, &plat, &c->p, &c->kernel) == 0);
        sim_policy_static(&pol, "kernel", &c->kernel.table);
        CHECK(sim_run(&c->d, io, n, &sp, &pol, &c->k) == 0);
}

/* One read every 3 s: every gap reaches the deepest state under any table that goes there, so
 * going there at once costs no more wake delay than the kernel's 100 ms and spends less. */
static void test_sparse(void) {
        static TraceIo io[200];
        SimParams sp = SIM_PARAMS_DEFAULT;
        HindsightResult h;
        Case c;

        current = "sparse";
        periodic_trace(io, 200, 3000);
        setup(&c, io, 200, 0);
        CHECK(targets(&c.kernel.table) & (1u << 4));
        CHECK(hindsight_search(&c.id, c.kernel.quirks, &c.p, &c.d, io, 200, &sp, &c.kernel.table, 1.0, &h) == 0);
        /* the kernel's, 13 one-step tables on each of ps3 and ps4, 13 x 13 two-step ones */
        CHECK(h.candidates == 1 + 13 + 13 + 169);
        CHECK(!h.kernel_won);
        CHECK(h.res.stall_ns <= c.k.stall_ns);
        /* ps0 for 100 ms at the assumed 0.3 W is 30 mJ of every 3 s gap's ~45 mJ */
        CHECK(h.res.energy_j < 0.8 * c.k.energy_j);
        CHECK(targets(&h.table) & (1u << 4));
        hindsight_result_done(&h);

        /* Allowed no wake delay at all: only a table that waits longer than the gaps (5 s) qualifies,
         * and it spends more than the kernel's. */
        current = "sparse, no wake delay allowed";
        CHECK(hindsight_search(&c.id, c.kernel.quirks, &c.p, &c.d, io, 200, &sp, &c.kernel.table, 0.0, &h) == 0);
        CHECK(!h.kernel_won && h.res.stall_ns == 0 && h.res.energy_j > c.k.energy_j);
        hindsight_result_done(&h);
        sim_result_done(&c.k);

        /* Gaps of 6 s, longer than the grid's longest ITPT: every table tried sleeps and pays, none
         * fits in no wake delay, and the kernel's table stands. */
        current = "6 s gaps, no wake delay allowed";
        periodic_trace(io, 200, 6000);
        setup(&c, io, 200, 0);
        CHECK(hindsight_search(&c.id, c.kernel.quirks, &c.p, &c.d, io, 200, &sp, &c.kernel.table, 0.0, &h) == 0);
        CHECK(h.kernel_won && apst_table_equal(&h.table, &c.kernel.table));
        hindsight_result_done(&h);
        sim_result_done(&c.k);
}

/* The drive's quirk bars ps4: no table the search tries goes there. */
static void test_quirk(void) {
        static TraceIo io[200];
        SimParams sp = SIM_PARAMS_DEFAULT;
        HindsightResult h;
        Case c;

        current = "quirk";
        periodic_trace(io, 200, 3000);
        setup(&c, io, 200, 1);
        CHECK(c.kernel.quirks & APST_QUIRK_NO_DEEPEST_PS);
        CHECK(!(targets(&c.kernel.table) & (1u << 4)));
        CHECK(hindsight_search(&c.id, c.kernel.quirks, &c.p, &c.d, io, 200, &sp, &c.kernel.table, 1.0, &h) == 0);
        CHECK(h.candidates == 1 + 13);
        CHECK(!(targets(&h.table) & (1u << 4)));
        CHECK(h.res.stall_ns <= c.k.stall_ns);
        CHECK(h.res.energy_j <= c.k.energy_j);
        hindsight_result_done(&h);
        sim_result_done(&c.k);
}

/* Gaps of 150 ms: the kernel's table sleeps in ps4 through each one and pays its 10 ms wake-up
 * every time; a table that waits longer than 150 ms never sleeps, so with the kernel's wake
 * delay allowed the search may not pick one that pays more, and with a tenth of it allowed only
 * tables that wake (far) less often qualify. */
static void test_limit(void) {
        static TraceIo io[400];
        SimParams sp = SIM_PARAMS_DEFAULT;
        HindsightResult h;
        Case c;

        current = "limit";
        periodic_trace(io, 400, 150);
        setup(&c, io, 400, 0);
        CHECK(c.k.stall_ns > 0);
        CHECK(hindsight_search(&c.id, c.kernel.quirks, &c.p, &c.d, io, 400, &sp, &c.kernel.table, 0.1,
                               &h) == 0);
        CHECK(!h.kernel_won);
        CHECK(h.res.stall_ns <= c.k.stall_ns / 10);
        hindsight_result_done(&h);
        sim_result_done(&c.k);
}

int main(void) {
        test_sparse();
        test_quirk();
        test_limit();
        printf("%u checks, %u failed\n", n_checks, n_failed);
        return n_failed ? 1 : 0;
}
