/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Fake NVMe controller model for the test harness (tests/fake/fake-nvme-tb.c).
 *
 * Transport-agnostic and free of GLib: it takes one admin command in CPU byte order with its data
 * buffer already copied to harness memory, and answers it as a controller (and the kernel ioctl)
 * would: 0, an NVMe status > 0, or a negative errno. It also implements the daemon's allow-list
 * oracle (fake_cmd_allowed()) and fault injection. Not thread-safe: the harness serialises calls. */

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <nvme/types.h>

#define FAKE_APST_ENTRIES 32
#define FAKE_APST_BYTES (FAKE_APST_ENTRIES * 8) /* the Set/Get Features 0x0C data: 32 le64 entries */
#define FAKE_MAX_FAULTS 16

/* Which commands a fault applies to. */
typedef enum FakeMatch {
        FAKE_MATCH_IDENTIFY,
        FAKE_MATCH_GET_APST,
        FAKE_MATCH_SET_APST,
        FAKE_MATCH_ANY,
} FakeMatch;

typedef enum FakeWhen {
        FAKE_WHEN_ALWAYS,
        FAKE_WHEN_ONCE,  /* the next matching command only */
        FAKE_WHEN_AFTER, /* the first n matching commands succeed, every later one fails */
} FakeWhen;

/* What a fault does to a matching command. */
typedef enum FakeAction {
        FAKE_ACTION_FAIL,   /* answer nvme_status or fail the ioctl with err; the model is not reached */
        FAKE_ACTION_GARBLE, /* Get Features 0x0C: run it, then answer a table other than the stored one
                             * (entry[0] XOR 0x100, i.e. ITPT bit 0 flipped); other commands run normally */
        FAKE_ACTION_IGNORE, /* Set Features 0x0C: answer success but store nothing; other commands run normally */
        FAKE_ACTION_DELAY,  /* a slow completion: wait delay_ms, then run the command normally */
} FakeAction;

typedef struct FakeFault {
        FakeMatch match;
        FakeAction action;
        FakeWhen when;
        unsigned n;      /* for FAKE_WHEN_AFTER */
        unsigned seen;   /* matching commands seen so far */
        bool used;       /* FAKE_WHEN_ONCE fired */
        int nvme_status; /* > 0: answer with this NVMe status */
        int err;         /* > 0: fail the ioctl with this errno */
        unsigned delay_ms; /* FAKE_ACTION_DELAY */
} FakeFault;

typedef struct FakeCtrl {
        struct nvme_id_ctrl id;
        uint32_t apst_cdw11;                 /* bit 0 = APSTE */
        uint64_t apst[FAKE_APST_ENTRIES];    /* CPU byte order */
        uint32_t pm_cdw11;                   /* FID 0x02: PS[4:0] WH[7:5] (only reachable with --allow-any) */
        unsigned n_admin, n_identify, n_get_apst, n_set_apst, n_errors, n_violations, n_faults;
        unsigned n_io, n_read;               /* I/O commands on the namespace node; of them, Reads */
        /* The power-state machine (fake_ctrl_power_at()): at anchor_us the controller was idle and
         * fully in anchor_ps (after an I/O completed, a state's entry ended, or a table was written);
         * from there it follows the APST table. Times are CLOCK_MONOTONIC µs. */
        uint8_t anchor_ps;
        uint64_t anchor_us;
        unsigned exlat_scale_percent;        /* the real exit latency in % of the advertised (100) */
        unsigned exlat_scale_ps;             /* ... for this state only; FAKE_SCALE_ALL_PS = every state */
        FakeFault faults[FAKE_MAX_FAULTS];
        unsigned n_fault_rules;
} FakeCtrl;

#define FAKE_SCALE_ALL_PS 255u
#define FAKE_NSID 1u                /* the one namespace, nvmeNn1 */
#define FAKE_LBA_BYTES 512u         /* its logical block size (queue/logical_block_size) */
#define FAKE_NS_BLOCKS 2000409264u  /* its size in 512-byte sectors, as in sysfs `size` */

/* Where the power-state machine is at a given time. */
typedef struct FakePowerPos {
        uint8_t ps;         /* the state the controller is in, or entering */
        bool entering;      /* still entering ps until entry_end_us */
        uint64_t entry_end_us;
} FakePowerPos;

/* A passthru command in CPU byte order; data points to data_len bytes of harness memory, or NULL. */
typedef struct FakeCmd {
        uint8_t opcode;
        uint32_t nsid, cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
        uint32_t data_len;
        void *data;
} FakeCmd;

/** fake_ctrl_init_default() - the built-in controller: npss=4, apsta=1, ps0-2 operational,
 * ps3 (210/1200 us) and ps4 (2000/8000 us) non-operational; APSTE=0, all-zero table. */
void fake_ctrl_init_default(FakeCtrl *c);

/** fake_ctrl_init_idctrl() - load 4096 bytes of Identify Controller data from @path.
 * Return: 0 or -errno (-EINVAL if the file is not exactly 4096 bytes). */
int fake_ctrl_init_idctrl(FakeCtrl *c, const char *path);

/* fake_ctrl_admin()'s answer when a `delay=` rule holds the command: run it with
 * fake_ctrl_admin_delayed() once *ret_delay_ms have passed. */
#define FAKE_ADMIN_DELAYED INT_MAX
/* The longest `delay=`: beyond the kernel's default admin timeout (nvme_core admin_timeout, 60 s), so a
 * test can hold a command as long as a failing drive holds a real one. */
#define FAKE_DELAY_MAX_MS 600000u

/** fake_ctrl_admin() - count one admin command, fire the fault rules and execute it.
 * Return: 0 or an NVMe status > 0 (result in *result), -errno for an ioctl failure (fault), or
 * FAKE_ADMIN_DELAYED when a `delay=` rule fired: nothing executed yet, *ret_delay_ms set. */
