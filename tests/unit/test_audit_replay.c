/* SPDX-License-Identifier: MIT */
/* Replay: a scripted session driven through the real session code and logged
 * as the supervisor logs it, replayed from the log alone; then altered logs. */
#include <math.h>

#include <shackle/policy.h>
#include <shackle/session.h>

#include "audit_fixture.h"
#include "session_fixture.h"
#include "checkrun.h"

#define T0 1700000000000000000LL

static const char policy_text[] =
	"{\"version\":1,"
	"\"guard\":{\"budget_usd\":1.0,\"max_repeat_calls\":2,\"hitl_mode\":\"never\",\"trip_on_deny\":true},"
	"\"exec\":{\"default\":\"allow\",\"rules\":["
	"{\"name\":\"git-push\",\"tool\":\"git.push\",\"path\":\"**/git\",\"argv\":[\"*\",\"push\"],\"action\":\"hitl\"},"
	"{\"name\":\"no-sudo\",\"path\":\"**/sudo\",\"action\":\"deny\"}]}}";

struct sup {
	shk_doc *doc;
	shk_policy *policy;
	shk_session *session;
	shk_ledger *ledger;
	uint64_t nonce, calls;
	int64_t now;
	shk_outcome last;
};

static void sup_open(struct sup *s, const char *path, const shk_key *k)
{
	struct session_fixture f = { 0 };

	memset(s, 0, sizeof(*s));
	session_fixture_open(&f, policy_text, "replay-1", path, k, T0);
	s->doc = f.doc;
	s->policy = f.policy;
	s->session = f.session;
	s->ledger = f.ledger;
	s->now = T0;
	s->nonce = 77;
}

/* What the supervisor does for one exec: match, evaluate, log, commit. */
static shk_verdict sup_exec_nonce(struct sup *s, const char *path, const char *const *argv, size_t argc,
                                  double cost, uint64_t nonce)
{
	shk_policy_match m;
	shk_toolcall tc = { 0 };
	shk_audit_decision d = { 0 };
	shk_val *params = shk_object(s->doc), *av = shk_array(s->doc);

	ck_assert_int_eq(shk_policy_match_exec(s->policy, path, argv, argc, &m), 0);
	for (size_t i = 0; i < argc; i++)
		shk_array_append(av, shk_cstring(s->doc, argv[i]));
	shk_object_set_str(params, "argv", av);
	shk_object_set_str(params, "path", shk_cstring(s->doc, path));
	tc.tool_name = m.tool;
	tc.params = params;
	tc.nonce = nonce ? nonce : s->nonce++;
	tc.estimated_cost_usd = cost;
	shk_toolcall_prepare(&tc);
	s->now += 1000000;
	ck_assert_int_eq(shk_session_evaluate(s->session, &tc, m.action, s->now, &s->last), 0);
	d.time_ns = s->now;
	d.pid = 100;
	d.tid = 100;
	d.exe = path;
	d.call_number = ++s->calls;
	d.call = &tc;
	d.action = m.action;
	d.rule = m.rule_name;
	d.outcome = &s->last;
	ck_assert_int_eq(shk_ledger_append_decision(s->ledger, &d), 0);
	ck_assert_int_eq(shk_session_commit(s->session, &tc, &s->last, s->now), 0);
	ck_assert_int_eq(shk_ledger_tick(s->ledger, s->now), 0);
	return s->last.verdict;
}

static shk_verdict sup_exec(struct sup *s, const char *path, const char *const *argv, size_t argc,
                            double cost)
{
	return sup_exec_nonce(s, path, argv, argc, cost, 0);
}

static void sup_close(struct sup *s)
{
	shk_audit_session_end e = { s->now + 1, 0, NULL, NULL };

	ck_assert_int_eq(shk_ledger_end(s->ledger, &e), 0);
	ck_assert_int_eq(shk_ledger_close(s->ledger), 0);
	shk_session_free(s->session);
	shk_policy_free(s->policy);
	shk_doc_free(s->doc);
}

static shk_key *key;
static const char *logp;

/* ls, cat (with a post-exec report), git push held and approved by a human,
 * sudo denied by policy, the same curl until the repeat guard trips the
 * breaker, then one more call refused as circuit_open. */
