/* SPDX-License-Identifier: MIT */
/* Cleanup helpers for src/ebpf (systemd style: variables start at NULL/-EBADF). */
#ifndef SHACKLE_EBPF_UTIL_H
#define SHACKLE_EBPF_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void shk_ebpf_freep(void *p)
{
	free(*(void **)p);
}

static inline void shk_ebpf_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;

		close(*fd);
		errno = saved;
	}
}

static inline void shk_ebpf_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void shk_ebpf_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_free_ __attribute__((cleanup(shk_ebpf_freep)))
#define _cleanup_close_ __attribute__((cleanup(shk_ebpf_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(shk_ebpf_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(shk_ebpf_closedirp)))

/* Hand over ownership of an fd held by a _cleanup_close_ variable. */
static inline int shk_ebpf_take_fd(int *fd)
{
	int r = *fd;

	*fd = -EBADF;
	return r;
}

#endif
