/* SPDX-License-Identifier: MIT */
/*
 * Replay of decisions whose params the policy redacted, logged as the
 * supervisor logs them (keyed params_hash, redacted params): the repeat guard
 * and the breaker are reproduced from the logged digests; an error signal
 * the redaction hid is taken from the log and counted; one the redacted form
 * still shows cannot be denied by the log; and a Rule 9 answer that rests on
 * hidden values is reported as not replayable, never as reproduced.
 */
#include <shackle/redact.h>
#include <shackle/session.h>

#include "audit_fixture.h"
#include "session_fixture.h"
#include "checkrun.h"

#define T0 1700000000000000000LL

static const char policy_text[] =
	"{\"version\":1,\"redact\":[\"token\",\"authorization\",\"context\"],"
	"\"guard\":{\"max_repeat_calls\":3,\"error_amplification\":true,\"trip_on_deny\":true},"
	"\"exec\":{\"default\":\"allow\"}}";

static shk_key *key;
static const char *logp;

struct sup {
	struct session_fixture f;
	uint64_t nonce;
	int64_t now;
	shk_outcome last;
};

/* One call as pipeline.c makes it: evaluate on the real params, log the
 * redacted form with the keyed digest of the real ones, commit. */
static shk_verdict call(struct sup *s, const char *params_json)
{
	shk_toolcall tc = { 0 };
	shk_audit_decision d = { 0 };
	shk_parse_error pe;
	shk_val *params = NULL, *red = NULL;

	ck_assert_int_eq(shk_json_parse(s->f.doc, params_json, strlen(params_json), "p", &params, &pe), 0);
	tc.tool_name = "exec:curl";
	tc.params = params;
	tc.nonce = ++s->nonce;
	ck_assert_int_eq(shk_audit_prepare_call(s->f.policy, &tc), 0);
	ck_assert_int_eq(shk_policy_redact_params(s->f.policy, s->f.doc, params, &red), 0);
	s->now += 1000;
	ck_assert_int_eq(shk_session_evaluate(s->f.session, &tc, SHK_ACTION_ALLOW, s->now, &s->last), 0);
	d.time_ns = s->now;
	d.call_number = s->nonce;
	d.call = &tc;
	d.action = SHK_ACTION_ALLOW;
	d.outcome = &s->last;
	d.params_redacted = red;
	ck_assert_int_eq(shk_ledger_append_decision(s->f.ledger, &d), 0);
	ck_assert_int_eq(shk_session_commit(s->f.session, &tc, &s->last, s->now), 0);
	return s->last.verdict;
}

static void sup_close(struct sup *s)
{
	shk_audit_session_end e = { s->now + 1, 0, NULL, NULL };

	ck_assert_int_eq(shk_ledger_end(s->f.ledger, &e), 0);
	ck_assert_int_eq(shk_ledger_close(s->f.ledger), 0);
	shk_session_free(s->f.session);
	shk_policy_free(s->f.policy);
	shk_doc_free(s->f.doc);
}

static void setup(void)
{
	tdir_setup();
	key = test_key(NULL);
	logp = tpath("redact.jsonl");
}

static void teardown(void)
{
	shk_key_free(key);
	tdir_teardown();
}

static void replay(shk_replay_report *rep)
{
	shk_verify_report vrep;

	ck_assert_int_eq(shk_replay_files(&logp, 1, rep), 0);
	verify_one(logp, key, &vrep);
	(void)vrep;
}

/* The same curl with a different secret each time: only the digest knows
 * they differ, so the repeat guard must count them apart. Then the same
 * secret three times: the guard trips. */
START_TEST(redacted_repeat_guard)
{
	struct sup s = { 0 };
	shk_replay_report rep;
	shk_verify_report vrep;
	char p[160];
	lines ls;

	session_fixture_open(&s.f, policy_text, "redact-1", logp, key, T0);
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "{\"argv\":[\"curl\",\"--token=S%d\",\"http://h/\"]}", i);
		ck_assert_int_eq(call(&s, p), SHK_ALLOW);
	}
	for (int i = 0; i < 4; i++)
		call(&s, "{\"argv\":[\"curl\",\"--token=SAME\",\"http://h/\"]}");
	ck_assert_int_eq(s.last.reason, SHK_R_MAX_REPEAT_EXCEEDED);
	sup_close(&s);
	lines_read(logp, &ls);
	ck_assert_int_lt(lines_find(&ls, 0, "SAME"), 0);
	ck_assert_int_lt(lines_find(&ls, 0, "S1"), 0);
	ck_assert_int_gt(lines_find(&ls, 0, "\"redacted\":true"), 0);
	lines_free(&ls);
	verify_one(logp, key, &vrep);
	ck_assert_int_eq(vrep.result, SHK_VERIFY_OK);
	replay(&rep);
	ck_assert_msg(rep.result == SHK_REPLAY_OK, "%s", rep.detail);
	ck_assert_uint_eq(rep.decisions, 8);
	ck_assert_uint_eq(rep.redacted, 8);
	ck_assert_uint_eq(rep.signals_from_log, 0);

	/* A logged digest changed (verify would refuse the log): the repeat
	 * guard no longer follows, replay says where. */
	lines_read(logp, &ls);
	{
		long i = lines_find(&ls, 0, "\"call\":6,");
		char *h = strstr(ls.l[i], "\"params_hash\":\"");

		ck_assert_ptr_nonnull(h);
		h[15] = h[15] == 'a' ? 'b' : 'a';
		lines_write(logp, &ls);
		replay(&rep);
		ck_assert_int_eq(rep.result, SHK_REPLAY_DIVERGED);
		ck_assert_str_eq(rep.field, "verdict");
		ck_assert_uint_eq(rep.line, (uint64_t)i + 3); /* the 4th SAME call */
	}
	lines_free(&ls);
}
END_TEST

