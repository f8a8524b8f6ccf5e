/* SPDX-License-Identifier: MIT */
/*
 * The allocator entry points of a test linked with -Wl,--wrap=malloc,
 * calloc, realloc and free: the test defines the __wrap_ functions (to
 * count heap calls) and reaches the allocator through the __real_ ones.
 */
#ifndef SHACKLE_TESTS_WRAP_ALLOC_H
#define SHACKLE_TESTS_WRAP_ALLOC_H

#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

#endif
