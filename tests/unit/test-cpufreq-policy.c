/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the pure cpufreq planning (cpufreq-policy.c): frequency specs,
 * per-policy plans and their refusals, write order, CPU selection including
 * the nvme-irq CPUs, the recorded-state file round trip, and the CPU list
 * syntax of `cpus =`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "cpufreq-policy.h"
#include "cpuset.h"
#include "macro.h"

static CpuSet set_of(const char *list) {
        CpuSet s = {};

        if (list[0])
                CHECK(cpuset_parse(list, &s) == 0);
        return s;
}

static bool set_eq(const CpuSet *a, const char *list) {
        CpuSet b = set_of(list);

        return memcmp(a, &b, sizeof b) == 0;
}

/* An intel_pstate policy as a recorded cpus.umockdev has it. */
static CpufreqPolicyState pstate_policy(unsigned cpu, const char *cpus) {
        CpufreqPolicyState s = {
                .cpu = cpu,
                .cpus = set_of(cpus),
                .governor = "powersave",
                .min_khz = 800000,
                .max_khz = 3600000,
                .hw_min_khz = 800000,
                .hw_max_khz = 3600000,
                .available_governors = "performance powersave",
                .has_epp = true,
                .epp = "balance_performance",
                .available_epp = "default performance balance_performance balance_power power",
        };
        return s;
}

/* acpi-cpufreq: more governors, no EPP. */
static CpufreqPolicyState acpi_policy(unsigned cpu, const char *cpus) {
        CpufreqPolicyState s = {
                .cpu = cpu,
                .cpus = set_of(cpus),
                .governor = "schedutil",
                .min_khz = 1200000,
                .max_khz = 2400000,
                .hw_min_khz = 1200000,
                .hw_max_khz = 2400000,
                .available_governors = "conservative ondemand userspace powersave performance schedutil\n",
        };
        return s;
}

static void test_attr_names(void) {
        CHECK(strcmp(cpufreq_attr_to_string(CPUFREQ_ATTR_GOVERNOR), "scaling_governor") == 0);
        CHECK(strcmp(cpufreq_attr_to_string(CPUFREQ_ATTR_MIN), "scaling_min_freq") == 0);
        CHECK(strcmp(cpufreq_attr_to_string(CPUFREQ_ATTR_MAX), "scaling_max_freq") == 0);
        CHECK(strcmp(cpufreq_attr_to_string(CPUFREQ_ATTR_EPP), "energy_performance_preference") == 0);
        CHECK(!cpufreq_attr_to_string(_CPUFREQ_ATTR_MAX));
        CHECK(!cpufreq_attr_to_string(_CPUFREQ_ATTR_INVALID));
}

