/* SPDX-License-Identifier: MIT */
/* The attach's scan for listeners that listen already (loader.h; docs/ebpf.md,
 * "Limits", the listen gate): one thread enters the network namespace of
 * every process. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ebpf/loader.h"
#include "util/linux.h"
#include "shackle.skel.h"

/* One run of shk_scan_listeners over the calling thread's network namespace. */
static int scan_once(struct bpf_link *iter)
{
	_cleanup_close_ int fd = bpf_iter_create(bpf_link__fd(iter));
	char buf[256];
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	return n < 0 ? -errno : 0;
}

struct scan_job {
	struct bpf_link *iter;
	ino_t *seen;   /* namespaces scanned (nsfs inode numbers) */
	size_t nseen;
	uint64_t unentered;
	int unentered_errno;
	int r;
};

/*
 * A namespace this process may not open or enter (another user namespace's;
 * a process ptrace access is refused for: a Landlock domain it is outside
 * of, Yama) is skipped and counted: its listeners below the attach point
 * stay unmarked, which the gate drops for, and the count says why. An
 * unopenable one has no inode to tell it from one already scanned, so the
 * count is of processes, not namespaces.
 */
static int skip_or_fail(struct scan_job *j, int err)
{
	if (err == ENOENT || err == ESRCH)
		return 0; /* the process is gone */
	if (err != EACCES && err != EPERM)
		return -err;
	j->unentered++;
	j->unentered_errno = err;
	return 0;
}

/* Scan pid's network namespace unless it was scanned already. */
static int scan_netns_of(struct scan_job *j, const char *pid)
{
	_cleanup_close_ int fd = -1;
	char p[300];
	struct stat st;
	ino_t *more;

	snprintf(p, sizeof(p), "/proc/%.255s/ns/net", pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return skip_or_fail(j, errno);
	if (fstat(fd, &st) < 0)
		return -errno;
	for (size_t i = 0; i < j->nseen; i++)
		if (j->seen[i] == st.st_ino)
			return 0;
	if (!(more = realloc(j->seen, (j->nseen + 1) * sizeof(*more))))
		return -ENOMEM;
	j->seen = more;
	j->seen[j->nseen++] = st.st_ino;
	/* this thread's namespace only: the caller's other threads keep theirs */
	if (setns(fd, CLONE_NEWNET) < 0)
		return skip_or_fail(j, errno);
	return scan_once(j->iter);
}

/*
 * iter/tcp walks the namespace of the thread that opens it: this thread
 * enters, in turn, the namespace of every process (a socket below the
 * attach point may be in any of them, its owner may have left the cgroup)
 * and exits with the namespaces it took.
 */
static void *scan_thread(void *arg)
{
	struct scan_job *j = arg;
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d) {
		j->r = -errno;
		return NULL;
	}
	while (j->r == 0 && (errno = 0, de = readdir(d)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
			j->r = scan_netns_of(j, de->d_name);
	if (j->r == 0 && errno)
		j->r = -errno;
	return NULL;
}

/* The gate drops for every unmarked listener: run with the hooks attached,
 * so that a listen() after the scan is marked by its callback and none
 * falls between the two. */
int shk_ebpf_scan_listeners(struct shackle_bpf *skel, int cgroup_fd, uint64_t *ret_unentered,
			    int *ret_errno)
{
	struct scan_job j = { 0 };
	struct stat st;
	pthread_t t;
	int r;

	if (fstat(cgroup_fd, &st) < 0)
		return -errno;
	skel->bss->scan_cgroup_id = (uint64_t)st.st_ino; /* as shk_cgroup_id() */
	j.iter = bpf_program__attach_iter(skel->progs.shk_scan_listeners, NULL);
	if (!j.iter)
		return errno ? -errno : -EINVAL;
	if ((r = -pthread_create(&t, NULL, scan_thread, &j)) == 0) {
		(void)pthread_join(t, NULL);
		r = j.r;
		*ret_unentered = j.unentered;
		*ret_errno = j.unentered_errno;
	}
	free(j.seen);
	bpf_link__destroy(j.iter);
	return r;
}
