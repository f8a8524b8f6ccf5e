/* SPDX-License-Identifier: MIT */
/*
 * Deterministic replay: the log holds every input of shk_session_evaluate()
 * (tool, params, nonce, estimated cost, static policy action, now_ns), of
 * post-execution reports and of operator actions, plus the policy document
 * and session capacities. Replaying them through the session code the
 * supervisor runs must reproduce every logged verdict, reason, layer and
 * budget exactly (doubles round-trip exactly through canonical JSON).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/canon.h>
#include <shackle/layers.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#include "audit/replay_links.h"
#include "audit/verify_internal.h"

struct replay {
	shk_replay_report *rep;
	const char *file;
	shk_session *session;
	bool amplify;   /* the session's guard uses error-signal amplification */
	bool stop;
	int err;
	/* seqs of the session's allowed execs that started a tool call, and
	 * of the proposals an allowed exec carried out, ascending: what a later
	 * call's inputs.tool_call may name */
	uint64_t *tool_calls;
	size_t ntool_calls, ctool_calls;
	struct shk_replay_links links; /* proposals and the execs that carry them out */
};

const char *shk_replay_result_name(shk_replay_result r)
{
	switch (r) {
	case SHK_REPLAY_OK: return "reproduced";
	case SHK_REPLAY_DIVERGED: return "diverged";
	case SHK_REPLAY_UNREPLAYABLE: return "not replayable";
	case SHK_REPLAY_MALFORMED: return "malformed entry";
	}
	return "?";
}

