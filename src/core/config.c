/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nvme-apstd.conf parsing (see config.h and nvme-apstd.conf(5)).
 *
 * Keys are rows of one table, as in systemd-oomd's parse_config(): name, the
 * sections that take it, a parser, where the value goes and its bounds.
 *
 * inih does the splitting into sections and key = value pairs, but we feed it
 * through ini_parse_stream() with our own line reader, for three reasons:
 *  - the distro build calls the handler without a line number; the reader
 *    knows which line inih is looking at, so every message carries one;
 *  - inih cuts lines longer than its buffer and parses the rest as a new
 *    line (a long comment could turn into a key); the reader refuses them;
 *  - inih drops sections without keys and merges repeated ones; the reader
 *    sees every "[section]" line, so empty, unknown and repeated sections are
 *    errors too, and the reader stops inih at the first error.
 * An indented line is refused: inih (INI_ALLOW_MULTILINE) would take it as a
 * continuation of the previous value.
 *
 * Strict where a daemon might warn and ignore: by design any
 * unknown key or bad value reject the whole file, which is safe because a
 * reload that fails keeps the running configuration, and a typo in a
 * latency budget should not silently fall back to the default.
 *
 * Pure: no I/O (config-file.c reads the file), no logging, no globals. Every error
 * path frees what it built; the first error wins and ends the parse.
 */

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "macro.h"
#include "string-table.h"
#include "util.h"

/* Bounds of the numbers, documented in nvme-apstd.conf(5). */
#define LATENCY_US_MAX CONFIG_LATENCY_US_MAX   /* config.h says why */
#define RELEASE_AFTER_MS_MAX 3600000u /* 1 h: longer would mean "pin = always" */
#define FREQ_KHZ_MAX 10000000u        /* 10 GHz in kHz: above any CPU; the daemon clamps to cpuinfo_* */
#define GOVERNOR_MAX 15u              /* CPUFREQ_NAME_LEN - 1 in the kernel */
#define EPP_MAX 31u                   /* longest kernel name is "balance_performance" (19) */
/*
 * inih copies section names into a 50-byte buffer (MAX_SECTION) and cuts them
 * silently; refuse anything that could come close, so the handler's section is
 * the one we saw.
 */
#define SECTION_NAME_MAX 48u
/* A bound for fuzzers and typos alike; duplicate detection is quadratic. */
#define DEVICE_SECTIONS_MAX 256u
/* Situation sections: each plain section times (2 power sources + the profiles) fits easily. */
#define OVERLAYS_MAX 1024u
/* The profiles power-profiles-daemon has (0.12 to 0.30); a typo would otherwise never be active. */
static const char *const config_profiles[] = { "power-saver", "balanced", "performance" };
/* Room for "FILE line N" in a message naming a line of another file. */
#define PATH_MAX_MSG 4200u
/* Values quoted in messages are cut to this many bytes before escaping. */
#define QUOTE_MAX 120u

typedef enum SectionKind {
        SECTION_NONE,
        SECTION_APST,
        SECTION_DEVICE,
        SECTION_CPU,
        SECTION_METRICS,
        SECTION_DAEMON,
        SECTION_WATCH,
        SECTION_HOLDS,
        _SECTION_KIND_MAX,
        _SECTION_KIND_INVALID = -EINVAL,
} SectionKind;

#define SEC(k) (1u << (k))

typedef struct ConfigKey ConfigKey;
/* Parse @v into @dest. On error write a reason into @reason and return negative errno. */
typedef int (*ParseFn)(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n);

struct ConfigKey {
        const char *name;
        unsigned sections;      /* SEC() mask */
        ParseFn parse;
        size_t offset;          /* in ApstParams, DeviceSection, CpuConfig or MetricsConfig, by section */
        uint32_t min, max;
        unsigned apst_bit;      /* ApstKeyBit for [apst] keys in [device] sections */
        size_t apst_size;       /* and the size of their field in ApstParams */
        unsigned cpu_bit;       /* CpuKeyBit for [cpu] keys in situation sections */
};

/* One error: its message, and where, so inih's own report of a line is not given twice. */
typedef struct ParseError {
        char *message;
        unsigned file, line;
} ParseError;

typedef struct Parser {
        const ConfigSource *src;
        size_t n_src;
        unsigned file;          /* index in @src of the file being read */
        const char *filename;
        const char *text;       /* whole input */
        const char *pos;        /* next line for the reader */
        unsigned lineno;        /* line last handed to inih */

        Config config;
        SectionKind section;
        bool skip;              /* the current section's header was refused: its keys are not looked at */
        size_t section_errors;  /* n_errors when the current section began */
        size_t device;          /* the current [device NAME] is devices[device - 1]; 0 = none */
        char section_key[SECTION_NAME_MAX + 1];   /* its words one blank apart, for Config.origins */
        size_t overlay;         /* the current section is overlays[overlay - 1]; 0 = a plain section */
        char section_name[SECTION_NAME_MAX + 1];  /* as written between the brackets */
        unsigned section_line;
        bool seen_apst, seen_cpu, seen_metrics, seen_daemon, seen_watch, seen_holds;
        unsigned *key_line;     /* per row: line where the current section set it, 0 = not yet */
        unsigned min_freq_line, max_freq_line;
        unsigned min_freq_file, max_freq_file;

        int error;              /* first error, negative errno; 0 = none so far; -ENOMEM ends the parse */
        ParseError *errors;
        size_t n_errors, n_dropped;
} Parser;

/*
 * A time span: a plain number in the key's own unit (@unit µs, named @uname: what the key's name ends
 * in), or a number with us, ms or s (parse_time_span_usec()), which must come out whole in that unit.
 */
static int parse_span(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n, uint64_t unit,
                      const char *uname) {
        uint64_t usec, x;
        int r;

        r = parse_time_span_usec(v, &usec);
        if (r >= 0 && v[strspn(v, "0123456789")] == '\0') {      /* plain: today's meaning */
                if (usec > UINT64_MAX / unit)
                        r = -ERANGE;
                else
                        usec *= unit;
        }
        if (r == -ERANGE) {
                snprintf(reason, n, "number too large (range %" PRIu32 "..%" PRIu32 " %s)", k->min, k->max, uname);
                return -EINVAL;
        }
        if (r < 0) {
                snprintf(reason, n, "not a time span (a number, optionally followed by us, ms or s: 1500, 1.5ms)");
                return -EINVAL;
        }
        if (usec % unit != 0) {
                snprintf(reason, n, "not a whole number of %s", uname);
                return -EINVAL;
        }
        x = usec / unit;
        if (x < k->min || x > k->max) {
                snprintf(reason, n, "out of range (%" PRIu32 "..%" PRIu32 " %s)", k->min, k->max, uname);
                return -EINVAL;
        }
        *(uint32_t *) dest = (uint32_t) x;
        return 0;
}

/* Keys in µs, ms and s: a plain number is in the unit the key's name ends in. */
static int parse_usec(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        return parse_span(k, v, dest, reason, n, 1, "us");
}

static int parse_msec(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        return parse_span(k, v, dest, reason, n, 1000, "ms");
}

static int parse_sec(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        return parse_span(k, v, dest, reason, n, 1000000, "s");
}

