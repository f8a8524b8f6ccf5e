/* SPDX-License-Identifier: MIT */
/*
 * bench_ebpf: what the eBPF layer costs and how much it can report.
 *
 * 1. Per-call time of a connect loop in a cgroup with shackle's programs
 *    attached vs. one without, run alternately in the same conditions:
 *    UDP connect() on one socket (the syscall is cheap, so the hook's own cost
 *    shows) and TCP socket+connect+close against a local accepting listener
 *    (what an agent's traffic looks like). Target: <= 1.05x. Twice: with
 *    only denials reported (the enforcement alone, as shackle-run's hooks
 *    and a report_allowed=false loader run), and with every call written to
 *    the ring and drained by a consumer thread, as `shackle attach` runs
 *    (its consumer then judges and logs: that part is row 3).
 * 2. Ring buffer: a child connects as fast as it can with every call
 *    reported; the consumer counts events per second and the kernel's drops.
 * 3. The whole attach pipeline (src/cli/cmd_attach.c: event -> tool call ->
 *    session -> signed audit log): decisions logged per second, and drops.
 *
 * `bench_ebpf reported udp|tcp N` runs one round of the loops of 1 with
 * every call reported (not attached, then attached) and prints one line, for
 * bench/run_supervise_bench.sh, which interleaves its own rounds.
 * `bench_ebpf floor udp|tcp N` runs the same round with bpf/floor.bpf.c
 * attached instead: programs that allow at once on the same hooks, the
 * kernel's dispatch alone.
 *
 * Only 127.0.0.1 is used. Needs root; prints a reason and exits 77 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/ebpf.h>

#include "cli/commands.h"
#include "shk_bpf_config.h"
#if SHK_HAVE_BPF
#include <bpf/libbpf.h>

#include "floor.skel.h"
#endif

#define ROUNDS 11

static char cg_on[1024], cg_off[1024];
static uint16_t tcp_port, udp_port;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time (user + system) this process has used, in seconds */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "bench_ebpf: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

static void *acceptor(void *arg)
{
	int l = *(int *)arg;

	for (;;) {
		int c = accept(l, NULL, NULL);

		if (c >= 0)
			close(c);
	}
	return NULL;
}

static int listen_on(int type, uint16_t *ret_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) < 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -errno;
	*ret_port = ntohs(a.sin_port);
	return fd;
}

/* Calls refused (EPERM) in the last loop_in(): a full ring refuses calls. */
static long last_refused;
/* CPU time per call of the last loop_in()'s child: less exposed than wall
 * time to the other work of a shared machine (softirq work of loopback
 * delivery is mostly charged to the sender) */
static double last_cpu_ns;

/* ns per call of n iterations, measured inside the cgroup by a child. */
static double loop_in(const char *cg, int tcp, long n)
{
	int p[2];
	double ns = -1, res[3] = { -1, 0, 0 };
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(tcp ? tcp_port : udp_port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct linger lin = { .l_onoff = 1, .l_linger = 0 };
		double t0, c0, r;
		int u;

		/* Enter first: a socket belongs to the cgroup it was created in. */
		if (shk_cgroup_enter(cg, getpid()) < 0)
			_exit(1);
		u = socket(AF_INET, SOCK_DGRAM, 0);
		double refused = 0;

		t0 = now_s();
		c0 = cpu_s();
		for (long i = 0; i < n; i++) {
			int rc;

			if (tcp) {
				int s = socket(AF_INET, SOCK_STREAM, 0);

				/* RST on close: no TIME_WAIT pile-up slowing the port search. */
				setsockopt(s, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
				rc = connect(s, (struct sockaddr *)&a, sizeof(a));
				close(s);
			} else {
				rc = connect(u, (struct sockaddr *)&a, sizeof(a));
			}
			if (rc < 0 && errno != EPERM)
				_exit(2);
			refused += rc < 0;
		}
		r = (now_s() - t0) * 1e9 / (double)n;
		c0 = (cpu_s() - c0) * 1e9 / (double)n;
		_exit(write(p[1], (double[]){ r, refused, c0 }, 3 * sizeof(double)) ==
		      3 * sizeof(double) ? 0 : 4);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], res, sizeof(res)) == sizeof(res)) {
		ns = res[0];
		last_refused = (long)res[1];
		last_cpu_ns = res[2];
	}
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Each round runs the two loops back to back, so a slow minute on this
 * shared machine hits both; the ratio printed is the median of the rounds'
 * own ratios (with their spread), next to the median times.
 */
