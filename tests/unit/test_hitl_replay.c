/* SPDX-License-Identifier: MIT */
/*
 * A session with human decisions (defer, escalate, approve, a second resume,
 * modify, expiry, cancellation, an approval bound to the wrong digest and a
 * breaker reset), logged as shackle-run logs it, replayed from the log alone;
 * then the same log with one human decision removed must diverge.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <shackle/audit.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#include "session_fixture.h"
#include "testutil.h"
#include "checkrun.h"

#define T0 1800000000000000000LL

static const char policy_text[] =
	"{\"version\":1,"
	"\"guard\":{\"budget_usd\":0,\"hitl_mode\":\"never\",\"trip_on_deny\":true},"
	"\"exec\":{\"default\":\"allow\",\"rules\":["
	"{\"name\":\"push\",\"path\":\"**/git\",\"argv\":[\"*\",\"push\",\"**\"],\"action\":\"hitl\"},"
	"{\"name\":\"publish\",\"path\":\"**/npm\",\"argv\":[\"*\",\"publish\",\"**\"],\"action\":\"hitl\"}]}}";

struct sup {
	shk_doc *doc;
	shk_policy *policy;
	shk_session *session;
	shk_ledger *ledger;
	uint64_t nonce, calls;
	int64_t now;
	shk_outcome last;
	shk_toolcall tc;
};

static char dir[64];
static char logp[4096], cutp[4096];

static void sup_open(struct sup *s, shk_key *k)
{
	struct session_fixture f = { 0 };

	memset(s, 0, sizeof(*s));
	session_fixture_open(&f, policy_text, "hitl-replay", logp, k, T0);
	s->doc = f.doc;
	s->policy = f.policy;
	s->session = f.session;
	s->ledger = f.ledger;
	s->now = T0;
	s->nonce = 10;
}

/* A prepared exec call in s->tc (nonce 0: a fresh one). */
static shk_action mk_call(struct sup *s, const char *const *argv, size_t argc, uint64_t nonce)
{
	char path[64];
	shk_policy_match m;
	shk_val *params = shk_object(s->doc), *av = shk_array(s->doc);
	static char tool[SHK_POLICY_TOOL_MAX];

	snprintf(path, sizeof(path), "/usr/bin/%s", argv[0]);
	ck_assert_int_eq(shk_policy_match_exec(s->policy, path, argv, argc, &m), 0);
	for (size_t i = 0; i < argc; i++)
		shk_array_append(av, shk_cstring(s->doc, argv[i]));
	shk_object_set_str(params, "argv", av);
	snprintf(tool, sizeof(tool), "%s", m.tool);
	memset(&s->tc, 0, sizeof(s->tc));
	s->tc.tool_name = tool;
	s->tc.params = params;
	s->tc.nonce = nonce ? nonce : s->nonce++;
	shk_toolcall_prepare(&s->tc);
	return m.action;
}

/* Evaluate (or, for an operator's second resume, evaluate_resume), log, commit. */
static shk_verdict judge(struct sup *s, shk_action action, const char *op, bool resume)
{
	shk_audit_decision d = { 0 };
	shk_val *inputs = NULL;

	s->now += 1000;
	if (resume) {
		ck_assert_int_eq(shk_session_evaluate_resume(s->session, &s->tc, s->now, &s->last), 0);
		inputs = shk_object(s->doc);
		shk_object_set_str(inputs, "resume_attempt", shk_bool(s->doc, true));
	} else {
		ck_assert_int_eq(shk_session_evaluate(s->session, &s->tc, action, s->now, &s->last), 0);
	}
	d = (shk_audit_decision){ .time_ns = s->now, .pid = 7, .tid = 7, .call_number = ++s->calls,
	                          .call = &s->tc, .action = action, .outcome = &s->last,
	                          .operator_id = op, .inputs = inputs };
	ck_assert_int_eq(shk_ledger_append_decision(s->ledger, &d), 0);
	ck_assert_int_eq(shk_session_commit(s->session, &s->tc, &s->last, s->now), 0);
	return s->last.verdict;
}

