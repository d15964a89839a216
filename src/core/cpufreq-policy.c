/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU frequency policy planning and the recorded-state file (see cpufreq-policy.h).
 * Pure: no I/O, no logging; cpupin.c acts and logs.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpufreq-policy.h"
#include "macro.h"
#include "record-format.h"
#include "string-table.h"
#include "util.h"

static const char *const cpufreq_attr_table[_CPUFREQ_ATTR_MAX] = {
        [CPUFREQ_ATTR_GOVERNOR] = "scaling_governor",
        [CPUFREQ_ATTR_MIN] = "scaling_min_freq",
        [CPUFREQ_ATTR_MAX] = "scaling_max_freq",
        [CPUFREQ_ATTR_EPP] = "energy_performance_preference",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(cpufreq_attr, CpufreqAttr);

int cpufreq_irq_affinity_add(CpuSet *acc, const char *effective, const char *fallback) {
        CpuSet s;

        /* An effective list can be empty (interrupt shut down): then the mask is all we know. */
        if (effective && cpuset_parse(effective, &s) >= 0 && !cpuset_is_empty(&s)) {
                cpuset_or(acc, &s);
                return 0;
        }
        if (fallback && cpuset_parse(fallback, &s) >= 0 && !cpuset_is_empty(&s)) {
                cpuset_or(acc, &s);
                return 0;
        }
        return -EINVAL;
}

void cpufreq_select_cpus(const CpuConfig *cfg, const CpuSet *online, const CpuSet *nvme_irq_cpus,
                         CpuSet *ret, CpuSet *ret_missing) {
        CpuSet want = {}, sel, missing;

        switch (cfg->select) {
        case CPU_SELECT_ALL:
                want = *online;
                break;
        case CPU_SELECT_NVME_IRQ:
                if (nvme_irq_cpus)
                        want = *nvme_irq_cpus;
                break;
        case CPU_SELECT_LIST:
                want = cfg->cpus;
                break;
        case _CPU_SELECT_MAX:
        case _CPU_SELECT_INVALID:
                break;
        }

        sel = want;
        cpuset_and(&sel, online);
        /* missing = want & ~online */
        for (size_t i = 0; i < ELEMENTSOF(missing.bits); i++)
                missing.bits[i] = want.bits[i] & ~online->bits[i];

        *ret = sel;
        if (ret_missing)
                *ret_missing = missing;
}

int cpufreq_resolve_freq(const FreqSpec *spec, uint32_t hw_min, uint32_t hw_max, uint32_t *ret) {
        uint64_t v;

        switch (spec->kind) {
        case FREQ_UNSET:
                return 0;
        case FREQ_KHZ:
                v = spec->value;
                break;
        case FREQ_HW_MIN:
                v = hw_min;
                break;
        case FREQ_HW_MAX:
                v = hw_max;
                break;
        case FREQ_PERCENT:
                if (spec->value > 100)
                        return -EINVAL;
                /* Rounded down: never above what the percentage says. 64 bits: (max-min)*100 fits. */
                v = hw_min + (uint64_t) (hw_max - hw_min) * spec->value / 100;
                break;
        case _FREQ_KIND_MAX:
        case _FREQ_KIND_INVALID:
        default:
                return -EINVAL;
        }

        /* Without sane hardware limits "min", "max" and percentages mean nothing. */
        if (hw_min == 0 || hw_max < hw_min)
                return -EINVAL;
        v = MAX(v, hw_min);
        v = MIN(v, hw_max);
        *ret = (uint32_t) v;
        return 1;
}

bool cpufreq_settings_equal(const CpufreqSettings *a, const CpufreqSettings *b) {
        return a->cpu == b->cpu && memcmp(&a->cpus, &b->cpus, sizeof a->cpus) == 0 &&
               strcmp(a->governor, b->governor) == 0 && a->min_khz == b->min_khz && a->max_khz == b->max_khz &&
               strcmp(a->epp, b->epp) == 0;
}

void cpufreq_settings_from_state(const CpufreqPolicyState *state, CpufreqSettings *ret) {
        CpufreqSettings s = {
                .cpu = state->cpu,
                .cpus = state->cpus,
                .min_khz = state->min_khz,
                .max_khz = state->max_khz,
        };

        /* strnlen + memcpy: only the string, so settings compare and print the same however the
         * state's buffers were filled. */
        memcpy(s.governor, state->governor, strnlen(state->governor, sizeof s.governor - 1));
        if (state->has_epp)
                memcpy(s.epp, state->epp, strnlen(state->epp, sizeof s.epp - 1));
        *ret = s;
}

/* Is @word one of the blank-separated words of @list? */
static bool word_in_list(const char *list, const char *word) {
        size_t n = strlen(word);
        const char *p = list;

        if (n == 0)
                return false;
        for (;;) {
                size_t k;

                p += strspn(p, " \t\n");
                if (*p == '\0')
                        return false;
                k = strcspn(p, " \t\n");
                if (k == n && strncmp(p, word, n) == 0)
                        return true;
                p += k;
        }
}

/* Names we can write to sysfs, put in the record file and print: no blanks, no '=', printable. */
static bool name_is_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n >= CPUFREQ_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] <= ' ' || s[i] > '~' || s[i] == '=')
                        return false;
        return true;
}

