/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mathfn.c's exp2, log2 and pow against glibc's libm (which this test links and the daemon does
 * not): exp2 and log2 within 4 ULP over the callers' domains, pow within a relative 1e-12,
 * exact where mathfn.h says so.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "mathfn.h"

#define MAX_ULP 4.0

/* |a - b| in units of b's last place */
static double ulps(double a, double b) {
        if (a == b)
                return 0;
        if (b == 0 || !isfinite(a) || !isfinite(b))
                return INFINITY;
        return fabs(a - b) / (nextafter(fabs(b), INFINITY) - fabs(b));
}

/* a reproducible spread of doubles in [lo, hi) (xorshift64) */
static double spread(uint64_t *s, double lo, double hi) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return lo + (hi - lo) * (double) (*s >> 11) / 9007199254740992.0;     /* 53 bits / 2^53 */
}

static void test_exp2(void) {
        uint64_t s = 0x9e3779b97f4a7c15u;
        double worst = 0;

        current = "exp2";
        for (int n = -1074; n <= 1023; n++)
                CHECK(mathfn_exp2(n) == ldexp(1.0, n));       /* integers: exact */
        /* the callers: decays exp2(-dt / half-life) and bucket floors exp2(b / 4), b < 72 */
        for (int i = 0; i < 200000; i++) {
                double x = i % 2 ? spread(&s, -60, 0) : spread(&s, -1, 18);
                double u = ulps(mathfn_exp2(x), exp2(x));
                worst = u > worst ? u : worst;
        }
        for (unsigned b = 0; b < 72; b++)
                CHECK((uint64_t) (1e6 * mathfn_exp2(b / 4.0)) == (uint64_t) (1e6 * exp2(b / 4.0)));
        printf("exp2: worst %.2f ULP\n", worst);
        CHECK(worst <= MAX_ULP);
        CHECK(mathfn_exp2(-2000) == 0 && mathfn_exp2(2000) == HUGE_VAL && isnan(mathfn_exp2(NAN)));
        CHECK(mathfn_exp2(-1074.5) == exp2(-1074.5));         /* subnormal */
}

static void test_log2(void) {
        uint64_t s = 0x2545f4914f6cdd1du;
        double worst = 0;

        current = "log2";
        for (int n = -1074; n <= 1023; n++)
                CHECK(mathfn_log2(ldexp(1.0, n)) == n);       /* powers of two: exact */
        /* the callers: gaps in ms, from 1 to days, and the decays' bases just below 1 */
        for (int i = 0; i < 200000; i++) {
                double x = i % 3 == 0 ? spread(&s, 1, 2) : i % 3 == 1 ? exp2(spread(&s, 0, 40)) : spread(&s, 0.5, 1);
                double u = ulps(mathfn_log2(x), log2(x));
                worst = u > worst ? u : worst;
        }
        printf("log2: worst %.2f ULP\n", worst);
        CHECK(worst <= MAX_ULP);
        /* the watcher's buckets (watch.c): 4 per octave of ms, the same as libm's on every ms */
        unsigned differ = 0;
        for (unsigned ms = 1; ms < 200000; ms++)
                differ += floor(mathfn_log2(ms) * 4) != floor(log2(ms) * 4);
        CHECK(differ == 0);
        CHECK(mathfn_log2(0) == -HUGE_VAL && isnan(mathfn_log2(-1)) && isnan(mathfn_log2(NAN)));
        CHECK(mathfn_log2(HUGE_VAL) == HUGE_VAL && mathfn_log2(DBL_MIN / 4) == -1024);
}

static void test_pow(void) {
        const double base = 1.0 - 1.0 / 200;       /* adapt.c's: 1 - 1 / ADAPT_EVIDENCE_GAPS */
        double worst = 0;

        current = "pow";
        CHECK(mathfn_pow(base, 0) == 1.0 && mathfn_pow(0, 0) == 1.0);
        for (unsigned m = 1; m < 100000; m += 7) {
                double r = fabs(mathfn_pow(base, m) / pow(base, m) - 1);
                worst = r > worst ? r : worst;
        }
        printf("pow: worst relative error %.3g\n", worst);
        /* y log2 x carries log2's few ULP times |y log2 x| (here up to 723) into the exponent:
         * a relative 1e-12 at most, where a decay factor needs a few digits */
        CHECK(worst <= 1e-12);
        CHECK(isnan(mathfn_pow(-1, 2)) && isnan(mathfn_pow(0, 1)));
}

int main(void) {
        test_exp2();
        test_log2();
        test_pow();
        return check_exit_status();
}
