/* SPDX-License-Identifier: MIT */
/*
 * The decision entry, rendered straight into the line buffer in one pass.
 *
 * This is the one entry on the decision path (its target: <= 5 us added
 * per decision, bench/bench_audit). Its members are always the same, so their canonical (sorted)
 * order is written out below instead of being sorted per entry by the
 * object builder, and the `hash` member is rendered as a placeholder in its
 * sorted place: the hash is then taken over the bytes before and after it,
 * which is exactly the line without `,"hash":"..."`, and written into the
 * gap — no second rendering, no memmove. The bytes are those the builder
 * produced (test_audit parses every line, re-serialises it canonically and
 * compares).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <shackle/canon.h>

#include "audit/internal.h"

#define HASH_PLACEHOLDER ",\"hash\":\"" \
	"0000000000000000000000000000000000000000000000000000000000000000\""
_Static_assert(sizeof(HASH_PLACEHOLDER) - 1 == SHK_HASH_MEMBER_LEN, "hash member length");

typedef struct rw {
	shk_buf *b;
	int err;
} rw;

static inline __attribute__((always_inline)) void put(rw *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (w->b->len + n >= w->b->cap) {
		int r = shk_buf_reserve(w->b, n);

		if (r < 0) {
			w->err = r;
			return;
		}
	}
	memcpy(w->b->p + w->b->len, s, n);
	w->b->len += n;
}

#define LIT(w, s) put(w, s, sizeof(s) - 1)

static void fail(rw *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void put_u64(rw *w, uint64_t v)
{
	char t[24], *p = shk_u64_digits(v, t);

	put(w, p, (size_t)(t + 23 - p));
}

static void put_i64(rw *w, int64_t v)
{
	char t[24], *p = shk_u64_digits(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, t);

	if (v < 0)
		*--p = '-';
	put(w, p, (size_t)(t + 23 - p));
}

/* JSON integers of the log are int64 (shk_cob_uint refuses the same). */
static void put_uint(rw *w, uint64_t v)
{
	if (v > INT64_MAX)
		fail(w, -ERANGE);
	else
		put_i64(w, (int64_t)v);
}

static void put_real(rw *w, double v)
{
	char t[SHK_AUDIT_REAL_MAX];
	int n = shk_audit_real_cached(v, t);

	if (n < 0)
		fail(w, -EDOM);
	else
		put(w, t, (size_t)n);
}

static void put_bool(rw *w, bool v)
{
	put(w, v ? "true" : "false", v ? 4 : 5);
}

static void put_strn(rw *w, const char *s, size_t n)
{
	int r;

	if (w->err)
		return;
	r = shk_json_quote_or_hex(w->b, s, n);
	if (r < 0)
		w->err = r;
}

static void put_str(rw *w, const char *s) /* NULL: null */
{
	if (s)
		put_strn(w, s, strlen(s));
	else
		LIT(w, "null");
}

/*
 * The vocabulary strings (verdicts, reasons, layers, actions, statuses) are
 * literals of libshackle: each is quoted once per thread and found again by
 * its address. Never used for caller strings, whose bytes may change.
 */
#define CONST_CACHE 32
static __thread struct {
	const char *s;
	size_t len;
	char q[48];
} const_cache[CONST_CACHE];

static void put_const(rw *w, const char *s)
{
	unsigned slot = (unsigned)((uintptr_t)s >> 3) % CONST_CACHE;
	size_t mark = w->b->len;

	if (s && const_cache[slot].s == s) {
		put(w, const_cache[slot].q, const_cache[slot].len);
		return;
	}
	put_str(w, s);
	if (s && !w->err && w->b->len - mark <= sizeof(const_cache[0].q)) {
		const_cache[slot].s = s;
		const_cache[slot].len = w->b->len - mark;
		memcpy(const_cache[slot].q, w->b->p + mark, const_cache[slot].len);
	}
}

/*
 * Prepared params passed the canonical check when their digest was taken,
 * so they are written here without shk_canon_write's second check walk, by
 * the same rules (members are stored sorted; reals as Python's repr). Deeper
 * than the Rule 1 limit, or anything unexpected: nonzero, and the caller
 * writes them with shk_canon_write instead.
 */
