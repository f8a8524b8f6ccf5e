/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test tiers. Header-only on purpose: each test is one
 * executable and links nothing but libshackle and Check. */
#ifndef SHACKLE_TESTUTIL_H
#define SHACKLE_TESTUTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* meson's convention for a skipped test. */
#define SHK_TEST_SKIP 77

static inline int shk_test_must_run(void)
{
	const char *v = getenv("SHACKLE_TESTS_MUST_RUN");
	return v && *v && strcmp(v, "0") != 0;
}

/*
 * Skip the whole test program with a reason, or fail it when the environment
 * says that nothing may be skipped (CI). Never returns.
 */
__attribute__((noreturn, format(printf, 1, 2)))
static inline void shk_test_skip(const char *fmt, ...)
{
	va_list ap;
	int must = shk_test_must_run();

	fprintf(stderr, must ? "FAIL (SHACKLE_TESTS_MUST_RUN=1, may not skip): " : "SKIP: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(must ? 1 : SHK_TEST_SKIP);
}

static inline void shk_test_require_root(void)
{
	if (geteuid() != 0)
		shk_test_skip("needs root (euid is %u)", (unsigned)geteuid());
}

/* Path under the source tree, into a static buffer. */
static inline const char *shk_test_src(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("SHACKLE_SOURCE_ROOT");
	snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
	return buf;
}

static inline const char *shk_test_build(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("SHACKLE_BUILD_ROOT");
	snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
	return buf;
}

#endif
