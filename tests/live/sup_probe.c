/* SPDX-License-Identifier: MIT */
/*
 * A program the live tests run under the supervisor. Each subcommand does one
 * thing and prints one line: "ok ..." or "errno=N (name)"; the exit code is
 * 0 on success and 3 on a failed call, so tests can check both.
 *
 *   exec PATH ARG...          execv; prints only on failure
 *   connect ADDR PORT         TCP connect (blocking)
 *   connect-nb ADDR PORT      non-blocking TCP connect (EINPROGRESS is ok)
 *   udp ADDR PORT             sendto a datagram
 *   udp-msg ADDR PORT         sendmsg a datagram
 *   unix PATH                 connect to a unix stream socket
 *   listen PORT               bind 127.0.0.1:PORT and listen
 *   bind-unix PATH            bind a unix stream socket at PATH (relative ok)
 *   race-connect ADDR PORT BADPORT N
 *                             connect N times while a thread flips the port
 *                             in the sockaddr to BADPORT; prints how many
 *                             connects reached BADPORT ("reached_bad=K")
 *   threads N PATH            N threads, each fork+exec PATH; waits all
 *   race-exec N               N children each exec a path that a thread flips
 *                             between /bin/true and /bin/false; prints how
 *                             many ran true, ran false, were denied, killed
 *   exit N                    exit with N
 *   signal SIG                kill itself with SIG
 *   spawn-orphan SECONDS      double-fork a sleeper that outlives us
 *   raw                       socket(AF_INET, SOCK_RAW)
 *   io_uring                  io_uring_setup
 *   listener                  seccomp() with NEW_LISTENER
 *   int80                     getpid through the i386 ABI (int 0x80)
 *   x32                       getpid through the x32 ABI (nr | 0x40000000)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The probe always runs traced by the supervisor, and LeakSanitizer cannot
 * work under ptrace: in sanitizer builds it turns itself off (ASan and
 * UBSan stay on). */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return 1;
}

static int fail(const char *what)
{
	int e = errno;
	printf("errno=%d (%s) %s\n", e, strerror(e), what);
	fflush(stdout);
	return 3;
}

static struct sockaddr_in in4(const char *a, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, a, &sa.sin_addr);
	return sa;
}

static int do_connect(const char *a, int port, bool nb)
{
	struct sockaddr_in sa = in4(a, port);
	int fd = socket(AF_INET, SOCK_STREAM | (nb ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		return fail("socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && !(nb && errno == EINPROGRESS))
		return fail("connect");
	printf("ok connect\n");
	return 0;
}

static int do_udp(const char *a, int port, bool msg)
{
	struct sockaddr_in sa = in4(a, port);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	char data[] = "ping";
	ssize_t n;

	if (fd < 0)
		return fail("socket");
	if (msg) {
		struct iovec iov = { data, 4 };
		struct msghdr mh = { .msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1 };
		n = sendmsg(fd, &mh, 0);
	} else {
		n = sendto(fd, data, 4, 0, (struct sockaddr *)&sa, sizeof(sa));
	}
	if (n < 0)
		return fail("send");
	printf("ok sent %zd\n", n);
	return 0;
}

static int do_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return fail("connect");
	printf("ok connect\n");
	return 0;
}

static int do_listen(int port)
{
	struct sockaddr_in sa = in4("127.0.0.1", port);
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return fail("bind");
	if (listen(fd, 1) < 0)
		return fail("listen");
	printf("ok listen\n");
	return 0;
}

static int do_bind_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	socklen_t l = sizeof(sa);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return fail("bind");
	if (getsockname(fd, (struct sockaddr *)&sa, &l) < 0)
		return fail("getsockname");
	printf("ok bound %s\n", sa.sun_path);
	return 0;
}

static struct sockaddr_in race_sa;
static volatile int race_stop;
static int race_good, race_bad;

static void *flipper(void *p)
{
	(void)p;
	while (!race_stop) {
		race_sa.sin_port = htons((uint16_t)race_bad);
		race_sa.sin_port = htons((uint16_t)race_good);
		sched_yield();
	}
	return NULL;
}

static int nb_listener(const char *a, int port)
{
	struct sockaddr_in sa = in4(a, port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
		return -1;
	return fd;
}

static int do_race(const char *a, int good, int bad, int n)
{
	/* both ports are listeners of ours, drained every round: reaching the
	 * bad one counts */
	int good_fd = nb_listener(a, good), bad_fd = nb_listener(a, bad), reached = 0;
	pthread_t t;

	if (good_fd < 0 || bad_fd < 0)
		return fail("listeners");
	race_sa = in4(a, good);
	race_good = good;
	race_bad = bad;
	pthread_create(&t, NULL, flipper, NULL);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), c;
		struct sockaddr_in peer;
		socklen_t l = sizeof(peer);

		if (connect(fd, (struct sockaddr *)&race_sa, sizeof(race_sa)) == 0 &&
		    getpeername(fd, (struct sockaddr *)&peer, &l) == 0 && ntohs(peer.sin_port) == bad)
			reached++;
		close(fd);
		while ((c = accept4(bad_fd, NULL, NULL, 0)) >= 0)
			close(c);
		while ((c = accept4(good_fd, NULL, NULL, 0)) >= 0)
			close(c);
		sched_yield();
	}
	race_stop = 1;
	pthread_join(t, NULL);
	printf("reached_bad=%d\n", reached);
	return 0;
}

