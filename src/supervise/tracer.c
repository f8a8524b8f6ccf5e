/* SPDX-License-Identifier: MIT */
/*
 * The ptrace side: every process and thread of the agent is a tracee
 * (PTRACE_SEIZE with auto-attach on fork/vfork/clone; CLONE_UNTRACED is
 * refused by the filter). We stop them only at exec events, where the loaded
 * image is verified before it runs; every other stop is resumed at once,
 * signals re-injected, group stops kept with PTRACE_LISTEN. EXITKILL makes
 * the kernel kill every tracee if the supervisor dies.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "supervise/internal.h"
#include "supervise/path.h"

static void tracee_add(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->ntracees; i++)
		if (s->tracees[i] == tid)
			return;
	if (s->ntracees == s->ctracees) {
		size_t c = s->ctracees ? s->ctracees * 2 : 64;
		pid_t *n = realloc(s->tracees, c * sizeof(*n));
		if (!n)
			return; /* accounting only; the cgroup still holds it */
		s->tracees = n;
		s->ctracees = c;
	}
	s->tracees[s->ntracees++] = tid;
}

static void tracee_del(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->ntracees; i++)
		if (s->tracees[i] == tid) {
			s->tracees[i] = s->tracees[--s->ntracees];
			return;
		}
}

void shk_tracer_kill_tree(struct shk_sup *s)
{
	if (s->cg.dirfd >= 0)
		shk_cgroup_kill(&s->cg);
	/* without a cgroup (and in addition to it): every tracee we know */
	for (size_t i = 0; i < s->ntracees; i++)
		kill(s->tracees[i], SIGKILL);
	if (s->child_pgid > 0)
		kill(-s->child_pgid, SIGKILL);
	s->tree_killed = true;
}

static void on_exec(struct shk_sup *s, pid_t pid)
{
	unsigned long former = 0;

	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &former) < 0)
		former = (unsigned long)pid;
	/* a non-leader thread that execs takes over the leader's pid; the
	 * process has a new executable and maybe lost threads */
	if ((pid_t)former != pid)
		tracee_del(s, (pid_t)former);
	shk_tidinfo_forget(s, pid);
	shk_tidinfo_forget(s, (pid_t)former);
	if (shk_exec_verify(s, pid, (pid_t)former) < 0) {
		/* the image or argv is not what was approved: it never runs */
		s->stats.exec_killed++;
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	s->stats.exec_verified++;
	ptrace(PTRACE_CONT, pid, 0, 0);
}

static void on_new(struct shk_sup *s, pid_t pid, int event)
{
	unsigned long child = 0;

	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &child) == 0 && child > 0) {
		tracee_add(s, (pid_t)child);
		if (event != PTRACE_EVENT_CLONE || shk_proc_tgid((pid_t)child) == (pid_t)child)
			s->stats.processes_seen++;
	}
	ptrace(PTRACE_CONT, pid, 0, 0);
}

static void on_stop(struct shk_sup *s, pid_t pid, int st)
{
	int event = (st >> 16) & 0xff;
	int sig = WSTOPSIG(st);

	switch (event) {
	case PTRACE_EVENT_EXEC:
		on_exec(s, pid);
		return;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		on_new(s, pid, event);
		return;
	case PTRACE_EVENT_STOP:
		tracee_add(s, pid);
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			ptrace(PTRACE_LISTEN, pid, 0, 0); /* a real group stop */
			if (pid == s->child && sig != SIGSTOP)
				shk_sup_job_stopped(s);
		} else
			ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	case 0:
		/* signal-delivery stop: deliver it unchanged */
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig);
		return;
	default:
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
}

/* Drain waitpid. Returns 1 when no child or tracee is left, else 0. */
int shk_tracer_reap(struct shk_sup *s)
{
	for (;;) {
		int st = 0;
		pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);

		if (pid < 0)
			return errno == ECHILD ? 1 : (errno == EINTR ? 0 : 1);
		if (pid == 0)
			return 0;
		if (WIFSTOPPED(st)) {
			on_stop(s, pid, st);
			continue;
		}
		if (!WIFEXITED(st) && !WIFSIGNALED(st))
			continue;
		tracee_del(s, pid);
		shk_exec_forget(s, pid);
		shk_tidinfo_forget(s, pid);
		if (pid == s->child && !s->child_exited) {
			s->child_exited = true;
			s->child_status = st;
		}
	}
}