static void scripted_session(void)
{
	static const char *ls[] = { "ls", "-l" }, *cat[] = { "cat", "README" };
	static const char *push[] = { "git", "push" }, *sudo[] = { "sudo", "id" };
	static const char *curl[] = { "curl", "https://example.org" };
	struct sup s;
	shk_verdict v;
	int i;

	sup_open(&s, logp, key);
	ck_assert_int_eq(sup_exec(&s, "/usr/bin/ls", ls, 2, 0.01), SHK_ALLOW);
	ck_assert_int_eq(sup_exec(&s, "/usr/bin/cat", cat, 2, 0.01), SHK_ALLOW);
	{
		shk_audit_post_exec p = { s.now + 10, s.calls, s.nonce - 1, 0.03, true, 5000, 0, 0, NULL, NULL };
		shk_session_info info;

		shk_session_get_info(s.session, &info);
		p.budget_before = info.budget_remaining_usd;
		ck_assert_int_eq(shk_session_post_exec(s.session, s.nonce - 1, 0.03), 0);
		shk_session_get_info(s.session, &info);
		p.budget_after = info.budget_remaining_usd;
		ck_assert_int_eq(shk_ledger_append_post_exec(s.ledger, &p), 0);
	}
	{
		/* A file name that is not UTF-8: the tool is logged as hex and
		 * replayed as bytes; its params cannot be canonical, so Rule 1
		 * denies and trips the breaker, which an operator resets. */
		static const char *odd[] = { "r\xe9sum\xe9" };
		shk_verdict ov = sup_exec(&s, "/usr/bin/r\xe9sum\xe9", odd, 1, 0.0);

		ck_assert_int_eq(ov, SHK_DENY);
		ck_assert_int_eq(s.last.reason, SHK_R_MALFORMED_INPUT);
		shk_session_reset(s.session);
		shk_audit_hitl h = { s.now + 1, s.calls, "breaker_reset", "alice", 0, NULL, NULL, NULL };
		ck_assert_int_eq(shk_ledger_append_hitl(s.ledger, &h), 0);
	}
	ck_assert_int_eq(sup_exec(&s, "/usr/bin/git", push, 2, 0.0), SHK_HITL);
	{
		shk_pending p;
		shk_audit_hitl h = { s.now + 20, s.calls, "pending", NULL, s.nonce - 1, NULL, NULL, NULL };

		ck_assert_int_eq(shk_session_pending_get(s.session, s.nonce - 1, &p), 0);
		h.args_digest = p.params_digest;
		ck_assert_int_eq(shk_ledger_append_hitl(s.ledger, &h), 0);
		h.state = "approved";
		h.operator_id = "alice";
		h.time_ns += 5;
		ck_assert_int_eq(shk_session_pending_set(s.session, s.nonce - 1, SHK_PENDING_APPROVED), 0);
		ck_assert_int_eq(shk_ledger_append_hitl(s.ledger, &h), 0);
		/* The held call is dispatched again with its nonce: released once. */
		ck_assert_int_eq(sup_exec_nonce(&s, "/usr/bin/git", push, 2, 0.0, h.nonce), SHK_ALLOW);
		ck_assert_int_eq(s.last.reason, SHK_R_HT_APPROVE);
	}
	ck_assert_int_eq(sup_exec(&s, "/usr/bin/sudo", sudo, 2, 0.0), SHK_DENY);
	ck_assert_int_eq(s.last.reason, SHK_R_POLICY_DENIED);
	for (i = 0; i < 5; i++) {
		v = sup_exec(&s, "/usr/bin/curl", curl, 2, 0.05);
		if (v == SHK_DENY)
			break;
	}
	ck_assert_int_eq(v, SHK_DENY);
	ck_assert_int_eq(s.last.reason, SHK_R_MAX_REPEAT_EXCEEDED);
	{
		shk_audit_tool_trace tr[1] = { { s.now, "exec:curl", "-", "DENY" } };
		shk_audit_breaker_trip b = { .time_ns = s.now + 1, .call_number = s.calls,
			.trigger = "max_repeat_exceeded", .trace = tr, .trace_len = 1,
			.containment = "deny_all" };
		ck_assert_int_eq(shk_ledger_append_breaker_trip(s.ledger, &b), 0);
	}
	ck_assert_int_eq(sup_exec(&s, "/usr/bin/ls", ls, 2, 0.01), SHK_DENY);
	ck_assert_int_eq(s.last.reason, SHK_R_CIRCUIT_OPEN);
	sup_close(&s);
}

static void setup(void)
{
	tdir_setup();
	key = test_key(NULL);
	logp = tpath("replay.jsonl");
	scripted_session();
}

static void teardown(void)
{
	shk_key_free(key);
	tdir_teardown();
}

START_TEST(replay_reproduces_session)
{
	shk_replay_report rep;
	shk_verify_report vrep;

	verify_one(logp, key, &vrep);
	ck_assert_msg(vrep.result == SHK_VERIFY_OK, "%s", vrep.findings[0].detail);
	ck_assert_int_eq(shk_replay_files(&logp, 1, &rep), 0);
	ck_assert_msg(rep.result == SHK_REPLAY_OK, "%s:%llu %s", rep.file,
	              (unsigned long long)rep.line, rep.detail);
	ck_assert_uint_eq(rep.sessions, 1);
	ck_assert_uint_ge(rep.decisions, 8);
	ck_assert_uint_eq(rep.post_execs, 1);
	ck_assert_uint_eq(rep.hitl_events, 3);
	ck_assert_uint_eq(rep.breaker_trips, 1);
}
END_TEST

