/* SPDX-License-Identifier: MIT */
/*
 * The ptrace side. Exec events are where the loaded image is verified before
 * it runs; every other stop is resumed at once, signals re-injected, group
 * stops kept with PTRACE_LISTEN. Two modes (docs/exec.md, "Which threads are tracees"):
 *
 * traced: every process and thread is a tracee (PTRACE_SEIZE with
 *   auto-attach on fork/vfork/clone; CLONE_UNTRACED is refused by the
 *   filter); EXITKILL makes the kernel kill the tree if we die.
 * lazy (agent under another uid, cgroup with cgroup.kill): a thread is seized
 *   at its exec notification — it is blocked there, so the seize precedes
 *   that exec — and let go after the verified exec stop. Forks cost nothing.
 *   A watchdog process outside the agent's reach kills the cgroup if we die.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "supervise/internal.h"
#include "supervise/path.h"

static void tracee_add(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->tree.ntracees; i++)
		if (s->tree.tracees[i] == tid)
			return;
	if (s->tree.ntracees == s->tree.ctracees) {
		size_t c = s->tree.ctracees ? s->tree.ctracees * 2 : 64;
		pid_t *n = realloc(s->tree.tracees, c * sizeof(*n));
		if (!n)
			return; /* accounting only; the cgroup still holds it */
		s->tree.tracees = n;
		s->tree.ctracees = c;
	}
	s->tree.tracees[s->tree.ntracees++] = tid;
}

static void tracee_del(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->tree.ntracees; i++)
		if (s->tree.tracees[i] == tid) {
			s->tree.tracees[i] = s->tree.tracees[--s->tree.ntracees];
			return;
		}
}

static bool stray_take(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->tree.nstrays; i++)
		if (s->tree.strays[i] == tid) {
			s->tree.strays[i] = s->tree.strays[--s->tree.nstrays];
			return true;
		}
	return false;
}

/* /proc/TID/status TracerPid: who holds a thread we could not seize. */
static bool traced_by_us(pid_t tid)
{
	char p[64], line[256];
	FILE *f;
	int tracer = -1;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)tid);
	f = fopen(p, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer == getpid();
}

/*
 * Lazy mode, at an exec notification, before the answer: make the thread a
 * tracee so that the exec stop follows. The thread is blocked in the
 * notification; only death ends that, so the notification still being valid
 * after the seize proves the tid was that thread and not a reuse.
 */
int shk_tracer_seize(struct shk_sup *s, pid_t tid, uint64_t notif_id)
{
	const long opts = SHK_PTRACE_LAZY;
	bool fresh = true;

	if (!s->lazy)
		return 0; /* attached since its fork */
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)opts) < 0) {
		int e = errno;
		/* already ours: an approved exec that failed, or a stray */
		if (e != EPERM || !traced_by_us(tid))
			return e == EPERM ? -EPERM : -ESRCH;
		fresh = false;
		stray_take(s, tid);
	}
	if (ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &notif_id) < 0) {
		/* the thread died: whoever has its tid now is let go at its
		 * first stop (PTRACE_INTERRUPT provides one) */
		if (fresh && ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0 &&
		    s->tree.nstrays < sizeof(s->tree.strays) / sizeof(s->tree.strays[0]))
			s->tree.strays[s->tree.nstrays++] = tid;
		return -ESRCH;
	}
	if (fresh) {
		tracee_add(s, tid);
		s->stats.processes_seen++;
	}
	return 0;
}

void shk_tracer_kill_tree(struct shk_sup *s)
{
	if (s->cg.dirfd >= 0)
		shk_cgroup_kill(&s->cg);
	/* without a cgroup (and in addition to it): every tracee we know */
	for (size_t i = 0; i < s->tree.ntracees; i++)
		kill(s->tree.tracees[i], SIGKILL);
	if (s->child_pgid > 0)
		kill(-s->child_pgid, SIGKILL);
	s->tree_killed = true;
}

/* Resume a tracee; one whose opens are watched keeps stopping at
 * syscalls, whatever stop it was in (a signal, a group stop, an event). */
static long resume(struct shk_sup *s, pid_t pid, int sig)
{
	bool watched = false;

	for (size_t i = 0; i < s->ow.nwatch && !watched; i++)
		watched = s->ow.watch[i].pid == pid;
	return ptrace(watched ? PTRACE_SYSCALL : PTRACE_CONT, pid, 0, (void *)(long)sig);
}

void shk_tracer_untrack(struct shk_sup *s, pid_t pid)
{
	tracee_del(s, pid);
}

