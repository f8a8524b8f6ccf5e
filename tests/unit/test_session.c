/* SPDX-License-Identifier: MIT */
/*
 * Session transitions and the non-normative layers, with injected time.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/layers.h>
#include <shackle/session.h>

#include "testutil.h"
#include "checkrun.h"

#define S(x) ((int64_t)(x) * 1000000000LL)

static shk_doc *doc;
static shk_session *ses;
static uint64_t next_nonce;

static void setup(void)
{
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	ses = NULL;
	next_nonce = 1;
}

static void teardown(void)
{
	shk_session_free(ses);
	shk_doc_free(doc);
}

static shk_session_config base_config(void)
{
	shk_session_config c;

	memset(&c, 0, sizeof(c));
	c.guard.hitl_budget_threshold = 0.2;
	c.guard.trip_on_deny = true;
	return c;
}

static void open_session(const shk_session_config *c)
{
	ck_assert_int_eq(shk_session_new(c, &ses), 0);
}

static shk_val *parse(const char *text)
{
	shk_val *v = NULL;
	shk_parse_error err;

	if (shk_json_parse(doc, text, strlen(text), "test", &v, &err) < 0)
		ck_abort_msg("parse of %s failed: %s", text, err.text);
	return v;
}

static shk_toolcall mk(const char *tool, const char *params, double cost)
{
	shk_toolcall tc;

	memset(&tc, 0, sizeof(tc));
	tc.tool_name = tool;
	tc.params = parse(params);
	tc.nonce = next_nonce++;
	tc.estimated_cost_usd = cost;
	shk_toolcall_prepare(&tc);
	return tc;
}

/* evaluate + commit; returns the outcome */
static shk_outcome run(shk_toolcall *tc, shk_action action, int64_t now)
{
	shk_outcome o;

	ck_assert_int_eq(shk_session_evaluate(ses, tc, action, now, &o), 0);
	ck_assert_int_eq(shk_session_commit(ses, tc, &o, now), 0);
	return o;
}

#define expect(o, v, r, l)                                                                          \
	do {                                                                                        \
		shk_outcome o_ = (o);                                                               \
		ck_assert_msg(o_.verdict == (v) && o_.reason == (r) && o_.layer == (l),            \
			      "got %s %s (%s), want %s %s (%s)", shk_verdict_str(o_.verdict),        \
			      shk_reason_str(o_.reason), shk_layer_str(o_.layer), shk_verdict_str(v), \
			      shk_reason_str(r), shk_layer_str(l));                                 \
	} while (0)

static shk_outcome call(const char *tool, const char *params, shk_action a, int64_t now)
{
	shk_toolcall tc = mk(tool, params, 0);
	return run(&tc, a, now);
}

#define CURL_A "{\"argv\":[\"curl\",\"https://a.example/\"],\"path\":\"/usr/bin/curl\"}"
#define CURL_B "{\"argv\":[\"curl\",\"https://b.example/\"],\"path\":\"/usr/bin/curl\"}"
#define SH "{\"argv\":[\"sh\",\"-c\",\"curl https://a.example/\"],\"path\":\"/bin/sh\"}"
#define LLM "{\"host\":\"api.example.com\",\"port\":443}"

/* An agent loop at syscall granularity: the model round trip, the shell and
 * the tool interleave; the same failing curl is still stopped after N. */
