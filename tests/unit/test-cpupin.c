/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for cpupin.c against an in-memory CpufreqOps that behaves like
 * intel_pstate where it matters: policies shared by CPUs, governors checked
 * against the available list, EPP refused with EBUSY under `performance`,
 * and `performance` forcing EPP to "performance". Every write is checked
 * against the record file on disk: it must already hold the policy's
 * original values (record before change, doc/testing.md#cpufreq-policies).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apstd-ids.h"
#include "check.h"
#include "cpufreq-policy.h"
#include "cpupin.h"
#include "log.h"
#include "macro.h"

#define MAX_POLICIES 8
#define MAX_REFUSALS 4

typedef struct Fake {
        CpufreqPolicyState pol[MAX_POLICIES];
        CpufreqPolicyState original[MAX_POLICIES];
        size_t n;
        int list_error;             /* list_cpus fails with this when non-zero */
        int read_error;             /* read_policy fails with this when non-zero */
        struct {
                unsigned cpu;       /* any CPU of the policy */
                CpufreqAttr attr;
                int error;
        } refuse[MAX_REFUSALS];
        size_t n_refuse;
        const char *record_path;    /* checked at every write */
        unsigned n_writes;
        unsigned n_reads;
} Fake;

static CpuSet set_of(const char *list) {
        CpuSet s = {};

        if (list[0])
                CHECK(cpuset_parse(list, &s) == 0);
        return s;
}

static void fake_add(Fake *f, unsigned cpu, const char *cpus, const char *driver) {
        CpufreqPolicyState *s = &f->pol[f->n];

        CHECK(f->n < MAX_POLICIES);
        *s = (CpufreqPolicyState) { .cpu = cpu, .cpus = set_of(cpus) };
        if (strcmp(driver, "intel_pstate") == 0) {
                strcpy(s->governor, "powersave");
                s->min_khz = s->hw_min_khz = 800000;
                s->max_khz = s->hw_max_khz = 3600000;
                strcpy(s->available_governors, "performance powersave");
                s->has_epp = true;
                strcpy(s->epp, "balance_performance");
                strcpy(s->available_epp, "default performance balance_performance balance_power power");
        } else {
                strcpy(s->governor, "schedutil");
                s->min_khz = s->hw_min_khz = 1200000;
                s->max_khz = s->hw_max_khz = 2400000;
                strcpy(s->available_governors, "conservative ondemand userspace powersave performance schedutil");
        }
        f->original[f->n] = *s;
        f->n++;
}

static CpufreqPolicyState *fake_policy(Fake *f, unsigned cpu) {
        for (size_t i = 0; i < f->n; i++)
                if (cpuset_has(&f->pol[i].cpus, cpu))
                        return &f->pol[i];
        return NULL;
}

static int fake_list_cpus(void *userdata, CpuSet *ret) {
        Fake *f = userdata;
        CpuSet s = {};

        if (f->list_error)
                return f->list_error;
        for (size_t i = 0; i < f->n; i++)
                cpuset_or(&s, &f->pol[i].cpus);
        *ret = s;
        return 0;
}

static int fake_read_policy(void *userdata, unsigned cpu, CpufreqPolicyState *ret) {
        Fake *f = userdata;
        CpufreqPolicyState *s = fake_policy(f, cpu);

        f->n_reads++;
        if (f->read_error)
                return f->read_error;
        if (!s)
                return -ENOENT;
        *ret = *s;
        return 0;
}

/* The record on disk must hold this policy's original values before it is first written. */
static void check_recorded(Fake *f, const CpufreqPolicyState *s) {
        const CpufreqPolicyState *orig = &f->original[s - f->pol];
        CpufreqSettings *v = NULL, want;
        char text[4096];
        ssize_t k;
        size_t n = 0;
        int fd;
        bool found = false;

        fd = open(f->record_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "write to cpu%u before the record exists\n", s->cpu);
                abort();
        }
        k = read(fd, text, sizeof text - 1);
        CHECK(k > 0);
        text[k] = '\0';
        close(fd);
        CHECK(cpufreq_record_parse(text, &v, &n) == 0);
        cpufreq_settings_from_state(orig, &want);
        for (size_t i = 0; i < n; i++)
                if (cpufreq_settings_equal(&v[i], &want))
                        found = true;
        free(v);
        if (!found) {
                fprintf(stderr, "write to cpu%u while the record lacks its original values:\n%s", s->cpu, text);
                abort();
        }
}

