/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the adaptive policy learned about a drive, kept across restarts: the file
 * round-trips, the parser is strict, the serial is only ever a hash, and a policy
 * that takes up a file knows what the one that wrote it knew.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapt.h"
#include "check.h"
#include "learned-store.h"
#include "learned.h"
#include "sim-adapt.h"
#include "sim.h"
#include "test-drives.h"

#define MS(x) ((uint64_t) ((x) * 1000000.0 + 0.5))

static const char good[] = "# a comment\n"
                           "version=1\n"
                           "model=Samsung SSD 970 EVO Plus 2TB\n"
                           "firmware=2B2QEXM7\n"
                           "serial_hash=0123456789abcdef\n"
                           "gaps_seen=1234\n"
                           "hist_elapsed_ms=28000\n"
                           "bucket=37 gaps_milli=1500\n"
                           "bucket=60 gaps_milli=250\n"
                           "awake=count=10 sum_ns=1000000 max_ns=150000\n"
                           "state=4 count=6 sum_ns=48600000 max_ns=8200000\n";

static int parse(const char *text, Learned *l, char **err) {
        return learned_parse(text, strlen(text), l, err);
}

static void test_round_trip(void) {
        Learned l, back;
        char *text = NULL, *err = NULL;

        current = "round trip";
        CHECK(parse(good, &l, &err) == 0 && err == NULL);
        CHECK(strcmp(l.model, "Samsung SSD 970 EVO Plus 2TB") == 0 && strcmp(l.firmware, "2B2QEXM7") == 0);
        CHECK(l.serial_hash == UINT64_C(0x0123456789abcdef) && l.gaps_seen == 1234 && l.hist_elapsed_ms == 28000);
        CHECK(l.hist_milli[37] == 1500 && l.hist_milli[60] == 250 && l.hist_milli[38] == 0);
        CHECK(l.awake.count == 10 && l.state[4].sum_ns == 48600000 && l.state[3].count == 0);
        CHECK(learned_format(&l, &text) == 0);
        CHECK(parse(text, &back, NULL) == 0 && learned_equal(&l, &back));
        free(text);
        text = NULL;

        /* version 2: the gaps wake-ups hid, the same bucket at two floors */
        static const char good2[] = "version=2\nmodel=m\nfirmware=f\nserial_hash=0123456789abcdef\ngaps_seen=1\n"
                                    "hist_elapsed_ms=1\nhidden=40 floor=0 gaps_milli=3000\n"
                                    "hidden=40 floor=1 gaps_milli=2000\nhidden_after=70 gaps_milli=1000\n";
        CHECK(parse(good2, &l, &err) == 0 && err == NULL);
        CHECK(l.hidden_milli[0][40] == 3000 && l.hidden_milli[1][40] == 2000 && l.hidden_milli[2][40] == 0);
        CHECK(l.hidden_after_milli[70] == 1000 && l.hidden_after_milli[40] == 0);
        CHECK(learned_format(&l, &text) == 0);
        CHECK(text && strstr(text, "\nversion=2\n") && strstr(text, "\nhidden=40 floor=1 gaps_milli=2000\n"));
        CHECK(parse(text, &back, NULL) == 0 && learned_equal(&l, &back));
        back.hidden_milli[1][40]++;
        CHECK(!learned_equal(&l, &back));
        free(text);
}

