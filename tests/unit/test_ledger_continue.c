/* SPDX-License-Identifier: MIT */
/*
 * Continuing a log (shackle-run run twice with the same --audit): the key
 * that signed it is the only one that may go on, one writer at a time, a
 * failed open leaves the file as it was, and what the open found is told.
 */
#include <fcntl.h>
#include <sys/file.h>

#include "ledger_session.h"
#include "checkrun.h"

static shk_ledger *open_next(const char *id, const shk_key *k, int *ret)
{
	shk_ledger_options o = { .continue_existing = true };
	shk_ledger_session s;
	shk_ledger *l = NULL;

	session_info(&s, id);
	*ret = shk_ledger_open(logp, k, &s, &o, &l);
	return l;
}

static char *slurp(const char *path)
{
	lines ls;
	size_t n = 0;
	char *all;

	lines_read(path, &ls);
	for (size_t i = 0; i < ls.n; i++)
		n += strlen(ls.l[i]) + 1;
	all = calloc(1, n + 1);
	for (size_t i = 0; i < ls.n; i++)
		strcat(strcat(all, ls.l[i]), "\n");
	lines_free(&ls);
	return all;
}

START_TEST(another_key_is_refused_and_nothing_written)
{
	shk_key *other = test_key(NULL);
	char *before = slurp(logp), *after;
	char fp[SHK_KEY_FINGERPRINT_LEN + 1], mine[SHK_KEY_FINGERPRINT_LEN + 1];
	int r;

	ck_assert_ptr_null(open_next("sess-2", other, &r));
	ck_assert_int_eq(r, -EKEYREJECTED);
	after = slurp(logp);
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(shk_ledger_signer(logp, fp), 0);
	shk_key_fingerprint(shk_key_public(key), mine);
	ck_assert_str_eq(fp, mine);
	free(before);
	free(after);
	shk_key_free(other);
}
END_TEST

START_TEST(second_session_appends_and_verifies)
{
	shk_audit_session_end e = { T0 + 2000000000LL, 0, NULL, NULL };
	shk_verify_report rep;
	shk_ledger *l;
	int r;

	l = open_next("sess-2", key, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(shk_ledger_prior_state(l), SHK_LEDGER_AFTER_END);
	ck_assert_int_eq(append_call(l, 1), 0);
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
	verify_one(logp, key, &rep);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "%s", rep.findings[0].detail);
	ck_assert_uint_eq(rep.sessions, 2);
}
END_TEST

START_TEST(one_writer_at_a_time)
{
	shk_ledger *a, *b;
	int r;

	a = open_next("sess-2", key, &r);
	ck_assert_int_eq(r, 0);
	b = open_next("sess-3", key, &r);
	ck_assert_ptr_null(b);
	ck_assert_int_eq(r, -EBUSY);
	ck_assert_int_eq(shk_ledger_close(a), 0);
	b = open_next("sess-3", key, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(shk_ledger_close(b), 0);
}
END_TEST

/* A session that did not end (a crash) is told; the next appends after it. */
START_TEST(after_an_unfinished_session)
{
	shk_ledger *l;
	int r;

	l = open_next("sess-2", key, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(append_call(l, 1), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0); /* no session_end */
	l = open_next("sess-3", key, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(shk_ledger_prior_state(l), SHK_LEDGER_AFTER_UNFINISHED);
	ck_assert_int_eq(shk_ledger_close(l), 0);
}
END_TEST

/* Discarding an open takes back what it wrote: a new file goes, a
 * continued one is cut back to its size before. */
START_TEST(discard_undoes_the_open)
{
	const char *fresh = tpath("fresh.jsonl");
	shk_ledger_options o = { .continue_existing = true };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	char *before = slurp(logp), *after;
	int r;

	session_info(&s, "fresh");
	ck_assert_int_eq(shk_ledger_open(fresh, key, &s, &o, &l), 0);
	ck_assert_int_eq(shk_ledger_prior_state(l), SHK_LEDGER_CREATED);
	ck_assert_int_eq(shk_ledger_discard(l, fresh), 0);
	ck_assert_int_eq(access(fresh, F_OK), -1);
	l = open_next("sess-2", key, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(shk_ledger_discard(l, logp), 0);
	after = slurp(logp);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

/* LOG.key: only a private regular file of the given owner is a key. */
START_TEST(key_beside_a_log)
{
	const char *kp = tpath("k.key"), *ln = tpath("link.key");
	shk_key_error ke;
	shk_key *k = NULL;

	ck_assert_int_eq(shk_key_load_owned(kp, getuid(), &k, &ke), 0);
	shk_key_free(k);
	k = NULL;
	ck_assert_int_eq(shk_key_load_owned(kp, getuid() + 1, &k, &ke), -EPERM);
	ck_assert_ptr_nonnull(strstr(ke.text, "owned by uid"));
	ck_assert_int_eq(chmod(kp, 0640), 0);
	ck_assert_int_eq(shk_key_load_owned(kp, getuid(), &k, &ke), -EPERM);
	ck_assert_ptr_nonnull(strstr(ke.text, "chmod 600"));
	ck_assert_int_eq(symlink(kp, ln), 0);
	ck_assert_int_eq(shk_key_load_owned(ln, getuid(), &k, &ke), -ELOOP);
	ck_assert_ptr_null(k);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ledger_continue");
	TCase *tc = tcase_create("continue");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, another_key_is_refused_and_nothing_written);
	tcase_add_test(tc, second_session_appends_and_verifies);
	tcase_add_test(tc, one_writer_at_a_time);
	tcase_add_test(tc, after_an_unfinished_session);
	tcase_add_test(tc, discard_undoes_the_open);
	tcase_add_test(tc, key_beside_a_log);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
