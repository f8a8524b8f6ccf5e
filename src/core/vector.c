/* SPDX-License-Identifier: MIT */
/*
 * Loaders for the SHACKLE vector format. Off the decision path: they may be
 * slow and verbose, and they are strict about types so that a vector never
 * reaches decide() with a field the reference would have choked on.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/sha256.h"

#include <shackle/canon.h>
#include <shackle/vector.h>

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool is_null(const shk_val *v)
{
	return !v || shk_val_type(v) == SHK_NULL;
}

static int get_num(const shk_val *obj, const char *part, const char *key, shk_num *ret,
		   char *err, size_t errlen)
{
	const shk_val *v = shk_object_get(obj, key);

	ret->present = false;
	if (is_null(v))
		return 0;
	if (shk_val_type(v) == SHK_INT)
		*ret = shk_num_int(shk_val_int(v));
	else if (shk_val_type(v) == SHK_REAL)
		*ret = shk_num_real(shk_val_real(v));
	else
		return fail(err, errlen, "%s.%s: expected a number", part, key);
	return 0;
}

static int get_typed(const shk_val *obj, const char *part, const char *key, shk_type t,
		     const char *what, const shk_val **ret, char *err, size_t errlen)
{
	const shk_val *v = shk_object_get(obj, key);

	*ret = NULL;
	if (is_null(v))
		return 0;
	if (shk_val_type(v) != t)
		return fail(err, errlen, "%s.%s: expected %s", part, key, what);
	*ret = v;
	return 0;
}

static int check_part(const shk_val *v, const char *part, char *err, size_t errlen)
{
	if (!is_null(v) && shk_val_type(v) != SHK_OBJECT)
		return fail(err, errlen, "%s: expected an object", part);
	return 0;
}

int shk_config_from_val(const shk_val *v, shk_config *ret, char *err, size_t errlen)
{
	const shk_val *mode;
	int r;

	memset(ret, 0, sizeof(*ret));
	if ((r = check_part(v, "config", err, errlen)) < 0 ||
	    (r = get_num(v, "config", "budget_usd", &ret->budget_usd, err, errlen)) < 0 ||
	    (r = get_num(v, "config", "max_repeat_calls", &ret->max_repeat_calls, err, errlen)) < 0 ||
	    (r = get_num(v, "config", "hitl_budget_threshold", &ret->hitl_budget_threshold, err, errlen)) < 0 ||
	    (r = get_typed(v, "config", "hitl_mode", SHK_STRING, "a string", &mode, err, errlen)) < 0)
		return r;
	/* Exact comparison, as the reference's ==: "Always" is not "always". */
	if (shk_val_str_eq(mode, "always"))
		ret->hitl_mode = SHK_CFG_HITL_ALWAYS;
	else if (shk_val_str_eq(mode, "on_threshold"))
		ret->hitl_mode = SHK_CFG_HITL_ON_THRESHOLD;
	return 0;
}

int shk_state_from_val(const shk_val *v, shk_state *ret, char *err, size_t errlen)
{
	const shk_val *tripped, *last;
	int r;

	memset(ret, 0, sizeof(*ret));
	if ((r = check_part(v, "state", err, errlen)) < 0 ||
	    (r = get_typed(v, "state", "circuit_tripped", SHK_BOOL, "a boolean", &tripped, err, errlen)) < 0 ||
	    (r = get_num(v, "state", "budget_initial_usd", &ret->budget_initial_usd, err, errlen)) < 0 ||
	    (r = get_num(v, "state", "budget_remaining_usd", &ret->budget_remaining_usd, err, errlen)) < 0 ||
	    (r = get_typed(v, "state", "seen_nonces", SHK_ARRAY, "an array", &ret->seen_nonces, err, errlen)) < 0 ||
	    (r = get_typed(v, "state", "pending_transition", SHK_OBJECT, "an object",
			   &ret->pending_transition, err, errlen)) < 0 ||
	    (r = get_typed(v, "state", "repeat_counts", SHK_OBJECT, "an object", &ret->repeat_counts,
			   err, errlen)) < 0 ||
	    (r = get_typed(v, "state", "last_tool_name", SHK_STRING, "a string", &last, err, errlen)) < 0)
		return r;
	ret->circuit_tripped = tripped && shk_val_bool(tripped);
	ret->last_tool_name = shk_val_str(last, &ret->last_tool_name_len);
	for (size_t i = 0; i < shk_val_len(ret->repeat_counts); i++) {
		const shk_val *c = shk_object_value_at(ret->repeat_counts, i);
		shk_type t = shk_val_type(c);

		/* The reference compares the count with >=: only numbers (or a
		 * null, which it skips) are meaningful. */
		if (t != SHK_INT && t != SHK_REAL && t != SHK_NULL)
			return fail(err, errlen, "state.repeat_counts.%s: expected a number",
				    shk_val_str(shk_object_key_at(ret->repeat_counts, i), NULL));
	}
	return 0;
}

