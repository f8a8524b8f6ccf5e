/* SPDX-License-Identifier: MIT */
/*
 * The judge's side of a shared scope (docs/shared-state.md, "How the judge
 * uses it"): reserve before decide(), show decide() what Redis answered,
 * give back or settle before the entry (which records what Redis answered
 * to that too), trip once the entry is written. Every call of
 * a session with a scope goes through here, from every source; a failure
 * of Redis is a DENY (shared_state_unavailable), never a guess.
 *
 * Called with the judge's lock held (judged.h): a Redis round trip, bounded
 * by the policy's timeout_ms, is part of the judgement like the log write.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "judge/pipeline.h"
#include "judge/source.h"

__attribute__((format(printf, 2, 3)))
static void say(struct shk_pipeline *p, const char *fmt, ...)
{
	char line[SHK_SCOPE_WHY_MAX + 160];
	va_list ap;

	if (!p->scope_log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	p->scope_log(p->scope_log_ctx, line);
}

/* A trip that did not reach Redis is retried before the next call: until
 * it does, the other sessions of the scope do not know. */
static void trip_scope(struct shk_pipeline *p, const char *reason)
{
	shk_scope_breaker b;
	int r = shk_scope_trip(p->scope, reason, &b);

	if (r == 0) {
		p->scope_trip_pending[0] = 0;
		return;
	}
	if (!p->scope_trip_pending[0])
		say(p, "shared state: the trip (%s) did not reach the scope's breaker: %s; "
		    "retried before the next call", reason, strerror(-r));
	/* reason may be scope_trip_pending itself (a retry): no overlapping copy */
	if (reason != p->scope_trip_pending)
		snprintf(p->scope_trip_pending, sizeof(p->scope_trip_pending), "%s", reason);
}

/* A source's settle that Redis did not take is kept, to be retried before
 * the next call: settled at its actual cost rather than charged at its
 * estimate when its lease runs out. A retry at any time charges once: the
 * settle script moves a reservation only while Redis holds it, and finds
 * nothing once it was settled or swept (settled false, nothing moved); its
 * nonce is not reserved again meanwhile (decide() refuses a seen nonce,
 * and the reservation of a call refused so is given back before the next
 * call, under the same lock). */
static void keep_settle(struct shk_pipeline *p, uint64_t nonce, double actual_usd)
{
	/* an answer not yet logged holds its place: it is still to be told */
	if (p->nsettle_retry + p->nsettle_answer >= SHK_PIPELINE_SETTLE_RETRIES) {
		say(p, "shared state: call %" PRIu64 " is not retried (%d settles wait already); it is "
		    "charged at its estimate after the lease", nonce, SHK_PIPELINE_SETTLE_RETRIES);
		return;
	}
	p->settle_retry[p->nsettle_retry++] = (struct shk_settle_retry){ .nonce = nonce,
									 .actual_usd = actual_usd };
}

/* One retried settle as the entry records it: the settle's answer and the
 * call it settled. */
static int retried_val(const struct shk_settle_answer *a, shk_doc *doc, shk_val *arr)
{
	shk_scope_read rd = { .settled = a->settled, .actual_uusd = a->actual_uusd,
			      .spent_uusd = a->spent_uusd, .reserved_uusd = a->reserved_uusd, .ops = a->ops };
	char n[24];
	shk_val *v = NULL;
	int r;

	snprintf(n, sizeof(n), "%" PRIu64, a->nonce);
	if ((r = shk_scope_then_to_val(&rd, "settle", doc, &v)) < 0 ||
	    (r = shk_object_set_str(v, "nonce", shk_cstring(doc, n))) < 0)
		return r;
	return shk_array_append(arr, v);
}

/* In order, stopping at the first failure (Redis is not answering). Each
 * answer is kept as data, not in the entry's document: should that entry
 * not be written, the next one carries it, so that every change of the
 * scope's spend is in some log. The failure's read is *rd; 0 or its errno. */
