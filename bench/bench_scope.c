/* SPDX-License-Identifier: MIT */
/*
 * What a shared scope adds to a decision: reserve (before decide) + settle
 * (after the call) against a redis-server on loopback that this program
 * starts in a private directory (AOF on, fsync every second: the setting
 * docs/shared-state.md recommends).
 *
 *   bench_scope [ITERATIONS]   p50/p99/p99.9 of reserve and reserve + settle
 *                              over the unix socket and TCP 127.0.0.1 (20000)
 *   bench_scope race [ROUNDS]  8 sessions, each its own connection as separate
 *                              shackle-runs have, racing for a fresh 1 USD
 *                              organisation budget per round (1000): the worst
 *                              overshoot against the excess of the calls in
 *                              flight, actual = estimate and actual up to +50 %
 *   bench_scope breaker [N]    N trips and resets (200) in one session: the
 *                              time until another session's subscriber sees
 *                              each, p50/p99/max and how many took > 100 ms
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <shackle/scope.h>

#include "redis_fixture.h"
#include "scope_race.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

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

/* Actual costs = estimate (overrun 0) or estimate * (0.5 .. 1.5) (overrun 1). */
static int race_mode(const char *sock, double overrun, int rounds)
{
	shk_shared_config c = { .is_unix = true, .timeout_ms = 1000, .lease_s = 600,
				.budget = SHK_SCOPE_ORG, .breaker = SHK_SCOPE_NONE };
	double worst = 0, worst_bound = 0, max_ratio = 0, t0 = now_ns() / 1e9;
	int over = 0, beyond = 0, bad = 0, calls = 0, cmin = 1 << 30, cmax = 0;

	snprintf(c.path, sizeof(c.path), "%s", sock);
	for (int i = 0; i < rounds; i++) {
		struct scope_race_round r;

		snprintf(c.org, sizeof(c.org), "race-%.1f-%d", overrun, i);
		if (scope_race_round(&c, overrun, (unsigned)i, &r) < 0) {
			fprintf(stderr, "bench_scope: race round %d: %s\n", i, r.err);
			return 1;
		}
		if (r.overshoot_usd > 0)
			over++;
		if (r.overshoot_usd > r.bound_usd + 1e-6)
			beyond++;
		if (r.overshoot_usd > worst) {
			worst = r.overshoot_usd;
			worst_bound = r.bound_usd;
		}
		if (r.bound_usd > 0 && r.overshoot_usd / r.bound_usd > max_ratio)
			max_ratio = r.overshoot_usd / r.bound_usd;
		bad += r.bad;
		calls += r.calls;
		cmin = r.calls < cmin ? r.calls : cmin;
		cmax = r.calls > cmax ? r.calls : cmax;
	}
	printf("race, %d rounds x %d sessions, actual %s (%.2f s):\n", rounds, SCOPE_RACERS,
	       overrun > 0 ? "0.5-1.5x the estimate" : "= estimate", now_ns() / 1e9 - t0);
	printf("  worst overshoot %.6f USD; bound in that round (excess of the calls in flight) "
	       "%.6f USD; overshoot at most %.0f %% of its round's bound\n", worst, worst_bound,
	       max_ratio * 100);
	printf("  rounds overshooting %d, beyond the excess in flight %d; grants that read no room "
	       "%d\n", over, beyond, bad);
	printf("  calls per round %.1f (%d-%d)\n", (double)calls / rounds, cmin, cmax);
	printf("  overshoot <= calls in flight: %s\n", beyond || bad ? "MISSED" : "met");
	return beyond || bad ? 1 : 0;
}

static void breaker_report(const char *what, double *ms, int n)
{
	int slow = 0;

	qsort(ms, (size_t)n, sizeof(*ms), cmp_double);
	for (int i = 0; i < n; i++)
		slow += ms[i] > 100;
	printf("  %-8s p50 %7.3f ms   p99 %7.3f ms   max %8.3f ms   > 100 ms: %d of %d\n", what,
	       ms[n / 2], ms[n * 99 / 100], ms[n - 1], slow, n);
}

/* Session a trips and resets; the time from the call to session b's
 * subscriber seeing the new epoch. */
