/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_SUPERVISE_LAUNCH_H
#define SHACKLE_SUPERVISE_LAUNCH_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "supervise/internal.h"

/* Everything the forked child needs, prepared before fork (no allocation
 * after fork: the supervisor already has threads). */
struct shk_launch {
	pid_t parent;
	int sock;
	const char *search;      /* PATH, read before fork */
	const char *user;        /* the agent's user in messages; NULL: ours */
	char path[PATH_MAX];     /* the program: argv[0] looked up by the child */
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

/* What the child tells the supervisor once its filter is in place, or why
 * it could not start (err, and the program refused in path). */
struct shk_handshake {
	int listener;
	int wait_killable;
	int err;
	int masked;
	int proc_guard;
	int unwritable;          /* SHK_UNWRITABLE_*: as the agent's user */
	char path[PATH_MAX];
};

#define SHK_UNWRITABLE_HOME 1
#define SHK_UNWRITABLE_CWD 2

/* clone3 into cgroup_fd (>= 0), else fork. *clone_err: 0 when the child
 * was born in cgroup_fd, else clone3's -errno (-EBADF without a cgroup):
 * the caller must then move the child in before letting it go on.
 * The child's pid, 0 in the child, -errno. */
pid_t shk_launch_fork(int cgroup_fd, int *clone_err);
__attribute__((noreturn)) void shk_launch_child(struct shk_launch *l);
int shk_launch_wait(struct shk_sup *s, int sock, void *buf, size_t len);

#endif
