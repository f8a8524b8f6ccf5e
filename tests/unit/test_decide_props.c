/* SPDX-License-Identifier: MIT */
/*
 * Property tests of decide() (SP/1.0 §3.3, P1–P9) over seeded random inputs:
 * configs, states and calls including hostile values (NaN, ±Inf, non-string
 * keys, foreign values, invalid UTF-8, nesting past the limit, wrong types
 * everywhere). Deterministic: a fixed list of seeds (SHACKLE_PROP_SEED and
 * SHACKLE_PROP_ITERS override them); a failure prints its seed and iteration.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <shackle/canon.h>
#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/vector.h>

#include "testutil.h"
#include "checkrun.h"

static uint64_t rng;

static uint64_t rnd(void) /* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned pick(unsigned n)
{
	return (unsigned)(rnd() % n);
}

static bool chance(unsigned pct)
{
	return pick(100) < pct;
}

static const char *const keys[] = {
	"ctx", " CTX ", "Context", "raw_context", "blob", "opaque", "\xc2\xa0\x63tx", "tool", "target",
	"a", "b", "__noncanonical__", "ctx_id", "amount_usd", "argv",
};
static const char *const strs[] = {
	"opaque", " Unknown ", "UNEVALUABLE", "untestable", "UN\xe2\x84\xaaNOWN", "click", "", "approve",
	"401", "x", "reject", "modify", "defer", " Escalate ", "rejected", "consumed", " EXPIRED ",
	"pending", "superseded", "true",
};

static shk_val *gen_value(shk_doc *d, int depth, bool hostile);

static shk_val *gen_scalar(shk_doc *d, bool hostile)
{
	switch (pick(hostile ? 12 : 9)) {
	case 0:
		return shk_null(d);
	case 1:
		return shk_bool(d, chance(50));
	case 2:
		return shk_int(d, (int64_t)pick(6));
	case 3:
		return shk_int(d, chance(50) ? INT64_MAX : INT64_MIN + (int64_t)pick(3));
	case 4:
		return shk_real(d, (double)pick(6) / (1 + pick(4)));
	case 5:
	case 6:
	case 7:
	case 8:
		return shk_cstring(d, strs[pick(sizeof(strs) / sizeof(strs[0]))]);
	case 9:
		return shk_real(d, chance(50) ? NAN : (chance(50) ? INFINITY : -INFINITY));
	case 10:
		/* invalid UTF-8, or a NUL inside (valid, and must not end a match) */
		return chance(50) ? shk_string(d, "\xff" "opaque", 7) : shk_string(d, "opaque\0", 7);
	default:
		return shk_foreign(d);
	}
}

static shk_val *gen_object(shk_doc *d, int depth, bool hostile)
{
	shk_val *o = shk_object(d);
	unsigned n = pick(5);

	for (unsigned i = 0; i < n; i++) {
		shk_val *k = hostile && chance(3) ? gen_scalar(d, false) :
						    shk_cstring(d, keys[pick(sizeof(keys) / sizeof(keys[0]))]);
		(void)shk_object_set(o, k, gen_value(d, depth + 1, hostile)); /* duplicates refused: fine */
	}
	return o;
}

static shk_val *gen_value(shk_doc *d, int depth, bool hostile)
{
	if (depth > 4 || chance(55))
		return gen_scalar(d, hostile);
	if (chance(50)) {
		shk_val *a = shk_array(d);
		unsigned n = pick(4);
		for (unsigned i = 0; i < n; i++)
			shk_array_append(a, gen_value(d, depth + 1, hostile));
		return a;
	}
	return gen_object(d, depth, hostile);
}

static shk_val *deep_chain(shk_doc *d, int n)
{
	shk_val *v = shk_int(d, 1);

	for (int i = 0; i < n; i++) {
		shk_val *o = shk_object(d);
		shk_object_set_str(o, "ctx", v);
		v = o;
	}
	return v;
}

