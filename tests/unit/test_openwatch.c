/* SPDX-License-Identifier: MIT */
/*
 * The table of watched images (src/supervise/openwatch.c) at an exec stop:
 * a thread other than the leader execs, so the new image takes the
 * leader's pid and the former thread's watch, and the leader's own watch
 * (of the image the exec replaced) is forgotten. Forgetting moves the last
 * watch into the freed slot: the former thread's watch, when it was the
 * last, must still be found and carried over, whatever the order of the
 * table. No process is traced: the cases drive the table alone.
 */
#include <string.h>

#include <check.h>

#include "supervise/internal.h"
#include "checkrun.h"

/* Only an open's stops untrack a process; the table's functions never do. */
void shk_tracer_untrack(struct shk_sup *s, pid_t pid)
{
	(void)s;
	ck_abort_msg("shk_tracer_untrack(%d) called by the table alone", (int)pid);
}

static struct shk_sup s;

/* A watch for pid: ld.so's first open against (dev, ino), and one script
 * name, so that what is carried over is told apart by both. */
static void watch(pid_t pid, dev_t dev, const char *name)
{
	char blob[256];
	size_t nl = strlen(name) + 1;
	struct shk_exec_approval ap = { .tid = pid, .cmdline = blob, .cmdline_len = nl,
	                                .watch_open = true, .open_dev = dev, .open_ino = 7,
	                                .nbind = 1, .bind = { { .dev = dev, .ino = 8 } },
	                                .bind_len = 3 * nl };

	/* argv is the name itself; the bind names follow: name, abs, canonical */
	memcpy(blob, name, nl);
	for (int i = 1; i <= 3; i++)
		memcpy(blob + i * nl, name, nl);
	ck_assert_int_eq(shk_openwatch_add(&s, pid, &ap), 1);
}

static const struct shk_open_watch *only(pid_t pid)
{
	const struct shk_open_watch *w = NULL;

	for (size_t i = 0; i < s.ow.nwatch; i++)
		if (s.ow.watch[i].pid == pid) {
			ck_assert_msg(!w, "two watches of %d", (int)pid);
			w = &s.ow.watch[i];
		}
	return w;
}

static void check_carried(pid_t leader, pid_t thread, dev_t dev, const char *name)
{
	const struct shk_open_watch *w = only(leader);

	ck_assert_msg(w, "the new image (%d) is not watched", (int)leader);
	ck_assert_ptr_null(only(thread));
	ck_assert_uint_eq(w->dev, dev);
	ck_assert(!w->first_open && !w->in_open && w->in_name == -1);
	ck_assert_uint_eq(w->nnames, 1);
	ck_assert_str_eq(w->names[0].str, name);
	ck_assert_uint_eq(w->names[0].dev, dev);
}

static void teardown(void)
{
	shk_openwatch_free(&s);
	memset(&s, 0, sizeof(s));
}

/* the former thread's watch is the last: forget moves it into the leader's slot */
START_TEST(thread_last)
{
	watch(100, 1, "leader.py");
	watch(101, 2, "thread.py");
	shk_openwatch_exec(&s, 101, 100);
	ck_assert_uint_eq(s.ow.nwatch, 1);
	check_carried(100, 101, 2, "thread.py");
}
END_TEST

/* another process's watch is the last: it moves, the thread's stays put */
START_TEST(other_last)
{
	watch(100, 1, "leader.py");
	watch(101, 2, "thread.py");
	watch(200, 3, "other.py");
	shk_openwatch_exec(&s, 101, 100);
	ck_assert_uint_eq(s.ow.nwatch, 2);
	check_carried(100, 101, 2, "thread.py");
	ck_assert_ptr_nonnull(only(200));
	ck_assert_uint_eq(only(200)->dev, 3);
	ck_assert_str_eq(only(200)->names[0].str, "other.py");
}
END_TEST

/* the leader has no watch: nothing is forgotten, the thread's moves over */
START_TEST(leader_unwatched)
{
	watch(200, 3, "other.py");
	watch(101, 2, "thread.py");
	shk_openwatch_exec(&s, 101, 100);
	ck_assert_uint_eq(s.ow.nwatch, 2);
	check_carried(100, 101, 2, "thread.py");
	ck_assert_str_eq(only(200)->names[0].str, "other.py");
}
END_TEST

/* the leader execs itself: its watch stays its own */
START_TEST(leader_execs)
{
	watch(101, 2, "thread.py");
	watch(100, 1, "leader.py");
	shk_openwatch_exec(&s, 100, 100);
	ck_assert_uint_eq(s.ow.nwatch, 2);
	check_carried(100, 999, 1, "leader.py");
	ck_assert_str_eq(only(101)->names[0].str, "thread.py");
}
END_TEST

static Suite *suite(void)
{
	Suite *su = suite_create("openwatch");
	TCase *tc = tcase_create("exec");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, thread_last);
	tcase_add_test(tc, other_last);
	tcase_add_test(tc, leader_unwatched);
	tcase_add_test(tc, leader_execs);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return shk_test_run(suite());
}
