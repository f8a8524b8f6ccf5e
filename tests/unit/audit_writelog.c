/* SPDX-License-Identifier: MIT */
/*
 * audit_writelog KEYFILE LOG: write a small ledger the way the supervisor
 * does (policy match, session evaluate, log, commit), for the CLI test.
 */
#include <stdio.h>
#include <string.h>

#include <shackle/audit.h>
#include <shackle/policy.h>
#include <shackle/session.h>

static const char policy_text[] =
	"{\"version\":1,\"guard\":{\"budget_usd\":1.0,\"max_repeat_calls\":2,\"trip_on_deny\":true},"
	"\"exec\":{\"default\":\"allow\",\"rules\":[{\"name\":\"no-sudo\",\"path\":\"**/sudo\",\"action\":\"deny\"}]}}";

int main(int argc, char **argv)
{
	static const char *cmds[][2] = { { "/usr/bin/ls", "ls" }, { "/usr/bin/curl", "curl" },
	                                 { "/usr/bin/curl", "curl" }, { "/usr/bin/curl", "curl" },
	                                 { "/usr/bin/ls", "ls" } };
	shk_key_error kerr;
	shk_parse_error pe;
	shk_key *key = NULL;
	shk_policy *pol = NULL;
	shk_session *sess = NULL;
	shk_ledger *l = NULL;
	shk_doc *doc = NULL;
	shk_val *pdoc = NULL;
	shk_session_config cfg = { 0 };
	shk_ledger_session ls = { 0 };
	int64_t now = 1700000000000000000LL;

	if (argc != 3)
		return 2;
	if (shk_key_load_file(argv[1], &key, &kerr) < 0) {
		fprintf(stderr, "audit_writelog: %s\n", kerr.text);
		return 1;
	}
	if (shk_doc_new(&doc) < 0 || shk_policy_load_buffer(policy_text, strlen(policy_text), "p", &pol, &pe) < 0 ||
	    shk_json_parse(doc, policy_text, strlen(policy_text), "p", &pdoc, &pe) < 0)
		return 1;
	cfg.guard = *shk_policy_guard(pol);
	if (shk_session_new(&cfg, &sess) < 0)
		return 1;
	ls.session_id = "cli-test";
	ls.policy = pdoc;
	ls.policy_digest = shk_policy_digest_hex(pol);
	ls.argv = (const char *const *)argv;
	ls.argc = 1;
	ls.version = "test";
	ls.start_ns = now;
	ls.config = &cfg;
	if (shk_ledger_open(argv[2], key, &ls, NULL, &l) < 0)
		return 1;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *av[1] = { cmds[i][1] };
		shk_policy_match m;
		shk_toolcall tc = { 0 };
		shk_outcome o;
		shk_audit_decision d = { 0 };
		shk_val *params = shk_object(doc), *arr = shk_array(doc);

		shk_array_append(arr, shk_cstring(doc, av[0]));
		shk_object_set_str(params, "argv", arr);
		if (shk_policy_match_exec(pol, cmds[i][0], av, 1, &m) < 0)
			return 1;
		tc.tool_name = m.tool;
		tc.params = params;
		tc.nonce = 10 + i;
		tc.estimated_cost_usd = 0.1;
		shk_toolcall_prepare(&tc);
		now += 1000000000LL;
		shk_session_evaluate(sess, &tc, m.action, now, &o);
		d.time_ns = now;
		d.pid = 321;
		d.tid = 321;
		d.exe = cmds[i][0];
		d.call_number = i + 1;
		d.call = &tc;
		d.action = m.action;
		d.rule = m.rule_name;
		d.outcome = &o;
		if (shk_ledger_append_decision(l, &d) < 0 || shk_session_commit(sess, &tc, &o, now) < 0)
			return 1;
		/* a signed checkpoint inside the session: a cut there is signed */
		if (i == 2 && shk_ledger_checkpoint(l, now) < 0)
			return 1;
	}
	if (shk_ledger_end(l, &(shk_audit_session_end){ now + 1, 0, NULL, NULL }) < 0 || shk_ledger_close(l) < 0)
		return 1;
	shk_session_free(sess);
	shk_policy_free(pol);
	shk_doc_free(doc);
	shk_key_free(key);
	return 0;
}
