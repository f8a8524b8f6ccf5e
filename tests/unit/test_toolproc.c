/* SPDX-License-Identifier: MIT */
/*
 * Which tool call a process belongs to (src/supervise/toolproc.c): a
 * recorded process and its descendants are the tool call's, a recorded
 * process that exited is nobody's, and a pid reused right after it exited
 * (here at once, in a pid namespace of the test's own, through
 * ns_last_pid: well within one clock tick of /proc's start time) is not
 * taken for it, nor are the reused pid's children. The reuse needs root
 * (a pid namespace and its /proc); without it only the plain cases run.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "supervise/internal.h"
#include "checkrun.h"

#define TOOL 7
#define REUSES 20

/* A process that waits to be killed; with a child, that child's pid (which
 * waits too) in *ret_child. */
static pid_t sleeper(pid_t *ret_child)
{
	int p[2];
	pid_t pid, c = 0;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (ret_child && (c = fork()) == 0)
			for (;;)
				pause();
		if (write(p[1], &c, sizeof(c)) != sizeof(c))
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &c, sizeof(c)) != sizeof(c))
		pid = -1;
	close(p[0]);
	if (ret_child)
		*ret_child = c;
	return pid;
}

/* Kill pid and wait until it and every orphan we adopted are gone. */
static void end(pid_t pid, pid_t child)
{
	kill(pid, SIGKILL);
	if (child > 0)
		kill(child, SIGKILL);
	waitpid(pid, NULL, 0);
	if (child > 0)
		while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
			;
}

/* The next fork gets pid. */
static int next_pid(pid_t pid)
{
	char b[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	int n = snprintf(b, sizeof(b), "%d", (int)pid - 1);
	bool ok = fd >= 0 && write(fd, b, (size_t)n) == n;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

START_TEST(members)
{
	struct shk_sup s = { .self = getpid() };
	pid_t c, t = sleeper(&c);

	ck_assert_int_gt(t, 0);
	ck_assert_int_eq(shk_toolproc_of(&s, c), 0);
	shk_toolproc_add(&s, t, TOOL, -1);
	ck_assert_uint_eq(shk_toolproc_of(&s, t), TOOL);
	ck_assert_uint_eq(shk_toolproc_of(&s, c), TOOL);
	/* not a descendant: ourselves */
	ck_assert_uint_eq(shk_toolproc_of(&s, getpid()), 0);
	/* an exec of the recorded process: its new tool call */
	shk_toolproc_add(&s, t, TOOL + 1, -1);
	ck_assert_uint_eq(s.tools.n, 1);
	ck_assert_uint_eq(shk_toolproc_of(&s, c), TOOL + 1);
	/* the agent's own process is never recorded */
	s.child = c;
	shk_toolproc_add(&s, c, TOOL + 2, -1);
	ck_assert_uint_eq(s.tools.n, 1);
	s.child = 0;
	/* exited: its record goes at the next call */
	end(t, c);
	ck_assert_uint_eq(shk_toolproc_of(&s, getpid()), 0);
	ck_assert_uint_eq(s.tools.n, 0);
	shk_toolproc_free(&s);
}
END_TEST

/* In the namespace's init: 0, or the line that failed. */
static int reuse_in_namespace(void)
{
	struct shk_sup s = { .self = getpid() };
	int reused = 0;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return __LINE__;
	for (int i = 0; i < REUSES; i++) {
		pid_t c, t = sleeper(&c), n, nc;

		if (t <= 0 || c <= 0)
			return __LINE__;
		shk_toolproc_add(&s, t, TOOL, -1);
		if (shk_toolproc_of(&s, c) != TOOL)
			return __LINE__;
		end(t, c);
		if (next_pid(t) < 0 || (n = sleeper(&nc)) <= 0)
			return __LINE__;
		reused += n == t;
		/* the new process with the tool's pid, and its child */
		if (shk_toolproc_of(&s, n) != 0 || shk_toolproc_of(&s, nc) != 0)
			return __LINE__;
		end(n, nc);
	}
	shk_toolproc_free(&s);
	/* every try reused the pid, or the test proved nothing */
	return reused == REUSES ? 0 : __LINE__;
}

/* The namespaces are made in a child: a process whose pid namespace's
 * init has exited cannot fork again (LeakSanitizer's exit check would). */
static int in_namespace(void)
{
	pid_t init;
	int st;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0 || (init = fork()) < 0)
		return 250;
	if (init == 0)
		_exit(reuse_in_namespace());
	if (waitpid(init, &st, 0) != init)
		return 251;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 252;
}

START_TEST(reused_pid)
{
	pid_t outer = fork();
	int st;

	ck_assert_int_ge(outer, 0);
	if (outer == 0)
		_exit(in_namespace());
	ck_assert_int_eq(waitpid(outer, &st, 0), outer);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	              "failed at test_toolproc.c line %d (status %#x)", WEXITSTATUS(st), st);
}
END_TEST

static Suite *suite(void)
{
	Suite *su = suite_create("toolproc");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, members);
	if (geteuid() == 0)
		tcase_add_test(tc, reused_pid);
	else
		printf("# not root: the reused pid (a pid namespace of its own) is not tried\n");
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return shk_test_run(suite());
}
