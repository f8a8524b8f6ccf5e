/* SPDX-License-Identifier: MIT */
/*
 * decide(): SHACKLE SP/1.0 §3.2 with the SP/1.0.1 revisions. Pure, total,
 * allocation-free. Where the reference gets a behaviour from Python's data
 * model (numeric equality across int/float/bool, str.strip().lower()), this
 * file reproduces it; docs/decide.md lists each case and the tests pin them.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <shackle/decide.h>

#include "core/json_internal.h"
#include "core/num.h"

static const char *const reason_names[SHK_R__COUNT] = {
	[SHK_R_MALFORMED_INPUT] = "policy_violation:malformed_input",
	[SHK_R_CIRCUIT_OPEN] = "circuit_open",
	[SHK_R_DUPLICATE_NONCE] = "policy_violation:duplicate_nonce",
	[SHK_R_DUPLICATE_RESUME] = "policy_violation:duplicate_resume_no_effect",
	[SHK_R_HT_APPROVE] = "hitl_transition:approve",
	[SHK_R_HT_MODIFY_SUCCESSOR] = "hitl_transition:modify_successor",
	[SHK_R_HT_REJECT] = "hitl_transition:reject",
	[SHK_R_HT_SUPERSEDED_ORIGINAL] = "hitl_transition:superseded_original",
	[SHK_R_HT_TERMINAL_NO_EFFECT] = "hitl_transition:terminal_no_effect",
	[SHK_R_HT_NONCE_MISMATCH] = "hitl_transition:nonce_mismatch",
	[SHK_R_HT_DIGEST_MISMATCH] = "hitl_transition:digest_mismatch",
	[SHK_R_HT_UNBOUND_AUTHORIZATION] = "hitl_transition:unbound_authorization",
	[SHK_R_HT_UNKNOWN_DECISION] = "hitl_transition:unknown_decision",
	[SHK_R_HT_DEFER_ESCALATE] = "hitl_transition:defer_escalate",
	[SHK_R_BUDGET_EXHAUSTED] = "budget_exhausted",
	[SHK_R_BUDGET_OVERRUN] = "budget_overrun",
	[SHK_R_MAX_REPEAT_EXCEEDED] = "max_repeat_exceeded",
	[SHK_R_HITL_ALL_CALLS] = "hitl_all_calls",
	[SHK_R_BUDGET_THRESHOLD] = "budget_threshold",
	[SHK_R_OPAQUE_CONTEXT] = "fail_closed:opaque_context",
	[SHK_R_WITHIN_THRESHOLDS] = "within_thresholds",
	[SHK_R_WINDOW_EXCEEDED] = "window_exceeded",
	[SHK_R_GLOBAL_LIMIT] = "global_limit",
	[SHK_R_POLICY_DENIED] = "policy_denied",
	[SHK_R_POLICY_HITL] = "policy_hitl",
	[SHK_R_SESSION_CAPACITY] = "session_capacity_exceeded",
	[SHK_R_INVALID_COST] = "invalid_cost",
	[SHK_R_SHARED_UNAVAILABLE] = "shared_state_unavailable",
};

const char *shk_verdict_str(shk_verdict v)
{
	switch (v) {
	case SHK_ALLOW:
		return "ALLOW";
	case SHK_DENY:
		return "DENY";
	case SHK_HITL:
		return "HITL";
	}
	return "?";
}

const char *shk_reason_str(shk_reason r)
{
	if ((unsigned)r >= SHK_R__COUNT)
		return "?";
	return reason_names[r];
}

int shk_verdict_parse(const char *s, shk_verdict *ret_v)
{
	static const shk_verdict all[] = { SHK_DENY, SHK_ALLOW, SHK_HITL };

	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, shk_verdict_str(all[i])) == 0) {
			*ret_v = all[i];
			return 0;
		}
	return -EINVAL;
}

int shk_reason_parse(const char *s, shk_reason *ret_r)
{
	for (int i = 0; s && i < SHK_R__COUNT; i++)
		if (strcmp(s, reason_names[i]) == 0) {
			*ret_r = (shk_reason)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- str.strip().lower() ------------------------------------------------ */

