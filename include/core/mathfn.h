/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * exp2(), log2() and pow() for the policy's decays and the watcher's buckets (pure), so that
 * the daemon does not link libm: libm.so.6 cost the idle daemon 0.5 MiB resident (its IFUNC
 * resolvers and symbol tables touched at load, fault-around), for three functions.
 *
 * Accuracy (test-mathfn compares with glibc's libm on the domains the callers use): exp2 and
 * log2 within 4 ULP of the correctly rounded result, pow (exp2 of y log2 x, whose error grows
 * with |y log2 x|) within a relative 1e-12; exact where the callers need it: exp2 of an integer
 * and log2 of a power of two are exact, mathfn_pow(x, 0) is 1. NaN in, NaN out.
 * Built on frexp() and ldexp(), which glibc keeps in libc.
 */

double mathfn_exp2(double x);
double mathfn_log2(double x);
/* @x to the power @y, for @x > 0 (the callers' decays: 0 < @x <= 1); NaN for @x <= 0 but
 * pow(x, 0) = 1. */
double mathfn_pow(double x, double y);
