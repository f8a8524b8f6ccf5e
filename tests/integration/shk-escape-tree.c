/* SPDX-License-Identifier: MIT */
/*
 * Attacks on the process tree: kill the supervisor and carry on, or leave
 * the process group (setsid + double fork) and carry on after the agent's
 * main process has exited.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hlp.h"
#include "shk-escape-tree.h"

__attribute__((format(printf, 2, 3)))
static void logf_append(const char *path, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0 || n < 0)
		return;
	if (write(fd, buf, (size_t)n) < 0)
		(void)0; /* nothing sensible to do: the log is the channel */
	close(fd);
}

static int try_connect(const char *host, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = hlp_sockaddr(host, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int e;

	if (fd < 0)
		return errno;
	e = connect(fd, (struct sockaddr *)&ss, len) < 0 ? errno : 0;
	close(fd);
	return e;
}

/* fork + execve(/usr/bin/touch MARK); the child's exit code carries errno. */
static const char *try_exec(const char *mark)
{
	static char buf[64];
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return "fork-failed";
	if (pid == 0) {
		char *const av[] = { "touch", (char *)mark, NULL };
		char *const env[] = { NULL };

		execve("/usr/bin/touch", av, env);
		_exit(100 + (errno & 0x7f));
	}
	if (waitpid(pid, &st, 0) < 0)
		return "wait-failed";
	if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "killed:%s", sigabbrev_np(WTERMSIG(st)) ?: "?");
	else if (WEXITSTATUS(st) >= 100)
		snprintf(buf, sizeof(buf), "%s", hlp_errname(WEXITSTATUS(st) - 100));
	else
		snprintf(buf, sizeof(buf), "ran:%d", WEXITSTATUS(st));
	return buf;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * kill(), tgkill() and pidfd_send_signal(): a filter that only guards one of
 * them is bypassed by the others. Logs each, then "kill=OK" if any worked.
 */
static void kill_all_ways(pid_t pid, const char *log)
{
	int pfd, any = 0, e;

	e = syscall(SYS_tgkill, pid, pid, SIGKILL) < 0 ? errno : 0;
	logf_append(log, "tgkill=%s\n", hlp_errname(e));
	any |= !e;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		e = syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0 ? errno : 0;
		close(pfd);
	} else {
		e = errno;
	}
	logf_append(log, "pidfd_send_signal=%s\n", hlp_errname(e));
	any |= !e;
	e = kill(pid, SIGKILL) < 0 ? errno : 0;
	logf_append(log, "kill()=%s\n", hlp_errname(e));
	any |= !e;
	logf_append(log, "kill=%s\n", any ? "OK" : hlp_errname(e));
}

/* argv: PIDFILE FHOST FPORT MARK LOG */
int do_kill_supervisor(char **argv)
{
	const char *log = argv[4];
	FILE *f = fopen(argv[0], "r");
	long pid = 0;
	long t0;

	for (int i = 0; i < 100 && (!f || fscanf(f, "%ld", &pid) != 1 || pid <= 1); i++) {
		if (f)
			fclose(f);
		usleep(50000);
		f = fopen(argv[0], "r");
	}
	if (f)
		fclose(f);
	if (pid <= 1)
		hlp_die("no supervisor pid in %s", argv[0]);
	kill_all_ways((pid_t)pid, log);
	t0 = now_ms();
	while (now_ms() - t0 < 3000) {
		logf_append(log, "connect=%s\n", hlp_errname(try_connect(argv[1], argv[2])));
		logf_append(log, "exec=%s\n", try_exec(argv[3]));
		usleep(100000);
	}
	logf_append(log, "SURVIVED\n");
	return 0;
}

static void persist_loop(const char *role, char **argv, long ms)
{
	long t0 = now_ms();

	logf_append(argv[3], "%s pid=%ld\n", role, (long)getpid());
	while (now_ms() - t0 < ms) {
		int e = try_connect(argv[0], argv[1]);

		logf_append(argv[3], "%s connect=%s\n", role, hlp_errname(e));
		logf_append(argv[3], "%s exec=%s\n", role, try_exec(argv[2]));
		usleep(100000);
	}
	logf_append(argv[3], "%s SURVIVED\n", role);
}

/*
 * argv: FHOST FPORT MARK LOG SECONDS. The agent and a setsid double-forked
 * grandchild keep trying a forbidden connect and exec for SECONDS, logging
 * every answer: the test kills the supervisor meanwhile, and no line may
 * follow (beyond calls already in flight).
 */
int do_persist(char **argv)
{
	long ms = strtol(argv[4], NULL, 10) * 1000;
	pid_t pid = fork();

	if (pid < 0)
		hlp_die("fork: %s", hlp_errname(errno));
	if (pid == 0) {
		if (setsid() < 0)
			_exit(1);
		if (fork() != 0)
			_exit(0);
		persist_loop("grandchild", argv, ms);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	persist_loop("agent", argv, ms);
	return 0;
}

/* argv: PIDFILE RESULT FHOST FPORT */
int do_doublefork(char **argv)
{
	pid_t pid = fork();
	struct stat st;

	if (pid < 0)
		hlp_die("fork: %s", hlp_errname(errno));
	if (pid == 0) {
		if (setsid() < 0)
			_exit(1);
		if (fork() != 0)
			_exit(0);
		/* grandchild: new session, reparented away from the agent */
		logf_append(argv[0], "%ld\n", (long)getpid());
		usleep(300000);
		logf_append(argv[1], "connect=%s\n", hlp_errname(try_connect(argv[2], argv[3])));
		sleep(30);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 100; i++) {
		if (stat(argv[1], &st) == 0 && st.st_size > 1)
			break;
		usleep(50000);
	}
	printf("agent-exits\n");
	return 0;
}
