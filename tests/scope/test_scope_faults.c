/* SPDX-License-Identifier: MIT */
/*
 * A shared scope fails closed: redis-server killed mid-run, restarted (with
 * and without its data), a server that answers garbage, one that never
 * answers, one that is not there. Each must be an error (the judge denies),
 * never a grant; after a restart the scope resumes by itself.
 */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "checkrun.h"
#include "scope_fixture.h"

static struct shk_redis redis;
static struct test_log tlog = { PTHREAD_MUTEX_INITIALIZER, "" };

static shk_scope *open_logged(const shk_shared_config *c, const char *session)
{
	shk_scope_options o = { .config = c, .session_id = session, .log = test_log_fn,
				.ctx = &tlog };
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	int r = shk_scope_open(&o, &s, why);

	ck_assert_msg(r == 0, "open: %s (%s)", strerror(-r), why);
	return s;
}

/* Reserve until it works again, at most `ms`; the time it took, or -1. */
static double until_granted(shk_scope *s, uint64_t nonce, int ms, shk_scope_read *rd)
{
	double t0 = now_ms();

	while (now_ms() - t0 < ms) {
		if (shk_scope_reserve(s, nonce, 0.01, 1.0, rd) == 0)
			return now_ms() - t0;
		sleep_ms(5);
	}
	return -1;
}

START_TEST(kill_and_restart)
{
	shk_shared_config c = scope_cfg(redis.sock, "kill", SHK_SCOPE_ORG, SHK_SCOPE_ORG);
	shk_scope *s = open_logged(&c, "s-kill");
	shk_scope_breaker b;
	shk_scope_read rd;
	double t0, took;
	int r;

	ck_assert_int_eq(shk_scope_reserve(s, 1, 0.2, 1.0, &rd), 0);
	ck_assert_int_eq(shk_scope_settle(s, 1, 0.2, &rd), 0);
	ck_assert_int_eq(shk_scope_reserve(s, 2, 0.1, 1.0, &rd), 0); /* in flight across the crash */
	shk_redis_kill(&redis);
	/* The subscriber notices at once (EOF): the breaker is not known. */
	t0 = now_ms();
	while (shk_scope_breaker_get(s, &b) == 0 && now_ms() - t0 < 2000)
		sleep_ms(1);
	ck_assert_int_eq(shk_scope_breaker_get(s, &b), -ENOTCONN);
	printf("kill -9: the breaker became unknown after %.1f ms\n", now_ms() - t0);
	for (int i = 0; i < 20; i++) {
		r = shk_scope_reserve(s, 10 + (uint64_t)i, 0.01, 1.0, &rd);
		ck_assert_msg(r < 0 && rd.err == r && !rd.granted, "call %d with Redis dead: %d", i, r);
		ck_assert(rd.why[0]);
		ck_assert_int_lt(shk_scope_settle(s, 2, 0.1, &rd), 0);
		r = shk_scope_peek(s, 1.0, &rd);
		ck_assert_msg(r < 0 && rd.err == r && rd.why[0], "peek %d with Redis dead: %d", i, r);
	}
	ck_assert_msg(test_log_has(&tlog, "connection to unix:") && test_log_has(&tlog, "lost"),
		      "log: %s", tlog.text);
	ck_assert_int_eq(shk_redis_restart(&redis, false), 0);
	took = until_granted(s, 30, 3000, &rd);
	ck_assert_msg(took >= 0, "no reconnect within 3 s: %s", rd.why);
	printf("restart: the scope answered again %.1f ms after redis-server was up\n", took);
	ck_assert(rd.granted);
	ck_assert_int_eq(rd.spent_uusd, 200000);   /* appendfsync always kept it */
	ck_assert_int_eq(rd.reserved_uusd, 100000); /* and the call in flight */
	ck_assert_int_eq(shk_scope_peek(s, 1.0, &rd), 0);
	ck_assert_int_eq(rd.spent_uusd, 200000);
	ck_assert_int_eq(rd.reserved_uusd, 110000);
	ck_assert_int_eq(shk_scope_settle(s, 2, 0.1, &rd), 0);
	ck_assert(rd.settled);
	t0 = now_ms();
	while (shk_scope_breaker_get(s, &b) != 0 && now_ms() - t0 < 2000)
		sleep_ms(5);
	ck_assert_int_eq(shk_scope_breaker_get(s, &b), 0);
	ck_assert_msg(test_log_has(&tlog, "re-made"), "log: %s", tlog.text);
	shk_scope_close(s);
}
END_TEST