static int fake_write(void *userdata, unsigned cpu, CpufreqAttr attr, const char *value) {
        Fake *f = userdata;
        CpufreqPolicyState *s = fake_policy(f, cpu);
        unsigned long v;
        char *end;

        CHECK(s);
        check_recorded(f, s);
        for (size_t i = 0; i < f->n_refuse; i++)
                if (cpuset_has(&s->cpus, f->refuse[i].cpu) && f->refuse[i].attr == attr)
                        return f->refuse[i].error;
        f->n_writes++;

        switch (attr) {
        case CPUFREQ_ATTR_GOVERNOR:
                if (!strstr(s->available_governors, value))
                        return -EINVAL;
                strcpy(s->governor, value);
                /* intel_pstate: `performance` forces EPP to performance */
                if (s->has_epp && strcmp(value, "performance") == 0)
                        strcpy(s->epp, "performance");
                return 0;
        case CPUFREQ_ATTR_MIN:
        case CPUFREQ_ATTR_MAX:
                v = strtoul(value, &end, 10);
                CHECK(*end == '\0' && v > 0);
                if (attr == CPUFREQ_ATTR_MIN)
                        s->min_khz = (uint32_t) v;
                else
                        s->max_khz = (uint32_t) v;
                /* The order of writes must never leave min above max. */
                CHECK(s->min_khz <= s->max_khz);
                return 0;
        case CPUFREQ_ATTR_EPP:
                if (!s->has_epp)
                        return -ENOENT;
                /* intel_pstate: EBUSY for anything but "performance" under `performance` */
                if (strcmp(s->governor, "performance") == 0 && strcmp(value, "performance") != 0)
                        return -EBUSY;
                strcpy(s->epp, value);
                return 0;
        case _CPUFREQ_ATTR_MAX:
        case _CPUFREQ_ATTR_INVALID:
                break;
        }
        abort();
}

static bool fake_is_original(const Fake *f, size_t i) {
        const CpufreqPolicyState *a = &f->pol[i], *b = &f->original[i];

        return strcmp(a->governor, b->governor) == 0 && a->min_khz == b->min_khz && a->max_khz == b->max_khz &&
               strcmp(a->epp, b->epp) == 0 && a->has_epp == b->has_epp;
}

static bool fake_all_original(const Fake *f) {
        for (size_t i = 0; i < f->n; i++)
                if (!fake_is_original(f, i))
                        return false;
        return true;
}

/* --- stderr capture for the journal entries (NVME_APSTD_LOG_FIELDS=1) -- */

static int saved_stderr = -1, capture_fd = -1;

static void capture_begin(void) {
        capture_fd = memfd_create("log", MFD_CLOEXEC);
        REQUIRE(capture_fd >= 0);
        fflush(stderr);
        saved_stderr = dup(STDERR_FILENO);
        REQUIRE(saved_stderr >= 0);
        CHECK(dup2(capture_fd, STDERR_FILENO) == STDERR_FILENO);
}

/* Returns the captured text (static buffer) and echoes it to the real stderr. */
static const char *capture_end(void) {
        static char buf[65536];
        ssize_t k;

        fflush(stderr);
        CHECK(dup2(saved_stderr, STDERR_FILENO) == STDERR_FILENO);
        close(saved_stderr);
        k = pread(capture_fd, buf, sizeof buf - 1, 0);
        CHECK(k >= 0);
        buf[k] = '\0';
        close(capture_fd);
        fputs(buf, stderr);
        return buf;
}

