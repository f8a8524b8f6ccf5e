/* SPDX-License-Identifier: MIT */
/*
 * The judge as sources other than the kernel see it (judge/source.h): a
 * call of theirs is one more observation (kind SHK_OBS_SOURCE, kinds.c)
 * judged by the same pipeline, in the same session, into the same log.
 *
 * Threads: one mutex (shk_judged.mu) around everything the judge touches
 * -- policy matching, session, ledger, held calls, operator channel -- taken
 * by these functions and by the loop around its judge, tick and channel
 * work (shk_judged_lock). A mutex rather than a queue into the loop: a
 * judgement is microseconds of work that needs no kernel object, so the
 * caller gets its answer without waiting for the loop's next wakeup (up to
 * 50 ms) and the loops need no new fd; the kernel's calls only ever wait
 * for one source's judgement, never for a person. A held call releases the
 * lock while it waits (a condition variable): its answer comes from the
 * loop, which handles the operator channel and expiry (shk_hitl_tick).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "judge/internal.h"
#include "judge/judged.h"
#include "judge/links.h"
#include "judge/source.h"
#include "util/linux.h"

/* A held source call: its caller sleeps on cv until done. */
struct waiter {
	pthread_cond_t *cv;
	bool done, allow;
	shk_reason reason;
};

int shk_source_release(uint64_t notif_id, bool allow, const shk_outcome *o)
{
	struct waiter *w = (struct waiter *)(uintptr_t)notif_id;

	w->done = true;
	w->allow = allow && o && o->verdict == SHK_ALLOW;
	/* no answer of decide() to give (cancelled, a failure on the way):
	 * the call is refused as the judge refuses what it cannot judge */
	w->reason = o ? o->reason : SHK_R_OPAQUE_CONTEXT;
	pthread_cond_broadcast(w->cv);
	return 0;
}

bool shk_source_waiting(uint64_t notif_id)
{
	return !((struct waiter *)(uintptr_t)notif_id)->done;
}

static int source_judge(void *ctx, const struct shk_source_call *call, struct shk_source_answer *ret)
{
	struct shk_judged *js = ctx;
	struct shk_pipeline_verdict v;
	struct waiter w = { .cv = &js->cv };
	struct shk_obs *obs;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->verdict = SHK_DENY;
	if (!call)
		return -EINVAL;
	/* Large (the exec member, 29 KiB): not on a server thread's stack, and
	 * not zeroed whole: a source's call is read through its header and the
	 * source member only (kinds.c), and clearing the rest was most of the
	 * memory a judgement touched. */
	if (!(obs = malloc(sizeof(*obs))))
		return -ENOMEM;
	memset(obs, 0, offsetof(struct shk_obs, source) + sizeof(obs->source));
	obs->kind = SHK_OBS_SOURCE;
	obs->source.call = call;
	obs->can_hold = true;
	obs->notif_id = (uint64_t)(uintptr_t)&w;
	shk_judged_lock(js);
	r = shk_pipeline_judge_obs(&js->pipe, obs, &v);
	/* allowed at once: the exec that carries it out links to it (a held
	 * one is remembered when its approval releases it, judge/hitl.c) */
	if (r == 0 && v.verdict == SHK_ALLOW && !v.held && call->kind == SHK_SOURCE_PROPOSAL)
		shk_links_remember(&js->pipe, call->tool, call->params, v.seq);
	while (r == 0 && v.held && !w.done)
		pthread_cond_wait(&js->cv, &js->mu);
	shk_judged_unlock(js);
	free(obs);
	if (r == 0 && v.held) {
		v.verdict = w.allow ? SHK_ALLOW : SHK_DENY;
		v.reason = w.reason;
	}
	if (r < 0)
		return r;
	/* ALLOW or DENY: a HITL verdict not held was blocked at once */
	ret->verdict = v.verdict == SHK_ALLOW ? SHK_ALLOW : SHK_DENY;
	ret->reason = v.reason;
	ret->nonce = v.nonce;
	memcpy(ret->rule, v.rule, sizeof(ret->rule) < sizeof(v.rule) ? sizeof(ret->rule) : sizeof(v.rule));
	ret->rule[sizeof(ret->rule) - 1] = 0;
	return 0;
}

