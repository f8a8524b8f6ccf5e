/* SPDX-License-Identifier: MIT */
/*
 * The agent's tree lives in a cgroup v2 leaf below the supervisor's own
 * cgroup: setsid and double-fork cannot leave it, cgroup.kill ends it at once.
 * The cgroup2 mount is discovered from /proc/self/mountinfo (util/cgroup2.c:
 * it is not always /sys/fs/cgroup).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "supervise/internal.h"
#include "supervise/stale.h"
#include "util/cgroup2.h"

int shk_cgroup_parent(char *buf, size_t len)
{
	return shk_cgroup2_self(buf, len);
}

int shk_cgroup_create(struct shk_cgroup *cg, const char *name)
{
	char parent[3072];
	int r;

	cg->dirfd = -1;
	if ((r = shk_cgroup_parent(parent, sizeof(parent))) < 0)
		return r;
	if ((size_t)snprintf(cg->path, sizeof(cg->path), "%s/%s", parent, name) >= sizeof(cg->path))
		return -ENAMETOOLONG;
	if (mkdir(cg->path, 0755) < 0)
		return -errno;
	cg->dirfd = open(cg->path, O_DIRECTORY | O_CLOEXEC);
	if (cg->dirfd < 0) {
		r = -errno;
		rmdir(cg->path);
		return r;
	}
	return 0;
}

static int write_at(int dirfd, const char *file, const char *text)
{
	_cleanup_close_ int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		return -errno;
	return 0;
}

int shk_cgroup_add(struct shk_cgroup *cg, pid_t pid)
{
	char buf[32];

	if (cg->dirfd < 0)
		return -EBADF;
	snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	return write_at(cg->dirfd, "cgroup.procs", buf);
}

/* Calls fn for every pid in cgroup.procs; returns the count or -errno. */
static int for_each_pid(struct shk_cgroup *cg, bool kill_them)
{
	int fd = openat(cg->dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f;
	int pid, n = 0;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (fscanf(f, "%d", &pid) == 1) {
		n++;
		if (kill_them)
			kill(pid, SIGKILL);
	}
	fclose(f);
	return n;
}

int shk_cgroup_kill(struct shk_cgroup *cg)
{
	int r;

	if (cg->dirfd < 0)
		return -EBADF;
	r = write_at(cg->dirfd, "cgroup.kill", "1");
	if (r == 0)
		return 0;
	/* Before 5.14: freeze so nothing forks while we kill, then SIGKILL. */
	write_at(cg->dirfd, "cgroup.freeze", "1");
	r = for_each_pid(cg, true);
	write_at(cg->dirfd, "cgroup.freeze", "0");
	return r < 0 ? r : 0;
}

int shk_cgroup_count(struct shk_cgroup *cg)
{
	if (cg->dirfd < 0)
		return -EBADF;
	return for_each_pid(cg, false);
}

void shk_cgroup_destroy(struct shk_cgroup *cg)
{
	if (cg->dirfd < 0)
		return;
	close(cg->dirfd);
	cg->dirfd = -1;
	rmdir(cg->path); /* EBUSY if a process is still inside; nothing to do then */
}
