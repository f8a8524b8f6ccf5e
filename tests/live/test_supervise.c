/* SPDX-License-Identifier: MIT */
/*
 * Live tests of the supervisor (root): real programs under sup_harness (the
 * Linux layer with a rule-driven judge) and under shackle-run (the whole
 * pipeline). Each check prints "ok" or "FAIL" with the output it saw.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static int failures;
static char out[1 << 16];
static char H[1024], P[1024], RUN[1024], SHK[1024], FA[1024];
/* this run's scratch directory: concurrent runs elsewhere use their own */
static char T[] = "/tmp/shk-live-XXXXXX";

/* Run a shell command, capture stdout+stderr, return its exit code. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	FILE *f;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n < sizeof(out) - 1 && fgets(out + n, (int)(sizeof(out) - n), f))
		n += strlen(out + n);
	out[n] = 0;
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void check(bool ok, const char *name)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", name);
	if (!ok) {
		printf("---- output ----\n%s----------------\n", out);
		failures++;
	}
}

static int listener(int type, int *ret_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, type | SOCK_NONBLOCK, 0), one = 1;

	/* inherited by accepted sockets: one of ours left in TIME_WAIT must not
	 * keep race-connect's probe from listening on the port again (it got
	 * EADDRINUSE once in many runs) */
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 64) < 0) || getsockname(fd, (struct sockaddr *)&sa, &l) < 0)
		shk_test_skip("cannot create a loopback listener: %s", strerror(errno));
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

/*
 * Is a process running whose whole command line is exactly argv (n words)?
 * Every process on the host is read, so no length may be assumed: the
 * command line is read whole up to a bound, terminated, and compared word
 * by word (a longer one cannot be argv anyway).
 */