/* Length of the str.isspace() character at s[0..n), or 0. */
static size_t space_len(const unsigned char *s, size_t n)
{
	if (n == 0)
		return 0;
	if ((s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x20))
		return 1;
	if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
		return 2;
	if (n < 3)
		return 0;
	if (s[0] == 0xe1 && s[1] == 0x9a && s[2] == 0x80) /* U+1680 */
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x80 && /* U+2000-200A, U+2028, U+2029, U+202F */
	    ((s[2] >= 0x80 && s[2] <= 0x8a) || s[2] == 0xa8 || s[2] == 0xa9 || s[2] == 0xaf))
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f) /* U+205F */
		return 3;
	if (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80) /* U+3000 */
		return 3;
	return 0;
}

/* Same, for the character that ends at s[n-1]. */
static size_t space_len_back(const unsigned char *s, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++)
		if (space_len(s + n - k, k) == k)
			return k;
	return 0;
}

/* Python str.strip(): the slice without leading and trailing whitespace. */
static const unsigned char *strip(const unsigned char *s, size_t *len)
{
	size_t k;

	/* Fast path: printable ASCII at both ends needs no stripping. */
	if (*len && s[0] > 0x20 && s[0] < 0x80 && s[*len - 1] > 0x20 && s[*len - 1] < 0x80)
		return s;
	while ((k = space_len(s, *len)) > 0) {
		s += k;
		*len -= k;
	}
	while ((k = space_len_back(s, *len)) > 0)
		*len -= k;
	return s;
}

/* s.lower() == word for a stripped slice and an ASCII lower-case word. */
static bool lower_eq(const unsigned char *s, size_t len, const char *word)
{
	for (size_t i = 0; i < len; word++) {
		unsigned char c = s[i];

		if (c >= 'A' && c <= 'Z') {
			c = (unsigned char)(c + 32);
			i++;
		} else if (c == 0xe2 && len - i >= 3 && s[i + 1] == 0x84 && s[i + 2] == 0xaa) {
			c = 'k'; /* U+212A KELVIN SIGN lowers to ASCII k */
			i += 3;
		} else {
			i++;
		}
		if (*word == '\0' || c != (unsigned char)*word) /* a NUL in s is data */
			return false;
	}
	return *word == '\0';
}

bool shk_norm_eq(const char *str, size_t len, const char *word)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!s || !word)
		return false;
	s = strip(s, &len);
	return lower_eq(s, len, word);
}

static bool norm_in(const shk_val *v, const char *const *words)
{
	size_t len;
	const unsigned char *s = (const unsigned char *)shk_val_str(v, &len);
	unsigned char first;

	if (!s)
		return false;
	s = strip(s, &len);
	if (len == 0)
		return **words == '\0';
	/* Most keys and values match no word: reject on the first letter. */
	first = s[0] >= 'A' && s[0] <= 'Z' ? (unsigned char)(s[0] + 32) : s[0];
	for (; *words; words++)
		if ((unsigned char)**words == first && lower_eq(s, len, *words))
			return true;
	return false;
}

static const char *const terminal_statuses[] = {
	"rejected", "superseded", "consumed", "executed", "expired", "revoked", "cancelled", NULL,
};
static const char *const context_keys[] = {
	"ctx", "context", "opaque", "raw_context", "blob", NULL,
};
static const char *const opaque_markers[] = {
	"opaque", "unknown", "unevaluable", "untestable", NULL,
};

/* ---- nonces --------------------------------------------------------------- */

static bool present(const shk_val *v)
{
	return v && shk_val_type(v) != SHK_NULL;
}

static bool call_has_nonce(const shk_call *c)
{
	return present(c->nonce) || (!c->nonce && c->has_nonce_u64);
}

/* Python: call_nonce == v (call nonce absent/null is None). */
static bool call_nonce_eq(const shk_call *c, const shk_val *v)
{
	if (c->nonce)
		return shk_val_equal(c->nonce, v);
	if (c->has_nonce_u64)
		return shk_u64_eq_val(c->nonce_u64, v);
	return shk_val_type(v) == SHK_NULL;
}

static bool nonce_seen(const shk_state *s, const shk_call *c)
{
	uint64_t u;

	if (!call_has_nonce(c))
		return false;
	if (shk_val_type(s->seen_nonces) == SHK_ARRAY) {
		size_t n = shk_val_len(s->seen_nonces);
		for (size_t i = 0; i < n; i++)
			if (call_nonce_eq(c, shk_array_at(s->seen_nonces, i)))
				return true;
	}
	if (!s->nonce_set)
		return false;
	if (!c->nonce)
		return shk_nonceset_contains(s->nonce_set, c->nonce_u64);
	return shk_val_as_u64(c->nonce, &u) && shk_nonceset_contains(s->nonce_set, u);
}

