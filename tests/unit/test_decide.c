/* SPDX-License-Identifier: MIT */
/*
 * decide(): one test per rule, the structural Rule 1 cases JSON cannot
 * express, the type semantics of the reference, the fast paths, totality on
 * NULL inputs, and the project's fixtures run in-process.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <shackle/canon.h>
#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/nonceset.h>
#include <shackle/vector.h>

#include "testutil.h"
#include "checkrun.h"

static shk_doc *doc;

static void setup(void)
{
	ck_assert_int_eq(shk_doc_new(&doc), 0);
}

static void teardown(void)
{
	shk_doc_free(doc);
	doc = NULL;
}

static shk_val *parse(const char *text)
{
	shk_val *v = NULL;
	shk_parse_error err;

	if (shk_json_parse(doc, text, strlen(text), "test", &v, &err) < 0)
		ck_abort_msg("parse of %s failed: %d:%d: %s", text, err.line, err.column, err.text);
	return v;
}

/* decide() over JSON texts through the vector loaders. */
static shk_decision dec(const char *config, const char *state, const char *call)
{
	shk_config c;
	shk_state s;
	shk_call k;
	char err[256];

	ck_assert_msg(shk_config_from_val(parse(config), &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(shk_state_from_val(parse(state), &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(shk_call_from_val(parse(call), &k, err, sizeof(err)) == 0, "%s", err);
	return shk_decide(&c, &s, &k);
}

#define expect(d, v, r)                                                                              \
	do {                                                                                         \
		shk_decision d_ = (d);                                                               \
		ck_assert_msg(d_.verdict == (v) && d_.reason == (r), "got %s %s, want %s %s",       \
			      shk_verdict_str(d_.verdict), shk_reason_str(d_.reason), shk_verdict_str(v), \
			      shk_reason_str(r));                                                    \
	} while (0)

/* A call over params built with the value-model API. */
static shk_decision dec_params(const shk_val *params)
{
	shk_call k;

	memset(&k, 0, sizeof(k));
	shk_call_set_params(&k, params);
	return shk_decide(NULL, NULL, &k);
}

/* ---- vocabulary ------------------------------------------------------------ */

START_TEST(reason_strings)
{
	static const char *const sp10[] = {
		"policy_violation:malformed_input", "circuit_open", "policy_violation:duplicate_nonce",
		"policy_violation:duplicate_resume_no_effect", "hitl_transition:approve",
		"hitl_transition:modify_successor", "hitl_transition:reject",
		"hitl_transition:superseded_original", "hitl_transition:terminal_no_effect",
		"hitl_transition:nonce_mismatch", "hitl_transition:digest_mismatch",
		"hitl_transition:unbound_authorization", "hitl_transition:unknown_decision",
		"hitl_transition:defer_escalate", "budget_exhausted", "budget_overrun",
		"max_repeat_exceeded", "hitl_all_calls", "budget_threshold", "fail_closed:opaque_context",
		"within_thresholds",
	};
	shk_reason r;
	shk_verdict v;

	ck_assert_int_eq(sizeof(sp10) / sizeof(sp10[0]), SHK_R_SP10_COUNT);
	for (int i = 0; i < SHK_R__COUNT; i++) {
		ck_assert_int_eq(shk_reason_parse(shk_reason_str((shk_reason)i), &r), 0);
		ck_assert_int_eq(r, i);
		if (i < SHK_R_SP10_COUNT)
			ck_assert_str_eq(shk_reason_str((shk_reason)i), sp10[i]);
	}
	ck_assert_str_eq(shk_reason_str(SHK_R__COUNT), "?");
	ck_assert_int_eq(shk_reason_parse("Circuit_open", &r), -EINVAL);
	ck_assert_int_eq(shk_reason_parse(NULL, &r), -EINVAL);
	ck_assert_int_eq(shk_verdict_parse("HITL", &v), 0);
	ck_assert_int_eq(v, SHK_HITL);
	ck_assert_int_eq(shk_verdict_parse("allow", &v), -EINVAL);
	ck_assert_str_eq(shk_verdict_str((shk_verdict)7), "?");
	/* A zeroed decision is a DENY. */
	shk_decision z;
	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(z.verdict, SHK_DENY);
}
END_TEST

/* ---- Rule 1: structural ---------------------------------------------------- */

START_TEST(rule1_structural)
{
	shk_val *p;

	p = parse("{\"a\":1}");
	expect(dec_params(p), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);

	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(p, "x", shk_real(doc, NAN)), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(p, "x", shk_real(doc, -INFINITY)), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	/* +Inf deep inside an array */
	p = parse("{\"a\":[1,{\"b\":[]}]}");
	{
		shk_val *q = shk_object(doc), *arr = shk_array(doc);
		ck_assert_int_eq(shk_array_append(arr, shk_real(doc, INFINITY)), 0);
		ck_assert_int_eq(shk_object_set_str(q, "deep", arr), 0);
		p = shk_object(doc);
		ck_assert_int_eq(shk_object_set_str(p, "q", q), 0);
	}
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set(p, shk_int(doc, 1), shk_cstring(doc, "one")), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(p, "f", shk_foreign(doc)), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(p, "s", shk_string(doc, "\xff\xfe", 2)), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set(p, shk_string(doc, "k\xc3", 2), shk_int(doc, 1)), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);

	/* non-objects, the falsy ones included (the reference's `or {}` would
	 * read those as {}; they are not well-typed, docs/decide.md) */
	expect(dec_params(shk_array(doc)), SHK_DENY, SHK_R_MALFORMED_INPUT);
	expect(dec_params(shk_string(doc, "", 0)), SHK_DENY, SHK_R_MALFORMED_INPUT);
	expect(dec_params(shk_int(doc, 0)), SHK_DENY, SHK_R_MALFORMED_INPUT);
	expect(dec_params(shk_bool(doc, false)), SHK_DENY, SHK_R_MALFORMED_INPUT);
	expect(dec_params(shk_foreign(doc)), SHK_DENY, SHK_R_MALFORMED_INPUT);
	/* absent and null params are {}, as in the reference */
	expect(dec_params(shk_null(doc)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	expect(dec_params(NULL), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
}
END_TEST

/* Absent/null params with and without the params cache: canonical, and
 * hashed as {} for Rule 4 (the digest the reference computes). */
START_TEST(params_absent_null_are_empty)
{
	static const char empty[] = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
	const shk_val *pt = parse("{\"decision\":\"approve\",\"original_nonce\":5,"
				  "\"original_args_digest\":\"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\"}");
	const shk_val *ps[] = { NULL, shk_null(doc) };
	shk_state s;
	shk_call k;

	memset(&s, 0, sizeof(s));
	s.pending_transition = pt;
	for (int i = 0; i < 2; i++) {
		for (int cached = 0; cached < 2; cached++) {
			memset(&k, 0, sizeof(k));
			k.nonce = parse("5");
			if (cached) {
				ck_assert_int_eq(shk_call_set_params(&k, ps[i]), 0);
				ck_assert_str_eq(k.params_digest, empty);
			} else {
				k.params = ps[i];
			}
			expect(shk_decide(NULL, &s, &k), SHK_ALLOW, SHK_R_HT_APPROVE);
			s.circuit_tripped = true;
			expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_CIRCUIT_OPEN);
			s.circuit_tripped = false;
		}
	}
	/* a NULL call is no call: not judged as the empty call */
	expect(shk_decide(NULL, NULL, NULL), SHK_DENY, SHK_R_MALFORMED_INPUT);
}
END_TEST

/* Chain of n objects around a leaf: the leaf is at depth n. */
static shk_val *chain(int n, shk_val *leaf)
{
	shk_val *v = leaf;

	for (int i = 0; i < n; i++) {
		shk_val *o = shk_object(doc);
		ck_assert_int_eq(shk_object_set_str(o, "a", v), 0);
		v = o;
	}
	return v;
}

START_TEST(rule1_depth)
{
	expect(dec_params(chain(64, shk_int(doc, 1))), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	expect(dec_params(chain(65, shk_int(doc, 1))), SHK_DENY, SHK_R_MALFORMED_INPUT);
	expect(dec_params(chain(64, shk_object(doc))), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	expect(dec_params(chain(65, shk_array(doc))), SHK_DENY, SHK_R_MALFORMED_INPUT);
	expect(dec_params(chain(5000, shk_int(doc, 1))), SHK_DENY, SHK_R_MALFORMED_INPUT);
}
END_TEST

START_TEST(rule1_precedes_circuit)
{
	shk_state s;
	shk_call k;
	shk_val *p = shk_object(doc);

	ck_assert_int_eq(shk_object_set_str(p, "x", shk_real(doc, NAN)), 0);
	memset(&s, 0, sizeof(s));
	memset(&k, 0, sizeof(k));
	s.circuit_tripped = true;
	shk_call_set_params(&k, p);
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_MALFORMED_INPUT);
	shk_call_set_params(&k, parse("{}"));
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_CIRCUIT_OPEN);
}
END_TEST

/* The cache filled by shk_call_set_params is trusted only for the params it
 * was computed for. */
START_TEST(params_cache_not_trusted)
{
	shk_call k;
	shk_val *bad = shk_object(doc);
	shk_val *good = parse("{\"a\":1}");
	char hex[SHK_SHA256_HEX_LEN + 1];
	char st[512];

	ck_assert_int_eq(shk_object_set_str(bad, "x", shk_real(doc, NAN)), 0);
	memset(&k, 0, sizeof(k));
	ck_assert_int_eq(shk_call_set_params(&k, good), 0);
	k.params = bad; /* swapped after the check */
	expect(shk_decide(NULL, NULL, &k), SHK_DENY, SHK_R_MALFORMED_INPUT);

	/* A forged digest on a call whose params were never checked is ignored:
	 * decide() hashes the params itself. */
	ck_assert_int_eq(shk_vector_digest_hex(good, NULL, hex), 0);
	snprintf(st, sizeof(st), "{\"pending_transition\":{\"decision\":\"approve\",\"original_args_digest\":\"%s\"}}",
		 hex);
	{
		shk_state s;
		char err[128];
		ck_assert_int_eq(shk_state_from_val(parse(st), &s, err, sizeof(err)), 0);
		memset(&k, 0, sizeof(k));
		k.params = parse("{\"a\":2}");
		memcpy(k.params_digest, hex, sizeof(hex));
		k.params_digest_ok = true; /* but checked_params != params */
		expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_HT_DIGEST_MISMATCH);
		k.params = good;
		k.params_digest_ok = false;
		expect(shk_decide(NULL, &s, &k), SHK_ALLOW, SHK_R_HT_APPROVE);
	}
}
END_TEST

START_TEST(totality_null)
{
	shk_call k;

	expect(shk_decide(NULL, NULL, NULL), SHK_DENY, SHK_R_MALFORMED_INPUT);
	memset(&k, 0, sizeof(k));
	expect(shk_decide(NULL, NULL, &k), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	k.params = parse("{}");
	expect(shk_decide(NULL, NULL, &k), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
}
END_TEST

/* ---- Rules 2-10 through JSON ------------------------------------------------- */

START_TEST(rule2_circuit)
{
	expect(dec("{}", "{\"circuit_tripped\":true}", "{\"params\":{}}"), SHK_DENY, SHK_R_CIRCUIT_OPEN);
	expect(dec("{}", "{\"circuit_tripped\":false}", "{\"params\":{}}"), SHK_ALLOW,
	       SHK_R_WITHIN_THRESHOLDS);
}
END_TEST

START_TEST(rule3_replay_types)
{
	const char *c = "{\"budget_usd\":1}";

	expect(dec(c, "{\"seen_nonces\":[7.0]}", "{\"params\":{},\"nonce\":7}"), SHK_DENY,
	       SHK_R_DUPLICATE_NONCE);
	expect(dec(c, "{\"seen_nonces\":[1]}", "{\"params\":{},\"nonce\":true}"), SHK_DENY,
	       SHK_R_DUPLICATE_NONCE);
	expect(dec(c, "{\"seen_nonces\":[\"1\"]}", "{\"params\":{},\"nonce\":1}"), SHK_ALLOW,
	       SHK_R_WITHIN_THRESHOLDS);
	expect(dec(c, "{\"seen_nonces\":[null]}", "{\"params\":{},\"nonce\":null}"), SHK_ALLOW,
	       SHK_R_WITHIN_THRESHOLDS);
	/* 2**63 as a real equals no int64 nonce, but the u64 fast path can hold it */
	expect(dec(c, "{\"seen_nonces\":[9223372036854775807]}", "{\"params\":{},\"nonce\":9.223372036854775807e18}"),
	       SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	expect(dec(c,
		   "{\"seen_nonces\":[5],\"pending_transition\":{\"decision\":\"approve\",\"terminal_status\":\" Revo\xe2\x84\xaa" "ed \"}}",
		   "{\"params\":{},\"nonce\":5}"),
	       SHK_DENY, SHK_R_DUPLICATE_RESUME);
}
END_TEST

START_TEST(rule3_fast_paths)
{
	shk_nonceset *set = NULL;
	shk_state s;
	shk_call k;

	ck_assert_int_eq(shk_nonceset_new(4, &set), 0);
	ck_assert_int_eq(shk_nonceset_insert(set, 7), 0);
	ck_assert_int_eq(shk_nonceset_insert(set, UINT64_MAX), 0);
	memset(&s, 0, sizeof(s));
	memset(&k, 0, sizeof(k));
	s.nonce_set = set;
	shk_call_set_params(&k, parse("{}"));
	k.has_nonce_u64 = true;
	k.nonce_u64 = 7;
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_DUPLICATE_NONCE);
	k.nonce_u64 = 8;
	expect(shk_decide(NULL, &s, &k), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	k.nonce_u64 = UINT64_MAX;
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_DUPLICATE_NONCE);
	/* A JSON nonce 7.0 against the u64 set */
	k.nonce = parse("7.0");
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_DUPLICATE_NONCE);
	k.nonce = parse("\"7\"");
	expect(shk_decide(NULL, &s, &k), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	/* The u64 nonce against a JSON seen list */
	k.nonce = NULL;
	k.nonce_u64 = 3;
	s.seen_nonces = parse("[1, 3.0]");
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_DUPLICATE_NONCE);
	s.seen_nonces = parse("[true]");
	k.nonce_u64 = 1;
	expect(shk_decide(NULL, &s, &k), SHK_DENY, SHK_R_DUPLICATE_NONCE);
	shk_nonceset_free(set);
}
END_TEST

START_TEST(rule4_transition)
{
	const char *c = "{\"budget_usd\":1}";
	char st[512], call[256];
	char hex[SHK_SHA256_HEX_LEN + 1];

	ck_assert_int_eq(shk_vector_digest_hex(parse("{\"x\":1}"), NULL, hex), 0);
	snprintf(call, sizeof(call), "{\"params\":{\"x\":1},\"nonce\":9}");
	snprintf(st, sizeof(st),
		 "{\"pending_transition\":{\"decision\":\"approve\",\"original_nonce\":9,\"original_args_digest\":\"%s\"}}",
		 hex);
	expect(dec(c, st, call), SHK_ALLOW, SHK_R_HT_APPROVE);
	expect(dec(c, st, "{\"params\":{\"x\":2},\"nonce\":9}"), SHK_DENY, SHK_R_HT_DIGEST_MISMATCH);
	expect(dec(c, st, "{\"params\":{\"x\":1},\"nonce\":10}"), SHK_DENY, SHK_R_HT_NONCE_MISMATCH);
	expect(dec(c, st, "{\"params\":{\"x\":1}}"), SHK_DENY, SHK_R_HT_NONCE_MISMATCH);
	snprintf(st, sizeof(st),
		 "{\"pending_transition\":{\"decision\":\"modify\",\"original_nonce\":8,\"successor_nonce\":9,\"successor_args_digest\":\"%s\"}}",
		 hex);
	expect(dec(c, st, call), SHK_ALLOW, SHK_R_HT_MODIFY_SUCCESSOR);
	expect(dec(c, st, "{\"params\":{\"x\":1},\"nonce\":8.0}"), SHK_DENY, SHK_R_HT_SUPERSEDED_ORIGINAL);
	expect(dec(c, "{\"pending_transition\":{\"decision\":\"\\u2003Defer\\u00a0\"}}", call), SHK_HITL,
	       SHK_R_HT_DEFER_ESCALATE);
	expect(dec(c, "{\"pending_transition\":{\"decision\":[\"approve\"]}}", call), SHK_DENY,
	       SHK_R_HT_UNKNOWN_DECISION);
	expect(dec(c, "{\"pending_transition\":{\"decision\":\"approve\"}}", call), SHK_DENY,
	       SHK_R_HT_UNBOUND_AUTHORIZATION);
	expect(dec(c, "{\"pending_transition\":{}}", call), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
}
END_TEST

START_TEST(rule5_budget)
{
	const char *call = "{\"params\":{},\"estimated_cost_usd\":0.25}";

	expect(dec("{\"budget_usd\":1}", "{\"budget_remaining_usd\":0}", call), SHK_DENY, SHK_R_BUDGET_EXHAUSTED);
	expect(dec("{\"budget_usd\":1}", "{\"budget_remaining_usd\":0.25}", call), SHK_ALLOW,
	       SHK_R_WITHIN_THRESHOLDS);
	expect(dec("{\"budget_usd\":1}", "{\"budget_remaining_usd\":0.24999999999999997}", call), SHK_DENY,
	       SHK_R_BUDGET_OVERRUN);
	expect(dec("{\"budget_usd\":0}", "{\"budget_remaining_usd\":0}", call), SHK_ALLOW,
	       SHK_R_WITHIN_THRESHOLDS);
	expect(dec("{}", "{\"budget_remaining_usd\":-3}", call), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	/* exact integer arithmetic beyond 2**53 */
	expect(dec("{\"budget_usd\":1}", "{\"budget_remaining_usd\":9007199254740993}",
		   "{\"params\":{},\"estimated_cost_usd\":9007199254740994}"),
	       SHK_DENY, SHK_R_BUDGET_OVERRUN);
	expect(dec("{\"budget_usd\":1}", "{\"budget_remaining_usd\":9223372036854775807}",
		   "{\"params\":{},\"estimated_cost_usd\":-9223372036854775807}"),
	       SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	expect(dec("{\"budget_usd\":1}", "{\"budget_remaining_usd\":-9223372036854775807}",
		   "{\"params\":{},\"estimated_cost_usd\":9223372036854775807}"),
	       SHK_DENY, SHK_R_BUDGET_EXHAUSTED);
}
END_TEST

START_TEST(rule6_repeat)
{
	shk_config c;
	shk_state s;
	shk_call k;

	expect(dec("{\"max_repeat_calls\":3}", "{\"repeat_counts\":{\"t\":3},\"last_tool_name\":\"t\"}",
		   "{\"tool_name\":\"t\",\"params\":{}}"),
	       SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED);
	/* exact int/float comparison: 2**53 + 1 > 2.0**53 */
	expect(dec("{\"max_repeat_calls\":9007199254740992.0}",
		   "{\"repeat_counts\":{\"t\":9007199254740993},\"last_tool_name\":\"t\"}",
		   "{\"tool_name\":\"t\",\"params\":{}}"),
	       SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED);
	expect(dec("{\"max_repeat_calls\":9007199254740993}",
		   "{\"repeat_counts\":{\"t\":9007199254740992.0},\"last_tool_name\":\"t\"}",
		   "{\"tool_name\":\"t\",\"params\":{}}"),
	       SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);

	/* fast path */
	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	memset(&k, 0, sizeof(k));
	c.max_repeat_calls = shk_num_int(2);
	s.has_repeat_count = true;
	s.repeat_count = shk_num_int(2);
	s.last_tool_name = "curl";
	s.last_tool_name_len = 4;
	k.tool_name = "curl";
	k.tool_name_len = 4;
	shk_call_set_params(&k, parse("{}"));
	expect(shk_decide(&c, &s, &k), SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED);
	s.repeat_count = shk_num_int(1);
	expect(shk_decide(&c, &s, &k), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	/* a non-numeric count (only possible through the C API) is closed */
	s.has_repeat_count = false;
	s.repeat_counts = parse("{\"curl\":\"many\"}");
	expect(shk_decide(&c, &s, &k), SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED);
}
END_TEST

START_TEST(rule7_8_hitl)
{
	const char *call = "{\"params\":{}}";

	expect(dec("{\"hitl_mode\":\"always\"}", "{}", call), SHK_HITL, SHK_R_HITL_ALL_CALLS);
	expect(dec("{\"hitl_mode\":\"on_threshold\",\"hitl_budget_threshold\":0.5}",
		   "{\"budget_initial_usd\":2,\"budget_remaining_usd\":1}", call),
	       SHK_HITL, SHK_R_BUDGET_THRESHOLD);
	expect(dec("{\"hitl_mode\":\"on_threshold\",\"hitl_budget_threshold\":0.5}",
		   "{\"budget_initial_usd\":2,\"budget_remaining_usd\":1.0000001}", call),
	       SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	/* null remaining reads 0 (the reference would raise; closed answer) */
	expect(dec("{\"hitl_mode\":\"on_threshold\",\"hitl_budget_threshold\":0}",
		   "{\"budget_initial_usd\":2,\"budget_remaining_usd\":null}", call),
	       SHK_HITL, SHK_R_BUDGET_THRESHOLD);
	expect(dec("{\"hitl_mode\":\"on_threshold\",\"hitl_budget_threshold\":0.5}",
		   "{\"budget_initial_usd\":0.0,\"budget_remaining_usd\":0}", call),
	       SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
}
END_TEST

START_TEST(rule9_opaque)
{
	shk_val *p;

	expect(dec("{}", "{}", "{\"params\":{\"x\":{\"y\":[{\"\\u3000RAW_CONTEXT\\u2029\":\" unevaluable\\u0085\"}]}}}"),
	       SHK_HITL, SHK_R_OPAQUE_CONTEXT);
	expect(dec("{}", "{}", "{\"params\":{\"ctx\":\"opaque value\"}}"), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	expect(dec("{}", "{}", "{\"params\":{\"a\":[[{\"ctx\":\"opaque\"}]]}}"), SHK_ALLOW,
	       SHK_R_WITHIN_THRESHOLDS);
	/* NUL inside the value is not whitespace */
	expect(dec("{}", "{}", "{\"params\":{\"ctx\":\"opaque\\u0000\"}}"), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	/* a foreign value under a context key would be opaque, but Rule 1 sees it first */
	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(p, "ctx", shk_foreign(doc)), 0);
	expect(dec_params(p), SHK_DENY, SHK_R_MALFORMED_INPUT);
}
END_TEST

START_TEST(norm_eq)
{
	ck_assert(shk_norm_eq(" \t\nCTX\r\x0b\x0c", 9, "ctx"));
	ck_assert(shk_norm_eq("\x1c\x1d\x1e\x1f" "ctx", 7, "ctx"));
	ck_assert(shk_norm_eq("\xc2\xa0" "ctx" "\xe1\x9a\x80\xe2\x80\x8a\xe2\x80\xaf\xe2\x81\x9f\xe3\x80\x80", 20, "ctx"));
	ck_assert(shk_norm_eq("UN\xe2\x84\xaaNOWN", 9, "unknown"));
	ck_assert(!shk_norm_eq("c tx", 4, "ctx"));
	ck_assert(!shk_norm_eq("ctx\xe2\x80\x8b", 6, "ctx")); /* ZERO WIDTH SPACE is not isspace() */
	ck_assert(!shk_norm_eq("ctx", 2, "ctx"));
	ck_assert(!shk_norm_eq("ctxx", 4, "ctx"));
	ck_assert(!shk_norm_eq("", 0, "ctx"));
	ck_assert(shk_norm_eq("   ", 3, ""));
	ck_assert(!shk_norm_eq(NULL, 0, "ctx"));
	ck_assert(!shk_norm_eq("\xc3\x89", 2, "e"));
}
END_TEST

START_TEST(num_cmp)
{
	ck_assert_int_eq(shk_num_cmp(shk_num_int(9007199254740993), shk_num_real(9007199254740992.0)), 1);
	ck_assert_int_eq(shk_num_cmp(shk_num_real(9007199254740992.0), shk_num_int(9007199254740993)), -1);
	ck_assert_int_eq(shk_num_cmp(shk_num_int(INT64_MAX), shk_num_real(9223372036854775808.0)), -1);
	ck_assert_int_eq(shk_num_cmp(shk_num_int(INT64_MIN), shk_num_real(-9223372036854775808.0)), 0);
	ck_assert_int_eq(shk_num_cmp(shk_num_int(2), shk_num_real(1.5)), 1);
	ck_assert_int_eq(shk_num_cmp(shk_num_int(-2), shk_num_real(-1.5)), -1);
	ck_assert_int_eq(shk_num_cmp(shk_num_int(1), shk_num_real(NAN)), 2);
	ck_assert_int_eq(shk_num_cmp(shk_num_real(NAN), shk_num_int(1)), 2);
	ck_assert_int_eq(shk_num_cmp(shk_num_real(-0.0), shk_num_int(0)), 0);
	ck_assert_int_eq(shk_num_cmp(shk_num_real(INFINITY), shk_num_int(INT64_MAX)), 1);
}
END_TEST

START_TEST(nonceset_exact)
{
	shk_nonceset *s = NULL;

	ck_assert_int_eq(shk_nonceset_new(0, &s), -EINVAL);
	ck_assert_int_eq(shk_nonceset_new(3, &s), 0);
	for (uint64_t i = 1; i <= 1000; i++)
		ck_assert_int_eq(shk_nonceset_insert(s, i), 0);
	ck_assert_uint_eq(shk_nonceset_ranges(s), 1);
	ck_assert_int_eq(shk_nonceset_insert(s, 1002), 0); /* hole at 1001 */
	ck_assert_int_eq(shk_nonceset_insert(s, 0), 0);    /* joins the front */
	ck_assert_uint_eq(shk_nonceset_ranges(s), 2);
	ck_assert(!shk_nonceset_contains(s, 1001));
	ck_assert(shk_nonceset_contains(s, 0) && shk_nonceset_contains(s, 1002));
	ck_assert_int_eq(shk_nonceset_insert(s, 5000), 0);
	ck_assert_uint_eq(shk_nonceset_ranges(s), 3);
	/* full: a nonce needing a fourth interval is refused, nothing forgotten */
	ck_assert(!shk_nonceset_can_insert(s, 3000));
	ck_assert_int_eq(shk_nonceset_insert(s, 3000), -ENOSPC);
	ck_assert(!shk_nonceset_contains(s, 3000));
	ck_assert(shk_nonceset_can_insert(s, 5001) && shk_nonceset_can_insert(s, 4999));
	ck_assert_int_eq(shk_nonceset_insert(s, 1001), 0); /* fills the hole, merges */
	ck_assert_uint_eq(shk_nonceset_ranges(s), 2);
	for (uint64_t i = 0; i <= 1002; i++)
		ck_assert(shk_nonceset_contains(s, i));
	ck_assert(!shk_nonceset_contains(s, 1003));
	ck_assert_int_eq(shk_nonceset_insert(s, UINT64_MAX), 0);
	ck_assert(shk_nonceset_contains(s, UINT64_MAX));
	ck_assert(!shk_nonceset_contains(s, UINT64_MAX - 1));
	ck_assert_int_eq(shk_nonceset_insert(s, UINT64_MAX - 1), 0);
	ck_assert(shk_nonceset_contains(s, UINT64_MAX - 1));
	ck_assert(!shk_nonceset_contains(NULL, 1));
	shk_nonceset_free(s);
}
END_TEST

START_TEST(loader_errors)
{
	shk_config c;
	shk_state s;
	shk_call k;
	shk_vector v;
	char err[256];

	ck_assert_int_eq(shk_config_from_val(parse("{\"budget_usd\":true}"), &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "config.budget_usd: expected a number");
	ck_assert_int_eq(shk_config_from_val(parse("{\"hitl_mode\":1}"), &c, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "config.hitl_mode: expected a string");
	ck_assert_int_eq(shk_state_from_val(parse("{\"budget_remaining_usd\":\"1\"}"), &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "state.budget_remaining_usd: expected a number");
	ck_assert_int_eq(shk_state_from_val(parse("{\"circuit_tripped\":1}"), &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "state.circuit_tripped: expected a boolean");
	ck_assert_int_eq(shk_state_from_val(parse("{\"repeat_counts\":{\"a\":\"x\"}}"), &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "state.repeat_counts.a: expected a number");
	ck_assert_int_eq(shk_state_from_val(parse("[]"), &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "state: expected an object");
	ck_assert_int_eq(shk_call_from_val(parse("{\"estimated_cost_usd\":false}"), &k, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "call.estimated_cost_usd: expected a number");
	ck_assert_int_eq(shk_vector_load(parse("{\"call\":{\"params\":{}},\"expected_verdict\":\"MAYBE\",\"expected_reason\":\"x\"}"),
					 &v, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "expected_verdict: \"MAYBE\" is not ALLOW, DENY or HITL");
	ck_assert_int_eq(shk_vector_load(parse("{\"expected_verdict\":\"DENY\",\"expected_reason\":\"global_limit\"}"),
					 &v, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "expected_reason: \"global_limit\" is not an SP/1.0 reason");
	/* unknown fields are fine */
	ck_assert_int_eq(shk_config_from_val(parse("{\"x\":[1],\"budget_usd\":null}"), &c, err, sizeof(err)), 0);
	ck_assert(!c.budget_usd.present);
}
END_TEST

/* Every vector under fixtures/ passes in-process too (the CLI test runs the
 * same files through `shackle conformance`). */
START_TEST(project_fixtures)
{
	const char *dir = shk_test_src("fixtures");
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned files = 0, vectors = 0;
	char path[4096], err[512];

	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		shk_val *top = NULL;
		const shk_val *fx;
		shk_parse_error perr;

		if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
			ck_abort_msg("path too long");
		ck_assert_msg(shk_json_load_file(doc, path, &top, &perr) == 0, "%s:%d:%d: %s", path, perr.line,
			      perr.column, perr.text);
		fx = shk_object_get(top, "fixtures");
		files++;
		for (size_t i = 0; i < shk_val_len(fx); i++) {
			shk_vector v;
			shk_decision got;

			ck_assert_msg(shk_vector_load(shk_array_at(fx, i), &v, err, sizeof(err)) == 0, "%s: %s", path, err);
			got = shk_decide(&v.config, &v.state, &v.call);
			ck_assert_msg(got.verdict == v.expected_verdict && got.reason == v.expected_reason,
				      "%s: %s: got %s %s", path, v.name, shk_verdict_str(got.verdict),
				      shk_reason_str(got.reason));
			vectors++;
		}
	}
	closedir(d);
	ck_assert_uint_ge(files, 9);
	ck_assert_uint_ge(vectors, 60);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("decide");
	TCase *tc = tcase_create("rules");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reason_strings);
	tcase_add_test(tc, rule1_structural);
	tcase_add_test(tc, rule1_depth);
	tcase_add_test(tc, rule1_precedes_circuit);
	tcase_add_test(tc, params_cache_not_trusted);
	tcase_add_test(tc, totality_null);
	tcase_add_test(tc, params_absent_null_are_empty);
	tcase_add_test(tc, rule2_circuit);
	tcase_add_test(tc, rule3_replay_types);
	tcase_add_test(tc, rule3_fast_paths);
	tcase_add_test(tc, rule4_transition);
	tcase_add_test(tc, rule5_budget);
	tcase_add_test(tc, rule6_repeat);
	tcase_add_test(tc, rule7_8_hitl);
	tcase_add_test(tc, rule9_opaque);
	tcase_add_test(tc, norm_eq);
	tcase_add_test(tc, num_cmp);
	tcase_add_test(tc, nonceset_exact);
	tcase_add_test(tc, loader_errors);
	tcase_add_test(tc, project_fixtures);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
