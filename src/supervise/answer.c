/* SPDX-License-Identifier: MIT */
/*
 * The bottom of the supervisor: how a notification is answered. Every
 * path that answers the kernel (notify.c, net.c, held.c, exec.c) ends here;
 * nothing here calls back up.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "supervise/internal.h"

int shk_notify_respond(int notify_fd, uint64_t id, int64_t val, int err, bool cont)
{
	/* large enough for any kernel's seccomp_notif_resp (checked at start) */
	union {
		struct seccomp_notif_resp r;
		char pad[128];
	} u;

	memset(&u, 0, sizeof(u));
	u.r.id = id;
	u.r.val = cont ? 0 : val;
	u.r.error = cont ? 0 : err;
	u.r.flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
	while (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &u.r) < 0) {
		if (errno == EINTR)
			continue;
		return -errno; /* ENOENT: the target is gone (or was interrupted) */
	}
	return 0;
}

int shk_notify_deny(struct shk_sup *s, uint64_t id, int err)
{
	s->stats.denied++;
	return shk_notify_respond(s->notify_fd, id, 0, -(err > 0 ? err : EPERM), false);
}

/* The kernel would have failed this call too: not a denial of ours. */
int shk_notify_fail(struct shk_sup *s, uint64_t id, int err)
{
	s->stats.failed++;
	return shk_notify_respond(s->notify_fd, id, 0, -(err > 0 ? err : EPERM), false);
}