static unsigned count(const char *haystack, const char *needle) {
        unsigned n = 0;

        for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* --- setup -------------------------------------------------------------- */

static char tmpdir[] = "/tmp/test-cpupin-XXXXXX";
static char record_path[sizeof tmpdir + 32];

static CpufreqOps ops_for(Fake *f) {
        f->record_path = record_path;
        return (CpufreqOps) {
                .userdata = f,
                .list_cpus = fake_list_cpus,
                .read_policy = fake_read_policy,
                .write = fake_write,
        };
}

/* policy0 = cpu0-1 (shared), policy2 = cpu2, both intel_pstate; policy3 = cpu3, acpi-cpufreq (no EPP) */
static void fake_init(Fake *f) {
        *f = (Fake) {};
        fake_add(f, 0, "0-1", "intel_pstate");
        fake_add(f, 2, "2", "intel_pstate");
        fake_add(f, 3, "3", "acpi-cpufreq");
}

static bool record_exists(void) {
        return access(record_path, F_OK) == 0;
}

static const CpuConfig perf = {
        .pin = CPU_PIN_ALWAYS,
        .release_after_ms = 2000,
        .governor = (char *) "performance",
        .min_freq = { FREQ_HW_MAX, 0 },
        .max_freq = { FREQ_HW_MAX, 0 },
        .epp = (char *) "performance",
        .select = CPU_SELECT_ALL,
};

/* --- cases -------------------------------------------------------------- */

static void test_always_all(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        const char *log;

        fake_init(&f);
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);
        CHECK(!record_exists());

        capture_begin();
        CHECK(cpupin_apply(p, &perf, NULL, "start") == 0);
        log = capture_end();
        CHECK(cpupin_is_pinned(p));
        CHECK(record_exists());
        for (size_t i = 0; i < f.n; i++) {
                CHECK(strcmp(f.pol[i].governor, "performance") == 0);
                CHECK(f.pol[i].min_khz == f.pol[i].hw_max_khz && f.pol[i].max_khz == f.pol[i].hw_max_khz);
        }
        CHECK(strcmp(f.pol[0].epp, "performance") == 0 && f.pol[2].epp[0] == '\0');
        /* one entry per group of equal values: intel_pstate cpu0-2, acpi cpu3 */
        CHECK(count(log, "MESSAGE_ID=" MSGID_CPU_PINNED) == 2);
        CHECK(strstr(log, "CPUFREQ_CPUS=0-2, CPUFREQ_GOVERNOR=performance, CPUFREQ_MIN_KHZ=3600000, "
                           "CPUFREQ_MAX_KHZ=3600000, CPUFREQ_EPP=performance, CPUFREQ_REASON=start"));
        CHECK(strstr(log, "CPUFREQ_CPUS=3, CPUFREQ_GOVERNOR=performance, CPUFREQ_MIN_KHZ=2400000"));

        /* applying the same again changes nothing and says nothing */
        unsigned writes = f.n_writes;
        capture_begin();
        CHECK(cpupin_apply(p, &perf, NULL, "reload") == 0);
        log = capture_end();
        CHECK(f.n_writes == writes && !strstr(log, MSGID_CPU_PINNED));

        capture_begin();
        CHECK(cpupin_release(p, "stop") == 0);
        log = capture_end();
        CHECK(fake_all_original(&f));
        CHECK(!record_exists() && !cpupin_is_pinned(p));
        CHECK(count(log, "MESSAGE_ID=" MSGID_CPU_RELEASED) == 2);
        CHECK(strstr(log, "CPUFREQ_CPUS=0-2, CPUFREQ_GOVERNOR=powersave, CPUFREQ_MIN_KHZ=800000, "
                           "CPUFREQ_MAX_KHZ=3600000, CPUFREQ_EPP=balance_performance, CPUFREQ_REASON=stop"));

        /* release when nothing is pinned: nothing */
        writes = f.n_writes;
        CHECK(cpupin_release(p, "stop") == 0 && f.n_writes == writes);
}

