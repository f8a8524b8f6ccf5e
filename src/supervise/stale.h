/* SPDX-License-Identifier: MIT */
#ifndef SHACKLE_SUPERVISE_STALE_H
#define SHACKLE_SUPERVISE_STALE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * What a shackle-run killed with SIGKILL leaves behind: its empty cgroup leaf
 * (shackle-PID-RANDOM) and its operator socket. Removed at the next start
 * and by `shackle doctor --clean`; never anything of a live session.
 * fn (may be NULL) hears of each leftover: err 0 removed, else why it was
 * kept (EBUSY: processes still inside).
 */
typedef void (*shk_stale_fn)(void *ctx, const char *path, int err);

/* The directory shackle-run makes its leaf in (the cgroup2 mount plus our
 * own cgroup). */
int shk_cgroup_parent(char *buf, size_t len);

/* Leaves under dir (and, with deep, in every cgroup below it). Returns how
 * many were removed, or -errno when dir cannot be read. */
int shk_stale_cgroups(const char *dir, bool deep, shk_stale_fn fn, void *ctx);

/* Sockets in an operator directory that nobody serves any more. */
int shk_stale_sockets(const char *dir, shk_stale_fn fn, void *ctx);

#endif
