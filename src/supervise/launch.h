/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_SUPERVISE_LAUNCH_H
#define SHACKLE_SUPERVISE_LAUNCH_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "supervise/internal.h"

/* Everything the forked child needs, prepared before fork (no allocation
 * after fork: the supervisor already has threads). */
struct shk_launch {
	pid_t parent;
	int sock;
	const char *path;        /* resolved program */
	char *const *argv;
	const struct sock_fprog *prog;
	bool drop;
	uid_t uid;
	gid_t gid;
	sigset_t sigmask;        /* the mask to restore before exec */
	const char *const *mask_paths;
	size_t nmask;
	const char *mask_dir;    /* empty directory the cover tmpfs is mounted on */
};

__attribute__((noreturn)) void shk_launch_child(const struct shk_launch *l);
int shk_launch_find(const char *name, char *out, size_t len);
int shk_launch_wait(struct shk_sup *s, int sock, void *buf, size_t len);

#endif
