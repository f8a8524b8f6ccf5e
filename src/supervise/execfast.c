/* SPDX-License-Identifier: MIT */
/*
 * Lazy mode: an approved exec verified in the kernel (bpf/execverify.bpf.c,
 * src/ebpf/execverify.c) instead of at a ptrace exec stop (docs/exec.md,
 * "Verification in the kernel"). The approval (image, working directory,
 * argv and environment bytes) is armed under the thread's tid before the
 * CONTINUE answer; at sched_process_exec the kernel compares what it
 * really loaded and copied and kills the new image before its first
 * instruction on any difference. No seize, no exec stop, no detach: three
 * ptrace calls and two wake-ups of the loop less per exec.
 *
 * What only the exec stop can do keeps it: "#!" scripts and loaders (their
 * names are watched after the exec), scripts run through a descriptor,
 * threads that are our tracees already (their exec stop comes anyway),
 * strings too long for the map, and images or working directories on
 * filesystems whose stat() does not give the kernel's device and inode
 * (overlayfs, btrfs: every exec there would be killed).
 *
 * The program is loaded on a thread of its own at the second exec of the
 * session (the BTF parse takes tens of ms: a one-exec session never pays
 * it, and no exec waits for it); until it is attached, the exec stop does
 * the work.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "ebpf/execverify.h"
#include "supervise/internal.h"

/* The load, shared with its thread: whoever drops the last reference frees
 * it (the session may end before the BTF is parsed). */
struct shk_xf_load {
	atomic_int refs;
	atomic_bool done;
	int cgfd;
	int err;
	struct shk_execverify *ev;
};

static void load_unref(struct shk_xf_load *l)
{
	if (atomic_fetch_sub(&l->refs, 1) != 1)
		return;
	shk_execverify_free(l->ev);
	if (l->cgfd >= 0)
		close(l->cgfd);
	free(l);
}

static void *load_main(void *p)
{
	struct shk_xf_load *l = p;

	l->err = shk_execverify_open(l->cgfd, &l->ev);
	atomic_store(&l->done, true);
	load_unref(l);
	return NULL;
}

static struct shk_xf_load *load_new(struct shk_sup *s, int refs)
{
	struct shk_xf_load *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	atomic_init(&l->refs, refs);
	atomic_init(&l->done, false);
	if ((l->cgfd = fcntl(s->cg.dirfd, F_DUPFD_CLOEXEC, 3)) < 0) {
		free(l);
		return NULL;
	}
	return l;
}