static void compare(const char *name, int tcp, long n)
{
	double off[ROUNDS], on[ROUNDS], ratio[ROUNDS];
	long refused = 0;

	for (int r = 0; r < ROUNDS; r++) {
		off[r] = loop_in(cg_off, tcp, n);
		on[r] = loop_in(cg_on, tcp, n);
		refused += last_refused;
		ratio[r] = off[r] > 0 ? on[r] / off[r] : -1;
	}
	if (refused)
		printf("  (%ld calls refused because the ring was full: the row below is not a cost)\n",
		       refused);
	qsort(off, ROUNDS, sizeof(double), cmp_double);
	qsort(on, ROUNDS, sizeof(double), cmp_double);
	qsort(ratio, ROUNDS, sizeof(double), cmp_double);
	printf("%-34s %10.0f ns %10.0f ns   %.3fx  (median of %d paired rounds of %ld calls; "
	       "rounds %.3f-%.3fx)  [target <= 1.05x: %s]\n", name, off[ROUNDS / 2], on[ROUNDS / 2],
	       ratio[ROUNDS / 2], ROUNDS, n, ratio[0], ratio[ROUNDS - 1],
	       ratio[ROUNDS / 2] <= 1.05 ? "met" : "MISSED");
}

static int count_event(const struct shk_ebpf_event *ev, void *ud)
{
	(void)ev;
	(*(uint64_t *)ud)++;
	return 0;
}

/* Drains the ring while the loops run, as attach's consumer does. */
static volatile int drain_stop;

static void *drain(void *p)
{
	uint64_t got = 0;

	while (!drain_stop)
		if (shk_ebpf_poll(p, 10, count_event, &got) < 0)
			break;
	return NULL;
}

/* Programs on fd_on with every call reported, and a thread draining the ring. */
static int reported_start(int fd_on, const struct shk_ebpf_net_rule *rule, shk_ebpf **ret,
			  pthread_t *th)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_DENY, .report_allowed = true,
				   .ring_bytes = 1u << 20 };
	shk_ebpf *e = NULL;
	int r;

	if ((r = shk_ebpf_open(&o, &e)) < 0 || (r = shk_ebpf_set_net_rules(e, rule, 1)) < 0 ||
	    (r = shk_ebpf_attach(e, fd_on)) < 0) {
		shk_ebpf_free(e);
		return die("load/attach (every call reported)", r);
	}
	drain_stop = 0;
	if (pthread_create(th, NULL, drain, e) != 0) {
		shk_ebpf_free(e);
		return die("consumer thread", EAGAIN);
	}
	*ret = e;
	return 0;
}

static void reported_stop(shk_ebpf *e, pthread_t th)
{
	drain_stop = 1;
	pthread_join(th, NULL);
	shk_ebpf_free(e);
}

static int compare_reported(int fd_on, const struct shk_ebpf_net_rule *rule)
{
	shk_ebpf *e = NULL;
	pthread_t th;

	if (reported_start(fd_on, rule, &e, &th) != 0)
		return 1;
	compare("UDP connect(), every call reported", 0, 200000);
	compare("TCP s+c+c, every call reported", 1, 20000);
	reported_stop(e, th);
	return 0;
}

static int throughput(int cg_fd, uint32_t ring_bytes, long n)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = true,
				   .ring_bytes = ring_bytes };
	struct shk_ebpf_stats st;
	shk_ebpf *e = NULL;
	uint64_t got = 0;
	double t0, t1;
	int status = 0, r;
	pid_t pid;

	r = shk_ebpf_open(&o, &e);
	if (r < 0 || (r = shk_ebpf_attach(e, cg_fd)) < 0) {
		shk_ebpf_free(e);
		return die("load/attach for the throughput run", r);
	}
	t0 = now_s();
	pid = fork();
	if (pid == 0)
		_exit(loop_in(cg_on, 0, n) < 0 ? 255 : last_refused > 0);
	while (waitpid(pid, &status, WNOHANG) == 0)
		if (shk_ebpf_poll(e, 10, count_event, &got) < 0)
			break;
	t1 = now_s();
	while (shk_ebpf_poll(e, 0, count_event, &got) > 0)
		;
	shk_ebpf_stats(e, &st);
	printf("ring %7u B: %ld calls, %.0f ns/call, %lu events delivered (%.0f events/s), "
	       "%lu refused because the ring was full (%.2f%%)\n", ring_bytes, n,
	       (t1 - t0) * 1e9 / (double)n, (unsigned long)got, (double)got / (t1 - t0),
	       (unsigned long)st.refused_unreported,
	       100.0 * (double)st.refused_unreported / (double)n);
	shk_ebpf_free(e);
	return 0;
}

void shk_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shackle %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static long count_decisions(const char *log)
{
	char line[8192];
	long n = 0;
	FILE *f = fopen(log, "re");

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, "\"kind\":\"decision\"") != NULL;
	if (f)
		fclose(f);
	return n;
}

