/* SPDX-License-Identifier: MIT */
/*
 * Credentials. When shackle-run is root and the agent runs as another uid,
 * anything the supervisor does *for* the agent must be done with the agent's
 * identity, or the emulation would lend it root: a unix connect would carry
 * SO_PEERCRED uid 0, a bind could take a port below 1024 or create a socket
 * file owned by root, a path walk could pass directories the agent may not
 * search. Linux credentials are per thread, so the raw syscalls below change
 * only the calling thread (glibc's wrappers would change all of them).
 */
#include <errno.h>
#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervise/internal.h"

int shk_creds_become(uid_t uid, gid_t gid)
{
	if (syscall(SYS_setgroups, 1, &gid) < 0)
		return -errno;
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -errno;
	if (syscall(SYS_setresuid, uid, uid, uid) < 0)
		return -errno;
	/* Leaving uid 0 for good cleared every capability; check it. */
	if (syscall(SYS_setresuid, 0, 0, 0) == 0)
		return -EPERM;
	return 0;
}

static gid_t saved_groups[256];
static int nsaved = -1;

/*
 * Filesystem identity only (fsuid/fsgid and groups): signals and ptrace use
 * the real and effective ids, which stay root, so the agent gains no handle
 * on the loop thread. Changing fsuid away from 0 drops the filesystem
 * capabilities (DAC override, search) of this thread until it is restored.
 */
int shk_creds_enter(struct shk_sup *s)
{
	if (!s->drop_creds)
		return 0;
	if (nsaved < 0) {
		nsaved = getgroups(256, saved_groups);
		if (nsaved < 0)
			return -errno;
	}
	if (syscall(SYS_setgroups, 1, &s->cfg->run_gid) < 0)
		return -errno;
	syscall(SYS_setfsgid, s->cfg->run_gid);
	syscall(SYS_setfsuid, s->cfg->run_uid);
	if ((uid_t)syscall(SYS_setfsuid, -1) != s->cfg->run_uid) {
		shk_creds_leave(s);
		return -EPERM;
	}
	return 0;
}

void shk_creds_leave(struct shk_sup *s)
{
	if (!s->drop_creds)
		return;
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	if (nsaved >= 0)
		syscall(SYS_setgroups, nsaved, saved_groups);
}