static void test_strict(void) {
        static const struct {
                const char *text, *why;
        } bad[] = {
                { "model=x\n", "line 1: the first key must be version=" },
                { "version=3\n", "line 1: unsupported version (this nvme-apstd reads versions 1 and 2)" },
                { "version=0\n", "line 1: unsupported version" },
                { "version=1\nmodel=a\nfirmware=b\nserial_hash=0123456789abcdef\ngaps_seen=1\n", "incomplete" },
                { "version=1\nmodel=a\nmodel=b\n", "line 3: key given twice" },
                { "version=1\nserial_hash=0123456789ABCDEF\n", "line 2: serial_hash" },
                { "version=1\nserial_hash=SN12345\n", "line 2: serial_hash" },
                { "version=1\nbucket=98 gaps_milli=1\n", "line 2: expected a number first" },
                { "version=1\nbucket=3 gaps_milli=1\nbucket=3 gaps_milli=2\n", "line 3: bucket given twice" },
                { "version=1\nbucket=3 gaps_milli=0\n", "line 2: a bucket line with no gaps" },
                { "version=1\ngaps_seen=1000000000000001\n", "line 2: gaps_seen" },
                { "version=1\nstate=0 count=1 sum_ns=1 max_ns=1\n", "line 2: state 0 is not a sleep state" },
                { "version=1\nstate=4 count=2 sum_ns=10 max_ns=11\n", "line 2: count, sum_ns and max_ns" },
                { "version=1\nstate=4 count=2 sum_ns=10 max_ns=4\n", "line 2: count, sum_ns and max_ns" },
                { "version=1\nstate=4 count=0 sum_ns=0 max_ns=0\n", "line 2: count, sum_ns and max_ns" },
                { "version=1\nstate=4 count=1 sum_ns=5\n", "line 2: a field is missing" },
                { "version=1\nawake=count=1 sum_ns=5 max_ns=5 extra=1\n", "line 2: unknown key" },
                { "version=1\nwhat=1\n", "line 2: unknown key" },
                /* the hidden gaps: version 2 only, a floor of the four, each bucket once per floor */
                { "version=1\nhidden=3 floor=1 gaps_milli=1\n", "line 2: unknown key" },
                { "version=1\nhidden_after=3 gaps_milli=1\n", "line 2: unknown key" },
                { "version=2\nhidden=3 floor=4 gaps_milli=1\n", "line 2: floor: 0 to 3" },
                { "version=2\nhidden=3 gaps_milli=1\n", "line 2: a field is missing" },
                { "version=2\nhidden=98 floor=1 gaps_milli=1\n", "line 2: expected a number first" },
                { "version=2\nhidden=3 floor=1 gaps_milli=1\nhidden=3 floor=1 gaps_milli=2\n",
                  "line 3: bucket given twice" },
                { "version=2\nhidden_after=3 gaps_milli=1\nhidden_after=3 gaps_milli=1\n", "line 3: bucket given twice" },
                { "version=2\nhidden_after=3 gaps_milli=0\n", "line 2: a bucket line with no gaps" },
                { "version=2\nhidden=3 floor=0 gaps_milli=1000000000000001\n", "line 2: not a number in range" },
        };

        current = "strict";
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                Learned l;
                char *err = NULL;
                int r = parse(bad[i].text, &l, &err);
                CHECK(r == -EINVAL);
                CHECK(err && strstr(err, bad[i].why) != NULL);
                if (!err || !strstr(err, bad[i].why))
                        fprintf(stderr, "  case %zu: %s\n", i, err ? err : "(none)");
                free(err);
        }
}

static void test_path(void) {
        char *p = NULL;

        current = "path";
        CHECK(learned_path("/var/lib/nvme-apstd", "Samsung SSD 970/EVO", "2B2Q", UINT64_C(0xab), &p) == 0);
        CHECK(p && strcmp(p, "/var/lib/nvme-apstd/adaptive/Samsung%20SSD%20970%2FEVO@2B2Q@00000000000000ab.learned") == 0);
        free(p);
        CHECK(learned_path("", "m", "f", 0, &p) == -EINVAL);
        /* FNV-1a 64 of "" and of "a" (the published test vectors) */
        CHECK(learned_serial_hash("") == UINT64_C(0xcbf29ce484222325));
        CHECK(learned_serial_hash("a") == UINT64_C(0xaf63dc4c8601ec8c));
}

