/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The engine's learned table (controller.c), on the parts that need no device:
 * controller_program() refuses a table beyond max_latency_us or invalid for the
 * controller before anything is opened, and controller_replan() keeps the learned
 * table for an unchanged configuration and drops it for a changed one, and keeps
 * it aside under a latency hold's cap it does not fit.
 * A quarantine is planned without its states by every policy, and keeps a learned table out of force.
 * And a removal caught between the gate and the open: the /dev node gone while
 * sysfs still said live at the gate.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "config.h"
#include "controller.h"
#include "fileio.h"
#include "idctrl.h"

static void load_samsung(IdCtrl *id) {
        char *buf = NULL;
        size_t len = 0;

        CHECK(read_full_file(TEST_DATA_DIR "/idctrl/05-samsung-ssd-970-evo-plus-2tb.bin", 1 << 20, 0, &buf, &len) ==
              0);
        CHECK(idctrl_parse_any(buf, len, id) == 0);
        free(buf);
}

static void setup(Controller *c, Config *cfg, ControllerContext *ctx, SysPlatform *plat) {
        controller_init(c, "nvme0");
        load_samsung(&c->id);
        (void) snprintf(c->sys.transport, sizeof c->sys.transport, "pcie");
        (void) snprintf(c->sys.state, sizeof c->sys.state, "live");
        c->identified = true;
        *plat = (SysPlatform) {};
        *ctx = (ControllerContext) {
                .mode = CONTROLLER_MODE_DAEMON,
                .sysfs_root = "/nonexistent",
                .dev_dir = "/nonexistent",
                .config = cfg,
                .platform = plat,
        };
        CHECK(controller_replan(c, ctx, NULL) == 0);
        CHECK(c->plan.verdict == DEVICE_MANAGE);
}

/* A sysfs `state` attribute that reads "live" the first time and @second after: a FIFO that a
 * thread keeps open for writing. It writes one value whenever the pipe is empty, so each read
 * (one read() per open, as sysfs_read_attr() does) finds exactly one; @consumed counts the values
 * read. A write while no reader has it open fails (EPIPE, SIGPIPE ignored) and is tried again. */
typedef struct StateFeed {
        char path[256];
        const char *second;
        atomic_bool stop;
        unsigned written, consumed;
} StateFeed;