static int retry_settles(struct shk_pipeline *p, shk_scope_read *rd)
{
	size_t done = 0;
	int r = 0;

	for (; done < p->nsettle_retry; done++) {
		const struct shk_settle_retry *t = &p->settle_retry[done];

		if ((r = shk_scope_settle(p->scope, t->nonce, t->actual_usd, rd)) < 0)
			break;
		if (rd->settled)
			say(p, "shared state: call %" PRIu64 " settled at its actual cost on a retry", t->nonce);
		else
			say(p, "shared state: call %" PRIu64 ": no reservation left to settle on a retry "
			    "(settled, or charged at its estimate, once)", t->nonce);
		/* keep_settle keeps both queues within the array together */
		p->settle_answer[p->nsettle_answer++] = (struct shk_settle_answer){
			.nonce = t->nonce, .settled = rd->settled, .actual_uusd = rd->actual_uusd,
			.spent_uusd = rd->spent_uusd, .reserved_uusd = rd->reserved_uusd, .ops = rd->ops,
		};
	}
	memmove(p->settle_retry, p->settle_retry + done, (p->nsettle_retry - done) * sizeof(*p->settle_retry));
	p->nsettle_retry -= done;
	return r;
}

/* shared.retried of the entry being built: every answer no entry carries
 * yet, oldest first (Redis' order). */
static int carry(struct shk_pipeline *p, shk_doc *doc, shk_val *shared, size_t *ret_carried)
{
	shk_val *arr;
	int r = 0;

	*ret_carried = 0;
	if (!p->nsettle_answer)
		return 0;
	if (!(arr = shk_array(doc)))
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < p->nsettle_answer; i++)
		r = retried_val(&p->settle_answer[i], doc, arr);
	if (r == 0 && (r = shk_object_set_str(shared, "retried", arr)) == 0)
		*ret_carried = p->nsettle_answer;
	return r;
}

void shk_pipeline_shared_logged(struct shk_pipeline *p, size_t carried)
{
	if (carried > p->nsettle_answer)
		carried = p->nsettle_answer;
	memmove(p->settle_answer, p->settle_answer + carried,
		(p->nsettle_answer - carried) * sizeof(*p->settle_answer));
	p->nsettle_answer -= carried;
}

int shk_pipeline_shared_read(struct shk_pipeline *p, const shk_toolcall *tc, shk_scope_read *rd,
			     shk_session_shared *view, shk_doc *doc, shk_val **ret_shared, size_t *ret_carried)
{
	const shk_shared_config *c = shk_policy_shared(p->policy);
	int r, e;

	memset(view, 0, sizeof(*view));
	*ret_shared = NULL;
	*ret_carried = 0;
	if (p->scope_trip_pending[0])
		trip_scope(p, p->scope_trip_pending);
	/* a failure is the call's own reservation's to report */
	if (p->nsettle_retry)
		(void)retry_settles(p, rd);
	r = shk_scope_reserve(p->scope, tc->nonce, tc->estimated_cost_usd,
			      shk_policy_guard(p->policy)->budget_usd, rd);
	if (r < 0) {
		view->unavailable = true;
		say(p, "shared state: call %" PRIu64 " (%s) refused: %s", p->calls + 1, tc->tool_name,
		    rd->why[0] ? rd->why : strerror(-r));
	} else {
		view->budget = c->budget != SHK_SCOPE_NONE;
		view->granted = rd->granted;
		view->limit_uusd = rd->limit_uusd;
		view->spent_uusd = rd->spent_uusd;
		view->reserved_uusd = rd->reserved_uusd;
		view->breaker = rd->breaker.shared;
		view->breaker_open = rd->breaker.open;
	}
	e = shk_scope_read_to_val(rd, doc, ret_shared);
	return e < 0 ? e : carry(p, doc, *ret_shared, ret_carried);
}

/* "left": the settles still waiting, each with the actual cost its source
 * reported; Redis charges them at their estimate when the lease runs out. */
