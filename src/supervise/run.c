/* SPDX-License-Identifier: MIT */
/*
 * shk_supervise_run: set up, launch, and the event loop — the loop thread
 * waits in the listener's RECV and is woken there by signals (wait.c:
 * SIGCHLD for ptrace and exits, the forwarded ones, the waker's kicks for the
 * control channel, the watchdog and the tick;
 * signals). When the main child exits, whatever is left of its tree is
 * killed and reaped before we return.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "supervise/internal.h"
#include "supervise/launch.h"
#include "supervise/stale.h"

__attribute__((format(printf, 2, 0)))
static void say(const char *kind, const char *fmt, va_list ap)
{
	fprintf(stderr, "shackle-run: %s", kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

__attribute__((format(printf, 2, 3)))
static void warn(const struct shk_sup *s, const char *fmt, ...)
{
	va_list ap;

	if (s->cfg->quiet)
		return;
	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
}

/* What is weaker on this machine, not a fault: only when asked for. */
__attribute__((format(printf, 2, 3)))
static void note(const struct shk_sup *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->cfg->verbose)
		return;
	va_start(ap, fmt);
	say("note: ", fmt, ap);
	va_end(ap);
}

/* Without root a cgroup or Landlock of one's own is often missing: a note
 * then (shackle doctor says it too); as root it is a warning. */
typedef void (*say_fn)(const struct shk_sup *s, const char *fmt, ...);
static say_fn weaker(void)
{
	return geteuid() == 0 ? warn : note;
}

int shk_sup_exit_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The forwarded signals among bits (shk_wait_take) go to the agent's group. */
void shk_sup_forward(struct shk_sup *s, uint64_t bits)
{
	for (int sig = 1; sig < 32; sig++)
		if ((bits & ((uint64_t)1 << sig)) && shk_wait_is_forwarded(sig) &&
		    s->child_pgid > 0 && !s->child_exited)
			kill(-s->child_pgid, sig);
}

/* What the handler recorded and the waker kicked for. 1: the loop must
 * stop (the watchdog died). */
static int on_pending(struct shk_sup *s, bool *extra)
{
	uint64_t bits = shk_wait_take();

	if (bits & ((uint64_t)1 << SIGCHLD))
		s->reap_pending = true;
	shk_sup_forward(s, bits);
	if ((bits & SHK_KICK_WD) && s->wd_fd >= 0) {
		/* without it our death would leave the untraced part of the
		 * tree running: fail closed */
		warn(s, "the watchdog process died: stopping the agent");
		return 1;
	}
	if ((bits & SHK_KICK_EXTRA) && *extra) {
		if (s->cfg->on_extra(s->cfg->judge_ctx) < 0 ||
		    shk_waker_watch(s, s->cfg->extra_fd, SHK_KICK_EXTRA, true) < 0) {
			shk_waker_unwatch(s, s->cfg->extra_fd);
			*extra = false;
		}
	}
	return 0;
}

/* After the main child: kill the rest, count it, wait until all are gone. */
static void end_tree(struct shk_sup *s)
{
	int n = s->cg.dirfd >= 0 ? shk_cgroup_count(&s->cg) : (int)s->tree.ntracees;

	s->stats.killed_at_end = n > 0 ? (uint64_t)n : 0;
	shk_tracer_kill_tree(s);
	shk_tracer_watchdog_stop(s); /* its job is done; the loop reaps it */
}

/* ENOENT from RECV: a target died, or no task uses the filter any more. */
static bool notify_hung_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static int loop(struct shk_sup *s)
{
	bool notify_open = true;
	bool extra = s->cfg->on_extra && s->cfg->extra_fd >= 0;
	int r;

	if (extra && shk_waker_watch(s, s->cfg->extra_fd, SHK_KICK_EXTRA, false) < 0)
		return -EBADF;
	if (s->wd_fd >= 0 && shk_waker_watch(s, s->wd_fd, SHK_KICK_WD, false) < 0)
		return -EBADF;
	s->reap_pending = true;
	for (;;) {
		if (on_pending(s, &extra))
			return -EPIPE;
		/* wait4 only when SIGCHLD said so: one syscall less per call */
		if (s->reap_pending || s->tree_killed) {
			s->reap_pending = false;
			if (shk_tracer_reap(s) == 1 && s->child_exited)
				return 0;
		}
		if (s->child_exited && !s->tree_killed) {
			end_tree(s);
			s->reap_pending = true;
		}
		/* after the events and the stops they reported: a checkpoint
		 * due (signature, write, fsync) does not hold up a waiting
		 * notification or exec stop */
		if (s->cfg->tick)
			s->cfg->tick(s->cfg->judge_ctx);
		if (!notify_open) {
			if ((r = shk_wait_poll(NULL, 0)) < 0)
				return r;
			continue;
		}
		r = shk_wait_notif(s);
		if (r == 1 && (r = shk_notify_dispatch(s)) < 0)
			return r;
		shk_toolproc_release(s);
		if (r == -ENOENT) {
			notify_open = !notify_hung_up(s->notify_fd);
			r = 0;
		}
		if (r < 0)
			return r;
	}
}

