/* SPDX-License-Identifier: MIT */
/*
 * Human approval in attach mode. The kernel answers first: a call whose rule
 * says "hitl" (or that decide() sends to a person) has already failed with
 * EPERM when its event arrives. The pipeline holds it on shackle-run's
 * operator channel (judge/hitl.c) with a "notification id" of our own;
 * the kernel hooks below answer it:
 *   release(allow)  the human decision and decide()'s answer (Rule 4) are in
 *                   the log: a single-use allow entry for exactly that
 *                   destination (cgroup, family, address, port, protocol,
 *                   operation), bound to the call's args digest, goes into
 *                   the kernel; the agent's retry takes it;
 *   release(deny)   reject or expiry: nothing is installed;
 *   waiting         the held call is ours until it is answered.
 * An exec is held the same way (the tracepoint has killed it, or the LSM
 * hook refused it): its approval is bound in the kernel to the cgroup, the
 * image (device, inode) and the argv bytes, which the exec tracepoint
 * compares in the new image's memory. An exec whose argv the event does not
 * carry whole (longer than SHK_EBPF_EXEC_ONCE_ARGS_MAX, or refused by the LSM
 * hook, which cannot read it) cannot be bound: it is blocked at once, and
 * attach says why.
 * The retry's event (reason SHK_EBPF_R_ONCE) is judged as its own call with
 * static action allow under the rule "hitl-approval:NONCE", at no cost (the
 * approval's decision charged it), and must carry the approved digest.
 * An approval nobody uses within hitl_timeout_s is withdrawn.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/hitl.h"

#define STR_(x) #x
#define STR(x) STR_(x)

struct rec {
	bool used, approved, taken;
	int kind;                     /* SHK_EBPF_EV_NET / SHK_EBPF_EV_EXEC */
	uint64_t notif_id, nonce;
	struct shk_ebpf_dest dest;    /* net */
	struct shk_ebpf_exec_key exec; /* exec: cgroup and image ... */
	char args[SHK_EBPF_EXEC_ONCE_ARGS_MAX]; /* ... and argv */
	size_t args_len;
	char digest[SHK_SHA256_HEX_LEN + 1];
	int64_t approved_mono;
	char rule[48];
};

struct attach_hitl {
	struct shk_pipeline *p;
	struct shk_attach_io io;
	shk_ebpf *e;
	struct rec *recs;
	size_t cap;
	uint64_t last_id;
	uint64_t holding;       /* notif id offered to the judge, 0: none */
	struct rec *consuming;  /* the approval the judged retry took */
};

