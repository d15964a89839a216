/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * exp2, log2 and pow without libm (mathfn.h). Both series are the textbook ones, on ranges small
 * enough that the terms kept leave a truncation far below one ULP:
 *  - 2^x = 2^n * e^(f ln 2), n the integer nearest x, |f| <= 1/2, so |f ln 2| <= 0.347: the Taylor
 *    series of e^t to t^15 / 15! leaves 0.347^16 / 16! < 1e-20 (relative);
 *  - log2 x = e + ln(m) / ln 2 with x = m 2^e, m in [sqrt(1/2), sqrt(2)): ln m = 2 atanh(s),
 *    s = (m - 1) / (m + 1), |s| < 0.1716, and the series of atanh to s^27 / 27 leaves
 *    0.1716^29 / 29 < 1e-23.
 * Horner's rule evaluates both; the rounding of the few operations around them is what the
 * error bound in mathfn.h covers.
 */

#include <math.h>

#include "mathfn.h"

/* ln 2 and 1 / ln 2, to double precision (OEIS A002162, A007525) */
#define LN2 0.693147180559945309417232121458176568
#define LOG2E 1.44269504088896340735992468100189214
#define SQRT1_2 0.707106781186547524400844362104849039

/* Beyond these 2^x is +inf or 0 in double precision (DBL_MAX_EXP; the smallest subnormal is
 * 2^-1074, and 2^-1076 and below round to 0). */
#define EXP2_MAX 1024.0
#define EXP2_MIN (-1076.0)

double mathfn_exp2(double x) {
        double t, p = 1.0;
        long n;

        if (x != x)
                return x;
        if (x >= EXP2_MAX)
                return HUGE_VAL;
        if (x <= EXP2_MIN)
                return 0.0;
        n = (long) (x < 0 ? x - 0.5 : x + 0.5);      /* nearest; |x| < 2^11, so exact below */
        t = (x - (double) n) * LN2;
        for (int k = 15; k >= 1; k--)                 /* e^t = 1 + t (1 + t/2 (1 + t/3 (...))) */
                p = 1.0 + p * t / k;
        return ldexp(p, (int) n);
}

double mathfn_log2(double x) {
        double m, s, s2, q = 0;
        int e;

        if (x != x || x < 0)
                return x != x ? x : NAN;
        if (x == 0)
                return -HUGE_VAL;
        if (x == HUGE_VAL)
                return x;
        m = 2 * frexp(x, &e);                         /* x = m 2^(e-1), m in [1, 2) */
        e--;
        if (m > 2 * SQRT1_2) {
                m /= 2;
                e++;
        }
        if (m == 1.0)
                return (double) e;
        s = (m - 1) / (m + 1);
        s2 = s * s;
        for (int k = 27; k >= 3; k -= 2)              /* atanh s = s (1 + s2/3 + s2^2/5 + ...) */
                q = s2 * (1.0 / k + q);
        return (double) e + 2 * s * (1 + q) * LOG2E;
}

double mathfn_pow(double x, double y) {
        if (y == 0)
                return 1.0;
        if (x != x || y != y || x <= 0)
                return NAN;
        return mathfn_exp2(y * mathfn_log2(x));
}
