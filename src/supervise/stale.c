/* SPDX-License-Identifier: MIT */
/*
 * Leftovers of a dead shackle-run (stale.h). A leaf is its supervisor's
 * when the pid in its name is alive: then it is kept, even if that pid was
 * reused by another process (erring on the side of a live session). A dead
 * pid's leaf is removed only when empty — rmdir refuses a populated cgroup
 * anyway — and not in its first seconds: a shackle-run in another pid
 * namespace names its leaf with a pid we cannot see, and its leaf is empty
 * only between mkdir and moving the agent in.
 *
 * A socket is stale when no socket is bound to its path (/proc/net/unix
 * lists every bound one, listening or not yet) and a connect is refused: a
 * session between bind and listen is listed, one in another network
 * namespace answers the connect.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "supervise/internal.h"
#include "supervise/stale.h"

#define MIN_AGE_S 2

static bool leaf_name(const char *name, pid_t *pid)
{
	int p, n = 0;
	unsigned rnd;

	/* shackle-PID-XXXXXXXX, as run.c names it */
	if (sscanf(name, "shackle-%d-%8x%n", &p, &rnd, &n) != 2 || name[n] || p <= 0 ||
	    strlen(strrchr(name, '-') + 1) != 8)
		return false;
	*pid = p;
	return true;
}

static bool pid_dead(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* 0 removed, else why not (kept, or -errno of rmdir). 1: not a dead one's. */
static int try_leaf(int parent, const char *name)
{
	struct stat st;
	pid_t pid;
	int fd, n;
	struct shk_cgroup cg = { .dirfd = -1 };

	if (!leaf_name(name, &pid) || !pid_dead(pid))
		return 1;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return 1;
	if (time(NULL) - st.st_mtime < MIN_AGE_S)
		return 1;
	fd = openat(parent, name, O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cg.dirfd = fd;
	n = shk_cgroup_count(&cg);
	close(fd);
	if (n != 0)
		return n > 0 ? -EBUSY : n;
	return unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int scan(const char *dir, bool deep, int depth, shk_stale_fn fn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	int removed = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		int r;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		r = try_leaf(dirfd(d), e->d_name);
		if (r == 1 && deep && depth < 16) {
			int sub = scan(path, deep, depth + 1, fn, ctx);
			removed += sub > 0 ? sub : 0;
			continue;
		}
		if (r == 1)
			continue;
		if (fn)
			fn(ctx, path, -r);
		removed += r == 0;
	}
	closedir(d);
	return removed;
}

int shk_stale_cgroups(const char *dir, bool deep, shk_stale_fn fn, void *ctx)
{
	return scan(dir, deep, 0, fn, ctx);
}

/* Is a socket bound to path in this network namespace? */
static bool bound(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char line[4096 + 128];
	size_t len = strlen(path);
	bool found = false;

	if (!f)
		return true; /* cannot tell: keep it */
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t n = p ? strcspn(p, "\n") : 0;

		found = p && n == len && !memcmp(p, path, len);
	}
	fclose(f);
	return found;
}

static bool refused(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(a.sun_path))
		return false;
	memcpy(a.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? errno : 0;
	close(fd);
	return r == ECONNREFUSED;
}

int shk_stale_sockets(const char *dir, shk_stale_fn fn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	int removed = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;

		if (n < 6 || strcmp(e->d_name + n - 5, ".sock") != 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path))
			continue;
		if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (bound(path) || !refused(path))
			continue;
		if (unlink(path) < 0) {
			if (fn)
				fn(ctx, path, errno);
			continue;
		}
		if (fn)
			fn(ctx, path, 0);
		removed++;
	}
	closedir(d);
	return removed;
}