/* ---- Rule 4: the HITL transition contract (§3.6) ------------------------ */

static shk_decision verdict(shk_verdict v, shk_reason r)
{
	shk_decision d = { v, r };
	return d;
}

/*
 * Absent and null params are {} (the reference's `call.get("params", {}) or
 * {}`), for Rule 1, the Rule 4 digest and Rule 9 alike. Only those two: its
 * `or` also turns [], "", 0 and false into {}, which the specification's
 * Rule 1 ("not a JSON object") and fail-closed deny (docs/decide.md).
 */
static bool params_empty(const shk_val *params)
{
	return !params || shk_val_type(params) == SHK_NULL;
}

static const shk_val *params_of(const shk_val *params)
{
	static const shk_val no_params = { .type = SHK_OBJECT };

	return params_empty(params) ? &no_params : params;
}

static bool digest_matches(const shk_call *c, const shk_val *want)
{
	char hex[SHK_SHA256_HEX_LEN + 1];
	uint8_t raw[SHK_SHA256_LEN];
	const char *have = hex;
	size_t len;
	const char *w = shk_val_str(want, &len);

	if (shk_val_type(want) != SHK_STRING || len != SHK_SHA256_HEX_LEN)
		return false;
	if (c->checked_params == c->params && c->params_digest_ok) {
		have = c->params_digest;
	} else {
		if (shk_canon_sha256(params_of(c->params), raw) != 0)
			return false;
		shk_hex(raw, sizeof(raw), hex);
	}
	return memcmp(w, have, SHK_SHA256_HEX_LEN) == 0;
}

/* The members of a pending transition that §3.6 reads. */
struct transition {
	const shk_val *decision, *terminal_status, *resume_attempt;
	const shk_val *original_nonce, *original_args_digest;
	const shk_val *successor_nonce, *successor_args_digest;
};

/* One pass over the members instead of a lookup per field: decide() runs
 * on a held syscall. */
static void read_transition(const shk_val *p, struct transition *t)
{
	static const struct {
		const char *name;
		size_t len;
		size_t off;
	} fields[] = {
#define F(f) { #f, sizeof(#f) - 1, offsetof(struct transition, f) }
		F(decision), F(terminal_status), F(resume_attempt), F(original_nonce),
		F(original_args_digest), F(successor_nonce), F(successor_args_digest),
#undef F
	};
	size_t n = shk_val_len(p);

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *k = shk_val_str(shk_object_key_at(p, i), &len);

		for (size_t f = 0; k && f < sizeof(fields) / sizeof(fields[0]); f++)
			if (len == fields[f].len && memcmp(k, fields[f].name, len) == 0) {
				*(const shk_val **)((char *)t + fields[f].off) = shk_object_value_at(p, i);
				break;
			}
	}
}

typedef enum { DEC_UNKNOWN, DEC_APPROVE, DEC_REJECT, DEC_MODIFY, DEC_LATER } decision;

static decision decision_of(const shk_val *v)
{
	static const char *const words[] = { "approve", "reject", "modify", "defer", "escalate" };
	static const decision kinds[] = { DEC_APPROVE, DEC_REJECT, DEC_MODIFY, DEC_LATER, DEC_LATER };
	size_t len;
	const unsigned char *s = (const unsigned char *)shk_val_str(v, &len);

	if (!s)
		return DEC_UNKNOWN;
	s = strip(s, &len);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (lower_eq(s, len, words[i]))
			return kinds[i];
	return DEC_UNKNOWN;
}