/* "ps3:1500 ps4:32ms": measured exit latencies per power state, blank-separated, units allowed. */
static int parse_exlat(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        ApstExlat x = {};
        const char *s = v;

        while (*s) {
                char word[64], sub[200];
                size_t len = strcspn(s, " \t");
                unsigned ps = 0;
                char *colon, *end = NULL;
                uint32_t us;

                if (len >= sizeof(word) || strncmp(s, "ps", 2) != 0 || !(colon = memchr(s, ':', len)))
                        goto bad;
                memcpy(word, s, len);
                word[len] = '\0';
                colon = word + (colon - s);
                *colon = '\0';
                if (!(word[2] >= '0' && word[2] <= '9'))
                        goto bad;
                ps = (unsigned) strtoul(word + 2, &end, 10);
                if (*end || ps >= IDCTRL_MAX_PS) {
                        snprintf(reason, n, "%s: no such power state (ps0..ps%u)", word, IDCTRL_MAX_PS - 1);
                        return -EINVAL;
                }
                if (x.mask & (1u << ps)) {
                        snprintf(reason, n, "ps%u given twice", ps);
                        return -EINVAL;
                }
                if (parse_span(k, colon + 1, &us, sub, sizeof(sub), 1, "us") < 0) {
                        snprintf(reason, n, "ps%u: %s", ps, sub);
                        return -EINVAL;
                }
                x.mask |= 1u << ps;
                x.us[ps] = us;
                s += len;
                s += strspn(s, " \t");
        }
        if (x.mask == 0)
                goto bad;
        *(ApstExlat *) dest = x;
        return 0;
bad:
        snprintf(reason, n, "expected psN:LATENCY pairs separated by blanks (\"ps3:1500 ps4:32ms\")");
        return -EINVAL;
}

/* A percentage with at most two decimals ("2", "0.5", "0.25"), stored in hundredths of a
 * percent; k->min and k->max are in those hundredths. */
static int parse_percent(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        uint64_t whole = 0, frac = 0;
        unsigned digits = 0, frac_digits = 0;
        const char *p = v;

        for (; *p >= '0' && *p <= '9'; p++, digits++)
                if (whole <= 100000)
                        whole = whole * 10 + (uint64_t) (*p - '0');
        if (*p == '.') {
                for (p++; *p >= '0' && *p <= '9' && frac_digits < 2; p++, frac_digits++)
                        frac = frac * 10 + (uint64_t) (*p - '0');
                while (*p == '0')      /* "0.500" is 0.5 */
                        p++;
        }
        if (*p != 0 || digits == 0 || (p[-1] == '.')) {
                snprintf(reason, n, "not a percentage (a decimal number such as 2 or 0.5, at most two decimals)");
                return -EINVAL;
        }
        if (frac_digits == 1)
                frac *= 10;
        uint64_t x = whole * 100 + frac;
        if (x < k->min || x > k->max) {
                snprintf(reason, n, "out of range (%" PRIu32 ".%02" PRIu32 "..%" PRIu32 ".%02" PRIu32 ")", k->min / 100,
                         k->min % 100, k->max / 100, k->max % 100);
                return -EINVAL;
        }
        *(uint32_t *) dest = (uint32_t) x;
        return 0;
}

static int parse_bool(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        int b;

        b = parse_boolean(v);
        if (b < 0) {
                snprintf(reason, n, "not a boolean (yes/no, true/false, on/off, 1/0)");
                return -EINVAL;
        }
        *(bool *) dest = b;
        return 0;
}

static int parse_policy(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        ApstPolicyKind p = apst_policy_from_string(v);

        if (p < 0) {
                snprintf(reason, n, "unknown policy (budget, kernel or adaptive)");
                return -EINVAL;
        }
        *(ApstPolicyKind *) dest = p;
        return 0;
}

static int set_string(void *dest, const char *v, char *reason, size_t n) {
        char *s;

        s = strdup(v);
        if (!s) {
                snprintf(reason, n, "out of memory");
                return -ENOMEM;
        }
        free(*(char **) dest);
        *(char **) dest = s;
        return 0;
}

static int parse_glob(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        return set_string(dest, v, reason, n);
}

static bool is_hex_lower(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * One side of "vvvv:dddd": it must be able to match 4 hex digits. Atoms are a
 * hex digit, '?' or a bracket expression of hex digits and '-' ('!' first);
 * without '*' there must be exactly 4 of them, with '*' at most 4.
 */
static bool pci_half_ok(const char *s, size_t len) {
        unsigned atoms = 0;
        bool star = false;

        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '*')
                        star = true;
                else if (s[i] == '?' || is_hex_lower(s[i]))
                        atoms++;
                else if (s[i] == '[') {
                        size_t j = i + 1;

                        if (j < len && s[j] == '!')
                                j++;
                        if (j >= len || s[j] == ']')
                                return false;
                        for (; j < len && s[j] != ']'; j++)
                                if (!is_hex_lower(s[j]) && s[j] != '-')
                                        return false;
                        if (j >= len)
                                return false;
                        atoms++;
                        i = j;
                } else
                        return false;
        }
        return star ? atoms <= 4 : atoms == 4;
}

static int parse_pci_glob(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        /* Longer than any sensible glob of two 4-digit ids ("[0-9a-f]" is 8 bytes a digit). */
        char lower[96];
        const char *colon;
        size_t len = strlen(v);

        if (len < sizeof(lower)) {
                /* DeviceIdent formats the ids in lower case; take "8086:F1A5" as meant. */
                memcpy(lower, v, len + 1);
                for (char *c = lower; *c; c++)
                        if (*c >= 'A' && *c <= 'F')
                                *c = (char) (*c - 'A' + 'a');
                colon = strchr(lower, ':');
                if (colon && !strchr(colon + 1, ':') && pci_half_ok(lower, (size_t) (colon - lower)) &&
                    pci_half_ok(colon + 1, strlen(colon + 1)))
                        return set_string(dest, lower, reason, n);
        }

        snprintf(reason, n, "not a PCI id glob: expected vendor:device as 4 hex digits each "
                 "(\"8086:f1a5\"), globs allowed (\"2646:*\", \"126f:[12]?[06][12]\")");
        return -EINVAL;
}

static int parse_word(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        size_t len = strlen(v);

        for (const char *p = v; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')) {
                        snprintf(reason, n, "not a name: only a-z, 0-9, '_' and '-' are allowed");
                        return -EINVAL;
                }
        if (len < k->min || len > k->max) {
                snprintf(reason, n, "name too long (at most %" PRIu32 " characters)", k->max);
                return -EINVAL;
        }
        return set_string(dest, v, reason, n);
}

static const char *const cpu_pin_mode_table[_CPU_PIN_MAX] = {
        [CPU_PIN_OFF] = "off",
        [CPU_PIN_ALWAYS] = "always",
        [CPU_PIN_BUSY] = "busy",
};

DEFINE_STRING_TABLE_LOOKUP(cpu_pin_mode, CpuPinMode);

static int parse_pin(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        CpuPinMode m = cpu_pin_mode_from_string(v);

        if (m < 0) {
                snprintf(reason, n, "unknown mode (off, always or busy)");
                return -EINVAL;
        }
        *(CpuPinMode *) dest = m;
        return 0;
}

static const char *const watch_source_mode_table[_WATCH_SOURCE_MAX] = {
        [WATCH_SOURCE_AUTO] = "auto",
        [WATCH_SOURCE_BPF] = "bpf",
        [WATCH_SOURCE_STAT] = "stat",
};

DEFINE_STRING_TABLE_LOOKUP(watch_source_mode, WatchSourceMode);

static int parse_watch_source(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        WatchSourceMode m = watch_source_mode_from_string(v);

        if (m < 0) {
                snprintf(reason, n, "unknown source (auto, bpf or stat)");
                return -EINVAL;
        }
        *(WatchSourceMode *) dest = m;
        return 0;
}

