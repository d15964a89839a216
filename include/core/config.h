/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * /etc/nvme-apstd.conf (inih syntax), parsed into a Config. Pure: the grammar
 * is config.c, which section applies is config-resolve.c; reading the file is
 * config-file.h's (platform).
 *
 *   [apst]          policy, max_latency_us, stall_budget_pct, use_calibration,
 *                   primary_timeout_ms, secondary_timeout_ms, primary_latency_tol_us,
 *                   secondary_latency_tol_us, force
 *   [device NAME]   match_name, match_model, match_serial, match_pci, match_firmware (globs),
 *                   enable, and any [apst] key; the first section that matches wins
 *   [cpu]           pin, release_after_ms, governor, min_freq, max_freq,
 *                   energy_performance_preference, cpus
 *   [metrics]       path (a Prometheus text file for node_exporter; unset = off)
 *   [watch]         source (where the I/O watcher sees idle gaps: auto, bpf, stat)
 *   [holds]         enable (latency holds over D-Bus: yes, no)
 *
 * Situation sections refine [apst], [cpu] and [device NAME] for one power
 * situation (situation.h): [apst on-battery], [cpu on-ac],
 * [device NAME profile=power-saver]. A key set there overrides the same key
 * of the plain section while the situation holds; config_situate() computes
 * the effective Config. Precedence, lowest first: [apst], [apst POWER],
 * [apst profile=P], then [device NAME], [device NAME POWER],
 * [device NAME profile=P] (a device's own keys beat every [apst ...]; a
 * profile, the user's explicit choice, beats the power source).
 *
 * Errors are strict: an unknown section or key, a bad number, a value out of
 * range, a key given twice in one section: the whole file is rejected with a
 * message naming file, section and key, so a reload keeps the running
 * configuration.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apst.h"
#include "cpuset.h"
#include "situation.h"

/* The largest max_latency_us (and latency tolerance) accepted: 10 s, far above any PSD's
 * enlat + exlat (at most a few 100 ms). Also the largest latency a hold may ask for. */
#define CONFIG_LATENCY_US_MAX 10000000u

/* Bits of DeviceSection.set: which [apst] keys the section gives itself. */
typedef enum ApstKeyBit {
        APST_KEY_POLICY = 1u << 0,
        APST_KEY_MAX_LATENCY = 1u << 1,
        APST_KEY_PRIMARY_TIMEOUT = 1u << 2,
        APST_KEY_SECONDARY_TIMEOUT = 1u << 3,
        APST_KEY_PRIMARY_TOL = 1u << 4,
        APST_KEY_SECONDARY_TOL = 1u << 5,
        APST_KEY_FORCE = 1u << 6,
        APST_KEY_STALL_BUDGET = 1u << 7,
        APST_KEY_USE_CALIBRATION = 1u << 8,
        APST_KEY_EXIT_LATENCY = 1u << 9,    /* [device NAME] only */
} ApstKeyBit;

/* Bits of ConfigOverlay.cpu_set: which [cpu] keys a situation section gives. */
typedef enum CpuKeyBit {
        CPU_KEY_PIN = 1u << 0,
        CPU_KEY_RELEASE_AFTER = 1u << 1,
        CPU_KEY_GOVERNOR = 1u << 2,
        CPU_KEY_MIN_FREQ = 1u << 3,
        CPU_KEY_MAX_FREQ = 1u << 4,
        CPU_KEY_EPP = 1u << 5,
        CPU_KEY_CPUS = 1u << 6,
} CpuKeyBit;

typedef struct DeviceSection {
        char *name;                 /* the NAME of [device NAME] */
        char *match_name;           /* glob on the controller name (nvme0) or NULL */
        char *match_model;          /* glob on the trimmed model or NULL */
        char *match_serial;         /* glob on the trimmed serial or NULL */
        char *match_pci;            /* glob on "vvvv:dddd" (lower-case hex) or NULL */
        char *match_firmware;       /* glob on the trimmed firmware revision or NULL */
        bool enable;                /* default true; false = leave the device alone */
        unsigned set;               /* ApstKeyBit mask */
        ApstParams apst;            /* only the fields in @set are meaningful */
        unsigned opened_in;         /* parsing only: 1 + the index of the last file that opened it */
} DeviceSection;

typedef enum CpuPinMode {
        CPU_PIN_OFF,                /* never touch cpufreq (default) */
        CPU_PIN_ALWAYS,             /* pinned while the daemon runs */
        CPU_PIN_BUSY,               /* pinned while any watched drive has I/O */
        _CPU_PIN_MAX,
        _CPU_PIN_INVALID = -EINVAL,
} CpuPinMode;

/* "off", "always", "busy"; NULL for anything else. */
const char *cpu_pin_mode_to_string(CpuPinMode m);
/* The reverse; _CPU_PIN_INVALID for an unknown name. */
CpuPinMode cpu_pin_mode_from_string(const char *s);

typedef enum FreqKind {
        FREQ_UNSET,                 /* leave as found */
        FREQ_KHZ,                   /* value in kHz */
        FREQ_HW_MIN,                /* "min": cpuinfo_min_freq */
        FREQ_HW_MAX,                /* "max": cpuinfo_max_freq */
        FREQ_PERCENT,               /* value 0..100 of the hardware range, min + (max-min)*p/100 */
        _FREQ_KIND_MAX,
        _FREQ_KIND_INVALID = -EINVAL,
} FreqKind;

typedef struct FreqSpec {
        FreqKind kind;
        uint32_t value;
} FreqSpec;

typedef enum CpuSelect {
        CPU_SELECT_ALL,             /* default */
        CPU_SELECT_NVME_IRQ,        /* CPUs servicing the controllers' interrupt vectors */
        CPU_SELECT_LIST,            /* Config.cpu.cpus */
        _CPU_SELECT_MAX,
        _CPU_SELECT_INVALID = -EINVAL,
} CpuSelect;

typedef struct CpuConfig {
        CpuPinMode pin;             /* default CPU_PIN_OFF */
        uint32_t release_after_ms;  /* busy mode: release after this much idleness; default 2000 */
        char *governor;             /* NULL = leave as found */
        FreqSpec min_freq;          /* default FREQ_UNSET */
        FreqSpec max_freq;          /* default FREQ_UNSET */
        char *epp;                  /* energy_performance_preference; NULL = leave as found */
        CpuSelect select;           /* default CPU_SELECT_ALL */
        CpuSet cpus;                /* when select == CPU_SELECT_LIST */
} CpuConfig;

/* Longest [metrics] path accepted (PATH_MAX less room for the temporary file's suffix). */
#define METRICS_PATH_MAX 4000u

typedef struct MetricsConfig {
        char *path;                 /* absolute, ends in ".prom"; NULL = no metrics file (default) */
} MetricsConfig;

/* [daemon] unresponsive_after_sec: an admin command outstanding this long marks its controller
 * unresponsive (nothing more is sent to it until the command returns or a reset shows it back).
 * 10 s: a healthy drive answers in well under a millisecond, one busy with a firmware-internal task
 * in a few seconds; nvme_core's own admin_timeout, after which the kernel resets it, is 60 s. */
#define UNRESPONSIVE_AFTER_SEC_DEFAULT 10u
#define UNRESPONSIVE_AFTER_SEC_MAX 3600u

typedef struct DaemonConfig {
        uint32_t unresponsive_after_sec;  /* 1..UNRESPONSIVE_AFTER_SEC_MAX; default 10 */
} DaemonConfig;

/* [watch] source: how the daemon sees a watched controller's I/O (doc/watch.md). */
typedef enum WatchSourceMode {
        WATCH_SOURCE_AUTO,          /* the eBPF program where it loads, else the sysfs sampler (default) */
        WATCH_SOURCE_BPF,           /* the eBPF program; where it cannot load, the sampler, with a warning */
        WATCH_SOURCE_STAT,          /* the sampler of /sys/block/<disk>/stat only */
        _WATCH_SOURCE_MAX,
        _WATCH_SOURCE_INVALID = -EINVAL,
} WatchSourceMode;

const char *watch_source_mode_to_string(WatchSourceMode m);
WatchSourceMode watch_source_mode_from_string(const char *s);

typedef struct WatchConfig {
        WatchSourceMode source;     /* default WATCH_SOURCE_AUTO */
} WatchConfig;

/* [holds]: latency holds taken over D-Bus (doc/dbus-api.md "Holds"). */
typedef struct HoldsConfig {
        bool enable;                /* default true; false: HoldLatency refused, holds in force end */
} HoldsConfig;

typedef enum OverlayTarget {
        OVERLAY_APST,               /* [apst WHEN] */
        OVERLAY_CPU,                /* [cpu WHEN] */
        OVERLAY_DEVICE,             /* [device NAME WHEN] */
        _OVERLAY_TARGET_MAX,
        _OVERLAY_TARGET_INVALID = -EINVAL,
} OverlayTarget;

/* The WHEN of a situation section: a power source or a power-profiles-daemon profile. */
typedef struct ConfigWhen {
        PowerSource source;         /* on-ac / on-battery; _POWER_SOURCE_INVALID for a profile */
        char profile[16];           /* profile=NAME: "power-saver", "balanced", "performance"; else "" */
} ConfigWhen;

/* Longest profile name accepted in profile=NAME ("power-saver" is the longest power-profiles-daemon has). */
#define CONFIG_PROFILE_MAX 15u

/* One situation section: keys that override those of the plain section while WHEN holds. */
typedef struct ConfigOverlay {
        OverlayTarget target;
        ConfigWhen when;
        size_t device;              /* OVERLAY_DEVICE: index in Config.devices of the [device NAME] it refines */
        DeviceSection dev;          /* [apst]/[device] keys: dev.set, dev.apst; dev.enable if enable_set.
                                     * No name or match_ keys (they stay those of the plain section). */
        bool enable_set;
        unsigned cpu_set;           /* CpuKeyBit mask of the keys in @cpu */
        CpuConfig cpu;              /* [cpu WHEN]: only the fields in @cpu_set are meaningful */
        unsigned line;              /* of the section header, for messages */
        unsigned file;              /* 1 + the index in the sources of the file that last opened it */
        unsigned min_freq_line, max_freq_line;
        unsigned min_freq_file, max_freq_file;  /* index in the sources of the file of those lines */
} ConfigOverlay;

/* Where a key's value in force came from: what `nvme-apstd config` shows. */
typedef struct ConfigOrigin {
        char *section;              /* "apst", "device ssd on-battery": the words of the header, one blank apart */
        char *key;
        char *value;                /* as written; match_serial's is "(not shown)" */
        unsigned file;              /* index in Config.files */
        unsigned line;
} ConfigOrigin;

typedef struct Config {
        char *path;                 /* file it came from, for messages ("<string>" when parsed from memory) */
        ApstParams apst;            /* [apst] */
        DeviceSection *devices;     /* [device NAME] sections in file order */
        size_t n_devices;
        CpuConfig cpu;              /* [cpu] */
        MetricsConfig metrics;      /* [metrics] */
        DaemonConfig daemon;        /* [daemon]: also what the verbs wait for a command */
        WatchConfig watch;          /* [watch] */
        HoldsConfig holds;          /* [holds] */
        ConfigOverlay *overlays;    /* situation sections in file order; none in a config_situate() result */
        size_t n_overlays;
        char **files;               /* the files read, in reading order (main file first); none in a copy */
        size_t n_files;
        ConfigOrigin *origins;      /* each key in force, in the order first set; none in a copy */
        size_t n_origins;
} Config;

/* One file's text for config_parse_sources(). */
typedef struct ConfigSource {
        const char *path;           /* for messages and Config.files */
        const char *text;           /* NUL-terminated; NULL is taken as "" */
} ConfigSource;

/* At most this many errors are reported for one configuration (a binary file would give thousands). */
#define CONFIG_ERRORS_MAX 100u

/* What a [device] section matches against. Strings are trimmed; NULL matches only a missing match_ key. */
typedef struct DeviceIdent {
        const char *name;           /* "nvme0" */
        const char *model;
        const char *serial;
        const char *firmware;
        uint16_t pci_vendor, pci_device;   /* 0:0 = unknown (then match_pci never matches) */
} DeviceIdent;

/* Set every field to its default (the kernel's APST defaults, CPU pinning off). */
void config_init(Config *c);
/* Free what config_parse_string() allocated and reset to the defaults; NULL or a second call is fine. */
void config_done(Config *c);

/* A deep copy of @c, which must have no situation sections (a config_situate() result). */
int config_copy(const Config *c, Config *ret);
/* The name of @c's [device NAME] section called @name, as @c holds it (DevicePlan.section points
 * into its Config: a plan moved to another Config is re-pointed with this); NULL if none. */
const char *config_section_name(const Config *c, const char *name);

/**
 * config_parse_string() - parse configuration text
 * @text: the file contents (NUL-terminated); NULL is taken as ""
 * @filename: used in messages and Config.path only; NULL = "<string>"
 * @ret: initialised and filled in on success (any old contents are not freed);
 *       untouched on failure
 * @ret_error: may be NULL; on failure, a malloc'd one-line message (caller
 *       frees), or NULL if even that could not be allocated. Untouched on success.
 *
 * Pure: no I/O, no logging. Every error is reported (up to CONFIG_ERRORS_MAX),
 * one message a line, joined by '\n' in the order of the file. Messages:
 *   "FILE:LINE: [section] key = value: reason"   a bad key or value
 *   "FILE:LINE: [section]: reason"                a bad or incomplete section
 *   "FILE:LINE: text: reason"                     a line that is neither
 *   "FILE: reason"                                out of memory
 * Control characters and backslashes in quoted text appear as \xNN; the
 * value of match_serial is shown as "(not shown)".
 *
 * Return: 0, or -EINVAL (bad content) / -ENOMEM.
 */
int config_parse_string(const char *text, const char *filename, Config *ret, char **ret_error);

/**
 * config_parse_sources() - the main file and its drop-ins, as one configuration
 * @src: in reading order (config_dropins_order()); @n at least 1
 *
 * As config_parse_string() on each text in turn, into one Config: a key set
 * in a later file replaces the earlier value; [apst], [cpu], [metrics],
 * [daemon], [watch], [device NAME] and situation sections may appear again in
 * a later file and continue the earlier one (in one file, a section given
 * twice is still an error). Errors of every file are reported.
 */
int config_parse_sources(const ConfigSource *src, size_t n, Config *ret, char **ret_error);

/* Power-source sections apply in pass 0, profile sections in pass 1, so a profile wins
 * (config.c's min_freq <= max_freq check and config-resolve.c's overlays use it). */
bool config_overlay_applies(const ConfigOverlay *o, const Situation *s, unsigned pass);

/* The [apst] keys of @from named in @set (ApstKeyBit) replace those of @a (config-resolve.c's overlays). */
void config_apst_overlay(ApstParams *a, unsigned set, const ApstParams *from);

/**
 * config_situate() - the configuration in effect in one situation; pure
 * @c: as parsed (with its situation sections)
 * @s: the situation; a profile the file has no section for (or "") matches none
 * @ret: a deep copy of @c with the matching situation sections applied and no
 *       overlays left; free with config_done(). Written only on success.
 *
 * Power-source sections apply first, then profile sections, so a profile
 * wins where both set a key; each [device NAME WHEN] refines its [device NAME].
 * Return: 0 or -ENOMEM.
 */
int config_situate(const Config *c, const Situation *s, Config *ret);

/**
 * config_resolve() - the parameters for one controller
 * @dev: what to match; a NULL string never matches a match_ key given for it
 * @ret: [apst] overlaid with the first matching [device] section's keys (may be NULL)
 * @ret_section: the matching section's name (points into @c), or NULL when none
 *       matched (may be NULL)
 *
 * Return: true if the daemon should manage the device, false for enable = no.
 */
bool config_resolve(const Config *c, const DeviceIdent *dev, ApstParams *ret, const char **ret_section);