static void load_start(struct shk_sup *s)
{
	struct shk_xf_load *l = load_new(s, 2);
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	int r;

	s->xf.started = true;
	if (!l)
		return;
	/* signals stay the loop thread's (wait.c) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &a, load_main, l);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		close(l->cgfd);
		free(l);
		return;
	}
	s->xf.load = l;
}

/* The program, once its thread has attached it; NULL until then. */
static struct shk_execverify *ready(struct shk_sup *s)
{
	struct shk_xf_load *l = s->xf.load;

	if (s->xf.ev || !l || !atomic_load(&l->done))
		return s->xf.ev;
	if (l->err < 0) {
		/* the exec stop stays for the whole session */
		s->stats.exec_kernel_err = -l->err;
		load_unref(l);
		s->xf.load = NULL;
		return NULL;
	}
	s->stats.exec_bpf = true;
	return s->xf.ev = l->ev;
}

int shk_execfast_setup(struct shk_sup *s)
{
	struct shk_xf_load *l;

	if (s->cfg->exec_verify == SHK_EXEC_VERIFY_AUTO)
		return 0; /* loaded at the second exec */
	s->xf.started = true;
	if (s->cfg->exec_verify == SHK_EXEC_VERIFY_PTRACE)
		return 0;
	if (!s->lazy) {
		fprintf(stderr, "shackle-run: --exec-verify=bpf: needs root running the agent as "
		        "another user in a cgroup leaf with cgroup.kill (docs/exec.md, lazy mode)\n");
		return -EOPNOTSUPP;
	}
	if (!(l = load_new(s, 1)))
		return -ENOMEM;
	l->err = shk_execverify_open(l->cgfd, &l->ev);
	atomic_store(&l->done, true);
	s->xf.load = l;
	if (!ready(s)) {
		fprintf(stderr, "shackle-run: --exec-verify=bpf: cannot load or attach the exec "
		        "check: %s\n", strerror(s->stats.exec_kernel_err));
		return -s->stats.exec_kernel_err;
	}
	return 0;
}

/* Filesystems on which stat() gives the inode and s_dev the kernel's
 * bprm->file has; a device is looked up once, by fstatfs of fd or, without
 * one, statfs of tid's working directory. */
static bool fs_ok(struct shk_sup *s, dev_t dev, int fd, pid_t tid)
{
	struct statfs sf;
	char cwd[64];
	unsigned i;
	bool ok;

	for (i = 0; i < s->xf.nfs; i++)
		if (s->xf.fs[i].dev == dev)
			return s->xf.fs[i].ok;
	snprintf(cwd, sizeof(cwd), "/proc/%d/cwd", (int)tid);
	if ((fd >= 0 ? fstatfs(fd, &sf) : statfs(cwd, &sf)) < 0)
		return false;
	ok = sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC ||
	     sf.f_type == TMPFS_MAGIC;
	i = s->xf.nfs < SHK_XF_FS ? s->xf.nfs++ : (s->xf.fs_next++ % SHK_XF_FS);
	s->xf.fs[i].dev = dev;
	s->xf.fs[i].ok = ok;
	return ok;
}

/* An exec stop will come for this thread whatever we arm. */
static bool traced(const struct shk_sup *s, pid_t tid)
{
	if (tid == s->child)
		return true; /* seized at launch */
	for (size_t i = 0; i < s->tree.ntracees; i++)
		if (s->tree.tracees[i] == tid)
			return true;
	for (size_t i = 0; i < s->tree.nstrays; i++)
		if (s->tree.strays[i] == tid)
			return true;
	return false;
}

static bool eligible(struct shk_sup *s, const struct shk_exec_approval *ap)
{
	const struct shk_obs_exec *x = &s->obs.exec;

	if (x->ninterp || ap->script || ap->nbind || ap->watch_open || ap->script_via_fd ||
	    ap->userland || x->loader_name || traced(s, ap->tid) ||
	    !shk_execverify_fits(ap->cmdline_len, ap->env_len))
		return false;
	return fs_ok(s, ap->dev, x->file.fd, ap->tid) && fs_ok(s, ap->cwd_dev, -1, ap->tid);
}

static void pend_drop(struct shk_sup *s, size_t i)
{
	struct shk_xf_pending *p = &s->xf.pend[i];

	if (p->pidfd >= 0)
		close(p->pidfd);
	*p = s->xf.pend[--s->xf.npend];
}

/*
 * A slot for tid (its own old one, replaced), or NULL when full. An
 * approval whose exec the kernel failed stays armed until its thread execs
 * again (which replaces it, or forgets it on the way to the exec stop):
 * none is ever dropped while its exec may be under way, since the kernel
 * lets an exec without an approval run unchecked. Once the slots are full
 * of such approvals, execs take the exec stop.
 */
static struct shk_xf_pending *pend_slot(struct shk_sup *s, pid_t tid)
{
	if (s->xf.npend == SHK_XF_MAX)
		shk_execfast_drain(s); /* execs done since this call's own drain */
	for (size_t i = 0; i < s->xf.npend; i++)
		if (s->xf.pend[i].tid == tid) {
			pend_drop(s, i);
			break;
		}
	if (s->xf.npend == SHK_XF_MAX)
		return NULL;
	return &s->xf.pend[s->xf.npend++];
}

/* The pidfd of a tool call's process, valid once ID_VALID says the caller
 * still waits in the notification: the observation's own (exec.c
 * leader_pidfd), or opened now for a caller that does not lead its group. */
static int tool_pidfd(struct shk_sup *s, const struct seccomp_notif *req,
                      struct shk_exec_approval *ap)
{
	int fd;

	if (ap->pidfd >= 0 && ap->pid == ap->tid)
		return shk_take_fd(&ap->pidfd);
	if ((fd = (int)syscall(SYS_pidfd_open, ap->pid, 0)) < 0)
		return -1;
	if (ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Arm and answer. 1: answered (or the thread is gone); 0: use the exec stop. */
static int arm(struct shk_sup *s, const struct seccomp_notif *req, struct shk_exec_approval *ap)
{
	struct shk_execverify_want w = {
		.cookie = ++s->xf.cookie, .dev = ap->dev, .ino = ap->ino,
		.cwd_dev = ap->cwd_dev, .cwd_ino = ap->cwd_ino,
		.argv = ap->cmdline, .argv_len = ap->cmdline_len,
		.env = ap->cmdline + ap->cmdline_len + ap->loader_env_len, .env_len = ap->env_len,
	};
	struct shk_xf_pending *p = pend_slot(s, ap->tid);
	bool tool = ap->tool_call && ap->pid > 0 && ap->pid != s->child;

	if (!p)
		return 0;
	*p = (struct shk_xf_pending){ .cookie = w.cookie, .tid = ap->tid, .pid = ap->pid,
	                              .tool_call = ap->tool_call, .pidfd = -1 };
	/* the thread is blocked in the notification until we answer, and only
	 * its death ends that: still valid after the open, the pidfd is of
	 * its process */
	if ((tool && (p->pidfd = tool_pidfd(s, req, ap)) < 0) ||
	    shk_execverify_arm(s->xf.ev, ap->tid, &w) < 0) {
		/* the exec stop checks it: no approval of before may stay armed */
		(void)shk_execverify_disarm(s->xf.ev, ap->tid);
		pend_drop(s, (size_t)(p - s->xf.pend));
		return 0;
	}
	if (shk_notify_respond(s->notify_fd, req->id, 0, 0, true) < 0) {
		(void)shk_execverify_disarm(s->xf.ev, ap->tid);
		pend_drop(s, (size_t)(p - s->xf.pend));
		s->stats.gone++;
	}
	return 1;
}

int shk_execfast_try(struct shk_sup *s, const struct seccomp_notif *req,
                     struct shk_exec_approval *ap)
{
	if (!s->lazy)
		return 0;
	if (!s->xf.started) {
		if (++s->xf.execs >= 2)
			load_start(s);
		return 0;
	}
	if (!ready(s) || !eligible(s, ap))
		return 0;
	return arm(s, req, ap);
}

static void on_event(void *ctx, uint64_t cookie, pid_t tid, pid_t pid, unsigned why)
{
	struct shk_sup *s = ctx;
	struct shk_xf_pending *p = NULL;

	for (size_t i = 0; i < s->xf.npend && !p; i++)
		if (s->xf.pend[i].cookie == cookie && s->xf.pend[i].tid == tid)
			p = &s->xf.pend[i];
	if (why) {
		s->stats.exec_killed++;
		s->stats.exec_killed_in_kernel++;
	} else {
		s->stats.exec_verified++;
		s->stats.exec_in_kernel++;
		s->stats.processes_seen++;
		/* the executable changed; a non-leader's tid is gone */
		shk_tidinfo_forget(s, pid);
		shk_tidinfo_forget(s, tid);
		if (p && p->tool_call)
			shk_toolproc_add(s, pid, p->tool_call, pid == p->pid ? shk_take_fd(&p->pidfd) : -1);
	}
	if (p)
		pend_drop(s, (size_t)(p - s->xf.pend));
}

void shk_execfast_drain(struct shk_sup *s)
{
	if (s->xf.ev && s->xf.npend)
		(void)shk_execverify_drain(s->xf.ev, on_event, s);
}

void shk_execfast_forget(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->xf.npend; i++)
		if (s->xf.pend[i].tid == tid) {
			(void)shk_execverify_disarm(s->xf.ev, tid);
			pend_drop(s, i);
			return;
		}
}

void shk_execfast_end(struct shk_sup *s)
{
	shk_execfast_drain(s);
	if (s->xf.ev) {
		uint64_t lost = shk_execverify_lost(s->xf.ev);

		s->stats.exec_killed += lost;
		s->stats.exec_killed_in_kernel += lost;
	}
	while (s->xf.npend)
		pend_drop(s, 0);
	if (s->xf.load)
		load_unref(s->xf.load);
	s->xf.load = NULL;
	s->xf.ev = NULL;
}