static int parse_freq(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        size_t len = strlen(v);
        uint32_t x;
        int r;

        if (strcmp(v, "min") == 0) {
                *(FreqSpec *) dest = (FreqSpec) { .kind = FREQ_HW_MIN };
                return 0;
        }
        if (strcmp(v, "max") == 0) {
                *(FreqSpec *) dest = (FreqSpec) { .kind = FREQ_HW_MAX };
                return 0;
        }
        if (len > 0 && v[len - 1] == '%') {
                char digits[8];

                if (len - 1 >= sizeof(digits)) {
                        snprintf(reason, n, "percentage out of range (0%%..100%%)");
                        return -EINVAL;
                }
                memcpy(digits, v, len - 1);
                digits[len - 1] = '\0';
                r = safe_atou32(digits, &x);
                if (r == -EINVAL) {
                        snprintf(reason, n, "not a percentage (\"N%%\", N a decimal number)");
                        return -EINVAL;
                }
                if (r < 0 || x > 100) {
                        snprintf(reason, n, "percentage out of range (0%%..100%%)");
                        return -EINVAL;
                }
                *(FreqSpec *) dest = (FreqSpec) { .kind = FREQ_PERCENT, .value = x };
                return 0;
        }

        r = safe_atou32(v, &x);
        if (r == -EINVAL) {
                snprintf(reason, n, "not a frequency (kHz as a decimal number, \"N%%\", \"min\" or \"max\")");
                return -EINVAL;
        }
        if (r < 0 || x < 1 || x > FREQ_KHZ_MAX) {
                snprintf(reason, n, "frequency out of range (1..%u kHz)", FREQ_KHZ_MAX);
                return -EINVAL;
        }
        *(FreqSpec *) dest = (FreqSpec) { .kind = FREQ_KHZ, .value = x };
        return 0;
}

static int parse_cpus(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        CpuConfig *cpu = dest;
        CpuSet set;

        if (strcmp(v, "all") == 0) {
                cpu->select = CPU_SELECT_ALL;
                return 0;
        }
        if (strcmp(v, "nvme-irq") == 0) {
                cpu->select = CPU_SELECT_NVME_IRQ;
                return 0;
        }
        if (cpuset_parse(v, &set) < 0) {
                snprintf(reason, n, "not a CPU list: expected all, nvme-irq or a list such as 0-3,6 "
                         "of CPUs below %u", CPUSET_MAX);
                return -EINVAL;
        }
        cpu->select = CPU_SELECT_LIST;
        cpu->cpus = set;
        return 0;
}

/*
 * [metrics] path: where node_exporter's textfile collector looks. It reads only
 * "*.prom" files in its directory, so any other name would be written and never
 * scraped; a relative path would depend on the daemon's working directory.
 */
static int parse_metrics_path(const ConfigKey *k, const char *v, void *dest, char *reason, size_t n) {
        size_t len = strlen(v);
        const char *base = strrchr(v, '/');

        if (v[0] != '/') {
                snprintf(reason, n, "not an absolute path");
                return -EINVAL;
        }
        if (len > k->max) {
                snprintf(reason, n, "path too long (at most %" PRIu32 " characters)", k->max);
                return -EINVAL;
        }
        if (strstr(v, "/../") || strstr(v, "/./") || strstr(v, "//")) {
                snprintf(reason, n, "not a plain path (no \"//\", \"/./\" or \"/../\")");
                return -EINVAL;
        }
        if (!base || strlen(base + 1) <= strlen(".prom") || strcmp(v + len - strlen(".prom"), ".prom") != 0) {
                snprintf(reason, n, "the file name must end in \".prom\" (node_exporter's textfile collector "
                         "reads only those)");
                return -EINVAL;
        }
        return set_string(dest, v, reason, n);
}

#define APST_KEY(n, fn, field, lo, hi, bit)                                                  \
        { n, SEC(SECTION_APST) | SEC(SECTION_DEVICE), fn, offsetof(ApstParams, field), lo, hi, bit, \
          sizeof(((ApstParams *) NULL)->field) }
#define DEVICE_KEY(n, fn, field) { n, SEC(SECTION_DEVICE), fn, offsetof(DeviceSection, field), 0, 0, 0, 0 }
#define CPU_KEY(n, fn, field, lo, hi, bit) \
        { n, SEC(SECTION_CPU), fn, offsetof(CpuConfig, field), lo, hi, 0, 0, bit }

static const ConfigKey config_keys[] = {
        APST_KEY("policy", parse_policy, policy, 0, 0, APST_KEY_POLICY),
        APST_KEY("max_latency_us", parse_usec, max_latency_us, 0, LATENCY_US_MAX, APST_KEY_MAX_LATENCY),
        APST_KEY("primary_timeout_ms", parse_msec, primary_timeout_ms, 0, APST_ITPT_MAX, APST_KEY_PRIMARY_TIMEOUT),
        APST_KEY("secondary_timeout_ms", parse_msec, secondary_timeout_ms, 0, APST_ITPT_MAX,
                 APST_KEY_SECONDARY_TIMEOUT),
        APST_KEY("primary_latency_tol_us", parse_usec, primary_latency_tol_us, 0, LATENCY_US_MAX,
                 APST_KEY_PRIMARY_TOL),
        APST_KEY("secondary_latency_tol_us", parse_usec, secondary_latency_tol_us, 0, LATENCY_US_MAX,
                 APST_KEY_SECONDARY_TOL),
        APST_KEY("force", parse_bool, force, 0, 0, APST_KEY_FORCE),
        APST_KEY("stall_budget_pct", parse_percent, stall_budget_pct_x100, 0, APST_STALL_BUDGET_MAX_PCT_X100,
                 APST_KEY_STALL_BUDGET),
        APST_KEY("use_calibration", parse_bool, use_calibration, 0, 0, APST_KEY_USE_CALIBRATION),
        /* measured, so at least 1 µs; the bound of every other latency */
        { "exit_latency_us", SEC(SECTION_DEVICE), parse_exlat, offsetof(ApstParams, exlat), 1, LATENCY_US_MAX,
          APST_KEY_EXIT_LATENCY, sizeof(ApstExlat) },

        DEVICE_KEY("match_name", parse_glob, match_name),
        DEVICE_KEY("match_model", parse_glob, match_model),
        DEVICE_KEY("match_serial", parse_glob, match_serial),
        DEVICE_KEY("match_pci", parse_pci_glob, match_pci),
        DEVICE_KEY("match_firmware", parse_glob, match_firmware),
        DEVICE_KEY("enable", parse_bool, enable),

        CPU_KEY("pin", parse_pin, pin, 0, 0, CPU_KEY_PIN),
        CPU_KEY("release_after_ms", parse_msec, release_after_ms, 0, RELEASE_AFTER_MS_MAX, CPU_KEY_RELEASE_AFTER),
        CPU_KEY("governor", parse_word, governor, 1, GOVERNOR_MAX, CPU_KEY_GOVERNOR),
        CPU_KEY("min_freq", parse_freq, min_freq, 0, 0, CPU_KEY_MIN_FREQ),
        CPU_KEY("max_freq", parse_freq, max_freq, 0, 0, CPU_KEY_MAX_FREQ),
        CPU_KEY("energy_performance_preference", parse_word, epp, 1, EPP_MAX, CPU_KEY_EPP),
        { "cpus", SEC(SECTION_CPU), parse_cpus, 0, 0, 0, 0, 0, CPU_KEY_CPUS },     /* sets both select and cpus */

        { "path", SEC(SECTION_METRICS), parse_metrics_path, offsetof(MetricsConfig, path), 0, METRICS_PATH_MAX, 0 },

        { "unresponsive_after_sec", SEC(SECTION_DAEMON), parse_sec, offsetof(DaemonConfig, unresponsive_after_sec),
          1, UNRESPONSIVE_AFTER_SEC_MAX, 0 },

        { "source", SEC(SECTION_WATCH), parse_watch_source, offsetof(WatchConfig, source), 0, 0, 0 },

        { "enable", SEC(SECTION_HOLDS), parse_bool, offsetof(HoldsConfig, enable), 0, 0, 0 },
};

