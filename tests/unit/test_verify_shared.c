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

/* A decision of session s with its shared budget read (and breaker):
 * what the reservation read (after the sweep, before itself) and the
 * scope's operation count after it; swept: "" or ,"swept":[...] members;
 * then: "" or the release or settle made at once. */
static void dec(FILE *f, const char *s, int nonce, const char *verdict, int granted, long long est,
		long long spent, long long reserved, int ops, int expired, const char *swept, const char *then)
{
	fprintf(f, "{\"kind\":\"decision\",\"session\":\"%s\",\"nonce\":\"%d\",\"verdict\":\"%s\","
		"\"shared\":{\"budget\":{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":%s,\"settled\":false,"
		"\"limit_uusd\":100000,\"estimate_uusd\":%lld,\"actual_uusd\":0,\"spent_uusd\":%lld,"
		"\"reserved_uusd\":%lld,\"expired\":%d,\"ops\":%d%s},"
		"\"breaker\":{\"scope\":\"org/t\",\"key\":\"%s\",\"open\":false,\"epoch\":0,\"at_ms\":0,"
		"\"by\":\"\",\"reason\":\"\"}%s}}\n",
		s, nonce, verdict, key, granted ? "true" : "false", est, spent, reserved, expired, ops, swept,
		key, then);
}

/* ,"then":{...}: what the settle or release at once answered. */
static const char *then(const char *did, int found, long long actual, long long spent, long long reserved,
			int ops)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, 256, ",\"then\":{\"did\":\"%s\",\"settled\":%s,\"actual_uusd\":%lld,\"spent_uusd\":%lld,"
		 "\"reserved_uusd\":%lld,\"ops\":%d}", did, found ? "true" : "false", actual, spent, reserved, ops);
	return b;
}

static void post(FILE *f, const char *s, int nonce, long long actual, long long spent, long long reserved,
		 int ops, int found)
{
	fprintf(f, "{\"kind\":\"post_exec\",\"session\":\"%s\",\"nonce\":\"%d\",\"shared\":{\"budget\":"
		"{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":false,\"settled\":%s,\"limit_uusd\":0,"
		"\"estimate_uusd\":0,\"actual_uusd\":%lld,\"spent_uusd\":%lld,\"reserved_uusd\":%lld,"
		"\"expired\":0,\"ops\":%d}}}\n", s, nonce, key, found ? "true" : "false", actual, spent,
		reserved, ops);
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

/* Two sessions, limit 100000: a kernel call each (settled at the estimate
 * at once), an SDK call settled below its estimate by its report, a call
 * denied after its grant (released at once), one refused. Operations:
 * 1 A1 reserve, 2 its settle, 3 B1, 4 its settle, 5 B2, 6 B2's report,
 * 7 A2, 8 its release; A3 moves nothing and reads what 8 left. */
static void write_pair(bool with_settle, long long a2_spent)
{
	FILE *a = open_log("a"), *b = open_log("b");

	dec(a, "A", 1, "ALLOW", 1, 30000, 0, 0, 1, 0, "", then("settle", 1, 30000, 30000, 0, 2));
	dec(b, "B", 1, "ALLOW", 1, 30000, 30000, 0, 3, 0, "", then("settle", 1, 30000, 60000, 0, 4));
	dec(b, "B", 2, "ALLOW", 1, 10000, 60000, 0, 5, 0, "", "");
	if (with_settle)
		post(b, "B", 2, 5000, 65000, 0, 6, 1);
	dec(a, "A", 2, "DENY", 1, 5000, a2_spent, 0, 7, 0, "", then("release", 1, 0, 65000, 0, 8));
	dec(a, "A", 3, "DENY", 0, 50000, 65000, 0, 8, 0, "", "");
	fclose(a);
	fclose(b);
}

START_TEST(consistent_logs_add_up)
{
	write_pair(true, 65000);
	run(2, "a", "b");
	ck_assert_msg(rep.ok, "%s:%llu %s: %s", rep.file, (unsigned long long)rep.line, rep.field, rep.detail);
	ck_assert_uint_eq(rep.nscopes, 1);
	ck_assert_uint_eq(rep.scopes[0].ops, 8);
	ck_assert_int_eq(rep.scopes[0].spent_uusd, 65000);
	ck_assert_int_eq(rep.scopes[0].reserved_uusd, 0);
	ck_assert_uint_eq(rep.scopes[0].granted, 4);
	ck_assert_uint_eq(rep.scopes[0].settled, 1);
	ck_assert_uint_eq(rep.scopes[0].released, 1);
	ck_assert_uint_eq(rep.scopes[0].open, 0);
	ck_assert_uint_eq(rep.scopes[0].sessions, 2);
}
END_TEST

START_TEST(a_missing_log_leaves_a_gap)
{
	write_pair(true, 65000);
	run(1, "a");
	expect_refused("a", 2, "shared.budget"); /* operations 3 to 6 are B's */
	ck_assert_ptr_nonnull(strstr(rep.detail, "operations 3 to 6 of org/t: in no log given"));
}
END_TEST

START_TEST(a_truncated_log_leaves_a_gap)
{
	/* b without its last entry, the report that settled B2 below its
	 * estimate: the spend A read is within what the estimates allow, so
	 * bounds alone accepted it; operation 6 is in no log */
	write_pair(false, 65000);
	run(2, "a", "b");
	expect_refused("a", 2, "shared.budget");
	ck_assert_ptr_nonnull(strstr(rep.detail, "operation 6 of org/t"));
}
END_TEST

START_TEST(a_changed_total_breaks_the_chain)
{
	/* A2 read 60000 instead of 65000: still growing for A and within
	 * the bounds, but not what operation 6 left */
	write_pair(true, 60000);
	run(2, "a", "b");
	expect_refused("a", 2, "shared.budget.spent_uusd");
	ck_assert_ptr_nonnull(strstr(rep.detail, "expected 65000 and 0"));
}
END_TEST

START_TEST(a_session_out_of_redis_order_is_refused)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 1000, 1000, 0, 2, 0, "", "");
	dec(a, "A", 2, "ALLOW", 1, 1000, 0, 0, 1, 0, "", "");
	fclose(a);
	run(1, "a");
	expect_refused("a", 2, "shared.budget.ops");
}
END_TEST