__attribute__((format(printf, 6, 7)))
static void stop(struct replay *rp, shk_replay_result res, uint64_t line, const shk_val *e,
                 const char *field, const char *fmt, ...)
{
	shk_replay_report *rep = rp->rep;
	va_list ap;

	rep->result = res;
	snprintf(rep->file, sizeof(rep->file), "%s", rp->file);
	rep->line = line;
	rep->seq = shk_val_type(shk_object_get(e, "seq")) == SHK_INT ? shk_val_int(shk_object_get(e, "seq")) : -1;
	snprintf(rep->field, sizeof(rep->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(rep->detail, sizeof(rep->detail), fmt, ap);
	va_end(ap);
	rp->stop = true;
}

static void differ(struct replay *rp, uint64_t line, const shk_val *e, const char *field,
                   const char *logged, const char *recomputed)
{
	stop(rp, SHK_REPLAY_DIVERGED, line, e, field, "%s: logged %s, recomputed %s", field,
	     logged, recomputed);
	snprintf(rp->rep->logged, sizeof(rp->rep->logged), "%s", logged);
	snprintf(rp->rep->recomputed, sizeof(rp->rep->recomputed), "%s", recomputed);
}

static bool get_double(const shk_val *v, double *ret)
{
	if (shk_val_str_eq(v, "nan")) {
		*ret = NAN;
		return true;
	}
	if (shk_val_str_eq(v, "inf") || shk_val_str_eq(v, "-inf")) {
		*ret = shk_val_str_eq(v, "inf") ? INFINITY : -INFINITY;
		return true;
	}
	return shk_val_type(v) != SHK_BOOL && shk_val_number(v, ret);
}

static bool get_u64(const shk_val *v, uint64_t *ret)
{
	const char *s = shk_val_str(v, NULL);
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return !errno && !*end;
}

static void fmt_double(double d, char *out, size_t len)
{
	if (shk_canon_format_real(d, out, len) < 0)
		snprintf(out, len, "%g", d);
}

/* Compare a logged double with a recomputed one, exactly. */
static bool same_double(struct replay *rp, uint64_t line, const shk_val *e, const char *field,
                        const shk_val *logged, double want)
{
	char a[40], b[40];
	double d;

	if (get_double(logged, &d) && (d == want || (isnan(d) && isnan(want))))
		return true;
	if (get_double(logged, &d))
		fmt_double(d, a, sizeof(a));
	else
		snprintf(a, sizeof(a), "(missing)");
	fmt_double(want, b, sizeof(b));
	differ(rp, line, e, field, a, b);
	return false;
}

static bool same_str(struct replay *rp, uint64_t line, const shk_val *e, const char *field,
                     const char *want)
{
	const char *got = shk_val_str(shk_object_get(e, field), NULL);

	if (got && !strcmp(got, want))
		return true;
	differ(rp, line, e, field, got ? got : "(missing)", want);
	return false;
}

#define REPLAY_MAX_CAPACITY (1 << 20)
#define SHK_REPLAY_UUSD_MAX (1LL << 53) /* shackle/scope.h SHK_SCOPE_UUSD_MAX */

static void on_session_start(struct replay *rp, uint64_t line, const shk_val *e)
{
	const shk_val *cfgv = shk_object_get(e, "session_config");
	shk_session_config cfg = { 0 };
	shk_policy *pol = NULL;
	shk_parse_error perr;
	char *text = NULL;
	size_t len = 0;
	int r;

	shk_session_free(rp->session);
	rp->session = NULL;
	rp->ntool_calls = 0;
	shk_replay_links_reset(&rp->links);
	if (shk_val_type(shk_object_get(e, "policy")) != SHK_OBJECT) {
		stop(rp, SHK_REPLAY_UNREPLAYABLE, line, e, "policy", "session_start carries no policy document");
		return;
	}
	r = shk_canon_dump(shk_object_get(e, "policy"), &text, &len);
	if (r == 0)
		r = shk_policy_load_buffer(text, len, "session_start.policy", &pol, &perr);
	free(text);
	if (r < 0) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, "policy", "logged policy does not load: %s:%d:%d: %s",
		     perr.source, perr.line, perr.column, perr.text);
		shk_policy_free(pol);
		return;
	}
	if (!same_str(rp, line, e, "policy_digest", shk_policy_digest_hex(pol))) {
		shk_policy_free(pol);
		return;
	}
	cfg.guard = *shk_policy_guard(pol);
	rp->amplify = cfg.guard.error_amplification && cfg.guard.max_repeat_calls > 0;
	shk_policy_free(pol);
	/* sizes from a log that may not have been verified: a session sized
	 * by them is allocated, so absurd ones are refused (a 105 TB calloc
	 * aborts a sanitizer build). Supervisors record
	 * their defaults (4096, 4096, 64, 256). */
	{
		static const char *const names[] = { "max_nonce_ranges", "max_repeat_keys",
		                                     "max_pending", "max_inflight" };
		size_t *dst[] = { &cfg.max_nonce_ranges, &cfg.max_repeat_keys, &cfg.max_pending,
		                  &cfg.max_inflight };

		for (size_t i = 0; i < 4; i++) {
			int64_t v = shk_val_int(shk_object_get(cfgv, names[i]));

			if (v < 0 || v > REPLAY_MAX_CAPACITY) {
				stop(rp, SHK_REPLAY_MALFORMED, line, e, "session_config",
				     "session_config.%s = %lld is not a size a supervisor uses (0 to %d)",
				     names[i], (long long)v, REPLAY_MAX_CAPACITY);
				return;
			}
			*dst[i] = (size_t)v;
		}
	}
	r = shk_session_new(&cfg, &rp->session);
	if (r < 0) {
		rp->err = r;
		rp->stop = true;
		return;
	}
	rp->rep->sessions++;
}

/* A name logged as {"invalid_utf8_hex": ...} back into its bytes. */
static const char *logged_name(const shk_val *v, char *buf, size_t size)
{
	size_t len = 0, i;
	const char *hex = shk_val_str(shk_object_get(v, "invalid_utf8_hex"), &len);

	if (shk_val_type(v) == SHK_STRING)
		return shk_val_str(v, NULL);
	if (!hex || len % 2 || len / 2 >= size)
		return NULL;
	for (i = 0; i < len / 2; i++) {
		unsigned b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1 || b == 0)
			return NULL;
		buf[i] = (char)b;
	}
	buf[i] = 0;
	return buf;
}

static bool status_of(const shk_val *v, shk_canon_status *ret)
{
	for (int s = SHK_CANON_OK; s <= SHK_CANON_MARKER; s++)
		if (shk_val_str_eq(v, shk_canon_status_name((shk_canon_status)s))) {
			*ret = (shk_canon_status)s;
			return true;
		}
	return false;
}

