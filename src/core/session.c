/* SPDX-License-Identifier: MIT */
/*
 * Session state and transitions (SP/1.0 §5.3). Every table is allocated in
 * shk_session_new(); evaluate and commit only read and write them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"

#include <shackle/layers.h>
#include <shackle/nonceset.h>
#include <shackle/session.h>

struct repeat_slot {
	uint8_t key[SHK_SHA256_LEN];
	uint64_t count;
	bool used;
};

struct inflight {
	uint64_t nonce;
	double charged;
	bool used;
};

struct shk_session {
	shk_session_config cfg;
	double initial, remaining, spent;
	uint64_t total_calls;
	bool tripped;
	shk_reason trip_reason;
	int64_t tripped_at_ns;
	shk_window window;
	shk_nonceset *nonces;
	struct repeat_slot *repeat; /* open addressing, repeat_cap slots (power of 2) */
	size_t repeat_cap, repeat_used;
	shk_pending *pending;
	bool *pending_used;
	/* Per pending entry: the §3.6 transition presented to decide() once a
	 * human resolved it, and its "consumed" successor. Built in doc when
	 * the human decides (not on the decision path). */
	const shk_val **pending_tr, **pending_done;
	/* The terminal transition as an operator's second resume presents it
	 * ("resume_attempt": true), for shk_session_evaluate_resume(). */
	const shk_val **pending_resume;
	shk_doc *doc;
	struct inflight *inflight; /* ring of the most recent allowed calls */
	size_t inflight_next;
};

static const char *const layer_names[] = {
	[SHK_LAYER_DECIDE] = "decide", [SHK_LAYER_POLICY] = "policy", [SHK_LAYER_GLOBAL] = "global",
	[SHK_LAYER_WINDOW] = "window", [SHK_LAYER_SESSION] = "session", [SHK_LAYER_SCOPE] = "scope",
};

const char *shk_layer_str(shk_layer l)
{
	return (unsigned)l < sizeof(layer_names) / sizeof(layer_names[0]) ? layer_names[l] : "?";
}

int shk_layer_parse(const char *s, shk_layer *ret_layer)
{
	for (size_t i = 0; s && i < sizeof(layer_names) / sizeof(layer_names[0]); i++)
		if (!strcmp(s, layer_names[i])) {
			*ret_layer = (shk_layer)i;
			return 0;
		}
	return -EINVAL;
}

/* The NUL keeps ("ab", digest) and ("a", "b" + digest) apart. */
static void set_repeat_key(shk_toolcall *tc, const uint8_t raw[SHK_SHA256_LEN])
{
	const char *name = tc->tool_name ? tc->tool_name : "";
	shk_sha256 st;

	shk_sha256_init(&st);
	shk_sha256_update(&st, name, strlen(name) + 1);
	shk_sha256_update(&st, raw, SHK_SHA256_LEN);
	shk_sha256_final(&st, tc->repeat_key);
}

int shk_toolcall_prepare(shk_toolcall *tc)
{
	uint8_t raw[SHK_SHA256_LEN];

	if (!tc)
		return -EINVAL;
	tc->signal_given = false;
	tc->checked_params = tc->params;
	tc->params_digest_ok = false;
	tc->params_digest[0] = '\0';
	memset(tc->repeat_key, 0, sizeof(tc->repeat_key));
	tc->params_status = shk_canon_check_params(tc->params);
	if (tc->params_status != SHK_CANON_OK)
		return -EINVAL;
	if (shk_canon_sha256(tc->params, raw) != 0) {
		tc->params_status = SHK_CANON_FOREIGN;
		return -EINVAL;
	}
	shk_hex(raw, sizeof(raw), tc->params_digest);
	tc->params_digest_ok = true;
	set_repeat_key(tc, raw);
	return 0;
}

int shk_toolcall_set_digest(shk_toolcall *tc, const uint8_t digest[SHK_SHA256_LEN])
{
	if (!tc || !digest || tc->checked_params != tc->params || !tc->params_digest_ok)
		return -EINVAL;
	shk_hex(digest, SHK_SHA256_LEN, tc->params_digest);
	set_repeat_key(tc, digest);
	return 0;
}