static void test_list_and_irq(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        CpuConfig cfg = perf;
        CpuSet irq;

        fake_init(&f);
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        /* cpus = 2 */
        cfg.select = CPU_SELECT_LIST;
        cfg.cpus = set_of("2");
        CHECK(cpupin_apply(p, &cfg, NULL, "start") == 0);
        CHECK(fake_is_original(&f, 0) && !fake_is_original(&f, 1) && fake_is_original(&f, 2));

        /* cpus = 1: a CPU of a shared policy pins the whole policy; cpu2 goes back */
        cfg.cpus = set_of("1");
        CHECK(cpupin_apply(p, &cfg, NULL, "reload") == 0);
        CHECK(!fake_is_original(&f, 0) && fake_is_original(&f, 1) && fake_is_original(&f, 2));

        /* cpus = nvme-irq, interrupts not known yet: nothing pinned, cpu0-1 restored */
        cfg.select = CPU_SELECT_NVME_IRQ;
        CHECK(cpupin_apply(p, &cfg, NULL, "reload") == 0);
        CHECK(fake_all_original(&f) && !cpupin_is_pinned(p) && !record_exists());

        /* a controller's vectors on cpu3 and cpu9 (no cpufreq): cpu3 */
        irq = set_of("3,9");
        CHECK(cpupin_apply(p, &cfg, &irq, "controller nvme0 added") == 0);
        CHECK(fake_is_original(&f, 0) && fake_is_original(&f, 1) && !fake_is_original(&f, 2));

        /* controllers come and go: now cpu0 */
        irq = set_of("0");
        CHECK(cpupin_apply(p, &cfg, &irq, "controller nvme1 added") == 0);
        CHECK(!fake_is_original(&f, 0) && fake_is_original(&f, 1) && fake_is_original(&f, 2));

        /* reload with pin = off: everything back */
        cfg.pin = CPU_PIN_OFF;
        CHECK(cpupin_apply(p, &cfg, &irq, "reload") == 0);
        CHECK(fake_all_original(&f) && !record_exists());
}

static void test_reload_drops_key(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        CpuConfig cfg = perf;

        fake_init(&f);
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        cfg.governor = NULL;
        cfg.min_freq = (FreqSpec) { FREQ_UNSET, 0 };
        cfg.max_freq = (FreqSpec) { FREQ_PERCENT, 50 };
        cfg.epp = (char *) "power";
        CHECK(cpupin_apply(p, &cfg, NULL, "start") == 0);
        CHECK(strcmp(f.pol[0].epp, "power") == 0 && f.pol[0].max_khz == 2200000);
        CHECK(strcmp(f.pol[0].governor, "powersave") == 0);

        /* reload without epp and max_freq, with a governor: EPP and max return to what was found */
        cfg.epp = NULL;
        cfg.max_freq = (FreqSpec) { FREQ_UNSET, 0 };
        cfg.governor = (char *) "performance";
        CHECK(cpupin_apply(p, &cfg, NULL, "reload") == 0);
        CHECK(f.pol[0].max_khz == 3600000 && strcmp(f.pol[0].governor, "performance") == 0);
        /* (EPP reads "performance" here because the governor forces it, as intel_pstate does) */

        CHECK(cpupin_release(p, "stop") == 0);
        CHECK(fake_all_original(&f) && !record_exists());

        /* a fresh pin of the governor alone leaves EPP to the kernel (intel_pstate forces it
         * under `performance`; writing the found value back would be refused with EBUSY) */
        CpuConfig gov = { .pin = CPU_PIN_ALWAYS, .governor = (char *) "performance" };
        const char *log;

        capture_begin();
        CHECK(cpupin_apply(p, &gov, NULL, "start") == 0);
        log = capture_end();
        CHECK(!strstr(log, MSGID_CPU_PIN_FAILED) && !strstr(log, "cannot put"));
        CHECK(strcmp(f.pol[0].governor, "performance") == 0 && strcmp(f.pol[0].epp, "performance") == 0);
        CHECK(cpupin_release(p, "stop") == 0);
        CHECK(fake_all_original(&f) && !record_exists());
}