/*
 * Redacted params: the log holds what evaluate derived from the real ones —
 * their digest, Rule 1's status and (under amplification) whether they
 * carried an error signal. Redaction can hide a signal but never create one
 * (shackle/redact.h), so a signal in the redacted form that the log denies
 * is a divergence; one the log claims and the redacted form hides is taken
 * from the log, and counted.
 */
static bool prepare_redacted(struct replay *rp, uint64_t line, const shk_val *e, shk_toolcall *tc)
{
	const char *hash = shk_val_str(shk_object_get(e, "params_hash"), NULL);
	const shk_val *logged = shk_object_get(shk_object_get(e, "view"), "error_signal");
	bool scan = rp->amplify && shk_error_signal_in_val(tc->params);
	shk_canon_status st;

	if (shk_val_type(logged) != SHK_BOOL || !status_of(shk_object_get(e, "params_status"), &st) ||
	    shk_toolcall_prepare_logged(tc, st, hash, shk_val_bool(logged)) < 0) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, "params_hash",
		     "redacted decision lacks params_hash, params_status or view.error_signal");
		return false;
	}
	if (scan && !shk_val_bool(logged)) {
		differ(rp, line, e, "view.error_signal", "false", "true (in the redacted params)");
		return false;
	}
	rp->rep->redacted++;
	rp->rep->signals_from_log += rp->amplify && shk_val_bool(logged) && !scan;
	return true;
}

static bool decision_call(struct replay *rp, uint64_t line, const shk_val *e, shk_doc *doc,
                          shk_toolcall *tc, shk_action *action, char *namebuf, size_t namesize)
{
	const shk_val *params = shk_object_get(e, "params");
	const char *act = shk_val_str(shk_object_get(e, "policy_action"), NULL);
	bool redacted = shk_val_bool(shk_object_get(e, "redacted"));

	memset(tc, 0, sizeof(*tc));
	tc->tool_name = logged_name(shk_object_get(e, "tool"), namebuf, namesize);
	/* Params the log could not hold were not canonicalisable: a foreign
	 * value stands in for them and fails Rule 1 the same way. */
	if (shk_val_type(shk_object_get(e, "params_hash")) == SHK_NULL && !shk_val_str_eq(
	        shk_object_get(e, "params_status"), "ok")) {
		params = shk_foreign(doc);
		redacted = false; /* nothing was derived from them: Rule 1 denies */
	}
	tc->params = params;
	if (!tc->tool_name || !params || !get_u64(shk_object_get(e, "nonce"), &tc->nonce) ||
	    !get_double(shk_object_get(e, "cost"), &tc->estimated_cost_usd) || !act) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, NULL, "decision lacks tool, params, nonce, cost or policy_action");
		return false;
	}
	if (!strcmp(act, "allow"))
		*action = SHK_ACTION_ALLOW;
	else if (!strcmp(act, "deny"))
		*action = SHK_ACTION_DENY;
	else if (!strcmp(act, "hitl"))
		*action = SHK_ACTION_HITL;
	else {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, "policy_action", "unknown policy_action '%s'", act);
		return false;
	}
	if (redacted && !prepare_redacted(rp, line, e, tc))
		return false;
	if (!redacted)
		shk_toolcall_prepare(tc); /* failure is Rule 1's business, as at run time */
	/* a signal the source read in the call's last result: not in the params */
	if (shk_val_bool(shk_object_get(shk_object_get(e, "inputs"), "result_error_signal"))) {
		shk_toolcall_give_signal(tc);
		rp->rep->result_signals++;
	}
	return true;
}

/* Rule 9 reads the values of context keys, which redaction may have hidden:
 * an opaque-context answer the redacted form cannot give is not checkable. */
static bool rule9_hidden(struct replay *rp, uint64_t line, const shk_val *e, const shk_outcome *o)
{
	const shk_val *dr = shk_object_get(shk_object_get(e, "view"), "decide_reason");

	if (!shk_val_bool(shk_object_get(e, "redacted")) || o->decided.reason == SHK_R_OPAQUE_CONTEXT ||
	    !shk_val_str_eq(dr, shk_reason_str(SHK_R_OPAQUE_CONTEXT)))
		return false;
	stop(rp, SHK_REPLAY_UNREPLAYABLE, line, e, "view.decide_reason",
	     "decide() answered %s on params the log redacted; Rule 9 reads context values that "
	     "are not in the log, so this call cannot be re-checked", shk_reason_str(SHK_R_OPAQUE_CONTEXT));
	return true;
}