static int unhex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int shk_toolcall_prepare_logged(shk_toolcall *tc, shk_canon_status status, const char *digest_hex,
                                bool error_signal)
{
	uint8_t raw[SHK_SHA256_LEN];

	if (!tc || !digest_hex || strlen(digest_hex) != SHK_SHA256_HEX_LEN)
		return -EINVAL;
	for (size_t i = 0; i < SHK_SHA256_LEN; i++) {
		int hi = unhex_digit(digest_hex[2 * i]), lo = unhex_digit(digest_hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		raw[i] = (uint8_t)(hi << 4 | lo);
	}
	tc->checked_params = tc->params;
	tc->params_status = status;
	tc->params_digest_ok = true;
	memcpy(tc->params_digest, digest_hex, SHK_SHA256_HEX_LEN + 1);
	set_repeat_key(tc, raw);
	tc->signal_given = true;
	tc->error_signal = error_signal;
	return 0;
}

/* tc itself when shk_toolcall_prepare() ran on its current params; else a
 * prepared copy in tmp (pure and allocation-free, just slower), so that an
 * unprepared call never shares a repeat key or trusts a stale digest. */
static const shk_toolcall *prepared(const shk_toolcall *tc, shk_toolcall *tmp)
{
	if (tc->checked_params == tc->params && tc->params_digest_ok)
		return tc;
	*tmp = *tc;
	(void)shk_toolcall_prepare(tmp);
	return tmp;
}

/* ---- creation ------------------------------------------------------------- */

static size_t or_default(size_t v, size_t def)
{
	return v ? v : def;
}

void shk_session_free(shk_session *s)
{
	if (!s)
		return;
	shk_nonceset_free(s->nonces);
	free(s->repeat);
	free(s->pending);
	free(s->pending_used);
	free(s->pending_tr);
	free(s->pending_done);
	free(s->pending_resume);
	shk_doc_free(s->doc);
	free(s->inflight);
	free(s);
}

int shk_session_new(const shk_session_config *config, shk_session **ret_session)
{
	shk_session *s;
	size_t keys;
	int r;

	if (!config || !ret_session)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *config;
	s->cfg.max_nonce_ranges = or_default(config->max_nonce_ranges, 4096);
	s->cfg.max_repeat_keys = keys = or_default(config->max_repeat_keys, 4096);
	s->cfg.max_pending = or_default(config->max_pending, 64);
	s->cfg.max_inflight = or_default(config->max_inflight, 256);
	if (keys > SIZE_MAX / 4) {
		free(s);
		return -EINVAL;
	}
	for (s->repeat_cap = 8; s->repeat_cap < 2 * keys; s->repeat_cap *= 2)
		;
	s->initial = s->remaining = config->guard.budget_usd;
	s->repeat = calloc(s->repeat_cap, sizeof(*s->repeat));
	s->pending = calloc(s->cfg.max_pending, sizeof(*s->pending));
	s->pending_used = calloc(s->cfg.max_pending, sizeof(*s->pending_used));
	s->pending_tr = calloc(s->cfg.max_pending, sizeof(*s->pending_tr));
	s->pending_done = calloc(s->cfg.max_pending, sizeof(*s->pending_done));
	s->pending_resume = calloc(s->cfg.max_pending, sizeof(*s->pending_resume));
	r = shk_doc_new(&s->doc);
	s->inflight = calloc(s->cfg.max_inflight, sizeof(*s->inflight));
	if (r == 0)
		r = shk_nonceset_new(s->cfg.max_nonce_ranges, &s->nonces);
	if (r < 0 || !s->repeat || !s->pending || !s->pending_used || !s->pending_tr || !s->pending_done ||
	    !s->pending_resume || !s->inflight) {
		shk_session_free(s);
		return r < 0 ? r : -ENOMEM;
	}
	*ret_session = s;
	return 0;
}

/* ---- tables ----------------------------------------------------------------- */

/* Slot holding key, or the empty slot where it would go. */
static size_t repeat_slot(const shk_session *s, const uint8_t key[SHK_SHA256_LEN])
{
	uint64_t h;
	size_t i;

	memcpy(&h, key, sizeof(h)); /* the key is a SHA-256: its bytes are uniform */
	for (i = (size_t)h & (s->repeat_cap - 1);; i = (i + 1) & (s->repeat_cap - 1))
		if (!s->repeat[i].used || memcmp(s->repeat[i].key, key, SHK_SHA256_LEN) == 0)
			return i;
}

static uint64_t repeat_get(const shk_session *s, const shk_toolcall *tc)
{
	size_t i = repeat_slot(s, tc->repeat_key);
	return s->repeat[i].used ? s->repeat[i].count : 0;
}

static bool repeat_can_add(const shk_session *s, const shk_toolcall *tc)
{
	return s->repeat[repeat_slot(s, tc->repeat_key)].used || s->repeat_used < s->cfg.max_repeat_keys;
}

static int pending_find(const shk_session *s, uint64_t nonce)
{
	for (size_t i = 0; i < s->cfg.max_pending; i++)
		if (s->pending_used[i] && s->pending[i].nonce == nonce)
			return (int)i;
	return -1;
}

/* The entry a call meets in evaluate: its own hold, or the hold it is the
 * operator-given successor of. */
static int pending_find_call(const shk_session *s, uint64_t nonce)
{
	for (size_t i = 0; i < s->cfg.max_pending; i++)
		if (s->pending_used[i] && (s->pending[i].nonce == nonce ||
		    (s->pending[i].has_successor && s->pending[i].successor_nonce == nonce)))
			return (int)i;
	return -1;
}

static bool pending_final(shk_pending_status st)
{
	return st == SHK_PENDING_REJECTED || st == SHK_PENDING_EXPIRED || st == SHK_PENDING_CONSUMED ||
	       st == SHK_PENDING_CANCELLED;
}

/* A slot for a new held call: an empty one, else one whose story is over
 * (waiting and approved-but-unexecuted calls are never evicted). */
static int pending_free_slot(const shk_session *s)
{
	int resolved = -1;

	for (size_t i = 0; i < s->cfg.max_pending; i++) {
		if (!s->pending_used[i])
			return (int)i;
		if (resolved < 0 && pending_final(s->pending[i].status))
			resolved = (int)i;
	}
	return resolved;
}

/* ---- evaluate ---------------------------------------------------------------- */

static void view(const shk_session *s, const shk_toolcall *tc, shk_outcome *o, shk_config *c,
		 shk_state *st, shk_call *call)
{
	const shk_guard_config *g = &s->cfg.guard;
	const char *name = tc->tool_name ? tc->tool_name : "";

	o->error_signal = g->error_amplification && g->max_repeat_calls > 0 &&
			  (tc->signal_given ? tc->error_signal : shk_error_signal_in_val(tc->params));
	o->max_repeat_calls = tc->repeat_exempt ? 0 :
			      shk_effective_repeat_limit(g->max_repeat_calls, g->error_amplification,
							 o->error_signal);
	memset(c, 0, sizeof(*c));
	c->budget_usd = shk_num_real(g->budget_usd);
	if (o->max_repeat_calls > 0) /* the policy's 0 means "off": absent for decide() */
		c->max_repeat_calls = shk_num_int(o->max_repeat_calls);
	c->hitl_mode = g->hitl_mode == SHK_HITL_ALWAYS	     ? SHK_CFG_HITL_ALWAYS :
		       g->hitl_mode == SHK_HITL_ON_THRESHOLD ? SHK_CFG_HITL_ON_THRESHOLD :
							       SHK_CFG_HITL_OTHER;
	c->hitl_budget_threshold = shk_num_real(g->hitl_budget_threshold);

	o->circuit_tripped = s->tripped;
	o->budget_initial_usd = s->initial;
	o->budget_remaining_usd = o->budget_after_usd = s->remaining;
	o->repeat_count = repeat_get(s, tc);
	o->total_calls = s->total_calls;
	memset(st, 0, sizeof(*st));
	st->circuit_tripped = s->tripped;
	st->budget_initial_usd = shk_num_real(s->initial);
	st->budget_remaining_usd = shk_num_real(s->remaining);
	st->nonce_set = s->nonces;
	/* Syscall granularity: decide() sees this tool as the last one, with the
	 * count of earlier allowed calls with the same tool AND params. */
	st->has_repeat_count = true;
	st->repeat_count = shk_num_int(o->repeat_count > INT64_MAX ? INT64_MAX : (int64_t)o->repeat_count);
	st->last_tool_name = name;
	st->last_tool_name_len = strlen(name);

	memset(call, 0, sizeof(*call));
	call->tool_name = name;
	call->tool_name_len = strlen(name);
	call->params = tc->params;
	call->has_nonce_u64 = true;
	call->nonce_u64 = tc->nonce;
	call->estimated_cost_usd = shk_num_real(tc->estimated_cost_usd);
	if (tc->checked_params == tc->params) {
		call->checked_params = tc->checked_params;
		call->params_status = tc->params_status;
		call->params_digest_ok = tc->params_digest_ok;
		memcpy(call->params_digest, tc->params_digest, sizeof(call->params_digest));
	}
}

/* decide() reads absent and null params as {}, as the reference does. The
 * runtime builds the params of every call itself, always an object: a call
 * without one is shackle's own fault and is refused, never judged as {}. */
static shk_decision decide_call(const shk_config *c, const shk_state *st, const shk_call *call,
				const shk_toolcall *tc)
{
	if (shk_val_type(tc->params) != SHK_OBJECT)
		return (shk_decision){ SHK_DENY, SHK_R_MALFORMED_INPUT };
	return shk_decide(c, st, call);
}

static void set(shk_outcome *o, shk_verdict v, shk_reason r, shk_layer l, bool trips)
{
	o->verdict = v;
	o->reason = r;
	o->layer = l;
	o->trips = trips;
}

static bool released_by_human(shk_decision d)
{
	return d.verdict == SHK_ALLOW &&
	       (d.reason == SHK_R_HT_APPROVE || d.reason == SHK_R_HT_MODIFY_SUCCESSOR);
}

#define SHARED_UUSD_MAX (1LL << 53) /* scope.h: exact in Redis' Lua */

static bool shared_ok(const shk_session_shared *sh)
{
	return !sh->unavailable &&
	       (!sh->budget || (sh->limit_uusd >= 0 && sh->limit_uusd <= SHARED_UUSD_MAX &&
				sh->spent_uusd >= 0 && sh->spent_uusd <= SHARED_UUSD_MAX &&
				sh->reserved_uusd >= 0 && sh->reserved_uusd <= SHARED_UUSD_MAX));
}

/* decide() is shown the scope's budget and breaker (session.h); *remaining
 * is the budget that an ALLOW's estimate is taken from. */
static void view_shared(const shk_session_shared *sh, shk_outcome *o, shk_state *st, double *remaining)
{
	if (sh->budget) {
		o->budget_initial_usd = (double)sh->limit_uusd / 1e6;
		*remaining = (double)(sh->limit_uusd - sh->spent_uusd - sh->reserved_uusd) / 1e6;
		o->budget_remaining_usd = o->budget_after_usd = *remaining;
		st->budget_initial_usd = shk_num_real(o->budget_initial_usd);
		st->budget_remaining_usd = shk_num_real(*remaining);
	}
	if (sh->breaker && sh->breaker_open)
		o->circuit_tripped = st->circuit_tripped = true;
}

int shk_session_evaluate(const shk_session *s, const shk_toolcall *tc, shk_action action, int64_t now_ns,
			 shk_outcome *ret)
{
	return shk_session_evaluate_shared(s, tc, action, now_ns, NULL, ret);
}

int shk_session_evaluate_shared(const shk_session *s, const shk_toolcall *tc, shk_action action,
				int64_t now_ns, const shk_session_shared *sh, shk_outcome *ret)
{
	const shk_guard_config *g;
	shk_config c;
	shk_state st;
	shk_call call;
	shk_outcome o;
	shk_toolcall tmp;
	double remaining;
	bool sh_ok = !sh || shared_ok(sh);
	int pi;

	if (!ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret)); /* all-zero is DENY */
	if (!s || !tc)
		return -EINVAL;
	tc = prepared(tc, &tmp);
	g = &s->cfg.guard;
	memset(&o, 0, sizeof(o));
	view(s, tc, &o, &c, &st, &call);
	remaining = s->remaining;
	if (sh && sh_ok)
		view_shared(sh, &o, &st, &remaining);
	pi = pending_find_call(s, tc->nonce);
	if (pi >= 0)
		st.pending_transition = s->pending_tr[pi];
	o.window_count = shk_window_count_at(&s->window, g->window_duration_s, now_ns);
	o.decided = decide_call(&c, &st, &call, tc);

	/* A human rejection (or a human replacing the call by a successor) is
	 * the process working, not a runaway: it does not trip. Every other
	 * decide() DENY does (replays included). */
	if (o.decided.verdict == SHK_DENY)
		set(&o, SHK_DENY, o.decided.reason, SHK_LAYER_DECIDE,
		    g->trip_on_deny && o.decided.reason != SHK_R_HT_REJECT &&
		    o.decided.reason != SHK_R_HT_SUPERSEDED_ORIGINAL);
	else if (action == SHK_ACTION_DENY || (action != SHK_ACTION_ALLOW && action != SHK_ACTION_HITL))
		set(&o, SHK_DENY, SHK_R_POLICY_DENIED, SHK_LAYER_POLICY, false);
	else if (o.decided.verdict == SHK_HITL)
		set(&o, SHK_HITL, o.decided.reason, SHK_LAYER_DECIDE, false);
	else if (action == SHK_ACTION_HITL && !released_by_human(o.decided))
		set(&o, SHK_HITL, SHK_R_POLICY_HITL, SHK_LAYER_POLICY, false);
	else if (shk_global_exceeded(s->total_calls, g->max_total_calls))
		set(&o, SHK_DENY, SHK_R_GLOBAL_LIMIT, SHK_LAYER_GLOBAL, g->trip_on_deny);
	else if (shk_window_exceeded(&s->window, g->window_duration_s, g->window_max_calls, now_ns))
		set(&o, SHK_DENY, SHK_R_WINDOW_EXCEEDED, SHK_LAYER_WINDOW, g->trip_on_deny);
	else if (!isfinite(tc->estimated_cost_usd) || tc->estimated_cost_usd < 0)
		set(&o, SHK_DENY, SHK_R_INVALID_COST, SHK_LAYER_SESSION, false);
	else if (!shk_nonceset_can_insert(s->nonces, tc->nonce) ||
		 (!tc->repeat_exempt && !repeat_can_add(s, tc)))
		set(&o, SHK_DENY, SHK_R_SESSION_CAPACITY, SHK_LAYER_SESSION, false);
	else
		set(&o, SHK_ALLOW, o.decided.reason, SHK_LAYER_DECIDE, false);

	/* Open only in the scope: the scope's breaker denies, the session's
	 * own stays closed, so that the operator's reset of the scope reopens
	 * every session of it. */
	if (o.decided.verdict == SHK_DENY && o.decided.reason == SHK_R_CIRCUIT_OPEN && !s->tripped)
		o.trips = false;
	if (o.verdict == SHK_HITL && pending_find(s, tc->nonce) < 0 && pending_free_slot(s) < 0)
		set(&o, SHK_DENY, SHK_R_SESSION_CAPACITY, SHK_LAYER_SESSION, false);
	/* Whatever decide() said: a scope not read is no view to release a
	 * call on, and a reservation refused by Redis is never an ALLOW. */
	if (!sh_ok || (sh && sh->budget && !sh->granted && o.verdict == SHK_ALLOW))
		set(&o, SHK_DENY, SHK_R_SHARED_UNAVAILABLE, SHK_LAYER_SCOPE, false);
	if (o.verdict == SHK_ALLOW)
		o.budget_after_usd = remaining - tc->estimated_cost_usd;
	*ret = o;
	return 0;
}

