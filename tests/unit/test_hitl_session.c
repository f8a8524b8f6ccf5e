/* SPDX-License-Identifier: MIT */
/*
 * Human decisions on held calls, resolved by decide() Rule 4 through the
 * session: approve, reject, modify, defer/escalate, a second resume, an
 * approval bound to the wrong digest, expiry and cancellation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <shackle/canon.h>
#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/session.h>

#include "testutil.h"
#include "checkrun.h"

#define S(x) ((int64_t)(x) * 1000000000LL)

static shk_doc *doc;
static shk_session *ses;
static uint64_t next_nonce;

static void setup(void)
{
	shk_session_config c;

	ck_assert_int_eq(shk_doc_new(&doc), 0);
	memset(&c, 0, sizeof(c));
	c.guard.trip_on_deny = true;
	c.max_pending = 4;
	ck_assert_int_eq(shk_session_new(&c, &ses), 0);
	next_nonce = 1;
}

static void teardown(void)
{
	shk_session_free(ses);
	shk_doc_free(doc);
}

static shk_toolcall mk(const char *tool, const char *params)
{
	shk_parse_error err;
	shk_toolcall tc;
	shk_val *v = NULL;

	if (shk_json_parse(doc, params, strlen(params), "test", &v, &err) < 0)
		ck_abort_msg("parse of %s failed: %s", params, err.text);
	memset(&tc, 0, sizeof(tc));
	tc.tool_name = tool;
	tc.params = v;
	tc.nonce = next_nonce++;
	ck_assert_int_eq(shk_toolcall_prepare(&tc), 0);
	return tc;
}

static shk_outcome run(const shk_toolcall *tc, shk_action action, int64_t now)
{
	shk_outcome o;

	ck_assert_int_eq(shk_session_evaluate(ses, tc, action, now, &o), 0);
	ck_assert_int_eq(shk_session_commit(ses, tc, &o, now), 0);
	return o;
}

#define expect(o, v, r)                                                                      \
	do {                                                                                 \
		shk_outcome o_ = (o);                                                        \
		ck_assert_msg(o_.verdict == (v) && o_.reason == (r), "got %s %s, want %s %s", \
		              shk_verdict_str(o_.verdict), shk_reason_str(o_.reason),        \
		              shk_verdict_str(v), shk_reason_str(r));                        \
	} while (0)

static bool tripped(void)
{
	shk_session_info info;

	shk_session_get_info(ses, &info);
	return info.circuit_tripped;
}

static shk_pending_status status_of(uint64_t nonce)
{
	shk_pending p;

	ck_assert_int_eq(shk_session_pending_get(ses, nonce, &p), 0);
	return p.status;
}

/* The canonical text of the transition decide() sees for nonce. */
static char *transition_text(uint64_t nonce)
{
	const shk_val *t = shk_session_pending_transition(ses, nonce);
	char *buf = NULL;
	size_t len;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(shk_canon_dump(t, &buf, &len), 0);
	return buf;
}

static void hold(const shk_toolcall *tc)
{
	expect(run(tc, SHK_ACTION_HITL, S(1)), SHK_HITL, SHK_R_POLICY_HITL);
	ck_assert_int_eq(status_of(tc->nonce), SHK_PENDING_WAITING);
	ck_assert_ptr_null(shk_session_pending_transition(ses, tc->nonce));
}

/* A second resume of a terminal entry changes nothing, and decide() says so. */
static void second_resume_no_effect(const shk_toolcall *tc, shk_pending_status again)
{
	shk_pending_status before = status_of(tc->nonce);
	shk_outcome o;

	ck_assert_int_eq(shk_session_pending_set(ses, tc->nonce, again), -EALREADY);
	ck_assert_int_eq(status_of(tc->nonce), before);
	ck_assert_int_eq(shk_session_evaluate_resume(ses, tc, S(9), &o), 0);
	expect(o, SHK_DENY, SHK_R_DUPLICATE_RESUME);
	ck_assert_int_eq(o.decided.verdict, SHK_DENY);
	ck_assert_int_eq(o.decided.reason, SHK_R_DUPLICATE_RESUME);
	ck_assert(!o.trips);
	ck_assert_int_eq(shk_session_commit(ses, tc, &o, S(9)), 0);
	ck_assert(!tripped());
}