static void *state_feed(void *userdata) {
        StateFeed *f = userdata;
        int fd = -1;

        while (!atomic_load(&f->stop)) {
                int queued = 0;

                /* O_NONBLOCK: ENXIO until the first reader opens it, so the stop flag is seen */
                if (fd < 0 && (fd = open(f->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
                        CHECK(errno == ENXIO);
                else if (ioctl(fd, FIONREAD, &queued) == 0 && queued == 0) {
                        if (f->written > f->consumed)
                                f->consumed++;   /* the last value was read */
                        const char *v = f->written == 0 ? "live\n" : f->second;
                        ssize_t k = write(fd, v, strlen(v));
                        CHECK(k == (ssize_t) strlen(v) || (k < 0 && errno == EPIPE));
                        if (k > 0)
                                f->written++;
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = 1000000 }, NULL);
        }
        if (fd >= 0) {
                int queued = -1;
                if (ioctl(fd, FIONREAD, &queued) == 0 && queued == 0 && f->written > f->consumed)
                        f->consumed++;
                close(fd);
        }
        return NULL;
}

static void write_attr(const char *dir, const char *name, const char *value) {
        char path[512];

        CHECK((size_t) snprintf(path, sizeof path, "%s/%s", dir, name) < sizeof path);
        CHECK(write_file_atomic(path, value, strlen(value), 0644) == 0);
}

/* The gate reads sysfs live; before the open, the kernel tears the controller down and its /dev
 * node goes (ENOENT). When sysfs then reads @second_state, is the step's outcome @want? */
static void removed_before_open(const char *second_state, ControllerResult want) {
        char root[] = "/tmp/test-controller-XXXXXX", dir[256], dev[256];
        Controller c;
        Config cfg;
        ControllerContext ctx;
        SysPlatform plat;
        ControllerOutcome o;
        StateFeed feed = { .second = second_state };
        pthread_t t;

        REQUIRE(mkdtemp(root));
        CHECK((size_t) snprintf(dir, sizeof dir, "%s/class", root) < sizeof dir && mkdir(dir, 0755) == 0);
        CHECK((size_t) snprintf(dir, sizeof dir, "%s/class/nvme", root) < sizeof dir && mkdir(dir, 0755) == 0);
        CHECK((size_t) snprintf(dir, sizeof dir, "%s/class/nvme/nvme0", root) < sizeof dir && mkdir(dir, 0755) == 0);
        CHECK((size_t) snprintf(dev, sizeof dev, "%s/dev", root) < sizeof dev && mkdir(dev, 0755) == 0);
        write_attr(dir, "transport", "pcie\n");
        write_attr(dir, "model", "Samsung SSD 970 EVO Plus 2TB\n");
        CHECK((size_t) snprintf(feed.path, sizeof feed.path, "%s/state", dir) < sizeof feed.path);
        CHECK(mkfifo(feed.path, 0644) == 0);
        CHECK(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
        CHECK(pthread_create(&t, NULL, state_feed, &feed) == 0);

        config_init(&cfg);
        cfg.apst.policy = APST_POLICY_ADAPTIVE;
        setup(&c, &cfg, &ctx, &plat);
        ctx.sysfs_root = root;
        ctx.dev_dir = dev;   /* no nvme0 node in it */
        (void) controller_sync(&c, &ctx, "test", &o);
        atomic_store(&feed.stop, true);
        CHECK(pthread_join(t, NULL) == 0);

        /* the gate read live, the leaving check read again */
        CHECK(feed.consumed >= 2);
        CHECK(o.result == want);
        CHECK(o.error == -ENOENT);
        if (want == CONTROLLER_FAILED)
                CHECK(o.failed_step == CONTROLLER_STEP_OPEN);
        CHECK(!c.have_written);

        CHECK(unlink(feed.path) == 0);
        char cmd[300];
        CHECK((size_t) snprintf(cmd, sizeof cmd, "rm -rf '%s'", root) < sizeof cmd);
        CHECK(system(cmd) == 0);
        config_done(&cfg);
}

/* A quarantine (quarantine.h) is planned for by every policy, keeps a learned table that reaches it out of
 * force, and APST off plans APSTE = 0. */
static void test_quarantine(void) {
        Controller c;
        Config cfg;
        ControllerContext ctx;
        SysPlatform plat;
        ApstTable t = {};
        unsigned st[1] = { 4 };
        uint32_t itpt[1] = { 100 };
        bool changed;

        for (ApstPolicyKind p = 0; p < _APST_POLICY_MAX; p++) {
                config_init(&cfg);
                cfg.apst.policy = p;
                setup(&c, &cfg, &ctx, &plat);
                CHECK(apst_deepest(&c.plan.plan.table) == 4);   /* the default budget reaches ps4 */
                c.quarantine_below = 4;
                CHECK(controller_replan(&c, &ctx, &changed) == 0);
                CHECK(changed);
                CHECK(c.plan.plan.table.apste);
                CHECK(apst_deepest(&c.plan.plan.table) == 3);
                config_done(&cfg);
        }
        printf("ok: every policy plans without the quarantined state\n");

        config_init(&cfg);
        setup(&c, &cfg, &ctx, &plat);
        apst_table_from_chain(&c.id, st, itpt, 1, &t);
        c.learned = t;
        c.have_learned = true;
        CHECK(apst_table_equal(controller_table(&c), &t));
        c.quarantine_below = 4;
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(apst_deepest(controller_table(&c)) == 3);
        printf("ok: a learned table that reaches a quarantined state is not in force\n");

        c.quarantine_below = QUARANTINE_APST_OFF;
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(changed && !controller_table(&c)->apste);
        CHECK(c.plan.plan.table.entry[0] == 0);
        printf("ok: a quarantine of APST plans APSTE = 0\n");
        config_done(&cfg);
}

int main(void) {
        Controller c;
        Config cfg;
        ControllerContext ctx;
        SysPlatform plat;
        ControllerOutcome o;
        ApstTable t = {};
        bool changed = true;
        unsigned st[1] = { 4 };
        uint32_t itpt[1] = { 100 };

        config_init(&cfg);
        cfg.apst.policy = APST_POLICY_ADAPTIVE;
        cfg.apst.max_latency_us = 5000;   /* ps3 (210 + 1200 us) fits, ps4 (2000 + 8000 us) does not */
        setup(&c, &cfg, &ctx, &plat);

        /* ps0 -> ps4 after 100 ms: a 10 ms wake, beyond max_latency_us */
        apst_table_from_chain(&c.id, st, itpt, 1, &t);
        CHECK(controller_program(&c, &ctx, &t, "adaptive", &o) == -ERANGE);
        CHECK(o.result == CONTROLLER_FAILED && o.failed_step == CONTROLLER_STEP_PLAN);
        CHECK(!c.have_learned && !c.have_written);
        printf("ok: a table beyond max_latency_us is refused before anything is sent\n");

        /* a target beyond npss is not a table for this controller */
        t = (ApstTable) { .apste = true };
        t.entry[0] = apst_entry_make(7, 100);
        CHECK(controller_program(&c, &ctx, &t, "adaptive", &o) == -EINVAL);
        CHECK(!c.have_learned);
        printf("ok: an invalid table is refused\n");

        /* the learned table is what a sync writes; an unchanged reload keeps it */
        st[0] = 3;
        apst_table_from_chain(&c.id, st, itpt, 1, &t);
        c.learned = t;
        c.have_learned = true;
        CHECK(apst_table_equal(controller_table(&c), &t));
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(!changed && c.have_learned);
        printf("ok: an unchanged configuration keeps the learned table\n");

        /* a latency hold's cap: below ps3's wake, the plan has no idle state; the learned table is
         * kept but not written (it wakes slower than the cap), and is what a sync writes again when
         * the cap goes */
        c.latency_cap_us = 1000;
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(changed && c.have_learned);
        CHECK(c.plan.params.max_latency_us == 1000 && c.plan.configured_max_latency_us == 5000);
        CHECK(apst_worst_wake_us(&c.plan.plan.table, &c.id) == 0);   /* no idle state within 1 ms */
        CHECK(apst_table_equal(controller_table(&c), &c.plan.plan.table));
        printf("ok: a cap below the learned table's wake plans for the cap, the learned table kept aside\n");
        /* a table the adaptive policy chooses under the cap must fit the cap */
        CHECK(controller_program(&c, &ctx, &t, "adaptive", &o) == -ERANGE);
        CHECK(apst_table_equal(&c.learned, &t));
        printf("ok: under the cap the adaptive policy's choice is bounded by it\n");
        c.latency_cap_us = DEVICE_NO_CAP;
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(changed && c.have_learned && c.plan.params.max_latency_us == 5000);
        CHECK(apst_table_equal(controller_table(&c), &t));
        printf("ok: the cap gone, the learned table is what is written again\n");
        /* a cap above the configured budget changes nothing */
        c.latency_cap_us = 200000;
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(!changed && c.plan.params.max_latency_us == 5000 && apst_table_equal(controller_table(&c), &t));
        c.latency_cap_us = DEVICE_NO_CAP;
        CHECK(controller_replan(&c, &ctx, &changed) == 0 && !changed);
        printf("ok: a cap above the configured budget changes nothing\n");

        /* a changed knob (the stall budget) drops it: the plan's table is written again */
        cfg.apst.stall_budget_pct_x100 = 50;
        CHECK(controller_replan(&c, &ctx, &changed) == 0);
        CHECK(!c.have_learned);
        CHECK(changed == !apst_table_equal(&t, &c.plan.plan.table));
        CHECK(apst_table_equal(controller_table(&c), &c.plan.plan.table));
        printf("ok: a changed configuration drops the learned table\n");

        config_done(&cfg);

        test_quarantine();

        removed_before_open("deleting\n", CONTROLLER_GONE);
        removed_before_open("deleting (no IO)\n", CONTROLLER_GONE);
        removed_before_open("dead\n", CONTROLLER_GONE);
        printf("ok: a /dev node gone between the gate and the open of a controller being removed is no error\n");
        removed_before_open("live\n", CONTROLLER_FAILED);
        printf("ok: ... but of a live controller it is\n");
        return check_exit_status();
}