START_TEST(an_operation_recorded_twice_is_refused)
{
	FILE *a = open_log("a"), *b = open_log("b");

	dec(a, "A", 1, "ALLOW", 1, 1000, 0, 0, 1, 0, "", "");
	dec(b, "B", 1, "ALLOW", 1, 1000, 0, 0, 1, 0, "", "");
	fclose(a);
	fclose(b);
	run(2, "a", "b");
	expect_refused("b", 1, "shared.budget");
	ck_assert_ptr_nonnull(strstr(rep.detail, "also recorded"));
}
END_TEST

START_TEST(a_grant_over_the_limit_is_refused)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 60000, 0, 50000, 1, 0, "", "");
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, "shared.budget.granted");
}
END_TEST

/* A1 reserved 1000 for its source's report, which never came (its host
 * died); B1's reservation swept it (op 2) and was settled at once (op 3). */
static void write_sweep(const char *swept, bool settled_too)
{
	FILE *a = open_log("a"), *b = open_log("b");

	dec(a, "A", 1, "ALLOW", 1, 1000, 0, 0, 1, 0, "", "");
	if (settled_too)
		post(a, "A", 1, 1000, 1000, 0, 2, 1);
	dec(b, "B", 1, "ALLOW", 1, 2000, 1000, 0, settled_too ? 3 : 2, 1, swept,
	    then("settle", 1, 2000, 3000, 0, settled_too ? 4 : 3));
	fclose(a);
	fclose(b);
}

START_TEST(a_sweep_charges_an_open_reservation_once)
{
	write_sweep(",\"swept\":[[\"A:1\",1000]]", false);
	run(2, "a", "b");
	ck_assert_msg(rep.ok, "%s:%llu %s: %s", rep.file, (unsigned long long)rep.line, rep.field, rep.detail);
	ck_assert_uint_eq(rep.scopes[0].expired, 1);
	ck_assert_int_eq(rep.scopes[0].spent_uusd, 3000);
	/* at another amount than it reserved */
	write_sweep(",\"swept\":[[\"A:1\",900]]", false);
	run(2, "a", "b");
	expect_refused("b", 1, "shared.budget.swept");
	/* a reservation no log holds */
	write_sweep(",\"swept\":[[\"C:1\",1000]]", false);
	run(2, "a", "b");
	expect_refused("b", 1, "shared.budget.swept");
	/* one already settled */
	write_sweep(",\"swept\":[[\"A:1\",1000]]", true);
	run(2, "a", "b");
	expect_refused("b", 1, "shared.budget.swept");
	ck_assert_ptr_nonnull(strstr(rep.detail, "already settled"));
	/* the count and the list disagree */
	write_sweep("", false);
	run(2, "a", "b");
	expect_refused("b", 1, "shared.budget.swept");
}
END_TEST

/* A1's report failed to settle (its post_exec recorded the error); A2's
 * decision retried it first (operation 2), then reserved (3) and settled
 * at once (4). retried: the member's value. */
