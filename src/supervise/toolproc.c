/* SPDX-License-Identifier: MIT */
/*
 * Which tool call a process belongs to (docs/decide.md, "Tool calls at
 * syscall level"). A process whose exec of the agent's was allowed is
 * recorded at its verified exec stop with the seq the judge gave it (of
 * that decision, or of the model's proposal the exec carries out); a call
 * of it or of any of its descendants belongs to that tool call. The agent's
 * own process (the main child, whatever it execs) is never recorded.
 *
 * Descent is read from /proc at the time of the call, not followed through
 * fork events: in lazy tracing (docs/exec.md) forks are not seen. A
 * process can only ever move up its line of ancestors (an orphan goes to
 * the nearest subreaper: shackle-run, or a subreaper below it, which is an
 * ancestor already), so no process can become the descendant of a tool it
 * did not descend from. A recorded process is known by pid and start time,
 * so that a pid reused after its exit is not taken for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervise/internal.h"

#define TOOLPROC_MAX 4096  /* live tool processes recorded at once */
#define TOOLPROC_DEPTH 64  /* ancestors looked at */

/* Parent and start time (clock ticks since boot) from /proc/PID/stat. */
static int proc_parent(pid_t pid, pid_t *ret_ppid, uint64_t *ret_start)
{
	char p[64], buf[1024];
	const char *c;
	unsigned long long start;
	int ppid, fd, n = 0;
	ssize_t len;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = 0;
	/* the name in parentheses may hold anything: fields follow the last ')' */
	if (!(c = strrchr(buf, ')')))
		return -EIO;
	/* state ppid, then 17 fields to starttime (field 22) */
	if (sscanf(c + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu%n",
		   &ppid, &start, &n) != 2 || !n)
		return -EIO;
	*ret_ppid = ppid;
	*ret_start = start;
	return 0;
}

static struct shk_toolproc *find(struct shk_sup *s, pid_t pid)
{
	for (size_t i = 0; i < s->tools.n; i++)
		if (s->tools.procs[i].pid == pid)
			return &s->tools.procs[i];
	return NULL;
}

static void drop(struct shk_sup *s, struct shk_toolproc *t)
{
	*t = s->tools.procs[--s->tools.n];
}

/* Forget the processes that have exited (lazy tracing does not see them go). */
static void prune(struct shk_sup *s)
{
	for (size_t i = s->tools.n; i-- > 0;) {
		struct shk_toolproc *t = &s->tools.procs[i];
		pid_t ppid;
		uint64_t start;

		if (proc_parent(t->pid, &ppid, &start) < 0 || start != t->start)
			drop(s, t);
	}
}

void shk_toolproc_add(struct shk_sup *s, pid_t pid, uint64_t start, uint64_t tool_call)
{
	struct shk_toolproc *t;
	pid_t ppid;

	if (!tool_call || pid == s->child || (!start && proc_parent(pid, &ppid, &start) < 0))
		return;
	if ((t = find(s, pid))) {
		*t = (struct shk_toolproc){ pid, start, tool_call };
		return;
	}
	if (s->tools.n == s->tools.cap)
		prune(s);
	if (s->tools.n == s->tools.cap) {
		size_t c = s->tools.cap ? s->tools.cap * 2 : 16;
		struct shk_toolproc *n = c <= TOOLPROC_MAX ? realloc(s->tools.procs, c * sizeof(*n)) : NULL;

		/* not recorded: its calls count as new tool calls (the stricter
		 * answer) */
		if (!n)
			return;
		s->tools.procs = n;
		s->tools.cap = c;
	}
	s->tools.procs[s->tools.n++] = (struct shk_toolproc){ pid, start, tool_call };
}

uint64_t shk_toolproc_of(struct shk_sup *s, pid_t pid, uint64_t *ret_start)
{
	pid_t self;

	*ret_start = 0;
	if (!s->tools.n)
		return 0; /* no tool process recorded: no getpid() per call */
	self = getpid();
	for (int depth = 0; s->tools.n && pid > 1 && pid != s->child && pid != self && depth < TOOLPROC_DEPTH;
	     depth++) {
		struct shk_toolproc *t = find(s, pid);
		pid_t ppid;
		uint64_t start;

		/* gone (or unreadable): the call is counted as the agent's */
		if (proc_parent(pid, &ppid, &start) < 0)
			return 0;
		if (!depth)
			*ret_start = start;
		if (t && t->start == start)
			return t->tool_call;
		if (t)
			drop(s, t); /* that process exited and its pid was reused */
		pid = ppid;
	}
	return 0;
}

void shk_toolproc_forget(struct shk_sup *s, pid_t pid)
{
	struct shk_toolproc *t = find(s, pid);

	if (t)
		drop(s, t);
}

void shk_toolproc_free(struct shk_sup *s)
{
	free(s->tools.procs);
	s->tools.procs = NULL;
	s->tools.n = s->tools.cap = 0;
}