int shk_call_from_val(const shk_val *v, shk_call *ret, char *err, size_t errlen)
{
	const shk_val *tool;
	int r;

	memset(ret, 0, sizeof(*ret));
	if ((r = check_part(v, "call", err, errlen)) < 0 ||
	    (r = get_typed(v, "call", "tool_name", SHK_STRING, "a string", &tool, err, errlen)) < 0 ||
	    (r = get_num(v, "call", "estimated_cost_usd", &ret->estimated_cost_usd, err, errlen)) < 0)
		return r;
	ret->tool_name = shk_val_str(tool, &ret->tool_name_len);
	ret->nonce = shk_object_get(v, "nonce");
	/* Rule 1 judges the params, whatever they are; no type check here. */
	(void)shk_call_set_params(ret, shk_object_get(v, "params"));
	return 0;
}

static int get_expected(const shk_val *v, const char *key, const char **ret, char *err, size_t errlen)
{
	const shk_val *s = shk_object_get(v, key);

	if (shk_val_type(s) != SHK_STRING)
		return fail(err, errlen, "%s: expected a string", key);
	*ret = shk_val_str(s, NULL);
	return 0;
}

int shk_vector_load(const shk_val *v, shk_vector *ret, char *err, size_t errlen)
{
	const shk_val *name;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (shk_val_type(v) != SHK_OBJECT)
		return fail(err, errlen, "expected a vector object");
	ret->raw = v;
	name = shk_object_get(v, "name");
	if (!is_null(name) && shk_val_type(name) != SHK_STRING)
		return fail(err, errlen, "name: expected a string");
	ret->name = shk_val_type(name) == SHK_STRING ? shk_val_str(name, NULL) : "";
	if ((r = shk_config_from_val(shk_object_get(v, "config"), &ret->config, err, errlen)) < 0 ||
	    (r = shk_state_from_val(shk_object_get(v, "state"), &ret->state, err, errlen)) < 0 ||
	    (r = shk_call_from_val(shk_object_get(v, "call"), &ret->call, err, errlen)) < 0 ||
	    (r = get_expected(v, "expected_verdict", &ret->expected_verdict_str, err, errlen)) < 0 ||
	    (r = get_expected(v, "expected_reason", &ret->expected_reason_str, err, errlen)) < 0)
		return r;
	if (shk_verdict_parse(ret->expected_verdict_str, &ret->expected_verdict) < 0)
		return fail(err, errlen, "expected_verdict: \"%s\" is not ALLOW, DENY or HITL",
			    ret->expected_verdict_str);
	if (shk_reason_parse(ret->expected_reason_str, &ret->expected_reason) < 0 ||
	    ret->expected_reason >= SHK_R_SP10_COUNT)
		return fail(err, errlen, "expected_reason: \"%s\" is not an SP/1.0 reason",
			    ret->expected_reason_str);
	ret->canonical_hash = shk_object_get(v, "canonical_hash");
	ret->vector_hash = shk_object_get(v, "vector_hash");
	return 0;
}

static int hash_sink(void *ctx, const char *bytes, size_t len)
{
	shk_sha256_update(ctx, bytes, len);
	return 0;
}

int shk_vector_digest_hex(const shk_val *v, const char *skip_key, char ret_hex[SHK_SHA256_HEX_LEN + 1])
{
	shk_sha256 st;
	uint8_t raw[SHK_SHA256_LEN];
	bool first = true;
	int r = 0;

	if (shk_canon_check(v, SHK_CANON_NO_DEPTH_LIMIT) != SHK_CANON_OK)
		return -EINVAL;
	shk_sha256_init(&st);
	if (!skip_key || shk_val_type(v) != SHK_OBJECT) {
		r = shk_canon_write(v, hash_sink, &st);
	} else {
		/* Members are stored in canonical (code point) order already. */
		r = hash_sink(&st, "{", 1);
		for (size_t i = 0; r == 0 && i < shk_val_len(v); i++) {
			const shk_val *k = shk_object_key_at(v, i);
			if (shk_val_str_eq(k, skip_key))
				continue;
			if (!first)
				r = hash_sink(&st, ",", 1);
			first = false;
			if (r == 0)
				r = shk_canon_write(k, hash_sink, &st);
			if (r == 0)
				r = hash_sink(&st, ":", 1);
			if (r == 0)
				r = shk_canon_write(shk_object_value_at(v, i), hash_sink, &st);
		}
		if (r == 0)
			r = hash_sink(&st, "}", 1);
	}
	if (r < 0)
		return r;
	shk_sha256_final(&st, raw);
	shk_hex(raw, sizeof(raw), ret_hex);
	return 0;
}