static void test_resolve_freq(void) {
        static const struct {
                const char *name;
                FreqSpec spec;
                uint32_t hw_min, hw_max;
                int r;
                uint32_t khz;
        } v[] = {
                { "unset", { FREQ_UNSET, 0 }, 800000, 3600000, 0, 0 },
                { "khz", { FREQ_KHZ, 2000000 }, 800000, 3600000, 1, 2000000 },
                { "khz/clamped-high", { FREQ_KHZ, 5000000 }, 800000, 3600000, 1, 3600000 },
                { "khz/clamped-low", { FREQ_KHZ, 100 }, 800000, 3600000, 1, 800000 },
                { "min", { FREQ_HW_MIN, 0 }, 800000, 3600000, 1, 800000 },
                { "max", { FREQ_HW_MAX, 0 }, 800000, 3600000, 1, 3600000 },
                { "percent/0", { FREQ_PERCENT, 0 }, 800000, 3600000, 1, 800000 },
                { "percent/50", { FREQ_PERCENT, 50 }, 800000, 3600000, 1, 2200000 },
                { "percent/100", { FREQ_PERCENT, 100 }, 800000, 3600000, 1, 3600000 },
                { "percent/rounds-down", { FREQ_PERCENT, 33 }, 0 + 1, 101, 1, 34 },
                { "percent/101", { FREQ_PERCENT, 101 }, 800000, 3600000, -EINVAL, 0 },
                { "percent/big-range", { FREQ_PERCENT, 99 }, 1, UINT32_MAX, 1, 4252017622u },
                { "hw/zero", { FREQ_HW_MAX, 0 }, 0, 0, -EINVAL, 0 },
                { "hw/inverted", { FREQ_KHZ, 1000 }, 2000, 1000, -EINVAL, 0 },
                { "kind/invalid", { _FREQ_KIND_INVALID, 0 }, 800000, 3600000, -EINVAL, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                uint32_t khz = 4242;
                int r = cpufreq_resolve_freq(&v[i].spec, v[i].hw_min, v[i].hw_max, &khz);

                if (r != v[i].r || (r > 0 && khz != v[i].khz) || (r <= 0 && khz != 4242)) {
                        fprintf(stderr, "resolve/%s: r=%d khz=%u, want r=%d khz=%u\n",
                                v[i].name, r, khz, v[i].r, v[i].khz);
                        abort();
                }
        }
}

static void test_plan(void) {
        CpufreqPolicyState st = pstate_policy(0, "0-3");
        CpufreqSettings saved, want;
        char err[256] = "";
        CpuConfig cfg = {
                .pin = CPU_PIN_ALWAYS,
                .governor = (char *) "performance",
                .min_freq = { FREQ_HW_MAX, 0 },
                .max_freq = { FREQ_HW_MAX, 0 },
                .epp = (char *) "performance",
        };

        cpufreq_settings_from_state(&st, &saved);
        CHECK(strcmp(saved.governor, "powersave") == 0 && saved.min_khz == 800000 &&
              saved.max_khz == 3600000 && strcmp(saved.epp, "balance_performance") == 0);
        CHECK(set_eq(&saved.cpus, "0-3") && saved.cpu == 0);

        /* plan/full: everything set */
        CHECK(cpufreq_plan_policy(&cfg, &st, &saved, &want, err, sizeof err) == 0);
        CHECK(strcmp(want.governor, "performance") == 0 && want.min_khz == 3600000 &&
              want.max_khz == 3600000 && strcmp(want.epp, "performance") == 0);

        /* plan/unset-keys-keep-saved: a key dropped on reload returns to what was recorded,
         * not to what the policy holds now. */
        {
                CpuConfig c2 = { .pin = CPU_PIN_ALWAYS, .governor = (char *) "performance" };
                CpufreqPolicyState now = st;

                strcpy(now.epp, "power");           /* left over from an earlier pin */
                now.min_khz = 3600000;
                CHECK(cpufreq_plan_policy(&c2, &now, &saved, &want, err, sizeof err) == 0);
                CHECK(strcmp(want.governor, "performance") == 0);
                CHECK(strcmp(want.epp, "balance_performance") == 0);
                CHECK(want.min_khz == 800000 && want.max_khz == 3600000);
        }

        /* plan/governor-unavailable */
        {
                CpuConfig c2 = { .governor = (char *) "schedutil" };

                err[0] = '\0';
                memset(&want, 0x5a, sizeof want);
                CpufreqSettings before = want;
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == -EINVAL);
                CHECK(memcmp(&want, &before, sizeof want) == 0);       /* ret untouched */
                CHECK(strstr(err, "'schedutil'") && strstr(err, "performance powersave"));
        }
        /* plan/governor-prefix-is-not-a-match */
        {
                CpuConfig c2 = { .governor = (char *) "perf" };
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == -EINVAL);
        }
        /* plan/governor-with-blank */
        {
                CpuConfig c2 = { .governor = (char *) "performance powersave" };
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == -EINVAL);
        }
        /* plan/epp-unlisted */
        {
                CpuConfig c2 = { .epp = (char *) "turbo" };
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == -EINVAL);
                CHECK(strstr(err, "'turbo'") && strstr(err, "energy_performance_available_preferences"));
        }
        /* plan/epp-raw-number: intel_pstate takes 0..255 without listing it */
        {
                CpuConfig c2 = { .epp = (char *) "128" };
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == 0);
                CHECK(strcmp(want.epp, "128") == 0);
                c2.epp = (char *) "256";
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == -EINVAL);
        }
        /* plan/epp-without-driver-support: ignored, not an error */
        {
                CpufreqPolicyState a = acpi_policy(4, "4-7");
                CpufreqSettings s4;
                CpuConfig c2 = { .governor = (char *) "performance", .epp = (char *) "performance" };

                cpufreq_settings_from_state(&a, &s4);
                CHECK(s4.epp[0] == '\0');
                CHECK(cpufreq_plan_policy(&c2, &a, &s4, &want, err, sizeof err) == 0);
                CHECK(want.epp[0] == '\0' && strcmp(want.governor, "performance") == 0);
                CHECK(want.cpu == 4 && set_eq(&want.cpus, "4-7"));
        }
        /* plan/min-above-max */
        {
                CpuConfig c2 = { .min_freq = { FREQ_KHZ, 3000000 }, .max_freq = { FREQ_KHZ, 2000000 } };
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == -EINVAL);
                CHECK(strstr(err, "3000000") && strstr(err, "2000000"));
        }
        /* plan/min-above-found-max */
        {
                CpuConfig c2 = { .min_freq = { FREQ_HW_MAX, 0 } };
                CpufreqSettings low = saved;

                low.max_khz = 2000000;
                CHECK(cpufreq_plan_policy(&c2, &st, &low, &want, err, sizeof err) == -EINVAL);
                CHECK(strstr(err, "set max_freq too"));
        }
        /* plan/percent */
        {
                CpuConfig c2 = { .min_freq = { FREQ_PERCENT, 50 } };
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == 0);
                CHECK(want.min_khz == 2200000 && want.max_khz == 3600000);
        }
        /* plan/nothing-configured = the record itself */
        {
                CpuConfig c2 = {};
                CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, err, sizeof err) == 0);
                CHECK(cpufreq_settings_equal(&want, &saved));
        }
}