START_TEST(restart_without_data_refuses)
{
	shk_shared_config c = scope_cfg(redis.sock, "lost", SHK_SCOPE_ORG, SHK_SCOPE_NONE);
	shk_scope *s = open_logged(&c, "s-lost");
	shk_scope_read rd;

	ck_assert_int_eq(shk_scope_reserve(s, 1, 0.5, 1.0, &rd), 0);
	ck_assert_int_eq(shk_scope_settle(s, 1, 0.5, &rd), 0);
	ck_assert_int_eq(shk_redis_restart(&redis, true), 0);
	/* Counting from 0 again would spend the budget twice. */
	for (int i = 0; i < 50 && shk_scope_reserve(s, 2, 0.5, 1.0, &rd) == -ENOTCONN; i++)
		sleep_ms(10);
	ck_assert_int_eq(shk_scope_reserve(s, 3, 0.5, 1.0, &rd), -ESTALE);
	ck_assert(!rd.granted);
	ck_assert_msg(strstr(rd.why, "went down from 500000 to 0"), "%s", rd.why);
	ck_assert_int_eq(shk_scope_peek(s, 1.0, &rd), -ESTALE); /* no 0 shown as the spend */
	shk_scope_close(s);
}
END_TEST

START_TEST(breaker_lost_data_is_unknown)
{
	shk_shared_config c = scope_cfg(redis.sock, "lostb", SHK_SCOPE_NONE, SHK_SCOPE_ORG);
	shk_scope *s = open_logged(&c, "s-lostb");
	shk_scope_breaker b;
	shk_scope_read rd;

	ck_assert_int_eq(shk_scope_trip(s, "max_repeat_exceeded", &b), 0);
	ck_assert_int_eq(b.epoch, 1);
	ck_assert_int_eq(shk_redis_restart(&redis, true), 0);
	/* The trip is gone from Redis: a closed breaker at epoch 0 is not news
	 * to ignore but a lost trip; the state stays unknown and calls fail. */
	sleep_ms(800);
	ck_assert_int_eq(shk_scope_breaker_get(s, &b), -ENOTCONN);
	ck_assert_int_eq(shk_scope_reserve(s, 1, 0.1, 1.0, &rd), -ENOTCONN);
	ck_assert_msg(strstr(rd.why, "epoch went back from 1 to 0"), "%s", rd.why);
	ck_assert_msg(test_log_has(&tlog, "Redis lost its data"), "log: %s", tlog.text);
	shk_scope_close(s);
}
END_TEST

/* ---- servers that are not Redis -------------------------------------------- */

enum fake_mode { FAKE_NONSENSE, FAKE_OK_TO_ALL, FAKE_SHORT_ARRAY, FAKE_SILENT };

struct fake {
	enum fake_mode mode;
	int lfd;
	char path[96];
	pthread_t th;
};

static const char *fake_answer(enum fake_mode m, const char *req)
{
	if (m == FAKE_NONSENSE)
		return "HTTP/1.1 400 Bad Request\r\n\r\n";
	if (m == FAKE_OK_TO_ALL)
		return "+OK\r\n";
	if (m == FAKE_SHORT_ARRAY && strstr(req, "SCRIPT"))
		return "$40\r\n0123456789012345678901234567890123456789\r\n";
	if (m == FAKE_SHORT_ARRAY)
		return "*2\r\n:1\r\n:0\r\n";
	return NULL;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int fd;

	while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
		char buf[4096];
		ssize_t n;

		while ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
			const char *a;

			buf[n] = 0;
			/* one answer per command: requests are "*<argc>" arrays */
			for (char *p = buf; (p = strchr(p, '*')); p++) {
				if (p != buf && p[-1] != '\n')
					continue;
				if ((a = fake_answer(f->mode, p)) && write(fd, a, strlen(a)) < 0)
					break;
			}
		}
		close(fd);
	}
	return NULL;
}

static void fake_start(struct fake *f, enum fake_mode mode)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	f->mode = mode;
	snprintf(f->path, sizeof(f->path), "%s/fake-%d.sock", redis.dir, (int)mode);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert(f->lfd >= 0);
	ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(f->lfd, 8), 0);
	ck_assert_int_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
}