static shk_num gen_num(bool hostile)
{
	static const double reals[] = { 0.0, 0.1, 0.15, 0.5, 1.0, -0.1, 10.0, 0.25, -0.0 };
	shk_num n;

	if (chance(30)) {
		memset(&n, 0, sizeof(n));
		return n;
	}
	if (hostile && chance(3))
		return shk_num_real(chance(50) ? NAN : INFINITY);
	if (chance(40))
		return shk_num_int((int64_t)pick(5) - 1);
	return shk_num_real(reals[pick(sizeof(reals) / sizeof(reals[0]))]);
}

static shk_val *gen_nonce(shk_doc *d)
{
	switch (pick(7)) {
	case 0:
		return NULL;
	case 1:
		return shk_null(d);
	case 2:
	case 3:
		return shk_int(d, (int64_t)pick(4));
	case 4:
		return shk_real(d, (double)pick(4));
	case 5:
		return shk_bool(d, chance(50));
	default:
		return shk_cstring(d, chance(50) ? "1" : "x");
	}
}

struct input {
	shk_config c;
	shk_state s;
	shk_call k;
	bool injected_opaque;
};

static void gen_pending(shk_doc *d, struct input *in)
{
	static const char *const fields[] = { "original_nonce", "successor_nonce" };
	shk_val *p = shk_object(d);
	char hex[SHK_SHA256_HEX_LEN + 1];

	if (chance(85))
		shk_object_set_str(p, "decision", chance(85) ? shk_cstring(d, strs[7 + pick(7)]) : gen_scalar(d, false));
	if (chance(60))
		shk_object_set_str(p, "terminal_status", shk_cstring(d, strs[14 + pick(5)]));
	if (chance(30))
		shk_object_set_str(p, "resume_attempt", chance(70) ? shk_bool(d, true) : gen_scalar(d, false));
	for (int i = 0; i < 2; i++) {
		shk_val *mine = in->k.nonce ? shk_val_copy(d, in->k.nonce) :
			in->k.has_nonce_u64 ? shk_int(d, (int64_t)in->k.nonce_u64) : NULL;
		if (chance(60))
			shk_object_set_str(p, fields[i], chance(50) && mine ? mine : gen_nonce(d));
	}
	for (int i = 0; i < 2; i++) {
		const char *f = i ? "successor_args_digest" : "original_args_digest";
		if (!chance(60))
			continue;
		if (chance(70) && shk_vector_digest_hex(in->k.params, NULL, hex) == 0)
			shk_object_set_str(p, f, shk_cstring(d, hex));
		else
			shk_object_set_str(p, f, gen_scalar(d, false));
	}
	if (chance(5))
		in->s.pending_transition = gen_scalar(d, false); /* wrong type */
	else
		in->s.pending_transition = p;
}