START_TEST(approve_releases_once)
{
	shk_toolcall t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}");
	shk_outcome o;
	char *text;

	hold(&t);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_APPROVED), 0);
	text = transition_text(t.nonce);
	ck_assert_ptr_nonnull(strstr(text, "\"decision\":\"approve\""));
	ck_assert_ptr_nonnull(strstr(text, "\"terminal_status\":\"pending\""));
	ck_assert_ptr_nonnull(strstr(text, t.params_digest));
	free(text);
	expect(run(&t, SHK_ACTION_HITL, S(2)), SHK_ALLOW, SHK_R_HT_APPROVE);
	ck_assert_int_eq(status_of(t.nonce), SHK_PENDING_CONSUMED);
	/* the operator approves again: no effect, no trip */
	second_resume_no_effect(&t, SHK_PENDING_APPROVED);
	/* a later, different call is judged on its own (P9) */
	{
		shk_toolcall u = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}");
		ck_assert_int_eq(shk_session_evaluate(ses, &u, SHK_ACTION_HITL, S(3), &o), 0);
		expect(o, SHK_HITL, SHK_R_POLICY_HITL);
	}
}
END_TEST

START_TEST(reject_denies_without_trip)
{
	shk_toolcall t = mk("exec:npm", "{\"argv\":[\"npm\",\"publish\"]}");

	hold(&t);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_REJECTED), 0);
	expect(run(&t, SHK_ACTION_HITL, S(2)), SHK_DENY, SHK_R_HT_REJECT);
	ck_assert(!tripped());
	ck_assert_int_eq(status_of(t.nonce), SHK_PENDING_REJECTED);
	/* approve after reject is a resume of a terminal transition */
	second_resume_no_effect(&t, SHK_PENDING_APPROVED);
}
END_TEST

START_TEST(modify_releases_successor_only)
{
	shk_toolcall t = mk("net:connect", "{\"addr\":\"10.0.0.1\",\"port\":5432}");
	shk_toolcall succ = mk("net:connect", "{\"addr\":\"127.0.0.1\",\"port\":5433}");
	shk_toolcall smuggled = mk("net:connect", "{\"addr\":\"10.0.0.9\",\"port\":5432}");
	shk_pending_decision d = { .status = SHK_PENDING_MODIFIED, .successor_nonce = succ.nonce,
	                           .successor_digest = succ.params_digest };
	shk_pending p;
	shk_outcome o;
	char *text;

	hold(&t);
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), 0);
	ck_assert_int_eq(shk_session_pending_get(ses, t.nonce, &p), 0);
	ck_assert_int_eq(p.status, SHK_PENDING_MODIFIED);
	ck_assert(p.has_successor);
	ck_assert_uint_eq(p.successor_nonce, succ.nonce);
	text = transition_text(t.nonce);
	ck_assert_ptr_nonnull(strstr(text, "\"decision\":\"modify\""));
	ck_assert_ptr_nonnull(strstr(text, succ.params_digest));
	free(text);
	/* the original is superseded: denied, not a runaway */
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_HITL, S(2), &o), 0);
	expect(o, SHK_DENY, SHK_R_HT_SUPERSEDED_ORIGINAL);
	ck_assert(!o.trips);
	/* the successor's nonce with other arguments is not released */
	smuggled.nonce = succ.nonce;
	ck_assert_int_eq(shk_session_evaluate(ses, &smuggled, SHK_ACTION_ALLOW, S(2), &o), 0);
	expect(o, SHK_DENY, SHK_R_HT_DIGEST_MISMATCH);
	/* a static deny still wins over the operator: the destination must be allowed */
	ck_assert_int_eq(shk_session_evaluate(ses, &succ, SHK_ACTION_DENY, S(2), &o), 0);
	expect(o, SHK_DENY, SHK_R_POLICY_DENIED);
	/* the successor itself, once */
	expect(run(&succ, SHK_ACTION_HITL, S(3)), SHK_ALLOW, SHK_R_HT_MODIFY_SUCCESSOR);
	ck_assert_int_eq(status_of(t.nonce), SHK_PENDING_CONSUMED);
	ck_assert_int_eq(shk_session_evaluate(ses, &succ, SHK_ACTION_ALLOW, S(4), &o), 0);
	expect(o, SHK_DENY, SHK_R_DUPLICATE_RESUME);
	second_resume_no_effect(&t, SHK_PENDING_APPROVED);
}
END_TEST

