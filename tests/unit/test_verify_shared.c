/* SPDX-License-Identifier: MIT */
/* shk_verify_shared: the cross-log checks on records as a host writes them
 * (only the fields the checks read), consistent ones and each kind that
 * does not add up. Signatures are verify's part: not written here. */
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "audit_fixture.h"
#include "checkrun.h"

static char key[48];

static void make_key(const char *id)
{
	uint8_t h[crypto_hash_sha256_BYTES];
	char hex[33];

	crypto_hash_sha256(h, (const unsigned char *)id, strlen(id));
	shk_hex(h, 16, hex);
	snprintf(key, sizeof(key), "shackle:{%s}", hex);
}

static FILE *open_log(const char *name)
{
	FILE *f = fopen(tpath(name), "w");

	ck_assert_ptr_nonnull(f);
	return f;
}

/* A decision of session s with its shared budget read (and breaker). */
static void dec(FILE *f, const char *s, int nonce, const char *verdict, int granted, long long est,
		long long spent, long long reserved, int expired)
{
	fprintf(f, "{\"kind\":\"decision\",\"session\":\"%s\",\"nonce\":\"%d\",\"verdict\":\"%s\","
		"\"shared\":{\"budget\":{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":%s,\"settled\":false,"
		"\"limit_uusd\":100000,\"estimate_uusd\":%lld,\"actual_uusd\":0,\"spent_uusd\":%lld,"
		"\"reserved_uusd\":%lld,\"expired\":%d},"
		"\"breaker\":{\"scope\":\"org/t\",\"key\":\"%s\",\"open\":false,\"epoch\":0,\"at_ms\":0,"
		"\"by\":\"\",\"reason\":\"\"}}}\n",
		s, nonce, verdict, key, granted ? "true" : "false", est, spent, reserved, expired, key);
}

static void post(FILE *f, const char *s, int nonce, long long actual, long long spent)
{
	fprintf(f, "{\"kind\":\"post_exec\",\"session\":\"%s\",\"nonce\":\"%d\",\"shared\":{\"budget\":"
		"{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":false,\"settled\":true,\"limit_uusd\":0,"
		"\"estimate_uusd\":0,\"actual_uusd\":%lld,\"spent_uusd\":%lld,\"reserved_uusd\":0,"
		"\"expired\":0}}}\n", s, nonce, key, actual, spent);
}

static void trip(FILE *f, const char *s, int nonce, int epoch, const char *by)
{
	fprintf(f, "{\"kind\":\"decision\",\"session\":\"%s\",\"nonce\":\"%d\",\"verdict\":\"DENY\","
		"\"shared\":{\"breaker\":{\"scope\":\"org/t\",\"key\":\"%s\",\"open\":true,\"epoch\":%d,"
		"\"at_ms\":5,\"by\":\"%s\",\"reason\":\"budget_overrun\"}}}\n", s, nonce, key, epoch, by);
}

static shk_verify_shared_report rep;

static void run(int n, ...)
{
	const char *paths[4];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		paths[i] = tpath(va_arg(ap, const char *));
	va_end(ap);
	ck_assert_int_eq(shk_verify_shared(paths, (size_t)n, &rep), 0);
}

static void expect_refused(const char *file, uint64_t line, const char *field)
{
	ck_assert_msg(!rep.ok, "adds up, expected %s", field);
	ck_assert_str_eq(rep.field, field);
	ck_assert_str_eq(rep.file, tpath(file));
	ck_assert_uint_eq(rep.line, line);
}

/* Two sessions: a kernel call each (settled at the estimate at once), an
 * SDK call settled above its estimate, a denied call given back. */
static void write_pair(bool with_settle)
{
	FILE *a = open_log("a"), *b = open_log("b");

	dec(a, "A", 1, "ALLOW", 1, 30000, 0, 0, 0);
	dec(b, "B", 1, "ALLOW", 1, 30000, 30000, 0, 0);
	dec(b, "B", 2, "ALLOW", 1, 10000, 60000, 0, 0);
	if (with_settle)
		post(b, "B", 2, 25000, 85000);
	dec(a, "A", 2, "DENY", 1, 5000, 85000, 0, 0);
	dec(a, "A", 3, "DENY", 0, 50000, 85000, 0, 0);
	fclose(a);
	fclose(b);
}

