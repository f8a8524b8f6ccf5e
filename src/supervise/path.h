/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_SUPERVISE_PATH_H
#define SHACKLE_SUPERVISE_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct shk_sup;

/*
 * Open (dirfd, path) as thread tid of the agent would resolve it; an empty
 * path means dirfd itself (AT_EMPTY_PATH). oflags usually O_PATH [|
 * O_NOFOLLOW | O_DIRECTORY]. as_agent walks with the agent's filesystem
 * identity. Returns an fd or -errno.
 */
int shk_path_open(struct shk_sup *s, pid_t tid, int target_dirfd, const char *path, int oflags,
                  bool as_agent);

/* Canonical name of an fd of ours (readlink of /proc/self/fd/N). */
int shk_fd_name(int fd, char *buf, size_t len);

/* readlink of /proc/TID/what into buf ("" on failure). */
int shk_proc_link(pid_t tid, const char *what, char *buf, size_t len);
/* Thread group of a thread, or -1. */
pid_t shk_proc_tgid(pid_t tid);

/* s->obs.pid and s->obs.exe of a thread about to exec: from the cache when
 * there, else read; nothing is cached (see shk_tidinfo_fill). leader: the
 * caller knows tid leads its thread group (no tgkill). */
void shk_tidinfo_peek(struct shk_sup *s, pid_t tid, bool leader);

#endif
