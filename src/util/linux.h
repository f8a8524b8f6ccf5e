/* SPDX-License-Identifier: MIT */
/*
 * The Linux helpers every layer above the pure core shares, once: cleanup
 * attributes (systemd style: variables start at NULL or -EBADF), a write
 * that finishes, the wall clock, and seccomp constants newer than some
 * distributions' headers. Header-only.
 */
#ifndef SHACKLE_UTIL_LINUX_H
#define SHACKLE_UTIL_LINUX_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/seccomp.h>

static inline void shk_freep(void *p)
{
	free(*(void **)p);
}

/* close() keeps errno: a cleanup must not change the error being returned */
static inline void shk_closep(int *fd)
{
	if (*fd >= 0) {
		int e = errno;

		close(*fd);
		errno = e;
	}
}

static inline void shk_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void shk_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_free_ __attribute__((cleanup(shk_freep)))
#define _cleanup_close_ __attribute__((cleanup(shk_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(shk_fclosep)))
#define _cleanup_closedir_ __attribute__((cleanup(shk_closedirp)))

/* Hand over ownership of an fd held by a _cleanup_close_ variable. */
static inline int shk_take_fd(int *fd)
{
	int r = *fd;

	*fd = -EBADF;
	return r;
}

/* All of buf, across short writes and EINTR; 0 or -errno. On a socket
 * (sock) with send() and MSG_NOSIGNAL, not write(): a peer gone mid-answer
 * must be an EPIPE here, not a SIGPIPE for the process. */
static inline int shk_put_all(int fd, const void *buf, size_t len, bool sock)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static inline int shk_write_all(int fd, const void *buf, size_t len)
{
	return shk_put_all(fd, buf, len, false);
}

static inline int shk_send_all(int fd, const void *buf, size_t len)
{
	return shk_put_all(fd, buf, len, true);
}

/* Wall-clock time in ns since the epoch: what audit entries carry. */
static inline int64_t shk_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Linux 6.6; Debian 12's headers predate it. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#endif