static void test_refused(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        CpuConfig cfg = perf;
        const char *log;

        fake_init(&f);
        f.refuse[f.n_refuse++] = (typeof(f.refuse[0])) { 2, CPUFREQ_ATTR_MIN, -EINVAL };
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        capture_begin();
        CHECK(cpupin_apply(p, &cfg, NULL, "start") == 0);
        log = capture_end();
        /* cpu2 as it was (its governor and EPP, written before the refused min, are put back) */
        CHECK(fake_is_original(&f, 1));
        CHECK(!fake_is_original(&f, 0) && !fake_is_original(&f, 2));
        CHECK(strstr(log, "cpu2: the kernel refused scaling_min_freq=3600000: Invalid argument; leaving cpu2 as it was"));
        CHECK(strstr(log, "MESSAGE_ID=" MSGID_CPU_PIN_FAILED ", CPUFREQ_CPUS=2, CPUFREQ_CPU=2, "
                           "CPUFREQ_ATTR=scaling_min_freq, CPUFREQ_VALUE=3600000"));
        CHECK(strstr(log, "CPUFREQ_CPUS=0-1,3") || strstr(log, "CPUFREQ_CPUS=0-1, CPUFREQ_GOVERNOR=performance"));

        /* the record no longer lists cpu2: a crash now would not touch it */
        {
                char text[4096];
                int fd = open(record_path, O_RDONLY | O_CLOEXEC);
                ssize_t k;

                REQUIRE(fd >= 0);
                k = read(fd, text, sizeof text - 1);
                CHECK(k > 0);
                text[k] = '\0';
                close(fd);
                CHECK(!strstr(text, "cpu=2 ") && strstr(text, "cpu=0 ") && strstr(text, "cpu=3 "));
        }

        CHECK(cpupin_release(p, "stop") == 0);
        CHECK(fake_all_original(&f) && !record_exists());
}

/* intel_pstate's EBUSY for EPP under the performance governor. */
static void test_epp_busy_under_performance(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f = {};
        CpufreqOps ops;
        CpuConfig cfg = perf;
        const char *log;

        fake_add(&f, 0, "0-3", "intel_pstate");
        strcpy(f.pol[0].governor, "performance");
        strcpy(f.pol[0].epp, "performance");
        f.original[0] = f.pol[0];
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        cfg.epp = (char *) "power";
        capture_begin();
        CHECK(cpupin_apply(p, &cfg, NULL, "start") == 0);
        log = capture_end();
        CHECK(strstr(log, "cpu0: the kernel refused energy_performance_preference=power: Device or resource busy"));
        CHECK(fake_all_original(&f) && !cpupin_is_pinned(p) && !record_exists());
}

static void test_plan_refused(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        CpuConfig cfg = perf;
        const char *log;

        fake_init(&f);
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        /* schedutil exists on the acpi-cpufreq policy only */
        cfg.governor = (char *) "schedutil";
        capture_begin();
        CHECK(cpupin_apply(p, &cfg, NULL, "start") == 0);
        log = capture_end();
        CHECK(fake_is_original(&f, 0) && fake_is_original(&f, 1) && !fake_is_original(&f, 2));
        CHECK(strstr(log, "cpu0-1: not pinning: governor 'schedutil' is not in scaling_available_governors "
                           "(performance powersave)"));
        CHECK(count(log, "MESSAGE_ID=" MSGID_CPU_PIN_FAILED) == 2);
        CHECK(cpupin_release(p, "stop") == 0 && fake_all_original(&f));
}

static void test_no_cpufreq(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        _cleanup_free_ char *text = NULL;
        Fake f = { .list_error = -ENODEV };
        CpufreqOps ops = ops_for(&f);
        const char *log;

        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);
        capture_begin();
        CHECK(cpupin_apply(p, &perf, NULL, "start") == 0);
        CHECK(cpupin_apply(p, &perf, NULL, "reload") == 0);
        CHECK(cpupin_release(p, "stop") == 0);
        log = capture_end();
        CHECK(count(log, "CPU frequency pinning is unavailable: ") == 1);
        CHECK(count(log, "MESSAGE_ID=" MSGID_CPU_UNAVAILABLE) == 1);
        CHECK(count(log, "\n") == 1);
        CHECK(f.n_writes == 0 && !record_exists() && !cpupin_is_pinned(p));

        CHECK(cpupin_describe(p, &perf, NULL, &text) == 0);
        CHECK(strstr(text, "CPU frequency pinning is unavailable: no cpufreq in sysfs\n"));
}