static void test_restore(void) {
        static TraceIo io[8192];
        IdCtrl id = drive_970_like();
        ApstParams p = APST_PARAMS_DEFAULT;
        SimParams sp = SIM_PARAMS_DEFAULT;
        SimDrive d;
        SimPolicy pol;
        ApstTable t;
        SimResult r;
        Adapt *a = calloc(1, sizeof(Adapt)), *b = calloc(1, sizeof(Adapt));
        Learned l, back;
        char *text = NULL;
        size_t n = 0;
        uint64_t tt = 0;

        current = "restore";
        CHECK(a && b);
        /* A minute of writes every 50 or 400 ms on a drive that wakes 3x slower than it says. */
        while (n < 8192 && tt < MS(60000)) {
                io[n++] = (TraceIo) { .t_ns = tt, .bytes = 4096, .op = TRACE_OP_WRITE };
                tt += n % 3 ? MS(50) : MS(400);
        }
        p.policy = APST_POLICY_ADAPTIVE;
        CHECK(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &d) == 0);
        CHECK(sim_drive_scale_exlat(&d, 3.0) == 0);
        CHECK(adapt_init(a, &id, NULL, &p, 0, &t) == 0);
        adapt_sim_policy_gaps(&pol, a);
        CHECK(sim_run(&d, io, n, &sp, &pol, &r) == 0);
        if (getenv("TEST_VERBOSE"))
                for (size_t i = 0; i < r.n_reprograms; i++)
                        fprintf(stderr, "%.1f %s\n", r.reprograms[i].t_ns / 1e9, r.reprograms[i].reason);
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "ps3 %u/%" PRIu64 " ps4 %u/%" PRIu64 " awake %" PRIu64 "\n", shadow_exlat_us(&a->sd, 3),
                        a->pcal.state[3].count, shadow_exlat_us(&a->sd, 4), a->pcal.state[4].count, a->pcal.awake.count);
        sim_result_done(&r);
        CHECK(a->gaps_seen > 100);
        /* it measured the lie on the states it visited */
        CHECK(shadow_exlat_us(&a->sd, 3) > 2 * 1200 || shadow_exlat_us(&a->sd, 4) > 2 * 8000);

        adapt_learned_capture(a, &l);
        CHECK(strcmp(l.model, "test drive") == 0 && l.serial_hash == learned_serial_hash("S4EWNX0R123456"));
        CHECK(learned_format(&l, &text) == 0);
        /* the serial is never in the file */
        CHECK(text && strstr(text, "S4EWNX0R123456") == NULL);
        CHECK(learned_parse(text, strlen(text), &back, NULL) == 0 && learned_equal(&l, &back));

        /* A new run takes it up: the same exit latencies, the same evidence, the histogram. */
        CHECK(adapt_init(b, &id, NULL, &p, 0, &t) == 0);
        CHECK(adapt_learned_restore(b, &back) == 0);
        for (unsigned ps = 1; ps <= 4; ps++) {
                CHECK(shadow_exlat_us(&b->sd, ps) == shadow_exlat_us(&a->sd, ps));
                CHECK(shadow_exlat_us(&b->sd_cand, ps) == shadow_exlat_us(&a->sd_cand, ps));
        }
        CHECK(fabs(b->gaps_seen - a->gaps_seen) < 1 && b->gaps_seen > 100);
        CHECK(fabs(b->hist.gaps[gaphist_bucket(MS(400))] - a->hist.gaps[gaphist_bucket(MS(400))]) < 0.01);

        /* Another drive of the same model (another serial) takes nothing. */
        Adapt *c = calloc(1, sizeof(Adapt));
        REQUIRE(c);
        strcpy(id.serial, "S4EWNX0R999999");
        CHECK(adapt_init(c, &id, NULL, &p, 0, &t) == 0);
        CHECK(adapt_learned_restore(c, &back) == -ESTALE);
        CHECK(c->gaps_seen == 0);
        free(c);
        free(text);
        free(a);
        free(b);
}

/* The evidence of yesterday counts today. An hour of a quiet machine (a 20 s gap at a time,
 * each ended by a wake-up from ps4) takes the policy off the kernel's table; what it learned,
 * through the file's text, lets the next run leave it at its first delta, where a run with
 * nothing learned is still on the kernel's. */
static void quiet_delta(Adapt *a, uint64_t *now) {
        GapHist delta = {};
        ApstTable t;
        AdaptDecision why;

        gaphist_add_gap(&delta, MS(20000), MS(8.1));
        *now += MS(20000);
        CHECK(adapt_observe_gaps(a, &delta, *now, &t, &why) >= 0);
}