static bool get_i64(const shk_val *o, const char *k, int64_t *ret)
{
	const shk_val *v = shk_object_get(o, k);

	*ret = shk_val_int(v);
	return shk_val_type(v) == SHK_INT;
}

/*
 * What the decision read from its shared scope, as recorded: the view
 * decide() was shown instead of the session's own (docs/shared-state.md).
 * Redis is not asked; the record is checked against itself: a reservation
 * is granted exactly when spent + reserved + estimate <= limit.
 */
static bool shared_view(struct replay *rp, uint64_t line, const shk_val *e, shk_session_shared *sv)
{
	const shk_val *sh = shk_object_get(e, "shared");
	const shk_val *b = shk_object_get(sh, "budget"), *k = shk_object_get(sh, "breaker");
	const shk_val *granted = shk_object_get(b, "granted"), *open = shk_object_get(k, "open");
	int64_t est;
	bool fits;

	memset(sv, 0, sizeof(*sv));
	if (shk_val_type(sh) != SHK_OBJECT || (b && shk_val_type(b) != SHK_OBJECT) ||
	    (k && shk_val_type(k) != SHK_OBJECT)) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, "shared", "shared is not an object of budget, breaker, error");
		return false;
	}
	rp->rep->shared++;
	if (shk_object_get(sh, "error")) {
		sv->unavailable = true;
		return true;
	}
	if (b) {
		sv->budget = true;
		if (shk_val_type(granted) != SHK_BOOL || !get_i64(b, "limit_uusd", &sv->limit_uusd) ||
		    !get_i64(b, "spent_uusd", &sv->spent_uusd) || !get_i64(b, "reserved_uusd", &sv->reserved_uusd) ||
		    !get_i64(b, "estimate_uusd", &est)) {
			stop(rp, SHK_REPLAY_MALFORMED, line, e, "shared.budget",
			     "shared.budget lacks granted, limit_uusd, spent_uusd, reserved_uusd or estimate_uusd");
			return false;
		}
		sv->granted = shk_val_bool(granted);
		/* in range (the session refuses others) before they are added */
		fits = sv->limit_uusd >= 0 && sv->limit_uusd <= SHK_REPLAY_UUSD_MAX && est >= 0 &&
		       est <= SHK_REPLAY_UUSD_MAX && sv->spent_uusd >= 0 && sv->spent_uusd <= SHK_REPLAY_UUSD_MAX &&
		       sv->reserved_uusd >= 0 && sv->reserved_uusd <= SHK_REPLAY_UUSD_MAX &&
		       sv->spent_uusd + sv->reserved_uusd + est <= sv->limit_uusd;
		if (fits != sv->granted) {
			differ(rp, line, e, "shared.budget.granted", sv->granted ? "true" : "false",
			       fits ? "true (spent + reserved + estimate <= limit)" : "false (over the limit)");
			return false;
		}
	}
	if (k) {
		if (shk_val_type(open) != SHK_BOOL) {
			stop(rp, SHK_REPLAY_MALFORMED, line, e, "shared.breaker", "shared.breaker lacks open");
			return false;
		}
		sv->breaker = true;
		sv->breaker_open = shk_val_bool(open);
	}
	return true;
}

