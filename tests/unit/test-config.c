/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Configuration parsing: good files (defaults, every key, device sections and
 * their resolution, [cpu]), bad ones (every error class, with the message
 * checked for file, line, section and key), config_load() on files that must
 * be refused, and the shipped conf/nvme-apstd.conf. Strings and temp files only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config-file.h"
#include "macro.h"
#include "util.h"

#define FILENAME "test.conf"

static Config parse_ok(const char *name, const char *text) {
        _cleanup_free_ char *error = NULL;
        Config c;
        int r;

        r = config_parse_string(text, FILENAME, &c, &error);
        if (r < 0) {
                fprintf(stderr, "%s: unexpected error %d: %s\n", name, r, strempty(error));
                CHECK(false);
        }
        CHECK(strcmp(c.path, FILENAME) == 0);
        return c;
}

static bool apst_equal(const ApstParams *a, const ApstParams *b) {
        return a->policy == b->policy && a->max_latency_us == b->max_latency_us &&
               a->primary_timeout_ms == b->primary_timeout_ms &&
               a->secondary_timeout_ms == b->secondary_timeout_ms &&
               a->primary_latency_tol_us == b->primary_latency_tol_us &&
               a->secondary_latency_tol_us == b->secondary_latency_tol_us && a->force == b->force;
}

static void assert_defaults(const Config *c) {
        ApstParams d = APST_PARAMS_DEFAULT;

        CHECK(apst_equal(&c->apst, &d));
        CHECK(c->apst.policy == APST_POLICY_ADAPTIVE);
        CHECK(c->apst.max_latency_us == 100000);
        CHECK(c->daemon.unresponsive_after_sec == UNRESPONSIVE_AFTER_SEC_DEFAULT);
        CHECK(c->apst.primary_timeout_ms == 100);
        CHECK(c->apst.secondary_timeout_ms == 2000);
        CHECK(c->apst.primary_latency_tol_us == 15000);
        CHECK(c->apst.secondary_latency_tol_us == 100000);
        CHECK(!c->apst.force);
        CHECK(c->n_devices == 0 && !c->devices);
        CHECK(c->cpu.pin == CPU_PIN_OFF);
        CHECK(c->cpu.release_after_ms == 2000);
        CHECK(!c->cpu.governor && !c->cpu.epp);
        CHECK(c->cpu.min_freq.kind == FREQ_UNSET && c->cpu.max_freq.kind == FREQ_UNSET);
        CHECK(c->cpu.select == CPU_SELECT_ALL);
        CHECK(cpuset_is_empty(&c->cpu.cpus));
        CHECK(!c->metrics.path);
        CHECK(c->watch.source == WATCH_SOURCE_AUTO);
        CHECK(c->holds.enable);
}

/* ---- good files ---- */

static void check_defaults(const Config *c) {
        assert_defaults(c);
}

static void check_apst_all(const Config *c) {
        CHECK(c->apst.policy == APST_POLICY_KERNEL);
        CHECK(c->apst.max_latency_us == 25000);
        CHECK(c->apst.primary_timeout_ms == 200);
        CHECK(c->apst.secondary_timeout_ms == 16777215);
        CHECK(c->apst.primary_latency_tol_us == 0);
        CHECK(c->apst.secondary_latency_tol_us == 10000000);
        CHECK(c->apst.force);
        CHECK(c->n_devices == 0);
}

static void check_latency_zero(const Config *c) {
        CHECK(c->apst.max_latency_us == 0);
        CHECK(!c->apst.force);
}

static void check_devices(const Config *c) {
        const DeviceSection *d;

        CHECK(c->n_devices == 3);
        d = &c->devices[0];
        CHECK(strcmp(d->name, "a2000") == 0);
        CHECK(strcmp(d->match_pci, "2646:2263") == 0);
        CHECK(!d->match_name && !d->match_model && !d->match_serial && !d->match_firmware);
        CHECK(d->enable);
        CHECK(d->set == (APST_KEY_MAX_LATENCY | APST_KEY_FORCE));
        CHECK(d->apst.max_latency_us == 5000 && d->apst.force);

        d = &c->devices[1];
        CHECK(strcmp(d->name, "workstation.fast") == 0);
        CHECK(strcmp(d->match_model, "Samsung SSD 9?0 PRO*") == 0);
        CHECK(strcmp(d->match_name, "nvme[01]") == 0);
        CHECK(strcmp(d->match_firmware, "*") == 0);
        CHECK(strcmp(d->match_serial, "S4*") == 0);
        CHECK(d->set == (APST_KEY_POLICY | APST_KEY_PRIMARY_TIMEOUT | APST_KEY_SECONDARY_TIMEOUT |
                         APST_KEY_PRIMARY_TOL | APST_KEY_SECONDARY_TOL));
        CHECK(d->apst.policy == APST_POLICY_KERNEL);

        d = &c->devices[2];
        CHECK(strcmp(d->name, "leave-alone") == 0);
        CHECK(strcmp(d->match_pci, "1e49:*") == 0);   /* upper case normalised */
        CHECK(!d->enable);
        CHECK(d->set == 0);

        /* [apst] after the device sections still applies */
        CHECK(c->apst.max_latency_us == 50000);
}

static void check_cpu_relative(const Config *c) {
        char buf[CPUSET_FORMAT_MAX];

        CHECK(c->cpu.pin == CPU_PIN_BUSY);
        CHECK(c->cpu.release_after_ms == 500);
        CHECK(strcmp(c->cpu.governor, "performance") == 0);
        CHECK(c->cpu.min_freq.kind == FREQ_PERCENT && c->cpu.min_freq.value == 50);
        CHECK(c->cpu.max_freq.kind == FREQ_HW_MAX);
        CHECK(strcmp(c->cpu.epp, "balance_performance") == 0);
        CHECK(c->cpu.select == CPU_SELECT_LIST);
        cpuset_format(&c->cpu.cpus, buf, sizeof(buf));
        CHECK(strcmp(buf, "0-3,6") == 0);
        assert_defaults(&(Config) { .apst = c->apst, .cpu = (CpuConfig) { .release_after_ms = 2000 },
                                    .daemon = c->daemon, .holds = c->holds });
}

static void check_cpu_khz(const Config *c) {
        CHECK(c->cpu.pin == CPU_PIN_ALWAYS);
        CHECK(c->cpu.min_freq.kind == FREQ_KHZ && c->cpu.min_freq.value == 2000000);
        CHECK(c->cpu.max_freq.kind == FREQ_KHZ && c->cpu.max_freq.value == 2000000);
        CHECK(c->cpu.select == CPU_SELECT_NVME_IRQ);
        CHECK(strcmp(c->cpu.governor, "schedutil") == 0);
        CHECK(strcmp(c->cpu.epp, "128") == 0);
}

static void check_cpu_minmax(const Config *c) {
        CHECK(c->cpu.pin == CPU_PIN_OFF);
        CHECK(c->cpu.min_freq.kind == FREQ_HW_MIN);
        CHECK(c->cpu.max_freq.kind == FREQ_PERCENT && c->cpu.max_freq.value == 0);
        CHECK(c->cpu.select == CPU_SELECT_ALL);
        CHECK(c->cpu.release_after_ms == 0);
}

static void check_unresponsive_3(const Config *c) {
        CHECK(c->daemon.unresponsive_after_sec == 3);
        CHECK(c->apst.max_latency_us == 100000 && c->cpu.pin == CPU_PIN_OFF && !c->metrics.path);
}

static void check_watch_stat(const Config *c) {
        CHECK(c->watch.source == WATCH_SOURCE_STAT);
}

static void check_watch_bpf(const Config *c) {
        CHECK(c->watch.source == WATCH_SOURCE_BPF);
}

static void check_holds_off(const Config *c) {
        CHECK(!c->holds.enable);
        CHECK(c->n_devices == 0);   /* [holds] enable is not [device] enable */
}

static void check_holds_on_device_off(const Config *c) {
        CHECK(c->holds.enable);
        CHECK(c->n_devices == 1 && !c->devices[0].enable);
}

static void check_metrics_path(const Config *c) {
        CHECK(c->metrics.path);
        CHECK(strcmp(c->metrics.path, "/var/lib/prometheus/node-exporter/nvme-apstd.prom") == 0);
        /* the other sections keep their defaults */
        CHECK(c->apst.max_latency_us == 100000 && c->cpu.pin == CPU_PIN_OFF);
}

static void check_force_on(const Config *c) {
        CHECK(c->apst.force);
}

static void check_stall_half(const Config *c) {
        CHECK(c->apst.stall_budget_pct_x100 == 50);
        CHECK(c->apst.policy == APST_POLICY_ADAPTIVE);
}

static void check_stall_default(const Config *c) {
        CHECK(c->apst.stall_budget_pct_x100 == APST_STALL_BUDGET_DEFAULT_PCT_X100);
}

static void check_stall_whole(const Config *c) {
        CHECK(c->apst.stall_budget_pct_x100 == 300);
}

static void check_stall_hundredth(const Config *c) {
        CHECK(c->apst.stall_budget_pct_x100 == 1);
}

static void check_force_off(const Config *c) {
        CHECK(!c->apst.force);
}

static void check_syntax_variants(const Config *c) {
        CHECK(c->apst.max_latency_us == 7);
        CHECK(c->apst.policy == APST_POLICY_KERNEL);
        CHECK(c->cpu.pin == CPU_PIN_ALWAYS);
}

typedef struct GoodCase {
        const char *name;
        const char *text;
        void (*check)(const Config *c);
} GoodCase;