static int source_settle(void *ctx, uint64_t nonce, double actual_cost_usd, const shk_val *report)
{
	struct shk_judged *js = ctx;
	struct shk_pipeline *p = &js->pipe;
	shk_session_info before, after;
	shk_audit_post_exec e;
	shk_doc *doc = NULL;
	shk_val *shared = NULL;
	size_t carried = 0;
	int r;

	if (!isfinite(actual_cost_usd) || actual_cost_usd < 0)
		return -EINVAL;
	/* refused before the budget moves: an entry that cannot be written
	 * would leave a budget replay cannot re-derive */
	if (report && shk_canon_check(report, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK)
		return -EINVAL;
	shk_judged_lock(js);
	if (!p->ledger || p->ledger_failed) {
		shk_judged_unlock(js);
		return -EIO;
	}
	shk_session_get_info(p->session, &before);
	if ((r = shk_session_post_exec(p->session, nonce, actual_cost_usd)) < 0) {
		shk_judged_unlock(js); /* nothing changed: nothing to log */
		return r;
	}
	shk_session_get_info(p->session, &after);
	/* the shared scope's budget moves too; a failure is logged in the
	 * entry and the settle retried before the next call (shared.c) */
	if (p->scope && (r = shk_doc_new(&doc)) == 0)
		r = shk_pipeline_shared_settle(p, nonce, actual_cost_usd, doc, &shared, &carried);
	if (r < 0) {
		shared = NULL;
		carried = 0;
	}
	e = (shk_audit_post_exec){
		.time_ns = shk_realtime_ns(), .call_number = p->calls, .nonce = nonce,
		.actual_cost = actual_cost_usd, .success = true,
		.budget_before = before.budget_remaining_usd, .budget_after = after.budget_remaining_usd,
		.report = report, .shared = shared,
	};
	r = shk_ledger_append_post_exec(p->ledger, &e);
	shk_doc_free(doc);
	if (r == 0)
		shk_pipeline_shared_logged(p, carried);
	if (r < 0) {
		/* the budget moved without its entry: from now on nothing passes */
		p->ledger_failed = true;
		p->ledger_errno = -r;
	}
	shk_judged_unlock(js);
	return r;
}

static int source_info(void *ctx, shk_session_info *ret)
{
	struct shk_judged *js = ctx;

	shk_judged_lock(js);
	shk_session_get_info(js->pipe.session, ret);
	shk_judged_unlock(js);
	return 0;
}

/* Outside the judge's lock but for the pending trip: the scope serialises
 * its own connection, so a read waiting on Redis (up to timeout_ms) holds
 * up only the calls that need Redis, as any one of them would. The scope
 * and the policy live as long as the sources (shk_sources_stop comes
 * before shk_judged_free) and do not change meanwhile. */
static int source_shared(void *ctx, struct shk_source_shared *ret)
{
	struct shk_judged *js = ctx;
	bool pending;

	if (!js->pipe.scope) {
		memset(ret, 0, sizeof(*ret));
		return -ENOENT;
	}
	shk_judged_lock(js);
	pending = js->pipe.scope_trip_pending[0] != 0;
	shk_judged_unlock(js);
	return shk_pipeline_shared_state(&js->pipe, pending, ret);
}

static int source_refuse(void *ctx, const char *origin, const char *what, const shk_val *detail)
{
	struct shk_judged *js = ctx;
	struct shk_pipeline *p = &js->pipe;
	shk_audit_refusal f = { .origin = origin, .what = what, .detail = detail };
	int r;

	if (!origin || !what || (detail && shk_canon_check(detail, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK))
		return -EINVAL;
	shk_judged_lock(js);
	if (!p->ledger || p->ledger_failed) {
		shk_judged_unlock(js);
		return -EIO;
	}
	f.time_ns = shk_realtime_ns();
	f.call_number = p->calls;
	/* a refusal moves no session state: nothing to undo when its entry
	 * cannot be written (a write error poisons the ledger, which then
	 * denies the calls that follow) */
	r = shk_ledger_append_refusal(p->ledger, &f);
	shk_judged_unlock(js);
	return r;
}

struct shk_source_judge shk_judged_source(struct shk_judged *js)
{
	return (struct shk_source_judge){ .ctx = js, .judge = source_judge, .settle = source_settle,
	                                  .info = source_info, .shared = source_shared,
	                                  .refuse = source_refuse };
}
