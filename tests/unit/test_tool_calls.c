/* SPDX-License-Identifier: MIT */
/*
 * Tool-call identity at syscall level, through the judge shackle-run runs
 * (shk_pipeline_judge_obs) with a real policy, session and signed ledger:
 * an allowed exec of the agent's own starts a tool call (the judgement
 * gives the seq of its decision); calls of its processes (obs.tool_call)
 * are judged by the static policy and logged with the link, but are out of
 * the repeat guard; so are calls under a rule with "repeat_guard": false,
 * which the budget still stops. Ends with verify + replay of the log, and a
 * replay of a copy whose link names no tool call, which must diverge.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include <shackle/audit.h>

#include "judge/pipeline.h"
#include "session_fixture.h"
#include "testutil.h"
#include "checkrun.h"

static const char policy_text[] =
	"{\"version\":1,\"guard\":{\"max_repeat_calls\":2,\"budget_usd\":1.0,\"trip_on_deny\":true},"
	"\"exec\":{\"default\":\"allow\",\"rules\":["
	"{\"name\":\"no-rm\",\"path\":\"**/rm\",\"action\":\"deny\"},"
	"{\"name\":\"tr\",\"path\":\"/usr/bin/tr\",\"action\":\"allow\",\"repeat_guard\":false}]},"
	"\"net\":{\"default\":\"deny\",\"rules\":["
	"{\"name\":\"model\",\"cidr\":\"10.0.0.1\",\"port\":443,\"action\":\"allow\",\"cost_usd\":0.125,"
	"\"repeat_guard\":false},"
	"{\"name\":\"db\",\"cidr\":\"10.0.0.2\",\"action\":\"allow\"}]}}";

static char dir[64], logp[128];
static struct shk_pipeline p;
static struct session_fixture fx;
static shk_key *key;

static void setup(void)
{
	memset(&p, 0, sizeof(p));
	snprintf(dir, sizeof(dir), "/tmp/shk-toolc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	ck_assert_int_eq(shk_key_generate(&key), 0);
	session_fixture_open(&fx, policy_text, "tc", logp, key, 1);
	p.policy = fx.policy;
	p.session = fx.session;
	p.ledger = fx.ledger;
}

static void teardown(void)
{
	char cmd[128];

	shk_pipeline_free_scratch(&p);
	shk_session_free(fx.session);
	shk_policy_free(fx.policy);
	shk_key_free(key);
	shk_doc_free(fx.doc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct shk_obs obs; /* large */

static struct shk_pipeline_verdict judge_exec(const char *path, const char *arg, uint64_t tool_call)
{
	static const char *argv[2];
	struct shk_pipeline_verdict v;

	memset(&obs, 0, sizeof(obs));
	obs.kind = SHK_OBS_EXEC;
	obs.pid = obs.tid = 40;
	obs.tool_call = tool_call;
	snprintf(obs.exec.file.path, sizeof(obs.exec.file.path), "%s", path);
	obs.exec.file.fd = -1;
	snprintf(obs.exec.cwd, sizeof(obs.exec.cwd), "/");
	argv[0] = strrchr(path, '/') + 1;
	argv[1] = arg;
	obs.exec.argv = argv;
	obs.exec.argc = 2;
	ck_assert_int_eq(shk_pipeline_judge_obs(&p, &obs, &v), 0);
	return v;
}

static struct shk_pipeline_verdict judge_connect(uint8_t last, uint64_t tool_call)
{
	struct shk_pipeline_verdict v;

	memset(&obs, 0, sizeof(obs));
	obs.kind = SHK_OBS_NET;
	obs.pid = obs.tid = 50;
	obs.tool_call = tool_call;
	obs.net = (struct shk_obs_net){ .op = SHK_OBS_CONNECT, .family = AF_INET, .socktype = SOCK_STREAM,
	                                .addr = { 10, 0, 0, last }, .port = 443, .unix_pathfd = -1 };
	snprintf(obs.net.addr_str, sizeof(obs.net.addr_str), "10.0.0.%u", last);
	ck_assert_int_eq(shk_pipeline_judge_obs(&p, &obs, &v), 0);
	return v;
}

static void close_log(void)
{
	shk_audit_session_end e = { 2, 0, NULL, NULL };

	ck_assert_int_eq(shk_ledger_end(p.ledger, &e), 0);
	ck_assert_int_eq(shk_ledger_close(p.ledger), 0);
	p.ledger = NULL;
}

static shk_replay_report replay(const char *path)
{
	const char *paths[] = { path };
	shk_replay_report rr;

	ck_assert_int_eq(shk_replay_files(paths, 1, &rr), 0);
	return rr;
}

/* A copy of the log edited by a sed expression. */
static void forge(const char *sed, const char *out)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "sed '%s' %s > %s", sed, logp, out);
	ck_assert_int_eq(system(cmd), 0);
}

#define ALLOWED(v) ck_assert_msg((v).verdict == SHK_ALLOW, "got %s %s", shk_verdict_str((v).verdict), \
                                 shk_reason_str((v).reason))