static shk_decision resolve_transition(const shk_val *p, const shk_call *c)
{
	struct transition t;
	const shk_val *auth_nonce, *auth_digest;
	bool terminal;
	decision dec;
	shk_reason ok;

	read_transition(p, &t);
	dec = decision_of(t.decision);
	terminal = norm_in(t.terminal_status, terminal_statuses);
	if (dec == DEC_UNKNOWN)
		return verdict(SHK_DENY, SHK_R_HT_UNKNOWN_DECISION);
	if (terminal && shk_val_type(t.resume_attempt) == SHK_BOOL && shk_val_bool(t.resume_attempt))
		return verdict(SHK_DENY, SHK_R_DUPLICATE_RESUME);
	if (dec == DEC_REJECT)
		return verdict(SHK_DENY, SHK_R_HT_REJECT);
	if (dec == DEC_LATER)
		return verdict(SHK_HITL, SHK_R_HT_DEFER_ESCALATE);
	if (dec == DEC_MODIFY) {
		if (present(t.original_nonce) && call_nonce_eq(c, t.original_nonce))
			return verdict(SHK_DENY, SHK_R_HT_SUPERSEDED_ORIGINAL);
		auth_nonce = t.successor_nonce;
		auth_digest = t.successor_args_digest;
		ok = SHK_R_HT_MODIFY_SUCCESSOR;
	} else {
		if (terminal)
			return verdict(SHK_DENY, SHK_R_HT_TERMINAL_NO_EFFECT);
		auth_nonce = t.original_nonce;
		auth_digest = t.original_args_digest;
		ok = SHK_R_HT_APPROVE;
	}
	if (!present(auth_nonce) && !present(auth_digest))
		return verdict(SHK_DENY, SHK_R_HT_UNBOUND_AUTHORIZATION);
	if (present(auth_nonce) && !call_nonce_eq(c, auth_nonce))
		return verdict(SHK_DENY, SHK_R_HT_NONCE_MISMATCH);
	if (present(auth_digest) && !digest_matches(c, auth_digest))
		return verdict(SHK_DENY, SHK_R_HT_DIGEST_MISMATCH);
	return verdict(SHK_ALLOW, ok);
}

/* ---- Rule 9: opaque context ----------------------------------------------- */

/*
 * Mirrors the reference walk: every member of an object is checked; objects
 * are entered, and so are the object items of arrays that are member values.
 * Arrays directly inside arrays are not entered (the reference does not).
 */
static bool has_opaque(const shk_val *obj, int depth)
{
	size_t n = shk_val_len(obj);

	if (depth > SHK_CANON_MAX_DEPTH || shk_val_type(obj) != SHK_OBJECT)
		return false;
	for (size_t i = 0; i < n; i++) {
		const shk_val *k = shk_object_key_at(obj, i), *v = shk_object_value_at(obj, i);
		shk_type vt = shk_val_type(v);

		if (norm_in(k, context_keys) && (vt == SHK_FOREIGN || norm_in(v, opaque_markers)))
			return true;
		if (vt == SHK_OBJECT && has_opaque(v, depth + 1))
			return true;
		if (vt == SHK_ARRAY) {
			size_t m = shk_val_len(v);
			for (size_t j = 0; j < m; j++)
				if (has_opaque(shk_array_at(v, j), depth + 1))
					return true;
		}
	}
	return false;
}

/* ---- the ten rules -------------------------------------------------------- */

static bool params_canonical(const shk_call *c)
{
	if (params_empty(c->params))
		return true;
	if (c->checked_params == c->params)
		return c->params_status == SHK_CANON_OK;
	return shk_canon_check_params(c->params) == SHK_CANON_OK;
}

static bool repeat_exceeded(const shk_config *cfg, const shk_state *s, const shk_call *c)
{
	shk_num rc = s->repeat_count;
	bool over;
	int r;

	if (!cfg->max_repeat_calls.present || !s->last_tool_name || s->last_tool_name_len == 0)
		return false;
	if (!s->has_repeat_count) {
		const shk_val *v;

		if (shk_val_type(s->repeat_counts) != SHK_OBJECT || shk_val_len(s->repeat_counts) == 0 ||
		    !c->tool_name)
			return false;
		v = shk_object_getn(s->repeat_counts, c->tool_name, c->tool_name_len);
		if (!present(v))
			return false;
		/* A count that is not a number cannot be compared (Python would
		 * raise): closed, it counts as exceeding. */
		if (!shk_val_to_num(v, &rc))
			rc = shk_num_real(INFINITY);
	} else if (!rc.present) {
		return false;
	}
	r = shk_num_cmp(rc, cfg->max_repeat_calls);
	over = r == 0 || r == 1;
	return over && c->tool_name && s->last_tool_name_len == c->tool_name_len &&
	       memcmp(s->last_tool_name, c->tool_name, c->tool_name_len) == 0;
}