/* shackle attach with an audit log, fed by a UDP connect loop of n calls. */
static int pipeline(int cg_fd, long n, const char *fsync)
{
	char dir[] = "/tmp/shk-bench-XXXXXX", policy[64], log[64], key[64], prefix[64], cmd[96];
	shk_key_error kerr;
	shk_key *k = NULL;
	double t0, t1;
	pid_t att;
	FILE *f;
	long got, refused;

	if (!mkdtemp(dir))
		return die("mkdtemp", errno);
	snprintf(policy, sizeof(policy), "%s/p.json", dir);
	snprintf(log, sizeof(log), "%s/a.jsonl", dir);
	snprintf(prefix, sizeof(prefix), "%s/k", dir);
	snprintf(key, sizeof(key), "%s/k.key", dir);
	f = fopen(policy, "w");
	if (!f || shk_key_generate(&k) < 0 || shk_key_write_files(k, prefix, &kerr) < 0)
		return die("bench setup", EIO);
	shk_key_free(k);
	fprintf(f, "{\"version\": 1, \"net\": {\"default\": \"deny\", \"rules\": ["
		   "{\"cidr\": \"127.0.0.0/8\", \"action\": \"allow\"}]}}\n");
	fclose(f);
	att = fork();
	if (att == 0) {
		char *argv[] = { "attach", "--cgroup", cg_on, "--policy", policy, "--audit", log,
				 "--key", key, "--duration", "600", "--fsync", (char *)fsync, NULL };

		_exit(shk_cmd_attach(13, argv));
	}
	/* Attached when a connect in the cgroup shows up in the log. */
	for (int i = 0; i < 500 && count_decisions(log) == 0; i++) {
		loop_in(cg_on, 0, 1);
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	got = count_decisions(log);
	t0 = now_s();
	loop_in(cg_on, 0, n);
	refused = last_refused;
	/* Wait until the log stops growing: the pipeline has caught up. */
	for (long prev = -1, cur = count_decisions(log); cur != prev; cur = count_decisions(log)) {
		prev = cur;
		nanosleep(&(struct timespec){ .tv_nsec = 200 * 1000 * 1000 }, NULL);
	}
	t1 = now_s() - 0.2;
	kill(att, SIGTERM);
	waitpid(att, NULL, 0);
	got = count_decisions(log) - got;
	printf("attach pipeline, fsync %-10s: %ld calls in %.2f s, %ld judged and logged "
	       "(%.0f decisions/s), %ld refused because the ring was full (%.2f%%)\n", fsync, n,
	       t1 - t0, got,
	       (double)got / (t1 - t0), refused, 100.0 * (double)refused / (double)n);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
	(void)cg_fd;
	return 0;
}

/* The bench cgroups (on: programs attached; off: none) and the listeners. */
static int setup(int *ret_fd_on)
{
	static int tcp_l, udp_l;
	char self[900];
	pthread_t th;
	int r;

	if (geteuid() != 0) {
		fprintf(stderr, "bench_ebpf: skipped: needs root\n");
		return 77;
	}
	if (!shk_ebpf_built()) {
		fprintf(stderr, "bench_ebpf: skipped: %s\n", shk_ebpf_off_reason());
		return 77;
	}
	if ((r = shk_cgroup2_self(self, sizeof(self))) < 0)
		return die("own cgroup", r);
	snprintf(cg_on, sizeof(cg_on), "%s/shk-bench-on-%d", self, (int)getpid());
	snprintf(cg_off, sizeof(cg_off), "%s/shk-bench-off-%d", self, (int)getpid());
	if (mkdir(cg_on, 0755) < 0 || mkdir(cg_off, 0755) < 0)
		return die("mkdir cgroup", errno);
	*ret_fd_on = open(cg_on, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tcp_l = listen_on(SOCK_STREAM, &tcp_port);
	udp_l = listen_on(SOCK_DGRAM, &udp_port);
	if (*ret_fd_on < 0 || tcp_l < 0 || udp_l < 0)
		return die("setup", *ret_fd_on < 0 ? errno : tcp_l < 0 ? tcp_l : udp_l);
	pthread_create(&th, NULL, acceptor, &tcp_l);
	return 0;
}

static int full_run(int fd_on, const struct shk_ebpf_net_rule *rule)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_DENY, .report_allowed = false };
	shk_ebpf *e = NULL;
	int r;

	if ((r = shk_ebpf_open(&o, &e)) < 0 || (r = shk_ebpf_set_net_rules(e, rule, 1)) < 0 ||
	    (r = shk_ebpf_attach(e, fd_on)) < 0)
		return die("load/attach", r);
	printf("connect loop, 127.0.0.1        %13s %13s   ratio\n", "not attached", "attached");
	compare("UDP connect()", 0, 200000);
	compare("TCP socket+connect+close", 1, 20000);
	shk_ebpf_free(e);
	if (compare_reported(fd_on, rule) != 0)
		return 1;

	printf("\nring buffer throughput (UDP connect loop, every call reported):\n");
	throughput(fd_on, 1u << 20, 1000000);
	throughput(fd_on, 1u << 16, 1000000);
	printf("\n");
	pipeline(fd_on, 100000, "checkpoint");
	pipeline(fd_on, 100000, "none");
	return 0;
}