static int write_val(rw *w, const shk_val *v, int depth)
{
	char t[SHK_AUDIT_REAL_MAX];
	const char *s;
	size_t n;
	int r = 0;

	if (depth > SHK_CANON_MAX_DEPTH)
		return -E2BIG;
	switch (shk_val_type(v)) {
	case SHK_NULL: LIT(w, "null"); break;
	case SHK_BOOL: put_bool(w, shk_val_bool(v)); break;
	case SHK_INT: put_i64(w, shk_val_int(v)); break;
	case SHK_REAL:
		r = shk_canon_format_real(shk_val_real(v), t, SHK_AUDIT_REAL_MAX);
		if (r > 0)
			put(w, t, (size_t)r);
		break;
	case SHK_STRING:
		s = shk_val_str(v, &n);
		r = w->err ? 0 : shk_json_quote(w->b, s, n);
		break;
	case SHK_ARRAY:
		LIT(w, "[");
		n = shk_val_len(v);
		for (size_t i = 0; r >= 0 && i < n; i++) {
			if (i)
				LIT(w, ",");
			r = write_val(w, shk_array_at(v, i), depth + 1);
		}
		LIT(w, "]");
		break;
	case SHK_OBJECT:
		LIT(w, "{");
		n = shk_val_len(v);
		for (size_t i = 0; r >= 0 && i < n; i++) {
			if (i)
				LIT(w, ",");
			r = write_val(w, shk_object_key_at(v, i), depth + 1);
			LIT(w, ":");
			if (r >= 0)
				r = write_val(w, shk_object_value_at(v, i), depth + 1);
		}
		LIT(w, "}");
		break;
	default:
		return -EINVAL;
	}
	return r < 0 ? r : w->err;
}

static int buf_sink(void *ctx, const char *bytes, size_t len)
{
	return shk_buf_put(ctx, bytes, len);
}

static void put_val(rw *w, const shk_val *v) /* NULL: null */
{
	int r;

	if (!v) {
		LIT(w, "null");
		return;
	}
	if (w->err)
		return;
	r = shk_canon_write(v, buf_sink, w->b);
	if (r < 0)
		w->err = r;
}

/* JSON has no NaN or infinity; an invalid estimate is still evidence. */
static void put_cost(rw *w, double cost)
{
	if (isnan(cost))
		LIT(w, "\"nan\"");
	else if (isinf(cost))
		put_str(w, cost > 0 ? "inf" : "-inf");
	else
		put_real(w, cost);
}

/*
 * "params", "params_hash", "params_status": what decide() saw, the digest of
 * the real params, Rule 1's status. Next to redacted params only the digest
 * the call was prepared with is written (shackle-run's keyed one,
 * docs/audit.md), never a SHA-256 taken here: that would let a short secret
 * be found by hashing guesses. Params that cannot be represented are logged
 * as null with their status.
 */