static bool below_threshold(const shk_config *cfg, const shk_state *s)
{
	shk_num frac, rem = s->budget_remaining_usd;
	int r;

	if (cfg->hitl_mode != SHK_CFG_HITL_ON_THRESHOLD || !cfg->hitl_budget_threshold.present)
		return false;
	if (!s->budget_initial_usd.present || shk_num_is_zero(s->budget_initial_usd))
		return false;
	/* Absent remaining reads 0 (reference); null too (the reference would
	 * raise; 0 is the more closed answer). */
	if (!rem.present)
		rem = shk_num_int(0);
	frac = shk_num_real(shk_num_to_double(rem) / shk_num_to_double(s->budget_initial_usd));
	r = shk_num_cmp(frac, cfg->hitl_budget_threshold);
	return r == -1 || r == 0;
}

shk_decision shk_decide(const shk_config *config, const shk_state *state, const shk_call *call)
{
	static const shk_config no_config;
	static const shk_state no_state;
	const shk_config *cfg = config ? config : &no_config;
	const shk_state *s = state ? state : &no_state;
	const shk_call *c = call;
	const shk_val *pending = s->pending_transition;
	bool budget_on = cfg->budget_usd.present && shk_num_sign(cfg->budget_usd) == 1;

	/* Rule 1; no call at all (a NULL pointer, not a call without
	 * params) is not judged as the empty call the reference would allow */
	if (!c || !params_canonical(c))
		return verdict(SHK_DENY, SHK_R_MALFORMED_INPUT);
	/* Rule 2 */
	if (s->circuit_tripped)
		return verdict(SHK_DENY, SHK_R_CIRCUIT_OPEN);
	/* Rule 3 */
	if (nonce_seen(s, c)) {
		if (shk_val_type(pending) == SHK_OBJECT &&
		    norm_in(shk_object_get(pending, "terminal_status"), terminal_statuses))
			return verdict(SHK_DENY, SHK_R_DUPLICATE_RESUME);
		return verdict(SHK_DENY, SHK_R_DUPLICATE_NONCE);
	}
	/* Rule 4 */
	if (shk_val_type(pending) == SHK_OBJECT && shk_val_len(pending) > 0)
		return resolve_transition(pending, c);
	/* Rule 5 */
	if (budget_on && s->budget_remaining_usd.present &&
	    (shk_num_sign(s->budget_remaining_usd) == -1 || shk_num_sign(s->budget_remaining_usd) == 0))
		return verdict(SHK_DENY, SHK_R_BUDGET_EXHAUSTED);
	/* Rule 5b */
	if (budget_on && s->budget_remaining_usd.present && c->estimated_cost_usd.present &&
	    shk_num_sign(c->estimated_cost_usd) == 1 &&
	    shk_num_sub_negative(s->budget_remaining_usd, c->estimated_cost_usd))
		return verdict(SHK_DENY, SHK_R_BUDGET_OVERRUN);
	/* Rule 6 */
	if (repeat_exceeded(cfg, s, c))
		return verdict(SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED);
	/* Rule 7 */
	if (cfg->hitl_mode == SHK_CFG_HITL_ALWAYS)
		return verdict(SHK_HITL, SHK_R_HITL_ALL_CALLS);
	/* Rule 8 */
	if (below_threshold(cfg, s))
		return verdict(SHK_HITL, SHK_R_BUDGET_THRESHOLD);
	/* Rule 9 */
	if (has_opaque(c->params, 0))
		return verdict(SHK_HITL, SHK_R_OPAQUE_CONTEXT);
	/* Rule 10 */
	return verdict(SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
}

int shk_call_set_params(shk_call *call, const shk_val *params)
{
	uint8_t raw[SHK_SHA256_LEN];

	if (!call)
		return -EINVAL;
	call->params = params;
	call->checked_params = params;
	call->params_digest_ok = false;
	call->params_digest[0] = '\0';
	call->params_status = shk_canon_check_params(params_of(params));
	if (call->params_status != SHK_CANON_OK)
		return -EINVAL;
	if (shk_canon_sha256(params_of(params), raw) != 0) {
		call->params_status = SHK_CANON_FOREIGN;
		return -EINVAL;
	}
	shk_hex(raw, sizeof(raw), call->params_digest);
	call->params_digest_ok = true;
	return 0;
}