/* The key @name of @section; else the first key of that name (for the "it belongs in" message). Two
 * sections may have a key of the same name ([device] and [holds] both have enable). */
static const ConfigKey *key_find(const char *name, SectionKind section) {
        const ConfigKey *first = NULL;

        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++) {
                if (strcmp(config_keys[i].name, name) != 0)
                        continue;
                if (config_keys[i].sections & SEC(section))
                        return &config_keys[i];
                if (!first)
                        first = &config_keys[i];
        }
        return first;
}

void config_init(Config *c) {
        *c = (Config) {
                .apst = APST_PARAMS_DEFAULT,
                .cpu = {
                        .pin = CPU_PIN_OFF,
                        .release_after_ms = 2000,
                        .min_freq = { .kind = FREQ_UNSET },
                        .max_freq = { .kind = FREQ_UNSET },
                        .select = CPU_SELECT_ALL,
                },
                .daemon = {
                        .unresponsive_after_sec = UNRESPONSIVE_AFTER_SEC_DEFAULT,
                },
                .holds = {
                        .enable = true,
                },
        };
}

static void device_section_done(DeviceSection *d) {
        free(d->name);
        free(d->match_name);
        free(d->match_model);
        free(d->match_serial);
        free(d->match_pci);
        free(d->match_firmware);
}

void config_done(Config *c) {
        if (!c)
                return;
        free(c->path);
        for (size_t i = 0; i < c->n_devices; i++)
                device_section_done(&c->devices[i]);
        free(c->devices);
        free(c->cpu.governor);
        free(c->cpu.epp);
        free(c->metrics.path);
        for (size_t i = 0; i < c->n_overlays; i++) {
                free(c->overlays[i].cpu.governor);
                free(c->overlays[i].cpu.epp);
        }
        free(c->overlays);
        for (size_t i = 0; i < c->n_files; i++)
                free(c->files[i]);
        free(c->files);
        for (size_t i = 0; i < c->n_origins; i++) {
                free(c->origins[i].section);
                free(c->origins[i].key);
                free(c->origins[i].value);
        }
        free(c->origins);
        /* Back to defaults, so a second config_done() or a reuse is harmless. */
        config_init(c);
}

/*
 * Copy at most QUOTE_MAX bytes of @s into @buf, control characters and
 * backslashes escaped as \xNN, so a message is one printable line whatever
 * the file holds.
 */
static void quote(const char *s, size_t len, char *buf, size_t n) {
        size_t o = 0;

        if (n == 0)
                return;
        for (size_t i = 0; i < len && i < QUOTE_MAX && o + 5 < n; i++) {
                unsigned char ch = (unsigned char) s[i];

                if (ch < 0x20 || ch == 0x7f || ch == '\\')
                        o += (size_t) snprintf(buf + o, n - o, "\\x%02x", ch);
                else
                        buf[o++] = (char) ch;
        }
        if (len > QUOTE_MAX && o + 4 < n) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o] = '\0';
}

#define QUOTE_BUF (QUOTE_MAX * 4 + 8)

static int fail_oom(Parser *p) {
        p->error = -ENOMEM;
        return p->error;
}

/* Record an error: "FILE:LINE: " + the formatted rest. p->error keeps the first. Returns @error. */
_printf_(4, 5) static int fail(Parser *p, unsigned line, int error, const char *fmt, ...) {
        _cleanup_free_ char *rest = NULL;
        ParseError *n;
        char *msg;
        va_list ap;
        int k;

        if (p->error == -ENOMEM)
                return p->error;
        if (p->error == 0)
                p->error = error;
        if (p->n_errors >= CONFIG_ERRORS_MAX) {
                p->n_dropped++;
                return error;
        }

        va_start(ap, fmt);
        k = vasprintf(&rest, fmt, ap);
        va_end(ap);
        if (k < 0) {
                rest = NULL;
                return fail_oom(p);
        }
        if (line > 0)
                k = asprintf(&msg, "%s:%u: %s", p->filename, line, rest);
        else
                k = asprintf(&msg, "%s: %s", p->filename, rest);
        if (k < 0)
                return fail_oom(p);
        n = reallocarray(p->errors, p->n_errors + 1, sizeof(ParseError));
        if (!n) {
                free(msg);
                return fail_oom(p);
        }
        p->errors = n;
        n[p->n_errors++] = (ParseError) { .message = msg, .file = p->file, .line = line };
        return error;
}

static bool error_on_line(const Parser *p, unsigned line) {
        for (size_t i = 0; i < p->n_errors; i++)
                if (p->errors[i].file == p->file && p->errors[i].line == line)
                        return true;
        return false;
}

_printf_(5, 6) static int fail_key(Parser *p, const char *key, const char *value, int error,
                                   const char *fmt, ...) {
        char q[QUOTE_BUF], qk[QUOTE_BUF], reason[256];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);

        /* Serial numbers stay out of logs (doc/architecture.md#conventions), even as globs. */
        if (strcmp(key, "match_serial") == 0)
                snprintf(q, sizeof(q), "(not shown)");
        else
                quote(value, strlen(value), q, sizeof(q));
        quote(key, strlen(key), qk, sizeof(qk));

        if (p->section == SECTION_NONE)
                return fail(p, p->lineno, error, "%s = %s: %s", qk, q, reason);
        return fail(p, p->lineno, error, "[%s] %s = %s: %s", p->section_name, qk, q, reason);
}

static DeviceSection *current_device(Parser *p) {
        return p->device > 0 ? &p->config.devices[p->device - 1] : NULL;
}

static ConfigOverlay *current_overlay(Parser *p) {
        return p->overlay > 0 ? &p->config.overlays[p->overlay - 1] : NULL;
}

static bool word_is(const char *w, size_t len, const char *lit) {
        return strlen(lit) == len && memcmp(w, lit, len) == 0;
}

static bool device_has_match(const DeviceSection *d) {
        return d->match_name || d->match_model || d->match_serial || d->match_pci || d->match_firmware;
}

/* Checks that need the whole section. */
static int section_end(Parser *p) {
        /* A section with an error already is not judged as a whole (its match_ key may be the error). */
        if (!p->skip && p->n_errors == p->section_errors && p->section == SECTION_DEVICE && !current_overlay(p) &&
            !device_has_match(current_device(p)))
                return fail(p, p->section_line, -EINVAL,
                            "[%s]: no match_ key (match_name, match_model, match_serial, match_pci or "
                            "match_firmware), so it would apply to every controller; put settings for all "
                            "controllers in [apst]", p->section_name);
        return 0;
}

static bool is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.' || c == ':';
}

/* [device NAME]: @dn..@e is NAME (trimmed); @q the section as quoted in messages. */
static int device_section_begin(Parser *p, const char *dn, const char *e, const char *q) {
        DeviceSection *d, *n;

        while (dn < e && (*dn == ' ' || *dn == '\t'))
                dn++;
        if (dn == e)
                return fail(p, p->lineno, -EINVAL, "[%s]: a device section needs a name: [device NAME]",
                            q);
        for (const char *c = dn; c < e; c++)
                if (!is_name_char(*c))
                        return fail(p, p->lineno, -EINVAL,
                                    "[%s]: bad section name: NAME may use only A-Z, a-z, 0-9, '_', '-', "
                                    "'.' and ':'", q);
        for (size_t i = 0; i < p->config.n_devices; i++)
                if (word_is(dn, (size_t) (e - dn), p->config.devices[i].name)) {
                        /* In another file, the same section goes on (systemd's drop-ins merge so). */
                        if (p->config.devices[i].opened_in == p->file + 1)
                                return fail(p, p->lineno, -EINVAL, "[%s]: device section name used twice", q);
                        p->config.devices[i].opened_in = p->file + 1;
                        p->device = i + 1;
                        p->section = SECTION_DEVICE;
                        return 0;
                }
        if (p->config.n_devices >= DEVICE_SECTIONS_MAX)
                return fail(p, p->lineno, -EINVAL, "[%s]: too many device sections (at most %u)", q,
                            DEVICE_SECTIONS_MAX);

        n = reallocarray(p->config.devices, p->config.n_devices + 1, sizeof(DeviceSection));
        if (!n)
                return fail(p, 0, -ENOMEM, "out of memory");
        p->config.devices = n;
        d = &n[p->config.n_devices];
        *d = (DeviceSection) {
                .enable = true,
                .apst = APST_PARAMS_DEFAULT,
                .opened_in = p->file + 1,
        };
        d->name = strndup(dn, (size_t) (e - dn));
        if (!d->name)
                return fail(p, 0, -ENOMEM, "out of memory");
        p->config.n_devices++;
        p->device = p->config.n_devices;
        p->section = SECTION_DEVICE;
        return 0;
}

