/* SPDX-License-Identifier: MIT */
/*
 * How many disk flushes a new log and its key files cost: LOG.key and
 * LOG.pub are each synced, and their directory once for them and the log
 * created beside them (not once per file). fsync is counted by
 * interposing it (libshackle is linked statically into this test).
 */
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "ledger_session.h"
#include "judge/logfiles.h"
#include "checkrun.h"

static atomic_int nsyncs;

int fsync(int fd)
{
	atomic_fetch_add(&nsyncs, 1);
	return (int)syscall(SYS_fsync, fd);
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
	atomic_store(&nsyncs, 0);
	ck_assert_msg(shk_logfiles_open(&f, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE }, &l) == 0,
		      "%s", f.err);
	ck_assert_int_eq(syncs(), 3); /* .key, .pub, the directory */
	ck_assert(exists(f.key) && exists(f.pub));
	ck_assert_int_eq(shk_ledger_close(l), 0);
	shk_logfiles_free(&f);
	/* the key written is found again: the log is continued with it */
	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath("run.jsonl"), NULL, "s1b"), 0);
	ck_assert(!f.write_key && !f.write_pub);
	shk_logfiles_free(&f);
	/* a named key: nothing written beside, the log's directory synced */
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_key_write_files(key, tpath("named"), NULL), 0);
	ck_assert_int_eq(shk_logfiles_prepare(&f, tpath("named.jsonl"), tpath("named.key"), "s2"), 0);
	atomic_store(&nsyncs, 0);
	ck_assert_int_eq(shk_logfiles_open(&f, &s, &(shk_ledger_options){ .fsync = SHK_FSYNC_NONE }, &l), 0);
	ck_assert_int_eq(syncs(), 1);
	ck_assert_int_eq(shk_ledger_close(l), 0);
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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
