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
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervise/internal.h"

/*
 * An emulation worker acts with the agent's effective ids but keeps real and
 * saved uid 0. The kernel lets a process signal a thread only when one of
 * the sender's real/effective uids equals the target's real or saved uid
 * (kill_ok_by_cred), so no process of the agent's uid, inside the tree or
 * outside it, can stop or kill a worker and with it shackle-run; the filter's
 * refusals of signals to our threads (filter.c) are the second line. Going
 * from effective uid 0 to another clears the effective capabilities (not the
 * permitted ones, which only this thread could raise again): a bind below
 * 1024, a unix path walk and SO_PEERCRED all see the agent.
 */
int shk_creds_become(uid_t uid, gid_t gid)
{
	uid_t r, e, sv;
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_setgroups, 1, &gid) < 0)
		return -errno;
	if (syscall(SYS_setresgid, gid, gid, gid) < 0)
		return -errno;
	if (syscall(SYS_setresuid, 0, uid, 0) < 0)
		return -errno;
	/* check what the thread got: the agent's uid, and no effective
	 * capability left (securebits could have kept them) */
	if (syscall(SYS_getresuid, &r, &e, &sv) < 0 || r != 0 || e != uid || sv != 0)
		return -EPERM;
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	return d[0].effective || d[1].effective ? -EPERM : 0;
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