static void test_differs_and_order(void) {
        CpufreqPolicyState st = pstate_policy(0, "0-1");
        CpufreqSettings cur, want;
        CpufreqAttr order[_CPUFREQ_ATTR_MAX];

        cpufreq_settings_from_state(&st, &cur);
        want = cur;
        for (CpufreqAttr a = 0; a < _CPUFREQ_ATTR_MAX; a++)
                CHECK(!cpufreq_attr_differs(&cur, &want, a));

        /* raising min above the current max: max first */
        want.min_khz = want.max_khz = 3600000;
        cur.max_khz = 2000000;
        cpufreq_write_order(&cur, &want, order);
        CHECK(order[0] == CPUFREQ_ATTR_GOVERNOR && order[1] == CPUFREQ_ATTR_EPP);
        CHECK(order[2] == CPUFREQ_ATTR_MAX && order[3] == CPUFREQ_ATTR_MIN);
        CHECK(cpufreq_attr_differs(&cur, &want, CPUFREQ_ATTR_MIN));
        CHECK(cpufreq_attr_differs(&cur, &want, CPUFREQ_ATTR_MAX));

        /* lowering both (a restore): min first */
        cur.min_khz = cur.max_khz = 3600000;
        want.min_khz = 800000;
        want.max_khz = 2000000;
        cpufreq_write_order(&cur, &want, order);
        CHECK(order[2] == CPUFREQ_ATTR_MIN && order[3] == CPUFREQ_ATTR_MAX);

        /* "" / 0 in want = leave alone */
        strcpy(cur.epp, "power");
        want.epp[0] = '\0';
        CHECK(!cpufreq_attr_differs(&cur, &want, CPUFREQ_ATTR_EPP));
        want.min_khz = 0;
        CHECK(!cpufreq_attr_differs(&cur, &want, CPUFREQ_ATTR_MIN));

        char buf[32];
        cpufreq_attr_value(&cur, CPUFREQ_ATTR_MAX, buf, sizeof buf);
        CHECK(strcmp(buf, "3600000") == 0);
        cpufreq_attr_value(&cur, CPUFREQ_ATTR_EPP, buf, sizeof buf);
        CHECK(strcmp(buf, "power") == 0);
}

