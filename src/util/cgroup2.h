/* SPDX-License-Identifier: MIT */
/* cgroup v2 discovery (cgroup2.c); also part of the public API in shackle/ebpf.h. */
#ifndef SHACKLE_UTIL_CGROUP2_H
#define SHACKLE_UTIL_CGROUP2_H

#include <stddef.h>

/* The cgroup2 mount point, unescaped; -ENOENT: none. */
int shk_cgroup2_mount(char *buf, size_t len);
/* Absolute path of the caller's own cgroup v2 directory ("0::" line). */
int shk_cgroup2_self(char *buf, size_t len);

#endif