static void human(struct sup *s, const char *state, const shk_pending_decision *d, const char *op)
{
	shk_audit_hitl h = { .time_ns = s->now + 1, .call_number = s->calls, .state = state,
	                     .operator_id = op, .nonce = s->tc.nonce,
	                     .args_digest = s->tc.params_digest };

	if (d)
		ck_assert_int_eq(shk_session_pending_resolve(s->session, s->tc.nonce, d), 0);
	h.transition = shk_session_pending_transition(s->session, s->tc.nonce);
	ck_assert_int_eq(shk_ledger_append_hitl(s->ledger, &h), 0);
}

#define EXPECT(s, v, r)                                                                       \
	ck_assert_msg((s)->last.verdict == (v) && (s)->last.reason == (r), "got %s %s",         \
	              shk_verdict_str((s)->last.verdict), shk_reason_str((s)->last.reason))

static void held(struct sup *s, const char *const *argv, size_t argc)
{
	ck_assert_int_eq(judge(s, mk_call(s, argv, argc, 0), NULL, false), SHK_HITL);
	human(s, "pending", NULL, NULL);
}

static void scripted(shk_key *k)
{
	static const char *push[] = { "git", "push" }, *pub[] = { "npm", "publish" };
	static const char *dry[] = { "npm", "publish", "--dry-run" }, *tags[] = { "git", "push", "--tags" };
	static const char *ls[] = { "ls" };
	shk_pending_decision d = { 0 };
	struct sup s;
	uint64_t a;
	char digest[SHK_SHA256_HEX_LEN + 1];

	sup_open(&s, k);
	/* deferred, escalated, approved, then approved a second time */
	held(&s, push, 2);
	a = s.tc.nonce;
	human(&s, "deferred", &(shk_pending_decision){ .status = SHK_PENDING_DEFERRED }, "alice");
	judge(&s, SHK_ACTION_HITL, "alice", false);
	EXPECT(&s, SHK_HITL, SHK_R_HT_DEFER_ESCALATE);
	human(&s, "escalated", &(shk_pending_decision){ .status = SHK_PENDING_ESCALATED }, "alice");
	judge(&s, SHK_ACTION_HITL, "alice", false);
	EXPECT(&s, SHK_HITL, SHK_R_HT_DEFER_ESCALATE);
	human(&s, "approved", &(shk_pending_decision){ .status = SHK_PENDING_APPROVED }, "bob");
	judge(&s, SHK_ACTION_HITL, "bob", false);
	EXPECT(&s, SHK_ALLOW, SHK_R_HT_APPROVE);
	judge(&s, SHK_ACTION_HITL, "bob", true);
	EXPECT(&s, SHK_DENY, SHK_R_DUPLICATE_RESUME);
	ck_assert_uint_eq(s.tc.nonce, a);
	/* modified: only the successor runs */
	held(&s, pub, 2);
	a = s.tc.nonce;
	mk_call(&s, dry, 3, 0);
	memcpy(digest, s.tc.params_digest, sizeof(digest));
	d = (shk_pending_decision){ .status = SHK_PENDING_MODIFIED, .successor_nonce = s.tc.nonce,
	                            .successor_digest = digest };
	{
		uint64_t succ = s.tc.nonce;
		mk_call(&s, pub, 2, a);
		human(&s, "modified", &d, "carol");
		judge(&s, mk_call(&s, dry, 3, succ), "carol", false);
		EXPECT(&s, SHK_ALLOW, SHK_R_HT_MODIFY_SUCCESSOR);
	}
	/* expired */
	held(&s, tags, 3);
	human(&s, "expired", &(shk_pending_decision){ .status = SHK_PENDING_EXPIRED }, NULL);
	judge(&s, SHK_ACTION_HITL, NULL, false);
	EXPECT(&s, SHK_DENY, SHK_R_HT_REJECT);
	/* cancelled (the held thread died): nothing is dispatched again */
	held(&s, push, 2);
	human(&s, "cancelled", &(shk_pending_decision){ .status = SHK_PENDING_CANCELLED }, NULL);
	/* approved for another digest: not released, trips; an operator resets */
	held(&s, push, 2);
	human(&s, "approved", &(shk_pending_decision){ .status = SHK_PENDING_APPROVED, .args_digest = digest },
	      "dave");
	judge(&s, SHK_ACTION_HITL, "dave", false);
	EXPECT(&s, SHK_DENY, SHK_R_HT_DIGEST_MISMATCH);
	shk_session_reset(s.session);
	{
		shk_audit_hitl h = { s.now + 2, s.calls, "breaker_reset", "dave", 0, NULL, NULL, NULL };
		ck_assert_int_eq(shk_ledger_append_hitl(s.ledger, &h), 0);
	}
	judge(&s, mk_call(&s, ls, 1, 0), NULL, false);
	EXPECT(&s, SHK_ALLOW, SHK_R_WITHIN_THRESHOLDS);
	{
		shk_audit_session_end e = { s.now + 5, 0, NULL, NULL };
		ck_assert_int_eq(shk_ledger_end(s.ledger, &e), 0);
	}
	ck_assert_int_eq(shk_ledger_close(s.ledger), 0);
	shk_session_free(s.session);
	shk_policy_free(s.policy);
	shk_doc_free(s.doc);
}

