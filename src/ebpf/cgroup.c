/* SPDX-License-Identifier: MIT */
/* cgroup v2 helpers: discovery, ids, membership and teardown. No libbpf. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "util/cgroup2.h"
#include "util/linux.h"

int shk_cgroup_id(const char *path, uint64_t *ret_id)
{
	struct stat st;

	/* On 64-bit kernels the kernfs inode number is the cgroup id. */
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*ret_id = (uint64_t)st.st_ino;
	return 0;
}

static int write_file_at(const char *dir, const char *name, const char *text)
{
	char p[4096];
	_cleanup_close_ int fd = -EBADF;
	size_t n = strlen(text);

	if (snprintf(p, sizeof(p), "%s/%s", dir, name) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != (ssize_t)n)
		return errno ? -errno : -EIO;
	return 0;
}

int shk_cgroup_enter(const char *path, pid_t pid)
{
	char num[32];

	snprintf(num, sizeof(num), "%d", (int)pid);
	return write_file_at(path, "cgroup.procs", num);
}

/* Kill the members by pid: the fallback for kernels without cgroup.kill. */
static int kill_procs(const char *dir)
{
	char p[4096];
	_cleanup_fclose_ FILE *f = NULL;
	int pid, n = 0;

	if (snprintf(p, sizeof(p), "%s/cgroup.procs", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	f = fopen(p, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &pid) == 1)
		if (pid > 0 && kill(pid, SIGKILL) == 0)
			n++;
	return n;
}

static bool is_populated(const char *dir)
{
	char p[4096], line[128];
	_cleanup_fclose_ FILE *f = NULL;

	if (snprintf(p, sizeof(p), "%s/cgroup.events", dir) >= (int)sizeof(p))
		return false;
	f = fopen(p, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "populated ", 10))
			return line[10] == '1';
	return false;
}

static int remove_rec(const char *dir, int depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int r;

	if (depth > 32)
		return -ELOOP;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char sub[4096];

		if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			return -ENAMETOOLONG;
		r = remove_rec(sub, depth + 1);
		if (r < 0)
			return r;
	}
	if (write_file_at(dir, "cgroup.kill", "1") < 0)
		(void)kill_procs(dir);
	/* Bounded: 5 s for SIGKILLed tasks to leave, re-killing late forks. */
	for (int i = 0; i < 500; i++) {
		if (rmdir(dir) == 0)
			return 0;
		if (errno != EBUSY)
			return -errno;
		if (is_populated(dir) && i % 50 == 49 && write_file_at(dir, "cgroup.kill", "1") < 0)
			(void)kill_procs(dir);
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	return -EBUSY;
}

int shk_cgroup_remove(const char *path)
{
	return remove_rec(path, 0);
}
