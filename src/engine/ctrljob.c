/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One engine step in a thread of its own; see ctrljob.h. */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "ctrljob.h"

/* A step's thread runs on a stack of the job's, not on one glibc allocates: glibc keeps the stacks
 * of exited threads cached for the next ones (up to 40 MiB of them), each with its top pages, the
 * thread's descriptor and its TLS resident (24 KiB apiece here), so an idle daemon carried one per
 * thread of its last burst for good. Ours is unmapped once the thread is joined. Its size: the
 * deepest steps (verification and programming: libnvme's ioctl wrappers, the log's formatting, the
 * tables on the stack) touched 7 pages, 28 KiB with the descriptor and TLS at the top (mincore()
 * over the stack after each of 130 steps: 10 controllers, start, 10 reloads, stop); 256 KiB leaves
 * nine times that for the journal's sd_journal_sendv() and what libraries do on error paths. The
 * lowest page is a guard. */
#define JOB_STACK_SIZE (256u * 1024u)

struct CtrlJobQueue {
        _Atomic unsigned n_ref;
        pthread_mutex_t lock;
        CtrlJob *head, *tail;         /* finished, not yet popped */
        int efd;
};

static int strdup_opt(char **dst, const char *src) {
        *dst = NULL;
        if (!src)
                return 0;
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

int ctrljob_new(CtrlJobKind kind, const Controller *c, const ControllerContext *ctx, const char *reason,
                const ApstTable *table, CtrlJob **ret) {
        _cleanup_(ctrljob_freep) CtrlJob *j = NULL;
        int r;

        if (kind < 0 || kind >= _CTRL_JOB_KIND_MAX || kind == CTRL_JOB_CALL || (kind == CTRL_JOB_PROGRAM && !table))
                return -EINVAL;
        j = calloc(1, sizeof *j);
        if (!j)
                return -ENOMEM;
        config_init(&j->config);
        j->kind = kind;
        (void) snprintf(j->reason, sizeof j->reason, "%s", reason);
        if (table)
                j->table = *table;
        j->controller = *c;
        if (strdup_opt(&j->sysfs_root, ctx->sysfs_root) < 0 || strdup_opt(&j->dev_dir, ctx->dev_dir) < 0 ||
            strdup_opt(&j->record_dir, ctx->record_dir) < 0 || strdup_opt(&j->state_dir, ctx->state_dir) < 0)
                return -ENOMEM;
        if (ctx->config) {
                r = config_copy(ctx->config, &j->config);
                if (r < 0)
                        return r;
                /* the plan names its [device] section by a pointer into the Config: into ours now */
                j->controller.plan.section = config_section_name(&j->config, c->plan.section);
        }
        if (ctx->platform)
                j->platform = *ctx->platform;
        j->ctx = (ControllerContext) {
                .mode = ctx->mode,
                .sysfs_root = j->sysfs_root,
                .dev_dir = j->dev_dir,
                .config = ctx->config ? &j->config : NULL,
                .platform = ctx->platform ? &j->platform : NULL,
                .record_dir = j->record_dir,
                .state_dir = j->state_dir,
        };
        *ret = TAKE_PTR(j);
        return 0;
}

int ctrljob_new_call(int (*call)(void *data), void *data, void (*free_data)(void *data), CtrlJob **ret) {
        CtrlJob *j = calloc(1, sizeof *j);

        if (!j)
                return -ENOMEM;
        config_init(&j->config);
        j->kind = CTRL_JOB_CALL;
        j->call = call;
        j->data = data;
        j->free_data = free_data;
        *ret = j;
        return 0;
}

/* Wait for @j's thread to be gone (it has nothing left to do once @j is on a queue) and unmap its
 * stack. Called by that thread itself (the last reference to a queue it landed on), it can only
 * detach: its stack stays mapped, as an abandoned job's does. */
static void job_reap(CtrlJob *j) {
        if (!j->stack)
                return;
        if (pthread_equal(j->thread, pthread_self())) {
                (void) pthread_detach(j->thread);
        } else {
                (void) pthread_join(j->thread, NULL);
                (void) munmap(j->stack, JOB_STACK_SIZE);
        }
        j->stack = NULL;
}

CtrlJob *ctrljob_free(CtrlJob *j) {
        if (!j)
                return NULL;
        job_reap(j);
        if (j->free_data)
                j->free_data(j->data);
        config_done(&j->config);
        free(j->sysfs_root);
        free(j->dev_dir);
        free(j->record_dir);
        free(j->state_dir);
        free(j);
        return NULL;
}

void ctrljob_execute(CtrlJob *j) {
        Controller *c = &j->controller;

        admin_set_thread_in_flight(&j->in_flight);
        switch (j->kind) {
        case CTRL_JOB_SYNC:
                j->r = controller_sync(c, &j->ctx, j->reason, &j->outcome);
                break;
        case CTRL_JOB_PROGRAM:
                j->r = controller_program(c, &j->ctx, &j->table, j->reason, &j->outcome);
                break;
        case CTRL_JOB_RESTORE:
                j->r = controller_restore(c, &j->ctx, j->reason, &j->outcome);
                break;
        case CTRL_JOB_CALL:
                j->r = j->call(j->data);
                break;
        case _CTRL_JOB_KIND_MAX:
        case _CTRL_JOB_KIND_INVALID:
                j->r = -EINVAL;
                break;
        }
        admin_set_thread_in_flight(NULL);
}

void ctrljob_cancel(CtrlJob *j) {
        atomic_store(&j->in_flight.cancel, true);
}

uint64_t ctrljob_command_age_usec(const CtrlJob *j, uint64_t now_usec) {
        uint64_t since = atomic_load(&((CtrlJob *) j)->in_flight.since_usec);

        return since == 0 || now_usec < since ? 0 : now_usec - since;
}

/* ---- the queue ---- */

int ctrljob_queue_new(CtrlJobQueue **ret) {
        CtrlJobQueue *q = calloc(1, sizeof *q);

        if (!q)
                return -ENOMEM;
        q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (q->efd < 0) {
                int r = negative_errno();
                free(q);
                return r;
        }
        atomic_init(&q->n_ref, 1);
        (void) pthread_mutex_init(&q->lock, NULL);
        *ret = q;
        return 0;
}

static CtrlJobQueue *ctrljob_queue_ref(CtrlJobQueue *q) {
        atomic_fetch_add(&q->n_ref, 1);
        return q;
}

CtrlJobQueue *ctrljob_queue_unref(CtrlJobQueue *q) {
        if (!q || atomic_fetch_sub(&q->n_ref, 1) > 1)
                return NULL;
        while (q->head) {
                CtrlJob *j = q->head;
                q->head = j->next;
                ctrljob_free(j);
        }
        (void) close(q->efd);
        (void) pthread_mutex_destroy(&q->lock);
        free(q);
        return NULL;
}

int ctrljob_queue_fd(const CtrlJobQueue *q) {
        return q->efd;
}

static void queue_push(CtrlJobQueue *q, CtrlJob *j) {
        uint64_t one = 1;

        j->next = NULL;
        j->queue = NULL;
        (void) pthread_mutex_lock(&q->lock);
        if (q->tail)
                q->tail->next = j;
        else
                q->head = j;
        q->tail = j;
        /* under the lock: a pop that empties the list and drains the counter cannot miss this one */
        (void) write(q->efd, &one, sizeof one);
        (void) pthread_mutex_unlock(&q->lock);
}

CtrlJob *ctrljob_queue_pop(CtrlJobQueue *q) {
        CtrlJob *j;
        uint64_t n;

        (void) pthread_mutex_lock(&q->lock);
        j = q->head;
        if (j) {
                q->head = j->next;
                if (!q->head)
                        q->tail = NULL;
                j->next = NULL;
        }
        if (!q->head)
                (void) read(q->efd, &n, sizeof n);   /* nonblocking: EAGAIN when already drained */
        (void) pthread_mutex_unlock(&q->lock);
        if (j)
                job_reap(j);
        return j;
}

/* ---- the thread ---- */

static void *job_thread(void *userdata) {
        CtrlJob *j = userdata;
        CtrlJobQueue *q = j->queue;

        ctrljob_execute(j);
        /* from here on @j is the popper's */
        queue_push(q, j);
        (void) ctrljob_queue_unref(q);
        return NULL;
}

/* A thread attribute for @j's thread, on a new stack of its own (guard page at the bottom). */
static int job_attr(pthread_attr_t *attr, void **ret_stack) {
        void *stack;
        int r;

        stack = mmap(NULL, JOB_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return negative_errno();
        (void) mprotect(stack, (size_t) sysconf(_SC_PAGESIZE), PROT_NONE);
        r = pthread_attr_init(attr);
        if (r == 0) {
                r = pthread_attr_setstack(attr, stack, JOB_STACK_SIZE);
                if (r != 0)
                        (void) pthread_attr_destroy(attr);
        }
        if (r != 0) {
                (void) munmap(stack, JOB_STACK_SIZE);
                return -r;
        }
        *ret_stack = stack;
        return 0;
}

int ctrljob_start(CtrlJob *j, CtrlJobQueue *q) {
        sigset_t all, old;
        pthread_attr_t attr;
        void *stack = NULL;
        int r;

        j->started_usec = now_usec();
        r = job_attr(&attr, &stack);
        if (r < 0)
                return r;
        j->queue = ctrljob_queue_ref(q);
        /* the new thread inherits this mask: signals stay the event loop's */
        (void) sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &old);
        j->stack = stack;
        r = pthread_create(&j->thread, &attr, job_thread, j);
        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
        (void) pthread_attr_destroy(&attr);
        if (r != 0) {
                j->stack = NULL;
                (void) munmap(stack, JOB_STACK_SIZE);
                /* no thread: run it here, and it lands on @q all the same (the caller finds it there,
                 * as after a thread: never finished from inside the call that started it) */
                ctrljob_execute(j);
                queue_push(q, j);
                (void) ctrljob_queue_unref(q);
                return 1;
        }
        return 0;
}

/* Jobs given up on (ctrljob_run() timed out): kept reachable until the process ends, so that
 * nothing reads them as leaked while their thread still sits in the kernel. */
static CtrlJobQueue *abandoned[16];
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;

int ctrljob_run(CtrlJob *j, uint64_t deadline_usec) {
        _cleanup_(ctrljob_queue_unrefp) CtrlJobQueue *q = NULL;
        int r;

        r = ctrljob_queue_new(&q);
        if (r < 0)
                return r;
        if (!q)         /* set on success; said for the static analyzer */
                return -ENOMEM;
        r = ctrljob_start(j, q);
        if (r < 0)
                return r;
        for (;;) {
                struct pollfd p = { .fd = ctrljob_queue_fd(q), .events = POLLIN };
                uint64_t age;

                if (ctrljob_queue_pop(q))
                        return 0;   /* it is @j */
                /* the deadline is the drive's: it counts from the command the job waits for */
                age = ctrljob_command_age_usec(j, now_usec());
                if (age >= deadline_usec)
                        break;
                (void) poll(&p, 1, (int) MIN((deadline_usec - age) / 1000u + 1, (uint64_t) 100));
        }
        ctrljob_cancel(j);
        (void) pthread_mutex_lock(&abandoned_lock);
        for (size_t i = 0; i < ELEMENTSOF(abandoned); i++)
                if (!abandoned[i]) {
                        abandoned[i] = q;
                        q = NULL;     /* our reference stays with it */
                        break;
                }
        (void) pthread_mutex_unlock(&abandoned_lock);
        return -ETIMEDOUT;
}