static void gen_input(shk_doc *d, struct input *in)
{
	static const char *const tools[] = { "click", "curl", "llm" };
	bool hostile = chance(30);

	memset(in, 0, sizeof(*in));
	in->c.budget_usd = gen_num(hostile);
	in->c.max_repeat_calls = gen_num(hostile);
	in->c.hitl_mode = (shk_config_hitl)pick(3);
	in->c.hitl_budget_threshold = gen_num(hostile);

	in->k.tool_name = chance(95) ? tools[pick(3)] : NULL;
	in->k.tool_name_len = in->k.tool_name ? strlen(in->k.tool_name) : 0;
	in->k.estimated_cost_usd = gen_num(hostile);
	if (chance(20)) {
		in->k.has_nonce_u64 = true;
		in->k.nonce_u64 = pick(4);
	} else {
		in->k.nonce = gen_nonce(d);
	}
	{
		shk_val *params = chance(92) ? gen_object(d, 0, hostile) : gen_value(d, 0, true);
		if (chance(3))
			params = deep_chain(d, 60 + (int)pick(10));
		if (shk_val_type(params) == SHK_OBJECT && chance(20)) {
			static const char *const ck[] = { "ctx", " Context ", "BLOB" };
			static const char *const cv[] = { "opaque", " unknown", "Untestable" };
			/* a fresh key that no generated key collides with */
			char key[32];
			snprintf(key, sizeof(key), "%s", ck[pick(3)]);
			if (shk_object_get(params, key) == NULL &&
			    shk_object_set_str(params, key, shk_cstring(d, cv[pick(3)])) == 0)
				in->injected_opaque = true;
		}
		if (chance(80))
			shk_call_set_params(&in->k, params);
		else
			in->k.params = params;
	}

	in->s.circuit_tripped = chance(15);
	in->s.budget_initial_usd = gen_num(hostile);
	in->s.budget_remaining_usd = gen_num(hostile);
	if (chance(60)) {
		shk_val *seen = shk_array(d);
		unsigned n = pick(4);
		for (unsigned i = 0; i < n; i++)
			shk_array_append(seen, gen_nonce(d) ? gen_nonce(d) : shk_null(d));
		in->s.seen_nonces = chance(95) ? seen : gen_scalar(d, false);
	}
	if (chance(40))
		gen_pending(d, in);
	if (chance(30)) {
		in->s.has_repeat_count = true;
		in->s.repeat_count = gen_num(hostile);
	} else if (chance(60)) {
		shk_val *rc = shk_object(d);
		for (int i = 0; i < 3; i++)
			if (chance(50))
				shk_object_set_str(rc, tools[i], chance(90) ? shk_int(d, (int64_t)pick(5)) : gen_scalar(d, false));
		in->s.repeat_counts = rc;
	}
	switch (pick(4)) {
	case 0:
		break;
	case 1:
		in->s.last_tool_name = "";
		break;
	case 2:
		in->s.last_tool_name = tools[pick(3)];
		break;
	default:
		in->s.last_tool_name = in->k.tool_name;
	}
	in->s.last_tool_name_len = in->s.last_tool_name ? strlen(in->s.last_tool_name) : 0;
}

/* ---- independent restatements used by the properties --------------------- */

static shk_verdict verdict_of(shk_reason r)
{
	switch (r) {
	case SHK_R_HT_APPROVE:
	case SHK_R_HT_MODIFY_SUCCESSOR:
	case SHK_R_WITHIN_THRESHOLDS:
		return SHK_ALLOW;
	case SHK_R_HT_DEFER_ESCALATE:
	case SHK_R_HITL_ALL_CALLS:
	case SHK_R_BUDGET_THRESHOLD:
	case SHK_R_OPAQUE_CONTEXT:
		return SHK_HITL;
	default:
		return SHK_DENY;
	}
}

static bool call_nonce_present(const shk_call *k)
{
	return k->nonce ? shk_val_type(k->nonce) != SHK_NULL : k->has_nonce_u64;
}

/* Python `call_nonce == v`, built on shk_val_equal with a scratch value. */
static bool nonce_eq(shk_doc *d, const shk_call *k, const shk_val *v)
{
	const shk_val *mine = k->nonce;

	if (!mine && k->has_nonce_u64)
		mine = shk_int(d, (int64_t)k->nonce_u64);
	if (!mine)
		mine = shk_null(d);
	return shk_val_equal(mine, v);
}

static bool replayed(shk_doc *d, const struct input *in)
{
	if (!call_nonce_present(&in->k) || shk_val_type(in->s.seen_nonces) != SHK_ARRAY)
		return false;
	for (size_t i = 0; i < shk_val_len(in->s.seen_nonces); i++)
		if (nonce_eq(d, &in->k, shk_array_at(in->s.seen_nonces, i)))
			return true;
	return false;
}

static bool pending_active(const struct input *in)
{
	return shk_val_type(in->s.pending_transition) == SHK_OBJECT && shk_val_len(in->s.pending_transition) > 0;
}

/* remaining - estimate >= 0: exact for two integers, float arithmetic
 * otherwise (Python). An absent estimate is 0. */
