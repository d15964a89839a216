/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A power state a drive failed in, kept out of its tables (doc/quarantine.md):
 * whether a failure is blamed on a state (quarantine_blame()), the step-down
 * (quarantine_step_down()), what planning leaves out (quarantine_limit_id(),
 * quarantine_filter_table(), quarantine_latency_tolerance_us()), and the text
 * file kept per model and firmware in STATE_DIR/quarantine/.
 *
 * The limit is "allow_below": states numbered at or above it are out;
 * QUARANTINE_NONE (32) keeps every state, 0 is APST off.
 *
 * Pure: no I/O, no logging.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apst.h"
#include "idctrl.h"
#include "kmsg.h"

#define QUARANTINE_NONE ((uint8_t) IDCTRL_MAX_PS)
#define QUARANTINE_APST_OFF ((uint8_t) 0)
#define QUARANTINE_FORMAT_VERSION 1
/* The failures a file keeps (the newest): the step-down ends at APST off after three. */
#define QUARANTINE_FAILURES_MAX 8u
/* The blamed failures after which APST is off, whatever states are left: the kernel's
 * NVME_QUIRK_NO_APST, for a drive that fails in one state after another. */
#define QUARANTINE_STRIKES_OFF 3u
/* A failure this soon after a resume belongs to the suspend path: on s2idle the kernel itself sends
 * the drive to its deepest state (drivers/nvme/host/pci.c nvme_suspend()), and nvme_resume() resets a
 * controller that does not come back; 30 s covers the resume and the first I/O timeout's detection. */
#define QUARANTINE_RESUME_WINDOW_USEC (30u * 1000000u)
/* nvme_core's io_timeout default (drivers/nvme/host/core.c): a timeout is printed this long after
 * the command was sent, so the drive's idle time ended that much earlier. */
#define QUARANTINE_IO_TIMEOUT_MS 30000u

typedef enum QuarantineVerdict {
        QUARANTINE_BLAMED,         /* the state reached is blamed */
        QUARANTINE_NO_FAILURE,     /* a reset with no failure record: asked for (nvme reset, reset_controller) */
        QUARANTINE_REMOVED,        /* the controller left without a failure record: removed by the user */
        QUARANTINE_RESUME,         /* during suspend or soon after resume: the kernel's own deepest state */
        QUARANTINE_BUSY,           /* the drive was in an operational state when it failed */
        QUARANTINE_APST_DISABLED,  /* APSTE = 0 in force: no state to blame (ASPM, port PM, ...) */
        QUARANTINE_IDLE_UNKNOWN,   /* the idle time is not known and the record is not one of a drive off the bus */
        QUARANTINE_ALREADY,        /* the state reached is already quarantined (the kernel's table after a reset) */
        _QUARANTINE_VERDICT_MAX,
        _QUARANTINE_VERDICT_INVALID = -EINVAL,
} QuarantineVerdict;

/* "blamed", "no-failure-record", "removed", "resume", "busy", "apst-off", "idle-unknown", "already". */
const char *quarantine_verdict_to_string(QuarantineVerdict v);
QuarantineVerdict quarantine_verdict_from_string(const char *s);

/* What is known when a controller comes back (or goes away) after a reset. */
typedef struct QuarantineEvidence {
        bool have_failure;         /* a failure record named the controller since it was last live */
        NvmeFailure failure;       /* the strongest one */
        bool removed;              /* it left sysfs (or went dead: the reset failed, which has a record) */
        bool resume;               /* suspended, or resumed less than QUARANTINE_RESUME_WINDOW_USEC before */
        bool idle_known;           /* the watcher measured the idle time */
        uint64_t idle_ms;          /* idle time before the failure was reported */
        const ApstTable *table;    /* the table in force when it failed */
        uint8_t allow_below;       /* the quarantine already in force */
} QuarantineEvidence;

typedef struct QuarantineBlame {
        QuarantineVerdict verdict;
        uint8_t ps;                /* the state reached (valid for BLAMED, BUSY, ALREADY) */
        uint64_t idle_ms;          /* the idle time counted (after a timeout's own delay is taken off) */
} QuarantineBlame;

/*
 * The idle time before a failure, from what the watcher saw of the disk's completions. What counts
 * is how long the drive had been without a command when the command that failed was sent: the drive
 * counts its idle time from the moment its queues went empty, and a request that waits on a drive
 * that does not wake stays in flight until the kernel gives up on it. So a request in flight is not
 * the drive's activity; a completion is.
 */
typedef struct QuarantineIdleMark {
        bool idle_seen;            /* a look found nothing in flight */
        uint64_t idle_usec;        /* then: when the disk had gone idle (its last completion), monotonic */
        uint64_t idle_done;        /* then: completions counted so far */
} QuarantineIdleMark;

