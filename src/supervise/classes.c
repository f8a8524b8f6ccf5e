/* SPDX-License-Identifier: MIT */
/*
 * The syscall classes the agent's calls are judged in: one row per notified
 * syscall with the kind of observation it becomes, how the filter notifies
 * it, how it is observed and answered, and the wake-up the loop prefers for
 * it (wait.c). filter.c builds its notify rules from this table, notify.c
 * dispatches on it and net.c takes the network operation from it; a new
 * class is one row, its observer and its policy matcher (judge/kinds.c).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "supervise/internal.h"

/* What the exec handler does with the opened image: released after the
 * answer, the closes are off the agent's wait. */
static int handle_exec(struct shk_sup *s, const struct seccomp_notif *req)
{
	int r = shk_exec_handle(s, req);

	shk_exec_obs_release(s);
	return r;
}

static const struct shk_sys_class classes[] = {
	/* An exec's thread is the one woken by our answer; a network call's
	 * often waits on the same CPU (wait.c, "Waiting"). */
	{ SYS_execve, "execve", SHK_OBS_EXEC, 0, SHK_NOTIFY_ALWAYS, handle_exec, false },
	{ SYS_execveat, "execveat", SHK_OBS_EXEC, 0, SHK_NOTIFY_ALWAYS, handle_exec, false },
	{ SYS_connect, "connect", SHK_OBS_NET, SHK_OBS_CONNECT, SHK_NOTIFY_ALWAYS, shk_net_handle, true },
	{ SYS_bind, "bind", SHK_OBS_NET, SHK_OBS_BIND, SHK_NOTIFY_ALWAYS, shk_net_handle, true },
	{ SYS_listen, "listen", SHK_OBS_NET, SHK_OBS_LISTEN, SHK_NOTIFY_ALWAYS, shk_net_handle, true },
	/* sendto without an address and without MSG_FASTOPEN cannot choose a
	 * destination: it stays in the kernel at full speed */
	{ SYS_sendto, "sendto", SHK_OBS_NET, SHK_OBS_SENDTO, SHK_NOTIFY_SENDTO_DEST, shk_net_handle, true },
	{ SYS_sendmsg, "sendmsg", SHK_OBS_NET, SHK_OBS_SENDMSG, SHK_NOTIFY_ALWAYS, shk_net_handle, true },
	{ SYS_sendmmsg, "sendmmsg", SHK_OBS_NET, SHK_OBS_SENDMSG, SHK_NOTIFY_ALWAYS, shk_net_handle, true },
};

const struct shk_sys_class *shk_sys_class_of(int nr)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (classes[i].nr == nr)
			return &classes[i];
	return NULL;
}

const struct shk_sys_class *shk_sys_class_at(size_t i)
{
	return i < sizeof(classes) / sizeof(classes[0]) ? &classes[i] : NULL;
}
