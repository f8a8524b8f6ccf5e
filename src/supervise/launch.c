/* SPDX-License-Identifier: MIT */
/*
 * Starting the agent. The child puts itself under PDEATHSIG, waits until the
 * supervisor has placed it in its cgroup and seized it with ptrace, drops to
 * the agent's uid, sets no_new_privs, installs the filter (which returns the
 * listener fd) and tells the supervisor the fd number with write() — not with
 * sendmsg, which the new filter would hold for a listener nobody reads yet.
 * The supervisor takes the listener with pidfd_getfd and only then lets the
 * child exec; that execve is the first judged call.
 *
 * The child may be the child of a raw clone3 of this threaded process
 * (shk_launch_fork), which finds glibc's locks as the other threads held
 * them: from the clone to its execve it allocates nothing, opens no stdio
 * stream, translates no message and makes its credential calls as plain
 * syscalls (glibc's setuid family would signal the parent's threads).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <linux/landlock.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>

#include "supervise/internal.h"
#include "supervise/launch.h"

extern char **environ;

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/*
 * Without root the agent has our uid. In a user namespace of its own (only
 * our uid mapped) with a private mount namespace, each protected file is
 * covered by a read-only bind mount of an empty mode-000 memfd: reads fail
 * with EACCES, writes with EROFS. The exec that follows drops every
 * capability in that namespace, so the agent cannot unmount the cover, and
 * the filter forbids new user namespaces. The supervisor, outside, keeps
 * writing the real files through the fds it holds.
 */