static char exec_buf[32];
static volatile int exec_stop;

static void *exec_flipper(void *p)
{
	(void)p;
	while (!exec_stop) {
		memcpy(exec_buf, "/bin/true\0", 10);
		memcpy(exec_buf, "/bin/false", 11);
	}
	return NULL;
}

static int do_race_exec(int n)
{
	int counts[4] = { 0 }; /* true, false, denied, killed */

	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			pthread_t t;
			char *av[] = { exec_buf, NULL };
			memcpy(exec_buf, "/bin/true", 10);
			pthread_create(&t, NULL, exec_flipper, NULL);
			execv(exec_buf, av);
			_exit(3);
		}
		int st;
		waitpid(pid, &st, 0);
		if (WIFSIGNALED(st))
			counts[3]++;
		else if (WEXITSTATUS(st) == 0)
			counts[0]++;
		else if (WEXITSTATUS(st) == 1)
			counts[1]++;
		else
			counts[2]++;
	}
	printf("ran_true=%d ran_false=%d denied=%d killed=%d\n", counts[0], counts[1], counts[2],
	       counts[3]);
	return 0;
}

static const char *thread_path;

static void *exec_thread(void *p)
{
	(void)p;
	pid_t pid = fork();
	if (pid == 0) {
		execl(thread_path, thread_path, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return (void *)(long)(WIFEXITED(st) ? WEXITSTATUS(st) : 128);
}

static int do_threads(int n, const char *path)
{
	pthread_t t[64];
	int bad = 0;

	thread_path = path;
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, exec_thread, NULL);
	for (int i = 0; i < n; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += r != NULL;
	}
	printf("ok threads failed=%d\n", bad);
	return bad ? 3 : 0;
}

static int do_orphan(int secs)
{
	pid_t p = fork();
	if (p == 0) {
		setsid();
		if (fork() == 0) {
			char s[16];
			snprintf(s, sizeof(s), "%d", secs);
			execl("/bin/sleep", "sleep", s, (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	waitpid(p, NULL, 0);
	printf("ok orphan\n");
	return 0;
}

static int do_listener(void)
{
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, f };
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);

	if (r < 0)
		return fail("seccomp listener");
	printf("ok listener\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(c, "exec") && argc > 2) {
		execv(argv[2], argv + 2);
		return fail("exec");
	}
	if (!strcmp(c, "connect") && argc > 3)
		return do_connect(argv[2], atoi(argv[3]), false);
	if (!strcmp(c, "connect-nb") && argc > 3)
		return do_connect(argv[2], atoi(argv[3]), true);
	if (!strcmp(c, "udp") && argc > 3)
		return do_udp(argv[2], atoi(argv[3]), false);
	if (!strcmp(c, "udp-msg") && argc > 3)
		return do_udp(argv[2], atoi(argv[3]), true);
	if (!strcmp(c, "unix") && argc > 2)
		return do_unix(argv[2]);
	if (!strcmp(c, "bind-unix") && argc > 2)
		return do_bind_unix(argv[2]);
	if (!strcmp(c, "listen") && argc > 2)
		return do_listen(atoi(argv[2]));
	if (!strcmp(c, "race-connect") && argc > 5)
		return do_race(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(c, "threads") && argc > 3)
		return do_threads(atoi(argv[2]), argv[3]);
	if (!strcmp(c, "race-exec") && argc > 2)
		return do_race_exec(atoi(argv[2]));
	if (!strcmp(c, "exit") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(c, "signal") && argc > 2) {
		signal(atoi(argv[2]), SIG_DFL);
		raise(atoi(argv[2]));
		return 0;
	}
	if (!strcmp(c, "spawn-orphan") && argc > 2)
		return do_orphan(atoi(argv[2]));
	if (!strcmp(c, "raw")) {
		if (socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) < 0)
			return fail("raw");
		printf("ok raw\n");
		return 0;
	}
	if (!strcmp(c, "io_uring")) {
		char params[120] = { 0 };
		if (syscall(425, 4, params) < 0)
			return fail("io_uring_setup");
		printf("ok io_uring\n");
		return 0;
	}
	if (!strcmp(c, "int80")) {
		long r;
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
		printf("ok int80 %ld\n", r);
		return 0;
	}
	if (!strcmp(c, "x32")) {
		long r = syscall(0x40000000L | SYS_getpid);
		if (r < 0)
			return fail("x32 getpid");
		printf("ok x32 %ld\n", r);
		return 0;
	}
	if (!strcmp(c, "listener"))
		return do_listener();
	fprintf(stderr, "sup_probe: unknown command\n");
	return 2;
}