static void take_terminal(struct shk_sup *s)
{
	s->saved_tty_fd = -1;
	if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) != getpgrp())
		return;
	/* the agent's group becomes the foreground: ^C reaches it directly */
	if (tcsetpgrp(STDIN_FILENO, s->child) == 0) {
		s->saved_tty_fd = STDIN_FILENO;
		s->saved_tty_pgrp = getpgrp();
	}
}

/*
 * The agent's group stopped for job control (^Z): stop with it, as su and
 * sudo do, so that the shell sees a stopped job; `fg` continues us, and we
 * hand the terminal back to the agent and continue it.
 */
void shk_sup_job_stopped(struct shk_sup *s)
{
	if (s->saved_tty_fd < 0 || s->child_exited)
		return;
	signal(SIGTTOU, SIG_IGN);
	tcsetpgrp(s->saved_tty_fd, s->saved_tty_pgrp);
	raise(SIGSTOP);
	/* continued */
	tcsetpgrp(s->saved_tty_fd, s->child_pgid);
	signal(SIGTTOU, SIG_DFL);
	kill(-s->child_pgid, SIGCONT);
}

static void give_back_terminal(struct shk_sup *s)
{
	if (s->saved_tty_fd < 0)
		return;
	signal(SIGTTOU, SIG_IGN);
	tcsetpgrp(s->saved_tty_fd, s->saved_tty_pgrp);
	signal(SIGTTOU, SIG_DFL);
}

static void say_unwritable(const struct shk_sup *s, int what)
{
	const char *home = getenv("HOME");
	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), ".");
	warn(s, "the agent runs as user %s (uid %u), which cannot write %s%s%s%s%s%s%s: tools that "
	        "keep state there fail with EACCES (and git refuses a repository another user "
	        "owns); run it as a user who can (--user USER, or sudo -u USER shackle-run), or "
	        "give it a HOME of its own; docs/supervisor.md, \"Which user the agent runs as\"",
	     s->cfg->run_user ? s->cfg->run_user : "?", (unsigned)s->cfg->run_uid,
	     what & SHK_UNWRITABLE_HOME ? "its HOME (" : "",
	     what & SHK_UNWRITABLE_HOME ? home : "", what & SHK_UNWRITABLE_HOME ? ")" : "",
	     what == (SHK_UNWRITABLE_HOME | SHK_UNWRITABLE_CWD) ? " or " : "",
	     what & SHK_UNWRITABLE_CWD ? "the working directory (" : "",
	     what & SHK_UNWRITABLE_CWD ? cwd : "", what & SHK_UNWRITABLE_CWD ? ")" : "");
}

static const char *errname(int e)
{
	return strerrorname_np(e) ? strerrorname_np(e) : "?";
}

/*
 * clone3 did not start the child in its leaf: it is moved in now, before
 * the byte that lets it go on. A leaf the move cannot enter either (see
 * launch.c shk_launch_fork) fails the start: the hooks attached to it and
 * cgroup.kill would not hold the agent, so it never execs; the caller
 * kills and reaps the child. Said even under --quiet: it is the error.
 */
static int place_child(struct shk_sup *s, int clone_err)
{
	int r = shk_cgroup_add(&s->cg, s->child);

	if (r == 0)
		return 0;
	s->stats.cgroup_refused = -r;
	fprintf(stderr, "shackle-run: the agent cannot enter its cgroup %s: clone3 "
	        "CLONE_INTO_CGROUP failed with %s (%s), writing its pid to cgroup.procs with "
	        "%s (%s); the agent was not started\n", s->cg.path, errname(-clone_err),
	        strerror(-clone_err), errname(-r), strerror(-r));
	return r;
}

