/* SPDX-License-Identifier: MIT */
/* What a supervisor does at start, for the replay tests: load the policy,
 * create the session from its guard, open a ledger whose session_start
 * carries the policy document. Header-only: each test is one executable. */
#ifndef SHACKLE_TEST_SESSION_FIXTURE_H
#define SHACKLE_TEST_SESSION_FIXTURE_H

#include <string.h>

#include <check.h>

#include <shackle/audit.h>
#include <shackle/policy.h>
#include <shackle/session.h>

struct session_fixture {
	shk_doc *doc;
	shk_policy *policy;
	shk_session *session;
	shk_ledger *ledger;
};

static inline void session_fixture_open(struct session_fixture *f, const char *policy_text,
                                        const char *session_id, const char *path,
                                        const shk_key *k, int64_t start_ns)
{
	shk_parse_error pe;
	shk_val *pdoc = NULL;
	shk_session_config cfg = { 0 };
	shk_ledger_session ls = { 0 };
	static const char *argv[] = { "agent" };

	ck_assert_int_eq(shk_doc_new(&f->doc), 0);
	ck_assert_msg(shk_policy_load_buffer(policy_text, strlen(policy_text), "policy", &f->policy, &pe) == 0,
	              "%s:%d:%d %s", pe.source, pe.line, pe.column, pe.text);
	ck_assert_int_eq(shk_json_parse(f->doc, policy_text, strlen(policy_text), "policy", &pdoc, &pe), 0);
	cfg.guard = *shk_policy_guard(f->policy);
	cfg.max_pending = 8;
	ck_assert_int_eq(shk_session_new(&cfg, &f->session), 0);
	ls.session_id = session_id;
	ls.policy = pdoc;
	ls.policy_digest = shk_policy_digest_hex(f->policy);
	ls.argv = argv;
	ls.argc = 1;
	ls.version = "test";
	ls.start_ns = start_ns;
	ls.config = &cfg;
	ck_assert_int_eq(shk_ledger_open(path, k, &ls, NULL, &f->ledger), 0);
}

#endif