START_TEST(modify_refuses_bad_successor)
{
	shk_toolcall t = mk("net:connect", "{\"port\":1}");
	shk_toolcall done = mk("net:connect", "{\"port\":2}");
	shk_pending_decision d = { .status = SHK_PENDING_MODIFIED, .successor_nonce = t.nonce,
	                           .successor_digest = t.params_digest };

	expect(run(&done, SHK_ACTION_ALLOW, 0), SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	hold(&t);
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), -EINVAL); /* own nonce */
	d.successor_nonce = done.nonce;
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), -EINVAL); /* used nonce */
	d.successor_nonce = 1000;
	d.successor_digest = "ABC";
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), -EINVAL); /* not a digest */
	d.successor_digest = NULL;
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), -EINVAL);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_MODIFIED), -EINVAL);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_WAITING), -EINVAL);
	ck_assert_int_eq(status_of(t.nonce), SHK_PENDING_WAITING);
}
END_TEST

START_TEST(defer_and_escalate_stay_held)
{
	shk_toolcall t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}");
	shk_pending p;

	hold(&t);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_DEFERRED), 0);
	expect(run(&t, SHK_ACTION_HITL, S(5)), SHK_HITL, SHK_R_HT_DEFER_ESCALATE);
	ck_assert_int_eq(shk_session_pending_get(ses, t.nonce, &p), 0);
	ck_assert_int_eq(p.status, SHK_PENDING_DEFERRED);
	ck_assert_int_eq(p.held_at_ns, S(1)); /* the timeout runs from the first hold */
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_ESCALATED), 0);
	expect(run(&t, SHK_ACTION_ALLOW, S(6)), SHK_HITL, SHK_R_HT_DEFER_ESCALATE);
	ck_assert_int_eq(status_of(t.nonce), SHK_PENDING_ESCALATED);
	ck_assert(!tripped());
	/* a later decision replaces the deferral */
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_APPROVED), 0);
	expect(run(&t, SHK_ACTION_HITL, S(7)), SHK_ALLOW, SHK_R_HT_APPROVE);
}
END_TEST

START_TEST(wrong_digest_is_not_released)
{
	shk_toolcall t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}");
	shk_toolcall seen = mk("exec:git", "{\"argv\":[\"git\",\"push\",\"--force\"]}");
	shk_pending_decision d = { .status = SHK_PENDING_APPROVED, .args_digest = seen.params_digest };
	shk_pending p;
	shk_outcome o;

	hold(&t);
	/* the operator approved what they saw, which is not what is held */
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), 0);
	ck_assert_int_eq(shk_session_pending_get(ses, t.nonce, &p), 0);
	ck_assert_str_eq(p.bound_digest, seen.params_digest);
	ck_assert_int_eq(shk_session_evaluate(ses, &t, SHK_ACTION_HITL, S(2), &o), 0);
	expect(o, SHK_DENY, SHK_R_HT_DIGEST_MISMATCH);
	ck_assert(o.trips);
	d.args_digest = "0123";
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, &d), -EINVAL);
}
END_TEST