START_TEST(members_and_exempt_rules)
{
	struct shk_pipeline_verdict v;
	uint64_t tool, tool2;
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	shk_verify_report vr;
	const char *paths[] = { logp };
	char forged[160], cmd[128];
	shk_replay_report rr;

	/* the agent runs a tool: a new tool call, named by its decision's seq */
	v = judge_exec("/bin/sh", "tool.sh", 0);
	ALLOWED(v);
	tool = v.tool_call;
	ck_assert_uint_gt(tool, 0);
	ck_assert_uint_eq(tool, shk_ledger_next_seq(p.ledger) - 1);
	/* its helpers, the same argv many times over the limit of 2 */
	for (int i = 0; i < 6; i++) {
		v = judge_exec("/bin/cat", "same", tool);
		ALLOWED(v);
		ck_assert_uint_eq(v.tool_call, 0); /* no new tool call */
		ALLOWED(judge_connect(2, tool));
	}
	/* the static policy still applies to them */
	v = judge_exec("/bin/rm", "x", tool);
	ck_assert_int_eq(v.verdict, SHK_DENY);
	ck_assert_int_eq(v.reason, SHK_R_POLICY_DENIED);
	/* another tool run is another tool call */
	v = judge_exec("/bin/sh", "tool.sh", 0);
	ALLOWED(v);
	tool2 = v.tool_call;
	ck_assert_uint_gt(tool2, tool);
	ALLOWED(judge_exec("/bin/cat", "same", tool2));
	/* the rule's exemption: 6 connects to one address (2 may repeat),
	 * each charged 0.125 of 1.0 */
	for (int i = 0; i < 6; i++)
		ALLOWED(judge_connect(1, 0));
	/* the agent's own connect to the guarded address is counted: the
	 * members' connects neither raised nor reset that count */
	ALLOWED(judge_connect(2, 0));
	ALLOWED(judge_connect(2, 0));
	v = judge_connect(2, 0);
	ck_assert_int_eq(v.verdict, SHK_DENY);
	ck_assert_int_eq(v.reason, SHK_R_MAX_REPEAT_EXCEEDED);
	close_log();

	memcpy(pk, shk_key_public(key), sizeof(pk));
	ck_assert_int_eq(shk_verify_files(paths, 1, pk, NULL, &vr), 0);
	ck_assert_msg(vr.result == SHK_VERIFY_OK, "verify: %s", shk_verify_class_name(vr.result));
	rr = replay(logp);
	ck_assert_msg(rr.result == SHK_REPLAY_OK, "replay: %s line %llu: %s", shk_replay_result_name(rr.result),
	              (unsigned long long)rr.line, rr.detail);
	/* without the link, the helpers' repeats are stopped: replay diverges */
	snprintf(forged, sizeof(forged), "%s/unlinked.jsonl", dir);
	forge("s/\"tool_call\":[0-9]*/\"tool_cal_\":0/g", forged);
	rr = replay(forged);
	ck_assert_int_eq(rr.result, SHK_REPLAY_DIVERGED);
	/* a link to an entry that started no tool call diverges too: the
	 * first helper's own decision (the one after the tool's) */
	ck_assert_str_eq(rr.field, "verdict");
	snprintf(cmd, sizeof(cmd), "0,/\"tool_call\":[0-9]*/s//\"tool_call\":%llu/", (unsigned long long)tool + 1);
	forge(cmd, forged);
	rr = replay(forged);
	ck_assert_int_eq(rr.result, SHK_REPLAY_DIVERGED);
	ck_assert_str_eq(rr.field, "inputs.tool_call");
	/* a link that is no seq is malformed */
	forge("0,/\"tool_call\":[0-9]*/s//\"tool_call\":\"x\"/", forged);
	ck_assert_int_eq(replay(forged).result, SHK_REPLAY_MALFORMED);
}
END_TEST

