/* SPDX-License-Identifier: MIT */
/* A scripted ledger session shared by test_audit.c and test_audit_format.c:
 * params, session info, one decision per call, the whole session with a
 * post_exec, a hitl and a breaker trip, and the fixture writing it.
 * Header-only. */
#ifndef SHACKLE_TEST_LEDGER_SESSION_H
#define SHACKLE_TEST_LEDGER_SESSION_H

#include "audit_fixture.h"
#include "audit/internal.h"
#include "core/json_internal.h"

#define T0 1700000000000000000LL

/* ---- a scripted session ------------------------------------------------- */

static shk_doc *gdoc;

static inline shk_val *params_of(int i)
{
	shk_val *p = shk_object(gdoc), *argv = shk_array(gdoc);

	shk_array_append(argv, shk_cstring(gdoc, "curl"));
	shk_array_append(argv, shk_cstring(gdoc, "https://example.org/\"q\"\n\x01\t\\ é"));
	shk_object_set_str(p, "argv", argv);
	shk_object_set_str(p, "i", shk_int(gdoc, i));
	shk_object_set_str(p, "ratio", shk_real(gdoc, 0.1 * i));
	return p;
}

static inline void session_info(shk_ledger_session *s, const char *id)
{
	static const char *argv[] = { "agent", "--task", "ünïcode" };
	shk_val *pol = shk_object(gdoc), *guard = shk_object(gdoc);

	shk_object_set_str(guard, "budget_usd", shk_real(gdoc, 1.0));
	shk_object_set_str(pol, "guard", guard);
	shk_object_set_str(pol, "version", shk_int(gdoc, 1));
	memset(s, 0, sizeof(*s));
	s->session_id = id;
	s->policy = pol;
	s->policy_digest = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	s->argv = argv;
	s->argc = 3;
	s->host = "testhost";
	s->version = "0.1.0";
	s->start_ns = T0;
}

static inline int append_call(shk_ledger *l, int i)
{
	shk_toolcall tc = { 0 };
	shk_outcome o = { 0 };
	shk_audit_decision d = { 0 };

	tc.tool_name = i % 3 ? "exec:curl" : "net:connect";
	tc.params = params_of(i);
	tc.nonce = 1000 + (uint64_t)i;
	tc.estimated_cost_usd = 0.01;
	o.verdict = i % 5 == 4 ? SHK_DENY : SHK_ALLOW;
	o.reason = i % 5 == 4 ? SHK_R_MAX_REPEAT_EXCEEDED : SHK_R_WITHIN_THRESHOLDS;
	o.decided.verdict = o.verdict;
	o.decided.reason = o.reason;
	o.budget_initial_usd = 1.0;
	o.budget_remaining_usd = 1.0 - 0.01 * i;
	o.budget_after_usd = o.budget_remaining_usd - (o.verdict == SHK_ALLOW ? 0.01 : 0);
	d.time_ns = T0 + (int64_t)i * 1000000;
	d.pid = 4242;
	d.tid = 4243;
	d.exe = "/usr/bin/curl";
	d.call_number = (uint64_t)i;
	d.call = &tc;
	d.action = SHK_ACTION_ALLOW;
	d.outcome = &o;
	return shk_ledger_append_decision(l, &d);
}

/* session_start, n calls with a post_exec, a hitl and a breaker trip in the
 * middle, session_end, final checkpoint; a checkpoint every `every`. */
static inline void write_session(const char *path, const shk_key *k, int n, unsigned every)
{
	shk_ledger_options o = { .checkpoint_every = every, .fsync = SHK_FSYNC_NONE };
	shk_ledger_session s;
	shk_ledger *l = NULL;
	shk_audit_tool_trace tr[2] = { { T0, "exec:curl", "ab", "ALLOW" }, { T0 + 1, "exec:curl", "ab", "DENY" } };

	session_info(&s, "sess-1");
	ck_assert_int_eq(shk_ledger_open(path, k, &s, &o, &l), 0);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(append_call(l, i), 0);
		if (i == 2) {
			shk_audit_post_exec p = { T0 + 2500000, 2, 1002, 0.02, true, 12345, 0.98, 0.97, NULL, NULL };
			ck_assert_int_eq(shk_ledger_append_post_exec(l, &p), 0);
		}
		if (i == 5) {
			shk_audit_hitl h = { T0 + 5500000, 5, "approved", "alice", 1005, "cd", NULL, NULL };
			ck_assert_int_eq(shk_ledger_append_hitl(l, &h), 0);
		}
		if (i == 9) {
			shk_audit_breaker_trip b = { .time_ns = T0 + 9500000, .call_number = 9,
				.trigger = "max_repeat_exceeded", .trace = tr, .trace_len = 2,
				.containment = "deny_all" };
			ck_assert_int_eq(shk_ledger_append_breaker_trip(l, &b), 0);
		}
	}
	shk_audit_session_end e = { T0 + 999999999, 0, NULL, NULL };
	ck_assert_int_eq(shk_ledger_end(l, &e), 0);
	ck_assert_int_eq(shk_ledger_close(l), 0);
}

static shk_key *key;
static const char *logp;

static inline void setup(void)
{
	tdir_setup();
	ck_assert_int_eq(shk_doc_new(&gdoc), 0);
	key = test_key("k");
	logp = tpath("ledger.jsonl");
	write_session(logp, key, 20, 8);
}

static inline void teardown(void)
{
	shk_key_free(key);
	shk_doc_free(gdoc);
	tdir_teardown();
}

#endif