/* Where seq is, or goes, in the ascending tool_calls. */
static size_t tool_call_at(const struct replay *rp, uint64_t seq)
{
	size_t lo = 0, hi = rp->ntool_calls;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rp->tool_calls[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool tool_call_known(const struct replay *rp, uint64_t seq)
{
	size_t i = tool_call_at(rp, seq);

	return i < rp->ntool_calls && rp->tool_calls[i] == seq;
}

/*
 * What took the call out of the repeat guard (docs/decide.md, "Tool calls
 * at syscall level"): its rule, as logged with the static action, or the
 * tool call its process belonged to, which must be an exec this session
 * allowed earlier as a new tool call. *ret_tool_call: 0 when none.
 */
static bool decision_ident(struct replay *rp, uint64_t line, const shk_val *e, shk_toolcall *tc,
                           uint64_t *ret_tool_call)
{
	const shk_val *in = shk_object_get(e, "inputs");
	const shk_val *t = shk_object_get(in, "tool_call"), *g = shk_object_get(in, "repeat_guard");
	char logged[32];

	*ret_tool_call = 0;
	if ((g && shk_val_type(g) != SHK_BOOL) || (t && (shk_val_type(t) != SHK_INT || shk_val_int(t) <= 0))) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, "inputs",
		     "inputs.tool_call must be a positive integer and inputs.repeat_guard a boolean");
		return false;
	}
	if (t && !tool_call_known(rp, (uint64_t)shk_val_int(t))) {
		snprintf(logged, sizeof(logged), "%lld", (long long)shk_val_int(t));
		differ(rp, line, e, "inputs.tool_call", logged, "(no exec allowed as a tool call at that seq)");
		return false;
	}
	*ret_tool_call = t ? (uint64_t)shk_val_int(t) : 0;
	/* a proposal's exec, if its link holds (replay_link, after) */
	tc->repeat_exempt = t || (g && !shk_val_bool(g)) || shk_object_get(in, "proposal");
	return true;
}

/* An allowed exec of the agent's own (no inputs.tool_call) starts a tool
 * call, or joins the proposal's it carries out (member_of > 0): its
 * process and descendants belong to that seq from then on. */
static void note_tool_call(struct replay *rp, const shk_val *e, const shk_outcome *o, uint64_t tool_call,
                           int64_t member_of)
{
	const shk_val *params = shk_object_get(e, "params");
	const shk_val *seq = shk_object_get(e, "seq");
	uint64_t *n, at;
	size_t i;

	if (o->verdict != SHK_ALLOW || tool_call || shk_object_get(shk_object_get(e, "inputs"), "source") ||
	    shk_val_type(shk_object_get(params, "argv")) != SHK_ARRAY || shk_val_type(seq) != SHK_INT ||
	    shk_val_int(seq) <= 0)
		return;
	at = member_of > 0 ? (uint64_t)member_of : (uint64_t)shk_val_int(seq);
	if (tool_call_known(rp, at))
		return;
	if (rp->ntool_calls == rp->ctool_calls) {
		size_t c = rp->ctool_calls ? rp->ctool_calls * 2 : 64;

		if (!(n = realloc(rp->tool_calls, c * sizeof(*n)))) {
			rp->err = -ENOMEM;
			rp->stop = true;
			return;
		}
		rp->tool_calls = n;
		rp->ctool_calls = c;
	}
	/* a proposal's seq is older than execs allowed since */
	i = tool_call_at(rp, at);
	memmove(&rp->tool_calls[i + 1], &rp->tool_calls[i], (rp->ntool_calls - i) * sizeof(*n));
	rp->tool_calls[i] = at;
	rp->ntool_calls++;
}

/* The exec's link to the proposal it carries out, derived again; the
 * proposal's seq when the exec is its member, else 0. */
static int64_t replay_link(struct replay *rp, uint64_t line, const shk_val *e, uint64_t nonce, bool rejudged)
{
	struct link_why w;
	int r = shk_replay_link(&rp->links, e, nonce, rejudged, &w);

	if (r == -ENOMEM) {
		rp->err = r;
		rp->stop = true;
	} else if (r == LINK_MALFORMED)
		stop(rp, SHK_REPLAY_MALFORMED, line, e, w.field, "%s: %s", w.field, w.logged);
	else if (r == LINK_DIVERGED)
		differ(rp, line, e, w.field, w.logged, w.recomputed);
	rp->rep->links += w.linked;
	rp->rep->links_from_log += w.linked && w.from_log;
	return w.member_of;
}