_printf_(3, 4)
static int plan_error(char *error, size_t error_size, const char *format, ...) {
        va_list ap;

        if (error && error_size > 0) {
                va_start(ap, format);
                (void) vsnprintf(error, error_size, format, ap);
                va_end(ap);
        }
        return -EINVAL;
}

/* A configured min_freq/max_freq (@key) against the hardware's limits; *@khz unchanged when unset. */
static int plan_limit(const FreqSpec *f, const char *key, const CpufreqPolicyState *state, uint32_t *khz,
                      char *error, size_t error_size) {
        uint32_t v;
        int r;

        r = cpufreq_resolve_freq(f, state->hw_min_khz, state->hw_max_khz, &v);
        if (r < 0)
                return plan_error(error, error_size,
                                  "%s cannot be resolved against cpuinfo_min_freq %" PRIu32
                                  " kHz and cpuinfo_max_freq %" PRIu32 " kHz",
                                  key, state->hw_min_khz, state->hw_max_khz);
        if (r > 0)
                *khz = v;
        return 0;
}

int cpufreq_plan_policy(const CpuConfig *cfg, const CpufreqPolicyState *state, const CpufreqSettings *saved,
                        CpufreqSettings *ret, char *error, size_t error_size) {
        CpufreqSettings want = *saved;
        uint32_t khz;
        int r;

        /* The policy's CPUs are as read now; the values start from the record. */
        want.cpu = state->cpu;
        want.cpus = state->cpus;

        if (cfg->governor) {
                if (!name_is_valid(cfg->governor) || !word_in_list(state->available_governors, cfg->governor))
                        return plan_error(error, error_size,
                                          "governor '%s' is not in scaling_available_governors (%s)",
                                          cfg->governor, state->available_governors);
                strcpy(want.governor, cfg->governor);
        }

        if (cfg->epp && state->has_epp) {
                /* intel_pstate also takes a raw 0..255, which it lists nowhere: let the kernel judge those. */
                bool numeric = safe_atou32_n(cfg->epp, strlen(cfg->epp), &khz) >= 0 && khz <= 255;

                if (!name_is_valid(cfg->epp) ||
                    (!numeric && state->available_epp[0] != '\0' && !word_in_list(state->available_epp, cfg->epp)))
                        return plan_error(error, error_size,
                                          "energy_performance_preference '%s' is not in "
                                          "energy_performance_available_preferences (%s)",
                                          cfg->epp, state->available_epp);
                strcpy(want.epp, cfg->epp);
        } else if (!state->has_epp)
                want.epp[0] = '\0';

        r = plan_limit(&cfg->min_freq, "min_freq", state, &want.min_khz, error, error_size);
        if (r < 0)
                return r;
        r = plan_limit(&cfg->max_freq, "max_freq", state, &want.max_khz, error, error_size);
        if (r < 0)
                return r;

        /* The kernel would quietly clamp min to max; say so instead of pinning something else. */
        if (want.min_khz > want.max_khz)
                return plan_error(error, error_size,
                                  "min_freq %" PRIu32 " kHz is above max_freq %" PRIu32 " kHz%s",
                                  want.min_khz, want.max_khz,
                                  cfg->max_freq.kind == FREQ_UNSET ? " (as found; set max_freq too)" : "");

        *ret = want;
        return 0;
}

unsigned cpufreq_config_attrs(const CpuConfig *cfg, const CpufreqPolicyState *state) {
        unsigned m = 0;

        if (cfg->governor)
                m |= 1u << CPUFREQ_ATTR_GOVERNOR;
        if (cfg->min_freq.kind != FREQ_UNSET)
                m |= 1u << CPUFREQ_ATTR_MIN;
        if (cfg->max_freq.kind != FREQ_UNSET)
                m |= 1u << CPUFREQ_ATTR_MAX;
        if (cfg->epp && state->has_epp)
                m |= 1u << CPUFREQ_ATTR_EPP;
        return m;
}

