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
static char H[1024], P[1024], RUN[1024], SHK[1024];

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

/* Is any process running with this exact cmdline argument? */
static bool process_with_arg(const char *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;

	while (d && (e = readdir(d)) && !found) {
		char p[300], buf[256];
		ssize_t n;
		int fd;

		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		if ((fd = open(p, O_RDONLY)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
			if (strcmp(buf + i, arg) == 0)
				found = true;
		(void)n;
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
	check(run("printf '#!/bin/sh\\necho script-ran\\n' > /tmp/shk-live-s.sh; chmod +x /tmp/shk-live-s.sh;"
	          "%s --deny-exec dash -- /tmp/shk-live-s.sh", H) == 126 &&
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
	check(run("%s -- %s int80", H, P) == 128 + SIGSYS && !strstr(out, "ok int80"),
	      "the i386 ABI kills the process");
}

/* unix sockets: names resolved as the agent's, identity lent to nobody */
static void test_unix(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t l = sizeof(cred);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0), c;

	mkdir("/tmp/shk-live-priv", 0700);
	unlink("/tmp/shk-live-u.sock");
	unlink("/tmp/shk-live-link.sock");
	unlink("/tmp/shk-live-priv/s.sock");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/shk-live-u.sock");
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0)
		shk_test_skip("cannot create a unix listener: %s", strerror(errno));
	chmod(sa.sun_path, 0777);
	check(symlink("/tmp/shk-live-u.sock", "/tmp/shk-live-link.sock") == 0 &&
	      run("%s --deny-unix shk-live-u.sock -- %s unix /tmp/shk-live-link.sock", H, P) == 3 &&
	      strstr(out, "errno=1 "), "a symlink to a denied unix socket is judged as its target");
	check(run("cd /tmp && %s --user 65534 -- %s unix shk-live-u.sock", H, P) == 0 &&
	      strstr(out, "unix=/tmp/shk-live-u.sock"), "relative unix path resolved in the agent's cwd");
	c = accept(fd, NULL, NULL);
	check(c >= 0 && getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &l) == 0 && cred.uid == 65534,
	      "as root the emulated connect carries the agent's uid (SO_PEERCRED), not root's");
	if (c >= 0)
		close(c);
	close(fd);
	/* a socket in a directory nobody may search stays out of reach */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/shk-live-priv/s.sock");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0) {
		chmod(sa.sun_path, 0777);
		check(run("%s --user 65534 -- %s unix /tmp/shk-live-priv/s.sock", H, P) == 3 &&
		      strstr(out, "errno=13 "), "the agent's directory permissions apply (EACCES)");
	}
	close(fd);
	check(run("%s --user 65534 -- %s listen 80", H, P) == 3 && strstr(out, "errno=13 "),
	      "as root the emulated bind does not lend CAP_NET_BIND_SERVICE");
	unlink("/tmp/shk-live-b.sock");
	check(run("cd /tmp && %s --user 65534 -- %s bind-unix shk-live-b.sock", H, P) == 0 &&
	      strstr(out, "ok bound /tmp/shk-live-b.sock"), "unix bind: canonical name, agent's cwd");
	struct stat st;
	check(stat("/tmp/shk-live-b.sock", &st) == 0 && st.st_uid == 65534,
	      "the socket file belongs to the agent, not to root");
	unlink("/tmp/shk-live-b.sock");
	unlink("/tmp/shk-live-u.sock");
	unlink("/tmp/shk-live-link.sock");
	unlink("/tmp/shk-live-priv/s.sock");
	rmdir("/tmp/shk-live-priv");
}

static void test_tree(void)
{
	pid_t pid;

	check(run("%s -- %s spawn-orphan 31337", H, P) == 0 && !process_with_arg("31337"),
	      "a double-forked descendant is killed when the main child exits");
	pid = fork();
	if (pid == 0) {
		execl(H, H, "--", "/bin/sleep", "31338", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && !process_with_arg("31338"); i++)
		usleep(20000);
	bool started = process_with_arg("31338");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 100 && process_with_arg("31338"); i++)
		usleep(20000);
	check(started && !process_with_arg("31338"), "supervisor killed -> the agent dies too");
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
	signal(SIGPIPE, SIG_IGN);
	test_exec();
	test_net();
	test_unix();
	test_tree();
	test_pipeline();
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
