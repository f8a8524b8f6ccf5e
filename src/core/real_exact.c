/* SPDX-License-Identifier: MIT */
/* Exact shortest digits with 128-bit integers: see core/real_exact.h. */
#include <stdint.h>
#include <string.h>

#include "core/real_exact.h"

typedef unsigned __int128 u128;

static const uint64_t pow10_u64[18] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL,
};

static const uint64_t pow5_u64[28] = {
	1ULL,
	5ULL,
	25ULL,
	125ULL,
	625ULL,
	3125ULL,
	15625ULL,
	78125ULL,
	390625ULL,
	1953125ULL,
	9765625ULL,
	48828125ULL,
	244140625ULL,
	1220703125ULL,
	6103515625ULL,
	30517578125ULL,
	152587890625ULL,
	762939453125ULL,
	3814697265625ULL,
	19073486328125ULL,
	95367431640625ULL,
	476837158203125ULL,
	2384185791015625ULL,
	11920928955078125ULL,
	59604644775390625ULL,
	298023223876953125ULL,
	1490116119384765625ULL,
	7450580596923828125ULL
,
};

/*
 * Shortest digits of d = m * 2^q (m with its implicit bit, q < 0): the
 * digits without trailing zeros in dig (NUL-terminated) and the decimal
 * exponent of the first one. Returns false when the caller must fall back.
 */
static bool exact_digits(uint64_t m, int q, char dig[24], int *ret_e)
{
	/* 10^E <= d < 10^(E+1); first guess from the binary exponent. */
	int e10 = ((q + 52) * 78913) >> 18, k = 0, s = 0, j = 0, n = 0;
	bool pow2 = m == 1ULL << 52, incl = !(m & 1);
	uint64_t p5 = 0, lo_c, hi_c, fl, base, c, t;
	u128 y = 0, lo, hi, mask, dlo, dhi;

	for (int tries = 0;; tries++) {
		k = 16 - e10; /* d * 10^k has 17 digits before the point */
		s = -(q + k);
		if (tries == 3 || k < 0 || k > 26 || s < 0 || s > 62)
			return false;
		p5 = pow5_u64[k];
		y = (u128)m * p5; /* d * 10^k * 2^s, exact */
		fl = (uint64_t)(y >> s);
		if (fl >= pow10_u64[17])
			e10++;
		else if (fl < pow10_u64[16])
			e10--;
		else
			break;
	}
	/* Scale by 4 more so that half an ulp (and a quarter, below a power of
	 * two) is an integer: one unit of the 17-digit grid is 2^(s+2). */
	y <<= 2;
	s += 2;
	mask = ((u128)1 << s) - 1;
	lo = y - (pow2 ? p5 : 2 * (u128)p5);
	hi = y + 2 * (u128)p5;
	lo_c = (uint64_t)((lo + mask) >> s);
	if (!incl && !(lo & mask))
		lo_c++;
	hi_c = (uint64_t)(hi >> s);
	if (!incl && !(hi & mask))
		hi_c--;
	if (lo_c > hi_c || lo_c == 0)
		return false;
	/* Coarsest 10^j with a multiple in [lo_c, hi_c] (j = 0 always has one):
	 * one exists while hi_c / 10^j > (lo_c - 1) / 10^j. Dividing by 10 step
	 * by step keeps every division by a constant (no DIV instruction). */
	fl = (uint64_t)(y >> s);
	base = fl;
	for (uint64_t h = hi_c / 10, l = (lo_c - 1) / 10; j < 17 && h > l; h /= 10, l /= 10) {
		base /= 10;
		j++;
	}
	base *= pow10_u64[j];
	dlo = y - ((u128)base << s);
	dhi = ((u128)(base + pow10_u64[j]) << s) - y;
	if (dlo == dhi)
		return false; /* a tie: leave the rounding rule to the reference */
	c = dlo < dhi ? base : base + pow10_u64[j];
	if (c < lo_c || c > hi_c) {
		/* Below a power of two the lower half-gap is the smaller one: the
		 * nearest point can miss below while the next one up reads back. */
		c += pow10_u64[j];
		if (!pow2 || c != base + pow10_u64[j] || c < lo_c || c > hi_c)
			return false;
	}
	/* Digits of c; its first digit is at 10^(ndigits - 1 - k). */
	for (t = c; t; t /= 10)
		n++;
	*ret_e = n - 1 - k;
	while (c % 10 == 0)
		c /= 10, n--;
	dig[n] = 0;
	for (int i = n - 1; i >= 0; i--, c /= 10)
		dig[i] = (char)('0' + c % 10);
	return true;
}

bool shk_real_exact_digits(double a, char dig[24], int *ret_e)
{
	uint64_t bits, m;
	int ex;

	memcpy(&bits, &a, sizeof(bits));
	ex = (int)(bits >> 52 & 0x7ff);
	if ((bits >> 63) || ex == 0 || ex == 0x7ff || !(a >= 1e-7 && a < 0x1p53) ||
	    (double)(uint64_t)a == a)
		return false;
	m = (bits & ((1ULL << 52) - 1)) | 1ULL << 52;
	return exact_digits(m, ex - 1075, dig, ret_e);
}
