/* SPDX-License-Identifier: MIT */
/*
 * How many disk flushes the ledger asks for: the end of a session is made
 * durable with one fdatasync after its last line, not one per layer that
 * wants it durable (end, close); a line written after the last sync is
 * still synced at close. fdatasync is counted by interposing it (libshackle
 * is linked statically into this test), and held while `hold` is set, to
 * keep a sync running.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#include "ledger_session.h"
#include "checkrun.h"

static atomic_int nsyncs, hold;

int fdatasync(int fd)
{
	atomic_fetch_add(&nsyncs, 1);
	while (atomic_load(&hold))
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	return (int)syscall(SYS_fdatasync, fd);
}

/* lets the held sync finish, late enough that a tick that waited for it
 * is seen to have waited */
static void *release_later(void *arg)
{
	(void)arg;
	nanosleep(&(struct timespec){ 0, 500000000 }, NULL);
	atomic_store(&hold, 0);
	return NULL;
}

static int checkpoints(const char *path)
{
	lines ls;
	int n = 0;

	lines_read(path, &ls);
	for (size_t i = 0; i < ls.n; i++)
		n += strstr(ls.l[i], "\"kind\":\"checkpoint\"") != NULL;
	lines_free(&ls);
	return n;
}

static int syncs(void)
{
	return atomic_load(&nsyncs);
}

/* this process's threads */
static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static shk_ledger *open_new(const char *name, shk_fsync_policy fs)
{
	shk_ledger_options o = { .fsync = fs };
	shk_ledger_session s;
	shk_ledger *l = NULL;

	session_info(&s, name);
	ck_assert_int_eq(shk_ledger_open(tpath(name), key, &s, &o, &l), 0);
	return l;
}

/* checkpoint policy: the end's checkpoint asks the syncer for one sync; the
 * end waits for it and close has nothing left to sync */
START_TEST(end_and_close_flush_once)
{
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	shk_verify_report rep;
	shk_ledger *l = open_new("end.jsonl", SHK_FSYNC_CHECKPOINT);

	ck_assert_int_eq(append_call(l, 1), 0);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(syncs(), 1);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(syncs(), 1);
	verify_one(tpath("end.jsonl"), key, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", rep.findings[0].detail);
}
END_TEST

/* entry policy: every line is synced as it is written, end and close add
 * none */
START_TEST(entry_policy_adds_no_flush_at_end)
{
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	shk_ledger *l = open_new("entry.jsonl", SHK_FSYNC_ENTRY);

	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(append_call(l, 1), 0);
	ck_assert_int_eq(syncs(), 1);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0); /* session_end + checkpoint */
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(syncs(), 2);
}
END_TEST

/* lines written after the last sync are synced at close (an unfinished
 * session: its checkpoint and one flush) */
START_TEST(close_syncs_what_was_written_since)
{
	shk_ledger *l = open_new("open.jsonl", SHK_FSYNC_CHECKPOINT);

	ck_assert_int_eq(shk_ledger_checkpoint(l, T0 + 1), 0);
	ck_assert_int_eq(append_call(l, 2), 0);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_ge(syncs(), 1);
	/* and with nothing new after a drained checkpoint, none */
	l = open_new("quiet.jsonl", SHK_FSYNC_CHECKPOINT);
	ck_assert_int_eq(shk_ledger_checkpoint(l, T0 + 1), 0);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(syncs(), 1); /* the syncer's, not a second */
}
END_TEST

/* the syncer thread starts at the first checkpoint synced in the
 * background; a session that only ends (its checkpoint synced at once)
 * never starts it */
START_TEST(syncer_started_on_first_use)
{
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	int before = threads();
	shk_ledger *l = open_new("short.jsonl", SHK_FSYNC_CHECKPOINT);

	ck_assert_int_eq(threads(), before);
	ck_assert_int_eq(append_call(l, 1), 0);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(threads(), before);
	ck_assert_int_eq(syncs(), 1);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(syncs(), 1);
	l = open_new("long.jsonl", SHK_FSYNC_CHECKPOINT);
	ck_assert_int_eq(append_call(l, 1), 0);
	ck_assert_int_eq(shk_ledger_checkpoint(l, T0 + 1), 0);
	ck_assert_int_eq(threads(), before + 1);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(threads(), before);
}
END_TEST

/* While the last checkpoint's sync runs, a tick at half the bound leaves
 * the entries for a later one instead of waiting for that sync; at three
 * quarters it signs and waits. */
START_TEST(tick_defers_while_a_sync_runs)
{
	const char *p = tpath("defer.jsonl");
	shk_ledger *l = open_new("defer.jsonl", SHK_FSYNC_CHECKPOINT);
	shk_verify_report rep;
	pthread_t t;
	int n = 0;

	ck_assert_int_eq(append_call(l, ++n), 0);
	atomic_store(&hold, 1);
	ck_assert_int_eq(shk_ledger_checkpoint(l, T0 + 1), 0); /* its sync is held */
	while (n < 1 + SHK_LEDGER_MAX_UNSIGNED / 2)
		ck_assert_int_eq(append_call(l, ++n), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, release_later, NULL), 0);
	ck_assert_int_eq(shk_ledger_tick(l, T0 + 2), 0);
	ck_assert_int_eq(checkpoints(p), 1);
	ck_assert_int_eq(atomic_load(&hold), 1); /* it did not wait */
	while (n < 1 + SHK_LEDGER_MAX_UNSIGNED * 3 / 4)
		ck_assert_int_eq(append_call(l, ++n), 0);
	ck_assert_int_eq(shk_ledger_tick(l, T0 + 3), 0);
	ck_assert_int_eq(checkpoints(p), 2);
	pthread_join(t, NULL);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_paths(&p, 1, key, true, &rep);
	ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ledger_sync");
	TCase *tc = tcase_create("sync");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, end_and_close_flush_once);
	tcase_add_test(tc, entry_policy_adds_no_flush_at_end);
	tcase_add_test(tc, close_syncs_what_was_written_since);
	tcase_add_test(tc, syncer_started_on_first_use);
	tcase_add_test(tc, tick_defers_while_a_sync_runs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
