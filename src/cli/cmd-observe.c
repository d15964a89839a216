/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `nvme-apstd observe`: load the eBPF I/O gap program (bpfwatch.h) for any
 * block disks, NVMe or not, wait, and print what the block layer saw: the exact
 * idle-gap histogram, the service time of the first request after each gap
 * bucket, the request count, and the requests that queued behind a slow first
 * request (gaps a wake-up hid, at the one floor any disk has: 0). Changes
 * nothing: the program only counts.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpfwatch.h"
#include "cli.h"
#include "gaphist.h"
#include "json-out.h"
#include "log.h"
#include "macro.h"
#include "sysfs.h"
#include "util.h"
#include "verbs.h"

#define OBSERVE_DEFAULT_SECONDS 10u
#define OBSERVE_MAX_SECONDS 86400u
#define OBSERVE_MAX_DISKS 64u     /* GAPK_SLOTS: one slot each */

typedef struct ObservedDisk {
        char name[32];
        uint64_t diskseq;
        int slot;
        GapHist h;
} ObservedDisk;

static void help(void) {
        printf("Usage: nvme-apstd observe [OPTIONS] [DISK...]\n\n"
               "Watch the block layer with eBPF for a while and print, for each disk (every whole\n"
               "disk when none is named, NVMe or not): the exact idle-gap histogram, the service\n"
               "time of the first request after each gap, the request count, and the requests that\n"
               "queued behind a slow first request (gaps a wake-up hid). Changes nothing.\n"
               "Needs root (CAP_BPF and CAP_PERFMON) and a kernel with BTF; without them it says\n"
               "why and exits 1.\n\n"
               "  -s --seconds N   watch for N seconds (default %u); Ctrl-C stops early\n"
               "  -j --json        print one JSON object (schema in nvme-apstd(8))\n"
               "  -h --help        show this help\n"
               "     --version     show the version\n",
               OBSERVE_DEFAULT_SECONDS);
}

/* Wait @seconds or until SIGINT/SIGTERM; the signals are blocked so the wait can end early. */
static void wait_seconds(unsigned seconds) {
        struct timespec ts = { .tv_sec = seconds };
        sigset_t ss;

        sigemptyset(&ss);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGTERM);
        (void) sigprocmask(SIG_BLOCK, &ss, NULL);
        while (sigtimedwait(&ss, NULL, &ts) < 0 && errno == EINTR)
                ;
}

static void fmt_ns(char *buf, size_t n, uint64_t ns) {
        if (ns == UINT64_MAX)
                (void) snprintf(buf, n, "inf");
        else if (ns >= UINT64_C(10000000000))
                (void) snprintf(buf, n, "%.0f s", (double) ns / 1e9);
        else if (ns >= UINT64_C(1000000000))
                (void) snprintf(buf, n, "%.2f s", (double) ns / 1e9);
        else if (ns >= UINT64_C(1000000))
                (void) snprintf(buf, n, "%.2f ms", (double) ns / 1e6);
        else
                (void) snprintf(buf, n, "%.1f us", (double) ns / 1e3);
}

/* Requests issued 1 ms or more after the one before while a gap's first request still waited:
 * gaps a slow first request (a wake-up) hid, which a quicker one would have let the disk show. */
static uint64_t hidden_slow(const GapHist *h) {
        uint64_t n = 0;

        for (unsigned b = gaphist_bucket(GAP_HIDDEN_MIN_NS); b < GAP_BUCKETS; b++)
                n += h->hidden[0][b];
        return n;
}

static void print_text(const ObservedDisk *d, size_t n, unsigned seconds) {
        for (size_t i = 0; i < n; i++) {
                const GapHist *h = &d[i].h;

                uint64_t gaps = gaphist_total_gaps(h), slow = gaphist_row_total(h->hidden_after);

                printf("%s%s: %" PRIu64 " request%s, %" PRIu64 " idle gap%s in %u s", i ? "\n" : "", d[i].name,
                       h->requests, h->requests == 1 ? "" : "s", gaps, gaps == 1 ? "" : "s", seconds);
                if (hidden_slow(h) > 0)
                        printf("; %" PRIu64 " more issued 1 ms or more apart behind %" PRIu64 " slow first request%s, "
                               "gaps a quicker wake-up would have shown",
                               hidden_slow(h), slow, slow == 1 ? "" : "s");
                printf("\n");
                if (gaphist_total_gaps(h) == 0)
                        continue;
                printf("  %-22s %8s   %s\n", "idle gap", "gaps", "first request after it: mean, max (count)");
                for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                        char lo[24], hi[24], range[52], mean[24], max[24];

                        if (h->gaps[b] == 0 && h->wake_count[b] == 0)
                                continue;
                        fmt_ns(lo, sizeof lo, gaphist_bucket_lower_ns(b));
                        fmt_ns(hi, sizeof hi, gaphist_bucket_upper_ns(b));
                        (void) snprintf(range, sizeof range, "%s - %s", lo, hi);
                        if (h->wake_count[b] > 0) {
                                fmt_ns(mean, sizeof mean, h->wake_sum_ns[b] / h->wake_count[b]);
                                fmt_ns(max, sizeof max, h->wake_max_ns[b]);
                                printf("  %-22s %8" PRIu64 "   %s, %s (%" PRIu64 ")\n", range, h->gaps[b], mean, max,
                                       h->wake_count[b]);
                        } else
                                printf("  %-22s %8" PRIu64 "   -\n", range, h->gaps[b]);
                }
        }
}

