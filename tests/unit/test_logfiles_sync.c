/* SPDX-License-Identifier: MIT */
/*
 * How many disk flushes a new log and its key files cost, and when: LOG.key
 * and LOG.pub are each synced, and their directory once for them and the
 * log created beside them (not once per file); for a run's new log these
 * are flushed on the ledger's thread, not the caller's, and every sync of
 * the log waits for them (a key is on disk before anything it signed is
 * reported so); a failed one fails the log. fsync and fdatasync are
 * interposed (libshackle is linked statically into this test).
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ledger_session.h"
#include "judge/logfiles.h"
#include "checkrun.h"

static atomic_int nsyncs;        /* fsyncs begun */
static atomic_int nsynced;       /* fsyncs completed */
static atomic_int on_caller;     /* fsyncs made on the test's own thread */
static atomic_int datasync_saw;  /* nsynced when the first fdatasync began; -1: none yet */
static atomic_int fail_nth;      /* this fsync (1-based) fails with EIO; 0: none */
static atomic_bool slow;         /* each fsync takes 20 ms (a disk under load) */
static atomic_int nkicks;        /* sync_file_range writeback starts */
static atomic_int kicks_at_first; /* nkicks when the first fsync began; -1: none yet */
static pid_t caller;

int fsync(int fd)
{
	int n = atomic_fetch_add(&nsyncs, 1) + 1, r, none = -1;

	atomic_compare_exchange_strong(&kicks_at_first, &none, atomic_load(&nkicks));

	if (gettid() == caller)
		atomic_fetch_add(&on_caller, 1);
	if (atomic_load(&slow))
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	r = (int)syscall(SYS_fsync, fd);
	if (n == atomic_load(&fail_nth)) {
		errno = EIO;
		r = -1;
	}
	atomic_fetch_add(&nsynced, 1);
	return r;
}

int sync_file_range(int fd, off64_t off, off64_t len, unsigned int flags)
{
	atomic_fetch_add(&nkicks, 1);
	return (int)syscall(SYS_sync_file_range, fd, off, len, flags);
}

int fdatasync(int fd)
{
	int none = -1;

	atomic_compare_exchange_strong(&datasync_saw, &none, atomic_load(&nsynced));
	return (int)syscall(SYS_fdatasync, fd);
}

static void counters_reset(void)
{
	caller = gettid();
	atomic_store(&nsyncs, 0);
	atomic_store(&nsynced, 0);
	atomic_store(&on_caller, 0);
	atomic_store(&datasync_saw, -1);
	atomic_store(&fail_nth, 0);
	atomic_store(&slow, false);
	atomic_store(&nkicks, 0);
	atomic_store(&kicks_at_first, -1);
}

static int syncs(void)
{
	return atomic_load(&nsyncs);
}

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_size > 0;
}

START_TEST(keygen_syncs_the_directory_once)
{
	char pub[600];

	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_key_write_files(key, tpath("gen"), NULL), 0);
	ck_assert_int_eq(syncs(), 3); /* .key, .pub, their directory */
	snprintf(pub, sizeof(pub), "%s.pub", tpath("gen"));
	ck_assert(exists(pub));
}
END_TEST

