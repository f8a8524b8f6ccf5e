/* SPDX-License-Identifier: MIT */
/*
 * Python's numeric comparisons are exact across int and float (2**53 + 1 >
 * 2.0**53), so a double-only implementation would disagree with the reference
 * on large integers — in the fail-open direction for budgets. These helpers
 * compare int64 and double exactly and subtract the way Python does.
 */
#include <math.h>

#include "core/num.h"

#define TWO63 9223372036854775808.0
#define TWO64 18446744073709551616.0

double shk_num_to_double(shk_num n)
{
	if (!n.present)
		return 0.0;
	return n.is_real ? n.d : (double)n.i;
}

/* Exact i <=> d. */
static int cmp_int_real(int64_t i, double d)
{
	double t;
	int64_t ti;

	if (isnan(d))
		return 2;
	if (d >= TWO63)
		return -1;
	if (d < -TWO63)
		return 1;
	t = trunc(d);
	ti = (int64_t)t;
	if (i != ti)
		return i < ti ? -1 : 1;
	if (d == t)
		return 0;
	return d > t ? -1 : 1;
}

int shk_num_cmp(shk_num a, shk_num b)
{
	if (!a.is_real && !b.is_real)
		return a.i < b.i ? -1 : a.i > b.i;
	if (!a.is_real)
		return cmp_int_real(a.i, b.d);
	if (!b.is_real) {
		int r = cmp_int_real(b.i, a.d);
		return r == 2 ? 2 : -r;
	}
	if (isnan(a.d) || isnan(b.d))
		return 2;
	return a.d < b.d ? -1 : a.d > b.d;
}

bool shk_val_to_num(const shk_val *v, shk_num *ret_n)
{
	switch (shk_val_type(v)) {
	case SHK_INT:
		*ret_n = shk_num_int(shk_val_int(v));
		return true;
	case SHK_BOOL:
		*ret_n = shk_num_int(shk_val_bool(v) ? 1 : 0);
		return true;
	case SHK_REAL:
		*ret_n = shk_num_real(shk_val_real(v));
		return true;
	default:
		return false;
	}
}

bool shk_val_as_u64(const shk_val *v, uint64_t *ret_u)
{
	double d;
	int64_t i;

	switch (shk_val_type(v)) {
	case SHK_BOOL:
		*ret_u = shk_val_bool(v) ? 1 : 0;
		return true;
	case SHK_INT:
		i = shk_val_int(v);
		if (i < 0)
			return false;
		*ret_u = (uint64_t)i;
		return true;
	case SHK_REAL:
		d = shk_val_real(v);
		if (!(d >= 0 && d < TWO64) || d != trunc(d))
			return false;
		*ret_u = (uint64_t)d;
		return true;
	default:
		return false;
	}
}

bool shk_u64_eq_val(uint64_t u, const shk_val *v)
{
	uint64_t w;

	return shk_val_as_u64(v, &w) && w == u;
}