static bool floor_holds(shk_num rem, shk_num est)
{
	if (!est.present)
		est = shk_num_int(0);
	if (!rem.is_real && !est.is_real)
		return rem.i >= est.i;
	return shk_num_to_double(rem) - shk_num_to_double(est) >= 0;
}

static bool is_null(const shk_val *v)
{
	return !v || shk_val_type(v) == SHK_NULL;
}

static void check_one(shk_doc *d, struct input *in, uint64_t seed, unsigned iter)
{
	shk_decision r = shk_decide(&in->c, &in->s, &in->k), r2;
	bool canon = shk_canon_check_params(in->k.params) == SHK_CANON_OK;
	struct input cp;
	shk_doc *d2 = NULL;

#define PROP(cond, name)                                                                                   \
	ck_assert_msg(cond, "%s violated (seed %llu, iteration %u): got %s %s", name, (unsigned long long)seed, \
		      iter, shk_verdict_str(r.verdict), shk_reason_str(r.reason))

	/* P1 totality: a verdict of the enum with a reason of the vocabulary */
	PROP((unsigned)r.reason < SHK_R_SP10_COUNT && r.verdict == verdict_of(r.reason), "P1");
	/* P2 determinism: again, and on deep copies in a fresh document, with and
	 * without the precomputed params cache */
	r2 = shk_decide(&in->c, &in->s, &in->k);
	PROP(r2.verdict == r.verdict && r2.reason == r.reason, "P2 (same inputs)");
	ck_assert_int_eq(shk_doc_new(&d2), 0);
	cp = *in;
	cp.k.nonce = in->k.nonce ? shk_val_copy(d2, in->k.nonce) : NULL;
	cp.s.seen_nonces = in->s.seen_nonces ? shk_val_copy(d2, in->s.seen_nonces) : NULL;
	cp.s.pending_transition = in->s.pending_transition ? shk_val_copy(d2, in->s.pending_transition) : NULL;
	cp.s.repeat_counts = in->s.repeat_counts ? shk_val_copy(d2, in->s.repeat_counts) : NULL;
	cp.k.params = in->k.params ? shk_val_copy(d2, in->k.params) : NULL;
	cp.k.checked_params = NULL;
	r2 = shk_decide(&cp.c, &cp.s, &cp.k);
	PROP(r2.verdict == r.verdict && r2.reason == r.reason, "P2 (copied inputs, no cache)");
	shk_doc_free(d2);

	/* P3 circuit dominance */
	if (in->s.circuit_tripped && canon)
		PROP(r.verdict == SHK_DENY && r.reason == SHK_R_CIRCUIT_OPEN, "P3");
	/* P4 replay refusal */
	if (replayed(d, in))
		PROP(r.verdict == SHK_DENY, "P4");
	/* P5 repeat limit (Rule 4 resolves a pending transition first) */
	if (!pending_active(in) && in->c.max_repeat_calls.present && in->s.has_repeat_count &&
	    in->s.repeat_count.present && in->s.last_tool_name_len > 0 && in->k.tool_name &&
	    !strcmp(in->s.last_tool_name, in->k.tool_name)) {
		int c = shk_num_cmp(in->s.repeat_count, in->c.max_repeat_calls);
		if (c == 0 || c == 1)
			PROP(r.verdict == SHK_DENY, "P5");
	}
	/* P6 budget floor (an explicit human release outranks the budget, §3.2) */
	if (r.verdict == SHK_ALLOW && r.reason == SHK_R_WITHIN_THRESHOLDS && in->c.budget_usd.present &&
	    shk_num_to_double(in->c.budget_usd) > 0 && in->s.budget_remaining_usd.present &&
	    isfinite(shk_num_to_double(in->s.budget_remaining_usd)) &&
	    isfinite(shk_num_to_double(in->k.estimated_cost_usd)))
		PROP(floor_holds(in->s.budget_remaining_usd, in->k.estimated_cost_usd), "P6");
	/* P7 HITL always: nothing is released without a human */
	if (in->c.hitl_mode == SHK_CFG_HITL_ALWAYS)
		PROP(r.reason != SHK_R_WITHIN_THRESHOLDS, "P7");
	/* P8 fail closed on opaque context */
	if (in->injected_opaque && !pending_active(in))
		PROP(r.verdict != SHK_ALLOW, "P8");
	/* P9 bound authorization */
	if (pending_active(in) && r.verdict == SHK_ALLOW) {
		const shk_val *p = in->s.pending_transition;
		bool modify = r.reason == SHK_R_HT_MODIFY_SUCCESSOR;
		const shk_val *an = shk_object_get(p, modify ? "successor_nonce" : "original_nonce");
		const shk_val *ad = shk_object_get(p, modify ? "successor_args_digest" : "original_args_digest");
		char hex[SHK_SHA256_HEX_LEN + 1];

		PROP(r.reason == SHK_R_HT_APPROVE || modify, "P9 (reason)");
		PROP(!is_null(an) || !is_null(ad), "P9 (bound)");
		if (!is_null(an))
			PROP(nonce_eq(d, &in->k, an), "P9 (nonce)");
		if (!is_null(ad)) {
			PROP(shk_vector_digest_hex(in->k.params, NULL, hex) == 0 && shk_val_str_eq(ad, hex), "P9 (digest)");
			/* any other arguments are refused */
			shk_val *other = shk_val_copy(d, in->k.params);
			shk_object_set_str(other, "__p9_other__", shk_int(d, 1));
			cp = *in;
			shk_call_set_params(&cp.k, other);
			r2 = shk_decide(&cp.c, &cp.s, &cp.k);
			PROP(r2.verdict == SHK_DENY, "P9 (other params denied)");
		}
		if (!is_null(an)) {
			cp = *in;
			cp.k.nonce = shk_cstring(d, "__p9_other_nonce__");
			r2 = shk_decide(&cp.c, &cp.s, &cp.k);
			PROP(r2.verdict == SHK_DENY, "P9 (other nonce denied)");
		}
	}
#undef PROP
}

