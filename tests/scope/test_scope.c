/* SPDX-License-Identifier: MIT */
/*
 * A shared scope against a real redis-server that this test starts: the
 * budget's arithmetic, 8 racing sessions that must not overspend, the
 * breaker reaching another session (the delay is measured and printed), the
 * record for the audit log, and doctor's report.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <shackle/canon.h>

#include "checkrun.h"
#include "scope_fixture.h"
#include "scope_race.h"

static struct shk_redis redis;

static shk_scope *open_scope(const shk_shared_config *c, const char *session)
{
	shk_scope_options o = { .config = c, .session_id = session };
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	int r = shk_scope_open(&o, &s, why);

	ck_assert_msg(r == 0, "open: %s (%s)", strerror(-r), why);
	return s;
}

START_TEST(uusd_conversion)
{
	int64_t u;

	ck_assert_int_eq(shk_scope_usd_to_uusd(0.1, &u), 0);
	ck_assert_int_eq(u, 100000);
	ck_assert_int_eq(shk_scope_usd_to_uusd(1e-7, &u), 0);
	ck_assert_int_eq(u, 1); /* rounded up: never reserve less than the estimate */
	ck_assert_int_eq(shk_scope_usd_to_uusd(0, &u), 0);
	ck_assert_int_eq(u, 0);
	ck_assert_int_eq(shk_scope_usd_to_uusd(-0.01, &u), -ERANGE);
	ck_assert_int_eq(shk_scope_usd_to_uusd(NAN, &u), -ERANGE);
	ck_assert_int_eq(shk_scope_usd_to_uusd(1e10, &u), -ERANGE);
	/* Redis refuses exactly when decide() finds cost > remaining. */
	srand(7);
	for (int i = 0; i < 200000; i++) {
		double est = (double)rand() / RAND_MAX * pow(10, rand() % 8 - 6);
		int64_t rem = rand() % 3000000;

		ck_assert_int_eq(shk_scope_usd_to_uusd(est, &u), 0);
		ck_assert_msg((u <= rem) == (est <= (double)rem / 1e6), "est %.17g rem %" PRId64, est,
			      rem);
	}
}
END_TEST

static void reserve(shk_scope *s, uint64_t nonce, double est, bool granted, int64_t spent,
		    int64_t reserved)
{
	shk_scope_read rd;
	int r = shk_scope_reserve(s, nonce, est, 1.0, &rd);

	ck_assert_msg(r == 0, "reserve %" PRIu64 ": %s (%s)", nonce, strerror(-r), rd.why);
	ck_assert_int_eq(rd.granted, granted);
	ck_assert_int_eq(rd.spent_uusd, spent);
	ck_assert_int_eq(rd.reserved_uusd, reserved);
	ck_assert_int_eq(rd.limit_uusd, 1000000);
}

static uint64_t rd_ops(shk_scope *s, uint64_t nonce, double est)
{
	shk_scope_read rd;

	ck_assert_int_eq(shk_scope_reserve(s, nonce, est, 1.0, &rd), 0);
	ck_assert(rd.granted);
	return rd.ops;
}

START_TEST(budget_arithmetic)
{
	shk_shared_config c = scope_cfg(redis.sock, "arith", SHK_SCOPE_ORG, SHK_SCOPE_NONE);
	shk_scope *a = open_scope(&c, "s-a"), *b = open_scope(&c, "s-b");
	shk_scope_read rd;

	reserve(a, 1, 0.30, true, 0, 0);
	reserve(b, 1, 0.50, true, 0, 300000);      /* same nonce, another session */
	reserve(a, 2, 0.30, false, 0, 800000);     /* 0.8 + 0.3 > 1 */
	ck_assert_int_eq(shk_scope_settle(a, 1, 0.10, &rd), 0);
	ck_assert(rd.settled);
	ck_assert_int_eq(rd.spent_uusd, 100000);
	ck_assert_int_eq(rd.reserved_uusd, 500000);
	reserve(a, 3, 0.30, true, 100000, 500000); /* 0.1 + 0.5 + 0.3 <= 1 */
	ck_assert_int_eq(shk_scope_release(b, 1, &rd), 0);
	ck_assert(rd.settled);
	ck_assert_int_eq(rd.spent_uusd, 100000);
	ck_assert_int_eq(rd.reserved_uusd, 300000);
	/* To the last micro-dollar: 0.6 fits exactly, one more does not. */
	reserve(b, 2, 0.600001, false, 100000, 300000);
	reserve(b, 3, 0.6, true, 100000, 300000);
	ck_assert_int_eq(shk_scope_settle(a, 1, 0.10, &rd), 0);
	ck_assert(!rd.settled); /* settled once only: no double charge */
	ck_assert_int_eq(rd.spent_uusd, 100000);
	ck_assert_int_eq(shk_scope_reserve(a, 3, 0.0, 1.0, &rd), -EEXIST);
	ck_assert_int_eq(rd.err, -EEXIST);
	ck_assert(!rd.granted);
	ck_assert_int_eq(shk_scope_settle(a, 3, 0.45, &rd), 0);
	ck_assert_int_eq(rd.spent_uusd, 550000);
	ck_assert_int_eq(rd.reserved_uusd, 600000); /* an overrun is spent, not refused */
	reserve(a, 4, 0.0, false, 550000, 600000);  /* over the limit: nothing fits */
	shk_scope_close(a);
	shk_scope_close(b);
}
END_TEST