/* The exemption does not outlast the budget: 1.0 at 0.125 a connect. */
START_TEST(exempt_rule_budget)
{
	int allowed = 0;
	struct shk_pipeline_verdict v;

	for (int i = 0; i < 12; i++) {
		v = judge_connect(1, 0);
		if (v.verdict != SHK_ALLOW)
			break;
		allowed++;
	}
	ck_assert_int_eq(allowed, 8);
	ck_assert_int_eq(v.reason, SHK_R_BUDGET_EXHAUSTED);
	close_log();
	ck_assert_int_eq(replay(logp).result, SHK_REPLAY_OK);
}
END_TEST

/* An exec is out of the repeat guard only when every file it runs matched
 * an exempt rule: a "#!" interpreter without one keeps it guarded. */
START_TEST(exempt_exec_needs_every_file)
{
	struct shk_pipeline_verdict v;

	for (int i = 0; i < 4; i++)
		ALLOWED(judge_exec("/usr/bin/tr", "x", 0));
	for (int i = 0; i < 3; i++) {
		memset(&obs, 0, sizeof(obs));
		obs.kind = SHK_OBS_EXEC;
		obs.pid = obs.tid = 40;
		snprintf(obs.exec.file.path, sizeof(obs.exec.file.path), "/usr/bin/tr");
		snprintf(obs.exec.interp[0].path, sizeof(obs.exec.interp[0].path), "/bin/sh");
		obs.exec.file.fd = obs.exec.interp[0].fd = -1;
		obs.exec.ninterp = 1;
		obs.exec.argv = (const char *const[]){ "tr", "y" };
		obs.exec.argc = 2;
		snprintf(obs.exec.cwd, sizeof(obs.exec.cwd), "/");
		ck_assert_int_eq(shk_pipeline_judge_obs(&p, &obs, &v), 0);
	}
	ck_assert_int_eq(v.verdict, SHK_DENY);
	ck_assert_int_eq(v.reason, SHK_R_MAX_REPEAT_EXCEEDED);
	close_log();
	ck_assert_int_eq(replay(logp).result, SHK_REPLAY_OK);
}
END_TEST

/* Every judgement takes the pipeline's one document, reset after it: a call
 * larger than the chunk kept (an argv of 20 KB) leaves nothing behind for
 * the next, whose entry is its own (verify and replay re-derive each). */
START_TEST(one_document_per_pipeline)
{
	static char big[20000];
	shk_doc *doc;

	memset(big, 'a', sizeof(big) - 1);
	ALLOWED(judge_connect(2, 0));
	doc = p.scratch;
	ck_assert_ptr_nonnull(doc);
	ck_assert(!p.scratch_busy);
	ALLOWED(judge_exec("/bin/echo", big, 0));
	ck_assert_ptr_eq(p.scratch, doc);
	ALLOWED(judge_connect(1, 0));
	ck_assert_ptr_eq(p.scratch, doc);
	ck_assert(!p.scratch_busy);
	close_log();
	ck_assert_int_eq(replay(logp).result, SHK_REPLAY_OK);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("tool_calls");
	TCase *tc = tcase_create("identity");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, members_and_exempt_rules);
	tcase_add_test(tc, one_document_per_pipeline);
	tcase_add_test(tc, exempt_rule_budget);
	tcase_add_test(tc, exempt_exec_needs_every_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
