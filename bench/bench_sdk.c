/* SPDX-License-Identifier: MIT */
/*
 * The SDK socket's pre_exec round trip (docs/sdk.md): a C client writes a
 * pre_exec line and reads its pre_exec_response, one at a time, on one
 * registered connection, against the server on the test judge (the real
 * shk_session behind a mutex; no policy matching, no audit append — see
 * bench_audit for that part). Each call has its own nonce; params cycle
 * through 64 (the session keeps 4096 distinct ones).
 *
 * Against it, with the same client code, a floor: a thread that reads one
 * line from the same kind of socket (unix stream, bound to a path) and sends
 * back a fixed line (a real answer, so as many bytes) — what any JSON-lines
 * server costs on this machine before it looks at a byte. The two run in
 * alternating blocks, so that a loaded machine weighs on both alike.
 * Prints p50/p99/p99.9/max of each as the client's clock sees it, and the
 * process CPU time per call of each (client and server threads, and the
 * server thread's alone: the process's less the client thread's).
 *
 * Where the threads run decides most of the figure on a small VM: a reply
 * that wakes a thread on another, idle vCPU costs tens of microseconds of
 * wake-up, one on the same CPU a few. --cpus=A,B pins the client to CPU A
 * and every server thread (the SDK's and the floor's) to CPU B, so that a
 * run measures one placement (A == B: same CPU; A != B: a wake-up across).
 *
 * --judge=run judges with shackle-run's judge instead (judge/judged.h: a
 * policy file, policy matching, the session and the signed audit log in a
 * temporary directory): every call's entry is written before its answer,
 * as in a real run; --fsync= as shackle-run's (checkpoint by default).
 * usage: bench_sdk [N] [--cpus=A,B] [--judge=run [--fsync=POLICY]]
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "judge/judged.h"
#include "sdk/sdk.h"
#include "sdk_judge.h"

#define WARM 1000
#define BLOCKS 20

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* Read until a line has come in whole; its length with the newline, or -1. */
static ssize_t read_line(int fd, char *buf, size_t cap)
{
	size_t got = 0;

	while (got == 0 || buf[got - 1] != '\n') {
		ssize_t n = read(fd, buf + got, cap - got - 1);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Send one line, read one line back into buf. */
static int round_trip(int fd, const char *line, size_t len, char *buf, size_t cap)
{
	if (write(fd, line, len) != (ssize_t)len)
		return -1;
	return read_line(fd, buf, cap) < 0 ? -1 : 0;
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

/* CPUs of --cpus=A,B; -1: not pinned. Threads inherit the affinity of the
 * thread that creates them, so the server threads are created pinned. */
static int cpu_client = -1, cpu_server = -1;

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		fprintf(stderr, "bench_sdk: cannot pin to CPU %d\n", cpu);
}

/* ---- shackle-run's judge (--judge=run) ---------------------------------- */

static shk_fsync_policy run_fsync = SHK_FSYNC_CHECKPOINT; /* --fsync= */

struct run_judge {
	struct shk_judged js;
	bool open;
	char dir[64], policy[96], log[96], key[104], pub[104];
};

/* No repeat limit (params cycle through 64) and a budget no run spends. */
#define RUN_POLICY "{\"version\":1,\"guard\":{\"budget_usd\":1000000,\"max_repeat_calls\":0}," \
	"\"exec\":{\"default\":\"allow\"},\"net\":{\"default\":\"deny\"}}\n"

static int run_judge_open(struct run_judge *rj, struct shk_source_judge *ret)
{
	static const char *argv[] = { "bench_sdk" };
	struct shk_judged_log lo = { .session_id = "bench", .argv = argv, .argc = 1, .version = "bench" };
	const char *tmp = getenv("TMPDIR");
	FILE *f;

	snprintf(rj->dir, sizeof(rj->dir), "%s/bench-sdk-run-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(rj->dir))
		return -1;
	snprintf(rj->policy, sizeof(rj->policy), "%s/policy.json", rj->dir);
	snprintf(rj->log, sizeof(rj->log), "%s/audit.jsonl", rj->dir);
	snprintf(rj->key, sizeof(rj->key), "%s.key", rj->log);
	snprintf(rj->pub, sizeof(rj->pub), "%s.pub", rj->log);
	f = fopen(rj->policy, "w");
	if (!f || fputs(RUN_POLICY, f) < 0 || fclose(f) != 0)
		return -1;
	lo.audit = rj->log;
	lo.fsync = run_fsync;
	if (shk_judged_load(&rj->js, rj->policy, 0) < 0 || shk_judged_open_log(&rj->js, &lo) < 0)
		return fprintf(stderr, "bench_sdk: %s\n", rj->js.err), -1;
	rj->open = true;
	*ret = shk_judged_source(&rj->js);
	return 0;
}

/* The log's size per call, then everything removed. */
static void run_judge_close(struct run_judge *rj, int calls)
{
	struct stat st;

	if (rj->open) {
		shk_judged_end(&rj->js, 0, NULL);
		if (stat(rj->log, &st) == 0 && calls > 0)
			printf("  audit log: %lld bytes, %lld per call\n", (long long)st.st_size,
			       (long long)st.st_size / calls);
		shk_judged_free(&rj->js);
	}
	unlink(rj->log);
	unlink(rj->key);
	unlink(rj->pub);
	unlink(rj->policy);
	rmdir(rj->dir);
}

/* ---- the floor: one line in, a fixed line out -------------------------- */

struct floor {
	char dir[64], path[80];
	int listen_fd;
	pthread_t thread;
	char reply[4096];
	size_t reply_len;
};

static void *floor_main(void *arg)
{
	struct floor *f = arg;
	char buf[4096];
	int fd = accept(f->listen_fd, NULL, NULL);

	while (fd >= 0 && read_line(fd, buf, sizeof(buf)) > 0 &&
	       send(fd, f->reply, f->reply_len, MSG_NOSIGNAL) == (ssize_t)f->reply_len)
		;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int floor_start(struct floor *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *tmp = getenv("TMPDIR");

	snprintf(f->dir, sizeof(f->dir), "%s/bench-sdk-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/sock", f->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->listen_fd < 0 || bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(f->listen_fd, 1) < 0 || pthread_create(&f->thread, NULL, floor_main, f) != 0)
		return -1;
	return 0;
}

static void floor_stop(struct floor *f)
{
	pthread_join(f->thread, NULL);
	close(f->listen_fd);
	unlink(f->path);
	rmdir(f->dir);
}

/* ---- the client, the same for both ------------------------------------- */

struct side {
	int fd;
	char sid[64];
	int next;       /* the next call's index (call_number - 1) */
	int64_t *lat;
	int n;
	int64_t cpu_ns;    /* the process's during this side's blocks */
	int64_t client_ns; /* the client thread's: the rest is the server's */
};

/* The next call's pre_exec line; its length. */
static size_t next_line(struct side *s, char line[static 512])
{
	int i = s->next++;

	return (size_t)snprintf(line, 512,
		"{\"protocol_version\":\"1.0.0\",\"message_id\":\"m%d\",\"pre_exec\":{\"session_id\":"
		"\"%s\",\"call_number\":%d,\"tool_name\":\"web_search\",\"tool_params\":{\"q\":"
		"\"query %d\"},\"estimated_cost_usd\":0.001,\"nonce\":%d}}\n",
		i, s->sid, i + 1, i % 64, i + 1);
}

/* One pre_exec round trip; its latency kept in s->lat when keep. */
static int call(struct side *s, bool keep)
{
	char line[512], buf[4096];
	size_t len = next_line(s, line);
	int64_t t0 = now_ns();

	if (round_trip(s->fd, line, len, buf, sizeof(buf)) < 0 ||
	    !strstr(buf, "\"verdict\":\"ALLOW\""))
		return fprintf(stderr, "bench_sdk: call %d: %s\n", s->next, buf), -1;
	if (keep)
		s->lat[s->n++] = now_ns() - t0;
	return 0;
}

/* The other side's server thread sleeps in read() meanwhile, so the
 * process's CPU time less the client thread's is this side's server's. */
static int block(struct side *s, int count)
{
	int64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	for (int i = 0; i < count; i++)
		if (call(s, true) < 0)
			return -1;
	s->cpu_ns += clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	s->client_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return 0;
}

static int register_on(struct side *s)
{
	char buf[4096];
	const char *p;
	const char *reg = "{\"protocol_version\":\"1.0.0\",\"register\":{\"agent_id\":\"bench\"}}\n";

	if (round_trip(s->fd, reg, strlen(reg), buf, sizeof(buf)) < 0 ||
	    !(p = strstr(buf, "\"session_id\":\"")) || sscanf(p + 14, "%40[^\"]", s->sid) != 1)
		return -1;
	return 0;
}

/* The floor's fixed line: the real server's answer to one more call. */
static int take_reply(struct side *sdk, struct floor *f)
{
	char line[512];
	size_t len = next_line(sdk, line);

	if (round_trip(sdk->fd, line, len, f->reply, sizeof(f->reply)) < 0)
		return -1;
	f->reply_len = strlen(f->reply);
	return 0;
}

static int run(struct side *sdk, struct side *flo, struct floor *f, int n)
{
	int r;

	if (register_on(sdk) < 0)
		return -1;
	for (int i = 0; i < WARM; i++)
		if (call(sdk, false) < 0)
			return -1;
	if (take_reply(sdk, f) < 0)
		return -1;
	pin_self(cpu_server);
	r = floor_start(f);
	pin_self(cpu_client);
	if (r < 0 || (flo->fd = connect_to(f->path)) < 0)
		return fprintf(stderr, "bench_sdk: no floor server\n"), -1;
	for (int i = 0; i < WARM; i++)
		if (call(flo, false) < 0)
			return -1;
	for (int b = 0; b < BLOCKS; b++) {
		int count = n / BLOCKS + (b < n % BLOCKS);

		if (block(sdk, count) < 0 || block(flo, count) < 0)
			return -1;
	}
	return 0;
}

static double pct(const int64_t *lat, int n, int per_mille)
{
	return lat[(int64_t)n * per_mille / 1000] / 1e3;
}

static void report(const char *name, struct side *s)
{
	qsort(s->lat, (size_t)s->n, sizeof(*s->lat), cmp);
	printf("  %-6s p50 %6.1f us  p99 %6.1f us  p99.9 %7.1f us  max %8.1f us  cpu %5.1f us/call"
	       " (server %4.1f)\n",
	       name, pct(s->lat, s->n, 500), pct(s->lat, s->n, 990), pct(s->lat, s->n, 999),
	       s->lat[s->n - 1] / 1e3, s->cpu_ns / 1e3 / s->n, (s->cpu_ns - s->client_ns) / 1e3 / s->n);
}

static bool use_run; /* --judge=run */

static int parse_args(int argc, char **argv, int *n)
{
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--cpus=", 7) == 0) {
			if (sscanf(argv[i] + 7, "%d,%d", &cpu_client, &cpu_server) != 2 ||
			    cpu_client < 0 || cpu_server < 0)
				return -1;
		} else if (strcmp(argv[i], "--judge=run") == 0) {
			use_run = true;
		} else if (strncmp(argv[i], "--fsync=", 8) == 0) {
			if (shk_fsync_policy_parse(argv[i] + 8, &run_fsync) < 0)
				return -1;
		} else {
			*n = atoi(argv[i]);
		}
	}
	return *n < BLOCKS ? -1 : 0;
}

static void print_results(struct side *s, struct side *fl, int n)
{
	printf("sdk pre_exec round trip, %d calls each after %d warm-up, one connection, one at a time,\n"
	       "in %d alternating blocks (client write -> server parse, judge, answer -> client read)\n"
	       "against a floor server that reads a line and sends a fixed one (cpu: the process's,\n"
	       "client and server threads; server: less the client's); judge: %s\n", n, WARM, BLOCKS,
	       use_run ? "shackle-run's (policy, session, audit entry before the answer)"
		       : "shk_session alone (no policy, no audit)");
	if (use_run)
		printf("  audit log fsync: %s\n", shk_fsync_policy_name(run_fsync));
	if (cpu_client >= 0)
		printf("  client on CPU %d, server threads on CPU %d\n", cpu_client, cpu_server);
	report("sdk", s);
	report("floor", fl);
	printf("  sdk - floor: p50 %+.1f us  p99 %+.1f us  cpu %+.1f us/call   (target sdk p50 <= 30, p99 <= 100)\n",
	       pct(s->lat, n, 500) - pct(fl->lat, n, 500), pct(s->lat, n, 990) - pct(fl->lat, n, 990),
	       (s->cpu_ns - fl->cpu_ns) / 1e3 / n);
}

int main(int argc, char **argv)
{
	int n = 20000;
	shk_guard_config g = sdk_judge_guard();
	struct shk_sdk_config cfg = { .socket_path = NULL };
	struct sdk_judge j;
	struct run_judge rj = { .open = false };
	struct shk_source_judge iface;
	struct shk_sdk *sdk = NULL;
	struct side s = { .fd = -1 }, fl = { .fd = -1 };
	struct floor f = { .listen_fd = -1 };
	int r;

	if (parse_args(argc, argv, &n) < 0)
		return fprintf(stderr, "usage: bench_sdk [N >= %d] [--cpus=A,B] [--judge=run [--fsync=POLICY]]\n", BLOCKS), 1;
	s.lat = calloc((size_t)n, sizeof(*s.lat));
	fl.lat = calloc((size_t)n, sizeof(*fl.lat));
	if (!s.lat || !fl.lat || sdk_judge_init(&j, &g) < 0)
		return 1;
	iface = sdk_judge_iface(&j);
	if (use_run && run_judge_open(&rj, &iface) < 0)
		return run_judge_close(&rj, 0), 1;
	pin_self(cpu_server);
	r = shk_sdk_start(&cfg, &iface, &sdk);
	pin_self(cpu_client);
	if (r < 0 || (s.fd = connect_to(shk_sdk_path(sdk))) < 0)
		return fprintf(stderr, "bench_sdk: no server\n"), 1;
	r = run(&s, &fl, &f, n);
	close(s.fd);
	if (fl.fd >= 0)
		close(fl.fd);
	if (f.listen_fd >= 0)
		floor_stop(&f);
	shk_sdk_stop(sdk);
	if (r == 0)
		print_results(&s, &fl, n);
	if (use_run)
		run_judge_close(&rj, s.next);
	sdk_judge_free(&j);
	free(s.lat);
	free(fl.lat);
	return r < 0;
}