/* An inline command to the test's redis-server (no reply is parsed: the
 * test only needs it done), to put bytes in the scope that are not ours. */
static void redis_inline(const char *cmd)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[64];

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", redis.sock);
	ck_assert(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	ck_assert((size_t)write(fd, cmd, strlen(cmd)) == strlen(cmd) && write(fd, "\r\n", 2) == 2);
	ck_assert(read(fd, buf, sizeof(buf)) > 0);
	close(fd);
}

/* The scope now, as another session's "get state" shows it: what both
 * sessions spent and hold reserved, read without changing anything (no
 * operation, no sweep); a budget that is not numbers is an error. */
START_TEST(peek_changes_nothing)
{
	shk_shared_config c = scope_cfg(redis.sock, "peek", SHK_SCOPE_ORG, SHK_SCOPE_ORG);
	shk_scope *a = open_scope(&c, "s-a"), *b = open_scope(&c, "s-b"), *v = open_scope(&c, "s-v");
	shk_scope_breaker k;
	shk_scope_read rd;
	char cmd[160];

	ck_assert_int_eq(shk_scope_peek(v, 1.0, &rd), 0);
	ck_assert(rd.budget_shared && rd.breaker.shared && !rd.breaker.open);
	ck_assert_int_eq(rd.spent_uusd + rd.reserved_uusd + (int64_t)rd.ops, 0); /* nothing yet */
	ck_assert_int_eq(rd.limit_uusd, 1000000);
	reserve(a, 1, 0.25, true, 0, 0);
	ck_assert_int_eq(shk_scope_settle(a, 1, 0.2, &rd), 0);
	reserve(b, 1, 0.125, true, 200000, 0);
	ck_assert_int_eq(shk_scope_peek(v, 1.0, &rd), 0);
	ck_assert_int_eq(rd.spent_uusd, 200000);
	ck_assert_int_eq(rd.reserved_uusd, 125000);
	ck_assert_uint_eq(rd.ops, 3);
	ck_assert_int_eq(shk_scope_peek(v, 1.0, &rd), 0);
	ck_assert_uint_eq(rd.ops, 3); /* a peek is no operation */
	ck_assert_str_eq(rd.budget_id, "org/peek");
	ck_assert_int_eq(shk_scope_trip(b, "budget_overrun", &k), 0);
	for (int i = 0; i < 200 && shk_scope_peek(v, 1.0, &rd) == 0 && !rd.breaker.open; i++)
		sleep_ms(5);
	ck_assert(rd.breaker.open);
	ck_assert_str_eq(rd.breaker.by, "s-b");
	/* the reservation still holds after the peeks: settling it finds it */
	ck_assert_int_eq(shk_scope_settle(b, 1, 0.125, &rd), 0);
	ck_assert(rd.settled);
	snprintf(cmd, sizeof(cmd), "HSET %s:budget spent 12x", rd.budget_key);
	redis_inline(cmd);
	ck_assert_int_eq(shk_scope_peek(v, 1.0, &rd), -EPROTO);
	ck_assert_int_eq(rd.err, -EPROTO);
	ck_assert_msg(strstr(rd.why, "not shackle's"), "%s", rd.why);
	ck_assert_int_eq(shk_scope_peek(v, NAN, &rd), -ERANGE);
	shk_scope_close(a);
	shk_scope_close(b);
	shk_scope_close(v);
}
END_TEST

/* A call that costs nothing (an exec without cost_usd, a model's
 * proposal) is reserved at 0 and taken back with "0": settled, released
 * and swept when its lease runs out, and its nonce free again. */
