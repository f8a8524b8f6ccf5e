/* SPDX-License-Identifier: MIT */
/*
 * shackle/nonceset.h — an exact set of seen u64 nonces with a fixed capacity.
 *
 * The supervisor issues increasing nonces and records one only when its call
 * is allowed, so the seen set is "almost" one interval with holes where calls
 * were denied or held for a human. It is kept as a sorted array of disjoint,
 * non-adjacent closed intervals: monotonic insertion extends the last interval
 * in O(1), lookups are a binary search, out-of-order (external) nonces cost a
 * memmove. The array is allocated once at creation; when it is full, an insert
 * that would need a new interval fails with -ENOSPC instead of forgetting
 * anything (the caller denies the call). Nothing is ever approximated: a nonce
 * is reported seen iff it was inserted.
 */
#ifndef SHACKLE_NONCESET_H
#define SHACKLE_NONCESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shk_nonceset shk_nonceset;

/* max_ranges >= 1. Returns 0, -EINVAL or -ENOMEM. */
int shk_nonceset_new(size_t max_ranges, shk_nonceset **ret_set);
void shk_nonceset_free(shk_nonceset *set);
/* Allocation-free from here on. A NULL set is empty and full. */
bool shk_nonceset_contains(const shk_nonceset *set, uint64_t nonce);
/* Would shk_nonceset_insert(set, nonce) succeed (or find it present)? */
bool shk_nonceset_can_insert(const shk_nonceset *set, uint64_t nonce);
/* Returns 0 (inserted or already present), -ENOSPC or -EINVAL (NULL). */
int shk_nonceset_insert(shk_nonceset *set, uint64_t nonce);
/* Number of intervals in use, and the capacity. */
size_t shk_nonceset_ranges(const shk_nonceset *set);
size_t shk_nonceset_capacity(const shk_nonceset *set);

#ifdef __cplusplus
}
#endif
#endif
