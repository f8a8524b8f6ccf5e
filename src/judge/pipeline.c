/* SPDX-License-Identifier: MIT */
/*
 * From an observation to a verdict, with the audit entry written before the
 * verdict leaves this file. Any failure on the way is a denial.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <shackle/canon.h>
#include <shackle/json.h>
#include <shackle/redact.h>

#include "judge/hitl.h"
#include "judge/kinds.h"
#include "judge/links.h"
#include "judge/pipeline.h"
#include "util/linux.h"

/* ---- audit -------------------------------------------------------------------- */

/* snprintf(dst, n, "%s", src) without the printf machinery (per call) */
static void copy_str(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = 0;
}

static void trace_push(struct shk_pipeline *p, int64_t now, const shk_toolcall *tc, shk_verdict v)
{
	size_t i = p->ntrace % SHK_PIPE_TRACE;

	p->trace[i].time_ns = now;
	copy_str(p->trace[i].tool, sizeof(p->trace[i].tool), tc->tool_name);
	copy_str(p->trace[i].params_hash, sizeof(p->trace[i].params_hash),
	         tc->params_digest_ok ? tc->params_digest : "");
	p->trace[i].verdict = shk_verdict_str(v);
	p->ntrace++;
}

static int log_trip(struct shk_pipeline *p, int64_t now, const shk_outcome *o, shk_doc *doc)
{
	shk_audit_tool_trace tr[SHK_PIPE_TRACE];
	size_t n = p->ntrace < SHK_PIPE_TRACE ? p->ntrace : SHK_PIPE_TRACE;
	size_t first = p->ntrace - n;
	shk_val *counters = shk_object(doc);
	shk_audit_breaker_trip b = {
		.time_ns = now, .call_number = p->calls, .trigger = shk_reason_str(o->reason),
		.counters = counters, .trace = tr, .trace_len = n, .containment = "deny_all",
	};

	for (size_t i = 0; i < n; i++) {
		size_t k = (first + i) % SHK_PIPE_TRACE;
		tr[i] = (shk_audit_tool_trace){ p->trace[k].time_ns, p->trace[k].tool,
		                                 p->trace[k].params_hash, p->trace[k].verdict };
	}
	if (counters) {
		shk_object_set_str(counters, "total_calls", shk_int(doc, (int64_t)o->total_calls));
		shk_object_set_str(counters, "repeat_count", shk_int(doc, (int64_t)o->repeat_count));
		shk_object_set_str(counters, "window_count", shk_int(doc, o->window_count));
		shk_object_set_str(counters, "budget_remaining_usd", shk_real(doc, o->budget_remaining_usd));
	}
	return shk_ledger_append_breaker_trip(p->ledger, &b);
}

/* Non-interactive: a HITL verdict is a block at once (SP/1.0 §3.4), recorded
 * as a held call that expired without an operator. */
static int block_hitl(struct shk_pipeline *p, int64_t now, const shk_toolcall *tc)
{
	shk_audit_hitl h = {
		.time_ns = now, .call_number = p->calls, .state = "expired", .nonce = tc->nonce,
		.args_digest = tc->params_digest_ok ? tc->params_digest : "",
	};
	int r = shk_ledger_append_hitl(p->ledger, &h);

	if (r == 0)
		r = shk_session_pending_set(p->session, tc->nonce, SHK_PENDING_EXPIRED);
	p->hitl_blocked++;
	return r;
}

/* A call judged with a shared scope: what it read, and whether its
 * reservation was answered before the entry (shared_then). */
struct scoped {
	const shk_session_shared *sv;
	const shk_scope_read *rd;
	shk_val *shared;
	size_t carried;              /* retried settles' answers in shared */
	bool answered;
};

static int judge_call(struct shk_pipeline *p, const struct shk_call_kind *kind, const struct shk_obs *obs,
                      shk_toolcall *tc, const shk_policy_match *m, shk_doc *doc,
                      struct scoped *sc, shk_outcome *ret_o, struct shk_pipeline_verdict *ret)
{
	int64_t now = shk_realtime_ns();
	shk_outcome o;
	shk_audit_decision d;
	shk_val *redacted = NULL, *in = NULL;
	const shk_proplink_entry *link = shk_links_taken(p);
	int r;

