/* SPDX-License-Identifier: MIT */
/*
 * One seccomp notification (received by wait.c): observe, judge, enforce. The answer on every error path is a
 * denial; a notification whose target is gone needs no answer at all.
 */
#include <errno.h>
#include <string.h>
#include <linux/audit.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

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

int shk_judge(struct shk_sup *s, struct shk_judgement *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	r = s->cfg->judge(s->cfg->judge_ctx, &s->obs, ret);
	if (r < 0 || (ret->verdict != SHK_JUDGE_ALLOW && ret->verdict != SHK_JUDGE_DENY &&
	              !(ret->verdict == SHK_JUDGE_HOLD && s->obs.can_hold))) {
		ret->verdict = SHK_JUDGE_DENY;
		ret->deny_errno = EPERM;
	}
	if (ret->verdict == SHK_JUDGE_DENY && ret->deny_errno <= 0)
		ret->deny_errno = EPERM;
	if (ret->verdict == SHK_JUDGE_ALLOW)
		s->stats.allowed++;
	return 0;
}

/* Errors that mean "the kernel would have refused this too": answered as
 * such, without a tool call (PATH lookups produce many ENOENTs). */
static bool plain_failure(int r)
{
	switch (-r) {
	case ENOENT: case ENOTDIR: case EACCES: case ELOOP: case ENAMETOOLONG:
	case EFAULT: case E2BIG: case EINVAL: case ENOEXEC:
		return true;
	}
	return false;
}

static int exec_verdict(struct shk_sup *s, const struct seccomp_notif *req,
                        struct shk_exec_approval *ap, int *ret_err)
{
	struct shk_judgement v;
	int r = shk_exec_observe(s, req, ap);

	if (r == -ESRCH)
		return r;
	if (r < 0) {
		*ret_err = -r;
		return plain_failure(r) ? -EAGAIN : -EPERM;
	}
	s->obs.notif_id = req->id;
	s->obs.can_hold = true;
	shk_judge(s, &v);
	if (v.verdict == SHK_JUDGE_HOLD)
		return 1;
	if (v.verdict != SHK_JUDGE_ALLOW) {
		*ret_err = v.deny_errno;
		return -EPERM;
	}
	return 0;
}

static int answer_exec(struct shk_sup *s, const struct seccomp_notif *req)
{
	struct shk_exec_approval ap;
	int err = EPERM;
	int r = exec_verdict(s, req, &ap, &err);

	if (r == 1) {
		/* held for a human: the approval waits with the notification */
		struct shk_held h = { .id = req->id, .exec = true, .ap = ap };
		if (shk_held_add(s, &h) == 0)
			return 0;
		r = -ENOMEM;
	}
	if (r == 0 && shk_exec_approve(s, &ap) < 0) /* recorded before CONTINUE */
		r = -ENOMEM;
	free(ap.cmdline);
	if (r == -ESRCH) {
		s->stats.gone++;
		return 0;
	}
	if (r == -EAGAIN)
		return shk_notify_fail(s, req->id, err), 0;
	if (r < 0)
		return shk_notify_deny(s, req->id, r == -ENOMEM ? ENOMEM : err), 0;
	if (shk_notify_respond(s->notify_fd, req->id, 0, 0, true) < 0) {
		shk_exec_forget(s, ap.tid);
		s->stats.gone++;
	}
	return 0;
}

/* What the observation holds (the opened image, its interpreters) is
 * released after the answer: the closes are off the agent's wait. */
static int handle_exec(struct shk_sup *s, const struct seccomp_notif *req)
{
	int r = answer_exec(s, req);

	shk_exec_obs_release(s);
	return r;
}

/* s->req as received by shk_wait_notif (wait.c) */
int shk_notify_dispatch(struct shk_sup *s)
{
	struct seccomp_notif *req = s->req;

	s->stats.notifications++;
	/* other ABIs are killed by the filter; never judge a foreign number */
	if (req->data.arch != AUDIT_ARCH_X86_64)
		return shk_notify_deny(s, req->id, EPERM), 0;
	switch (req->data.nr) {
	case SYS_execve:
	case SYS_execveat:
		shk_wait_prefer_sync(s, false);
		return handle_exec(s, req);
	case SYS_connect:
	case SYS_bind:
	case SYS_listen:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_sendmmsg:
		shk_wait_prefer_sync(s, true);
		return shk_net_handle(s, req);
	default:
		shk_notify_deny(s, req->id, EPERM);
		return 0;
	}
}