static void on_decision(struct replay *rp, uint64_t line, const shk_val *e, shk_doc *doc)
{
	shk_session_shared sv;
	bool shared = shk_object_get(e, "shared") != NULL;
	const shk_val *budget = shk_object_get(e, "budget");
	int64_t now = shk_val_int(shk_object_get(e, "time_ns"));
	char name[SHK_POLICY_TOOL_MAX];
	shk_toolcall tc;
	shk_action action;
	shk_outcome o;
	shk_pending held;
	uint64_t tool_call;
	int64_t member_of;
	bool rejudged;
	int r;

	if (!decision_call(rp, line, e, doc, &tc, &action, name, sizeof(name)) ||
	    !decision_ident(rp, line, e, &tc, &tool_call))
		return;
	/* a person's answer to a held call (or a second resume of it) */
	rejudged = shk_session_pending_get(rp->session, tc.nonce, &held) == 0;
	if (shared && !shared_view(rp, line, e, &sv))
		return;
	/* An operator's second resume of a terminal transition (logged with
	 * inputs.resume_attempt) is judged as such, not as a dispatch. */
	if (shk_val_bool(shk_object_get(shk_object_get(e, "inputs"), "resume_attempt")))
		r = shk_session_evaluate_resume(rp->session, &tc, now, &o);
	else
		r = shk_session_evaluate_shared(rp->session, &tc, action, now, shared ? &sv : NULL, &o);
	if (r < 0) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, NULL, "evaluate failed: %s", strerror(-r));
		return;
	}
	if (rule9_hidden(rp, line, e, &o))
		return;
	rp->rep->decisions++;
	if (!same_str(rp, line, e, "verdict", shk_verdict_str(o.verdict)) ||
	    !same_str(rp, line, e, "reason", shk_reason_str(o.reason)) ||
	    !same_str(rp, line, e, "layer", shk_layer_str(o.layer)) ||
	    !same_double(rp, line, e, "budget.before", shk_object_get(budget, "before"), o.budget_remaining_usd) ||
	    !same_double(rp, line, e, "budget.after", shk_object_get(budget, "after"), o.budget_after_usd))
		return;
	r = shk_session_commit(rp->session, &tc, &o, now);
	if (r < 0)
		stop(rp, SHK_REPLAY_DIVERGED, line, e, "commit", "commit failed in replay: %s", strerror(-r));
	else if ((member_of = replay_link(rp, line, e, tc.nonce, rejudged)) >= 0 && !rp->stop)
		note_tool_call(rp, e, &o, tool_call, member_of);
}

static void on_post_exec(struct replay *rp, uint64_t line, const shk_val *e)
{
	const shk_val *budget = shk_object_get(e, "budget");
	shk_session_info info;
	uint64_t nonce;
	double cost;
	int r;

	if (!get_u64(shk_object_get(e, "nonce"), &nonce) || !get_double(shk_object_get(e, "actual_cost"), &cost)) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, NULL, "post_exec lacks nonce or actual_cost");
		return;
	}
	shk_session_get_info(rp->session, &info);
	if (!same_double(rp, line, e, "budget.before", shk_object_get(budget, "before"), info.budget_remaining_usd))
		return;
	r = shk_session_post_exec(rp->session, nonce, cost);
	if (r < 0) {
		stop(rp, SHK_REPLAY_DIVERGED, line, e, "nonce", "post_exec for nonce %llu rejected by the session: %s",
		     (unsigned long long)nonce, strerror(-r));
		return;
	}
	rp->rep->post_execs++;
	shk_session_get_info(rp->session, &info);
	same_double(rp, line, e, "budget.after", shk_object_get(budget, "after"), info.budget_remaining_usd);
}

/* The decision a logged hitl entry applies, with the digest and successor
 * its logged transition was bound to. */
static bool hitl_decision(const char *state, const shk_val *e, shk_pending_decision *d)
{
	static const struct {
		const char *state;
		shk_pending_status status;
	} map[] = {
		{ "approved", SHK_PENDING_APPROVED }, { "rejected", SHK_PENDING_REJECTED },
		{ "expired", SHK_PENDING_EXPIRED },   { "cancelled", SHK_PENDING_CANCELLED },
		{ "deferred", SHK_PENDING_DEFERRED }, { "escalated", SHK_PENDING_ESCALATED },
		{ "modified", SHK_PENDING_MODIFIED },
	};
	const shk_val *tr = shk_object_get(e, "transition");
	const shk_val *sn = shk_object_get(tr, "successor_nonce");

	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(state, map[i].state))
			continue;
		d->status = map[i].status;
		d->args_digest = shk_val_str(shk_object_get(tr, "original_args_digest"), NULL);
		d->successor_digest = shk_val_str(shk_object_get(tr, "successor_args_digest"), NULL);
		if (shk_val_type(sn) == SHK_INT && shk_val_int(sn) >= 0)
			d->successor_nonce = (uint64_t)shk_val_int(sn);
		return true;
	}
	return false;
}