/* A daemon killed while pinned: the next one restores from the record. */
static void test_recover(void) {
        CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        const char *log;
        int fd;

        fake_init(&f);
        ops = ops_for(&f);

        /* nothing to recover */
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);
        CHECK(cpupin_recover(p) == 0);
        CHECK(f.n_writes == 0 && f.n_reads == 0);

        CHECK(cpupin_apply(p, &perf, NULL, "start") == 0);
        CHECK(!fake_all_original(&f) && record_exists());
        p = cpupin_free(p);            /* "killed": no release */

        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);
        capture_begin();
        CHECK(cpupin_recover(p) == 1);
        log = capture_end();
        CHECK(fake_all_original(&f) && !record_exists() && !cpupin_is_pinned(p));
        CHECK(strstr(log, "MESSAGE_ID=" MSGID_CPU_RELEASED));
        CHECK(strstr(log, "CPUFREQ_REASON=restoring the state recorded before an unclean stop"));

        /* killed while pinned, and the policy cannot be read back (an interrupted write left an
         * attribute empty in a fake tree): the record is still put back, written blind */
        CHECK(cpupin_apply(p, &perf, NULL, "start") == 0);
        CHECK(!fake_all_original(&f) && record_exists());
        p = cpupin_free(p);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);
        f.read_error = -EIO;
        capture_begin();
        CHECK(cpupin_recover(p) == 1);
        log = capture_end();
        f.read_error = 0;
        CHECK(strstr(log, "writing the recorded values without comparing"));
        CHECK(fake_all_original(&f) && !record_exists());

        /* a record that does not parse: removed, nothing written */
        fd = open(record_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        CHECK(write(fd, "policy cpu=0 cpus=0-1 governor=perf", 35) == 35);
        close(fd);
        unsigned writes = f.n_writes;
        capture_begin();
        CHECK(cpupin_recover(p) == 0);
        log = capture_end();
        CHECK(strstr(log, "is not a valid CPU frequency record, removing it"));
        CHECK(f.n_writes == writes && !record_exists());
        cpupin_free(p);
}

