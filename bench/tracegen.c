/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Seeded, deterministic I/O trace generators for the simulator benchmark
 * (bench/run.sh). Prints a plain trace ("TIME_S OP BYTES", see trace.h) on
 * stdout. Only libc and libm, so the benchmark needs nothing but a C
 * compiler; times are kept in integer µs so no rounding drifts.
 *
 *   tracegen FAMILY [-s SEED] [-d SECONDS] [-a US,US,...] [-S SERVICE_US]
 *
 * Families (one per kind of idle-gap pattern the policy must handle):
 *   desktop      bursts: lognormal gaps inside a burst, Pareto gaps between bursts
 *   writeback    a writeback burst every 5 s plus Poisson background reads
 *   hyperexp     gaps 0.9 x Exp(1 ms) + 0.1 x Exp(500 ms)
 *   poisson      gaps Exp(200 ms)
 *   seed         the seed thread's job: 13 s of 4 KiB writes ~300 ms apart, then a
 *                14 MiB flush (112 x 128 KiB + a flush); meant for --closed-loop
 *   adversarial  think times cycling through -a US,... (the times at which a policy's
 *                chain has just finished entering each state) plus 500 µs: every gap
 *                ends just after an entry; meant for --closed-loop
 *   regime       a different regime every 60 s (busy, idle, desktop, periodic, hyperexp)
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define US_PER_S UINT64_C(1000000)
/* How far past the end of an entry an adversarial gap ends: enough that the
 * entry is over, short enough that the state's residency earns nothing. */
#define ADVERSARIAL_MARGIN_US 500u
#define MAX_CHAIN 32

static uint64_t rng_state;