bool cpufreq_attr_differs(const CpufreqSettings *cur, const CpufreqSettings *want, CpufreqAttr a) {
        switch (a) {
        case CPUFREQ_ATTR_GOVERNOR:
                return want->governor[0] != '\0' && strcmp(cur->governor, want->governor) != 0;
        case CPUFREQ_ATTR_MIN:
                return want->min_khz != 0 && cur->min_khz != want->min_khz;
        case CPUFREQ_ATTR_MAX:
                return want->max_khz != 0 && cur->max_khz != want->max_khz;
        case CPUFREQ_ATTR_EPP:
                return want->epp[0] != '\0' && strcmp(cur->epp, want->epp) != 0;
        case _CPUFREQ_ATTR_MAX:
        case _CPUFREQ_ATTR_INVALID:
                break;
        }
        return false;
}

void cpufreq_write_order(const CpufreqSettings *cur, const CpufreqSettings *want,
                         CpufreqAttr ret[_CPUFREQ_ATTR_MAX]) {
        bool max_first = want->min_khz != 0 && want->min_khz > cur->max_khz;

        ret[0] = CPUFREQ_ATTR_GOVERNOR;
        ret[1] = CPUFREQ_ATTR_EPP;
        ret[2] = max_first ? CPUFREQ_ATTR_MAX : CPUFREQ_ATTR_MIN;
        ret[3] = max_first ? CPUFREQ_ATTR_MIN : CPUFREQ_ATTR_MAX;
}

void cpufreq_attr_value(const CpufreqSettings *s, CpufreqAttr a, char *buf, size_t n) {
        switch (a) {
        case CPUFREQ_ATTR_GOVERNOR:
                (void) snprintf(buf, n, "%s", s->governor);
                return;
        case CPUFREQ_ATTR_MIN:
                (void) snprintf(buf, n, "%" PRIu32, s->min_khz);
                return;
        case CPUFREQ_ATTR_MAX:
                (void) snprintf(buf, n, "%" PRIu32, s->max_khz);
                return;
        case CPUFREQ_ATTR_EPP:
                (void) snprintf(buf, n, "%s", s->epp);
                return;
        case _CPUFREQ_ATTR_MAX:
        case _CPUFREQ_ATTR_INVALID:
                break;
        }
        if (n > 0)
                buf[0] = '\0';
}

static const char *freq_note(const FreqSpec *spec, char *buf, size_t n) {
        switch (spec->kind) {
        case FREQ_UNSET:
                return " (as found)";
        case FREQ_KHZ:
                return "";
        case FREQ_HW_MIN:
                return " (min)";
        case FREQ_HW_MAX:
                return " (max)";
        case FREQ_PERCENT:
                (void) snprintf(buf, n, " (%" PRIu32 "%%)", spec->value);
                return buf;
        case _FREQ_KIND_MAX:
        case _FREQ_KIND_INVALID:
                break;
        }
        return "";
}

void cpufreq_describe(const CpuConfig *cfg, const CpufreqSettings *s, char *buf, size_t n) {
        char cpus[256], min_note[16], max_note[16];

        cpuset_format(&s->cpus, cpus, sizeof cpus);
        (void) snprintf(buf, n, "cpu%s: governor %s%s, min %" PRIu32 " kHz%s, max %" PRIu32 " kHz%s, %s%s%s",
                        cpus, s->governor, cfg && !cfg->governor ? " (as found)" : "",
                        s->min_khz, cfg ? freq_note(&cfg->min_freq, min_note, sizeof min_note) : "",
                        s->max_khz, cfg ? freq_note(&cfg->max_freq, max_note, sizeof max_note) : "",
                        s->epp[0] ? "epp " : "no epp", s->epp,
                        s->epp[0] && cfg && !cfg->epp ? " (as found)" : "");
}

int cpufreq_record_format(const CpufreqSettings *s, size_t n, char **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;

        for (size_t i = 0; i < n; i++)
                if (!name_is_valid(s[i].governor) || (s[i].epp[0] && !name_is_valid(s[i].epp)) ||
                    s[i].min_khz == 0 || s[i].max_khz == 0 || cpuset_is_empty(&s[i].cpus))
                        return -EINVAL;

        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        fputs(CPUFREQ_RECORD_HEADER, f);
        for (size_t i = 0; i < n; i++) {
                char cpus[CPUSET_MAX * 5];   /* worst case "0,2,4,..." */

                cpuset_format(&s[i].cpus, cpus, sizeof cpus);
                fprintf(f, "policy cpu=%u cpus=%s governor=%s min=%" PRIu32 " max=%" PRIu32 " epp=%s\n",
                        s[i].cpu, cpus, s[i].governor, s[i].min_khz, s[i].max_khz,
                        s[i].epp[0] ? s[i].epp : "-");
        }
        if (ferror(f) || fclose(f) != 0)
                return -ENOMEM;

        *ret = TAKE_PTR(text);
        return 0;
}