static int start_child(struct shk_sup *s, struct shk_launch *l)
{
	long opts = SHK_PTRACE_TRACED;
	int sv[2], pidfd, r, clone_err;
	struct shk_handshake h;
	char go = 1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	l->sock = sv[1];
	s->child = shk_launch_fork(s->cg.dirfd, &clone_err);
	if (s->child < 0) {
		r = s->child;
		s->child = -1;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (s->child == 0) {
		close(sv[0]);
		shk_launch_child(l);
	}
	close(sv[1]);
	/* Only now: fork copies the flag, and a non-dumpable child could not be
	 * traced. No /proc/PID/mem, fd or ptrace access to us for the agent. */
	if (geteuid() != 0)
		prctl(PR_SET_DUMPABLE, 0);
	s->child_pgid = s->child;
	setpgid(s->child, s->child);
	s->stats.cgroup_clone = clone_err == 0;
	r = s->cg.dirfd >= 0 && clone_err < 0 ? place_child(s, clone_err) : 0;
	/* lazy tracing needs the cgroup and its watchdog (tracer.c) */
	s->lazy = s->wd_fd >= 0 && s->cg.dirfd >= 0;
	if (s->lazy)
		opts = SHK_PTRACE_LAZY;
	else
		shk_tracer_watchdog_stop(s);
	if (r == 0)
		r = shk_execfast_setup(s);
	if (r == 0 && ptrace(PTRACE_SEIZE, s->child, 0, (void *)opts) < 0)
		r = -errno;
	if (r == 0 && write(sv[0], &go, 1) != 1)
		r = -EPIPE;
	if (r == 0)
		r = shk_launch_wait(s, sv[0], &h, sizeof(h));
	if (r == 0 && h.listener < 0) {
		struct stat st;

		r = -(h.err ? h.err : EPERM);
		h.path[sizeof(h.path) - 1] = 0;
		/* a directory the agent cannot search refuses every name in it
		 * (EACCES, as for execvp): one that is not there for us either
		 * is reported as not found */
		if (r == -EACCES && stat(h.path, &st) < 0 && errno == ENOENT)
			r = -ENOENT;
		else
			memcpy(s->stats.program, h.path, sizeof(h.path));
	}
	pidfd = r == 0 ? (int)syscall(SYS_pidfd_open, s->child, 0) : -1;
	if (r == 0 && pidfd < 0)
		r = -errno;
	if (r == 0) {
		s->notify_fd = (int)syscall(SYS_pidfd_getfd, pidfd, h.listener, 0);
		if (s->notify_fd < 0)
			r = -errno;
		else
			s->sync_on = s->stats.sync_wake = shk_wait_sync(s->notify_fd);
		s->stats.wait_killable = h.wait_killable;
		s->stats.masked = h.masked;
		s->stats.proc_guard = h.proc_guard > 0;
		if (h.proc_guard < 0)
			weaker()(s, "no Landlock (%s): the agent can rewrite a child's argv and "
			        "environment through /proc/PID/mem after the exec check",
			     strerror(-h.proc_guard));
		if (h.unwritable)
			say_unwritable(s, h.unwritable);
		if (h.masked < 0)
			warn(s, "cannot hide the audit log and key from the agent (%s: no user "
			        "namespace?): it can read a --key file and modify the log",
			     strerror(-h.masked));
	}
	if (pidfd >= 0)
		close(pidfd);
	if (r == 0 && s->cfg->started)
		s->cfg->started(s->cfg->judge_ctx, s, s->child, s->cg.dirfd >= 0 ? s->cg.path : NULL);
	if (r == 0) {
		take_terminal(s);
		if (write(sv[0], &go, 1) != 1)
			r = -EPIPE;
	}
	close(sv[0]);
	if (r < 0) {
		kill(s->child, SIGKILL);
		while (waitpid(s->child, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	return r;
}

static void on_stale(void *ctx, const char *path, int e)
{
	if (e == 0)
		note(ctx, "removed %s, left by a shackle-run that was killed", path);
}

static int prepare(struct shk_sup *s, struct shk_launch *l, struct sock_fprog *prog)
{
	const struct shk_sup_config *cfg = s->cfg;
	struct shk_filter_opts fo = { .sup_pid = getpid(), .sup_pgid = getpgrp() };
	const char *search = getenv("PATH");
	char parent[3072];
	pid_t tids[66];
	char name[64];
	unsigned rnd;
	int r;

	if (!cfg->argv || !cfg->argv[0] || !cfg->argv[0][0])
		return -EINVAL;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s->sizes) < 0)
		return -errno;
	if (s->sizes.seccomp_notif_resp > 128)
		return -EPROTO;
	s->req = calloc(1, s->sizes.seccomp_notif > sizeof(*s->req) ? s->sizes.seccomp_notif
	                                                              : sizeof(*s->req));
	if (!s->req)
		return -ENOMEM;
	if ((r = shk_emu_start(s)) < 0 || (r = shk_waker_start(s)) < 0)
		return r;
	tids[0] = getpid();
	tids[1] = shk_waker_tid(s);
	for (int i = 0; i < s->emu.nworkers && i < 64; i++)
		tids[i + 2] = s->emu.worker_tids[i];
	fo.tids = tids;
	fo.ntids = 2 + (size_t)(s->emu.nworkers < 64 ? s->emu.nworkers : 64);
	/* a random part: the leaf of a SIGKILLed shackle-run stays behind (no
	 * one removes it), and a later one given the same pid would find the
	 * name taken (EEXIST) and run without a cgroup, hence traced */
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rnd = (unsigned)now_ns();
	if (shk_cgroup_parent(parent, sizeof(parent)) == 0)
		shk_stale_cgroups(parent, false, on_stale, s);
	snprintf(name, sizeof(name), "shackle-%d-%08x", (int)getpid(), rnd);
	if ((r = shk_cgroup_create(&s->cg, name)) < 0)
		weaker()(s, "no writable cgroup v2 (%s): the agent's tree is held by PDEATHSIG, "
		        "ptrace EXITKILL and a process-group kill only; double-forked "
		        "descendants are still traced and killed at the end",
		     strerror(-r));
	/* on the leaf while it is still empty; decides the filter below */
	if ((r = shk_netv_setup(s)) < 0)
		return r;
	fo.hooked_families_only = s->nv != NULL;
	if ((r = shk_filter_build(&fo, prog)) < 0)
		return r;
	if (s->drop_creds)
		shk_tracer_watchdog_start(s);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (!s->drop_creds && cfg->nmask > 0 && geteuid() != 0) {
		snprintf(s->mask_dir, sizeof(s->mask_dir), "/tmp/shackle-mask-XXXXXX");
		if (!mkdtemp(s->mask_dir))
			s->mask_dir[0] = 0;
	}
	*l = (struct shk_launch){
		.parent = getpid(), .argv = cfg->argv, .prog = prog,
		.search = search && search[0] ? search : "/usr/local/bin:/usr/bin:/bin",
		.user = s->drop_creds ? cfg->run_user : NULL,
		.drop = s->drop_creds, .uid = cfg->run_uid, .gid = cfg->run_gid,
		.mask_paths = cfg->mask_paths, .nmask = cfg->nmask,
		.mask_dir = s->mask_dir[0] ? s->mask_dir : NULL,
	};
	return 0;
}

int shk_supervise_run(const struct shk_sup_config *cfg, int *ret_status,
                      struct shk_sup_stats *ret_stats)
{
	struct shk_sup *s = calloc(1, sizeof(*s));
	struct sock_fprog prog = { 0 };
	struct shk_launch l;
	sigset_t old;
	bool busy;
	int r;

	/* read on every return: why the start failed (shackle-run) */
	if (ret_stats)
		*ret_stats = (struct shk_sup_stats){ 0 };
	if (!s)
		return -ENOMEM;
	s->cfg = cfg;
	s->self = getpid();
	s->notify_fd = s->wd_fd = -1;
	s->cg.dirfd = -1;
	s->drop_creds = cfg->drop_privs && geteuid() == 0 && cfg->run_uid != 0;
	r = shk_wait_init(&old);
	if (r == 0)
		r = prepare(s, &l, &prog);
	if (r == 0) {
		l.sigmask = old;
		r = start_child(s, &l);
	}
	if (r == 0) {
		s->stats.cgroup = s->cg.dirfd >= 0;
		s->stats.processes_seen = 1;
		r = loop(s);
		shk_execfast_end(s);
		if (r < 0) {
			/* the loop cannot go on: nothing may run unsupervised */
			shk_tracer_kill_tree(s);
			shk_tracer_watchdog_stop(s);
			while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
				;
		}
		give_back_terminal(s);
		*ret_status = s->child_status;
		shk_held_drop_all(s);
	}
	shk_tracer_watchdog_stop(s);
	shk_waker_stop(s);
	busy = shk_emu_stop(s) < 0;
	shk_netv_teardown(s);
	shk_cgroup_destroy(&s->cg);
	if (s->mask_dir[0])
		rmdir(s->mask_dir);
	if (ret_stats)
		*ret_stats = s->stats;
	if (s->notify_fd >= 0)
		close(s->notify_fd);
	/* The forwarded signals stay blocked: one that arrived after the last
	 * wait would otherwise end the caller before it writes session_end.
	 * Their dispositions are the caller's again. */
	shk_wait_restore();
	if (busy)
		return r; /* a worker still holds s: leave it to process exit */
	for (size_t i = 0; i < s->ex.nappr; i++) {
		free(s->ex.appr[i].cmdline);
		if (s->ex.appr[i].pidfd >= 0)
			close(s->ex.appr[i].pidfd);
	}
	free(s->ex.appr);
	shk_toolproc_free(s);
	shk_openwatch_free(s);
	free(s->tree.tracees);
	shk_tidinfo_free(s);
	shk_net_pidfds_free(s);
	free(s->spare_job); /* released when it was kept */
	free(s->req);
	shk_argv_free(&s->argv);
	free(prog.filter);
	free(s);
	return r;
}