/* splitmix64 (Steele, Lea, Flood 2014): tiny, seedable with any value, good enough for workloads. */
static uint64_t rng_next(void) {
        uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* uniform in (0, 1), never 0 or 1 */
static double uniform(void) {
        return ((double) (rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

static double expo(double mean) {
        return -mean * log(uniform());
}

static double normal(void) {
        /* Box-Muller, one of the pair */
        return sqrt(-2.0 * log(uniform())) * cos(2.0 * M_PI * uniform());
}

static double lognormal(double median, double sigma) {
        return median * exp(sigma * normal());
}

static double pareto(double xm, double alpha) {
        return xm / pow(uniform(), 1.0 / alpha);
}

static uint64_t to_us(double seconds) {
        if (!(seconds > 0))
                return 0;
        if (seconds > 1e6)
                seconds = 1e6;
        return (uint64_t) llround(seconds * 1e6);
}

static void emit(uint64_t t_us, char op, uint64_t bytes) {
        printf("%" PRIu64 ".%06" PRIu64 " %c %" PRIu64 "\n", t_us / US_PER_S, t_us % US_PER_S, op, bytes);
}

/* A desktop-ish request: mostly small reads, some writes. */
static void emit_mixed(uint64_t t_us) {
        double u = uniform();
        uint64_t kib = UINT64_C(4) << (rng_next() % 5);     /* 4..64 KiB */
        emit(t_us, u < 0.7 ? 'R' : 'W', kib * 1024);
}

static void gen_desktop(uint64_t end_us) {
        uint64_t t = 0;
        while (t < end_us) {
                /* burst length geometric with mean 6 */
                unsigned n = 1;
                while (uniform() > 1.0 / 6 && n < 200)
                        n++;
                for (unsigned i = 0; i < n && t < end_us; i++) {
                        emit_mixed(t);
                        t += to_us(lognormal(0.001, 1.2));   /* median 1 ms inside a burst */
                }
                t += to_us(fmin(pareto(0.05, 1.3), 60.0));  /* >= 50 ms, heavy tail, capped at 60 s */
        }
}

static void gen_writeback(uint64_t end_us) {
        /* Background: Poisson 4 KiB reads, mean 3 s, interleaved with the writeback bursts
         * (the order of lines does not matter: the parser sorts). */
        uint64_t next_noise = to_us(expo(3.0)), next_wb = 5 * US_PER_S;
        while (next_noise < end_us || next_wb < end_us) {
                if (next_noise <= next_wb) {
                        emit(next_noise, 'R', 4096);
                        next_noise += to_us(expo(3.0));
                        continue;
                }
                /* dirty_writeback_centisecs = 500: 0..100 ms late, 8..32 writes of 64 KiB 200 µs
                 * apart, then a flush */
                unsigned n = 8 + (unsigned) (rng_next() % 25);
                uint64_t t = next_wb + rng_next() % 100001;
                for (unsigned i = 0; i < n; i++)
                        emit(t + 200 * i, 'W', 65536);
                emit(t + 200 * n, 'F', 0);
                next_wb += 5 * US_PER_S;
        }
}

static void gen_gaps(uint64_t end_us, bool hyper, double mean_s) {
        uint64_t t = 0;
        while (t < end_us) {
                emit_mixed(t);
                double g = hyper ? (uniform() < 0.9 ? expo(0.001) : expo(0.5)) : expo(mean_s);
                t += to_us(g);
        }
}

static void gen_seed(void) {
        uint64_t t = 0;
        /* sporadic small writes for 13 s, 250..350 ms apart */
        while (t < 13 * US_PER_S) {
                emit(t, 'W', 4096);
                t += 250000 + rng_next() % 100001;
        }
        t = 13 * US_PER_S;
        for (unsigned i = 0; i < 112; i++)     /* 112 x 128 KiB = 14 MiB */
                emit(t, 'W', 128 * 1024);
        emit(t, 'F', 0);
}

static void gen_adversarial(uint64_t end_us, const uint64_t *at, size_t n_at, uint64_t service_us) {
        uint64_t t = 0;
        size_t k = 0;
        while (t < end_us) {
                emit(t, 'W', 4096);
                /* think time after the completion: a chain step's end plus the margin */
                uint64_t gap = n_at ? at[k++ % n_at] : 100000;
                t += service_us + gap + ADVERSARIAL_MARGIN_US;
        }
}

static void gen_regime(uint64_t end_us) {
        /* 0 busy (Poisson 2 ms), 1 idle (Poisson 5 s), 2 desktop bursts, 3 periodic 1 s, 4 hyperexp */
        unsigned regime = (unsigned) (rng_next() % 5);
        uint64_t t = 0;
        for (uint64_t start = 0; start < end_us; start += 60 * US_PER_S) {
                uint64_t stop = start + 60 * US_PER_S;
                if (stop > end_us)
                        stop = end_us;
                if (t < start)
                        t = start;
                while (t < stop) {
                        emit_mixed(t);
                        switch (regime) {
                        case 0:
                                t += to_us(expo(0.002));
                                break;
                        case 1:
                                t += to_us(expo(5.0));
                                break;
                        case 2:
                                t += to_us(uniform() < 0.8 ? lognormal(0.001, 1.2) : fmin(pareto(0.05, 1.3), 60.0));
                                break;
                        case 3:
                                t += US_PER_S;
                                break;
                        default:
                                t += to_us(uniform() < 0.9 ? expo(0.001) : expo(0.5));
                                break;
                        }
                }
                regime = (regime + 1 + (unsigned) (rng_next() % 4)) % 5;   /* always a different one */
        }
}

static int parse_list(const char *s, uint64_t *out, size_t *n) {
        *n = 0;
        while (*s) {
                char *end;
                errno = 0;
                unsigned long long v = strtoull(s, &end, 10);
                if (errno || end == s || *n >= MAX_CHAIN || v > 100 * US_PER_S)
                        return -EINVAL;
                out[(*n)++] = v;
                if (*end == ',')
                        end++;
                else if (*end)
                        return -EINVAL;
                s = end;
        }
        return 0;
}

static void usage(void) {
        fprintf(stderr, "usage: tracegen desktop|writeback|hyperexp|poisson|seed|adversarial|regime "
                        "[-s SEED] [-d SECONDS] [-a US,US,...] [-S SERVICE_US]\n");
}

int main(int argc, char *argv[]) {
        uint64_t seed = 1, duration_s = 600, service_us = 100, at[MAX_CHAIN];
        size_t n_at = 0;
        int c;

        while ((c = getopt(argc, argv, "s:d:a:S:")) >= 0)
                switch (c) {
                case 's':
                        seed = strtoull(optarg, NULL, 10);
                        break;
                case 'd':
                        duration_s = strtoull(optarg, NULL, 10);
                        if (duration_s == 0 || duration_s > 86400) {
                                usage();
                                return 2;
                        }
                        break;
                case 'a':
                        if (parse_list(optarg, at, &n_at) < 0) {
                                usage();
                                return 2;
                        }
                        break;
                case 'S':
                        service_us = strtoull(optarg, NULL, 10);
                        break;
                default:
                        usage();
                        return 2;
                }
        if (optind + 1 != argc) {
                usage();
                return 2;
        }
        const char *family = argv[optind];
        uint64_t end_us = duration_s * US_PER_S;
        rng_state = seed;

        printf("# tracegen %s seed %" PRIu64 " duration %" PRIu64 " s\n", family, seed, duration_s);
        if (strcmp(family, "desktop") == 0)
                gen_desktop(end_us);
        else if (strcmp(family, "writeback") == 0)
                gen_writeback(end_us);
        else if (strcmp(family, "hyperexp") == 0)
                gen_gaps(end_us, true, 0);
        else if (strcmp(family, "poisson") == 0)
                gen_gaps(end_us, false, 0.2);
        else if (strcmp(family, "seed") == 0)
                gen_seed();
        else if (strcmp(family, "adversarial") == 0)
                gen_adversarial(end_us, at, n_at, service_us);
        else if (strcmp(family, "regime") == 0)
                gen_regime(end_us);
        else {
                usage();
                return 2;
        }
        return fflush(stdout) == 0 ? 0 : 1;
}