/* ---- commit --------------------------------------------------------------- */

static int commit_allow(shk_session *s, const shk_toolcall *tc, int64_t now_ns)
{
	size_t i = repeat_slot(s, tc->repeat_key);
	struct inflight *f;
	int r, pi;

	if (!tc->repeat_exempt && !s->repeat[i].used && s->repeat_used >= s->cfg.max_repeat_keys)
		return -ENOSPC;
	if (!isfinite(tc->estimated_cost_usd) || tc->estimated_cost_usd < 0)
		return -EINVAL;
	if ((r = shk_nonceset_insert(s->nonces, tc->nonce)) < 0)
		return r;
	if (!tc->repeat_exempt && !s->repeat[i].used) {
		memcpy(s->repeat[i].key, tc->repeat_key, SHK_SHA256_LEN);
		s->repeat[i].used = true;
		s->repeat_used++;
	}
	if (!tc->repeat_exempt)
		s->repeat[i].count++;
	s->total_calls++;
	shk_window_record(&s->window, s->cfg.guard.window_duration_s, now_ns);
	s->remaining -= tc->estimated_cost_usd;
	s->spent += tc->estimated_cost_usd;
	f = &s->inflight[s->inflight_next];
	s->inflight_next = (s->inflight_next + 1) % s->cfg.max_inflight;
	f->nonce = tc->nonce;
	f->charged = tc->estimated_cost_usd;
	f->used = true;
	/* A released approval is single-use: a replay of it now meets Rule 3
	 * with a terminal transition (duplicate_resume_no_effect). */
	pi = pending_find_call(s, tc->nonce);
	if (pi >= 0 && s->pending_tr[pi]) {
		s->pending[pi].status = SHK_PENDING_CONSUMED;
		s->pending_tr[pi] = s->pending_done[pi];
	}
	return 0;
}

