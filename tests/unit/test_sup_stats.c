/* SPDX-License-Identifier: MIT */
/*
 * shk_supervise_run fills *ret_stats on every return, also when it fails
 * before anything is set up: shackle-run reads them to say why the agent did
 * not start (cgroup_refused: the error was said already; program: what was
 * refused), and stale stack bytes there would silence the error or name a
 * garbage program. calloc is wrapped to fail the supervisor's first one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "supervise/supervise.h"
#include "checkrun.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static bool fail_next;

void *__wrap_calloc(size_t n, size_t size)
{
	if (fail_next) {
		fail_next = false;
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

START_TEST(stats_set_when_the_start_fails_at_once)
{
	static char *argv[] = { "/bin/true", NULL };
	struct shk_sup_config cfg = { .argv = argv, .quiet = true };
	struct shk_sup_stats st;
	int status = -1;

	memset(&st, 0x5a, sizeof(st));
	fail_next = true;
	ck_assert_int_eq(shk_supervise_run(&cfg, &status, &st), -ENOMEM);
	ck_assert(!fail_next);
	ck_assert_int_eq(st.cgroup_refused, 0);
	ck_assert_str_eq(st.program, "");
	ck_assert_uint_eq(st.notifications, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sup_stats");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, stats_set_when_the_start_fails_at_once);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