static const GoodCase good_cases[] = {
        { "/config/good/empty", "", check_defaults },
        { "/config/good/comments-and-blanks", "# comment\n; other comment\n\n   \n\t# indented comment\n",
          check_defaults },
        { "/config/good/empty-sections", "[apst]\n[cpu]\n", check_defaults },
        { "/config/good/apst/every-key",
          "[apst]\n"
          "policy = kernel\n"
          "max_latency_us = 25000\n"
          "primary_timeout_ms = 200\n"
          "secondary_timeout_ms = 16777215\n"
          "primary_latency_tol_us = 0\n"
          "secondary_latency_tol_us = 10000000\n"
          "force = yes\n",
          check_apst_all },
        { "/config/good/apst/latency-zero-disables", "[apst]\nmax_latency_us = 0\n", check_latency_zero },
        { "/config/good/apst/leading-zeros", "[apst]\nmax_latency_us = 000\n", check_latency_zero },
        { "/config/good/metrics/path",
          "[metrics]\npath = /var/lib/prometheus/node-exporter/nvme-apstd.prom\n", check_metrics_path },
        { "/config/good/metrics/empty-section-is-off", "[metrics]\n", check_defaults },
        { "/config/good/daemon/unresponsive", "[daemon]\nunresponsive_after_sec = 3\n", check_unresponsive_3 },
        { "/config/good/daemon/empty", "[daemon]\n", check_defaults },
        { "/config/good/watch/empty-section-is-auto", "[watch]\n", check_defaults },
        { "/config/good/watch/stat", "[watch]\nsource = stat\n", check_watch_stat },
        { "/config/good/watch/bpf", "[watch]\nsource = bpf\n", check_watch_bpf },
        { "/config/good/holds/default-on", "[holds]\n", check_defaults },
        { "/config/good/holds/off", "[holds]\nenable = no\n", check_holds_off },
        { "/config/good/holds/device-enable-apart", "[holds]\nenable = yes\n[device a]\nmatch_name = nvme0\nenable = no\n",
          check_holds_on_device_off },
        { "/config/good/stall/half", "[apst]\npolicy = adaptive\nstall_budget_pct = 0.5\n", check_stall_half },
        { "/config/good/stall/trailing-zeros", "[apst]\npolicy = adaptive\nstall_budget_pct = 0.500\n", check_stall_half },
        { "/config/good/stall/whole", "[apst]\nstall_budget_pct = 3\n", check_stall_whole },
        { "/config/good/stall/hundredth", "[apst]\nstall_budget_pct = 0.01\n", check_stall_hundredth },
        { "/config/good/stall/default", "[apst]\n", check_stall_default },
        { "/config/good/bool/yes", "[apst]\nforce = yes\n", check_force_on },
        { "/config/good/bool/true", "[apst]\nforce = true\n", check_force_on },
        { "/config/good/bool/one", "[apst]\nforce = 1\n", check_force_on },
        { "/config/good/bool/on-upper", "[apst]\nforce = ON\n", check_force_on },
        { "/config/good/bool/no", "[apst]\nforce = no\n", check_force_off },
        { "/config/good/bool/false", "[apst]\nforce = False\n", check_force_off },
        { "/config/good/bool/zero", "[apst]\nforce = 0\n", check_force_off },
        { "/config/good/bool/off", "[apst]\nforce = off\n", check_force_off },
        { "/config/good/devices",
          "[device a2000]\n"
          "match_pci = 2646:2263\n"
          "max_latency_us = 5000\n"
          "force = yes\n"
          "\n"
          "[device workstation.fast]\n"
          "match_model = Samsung SSD 9?0 PRO*\n"
          "match_name = nvme[01]\n"
          "match_firmware = *\n"
          "match_serial = S4*\n"
          "policy = kernel\n"
          "primary_timeout_ms = 100\n"
          "secondary_timeout_ms = 2000\n"
          "primary_latency_tol_us = 15000\n"
          "secondary_latency_tol_us = 100000\n"
          "\n"
          "[device leave-alone]\n"
          "match_pci = 1E49:*\n"
          "enable = no\n"
          "\n"
          "[apst]\n"
          "max_latency_us = 50000\n",
          check_devices },
        { "/config/good/cpu/relative",
          "[cpu]\n"
          "pin = busy\n"
          "release_after_ms = 500\n"
          "governor = performance\n"
          "min_freq = 50%\n"
          "max_freq = max\n"
          "energy_performance_preference = balance_performance\n"
          "cpus = 0-3,6\n",
          check_cpu_relative },
        { "/config/good/cpu/khz-equal",
          "[cpu]\npin = always\nmin_freq = 2000000\nmax_freq = 2000000\ncpus = nvme-irq\n"
          "governor = schedutil\nenergy_performance_preference = 128\n",
          check_cpu_khz },
        { "/config/good/cpu/min-and-zero-percent",
          "[cpu]\npin = off\nmin_freq = min\nmax_freq = 0%\ncpus = all\nrelease_after_ms = 0\n",
          check_cpu_minmax },
        { "/config/good/syntax/crlf-bom-inline-comment-colon",
          "\xEF\xBB\xBF[apst]\r\n"
          "max_latency_us = 7 ; seven microseconds\r\n"
          "policy: kernel\r\n"
          "[cpu] ; pinning\r\n"
          "pin=always\r\n",
          check_syntax_variants },
        { "/config/good/syntax/no-final-newline", "[apst]\nforce = yes", check_force_on },
};

static void test_good(const GoodCase *t) {
        Config c = parse_ok(t->name, t->text);

        t->check(&c);
        config_done(&c);
        /* config_done() leaves defaults behind and may be called again */
        assert_defaults(&c);
        config_done(&c);
}

/* ---- resolution ---- */

static const char resolve_text[] =
        "[apst]\n"
        "max_latency_us = 50000\n"
        "primary_timeout_ms = 300\n"
        "\n"
        "[device kingston-a2000]\n"
        "match_pci = 2646:2263\n"
        "match_firmware = S5Z4*\n"
        "max_latency_us = 1500\n"
        "\n"
        "[device kingston-any]\n"
        "match_pci = 2646:*\n"
        "enable = no\n"
        "\n"
        "[device by-model]\n"
        "match_model = INTEL SSDPEKKW*\n"
        "policy = kernel\n"
        "force = yes\n"
        "\n"
        "[device second-controller]\n"
        "match_name = nvme1\n"
        "secondary_timeout_ms = 9000\n"
        "primary_latency_tol_us = 1\n"
        "secondary_latency_tol_us = 2\n";

typedef struct ResolveCase {
        const char *name;
        DeviceIdent dev;
        const char *section;    /* expected; NULL = none */
        bool enable;
        ApstParams params;
} ResolveCase;

/* Expected parameters: policy, max latency, timeouts, tolerances, force. */
#define P(pol, lat, pt, st, ptol, stol, f)                                                    \
        { .policy = APST_POLICY_##pol, .max_latency_us = lat, .primary_timeout_ms = pt,        \
          .secondary_timeout_ms = st, .primary_latency_tol_us = ptol,                          \
          .secondary_latency_tol_us = stol, .force = f }
/* [apst] of resolve_text */
#define BASE P(ADAPTIVE, 50000, 300, 2000, 15000, 100000, false)

static const ResolveCase resolve_cases[] = {
        { "/config/resolve/pci-and-firmware",
          { .name = "nvme0", .model = "KINGSTON SA2000M8500G", .firmware = "S5Z42105",
            .pci_vendor = 0x2646, .pci_device = 0x2263 },
          "kingston-a2000", true, P(ADAPTIVE, 1500, 300, 2000, 15000, 100000, false) },
        { "/config/resolve/first-match-wins-over-later-glob",
          { .name = "nvme1", .model = "KINGSTON SA2000M8500G", .firmware = "S5Z42105",
            .pci_vendor = 0x2646, .pci_device = 0x2263 },
          "kingston-a2000", true, P(ADAPTIVE, 1500, 300, 2000, 15000, 100000, false) },
        { "/config/resolve/all-keys-must-match-then-next",
          { .name = "nvme0", .model = "KINGSTON SA2000M8500G", .firmware = "S5Z35000",
            .pci_vendor = 0x2646, .pci_device = 0x2263 },
          "kingston-any", false, BASE },
        { "/config/resolve/missing-firmware-never-matches-glob",
          { .name = "nvme0", .pci_vendor = 0x2646, .pci_device = 0x2263 },
          "kingston-any", false, BASE },
        { "/config/resolve/model-glob",
          { .name = "nvme3", .model = "INTEL SSDPEKKW256G7", .pci_vendor = 0x8086, .pci_device = 0xf1a5 },
          "by-model", true, P(KERNEL, 50000, 300, 2000, 15000, 100000, true) },
        { "/config/resolve/name",
          { .name = "nvme1", .model = "Other" },
          "second-controller", true,
          P(ADAPTIVE, 50000, 300, 9000, 1, 2, false) },
        { "/config/resolve/unknown-pci-never-matches",
          { .name = "nvme5", .model = "Other" },
          NULL, true, BASE },
        { "/config/resolve/no-match-gets-apst",
          { .name = "nvme9", .model = "WDC WDS500G2B0C", .firmware = "211070WD",
            .pci_vendor = 0x15b7, .pci_device = 0x5009 },
          NULL, true, BASE },
        { "/config/resolve/all-null",
          { },
          NULL, true, BASE },
};

