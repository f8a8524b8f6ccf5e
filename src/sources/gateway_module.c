/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sources/gateway_module.h"
#include "util/linux.h"

/* Set by meson: LIBDIR/shackle relative to BINDIR (or absolute). */
#ifndef SHK_GATEWAY_MODULE_DIR
#define SHK_GATEWAY_MODULE_DIR "../lib/shackle"
#endif

static const struct shk_gateway_api *api;

/* The module must be no easier to replace than the executable itself. */
static int trusted(int fd, const struct stat *exe)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_uid != 0 && st.st_uid != geteuid() && st.st_uid != exe->st_uid)
		return -EPERM;
	return st.st_mode & (S_IWGRP | S_IWOTH) ? -EPERM : 0;
}

/* 0: opened; -ENOENT: not there (the next candidate is tried). */
static int try_open(const char *path, const struct stat *exe, char *err, size_t errlen)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	char proc[64];
	void *h;
	int r;

	if (fd < 0) {
		r = -errno;
		if (r != -ENOENT)
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if ((r = trusted(fd, exe)) < 0) {
		snprintf(err, errlen, "%s: %s", path, r == -EPERM ? "refused: owned by another user or "
		         "writable by group or others" : strerror(-r));
		return r;
	}
	/* the file checked is the file loaded: through its descriptor */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	h = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "%s: %s", path, dlerror());
		return -ENOEXEC;
	}
	api = dlsym(h, SHK_GATEWAY_API_SYMBOL);
	if (!api || api->version != SHK_GATEWAY_API_VERSION || api->size != sizeof(*api)) {
		snprintf(err, errlen, "%s: not a gateway module of this shackle (rebuild and "
		         "reinstall both)", path);
		api = NULL;
		return -ENOEXEC;
	}
	return 0;
}

int shk_gateway_module_open(const struct shk_gateway_api **ret, char *err, size_t errlen)
{
	char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
	const char *dirs[] = { SHK_GATEWAY_MODULE_DIR, "." };
	struct stat est;
	ssize_t n;
	int r = -ENOENT;

	if (api)
		return *ret = api, 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || stat("/proc/self/exe", &est) < 0) {
		r = n == 0 ? -ENOENT : -errno;
		snprintf(err, errlen, "/proc/self/exe: %s", strerror(-r));
		return r;
	}
	exe[n] = 0;
	if ((slash = strrchr(exe, '/')))
		*slash = 0;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && r == -ENOENT; i++) {
		if (dirs[i][0] == '/')
			snprintf(path, sizeof(path), "%s/%s", dirs[i], SHK_GATEWAY_MODULE_NAME);
		else
			snprintf(path, sizeof(path), "%s/%s/%s", exe, dirs[i], SHK_GATEWAY_MODULE_NAME);
		r = try_open(path, &est, err, errlen);
	}
	if (r == -ENOENT)
		snprintf(err, errlen, "%s not found in %s/%s or beside the executable in %s (ninja "
		         "install installs it)", SHK_GATEWAY_MODULE_NAME, SHK_GATEWAY_MODULE_DIR[0] == '/' ? "" : exe,
		         SHK_GATEWAY_MODULE_DIR, exe);
	if (r == 0)
		*ret = api;
	return r;
}
