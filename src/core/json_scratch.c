/* SPDX-License-Identifier: MIT */
/*
 * jansson's allocations during one parse, carved from a buffer the caller
 * owns. json_loadb() mallocs every value, key and string and the lexer's
 * buffer (about 40 blocks for a 220-byte SDK line), and the parser frees
 * them all again before it returns: a bump pointer is cheaper than malloc
 * and free at that rate, and touches fewer cache lines.
 *
 * The hooks are process-wide (jansson has no per-call allocator), so they
 * are installed once, before main() starts any thread, and send everything
 * outside a scratch window to malloc and free. A block is the scratch's
 * when its address lies in this thread's buffer; anything else (allocated
 * before the window, by another thread, or after the buffer ran out) is
 * malloc's and goes back to free.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "core/json_internal.h"

struct scratch {
	unsigned char *base, *next, *end;
};

static __thread struct scratch cur;
static bool installed;

/* jansson's blocks hold pointers, doubles and 64-bit integers. */
#define SCRATCH_ALIGN 16

static void *scratch_malloc(size_t n)
{
	size_t want = (n + (SCRATCH_ALIGN - 1)) & ~(size_t)(SCRATCH_ALIGN - 1);

	if (cur.next && want >= n && want <= (size_t)(cur.end - cur.next)) {
		void *p = cur.next;

		cur.next += want;
		return p;
	}
	return malloc(n);
}

static void scratch_free(void *p)
{
	uintptr_t a = (uintptr_t)p;

	if (a >= (uintptr_t)cur.base && a < (uintptr_t)cur.end)
		return;
	free(p);
}

/* Only over jansson's defaults: a program that set its own keeps them. */
__attribute__((constructor)) static void scratch_install(void)
{
	json_malloc_t m;
	json_free_t f;

	json_get_alloc_funcs(&m, &f);
	if (m == malloc && f == free) {
		json_set_alloc_funcs(scratch_malloc, scratch_free);
		installed = true;
	}
}

bool shk_json_scratch_begin(void *buf, size_t size)
{
	uintptr_t a = (uintptr_t)buf, b = (a + (SCRATCH_ALIGN - 1)) & ~(uintptr_t)(SCRATCH_ALIGN - 1);

	if (!installed || !buf || b - a >= size || cur.next)
		return false;
	cur.base = buf;
	cur.next = (unsigned char *)b;
	cur.end = (unsigned char *)buf + size;
	return true;
}

void shk_json_scratch_end(void)
{
	cur.base = cur.next = cur.end = NULL;
}