static int copy_name(char *dst, const char *src, size_t len) {
        if (len == 0 || len >= CPUFREQ_NAME_MAX)
                return -EINVAL;
        memcpy(dst, src, len);
        dst[len] = '\0';
        return name_is_valid(dst) ? 0 : -EINVAL;
}

/* One "policy ..." line (without its newline) into @ret. */
static int parse_policy_line(const char *line, size_t len, CpufreqSettings *ret) {
        enum { K_CPU = 1 << 0, K_CPUS = 1 << 1, K_GOV = 1 << 2, K_MIN = 1 << 3, K_MAX = 1 << 4, K_EPP = 1 << 5 };
        CpufreqSettings s = {};
        const char *p = line, *end = line + len;
        unsigned seen = 0;

        if (len < 7 || strncmp(p, "policy ", 7) != 0)
                return -EINVAL;
        p += 7;

        while (p < end) {
                const char *tok = p, *eq, *val;
                size_t tlen, klen, vlen;
                unsigned bit;
                uint32_t u;
                int r;

                while (p < end && *p != ' ')
                        p++;
                tlen = (size_t) (p - tok);
                if (p < end)
                        p++;            /* exactly one blank between tokens */
                eq = memchr(tok, '=', tlen);
                if (!eq)
                        return -EINVAL;
                klen = (size_t) (eq - tok);
                val = eq + 1;
                vlen = tlen - klen - 1;

#define KEY(k) (klen == strlen(k) && strncmp(tok, k, klen) == 0)
                if (KEY("cpu")) {
                        bit = K_CPU;
                        r = safe_atou32_n(val, vlen, &u);
                        if (r < 0 || u >= CPUSET_MAX)
                                return -EINVAL;
                        s.cpu = u;
                } else if (KEY("cpus")) {
                        char buf[CPUSET_MAX * 5];

                        bit = K_CPUS;
                        if (vlen == 0 || vlen >= sizeof buf)
                                return -EINVAL;
                        memcpy(buf, val, vlen);
                        buf[vlen] = '\0';
                        if (cpuset_parse(buf, &s.cpus) < 0)
                                return -EINVAL;
                } else if (KEY("governor")) {
                        bit = K_GOV;
                        if (copy_name(s.governor, val, vlen) < 0)
                                return -EINVAL;
                } else if (KEY("min") || KEY("max")) {
                        bit = KEY("min") ? K_MIN : K_MAX;
                        r = safe_atou32_n(val, vlen, &u);
                        if (r < 0 || u == 0)
                                return -EINVAL;
                        if (bit == K_MIN)
                                s.min_khz = u;
                        else
                                s.max_khz = u;
                } else if (KEY("epp")) {
                        bit = K_EPP;
                        if (!(vlen == 1 && val[0] == '-') && copy_name(s.epp, val, vlen) < 0)
                                return -EINVAL;
                } else
                        return -EINVAL;
#undef KEY
                if (seen & bit)
                        return -EINVAL;
                seen |= bit;
        }

        if (seen != (K_CPU | K_CPUS | K_GOV | K_MIN | K_MAX | K_EPP) || !cpuset_has(&s.cpus, s.cpu))
                return -EINVAL;
        *ret = s;
        return 0;
}

int cpufreq_record_parse(const char *text, CpufreqSettings **ret, size_t *ret_n) {
        _cleanup_free_ CpufreqSettings *v = NULL;
        size_t n = 0;
        const char *p;

        if (record_parse_header(text, "cpufreq", 1, &p) < 0)
                return -EINVAL;

        for (; *p != '\0';) {
                const char *nl = strchr(p, '\n');
                CpufreqSettings *nv;
                int r;

                /* Every line ends in a newline: a cut-off file is not a record. */
                if (!nl)
                        return -EINVAL;
                nv = reallocarray(v, n + 1, sizeof *v);
                if (!nv)
                        return -ENOMEM;
                v = nv;
                r = parse_policy_line(p, (size_t) (nl - p), &v[n]);
                if (r < 0)
                        return r;
                /* Policies are disjoint; two lines for one would restore it twice, in some order: refuse. */
                for (size_t i = 0; i < n; i++) {
                        CpuSet both = v[i].cpus;

                        cpuset_and(&both, &v[n].cpus);
                        if (v[i].cpu == v[n].cpu || !cpuset_is_empty(&both))
                                return -EINVAL;
                }
                n++;
                p = nl + 1;
        }

        *ret = n > 0 ? TAKE_PTR(v) : NULL;
        *ret_n = n;
        return 0;
}