static int mask_files(const struct shk_launch *l)
{
	char map[64], src[PATH_MAX];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd, r = 0;

	if (!l->mask_dir)
		return -ENOTDIR;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -errno;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if ((r = write_file("/proc/self/uid_map", map)) < 0 ||
	    (r = write_file("/proc/self/setgroups", "deny")) < 0)
		return r;
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	if ((r = write_file("/proc/self/gid_map", map)) < 0)
		return r;
	prctl(PR_SET_DUMPABLE, 1);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	/* the cover: an empty mode-000 file on a tmpfs of this namespace (a
	 * bind source must be a mount of the namespace; a memfd is not) */
	if (mount("shackle-mask", l->mask_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          "size=4k,mode=0700") < 0)
		return -errno;
	snprintf(src, sizeof(src), "%s/cover", l->mask_dir);
	fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	close(fd);
	for (size_t i = 0; i < l->nmask && r == 0; i++) {
		struct stat st;

		if (stat(l->mask_paths[i], &st) < 0) {
			r = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			/* a whole directory (the default state dir): an empty,
			 * read-only, mode-000 tmpfs on top of it */
			if (mount("shackle-mask", l->mask_paths[i], "tmpfs",
			          MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=000") < 0)
				r = -errno;
		} else if (mount(src, l->mask_paths[i], NULL, MS_BIND, NULL) < 0 ||
		           mount(NULL, l->mask_paths[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) {
			r = -errno;
		}
	}
	umount2(l->mask_dir, MNT_DETACH);
	return r < 0 ? r : 1;
}

/* The kernel's record of getdents64 (linux_dirent64; glibc has no type) */
struct shk_dirent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* One rule per entry of / but proc: what is beneath may be written.
 * getdents64 into a static buffer, not opendir: nothing is allocated. */
static int grant_top(int rs, int root, __u64 access)
{
	static char buf[8192] __attribute__((aligned(8)));
	long n;

	while ((n = syscall(SYS_getdents64, root, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const struct shk_dirent64 *e = (const void *)(buf + off);
			struct landlock_path_beneath_attr pb = { .allowed_access = access };
			struct stat st;
			int r = 0;

			off += e->reclen;
			if (!strcmp(e->name, ".") || !strcmp(e->name, "..") || !strcmp(e->name, "proc"))
				continue;
			pb.parent_fd = openat(root, e->name, O_PATH | O_CLOEXEC);
			if (pb.parent_fd < 0)
				continue; /* gone, or a dangling link: nothing to write there */
			/* REFER applies to directories only; a file at the top gets WRITE_FILE */
			if (fstat(pb.parent_fd, &st) == 0 && !S_ISDIR(st.st_mode))
				pb.allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE;
			if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
				r = -errno;
			close(pb.parent_fd);
			if (r < 0)
				return r;
		}
	}
	return n < 0 ? -errno : 0;
}

/*
 * No file under /proc may be opened for writing by the agent's tree
 * (Landlock, inherited by every descendant and never lifted). A process may
 * open /proc/CHILD/mem of its own child (same uid, dumpable after exec) and
 * rewrite, after the exec stop verified them and before the new image reads
 * them, the argv and environment on the child's stack: a denied argv and
 * an LD_PRELOAD would run that way. ptrace and
 * process_vm_writev are refused by the filter; this closes the file route.
 * Writing stays allowed beneath every other top-level directory; pipes,
 * sockets and terminals reopened through /proc/self/fd resolve to what they
 * are and are unaffected. 1: in force; -errno: not available (said so).
 */
static int guard_proc(void)
{
	/* Reparenting (a rename or link into another directory) is refused
	 * by any ruleset unless it handles and grants REFER (ABI 2, 5.19):
	 * without it git, pip and mv across directories would fail with EXDEV,
	 * so ABI 1 gets no guard at all. */
	const __u64 access = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REFER;
	struct landlock_ruleset_attr ra = { .handled_access_fs = access };
	long abi;
	int rs, root, r = 0;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0)
		return -errno;
	if (abi < 2)
		return -EOPNOTSUPP;
	rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
	if (rs < 0)
		return -errno;
	if ((root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = -errno;
		close(rs);
		return r;
	}
	r = grant_top(rs, root, access);
	close(root);
	if (r == 0 && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		r = -errno;
	close(rs);
	return r < 0 ? r : 1;
}

static void child_fail(const struct shk_launch *l, int err)
{
	static struct shk_handshake h; /* PATH_MAX: not on the stack */

	h.listener = -1;
	h.err = err;
	memcpy(h.path, l->path, sizeof(h.path));
	if (write(l->sock, &h, sizeof(h)) < 0)
		_exit(127);
	_exit(127);
}

/*
 * PATH lookup as the agent, with its credentials already in place: what
 * it cannot search or execute is skipped, as execvp does, so that a
 * directory only root may enter first in root's PATH (pyenv shims under
 * /root) does not hide /usr/bin/python3 from an agent that runs as nobody.
 * Done here, so that the single execve of the result is the call that is
 * judged (and verified at its exec stop). 0; -EACCES with the first
 * candidate refused in l->path; -ENOENT.
 */
static int find_program(struct shk_launch *l)
{
	const char *p = l->search, *name = l->argv[0];
	char cand[PATH_MAX];
	struct stat st;
	int r = -ENOENT;

	l->path[0] = 0;
	if (strchr(name, '/')) {
		if ((size_t)snprintf(l->path, sizeof(l->path), "%s", name) >= sizeof(l->path))
			return -ENAMETOOLONG;
		return 0;
	}
	while (*p) {
		size_t dl = strcspn(p, ":");
		bool fits = (size_t)snprintf(cand, sizeof(cand), "%.*s/%s", (int)dl, dl ? p : ".", name) <
		            sizeof(cand);
		bool found = fits && stat(cand, &st) == 0;

		if (found && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
			memcpy(l->path, cand, sizeof(cand));
			return 0;
		}
		/* there, but not for the agent: remembered, as execvp does */
		if (fits && r == -ENOENT && (found || errno == EACCES)) {
			memcpy(l->path, cand, sizeof(cand));
			r = -EACCES;
		}
		p += dl + (p[dl] == ':');
	}
	return r;
}

static int install_filter(const struct sock_fprog *prog, int *killable)
{
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	                  SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
	                  prog);
	*killable = 1;
	if (fd < 0 && errno == EINVAL) {
		/* before 5.19: a signal can interrupt a held call (see docs) */
		*killable = 0;
		fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		             prog);
	}
	return fd < 0 ? -errno : (int)fd;
}

/* Another user than the one who started us cannot write where tools keep
 * their state (a coding agent's ~/.claude, git's checks of the repository):
 * the supervisor says so once, before the agent starts. */
static int unwritable(void)
{
	const char *home = getenv("HOME");
	int r = 0;

	if (home && home[0] == '/' && access(home, W_OK) < 0)
		r |= SHK_UNWRITABLE_HOME;
	if (access(".", W_OK) < 0)
		r |= SHK_UNWRITABLE_CWD;
	return r;
}

__attribute__((noreturn))
void shk_launch_child(struct shk_launch *l)
{
	static struct shk_handshake h;
	char go;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != l->parent)
		_exit(127);
	/* the supervisor made itself non-dumpable, and fork copied that; the
	 * agent must stay traceable (exec makes it dumpable again anyway) */
	prctl(PR_SET_DUMPABLE, 1);
	setpgid(0, 0);
	if (read(l->sock, &go, 1) != 1)
		_exit(127);
	if (l->drop) {
		if (syscall(SYS_setgroups, 1, &l->gid) < 0 ||
		    syscall(SYS_setresgid, l->gid, l->gid, l->gid) < 0 ||
		    syscall(SYS_setresuid, l->uid, l->uid, l->uid) < 0)
			child_fail(l, errno);
		/* a credential change clears the death signal: set it again */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != l->parent)
			_exit(127);
	}
	if ((r = find_program(l)) < 0)
		child_fail(l, -r);
	if (l->drop)
		h.unwritable = unwritable();
	/* a failed cover is reported; the agent still runs (weaker, said so) */
	if (!l->drop && l->nmask > 0 && geteuid() != 0)
		h.masked = mask_files(l);
	signal(SIGPIPE, SIG_DFL);
	shk_wait_restore();
	sigprocmask(SIG_SETMASK, &l->sigmask, NULL);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(l, errno);
	/* after no_new_privs (Landlock needs it), before the filter */
	h.proc_guard = guard_proc();
	h.listener = install_filter(l->prog, &h.wait_killable);
	if (h.listener < 0)
		child_fail(l, -h.listener);
	if (write(l->sock, &h, sizeof(h)) != sizeof(h))
		_exit(127);
	if (read(l->sock, &go, 1) != 1)
		_exit(127);
	close(h.listener);
	close(l->sock);
	execve(l->path, l->argv, environ);
	{
		int e = errno;
		char msg[PATH_MAX + 128];
		int n = snprintf(msg, sizeof(msg), "shackle-run: %s: %s%s%s\n", l->path,
		                 strerrordesc_np(e) ? strerrordesc_np(e) : "cannot execute",
		                 l->user ? " for user " : "", l->user ? l->user : "");
		if (write(STDERR_FILENO, msg, n > 0 ? (size_t)n : 0) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
}

/*
 * With a cgroup leaf the child is born in it: clone3 with CLONE_INTO_CGROUP
 * (Linux 5.7). Moved in afterwards, through cgroup.procs, it waited for the
 * kernel: a migration takes cgroup_threadgroup_rwsem for writing, and
 * percpu_down_write waits for an RCU grace period (5-22 ms of every start on
 * a 2-vCPU guest, the largest single wait of shackle-run's start-up). Not
 * glibc's fork: see the top of this file for what the child may do.
 *
 * When clone3 fails, a plain fork, and the caller moves the child in. A
 * kernel without clone3 says ENOSYS (before 5.3), one whose clone3 has no
 * cgroup field E2BIG (5.3-5.6): the move then works. A leaf that takes no
 * process is refused by the same checks on both routes (the kernel's
 * cgroup_css_set_fork and __cgroup_procs_write both call
 * cgroup_attach_permissions): EOPNOTSUPP for a "domain invalid" leaf (made
 * below a threaded cgroup), EBUSY for one with controllers in its
 * subtree_control, EACCES/EPERM (ENOENT under nsdelegate) when we may not
 * write cgroup.procs of the common ancestor, ENODEV/ENOENT when the leaf
 * was removed. The fork is made for those too: the move's errno is the
 * kernel's last word whatever clone3's was, and the child waits for our
 * byte before anything; a refused move fails the start (run.c place_child).
 */
pid_t shk_launch_fork(int cgroup_fd, int *clone_err)
{
	struct clone_args a = {
		.flags = CLONE_INTO_CGROUP,
		.exit_signal = SIGCHLD,
		.cgroup = (uint64_t)cgroup_fd,
	};
	long pid;

	*clone_err = -EBADF;
	if (cgroup_fd >= 0) {
		pid = syscall(SYS_clone3, &a, sizeof(a));
		if (pid >= 0) {
			*clone_err = 0;
			return (pid_t)pid;
		}
		*clone_err = -errno;
	}
	pid = fork();
	return pid < 0 ? -errno : (pid_t)pid;
}

/* Read the child's handshake while still answering ptrace stops. */
int shk_launch_wait(struct shk_sup *s, int sock, void *buf, size_t len)
{
	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		int r = shk_wait_poll(&p, 1);

		if (r < 0)
			return r;
		if (r > 0 && p.revents) {
			ssize_t n = read(sock, buf, len);
			return n == (ssize_t)len ? 0 : -EPROTO;
		}
		/* only ticks besides signals: the loop watches control and
		 * watchdog, after the handshake */
		shk_sup_forward(s, shk_wait_take());
		shk_tracer_reap(s);
		if (s->child_exited) {
			/* a child that could not start wrote why, then exited:
			 * its SIGCHLD may come before the poll saw the line */
			ssize_t n = recv(sock, buf, len, MSG_DONTWAIT);

			return n == (ssize_t)len ? 0 : -ECHILD;
		}
	}
}