static int print_json(const ObservedDisk *d, size_t n, unsigned seconds) {
        _cleanup_(json_object_putp) struct json_object *root = json_object_new_object();
        struct json_object *disks = json_object_new_array();

        if (!root || !disks)
                return -ENOMEM;
        json_object_object_add(root, "source", json_object_new_string("bpf"));
        json_object_object_add(root, "seconds", json_object_new_int64(seconds));
        json_object_object_add(root, "disks", disks);
        for (size_t i = 0; i < n; i++) {
                const GapHist *h = &d[i].h;
                struct json_object *o = json_object_new_object(), *bs = json_object_new_array();

                if (!o || !bs)
                        return -ENOMEM;
                json_object_array_add(disks, o);
                json_object_object_add(o, "disk", json_object_new_string(d[i].name));
                json_object_object_add(o, "diskseq", json_object_new_uint64(d[i].diskseq));
                json_object_object_add(o, "requests", json_object_new_uint64(h->requests));
                json_object_object_add(o, "gaps", json_object_new_uint64(gaphist_total_gaps(h)));
                json_object_object_add(o, "gap_sum_ns", json_object_new_uint64(h->gap_sum_ns));
                json_object_object_add(o, "hidden", json_object_new_uint64(gaphist_row_total(h->hidden[0])));
                json_object_object_add(o, "hidden_after", json_object_new_uint64(gaphist_row_total(h->hidden_after)));
                json_object_object_add(o, "buckets", bs);
                for (unsigned b = 0; b < GAP_BUCKETS; b++) {
                        struct json_object *x;
                        uint64_t hi = gaphist_bucket_upper_ns(b);

                        if (h->gaps[b] == 0 && h->wake_count[b] == 0 && h->hidden[0][b] == 0 && h->hidden_after[b] == 0)
                                continue;
                        x = json_object_new_object();
                        if (!x)
                                return -ENOMEM;
                        json_object_array_add(bs, x);
                        json_object_object_add(x, "bucket", json_object_new_int(b));
                        json_object_object_add(x, "lower_ns", json_object_new_uint64(gaphist_bucket_lower_ns(b)));
                        json_object_object_add(x, "upper_ns", hi == UINT64_MAX ? NULL : json_object_new_uint64(hi));
                        json_object_object_add(x, "gaps", json_object_new_uint64(h->gaps[b]));
                        json_object_object_add(x, "first_count", json_object_new_uint64(h->wake_count[b]));
                        json_object_object_add(x, "first_sum_ns", json_object_new_uint64(h->wake_sum_ns[b]));
                        json_object_object_add(x, "first_max_ns", json_object_new_uint64(h->wake_max_ns[b]));
                        json_object_object_add(x, "hidden", json_object_new_uint64(h->hidden[0][b]));
                        json_object_object_add(x, "hidden_after", json_object_new_uint64(h->hidden_after[b]));
                }
        }
        return json_out_print(stdout, root, JSON_OUT_FLAGS);
}