/**
 * quarantine_idle() - the idle time before a failure reported at @now_usec
 * @mark: the last look that found the disk idle
 * @in_flight, @done: a look now: requests in flight, completions counted so far
 * @idle_since_usec: when the disk last went idle, as far as known now (its last completion)
 * A disk idle now has been so since @idle_since_usec. A disk with requests in flight that has
 * completed none since @mark went idle at @mark's time and has not answered since: the requests
 * wait on the drive. One that completed some has answered: it was awake (0 idle).
 * Return: whether the idle time is known; *@ret_usec.
 */
bool quarantine_idle(const QuarantineIdleMark *mark, uint64_t now_usec, uint64_t in_flight, uint64_t done,
                     uint64_t idle_since_usec, uint64_t *ret_usec);

/**
 * apst_reached() - the state the controller is in after @idle_ms of idleness under @t, starting
 * in PS0: each entry's ITPT, summed along the chain. APSTE = 0 is PS0.
 */
unsigned apst_reached(const ApstTable *t, uint64_t idle_ms);

/* The deepest state @t can reach at all (PS0 if none). */
unsigned apst_deepest(const ApstTable *t);

/**
 * quarantine_blame() - blame a power state for a failure, or say why not (doc/quarantine.md
 * "What is blamed, and what is not"). @id tells operational states apart.
 */
void quarantine_blame(const QuarantineEvidence *e, const IdCtrl *id, QuarantineBlame *ret);

/**
 * quarantine_step_down() - the limit after a failure blamed on @ps: @ps and deeper out; APST off
 * once no non-operational state is left below it or at the QUARANTINE_STRIKES_OFF'th blamed failure
 * (@strikes counts this one). Never raises the limit.
 */
uint8_t quarantine_step_down(uint8_t allow_below, unsigned ps, unsigned strikes, const IdCtrl *id);

/* @id without the states from @allow_below on (npss lowered), for the planners; @allow_below 0 and
 * QUARANTINE_NONE give @id as it is (APST off is planned as a budget of 0). */
void quarantine_limit_id(const IdCtrl *id, uint8_t allow_below, IdCtrl *ret);

/* @t without transitions to a quarantined state: such an entry goes to the deepest allowed target
 * deeper than its own state that @t uses, or nowhere; entries of quarantined states are cleared;
 * @allow_below 0 gives APSTE = 0 and an all-zero table. Return: whether @t changed. */
bool quarantine_filter_table(ApstTable *t, uint8_t allow_below);

/* A pm_qos_latency_tolerance_us under which the kernel's own table (exit latency <= tolerance)
 * leaves out every state from @allow_below on: one below the smallest exit latency among them;
 * 0 (the kernel's APST off) for APST off or a quarantined state that reports no exit latency.
 * UINT32_MAX when nothing is quarantined. */
uint32_t quarantine_latency_tolerance_us(const IdCtrl *id, uint8_t allow_below);

/* ------------------------------------------------------------------ the file */

typedef struct QuarantineFailure {
        uint64_t realtime_sec;     /* when, wall clock */
        uint8_t ps;                /* the state blamed */
        uint64_t idle_ms;          /* the idle time counted */
        NvmeFailureKind kind;      /* the strongest record */
} QuarantineFailure;

typedef struct Quarantine {
        char model[41];            /* trimmed Identify strings */
        char firmware[9];
        uint16_t vendor;           /* Identify vid */
        uint8_t allow_below;       /* 0..31, or 0 = APST off */
        uint32_t max_latency_us;   /* quarantine_latency_tolerance_us() when it was set: what a budget must stay
                                    * below to leave the states out (the drop-in's, the PM QoS tolerance) */
        unsigned strikes;          /* blamed failures in all */
        size_t n_failures;         /* the newest ones, oldest first */
        QuarantineFailure failures[QUARANTINE_FAILURES_MAX];
} Quarantine;

/* Record one blamed failure and step down (quarantine_step_down()), max_latency_us following.
 * Return: whether the limit changed. */
bool quarantine_add_failure(Quarantine *q, const IdCtrl *id, const QuarantineFailure *f);

/* The file's text. Return: 0 or -ENOMEM. */
int quarantine_format(const Quarantine *q, char **ret_text);
/* Strict, like the other state files: -EINVAL with *@ret_error "line N: why". */
int quarantine_parse(const char *text, size_t len, Quarantine *ret, char **ret_error);
/* STATE_DIR/quarantine/MODEL@FIRMWARE.quarantine (kv_state_path()). */
int quarantine_path(const char *state_dir, const char *model, const char *firmware, char **ret_path);

/* "ps4 and deeper", "APST off", "none" into @buf. */
void quarantine_describe(uint8_t allow_below, char *buf, size_t n);

/* A configuration drop-in carrying @q to another machine: a [device] section matching its model
 * and firmware with max_latency_us = @q->max_latency_us (every policy keeps a state only when its exit
 * latency, or its entry + exit latency, is within it). Return: 0, -EINVAL (nothing quarantined, or
 * strings a drop-in cannot carry) or -ENOMEM. */
int quarantine_dropin(const Quarantine *q, char **ret_name, char **ret_text);