static void expect_divergence(size_t line, const char *field)
{
	shk_replay_report rep;

	ck_assert_int_eq(shk_replay_files(&logp, 1, &rep), 0);
	ck_assert_msg(rep.result == SHK_REPLAY_DIVERGED, "%s: %s", shk_replay_result_name(rep.result), rep.detail);
	ck_assert_uint_eq(rep.line, line);
	ck_assert_str_eq(rep.field, field);
}

START_TEST(replay_altered_verdict)
{
	lines ls;
	long i;

	/* Claim the repeat-guard denial was an ALLOW. */
	lines_read(logp, &ls);
	i = lines_find(&ls, 0, "\"reason\":\"max_repeat_exceeded\"");
	ck_assert_int_gt(i, 0);
	line_replace(&ls, (size_t)i, "\"verdict\":\"DENY\"", "\"verdict\":\"ALLOW\"");
	lines_write(logp, &ls);
	expect_divergence((size_t)i + 1, "verdict");
	lines_free(&ls);
}
END_TEST

START_TEST(replay_altered_reason)
{
	lines ls;
	long i;

	lines_read(logp, &ls);
	i = lines_find(&ls, 0, "\"reason\":\"circuit_open\"");
	ck_assert_int_gt(i, 0);
	line_replace(&ls, (size_t)i, "\"reason\":\"circuit_open\"", "\"reason\":\"budget_exhausted\"");
	lines_write(logp, &ls);
	expect_divergence((size_t)i + 1, "reason");
	lines_free(&ls);
}
END_TEST

START_TEST(replay_altered_input)
{
	lines ls;
	long i;

	/* A different estimated cost for the first call: its budget after
	 * no longer follows. */
	lines_read(logp, &ls);
	i = lines_find(&ls, 0, "\"kind\":\"decision\"");
	line_replace(&ls, (size_t)i, "\"cost\":0.01", "\"cost\":0.5");
	lines_write(logp, &ls);
	expect_divergence((size_t)i + 1, "budget.after");
	lines_free(&ls);
}
END_TEST

START_TEST(replay_altered_policy)
{
	lines ls;

	/* Swapping the policy without its digest is caught at session_start. */
	lines_read(logp, &ls);
	line_replace(&ls, 0, "\"max_repeat_calls\":2", "\"max_repeat_calls\":9");
	lines_write(logp, &ls);
	expect_divergence(1, "policy_digest");
	lines_free(&ls);
}
END_TEST

START_TEST(replay_without_the_approval)
{
	lines ls;
	long i, rel;

	/* Drop the operator's approval: the released git push no longer follows. */
	lines_read(logp, &ls);
	i = lines_find(&ls, 0, "\"state\":\"approved\"");
	ck_assert_int_gt(i, 0);
	lines_delete(&ls, (size_t)i);
	rel = lines_find(&ls, 0, "\"reason\":\"hitl_transition:approve\"");
	ck_assert_int_gt(rel, 0);
	lines_write(logp, &ls);
	expect_divergence((size_t)rel + 1, "verdict");
	lines_free(&ls);
}
END_TEST

/* A redacted decision is re-run from its logged params_hash and status, and
 * counted as such (test_replay_redact covers what that can and cannot check). */
START_TEST(replay_redacted_from_logged_digest)
{
	shk_replay_report rep;
	lines ls;
	long i;

	lines_read(logp, &ls);
	i = lines_find(&ls, 0, "\"kind\":\"decision\"");
	line_replace(&ls, (size_t)i, "\"redacted\":false", "\"redacted\":true");
	line_replace(&ls, (size_t)i, "\"-l\"", "\"[REDACTED]\"");
	lines_write(logp, &ls);
	ck_assert_int_eq(shk_replay_files(&logp, 1, &rep), 0);
	ck_assert_msg(rep.result == SHK_REPLAY_OK, "%s", rep.detail);
	ck_assert_uint_eq(rep.redacted, 1);
	lines_free(&ls);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("audit-replay");
	TCase *tc = tcase_create("replay");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, replay_reproduces_session);
	tcase_add_test(tc, replay_altered_verdict);
	tcase_add_test(tc, replay_altered_reason);
	tcase_add_test(tc, replay_altered_input);
	tcase_add_test(tc, replay_altered_policy);
	tcase_add_test(tc, replay_redacted_from_logged_digest);
	tcase_add_test(tc, replay_without_the_approval);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