/*
 * bench_ebpf reported udp|tcp N: one round of compare_reported's loop for a
 * driver that interleaves its own rounds (bench/run_supervise_bench.sh):
 * not attached, then attached with every call reported and drained.
 */
static int reported_round(int fd_on, const struct shk_ebpf_net_rule *rule, int tcp, long n)
{
	shk_ebpf *e = NULL;
	double off, on, off_cpu;
	pthread_t th;

	if (reported_start(fd_on, rule, &e, &th) != 0)
		return 1;
	/* a fresh process: without a warm-up the first loop measured is the slower */
	loop_in(cg_off, tcp, n / 10 + 1);
	loop_in(cg_on, tcp, n / 10 + 1);
	off = loop_in(cg_off, tcp, n);
	off_cpu = last_cpu_ns;
	on = loop_in(cg_on, tcp, n);
	reported_stop(e, th);
	if (off <= 0 || on <= 0)
		return die("connect loop", EIO);
	printf("reported-%s n=%ld off_ns=%.0f on_ns=%.0f refused=%ld off_cpu_ns=%.0f on_cpu_ns=%.0f\n",
	       tcp ? "tcp" : "udp", n, off, on, last_refused, off_cpu, last_cpu_ns);
	return 0;
}

/* bench_ebpf floor udp|tcp N: reported_round's loops under bpf/floor.bpf.c */
static int floor_round(int fd_on, int tcp, long n)
{
#if SHK_HAVE_BPF
	struct floor_bpf *f = floor_bpf__open_and_load();
	struct bpf_link *links[16];
	struct bpf_program *prog;
	double off, on, off_cpu;
	int r = 0, nl = 0;

	if (!f)
		return die("floor: load", errno);
	bpf_object__for_each_program(prog, f->obj) {
		struct bpf_link *l = nl < 16 ? bpf_program__attach_cgroup(prog, fd_on) : NULL;

		if (!l) {
			r = die("floor: attach", nl < 16 ? errno : E2BIG);
			break;
		}
		links[nl++] = l;
	}
	if (r == 0) {
		loop_in(cg_off, tcp, n / 10 + 1);
		loop_in(cg_on, tcp, n / 10 + 1);
		off = loop_in(cg_off, tcp, n);
		off_cpu = last_cpu_ns;
		on = loop_in(cg_on, tcp, n);
		if (off <= 0 || on <= 0)
			r = die("connect loop", EIO);
		else
			printf("floor-%s n=%ld off_ns=%.0f on_ns=%.0f off_cpu_ns=%.0f on_cpu_ns=%.0f\n",
			       tcp ? "tcp" : "udp", n, off, on, off_cpu, last_cpu_ns);
	}
	while (nl > 0)
		bpf_link__destroy(links[--nl]);
	floor_bpf__destroy(f);
	return r;
#else
	(void)fd_on;
	(void)tcp;
	(void)n;
	return die("floor", EOPNOTSUPP);
#endif
}

int main(int argc, char **argv)
{
	struct shk_ebpf_net_rule rule = { .family = AF_INET, .prefix = 8, .port_lo = 0,
					  .port_hi = 65535, .ops = SHK_EBPF_OP_ALL,
					  .action = SHK_EBPF_ALLOW, .tool_id = SHK_EBPF_NO_TOOL };
	int floor = argc == 4 && !strcmp(argv[1], "floor");
	int pair = argc == 4 && (floor || !strcmp(argv[1], "reported")) &&
		   (!strcmp(argv[2], "udp") || !strcmp(argv[2], "tcp"));
	long n = pair ? strtol(argv[3], NULL, 10) : 0;
	int fd_on = -1, r;

	if (argc != 1 && (!pair || n <= 0)) {
		fprintf(stderr, "usage: bench_ebpf [reported|floor udp|tcp N]\n");
		return 2;
	}
	if ((r = setup(&fd_on)) != 0)
		return r;
	inet_pton(AF_INET, "127.0.0.0", rule.addr);
	if (floor)
		r = floor_round(fd_on, !strcmp(argv[2], "tcp"), n);
	else
		r = pair ? reported_round(fd_on, &rule, !strcmp(argv[2], "tcp"), n)
			 : full_run(fd_on, &rule);
	close(fd_on);
	if (shk_cgroup_remove(cg_on) < 0 || shk_cgroup_remove(cg_off) < 0)
		return die("removing the bench cgroups", errno);
	return r;
}