static int open_at(const char *path, shk_scope **s, char *why)
{
	shk_shared_config c = scope_cfg(path, "fake", SHK_SCOPE_ORG, SHK_SCOPE_NONE);
	shk_scope_options o = { .config = &c, .session_id = "s-fake" };

	return shk_scope_open(&o, s, why);
}

START_TEST(garbage_fails_closed)
{
	static const enum fake_mode modes[] = { FAKE_NONSENSE, FAKE_OK_TO_ALL };
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	struct fake f;

	for (size_t i = 0; i < 2; i++) {
		fake_start(&f, modes[i]);
		ck_assert_int_eq(open_at(f.path, &s, why), -EPROTO);
		ck_assert_ptr_null(s);
		printf("garbage (%s): refused: %s\n", i ? "+OK to all" : "HTTP", why);
		fake_stop(&f);
	}
}
END_TEST

START_TEST(wrong_reply_fails_closed)
{
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	shk_scope_read rd;
	struct fake f;

	fake_start(&f, FAKE_SHORT_ARRAY);
	ck_assert_int_eq(open_at(f.path, &s, why), 0);
	ck_assert_int_eq(shk_scope_reserve(s, 1, 0.1, 1.0, &rd), -EPROTO);
	ck_assert(!rd.granted);
	ck_assert_msg(strstr(rd.why, "not the script's"), "%s", rd.why);
	ck_assert_int_eq(shk_scope_peek(s, 1.0, &rd), -EPROTO); /* an HMGET answered *2 */
	ck_assert_msg(strstr(rd.why, "not shackle's"), "%s", rd.why);
	shk_scope_close(s);
	fake_stop(&f);
}
END_TEST

START_TEST(silent_server_times_out)
{
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	struct fake f;
	double t0, took;

	fake_start(&f, FAKE_SILENT);
	t0 = now_ms();
	ck_assert_int_eq(open_at(f.path, &s, why), -ETIMEDOUT);
	took = now_ms() - t0;
	printf("silent server: refused after %.1f ms (timeout_ms 300): %s\n", took, why);
	ck_assert_msg(took >= 290 && took < 600, "took %.1f ms", took);
	fake_stop(&f);
}
END_TEST

START_TEST(nobody_there)
{
	char path[96], why[SHK_SCOPE_WHY_MAX];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	shk_scope *s = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/none.sock", redis.dir);
	ck_assert_int_eq(open_at(path, &s, why), -ENOENT);
	/* a socket file that nobody listens on any more */
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	ck_assert_int_eq(open_at(path, &s, why), -ECONNREFUSED);
	ck_assert_msg(strstr(why, "cannot connect to Redis at unix:"), "%s", why);
}
END_TEST

START_TEST(tcp_loopback)
{
	shk_shared_config c = scope_cfg(redis.sock, "tcp", SHK_SCOPE_ORG, SHK_SCOPE_ORG);
	shk_scope_options o = { .config = &c, .session_id = "s-tcp" };
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	shk_scope_read rd;

	c.is_unix = false;
	snprintf(c.host, sizeof(c.host), "127.0.0.1");
	c.port = (uint16_t)redis.port;
	ck_assert_msg(shk_scope_open(&o, &s, why) == 0, "%s", why);
	ck_assert_int_eq(shk_scope_reserve(s, 1, 0.1, 1.0, &rd), 0);
	ck_assert(rd.granted);
	shk_scope_close(s);
}
END_TEST

static void setup(void)
{
	int r;

	need_redis();
	r = shk_redis_start(&redis, "always", true);
	ck_assert_msg(r == 0, "redis-server: %s", strerror(-r));
}

static void teardown(void)
{
	shk_redis_stop(&redis);
}

int main(void)
{
	Suite *s = suite_create("scope_faults");
	TCase *tc = tcase_create("faults");

	need_redis();
	/* one server per test: some kill it */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, kill_and_restart);
	tcase_add_test(tc, restart_without_data_refuses);
	tcase_add_test(tc, breaker_lost_data_is_unknown);
	tcase_add_test(tc, garbage_fails_closed);
	tcase_add_test(tc, wrong_reply_fails_closed);
	tcase_add_test(tc, silent_server_times_out);
	tcase_add_test(tc, nobody_there);
	tcase_add_test(tc, tcp_loopback);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
