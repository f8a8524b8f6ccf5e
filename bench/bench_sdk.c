/* SPDX-License-Identifier: MIT */
/*
 * The SDK socket's pre_exec round trip (docs/sdk.md): a C client writes a
 * pre_exec line and reads its pre_exec_response, one at a time, on one
 * registered connection, against the server on the test judge (the real
 * shk_session behind a mutex; no policy matching, no audit append — see
 * bench_audit for that part). Each call has its own nonce; params cycle
 * through 64 (the session keeps 4096 distinct ones).
 * Prints p50/p99/p99.9/max of the round trip as the client's clock sees it.
 * usage: bench_sdk [N]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sdk/sdk.h"
#include "sdk_judge.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Send one line, read one line back into buf. */
static int round_trip(int fd, const char *line, size_t len, char *buf, size_t cap)
{
	size_t got = 0;

	if (write(fd, line, len) != (ssize_t)len)
		return -1;
	while (got == 0 || buf[got - 1] != '\n') {
		ssize_t n = read(fd, buf + got, cap - got - 1);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return 0;
}

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	return fd;
}

static int run(int fd, int n, int64_t *lat)
{
	char line[512], buf[4096], sid[64];
	const char *p;
	const char *reg = "{\"protocol_version\":\"1.0.0\",\"register\":{\"agent_id\":\"bench\"}}\n";

	if (round_trip(fd, reg, strlen(reg), buf, sizeof(buf)) < 0 ||
	    !(p = strstr(buf, "\"session_id\":\"")) || sscanf(p + 14, "%40[^\"]", sid) != 1)
		return -1;
	for (int i = -1000; i < n; i++) { /* 1000 warm-up calls first */
		int len = snprintf(line, sizeof(line),
			"{\"protocol_version\":\"1.0.0\",\"message_id\":\"m%d\",\"pre_exec\":{\"session_id\":"
			"\"%s\",\"call_number\":%d,\"tool_name\":\"web_search\",\"tool_params\":{\"q\":"
			"\"query %d\"},\"estimated_cost_usd\":0.001,\"nonce\":%d}}\n",
			i, sid, i + 1001, (i + 1000) % 64, i + 1001);
		int64_t t0 = now_ns();

		if (round_trip(fd, line, (size_t)len, buf, sizeof(buf)) < 0 ||
		    !strstr(buf, "\"verdict\":\"ALLOW\""))
			return fprintf(stderr, "bench_sdk: call %d: %s\n", i, buf), -1;
		if (i >= 0)
			lat[i] = now_ns() - t0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	shk_guard_config g = sdk_judge_guard();
	struct shk_sdk_config cfg = { .socket_path = NULL };
	struct sdk_judge j;
	struct shk_source_judge iface;
	struct shk_sdk *sdk = NULL;
	int64_t *lat = calloc((size_t)(n > 0 ? n : 1), sizeof(*lat));
	int fd, r;

	if (n <= 0 || !lat || sdk_judge_init(&j, &g) < 0)
		return 1;
	iface = sdk_judge_iface(&j);
	if (shk_sdk_start(&cfg, &iface, &sdk) < 0 || (fd = connect_to(shk_sdk_path(sdk))) < 0)
		return fprintf(stderr, "bench_sdk: no server\n"), 1;
	r = run(fd, n, lat);
	close(fd);
	shk_sdk_stop(sdk);
	sdk_judge_free(&j);
	if (r < 0)
		return 1;
	qsort(lat, (size_t)n, sizeof(*lat), cmp);
	printf("sdk pre_exec round trip, %d calls after 1000 warm-up, one connection, one at a time\n"
	       "(client write -> server parse, judge on shk_session, answer -> client read; no policy, no audit):\n"
	       "  p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us   (target p50 <= 30, p99 <= 100)\n",
	       n, lat[n / 2] / 1e3, lat[(int64_t)n * 99 / 100] / 1e3, lat[(int64_t)n * 999 / 1000] / 1e3,
	       lat[n - 1] / 1e3);
	free(lat);
	return 0;
}