START_TEST(zero_estimate)
{
	shk_shared_config c = scope_cfg(redis.sock, "zero", SHK_SCOPE_ORG, SHK_SCOPE_NONE);
	shk_scope *a;
	shk_scope_read rd;

	c.lease_s = 1;
	a = open_scope(&c, "s-z");
	reserve(a, 1, 0.0, true, 0, 0);
	ck_assert_int_eq(shk_scope_settle(a, 1, 0.0, &rd), 0);
	ck_assert_msg(rd.settled, "settle at 0: %s", rd.why);
	reserve(a, 2, 0.0, true, 0, 0);
	ck_assert_int_eq(shk_scope_release(a, 2, &rd), 0);
	ck_assert_msg(rd.settled, "release of 0: %s", rd.why);
	reserve(a, 2, 0.0, true, 0, 0); /* held, then judged again: the same nonce */
	ck_assert_int_eq(shk_scope_settle(a, 2, 0.25, &rd), 0);
	ck_assert(rd.settled);
	ck_assert_int_eq(rd.spent_uusd, 250000);
	ck_assert_int_eq(rd.reserved_uusd, 0);
	reserve(a, 3, 0.0, true, 250000, 0);
	usleep(1200 * 1000); /* its lease runs out: the next reserve sweeps it */
	ck_assert_int_eq(shk_scope_reserve(a, 4, 0.0, 1.0, &rd), 0);
	ck_assert_msg(rd.granted && rd.expired == 1, "sweep: %s", rd.why);
	ck_assert_int_eq(rd.spent_uusd, 250000);
	ck_assert_int_eq(rd.reserved_uusd, 0);
	shk_scope_close(a);
}
END_TEST

/* Every answer carries the scope's count of operations that moved its
 * totals; a sweep returns what it charged. A reservation of 0 settles
 * and is swept like any other (HINCRBY refuses "-0"). */
START_TEST(operations_are_numbered)
{
	shk_shared_config c = scope_cfg(redis.sock, "ops", SHK_SCOPE_ORG, SHK_SCOPE_NONE);
	shk_scope *a, *b;
	shk_scope_read rd;

	c.lease_s = 1;
	a = open_scope(&c, "s-a");
	b = open_scope(&c, "s-b");
	reserve(a, 1, 0.0, true, 0, 0);
	ck_assert_uint_eq(rd_ops(a, 2, 0.0), 2);       /* a grant, even of 0, is an operation */
	ck_assert_int_eq(shk_scope_settle(a, 1, 0.0, &rd), 0);
	ck_assert_msg(rd.settled && rd.ops == 3, "settled %d ops %" PRIu64, rd.settled, rd.ops);
	ck_assert_int_eq(shk_scope_settle(a, 1, 0.0, &rd), 0);
	ck_assert(!rd.settled);
	ck_assert_uint_eq(rd.ops, 3);                  /* found nothing: nothing moved */
	reserve(a, 3, 0.25, true, 0, 0);
	reserve(a, 4, 0.9, false, 0, 250000);
	ck_assert_int_eq(shk_scope_release(a, 3, &rd), 0);
	ck_assert_uint_eq(rd.ops, 5);
	/* 2 (0 uUSD) and 5 are left to their lease */
	reserve(a, 5, 0.125, true, 0, 0);
	sleep_ms(1100);
	ck_assert_int_eq(shk_scope_reserve(b, 1, 0.5, 1.0, &rd), 0);
	ck_assert_msg(rd.granted && rd.expired == 2 && rd.ops == 7, "expired %u ops %" PRIu64, rd.expired, rd.ops);
	ck_assert_int_eq(rd.spent_uusd, 125000);       /* after the sweep, before this reservation */
	ck_assert_int_eq(rd.reserved_uusd, 0);
	ck_assert_str_eq(rd.swept[0].field, "s-a:2");
	ck_assert_int_eq(rd.swept[0].uusd, 0);
	ck_assert_str_eq(rd.swept[1].field, "s-a:5");
	ck_assert_int_eq(rd.swept[1].uusd, 125000);
	shk_scope_close(a);
	shk_scope_close(b);
}
END_TEST

/* ---- 8 sessions racing for one budget ----------------------------------- */

/* One round of a fresh organisation budget of 1 USD (scope_race.c): returns
 * the overshoot (spend beyond the limit) in USD and the bound: the excess of
 * the calls that can be in flight at once, one per racer. */
static double race_round(int round, double overrun, double *ret_bound)
{
	char org[32];
	shk_shared_config c;
	struct scope_race_round r;

	snprintf(org, sizeof(org), "race-%.1f-%d", overrun, round);
	c = scope_cfg(redis.sock, org, SHK_SCOPE_ORG, SHK_SCOPE_NONE);
	ck_assert_msg(scope_race_round(&c, overrun, (unsigned)round, &r) == 0, "%s", r.err);
	/* What the script read must have left room for every grant. */
	ck_assert_int_eq(r.bad, 0);
	*ret_bound = r.bound_usd;
	return r.overshoot_usd;
}