static unsigned long env_ul(const char *name, unsigned long def)
{
	const char *v = getenv(name);
	return v && *v ? strtoul(v, NULL, 0) : def;
}

START_TEST(properties)
{
	static const uint64_t seeds[] = { 1, 42, 0x5eed, 20260630, 0xdecafbad };
	unsigned long iters = env_ul("SHACKLE_PROP_ITERS", 6000);
	unsigned long one = env_ul("SHACKLE_PROP_SEED", 0);
	unsigned counts[3] = { 0, 0, 0 }, reasons[SHK_R_SP10_COUNT];

	memset(reasons, 0, sizeof(reasons));
	for (size_t si = 0; si < sizeof(seeds) / sizeof(seeds[0]); si++) {
		uint64_t seed = one ? one : seeds[si];
		rng = seed;
		for (unsigned i = 0; i < iters; i++) {
			shk_doc *d = NULL;
			struct input in;

			ck_assert_int_eq(shk_doc_new(&d), 0);
			gen_input(d, &in);
			check_one(d, &in, seed, i);
			{
				shk_decision r = shk_decide(&in.c, &in.s, &in.k);
				counts[r.verdict]++;
				reasons[r.reason]++;
			}
			shk_doc_free(d);
		}
		if (one)
			break;
	}
	/* The generator must reach every verdict and every reason, or the
	 * properties above prove little. */
	ck_assert(counts[SHK_ALLOW] && counts[SHK_DENY] && counts[SHK_HITL]);
	if (!one)
		for (int i = 0; i < SHK_R_SP10_COUNT; i++)
			ck_assert_msg(reasons[i] > 0, "reason %s never produced", shk_reason_str((shk_reason)i));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("decide-properties");
	TCase *tc = tcase_create("P1-P9");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, properties);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