static int commit_hitl(shk_session *s, const shk_toolcall *tc, const shk_outcome *o, int64_t now_ns)
{
	int i = pending_find(s, tc->nonce);
	shk_pending *p;

	if (i >= 0) {
		/* Held again. A deferred or escalated call keeps its decision
		 * and, like every re-hold, the time it was first held (the
		 * timeout runs from there). */
		p = &s->pending[i];
		if (o->reason != SHK_R_HT_DEFER_ESCALATE) {
			p->status = SHK_PENDING_WAITING;
			p->reason = o->reason;
			s->pending_tr[i] = s->pending_done[i] = s->pending_resume[i] = NULL;
		}
		return 0;
	}
	i = pending_free_slot(s);
	if (i < 0)
		return -ENOSPC;
	p = &s->pending[i];
	memset(p, 0, sizeof(*p));
	p->nonce = tc->nonce;
	memcpy(p->params_digest, tc->params_digest, sizeof(p->params_digest));
	p->reason = o->reason;
	p->held_at_ns = now_ns;
	p->status = SHK_PENDING_WAITING;
	s->pending_used[i] = true;
	s->pending_tr[i] = s->pending_done[i] = s->pending_resume[i] = NULL;
	return 0;
}

int shk_session_commit(shk_session *s, const shk_toolcall *tc, const shk_outcome *o, int64_t now_ns)
{
	shk_toolcall tmp;

	if (!s || !tc || !o)
		return -EINVAL;
	tc = prepared(tc, &tmp);
	switch (o->verdict) {
	case SHK_ALLOW:
		return commit_allow(s, tc, now_ns);
	case SHK_HITL:
		return commit_hitl(s, tc, o, now_ns);
	case SHK_DENY:
		if (o->trips && !s->tripped) {
			s->tripped = true;
			s->trip_reason = o->reason;
			s->tripped_at_ns = now_ns;
		}
		return 0;
	}
	return -EINVAL;
}

