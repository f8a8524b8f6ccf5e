/* SPDX-License-Identifier: MIT */
/* Internal: Python numeric semantics over shk_num and JSON values. */
#ifndef SHACKLE_CORE_NUM_H
#define SHACKLE_CORE_NUM_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/decide.h>

/* Sign of a present number: -1, 0, 1, or 2 for NaN. */
int shk_num_sign(shk_num n);
bool shk_num_is_zero(shk_num n);
/* Python `a - b < 0` (int - int exact; otherwise float arithmetic). */
bool shk_num_sub_negative(shk_num a, shk_num b);
/* INT, REAL or BOOL value as a number (bool as int 0/1). */
bool shk_val_to_num(const shk_val *v, shk_num *ret_n);
/* Python `u == v` for a non-negative integer u. */
bool shk_u64_eq_val(uint64_t u, const shk_val *v);
/* The u64 that equals v (Python ==), if there is one. */
bool shk_val_as_u64(const shk_val *v, uint64_t *ret_u);

#endif