static void put_params(rw *w, const shk_audit_decision *d)
{
	const shk_toolcall *tc = d->call;
	bool prepared = tc->checked_params == tc->params && tc->params_digest_ok;
	shk_canon_status rule1 = tc->checked_params == tc->params ? tc->params_status
	                                                          : shk_canon_check_params(tc->params);
	const shk_val *shown = d->params_redacted ? d->params_redacted : tc->params;
	uint8_t h[32];
	char hex[65];
	const char *digest = hex;

	if (prepared) {
		digest = tc->params_digest; /* canonical, digest known */
	} else if (d->params_redacted) {
		digest = NULL;
	} else if (shk_canon_check(tc->params, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK ||
	           shk_canon_sha256(tc->params, h) < 0) {
		digest = NULL;
		shown = d->params_redacted;
	} else {
		shk_audit_hex(h, 32, hex);
	}
	LIT(w, ",\"params\":");
	if (prepared && shown == tc->params && !w->err) {
		size_t mark = w->b->len;

		if (write_val(w, shown, 0) != 0 && !w->err) {
			w->b->len = mark;
			put_val(w, shown);
		}
	} else {
		put_val(w, shown);
	}
	LIT(w, ",\"params_hash\":");
	if (digest)
		put_strn(w, digest, SHK_SHA256_HEX_LEN);
	else
		LIT(w, "null");
	LIT(w, ",\"params_status\":");
	put_const(w, shk_canon_status_name(rule1));
}

/* The session view decide() was shown, and decide()'s own answer. */
static void put_view(rw *w, const shk_outcome *o)
{
	LIT(w, ",\"view\":{\"budget_initial\":");
	put_real(w, o->budget_initial_usd);
	LIT(w, ",\"circuit_tripped\":");
	put_bool(w, o->circuit_tripped);
	LIT(w, ",\"decide_reason\":");
	put_const(w, shk_reason_str(o->decided.reason));
	LIT(w, ",\"decide_verdict\":");
	put_const(w, shk_verdict_str(o->decided.verdict));
	LIT(w, ",\"error_signal\":");
	put_bool(w, o->error_signal);
	LIT(w, ",\"max_repeat_calls\":");
	put_uint(w, o->max_repeat_calls);
	LIT(w, ",\"repeat_count\":");
	put_uint(w, o->repeat_count);
	LIT(w, ",\"total_calls\":");
	put_uint(w, o->total_calls);
	LIT(w, ",\"trips\":");
	put_bool(w, o->trips);
	LIT(w, ",\"window_count\":");
	put_uint(w, o->window_count);
	LIT(w, "}");
}

/* Members in canonical order; `hash` is a placeholder (see the top). */
int shk_render_decision(shk_buf *line, const shk_entry_pos *pos, const shk_audit_decision *d,
                        size_t *ret_hash_off)
{
	const shk_outcome *o = d->outcome;
	rw w = { line, 0 };
	size_t hash_off;

	line->len = 0;
	LIT(&w, "{\"budget\":{\"after\":");
	put_real(&w, o->budget_after_usd);
	LIT(&w, ",\"before\":");
	put_real(&w, o->budget_remaining_usd);
	LIT(&w, "},\"call\":");
	put_uint(&w, d->call_number);
	LIT(&w, ",\"cost\":");
	put_cost(&w, d->call->estimated_cost_usd);
	LIT(&w, ",\"exe\":");
	put_str(&w, d->exe);
	hash_off = line->len;
	LIT(&w, HASH_PLACEHOLDER);
	LIT(&w, ",\"inputs\":");
	put_val(&w, d->inputs);
	LIT(&w, ",\"kind\":\"decision\",\"layer\":");
	put_const(&w, shk_layer_str(o->layer));
	/* A string: u64 nonces do not all fit the int64 integers of the log. */
	LIT(&w, ",\"nonce\":\"");
	put_u64(&w, d->call->nonce);
	LIT(&w, "\",\"operator\":");
	put_str(&w, d->operator_id);
	put_params(&w, d);
	LIT(&w, ",\"pid\":");
	put_i64(&w, d->pid);
	LIT(&w, ",\"policy_action\":");
	put_const(&w, shk_action_name(d->action));
	LIT(&w, ",\"prev_hash\":\"");
	put(&w, pos->prev_hex, SHK_SHA256_HEX_LEN);
	LIT(&w, "\",\"reason\":");
	put_const(&w, shk_reason_str(o->reason));
	LIT(&w, ",\"redacted\":");
	put_bool(&w, d->params_redacted != NULL);
	LIT(&w, ",\"rule\":");
	put_str(&w, d->rule);
	LIT(&w, ",\"seq\":");
	put_uint(&w, pos->seq);
	LIT(&w, ",\"session\":");
	put(&w, pos->session_json, pos->session_json_len);
	if (d->shared) {
		LIT(&w, ",\"shared\":");
		put_val(&w, d->shared);
	}
	LIT(&w, ",\"tid\":");
	put_i64(&w, d->tid);
	LIT(&w, ",\"time_ns\":");
	put_i64(&w, d->time_ns);
	LIT(&w, ",\"tool\":");
	put_str(&w, d->call->tool_name);
	LIT(&w, ",\"verdict\":");
	put_const(&w, shk_verdict_str(o->verdict));
	put_view(&w, o);
	LIT(&w, "}");
	if (w.err)
		return w.err;
	line->p[line->len] = 0;
	*ret_hash_off = hash_off;
	return 0;
}