	if (kind->result_signal && kind->result_signal(obs))
		shk_toolcall_give_signal(tc);
	/* the log shows the policy's redacted form (and the keyed digest) */
	if ((r = shk_policy_redact_logged(p->policy, doc, tc->params, &redacted)) < 0)
		return r;
	r = shk_session_evaluate_shared(p->session, tc, m->action, now, sc ? sc->sv : NULL, &o);
	if (r < 0)
		return r;
	if (p->kernel_answer || kind->inputs || tc->repeat_exempt || link) {
		if (!(in = shk_object(doc)))
			return -ENOMEM;
		if (p->kernel_answer && shk_object_set_str(in, "kernel", shk_cstring(doc, p->kernel_answer)) < 0)
			return -ENOMEM;
		if (kind->inputs && (r = kind->inputs(obs, doc, in)) < 0)
			return r;
		if ((r = shk_pipeline_ident_inputs(obs->tool_call, m->no_repeat_guard, doc, in)) < 0)
			return r;
		if (link && (r = shk_links_inputs(link, doc, in)) < 0)
			return r;
	}
	p->calls++;
	d = (shk_audit_decision){
		.time_ns = now, .pid = obs->pid, .tid = obs->tid, .exe = obs->exe[0] ? obs->exe : NULL,
		.call_number = p->calls, .call = tc, .action = m->action, .rule = m->rule_name,
		.outcome = &o, .params_redacted = redacted, .inputs = in, .shared = sc ? sc->shared : NULL,
	};
	/* The transition first, so that the entry says what is enforced:
	 * evaluate() checked the same tables on this thread just now, so a
	 * commit cannot fail in practice; if it does, the call is denied and
	 * logged as the capacity denial it is (never an ALLOW that did not
	 * happen). A ledger failure after the commit denies this and every
	 * later call, so the counted call only makes the session stricter. */
	if (shk_session_commit(p->session, tc, &o, now) < 0) {
		o.verdict = SHK_DENY;
		o.reason = SHK_R_SESSION_CAPACITY;
		o.layer = SHK_LAYER_SESSION;
		o.trips = false;
	}
	/* the verdict is final: the scope's reservation is answered now, so
	 * that the entry records what Redis said to that too */
	if (sc) {
		sc->answered = true;
		if ((r = shk_pipeline_shared_then(p, shk_pipeline_settled_later(obs), tc, &o, sc->rd, doc,
						  sc->shared)) < 0)
			return r;
	}
	/* no verdict leaves without its entry in the log; the judge's lock
	 * (judged.h) keeps every other append out until it is written */
	if ((r = shk_ledger_append_decision(p->ledger, &d)) < 0)
		return r;
	if (sc)
		shk_pipeline_shared_logged(p, sc->carried);
	/* read after: a checkpoint due may have gone in before the entry */
	ret->seq = (int64_t)shk_ledger_next_seq(p->ledger) - 1;
	/* an exec of the agent's starts a tool call, unless it carries out a
	 * proposal: then it and its descendants are of the proposal's */
	if (o.verdict == SHK_ALLOW && obs->kind == SHK_OBS_EXEC && !obs->tool_call)
		ret->tool_call = (uint64_t)(link ? link->seq : ret->seq);
	*ret_o = o;
	trace_push(p, now, tc, o.verdict);
	if (o.trips && !o.circuit_tripped && (r = log_trip(p, now, &o, doc)) < 0)
		return r;
	if (p->hitl)
		shk_hitl_note(p->hitl, obs, tc, &o, now);
	ret->verdict = o.verdict;
	ret->reason = o.reason;
	if (o.verdict == SHK_HITL) {
		/* with an operator channel the call waits for a person; without
		 * one (or when it cannot be parked) it is blocked at once */
		if (p->hitl && obs->can_hold && shk_policy_guard(p->policy)->hitl_timeout_s > 0 &&
		    shk_hitl_hold(p->hitl, obs, obs->notif_id, tc, m, &o, now) == 0)
			ret->held = true;
		else if (p->ledger_failed || (r = block_hitl(p, now, tc)) < 0)
			return p->ledger_failed ? -EIO : r;
	}
	return 0;
}

/* judge_call, with the shared scope read before and answered after. */
static int judge_scoped(struct shk_pipeline *p, const struct shk_call_kind *kind, const struct shk_obs *obs,
                        shk_toolcall *tc, const shk_policy_match *m, shk_doc *doc,
                        struct shk_pipeline_verdict *ret)
{
	shk_session_shared sv;
	shk_scope_read rd;
	struct scoped sc = { .sv = &sv, .rd = &rd };
	shk_outcome o;
	int r;

	/* a failure is Rule 1's to report, unless the keyed digest failed */
	if (shk_audit_prepare_call(p->policy, tc) == -EIO)
		return -EIO;
	if (!p->scope)
		return judge_call(p, kind, obs, tc, m, doc, NULL, &o, ret);
	r = shk_pipeline_shared_read(p, tc, &rd, &sv, doc, &sc.shared, &sc.carried);
	if (r == 0)
		r = judge_call(p, kind, obs, tc, m, doc, &sc, &o, ret);
	shk_pipeline_shared_done(p, shk_pipeline_settled_later(obs), tc, r == 0 ? &o : NULL, &rd,
				 sc.answered);
	return r;
}

int shk_pipeline_ident_inputs(uint64_t tool_call, bool no_repeat_guard, shk_doc *doc, shk_val *in)
{
	if (tool_call && shk_object_set_str(in, "tool_call", shk_int(doc, (int64_t)tool_call)) < 0)
		return -ENOMEM;
	if (no_repeat_guard && shk_object_set_str(in, "repeat_guard", shk_bool(doc, false)) < 0)
		return -ENOMEM;
	return 0;
}

/* A connect to the session's own gateway or SDK socket: the transport of
 * calls judged where they arrive (pipeline.h). */
