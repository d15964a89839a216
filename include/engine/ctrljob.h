/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One engine step for one controller (controller_sync(), controller_program()
 * or controller_restore()), run in a thread of its own so that whoever asked
 * for it (the daemon's event loop, a verb) is not blocked by a drive that takes
 * its time to answer: an admin command blocks its thread until the drive
 * answers or nvme_core's admin_timeout (60 s by default) ends it with a reset.
 *
 * A job works on copies: the Controller, the configuration, the platform and
 * every path are copied in by ctrljob_new(), so the caller may reload, free
 * and change its own state while the job runs, and a job the caller gives up
 * on (a drive that never answers at exit) touches nothing of the caller's.
 * The caller takes the Controller back from the finished job and applies it.
 * One job per controller at a time is the caller's rule (the daemon queues
 * the next one behind it), so the commands to one drive stay in order.
 *
 * A finished job is put on its CtrlJobQueue and the queue's eventfd becomes
 * readable: the daemon watches it with sd-event, a verb polls it with a
 * deadline (ctrljob_run()).
 */

#include <pthread.h>
#include <stdint.h>

#include "controller.h"
#include "nvme-admin.h"

typedef enum CtrlJobKind {
        CTRL_JOB_SYNC,       /* controller_sync() */
        CTRL_JOB_PROGRAM,    /* controller_program() with .table */
        CTRL_JOB_RESTORE,    /* controller_restore() */
        CTRL_JOB_CALL,       /* .call(.data): a verb's own sequence of commands (ctrljob_new_call()) */
        _CTRL_JOB_KIND_MAX,
        _CTRL_JOB_KIND_INVALID = -EINVAL,
} CtrlJobKind;

typedef struct CtrlJobQueue CtrlJobQueue;

typedef struct CtrlJob {
        /* In: set by ctrljob_new(); the thread's own while it runs. */
        CtrlJobKind kind;
        char reason[64];
        ApstTable table;              /* CTRL_JOB_PROGRAM */
        Controller controller;        /* a copy in; the engine's state after the step out */
        ControllerContext ctx;        /* points into the copies below */
        Config config;
        SysPlatform platform;
        char *sysfs_root, *dev_dir, *record_dir, *state_dir;
        int (*call)(void *data);      /* CTRL_JOB_CALL: runs in the thread; @data is the job's */
        void *data;
        void (*free_data)(void *data);

        /* Out: valid once the job is off the queue. */
        ControllerOutcome outcome;
        int r;

        /* Shared with the running thread. */
        AdminInFlight in_flight;      /* the command it waits for, and the cancel flag */
        uint64_t started_usec;        /* CLOCK_MONOTONIC when it was started */
        void *userdata;               /* the caller's; the job never touches it */

        CtrlJobQueue *queue;          /* while it runs: where it goes when done (a reference) */
        pthread_t thread;             /* ctrljob.c's: joined, and its stack unmapped, when the job is */
        void *stack;                  /* popped or freed; NULL when no thread of ours ran it */
        struct CtrlJob *next;         /* on the queue's done list */
} CtrlJob;

/* Copy @c, @ctx (and everything it points to) and @reason into a new job. @table: CTRL_JOB_PROGRAM's. */
int ctrljob_new(CtrlJobKind kind, const Controller *c, const ControllerContext *ctx, const char *reason,
                const ApstTable *table, CtrlJob **ret);
/* A job that runs @call(@data) in its thread; @data is the job's from now on (freed with
 * @free_data by ctrljob_free(), never if the job is given up on): what @call writes there the
 * caller reads once the job is back. Return: 0 or -ENOMEM (@data then still the caller's). */
int ctrljob_new_call(int (*call)(void *data), void *data, void (*free_data)(void *data), CtrlJob **ret);
CtrlJob *ctrljob_free(CtrlJob *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(CtrlJob *, ctrljob_free);

/* Run @j in the calling thread (used by ctrljob_start()'s thread; and when no thread can be made). */
void ctrljob_execute(CtrlJob *j);

/**
 * ctrljob_start() - run @j in a new thread; it lands on @q when done
 *
 * The thread blocks every signal (they are the event loop's) and runs on a stack of the job's,
 * which ctrljob_queue_pop() and ctrljob_free() unmap once the thread is joined. Until the job
 * comes off the queue it belongs to the thread: read only its in_flight, started_usec and
 * userdata. Return: 0; 1 when no thread could be made: the step ran in the calling thread and
 * is on @q already (taken from there as any other, never finished inside this call); or negative
 * errno (nothing ran; @j untouched, still the caller's).
 */
int ctrljob_start(CtrlJob *j, CtrlJobQueue *q);

/* Ask a running job to send nothing more: its next admin command fails with -ECANCELED before it
 * reaches the kernel. The one it waits for, if any, is the kernel's until it ends. */
void ctrljob_cancel(CtrlJob *j);

/* How long the command @j waits for has been outstanding at @now_usec; 0 when it waits for none. */
uint64_t ctrljob_command_age_usec(const CtrlJob *j, uint64_t now_usec);

/* The queue of finished jobs: an eventfd (readable while one is there) and a list. Reference
 * counted: every running job holds one, so jobs given up on finish into a queue that still exists. */
int ctrljob_queue_new(CtrlJobQueue **ret);
CtrlJobQueue *ctrljob_queue_unref(CtrlJobQueue *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(CtrlJobQueue *, ctrljob_queue_unref);
int ctrljob_queue_fd(const CtrlJobQueue *q);
/* The next finished job (the caller's now), or NULL; clears the eventfd once the list is empty. */
CtrlJob *ctrljob_queue_pop(CtrlJobQueue *q);

/**
 * ctrljob_run() - start @j and wait at most @deadline_usec for it (the verbs' way)
 *
 * Return: 0 when it finished (its outcome is in @j), -ETIMEDOUT when the drive has not answered
 * in time: the job is then cancelled and left to its thread (never freed: the caller exits, and
 * the process ends as soon as the kernel lets the thread go). Negative errno if it could not start.
 * @j must not be used after -ETIMEDOUT.
 */
int ctrljob_run(CtrlJob *j, uint64_t deadline_usec);