START_TEST(new_log_and_keys_sync_the_directory_once)
{
	struct shk_logfiles f;
	shk_ledger_session s;
	shk_ledger *l = NULL;

	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath("run.jsonl"), NULL, "s1"), 0);
	session_info(&s, "s1");
	counters_reset();
	ck_assert_msg(shk_logfiles_open(&f, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE }, &l) == 0,
		      "%s", f.err);
	ck_assert(exists(f.key) && exists(f.pub)); /* written before the open returns */
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(syncs(), 3); /* .key, .pub, the directory */
	ck_assert_int_eq(atomic_load(&on_caller), 0); /* all on the ledger's thread */
	/* the writeback of all three started before the first fsync: one
	 * journal commit on ext4 instead of one per file */
	ck_assert_int_eq(atomic_load(&kicks_at_first), 3);
	shk_logfiles_free(&f);
	/* the key written is found again: the log is continued with it */
	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath("run.jsonl"), NULL, "s1b"), 0);
	ck_assert(!f.write_key && !f.write_pub);
	shk_logfiles_free(&f);
	/* a named key: nothing written beside, the log's directory synced */
	counters_reset();
	ck_assert_int_eq(shk_key_write_files(key, tpath("named"), NULL), 0);
	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath("named.jsonl"), tpath("named.key"), "s2"), 0);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_logfiles_open(&f, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE }, &l), 0);
	ck_assert_int_eq(syncs(), 1);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	shk_logfiles_free(&f);
}
END_TEST

/* A new log under POLICY on a slow disk: its first sync after the open
 * (the first entry's under "entry", the end's under "checkpoint" and
 * "none") begins after the three key-file flushes completed; none was on
 * this thread. (Under "entry" the open synced session_start, which nothing
 * signs, before the key files were written, as it always did.) */
static void first_sync_after_keys(shk_fsync_policy policy, const char *name)
{
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	struct shk_logfiles f;
	shk_ledger_session s;
	shk_verify_report rep;
	shk_ledger *l = NULL;

	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath(name), NULL, name), 0);
	session_info(&s, name);
	counters_reset();
	atomic_store(&slow, true);
	ck_assert_msg(shk_logfiles_open(&f, &s, &(shk_ledger_options){ .fsync = policy }, &l) == 0,
		      "%s", f.err);
	atomic_store(&datasync_saw, -1);
	ck_assert_int_eq(append_call(l, 1), 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(atomic_load(&datasync_saw), 3);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	ck_assert_int_eq(atomic_load(&on_caller), 0);
	verify_one(tpath(name), f.signer, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", rep.findings[0].detail);
	shk_logfiles_free(&f);
}

START_TEST(key_files_flushed_before_the_log_checkpoint)
{
	first_sync_after_keys(SHK_FSYNC_CHECKPOINT, "cp.jsonl");
}
END_TEST

START_TEST(key_files_flushed_before_the_log_entry)
{
	first_sync_after_keys(SHK_FSYNC_ENTRY, "en.jsonl");
}
END_TEST

START_TEST(key_files_flushed_before_the_log_none)
{
	first_sync_after_keys(SHK_FSYNC_NONE, "no.jsonl");
}
END_TEST

/* A key file that cannot be flushed fails the log: the end is refused
 * and so is every append after it (the supervisor denies those calls). */
START_TEST(failed_key_flush_fails_the_log)
{
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	struct shk_logfiles f;
	shk_ledger_session s;
	shk_ledger *l = NULL;

	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath("eio.jsonl"), NULL, "eio"), 0);
	session_info(&s, "eio");
	counters_reset();
	atomic_store(&fail_nth, 1); /* LOG.key's */
	ck_assert_msg(shk_logfiles_open(&f, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_CHECKPOINT },
	                                &l) == 0, "%s", f.err);
	ck_assert_int_eq(shk_ledger_end(l, &e), -EIO);
	ck_assert_int_eq(append_call(l, 1), -EIO);
	ck_assert_int_eq(shk_ledger_close(l), -EIO);
	ck_assert_int_eq(atomic_load(&datasync_saw), -1); /* the log was never synced */
	shk_logfiles_free(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("logfiles_sync");
	TCase *tc = tcase_create("sync");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, keygen_syncs_the_directory_once);
	tcase_add_test(tc, new_log_and_keys_sync_the_directory_once);
	tcase_add_test(tc, key_files_flushed_before_the_log_checkpoint);
	tcase_add_test(tc, key_files_flushed_before_the_log_entry);
	tcase_add_test(tc, key_files_flushed_before_the_log_none);
	tcase_add_test(tc, failed_key_flush_fails_the_log);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