int shk_session_post_exec(shk_session *s, uint64_t nonce, double actual)
{
	if (!s || !isfinite(actual) || actual < 0)
		return -EINVAL;
	for (size_t i = 0; i < s->cfg.max_inflight; i++) {
		struct inflight *f = &s->inflight[i];
		if (!f->used || f->nonce != nonce)
			continue;
		s->remaining -= actual - f->charged;
		s->spent += actual - f->charged;
		f->used = false;
		return 0;
	}
	return -ENOENT;
}

void shk_session_reset(shk_session *s)
{
	if (!s)
		return;
	s->tripped = false;
	s->trip_reason = SHK_R_MALFORMED_INPUT;
	s->tripped_at_ns = 0;
}

/* ---- views ------------------------------------------------------------------ */

void shk_session_get_info(const shk_session *s, shk_session_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!s)
		return;
	ret->budget_initial_usd = s->initial;
	ret->budget_remaining_usd = s->remaining;
	ret->budget_spent_usd = s->spent;
	ret->total_calls = s->total_calls;
	ret->circuit_tripped = s->tripped;
	ret->trip_reason = s->trip_reason;
	ret->tripped_at_ns = s->tripped_at_ns;
	ret->repeat_keys = s->repeat_used;
	for (size_t i = 0; i < s->cfg.max_pending; i++)
		ret->pending += s->pending_used[i];
}