START_TEST(consistent_logs_add_up)
{
	write_pair(true);
	run(2, "a", "b");
	ck_assert_msg(rep.ok, "%s:%llu %s: %s", rep.file, (unsigned long long)rep.line, rep.field, rep.detail);
	ck_assert_uint_eq(rep.nscopes, 1);
	ck_assert_int_eq(rep.scopes[0].bound_uusd, 85000 + 0); /* no sweep: the release is not counted */
	ck_assert_int_eq(rep.scopes[0].charged_uusd, 85000);
	ck_assert_int_eq(rep.scopes[0].excess_uusd, 15000);
	ck_assert_uint_eq(rep.scopes[0].sessions, 2);
}
END_TEST

START_TEST(a_missing_log_is_seen_in_the_spend)
{
	write_pair(true);
	run(1, "a");
	expect_refused("a", 2, "shared.budget.spent_uusd");
}
END_TEST

START_TEST(a_missing_settle_is_seen_in_the_spend)
{
	/* the settle's post_exec removed and the chain re-signed: the SDK
	 * call counts at its estimate, and 85000 read is more than charged */
	write_pair(false);
	run(2, "a", "b");
	expect_refused("a", 2, "shared.budget.spent_uusd");
}
END_TEST

START_TEST(spend_that_goes_down_is_refused)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 1000, 5000, 0, 0);
	dec(a, "A", 2, "ALLOW", 1, 1000, 4000, 0, 0);
	fclose(a);
	run(1, "a");
	expect_refused("a", 2, "shared.budget.spent_uusd");
}
END_TEST

/* One allowed decision of session A, alone in log "a": refused at line 1. */
static void one_refused(long long est, long long spent, long long reserved, int expired, const char *field)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, est, spent, reserved, expired);
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, field);
}

START_TEST(a_grant_over_the_limit_is_refused)
{
	one_refused(60000, 0, 50000, 0, "shared.budget.granted");
}
END_TEST

START_TEST(more_charged_than_the_limit_is_refused)
{
	/* each grant fits what it read, but together they pass the limit:
	 * the scope's spend was lost between them */
	FILE *a = open_log("a"), *b = open_log("b");

	dec(a, "A", 1, "ALLOW", 1, 90000, 0, 0, 0);
	dec(b, "B", 1, "ALLOW", 1, 90000, 0, 0, 0);
	fclose(a);
	fclose(b);
	run(2, "a", "b");
	expect_refused("a", 1, "shared.budget.limit_uusd");
}
END_TEST

START_TEST(more_sweeps_than_reservations_left_is_refused)
{
	FILE *a = open_log("a");

	post(a, "A", 9, 0, 0);
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, "shared.budget.settled"); /* settles nothing granted */
	one_refused(1000, 0, 0, 2, "shared.budget.expired");
}
END_TEST

START_TEST(a_wrong_key_is_refused)
{
	key[10] ^= 1;
	one_refused(1000, 0, 0, 0, "shared.budget.key");
}
END_TEST

START_TEST(breaker_epochs_must_agree)
{
	FILE *a = open_log("a"), *b = open_log("b");

	trip(a, "A", 1, 1, "A");
	trip(b, "B", 1, 1, "B");
	fclose(a);
	fclose(b);
	run(2, "a", "b");
	expect_refused("b", 1, "shared.breaker");
	a = open_log("a");
	trip(a, "A", 1, 1, "C");
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, "shared.breaker.by");
}
END_TEST

static void setup(void)
{
	tdir_setup();
	make_key("org/t");
}

int main(void)
{
	Suite *s = suite_create("verify-shared");
	TCase *tc = tcase_create("shared");

	if (sodium_init() < 0)
		return 1;
	tcase_add_checked_fixture(tc, setup, tdir_teardown);
	tcase_add_test(tc, consistent_logs_add_up);
	tcase_add_test(tc, a_missing_log_is_seen_in_the_spend);
	tcase_add_test(tc, a_missing_settle_is_seen_in_the_spend);
	tcase_add_test(tc, spend_that_goes_down_is_refused);
	tcase_add_test(tc, a_grant_over_the_limit_is_refused);
	tcase_add_test(tc, more_charged_than_the_limit_is_refused);
	tcase_add_test(tc, more_sweeps_than_reservations_left_is_refused);
	tcase_add_test(tc, a_wrong_key_is_refused);
	tcase_add_test(tc, breaker_epochs_must_agree);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