static void test_restore_evidence(void) {
        IdCtrl id = drive_970_like();
        ApstParams p = APST_PARAMS_DEFAULT;
        ApstTable t;
        Adapt *a = calloc(1, sizeof(Adapt)), *b = calloc(1, sizeof(Adapt)), *c = calloc(1, sizeof(Adapt));
        Learned l, back;
        char *text = NULL;
        uint64_t now = 0;

        current = "restore-evidence";
        REQUIRE(a && b && c);
        p.policy = APST_POLICY_ADAPTIVE;
        REQUIRE(adapt_init(a, &id, NULL, &p, 0, &t) == 0);
        REQUIRE(adapt_start_exact(a, &t) == 0);
        for (unsigned i = 0; i < 180; i++)
                quiet_delta(a, &now);
        CHECK(!apst_table_equal(&a->current_table, &a->kernel_table));

        adapt_learned_capture(a, &l);
        CHECK(learned_format(&l, &text) == 0);
        CHECK(text && learned_parse(text, strlen(text), &back, NULL) == 0);
        REQUIRE(adapt_init(b, &id, NULL, &p, 0, &t) == 0);
        CHECK(adapt_learned_restore(b, &back) == 0);
        REQUIRE(adapt_start_exact(b, &t) == 0);
        REQUIRE(adapt_init(c, &id, NULL, &p, 0, &t) == 0);
        REQUIRE(adapt_start_exact(c, &t) == 0);
        now = 0;
        quiet_delta(b, &now);
        now = 0;
        quiet_delta(c, &now);
        CHECK(b->programs == 1 && !apst_table_equal(&b->current_table, &b->kernel_table));
        CHECK(c->programs == 0 && apst_table_equal(&c->current_table, &c->kernel_table));
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "before: %s\nafter the restart: %s\n", a->last.reason, b->last.reason);
        free(text);
        free(a);
        free(b);
        free(c);
}

/* What the eBPF program would have handed the policy, delta by delta, under the kernel's table: a
 * static policy that keeps each. */
typedef struct Recorded {
        ApstTable table;
        size_t n;
        uint64_t t_ns[64];
        GapHist delta[64];
} Recorded;

static int record_gaps(void *userdata, uint64_t now_ns, const GapHist *delta, ApstTable *ret_table) {
        Recorded *r = userdata;

        (void) ret_table;
        if (r->n < 64) {
                r->t_ns[r->n] = now_ns;
                r->delta[r->n++] = *delta;
        }
        return 0;
}

static int record_start(void *userdata, ApstTable *ret_table) {
        *ret_table = ((Recorded *) userdata)->table;
        return 0;
}

/* The gaps a wake-up hid are evidence the decision weighs (adapt.c, evidence_wake()), so they
 * are kept too. A machine coming out of pauses (test-adapt.c's exact/hidden): every 0.8 to 1.3 s
 * a request, and 3.5, 7 and 10.5 ms after it three more; under the kernel's table (ps4 by then,
 * 12 ms to wake) the three wait behind the first. The daemon stops after the first seconds under
 * the kernel's table, and starts again: with the file it decides as it would have without the
 * restart; with only the gaps shown (as from a version 1 file) it sleeps earlier, on evidence
 * that leaves out the requests its own wake-ups would meet. */
