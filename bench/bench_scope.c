/* SPDX-License-Identifier: MIT */
/*
 * What a shared scope adds to a decision: reserve (before decide) + settle
 * (after the call) against a redis-server on loopback that this program
 * starts in a private directory (AOF on, fsync every second: the setting
 * docs/shared-state.md recommends). Prints p50/p99/p99.9 per round trip over
 * the unix socket and over TCP 127.0.0.1.
 *
 *   bench_scope [iterations]   (default 20000)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <shackle/scope.h>

#include "redis_fixture.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void report(const char *what, int64_t *ns, int n)
{
	qsort(ns, (size_t)n, sizeof(*ns), cmp_i64);
	printf("  %-28s p50 %7.1f us   p99 %7.1f us   p99.9 %7.1f us   max %8.1f us\n", what,
	       ns[n / 2] / 1e3, ns[n * 99 / 100] / 1e3, ns[n * 999 / 1000] / 1e3, ns[n - 1] / 1e3);
}

static int run(const shk_shared_config *c, const char *name, int n)
{
	shk_scope_options o = { .config = c, .session_id = "bench" };
	int64_t *both = calloc((size_t)n, sizeof(int64_t)), *res = calloc((size_t)n, sizeof(int64_t));
	char why[SHK_SCOPE_WHY_MAX];
	shk_scope *s = NULL;
	shk_scope_read rd;
	int r = shk_scope_open(&o, &s, why);

	if (r < 0 || !both || !res) {
		fprintf(stderr, "bench_scope: %s: %s\n", name, r < 0 ? why : "out of memory");
		free(both);
		free(res);
		return 1;
	}
	for (int i = -1000; i < n; i++) { /* 1000 rounds of warm-up */
		int64_t t0 = now_ns(), t1, t2;

		if (shk_scope_reserve(s, (uint64_t)(i + 1001), 0.000001, 1e6, &rd) < 0 || !rd.granted)
			break;
		t1 = now_ns();
		if (shk_scope_settle(s, (uint64_t)(i + 1001), 0.000001, &rd) < 0)
			break;
		t2 = now_ns();
		if (i >= 0) {
			res[i] = t1 - t0;
			both[i] = t2 - t0;
		}
		if (i == n - 1)
			r = 1;
	}
	if (r != 1)
		fprintf(stderr, "bench_scope: %s: a call failed: %s\n", name, rd.why);
	printf("%s (%d rounds, breaker shared too):\n", name, n);
	report("reserve", res, n);
	report("reserve + settle", both, n);
	shk_scope_close(s);
	free(both);
	free(res);
	return r == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000, rc;
	struct shk_redis redis;
	shk_shared_config c = { .is_unix = true, .timeout_ms = 1000, .lease_s = 600,
				.budget = SHK_SCOPE_ORG, .breaker = SHK_SCOPE_ORG };

	if (n < 1000) {
		fprintf(stderr, "usage: bench_scope [iterations >= 1000]\n");
		return 2;
	}
	if ((rc = shk_redis_start(&redis, "everysec", true)) < 0) {
		fprintf(stderr, "bench_scope: cannot start redis-server: %s\n", strerror(-rc));
		return 1;
	}
	{
		FILE *f = fopen("/proc/loadavg", "r");
		double l1 = -1;

		if (f && fscanf(f, "%lf", &l1) == 1)
			printf("load average %.2f on %ld CPUs (the tail of the distribution is the "
			       "scheduler's when it is high)\n", l1, sysconf(_SC_NPROCESSORS_ONLN));
		if (f)
			fclose(f);
	}
	snprintf(c.org, sizeof(c.org), "bench-unix");
	snprintf(c.path, sizeof(c.path), "%s", redis.sock);
	rc = run(&c, "unix socket", n);
	c.is_unix = false;
	snprintf(c.org, sizeof(c.org), "bench-tcp");
	snprintf(c.host, sizeof(c.host), "127.0.0.1");
	c.port = (uint16_t)redis.port;
	rc |= run(&c, "tcp 127.0.0.1", n);
	shk_redis_stop(&redis);
	return rc;
}
