/* SPDX-License-Identifier: MIT */
/*
 * bench_supervise_loops MODE N: the workloads of the supervisor benchmark,
 * run as the (supervised or not) program. Prints one line:
 *   "MODE n=N mean_ns=X median_ns=Y"
 *
 *   connect   TCP connect to a listener of this process on 127.0.0.1 + close
 *             (median over the connect() calls alone)
 *   forkexec  fork + execve(/bin/true) + waitpid (wall time per iteration);
 *             bench_supervise_loops forkexec N PATH execs PATH instead (a
 *             "#!" script, say)
 *   getppid   syscall(SYS_getppid): a syscall nobody intercepts
 *             (median over batches of 1000 calls, per call)
 *   socket    socket(AF_INET, SOCK_STREAM) + close: no call shackle-run
 *             judges, but the leaf's sock_create hook runs on it (median
 *             over batches of 100 pairs, per pair)
 *   getppid-filter1
 *             the same after installing a one-instruction seccomp filter
 *             that allows everything: what any filter at all costs a
 *             syscall it does not intercept (the kernel then takes its
 *             slow syscall entry and exit)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/linux.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void report(const char *mode, long n, int64_t total, int64_t *samples, long ns)
{
	qsort(samples, (size_t)ns, sizeof(*samples), cmp64);
	printf("%s n=%ld mean_ns=%lld median_ns=%lld\n", mode, n, (long long)(total / n),
	       (long long)samples[ns / 2]);
}

static void *acceptor(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int c = accept(lfd, NULL, NULL);

		if (c >= 0)
			close(c);
		else if (errno != EINTR && errno != ECONNABORTED)
			return NULL;
	}
}

static int bench_connect(long n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	_cleanup_free_ int64_t *s = calloc((size_t)n, sizeof(*s));
	int64_t total = 0;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	pthread_t th;

	if (!s || lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 4096) < 0 || getsockname(lfd, (struct sockaddr *)&sa, &len) < 0 ||
	    pthread_create(&th, NULL, acceptor, &lfd)) {
		perror("bench_supervise_loops: listener");
		return 1;
	}
	for (long i = -n / 10; i < n; i++) { /* first 10% warm up */
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int64_t t0 = now_ns();
		int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		int64_t dt = now_ns() - t0;

		if (r < 0) {
			perror("bench_supervise_loops: connect");
			return 1;
		}
		close(fd);
		if (i >= 0) {
			s[i] = dt;
			total += dt;
		}
	}
	report("connect", n, total, s, n);
	return 0;
}

static int bench_forkexec(long n, const char *path)
{
	_cleanup_free_ int64_t *s = calloc((size_t)n, sizeof(*s));
	int64_t total = 0;

	if (!s)
		return 1;
	for (long i = 0; i < n; i++) {
		int64_t t0 = now_ns();
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			char *const av[] = { (char *)path, NULL };

			execv(path, av);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "bench_supervise_loops: fork+exec of %s failed\n", path);
			return 1;
		}
		s[i] = now_ns() - t0;
		total += s[i];
	}
	report("forkexec", n, total, s, n);
	return 0;
}

/* MODE's call, PER times a batch: the median over the batches, per call */
static int batched(const char *mode, long n, int per, int (*call)(void))
{
	long batches = n / per > 0 ? n / per : 1;
	_cleanup_free_ int64_t *s = calloc((size_t)batches, sizeof(*s));
	int64_t total = 0;

	if (!s)
		return 1;
	for (long b = 0; b < batches; b++) {
		int64_t t0 = now_ns();

		for (int i = 0; i < per; i++)
			if (call() < 0)
				return 1;
		s[b] = (now_ns() - t0) / per;
		total += now_ns() - t0;
	}
	report(mode, batches * per, total, s, batches);
	return 0;
}

static int getppid_call(void)
{
	syscall(SYS_getppid);
	return 0;
}

static int socket_call(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		perror("bench_supervise_loops: socket");
		return -1;
	}
	close(fd);
	return 0;
}

static int allow_all_filter(void)
{
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog p = { .len = 1, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p) < 0) {
		perror("bench_supervise_loops: seccomp");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc == 3 || (argc == 4 && !strcmp(argv[1], "forkexec")) ? strtol(argv[2], NULL, 10) : 0;

	if (n <= 0) {
		fprintf(stderr, "usage: bench_supervise_loops connect|forkexec|socket|getppid|getppid-filter1 N, forkexec N PATH\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "connect"))
		return bench_connect(n);
	if (!strcmp(argv[1], "forkexec"))
		return bench_forkexec(n, argc == 4 ? argv[3] : "/bin/true");
	if (!strcmp(argv[1], "getppid"))
		return batched("getppid", n, 1000, getppid_call);
	if (!strcmp(argv[1], "socket"))
		return batched("socket", n, 100, socket_call);
	if (!strcmp(argv[1], "getppid-filter1"))
		return allow_all_filter() ? 1 : batched("getppid", n, 1000, getppid_call);
	fprintf(stderr, "bench_supervise_loops: unknown mode '%s'\n", argv[1]);
	return 2;
}
