/* SPDX-License-Identifier: MIT */
/*
 * Exact shortest round-trip digits of a double without printf (private).
 *
 * Budgets are running sums (5.0 - 0.001 - 0.001 ...), so most reals the
 * runtime hashes and logs need 16 or 17 digits, which the snprintf + strtod
 * search settles in ~1.4 us each. For 1e-7 <= |d| < 2^53 every quantity
 * below fits 128-bit integers, so the shortest digits can be found exactly:
 * scale d to the 17-digit grid, compute the interval of decimals that read
 * back as d (round-half-even bounds), take the coarsest grid of 10^j that
 * has a point in it and, of its points, the one nearest to d — which is what
 * Python prints. Ties and other magnitudes are left to the caller's exact
 * search (canon.c); test_canon and test_audit compare both on many values.
 */
#ifndef SHACKLE_CORE_REAL_EXACT_H
#define SHACKLE_CORE_REAL_EXACT_H

#include <stdbool.h>

/* Digits (no trailing zeros, NUL-terminated) and the decimal exponent of the
 * first one, for a finite, positive, non-integral a with 1e-7 <= a < 2^53.
 * false: not settled here (out of range, a tie); the caller searches. */
bool shk_real_exact_digits(double a, char dig[24], int *ret_e);

#endif