static bool process_running(const char *const *argv, size_t n)
{
	static char buf[1 << 16];
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;

	while (d && (e = readdir(d)) && !found) {
		char p[300];
		size_t len = 0, at = 0, i = 0;
		ssize_t k;
		int fd;

		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		while (len < sizeof(buf) - 1 && (k = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
			len += (size_t)k;
		close(fd);
		buf[len] = 0;
		for (; i < n && at < len; i++, at += strlen(buf + at) + 1)
			if (strcmp(buf + at, argv[i]) != 0)
				break;
		found = i == n && at == len;
	}
	if (d)
		closedir(d);
	return found;
}

static void test_exec(void)
{
	check(run("%s -- /bin/true", H) == 0 && strstr(out, "obs exec /usr/bin/true"), "allowed exec");
	check(run("%s --deny-exec /usr/bin/id -- %s exec /usr/bin/id", H, P) == 3 &&
	      strstr(out, "errno=1 "), "denied exec: EPERM seen by the caller");
	check(run("%s -- %s exit 42", H, P) == 42, "exit status passes through");
	check(run("%s -- %s signal 9", H, P) == 137, "death by signal is 128+N");
	check(run("%s --deny-exec /usr/bin/nope -- /nonexistent/x", H) == 127, "missing command is 127");
	check(run("printf '#!/bin/sh\\necho script-ran\\n' > %s/s.sh; chmod +x %s/s.sh;"
	          "%s --deny-exec dash -- %s/s.sh", T, T, H, T) == 126 &&
	      strstr(out, "interp=/usr/bin/dash") && !strstr(out, "script-ran"),
	      "#! interpreter is judged");
	check(run("%s --deny-exec /usr/bin/id -- /lib64/ld-linux-x86-64.so.2 /usr/bin/id", H) == 126 &&
	      strstr(out, "loader=/usr/bin/id"), "ld.so ARGV is judged as the program it runs");
	check(run("%s --deny-exec /usr/bin/false -- %s race-exec 200", H, P) == 0 &&
	      strstr(out, "ran_false=0 "), "exec TOCTOU: a flipped path never runs the denied program");
	check(run("%s -- %s threads 16 /bin/true", H, P) == 0 && strstr(out, "ok threads failed=0"),
	      "multi-threaded fork+exec");
}

static void test_net(void)
{
	int port, bad, uport;
	int lfd = listener(SOCK_STREAM, &port), bfd = listener(SOCK_STREAM, &bad);
	int ufd = listener(SOCK_DGRAM, &uport);
	char buf[16];

	check(run("%s -- %s connect 127.0.0.1 %d", H, P, port) == 0 && strstr(out, "ok connect"),
	      "allowed connect to a local listener");
	int c = accept(lfd, NULL, NULL);
	check(c >= 0, "the listener saw the emulated connection");
	if (c >= 0)
		close(c);
	check(run("%s --deny-port %d -- %s connect 127.0.0.1 %d", H, port, P, port) == 3 &&
	      strstr(out, "errno=1 "), "denied connect: EPERM");
	check(run("%s -- %s connect-nb 127.0.0.1 %d", H, P, port) == 0, "non-blocking connect");
	check(run("%s --deny-port %d -- %s udp 127.0.0.1 %d", H, uport, P, uport) == 3,
	      "denied sendto with an address");
	check(run("%s -- %s udp-msg 127.0.0.1 %d", H, P, uport) == 0 && strstr(out, "ok sent 4") &&
	      recv(ufd, buf, sizeof(buf), 0) == 4, "allowed sendmsg delivers the datagram");
	close(bfd); /* race-connect serves both ports itself */
	close(lfd);
	check(run("%s --deny-port %d -- %s race-connect 127.0.0.1 %d %d 150", H, bad, P, port, bad) == 0 &&
	      strstr(out, "reached_bad=0"), "connect TOCTOU: a flipped sockaddr never reaches the denied port");
	check(run("%s -- %s raw", H, P) == 3 && strstr(out, "errno=1 "), "raw sockets refused");
	check(run("%s -- %s io_uring", H, P) == 3 && strstr(out, "errno=1 "), "io_uring refused");
	check(run("%s -- %s listener", H, P) == 3 && strstr(out, "errno=1 "),
	      "a seccomp listener of the agent's own is refused");
	close(ufd);
}

/*
 * Other ABIs. Where the kernel cannot run i386 code (IA32 emulation off at
 * run time) int $0x80 raises SIGSEGV before seccomp sees it: there the
 * filter's answer is proven by filter_abi alone; it runs everywhere. x32
 * numbers reach seccomp on every x86-64 kernel, so that check is live.
 */
static void test_abi(void)
{
	bool i386_on;

	check(run("%s", FA) == 0 && strstr(out, "i386-emulation "),
	      "the filter as built kills i386, x32 and foreign-arch calls (evaluated, checked against the kernel)");
	i386_on = strstr(out, "i386-emulation on") != NULL;
	check(run("%s -- %s x32", H, P) == 128 + SIGSYS && !strstr(out, "ok x32"),
	      "the x32 ABI kills the process");
	if (!i386_on) {
		printf("#    i386 emulation is off here: no live int $0x80 check\n");
		return;
	}
	check(run("%s -- %s int80", H, P) == 128 + SIGSYS && !strstr(out, "ok int80"),
	      "the i386 ABI kills the process");
}

static void tpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", T, name);
}

/* unix sockets: names resolved as the agent's, identity lent to nobody */
static void test_unix(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t l = sizeof(cred);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0), c;
	char priv[100], sock[100], link[100], bsock[100], want[140];
	struct stat st;

	tpath(priv, sizeof(priv), "priv");
	tpath(link, sizeof(link), "link.sock");
	tpath(bsock, sizeof(bsock), "b.sock");
	tpath(sock, sizeof(sock), "u.sock");
	mkdir(priv, 0700);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		shk_test_skip("cannot create a unix listener: %s", strerror(errno));
	chmod(sa.sun_path, 0777);
	check(symlink(sock, link) == 0 &&
	      run("%s --deny-unix %s -- %s unix %s", H, sock, P, link) == 3 &&
	      strstr(out, "errno=1 "), "a symlink to a denied unix socket is judged as its target");
	snprintf(want, sizeof(want), "unix=%s\n", sock);
	check(run("cd %s && %s --user 65534 -- %s unix u.sock", T, H, P) == 0 && strstr(out, want),
	      "relative unix path resolved in the agent's cwd");
	c = accept(fd, NULL, NULL);
	check(c >= 0 && getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &l) == 0 && cred.uid == 65534,
	      "as root the emulated connect carries the agent's uid (SO_PEERCRED), not root's");
	if (c >= 0)
		close(c);
	close(fd);
	/* a socket in a directory nobody may search stays out of reach */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	tpath(sa.sun_path, sizeof(sa.sun_path), "priv/s.sock");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0) {
		chmod(sa.sun_path, 0777);
		check(run("%s --user 65534 -- %s unix %s", H, P, sa.sun_path) == 3 &&
		      strstr(out, "errno=13 "), "the agent's directory permissions apply (EACCES)");
	}
	close(fd);
	check(run("%s --user 65534 -- %s listen 80", H, P) == 3 && strstr(out, "errno=13 "),
	      "as root the emulated bind does not lend CAP_NET_BIND_SERVICE");
	snprintf(want, sizeof(want), "ok bound %s\n", bsock);
	check(run("cd %s && %s --user 65534 -- %s bind-unix b.sock", T, H, P) == 0 && strstr(out, want),
	      "unix bind: canonical name, agent's cwd");
	check(stat(bsock, &st) == 0 && st.st_uid == 65534,
	      "the socket file belongs to the agent, not to root");
}

