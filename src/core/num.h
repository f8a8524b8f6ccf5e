/* SPDX-License-Identifier: MIT */
/* Internal: Python numeric semantics over shk_num and JSON values. */
#ifndef SHACKLE_CORE_NUM_H
#define SHACKLE_CORE_NUM_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/decide.h>

/* Sign of a present number: -1, 0, 1, or 2 for NaN. Inline: decide() asks
 * for it on every call. */
static inline int shk_num_sign(shk_num n)
{
	if (!n.is_real)
		return (n.i > 0) - (n.i < 0);
	if (n.d != n.d)
		return 2;
	return (n.d > 0) - (n.d < 0);
}

static inline bool shk_num_is_zero(shk_num n)
{
	return shk_num_sign(n) == 0;
}

/* Python `a - b < 0` (int - int exact: Python ints do not overflow, so this
 * is the sign of the difference; otherwise float arithmetic). */
static inline bool shk_num_sub_negative(shk_num a, shk_num b)
{
	if (!a.is_real && !b.is_real)
		return a.i < b.i;
	return shk_num_to_double(a) - shk_num_to_double(b) < 0;
}
/* INT, REAL or BOOL value as a number (bool as int 0/1). */
bool shk_val_to_num(const shk_val *v, shk_num *ret_n);
/* Python `u == v` for a non-negative integer u. */
bool shk_u64_eq_val(uint64_t u, const shk_val *v);
/* The u64 that equals v (Python ==), if there is one. */
bool shk_val_as_u64(const shk_val *v, uint64_t *ret_u);

#endif
