/* SPDX-License-Identifier: MIT */
/*
 * Naming files the way the agent names them. The agent's root, cwd and
 * directory fds are reached through /proc/TID/{root,cwd,fd/N} (opened by the
 * loop with its own rights), then the rest of the path is walked with the
 * agent's filesystem identity where that matters. The result is an O_PATH fd:
 * what is judged (its canonical name, device and inode) and what is used
 * afterwards are the same object, whatever the agent renames meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "supervise/internal.h"
#include "supervise/path.h"

#define SHK_TIDINFO_MAX 1024


static int open_base(pid_t tid, int target_dirfd, const char *path)
{
	char p[64];

	if (path[0] == '/')
		snprintf(p, sizeof(p), "/proc/%d/root", (int)tid);
	else if (target_dirfd == AT_FDCWD)
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)tid);
	else if (target_dirfd >= 0)
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)tid, target_dirfd);
	else
		return -EBADF;
	int fd = open(p, O_PATH | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* path with runs of '/' and "/./" components collapsed, as the kernel's
 * walk treats them: "/proc//self/fd/3" is "/proc/self/fd/3" to the agent.
 * Returns false when it does not fit. */
static bool collapse(const char *path, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = path; *p;) {
		if (*p == '/' && o > 0 && out[o - 1] == '/') {
			p++;
		} else if (*p == '.' && o > 0 && out[o - 1] == '/' && (p[1] == '/' || p[1] == 0)) {
			p += p[1] ? 2 : 1;
		} else {
			if (o + 1 >= len)
				return false;
			out[o++] = *p++;
		}
	}
	out[o] = 0;
	return true;
}

/*
 * Names that mean "the caller" mean the agent's thread here, not us:
 * /proc/self, /proc/thread-self, /dev/fd, /dev/std{in,out,err}, however
 * they are spelt with '/' and '.'. A name that reaches /proc/self another
 * way ("..", a symlink) is still resolved as ours: for a file the kernel
 * execs, the exec stop then sees another inode and kills (fail-closed); the
 * program ld.so runs is opened differently (exec.c open_loader_target).
 */