static int left_val(struct shk_pipeline *p, shk_doc *doc, shk_val *shared)
{
	shk_val *arr = shk_array(doc), *o;
	char n[24];
	int64_t u;
	int r = arr ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < p->nsettle_retry; i++) {
		const struct shk_settle_retry *t = &p->settle_retry[i];

		snprintf(n, sizeof(n), "%" PRIu64, t->nonce);
		/* kept only when the scope could count it (shared_settle) */
		if (shk_scope_usd_to_uusd(t->actual_usd, &u) < 0)
			u = 0;
		if (!(o = shk_object(doc)) || shk_object_set_str(o, "nonce", shk_cstring(doc, n)) < 0 ||
		    shk_object_set_str(o, "actual_uusd", shk_int(doc, u)) < 0)
			r = -ENOMEM;
		else
			r = shk_array_append(arr, o);
		say(p, "shared state: call %" PRIu64 " was not settled at its actual cost before the "
		    "session's end; it is charged at its estimate after the lease", t->nonce);
	}
	return r < 0 ? r : shk_object_set_str(shared, "left", arr);
}

/* "trip": the session's trip that had not reached Redis, tried once more.
 * Failed, the scope's other sessions never learn of it (the session's own
 * log has its breaker_trip): the entry says so, with the error. */
static int trip_end(struct shk_pipeline *p, shk_doc *doc, shk_val **ret)
{
	const char *reason = p->scope_trip_pending;
	shk_scope_read rd = { 0 };
	shk_scope_breaker b;
	shk_val *o = NULL;
	int r = shk_scope_trip(p->scope, reason, &b);

	if (r < 0) {
		rd.err = r;
		snprintf(rd.why, sizeof(rd.why), "%s", strerror(-r));
		say(p, "shared state: the trip (%s) did not reach the scope's breaker before the session's "
		    "end: %s; the scope's other sessions do not know of it", reason, rd.why);
	}
	/* {} or {"error": {errno, why}}, as a decision records a failure */
	if ((r = shk_scope_read_to_val(&rd, doc, &o)) < 0 ||
	    (r = shk_object_put(o, "scope", shk_cstring(doc, shk_scope_breaker_id(p->scope)))) < 0 ||
	    (r = shk_object_put(o, "reason", shk_cstring(doc, reason))) < 0 ||
	    (r = shk_object_put(o, "retried", shk_bool(doc, true))) < 0 ||
	    (r = shk_object_put(o, "ok", shk_bool(doc, !rd.err))) < 0)
		return r;
	if (!rd.err && ((r = shk_object_put(o, "epoch", shk_int(doc, (int64_t)b.epoch))) < 0 ||
			(r = shk_object_put(o, "open", shk_bool(doc, b.open))) < 0 ||
			(r = shk_object_put(o, "by", shk_cstring(doc, b.by))) < 0))
		return r;
	*ret = o;
	return 0;
}

/* session_end's record: the budget's names, or only what the end did when
 * the budget is not shared (a trip of the shared breaker). */
static int end_record(struct shk_pipeline *p, const shk_scope_read *failed, shk_doc *doc, shk_val **ret)
{
	int r = shk_scope_names_to_val(p->scope, failed, doc, ret);

	if (r == -ENOENT && !failed)
		r = (*ret = shk_object(doc)) ? 0 : -ENOMEM;
	return r;
}

int shk_pipeline_shared_end(struct shk_pipeline *p, shk_doc *doc, shk_val **ret_shared, size_t *ret_carried)
{
	shk_scope_read rd;
	shk_val *trip = NULL;
	int err = 0, r;

	*ret_shared = NULL;
	*ret_carried = 0;
	if (!p->scope || (!p->nsettle_retry && !p->nsettle_answer && !p->scope_trip_pending[0]))
		return 0;
	/* first, as before a call: no call comes after it to retry it. Its
	 * record failing (-ENOMEM) does not keep the settles from their try. */
	if (p->scope_trip_pending[0]) {
		if (trip_end(p, doc, &trip) < 0)
			trip = NULL;
		p->scope_trip_pending[0] = 0;
	}
	memset(&rd, 0, sizeof(rd));
	if (p->nsettle_retry)
		err = retry_settles(p, &rd);
	if ((r = end_record(p, err < 0 ? &rd : NULL, doc, ret_shared)) < 0 ||
	    (p->nsettle_retry && (r = left_val(p, doc, *ret_shared)) < 0) ||
	    (r = carry(p, doc, *ret_shared, ret_carried)) < 0 ||
	    (trip && (r = shk_object_set_str(*ret_shared, "trip", trip)) < 0)) {
		*ret_shared = NULL;
		return r;
	}
	return 0;
}