/* The WHEN of a situation section: on-ac, on-battery or profile=NAME. */
static int parse_when(Parser *p, const char *q, const char *w, size_t len, ConfigWhen *ret) {
        ConfigWhen x = { .source = _POWER_SOURCE_INVALID };
        const size_t plen = strlen("profile=");

        if (word_is(w, len, "on-ac"))
                x.source = POWER_SOURCE_AC;
        else if (word_is(w, len, "on-battery"))
                x.source = POWER_SOURCE_BATTERY;
        else if (len > plen && memcmp(w, "profile=", plen) == 0) {
                bool known = false;

                for (size_t i = 0; i < ELEMENTSOF(config_profiles); i++)
                        if (word_is(w + plen, len - plen, config_profiles[i]))
                                known = true;
                if (!known)
                        return fail(p, p->lineno, -EINVAL, "[%s]: unknown power profile (profile=power-saver, "
                                    "profile=balanced or profile=performance)", q);
                memcpy(x.profile, w + plen, len - plen);
                x.profile[len - plen] = '\0';
        } else
                return fail(p, p->lineno, -EINVAL, "[%s]: unknown situation (expected on-ac, on-battery or "
                            "profile=NAME after the section's name)", q);
        *ret = x;
        return 0;
}

static bool when_equal(const ConfigWhen *a, const ConfigWhen *b) {
        return a->source == b->source && strcmp(a->profile, b->profile) == 0;
}

/* A situation section: [apst WHEN], [cpu WHEN], [device NAME WHEN]. */
static int overlay_begin(Parser *p, const char *q, OverlayTarget target, size_t device, const char *w,
                         size_t len) {
        ConfigOverlay *n;
        ConfigWhen when = {};
        int r;

        r = parse_when(p, q, w, len, &when);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->config.n_overlays; i++) {
                const ConfigOverlay *o = &p->config.overlays[i];
                if (o->target == target && (target != OVERLAY_DEVICE || o->device == device) &&
                    when_equal(&o->when, &when)) {
                        if (o->file == p->file + 1)
                                return fail(p, p->lineno, -EINVAL, "[%s]: section given twice (first on line %u)",
                                            q, o->line);
                        p->config.overlays[i].file = p->file + 1;
                        p->config.overlays[i].line = p->lineno;
                        p->overlay = i + 1;
                        return 0;
                }
        }
        if (p->config.n_overlays >= OVERLAYS_MAX)
                return fail(p, p->lineno, -EINVAL, "[%s]: too many situation sections (at most %u)", q,
                            OVERLAYS_MAX);
        n = reallocarray(p->config.overlays, p->config.n_overlays + 1, sizeof(ConfigOverlay));
        if (!n)
                return fail(p, 0, -ENOMEM, "out of memory");
        p->config.overlays = n;
        n[p->config.n_overlays] = (ConfigOverlay) {
                .target = target,
                .when = when,
                .device = device,
                .dev = { .enable = true, .apst = APST_PARAMS_DEFAULT },
                .line = p->lineno,
                .file = p->file + 1,
        };
        p->config.n_overlays++;
        p->overlay = p->config.n_overlays;
        return 0;
}

/* A "[...]" line: @name is what stands between the brackets, @len bytes. */
/* [device NAME SITUATION]: refines the [device NAME] section above it. */
static int device_situation_begin(Parser *p, const char *q, const char *dn, size_t dl, const char *when,
                                  size_t when_len) {
        for (const char *c = dn; c < dn + dl; c++)
                if (!is_name_char(*c))
                        return fail(p, p->lineno, -EINVAL,
                                    "[%s]: bad section name: NAME may use only A-Z, a-z, 0-9, '_', '-', "
                                    "'.' and ':'", q);
        for (size_t i = 0; i < p->config.n_devices; i++)
                if (word_is(dn, dl, p->config.devices[i].name)) {
                        p->section = SECTION_DEVICE;
                        return overlay_begin(p, q, OVERLAY_DEVICE, i, when, when_len);
                }
        return fail(p, p->lineno, -EINVAL, "[%s]: no [device %.*s] section above it (a situation "
                    "section refines one that has the match_ keys)", q, (int) dl, dn);
}

/* Split a section name into at most @max blank-separated words. Return: how many. */
static size_t section_words(const char *name, size_t len, const char **w, size_t *wl, size_t max) {
        const char *s = name, *e = name + len;
        size_t nw = 0;

        while (s < e && nw < max) {
                while (s < e && (*s == ' ' || *s == '\t'))
                        s++;
                if (s == e)
                        break;
                w[nw] = s;
                while (s < e && *s != ' ' && *s != '\t')
                        s++;
                wl[nw] = (size_t) (s - w[nw]);
                nw++;
        }
        return nw;
}

/* [metrics], [daemon], [watch]: once each, and the same in every situation. */
static int plain_section_begin(Parser *p, const char *q, size_t nw, const char *kind, SectionKind section,
                               bool *seen) {
        if (nw > 1)
                return fail(p, p->lineno, -EINVAL, "[%s]: [%s] is the same in every situation", q, kind);
        if (*seen)
                return fail(p, p->lineno, -EINVAL, "[%s]: section given twice", q);
        *seen = true;
        p->section = section;
        return 0;
}