/* Copy logp to cutp without the first line containing both needles. */
static void cut_line(const char *n1, const char *n2)
{
	FILE *in = fopen(logp, "r"), *out = fopen(cutp, "w");
	char *line = NULL;
	size_t cap = 0;
	bool cut = false;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	while (getline(&line, &cap, in) > 0) {
		if (!cut && strstr(line, n1) && strstr(line, n2)) {
			cut = true;
			continue;
		}
		fputs(line, out);
	}
	free(line);
	fclose(in);
	fclose(out);
	ck_assert_msg(cut, "no line with %s and %s", n1, n2);
}

static shk_key *key;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/shk-hitl-replay-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/log.jsonl", dir);
	snprintf(cutp, sizeof(cutp), "%s/cut.jsonl", dir);
	ck_assert_int_eq(shk_key_generate(&key), 0);
	scripted(key);
}

static void teardown(void)
{
	shk_key_free(key);
	unlink(logp);
	unlink(cutp);
	rmdir(dir);
}

START_TEST(replay_reproduces_human_decisions)
{
	const char *paths[] = { logp };
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	shk_verify_report vr;
	shk_replay_report r;

	memcpy(pk, shk_key_public(key), sizeof(pk));
	ck_assert_int_eq(shk_verify_files(paths, 1, pk, NULL, &vr), 0);
	ck_assert_int_eq(vr.result, SHK_VERIFY_OK);
	ck_assert_int_eq(shk_replay_files(paths, 1, &r), 0);
	ck_assert_msg(r.result == SHK_REPLAY_OK, "%s at line %llu: %s", shk_replay_result_name(r.result),
	              (unsigned long long)r.line, r.detail);
	ck_assert_uint_eq(r.decisions, 13);
	ck_assert_uint_eq(r.hitl_events, 13);
}
END_TEST

static void expect_divergence(const char *n1, const char *n2)
{
	const char *paths[] = { cutp };
	shk_replay_report r;

	cut_line(n1, n2);
	ck_assert_int_eq(shk_replay_files(paths, 1, &r), 0);
	ck_assert_msg(r.result == SHK_REPLAY_DIVERGED, "removing %s %s: %s (%s)", n1, n2,
	              shk_replay_result_name(r.result), r.detail);
}

START_TEST(replay_needs_each_decision)
{
	expect_divergence("\"state\":\"deferred\"", "\"kind\":\"hitl\"");
	/* (escalate after defer presents the same reason, defer_escalate, so
	 * removing only the escalation is not visible to replay) */
	expect_divergence("\"state\":\"modified\"", "\"kind\":\"hitl\"");
	expect_divergence("\"state\":\"expired\"", "\"kind\":\"hitl\"");
	expect_divergence("\"state\":\"breaker_reset\"", "\"kind\":\"hitl\"");
	/* an approval whose digest was rewritten to the held call's releases it */
	expect_divergence("\"operator\":\"dave\"", "\"state\":\"approved\"");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hitl_replay");
	TCase *tc = tcase_create("replay");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, replay_reproduces_human_decisions);
	tcase_add_test(tc, replay_needs_each_decision);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