static int rewrite_self(pid_t tid, const char *raw, char *out, size_t len)
{
	static const struct {
		const char *prefix, *repl;
	} map[] = {
		{ "/proc/self", "" }, { "/proc/thread-self", "" }, { "/dev/fd", "/fd" },
		{ "/dev/stdin", "/fd/0" }, { "/dev/stdout", "/fd/1" }, { "/dev/stderr", "/fd/2" },
	};
	char path[PATH_MAX];

	if (!collapse(raw, path, sizeof(path)))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t l = strlen(map[i].prefix);
		if (strncmp(path, map[i].prefix, l) == 0 && (path[l] == '/' || path[l] == 0)) {
			if ((size_t)snprintf(out, len, "/proc/%d%s%s", (int)tid, map[i].repl, path + l) >= len)
				return -ENAMETOOLONG;
			return 0;
		}
	}
	if ((size_t)snprintf(out, len, "%s", path) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int shk_path_open(struct shk_sup *s, pid_t tid, int target_dirfd, const char *path, int oflags,
                  bool as_agent)
{
	_cleanup_close_ int base = -EBADF;
	char abs[PATH_MAX + 64];
	int fd, r;

	if (path[0] == 0) {
		/* AT_EMPTY_PATH: the fd itself (a memfd, an O_PATH fd...) */
		if (target_dirfd < 0)
			return -ENOENT;
		return open_base(tid, target_dirfd, "x");
	}
	if (path[0] == '/') {
		/* the agent shares our root: it cannot chroot (no CAP_SYS_CHROOT
		 * as nobody, no user namespaces under the filter) */
		if ((r = rewrite_self(tid, path, abs, sizeof(abs))) < 0)
			return r;
	} else {
		base = open_base(tid, target_dirfd, path);
		if (base < 0)
			return base;
	}
	if (as_agent && (r = shk_creds_enter(s)) < 0)
		return r;
	fd = path[0] == '/' ? open(abs, oflags | O_CLOEXEC) : openat(base, path, oflags | O_CLOEXEC);
	r = fd < 0 ? -errno : fd;
	if (as_agent)
		shk_creds_leave(s);
	return r;
}

int shk_fd_name(int fd, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, buf, len - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	buf[n] = 0;
	return 0;
}

int shk_proc_link(pid_t tid, const char *what, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/%s", (int)tid, what);
	n = readlink(p, buf, len - 1);
	if (n < 0) {
		buf[0] = 0;
		return -errno;
	}
	buf[n] = 0;
	return 0;
}

pid_t shk_proc_tgid(pid_t tid)
{
	char p[64], line[256];
	FILE *f;
	int tgid = -1;

	/* tgkill(tid, tid, 0) finds tid only in the group whose id is tid:
	 * the leader (most callers: one syscall, not the ~18 µs of
	 * formatting /proc/TID/status) */
	if (syscall(SYS_tgkill, tid, tid, 0) == 0)
		return tid;
	snprintf(p, sizeof(p), "/proc/%d/status", (int)tid);
	f = fopen(p, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* A cached entry into s->obs; false when there is none (or it is stale). */
static bool tidinfo_cached(struct shk_sup *s, pid_t tid, bool alive)
{
	struct shk_tidinfo *t = NULL;

	for (size_t i = 0; i < s->tids.ntinfo; i++)
		if (s->tids.tinfo[i].tid == tid)
			t = &s->tids.tinfo[i];
	/* lazy tracing sees no exits of untraced threads: an entry whose
	 * thread is gone may name a reused tid (a pidfd tells, one poll) */
	if (t && !alive && t->pidfd >= 0 && poll(&(struct pollfd){ .fd = t->pidfd, .events = POLLIN }, 1, 0) != 0) {
		shk_tidinfo_forget(s, tid);
		t = NULL;
	}
	if (!t)
		return false;
	s->obs.pid = t->tgid;
	/* exe fits: it was read into this buffer (no snprintf per call) */
	memcpy(s->obs.exe, t->exe, strnlen(t->exe, sizeof(s->obs.exe) - 1) + 1);
	s->obs.exe[sizeof(s->obs.exe) - 1] = 0;
	return true;
}

/*
 * For an exec notification: the entry would be dropped at the exec stop
 * (the executable changes), so none is made and no pidfd opened. The
 * caller checks SECCOMP_IOCTL_NOTIF_ID_VALID after these reads: the thread
 * was blocked in the notification throughout, so they were of that thread.
 */
void shk_tidinfo_peek(struct shk_sup *s, pid_t tid, bool leader)
{
	if (tidinfo_cached(s, tid, false))
		return;
	shk_proc_link(tid, "exe", s->obs.exe, sizeof(s->obs.exe));
	s->obs.pid = leader ? tid : shk_proc_tgid(tid);
}

void shk_tidinfo_fill(struct shk_sup *s, pid_t tid, bool alive)
{
	_cleanup_close_ int pidfd = -EBADF;

	if (tidinfo_cached(s, tid, alive))
		return;
	/* the pidfd first: if it is still open-and-alive after the reads,
	 * they were of this thread */
	if (s->lazy && (pidfd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD)) < 0)
		pidfd = -EBADF;
	shk_proc_link(tid, "exe", s->obs.exe, sizeof(s->obs.exe));
	s->obs.pid = shk_proc_tgid(tid);
	if (s->obs.pid <= 0)
		return; /* not cached: try again next time */
	if (s->lazy && (pidfd < 0 || poll(&(struct pollfd){ .fd = pidfd, .events = POLLIN }, 1, 0) != 0))
		return; /* not cached: no way to see it go */
	/* Threads that ended untraced leave their entries (and pidfds) until
	 * their tid comes back: an agent making threads by the thousand must
	 * not run us out of descriptors. It is a cache: drop one. */
	if (s->tids.ntinfo >= SHK_TIDINFO_MAX)
		shk_tidinfo_forget(s, s->tids.tinfo[0].tid);
	if (s->tids.ntinfo == s->tids.ctinfo) {
		size_t c = s->tids.ctinfo ? s->tids.ctinfo * 2 : 64;
		struct shk_tidinfo *n = realloc(s->tids.tinfo, c * sizeof(*n));
		if (!n)
			return;
		s->tids.tinfo = n;
		s->tids.ctinfo = c;
	}
	char *exe = strdup(s->obs.exe);
	if (!exe)
		return;
	s->tids.tinfo[s->tids.ntinfo++] = (struct shk_tidinfo){ tid, s->obs.pid, exe, shk_take_fd(&pidfd) };
}

void shk_tidinfo_forget(struct shk_sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->tids.ntinfo; i++) {
		if (s->tids.tinfo[i].tid != tid && s->tids.tinfo[i].tgid != tid)
			continue;
		free(s->tids.tinfo[i].exe);
		if (s->tids.tinfo[i].pidfd >= 0)
			close(s->tids.tinfo[i].pidfd);
		s->tids.tinfo[i--] = s->tids.tinfo[--s->tids.ntinfo];
	}
}

void shk_tidinfo_free(struct shk_sup *s)
{
	for (size_t i = 0; i < s->tids.ntinfo; i++) {
		free(s->tids.tinfo[i].exe);
		if (s->tids.tinfo[i].pidfd >= 0)
			close(s->tids.tinfo[i].pidfd);
	}
	free(s->tids.tinfo);
	s->tids.tinfo = NULL;
	s->tids.ntinfo = s->tids.ctinfo = 0;
}