static void test_select(void) {
        CpuSet online = set_of("0-7"), irq = set_of("2,5,9"), sel, missing;
        CpuConfig cfg = { .select = CPU_SELECT_ALL };

        cpufreq_select_cpus(&cfg, &online, NULL, &sel, &missing);
        CHECK(set_eq(&sel, "0-7") && set_eq(&missing, ""));

        cfg.select = CPU_SELECT_NVME_IRQ;
        cpufreq_select_cpus(&cfg, &online, &irq, &sel, &missing);
        CHECK(set_eq(&sel, "2,5") && set_eq(&missing, "9"));
        cpufreq_select_cpus(&cfg, &online, NULL, &sel, NULL);
        CHECK(set_eq(&sel, ""));

        cfg.select = CPU_SELECT_LIST;
        cfg.cpus = set_of("0-3,6,100");
        cpufreq_select_cpus(&cfg, &online, &irq, &sel, &missing);
        CHECK(set_eq(&sel, "0-3,6") && set_eq(&missing, "100"));
}

static void test_irq(void) {
        static const struct {
                const char *name, *effective, *fallback;
                int r;
                const char *cpus;
        } v[] = {
                { "effective", "3\n", "0-7\n", 0, "1,3" },
                { "effective-wins", "0-1", "4-7", 0, "0-1" },
                { "empty-effective-uses-mask", "\n", "4-5\n", 0, "1,4-5" },
                { "no-effective-file", NULL, "6\n", 0, "1,6" },
                { "garbage", "x", "y", -EINVAL, "1" },
                { "nothing", NULL, NULL, -EINVAL, "1" },
                { "bad-effective-good-mask", "7-3", "2", 0, "1-2" },
        };

        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                CpuSet acc = set_of("1");
                int r = cpufreq_irq_affinity_add(&acc, v[i].effective, v[i].fallback);

                if (r != v[i].r || !set_eq(&acc, v[i].cpus)) {
                        fprintf(stderr, "irq/%s: r=%d\n", v[i].name, r);
                        abort();
                }
        }

}

static void test_record_round_trip(void) {
        CpufreqPolicyState a = pstate_policy(0, "0-3"), b = acpi_policy(4, "4-5,7");
        CpufreqSettings s[2], *back = NULL;
        _cleanup_free_ char *text = NULL, *again = NULL;
        size_t n = 99;

        cpufreq_settings_from_state(&a, &s[0]);
        cpufreq_settings_from_state(&b, &s[1]);
        CHECK(cpufreq_record_format(s, 2, &text) == 0);
        CHECK(strcmp(text, CPUFREQ_RECORD_HEADER
                     "policy cpu=0 cpus=0-3 governor=powersave min=800000 max=3600000 epp=balance_performance\n"
                     "policy cpu=4 cpus=4-5,7 governor=schedutil min=1200000 max=2400000 epp=-\n") == 0);
        CHECK(cpufreq_record_parse(text, &back, &n) == 0);
        CHECK(n == 2);
        CHECK(cpufreq_settings_equal(&back[0], &s[0]));
        CHECK(cpufreq_settings_equal(&back[1], &s[1]));
        CHECK(!cpufreq_settings_equal(&back[0], &s[1]));
        CHECK(cpufreq_record_format(back, n, &again) == 0 && strcmp(again, text) == 0);
        free(back);

        /* empty record */
        free(text);
        text = NULL;
        CHECK(cpufreq_record_format(NULL, 0, &text) == 0 && strcmp(text, CPUFREQ_RECORD_HEADER) == 0);
        back = (CpufreqSettings *) 1;
        CHECK(cpufreq_record_parse(text, &back, &n) == 0 && n == 0 && back == NULL);

        /* values that would not survive the format are refused on the way out */
        CpufreqSettings bad = s[0];
        strcpy(bad.governor, "a b");
        CHECK(cpufreq_record_format(&bad, 1, &again) == -EINVAL);
        bad = s[0];
        strcpy(bad.epp, "x=y");
        CHECK(cpufreq_record_format(&bad, 1, &again) == -EINVAL);
        bad = s[0];
        bad.min_khz = 0;
        CHECK(cpufreq_record_format(&bad, 1, &again) == -EINVAL);
}