static void test_restore_hidden(void) {
        static TraceIo io[64];
        static Recorded rec;
        IdCtrl id = drive_slow_entry();
        ApstParams p = APST_PARAMS_DEFAULT, kp = APST_PARAMS_DEFAULT;
        SimParams sp = SIM_PARAMS_DEFAULT;
        SimDrive sd;
        SimPolicy pol;
        SimResult r;
        ApstPlan kplan;
        ApstTable t, tb, tc;
        AdaptDecision why;
        Adapt *a = calloc(1, sizeof(Adapt)), *b = calloc(1, sizeof(Adapt)), *c = calloc(1, sizeof(Adapt));
        Learned l, back, shown;
        char *text = NULL, cb[160], cc[160];
        size_t n = 1;
        unsigned differ = 0;
        uint64_t tt = MS(1000), x = 7;

        current = "restore-hidden";
        REQUIRE(a && b && c);
        io[0] = (TraceIo) { .t_ns = 0, .bytes = 4096, .op = TRACE_OP_READ };
        while (n + 4 <= sizeof io / sizeof io[0] && tt < MS(10000)) {
                for (unsigned k = 0; k < 4; k++)
                        io[n++] = (TraceIo) { .t_ns = tt + MS(3.5) * k, .bytes = 4096, .op = TRACE_OP_READ };
                x = x * 6364136223846793005u + 1442695040888963407u;
                tt += MS(800 + (double) ((x >> 33) % 500));
        }
        REQUIRE(sim_drive_from_idctrl(&id, APST_P0_DEFAULT_UW, &sd) == 0);
        kp.policy = APST_POLICY_KERNEL;
        REQUIRE(apst_build(&id, NULL, &kp, &kplan) == 0);
        p.policy = APST_POLICY_ADAPTIVE;
        REQUIRE(adapt_init(a, &id, NULL, &p, 0, &t) == 0);
        rec.table = kplan.table;
        pol = (SimPolicy) { .name = "kernel", .sample_period_ns = ADAPT_GAPS_PERIOD_NS, .start = record_start,
                            .gaps = record_gaps, .userdata = &rec, .hide_floors = a->hide_floors };
        memcpy(pol.hide_floor_ns, a->hide_floor_ns, sizeof pol.hide_floor_ns);
        REQUIRE(sim_run(&sd, io, n, &sp, &pol, &r) == 0);
        sim_result_done(&r);
        REQUIRE(rec.n > 4);

        /* A stop after each delta in turn, and a start with the file, or with only its gaps shown. */
        for (size_t stop = 1; stop < rec.n; stop++) {
                REQUIRE(adapt_init(a, &id, NULL, &p, 0, &t) == 0);
                REQUIRE(adapt_start_exact(a, &t) == 0);
                for (size_t i = 0; i < stop; i++)
                        CHECK(adapt_observe_gaps(a, &rec.delta[i], rec.t_ns[i], &t, &why) >= 0);
                adapt_learned_capture(a, &l);
                free(text);
                text = NULL;
                CHECK(learned_format(&l, &text) == 0);
                CHECK(text && learned_parse(text, strlen(text), &back, NULL) == 0 && learned_equal(&l, &back));
                if (gaphist_total_hidden(&rec.delta[0]) > 0) {
                        CHECK(l.hidden_milli[1][gaphist_bucket(MS(2))] > 0 && l.hidden_after_milli[0] == 0);
                        CHECK(text && strstr(text, "version=2\n") && strstr(text, "\nhidden=") &&
                              strstr(text, "\nhidden_after="));
                }
                shown = back;
                memset(shown.hidden_milli, 0, sizeof shown.hidden_milli);
                memset(shown.hidden_after_milli, 0, sizeof shown.hidden_after_milli);

                REQUIRE(adapt_init(b, &id, NULL, &p, 0, &t) == 0);
                CHECK(adapt_learned_restore(b, &back) == 0);
                for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                        for (unsigned bk = 0; bk < GAP_BUCKETS; bk++)
                                CHECK(fabs(b->hidden[k].gaps[bk] - a->hidden[k].gaps[bk]) < 0.001);
                for (unsigned bk = 0; bk < GAP_BUCKETS; bk++)
                        CHECK(fabs(b->hidden_after.gaps[bk] - a->hidden_after.gaps[bk]) < 0.001);
                REQUIRE(adapt_init(c, &id, NULL, &p, 0, &t) == 0);
                CHECK(adapt_learned_restore(c, &shown) == 0);
                REQUIRE(adapt_start_exact(b, &tb) == 0);
                REQUIRE(adapt_start_exact(c, &tc) == 0);
                for (size_t i = stop; i < rec.n && b->programs == 0 && c->programs == 0; i++) {
                        CHECK(adapt_observe_gaps(b, &rec.delta[i], rec.t_ns[i], &tb, &why) >= 0);
                        CHECK(adapt_observe_gaps(c, &rec.delta[i], rec.t_ns[i], &tc, &why) >= 0);
                }
                adapt_chain_describe(&b->current, cb, sizeof cb);
                adapt_chain_describe(&c->current, cc, sizeof cc);
                if (getenv("TEST_VERBOSE"))
                        fprintf(stderr, "stop after %zu deltas, then: %s; with the gaps shown only: %s\n", stop, cb, cc);
                differ += strcmp(cb, cc) != 0;
        }
        /* the hidden gaps the file kept moved a decision after the restart */
        CHECK(differ > 0);

        /* hidden gaps at a floor the drive does not have (it has three): not this drive's */
        back.hidden_milli[3][10] = 1000;
        REQUIRE(adapt_init(c, &id, NULL, &p, 0, &t) == 0);
        CHECK(adapt_learned_restore(c, &back) == -ESTALE && c->gaps_seen == 0);
        free(text);
        free(a);
        free(b);
        free(c);
}