int fake_ctrl_admin(FakeCtrl *c, const FakeCmd *cmd, uint64_t *result, unsigned *ret_delay_ms);

/** fake_ctrl_admin_delayed() - execute a command fake_ctrl_admin() delayed, normally (no rule fires
 * again: the delay was its fault). Return: as fake_ctrl_admin(). */
int fake_ctrl_admin_delayed(FakeCtrl *c, const FakeCmd *cmd, uint64_t *result);

/** fake_ctrl_power_at() - where the controller is at @now_us: from (anchor_ps, anchor_us) it
 * follows the table while APSTE is set, as tests/qemu-apst/README.md describes: after the current
 * state's ITPT ms of idleness it enters ITPS (taking ITPS's entry latency), then follows ITPS's own
 * entry. Pure. */
void fake_ctrl_power_at(const FakeCtrl *c, uint64_t now_us, FakePowerPos *ret);

/** fake_ctrl_power_rebase() - the table or power state is about to change at @now_us: fix the
 * position reached under the old table as the new anchor (a state being entered finishes its
 * entry first), so the new table counts idle time from now, not retroactively. */
void fake_ctrl_power_rebase(FakeCtrl *c, uint64_t now_us);

/** fake_ctrl_exlat_us() - the real exit latency of @ps: the advertised one, scaled by
 * exlat_scale_percent when exlat_scale_ps is @ps or FAKE_SCALE_ALL_PS. */
uint64_t fake_ctrl_exlat_us(const FakeCtrl *c, unsigned ps);

/** fake_ctrl_io() - execute one I/O command arriving at @now_us. Read (0x02) of the namespace
 * FAKE_NSID answers zeros; *ret_delay_us is how long the controller holds it first: 0 when
 * awake, else the rest of the entry (if it came while entering) plus the state's real exit
 * latency. The controller is then in its most recent operational state and idle from
 * @now_us + *ret_delay_us. Any other opcode: Invalid Command Opcode, nothing done.
 * Return: 0 or an NVMe status > 0. */
int fake_ctrl_io(FakeCtrl *c, const FakeCmd *cmd, uint64_t now_us, uint64_t *ret_delay_us);

/** fake_io_allowed() - the oracle for I/O commands: only a Read of one logical block, and only
 * when the test allows reads (--allow-read, for `nvme-apstd calibrate`).
 * Return: NULL if allowed, else a static string saying why not. */
const char *fake_io_allowed(const FakeCmd *cmd, bool allow_read);

/** fake_cmd_allowed() - the oracle: the daemon may send only Identify CNS 01h, Get Features FID 0x0C
 * (any SEL) and Set Features FID 0x0C without SV, with a 256-byte buffer where data moves.
 * Return: NULL if allowed, else a static string saying why not. */
const char *fake_cmd_allowed(const FakeCmd *cmd);

/** fake_fault_parse() - parse "WHAT=RESULT[:WHEN]", WHAT identify|get-apst|set-apst|any, RESULT an
 * NVMe status (0x4002, decimal or hex, 1..0xffff) or an errno name (EIO, ENODEV, EINTR, ETIMEDOUT,
 * EBUSY, EAGAIN, ENOTTY, EPERM, EACCES, EFAULT, EINVAL) or number, or `garble` (a Get Features 0x0C
 * answers another table than the stored one) or `ignore` (a Set Features 0x0C succeeds and stores
 * nothing) or `delay=MS` (the command completes normally after MS ms, at most FAKE_DELAY_MAX_MS), WHEN
 * always|once|after=N.
 * Return: 0 or -EINVAL. */
int fake_fault_parse(const char *s, FakeFault *ret);
int fake_ctrl_add_fault(FakeCtrl *c, const FakeFault *f);
void fake_ctrl_clear_faults(FakeCtrl *c);

/** fake_table_parse() - parse a table file: optional "apste=N", then up to 32 numbers (0x... or
 * decimal) separated by white space; '#' starts a comment. Missing entries are 0.
 * Return: 0 or -EINVAL. */
int fake_table_parse(const char *text, uint32_t *ret_apste, uint64_t ret_entries[FAKE_APST_ENTRIES]);
/** fake_table_format() - write "apste=N\n" and 32 lines "0x%016llx\n" (the NAME.table format). */
void fake_table_format(const FakeCtrl *c, FILE *out);
/** fake_table_kernel() - the table Linux's nvme_configure_apst() (v5.14+) writes with its default
 * module parameters (100000 us max latency, 100/2000 ms, 15000/100000 us tolerances). */
void fake_table_kernel(const FakeCtrl *c, uint32_t *ret_apste, uint64_t ret_entries[FAKE_APST_ENTRIES]);
/** fake_table_kernel_latency() - the same with another latency limit: what the kernel writes after
 * a write of @max_lat_us to power/pm_qos_latency_tolerance_us (0 = APST off: APSTE 0, all zero). */
void fake_table_kernel_latency(const FakeCtrl *c, uint64_t max_lat_us, uint32_t *ret_apste,
                               uint64_t ret_entries[FAKE_APST_ENTRIES]);

/** fake_ctrl_report() - human-readable state: APSTE, counters, non-zero entries decoded. */
void fake_ctrl_report(const FakeCtrl *c, const char *name, FILE *out);

/** fake_ctrl_sysfs_string() - @field (id.mn, id.sn, id.fr) as sysfs shows it ("%.*s"): the raw
 * space-padded bytes up to the first NUL, with no newline. @buf must hold len + 1 bytes. */
void fake_ctrl_sysfs_string(const char *field, size_t len, char *buf);

const char *fake_errno_name(int err);