static void test_resolve(void) {
        Config c = parse_ok("/config/resolve", resolve_text);

        for (size_t i = 0; i < ELEMENTSOF(resolve_cases); i++) {
                const ResolveCase *t = &resolve_cases[i];
                const char *section = "sentinel";
                ApstParams p;
                bool enable;

                enable = config_resolve(&c, &t->dev, &p, &section);
                if (enable != t->enable || !apst_equal(&p, &t->params) ||
                    (t->section ? !section || strcmp(section, t->section) != 0 : section != NULL)) {
                        fprintf(stderr, "%s: got section %s enable %d max_latency %u\n", t->name,
                                section ?: "(none)", enable, p.max_latency_us);
                        CHECK(false);
                }
                printf("ok %s\n", t->name);
        }
        config_done(&c);

        /* Defaults only: everything resolves to the defaults, NULL outputs allowed. */
        {
                Config d = parse_ok("/config/resolve/defaults", "");
                DeviceIdent dev = { .name = "nvme0" };
                ApstParams p, def = APST_PARAMS_DEFAULT;

                CHECK(config_resolve(&d, &dev, &p, NULL));
                CHECK(apst_equal(&p, &def));
                CHECK(config_resolve(&d, &dev, NULL, NULL));
                config_done(&d);
                printf("ok /config/resolve/defaults\n");
        }
}

/* ---- situations ---- */

static const char situation_text[] =
        "[apst]\n"
        "max_latency_us = 25000\n"
        "primary_timeout_ms = 100\n"
        "[apst on-battery]\n"
        "max_latency_us = 100000\n"
        "primary_timeout_ms = 50\n"
        "[apst profile=power-saver]\n"
        "max_latency_us = 200000\n"
        "[apst profile=performance]\n"
        "max_latency_us = 0\n"
        "[device a2000]\n"
        "match_model = KINGSTON SA2000*\n"
        "secondary_timeout_ms = 500\n"
        "[device a2000 on-battery]\n"
        "max_latency_us = 7000\n"
        "[device a2000 profile=performance]\n"
        "enable = no\n"
        "[device other]\n"
        "match_name = nvme9\n"
        "[cpu]\n"
        "pin = busy\n"
        "governor = performance\n"
        "[cpu on-battery]\n"
        "pin = off\n"
        "[cpu profile=performance]\n"
        "pin = always\n"
        "energy_performance_preference = performance\n"
        "cpus = 0-1\n";

typedef struct SituationCase {
        const char *name;
        PowerSource source;
        const char *profile;
        uint32_t apst_latency;      /* effective [apst] max_latency_us */
        uint32_t apst_primary;      /* effective [apst] primary_timeout_ms */
        uint32_t a2000_latency;     /* what the A2000 resolves to */
        bool a2000_enabled;
        CpuPinMode pin;
        const char *epp;            /* NULL = unset */
} SituationCase;

static const SituationCase situation_cases[] = {
        { "/config/situation/ac", POWER_SOURCE_AC, "", 25000, 100, 25000, true, CPU_PIN_BUSY, NULL },
        { "/config/situation/battery", POWER_SOURCE_BATTERY, "", 100000, 50, 7000, true, CPU_PIN_OFF, NULL },
        /* the profile beats the power source where both set a key; the rest stays the source's */
        { "/config/situation/battery-power-saver", POWER_SOURCE_BATTERY, "power-saver", 200000, 50, 7000, true,
          CPU_PIN_OFF, NULL },
        { "/config/situation/ac-power-saver", POWER_SOURCE_AC, "power-saver", 200000, 100, 200000, true,
          CPU_PIN_BUSY, NULL },
        { "/config/situation/ac-balanced-has-no-section", POWER_SOURCE_AC, "balanced", 25000, 100, 25000, true,
          CPU_PIN_BUSY, NULL },
        { "/config/situation/battery-performance", POWER_SOURCE_BATTERY, "performance", 0, 50, 7000, false,
          CPU_PIN_ALWAYS, "performance" },
        { "/config/situation/unknown-profile-matches-nothing", POWER_SOURCE_AC, "quiet", 25000, 100, 25000, true,
          CPU_PIN_BUSY, NULL },
};

static void test_situations(void) {
        Config c = parse_ok("/config/situation/parse", situation_text);
        DeviceIdent a2000 = { .name = "nvme0", .model = "KINGSTON SA2000M81000G" };

        CHECK(c.n_overlays == 7);
        CHECK(c.n_devices == 2);
        /* the plain sections as parsed: untouched by the situation sections */
        CHECK(c.apst.max_latency_us == 25000 && c.cpu.pin == CPU_PIN_BUSY && !c.cpu.epp);
        CHECK(c.devices[0].set == APST_KEY_SECONDARY_TIMEOUT && c.devices[0].enable);

        for (size_t i = 0; i < ELEMENTSOF(situation_cases); i++) {
                const SituationCase *t = &situation_cases[i];
                Situation s = { .power_source = t->source };
                ApstParams p;
                const char *section = NULL;
                bool enabled;
                Config e;

                snprintf(s.profile, sizeof s.profile, "%s", t->profile);
                CHECK(config_situate(&c, &s, &e) == 0);
                enabled = config_resolve(&e, &a2000, &p, &section);
                if (e.apst.max_latency_us != t->apst_latency || e.apst.primary_timeout_ms != t->apst_primary ||
                    p.max_latency_us != t->a2000_latency || enabled != t->a2000_enabled || e.cpu.pin != t->pin ||
                    (t->epp ? !e.cpu.epp || strcmp(e.cpu.epp, t->epp) != 0 : e.cpu.epp != NULL)) {
                        fprintf(stderr, "%s: apst %u/%u a2000 %u enabled %d pin %d epp %s\n", t->name,
                                e.apst.max_latency_us, e.apst.primary_timeout_ms, p.max_latency_us, enabled,
                                e.cpu.pin, e.cpu.epp ? e.cpu.epp : "(unset)");
                        CHECK(false);
                }
                /* [device] keys stay in every situation; the copy is whole and owns its strings */
                CHECK(section && strcmp(section, "a2000") == 0 && section != c.devices[0].name);
                CHECK(p.secondary_timeout_ms == 500);
                CHECK(e.n_overlays == 0 && !e.overlays);
                CHECK(strcmp(e.cpu.governor, "performance") == 0 && e.cpu.governor != c.cpu.governor);
                CHECK(strcmp(e.path, FILENAME) == 0);
                CHECK(e.cpu.select == (strcmp(t->profile, "performance") == 0 ? CPU_SELECT_LIST : CPU_SELECT_ALL));
                config_done(&e);
                printf("ok %s\n", t->name);
        }
        config_done(&c);

        /* A file without situation sections is the same in every situation. */
        {
                Config d = parse_ok("/config/situation/none", "[apst]\nmax_latency_us = 1234\n");
                Situation s = { .power_source = POWER_SOURCE_BATTERY, .profile = "power-saver" };
                Config e;

                CHECK(config_situate(&d, &s, &e) == 0);
                CHECK(e.apst.max_latency_us == 1234 && e.n_devices == 0 && !e.devices);
                config_done(&e);
                config_done(&d);
                printf("ok /config/situation/none\n");
        }
}

/* The laptop example of nvme-apstd.conf(5), and what its prose says each situation gives. */
static void test_manpage_laptop(void) {
        static const char text[] =
                "[apst]\nmax_latency_us = 25000\n\n"
                "[apst on-battery]\nmax_latency_us = 100000\n\n"
                "[apst profile=power-saver]\nmax_latency_us = 500000\n\n"
                "[device kingston-a2000]\nmatch_pci = 2646:2263\nmax_latency_us = 5000\n\n"
                "[device samsung]\nmatch_model = Samsung*\n\n"
                "[device samsung profile=performance]\nmax_latency_us = 0\n\n"
                "[cpu]\npin = busy\ngovernor = performance\n\n"
                "[cpu on-battery]\npin = off\n";
        static const struct {
                PowerSource source;
                const char *profile;
                uint32_t samsung, a2000;
                CpuPinMode pin;
        } cases[] = {
                { POWER_SOURCE_AC, "balanced", 25000, 5000, CPU_PIN_BUSY },
                { POWER_SOURCE_BATTERY, "balanced", 100000, 5000, CPU_PIN_OFF },
                { POWER_SOURCE_BATTERY, "power-saver", 500000, 5000, CPU_PIN_OFF },
                { POWER_SOURCE_AC, "power-saver", 500000, 5000, CPU_PIN_BUSY },
                { POWER_SOURCE_BATTERY, "performance", 0, 5000, CPU_PIN_OFF },
        };
        Config c = parse_ok("/config/situation/manpage-laptop", text);
        DeviceIdent samsung = { .name = "nvme0", .model = "Samsung SSD 970 EVO Plus 2TB" };
        DeviceIdent a2000 = { .name = "nvme1", .model = "KINGSTON SA2000M8500G", .pci_vendor = 0x2646,
                              .pci_device = 0x2263 };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Situation s = { .power_source = cases[i].source };
                ApstParams ps, pa;
                Config e;

                snprintf(s.profile, sizeof s.profile, "%s", cases[i].profile);
                CHECK(config_situate(&c, &s, &e) == 0);
                CHECK(config_resolve(&e, &samsung, &ps, NULL) && config_resolve(&e, &a2000, &pa, NULL));
                CHECK(ps.max_latency_us == cases[i].samsung);
                CHECK(pa.max_latency_us == cases[i].a2000);
                CHECK(e.cpu.pin == cases[i].pin && strcmp(e.cpu.governor, "performance") == 0);
                config_done(&e);
        }
        config_done(&c);
        printf("ok /config/situation/manpage-laptop\n");
}

/* ---- the power source from power_supply entries ---- */