static void write_retried(const char *retried)
{
	FILE *a = open_log("a");
	char members[768];

	dec(a, "A", 1, "ALLOW", 1, 20000, 0, 0, 1, 0, "", "");
	fprintf(a, "{\"kind\":\"post_exec\",\"session\":\"A\",\"nonce\":\"1\",\"shared\":{\"budget\":"
		"{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":false,\"settled\":false,\"limit_uusd\":0,"
		"\"estimate_uusd\":0,\"actual_uusd\":5000,\"spent_uusd\":0,\"reserved_uusd\":0,\"expired\":0,"
		"\"ops\":0},\"error\":{\"errno\":\"ENOTCONN\",\"why\":\"down\"}}}\n", key);
	snprintf(members, sizeof(members), "%s%s", retried, then("settle", 1, 1000, 6000, 0, 4));
	dec(a, "A", 2, "ALLOW", 1, 1000, 5000, 0, 3, 0, "", members);
	fclose(a);
}

START_TEST(a_retried_settle_counts)
{
	write_retried(",\"retried\":[{\"did\":\"settle\",\"nonce\":\"1\",\"settled\":true,"
		      "\"actual_uusd\":5000,\"spent_uusd\":5000,\"reserved_uusd\":0,\"ops\":2}]");
	run(1, "a");
	ck_assert_msg(rep.ok, "%s:%llu %s: %s", rep.file, (unsigned long long)rep.line, rep.field, rep.detail);
	ck_assert_uint_eq(rep.scopes[0].ops, 4);
	ck_assert_uint_eq(rep.scopes[0].settled, 1);
	ck_assert_int_eq(rep.scopes[0].spent_uusd, 6000);
	ck_assert_uint_eq(rep.scopes[0].open, 0);
	/* totals that are not what settling A1 at 5000 leaves */
	write_retried(",\"retried\":[{\"did\":\"settle\",\"nonce\":\"1\",\"settled\":true,"
		      "\"actual_uusd\":5000,\"spent_uusd\":4000,\"reserved_uusd\":0,\"ops\":2}]");
	run(1, "a");
	ck_assert_msg(!rep.ok && !strncmp(rep.field, "shared.retried", 14), "%s: %s", rep.field, rep.detail);
	/* without the call it settles */
	write_retried(",\"retried\":[{\"did\":\"settle\",\"settled\":true,\"actual_uusd\":5000,"
		      "\"spent_uusd\":5000,\"reserved_uusd\":0,\"ops\":2}]");
	run(1, "a");
	expect_refused("a", 3, "shared.retried");
	/* not recorded: operation 2 is in no log */
	write_retried("");
	run(1, "a");
	ck_assert(!rep.ok);
}
END_TEST

/* A1 (20000) and A2 (10000) reserved (operations 1, 2); A1's report
 * failed, and the decision that retried it (3) was not written; A2's
 * report carries that answer before its own settle (4). */
START_TEST(a_post_exec_carries_a_retry)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 20000, 0, 0, 1, 0, "", "");
	dec(a, "A", 2, "ALLOW", 1, 10000, 0, 20000, 2, 0, "", "");
	fprintf(a, "{\"kind\":\"post_exec\",\"session\":\"A\",\"nonce\":\"2\",\"shared\":{\"budget\":"
		"{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":false,\"settled\":true,\"limit_uusd\":0,"
		"\"estimate_uusd\":0,\"actual_uusd\":2000,\"spent_uusd\":7000,\"reserved_uusd\":0,\"expired\":0,"
		"\"ops\":4},\"retried\":[{\"did\":\"settle\",\"nonce\":\"1\",\"settled\":true,\"actual_uusd\":5000,"
		"\"spent_uusd\":5000,\"reserved_uusd\":10000,\"ops\":3}]}}\n", key);
	fclose(a);
	run(1, "a");
	ck_assert_msg(rep.ok, "%s:%llu %s: %s", rep.file, (unsigned long long)rep.line, rep.field, rep.detail);
	ck_assert_uint_eq(rep.scopes[0].ops, 4);
	ck_assert_uint_eq(rep.scopes[0].settled, 2);
	ck_assert_int_eq(rep.scopes[0].spent_uusd, 7000);
	ck_assert_uint_eq(rep.scopes[0].open, 0);
}
END_TEST

/* A1 (20000) and A2 (30000) reserved (operations 1, 2), both reports
 * failed and no call came after them: the session's end retried A1's (3)
 * and left A2's to the lease. end: session_end's shared members after
 * its budget. */
static void write_end(const char *end)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 20000, 0, 0, 1, 0, "", "");
	dec(a, "A", 2, "ALLOW", 1, 30000, 0, 20000, 2, 0, "", "");
	fprintf(a, "{\"kind\":\"session_end\",\"session\":\"A\",\"exit_status\":0,\"counters\":null,"
		"\"shared\":{\"budget\":{\"scope\":\"org/t\",\"key\":\"%s\"}%s}}\n", key, end);
	fclose(a);
}