static void on_exec(struct shk_sup *s, pid_t pid)
{
	unsigned long former = 0;
	int verdict;

	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &former) < 0)
		former = (unsigned long)pid;
	/* a non-leader thread that execs takes over the leader's pid; the
	 * process has a new executable and maybe lost threads */
	if ((pid_t)former != pid)
		tracee_del(s, (pid_t)former);
	shk_tidinfo_forget(s, pid);
	shk_tidinfo_forget(s, (pid_t)former);
	shk_openwatch_exec(s, (pid_t)former, pid);
	verdict = shk_exec_verify(s, pid, (pid_t)former);
	if (verdict < 0) {
		/* the image or argv is not what was approved: it never runs */
		s->stats.exec_killed++;
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	s->stats.exec_verified++;
	if (verdict == 1) {
		ptrace(PTRACE_SYSCALL, pid, 0, 0); /* openwatch.c takes it from here */
		return;
	}
	if (s->lazy && ptrace(PTRACE_DETACH, pid, 0, 0) == 0) {
		/* seized again at its next exec notification */
		tracee_del(s, pid);
		return;
	}
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
	resume(s, pid, 0);
}

static void on_stop(struct shk_sup *s, pid_t pid, int st)
{
	int event = (st >> 16) & 0xff;
	int sig = WSTOPSIG(st);

	if (s->tree.nstrays && stray_take(s, pid)) {
		/* seized by a reused tid: not ours (an agent's exec would have
		 * been notified and taken it off the list), let it go as it was */
		ptrace(PTRACE_DETACH, pid, 0, (void *)(long)(event == 0 ? sig : 0));
		return;
	}
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
			resume(s, pid, 0);
		return;
	case 0:
		if (sig == (SIGTRAP | 0x80)) {
			/* a syscall stop: only a watched image has them */
			if (!shk_openwatch_stop(s, pid))
				resume(s, pid, 0);
			return;
		}
		/* signal-delivery stop: deliver it unchanged */
		if (resume(s, pid, sig) == 0 || errno != ESRCH)
			return;
		/* lazy mode (WUNTRACED): a group stop of a child we do not trace */
		if (pid == s->child && (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU))
			shk_sup_job_stopped(s);
		return;
	default:
		resume(s, pid, 0);
	}
}

/* Drain waitpid. Returns 1 when no child or tracee is left, else 0. */
int shk_tracer_reap(struct shk_sup *s)
{
	for (;;) {
		int st = 0;
		pid_t pid = waitpid(-1, &st, WNOHANG | __WALL | (s->lazy ? WUNTRACED : 0));

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
		stray_take(s, pid);
		shk_exec_forget(s, pid);
		shk_openwatch_forget(s, pid);
		shk_tidinfo_forget(s, pid);
		shk_toolproc_forget(s, pid);
		if (pid == s->child && !s->child_exited) {
			s->child_exited = true;
			s->child_status = st;
		}
	}
}

/*
 * Lazy mode: with most of the tree untraced, EXITKILL no longer kills it
 * when we die. The watchdog does: a root process in a session of its own
 * (a kill of our process group misses it; the agent runs as another uid and
 * cannot signal it), not in the agent's cgroup, spared by the OOM killer. It
 * holds one end of a socket pair and the cgroup: EOF without the stand-down
 * byte — we died — and it writes cgroup.kill. Its death is seen by the loop
 * (fail closed). It stands down once the tree has been killed at the end.
 * Forked from a threaded process: only async-signal-safe calls below.
 */
static __attribute__((noreturn)) void watchdog(int sock, int cgfd)
{
	sigset_t all;
	char c;
	int fd;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	setsid();
	prctl(PR_SET_NAME, "shackle-watch");
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "-1000", 5) < 0) { /* best effort */ }
		close(fd);
	}
	if (dup2(sock, 0) < 0 || dup2(cgfd, 1) < 0)
		_exit(1);
	syscall(SYS_close_range, 2, ~0U, 0);
	for (;;) {
		struct pollfd p = { .fd = 0, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, -1) < 0)
			continue;
		n = read(0, &c, 1);
		if (n == 1)
			_exit(0); /* stand down: the session ended in order */
		if (n < 0 && errno == EINTR)
			continue;
		fd = openat(1, "cgroup.kill", O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && write(fd, "1", 1) < 0) { /* nothing left to do */ }
		_exit(0);
	}
}

int shk_tracer_watchdog_start(struct shk_sup *s)
{
	int sv[2];
	pid_t pid;

	s->wd_fd = -1;
	if (s->cg.dirfd < 0 || faccessat(s->cg.dirfd, "cgroup.kill", W_OK, 0) < 0)
		return -ENOTSUP;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (pid == 0) {
		close(sv[0]);
		watchdog(sv[1], s->cg.dirfd);
	}
	close(sv[1]);
	s->wd_fd = sv[0];
	return 0;
}

void shk_tracer_watchdog_stop(struct shk_sup *s)
{
	if (s->wd_fd < 0)
		return;
	/* it exits and is reaped with the tree */
	shk_waker_unwatch(s, s->wd_fd);
	if (write(s->wd_fd, "", 1) < 0) { /* it is gone already */ }
	close(s->wd_fd);
	s->wd_fd = -1;
}