static void test_power_source(void) {
        static const struct {
                const char *name;
                PowerSupplyInfo s[4];
                size_t n;
                PowerSource want;
        } cases[] = {
                { "/power/desktop-no-supplies", {}, 0, POWER_SOURCE_AC },
                { "/power/desktop-mains-only", { { "Mains", 1, "", false } }, 1, POWER_SOURCE_AC },
                { "/power/laptop-plugged",
                  { { "Mains", 1, "", false }, { "Battery", -1, "Charging", false } }, 2, POWER_SOURCE_AC },
                { "/power/laptop-unplugged",
                  { { "Mains", 0, "", false }, { "Battery", -1, "Discharging", false } }, 2, POWER_SOURCE_BATTERY },
                { "/power/unplugged-battery-still-says-full",
                  { { "Mains", 0, "", false }, { "Battery", -1, "Full", false } }, 2, POWER_SOURCE_BATTERY },
                { "/power/usb-c-charger-online",
                  { { "Mains", 0, "", false }, { "USB", 1, "", false }, { "Battery", -1, "Charging", false } }, 3,
                  POWER_SOURCE_AC },
                { "/power/no-external-supply-discharging", { { "Battery", -1, "Discharging", false } }, 1,
                  POWER_SOURCE_BATTERY },
                { "/power/no-external-supply-not-charging", { { "Battery", -1, "Not charging", false } }, 1,
                  POWER_SOURCE_AC },
                { "/power/desktop-with-wireless-mouse",
                  { { "Mains", 0, "", false }, { "Battery", -1, "Discharging", true } }, 2, POWER_SOURCE_AC },
                { "/power/ups-is-not-a-battery", { { "UPS", 1, "Discharging", false } }, 1, POWER_SOURCE_AC },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PowerSource got = power_source_decide(cases[i].s, cases[i].n);
                if (got != cases[i].want) {
                        fprintf(stderr, "%s: got %s\n", cases[i].name, power_source_to_string(got));
                        CHECK(false);
                }
                printf("ok %s\n", cases[i].name);
        }
}

static void test_situation_words(void) {
        Situation ac = { .power_source = POWER_SOURCE_AC }, bat = { .power_source = POWER_SOURCE_BATTERY };
        Situation bat_ps = { .power_source = POWER_SOURCE_BATTERY, .profile = "power-saver" };
        Situation ac_bal = { .power_source = POWER_SOURCE_AC, .profile = "balanced" };
        char buf[96];

        situation_describe_change(&ac, &bat, buf, sizeof buf);
        CHECK(strcmp(buf, "on battery") == 0);
        situation_describe_change(&bat, &bat_ps, buf, sizeof buf);
        CHECK(strcmp(buf, "power-saver profile") == 0);
        situation_describe_change(&bat_ps, &bat, buf, sizeof buf);
        CHECK(strcmp(buf, "no power profile") == 0);
        situation_describe_change(&bat_ps, &ac_bal, buf, sizeof buf);
        CHECK(strcmp(buf, "on AC, balanced profile") == 0);
        situation_describe(&bat_ps, buf, sizeof buf);
        CHECK(strcmp(buf, "on battery, power-saver profile") == 0);
        CHECK(situation_equal(&bat, &bat) && !situation_equal(&bat, &bat_ps));
        CHECK(strcmp(power_source_to_string(POWER_SOURCE_BATTERY), "battery") == 0);
        CHECK(!power_source_to_string(_POWER_SOURCE_INVALID));
        printf("ok /situation/words\n");
}

/* ---- bad files ---- */

typedef struct BadCase {
        const char *name;
        const char *text;
        int error;
        const char *message;    /* expected exactly, after "test.conf:" */
} BadCase;