static void test_record_refused(void) {
#define H CPUFREQ_RECORD_HEADER
#define L "policy cpu=0 cpus=0-1 governor=powersave min=800000 max=3600000 epp=-\n"
        static const struct {
                const char *name, *text;
        } v[] = {
                { "no-header", L },
                { "other-version", "# nvme-apstd cpufreq record v2\n" L },
                { "cut-off", H "policy cpu=0 cpus=0-1 governor=powersave min=800000 max=3600000 epp=-" },
                { "missing-key", H "policy cpu=0 cpus=0-1 governor=powersave min=800000 epp=-\n" },
                { "unknown-key", H "policy cpu=0 cpus=0-1 governor=powersave min=800000 max=3600000 epp=- x=1\n" },
                { "dup-key", H "policy cpu=0 cpu=0 cpus=0-1 governor=powersave min=800000 max=3600000 epp=-\n" },
                { "cpu-not-in-cpus", H "policy cpu=2 cpus=0-1 governor=powersave min=800000 max=3600000 epp=-\n" },
                { "bad-cpus", H "policy cpu=0 cpus=1-0 governor=powersave min=800000 max=3600000 epp=-\n" },
                { "zero-min", H "policy cpu=0 cpus=0-1 governor=powersave min=0 max=3600000 epp=-\n" },
                { "huge-max", H "policy cpu=0 cpus=0-1 governor=powersave min=1 max=4294967296 epp=-\n" },
                { "neg", H "policy cpu=0 cpus=0-1 governor=powersave min=-1 max=3600000 epp=-\n" },
                { "empty-governor", H "policy cpu=0 cpus=0-1 governor= min=800000 max=3600000 epp=-\n" },
                { "two-blanks", H "policy cpu=0  cpus=0-1 governor=powersave min=800000 max=3600000 epp=-\n" },
                { "same-policy-twice", H L L },
                { "overlap", H L "policy cpu=1 cpus=1-2 governor=powersave min=800000 max=3600000 epp=-\n" },
                { "not-policy", H "cpu=0\n" },
                { "blank-line", H "\n" },
                { "long-governor", H "policy cpu=0 cpus=0 governor=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                     " min=1 max=2 epp=-\n" },
        };
#undef L
#undef H

        for (size_t i = 0; i < ELEMENTSOF(v); i++) {
                CpufreqSettings *s = NULL;
                size_t n = 77;
                int r = cpufreq_record_parse(v[i].text, &s, &n);

                if (r != -EINVAL || n != 77 || s) {
                        fprintf(stderr, "record/refused/%s: r=%d n=%zu\n", v[i].name, r, n);
                        abort();
                }
        }
}

static void test_describe(void) {
        CpufreqPolicyState st = pstate_policy(0, "0-3");
        CpufreqSettings saved, want;
        CpuConfig cfg = {
                .governor = (char *) "performance",
                .min_freq = { FREQ_HW_MAX, 0 },
                .max_freq = { FREQ_KHZ, 3600000 },
                .epp = (char *) "performance",
        };
        char buf[256];

        cpufreq_settings_from_state(&st, &saved);
        CHECK(cpufreq_plan_policy(&cfg, &st, &saved, &want, NULL, 0) == 0);
        cpufreq_describe(&cfg, &want, buf, sizeof buf);
        CHECK(strcmp(buf, "cpu0-3: governor performance, min 3600000 kHz (max), max 3600000 kHz, "
                           "epp performance") == 0);

        CpuConfig c2 = { .max_freq = { FREQ_PERCENT, 50 } };
        CHECK(cpufreq_plan_policy(&c2, &st, &saved, &want, NULL, 0) == 0);
        cpufreq_describe(&c2, &want, buf, sizeof buf);
        CHECK(strcmp(buf, "cpu0-3: governor powersave (as found), min 800000 kHz (as found), "
                           "max 2200000 kHz (50%), epp balance_performance (as found)") == 0);

        CpufreqPolicyState a = acpi_policy(4, "4");
        cpufreq_settings_from_state(&a, &saved);
        cpufreq_describe(NULL, &saved, buf, sizeof buf);
        CHECK(strcmp(buf, "cpu4: governor schedutil, min 1200000 kHz, max 2400000 kHz, no epp") == 0);
}

/* The `cpus =` key: the list syntax and what it refuses (cpuset.c), and that the
 * configuration rejects a bad list with a message naming the key. */
static void test_cpu_lists(void) {
        static const char *const bad[] = {
                "", " ", "3-1", "1,,2", "a", "1-", "-1", ",1", "1,", "0-3:2/4", "1024", "0-1024", "1 2", "0x1",
        };
        static const struct {
                const char *text, *cpus;
        } good[] = {
                { "0", "0" }, { "0-3,6", "0-3,6" }, { " 7 ", "7" }, { "1,0", "0-1" }, { "0-1023", "0-1023" },
                { "2-2", "2" }, { "0-3\n", "0-3" },
        };
        CpuSet s;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                s = set_of("5");
                if (cpuset_parse(bad[i], &s) != -EINVAL || !set_eq(&s, "5")) {
                        fprintf(stderr, "cpulist/bad/'%s' accepted\n", bad[i]);
                        abort();
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                char buf[64];

                CHECK(cpuset_parse(good[i].text, &s) == 0);
                cpuset_format(&s, buf, sizeof buf);
                if (strcmp(buf, good[i].cpus) != 0) {
                        fprintf(stderr, "cpulist/good/'%s' -> '%s'\n", good[i].text, buf);
                        abort();
                }
        }

        /* config: [cpu] cpus = 3-1 is an error naming section and key */
        {
                Config c;
                char *error = NULL;

                CHECK(config_parse_string("[cpu]\npin = always\ncpus = 3-1\n", "test.conf", &c, &error) == -EINVAL);
                CHECK(error);
                if (!strstr(error, "cpu") || !strstr(error, "cpus")) {
                        fprintf(stderr, "cpulist/config: unclear error '%s'\n", error);
                        abort();
                }
                free(error);

                CHECK(config_parse_string("[cpu]\npin = always\ncpus = 0-3,6\n", "test.conf", &c, &error) == 0);
                CHECK(c.cpu.pin == CPU_PIN_ALWAYS && c.cpu.select == CPU_SELECT_LIST);
                CHECK(set_eq(&c.cpu.cpus, "0-3,6"));
                config_done(&c);

                CHECK(config_parse_string("[cpu]\ncpus = nvme-irq\n", "test.conf", &c, &error) == 0);
                CHECK(c.cpu.select == CPU_SELECT_NVME_IRQ);
                config_done(&c);
        }
}

int main(void) {
        test_attr_names();
        test_resolve_freq();
        test_plan();
        test_differs_and_order();
        test_select();
        test_irq();
        test_record_round_trip();
        test_record_refused();
        test_describe();
        test_cpu_lists();
        return check_exit_status();
}