/* The sleepers' durations are this run's own (from the test's pid): a
 * concurrent run of this test elsewhere on the host uses other ones. */
static void test_tree(void)
{
	char orphan[32], held[32];
	const char *o[] = { "sleep", orphan }, *h[] = { "/bin/sleep", held };
	pid_t pid;

	snprintf(orphan, sizeof(orphan), "%d", 1000000 + 2 * (int)getpid());
	snprintf(held, sizeof(held), "%d", 1000001 + 2 * (int)getpid());
	check(run("%s -- %s spawn-orphan %s", H, P, orphan) == 0 && !process_running(o, 2),
	      "a double-forked descendant is killed when the main child exits");
	pid = fork();
	if (pid == 0) {
		execl(H, H, "--", h[0], held, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && !process_running(h, 2); i++)
		usleep(20000);
	bool started = process_running(h, 2);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 100 && process_running(h, 2); i++)
		usleep(20000);
	check(started && !process_running(h, 2), "supervisor killed -> the agent dies too");
}

static void test_pipeline(void)
{
	char dir[] = "/tmp/shk-live-XXXXXX";
	char pol[300];
	FILE *f;

	if (!mkdtemp(dir))
		shk_test_skip("mkdtemp: %s", strerror(errno));
	snprintf(pol, sizeof(pol), "%s/p.json", dir);
	f = fopen(pol, "w");
	fputs("{\"version\":1,\"guard\":{\"max_repeat_calls\":3},"
	      "\"exec\":{\"default\":\"allow\",\"rules\":[{\"path\":\"/usr/bin/id\",\"action\":\"deny\"}]},"
	      "\"net\":{\"default\":\"deny\"}}", f);
	fclose(f);
	check(run("%s --quiet --policy %s --audit %s/a.jsonl -- %s exec /usr/bin/id", RUN, pol, dir, P) == 3 &&
	      strstr(out, "errno=1 "), "shackle-run: policy deny is EPERM");
	check(run("%s audit verify --pubkey %s/a.jsonl.pub %s/a.jsonl", SHK, dir, dir) == 0,
	      "shackle-run: the audit log verifies");
	check(run("%s audit replay %s/a.jsonl", SHK, dir) == 0, "shackle-run: the audit log replays");
	check(run("%s --quiet --policy %s --audit %s/b.jsonl -- /bin/sh -c "
	          "'for i in 1 2 3 4 5; do /bin/true; done; exit 5'", RUN, pol, dir) == 5,
	      "shackle-run: exit status");
	check(run("%s audit show %s/b.jsonl", SHK, dir) == 0 && strstr(out, "max_repeat_exceeded") &&
	      strstr(out, "circuit_open"), "repeat guard denies past the limit, then the breaker is open");
	run("rm -rf %s", dir);
}

int main(void)
{
	const char *b = getenv("SHACKLE_BUILD_ROOT");

	shk_test_require_root();
	if (!b)
		shk_test_skip("SHACKLE_BUILD_ROOT not set");
	snprintf(H, sizeof(H), "%s/tests/live/sup_harness", b);
	snprintf(P, sizeof(P), "%s/tests/live/sup_probe", b);
	snprintf(RUN, sizeof(RUN), "%s/src/cli/shackle-run", b);
	snprintf(SHK, sizeof(SHK), "%s/src/cli/shackle", b);
	snprintf(FA, sizeof(FA), "%s/tests/live/filter_abi", b);
	signal(SIGPIPE, SIG_IGN);
	/* the agent runs as nobody in parts: it must reach and write here */
	if (!mkdtemp(T) || chmod(T, 01777) < 0)
		shk_test_skip("mkdtemp: %s", strerror(errno));
	test_exec();
	test_net();
	test_abi();
	test_unix();
	test_tree();
	test_pipeline();
	run("rm -rf %s", T);
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