static int rounds(void)
{
	const char *e = getenv("SHK_SCOPE_RACE_ROUNDS");

#ifdef __SANITIZE_ADDRESS__
	/* the sanitizers make each round ~10x slower; the -O build runs 1,000 */
	return e && atoi(e) > 0 ? atoi(e) : 200;
#else
	return e && atoi(e) > 0 ? atoi(e) : 1000;
#endif
}

START_TEST(race_never_overspends)
{
	int n = rounds();
	double worst = -1, worst_ratio = 0;

	/* Actual cost within the estimate: the budget is never exceeded. */
	for (int i = 0; i < n / 2; i++) {
		double bound, over = race_round(i, 0.0, &bound);

		ck_assert_msg(over <= 0, "round %d: spent %.6f USD beyond the limit", i, over);
		worst = over > worst ? over : worst;
	}
	printf("race: %d rounds x %d sessions, actual <= estimate: worst overshoot %.6f USD\n",
	       n / 2, SCOPE_RACERS, worst > 0 ? worst : 0);
	/* Actual up to 50% above the estimate: at most what was in flight. */
	worst = -1;
	for (int i = 0; i < n - n / 2; i++) {
		double bound, over = race_round(i, 1.0, &bound);

		ck_assert_msg(over <= bound + 1e-6, "round %d: overshoot %.6f > in-flight %.6f", i,
			      over, bound);
		worst = over > worst ? over : worst;
		worst_ratio = bound > 0 && over / bound > worst_ratio ? over / bound : worst_ratio;
	}
	printf("race: %d rounds x %d sessions, actual up to +50%%: worst overshoot %.6f USD "
	       "(at most %.0f%% of the in-flight excess)\n", n - n / 2, SCOPE_RACERS,
	       worst > 0 ? worst : 0, worst_ratio * 100);
}
END_TEST

/* ---- the breaker ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

START_TEST(breaker_reaches_the_scope)
{
	shk_shared_config c = scope_cfg(redis.sock, "brk", SHK_SCOPE_NONE, SHK_SCOPE_ORG);
	struct scope_seen seen = SCOPE_SEEN_INIT;
	shk_scope_options ob = { .config = &c, .session_id = "host-b", .on_breaker = scope_seen_fn,
				 .ctx = &seen };
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *a = open_scope(&c, "host-a"), *b = NULL;
	double lat[100];
	shk_scope_breaker br;
	shk_scope_read rd;

	ck_assert_int_eq(shk_scope_open(&ob, &b, why), 0);
	for (int i = 0; i < 100; i += 2) {
		double t0 = now_ms(), t1;

		ck_assert_int_eq(shk_scope_trip(a, "max_repeat_exceeded", &br), 0);
		ck_assert(br.open);
		ck_assert_msg((t1 = scope_seen_wait(&seen, br.epoch)) >= 0, "trip %d never arrived", i);
		lat[i] = t1 - t0;
		ck_assert_int_eq(shk_scope_breaker_get(b, &br), 0);
		ck_assert(br.open);
		ck_assert_str_eq(br.by, "host-a");
		ck_assert_str_eq(br.reason, "max_repeat_exceeded");
		/* A second trip changes nothing: the first reason is kept. */
		ck_assert_int_eq(shk_scope_trip(b, "budget_exhausted", &br), 0);
		ck_assert_str_eq(br.reason, "max_repeat_exceeded");
		ck_assert_int_eq(shk_scope_reserve(b, (uint64_t)i + 1, 0.01, 1.0, &rd), 0);
		ck_assert(rd.breaker.open);
		t0 = now_ms();
		ck_assert_int_eq(shk_scope_reset(b, "operator:alice", &br), 0);
		ck_assert(!br.open);
		ck_assert_msg(scope_seen_wait(&seen, br.epoch) >= 0, "reset %d", i);
		lat[i + 1] = now_ms() - t0;
		ck_assert_int_eq(shk_scope_breaker_get(a, &br), 0);
		for (int w = 0; w < 200 && br.open; w++, sleep_ms(1))
			shk_scope_breaker_get(a, &br);
		ck_assert_msg(!br.open, "the reset did not reach host-a");
		ck_assert_str_eq(br.by, "operator:alice");
	}
	qsort(lat, 100, sizeof(lat[0]), cmp_double);
	printf("breaker: trip/reset seen by another session's subscriber in p50 %.3f ms, "
	       "max %.3f ms (100 changes)\n", lat[50], lat[99]);
	ck_assert_msg(lat[99] <= 100, "the breaker took %.3f ms to reach the scope", lat[99]);
	shk_scope_close(a);
	shk_scope_close(b);
}
END_TEST