int shk_session_pending_get(const shk_session *s, uint64_t nonce, shk_pending *ret)
{
	int i = s ? pending_find(s, nonce) : -1;

	if (i < 0)
		return -ENOENT;
	*ret = s->pending[i];
	return 0;
}

/* What one transition object says (built in the session's document). */
struct tr_spec {
	const char *decision, *status;
	const char *digest;          /* original_args_digest */
	bool successor, resume;
	uint64_t successor_nonce;
	const char *successor_digest;
};

static int set_nonce(shk_session *s, shk_val *o, const char *key, uint64_t nonce)
{
	/* A nonce beyond int64 cannot be bound: the digest alone binds then. */
	if (nonce > (uint64_t)INT64_MAX)
		return 0;
	return shk_object_set_str(o, key, shk_int(s->doc, (int64_t)nonce));
}

/* {"decision": d, "original_nonce": n, "original_args_digest": h,
 *  "terminal_status": t} [+ "successor_nonce", "successor_args_digest"]
 *  [+ "resume_attempt": true] in the session's document. */
static const shk_val *transition(shk_session *s, const shk_pending *p, const struct tr_spec *t)
{
	shk_val *o = shk_object(s->doc);
	int r;

	if (!o)
		return NULL;
	r = shk_object_set_str(o, "decision", shk_cstring(s->doc, t->decision));
	if (r == 0)
		r = shk_object_set_str(o, "terminal_status", shk_cstring(s->doc, t->status));
	if (r == 0)
		r = set_nonce(s, o, "original_nonce", p->nonce);
	if (r == 0 && t->digest && t->digest[0])
		r = shk_object_set_str(o, "original_args_digest", shk_cstring(s->doc, t->digest));
	if (r == 0 && t->successor)
		r = set_nonce(s, o, "successor_nonce", t->successor_nonce);
	if (r == 0 && t->successor)
		r = shk_object_set_str(o, "successor_args_digest", shk_cstring(s->doc, t->successor_digest));
	if (r == 0 && t->resume)
		r = shk_object_set_str(o, "resume_attempt", shk_bool(s->doc, true));
	return r == 0 ? o : NULL;
}

