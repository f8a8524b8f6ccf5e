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
 * did not descend from.
 *
 * A recorded process is held by a pidfd, opened while it was our tracee
 * and unreaped (shk_toolproc_answered; or at its exec stop), so the
 * pidfd is of that process. At each call, after the
 * notification was received, one poll() over the pidfds drops the records
 * of processes that have exited; most calls then find none left and read
 * no /proc at all. A record that survives that poll has a live process:
 * its pid names nobody else until it is reaped. A pid met on the walk
 * (the caller itself, or a parent read afterwards) belongs to a process
 * that existed when the call was made, since a parent is older than its
 * child and the caller was waiting in the call: if a surviving record has
 * that pid, both existed at the poll with one pid, so they are the same
 * process. No start time is compared, so a pid reused within one clock
 * tick of /proc's start time is not taken for the old process either.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervise/internal.h"

/* live tool processes recorded at once: a pidfd each, next to the thread
 * cache's (path.c), well below a default RLIMIT_NOFILE of 1024 */
#define TOOLPROC_MAX SHK_TOOLPROC_MAX
#define TOOLPROC_DEPTH 64  /* ancestors looked at */

/* The parent, from /proc/PID/stat. */
static int proc_parent(pid_t pid, pid_t *ret_ppid)
{
	char p[64], buf[1024];
	const char *c;
	int ppid;
	ssize_t len;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = 0;
	/* the name in parentheses may hold anything: fields follow the last ')' */
	if (!(c = strrchr(buf, ')')) || sscanf(c + 1, " %*c %d", &ppid) != 1)
		return -EIO;
	*ret_ppid = ppid;
	return 0;
}

static struct shk_toolproc *find(struct shk_sup *s, pid_t pid)
{
	for (size_t i = 0; i < s->tools.n; i++)
		if (s->tools.procs[i].pid == pid)
			return &s->tools.procs[i];
	return NULL;
}

/* The last close of an exited process's pidfd frees its pidfs inode
 * (~1 µs): left for after the answer when there is room. */
static void drop(struct shk_sup *s, struct shk_toolproc *t)
{
	if (s->tools.nclosing < TOOLPROC_MAX)
		s->tools.closing[s->tools.nclosing++] = t->pidfd;
	else
		close(t->pidfd);
	*t = s->tools.procs[--s->tools.n];
}

void shk_toolproc_release(struct shk_sup *s)
{
	while (s->tools.nclosing)
		close(s->tools.closing[--s->tools.nclosing]);
}

/* Forget the processes that have exited (lazy tracing does not see them
 * go): a pidfd polls readable once its process has exited. */
static void prune(struct shk_sup *s)
{
	struct pollfd p[TOOLPROC_MAX];
	size_t n = s->tools.n;

	for (size_t i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = s->tools.procs[i].pidfd, .events = POLLIN };
	/* not polled (EINTR, ENOMEM): the records stay, the walk below
	 * only compares pids with them, so they must all be live */
	if (poll(p, n, 0) < 0) {
		while (s->tools.n)
			drop(s, &s->tools.procs[0]);
		return;
	}
	/* downwards: drop() moves the last record, already looked at, to i */
	for (size_t i = n; i-- > 0;)
		if (p[i].revents)
			drop(s, &s->tools.procs[i]);
}

void shk_toolproc_add(struct shk_sup *s, pid_t pid, uint64_t tool_call, int pidfd)
{
	_cleanup_close_ int fd = pidfd;
	struct shk_toolproc *t;

	if (!tool_call || pid == s->child)
		return;
	/* an exec of a recorded process (the shim's `exec pyenv`): its pidfd
	 * still polls unreadable, so it is this process */
	if ((t = find(s, pid)) && poll(&(struct pollfd){ .fd = t->pidfd, .events = POLLIN }, 1, 0) == 0) {
		t->tool_call = tool_call;
		return;
	}
	if (t)
		drop(s, t);
	if (s->tools.n == s->tools.cap && s->tools.n)
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
	/* stopped at its exec stop: the pid is this process's */
	if (fd < 0 && (fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return;
	s->tools.procs[s->tools.n++] = (struct shk_toolproc){ pid, shk_take_fd(&fd), tool_call };
}

/*
 * The process of an approved tool call, held by a pidfd (above):
 * opened here, while the kernel runs the exec, rather than at the exec
 * stop, where the image waits for us. The thread is our tracee (seized
 * before the answer, or since its fork): neither its tid nor its process's
 * pid is freed before we reap it (a traced thread stays a zombie until its
 * tracer waits for it, and a group's leader until its last thread is
 * released), and nothing is reaped between the answer and this.
 */
void shk_toolproc_answered(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->ex.nappr; i++) {
		struct shk_exec_approval *ap = &s->ex.appr[i];

		if (ap->tid != tid)
			continue;
		if (ap->tool_call && ap->pid > 0 && ap->pid != s->child && ap->pidfd < 0)
			ap->pidfd = (int)syscall(SYS_pidfd_open, ap->pid, 0);
		return;
	}
}

uint64_t shk_toolproc_of(struct shk_sup *s, pid_t pid)
{
	if (!s->tools.n || pid == s->child)
		return 0;
	prune(s);
	for (int depth = 0; s->tools.n && pid > 1 && pid != s->child && pid != s->self && depth < TOOLPROC_DEPTH;
	     depth++) {
		struct shk_toolproc *t = find(s, pid);
		pid_t ppid;

		if (t)
			return t->tool_call;
		/* gone (or unreadable): the call is counted as the agent's */
		if (proc_parent(pid, &ppid) < 0)
			return 0;
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
	while (s->tools.n)
		drop(s, &s->tools.procs[0]);
	shk_toolproc_release(s);
	free(s->tools.procs);
	s->tools.procs = NULL;
	s->tools.n = s->tools.cap = 0;
}