static int section_begin(Parser *p, const char *name, size_t len) {
        char q[QUOTE_BUF];
        const char *w[4];
        size_t wl[4], nw;

        p->section_errors = p->n_errors;
        quote(name, len, q, sizeof(q));
        if (len > SECTION_NAME_MAX)
                return fail(p, p->lineno, -EINVAL, "[%s]: section name too long (at most %u characters)",
                            q, SECTION_NAME_MAX);
        memcpy(p->section_name, name, len);
        p->section_name[len] = '\0';
        p->section_line = p->lineno;
        p->overlay = 0;
        for (size_t i = 0; i < ELEMENTSOF(config_keys); i++)
                p->key_line[i] = 0;

        /* Words: KIND, for a device its NAME, then an optional situation (WHEN). */
        nw = section_words(name, len, w, wl, ELEMENTSOF(w));
        p->section_key[0] = '\0';
        for (size_t i = 0; i < nw; i++)
                (void) snprintf(p->section_key + strlen(p->section_key), sizeof(p->section_key) -
                                strlen(p->section_key), "%s%.*s", i > 0 ? " " : "", (int) wl[i], w[i]);
        if (nw == 0)
                return fail(p, p->lineno, -EINVAL, "[%s]: unknown section (expected [apst], [cpu], [metrics], "
                            "[daemon], [watch], [holds] or [device NAME])", q);

        if (word_is(w[0], wl[0], "apst") || word_is(w[0], wl[0], "cpu")) {
                bool apst = w[0][0] == 'a';
                bool *seen = apst ? &p->seen_apst : &p->seen_cpu;

                p->section = apst ? SECTION_APST : SECTION_CPU;
                if (nw == 2)
                        return overlay_begin(p, q, apst ? OVERLAY_APST : OVERLAY_CPU, 0, w[1], wl[1]);
                if (nw > 2)
                        return fail(p, p->lineno, -EINVAL, "[%s]: expected [%s] or [%s SITUATION]", q,
                                    apst ? "apst" : "cpu", apst ? "apst" : "cpu");
                if (*seen)
                        return fail(p, p->lineno, -EINVAL, "[%s]: section given twice", q);
                *seen = true;
                return 0;
        }
        if (word_is(w[0], wl[0], "metrics"))
                return plain_section_begin(p, q, nw, "metrics", SECTION_METRICS, &p->seen_metrics);
        if (word_is(w[0], wl[0], "daemon"))
                return plain_section_begin(p, q, nw, "daemon", SECTION_DAEMON, &p->seen_daemon);
        if (word_is(w[0], wl[0], "watch"))
                return plain_section_begin(p, q, nw, "watch", SECTION_WATCH, &p->seen_watch);
        if (word_is(w[0], wl[0], "holds"))
                return plain_section_begin(p, q, nw, "holds", SECTION_HOLDS, &p->seen_holds);
        if (word_is(w[0], wl[0], "device")) {
                const char *dn = nw > 1 ? w[1] : NULL;
                size_t dl = nw > 1 ? wl[1] : 0;

                if (nw > 3)
                        return fail(p, p->lineno, -EINVAL, "[%s]: expected [device NAME] or [device NAME "
                                    "SITUATION]", q);
                if (nw < 3)
                        return device_section_begin(p, w[0] + 6, dn ? dn + dl : w[0] + 6, q);
                return device_situation_begin(p, q, dn, dl, w[2], wl[2]);
        }

        return fail(p, p->lineno, -EINVAL, "[%s]: unknown section (expected [apst], [cpu], [metrics], [daemon], "
                    "[watch], [holds] or [device NAME])", q);
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * A line that is not a header must be "key = value" (or "key: value"): inih finds '=' or ':' before
 * any inline comment (';' after a blank), and reports only the first line where it does not, so
 * every such line is said here.
 */
static int key_line_check(Parser *p, const char *t, const char *e) {
        char q[QUOTE_BUF];

        for (const char *c = t; c < e; c++) {
                if (*c == '=' || *c == ':')
                        return 0;
                if (*c == ';' && c > t && is_blank(c[-1]))
                        break;
        }
        quote(t, (size_t) (e - t), q, sizeof(q));
        return fail(p, p->lineno, -EINVAL, "%s: expected \"key = value\", \"[section]\" or a comment", q);
}

/*
 * Look at one raw line before inih does: section headers, indentation. The
 * rules for comments and "[...]" follow inih r55's ini_parse_stream().
 */
static int line_check(Parser *p, const char *line, size_t len) {
        const char *s = line, *e = line + len, *close;
        char q[QUOTE_BUF];
        int r;

        if (e > s && e[-1] == '\n')
                e--;
        while (e > s && is_blank(e[-1]))
                e--;
        if (p->lineno == 1 && e - s >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
                s += 3;         /* UTF-8 byte order mark, skipped by inih too */

        const char *t = s;
        while (t < e && is_blank(*t))
                t++;
        if (t == e || *t == ';' || *t == '#')
                return 0;       /* blank or comment */

        if (t > s) {
                quote(t, (size_t) (e - t), q, sizeof(q));
                return fail(p, p->lineno, -EINVAL,
                            "%s: indented line; inih would read it as the continuation of the previous "
                            "value; remove the leading blanks", q);
        }

        if (*t != '[')
                return key_line_check(p, t, e);

        (void) section_end(p);         /* an error there is the previous section's; this one goes on */
        /* A refused header: the section's keys are not looked at (each would be an error of its own). */
        p->skip = true;
        /* inih ends the name at ']' or at an inline comment (';' after a blank). */
        close = t + 1;
        while (close < e && *close != ']' && !(*close == ';' && is_blank(close[-1])))
                close++;
        quote(t, (size_t) (e - t), q, sizeof(q));
        if (close == e || *close != ']')
                return fail(p, p->lineno, -EINVAL, "%s: section header without ']'", q);

        /* Nothing but a comment after the ']'. */
        for (const char *a = close + 1; a < e; a++) {
                if (*a == ';' && (a == close + 1 || is_blank(a[-1])))
                        break;
                if (!is_blank(*a))
                        return fail(p, p->lineno, -EINVAL, "%s: text after the section header", q);
        }

        r = section_begin(p, t + 1, (size_t) (close - t - 1));
        p->skip = r < 0;
        return r;
}

/* fgets()-like reader for ini_parse_stream(): one line of p->text per call. */
static char *reader(char *str, int num, void *stream) {
        Parser *p = stream;
        const char *nl;
        size_t len;

        if (p->error == -ENOMEM || !*p->pos || num < 2)
                return NULL;    /* out of memory ends the parse; or end of text */

        nl = strchr(p->pos, '\n');
        len = nl ? (size_t) (nl - p->pos) + 1 : strlen(p->pos);
        p->lineno++;

        /* A refused line goes to inih as an empty one, so the parse goes on and finds the next error. */
        if (len > (size_t) num - 1) {
                (void) fail(p, p->lineno, -EINVAL, "line longer than %d characters", num < 3 ? 0 : num - 3);
                len = 0;
        } else if (line_check(p, p->pos, len) < 0)
                len = 0;
        if (len == 0) {
                p->pos += nl ? (size_t) (nl - p->pos) + 1 : strlen(p->pos);
                memcpy(str, "\n", 2);
                return str;
        }

        memcpy(str, p->pos, len);
        str[len] = '\0';
        p->pos += len;
        return str;
}

static bool has_hash_comment(const char *v) {
        for (const char *s = v; *s; s++)
                if (*s == '#' && s > v && is_blank(s[-1]))
                        return true;
        return false;
}

/* A value must be non-empty, without control characters or a '#' comment. false: refused (p->error set). */
static bool value_check(Parser *p, const char *name, const char *value) {
        if (!*value) {
                fail_key(p, name, value, -EINVAL, "empty value");
                return false;
        }
        for (const char *c = value; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f) {
                        fail_key(p, name, value, -EINVAL, "control character in the value");
                        return false;
                }
        if (has_hash_comment(value)) {
                fail_key(p, name, value, -EINVAL,
                         "'#' starts a comment only at the beginning of a line; use ';' after a value");
                return false;
        }
        return true;
}

/* Where key @k of the current section is stored (k->offset is relative to it), or NULL. */
static void *key_base(Parser *p, const ConfigKey *k) {
        ConfigOverlay *ov = current_overlay(p);
        DeviceSection *d = ov ? &ov->dev : current_device(p);

        switch (p->section) {
        case SECTION_APST:
                return ov ? &ov->dev.apst : &p->config.apst;
        case SECTION_DEVICE:
                return k->apst_bit ? (void *) &d->apst : (void *) d;
        case SECTION_CPU:
                return ov ? &ov->cpu : &p->config.cpu;
        case SECTION_METRICS:
                return &p->config.metrics;
        case SECTION_DAEMON:
                return &p->config.daemon;
        case SECTION_WATCH:
                return &p->config.watch;
        case SECTION_HOLDS:
                return &p->config.holds;
        case SECTION_NONE:
        case _SECTION_KIND_MAX:
        case _SECTION_KIND_INVALID:
                break;
        }
        return NULL;
}

/* Which key @name is, and whether it may stand here, once. Return: the key, or NULL (failed: said). */
static const ConfigKey *key_check(Parser *p, const char *section, const char *name, const char *value) {
        ConfigOverlay *ov = current_overlay(p);
        const ConfigKey *k;
        size_t idx;

        if (p->section == SECTION_NONE) {
                fail_key(p, name, value, -EINVAL,
                         "outside any section; put it under [apst], [cpu], [metrics], [daemon], [watch], [holds] "
                         "or [device NAME]");
                return NULL;
        }
        if (strcmp(section, p->section_name) != 0) {
                /* Cannot happen while line_check() follows inih; refuse rather than guess. */
                fail_key(p, name, value, -EINVAL, "section mismatch with the parser (internal error)");
                return NULL;
        }
        if (!*name) {
                fail_key(p, name, value, -EINVAL, "missing key name before '='");
                return NULL;
        }

        k = key_find(name, p->section);
        if (!k) {
                fail_key(p, name, value, -EINVAL, "unknown key");
                return NULL;
        }
        if (!(k->sections & SEC(p->section))) {
                fail_key(p, name, value, -EINVAL, "unknown key in this section (it belongs in %s)",
                         k->sections & SEC(SECTION_CPU) ? "[cpu]" :
                         k->sections & SEC(SECTION_METRICS) ? "[metrics]" :
                         k->sections & SEC(SECTION_DAEMON) ? "[daemon]" :
                         k->sections & SEC(SECTION_WATCH) ? "[watch]" :
                         k->sections & SEC(SECTION_HOLDS) ? "[holds]" :
                         k->sections & SEC(SECTION_APST) ? "[apst] or [device NAME]" : "[device NAME]");
                return NULL;
        }
        if (ov && ov->target == OVERLAY_DEVICE && !(k->sections & SEC(SECTION_APST)) &&
            strcmp(k->name, "enable") != 0) {
                fail_key(p, name, value, -EINVAL, "what a device section matches is the same in every "
                         "situation; put match_ keys in [device %s]", p->config.devices[ov->device].name);
                return NULL;
        }
        idx = (size_t) (k - config_keys);
        if (p->key_line[idx] > 0) {
                fail_key(p, name, value, -EINVAL, "key given twice in this section (first on line %u)",
                         p->key_line[idx]);
                return NULL;
        }
        p->key_line[idx] = p->lineno;
        return k;
}

/* A value was set: note which key of the section or situation it was, and where min/max_freq stand. */
static void key_set(Parser *p, const ConfigKey *k, const char *name) {
        ConfigOverlay *ov = current_overlay(p);

        if (ov) {
                if (p->section == SECTION_CPU)
                        ov->cpu_set |= k->cpu_bit;
                else if (k->sections & SEC(SECTION_APST))
                        ov->dev.set |= k->apst_bit;
                else
                        ov->enable_set = true;      /* enable: the only other key allowed here */
        } else if (p->section == SECTION_DEVICE)
                current_device(p)->set |= k->apst_bit;
        if (strcmp(name, "min_freq") == 0) {
                *(ov ? &ov->min_freq_line : &p->min_freq_line) = p->lineno;
                *(ov ? &ov->min_freq_file : &p->min_freq_file) = p->file;
        } else if (strcmp(name, "max_freq") == 0) {
                *(ov ? &ov->max_freq_line : &p->max_freq_line) = p->lineno;
                *(ov ? &ov->max_freq_file : &p->max_freq_file) = p->file;
        }
}

/* Config.origins: @name of the current section now comes from here (a later file's replaces). */
static int origin_record(Parser *p, const char *name, const char *value) {
        ConfigOrigin *o = NULL, *n;
        char *v;

        for (size_t i = 0; i < p->config.n_origins && !o; i++)
                if (strcmp(p->config.origins[i].section, p->section_key) == 0 &&
                    strcmp(p->config.origins[i].key, name) == 0)
                        o = &p->config.origins[i];
        v = strdup(value);
        if (!v)
                return fail_oom(p);
        if (!o) {
                n = reallocarray(p->config.origins, p->config.n_origins + 1, sizeof(ConfigOrigin));
                if (!n) {
                        free(v);
                        return fail_oom(p);
                }
                p->config.origins = n;
                o = &n[p->config.n_origins];
                *o = (ConfigOrigin) { .section = strdup(p->section_key), .key = strdup(name) };
                p->config.n_origins++;
                if (!o->section || !o->key) {
                        free(v);
                        return fail_oom(p);
                }
        }
        free(o->value);
        o->value = v;
        o->file = p->file;
        o->line = p->lineno;
        return 0;
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        Parser *p = user;
        const ConfigKey *k;
        void *base;
        char reason[256];
        int r;

        /* Errors are ours to report (1 = go on): inih's count of failed lines would give only the first. */
        if (p->error == -ENOMEM || p->skip)
                return 1;
        if (!name || !value)    /* INI_ALLOW_NO_VALUE / INI_CALL_HANDLER_ON_NEW_SECTION builds */
                return 1;

        k = key_check(p, section, name, value);
        if (!k || !value_check(p, name, value))
                return 1;
        base = key_base(p, k);
        if (!base) {
                fail_key(p, name, value, -EINVAL, "internal error: no section");
                return 1;
        }

        r = k->parse(k, value, (char *) base + k->offset, reason, sizeof(reason));
        if (r < 0) {
                fail_key(p, name, value, r, "%s", reason);
                return 1;
        }
        key_set(p, k, name);
        (void) origin_record(p, name, strcmp(name, "match_serial") == 0 ? "(not shown)" : value);
        return 1;
}

static void freq_format(const FreqSpec *f, char *buf, size_t n) {
        switch (f->kind) {
        case FREQ_KHZ:
                snprintf(buf, n, "%" PRIu32, f->value);
                return;
        case FREQ_PERCENT:
                snprintf(buf, n, "%" PRIu32 "%%", f->value);
                return;
        case FREQ_HW_MIN:
                snprintf(buf, n, "min");
                return;
        case FREQ_HW_MAX:
                snprintf(buf, n, "max");
                return;
        case FREQ_UNSET:
        case _FREQ_KIND_MAX:
        case _FREQ_KIND_INVALID:
                break;
        }
        snprintf(buf, n, "(unset)");
}

/* Position in the hardware range in percent when that is known without hardware: %, min, max. */
static bool freq_relative(const FreqSpec *f, uint32_t *ret) {
        switch (f->kind) {
        case FREQ_PERCENT:
                *ret = f->value;
                return true;
        case FREQ_HW_MIN:
                *ret = 0;
                return true;
        case FREQ_HW_MAX:
                *ret = 100;
                return true;
        case FREQ_UNSET:
        case FREQ_KHZ:
        case _FREQ_KIND_MAX:
        case _FREQ_KIND_INVALID:
                break;
        }
        return false;
}

static void when_to_string(const ConfigWhen *w, char *buf, size_t n) {
        if (w->profile[0])
                snprintf(buf, n, "profile=%s", w->profile);
        else
                snprintf(buf, n, "%s", w->source == POWER_SOURCE_BATTERY ? "on-battery" : "on-ac");
}

static bool when_matches(const ConfigWhen *w, const Situation *s) {
        if (w->profile[0])
                return strcmp(w->profile, s->profile) == 0;
        return w->source == s->power_source;
}

/* Power-source sections apply in pass 0, profile sections in pass 1, so a profile wins. */
bool config_overlay_applies(const ConfigOverlay *o, const Situation *s, unsigned pass) {
        return (pass == 0) == !o->when.profile[0] && when_matches(&o->when, s);
}

/* min_freq <= max_freq, where both are known without hardware, in the situation @s. */
static int validate_cpu_in(Parser *p, const Situation *s) {
        FreqSpec min = p->config.cpu.min_freq, max = p->config.cpu.max_freq;
        unsigned min_line = p->min_freq_line, max_line = p->max_freq_line;
        unsigned min_file = p->min_freq_file, max_file = p->max_freq_file;
        const ConfigOverlay *min_ov = NULL;
        bool situated = false, inverted = false;
        char lo[32], hi[32], sit[64], when[32], where[PATH_MAX_MSG];
        uint32_t a, b;

        for (unsigned pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < p->config.n_overlays; i++) {
                        const ConfigOverlay *o = &p->config.overlays[i];

                        if (o->target != OVERLAY_CPU || !config_overlay_applies(o, s, pass))
                                continue;
                        if (o->cpu_set & CPU_KEY_MIN_FREQ) {
                                min = o->cpu.min_freq;
                                min_line = o->min_freq_line;
                                min_file = o->min_freq_file;
                                min_ov = o;
                                situated = true;
                        }
                        if (o->cpu_set & CPU_KEY_MAX_FREQ) {
                                max = o->cpu.max_freq;
                                max_line = o->max_freq_line;
                                max_file = o->max_freq_file;
                                situated = true;
                        }
                }

        if (min.kind == FREQ_KHZ && max.kind == FREQ_KHZ)
                inverted = min.value > max.value;
        else if (freq_relative(&min, &a) && freq_relative(&max, &b))
                inverted = a > b;
        if (!inverted)
                return 0;

        freq_format(&min, lo, sizeof(lo));
        freq_format(&max, hi, sizeof(hi));
        /* The message is the file's that set min_freq; max_freq's line, with its file if another one. */
        p->file = min_file;
        p->filename = p->src[min_file].path ?: "<string>";
        if (max_file != min_file)
                snprintf(where, sizeof(where), "%s line %u", p->src[max_file].path ?: "<string>", max_line);
        else
                snprintf(where, sizeof(where), "line %u", max_line);
        if (!situated)
                return fail(p, min_line, -EINVAL, "[cpu] min_freq = %s: above max_freq = %s (%s)", lo, hi, where);
        situation_describe(s, sit, sizeof(sit));
        if (min_ov)
                when_to_string(&min_ov->when, when, sizeof(when));
        return fail(p, min_line, -EINVAL, "[cpu%s%s] min_freq = %s: above max_freq = %s (%s) %s", min_ov ? " " : "",
                    min_ov ? when : "", lo, hi, where, sit);
}

/* Cross-key checks that need no hardware, in every situation the file distinguishes. */
static int config_validate(Parser *p) {
        Situation s = { .power_source = POWER_SOURCE_AC };
        int r;

        for (int src = 0; src < _POWER_SOURCE_MAX; src++)
                for (size_t prof = 0; prof <= ELEMENTSOF(config_profiles); prof++) {
                        s.power_source = (PowerSource) src;
                        snprintf(s.profile, sizeof(s.profile), "%s", prof == 0 ? "" : config_profiles[prof - 1]);
                        r = validate_cpu_in(p, &s);
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Start and length of line @n (1-based) of @text, for syntax errors inih reports by number. */
static const char *line_at(const char *text, unsigned n, size_t *ret_len) {
        const char *s = text;

        for (unsigned i = 1; i < n && s; i++) {
                s = strchr(s, '\n');
                if (s)
                        s++;
        }
        if (!s) {
                *ret_len = 0;
                return "";
        }
        *ret_len = strcspn(s, "\n");
        return s;
}

/* One file into p->config: inih over our line reader, then the last section's checks. */
static void parse_one(Parser *p, unsigned file) {
        int r;

        p->file = file;
        p->filename = p->src[file].path ?: "<string>";
        p->text = p->pos = p->src[file].text ?: "";
        p->lineno = 0;
        p->section = SECTION_NONE;
        p->skip = false;
        p->device = p->overlay = 0;
        p->seen_apst = p->seen_cpu = p->seen_metrics = p->seen_daemon = p->seen_watch = p->seen_holds = false;

        r = ini_parse_stream(reader, p, handler, p);
        if (r == -2)
                (void) fail_oom(p);
        else if (r > 0 && !error_on_line(p, (unsigned) r)) {
                /* inih found a line it could not split that key_line_check() let through. */
                char q[QUOTE_BUF];
                const char *l;
                size_t len;

                l = line_at(p->text, (unsigned) r, &len);
                quote(l, len, q, sizeof(q));
                (void) fail(p, (unsigned) r, -EINVAL, "%s: expected \"key = value\", \"[section]\" or a comment",
                            q);
        } else if (r < 0 && r != -2)
                (void) fail(p, 0, -EIO, "parser failed (%d)", r);
        if (p->error != -ENOMEM)
                (void) section_end(p);
}

/* Every message, one a line, in the order found; NULL when out of memory. */
static char *errors_join(const Parser *p) {
        size_t len = 0, o = 0;
        char *m;

        for (size_t i = 0; i < p->n_errors; i++)
                len += strlen(p->errors[i].message) + 1;
        len += 64;      /* "... and N more errors" */
        m = malloc(len);
        if (!m)
                return NULL;
        m[0] = '\0';
        for (size_t i = 0; i < p->n_errors; i++)
                o += (size_t) snprintf(m + o, len - o, "%s%s", i > 0 ? "\n" : "", p->errors[i].message);
        if (p->n_dropped > 0)
                (void) snprintf(m + o, len - o, "%s... and %zu more error%s", o > 0 ? "\n" : "", p->n_dropped,
                                p->n_dropped == 1 ? "" : "s");
        if (p->error == -ENOMEM && p->n_errors == 0) {
                free(m);
                return NULL;
        }
        return m;
}

static void files_record(Parser *p) {
        p->config.files = calloc(p->n_src, sizeof(char *));
        if (!p->config.files) {
                (void) fail_oom(p);
                return;
        }
        p->config.n_files = p->n_src;
        for (size_t i = 0; i < p->n_src; i++) {
                p->config.files[i] = strdup(p->src[i].path ?: "<string>");
                if (!p->config.files[i])
                        (void) fail_oom(p);
        }
        p->config.path = strdup(p->src[0].path ?: "<string>");
        if (!p->config.path)
                (void) fail_oom(p);
}

int config_parse_sources(const ConfigSource *src, size_t n, Config *ret, char **ret_error) {
        unsigned key_line[ELEMENTSOF(config_keys)] = {};
        Parser p = {
                .src = src,
                .n_src = n,
                .key_line = key_line,
        };
        int r;

        if (n == 0)
                return -EINVAL;
        config_init(&p.config);
        for (unsigned i = 0; i < n && p.error != -ENOMEM; i++)
                parse_one(&p, i);
        if (p.error != -ENOMEM)
                (void) config_validate(&p);
        if (p.error == 0)
                files_record(&p);

        if (p.error < 0) {
                r = p.error;
                config_done(&p.config);
                if (ret_error)
                        *ret_error = errors_join(&p);     /* NULL when even that could not be allocated */
        } else {
                r = 0;
                *ret = p.config;
        }
        for (size_t i = 0; i < p.n_errors; i++)
                free(p.errors[i].message);
        free(p.errors);
        return r;
}

int config_parse_string(const char *text, const char *filename, Config *ret, char **ret_error) {
        const ConfigSource src = { .path = filename ?: "<string>", .text = text };

        return config_parse_sources(&src, 1, ret, ret_error);
}

void config_apst_overlay(ApstParams *a, unsigned set, const ApstParams *from) {
        for (size_t k = 0; k < ELEMENTSOF(config_keys); k++)
                if (config_keys[k].apst_bit & set)
                        memcpy((char *) a + config_keys[k].offset, (const char *) from + config_keys[k].offset,
                               config_keys[k].apst_size);
}