/* The source reports what the call cost later (judge/source.h settle):
 * model requests and SDK calls. A proposal the model made is no call of
 * its own to report on; the kernel never reports. */
bool shk_pipeline_settled_later(const struct shk_obs *obs)
{
	return obs && obs->kind == SHK_OBS_SOURCE && obs->source.call &&
	       obs->source.call->kind != SHK_SOURCE_PROPOSAL;
}

/* A call not allowed gives its reservation back; an allowed one that no
 * source reports on is settled at its estimate (as the session's commit
 * charges it). */
static int give_or_settle(struct shk_pipeline *p, bool later, const shk_toolcall *tc, const shk_outcome *o,
			  const shk_scope_read *rd, shk_scope_read *after, const char **did)
{
	int r;

	memset(after, 0, sizeof(*after));
	*did = NULL;
	if (rd->err || !rd->budget_shared || !rd->granted || (o && o->verdict == SHK_ALLOW && later))
		return 0;
	*did = o && o->verdict == SHK_ALLOW ? "settle" : "release";
	if (o && o->verdict == SHK_ALLOW)
		r = shk_scope_settle(p->scope, tc->nonce, tc->estimated_cost_usd, after);
	else
		r = shk_scope_release(p->scope, tc->nonce, after);
	/* kept by Redis and charged at its estimate after lease_s: a lost
	 * release costs budget, it never lets the scope overspend */
	if (r < 0)
		say(p, "shared state: %s of call %" PRIu64 " failed: %s; its reservation is "
		    "charged at its estimate after the lease", !strcmp(*did, "settle") ? "settling" :
		    "releasing", tc->nonce, after->why[0] ? after->why : strerror(-r));
	return r;
}

int shk_pipeline_shared_then(struct shk_pipeline *p, bool later, const shk_toolcall *tc, const shk_outcome *o,
			     const shk_scope_read *rd, shk_doc *doc, shk_val *shared)
{
	shk_scope_read after;
	const char *did;
	shk_val *v = NULL;
	int r;

	give_or_settle(p, later, tc, o, rd, &after, &did);
	if (!did)
		return 0;
	if ((r = shk_scope_then_to_val(&after, did, doc, &v)) < 0)
		return r;
	return shk_object_set_str(shared, "then", v);
}

void shk_pipeline_shared_done(struct shk_pipeline *p, bool later, const shk_toolcall *tc,
			      const shk_outcome *o, const shk_scope_read *rd, bool answered)
{
	shk_scope_read after;
	const char *did;

	/* no entry was written (o NULL): given back all the same, unrecorded;
	 * a call left reserved for its source's report is given back too */
	if (!answered || (!o && later))
		give_or_settle(p, later, tc, o, rd, &after, &did);
	/* a circuit_open the scope's breaker caused is not a trip of ours */
	if (o && o->trips && !o->circuit_tripped && shk_policy_shared(p->policy)->breaker != SHK_SCOPE_NONE)
		trip_scope(p, shk_reason_str(o->reason));
}

