/* SPDX-License-Identifier: MIT */
/*
 * Private layout of shk_val, shared by json.c and canon.c so that the
 * canonicaliser can walk values without a function call per accessor.
 * Code outside src/core uses the accessors of <shackle/json.h>.
 */
#ifndef SHACKLE_CORE_JSON_INTERNAL_H
#define SHACKLE_CORE_JSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/json.h>

/*
 * Recursion bound for every walk over values (check, write, equal, copy).
 * jansson refuses nesting beyond 2048, so parsed documents always fit; values
 * built through the API deeper than this (or cyclic ones, which the API
 * cannot prevent cheaply) are refused instead of overflowing the stack.
 */
#define SHK_JSON_HARD_DEPTH 4096

typedef struct shk_member {
	shk_val *key;
	shk_val *value;
} shk_member;

struct shk_val {
	shk_type type;
	shk_doc *doc;
	union {
		bool b;
		int64_t i;
		double d;
		struct {
			const char *s;
			size_t len;
		} str;
		struct {
			shk_val **items;
			size_t len, cap;
		} arr;
		struct {
			shk_member *m;
			size_t len, cap;
			size_t nstr; /* members with string keys: m[0..nstr) */
		} obj;
	} u;
};

/* Byte-wise key order: memcmp on the common prefix, then the shorter first. */
static inline int shk_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? __builtin_memcmp(a, b, n) : 0;

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/*
 * Until shk_json_scratch_end(), jansson's allocations on this thread come
 * from buf (json_scratch.c); false when they cannot (hooks not installed,
 * a window already open), and then they are malloc's as usual. Every block
 * jansson took in the window must be freed before the window ends.
 */
bool shk_json_scratch_begin(void *buf, size_t size);
void shk_json_scratch_end(void);

/*
 * shk_canon_format_real without its fast path (snprintf/strtod search only),
 * so that tests and the fuzzer can check the two paths against each other.
 */
int shk_canon_format_real_slow(double d, char *out, size_t outlen);

#endif