static const BadCase bad_cases[] = {
        /* sections */
        { "/config/bad/stall/too-precise", "[apst]\nstall_budget_pct = 0.125\n", -EINVAL,
          "2: [apst] stall_budget_pct = 0.125: not a percentage (a decimal number such as 2 or 0.5, at most two decimals)" },
        { "/config/bad/stall/over", "[apst]\nstall_budget_pct = 100.01\n", -EINVAL,
          "2: [apst] stall_budget_pct = 100.01: out of range (0.00..100.00)" },
        { "/config/bad/stall/unit", "[apst]\nstall_budget_pct = 2%\n", -EINVAL,
          "2: [apst] stall_budget_pct = 2%: not a percentage (a decimal number such as 2 or 0.5, at most two decimals)" },
        { "/config/bad/stall/dot", "[apst]\nstall_budget_pct = 2.\n", -EINVAL,
          "2: [apst] stall_budget_pct = 2.: not a percentage (a decimal number such as 2 or 0.5, at most two decimals)" },
        { "/config/bad/section/unknown", "[apst]\n[foo]\n", -EINVAL,
          "2: [foo]: unknown section (expected [apst], [cpu], [metrics], [daemon], [watch], [holds] or [device NAME])" },
        { "/config/bad/section/unknown-empty-at-end", "[apst]\nforce = no\n[cpus]\n", -EINVAL,
          "3: [cpus]: unknown section (expected [apst], [cpu], [metrics], [daemon], [watch], [holds] or [device NAME])" },
        { "/config/bad/section/apst-twice", "[apst]\nforce = no\n[apst]\npolicy = kernel\n", -EINVAL,
          "3: [apst]: section given twice" },
        { "/config/bad/section/cpu-twice", "[cpu]\n[cpu]\n", -EINVAL, "2: [cpu]: section given twice" },
        { "/config/bad/section/device-same-name",
          "[device a]\nmatch_name = nvme0\n[device a]\nmatch_name = nvme1\n", -EINVAL,
          "3: [device a]: device section name used twice" },
        { "/config/bad/section/device-no-name", "[device]\nmatch_name = nvme0\n", -EINVAL,
          "1: [device]: a device section needs a name: [device NAME]" },
        { "/config/bad/section/device-bad-name", "[device a/b]\nmatch_name = nvme0\n", -EINVAL,
          "1: [device a/b]: bad section name: NAME may use only A-Z, a-z, 0-9, '_', '-', '.' and ':'" },
        { "/config/bad/section/device-two-words", "[device a b]\nmatch_name = nvme0\n", -EINVAL,
          "1: [device a b]: no [device a] section above it (a situation section refines one that has the "
          "match_ keys)" },
        { "/config/bad/section/device-glued", "[devicea]\n", -EINVAL,
          "1: [devicea]: unknown section (expected [apst], [cpu], [metrics], [daemon], [watch], [holds] or [device NAME])" },
        { "/config/bad/section/device-without-match",
          "[device everything]\nmax_latency_us = 0\n[apst]\n", -EINVAL,
          "1: [device everything]: no match_ key (match_name, match_model, match_serial, match_pci or "
          "match_firmware), so it would apply to every controller; put settings for all controllers in "
          "[apst]" },
        { "/config/bad/section/device-without-match-at-eof", "[device x]\nenable = no\n", -EINVAL,
          "1: [device x]: no match_ key (match_name, match_model, match_serial, match_pci or "
          "match_firmware), so it would apply to every controller; put settings for all controllers in "
          "[apst]" },
        { "/config/bad/section/name-too-long", "[device aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n",
          -EINVAL,
          "1: [device aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]: section name too long (at most 48 "
          "characters)" },

        /* situation sections */
        { "/config/bad/situation/unknown-word", "[apst on-mains]\n", -EINVAL,
          "1: [apst on-mains]: unknown situation (expected on-ac, on-battery or profile=NAME after the "
          "section's name)" },
        { "/config/bad/situation/unknown-profile", "[cpu profile=powersaver]\n", -EINVAL,
          "1: [cpu profile=powersaver]: unknown power profile (profile=power-saver, profile=balanced or "
          "profile=performance)" },
        { "/config/bad/situation/empty-profile", "[apst profile=]\n", -EINVAL,
          "1: [apst profile=]: unknown situation (expected on-ac, on-battery or profile=NAME after the "
          "section's name)" },
        { "/config/bad/situation/two-situations", "[apst on-battery profile=balanced]\n", -EINVAL,
          "1: [apst on-battery profile=balanced]: expected [apst] or [apst SITUATION]" },
        { "/config/bad/situation/twice", "[apst on-battery]\nforce = yes\n[apst]\n[apst  on-battery]\n", -EINVAL,
          "4: [apst  on-battery]: section given twice (first on line 1)" },
        { "/config/bad/situation/cpu-twice", "[cpu profile=performance]\n[cpu profile=performance]\n", -EINVAL,
          "2: [cpu profile=performance]: section given twice (first on line 1)" },
        { "/config/bad/situation/metrics", "[metrics on-battery]\n", -EINVAL,
          "1: [metrics on-battery]: [metrics] is the same in every situation" },
        { "/config/bad/situation/device-before-plain",
          "[device a on-battery]\nmax_latency_us = 0\n[device a]\nmatch_name = nvme0\n", -EINVAL,
          "1: [device a on-battery]: no [device a] section above it (a situation section refines one that has "
          "the match_ keys)" },
        { "/config/bad/situation/device-match-key",
          "[device a]\nmatch_name = nvme0\n[device a on-ac]\nmatch_model = X*\n", -EINVAL,
          "4: [device a on-ac] match_model = X*: what a device section matches is the same in every situation; "
          "put match_ keys in [device a]" },
        { "/config/bad/situation/device-twice",
          "[device a]\nmatch_name = nvme0\n[device a on-ac]\n[device a on-ac]\n", -EINVAL,
          "4: [device a on-ac]: section given twice (first on line 3)" },
        { "/config/bad/situation/device-too-many-words",
          "[device a]\nmatch_name = nvme0\n[device a on-ac x]\n", -EINVAL,
          "3: [device a on-ac x]: expected [device NAME] or [device NAME SITUATION]" },
        { "/config/bad/situation/bad-value", "[apst on-battery]\nmax_latency_us = 1 ms\n", -EINVAL,
          "2: [apst on-battery] max_latency_us = 1 ms: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/situation/repeated-key", "[apst on-battery]\nforce = yes\nforce = no\n", -EINVAL,
          "3: [apst on-battery] force = no: key given twice in this section (first on line 2)" },
        { "/config/bad/situation/cpu-key-in-apst", "[apst profile=balanced]\npin = always\n", -EINVAL,
          "2: [apst profile=balanced] pin = always: unknown key in this section (it belongs in [cpu])" },
        { "/config/bad/situation/cpu-inverted-on-battery",
          "[cpu]\nmax_freq = 50%\n[cpu on-battery]\nmin_freq = 80%\n", -EINVAL,
          "4: [cpu on-battery] min_freq = 80%: above max_freq = 50% (line 2) on battery" },
        { "/config/bad/situation/cpu-inverted-by-profile-max",
          "[cpu]\nmin_freq = 40%\n[cpu profile=power-saver]\nmax_freq = 30%\n", -EINVAL,
          "2: [cpu] min_freq = 40%: above max_freq = 30% (line 4) on AC, power-saver profile" },
        { "/config/bad/section/no-bracket", "[apst\nforce = no\n", -EINVAL,
          "1: [apst: section header without ']'" },
        { "/config/bad/section/trailing-text", "[apst] x\n", -EINVAL,
          "1: [apst] x: text after the section header" },
        { "/config/bad/section/trailing-hash", "[apst] # comment\n", -EINVAL,
          "1: [apst] # comment: text after the section header" },

        /* [daemon] */
        { "/config/bad/daemon/zero", "[daemon]\nunresponsive_after_sec = 0\n", -EINVAL,
          "2: [daemon] unresponsive_after_sec = 0: out of range (1..3600 s)" },
        { "/config/bad/daemon/too-long", "[daemon]\nunresponsive_after_sec = 3601\n", -EINVAL,
          "2: [daemon] unresponsive_after_sec = 3601: out of range (1..3600 s)" },
        { "/config/bad/daemon/twice", "[daemon]\n[daemon]\n", -EINVAL, "2: [daemon]: section given twice" },
        { "/config/bad/daemon/situation", "[daemon on-battery]\n", -EINVAL,
          "1: [daemon on-battery]: [daemon] is the same in every situation" },
        { "/config/bad/daemon/wrong-section", "[apst]\nunresponsive_after_sec = 5\n", -EINVAL,
          "2: [apst] unresponsive_after_sec = 5: unknown key in this section (it belongs in [daemon])" },

        /* [metrics] */
        { "/config/bad/holds/not-bool", "[holds]\nenable = maybe\n", -EINVAL,
          "2: [holds] enable = maybe: not a boolean (yes/no, true/false, on/off, 1/0)" },
        { "/config/bad/holds/situation", "[holds on-battery]\n", -EINVAL,
          "1: [holds on-battery]: [holds] is the same in every situation" },
        { "/config/bad/holds/twice", "[holds]\n[holds]\n", -EINVAL, "2: [holds]: section given twice" },
        { "/config/bad/holds/key-elsewhere", "[holds]\nsource = bpf\n", -EINVAL,
          "2: [holds] source = bpf: unknown key in this section (it belongs in [watch])" },
        { "/config/bad/watch/unknown-source", "[watch]\nsource = ebpf\n", -EINVAL,
          "2: [watch] source = ebpf: unknown source (auto, bpf or stat)" },
        { "/config/bad/watch/situation", "[watch on-battery]\n", -EINVAL,
          "1: [watch on-battery]: [watch] is the same in every situation" },
        { "/config/bad/watch/key-elsewhere", "[apst]\nsource = bpf\n", -EINVAL,
          "2: [apst] source = bpf: unknown key in this section (it belongs in [watch])" },
        { "/config/bad/metrics/relative", "[metrics]\npath = nvme-apstd.prom\n", -EINVAL,
          "2: [metrics] path = nvme-apstd.prom: not an absolute path" },
        { "/config/bad/metrics/not-prom", "[metrics]\npath = /var/lib/nvme-apstd.txt\n", -EINVAL,
          "2: [metrics] path = /var/lib/nvme-apstd.txt: the file name must end in \".prom\" (node_exporter's "
          "textfile collector reads only those)" },
        { "/config/bad/metrics/only-suffix", "[metrics]\npath = /var/lib/.prom\n", -EINVAL,
          "2: [metrics] path = /var/lib/.prom: the file name must end in \".prom\" (node_exporter's "
          "textfile collector reads only those)" },
        { "/config/bad/metrics/dotdot", "[metrics]\npath = /var/lib/../x.prom\n", -EINVAL,
          "2: [metrics] path = /var/lib/../x.prom: not a plain path (no \"//\", \"/./\" or \"/../\")" },
        { "/config/bad/metrics/twice", "[metrics]\n[metrics]\n", -EINVAL, "2: [metrics]: section given twice" },
        { "/config/bad/metrics/path-in-apst", "[apst]\npath = /x.prom\n", -EINVAL,
          "2: [apst] path = /x.prom: unknown key in this section (it belongs in [metrics])" },
        { "/config/bad/metrics/apst-key", "[metrics]\nforce = yes\n", -EINVAL,
          "2: [metrics] force = yes: unknown key in this section (it belongs in [apst] or [device NAME])" },

        /* keys */
        { "/config/bad/key/outside-section", "policy = kernel\n[apst]\n", -EINVAL,
          "1: policy = kernel: outside any section; put it under [apst], [cpu], [metrics], [daemon], [watch], [holds] or [device NAME]" },
        { "/config/bad/key/unknown", "[apst]\nmax_latency = 5\n", -EINVAL,
          "2: [apst] max_latency = 5: unknown key" },
        { "/config/bad/key/cpu-key-in-apst", "[apst]\npin = busy\n", -EINVAL,
          "2: [apst] pin = busy: unknown key in this section (it belongs in [cpu])" },
        { "/config/bad/key/match-in-apst", "[apst]\nmatch_name = nvme0\n", -EINVAL,
          "2: [apst] match_name = nvme0: unknown key in this section (it belongs in [device NAME])" },
        { "/config/bad/key/apst-key-in-cpu", "[cpu]\nforce = yes\n", -EINVAL,
          "2: [cpu] force = yes: unknown key in this section (it belongs in [apst] or [device NAME])" },
        { "/config/bad/key/repeated", "[apst]\nforce = yes\n\nforce = no\n", -EINVAL,
          "4: [apst] force = no: key given twice in this section (first on line 2)" },
        { "/config/bad/key/repeated-in-device",
          "[device a]\nmatch_name = nvme0\nmax_latency_us = 1\nmax_latency_us = 1\n", -EINVAL,
          "4: [device a] max_latency_us = 1: key given twice in this section (first on line 3)" },
        { "/config/bad/key/empty-name", "[apst]\n= 5\n", -EINVAL,
          "2: [apst]  = 5: missing key name before '='" },
        { "/config/bad/key/no-equals", "[apst]\nforce\n", -EINVAL,
          "2: force: expected \"key = value\", \"[section]\" or a comment" },
        { "/config/bad/key/indented-continuation", "[apst]\nforce = yes\n  policy = kernel\n", -EINVAL,
          "3: policy = kernel: indented line; inih would read it as the continuation of the previous value; "
          "remove the leading blanks" },
        { "/config/bad/key/hash-comment-after-value", "[apst]\nmax_latency_us = 5000 # 5 ms\n", -EINVAL,
          "2: [apst] max_latency_us = 5000 # 5 ms: '#' starts a comment only at the beginning of a line; use "
          "';' after a value" },
        { "/config/bad/key/control-character", "[device a]\nmatch_model = a\x1b[31mb\n", -EINVAL,
          "2: [device a] match_model = a\\x1b[31mb: control character in the value" },
        { "/config/bad/key/serial-not-shown", "[device a]\nmatch_serial = S4EWNX0R\nmatch_serial = S5\n",
          -EINVAL, "3: [device a] match_serial = (not shown): key given twice in this section (first on line 2)" },
        { "/config/bad/key/syntax-error-and-the-next", "[apst]\nbogus line\nunknown = 1\n", -EINVAL,
          "2: bogus line: expected \"key = value\", \"[section]\" or a comment\n"
          FILENAME ":3: [apst] unknown = 1: unknown key" },

        /* numbers */
        { "/config/bad/number/empty", "[apst]\nmax_latency_us =\n", -EINVAL,
          "2: [apst] max_latency_us = : empty value" },
        { "/config/bad/number/trailing-garbage", "[apst]\nmax_latency_us = 10x\n", -EINVAL,
          "2: [apst] max_latency_us = 10x: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/exlat/in-apst", "[apst]\nexit_latency_us = ps3:1500\n", -EINVAL,
          "2: [apst] exit_latency_us = ps3:1500: unknown key in this section (it belongs in [device NAME])" },
        { "/config/bad/exlat/no-ps", "[device a]\nmatch_name = nvme0\nexit_latency_us = 1500\n", -EINVAL,
          "3: [device a] exit_latency_us = 1500: expected psN:LATENCY pairs separated by blanks "
          "(\"ps3:1500 ps4:32ms\")" },
        { "/config/bad/exlat/state-out-of-range", "[device a]\nmatch_name = nvme0\nexit_latency_us = ps32:1\n",
          -EINVAL, "3: [device a] exit_latency_us = ps32:1: ps32: no such power state (ps0..ps31)" },
        { "/config/bad/exlat/twice", "[device a]\nmatch_name = nvme0\nexit_latency_us = ps3:1 ps3:2\n",
          -EINVAL, "3: [device a] exit_latency_us = ps3:1 ps3:2: ps3 given twice" },
        { "/config/bad/exlat/zero", "[device a]\nmatch_name = nvme0\nexit_latency_us = ps3:0\n",
          -EINVAL, "3: [device a] exit_latency_us = ps3:0: ps3: out of range (1..10000000 us)" },
        { "/config/bad/exlat/bad-unit", "[device a]\nmatch_name = nvme0\nexit_latency_us = ps3:1h\n",
          -EINVAL, "3: [device a] exit_latency_us = ps3:1h: ps3: not a time span (a number, optionally "
          "followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/exlat/situation", "[device a]\nmatch_name = nvme0\n[device a on-battery]\n"
          "exit_latency_us = ps3:1\n", -EINVAL, "4: [device a on-battery] exit_latency_us = ps3:1: what a device "
          "section matches is the same in every situation; put match_ keys in [device a]" },
        { "/config/bad/number/unknown-unit", "[apst]\nprimary_timeout_ms = 100min\n", -EINVAL,
          "2: [apst] primary_timeout_ms = 100min: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/number/unit-not-whole", "[apst]\nprimary_timeout_ms = 1500us\n", -EINVAL,
          "2: [apst] primary_timeout_ms = 1500us: not a whole number of ms" },
        { "/config/bad/number/unit-finer-than-us", "[apst]\nmax_latency_us = 1.0005ms\n", -EINVAL,
          "2: [apst] max_latency_us = 1.0005ms: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/number/unit-out-of-range", "[apst]\nmax_latency_us = 11s\n", -EINVAL,
          "2: [apst] max_latency_us = 11s: out of range (0..10000000 us)" },
        { "/config/bad/number/plain-ms-overflow", "[cpu]\nrelease_after_ms = 18446744073709552\n", -EINVAL,
          "2: [cpu] release_after_ms = 18446744073709552: number too large (range 0..3600000 ms)" },
        { "/config/bad/number/unit-overflow", "[apst]\nmax_latency_us = 18446744073709552s\n", -EINVAL,
          "2: [apst] max_latency_us = 18446744073709552s: number too large (range 0..10000000 us)" },
        { "/config/bad/number/negative", "[apst]\nmax_latency_us = -1\n", -EINVAL,
          "2: [apst] max_latency_us = -1: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/number/plus", "[apst]\nmax_latency_us = +1\n", -EINVAL,
          "2: [apst] max_latency_us = +1: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/number/hex", "[apst]\nmax_latency_us = 0x10\n", -EINVAL,
          "2: [apst] max_latency_us = 0x10: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/number/inner-blank", "[apst]\nmax_latency_us = 1 000\n", -EINVAL,
          "2: [apst] max_latency_us = 1 000: not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)" },
        { "/config/bad/number/overflow-32", "[apst]\nmax_latency_us = 4294967296\n", -EINVAL,
          "2: [apst] max_latency_us = 4294967296: out of range (0..10000000 us)" },
        { "/config/bad/number/overflow-long", "[apst]\nmax_latency_us = 99999999999999999999999\n", -EINVAL,
          "2: [apst] max_latency_us = 99999999999999999999999: number too large (range 0..10000000 us)" },
        { "/config/bad/range/max-latency", "[apst]\nmax_latency_us = 10000001\n", -EINVAL,
          "2: [apst] max_latency_us = 10000001: out of range (0..10000000 us)" },
        { "/config/bad/range/primary-timeout-itpt", "[apst]\nprimary_timeout_ms = 16777216\n", -EINVAL,
          "2: [apst] primary_timeout_ms = 16777216: out of range (0..16777215 ms)" },
        { "/config/bad/range/secondary-timeout-itpt", "[apst]\nsecondary_timeout_ms = 4294967295\n", -EINVAL,
          "2: [apst] secondary_timeout_ms = 4294967295: out of range (0..16777215 ms)" },
        { "/config/bad/range/primary-tol", "[apst]\nprimary_latency_tol_us = 10000001\n", -EINVAL,
          "2: [apst] primary_latency_tol_us = 10000001: out of range (0..10000000 us)" },
        { "/config/bad/range/secondary-tol", "[apst]\nsecondary_latency_tol_us = 20000000\n", -EINVAL,
          "2: [apst] secondary_latency_tol_us = 20000000: out of range (0..10000000 us)" },
        { "/config/bad/range/release-after", "[cpu]\nrelease_after_ms = 3600001\n", -EINVAL,
          "2: [cpu] release_after_ms = 3600001: out of range (0..3600000 ms)" },

        /* enumerations and words */
        { "/config/bad/value/policy", "[apst]\npolicy = Kernel\n", -EINVAL,
          "2: [apst] policy = Kernel: unknown policy (budget, kernel or adaptive)" },
        { "/config/bad/value/bool", "[apst]\nforce = maybe\n", -EINVAL,
          "2: [apst] force = maybe: not a boolean (yes/no, true/false, on/off, 1/0)" },
        { "/config/bad/value/bool-y", "[device a]\nmatch_name = x\nenable = y\n", -EINVAL,
          "3: [device a] enable = y: not a boolean (yes/no, true/false, on/off, 1/0)" },
        { "/config/bad/value/pin", "[cpu]\npin = sometimes\n", -EINVAL,
          "2: [cpu] pin = sometimes: unknown mode (off, always or busy)" },
        { "/config/bad/value/governor-upper", "[cpu]\ngovernor = Performance\n", -EINVAL,
          "2: [cpu] governor = Performance: not a name: only a-z, 0-9, '_' and '-' are allowed" },
        { "/config/bad/value/governor-path", "[cpu]\ngovernor = ../../x\n", -EINVAL,
          "2: [cpu] governor = ../../x: not a name: only a-z, 0-9, '_' and '-' are allowed" },
        { "/config/bad/value/governor-long", "[cpu]\ngovernor = abcdefghijklmnop\n", -EINVAL,
          "2: [cpu] governor = abcdefghijklmnop: name too long (at most 15 characters)" },
        { "/config/bad/value/epp", "[cpu]\nenergy_performance_preference = balance performance\n", -EINVAL,
          "2: [cpu] energy_performance_preference = balance performance: not a name: only a-z, 0-9, '_' and '-' "
          "are allowed" },

        /* frequencies */
        { "/config/bad/freq/ghz", "[cpu]\nmin_freq = 1.5GHz\n", -EINVAL,
          "2: [cpu] min_freq = 1.5GHz: not a frequency (kHz as a decimal number, \"N%\", \"min\" or \"max\")" },
        { "/config/bad/freq/zero-khz", "[cpu]\nmin_freq = 0\n", -EINVAL,
          "2: [cpu] min_freq = 0: frequency out of range (1..10000000 kHz)" },
        { "/config/bad/freq/too-high", "[cpu]\nmax_freq = 10000001\n", -EINVAL,
          "2: [cpu] max_freq = 10000001: frequency out of range (1..10000000 kHz)" },
        { "/config/bad/freq/overflow", "[cpu]\nmax_freq = 4294967296\n", -EINVAL,
          "2: [cpu] max_freq = 4294967296: frequency out of range (1..10000000 kHz)" },
        { "/config/bad/freq/percent-over", "[cpu]\nmax_freq = 101%\n", -EINVAL,
          "2: [cpu] max_freq = 101%: percentage out of range (0%..100%)" },
        { "/config/bad/freq/percent-long", "[cpu]\nmax_freq = 0000000000100%\n", -EINVAL,
          "2: [cpu] max_freq = 0000000000100%: percentage out of range (0%..100%)" },
        { "/config/bad/freq/percent-negative", "[cpu]\nmax_freq = -5%\n", -EINVAL,
          "2: [cpu] max_freq = -5%: not a percentage (\"N%\", N a decimal number)" },
        { "/config/bad/freq/percent-alone", "[cpu]\nmax_freq = %\n", -EINVAL,
          "2: [cpu] max_freq = %: not a percentage (\"N%\", N a decimal number)" },
        { "/config/bad/freq/percent-blank", "[cpu]\nmax_freq = 50 %\n", -EINVAL,
          "2: [cpu] max_freq = 50 %: not a percentage (\"N%\", N a decimal number)" },
        { "/config/bad/freq/min-above-max-khz", "[cpu]\nmax_freq = 1000000\nmin_freq = 2000000\n", -EINVAL,
          "3: [cpu] min_freq = 2000000: above max_freq = 1000000 (line 2)" },
        { "/config/bad/freq/min-above-max-percent", "[cpu]\nmin_freq = 60%\nmax_freq = 40%\n", -EINVAL,
          "2: [cpu] min_freq = 60%: above max_freq = 40% (line 3)" },
        { "/config/bad/freq/max-below-min-keywords", "[cpu]\nmin_freq = max\nmax_freq = min\n", -EINVAL,
          "2: [cpu] min_freq = max: above max_freq = min (line 3)" },
        { "/config/bad/freq/percent-above-hw-min", "[cpu]\nmin_freq = 1%\nmax_freq = min\n", -EINVAL,
          "2: [cpu] min_freq = 1%: above max_freq = min (line 3)" },

        /* cpus */
        { "/config/bad/cpus/garbage", "[cpu]\ncpus = 0-3,a\n", -EINVAL,
          "2: [cpu] cpus = 0-3,a: not a CPU list: expected all, nvme-irq or a list such as 0-3,6 of CPUs below "
          "1024" },
        { "/config/bad/cpus/past-max", "[cpu]\ncpus = 1024\n", -EINVAL,
          "2: [cpu] cpus = 1024: not a CPU list: expected all, nvme-irq or a list such as 0-3,6 of CPUs below "
          "1024" },
        { "/config/bad/cpus/reversed", "[cpu]\ncpus = 3-1\n", -EINVAL,
          "2: [cpu] cpus = 3-1: not a CPU list: expected all, nvme-irq or a list such as 0-3,6 of CPUs below "
          "1024" },
        { "/config/bad/cpus/upper", "[cpu]\ncpus = ALL\n", -EINVAL,
          "2: [cpu] cpus = ALL: not a CPU list: expected all, nvme-irq or a list such as 0-3,6 of CPUs below "
          "1024" },

        /* match_pci */
        { "/config/bad/pci/no-device", "[device a]\nmatch_pci = 8086\n", -EINVAL,
          "2: [device a] match_pci = 8086: not a PCI id glob: expected vendor:device as 4 hex digits each "
          "(\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },
        { "/config/bad/pci/short", "[device a]\nmatch_pci = 8086:f1a\n", -EINVAL,
          "2: [device a] match_pci = 8086:f1a: not a PCI id glob: expected vendor:device as 4 hex digits each "
          "(\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },
        { "/config/bad/pci/long", "[device a]\nmatch_pci = 80861:f1a5\n", -EINVAL,
          "2: [device a] match_pci = 80861:f1a5: not a PCI id glob: expected vendor:device as 4 hex digits "
          "each (\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },
        { "/config/bad/pci/not-hex", "[device a]\nmatch_pci = 80g6:f1a5\n", -EINVAL,
          "2: [device a] match_pci = 80g6:f1a5: not a PCI id glob: expected vendor:device as 4 hex digits "
          "each (\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },
        { "/config/bad/pci/three-parts", "[device a]\nmatch_pci = 8086:f1a5:0\n", -EINVAL,
          "2: [device a] match_pci = 8086:f1a5:0: not a PCI id glob: expected vendor:device as 4 hex digits "
          "each (\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },
        { "/config/bad/pci/open-bracket", "[device a]\nmatch_pci = 8086:[f1a5\n", -EINVAL,
          "2: [device a] match_pci = 8086:[f1a5: not a PCI id glob: expected vendor:device as 4 hex digits "
          "each (\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },
        { "/config/bad/pci/too-many-atoms-with-star", "[device a]\nmatch_pci = 8086:f1a5*0\n", -EINVAL,
          "2: [device a] match_pci = 8086:f1a5*0: not a PCI id glob: expected vendor:device as 4 hex digits "
          "each (\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")" },

        /* lines */
        { "/config/bad/line/too-long",
          "[apst]\n# "
          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          " force = yes\n",
          -EINVAL, "2: line longer than 197 characters" },
};

static void test_bad(const BadCase *t) {
        _cleanup_free_ char *error = NULL, *expected = NULL;
        Config c, sentinel;
        int r;

        memset(&c, 0x5a, sizeof(c));
        memcpy(&sentinel, &c, sizeof(sentinel));
        r = config_parse_string(t->text, FILENAME, &c, &error);
        CHECK(asprintf(&expected, "%s:%s", FILENAME, t->message) > 0);
        if (r != t->error || !error || strcmp(error, expected) != 0) {
                fprintf(stderr, "%s: got %d \"%s\"\n%*s expected %d \"%s\"\n", t->name, r, strempty(error),
                        (int) strlen(t->name), "", t->error, expected);
                CHECK(false);
        }
        /* *ret untouched on failure */
        CHECK(memcmp(&c, &sentinel, sizeof(c)) == 0);

        /* ret_error may be NULL */
        CHECK(config_parse_string(t->text, FILENAME, &c, NULL) == t->error);
}

/* Lines at and just below inih's limit: 197 characters plus "\r\n" fill its 200-byte buffer. */
static void test_line_limit(void) {
        char text[512];
        _cleanup_free_ char *error = NULL;
        Config c;
        int r;

        memset(text, 0, sizeof(text));
        strcpy(text, "[apst]\n#");
        memset(text + strlen(text), 'x', 196);
        strcat(text, "\r\nforce = yes\n");
        c = parse_ok("/config/line/197-with-crlf", text);
        CHECK(c.apst.force);
        config_done(&c);

        memset(text, 0, sizeof(text));
        strcpy(text, "[apst]\n#");
        memset(text + strlen(text), 'x', 197);
        strcat(text, "\r\nforce = yes\n");
        r = config_parse_string(text, FILENAME, &c, &error);
        CHECK(r == -EINVAL);
        CHECK(strcmp(error, "test.conf:2: line longer than 197 characters") == 0);
        printf("ok /config/line/limit\n");
}

static void test_many_devices(void) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t n = 0, size = 300 * 64;
        Config c;
        int r;

        text = malloc(size);
        REQUIRE(text);
        for (unsigned i = 0; i < 257; i++)
                n += (size_t) snprintf(text + n, size - n, "[device d%u]\nmatch_name = nvme%u\n", i, i);
        r = config_parse_string(text, "many.conf", &c, &error);
        CHECK(r == -EINVAL);
        CHECK(strcmp(error, "many.conf:513: [device d256]: too many device sections (at most 256)") == 0);

        /* 256 is fine; the last one wins only for nvme255 */
        text[strstr(text, "[device d256]") - text] = '\0';
        c = parse_ok("/config/devices/256", text);
        CHECK(c.n_devices == 256);
        {
                DeviceIdent dev = { .name = "nvme255" };
                const char *section = NULL;

                CHECK(config_resolve(&c, &dev, NULL, &section));
                CHECK(strcmp(section, "d255") == 0);
        }
        config_done(&c);
        printf("ok /config/devices/limit\n");
}

static void test_null_filename(void) {
        _cleanup_free_ char *error = NULL;
        Config c;

        CHECK(config_parse_string("[x]\n", NULL, &c, &error) == -EINVAL);
        CHECK(strcmp(error, "<string>:1: [x]: unknown section (expected [apst], [cpu], [metrics], [daemon], [watch], [holds] or [device NAME])") == 0);
        CHECK(config_parse_string("", NULL, &c, NULL) == 0);
        CHECK(strcmp(c.path, "<string>") == 0);
        config_done(&c);
        printf("ok /config/null-filename\n");
}

/* ---- config_load() ---- */

static char tmpdir[] = "/tmp/test-config-XXXXXX";

static char *write_file(const char *name, const void *data, size_t size, mode_t mode) {
        char *path;
        int fd;

        CHECK(asprintf(&path, "%s/%s", tmpdir, name) > 0);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        CHECK(write(fd, data, size) == (ssize_t) size);
        CHECK(fchmod(fd, mode) == 0);
        CHECK(close(fd) == 0);
        return path;
}

/* config_load(@path) must return @error and, unless @fmt is NULL, the message @fmt formats to. */
_printf_(4, 5) static void expect_load(const char *name, const char *path, int error, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *expected = NULL;
        Config c;
        int r;

        if (fmt) {
                va_list ap;

                va_start(ap, fmt);
                CHECK(vasprintf(&expected, fmt, ap) > 0);
                va_end(ap);
        }

        r = config_load(path, &c, &msg);
        if (r != error || (expected && (!msg || strcmp(msg, expected) != 0))) {
                fprintf(stderr, "%s: got %d \"%s\", expected %d \"%s\"\n", name, r, strempty(msg), error,
                        strempty(expected));
                CHECK(false);
        }
        if (r == 0)
                config_done(&c);
        printf("ok %s\n", name);
}

static void test_load(void) {
        _cleanup_free_ char *good = NULL, *g664 = NULL, *o666 = NULL, *nul = NULL, *big = NULL, *rep = NULL,
                            *dir = NULL, *missing = NULL, *notdir = NULL, *fifo = NULL, *exact = NULL,
                            *foreign = NULL;
        static const char text[] = "[apst]\nmax_latency_us = 1234\n";
        Config c;

        REQUIRE(mkdtemp(tmpdir));

        good = write_file("good.conf", text, strlen(text), 0644);
        CHECK(config_load(good, &c, NULL) == 0);
        CHECK(c.apst.max_latency_us == 1234);
        CHECK(strcmp(c.path, good) == 0);
        config_done(&c);
        printf("ok /config/load/good\n");

        g664 = write_file("g664.conf", text, strlen(text), 0664);
        expect_load("/config/load/group-writable", g664, -EPERM,
                    "%s: is writable by group (mode 0664); refusing to use it", g664);

        o666 = write_file("o666.conf", text, strlen(text), 0666);
        expect_load("/config/load/world-writable", o666, -EPERM,
                    "%s: is writable by group and others (mode 0666); refusing to use it", o666);

        if (geteuid() == 0) {
                foreign = write_file("foreign.conf", text, strlen(text), 0644);
                CHECK(chown(foreign, 65534, 65534) == 0);
                expect_load("/config/load/not-owned-by-root", foreign, -EPERM,
                            "%s: is owned by uid 65534, not root; refusing to use it", foreign);
        } else
                printf("skip /config/load/not-owned-by-root (not root)\n");

        nul = write_file("nul.conf", "[apst]\0force = yes\n", 19, 0644);
        expect_load("/config/load/nul-byte", nul, -EINVAL, "%s: contains a NUL byte at offset 6; not a text file",
                    nul);

        {
                size_t size = CONFIG_MAX_SIZE + 1;
                _cleanup_free_ char *data = malloc(size);

                REQUIRE(data);
                /* Valid text of exactly CONFIG_MAX_SIZE bytes parses; one more byte is refused. */
                memset(data, '\n', size);
                data[0] = '#';
                exact = write_file("exact.conf", data, CONFIG_MAX_SIZE, 0644);
                expect_load("/config/load/max-size", exact, 0, NULL);

                big = write_file("big.conf", data, size, 0644);
                expect_load("/config/load/oversized", big, -EFBIG,
                            "%s: is larger than %u bytes (%u); refusing to use it", big, CONFIG_MAX_SIZE,
                            CONFIG_MAX_SIZE + 1);
        }

        rep = write_file("rep.conf", "[cpu]\npin = busy\npin = always\n", 30, 0644);
        expect_load("/config/load/repeated-key", rep, -EINVAL,
                    "%s:3: [cpu] pin = always: key given twice in this section (first on line 2)", rep);

        CHECK(asprintf(&dir, "%s/conf.d", tmpdir) > 0);
        CHECK(mkdir(dir, 0755) == 0);
        expect_load("/config/load/directory", dir, -EISDIR, "%s: is a directory, not a configuration file", dir);

        CHECK(asprintf(&missing, "%s/missing.conf", tmpdir) > 0);
        expect_load("/config/load/missing", missing, -ENOENT, "%s: cannot open: No such file or directory",
                    missing);

        CHECK(asprintf(&notdir, "%s/x", good) > 0);
        expect_load("/config/load/not-a-directory", notdir, -ENOTDIR, "%s: cannot open: Not a directory", notdir);

        /* A FIFO must be refused, not waited on. */
        CHECK(asprintf(&fifo, "%s/fifo", tmpdir) > 0);
        CHECK(mkfifo(fifo, 0600) == 0);
        expect_load("/config/load/fifo", fifo, -EINVAL,
                    "%s: is not a regular file (mode 010600); refusing to use it", fifo);

        expect_load("/config/load/device", "/dev/null", -EINVAL,
                    "/dev/null: is not a regular file (mode 020666); refusing to use it");

        /* Unreadable: as root, become nobody for the call (the saved uid stays 0) and a 0600 root file is
         * out of reach; as anyone else, chmod 0 does it. */
        if (geteuid() == 0) {
                CHECK(chmod(good, 0600) == 0);
                CHECK(seteuid(65534) == 0);
                expect_load("/config/load/unreadable", good, -EACCES, "%s: cannot open: Permission denied", good);
                CHECK(seteuid(0) == 0);
        } else {
                CHECK(chmod(good, 0) == 0);
                expect_load("/config/load/unreadable", good, -EACCES, "%s: cannot open: Permission denied", good);
        }

        /* The error pointer may be NULL. */
        CHECK(config_load(dir, &c, NULL) == -EISDIR);

        (void) unlink(good);
        (void) unlink(g664);
        (void) unlink(o666);
        if (foreign)
                (void) unlink(foreign);
        (void) unlink(nul);
        (void) unlink(exact);
        (void) unlink(big);
        (void) unlink(rep);
        (void) unlink(fifo);
        (void) rmdir(dir);
        CHECK(rmdir(tmpdir) == 0);
}

/* ---- the shipped file ---- */

static void test_shipped(void) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        const char *path = TEST_DATA_DIR "/../../conf/nvme-apstd.conf";
        Config c;
        FILE *f;
        long size;

        f = fopen(path, "re");
        REQUIRE(f);
        CHECK(fseek(f, 0, SEEK_END) == 0);
        size = ftell(f);
        CHECK(size > 0 && (unsigned long) size <= CONFIG_MAX_SIZE);
        rewind(f);
        text = calloc(1, (size_t) size + 1);
        REQUIRE(text);
        CHECK(fread(text, 1, (size_t) size, f) == (size_t) size);
        fclose(f);

        if (config_parse_string(text, path, &c, &error) < 0) {
                fprintf(stderr, "shipped file: %s\n", error);
                CHECK(false);
        }
        /* Everything in it is commented out: exactly the defaults. */
        assert_defaults(&c);
        config_done(&c);

        /* And its commented-out examples parse when enabled: drop "#" from every "#[" and "#key" line. */
        {
                _cleanup_free_ char *enabled = strdup(text);
                char *w = enabled;
                Config e;

                CHECK(enabled);
                for (const char *l = text; *l;) {
                        const char *nl = strchr(l, '\n');
                        size_t len = nl ? (size_t) (nl - l) + 1 : strlen(l);

                        if (len >= 2 && l[0] == '#' && (l[1] == '[' || (l[1] >= 'a' && l[1] <= 'z'))) {
                                memcpy(w, l + 1, len - 1);
                                w += len - 1;
                        } else {
                                memcpy(w, l, len);
                                w += len;
                        }
                        l += len;
                }
                *w = '\0';
                free(error);
                error = NULL;
                if (config_parse_string(enabled, "enabled-examples", &e, &error) < 0) {
                        fprintf(stderr, "shipped file with examples enabled: %s\n", error);
                        CHECK(false);
                }
                CHECK(e.n_devices >= 2);
                config_done(&e);
        }
        printf("ok /config/shipped\n");
}

static void test_safe_atou32(void) {
        static const struct {
                const char *s;
                int r;
                uint32_t v;
        } cases[] = {
                { "0", 0, 0 },          { "4294967295", 0, UINT32_MAX }, { "4294967296", -ERANGE, 0 },
                { "00000000000000000001", 0, 1 },  { "", -EINVAL, 0 },    { " 1", -EINVAL, 0 },
                { "1 ", -EINVAL, 0 },   { "-0", -EINVAL, 0 },             { "+1", -EINVAL, 0 },
                { "1e3", -EINVAL, 0 },  { "42949672950", -ERANGE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint32_t v = 7;

                CHECK(safe_atou32(cases[i].s, &v) == cases[i].r);
                CHECK(v == (cases[i].r == 0 ? cases[i].v : 7));
        }
        CHECK(parse_boolean("YES") == 1 && parse_boolean("off") == 0 && parse_boolean("") == -EINVAL &&
              parse_boolean("y") == -EINVAL && parse_boolean(NULL) == -EINVAL);
        printf("ok /util/safe_atou32\n");
}

/* config_copy(): a deep copy (nothing shared with the original, which may be freed), and a plan's
 * [device] section re-pointed into it by name. */
static void test_copy(void) {
        const char *text = "[apst]\nmax_latency_us = 5000\n[daemon]\nunresponsive_after_sec = 7\n"
                           "[device fast]\nmatch_name = nvme1\nmax_latency_us = 0\n[metrics]\npath = /x/a.prom\n";
        Config c, x, y;
        Situation s = {};
        const char *name;

        CHECK(config_parse_string(text, NULL, &c, NULL) == 0);
        CHECK(config_copy(&c, &x) == 0);
        CHECK(x.daemon.unresponsive_after_sec == 7 && x.apst.max_latency_us == 5000 && x.n_devices == 1);
        CHECK(x.devices[0].name != c.devices[0].name && strcmp(x.devices[0].name, "fast") == 0);
        CHECK(x.metrics.path != c.metrics.path && strcmp(x.metrics.path, "/x/a.prom") == 0);
        name = config_section_name(&x, c.devices[0].name);
        CHECK(name == x.devices[0].name);
        CHECK(!config_section_name(&x, "slow") && !config_section_name(&x, NULL));
        config_done(&c);   /* the copy stands alone */
        CHECK(strcmp(name, "fast") == 0 && x.devices[0].apst.max_latency_us == 0);
        config_done(&x);
        /* only a resolved configuration (no situation sections) is copied */
        CHECK(config_parse_string("[apst on-battery]\nmax_latency_us = 1\n", NULL, &c, NULL) == 0);
        CHECK(config_copy(&c, &x) == -EINVAL);
        CHECK(config_situate(&c, &s, &x) == 0 && config_copy(&x, &y) == 0);
        CHECK(y.apst.max_latency_us == x.apst.max_latency_us);
        config_done(&y);
        config_done(&x);
        config_done(&c);
        printf("ok /config/copy\n");
}

/* Time keys with units: a plain number keeps the key's own unit; us, ms and s convert. */
static void test_units(void) {
        Config c;

        current = "/config/units/good";
        REQUIRE(config_parse_string("[apst]\nmax_latency_us = 5ms\nprimary_timeout_ms = 1.5s\n"
                                    "secondary_timeout_ms = 2000\nprimary_latency_tol_us = 1500us\n"
                                    "secondary_latency_tol_us = 0.25s\n[cpu]\nrelease_after_ms = 3s\n"
                                    "[daemon]\nunresponsive_after_sec = 30000ms\n", FILENAME, &c, NULL) == 0);
        CHECK(c.apst.max_latency_us == 5000);
        CHECK(c.apst.primary_timeout_ms == 1500);
        CHECK(c.apst.secondary_timeout_ms == 2000);
        CHECK(c.apst.primary_latency_tol_us == 1500);
        CHECK(c.apst.secondary_latency_tol_us == 250000);
        CHECK(c.cpu.release_after_ms == 3000);
        CHECK(c.daemon.unresponsive_after_sec == 30);
        config_done(&c);
        current = "/config/units/exit-latency";
        REQUIRE(config_parse_string("[device a]\nmatch_name = nvme0\nexit_latency_us = ps3:1500 ps4:32ms  "
                                    "ps0:1\n", FILENAME, &c, NULL) == 0);
        CHECK(c.devices[0].set == APST_KEY_EXIT_LATENCY);
        CHECK(c.devices[0].apst.exlat.mask == ((1u << 3) | (1u << 4) | 1u));
        CHECK(c.devices[0].apst.exlat.us[3] == 1500 && c.devices[0].apst.exlat.us[4] == 32000 &&
              c.devices[0].apst.exlat.us[0] == 1);
        config_done(&c);
        current = "/config/units/edge-of-range";
        REQUIRE(config_parse_string("[apst]\nmax_latency_us = 10s\n", FILENAME, &c, NULL) == 0);
        CHECK(c.apst.max_latency_us == 10000000);
        config_done(&c);
        printf("ok /config/units\n");
}

int main(void) {
        test_units();
        test_safe_atou32();
        test_copy();
        for (size_t i = 0; i < ELEMENTSOF(good_cases); i++) {
                test_good(&good_cases[i]);
                printf("ok %s\n", good_cases[i].name);
        }
        test_resolve();
        test_situations();
        test_manpage_laptop();
        test_power_source();
        test_situation_words();
        for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
                test_bad(&bad_cases[i]);
                printf("ok %s\n", bad_cases[i].name);
        }
        test_line_limit();
        test_many_devices();
        test_null_filename();
        test_load();
        test_shipped();
        return check_exit_status();
}
