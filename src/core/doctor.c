/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd doctor`: from a snapshot of the machine to findings (pure; see
 * doctor.h). The facts each check relies on, with their sources, are in
 * doc/doctor.md; the IDs and the JSON schema in nvme-apstd(8).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "doctor.h"
#include "macro.h"
#include "quarantine.h"
#include "string-table.h"

static const char *const doctor_finding_id_table[_DOCTOR_FINDING_MAX] = {
        [DOCTOR_APST_FIRMWARE_UNSUPPORTED] = "apst-firmware-unsupported",
        [DOCTOR_APST_KERNEL_DISABLED] = "apst-kernel-disabled",
        [DOCTOR_APST_STATE_OVER_BUDGET] = "apst-state-over-budget",
        [DOCTOR_APST_DAEMON_NOT_RUNNING] = "apst-daemon-not-running",
        [DOCTOR_APST_TABLE_DIFFERS] = "apst-table-differs",
        [DOCTOR_REQUEST_SIZE_DMA_LIMIT] = "request-size-dma-limit",
        [DOCTOR_REQUEST_SIZE_SOFT_LIMIT] = "request-size-soft-limit",
        [DOCTOR_CPU_SLOW_RAMP] = "cpu-slow-ramp",
        [DOCTOR_APST_QUARANTINED] = "apst-quarantined",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(doctor_finding_id, DoctorFindingId);

/* ---- building the report; the first allocation failure sticks in ctx->error ---- */

typedef struct Ctx {
        const DoctorSnapshot *s;
        DoctorReport r;
        int error;
} Ctx;

_printf_(1, 0) static char *vformat(const char *fmt, va_list ap) {
        char *s = NULL;

        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

static bool grow(void **v, size_t n, size_t size) {
        void *t = reallocarray(*v, n + 1, size);

        if (!t)
                return false;
        *v = t;
        return true;
}

static DoctorFinding *finding_new(Ctx *c, DoctorFindingId id, const char *subject) {
        DoctorFinding *f;

        if (c->error < 0 || !grow((void **) &c->r.findings, c->r.n_findings, sizeof *f)) {
                c->error = -ENOMEM;
                return NULL;
        }
        f = &c->r.findings[c->r.n_findings++];
        *f = (DoctorFinding) { .id = id, .subject = strdup(subject) };
        if (!f->subject)
                c->error = -ENOMEM;
        return f;
}

_printf_(3, 4) static void title(Ctx *c, DoctorFinding *f, const char *fmt, ...) {
        va_list ap;

        if (!f || c->error < 0)
                return;
        va_start(ap, fmt);
        f->title = vformat(fmt, ap);
        va_end(ap);
        if (!f->title)
                c->error = -ENOMEM;
}

_printf_(3, 4) static void why(Ctx *c, DoctorFinding *f, const char *fmt, ...) {
        va_list ap;

        if (!f || c->error < 0)
                return;
        va_start(ap, fmt);
        f->why = vformat(fmt, ap);
        va_end(ap);
        if (!f->why)
                c->error = -ENOMEM;
}

_printf_(4, 5) static void evidence(Ctx *c, DoctorFinding *f, const char *source, const char *fmt, ...) {
        DoctorEvidence *e;
        va_list ap;

        if (!f || c->error < 0)
                return;
        if (!grow((void **) &f->evidence, f->n_evidence, sizeof *e)) {
                c->error = -ENOMEM;
                return;
        }
        e = &f->evidence[f->n_evidence++];
        va_start(ap, fmt);
        *e = (DoctorEvidence) { .source = strdup(source), .value = vformat(fmt, ap) };
        va_end(ap);
        if (!e->source || !e->value)
                c->error = -ENOMEM;
}

_printf_(3, 4) static void fix(Ctx *c, DoctorFinding *f, const char *fmt, ...) {
        va_list ap;

        if (!f || c->error < 0)
                return;
        if (!grow((void **) &f->fix, f->n_fix, sizeof(char *))) {
                c->error = -ENOMEM;
                return;
        }
        va_start(ap, fmt);
        f->fix[f->n_fix] = vformat(fmt, ap);
        va_end(ap);
        if (!f->fix[f->n_fix++])
                c->error = -ENOMEM;
}

_printf_(5, 6) static void note(Ctx *c, bool skipped, bool error, const char *subject, const char *fmt, ...) {
        DoctorNote **v = skipped ? &c->r.skipped : &c->r.examined;
        size_t *n = skipped ? &c->r.n_skipped : &c->r.n_examined;
        DoctorNote *x;
        va_list ap;

        if (c->error < 0)
                return;
        if (!grow((void **) v, *n, sizeof **v)) {
                c->error = -ENOMEM;
                return;
        }
        x = &(*v)[(*n)++];
        va_start(ap, fmt);
        *x = (DoctorNote) { .subject = strdup(subject), .text = vformat(fmt, ap), .error = error };
        va_end(ap);
        if (!x->subject || !x->text)
                c->error = -ENOMEM;
}

/* ---- helpers ---- */

static const char *sysroot(const Ctx *c) {
        return c->s->sysfs_root ? c->s->sysfs_root : "/sys";
}

/* "nvme-apstd.conf [apst] max_latency_us" or "[device NAME] ..." or "(built-in default)" */
static void config_source(const Ctx *c, const char *section, const char *key, char *buf, size_t n) {
        const Config *cfg = c->s->config;

        if (!cfg->path)
                (void) snprintf(buf, n, "nvme-apstd configuration (built-in defaults) %s", key);
        else if (section)
                (void) snprintf(buf, n, "%s [device %s] %s", cfg->path, section, key);
        else
                (void) snprintf(buf, n, "%s [apst] %s", cfg->path, key);
}

/* Targets the table can move the controller to: bit i = ps i. */
static uint32_t table_targets(const ApstTable *t, const IdCtrl *id) {
        uint32_t m = 0;

        if (!t->apste)
                return 0;
        for (unsigned i = 0; i <= id->npss && i < APST_ENTRIES; i++)
                if (apst_entry_itpt(t->entry[i]) != 0)
                        m |= UINT32_C(1) << apst_entry_itps(t->entry[i]);
        return m;
}

static void describe(const ApstTable *t, const IdCtrl *id, char *buf, size_t n) {
        apst_describe(t, id, buf, n);
}

static void psd_evidence(Ctx *c, DoctorFinding *f, const DoctorCtrl *d, unsigned ps) {
        const IdPsd *p = &d->id.psd[ps];
        char src[64];

        (void) snprintf(src, sizeof src, "Identify %s ps%u", d->sys.name, ps);
        evidence(c, f, src, "%s, enlat %" PRIu32 " µs, exlat %" PRIu32 " µs, max power %" PRIu32 ".%04" PRIu32 " W",
                 p->non_operational ? "non-operational" : "operational", p->enlat_us, p->exlat_us,
                 p->max_power_uw / 1000000, (p->max_power_uw % 1000000) / 100);
}

static void table_evidence(Ctx *c, DoctorFinding *f, const DoctorCtrl *d, const char *what, const ApstTable *t) {
        char src[96], desc[1024];

        (void) snprintf(src, sizeof src, "%s %s", what, d->sys.name);
        describe(t, &d->id, desc, sizeof desc);
        evidence(c, f, src, "%s", desc);
}

static void pm_qos_evidence(Ctx *c, DoctorFinding *f, const DoctorCtrl *d) {
        char src[300];

        (void) snprintf(src, sizeof src, "%s/class/nvme/%s/power/pm_qos_latency_tolerance_us", sysroot(c), d->sys.name);
        if (d->have_pm_qos)
                evidence(c, f, src, "%" PRIu32, d->pm_qos_latency_tolerance_us);
        else
                evidence(c, f, src, "(absent: the kernel did not enable APST)");
}

static void nvme_core_evidence(Ctx *c, DoctorFinding *f) {
        char src[300];

        (void) snprintf(src, sizeof src, "%s/module/nvme_core/parameters/default_ps_max_latency_us", sysroot(c));
        if (c->s->have_nvme_core)
                evidence(c, f, src, "%" PRIu32, c->s->nvme_core.max_latency_us);
        else
                evidence(c, f, src, "(not readable)");
}

/* Kernel command line parameters matching one of @prefixes, blank-separated into @buf. */
static void cmdline_params(const char *cmdline, const char *const *prefixes, char *buf, size_t n) {
        size_t o = 0;

        buf[0] = '\0';
        for (const char *p = cmdline; p && *p;) {
                size_t l;

                p += strspn(p, " \t\n");
                l = strcspn(p, " \t\n");
                for (const char *const *q = prefixes; l > 0 && *q; q++)
                        if (strncmp(p, *q, strlen(*q)) == 0) {
                                int k = snprintf(buf + o, n - o, "%s%.*s", o ? " " : "", (int) l, p);
                                if (k > 0 && (size_t) k < n - o)
                                        o += (size_t) k;
                                break;
                        }
                p += l;
        }
}

/* ---- APST ---- */

/* The table the kernel writes for @d: nvme_core's parameters, the tolerance in force. */
static bool kernel_table(const Ctx *c, const DoctorCtrl *d, ApstTable *ret) {
        ApstParams p = c->s->have_nvme_core ? c->s->nvme_core : APST_PARAMS_DEFAULT;
        ApstPlatform plat = {
                .pci_vendor = d->sys.pci_vendor,
                .pci_device = d->sys.pci_device,
                .board_vendor = c->s->platform.board_vendor,
                .board_name = c->s->platform.board_name,
                .sys_vendor = c->s->platform.sys_vendor,
                .product_name = c->s->platform.product_name,
        };
        ApstPlan plan;

        p.policy = APST_POLICY_KERNEL;
        if (d->have_pm_qos)
                p.max_latency_us = d->pm_qos_latency_tolerance_us;
        if (apst_build(&d->id, &plat, &p, &plan) < 0 || plan.outcome != APST_OUTCOME_PROGRAM)
                return false;
        *ret = plan.table;
        return true;
}

static void check_kernel_disabled(Ctx *c, const DoctorCtrl *d, const DevicePlan *plan) {
        const DoctorSnapshot *s = c->s;
        DoctorFinding *f;
        bool param_off = s->have_nvme_core && s->nvme_core.max_latency_us == 0;
        bool qos_off = d->have_pm_qos && d->pm_qos_latency_tolerance_us == 0;
        bool quirk = (plan->plan.quirks & APST_QUIRK_NO_APST) && !(s->have_nvme_core && s->nvme_core.force);
        char desc[1024];

        f = finding_new(c, DOCTOR_APST_KERNEL_DISABLED, d->sys.name);
        title(c, f, "APST is off on %s (APSTE=0), although the drive supports it", d->sys.name);
        table_evidence(c, f, d, "Get Features 0x0C (table in force)", &d->table);
        evidence(c, f, "Identify apsta", "1 (APST supported)");
        nvme_core_evidence(c, f);
        pm_qos_evidence(c, f, d);
        if (plan->plan.quirks & APST_QUIRK_NO_APST)
                evidence(c, f, "kernel quirk list (drivers/nvme/host/core.c, pci.c)",
                         "NVME_QUIRK_NO_APST matches %s (PCI %04x:%04x, board \"%s\")%s", d->id.model,
                         d->sys.pci_vendor, d->sys.pci_device, s->platform.board_name,
                         s->have_nvme_core && s->nvme_core.force ? ", but nvme_core.force_apst=Y" : "");
        if (s->cmdline) {
                static const char *const pfx[] = { "nvme_core.", NULL };
                char params[512];
                cmdline_params(s->cmdline, pfx, params, sizeof params);
                evidence(c, f, "/proc/cmdline (nvme_core.*)", "%s", params[0] ? params : "(none)");
        }
        describe(&plan->plan.table, &d->id, desc, sizeof desc);
        evidence(c, f, "nvme-apstd would write", "%s", desc);
        why(c, f, "Without APST the drive stays in an operational power state while idle. The kernel writes "
                  "APSTE=0 when default_ps_max_latency_us or the controller's pm_qos_latency_tolerance_us "
                  "is 0, or when the drive is on its NO_APST quirk list (firmware known to fail in deep "
                  "states); the cause%s: %s.", (param_off + qos_off + quirk) > 1 ? "s seen here are" : " seen here is",
            param_off ? "nvme_core.default_ps_max_latency_us=0" :
            qos_off ? "pm_qos_latency_tolerance_us=0" :
            quirk ? "the NO_APST quirk" : "none of these, so something else wrote APSTE=0 (nvme set-feature, "
                                          "another tool, or a daemon that restored it)");
        if (param_off && qos_off)
                fix(c, f, "Also: pm_qos_latency_tolerance_us=0 on this controller.");
        if (param_off)
                fix(c, f, "Remove nvme_core.default_ps_max_latency_us=0 from the kernel command line (or set it "
                          "to the latency you accept, e.g. nvme_core.default_ps_max_latency_us=100000) and "
                          "reboot.");
        if (qos_off)
                fix(c, f, "echo 100000 > %s/class/nvme/%s/power/pm_qos_latency_tolerance_us   (the kernel "
                          "rewrites the table at once; lost at reboot)", sysroot(c), d->sys.name);
        if (quirk)
                fix(c, f, "Only if the drive's firmware is known to be fixed: a [device] section with force = yes "
                          "in nvme-apstd.conf (or nvme_core.force_apst=1), then systemctl restart nvme-apstd.");
        else
                fix(c, f, "Start nvme-apstd (systemctl enable --now nvme-apstd): it writes its own table "
                          "whatever nvme_core's parameters say, and again after every reset.");
}

static void check_over_budget(Ctx *c, const DoctorCtrl *d, const DevicePlan *plan) {
        uint32_t targets = table_targets(&d->table, &d->id), over = 0, min_exlat = UINT32_MAX;
        uint32_t budget = plan->params.max_latency_us;
        DoctorFinding *f;
        char src[512], list[256] = "", desc[1024];
        size_t o = 0;

        if (budget == 0)
                return;
        for (unsigned ps = 0; ps < IDCTRL_MAX_PS; ps++) {
                const IdPsd *p = &d->id.psd[ps];
                if (!(targets & (UINT32_C(1) << ps)) || (uint64_t) p->enlat_us + p->exlat_us <= budget)
                        continue;
                over |= UINT32_C(1) << ps;
                min_exlat = MIN(min_exlat, p->exlat_us);
                int k = snprintf(list + o, sizeof list - o, "%sps%u (%" PRIu32 " µs)", o ? ", " : "", ps,
                                 p->enlat_us + p->exlat_us);
                if (k > 0 && (size_t) k < sizeof list - o)
                        o += (size_t) k;
        }
        if (!over)
                return;

        f = finding_new(c, DOCTOR_APST_STATE_OVER_BUDGET, d->sys.name);
        title(c, f, "The table in force on %s sends it to %s, whose entry + exit latency exceeds the %" PRIu32
                    " µs budget", d->sys.name, list, budget);
        table_evidence(c, f, d, "Get Features 0x0C (table in force)", &d->table);
        for (unsigned ps = 0; ps < IDCTRL_MAX_PS; ps++)
                if (over & (UINT32_C(1) << ps))
                        psd_evidence(c, f, d, ps);
        config_source(c, plan->section, "max_latency_us", src, sizeof src);
        evidence(c, f, src, "%" PRIu32, budget);
        pm_qos_evidence(c, f, d);
        nvme_core_evidence(c, f);
        why(c, f, "Since June 2017 (kernel commit da87591bea92) nvme_configure_apst() admits a "
                  "non-operational state when its exit latency alone is within the latency tolerance, but a "
                  "command that arrives while the drive is still entering the state waits for the rest of the "
                  "entry and then the whole exit: up to entry + exit latency. On the drive these reports came "
                  "from (Intel 600p, ps4 2000 + 10000 µs) this cost a latency-sensitive job about 3%%, and "
                  "sporadic writes each paid the full wake.");
        describe(&plan->plan.table, &d->id, desc, sizeof desc);
        if (plan->verdict == DEVICE_MANAGE && plan->params.policy == APST_POLICY_BUDGET)
                fix(c, f, "Run nvme-apstd (systemctl enable --now nvme-apstd): with policy = budget it bounds "
                          "entry + exit latency and would write: %s.", desc);
        else
                fix(c, f, "Set policy = budget in [apst] (or in this controller's [device] section) and "
                          "systemctl reload nvme-apstd: the budget then bounds entry + exit latency.");
        if (min_exlat > 0) {
                fix(c, f, "Without the daemon, until the next boot: echo %" PRIu32 " > %s/class/nvme/%s/power/"
                          "pm_qos_latency_tolerance_us   (the kernel keeps states whose exit latency is at most "
                          "this; it rewrites the table at once)", min_exlat - 1, sysroot(c), d->sys.name);
                fix(c, f, "Persistently, for every controller: the kernel parameter "
                          "nvme_core.default_ps_max_latency_us=%" PRIu32 ".", min_exlat - 1);
        }
}

/* The firmware has no APST: nothing anyone can program. */
static void check_apst_unsupported(Ctx *c, const DoctorCtrl *d) {
        DoctorFinding *f = finding_new(c, DOCTOR_APST_FIRMWARE_UNSUPPORTED, d->sys.name);

        title(c, f, "%s (%s, firmware %s) does not support APST (Identify apsta = 0)", d->sys.name,
              d->id.model, d->id.firmware[0] ? d->id.firmware : "not reported");
        evidence(c, f, "Identify apsta", "0");
        evidence(c, f, "Identify npss", "%u", d->id.npss);
        for (unsigned ps = 0; ps <= d->id.npss && ps < IDCTRL_MAX_PS; ps++)
                psd_evidence(c, f, d, ps);
        why(c, f, "Without APST the drive moves to a low-power state only when the host tells it to "
                  "(Set Features, Power Management), which Linux does not do at run time: it stays in "
                  "an operational state while idle. Neither the kernel nor nvme-apstd can program "
                  "anything here.");
        fix(c, f, "Nothing to configure. Look for a firmware update from the drive's vendor that "
                  "enables APST; nvme-apstd leaves this controller alone.");
}

/* The daemon runs, yet the table in force is not the one it would write (@desc). */
static void check_table_differs(Ctx *c, const DoctorCtrl *d, const DevicePlan *plan, const char *desc) {
        const DoctorSnapshot *s = c->s;
        DoctorFinding *f;

        if (apst_table_equal(&d->table, &plan->plan.table))
                return;
        f = finding_new(c, DOCTOR_APST_TABLE_DIFFERS, d->sys.name);
        title(c, f, "nvme-apstd runs (pid %u), but the table in force on %s is not the one it would write",
              s->daemon_pid, d->sys.name);
        table_evidence(c, f, d, "Get Features 0x0C (table in force)", &d->table);
        evidence(c, f, "nvme-apstd would write (this configuration)", "%s", desc);
        evidence(c, f, "nvme-apstd daemon", "pid %u", s->daemon_pid);
        why(c, f, "The daemon writes its table at start and again after every reset and resume. A "
                  "different table means it runs with another configuration (the file changed and "
                  "was not reloaded), it failed to write (its journal says why), or something else "
                  "wrote the table since.");
        fix(c, f, "systemctl reload nvme-apstd   (reads the configuration again and rewrites changed "
                  "tables)");
        fix(c, f, "journalctl -u nvme-apstd NVME_CTRL=%s   (the daemon's log for this controller)",
            d->sys.name);
}

/* The daemon does not run: the kernel's table is (or will be again) in force instead of @desc. */
static void check_daemon_not_running(Ctx *c, const DoctorCtrl *d, const DevicePlan *plan, const char *desc) {
        const DoctorSnapshot *s = c->s;
        DoctorFinding *f;
        ApstTable kt;
        bool have_kt;

        have_kt = kernel_table(c, d, &kt);
        if (plan->verdict != DEVICE_MANAGE || (have_kt && apst_table_equal(&kt, &plan->plan.table)))
                return;
        f = finding_new(c, DOCTOR_APST_DAEMON_NOT_RUNNING, d->sys.name);
        title(c, f, "nvme-apstd is not running: %s %s the kernel's table, not the configured one",
              d->sys.name, apst_table_equal(&d->table, &plan->plan.table) ? "will get back" : "has");
        evidence(c, f, "nvme-apstd daemon", "no process in %s", s->proc_root ? s->proc_root : "/proc");
        table_evidence(c, f, d, "Get Features 0x0C (table in force)", &d->table);
        evidence(c, f, "nvme-apstd would write", "%s", desc);
        if (have_kt)
                table_evidence(c, f, d, "the kernel writes", &kt);
        why(c, f, "The kernel rewrites the APST table at probe, on every controller reset and on "
                  "resume from suspend, with its own single latency limit. A table written once (by "
                  "nvme-apstd apply or nvme set-feature) is gone after the next of these; only the "
                  "running daemon puts it back.");
        fix(c, f, "systemctl enable --now nvme-apstd");
}

/* The daemon keeps power states out of this drive's tables: it failed in them (doc/quarantine.md). */
static void check_quarantined(Ctx *c, const DoctorCtrl *d) {
        DoctorFinding *f = finding_new(c, DOCTOR_APST_QUARANTINED, d->sys.name);
        char what[32], src[300];

        quarantine_describe(d->quarantine_below, what, sizeof what);
        title(c, f, "%s (%s, firmware %s) failed in a deep power state: quarantined: %s", d->sys.name, d->id.model,
              d->id.firmware[0] ? d->id.firmware : "not reported", what);
        (void) snprintf(src, sizeof src, "nvme-apstd quarantine (%s)", d->id.model);
        evidence(c, f, src, "%s, %u failure(s) blamed on a power state", what, d->quarantine_strikes);
        why(c, f, "The controller stopped answering after it entered a non-operational state, and the kernel "
                  "reset it or gave up on it. nvme-apstd keeps that state and the deeper ones out of every table "
                  "of this model and firmware, one state per failure, APST off at the end.");
        if (d->quarantine_below == QUARANTINE_APST_OFF)
                fix(c, f, "Failures went on as states were taken out, down to APST off: if they go on now, APST "
                          "is not the cause. Look at PCIe ASPM and the port's power management "
                          "(pcie_aspm=off, pcie_port_pm=off on the kernel command line, one at a time) and at "
                          "the drive's health (nvme smart-log).");
        fix(c, f, "Look for a firmware update (a new firmware opens the question again). Carry the finding to "
                  "other machines with: nvme-apstd quarantine --drop-in");
        fix(c, f, "Undo, once the cause is gone: nvme-apstd quarantine --clear '%s' && systemctl reload nvme-apstd",
            d->id.model);
}

/* @d's plan as the daemon makes it: without the quarantined states. */
static int plan_quarantined(const DoctorSnapshot *s, const DoctorCtrl *d, DevicePlan *ret) {
        IdCtrl id;

        quarantine_limit_id(&d->id, d->quarantined ? d->quarantine_below : QUARANTINE_NONE, &id);
        return device_plan_capped(s->config, &s->platform, d->sys.name, &d->sys, &id, NULL,
                                  d->quarantined && d->quarantine_below == QUARANTINE_APST_OFF ? 0 : DEVICE_NO_CAP,
                                  ret);
}

static void check_apst(Ctx *c, const DoctorCtrl *d) {
        const DoctorSnapshot *s = c->s;
        DevicePlan plan;
        char desc[1024], found[1024];

        if (!d->id.apst_supported) {
                check_apst_unsupported(c, d);
                return;
        }

        if (d->quarantined)
                check_quarantined(c, d);
        if (plan_quarantined(s, d, &plan) < 0) {
                note(c, true, true, d->sys.name, "APST: cannot plan a table (npss out of range)");
                return;
        }
        if (d->table_error < 0) {
                note(c, true, true, d->sys.name, "APST: Get Features 0x0C failed: %s", d->table_error_text);
                return;
        }
        if (plan.verdict == DEVICE_DISABLED) {
                note(c, false, false, d->sys.name, "APST: enable = no in [device %s]; not examined",
                     strempty(plan.section));
                return;
        }

        describe(&d->table, &d->id, found, sizeof found);
        note(c, false, false, d->sys.name, "APST table in force: %s", found);

        /* off although the drive and our configuration want it on */
        if (!d->table.apste && plan.plan.table.apste && s->daemon != DOCTOR_DAEMON_RUNNING) {
                check_kernel_disabled(c, d, &plan);
                return;
        }

        check_over_budget(c, d, &plan);

        describe(&plan.plan.table, &d->id, desc, sizeof desc);
        switch (s->daemon) {
        case DOCTOR_DAEMON_RUNNING:
                check_table_differs(c, d, &plan, desc);
                break;
        case DOCTOR_DAEMON_NOT_RUNNING:
                check_daemon_not_running(c, d, &plan, desc);
                break;
        case DOCTOR_DAEMON_UNKNOWN:
                note(c, true, false, d->sys.name, "APST: could not tell whether nvme-apstd runs (%s not readable)",
                     s->proc_root ? s->proc_root : "/proc");
                break;
        case _DOCTOR_DAEMON_MAX:
        case _DOCTOR_DAEMON_INVALID:
                break;
        }
}

/* ---- request size ---- */

bool doctor_kernel_log_relevant(const char *line) {
        static const char *const nocase[] = { "swiotlb", "software io tlb", "iommu", "dmar", "amd-vi",
                                              "memory encryption", "mem_encrypt", "bounce buffer" };
        static const char *const exact[] = { "SME ", "SEV", "TDX", "SME:" };

        for (size_t i = 0; i < ELEMENTSOF(nocase); i++)
                if (strcasestr(line, nocase[i]))
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(exact); i++)
                if (strstr(line, exact[i]))
                        return true;
        return false;
}

static void check_request_size(Ctx *c, const DoctorCtrl *d) {
        const DoctorSnapshot *s = c->s;
        static const char *const pfx[] = { "iommu", "intel_iommu=", "amd_iommu=", "swiotlb=", "mem_encrypt=",
                                           "mem_encrypt", "sme=", NULL };
        uint64_t mdts_kb = d->mdts ? (UINT64_C(4) << d->mdts) : 0;   /* 2^mdts pages of 4 KiB */
        uint64_t expect_kb = mdts_kb ? MIN(mdts_kb, (uint64_t) DOCTOR_NVME_DRIVER_MAX_KB) : DOCTOR_NVME_DRIVER_MAX_KB;
        char qdir[300], src[400], params[512];
        DoctorFinding *f;

        if (!d->have_queue) {
                note(c, true, false, d->sys.name, "request size: no namespace queue limits found%s%s",
                     d->disk[0] ? " for " : "", d->disk);
                return;
        }
        (void) snprintf(qdir, sizeof qdir, "%s/class/nvme/%s/%s/queue", sysroot(c), d->sys.name, d->disk);
        note(c, false, false, d->sys.name, "request size: %s max_hw_sectors_kb %" PRIu32 ", max_sectors_kb %" PRIu32
             ", MDTS allows %s%" PRIu64 " KiB", d->disk, d->max_hw_sectors_kb, d->max_sectors_kb,
             mdts_kb ? "" : "any size; the driver ", expect_kb);

        if (d->max_hw_sectors_kb < expect_kb) {
                f = finding_new(c, DOCTOR_REQUEST_SIZE_DMA_LIMIT, d->sys.name);
                title(c, f, "Requests to %s are capped at %" PRIu32 " KiB by the DMA mapping layer; the drive "
                            "and driver allow %" PRIu64 " KiB", d->disk, d->max_hw_sectors_kb, expect_kb);
                if (d->mdts)
                        evidence(c, f, "Identify mdts", "%u: 2^%u × 4 KiB = %" PRIu64 " KiB (assuming CAP.MPSMIN "
                                 "= 4 KiB, as on practically every drive; CAP is a register no admin command "
                                 "reads)", d->mdts, d->mdts, mdts_kb);
                else
                        evidence(c, f, "Identify mdts", "0: no limit from the drive");
                evidence(c, f, "nvme driver limit (NVME_MAX_KB_SZ, Linux 6.1)", "%u KiB", DOCTOR_NVME_DRIVER_MAX_KB);
                (void) snprintf(src, sizeof src, "%s/max_hw_sectors_kb", qdir);
                evidence(c, f, src, "%" PRIu32, d->max_hw_sectors_kb);
                (void) snprintf(src, sizeof src, "%s/max_sectors_kb", qdir);
                evidence(c, f, src, "%" PRIu32, d->max_sectors_kb);
                if (s->cmdline) {
                        cmdline_params(s->cmdline, pfx, params, sizeof params);
                        evidence(c, f, "/proc/cmdline (iommu, swiotlb, memory encryption)", "%s",
                                 params[0] ? params : "(none)");
                }
                if (!s->have_kernel_log)
                        evidence(c, f, "kernel log", "(not readable: run as root, or see dmesg | grep -i -e "
                                 "swiotlb -e iommu -e 'memory encryption')");
                else if (s->n_kernel_log == 0)
                        evidence(c, f, "kernel log", "(no line about swiotlb, an IOMMU or memory encryption)");
                for (size_t i = 0; i < s->n_kernel_log; i++)
                        evidence(c, f, "kernel log", "%s", s->kernel_log[i]);
                why(c, f, "The nvme driver limits a request to the smaller of the drive's MDTS and its own "
                          "cap; max_hw_sectors_kb is lower still when the DMA API says a mapping cannot be "
                          "larger (dma_max_mapping_size()/dma_opt_mapping_size() in drivers/nvme/host/pci.c): "
                          "swiotlb bounce buffering, which memory encryption (AMD SME/SEV, Intel TDX) or "
                          "swiotlb=force turns on, maps at most 256 KiB; an IOMMU in translated mode can ask "
                          "for smaller mappings too. Large sequential transfers are then split into more, "
                          "smaller commands: in the report this check comes from, sequential reads fell from "
                          "2.0 to 1.5 GB/s.");
                fix(c, f, "max_hw_sectors_kb is read-only: the limit goes away only with its cause. Check the "
                          "kernel log lines above.");
                fix(c, f, "If memory encryption is on but not needed: the kernel parameter mem_encrypt=off "
                          "(a security trade-off: decide deliberately).");
                fix(c, f, "If an IOMMU translates this device's DMA: iommu=pt (passthrough for host-owned "
                          "devices) removes the IOMMU's mapping limit, at the cost of DMA isolation.");
        }

        if (d->max_sectors_kb < d->max_hw_sectors_kb && d->max_sectors_kb < DOCTOR_DEFAULT_MAX_SECTORS_KB) {
                f = finding_new(c, DOCTOR_REQUEST_SIZE_SOFT_LIMIT, d->sys.name);
                title(c, f, "%s/max_sectors_kb is %" PRIu32 " KiB, below both the hardware limit (%" PRIu32
                            " KiB) and the kernel's default", d->disk, d->max_sectors_kb, d->max_hw_sectors_kb);
                (void) snprintf(src, sizeof src, "%s/max_sectors_kb", qdir);
                evidence(c, f, src, "%" PRIu32, d->max_sectors_kb);
                (void) snprintf(src, sizeof src, "%s/max_hw_sectors_kb", qdir);
                evidence(c, f, src, "%" PRIu32, d->max_hw_sectors_kb);
                why(c, f, "max_sectors_kb is the block layer's soft limit on one request; the kernel's "
                          "default is %u KiB or the hardware limit if lower. Something (a udev rule, a tuning "
                          "script) lowered it, which splits large sequential transfers like a DMA limit would.",
                    DOCTOR_DEFAULT_MAX_SECTORS_KB);
                fix(c, f, "echo %" PRIu32 " > %s/max_sectors_kb   (until reboot; look for the udev rule or "
                          "script that sets it)", MIN(d->max_hw_sectors_kb, DOCTOR_DEFAULT_MAX_SECTORS_KB), qdir);
        }
}

/* ---- CPU frequency ---- */

/* intel_pstate active with HWP, powersave, EPP not performance and no dynamic boost: slow to ramp
 * up for I/O-bound work. */
static bool policy_ramps_slowly(const DoctorSnapshot *s, const DoctorCpuPolicy *p) {
        return strcmp(p->driver, "intel_pstate") == 0 && strcmp(s->pstate_status, "active") == 0 &&
               strcmp(p->state.governor, "powersave") == 0 && p->state.has_epp &&
               strcmp(p->state.epp, "performance") != 0 && s->hwp_dynamic_boost != 1;
}

/* Note each policy looked at (those of the CPUs taking NVMe interrupts, when known) and the
 * intel_pstate globals; gather the CPUs that ramp slowly in @slow. Return: whether there are any. */
static bool survey_cpu_policies(Ctx *c, CpuSet *slow) {
        const DoctorSnapshot *s = c->s;
        CpuSet looked = {};
        bool any = false;
        char cpus[256], pct[16];

        for (size_t i = 0; i < s->n_policies; i++) {
                const DoctorCpuPolicy *p = &s->policies[i];
                CpuSet both = p->state.cpus;
                char pc[256];

                if (s->have_irq_cpus) {
                        cpuset_and(&both, &s->irq_cpus);
                        if (cpuset_is_empty(&both))
                                continue;
                }
                cpuset_or(&looked, &p->state.cpus);
                cpuset_format(&p->state.cpus, pc, sizeof pc);
                note(c, false, false, "cpu", "policy of CPUs %s: driver %s, governor %s, EPP %s, "
                     "%" PRIu32 "-%" PRIu32 " kHz", pc, p->driver[0] ? p->driver : "unknown",
                     p->state.governor, p->state.has_epp ? p->state.epp : "(none)", p->state.min_khz,
                     p->state.max_khz);
                if (policy_ramps_slowly(s, p)) {
                        cpuset_or(slow, &p->state.cpus);
                        any = true;
                }
        }
        cpuset_format(&looked, cpus, sizeof cpus);
        note(c, false, false, "cpu", "CPU frequency: %zu policies, looked at CPUs %s (%s)", s->n_policies,
             cpus[0] ? cpus : "none", s->have_irq_cpus ? "those taking NVMe interrupts" :
                                      "all: the NVMe interrupts' CPUs are unknown");
        (void) snprintf(pct, sizeof pct, "%d", s->min_perf_pct);
        if (s->pstate_status[0])
                note(c, false, false, "cpu", "intel_pstate: status %s, hwp_dynamic_boost %s, min_perf_pct %s",
                     s->pstate_status, s->hwp_dynamic_boost < 0 ? "absent" : s->hwp_dynamic_boost ? "1" : "0",
                     s->min_perf_pct < 0 ? "absent" : pct);
        return any;
}

/* The slow-ramp finding's evidence: the intel_pstate globals, the interrupts' CPUs, each policy in @slow. */
static void slow_ramp_evidence(Ctx *c, DoctorFinding *f, const CpuSet *slow) {
        const DoctorSnapshot *s = c->s;
        char src[400], irq[256];

        (void) snprintf(src, sizeof src, "%s/devices/system/cpu/intel_pstate/status", sysroot(c));
        evidence(c, f, src, "%s", s->pstate_status);
        (void) snprintf(src, sizeof src, "%s/devices/system/cpu/intel_pstate/hwp_dynamic_boost", sysroot(c));
        if (s->hwp_dynamic_boost >= 0)
                evidence(c, f, src, "%d", s->hwp_dynamic_boost);
        else
                evidence(c, f, src, "(absent)");
        (void) snprintf(src, sizeof src, "%s/devices/system/cpu/intel_pstate/min_perf_pct", sysroot(c));
        if (s->min_perf_pct >= 0)
                evidence(c, f, src, "%d", s->min_perf_pct);
        else
                evidence(c, f, src, "(absent)");
        if (s->have_irq_cpus) {
                cpuset_format(&s->irq_cpus, irq, sizeof irq);
                evidence(c, f, "CPUs taking the NVMe interrupts (effective_affinity_list)", "%s", irq);
        } else
                evidence(c, f, "CPUs taking the NVMe interrupts", "(unknown: every policy was looked at)");
        for (size_t i = 0; i < s->n_policies; i++) {
                const DoctorCpuPolicy *p = &s->policies[i];
                CpuSet both = p->state.cpus;
                char pc[256];

                cpuset_and(&both, slow);
                if (cpuset_is_empty(&both))
                        continue;
                cpuset_format(&p->state.cpus, pc, sizeof pc);
                (void) snprintf(src, sizeof src, "%s/devices/system/cpu/cpu%u/cpufreq/ (CPUs %s)", sysroot(c),
                                p->state.cpu, pc);
                evidence(c, f, src, "scaling_driver %s, scaling_governor %s, energy_performance_preference %s, "
                         "scaling_min_freq %" PRIu32 " kHz of %" PRIu32 "-%" PRIu32, p->driver, p->state.governor,
                         p->state.epp, p->state.min_khz, p->state.hw_min_khz, p->state.hw_max_khz);
        }
}

static void report_slow_ramp(Ctx *c, const CpuSet *slow) {
        const DoctorSnapshot *s = c->s;
        bool one = cpuset_count(slow) == 1;
        DoctorFinding *f;
        char cpus[256], subject[300];

        cpuset_format(slow, cpus, sizeof cpus);
        (void) snprintf(subject, sizeof subject, "cpu%s", cpus);
        f = finding_new(c, DOCTOR_CPU_SLOW_RAMP, subject);
        title(c, f, "%s %s ramp%s %s frequency slowly for I/O-bound work: intel_pstate active, governor "
                    "powersave, EPP not performance, no hwp_dynamic_boost", one ? "CPU" : "CPUs", cpus,
              one ? "s" : "", one ? "its" : "their");
        slow_ramp_evidence(c, f, slow);
        why(c, f, "In this mode the hardware (HWP) picks each core's frequency from its recent utilisation and "
                  "the energy-performance preference. A job that waits on the drive most of the time runs in "
                  "short bursts at low average utilisation, so the cores stay at low frequencies and every "
                  "completion interrupt and the code after it run slowly: I/O latency grows and throughput "
                  "drops, although neither CPU nor drive is busy. hwp_dynamic_boost raises the frequency when "
                  "a task wakes from I/O; EPP performance biases HWP towards high frequencies.");
        fix(c, f, "Let nvme-apstd pin these CPUs while the drives are busy: add to nvme-apstd.conf, then "
                  "systemctl reload nvme-apstd (or start it):\n"
                  "[cpu]\npin = busy\ncpus = %s\nenergy_performance_preference = performance",
            s->have_irq_cpus ? "nvme-irq" : cpus);
        fix(c, f, "Or let intel_pstate boost on I/O wake-ups, for every CPU, until reboot: echo 1 > "
                  "%s/devices/system/cpu/intel_pstate/hwp_dynamic_boost", sysroot(c));
}

static void check_cpu(Ctx *c) {
        const DoctorSnapshot *s = c->s;
        const CpuConfig *cfg = &s->config->cpu;
        CpuSet slow = {};

        if (s->cpufreq_error < 0) {
                note(c, true, false, "cpu", "CPU frequency: no cpufreq in sysfs (a VM or container?)");
                return;
        }
        if (!survey_cpu_policies(c, &slow))
                return;
        if (cfg->pin != CPU_PIN_OFF && s->daemon == DOCTOR_DAEMON_RUNNING) {
                note(c, false, false, "cpu", "CPU frequency: slow-ramp settings found, but nvme-apstd runs "
                     "with [cpu] pin = %s and changes them while it pins", cfg->pin == CPU_PIN_BUSY ? "busy" :
                     "always");
                return;
        }
        report_slow_ramp(c, &slow);
}

/* ---- the whole ---- */

int doctor_examine(const DoctorSnapshot *s, DoctorReport *ret) {
        Ctx c = { .s = s };

        for (size_t i = 0; i < s->n_ctrls; i++) {
                const DoctorCtrl *d = &s->ctrls[i];

                if (strcmp(d->sys.transport, "pcie") != 0) {
                        note(&c, false, false, d->sys.name, "transport %s: not a PCIe drive, not examined",
                             d->sys.transport[0] ? d->sys.transport : "unknown");
                        continue;
                }
                if (d->id_error < 0) {
                        note(&c, true, true, d->sys.name, "Identify Controller failed: %s", d->id_error_text);
                        continue;
                }
                check_apst(&c, d);
                check_request_size(&c, d);
        }
        if (s->n_ctrls == 0)
                note(&c, false, false, "nvme", "no NVMe controllers in %s/class/nvme", sysroot(&c));
        check_cpu(&c);

        if (c.error < 0) {
                doctor_report_done(&c.r);
                return c.error;
        }
        *ret = c.r;
        return 0;
}

static void notes_free(DoctorNote *v, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(v[i].subject);
                free(v[i].text);
        }
        free(v);
}

void doctor_report_done(DoctorReport *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_findings; i++) {
                DoctorFinding *f = &r->findings[i];
                free(f->subject);
                free(f->title);
                free(f->why);
                for (size_t k = 0; k < f->n_evidence; k++) {
                        free(f->evidence[k].source);
                        free(f->evidence[k].value);
                }
                free(f->evidence);
                for (size_t k = 0; k < f->n_fix; k++)
                        free(f->fix[k]);
                free(f->fix);
        }
        free(r->findings);
        notes_free(r->examined, r->n_examined);
        notes_free(r->skipped, r->n_skipped);
        *r = (DoctorReport) {};
}

int doctor_exit_status(const DoctorReport *r) {
        if (r->n_findings > 0)
                return 1;
        for (size_t i = 0; i < r->n_skipped; i++)
                if (r->skipped[i].error)
                        return 2;
        return 0;
}
