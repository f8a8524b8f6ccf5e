/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/nonceset.h>

struct range {
	uint64_t lo, hi; /* closed */
};

struct shk_nonceset {
	size_t n, cap;
	struct range r[];
};

int shk_nonceset_new(size_t max_ranges, shk_nonceset **ret_set)
{
	shk_nonceset *s;

	if (!ret_set || max_ranges == 0 || max_ranges > (SIZE_MAX - sizeof(*s)) / sizeof(struct range))
		return -EINVAL;
	s = calloc(1, sizeof(*s) + max_ranges * sizeof(struct range));
	if (!s)
		return -ENOMEM;
	s->cap = max_ranges;
	*ret_set = s;
	return 0;
}

void shk_nonceset_free(shk_nonceset *set)
{
	free(set);
}

/* Index of the first interval whose lo is greater than x (0..n). */
static size_t upper(const shk_nonceset *s, uint64_t x)
{
	size_t a = 0, b = s->n;

	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (s->r[m].lo > x)
			b = m;
		else
			a = m + 1;
	}
	return a;
}

bool shk_nonceset_contains(const shk_nonceset *set, uint64_t nonce)
{
	size_t i;

	if (!set || set->n == 0)
		return false;
	i = upper(set, nonce);
	return i > 0 && set->r[i - 1].hi >= nonce;
}

/* Where would nonce go: 0 present, 1 extends an interval, 2 needs a new one. */
static int placement(const shk_nonceset *s, uint64_t x, size_t *ret_i)
{
	size_t i = upper(s, x);

	*ret_i = i;
	if (i > 0 && s->r[i - 1].hi >= x)
		return 0;
	if (i > 0 && s->r[i - 1].hi + 1 == x)
		return 1;
	if (i < s->n && s->r[i].lo - 1 == x)
		return 1;
	return 2;
}

bool shk_nonceset_can_insert(const shk_nonceset *set, uint64_t nonce)
{
	size_t i;

	if (!set)
		return false;
	return placement(set, nonce, &i) < 2 || set->n < set->cap;
}

int shk_nonceset_insert(shk_nonceset *set, uint64_t x)
{
	size_t i;
	int p;

	if (!set)
		return -EINVAL;
	p = placement(set, x, &i);
	if (p == 0)
		return 0;
	if (p == 2) {
		if (set->n >= set->cap)
			return -ENOSPC;
		memmove(&set->r[i + 1], &set->r[i], (set->n - i) * sizeof(struct range));
		set->r[i].lo = set->r[i].hi = x;
		set->n++;
		return 0;
	}
	if (i > 0 && set->r[i - 1].hi + 1 == x) {
		set->r[i - 1].hi = x;
		/* Filling the last hole between two intervals joins them. */
		if (i < set->n && set->r[i].lo - 1 == x) {
			set->r[i - 1].hi = set->r[i].hi;
			memmove(&set->r[i], &set->r[i + 1], (set->n - i - 1) * sizeof(struct range));
			set->n--;
		}
	} else {
		set->r[i].lo = x;
	}
	return 0;
}

size_t shk_nonceset_ranges(const shk_nonceset *set)
{
	return set ? set->n : 0;
}

size_t shk_nonceset_capacity(const shk_nonceset *set)
{
	return set ? set->cap : 0;
}