static void on_hitl(struct replay *rp, uint64_t line, const shk_val *e)
{
	const char *state = shk_val_str(shk_object_get(e, "state"), NULL);
	shk_pending_decision d;
	shk_pending p;
	uint64_t nonce;
	int r;

	rp->rep->hitl_events++;
	if (!state || !get_u64(shk_object_get(e, "nonce"), &nonce)) {
		stop(rp, SHK_REPLAY_MALFORMED, line, e, NULL, "hitl entry lacks state or nonce");
		return;
	}
	if (!strcmp(state, "breaker_reset")) {
		shk_session_reset(rp->session);
		return;
	}
	if (shk_session_pending_get(rp->session, nonce, &p) < 0) {
		stop(rp, SHK_REPLAY_DIVERGED, line, e, "nonce",
		     "hitl %s for nonce %llu, but the session holds no such call", state,
		     (unsigned long long)nonce);
		return;
	}
	if (!hitl_decision(state, e, &d))
		return; /* "pending": the decision entry already held it */
	r = shk_session_pending_resolve(rp->session, nonce, &d);
	if (r == -ENOMEM) {
		rp->err = r;
		rp->stop = true;
	} else if (r < 0) {
		stop(rp, SHK_REPLAY_DIVERGED, line, e, "state", "the session refuses hitl %s for "
		     "nonce %llu: %s", state, (unsigned long long)nonce, strerror(-r));
	}
}

static void on_breaker_trip(struct replay *rp, uint64_t line, const shk_val *e)
{
	shk_session_info info;

	rp->rep->breaker_trips++;
	shk_session_get_info(rp->session, &info);
	if (!info.circuit_tripped)
		differ(rp, line, e, "circuit_tripped", "true (breaker_trip logged)", "false");
}

static int replay_line(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct replay *rp = ctx;
	shk_doc *doc = NULL;
	shk_val *e = NULL;
	shk_parse_error perr;
	int kind, r;

	if (torn)
		return 0; /* verify reports it; nothing to replay */
	r = shk_doc_new(&doc);
	if (r < 0)
		return r;
	if (shk_json_parse(doc, line, len, rp->file, &e, &perr) < 0 || shk_val_type(e) != SHK_OBJECT) {
		stop(rp, SHK_REPLAY_MALFORMED, lineno, NULL, NULL, "not a ledger entry");
		shk_doc_free(doc);
		return 1;
	}
	kind = shk_audit_kind(shk_object_get(e, "kind"));
	if (kind == K_SESSION_START)
		on_session_start(rp, lineno, e);
	else if (!rp->session && kind != K_CHECKPOINT && kind != K_CONTINUE)
		stop(rp, SHK_REPLAY_MALFORMED, lineno, e, NULL, "entry before any session_start");
	else if (kind == K_DECISION)
		on_decision(rp, lineno, e, doc);
	else if (kind == K_POST_EXEC)
		on_post_exec(rp, lineno, e);
	else if (kind == K_HITL)
		on_hitl(rp, lineno, e);
	else if (kind == K_BREAKER_TRIP)
		on_breaker_trip(rp, lineno, e);
	else if (kind == K_REFUSAL)
		rp->rep->refusals++; /* answered before any decide(): nothing to re-derive */
	shk_doc_free(doc);
	return rp->stop ? 1 : 0;
}

int shk_replay_files(const char *const *paths, size_t npaths, shk_replay_report *ret)
{
	struct replay rp = { .rep = ret };
	int r = 0;

	if (!paths || !npaths || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->seq = -1;
	for (size_t i = 0; i < npaths && !rp.stop; i++) {
		rp.file = paths[i];
		r = shk_ledger_read_lines(paths[i], replay_line, &rp);
		if (r < 0)
			break;
		r = 0;
	}
	shk_session_free(rp.session);
	free(rp.tool_calls);
	shk_replay_links_free(&rp.links);
	return r < 0 ? r : rp.err;
}