START_TEST(record_for_the_log)
{
	shk_shared_config c = scope_cfg(redis.sock, "rec", SHK_SCOPE_AGENT, SHK_SCOPE_ORG);
	shk_scope *s = open_scope(&c, "s-rec");
	shk_scope_read rd;
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	char *json = NULL;
	size_t len;

	ck_assert_int_eq(shk_scope_reserve(s, 9, 0.25, 1.0, &rd), 0);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	ck_assert_int_eq(shk_scope_read_to_val(&rd, doc, &v), 0);
	ck_assert_int_eq(shk_canon_dump(v, &json, &len), 0);
	ck_assert_msg(strstr(json, "\"scope\":\"org/rec/agent/agent-1\""), "%s", json);
	ck_assert_msg(strstr(json, "\"estimate_uusd\":250000"), "%s", json);
	ck_assert_msg(strstr(json, "\"granted\":true"), "%s", json);
	ck_assert_msg(strstr(json, "\"ops\":1,") && !strstr(json, "\"swept\""), "%s", json);
	ck_assert_msg(strstr(json, "\"breaker\":{") && strstr(json, "\"open\":false"), "%s", json);
	ck_assert_msg(strstr(json, "\"key\":\"shackle:{") && !strstr(json, "\"error\""), "%s", json);
	free(json);
	rd.err = -ETIMEDOUT;
	snprintf(rd.why, sizeof(rd.why), "no answer from Redis within 300 ms");
	ck_assert_int_eq(shk_scope_read_to_val(&rd, doc, &v), 0);
	ck_assert_int_eq(shk_canon_dump(v, &json, &len), 0);
	ck_assert_msg(strstr(json, "\"error\":{\"errno\":\"ETIMEDOUT\",\"why\":\"no answer"), "%s",
		      json);
	free(json);
	shk_doc_free(doc);
	shk_scope_close(s);
}
END_TEST

START_TEST(doctor_reports)
{
	shk_shared_config c = scope_cfg(redis.sock, "doc", SHK_SCOPE_ORG, SHK_SCOPE_SESSION);
	shk_scope *s = open_scope(&c, "s-doc");
	shk_scope_status st;
	shk_scope_read rd;

	ck_assert_int_eq(shk_scope_reserve(s, 1, 0.2, 1.0, &rd), 0);
	ck_assert_int_eq(shk_scope_reserve(s, 2, 0.3, 1.0, &rd), 0);
	ck_assert_int_eq(shk_scope_settle(s, 1, 0.15, &rd), 0);
	ck_assert_int_eq(shk_scope_trip(s, "budget_overrun", NULL), 0);
	ck_assert_int_eq(shk_scope_doctor(&c, "s-doc", &st), 0);
	ck_assert_msg(st.err == 0, "%s", st.why);
	ck_assert_str_eq(st.budget.id, "org/doc");
	ck_assert_int_eq(st.budget.spent_uusd, 150000);
	ck_assert_int_eq(st.budget.reserved_uusd, 300000);
	ck_assert_int_eq(st.budget.in_flight, 1);
	ck_assert_str_eq(st.breaker.id, "session/s-doc");
	ck_assert(st.breaker.breaker.open);
	ck_assert(st.aof);
	ck_assert(st.version[0] == '7' || st.version[0] == '6');
	ck_assert_int_ge(st.rtt_us, 1);
	/* without a session id a session scope has no key to show */
	ck_assert_int_eq(shk_scope_doctor(&c, NULL, &st), 0);
	ck_assert_int_eq(st.err, 0);
	ck_assert_str_eq(st.breaker.id, "");
	shk_scope_close(s);
}
END_TEST

static void setup(void)
{
	int r;

	need_redis();
	r = shk_redis_start(&redis, "everysec", false);
	ck_assert_msg(r == 0, "redis-server: %s", strerror(-r));
}

static void teardown(void)
{
	shk_redis_stop(&redis);
}

int main(void)
{
	Suite *s = suite_create("scope");
	TCase *tc = tcase_create("redis");

	need_redis();
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, uusd_conversion);
	tcase_add_test(tc, budget_arithmetic);
	tcase_add_test(tc, zero_estimate);
	tcase_add_test(tc, peek_changes_nothing);
	tcase_add_test(tc, operations_are_numbered);
	tcase_add_test(tc, breaker_reaches_the_scope);
	tcase_add_test(tc, record_for_the_log);
	tcase_add_test(tc, doctor_reports);
	tcase_add_test(tc, race_never_overspends);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