/* Return: 1 to go on, 0 to exit 0 (--help, --version), 2 (bad usage). */
static int parse_argv(int argc, char *argv[], unsigned *ret_seconds, bool *ret_json) {
        static const struct option options[] = {
                { "seconds", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                CLI_COMMON_OPTIONS,
                {},
        };
        uint32_t v;
        int c;

        optind = 0;
        while ((c = cli_getopt(argc, argv, "s:jh", options, help)) >= 0) {
                switch (c) {
                case 's':
                        if (safe_atou32(optarg, &v) < 0 || v == 0 || v > OBSERVE_MAX_SECONDS) {
                                log_error("--seconds takes 1..%u, not '%s'.", OBSERVE_MAX_SECONDS, optarg);
                                return 2;
                        }
                        *ret_seconds = v;
                        break;
                case 'j':
                        *ret_json = true;
                        break;
                default:
                        return 2;
                }
        }
        return c == CLI_GETOPT_EXIT ? 0 : 1;
}

/* The disks named (@names, "/dev/" allowed), or every whole disk when none is, each with its diskseq.
 * Return: 0, or the exit status (said): 1 a disk that is not one or none at all, 2 too many. */
static int select_disks(char **names, size_t n_names, ObservedDisk **ret, size_t *ret_n) {
        _cleanup_free_ char (*all)[32] = NULL;
        _cleanup_free_ ObservedDisk *disks = NULL;
        size_t n_all = 0, want;
        int r;

        if (n_names == 0) {
                r = sysfs_list_disks(arg_sysfs_root, &all, &n_all);
                if (r < 0) {
                        log_error_errno(r, "Cannot list the block disks: %m");
                        return 1;
                }
        }
        want = n_names > 0 ? n_names : n_all;
        if (want > OBSERVE_MAX_DISKS) {
                log_error("observe watches at most %u disks at once; name the ones to watch.", OBSERVE_MAX_DISKS);
                return 2;
        }
        if (want == 0) {
                log_error("No block disks to observe.");
                return 1;
        }
        disks = calloc(want, sizeof *disks);
        if (!disks) {
                log_error("Out of memory.");
                return 1;
        }
        for (size_t i = 0; i < want; i++) {
                const char *name = n_names > 0 ? names[i] : all[i];

                if (strncmp(name, "/dev/", 5) == 0)
                        name += 5;
                r = sysfs_block_diskseq(arg_sysfs_root, name, &disks[i].diskseq);
                if (r == -EINVAL)
                        log_error("%s: not a whole disk with a diskseq (a partition, or a kernel before 5.15).",
                                  name);
                else if (r < 0)
                        log_error_errno(r, "%s: no such block disk: %m", name);
                if (r < 0)
                        return 1;
                (void) snprintf(disks[i].name, sizeof disks[i].name, "%s", name);
        }
        *ret = TAKE_PTR(disks);
        *ret_n = want;
        return 0;
}

/* Load the program, give each disk a slot, wait @seconds and read the counters into @disks.
 * Return: 0, or 1 (said). */
static int watch_disks(ObservedDisk *disks, size_t n, unsigned seconds, bool json) {
        static const uint64_t floor0[] = { 0 };
        _cleanup_(bpfwatch_freep) BpfWatch *bw = NULL;
        char reason[256];
        int r;

        r = bpfwatch_open(&bw, reason, sizeof reason);
        if (r < 0) {
                log_error("Cannot observe with eBPF: %s.", reason);
                return 1;
        }
        for (size_t i = 0; i < n; i++) {
                /* One floor, 0: any disk's requests that queue behind a slow first one (no table
                 * here, so no other floor means anything) */
                disks[i].slot = bpfwatch_slot_new(bw, floor0, 1);
                if (disks[i].slot < 0) {
                        (void) log_error_errno(disks[i].slot, "No slot for %s: %m", disks[i].name);
                        return 1;
                }
                r = bpfwatch_slot_set_disks(bw, (unsigned) disks[i].slot, &disks[i].diskseq, 1);
                if (r < 0) {
                        (void) log_error_errno(r, "Cannot watch %s: %m", disks[i].name);
                        return 1;
                }
        }
        if (!json)
                fprintf(stderr, "Observing %zu disk%s for %u s...\n", n, n == 1 ? "" : "s", seconds);
        wait_seconds(seconds);
        for (size_t i = 0; i < n; i++) {
                r = bpfwatch_read(bw, (unsigned) disks[i].slot, &disks[i].h, NULL);
                if (r < 0) {
                        (void) log_error_errno(r, "Cannot read the counters of %s: %m", disks[i].name);
                        return 1;
                }
        }
        return 0;
}

int verb_observe(int argc, char *argv[]) {
        _cleanup_free_ ObservedDisk *disks = NULL;
        unsigned seconds = OBSERVE_DEFAULT_SECONDS;
        bool json = false;
        size_t n = 0;
        int r;

        r = parse_argv(argc, argv, &seconds, &json);
        if (r != 1)
                return r;
        r = select_disks(argv + optind, (size_t) (argc - optind), &disks, &n);
        if (r != 0)
                return r;
        r = watch_disks(disks, n, seconds, json);
        if (r != 0)
                return r;
        if (!json) {
                print_text(disks, n, seconds);
                return 0;
        }
        r = print_json(disks, n, seconds);
        if (r < 0) {
                (void) log_error_errno(r, "Cannot print: %m");
                return 1;
        }
        return 0;
}
