/* SPDX-License-Identifier: MIT */
/*
 * Calls left waiting by a HOLD verdict (a human has to decide).
 * The seccomp notification stays unanswered — the agent's thread waits in
 * the kernel — and what is needed to answer it later is kept here: the exec
 * approval for the ptrace check, or the network job with its copies. The
 * release runs exactly the path an immediate ALLOW or DENY would have run.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "supervise/internal.h"

int shk_held_add(struct shk_sup *s, const struct shk_held *h)
{
	if (s->hold.nheld == s->hold.cheld) {
		size_t c = s->hold.cheld ? s->hold.cheld * 2 : 16;
		struct shk_held *n = realloc(s->hold.held, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->hold.held = n;
		s->hold.cheld = c;
	}
	s->hold.held[s->hold.nheld++] = *h;
	return 0;
}

static bool take(struct shk_sup *s, uint64_t id, struct shk_held *ret)
{
	for (size_t i = 0; i < s->hold.nheld; i++) {
		if (s->hold.held[i].id != id)
			continue;
		*ret = s->hold.held[i];
		s->hold.held[i] = s->hold.held[--s->hold.nheld];
		return true;
	}
	return false;
}

static int release_exec(struct shk_sup *s, struct shk_held *h, bool allow, int err, uint64_t tool_call)
{
	int r;

	h->ap.tool_call = tool_call;
	if (!allow) {
		free(h->ap.cmdline);
		return shk_notify_deny(s, h->id, err);
	}
	if (shk_exec_approve(s, &h->ap) < 0) {
		free(h->ap.cmdline);
		shk_notify_deny(s, h->id, ENOMEM);
		return -ENOMEM;
	}
	s->stats.allowed++;
	r = shk_notify_respond(s->notify_fd, h->id, 0, 0, true);
	if (r < 0)
		shk_exec_forget(s, h->ap.tid);
	else
		shk_toolproc_answered(s, h->ap.tid);
	return r;
}

static int release_net(struct shk_sup *s, struct shk_held *h, bool allow, int err,
                       const struct sockaddr_storage *to, socklen_t tolen)
{
	struct shk_emu_job *j = h->job;
	int r;

	if (!allow) {
		r = shk_notify_deny(s, h->id, err);
		shk_emu_job_free(j);
		return r;
	}
	if (to && tolen) {
		/* modify: only a connect the supervisor performs can be redirected */
		if (j->nr != SYS_connect || j->nmsgs != 1 || tolen > sizeof(j->msgs[0].addr)) {
			shk_notify_deny(s, h->id, EPERM);
			shk_emu_job_free(j);
			return -EINVAL;
		}
		if (to->ss_family == AF_INET && j->family == AF_INET6 &&
		    tolen >= sizeof(struct sockaddr_in)) {
			/* an IPv4 destination for an IPv6 socket: v4-mapped */
			const struct sockaddr_in *in = (const struct sockaddr_in *)to;
			struct sockaddr_in6 m6 = { .sin6_family = AF_INET6, .sin6_port = in->sin_port };
			m6.sin6_addr.s6_addr[10] = m6.sin6_addr.s6_addr[11] = 0xff;
			memcpy(&m6.sin6_addr.s6_addr[12], &in->sin_addr, 4);
			memcpy(&j->msgs[0].addr, &m6, sizeof(m6));
			j->msgs[0].addrlen = sizeof(m6);
		} else if (to->ss_family != j->family) {
			shk_notify_deny(s, h->id, EAFNOSUPPORT);
			shk_emu_job_free(j);
			return -EAFNOSUPPORT;
		} else {
			memcpy(&j->msgs[0].addr, to, tolen);
			j->msgs[0].addrlen = tolen;
		}
		j->msgs[0].has_addr = true;
		if (j->msgs[0].pathfd >= 0)
			close(j->msgs[0].pathfd);
		j->msgs[0].pathfd = -1;
	}
	s->stats.allowed++;
	shk_net_perform(s, j);
	return 0;
}

int shk_sup_release(struct shk_sup *s, uint64_t id, bool allow, int err,
                    const struct sockaddr_storage *to, socklen_t tolen, uint64_t tool_call)
{
	struct shk_held h;
	int r;

	if (!take(s, id, &h))
		return -ENOENT;
	if (err <= 0)
		err = EPERM;
	r = h.exec ? release_exec(s, &h, allow, err, tool_call) : release_net(s, &h, allow, err, to, tolen);
	return r == -ENOENT ? -ESRCH : r;
}

/*
 * Would the thread act on a signal now? SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
 * keeps a received call waiting through every signal but SIGKILL, and the
 * agent is ptraced, so even a fatal SIGTERM is not fast-tracked: without this
 * check a held thread would sit on its signal until the hold ends.
 * Actionable: pending (thread or process), not blocked, and either caught or
 * not ignored — by SIG_IGN or by default (SIGCHLD, SIGCONT, SIGURG, SIGWINCH).
 */
static bool signal_pending(pid_t tid)
{
	const uint64_t dfl_ignore = (1ULL << (SIGCHLD - 1)) | (1ULL << (SIGCONT - 1)) |
	                            (1ULL << (SIGURG - 1)) | (1ULL << (SIGWINCH - 1));
	unsigned long long pnd = 0, shd = 0, blk = 0, ign = 0, cgt = 0;
	char p[64], line[256];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)tid);
	if (!(f = fopen(p, "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "SigPnd: %llx", &pnd);
		sscanf(line, "ShdPnd: %llx", &shd);
		sscanf(line, "SigBlk: %llx", &blk);
		sscanf(line, "SigIgn: %llx", &ign);
		sscanf(line, "SigCgt: %llx", &cgt);
	}
	fclose(f);
	return ((pnd | shd) & ~blk & (cgt | ~(ign | dfl_ignore))) != 0;
}

static pid_t held_tid(const struct shk_held *h)
{
	return h->exec ? h->ap.tid : h->job->tid;
}

bool shk_sup_waiting(struct shk_sup *s, uint64_t id)
{
	struct shk_held h;

	if (ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
		return false;
	for (size_t i = 0; i < s->hold.nheld; i++) {
		if (s->hold.held[i].id != id || !signal_pending(held_tid(&s->hold.held[i])))
			continue;
		/* interrupted: the call ends with EINTR, the handler runs */
		if (take(s, id, &h)) {
			shk_notify_respond(s->notify_fd, id, 0, -EINTR, false);
			if (h.exec)
				free(h.ap.cmdline);
			else
				shk_emu_job_free(h.job);
		}
		return false;
	}
	return true;
}

/* The session is over: whatever is still held is denied (the tree is dead). */
void shk_held_drop_all(struct shk_sup *s)
{
	while (s->hold.nheld > 0) {
		struct shk_held *h = &s->hold.held[s->hold.nheld - 1];
		shk_notify_respond(s->notify_fd, h->id, 0, -EPERM, false);
		if (h->exec)
			free(h->ap.cmdline);
		else
			shk_emu_job_free(h->job);
		s->hold.nheld--;
	}
	free(s->hold.held);
	s->hold.held = NULL;
	s->hold.cheld = 0;
}
