/* SPDX-License-Identifier: MIT */
/*
 * Windows onto a thread's memory (src/supervise/mem.c), read from this very
 * process (process_vm_readv on oneself needs no privilege): strings that end
 * right before an unmapped page, strings and pointer arrays that cross
 * windows and pages, more strings than the windows hold, the kernel's bounds
 * (E2BIG, ENAMETOOLONG) and faults. Every result is compared with the bytes
 * written.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>

#include "supervise/internal.h"
#include "supervise/mem.h"
#include "checkrun.h"

#define PG 4096

static struct shk_memwin w;

/* n pages, the last one unmapped: a hole right after the readable part */
static char *pages_with_hole(size_t n)
{
	char *p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(munmap(p + (n - 1) * PG, PG), 0);
	memset(p, 'x', (n - 1) * PG);
	return p;
}

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

START_TEST(str_ends_before_hole)
{
	char *p = pages_with_hole(3), buf[PATH_MAX];
	size_t len = 0;

	/* 100 bytes, the NUL is the last readable byte */
	p[2 * PG - 1] = 0;
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + 2 * PG - 101), buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, 100);
	ck_assert_int_eq(memcmp(buf, p + 2 * PG - 101, 101), 0);
	/* no NUL before the hole: a fault, as the kernel's copy would be */
	p[2 * PG - 1] = 'y';
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + 2 * PG - 101), buf, sizeof(buf), &len),
	                 -EFAULT);
	/* a string in the hole itself, and address 0 */
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + 2 * PG), buf, sizeof(buf), &len), -EFAULT);
	ck_assert_int_eq(shk_memwin_read_str(&w, 0, buf, sizeof(buf), &len), -EFAULT);
	munmap(p, 2 * PG);
}
END_TEST

START_TEST(str_bounds_and_window_crossing)
{
	size_t n = 2 * SHK_MEMWIN_PAGES + 2;
	char *p = pages_with_hole(n), buf[64], *big = malloc(3 * PG * SHK_MEMWIN_PAGES);
	size_t len = 0;

	ck_assert_ptr_nonnull(big);
	/* max - 1 bytes fit, max do not */
	p[63] = 0;
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p), buf, 64, &len), 0);
	ck_assert_uint_eq(len, 63);
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p), buf, 63, &len), -ENAMETOOLONG);
	/* a string longer than one window: read across windows, whole */
	size_t slen = SHK_MEMWIN_PAGES * PG + 300;
	p[PG + 5 + slen] = 0;
	ck_assert_int_eq(shk_memwin_read_str(&w, addr(p + PG + 5), big, 3 * PG * SHK_MEMWIN_PAGES, &len), 0);
	ck_assert_uint_eq(len, slen);
	ck_assert_int_eq(memcmp(big, p + PG + 5, slen + 1), 0);
	free(big);
	munmap(p, (n - 1) * PG);
}
END_TEST

/* argv with its pointers in one mapping and its strings spread over more
 * pages than the windows hold, some pointing back to earlier pages */
START_TEST(argv_many_pages)
{
	enum { N = 40, SPAN = 24 };
	char *strs = mmap(NULL, SPAN * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *ptrs = malloc((N + 1) * sizeof(*ptrs));
	struct shk_argv a = { 0 };

	ck_assert_ptr_ne(strs, MAP_FAILED);
	ck_assert_ptr_nonnull(ptrs);
	for (int i = 0; i < N; i++) {
		/* pages 0, 7, 14, 21, 4, 11, ...: windows are evicted and re-read;
		 * every fifth string straddles a page boundary */
		char *s = strs + (size_t)((i * 7) % SPAN) * PG + (i % 5 == 0 ? PG - 3 : 17);
		snprintf(s, 32, "arg-%d-%s", i, i % 3 ? "x" : "longer-value");
		ptrs[i] = addr(s);
	}
	ptrs[N] = 0;
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, N);
	ck_assert_ptr_null(a.v[N]);
	for (int i = 0; i < N; i++)
		ck_assert_str_eq(a.v[i], (const char *)(uintptr_t)ptrs[i]);
	/* argv == NULL is an empty argv; a pointer into a hole faults */
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_argv(&w, 0, &a), 0);
	ck_assert_uint_eq(a.n, 0);
	munmap(strs + (SPAN - 1) * PG, PG);
	ptrs[3] = addr(strs + (SPAN - 1) * PG);
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -EFAULT);
	shk_argv_free(&a);
	free(ptrs);
	munmap(strs, (SPAN - 1) * PG);
}
END_TEST

/* a pointer array that ends right before a hole, and one that runs into it */
START_TEST(argv_pointers_before_hole)
{
	char *p = pages_with_hole(2);
	uint64_t *ptrs = (uint64_t *)(p + PG) - 3;
	static const char s0[] = "first", s1[] = "second";
	struct shk_argv a = { 0 };

	ptrs[0] = addr(s0);
	ptrs[1] = addr(s1);
	ptrs[2] = 0;
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, 2);
	ck_assert_str_eq(a.v[0], "first");
	ck_assert_str_eq(a.v[1], "second");
	ptrs[2] = addr(s0);
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -EFAULT);
	shk_argv_free(&a);
	munmap(p, PG);
}
END_TEST

START_TEST(argv_bounds)
{
	static const char s[] = "a";
	uint64_t *ptrs = malloc((SHK_SUP_MAX_ARGS + 2) * sizeof(*ptrs));
	size_t big = SHK_SUP_MAX_ARGBYTES / 2 + 10;
	char *b1 = malloc(big), *b2 = malloc(big);
	struct shk_argv a = { 0 };

	ck_assert_ptr_nonnull(ptrs);
	ck_assert_ptr_nonnull(b1);
	ck_assert_ptr_nonnull(b2);
	/* SHK_SUP_MAX_ARGS strings pass, one more is E2BIG */
	for (size_t i = 0; i <= SHK_SUP_MAX_ARGS; i++)
		ptrs[i] = addr(s);
	ptrs[SHK_SUP_MAX_ARGS] = 0;
	shk_memwin_init(&w, getpid());
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, SHK_SUP_MAX_ARGS);
	ptrs[SHK_SUP_MAX_ARGS] = addr(s);
	ptrs[SHK_SUP_MAX_ARGS + 1] = 0;
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -E2BIG);
	/* two strings of half the byte bound each: E2BIG; one of them passes */
	memset(b1, 'p', big - 1);
	b1[big - 1] = 0;
	memcpy(b2, b1, big);
	ptrs[0] = addr(b1);
	ptrs[1] = 0;
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), 0);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_uint_eq(strlen(a.v[0]), big - 1);
	ptrs[1] = addr(b2);
	ptrs[2] = 0;
	ck_assert_int_eq(shk_memwin_read_argv(&w, addr(ptrs), &a), -E2BIG);
	shk_argv_free(&a);
	free(b1);
	free(b2);
	free(ptrs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("memwin");
	TCase *tc = tcase_create("memwin");

	tcase_add_test(tc, str_ends_before_hole);
	tcase_add_test(tc, str_bounds_and_window_crossing);
	tcase_add_test(tc, argv_many_pages);
	tcase_add_test(tc, argv_pointers_before_hole);
	tcase_add_test(tc, argv_bounds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