START_TEST(settles_at_the_end_count)
{
	write_end(",\"retried\":[{\"did\":\"settle\",\"nonce\":\"1\",\"settled\":true,\"actual_uusd\":5000,"
		  "\"spent_uusd\":5000,\"reserved_uusd\":30000,\"ops\":3}],\"left\":[{\"nonce\":\"2\","
		  "\"actual_uusd\":7000}],\"error\":{\"errno\":\"ENOTCONN\",\"why\":\"down\"}");
	run(1, "a");
	ck_assert_msg(rep.ok, "%s:%llu %s: %s", rep.file, (unsigned long long)rep.line, rep.field, rep.detail);
	ck_assert_uint_eq(rep.scopes[0].ops, 3);
	ck_assert_uint_eq(rep.scopes[0].settled, 1);
	ck_assert_uint_eq(rep.scopes[0].left, 1);
	ck_assert_uint_eq(rep.scopes[0].open, 1);
	ck_assert_int_eq(rep.scopes[0].spent_uusd, 5000);
	ck_assert_int_eq(rep.scopes[0].reserved_uusd, 30000);
	/* left: a call this session holds no reservation of */
	write_end(",\"left\":[{\"nonce\":\"9\",\"actual_uusd\":7000}]");
	run(1, "a");
	expect_refused("a", 3, "shared.left");
	write_end(",\"left\":[{\"nonce\":\"2\"}]");
	run(1, "a");
	expect_refused("a", 3, "shared.left.actual_uusd");
	/* the end's retry with totals that do not follow operation 2 */
	write_end(",\"retried\":[{\"did\":\"settle\",\"nonce\":\"1\",\"settled\":true,\"actual_uusd\":5000,"
		  "\"spent_uusd\":4000,\"reserved_uusd\":30000,\"ops\":3}]");
	run(1, "a");
	ck_assert_msg(!rep.ok && !strncmp(rep.field, "shared.retried", 14), "%s: %s", rep.field, rep.detail);
}
END_TEST

START_TEST(a_settle_of_nothing_open_is_refused)
{
	FILE *a = open_log("a");

	post(a, "A", 9, 0, 0, 0, 1, 1);
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, "shared.budget");
}
END_TEST

START_TEST(a_read_must_match_the_totals_left)
{
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 1000, 0, 0, 1, 0, "", "");
	dec(a, "A", 2, "DENY", 0, 99600, 0, 500, 1, 0, "", ""); /* op 1 left 0 and 1000 */
	fclose(a);
	run(1, "a");
	expect_refused("a", 2, "shared.budget");
	/* a record without the operation count (an older shackle) */
	a = open_log("a");
	fprintf(a, "{\"kind\":\"decision\",\"session\":\"A\",\"nonce\":\"1\",\"verdict\":\"ALLOW\",\"shared\":"
		"{\"budget\":{\"scope\":\"org/t\",\"key\":\"%s\",\"granted\":true,\"settled\":false,"
		"\"limit_uusd\":100000,\"estimate_uusd\":1,\"actual_uusd\":0,\"spent_uusd\":0,"
		"\"reserved_uusd\":0,\"expired\":0}}}\n", key);
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, "shared.budget.ops");
}
END_TEST

START_TEST(a_wrong_key_is_refused)
{
	key[10] ^= 1;
	FILE *a = open_log("a");

	dec(a, "A", 1, "ALLOW", 1, 1000, 0, 0, 1, 0, "", "");
	fclose(a);
	run(1, "a");
	expect_refused("a", 1, "shared.budget.key");
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
	tcase_add_test(tc, a_missing_log_leaves_a_gap);
	tcase_add_test(tc, a_truncated_log_leaves_a_gap);
	tcase_add_test(tc, a_changed_total_breaks_the_chain);
	tcase_add_test(tc, a_session_out_of_redis_order_is_refused);
	tcase_add_test(tc, an_operation_recorded_twice_is_refused);
	tcase_add_test(tc, a_grant_over_the_limit_is_refused);
	tcase_add_test(tc, a_sweep_charges_an_open_reservation_once);
	tcase_add_test(tc, a_settle_of_nothing_open_is_refused);
	tcase_add_test(tc, a_retried_settle_counts);
	tcase_add_test(tc, a_post_exec_carries_a_retry);
	tcase_add_test(tc, settles_at_the_end_count);
	tcase_add_test(tc, a_read_must_match_the_totals_left);
	tcase_add_test(tc, a_wrong_key_is_refused);
	tcase_add_test(tc, breaker_epochs_must_agree);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