START_TEST(expiry_and_cancel)
{
	shk_toolcall t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}");
	shk_toolcall u = mk("exec:git", "{\"argv\":[\"git\",\"tag\"]}");
	char *text;

	hold(&t);
	hold(&u);
	ck_assert_int_eq(shk_session_pending_set(ses, t.nonce, SHK_PENDING_EXPIRED), 0);
	text = transition_text(t.nonce);
	ck_assert_ptr_nonnull(strstr(text, "\"terminal_status\":\"expired\""));
	free(text);
	expect(run(&t, SHK_ACTION_HITL, S(2)), SHK_DENY, SHK_R_HT_REJECT);
	ck_assert_int_eq(shk_session_pending_set(ses, u.nonce, SHK_PENDING_CANCELLED), 0);
	text = transition_text(u.nonce);
	ck_assert_ptr_nonnull(strstr(text, "\"terminal_status\":\"cancelled\""));
	free(text);
	expect(run(&u, SHK_ACTION_HITL, S(2)), SHK_DENY, SHK_R_HT_REJECT);
	ck_assert(!tripped());
	/* a late approval of a cancelled call has no effect */
	second_resume_no_effect(&u, SHK_PENDING_APPROVED);
	second_resume_no_effect(&t, SHK_PENDING_REJECTED);
}
END_TEST

START_TEST(cancelled_slots_are_reused)
{
	shk_toolcall t[5];
	shk_outcome o;

	for (int i = 0; i < 4; i++) {
		t[i] = mk("exec:sleep", i % 2 ? "{\"n\":1}" : "{\"n\":2}");
		hold(&t[i]);
	}
	t[4] = mk("exec:sleep", "{\"n\":3}");
	ck_assert_int_eq(shk_session_evaluate(ses, &t[4], SHK_ACTION_HITL, S(2), &o), 0);
	expect(o, SHK_DENY, SHK_R_SESSION_CAPACITY);
	/* deferred calls are not evicted, cancelled ones are */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(shk_session_pending_set(ses, t[i].nonce, SHK_PENDING_DEFERRED), 0);
	ck_assert_int_eq(shk_session_evaluate(ses, &t[4], SHK_ACTION_HITL, S(2), &o), 0);
	expect(o, SHK_DENY, SHK_R_SESSION_CAPACITY);
	ck_assert_int_eq(shk_session_pending_set(ses, t[3].nonce, SHK_PENDING_CANCELLED), 0);
	hold(&t[4]);
	ck_assert_int_eq(shk_session_pending_get(ses, t[3].nonce, &(shk_pending){ 0 }), -ENOENT);
}
END_TEST

START_TEST(resume_needs_terminal_entry)
{
	shk_toolcall t = mk("exec:git", "{\"argv\":[\"git\",\"push\"]}");
	shk_toolcall none = mk("exec:git", "{}");
	shk_outcome o;

	hold(&t);
	ck_assert_int_eq(shk_session_evaluate_resume(ses, &t, 0, &o), -EBUSY);
	ck_assert_int_eq(o.verdict, SHK_DENY);
	ck_assert_int_eq(shk_session_evaluate_resume(ses, &none, 0, &o), -ENOENT);
	ck_assert_int_eq(shk_session_evaluate_resume(NULL, &t, 0, &o), -EINVAL);
	ck_assert_int_eq(shk_session_pending_resolve(ses, t.nonce, NULL), -EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hitl_session");
	TCase *tc = tcase_create("transitions");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, approve_releases_once);
	tcase_add_test(tc, reject_denies_without_trip);
	tcase_add_test(tc, modify_releases_successor_only);
	tcase_add_test(tc, modify_refuses_bad_successor);
	tcase_add_test(tc, defer_and_escalate_stay_held);
	tcase_add_test(tc, wrong_digest_is_not_released);
	tcase_add_test(tc, expiry_and_cancel);
	tcase_add_test(tc, cancelled_slots_are_reused);
	tcase_add_test(tc, resume_needs_terminal_entry);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