void attach_say(const struct shk_attach_io *io, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	io->say(io->ctx, line);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The kernel entry carries the first 8 bytes of the digest. */
static uint64_t digest64(const char *hex)
{
	char head[17] = { 0 };

	memcpy(head, hex, strnlen(hex, 16));
	return strtoull(head, NULL, 16);
}

static bool same_dest(const struct shk_ebpf_dest *a, const struct shk_ebpf_dest *b)
{
	return a->cgroup_id == b->cgroup_id && a->family == b->family && a->port == b->port &&
	       a->proto == b->proto && a->op == b->op && !memcmp(a->addr, b->addr, 16);
}

/* The call of the event is this record's (what the kernel entry is bound to). */
static bool same_call(const struct rec *r, const struct shk_ebpf_event *ev)
{
	if (r->kind != ev->kind)
		return false;
	if (ev->kind == SHK_EBPF_EV_NET)
		return same_dest(&r->dest, &ev->dest);
	return r->exec.cgroup_id == ev->cgroup_id && r->exec.dev == ev->dev && r->exec.ino == ev->ino &&
	       r->args_len == ev->args_len && !memcmp(r->args, ev->args, ev->args_len);
}

static struct rec *find_call(struct attach_hitl *ah, const struct shk_ebpf_event *ev, bool approved)
{
	for (size_t i = 0; i < ah->cap; i++)
		if (ah->recs[i].used && ah->recs[i].approved == approved && same_call(&ah->recs[i], ev))
			return &ah->recs[i];
	return NULL;
}

/* Why an exec cannot be bound to its argv in the kernel ("": it can). */
static const char *exec_unbindable(const struct shk_ebpf_event *ev)
{
	if (ev->lsm)
		return "the LSM hook refused it before its argv was readable";
	if (ev->args_truncated || ev->args_len > SHK_EBPF_EXEC_ONCE_ARGS_MAX)
		return "its argv is longer than the " STR(SHK_EBPF_EXEC_ONCE_ARGS_MAX)
		       " bytes the kernel compares";
	if (!ev->args_len)
		return "its argv was not readable";
	return "";
}

static struct rec *find_id(struct attach_hitl *ah, uint64_t id)
{
	for (size_t i = 0; i < ah->cap; i++)
		if (ah->recs[i].used && !ah->recs[i].approved && ah->recs[i].notif_id == id)
			return &ah->recs[i];
	return NULL;
}

static struct rec *free_rec(struct attach_hitl *ah)
{
	for (size_t i = 0; i < ah->cap; i++)
		if (!ah->recs[i].used)
			return &ah->recs[i];
	return NULL;
}

/* ---- the "kernel" of a held call --------------------------------------------- */

static int k_release(void *ctx, uint64_t id, bool allow, int deny_errno, const struct sockaddr_storage *to,
                     socklen_t tolen, uint64_t tool_call)
{
	struct attach_hitl *ah = ctx;
	struct rec *r = find_id(ah, id);
	int ret;

	(void)deny_errno;
	(void)tool_call; /* attach sees no process tree */
	(void)to; /* modify is refused for everything but a held connect the
	           * supervisor performs itself: never the case here */
	(void)tolen;
	if (!r)
		return -ENOENT;
	if (!allow) {
		memset(r, 0, sizeof(*r)); /* the kernel denied it already */
		return 0;
	}
	ret = r->kind == SHK_EBPF_EV_NET
	      ? shk_ebpf_allow_once(ah->e, &r->dest, digest64(r->digest))
	      : shk_ebpf_allow_exec_once(ah->e, &r->exec, r->args, r->args_len, digest64(r->digest));
	if (ret < 0) {
		/* logged as released, but the retry is held again: fail closed */
		attach_say(&ah->io, "approval of call %" PRIu64 " could not be installed in "
		        "the kernel (%s): its retry is judged again", r->nonce, strerror(-ret));
		memset(r, 0, sizeof(*r));
		return ret;
	}
	r->approved = true;
	r->approved_mono = mono_ns();
	snprintf(r->rule, sizeof(r->rule), "hitl-approval:%" PRIu64, r->nonce);
	return 0;
}

static bool k_waiting(void *ctx, uint64_t id)
{
	return find_id(ctx, id) != NULL;
}

/* ---- around the judge ---------------------------------------------------------- */

void attach_hitl_before(struct attach_hitl *ah, const struct shk_ebpf_event *ev, struct shk_obs *obs)
{
	obs->can_hold = false;
	obs->notif_id = 0;
	if (!ah)
		return;
	ah->holding = 0;
	ah->consuming = NULL;
	ah->p->approval_rule = NULL;
	if (ev->reason == SHK_EBPF_R_ONCE) {
		ah->consuming = find_call(ah, ev, true);
		if (ah->consuming)
			ah->p->approval_rule = ah->consuming->rule;
		return;
	}
	/* a call the kernel let through happened: nothing left to approve; a
	 * call that already waits for a person is not asked twice; an exec
	 * that cannot be bound to its argv cannot be approved; without the
	 * channel (withdrawn) nobody can answer; while an approval of the same
	 * call waits (an open breaker refused it) a second one could not be
	 * installed */
	if (!ah->p->hitl || ev->verdict == SHK_EBPF_ALLOW || find_call(ah, ev, false) ||
	    find_call(ah, ev, true) || !free_rec(ah) ||
	    (ev->kind == SHK_EBPF_EV_EXEC && exec_unbindable(ev)[0]))
		return;
	obs->can_hold = true;
	obs->notif_id = ah->holding = ++ah->last_id;
}

/*
 * The retry took the approval: it must be the approved call. A network
 * call's params are its destination, which the kernel entry is keyed on: its
 * digest must be the approved one. An exec's params also carry its cwd and
 * the name it was called by, which the kernel does not bind (and which are
 * read from /proc, racing the process): the kernel bound cgroup, image and
 * argv, and a different digest is reported, not fatal.
 */
static int consumed(struct attach_hitl *ah, const struct shk_ebpf_event *ev)
{
	struct shk_pipeline *p = ah->p;
	struct rec *r = ah->consuming;
	const char *logged = p->ntrace ? p->trace[(p->ntrace - 1) % SHK_PIPE_TRACE].params_hash : "";
	bool same = strcmp(logged, r->digest) == 0;
	bool ok = ev->once_digest == digest64(r->digest) && (same || r->kind == SHK_EBPF_EV_EXEC);

	if (!same)
		attach_say(&ah->io, "the %s that took the approval of call %" PRIu64
		        " has args digest %.16s, not the approved %.16s%s",
		        r->kind == SHK_EBPF_EV_NET ? "call" : "exec", r->nonce, logged, r->digest,
		        ok ? " (same cgroup, image and argv; its cwd or the name it was called by differ)" : "");
	memset(r, 0, sizeof(*r));
	ah->consuming = NULL;
	return ok ? 0 : -EPROTO;
}

/* A HITL exec that could not be held was blocked at once (logged as expired). */
static void tell_unbindable(struct attach_hitl *ah, const struct shk_ebpf_event *ev)
{
	shk_pending pend;
	char name[512];

	if (ev->kind != SHK_EBPF_EV_EXEC || ev->verdict == SHK_EBPF_ALLOW || !exec_unbindable(ev)[0] ||
	    shk_session_pending_get(ah->p->session, ah->p->next_nonce, &pend) < 0 ||
	    pend.status != SHK_PENDING_EXPIRED)
		return;
	attach_say(&ah->io, "exec of %s (call %" PRIu64 ") needs a human but cannot be "
	        "approved in attach mode: %s; it stays killed",
	        ah->io.text(ev->filename, name, sizeof(name)), pend.nonce, exec_unbindable(ev));
}

int attach_hitl_after(struct attach_hitl *ah, const struct shk_ebpf_event *ev, const struct shk_judgement *j)
{
	shk_pending pend;
	struct rec *r;

	if (ah)
		ah->p->approval_rule = NULL;
	if (ev->reason == SHK_EBPF_R_ONCE)
		return ah && ah->consuming ? consumed(ah, ev) : -EPROTO; /* never given by us */
	if (ah && j->verdict != SHK_JUDGE_HOLD)
		tell_unbindable(ah, ev);
	if (!ah || j->verdict != SHK_JUDGE_HOLD || !ah->holding || !(r = free_rec(ah)))
		return 0;
	/* the held call's nonce is the last one the pipeline issued */
	if (shk_session_pending_get(ah->p->session, ah->p->next_nonce, &pend) < 0)
		return -ENOENT;
	memset(r, 0, sizeof(*r));
	r->used = true;
	r->notif_id = ah->holding;
	r->nonce = pend.nonce;
	r->kind = ev->kind;
	r->dest = ev->dest;
	if (ev->kind == SHK_EBPF_EV_EXEC) {
		r->exec = (struct shk_ebpf_exec_key){ ev->cgroup_id, ev->dev, ev->ino };
		memcpy(r->args, ev->args, ev->args_len); /* <= the maximum: before() checked */
		r->args_len = ev->args_len;
	}
	snprintf(r->digest, sizeof(r->digest), "%s", pend.params_digest);
	ah->holding = 0;
	return 0;
}

/* ---- loop --------------------------------------------------------------------------- */

/*
 * Takes an approved, unused entry back out of the kernel: 0 (the record is
 * cleared), 1 when a retry took it already (the record stays for its event,
 * which is on the way and is judged under the approval), or a negative errno
 * (the entry may still let a call pass).
 */
static int withdraw_one(struct attach_hitl *ah, struct rec *r)
{
	int ret = r->kind == SHK_EBPF_EV_NET ? shk_ebpf_revoke_once(ah->e, &r->dest)
	                                     : shk_ebpf_revoke_exec_once(ah->e, &r->exec, r->args,
	                                                                 r->args_len);

	if (ret == -ENOENT) {
		r->taken = true;
		return 1;
	}
	if (ret == 0)
		memset(r, 0, sizeof(*r));
	return ret;
}

void attach_hitl_tick(struct attach_hitl *ah)
{
	int64_t window = (int64_t)shk_policy_guard(ah->p->policy)->hitl_timeout_s * 1000000000LL;
	int64_t now = mono_ns();

	if (ah->p->hitl)
		shk_hitl_tick(ah->p->hitl);
	for (size_t i = 0; i < ah->cap; i++) {
		struct rec *r = &ah->recs[i];
		uint64_t nonce = r->nonce;
		int ret;

		if (!r->used || !r->approved || r->taken || now - r->approved_mono < window)
			continue;
		if ((ret = withdraw_one(ah, r)) == 1)
			continue;
		attach_say(&ah->io, "the approval of call %" PRIu64 " was not used within "
		        "%" PRId64 " s and %s", nonce, (int64_t)(window / 1000000000LL),
		        ret == 0 ? "is withdrawn" : "could not be withdrawn");
	}
}

int attach_hitl_withdraw(struct attach_hitl *ah)
{
	int first = 0;

	if (!ah)
		return 0;
	shk_hitl_close(ah->p->hitl); /* waiting calls are cancelled in the log */
	ah->p->hitl = NULL;
	for (size_t i = 0; i < ah->cap; i++) {
		struct rec *r = &ah->recs[i];
		uint64_t nonce = r->nonce;
		int ret;

		if (!r->used || r->taken)
			continue;
		if (!r->approved) {
			memset(r, 0, sizeof(*r)); /* held: cancelled above */
			continue;
		}
		ret = withdraw_one(ah, r);
		if (ret == 0)
			attach_say(&ah->io, "the approval of call %" PRIu64 " is withdrawn "
			        "unused: the operator channel is closed", nonce);
		if (ret < 0) {
			attach_say(&ah->io, "the approval of call %" PRIu64 " could not be "
			        "withdrawn: %s", nonce, strerror(-ret));
			if (!first)
				first = ret;
		}
	}
	return first;
}

int attach_hitl_handle(struct attach_hitl *ah)
{
	return ah->p->hitl ? shk_hitl_handle(ah->p->hitl) : 0;
}

int attach_hitl_fd(const struct attach_hitl *ah)
{
	return ah->p->hitl ? shk_hitl_fd(ah->p->hitl) : -1;
}

int attach_hitl_open(struct shk_judged *js, shk_ebpf *e, const struct attach_hitl_options *o,
                     struct attach_hitl **ret)
{
	struct attach_hitl *ah = calloc(1, sizeof(*ah));
	size_t max = js->cfg.max_pending ? js->cfg.max_pending : 64;
	char *canon;
	struct shk_hitl_options ho = { .control_path = o->control_path, .notice = o->io->notice,
	                               .notice_ctx = o->io->ctx };
	int r;

	*ret = NULL;
	if (!ah)
		return -ENOMEM;
	/* held calls and approvals waiting for their retry */
	ah->cap = 2 * max;
	ah->recs = calloc(ah->cap, sizeof(*ah->recs));
	ah->p = &js->pipe;
	ah->io = *o->io;
	ah->e = e;
	ho.kernel = (struct shk_hitl_kernel){ .ctx = ah, .release = k_release, .waiting = k_waiting };
	r = ah->recs ? shk_judged_open_channel(js, o->session_id, ho) : -ENOMEM;
	if (r < 0) {
		free(ah->recs);
		free(ah);
		return r;
	}
	/* canonical, as /proc/PID/cgroup spells it: the peer check compares strings */
	canon = realpath(o->cgroup, NULL);
	shk_hitl_set_agent(js->pipe.hitl, 0, canon ? canon : o->cgroup);
	free(canon);
	*ret = ah;
	return 0;
}

void attach_hitl_close(struct attach_hitl *ah)
{
	if (!ah)
		return;
	(void)attach_hitl_withdraw(ah); /* says on stderr what could not be withdrawn */
	ah->p->approval_rule = NULL;
	free(ah->recs);
	free(ah);
}