static const char *to_session_source(const struct shk_pipeline *p, const struct shk_obs *obs)
{
	const struct shk_obs_net *n = &obs->net;
	struct stat st;

	if (obs->kind != SHK_OBS_NET || n->op != SHK_OBS_CONNECT || n->socktype != SOCK_STREAM)
		return NULL;
	if (p->gateway_port && n->family == AF_INET && n->port == p->gateway_port &&
	    memcmp(n->addr, p->gateway_addr, sizeof(p->gateway_addr)) == 0)
		return "gateway";
	/* the O_PATH fd judged is the one the supervisor connects through */
	if (p->sdk_path && n->family == AF_UNIX && !n->unix_abstract && !n->unix_unnamed &&
	    n->unix_pathfd >= 0 && fstat(n->unix_pathfd, &st) == 0 && st.st_dev == p->sdk_dev &&
	    st.st_ino == p->sdk_ino)
		return "sdk";
	return NULL;
}

int shk_pipeline_judge_obs(struct shk_pipeline *p, const struct shk_obs *obs, struct shk_pipeline_verdict *ret)
{
	const struct shk_call_kind *kind = shk_call_kind_of(obs->kind);
	shk_doc *doc = NULL;
	shk_val *params = NULL;
	shk_policy_match m;
	shk_toolcall tc;
	const char *src;
	uint64_t nonce;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->verdict = SHK_DENY;
	ret->reason = SHK_R_MALFORMED_INPUT;
	ret->seq = -1;
	p->linked = false;
	if (!p->ledger || p->ledger_failed)
		return 0;
	if ((src = to_session_source(p, obs))) {
		ret->verdict = SHK_ALLOW;
		ret->reason = SHK_R_WITHIN_THRESHOLDS;
		snprintf(ret->rule, sizeof(ret->rule), "%s", src);
		return 0;
	}
	if (!kind)
		return -EINVAL; /* nobody said how to present it: denied */
	if (!p->scratch_busy && !p->scratch && (r = shk_doc_new(&p->scratch)) < 0)
		return r;
	if (!p->scratch_busy) {
		doc = p->scratch;
		p->scratch_busy = true;
	} else if ((r = shk_doc_new(&doc)) < 0) {
		return r;
	}
	memset(&m, 0, sizeof(m));
	r = kind->call(p, obs, doc, &params, &m);
	if (r == 0 && p->approval_rule) {
		m.action = SHK_ACTION_ALLOW;
		m.rule_name = p->approval_rule;
		m.cost_usd = 0;
	}
	if (r == 0) {
		nonce = kind->nonce ? kind->nonce(obs) : 0;
		memset(&tc, 0, sizeof(tc));
		tc.tool_name = m.tool;
		tc.params = params;
		tc.nonce = nonce ? nonce : ++p->next_nonce;
		tc.estimated_cost_usd = m.cost_usd;
		/* a proposal's exec: the proposal was counted already */
		tc.repeat_exempt = obs->tool_call || m.no_repeat_guard || shk_links_taken(p);
		ret->nonce = tc.nonce;
		copy_str(ret->rule, sizeof(ret->rule), m.rule_name ? m.rule_name : "");
		r = judge_scoped(p, kind, obs, &tc, &m, doc, ret);
		if (r < 0 && r != -ENOMEM && r != -EINVAL) {
			/* the ledger refused the entry: from now on nothing passes */
			p->ledger_failed = true;
			p->ledger_errno = -r;
		}
	}
	if (doc == p->scratch) {
		shk_doc_reset(doc);
		p->scratch_busy = false;
	} else {
		shk_doc_free(doc);
	}
	if (r < 0) {
		ret->verdict = SHK_DENY;
		ret->held = false;
	}
	return r < 0 ? r : 0;
}

void shk_pipeline_free_scratch(struct shk_pipeline *p)
{
	shk_doc_free(p->scratch);
	p->scratch = NULL;
	p->scratch_busy = false;
}

int shk_pipeline_judge(void *ctx, const struct shk_obs *obs, struct shk_judgement *ret)
{
	struct shk_pipeline_verdict v;
	int r = shk_pipeline_judge_obs(ctx, obs, &v);

	ret->verdict = SHK_JUDGE_DENY;
	ret->deny_errno = EPERM;
	if (r == 0 && v.verdict == SHK_ALLOW) {
		ret->verdict = SHK_JUDGE_ALLOW;
		ret->tool_call = v.tool_call;
	}
	else if (r == 0 && v.held)
		ret->verdict = SHK_JUDGE_HOLD;
	return r;
}

bool shk_pipeline_may_allow_ip(const struct shk_pipeline *p)
{
	return p->gateway_port != 0 || shk_policy_net_may_allow_ip(p->policy);
}

void shk_pipeline_tick(void *ctx)
{
	struct shk_pipeline *p = ctx;
	int r;

	if (p->ledger && !p->ledger_failed && (r = shk_ledger_tick(p->ledger, shk_realtime_ns())) < 0) {
		p->ledger_failed = true;
		p->ledger_errno = -r;
	}
	shk_pipeline_resolver_install(p);
}
