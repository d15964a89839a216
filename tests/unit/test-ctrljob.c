/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * engine/ctrljob.c's threads: a step runs in a thread of its own, lands on the queue with its
 * result, and once it is popped nothing of its thread is left mapped (glibc would keep the stack
 * of an exited thread cached, resident pages and all, for the idle daemon's lifetime). A step
 * that uses five times the stack the deepest engine step touched still runs.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "ctrljob.h"

/* What a step saw of its thread: who ran it, and an address on its stack. */
typedef struct Seen {
        pthread_t thread;
        uintptr_t stack_addr;
        size_t stack_bytes;     /* how much of its stack it used on purpose */
        int answer;
} Seen;

static int call(void *data) {
        Seen *s = data;
        volatile char buf[s->stack_bytes ? s->stack_bytes : 1];

        /* touch every page of @buf: an overflow would hit the guard page and end the test */
        for (size_t i = 0; i < sizeof buf; i += 1024)
                buf[i] = (char) i;
        s->thread = pthread_self();
        s->stack_addr = (uintptr_t) &buf[0];
        return s->answer;
}

/* Whether @addr is inside one of this process's mappings (/proc/self/maps). */
static int mapped(uintptr_t addr) {
        FILE *f = fopen("/proc/self/maps", "re");
        unsigned long lo, hi;
        char line[512];
        int found = 0;

        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
                        found = 1;
        (void) fclose(f);
        return found;
}

static CtrlJob *wait_pop(CtrlJobQueue *q) {
        for (int i = 0; i < 500; i++) {          /* 5 s: each step here is a few µs of work */
                struct pollfd p = { .fd = ctrljob_queue_fd(q), .events = POLLIN };
                CtrlJob *j = ctrljob_queue_pop(q);

                if (j)
                        return j;
                (void) poll(&p, 1, 10);
        }
        return NULL;
}

/* Four steps at once, as at a start with four controllers: each in its own thread, each result
 * back, and no stack of theirs mapped once they are popped. */
static void test_steps_leave_no_stack(void) {
        Seen seen[4] = {};
        CtrlJobQueue *q = NULL;

        current = "steps leave no stack";
        REQUIRE(ctrljob_queue_new(&q) == 0 && q);
        for (size_t i = 0; i < ELEMENTSOF(seen); i++) {
                CtrlJob *j = NULL;

                seen[i].answer = (int) i + 10;
                REQUIRE(ctrljob_new_call(call, &seen[i], NULL, &j) == 0);
                j->userdata = &seen[i];
                CHECK(ctrljob_start(j, q) == 0);
        }
        for (size_t n = 0; n < ELEMENTSOF(seen); n++) {
                CtrlJob *j = wait_pop(q);
                Seen *s;

                REQUIRE(j);
                s = j->userdata;
                CHECK(j->r == s->answer);
                CHECK(!pthread_equal(s->thread, pthread_self()));
                CHECK(s->stack_addr != 0);
                CHECK(mapped(s->stack_addr) == 0);
                ctrljob_free(j);
        }
        (void) ctrljob_queue_unref(q);
}

/* A step that uses five times the 28 KiB the deepest engine step touched. */
static void test_deep_step(void) {
        Seen s = { .stack_bytes = 5 * 28 * 1024, .answer = 7 };
        CtrlJob *j = NULL;

        current = "deep step";
        REQUIRE(ctrljob_new_call(call, &s, NULL, &j) == 0);
        CHECK(ctrljob_run(j, 5 * 1000 * 1000) == 0);
        CHECK(j->r == 7);
        CHECK(!pthread_equal(s.thread, pthread_self()));
        CHECK(mapped(s.stack_addr) == 0);
        ctrljob_free(j);
}

int main(void) {
        test_steps_leave_no_stack();
        test_deep_step();
        return check_exit_status();
}