static void test_record_unwritable(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        char dir[sizeof tmpdir + 32];
        Fake f;
        CpufreqOps ops;
        int fd;

        fake_init(&f);
        ops = ops_for(&f);
        /* a file where the runtime directory should be */
        (void) snprintf(dir, sizeof dir, "%s/not-a-dir", tmpdir);
        fd = open(dir, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        close(fd);
        CHECK(cpupin_new(&ops, dir, &p) == 0);
        capture_begin();
        CHECK(cpupin_apply(p, &perf, NULL, "start") < 0);
        (void) capture_end();
        CHECK(f.n_writes == 0 && fake_all_original(&f) && !cpupin_is_pinned(p));

        /* busy mode: a failed pin is tried again on the next busy report */
        CpuConfig busy = perf;
        uint64_t deadline = 42;
        unsigned reads;

        busy.pin = CPU_PIN_BUSY;
        CHECK(cpupin_apply(p, &busy, NULL, "reload") == 0);
        capture_begin();
        reads = f.n_reads;
        CHECK(cpupin_busy_hook(p, true, 1000, &deadline) < 0 && deadline == 42);
        CHECK(f.n_reads > reads);
        reads = f.n_reads;
        CHECK(cpupin_busy_hook(p, true, 2000, &deadline) < 0 && f.n_reads > reads);
        (void) capture_end();
        CHECK(f.n_writes == 0 && fake_all_original(&f) && !cpupin_is_pinned(p));
        CHECK(unlink(dir) == 0);
}

static void test_busy(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        CpuConfig cfg = perf;
        uint64_t deadline = 0;
        const char *log;

        fake_init(&f);
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        /* before any configuration, and in always mode, the hook does nothing */
        CHECK(cpupin_busy_hook(p, true, 1, &deadline) == 0 && deadline == UINT64_MAX);
        CHECK(fake_all_original(&f));

        cfg.pin = CPU_PIN_BUSY;
        cfg.release_after_ms = 2000;
        CHECK(cpupin_apply(p, &cfg, NULL, "start") == 0);
        CHECK(fake_all_original(&f) && !record_exists());

        CHECK(cpupin_busy_hook(p, false, 1000000, &deadline) == 0 && deadline == UINT64_MAX);
        CHECK(fake_all_original(&f));

        capture_begin();
        CHECK(cpupin_busy_hook(p, true, 10000000, &deadline) == 0);
        log = capture_end();
        CHECK(deadline == 12000000 && cpupin_is_pinned(p));
        CHECK(strstr(log, "CPUFREQ_REASON=I/O on a watched drive"));
        unsigned writes = f.n_writes;
        CHECK(cpupin_busy_hook(p, true, 11000000, &deadline) == 0 && deadline == 13000000);
        CHECK(f.n_writes == writes);   /* still pinned: no re-read, no writes */

        CHECK(cpupin_busy_hook(p, false, 12000000, &deadline) == 0 && deadline == 13000000);
        CHECK(cpupin_is_pinned(p));
        /* a reload while busy re-pins with the new configuration */
        cfg.epp = (char *) "balance_power";
        cfg.governor = NULL;
        CHECK(cpupin_apply(p, &cfg, NULL, "reload") == 0);
        CHECK(strcmp(f.pol[0].epp, "balance_power") == 0);

        capture_begin();
        CHECK(cpupin_busy_hook(p, false, 13000000, &deadline) == 0 && deadline == UINT64_MAX);
        log = capture_end();
        CHECK(!cpupin_is_pinned(p) && fake_all_original(&f) && !record_exists());
        CHECK(strstr(log, "CPUFREQ_REASON=no I/O for 2000 ms"));

        /* busy again, then stop while pinned */
        CHECK(cpupin_busy_hook(p, true, 20000000, &deadline) == 0 && cpupin_is_pinned(p));
        CHECK(cpupin_release(p, "stop") == 0 && fake_all_original(&f));
        /* after release the idle timer is gone */
        CHECK(cpupin_busy_hook(p, false, 30000000, &deadline) == 0 && deadline == UINT64_MAX);
}

static void test_describe(void) {
        _cleanup_(cpupin_freep) CpuPin *p = NULL;
        Fake f;
        CpufreqOps ops;
        CpuConfig cfg = perf;
        char *text = NULL;

        fake_init(&f);
        ops = ops_for(&f);
        CHECK(cpupin_new(&ops, tmpdir, &p) == 0);

        cfg.select = CPU_SELECT_LIST;
        cfg.cpus = set_of("0-2,7");
        CHECK(cpupin_describe(p, &cfg, NULL, &text) == 0);
        CHECK(strcmp(text,
                     "CPU frequency: pin = always, pinned while the daemon runs\n"
                     "cpu7: no cpufreq (offline or absent), ignored\n"
                     "cpu0-1: governor performance, min 3600000 kHz (max), max 3600000 kHz (max), epp performance\n"
                     "cpu2: governor performance, min 3600000 kHz (max), max 3600000 kHz (max), epp performance\n") == 0);
        free(text);

        cfg.pin = CPU_PIN_OFF;
        CHECK(cpupin_describe(p, &cfg, NULL, &text) == 0);
        CHECK(strcmp(text, "CPU frequency: pin = off, left as it is\n") == 0);
        free(text);

        cfg = perf;
        cfg.pin = CPU_PIN_BUSY;
        cfg.select = CPU_SELECT_NVME_IRQ;
        CHECK(cpupin_describe(p, &cfg, NULL, &text) == 0);
        CHECK(strstr(text, "released after 2000 ms") && strstr(text, "no CPU selected (no NVMe interrupt known)"));
        free(text);

        cfg.governor = (char *) "schedutil";
        cfg.select = CPU_SELECT_ALL;
        cfg.epp = NULL;
        CHECK(cpupin_describe(p, &cfg, NULL, &text) == 0);
        CHECK(strstr(text, "cpu0-1: refused, left as it is: governor 'schedutil'"));
        CHECK(strstr(text, "cpu3: governor schedutil, min 2400000 kHz (max), max 2400000 kHz (max), no epp\n"));
        free(text);
        CHECK(f.n_writes == 0 && fake_all_original(&f) && !record_exists());
}

int main(void) {
        REQUIRE(mkdtemp(tmpdir));
        (void) snprintf(record_path, sizeof record_path, "%s/" CPUPIN_RECORD_NAME, tmpdir);
        setenv("NVME_APSTD_LOG_TARGET", "console", 1);
        setenv("NVME_APSTD_LOG_FIELDS", "1", 1);
        log_open();

        test_always_all();
        test_list_and_irq();
        test_reload_drops_key();
        test_refused();
        test_epp_busy_under_performance();
        test_plan_refused();
        test_no_cpufreq();
        test_recover();
        test_record_unwritable();
        test_busy();
        test_describe();

        CHECK(rmdir(tmpdir) == 0);
        return check_exit_status();
}