static bool hex_digest(const char *d)
{
	size_t n = 0;

	for (; d && d[n]; n++)
		if (!((d[n] >= '0' && d[n] <= '9') || (d[n] >= 'a' && d[n] <= 'f')))
			return false;
	return n == SHK_SHA256_HEX_LEN;
}

/* The decision and statuses each human decision is presented with: the
 * transition while it waits for execution, once executed, and as a
 * second resume sees it. */
static int spec_for(const shk_pending_decision *d, struct tr_spec *tr, struct tr_spec *done)
{
	static const struct {
		shk_pending_status st;
		const char *decision, *status, *done;
	} map[] = {
		{ SHK_PENDING_APPROVED, "approve", "pending", "consumed" },
		{ SHK_PENDING_CONSUMED, "approve", "consumed", "consumed" },
		{ SHK_PENDING_REJECTED, "reject", "rejected", "rejected" },
		{ SHK_PENDING_EXPIRED, "reject", "expired", "expired" },
		{ SHK_PENDING_CANCELLED, "reject", "cancelled", "cancelled" },
		{ SHK_PENDING_DEFERRED, "defer", "pending", NULL },
		{ SHK_PENDING_ESCALATED, "escalate", "pending", NULL },
		{ SHK_PENDING_MODIFIED, "modify", "pending", "consumed" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].st != d->status)
			continue;
		tr->decision = done->decision = map[i].decision;
		tr->status = map[i].status;
		done->status = map[i].done;
		return 0;
	}
	return -EINVAL;
}