static void test_store(void) {
        char dir[] = "/tmp/test-learned-XXXXXX", *path = NULL, *err = NULL;
        Learned l, back;
        struct stat st;

        current = "store";
        REQUIRE(mkdtemp(dir));
        CHECK(parse(good, &l, NULL) == 0);
        CHECK(learned_load(dir, l.model, l.firmware, l.serial_hash, &back, &err) == -ENOENT);
        CHECK(learned_save(dir, &l) == 0);
        CHECK(learned_load(dir, l.model, l.firmware, l.serial_hash, &back, &err) == 0 && learned_equal(&l, &back));
        /* the largest file there can be (every line, every count at its bound) is within what is read */
        Learned big = l;
        for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                big.hist_milli[b] = big.hidden_after_milli[b] = LEARNED_COUNT_MAX;
                for (unsigned k = 0; k < GAP_HIDE_FLOORS; k++)
                        big.hidden_milli[k][b] = LEARNED_COUNT_MAX;
        }
        big.gaps_seen = big.hist_elapsed_ms = LEARNED_COUNT_MAX;
        big.awake = (PassiveCalibSum) { .count = LEARNED_COUNT_MAX, .sum_ns = UINT64_MAX, .max_ns = UINT64_MAX };
        for (unsigned ps = 1; ps < IDCTRL_MAX_PS; ps++)
                big.state[ps] = big.awake;
        CHECK(learned_save(dir, &big) == 0);
        CHECK(learned_load(dir, l.model, l.firmware, l.serial_hash, &back, &err) == 0 && learned_equal(&big, &back));
        CHECK(learned_save(dir, &l) == 0);
        CHECK(learned_path(dir, l.model, l.firmware, l.serial_hash, &path) == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
        /* the file of another drive of the model is not this drive's */
        CHECK(learned_load(dir, l.model, l.firmware, l.serial_hash + 1, &back, &err) == -ENOENT);
        /* a file that says it is for another drive is refused, with its path */
        FILE *f = fopen(path, "w");
        REQUIRE(f);
        fputs("version=1\nmodel=other\nfirmware=2B2QEXM7\nserial_hash=0123456789abcdef\ngaps_seen=1\n"
              "hist_elapsed_ms=1\n", f);
        fclose(f);
        CHECK(learned_load(dir, l.model, l.firmware, l.serial_hash, &back, &err) == -EINVAL);
        CHECK(err && strstr(err, path) && strstr(err, "another drive"));
        free(err);
        (void) unlink(path);
        free(path);
        if (asprintf(&path, "%s/adaptive", dir) > 0) {
                (void) rmdir(path);
                free(path);
        }
        (void) rmdir(dir);
}

int main(void) {
        test_round_trip();
        test_strict();
        test_path();
        test_restore();
        test_restore_evidence();
        test_restore_hidden();
        test_store();
        printf("%u checks, %u failed\n", n_checks, n_failed);
        return n_failed ? 1 : 0;
}