static int breaker_mode(const char *sock, int n)
{
	shk_shared_config c = { .is_unix = true, .timeout_ms = 1000, .lease_s = 600,
				.budget = SHK_SCOPE_NONE, .breaker = SHK_SCOPE_ORG };
	struct scope_seen seen = SCOPE_SEEN_INIT;
	shk_scope_options oa = { .config = &c, .session_id = "host-a" },
			  ob = { .config = &c, .session_id = "host-b", .on_breaker = scope_seen_fn,
				 .ctx = &seen };
	double *all = calloc((size_t)n, sizeof(double)), *trip = calloc((size_t)n, sizeof(double)),
	       *reset = calloc((size_t)n, sizeof(double));
	char why[SHK_SCOPE_WHY_MAX] = "out of memory";
	shk_scope *a = NULL, *b = NULL;
	int i = 0, rc = 1;

	snprintf(c.path, sizeof(c.path), "%s", sock);
	snprintf(c.org, sizeof(c.org), "bench-breaker");
	if (!all || !trip || !reset || shk_scope_open(&oa, &a, why) < 0 ||
	    shk_scope_open(&ob, &b, why) < 0)
		goto out;
	for (; i < n; i++) {
		double t0 = now_ns() / 1e6, t1;
		shk_scope_breaker br;
		int r = i % 2 ? shk_scope_reset(a, "operator:bench", &br)
			      : shk_scope_trip(a, "max_repeat_exceeded", &br);

		if (r < 0 || br.open == (i % 2)) {
			snprintf(why, sizeof(why), "change %d: %s", i, strerror(-r));
			goto out;
		}
		if ((t1 = scope_seen_wait(&seen, br.epoch)) < 0) {
			snprintf(why, sizeof(why), "change %d never reached the other session", i);
			goto out;
		}
		all[i] = t1 - t0;
		(i % 2 ? reset : trip)[i / 2] = t1 - t0;
	}
	printf("breaker, %d changes made in one session, seen by another's subscriber:\n", n);
	breaker_report("trip", trip, (n + 1) / 2);
	if (n > 1)
		breaker_report("reset", reset, n / 2);
	breaker_report("all", all, n);
	printf("  breaker <= 100 ms: %s\n", all[n - 1] <= 100 ? "met" : "MISSED");
	rc = all[n - 1] <= 100 ? 0 : 1;
out:
	if (i < n)
		fprintf(stderr, "bench_scope: breaker: %s\n", why);
	shk_scope_close(a);
	shk_scope_close(b);
	free(all);
	free(trip);
	free(reset);
	return rc;
}

static void print_load(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l1 = -1;

	if (f && fscanf(f, "%lf", &l1) == 1)
		printf("load average %.2f on %ld CPUs (the tail of the distribution is the "
		       "scheduler's when it is high)\n", l1, sysconf(_SC_NPROCESSORS_ONLN));
	if (f)
		fclose(f);
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_scope [iterations >= 1000]\n"
			"       bench_scope race [rounds >= 1]\n"
			"       bench_scope breaker [changes >= 1]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 && (!strcmp(argv[1], "race") || !strcmp(argv[1], "breaker"))
				   ? argv[1] : NULL;
	const char *num = mode ? (argc > 2 ? argv[2] : NULL) : (argc > 1 ? argv[1] : NULL);
	int n = num ? atoi(num) : !mode ? 20000 : *mode == 'r' ? 1000 : 200, rc;
	struct shk_redis redis;
	shk_shared_config c = { .is_unix = true, .timeout_ms = 1000, .lease_s = 600,
				.budget = SHK_SCOPE_ORG, .breaker = SHK_SCOPE_ORG };

	if (n < (mode ? 1 : 1000) || argc > (mode ? 3 : 2))
		return usage();
	if ((rc = shk_redis_start(&redis, "everysec", !mode)) < 0) {
		fprintf(stderr, "bench_scope: cannot start redis-server: %s\n", strerror(-rc));
		return 1;
	}
	print_load();
	if (mode && *mode == 'r') {
		rc = race_mode(redis.sock, 0.0, n);
		rc |= race_mode(redis.sock, 1.0, n);
	} else if (mode) {
		rc = breaker_mode(redis.sock, n);
	} else {
		snprintf(c.org, sizeof(c.org), "bench-unix");
		snprintf(c.path, sizeof(c.path), "%s", redis.sock);
		rc = run(&c, "unix socket", n);
		c.is_unix = false;
		snprintf(c.org, sizeof(c.org), "bench-tcp");
		snprintf(c.host, sizeof(c.host), "127.0.0.1");
		c.port = (uint16_t)redis.port;
		rc |= run(&c, "tcp 127.0.0.1", n);
	}
	shk_redis_stop(&redis);
	return rc;
}