/* "401" only inside the redacted header: the error signal (which lowers the
 * repeat limit) comes from the log, and replay says so. */
START_TEST(redacted_error_signal)
{
	struct sup s = { 0 };
	shk_replay_report rep;
	lines ls;
	long i;

	session_fixture_open(&s.f, policy_text, "redact-2", logp, key, T0);
	for (int k = 0; k < 3; k++) {
		call(&s, "{\"argv\":[\"curl\",\"-H\",\"Authorization: Bearer 401\"]}");
		ck_assert(s.last.error_signal);
	}
	ck_assert_int_eq(s.last.reason, SHK_R_MAX_REPEAT_EXCEEDED); /* limit 3 - 1 */
	call(&s, "{\"argv\":[\"curl\",\"timeout\",\"--token=x\"]}");
	sup_close(&s);
	replay(&rep);
	ck_assert_msg(rep.result == SHK_REPLAY_OK, "%s", rep.detail);
	ck_assert_uint_eq(rep.redacted, 4);
	ck_assert_uint_eq(rep.signals_from_log, 3);

	/* The redacted form still shows "timeout": a log that denies the
	 * signal is contradicted. */
	lines_read(logp, &ls);
	i = lines_find(&ls, 0, "\"timeout\"");
	ck_assert_int_gt(i, 0);
	line_replace(&ls, (size_t)i, "\"error_signal\":true", "\"error_signal\":false");
	lines_write(logp, &ls);
	replay(&rep);
	ck_assert_int_eq(rep.result, SHK_REPLAY_DIVERGED);
	ck_assert_str_eq(rep.field, "view.error_signal");
	ck_assert_uint_eq(rep.line, (uint64_t)i + 1);
	lines_free(&ls);
}
END_TEST

/* Rule 9 answered on a context value the log hid: not replayable. */
START_TEST(redacted_rule9)
{
	struct sup s = { 0 };
	shk_replay_report rep;

	session_fixture_open(&s.f, policy_text, "redact-3", logp, key, T0);
	call(&s, "{\"argv\":[\"x\"]}");
	call(&s, "{\"context\":\"opaque\"}");
	ck_assert_int_eq(s.last.reason, SHK_R_OPAQUE_CONTEXT);
	sup_close(&s);
	replay(&rep);
	ck_assert_int_eq(rep.result, SHK_REPLAY_UNREPLAYABLE);
	ck_assert_str_eq(rep.field, "view.decide_reason");
	ck_assert_uint_eq(rep.decisions, 1);
}
END_TEST

/* Review F2: the digest of redacted params is keyed — not the SHA-256 of
 * the real params (a 4-digit token would be found in 10^4 hashes) — and
 * the same for the same params; params with nothing to hide keep their
 * SHA-256, and no policy means no key. */
START_TEST(keyed_digest)
{
	static const char *const texts[] = { "{\"argv\": [\"curl\", \"--token=4821\"]}",
	                                     "{\"argv\": [\"curl\", \"--plain=4821\"]}" };
	shk_policy *pol = NULL;
	shk_parse_error pe;
	shk_doc *doc = NULL;

	ck_assert_int_eq(shk_policy_load_buffer(policy_text, strlen(policy_text), "p", &pol, &pe), 0);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	for (size_t i = 0; i < 2; i++) {
		shk_toolcall a = { .tool_name = "exec:curl" }, b, plain;
		uint8_t raw[SHK_SHA256_LEN];
		char sha[SHK_SHA256_HEX_LEN + 1];
		shk_val *v = NULL;

		ck_assert_int_eq(shk_json_parse(doc, texts[i], strlen(texts[i]), "p", &v, &pe), 0);
		a.params = v;
		b = plain = a;
		ck_assert_int_eq(shk_audit_prepare_call(pol, &a), 0);
		ck_assert_int_eq(shk_audit_prepare_call(pol, &b), 0);
		ck_assert_int_eq(shk_audit_prepare_call(NULL, &plain), 0);
		ck_assert_int_eq(shk_canon_sha256(v, raw), 0);
		shk_hex(raw, sizeof(raw), sha);
		ck_assert_str_eq(plain.params_digest, sha);
		ck_assert_str_eq(a.params_digest, b.params_digest);
		ck_assert(!memcmp(a.repeat_key, b.repeat_key, sizeof(a.repeat_key)));
		if (i == 0) {
			ck_assert_str_ne(a.params_digest, sha);
			ck_assert(memcmp(a.repeat_key, plain.repeat_key, sizeof(a.repeat_key)) != 0);
		} else {
			ck_assert_str_eq(a.params_digest, sha);
		}
	}
	shk_doc_free(doc);
	shk_policy_free(pol);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("replay-redact");
	TCase *tc = tcase_create("replay-redact");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, redacted_repeat_guard);
	tcase_add_test(tc, redacted_error_signal);
	tcase_add_test(tc, redacted_rule9);
	tcase_add_test(tc, keyed_digest);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