START_TEST(repeat_across_interleaving)
{
	shk_session_config c = base_config();
	shk_outcome o;
	shk_session_info info;

	c.guard.max_repeat_calls = 3;
	open_session(&c);
	for (int round = 0; round < 3; round++) {
		expect(call("llm", LLM, SHK_ACTION_ALLOW, S(round)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS,
		       SHK_LAYER_DECIDE);
		expect(call("exec:sh", SH, SHK_ACTION_ALLOW, S(round)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS,
		       SHK_LAYER_DECIDE);
		o = call("exec:curl", CURL_A, SHK_ACTION_ALLOW, S(round));
		expect(o, SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
		ck_assert_uint_eq(o.repeat_count, (uint64_t)round);
		/* other arguments are another key */
		expect(call("exec:curl", CURL_B, SHK_ACTION_ALLOW, S(round)), SHK_ALLOW,
		       SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	}
	/* The llm call was also repeated 3 times: its 4th is denied first. Use
	 * the curl directly. */
	o = call("exec:curl", CURL_A, SHK_ACTION_ALLOW, S(4));
	expect(o, SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED, SHK_LAYER_DECIDE);
	ck_assert_uint_eq(o.repeat_count, 3);
	ck_assert(o.trips);
	shk_session_get_info(ses, &info);
	ck_assert(info.circuit_tripped);
	ck_assert_int_eq(info.trip_reason, SHK_R_MAX_REPEAT_EXCEEDED);
	ck_assert_int_eq(info.tripped_at_ns, S(4));
	ck_assert_uint_eq(info.total_calls, 12);
	/* breaker open: everything is denied, the first trip is kept */
	expect(call("exec:ls", "{}", SHK_ACTION_ALLOW, S(5)), SHK_DENY, SHK_R_CIRCUIT_OPEN, SHK_LAYER_DECIDE);
	shk_session_get_info(ses, &info);
	ck_assert_int_eq(info.trip_reason, SHK_R_MAX_REPEAT_EXCEEDED);
	ck_assert_int_eq(info.tripped_at_ns, S(4));
	/* the operator closes it; counters are kept, so the same curl trips again */
	shk_session_reset(ses);
	expect(call("exec:ls", "{}", SHK_ACTION_ALLOW, S(6)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	expect(call("exec:curl", CURL_A, SHK_ACTION_ALLOW, S(7)), SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED,
	       SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(static_policy_actions)
{
	shk_session_config c = base_config();
	shk_session_info info;

	open_session(&c);
	expect(call("exec:sudo", "{}", SHK_ACTION_DENY, 0), SHK_DENY, SHK_R_POLICY_DENIED, SHK_LAYER_POLICY);
	shk_session_get_info(ses, &info);
	ck_assert(!info.circuit_tripped);
	ck_assert_uint_eq(info.total_calls, 0);
	expect(call("exec:git", "{}", SHK_ACTION_HITL, 0), SHK_HITL, SHK_R_POLICY_HITL, SHK_LAYER_POLICY);
	expect(call("exec:ls", "{}", SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	/* an action outside the enum is a deny */
	expect(call("exec:ls", "{}", (shk_action)42, 0), SHK_DENY, SHK_R_POLICY_DENIED, SHK_LAYER_POLICY);
	/* decide's DENY wins over a static deny and trips; then circuit_open
	 * wins over everything */
	expect(call("exec:x", "[]", SHK_ACTION_DENY, 0), SHK_DENY, SHK_R_MALFORMED_INPUT, SHK_LAYER_DECIDE);
	expect(call("exec:ls", "{}", SHK_ACTION_HITL, 0), SHK_DENY, SHK_R_CIRCUIT_OPEN, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(trip_on_deny_off)
{
	shk_session_config c = base_config();
	shk_session_info info;

	c.guard.trip_on_deny = false;
	open_session(&c);
	expect(call("exec:x", "[]", SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_MALFORMED_INPUT, SHK_LAYER_DECIDE);
	shk_session_get_info(ses, &info);
	ck_assert(!info.circuit_tripped);
	expect(call("exec:ls", "{}", SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(budget_charge_and_refund)
{
	shk_session_config c = base_config();
	shk_session_info info;
	shk_toolcall t1, t2, t3, t4;
	shk_outcome o;

	c.guard.budget_usd = 1.0;
	open_session(&c);
	t1 = mk("llm", LLM, 0.5);
	o = run(&t1, SHK_ACTION_ALLOW, 0);
	expect(o, SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	ck_assert(o.budget_remaining_usd == 1.0 && o.budget_after_usd == 0.5);
	shk_session_get_info(ses, &info);
	ck_assert(info.budget_remaining_usd == 0.5 && info.budget_spent_usd == 0.5);
	t2 = mk("llm", "{\"n\":2}", 0.5);
	expect(run(&t2, SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	/* remaining is exactly 0 now: exhausted (and the deny trips) */
	t3 = mk("llm", "{\"n\":3}", 0.0);
	ck_assert_int_eq(shk_session_evaluate(ses, &t3, SHK_ACTION_ALLOW, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_BUDGET_EXHAUSTED, SHK_LAYER_DECIDE);
	/* post-exec: the first call cost 0.125 -> 0.375 refunded */
	ck_assert_int_eq(shk_session_post_exec(ses, t1.nonce, 0.125), 0);
	ck_assert_int_eq(shk_session_post_exec(ses, t1.nonce, 0.125), -ENOENT);
	ck_assert_int_eq(shk_session_post_exec(ses, 999, 0.1), -ENOENT);
	ck_assert_int_eq(shk_session_post_exec(ses, t2.nonce, NAN), -EINVAL);
	ck_assert_int_eq(shk_session_post_exec(ses, t2.nonce, -1), -EINVAL);
	shk_session_get_info(ses, &info);
	ck_assert(info.budget_remaining_usd == 0.375 && info.budget_spent_usd == 0.625);
	/* 0.5 no longer fits: overrun; 0.375 fits exactly */
	t3 = mk("llm", "{\"n\":3}", 0.5);
	ck_assert_int_eq(shk_session_evaluate(ses, &t3, SHK_ACTION_ALLOW, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_BUDGET_OVERRUN, SHK_LAYER_DECIDE);
	t4 = mk("llm", "{\"n\":4}", 0.375);
	expect(run(&t4, SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	/* the actual cost was higher: charged extra, remaining goes negative */
	ck_assert_int_eq(shk_session_post_exec(ses, t4.nonce, 0.5), 0);
	shk_session_get_info(ses, &info);
	ck_assert(info.budget_remaining_usd == -0.125);
}
END_TEST

START_TEST(invalid_cost)
{
	shk_session_config c = base_config();
	shk_toolcall t;
	shk_outcome o;

	open_session(&c);
	t = mk("llm", LLM, NAN);
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_ALLOW, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_INVALID_COST, SHK_LAYER_SESSION);
	ck_assert(!o.trips);
	t = mk("llm", LLM, -0.01);
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_ALLOW, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_INVALID_COST, SHK_LAYER_SESSION);
	/* commit refuses to charge an invalid cost even if asked to */
	o.verdict = SHK_ALLOW;
	ck_assert_int_eq(shk_session_commit(ses, &t, &o, 0), -EINVAL);
}
END_TEST

/* A shared scope's numbers replace the session's own in decide()'s view. */
START_TEST(shared_view)
{
	shk_session_config c = base_config();
	shk_session_shared sh = { .budget = true, .granted = true, .limit_uusd = 1000000,
	                          .spent_uusd = 600000, .reserved_uusd = 300000 };
	shk_toolcall t;
	shk_outcome o;

	c.guard.budget_usd = 1.0;
	c.guard.hitl_budget_threshold = 0;
	open_session(&c);
	t = mk("llm", LLM, 0.05);
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_ALLOW, 0, &sh, &o), 0);
	expect(o, SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	ck_assert(o.budget_remaining_usd == 100000 / 1e6 && o.budget_after_usd == 100000 / 1e6 - 0.05);
	/* the same numbers, but Redis refused: decide() must agree (Rule 5b) */
	t = mk("llm", LLM, 0.15);
	sh.granted = false;
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_ALLOW, 0, &sh, &o), 0);
	expect(o, SHK_DENY, SHK_R_BUDGET_OVERRUN, SHK_LAYER_DECIDE);
	/* refused by Redis, allowed by the view: inconsistent, denied */
	t = mk("llm", LLM, 0.05);
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_ALLOW, 0, &sh, &o), 0);
	expect(o, SHK_DENY, SHK_R_SHARED_UNAVAILABLE, SHK_LAYER_SCOPE);
	ck_assert(!o.trips);
	/* out of range: never shown to decide() */
	sh.granted = true;
	sh.spent_uusd = -1;
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_ALLOW, 0, &sh, &o), 0);
	expect(o, SHK_DENY, SHK_R_SHARED_UNAVAILABLE, SHK_LAYER_SCOPE);
	/* Redis not read: denied, no trip, whatever the static action */
	memset(&sh, 0, sizeof(sh));
	sh.unavailable = true;
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_HITL, 0, &sh, &o), 0);
	expect(o, SHK_DENY, SHK_R_SHARED_UNAVAILABLE, SHK_LAYER_SCOPE);
	ck_assert(!o.trips);
	/* the scope's breaker is open: circuit_open, and it trips this one */
	memset(&sh, 0, sizeof(sh));
	sh.breaker = true;
	sh.breaker_open = true;
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_ALLOW, 0, &sh, &o), 0);
	expect(o, SHK_DENY, SHK_R_CIRCUIT_OPEN, SHK_LAYER_DECIDE);
	ck_assert(o.circuit_tripped);
	/* NULL: exactly the session's own view */
	ck_assert_int_eq(shk_session_evaluate_shared(ses, &t, SHK_ACTION_ALLOW, 0, NULL, &o), 0);
	expect(o, SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	ck_assert(o.budget_remaining_usd == 1.0);
}
END_TEST

START_TEST(window_layer)
{
	shk_session_config c = base_config();
	shk_outcome o;

	c.guard.window_duration_s = 10;
	c.guard.window_max_calls = 2;
	c.guard.trip_on_deny = false;
	open_session(&c);
	expect(call("a", "{\"i\":1}", SHK_ACTION_ALLOW, S(100)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	expect(call("a", "{\"i\":2}", SHK_ACTION_ALLOW, S(105)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	o = call("a", "{\"i\":3}", SHK_ACTION_ALLOW, S(109) + S(1) - 1);
	expect(o, SHK_DENY, SHK_R_WINDOW_EXCEEDED, SHK_LAYER_WINDOW);
	ck_assert_uint_eq(o.window_count, 2);
	/* a clock that goes backwards stays in the window */
	expect(call("a", "{\"i\":4}", SHK_ACTION_ALLOW, S(50)), SHK_DENY, SHK_R_WINDOW_EXCEEDED, SHK_LAYER_WINDOW);
	/* exactly duration later a new window opens */
	expect(call("a", "{\"i\":5}", SHK_ACTION_ALLOW, S(110)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(window_trips)
{
	shk_session_config c = base_config();
	shk_session_info info;

	c.guard.window_duration_s = 1;
	c.guard.window_max_calls = 1;
	open_session(&c);
	call("a", "{}", SHK_ACTION_ALLOW, 0);
	expect(call("b", "{}", SHK_ACTION_ALLOW, 1), SHK_DENY, SHK_R_WINDOW_EXCEEDED, SHK_LAYER_WINDOW);
	shk_session_get_info(ses, &info);
	ck_assert(info.circuit_tripped);
	ck_assert_int_eq(info.trip_reason, SHK_R_WINDOW_EXCEEDED);
}
END_TEST

START_TEST(global_layer)
{
	shk_session_config c = base_config();

	c.guard.max_total_calls = 2;
	open_session(&c);
	call("a", "{\"i\":1}", SHK_ACTION_ALLOW, 0);
	/* denied calls do not count */
	call("a", "{\"i\":1}", SHK_ACTION_DENY, 0);
	call("a", "{\"i\":2}", SHK_ACTION_ALLOW, 0);
	expect(call("a", "{\"i\":3}", SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_GLOBAL_LIMIT, SHK_LAYER_GLOBAL);
	expect(call("a", "{\"i\":4}", SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_CIRCUIT_OPEN, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(hitl_pending)
{
	shk_session_config c = base_config();
	shk_toolcall t1, t2;
	shk_pending p;
	shk_outcome o;

	c.guard.hitl_mode = SHK_HITL_ALWAYS;
	c.max_pending = 1;
	open_session(&c);
	t1 = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}", 0);
	expect(run(&t1, SHK_ACTION_ALLOW, S(3)), SHK_HITL, SHK_R_HITL_ALL_CALLS, SHK_LAYER_DECIDE);
	ck_assert_int_eq(shk_session_pending_get(ses, t1.nonce, &p), 0);
	ck_assert_str_eq(p.params_digest, t1.params_digest);
	ck_assert_int_eq(p.status, SHK_PENDING_WAITING);
	ck_assert_int_eq(p.held_at_ns, S(3));
	ck_assert_int_eq(p.reason, SHK_R_HITL_ALL_CALLS);
	/* the nonce was not recorded: the same call may come back */
	ck_assert_int_eq(shk_session_evaluate(ses, &t1, SHK_ACTION_ALLOW, S(4), &o), 0);
	expect(o, SHK_HITL, SHK_R_HITL_ALL_CALLS, SHK_LAYER_DECIDE);
	/* table full: a second held call is denied, not forgotten */
	t2 = mk("exec:npm", "{\"argv\":[\"npm\",\"publish\"]}", 0);
	ck_assert_int_eq(shk_session_evaluate(ses, &t2, SHK_ACTION_ALLOW, S(5), &o), 0);
	expect(o, SHK_DENY, SHK_R_SESSION_CAPACITY, SHK_LAYER_SESSION);
	ck_assert(!o.trips);
	/* once resolved, the slot can be reused */
	ck_assert_int_eq(shk_session_pending_set(ses, t1.nonce, SHK_PENDING_REJECTED), 0);
	expect(run(&t2, SHK_ACTION_ALLOW, S(6)), SHK_HITL, SHK_R_HITL_ALL_CALLS, SHK_LAYER_DECIDE);
	ck_assert_int_eq(shk_session_pending_get(ses, t1.nonce, &p), -ENOENT);
	ck_assert_int_eq(shk_session_pending_set(ses, 12345, SHK_PENDING_APPROVED), -ENOENT);
}
END_TEST

/* The HITL round trip: held, approved by a human, released exactly once. */
START_TEST(hitl_approve_release_once)
{
	shk_session_config c = base_config();
	shk_toolcall t, other;
	shk_pending p;
	shk_session_info info;

	open_session(&c);
	t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}", 0);
	expect(run(&t, SHK_ACTION_HITL, S(1)), SHK_HITL, SHK_R_POLICY_HITL, SHK_LAYER_POLICY);
	/* still waiting: held again */
	expect(run(&t, SHK_ACTION_HITL, S(2)), SHK_HITL, SHK_R_POLICY_HITL, SHK_LAYER_POLICY);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_APPROVED), 0);
	/* same nonce, other arguments: refused, and it is a runaway signal */
	other = mk("exec:git", "{\"argv\":[\"git\",\"push\",\"--force\"]}", 0);
	other.nonce = t.nonce;
	{
		shk_outcome o;
		ck_assert_int_eq(shk_session_evaluate(ses, &other, SHK_ACTION_HITL, S(3), &o), 0);
		expect(o, SHK_DENY, SHK_R_HT_DIGEST_MISMATCH, SHK_LAYER_DECIDE);
		ck_assert(o.trips);
	}
	/* the approved call itself is released, past the static hitl rule */
	expect(run(&t, SHK_ACTION_HITL, S(4)), SHK_ALLOW, SHK_R_HT_APPROVE, SHK_LAYER_DECIDE);
	ck_assert_int_eq(shk_session_pending_get(ses, t.nonce, &p), 0);
	ck_assert_int_eq(p.status, SHK_PENDING_CONSUMED);
	shk_session_get_info(ses, &info);
	ck_assert_uint_eq(info.total_calls, 1);
	/* a second dispatch of the same approval has no effect */
	expect(run(&t, SHK_ACTION_HITL, S(5)), SHK_DENY, SHK_R_DUPLICATE_RESUME, SHK_LAYER_DECIDE);
	shk_session_get_info(ses, &info);
	ck_assert(info.circuit_tripped);
}
END_TEST

START_TEST(hitl_reject_and_expire)
{
	shk_session_config c = base_config();
	shk_toolcall t, u;
	shk_session_info info;

	c.max_pending = 2;
	open_session(&c);
	t = mk("exec:npm", "{\"argv\":[\"npm\",\"publish\"]}", 0);
	u = mk("exec:npm", "{\"argv\":[\"npm\",\"unpublish\"]}", 0);
	run(&t, SHK_ACTION_HITL, 0);
	run(&u, SHK_ACTION_HITL, 0);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_REJECTED), 0);
	ck_assert_int_eq(shk_session_pending_set(ses, u.nonce, SHK_PENDING_EXPIRED), 0);
	ck_assert_int_eq(shk_session_pending_set(ses, u.nonce, (shk_pending_status)99), -EINVAL);
	expect(run(&t, SHK_ACTION_HITL, 0), SHK_DENY, SHK_R_HT_REJECT, SHK_LAYER_DECIDE);
	expect(run(&u, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_HT_REJECT, SHK_LAYER_DECIDE);
	shk_session_get_info(ses, &info);
	ck_assert(!info.circuit_tripped); /* a human "no" is not a runaway */
	expect(call("exec:ls", "{}", SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(hitl_approved_not_evicted)
{
	shk_session_config c = base_config();
	shk_toolcall t, u;
	shk_outcome o;

	c.max_pending = 1;
	open_session(&c);
	t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}", 0);
	run(&t, SHK_ACTION_HITL, 0);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_APPROVED), 0);
	u = mk("exec:git", "{\"argv\":[\"git\",\"tag\"]}", 0);
	ck_assert_int_eq(shk_session_evaluate(ses, &u, SHK_ACTION_HITL, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_SESSION_CAPACITY, SHK_LAYER_SESSION);
	/* once consumed, the slot is free again */
	expect(run(&t, SHK_ACTION_HITL, 0), SHK_ALLOW, SHK_R_HT_APPROVE, SHK_LAYER_DECIDE);
	expect(run(&u, SHK_ACTION_HITL, 0), SHK_HITL, SHK_R_POLICY_HITL, SHK_LAYER_POLICY);
}
END_TEST

START_TEST(nonces)
{
	shk_session_config c = base_config();
	shk_toolcall t;
	shk_outcome o;

	c.max_nonce_ranges = 1;
	c.guard.trip_on_deny = false;
	open_session(&c);
	t = mk("a", "{}", 0);
	expect(run(&t, SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	expect(run(&t, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_DUPLICATE_NONCE, SHK_LAYER_DECIDE);
	t = mk("a", "{\"x\":1}", 0);
	expect(run(&t, SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	/* a gap would need a second interval: refused */
	t = mk("a", "{\"x\":2}", 0);
	t.nonce += 10;
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_ALLOW, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_SESSION_CAPACITY, SHK_LAYER_SESSION);
	ck_assert_int_eq(shk_session_commit(ses, &t, &o, 0), 0); /* a deny changes nothing */
	o.verdict = SHK_ALLOW;
	ck_assert_int_eq(shk_session_commit(ses, &t, &o, 0), -ENOSPC);
}
END_TEST

START_TEST(repeat_table_capacity)
{
	shk_session_config c = base_config();
	shk_outcome o;
	shk_toolcall t;

	c.max_repeat_keys = 2;
	open_session(&c);
	call("a", "{\"i\":1}", SHK_ACTION_ALLOW, 0);
	call("a", "{\"i\":2}", SHK_ACTION_ALLOW, 0);
	call("a", "{\"i\":2}", SHK_ACTION_ALLOW, 0); /* known key: fine */
	t = mk("a", "{\"i\":3}", 0);
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_ALLOW, 0, &o), 0);
	expect(o, SHK_DENY, SHK_R_SESSION_CAPACITY, SHK_LAYER_SESSION);
}
END_TEST

START_TEST(error_amplification)
{
	shk_session_config c = base_config();
	shk_outcome o;
	const char *p = "{\"argv\":[\"curl\",\"-H\",\"x\"],\"last_error\":\"HTTP 401 Unauthorized\"}";

	c.guard.max_repeat_calls = 3;
	c.guard.error_amplification = true;
	open_session(&c);
	o = call("exec:curl", p, SHK_ACTION_ALLOW, 0);
	ck_assert(o.error_signal);
	ck_assert_uint_eq(o.max_repeat_calls, 2);
	call("exec:curl", p, SHK_ACTION_ALLOW, 0);
	expect(call("exec:curl", p, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(malformed_params_trip)
{
	shk_session_config c = base_config();
	shk_toolcall t;
	shk_val *p;

	open_session(&c);
	memset(&t, 0, sizeof(t));
	p = shk_object(doc);
	ck_assert_int_eq(shk_object_set_str(p, "x", shk_real(doc, INFINITY)), 0);
	t.tool_name = "a";
	t.params = p;
	t.nonce = 1;
	ck_assert_int_eq(shk_toolcall_prepare(&t), -EINVAL);
	expect(run(&t, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_MALFORMED_INPUT, SHK_LAYER_DECIDE);
	/* unprepared params are checked by decide() itself */
	memset(&t, 0, sizeof(t));
	t.params = p;
	t.nonce = 2;
	shk_session_reset(ses);
	expect(run(&t, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_MALFORMED_INPUT, SHK_LAYER_DECIDE);
}
END_TEST

/* decide() reads absent and null params as {} (the reference); the runtime
 * builds every call's params itself, so one without params is refused, and
 * is not counted, prepared or not. */
START_TEST(runtime_params_must_be_object)
{
	shk_session_config c = base_config();
	shk_toolcall t;
	shk_session_info info;
	const shk_val *ps[] = { NULL, shk_null(doc) };

	open_session(&c);
	for (int i = 0; i < 4; i++) {
		memset(&t, 0, sizeof(t));
		t.tool_name = "a";
		t.params = ps[i % 2];
		t.nonce = (uint64_t)i + 1;
		if (i >= 2)
			ck_assert_int_eq(shk_toolcall_prepare(&t), -EINVAL);
		shk_session_reset(ses);
		expect(run(&t, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_MALFORMED_INPUT, SHK_LAYER_DECIDE);
		shk_session_get_info(ses, &info);
		ck_assert_uint_eq(info.total_calls, 0);
	}
}
END_TEST

/* A call whose params were never prepared (or were swapped afterwards) is
 * prepared on the fly: same repeat key, no stale digest. */
START_TEST(unprepared_calls)
{
	shk_session_config c = base_config();
	shk_toolcall t, u;

	c.guard.max_repeat_calls = 2;
	open_session(&c);
	t = mk("exec:curl", CURL_A, 0);
	run(&t, SHK_ACTION_ALLOW, 0);
	memset(&u, 0, sizeof(u));
	u.tool_name = "exec:curl";
	u.params = parse(CURL_A);
	u.nonce = next_nonce++;
	ck_assert_uint_eq(shk_session_repeat_count(ses, &u), 1);
	expect(run(&u, SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	/* prepared for B, then pointed at A: counted as A */
	u = mk("exec:curl", CURL_B, 0);
	u.params = parse(CURL_A);
	expect(run(&u, SHK_ACTION_ALLOW, 0), SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED, SHK_LAYER_DECIDE);
}
END_TEST

START_TEST(null_arguments)
{
	shk_session_config c = base_config();
	shk_outcome o;
	shk_toolcall t;

	ck_assert_int_eq(shk_session_new(NULL, &ses), -EINVAL);
	open_session(&c);
	t = mk("a", "{}", 0);
	o.verdict = SHK_ALLOW;
	ck_assert_int_eq(shk_session_evaluate(ses, NULL, SHK_ACTION_ALLOW, 0, &o), -EINVAL);
	ck_assert_int_eq(o.verdict, SHK_DENY);
	ck_assert_int_eq(shk_session_evaluate(NULL, &t, SHK_ACTION_ALLOW, 0, &o), -EINVAL);
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_ALLOW, 0, NULL), -EINVAL);
	ck_assert_int_eq(shk_session_commit(ses, &t, NULL, 0), -EINVAL);
	ck_assert_int_eq(shk_toolcall_prepare(NULL), -EINVAL);
	shk_session_reset(NULL);
	shk_session_free(NULL);
	ck_assert_int_eq(shk_session_post_exec(NULL, 1, 0), -EINVAL);
}
END_TEST

/* Replay: the same inputs give the same outcomes, field for field. */
static void script(shk_outcome *out, size_t n)
{
	shk_session_config c = base_config();
	static const char *const params[] = { CURL_A, SH, LLM, CURL_B, "{\"ctx\":\"opaque\"}" };

	c.guard.budget_usd = 0.05;
	c.guard.max_repeat_calls = 4;
	c.guard.hitl_mode = SHK_HITL_ON_THRESHOLD;
	c.guard.window_duration_s = 60;
	c.guard.window_max_calls = 100;
	c.guard.trip_on_deny = false;
	shk_session_free(ses);
	ses = NULL;
	next_nonce = 1;
	open_session(&c);
	for (size_t i = 0; i < n; i++) {
		shk_toolcall t = mk(i % 3 ? "exec" : "net", params[(i * 7) % 5], 0.001 * (double)(i % 4));
		out[i] = run(&t, i % 11 == 10 ? SHK_ACTION_DENY : SHK_ACTION_ALLOW, S(i));
		if (out[i].verdict == SHK_ALLOW && i % 2)
			ck_assert_int_eq(shk_session_post_exec(ses, t.nonce, 0.0005), 0);
	}
}

START_TEST(deterministic_replay)
{
	shk_outcome a[60], b[60];
	unsigned v[3] = { 0, 0, 0 };

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	script(a, 60);
	script(b, 60);
	for (int i = 0; i < 60; i++) {
		ck_assert_int_eq(a[i].verdict, b[i].verdict);
		ck_assert_int_eq(a[i].reason, b[i].reason);
		ck_assert_int_eq(a[i].layer, b[i].layer);
		ck_assert(a[i].budget_remaining_usd == b[i].budget_remaining_usd);
		ck_assert(a[i].budget_after_usd == b[i].budget_after_usd);
		ck_assert_uint_eq(a[i].repeat_count, b[i].repeat_count);
		ck_assert_uint_eq(a[i].total_calls, b[i].total_calls);
		ck_assert_uint_eq(a[i].window_count, b[i].window_count);
		v[a[i].verdict]++;
	}
	/* the script exercises all three verdicts */
	ck_assert(v[SHK_ALLOW] && v[SHK_DENY] && v[SHK_HITL]);
}
END_TEST

/* Session-level invariants over random call sequences: the budget floor holds
 * without post-exec reports, no nonce is allowed twice, no (tool, params) key
 * is allowed more than max_repeat_calls times, a tripped breaker denies until
 * reset, and the window never holds more than window_max_calls. */
static uint64_t rs;

static unsigned rnd(unsigned n)
{
	rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rs >> 33) % n);
}

START_TEST(random_sequences)
{
	static const char *const tools[] = { "exec:curl", "exec:sh", "net:llm" };
	static const char *const params[] = { CURL_A, CURL_B, SH, LLM, "{\"ctx\":\"opaque\"}", "{\"e\":\"401\"}" };
	static const double costs[] = { 0, 0.01, 0.05, 0.1, 0.3 };

	for (unsigned seq = 0; seq < 200; seq++) {
		shk_session_config c = base_config();
		unsigned allowed_per_key[3][6];
		uint64_t allowed_nonces[64];
		size_t n_allowed = 0;
		shk_session_info info;
		double remaining;

		rs = seq + 1;
		memset(allowed_per_key, 0, sizeof(allowed_per_key));
		c.guard.budget_usd = rnd(2) ? 1.0 : 0;
		c.guard.max_repeat_calls = rnd(4);
		c.guard.error_amplification = rnd(2);
		c.guard.hitl_mode = (shk_hitl_mode)rnd(3);
		c.guard.window_duration_s = rnd(2) ? 5 : 0;
		c.guard.window_max_calls = 3;
		c.guard.trip_on_deny = rnd(2);
		shk_session_free(ses);
		ses = NULL;
		open_session(&c);
		remaining = c.guard.budget_usd;
		for (unsigned i = 0; i < 60; i++) {
			unsigned t = rnd(3), p = rnd(6);
			shk_toolcall tc = mk(tools[t], params[p], costs[rnd(5)]);
			bool tripped_before;
			shk_outcome o;

			if (rnd(10) == 0 && n_allowed)
				tc.nonce = allowed_nonces[rnd((unsigned)n_allowed)]; /* replay */
			if (rnd(25) == 0)
				shk_session_reset(ses);
			shk_session_get_info(ses, &info);
			tripped_before = info.circuit_tripped;
			o = run(&tc, (shk_action)rnd(3), S(i));
			shk_session_get_info(ses, &info);
			if (tripped_before)
				ck_assert_int_eq(o.verdict, SHK_DENY);
			if (o.verdict == SHK_ALLOW)
				remaining -= tc.estimated_cost_usd; /* charged exactly once, only on ALLOW */
			ck_assert_msg(info.budget_remaining_usd == remaining, "seq %u call %u: remaining %g, want %g",
				      seq, i, info.budget_remaining_usd, remaining);
			if (c.guard.budget_usd > 0)
				ck_assert_msg(info.budget_remaining_usd >= 0, "seq %u call %u: remaining %g", seq, i,
					      info.budget_remaining_usd);
			if (o.verdict != SHK_ALLOW)
				continue;
			for (size_t k = 0; k < n_allowed; k++)
				ck_assert_msg(allowed_nonces[k] != tc.nonce, "seq %u: nonce allowed twice", seq);
			allowed_nonces[n_allowed++] = tc.nonce;
			allowed_per_key[t][p]++;
			if (c.guard.max_repeat_calls)
				ck_assert_uint_le(allowed_per_key[t][p], c.guard.max_repeat_calls);
			if (c.guard.window_duration_s)
				ck_assert_uint_lt(o.window_count, c.guard.window_max_calls);
		}
	}
}
END_TEST

START_TEST(layers_pure)
{
	shk_window w = { 0, 0 };

	ck_assert(shk_error_signal_in("Connection REFUSED by peer", 26));
	ck_assert(shk_error_signal_in("x-deadline exceeded", 19));
	ck_assert(!shk_error_signal_in("connection refuse", 17));
	ck_assert(!shk_error_signal_in("all good", 8));
	ck_assert(!shk_error_signal_in(NULL, 3));
	ck_assert(shk_error_signal_in_val(parse("{\"status\":503}")));
	ck_assert(shk_error_signal_in_val(parse("{\"Forbidden\":true}")));
	ck_assert(shk_error_signal_in_val(parse("[1, [2, {\"m\": \"rate limit hit\"}]]")));
	ck_assert(shk_error_signal_in_val(parse("{\"t\":4010.5}")));
	ck_assert(!shk_error_signal_in_val(parse("{\"status\":200,\"ok\":true}")));
	ck_assert_uint_eq(shk_effective_repeat_limit(5, true, true), 4);
	ck_assert_uint_eq(shk_effective_repeat_limit(1, true, true), 1);
	ck_assert_uint_eq(shk_effective_repeat_limit(0, true, true), 0);
	ck_assert_uint_eq(shk_effective_repeat_limit(5, false, true), 5);
	ck_assert_uint_eq(shk_effective_repeat_limit(5, true, false), 5);
	ck_assert(!shk_global_exceeded(100, 0));
	ck_assert(shk_global_exceeded(100, 100));
	ck_assert(!shk_global_exceeded(99, 100));
	ck_assert(!shk_window_exceeded(&w, 10, 1, 0));
	shk_window_record(&w, 10, INT64_MIN);
	ck_assert(shk_window_exceeded(&w, 10, 1, INT64_MAX - 1) == false); /* far future: expired */
	ck_assert(shk_window_exceeded(&w, 10, 1, INT64_MIN + 5));
	ck_assert(!shk_window_exceeded(&w, 0, 1, 0));
	ck_assert(!shk_window_exceeded(&w, 10, 0, INT64_MIN));
}
END_TEST

/* Calls out of the repeat guard (a tool's own helpers, a rule's exemption):
 * decide() is shown no limit, they are not counted under their key, and a
 * guarded call with the same tool and params still meets its own count;
 * budget, breaker and the other layers still apply to them. */
START_TEST(repeat_exempt_calls)
{
	shk_session_config c = base_config();
	shk_session_info info;
	shk_toolcall tc;
	shk_outcome o;

	c.guard.max_repeat_calls = 2;
	c.guard.budget_usd = 1.0;
	c.max_repeat_keys = 1;
	open_session(&c);
	for (int i = 0; i < 2; i++)
		expect(call("exec:curl", CURL_A, SHK_ACTION_ALLOW, S(i)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS,
		       SHK_LAYER_DECIDE);
	for (int i = 0; i < 6; i++) {
		tc = mk("exec:curl", CURL_A, 0.125);
		tc.repeat_exempt = true;
		o = run(&tc, SHK_ACTION_ALLOW, S(3));
		expect(o, SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
		ck_assert_uint_eq(o.max_repeat_calls, 0);
		ck_assert_uint_eq(o.repeat_count, 2);
		/* another key, although the table is full: nothing is counted */
		tc = mk("exec:curl", CURL_B, 0);
		tc.repeat_exempt = true;
		expect(run(&tc, SHK_ACTION_ALLOW, S(3)), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS, SHK_LAYER_DECIDE);
	}
	shk_session_get_info(ses, &info);
	ck_assert_uint_eq(info.repeat_keys, 1);
	ck_assert_uint_eq(info.total_calls, 14);
	ck_assert(info.budget_remaining_usd == 0.25);
	/* the static policy still applies */
	tc = mk("exec:curl", CURL_A, 0);
	tc.repeat_exempt = true;
	expect(run(&tc, SHK_ACTION_DENY, S(4)), SHK_DENY, SHK_R_POLICY_DENIED, SHK_LAYER_POLICY);
	/* the guarded call is stopped on its own count (2), which the exempt
	 * calls neither raised nor reset */
	o = call("exec:curl", CURL_A, SHK_ACTION_ALLOW, S(5));
	expect(o, SHK_DENY, SHK_R_MAX_REPEAT_EXCEEDED, SHK_LAYER_DECIDE);
	ck_assert_uint_eq(o.repeat_count, 2);
	/* and the open breaker denies exempt calls too */
	tc = mk("exec:true", "{}", 0);
	tc.repeat_exempt = true;
	expect(run(&tc, SHK_ACTION_ALLOW, S(6)), SHK_DENY, SHK_R_CIRCUIT_OPEN, SHK_LAYER_DECIDE);
}
END_TEST

/* The budget is charged for exempt calls: it stops them. */
START_TEST(repeat_exempt_budget)
{
	shk_session_config c = base_config();
	shk_toolcall tc;
	int allowed = 0;

	c.guard.max_repeat_calls = 1;
	c.guard.budget_usd = 1.0;
	open_session(&c);
	for (int i = 0; i < 10; i++) {
		tc = mk("net:connect", LLM, 0.25);
		tc.repeat_exempt = true;
		allowed += run(&tc, SHK_ACTION_ALLOW, S(i)).verdict == SHK_ALLOW;
	}
	ck_assert_int_eq(allowed, 4);
	tc = mk("net:connect", LLM, 0.25);
	tc.repeat_exempt = true;
	expect(run(&tc, SHK_ACTION_ALLOW, S(11)), SHK_DENY, SHK_R_CIRCUIT_OPEN, SHK_LAYER_DECIDE);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("transitions");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, repeat_across_interleaving);
	tcase_add_test(tc, static_policy_actions);
	tcase_add_test(tc, trip_on_deny_off);
	tcase_add_test(tc, budget_charge_and_refund);
	tcase_add_test(tc, invalid_cost);
	tcase_add_test(tc, shared_view);
	tcase_add_test(tc, window_layer);
	tcase_add_test(tc, window_trips);
	tcase_add_test(tc, global_layer);
	tcase_add_test(tc, hitl_pending);
	tcase_add_test(tc, hitl_approve_release_once);
	tcase_add_test(tc, hitl_reject_and_expire);
	tcase_add_test(tc, hitl_approved_not_evicted);
	tcase_add_test(tc, nonces);
	tcase_add_test(tc, repeat_table_capacity);
	tcase_add_test(tc, error_amplification);
	tcase_add_test(tc, malformed_params_trip);
	tcase_add_test(tc, unprepared_calls);
	tcase_add_test(tc, null_arguments);
	tcase_add_test(tc, deterministic_replay);
	tcase_add_test(tc, random_sequences);
	tcase_add_test(tc, layers_pure);
	tcase_add_test(tc, runtime_params_must_be_object);
	tcase_add_test(tc, repeat_exempt_calls);
	tcase_add_test(tc, repeat_exempt_budget);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
