/* SPDX-License-Identifier: MIT */
/*
 * One seccomp notification (received by wait.c): its class (classes.c),
 * observed, judged, enforced with the answers of answer.c. The answer on
 * every error path is a denial; a notification whose target is gone needs
 * no answer at all.
 */
#include <errno.h>
#include <string.h>
#include <linux/audit.h>

#include "supervise/internal.h"

int shk_judge(struct shk_sup *s, struct shk_judgement *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	s->obs.tool_call = shk_toolproc_of(s, s->obs.pid);
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
	ap->tool_call = v.tool_call;
	return 0;
}

static int exec_answer(struct shk_sup *s, const struct seccomp_notif *req,
                       struct shk_exec_approval *ap, int r, int err)
{
	if (r == 1) {
		/* held for a human: the approval waits with the notification
		 * (its pidfd, if any, is opened again when it is let go) */
		struct shk_held h = { .id = req->id, .exec = true, .ap = *ap };

		h.ap.pidfd = -1;
		if (shk_held_add(s, &h) == 0) {
			ap->cmdline = NULL;
			return 0;
		}
		r = -ENOMEM;
	}
	if (r == 0 && shk_execfast_try(s, req, ap) == 1)
		return 0;
	if (r == 0 && shk_exec_approve(s, ap) < 0) /* recorded before CONTINUE */
		r = -ENOMEM;
	if (r == -ESRCH) {
		s->stats.gone++;
		return 0;
	}
	if (r == -EAGAIN)
		return shk_notify_fail(s, req->id, err), 0;
	if (r < 0)
		return shk_notify_deny(s, req->id, r == -ENOMEM ? ENOMEM : err), 0;
	if (shk_notify_respond(s->notify_fd, req->id, 0, 0, true) < 0) {
		shk_exec_forget(s, ap->tid);
		s->stats.gone++;
	} else
		shk_toolproc_answered(s, ap->tid);
	return 0;
}

int shk_exec_handle(struct shk_sup *s, const struct seccomp_notif *req)
{
	struct shk_exec_approval ap;
	int err = EPERM;
	int r = exec_verdict(s, req, &ap, &err);

	r = exec_answer(s, req, &ap, r, err);
	/* what no approval took */
	free(ap.cmdline);
	if (ap.pidfd >= 0)
		close(ap.pidfd);
	return r;
}

/* s->req as received by shk_wait_notif (wait.c) */
int shk_notify_dispatch(struct shk_sup *s)
{
	struct seccomp_notif *req = s->req;
	const struct shk_sys_class *c;

	s->stats.notifications++;
	/* a new image's first call is judged knowing its exec was verified */
	shk_execfast_drain(s);
	/* other ABIs are killed by the filter; never judge a foreign number */
	if (req->data.arch != AUDIT_ARCH_X86_64 || !(c = shk_sys_class_of((int)req->data.nr)))
		return shk_notify_deny(s, req->id, EPERM), 0;
	shk_wait_prefer_sync(s, c->sync_wake);
	return c->handle(s, req);
}
