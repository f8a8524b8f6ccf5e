/* SPDX-License-Identifier: MIT */
/* What the scope tests share: a config for a test's redis-server, a log that
 * the tests read, and a clock. */
#ifndef SHACKLE_SCOPE_FIXTURE_H
#define SHACKLE_SCOPE_FIXTURE_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <shackle/scope.h>

#include "redis_fixture.h"
#include "testutil.h"

static inline shk_shared_config scope_cfg(const char *sock, const char *org, shk_scope_level budget,
					  shk_scope_level breaker)
{
	shk_shared_config c = { .is_unix = true, .timeout_ms = 300, .lease_s = 600,
				.budget = budget, .breaker = breaker };

	snprintf(c.path, sizeof(c.path), "%s", sock);
	snprintf(c.org, sizeof(c.org), "%s", org);
	snprintf(c.agent, sizeof(c.agent), "agent-1");
	return c;
}

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Lines the library logged, for the tests to look for. */
struct test_log {
	pthread_mutex_t lock;
	char text[8192];
};

static inline void test_log_fn(void *ctx, const char *line)
{
	struct test_log *l = ctx;
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = strlen(l->text);
	snprintf(l->text + n, sizeof(l->text) - n, "%s\n", line);
	pthread_mutex_unlock(&l->lock);
}

static inline bool test_log_has(struct test_log *l, const char *needle)
{
	bool has;

	pthread_mutex_lock(&l->lock);
	has = strstr(l->text, needle) != NULL;
	pthread_mutex_unlock(&l->lock);
	return has;
}

static inline void need_redis(void)
{
	if (!shk_redis_available())
		shk_test_skip("redis-server is not installed (apt-get install redis-server)");
}

#endif