int shk_session_pending_resolve(shk_session *s, uint64_t nonce, const shk_pending_decision *d)
{
	int i = s && d ? pending_find(s, nonce) : -1;
	struct tr_spec tr = { 0 }, done = { 0 }, resume;
	const shk_val *vtr = NULL, *vdone = NULL, *vres = NULL;
	shk_pending *p;

	if (!s || !d)
		return -EINVAL;
	if (d->status == SHK_PENDING_WAITING)
		return i < 0 ? -ENOENT : -EINVAL;
	if (spec_for(d, &tr, &done) < 0)
		return -EINVAL;
	if (d->args_digest && !hex_digest(d->args_digest))
		return -EINVAL;
	if (d->status == SHK_PENDING_MODIFIED &&
	    (!hex_digest(d->successor_digest) || d->successor_nonce == nonce ||
	     pending_find_call(s, d->successor_nonce) >= 0 ||
	     shk_nonceset_contains(s->nonces, d->successor_nonce)))
		return -EINVAL;
	if (i < 0)
		return -ENOENT;
	p = &s->pending[i];
	if (pending_final(p->status))
		return -EALREADY;
	tr.digest = done.digest = d->args_digest ? d->args_digest : p->params_digest;
	tr.successor = done.successor = d->status == SHK_PENDING_MODIFIED;
	tr.successor_nonce = done.successor_nonce = d->successor_nonce;
	tr.successor_digest = done.successor_digest = d->successor_digest;
	resume = done.status ? done : tr;
	resume.resume = true;
	vtr = transition(s, p, &tr);
	vdone = done.status ? transition(s, p, &done) : vtr;
	vres = transition(s, p, &resume);
	if (!vtr || !vdone || !vres)
		return -ENOMEM;
	p->status = d->status;
	snprintf(p->bound_digest, sizeof(p->bound_digest), "%s", tr.digest);
	p->has_successor = tr.successor;
	p->successor_nonce = tr.successor ? d->successor_nonce : 0;
	snprintf(p->successor_digest, sizeof(p->successor_digest), "%s",
	         tr.successor ? d->successor_digest : "");
	s->pending_tr[i] = vtr;
	s->pending_done[i] = vdone;
	s->pending_resume[i] = vres;
	return 0;
}

int shk_session_pending_set(shk_session *s, uint64_t nonce, shk_pending_status status)
{
	shk_pending_decision d = { .status = status };

	if (status == SHK_PENDING_MODIFIED)
		return -EINVAL; /* needs a successor: shk_session_pending_resolve */
	return shk_session_pending_resolve(s, nonce, &d);
}

int shk_session_evaluate_resume(const shk_session *s, const shk_toolcall *tc, int64_t now_ns,
                                shk_outcome *ret)
{
	shk_config c;
	shk_state st;
	shk_call call;
	shk_outcome o;
	shk_toolcall tmp;
	int pi;

	if (!ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	if (!s || !tc)
		return -EINVAL;
	pi = pending_find(s, tc->nonce);
	if (pi < 0)
		return -ENOENT;
	if (!pending_final(s->pending[pi].status) || !s->pending_resume[pi])
		return -EBUSY;
	tc = prepared(tc, &tmp);
	memset(&o, 0, sizeof(o));
	view(s, tc, &o, &c, &st, &call);
	st.pending_transition = s->pending_resume[pi];
	o.window_count = shk_window_count_at(&s->window, s->cfg.guard.window_duration_s, now_ns);
	o.decided = decide_call(&c, &st, &call, tc);
	/* Whatever decide() says, a second resume changes nothing: it is
	 * answered, never executed, and the operator's retry is no runaway. */
	set(&o, SHK_DENY, o.decided.verdict == SHK_DENY ? o.decided.reason : SHK_R_DUPLICATE_RESUME,
	    SHK_LAYER_DECIDE, false);
	*ret = o;
	return 0;
}

const shk_val *shk_session_pending_transition(const shk_session *s, uint64_t nonce)
{
	int i = s ? pending_find(s, nonce) : -1;

	return i < 0 ? NULL : s->pending_tr[i];
}

uint64_t shk_session_repeat_count(const shk_session *s, const shk_toolcall *tc)
{
	shk_toolcall tmp;

	return s && tc ? repeat_get(s, prepared(tc, &tmp)) : 0;
}