int shk_pipeline_shared_settle(struct shk_pipeline *p, uint64_t nonce, double actual_usd, shk_doc *doc,
			       shk_val **ret_val, size_t *ret_carried)
{
	shk_scope_read rd;
	int r;

	*ret_val = NULL;
	*ret_carried = 0;
	if (!p->scope || shk_policy_shared(p->policy)->budget == SHK_SCOPE_NONE)
		return 0;
	r = shk_scope_settle(p->scope, nonce, actual_usd, &rd);
	/* a cost the scope cannot count (-ERANGE) fails the same way every
	 * time: kept, it would hold up every settle queued behind it */
	if (r < 0) {
		bool retry = r != -ERANGE && r != -EINVAL;

		say(p, "shared state: settling call %" PRIu64 " at its actual cost failed: %s; %s",
		    nonce, rd.why[0] ? rd.why : strerror(-r),
		    retry ? "retried before the next call" : "charged at its estimate after the lease");
		if (retry)
			keep_settle(p, nonce, actual_usd);
	}
	/* answered before this settle: carried first, in Redis' order */
	if ((r = shk_scope_read_to_val(&rd, doc, ret_val)) < 0)
		return r;
	return carry(p, doc, *ret_val, ret_carried);
}

const char *shk_pipeline_shared_breaker(struct shk_pipeline *p, bool *ret_open)
{
	shk_scope_breaker b;

	*ret_open = false;
	if (!p->scope || shk_policy_shared(p->policy)->breaker == SHK_SCOPE_NONE)
		return NULL;
	/* unknown (subscriber not connected) counts as open: the reset is
	 * what the operator asks for, and Redis answers it or says why not */
	*ret_open = shk_scope_breaker_get(p->scope, &b) < 0 || b.open || p->scope_trip_pending[0];
	return shk_scope_breaker_id(p->scope);
}

int shk_pipeline_shared_reset(struct shk_pipeline *p, const char *operator_id, char *why, size_t len)
{
	shk_scope_breaker b;
	int r;

	/* the operator's reset supersedes a trip that has not reached Redis */
	p->scope_trip_pending[0] = 0;
	if ((r = shk_scope_reset(p->scope, operator_id, &b)) < 0)
		snprintf(why, len, "%s", strerror(-r));
	else
		say(p, "shared state: the scope's breaker was reset by %s (epoch %" PRIu64 ")",
		    operator_id, b.epoch);
	return r;
}

_Static_assert(SHK_SOURCE_SCOPE_MAX >= SHK_SCOPE_ID_MAX && SHK_SOURCE_WHY_MAX >= SHK_SCOPE_WHY_MAX &&
	       SHK_SOURCE_TEXT_MAX >= SHK_SCOPE_TEXT_MAX, "a source's copy holds what the scope read");

int shk_pipeline_shared_state(struct shk_pipeline *p, bool trip_pending, struct shk_source_shared *ret)
{
	shk_scope_read rd;

	memset(ret, 0, sizeof(*ret));
	if (!p->scope)
		return -ENOENT;
	shk_scope_peek(p->scope, shk_policy_guard(p->policy)->budget_usd, &rd);
	ret->budget = rd.budget_shared;
	ret->breaker = shk_policy_shared(p->policy)->breaker != SHK_SCOPE_NONE;
	memcpy(ret->budget_scope, rd.budget_id, sizeof(rd.budget_id));
	memcpy(ret->breaker_scope, rd.breaker_id, sizeof(rd.breaker_id));
	ret->trip_pending = trip_pending;
	/* fail closed: no number is shown that Redis did not give just now */
	if ((ret->err = rd.err) < 0) {
		memcpy(ret->why, rd.why, sizeof(rd.why));
		return 0;
	}
	ret->limit_usd = shk_scope_uusd_to_usd(rd.limit_uusd);
	ret->spent_usd = shk_scope_uusd_to_usd(rd.spent_uusd);
	ret->reserved_usd = shk_scope_uusd_to_usd(rd.reserved_uusd);
	ret->remaining_usd = shk_scope_uusd_to_usd(rd.limit_uusd - rd.spent_uusd - rd.reserved_uusd);
	ret->ops = rd.ops;
	ret->open = rd.breaker.open;
	ret->at_ms = rd.breaker.at_ms;
	memcpy(ret->by, rd.breaker.by, sizeof(rd.breaker.by));
	memcpy(ret->reason, rd.breaker.reason, sizeof(rd.breaker.reason));
	return 0;
}
