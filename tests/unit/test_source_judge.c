/* SPDX-License-Identifier: MIT */
/*
 * The judge as a source other than the kernel sees it (judge/source.h): a
 * judged session built as shackle-run builds it (policy file, session,
 * signed log, operator channel), 8 threads judging and settling calls at
 * once while this thread runs the loop (channel and tick, under the lock),
 * a held call approved and one rejected through the control socket, a
 * refusal entry and a result's error signal (judge/source.h), and verify +
 * replay of the log (replay re-derives every post_exec's effect on the
 * budget).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <shackle/audit.h>

#include "judge/control.h"
#include "judge/judged.h"
#include "testutil.h"
#include "checkrun.h"

#define THREADS 8
#define CALLS 40

static char dir[64], logp[128], polp[128];
static struct shk_judged js;
static struct shk_source_judge sj;
static shk_replay_report last_rr;
static const char *guard_extra = "\"max_repeat_calls\":0";
static const char *models_extra = "";

/* A kernel call released (only held_exec_link holds one): its answer. */
static struct { bool expected, called, allow; uint64_t tool_call; } kernel;

static int k_release(void *ctx, uint64_t id, bool allow, int err, const struct sockaddr_storage *to, socklen_t len,
                     uint64_t tool_call)
{
	(void)ctx, (void)id, (void)err, (void)to, (void)len;
	ck_assert_msg(kernel.expected, "no kernel call is held here");
	kernel.called = true;
	kernel.allow = allow;
	kernel.tool_call = tool_call;
	return 0;
}

static bool k_waiting(void *ctx, uint64_t id)
{
	(void)ctx, (void)id;
	return kernel.expected && !kernel.called;
}

static void open_session(const char *exec_default)
{
	static const char *argv[] = { "agent", "--token=s3cret" };
	struct shk_judged_log lo = { .session_id = "src", .argv = argv, .argc = 2, .version = "test" };
	struct shk_hitl_options ho = { .kernel = { NULL, k_release, k_waiting } };
	char env[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/shk-srcj-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(env, sizeof(env), "%s/run", dir);
	setenv("SHACKLE_CONTROL_DIR", env, 1);
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	snprintf(polp, sizeof(polp), "%s/policy.json", dir);
	ck_assert_ptr_nonnull(f = fopen(polp, "w"));
	fprintf(f, "{\"version\":1,\"guard\":{\"hitl_timeout_s\":300,\"budget_usd\":1000,"
	        "%s},\"redact\":[\"token\"],"
	        "\"exec\":{\"default\":\"%s\"},\"net\":{\"default\":\"deny\"}%s}", guard_extra,
	        exec_default, models_extra);
	fclose(f);
	ck_assert_msg(shk_judged_load(&js, polp, 0) == 0, "%s", js.err);
	lo.audit = logp;
	ck_assert_msg(shk_judged_open_log(&js, &lo) == 0, "%s", js.err);
	ck_assert_msg(shk_judged_open_channel(&js, "src", ho) == 0, "%s", js.err);
	sj = shk_judged_source(&js);
}

/* What shackle-run's loop does on each wakeup: channel, tick. */
static void loop_once(int timeout_ms)
{
	poll(&(struct pollfd){ .fd = shk_hitl_fd(js.pipe.hitl), .events = POLLIN }, 1, timeout_ms);
	shk_judged_lock(&js);
	ck_assert_int_eq(shk_hitl_handle(js.pipe.hitl), 0);
	shk_pipeline_tick(&js.pipe);
	shk_hitl_tick(js.pipe.hitl);
	shk_judged_unlock(&js);
}

static void (*check_forged)(void); /* run on the closed log before it is removed */

static void close_and_check(uint64_t post_execs)
{
	const char *paths[] = { logp };
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	shk_verify_report vr;
	shk_replay_report rr;
	char cmd[160];

	memcpy(pk, shk_key_public(js.files.signer), sizeof(pk));
	shk_judged_close_channel(&js);
	/* the command line is logged redacted */
	snprintf(cmd, sizeof(cmd), "grep -q s3cret %s", logp);
	ck_assert_int_ne(system(cmd), 0);
	ck_assert_int_eq(shk_judged_end(&js, 0, NULL), 0);
	shk_judged_free(&js);
	ck_assert_int_eq(shk_verify_files(paths, 1, pk, NULL, &vr), 0);
	ck_assert_msg(vr.result == SHK_VERIFY_OK, "verify: %s", shk_verify_class_name(vr.result));
	ck_assert_int_eq(shk_replay_files(paths, 1, &rr), 0);
	ck_assert_msg(rr.result == SHK_REPLAY_OK, "replay: %s line %llu: %s", shk_replay_result_name(rr.result),
	              (unsigned long long)rr.line, rr.detail);
	ck_assert_uint_eq(rr.post_execs, post_execs);
	last_rr = rr;
	if (check_forged)
		check_forged();
	check_forged = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int judge_one(int thread, int i, shk_doc *d, struct shk_source_answer *a)
{
	char tool[32];
	shk_val *params = shk_object(d);
	struct shk_source_call c = { .kind = SHK_SOURCE_MODEL, .tool = tool, .params = params,
	                             .estimated_cost_usd = 0.5, .origin = "gateway" };

	snprintf(tool, sizeof(tool), "model:m%d", thread);
	shk_object_set_str(params, "thread", shk_int(d, thread));
	shk_object_set_str(params, "i", shk_int(d, i));
	shk_object_set_str(params, "token", shk_cstring(d, "s3cret"));
	return sj.judge(sj.ctx, &c, a);
}

static int bad[THREADS], done[THREADS];

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	for (int i = 0; i < CALLS; i++) {
		shk_doc *d = NULL;
		shk_val *usage;
		struct shk_source_answer a;

		if (shk_doc_new(&d) < 0) {
			bad[t]++;
			break;
		}
		usage = shk_object(d);
		shk_object_set_str(usage, "output_tokens", shk_int(d, i));
		if (judge_one(t, i, d, &a) != 0 || a.verdict != SHK_ALLOW || a.nonce == 0 ||
		    sj.settle(sj.ctx, a.nonce, 0.25, usage) != 0)
			bad[t]++;
		shk_doc_free(d);
	}
	__atomic_store_n(&done[t], 1, __ATOMIC_RELEASE);
	return NULL;
}

static bool all_done(int n)
{
	for (int i = 0; i < n; i++)
		if (!__atomic_load_n(&done[i], __ATOMIC_ACQUIRE))
			return false;
	return true;
}

START_TEST(eight_threads)
{
	pthread_t th[THREADS];
	shk_session_info info;

	open_session("allow");
	memset(bad, 0, sizeof(bad));
	memset(done, 0, sizeof(done));
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i), 0);
	while (!all_done(THREADS))
		loop_once(1);
	for (int i = 0; i < THREADS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_msg(bad[i] == 0, "thread %d: %d calls not allowed and settled", i, bad[i]);
	}
	ck_assert_int_eq(sj.info(sj.ctx, &info), 0);
	ck_assert_uint_eq(info.total_calls, THREADS * CALLS);
	/* each call estimated 0.5 and settled at 0.25 */
	ck_assert_double_eq_tol(info.budget_remaining_usd, 1000 - THREADS * CALLS * 0.25, 1e-9);
	/* a nonce the session knows is a replay (SP/1.0 §4.3) */
	{
		shk_doc *d = NULL;
		struct shk_source_answer a, b;
		struct shk_source_call c = { .kind = SHK_SOURCE_SDK, .tool = "sdk:search", .nonce = 1u << 30,
		                             .origin = "sdk:agent-1" };

		ck_assert_int_eq(shk_doc_new(&d), 0);
		c.params = shk_object(d);
		ck_assert_int_eq(sj.judge(sj.ctx, &c, &a), 0);
		ck_assert_int_eq(a.verdict, SHK_ALLOW);
		ck_assert_uint_eq(a.nonce, 1u << 30);
		ck_assert_int_eq(sj.judge(sj.ctx, &c, &b), 0);
		ck_assert_int_eq(b.verdict, SHK_DENY);
		ck_assert_int_eq(b.reason, SHK_R_DUPLICATE_NONCE);
		ck_assert_int_eq(sj.settle(sj.ctx, a.nonce, 0, NULL), 0);
		/* a nonce the session never allowed is refused, and not logged */
		ck_assert_int_lt(sj.settle(sj.ctx, 7u << 28, 0, NULL), 0);
		shk_doc_free(d);
	}
	close_and_check(THREADS * CALLS + 1);
}
END_TEST

/* ---- held calls ---------------------------------------------------------------- */

static shk_doc *opdoc;

/* One operator request over the control socket, the loop run meanwhile. */
static const shk_val *op(const char *text)
{
	struct shk_control_client cl;
	shk_parse_error pe;
	shk_val *req = NULL, *resp = NULL;
	int r = -ETIMEDOUT;

	ck_assert_int_eq(shk_json_parse(opdoc, text, strlen(text), "req", &req, &pe), 0);
	ck_assert_int_eq(shk_control_connect(shk_hitl_socket_path(js.pipe.hitl), &cl), 0);
	ck_assert_int_eq(shk_control_send(&cl, req), 0);
	for (int i = 0; i < 500 && r == -ETIMEDOUT; i++) {
		loop_once(10);
		r = shk_control_recv(&cl, opdoc, 0, &resp);
	}
	ck_assert_int_eq(r, 0);
	shk_control_disconnect(&cl);
	return resp;
}

struct held_call {
	int thread;
	struct shk_source_answer a;
	int r;
	int done;
};

static void *held_worker(void *arg)
{
	struct held_call *h = arg;
	shk_doc *d = NULL;

	if (shk_doc_new(&d) == 0)
		h->r = judge_one(h->thread, 0, d, &h->a);
	else
		h->r = -ENOMEM;
	shk_doc_free(d);
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static const char *pending_tool = "model:m3"; /* the tool of the call held */

/* The id and digest of the one call `shackle pending` lists (waits for it). */
static void pending_one(char *id, size_t idlen, char *digest, size_t dlen)
{
	for (int i = 0; i < 500; i++) {
		const shk_val *resp = op("{\"cmd\":\"list\"}");
		const shk_val *p = shk_object_get(resp, "pending");

		if (shk_val_len(p) == 1) {
			const shk_val *c = shk_array_at(p, 0);

			snprintf(id, idlen, "%s", shk_val_str(shk_object_get(c, "id"), NULL));
			snprintf(digest, dlen, "%s", shk_val_str(shk_object_get(c, "args_digest"), NULL));
			ck_assert_str_eq(shk_val_str(shk_object_get(c, "tool"), NULL), pending_tool);
			/* operators see the redacted form (a model call has a token) */
			ck_assert(strcmp(pending_tool, "model:m3") ||
			          !strstr(shk_val_str(shk_object_get(shk_object_get(c, "params"), "token"), NULL),
			                  "s3cret"));
			return;
		}
	}
	ck_abort_msg("the held call was never listed");
}

static void decide_one(const char *cmd, struct held_call *h)
{
	char id[32], digest[80], req[256];
	pthread_t t;

	memset(h, 0, sizeof(*h));
	h->thread = 3;
	ck_assert_int_eq(pthread_create(&t, NULL, held_worker, h), 0);
	pending_one(id, sizeof(id), digest, sizeof(digest));
	ck_assert(!__atomic_load_n(&h->done, __ATOMIC_ACQUIRE)); /* still waiting */
	snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"id\":\"%s\",\"operator\":\"tester\",\"digest\":\"%s\"}",
	         cmd, id, digest);
	ck_assert(shk_val_bool(shk_object_get(op(req), "ok")));
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(h->r, 0);
}

START_TEST(held_approved_and_rejected)
{
	struct held_call h;

	ck_assert_int_eq(shk_doc_new(&opdoc), 0);
	open_session("hitl");
	decide_one("approve", &h);
	ck_assert_int_eq(h.a.verdict, SHK_ALLOW);
	ck_assert_int_eq(h.a.reason, SHK_R_HT_APPROVE);
	ck_assert_int_eq(sj.settle(sj.ctx, h.a.nonce, 0.1, NULL), 0);
	decide_one("reject", &h);
	ck_assert_int_eq(h.a.verdict, SHK_DENY);
	ck_assert_int_eq(h.a.reason, SHK_R_HT_REJECT);
	ck_assert_int_lt(sj.settle(sj.ctx, h.a.nonce, 0.1, NULL), 0);
	close_and_check(1);
	shk_doc_free(opdoc);
}
END_TEST

/* The channel closes (the session ends) while a call is held: its caller
 * is answered, denied, and the log says it was cancelled. */
START_TEST(closing_answers_held)
{
	struct held_call h = { .thread = 3 };
	char id[32], digest[80];
	pthread_t t;

	ck_assert_int_eq(shk_doc_new(&opdoc), 0);
	open_session("hitl");
	ck_assert_int_eq(pthread_create(&t, NULL, held_worker, &h), 0);
	pending_one(id, sizeof(id), digest, sizeof(digest));
	shk_judged_close_channel(&js);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(h.r, 0);
	ck_assert_int_eq(h.a.verdict, SHK_DENY);
	close_and_check(0);
	shk_doc_free(opdoc);
}
END_TEST

/* Set: the proposals carry a description their rule left out of params. */
static const char *ignored_desc;

static shk_verdict propose_cmd(const char *tool, const char *cmd, bool result_signal,
                               shk_reason *ret_reason)
{
	shk_doc *d = NULL;
	shk_val *params, *ign;
	struct shk_source_answer a;
	struct shk_source_call c = { .kind = SHK_SOURCE_PROPOSAL, .tool = tool, .origin = "gateway",
	                             .result_error_signal = result_signal };

	ck_assert_int_eq(shk_doc_new(&d), 0);
	params = shk_object(d);
	shk_object_set_str(params, "command", shk_cstring(d, cmd));
	c.params = params;
	if (ignored_desc) {
		ign = shk_object(d);
		shk_object_set_str(ign, "description", shk_cstring(d, ignored_desc));
		c.ignored_input = ign;
	}
	ck_assert_int_eq(sj.judge(sj.ctx, &c, &a), 0);
	shk_doc_free(d);
	*ret_reason = a.reason;
	return a.verdict;
}

static shk_verdict propose(const char *tool, bool result_signal, shk_reason *ret_reason)
{
	return propose_cmd(tool, "ls", result_signal, ret_reason);
}

/* Input refused before it was a tool call is logged (verify accepts the
 * entry, replay counts it); a call whose last result carried an error
 * signal gets the stricter repeat limit, and replay reproduces it. */
START_TEST(refusals_and_result_signals)
{
	shk_doc *d = NULL;
	shk_val *detail;
	shk_reason why;

	guard_extra = "\"max_repeat_calls\":3,\"error_amplification\":true";
	open_session("allow");
	ck_assert_int_eq(shk_doc_new(&d), 0);
	detail = shk_object(d);
	shk_object_set_str(detail, "status", shk_int(d, 400));
	shk_object_set_str(detail, "message", shk_cstring(d, "not JSON"));
	ck_assert_int_eq(sj.refuse(sj.ctx, "gateway", "malformed_request", detail), 0);
	ck_assert_int_eq(sj.refuse(sj.ctx, "gateway", "malformed_request", shk_int(d, 1)), -EINVAL);
	ck_assert_int_eq(sj.refuse(sj.ctx, "gateway", NULL, NULL), -EINVAL);
	shk_doc_free(d);
	/* results fine: 3 of the same pass */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(propose("Read", false, &why), SHK_ALLOW);
	/* results said 401: the 3rd is one too many */
	ck_assert_int_eq(propose("Bash", true, &why), SHK_ALLOW);
	ck_assert_int_eq(propose("Bash", true, &why), SHK_ALLOW);
	ck_assert_int_eq(propose("Bash", true, &why), SHK_DENY);
	ck_assert_int_eq(why, SHK_R_MAX_REPEAT_EXCEEDED);
	close_and_check(0);
	ck_assert_uint_eq(last_rr.refusals, 1);
	ck_assert_uint_eq(last_rr.result_signals, 3);
	ck_assert_uint_eq(last_rr.decisions, 6);
	guard_extra = "\"max_repeat_calls\":0";
}
END_TEST

/* A kernel exec as the supervisor hands it over: the file, its argv and
 * the tool call its process belongs to. */
static struct shk_pipeline_verdict exec_in(const char *path, const char *const *argv, size_t argc,
                                           uint64_t tool_call)
{
	struct shk_obs *obs = calloc(1, sizeof(*obs));
	struct shk_pipeline_verdict v;

	ck_assert_ptr_nonnull(obs);
	obs->kind = SHK_OBS_EXEC;
	obs->pid = obs->tid = 42;
	obs->tool_call = tool_call;
	obs->can_hold = kernel.expected;
	obs->notif_id = 77;
	snprintf(obs->exec.file.path, sizeof(obs->exec.file.path), "%s", path);
	obs->exec.file.fd = -1;
	snprintf(obs->exec.cwd, sizeof(obs->exec.cwd), "/");
	obs->exec.argv = argv;
	obs->exec.argc = argc;
	shk_judged_lock(&js);
	ck_assert_int_eq(shk_pipeline_judge_obs(&js.pipe, obs, &v), 0);
	shk_judged_unlock(&js);
	free(obs);
	return v;
}

static shk_verdict exec_obs(const char *path, const char *const *argv, size_t argc)
{
	return exec_in(path, argv, argc, 0).verdict;
}

static int log_count(const char *needle)
{
	char cmd[320];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "grep -c -F '%s' %s", needle, logp);
	ck_assert_ptr_nonnull(f = popen(cmd, "r"));
	ck_assert_int_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

/* The exec that carries out an allowed proposal's command names it in its
 * entry's inputs, once; an exec of another command, or the same one again,
 * names none; replay derives the link again. */
START_TEST(proposal_links)
{
	static const char *sh[] = { "/bin/sh", "-c", "ls" }, *other[] = { "/bin/sh", "-c", "ls /" };
	shk_reason why;

	open_session("allow");
	ck_assert_int_eq(exec_obs("/usr/bin/dash", sh, 3), SHK_ALLOW); /* nothing proposed yet */
	ck_assert_int_eq(propose("Bash", false, &why), SHK_ALLOW);     /* seq 2: {"command":"ls"} */
	ck_assert_int_eq(exec_obs("/usr/bin/dash", other, 3), SHK_ALLOW);
	ck_assert_int_eq(exec_obs("/usr/bin/dash", sh, 3), SHK_ALLOW);
	ck_assert_int_eq(exec_obs("/usr/bin/dash", sh, 3), SHK_ALLOW); /* taken already */
	ck_assert_int_eq(log_count("\"proposal\":{\"seq\":2,\"tool\":\"Bash\"}"), 1);
	ck_assert_int_eq(log_count("\"proposal\":{"), 1);
	/* many, without the loop's ticks: every 64 entries a checkpoint goes
	 * in before a decision, and a link still names its proposal's entry */
	for (int i = 0; i < 100; i++) {
		char cmd[32];
		const char *v[] = { "/bin/sh", "-c", cmd };

		snprintf(cmd, sizeof(cmd), "echo %d", i);
		ck_assert_int_eq(propose_cmd("Bash", cmd, false, &why), SHK_ALLOW);
		ck_assert_int_eq(exec_obs("/usr/bin/dash", v, 3), SHK_ALLOW);
	}
	ck_assert_int_eq(log_count("\"proposal\":{"), 101);
	close_and_check(0);
	ck_assert_uint_eq(last_rr.links, 101);
	ck_assert_uint_eq(last_rr.links_from_log, 0);
}
END_TEST

static int64_t last_seq(void)
{
	int64_t seq;

	shk_judged_lock(&js);
	seq = (int64_t)shk_ledger_next_seq(js.pipe.ledger) - 1;
	shk_judged_unlock(&js);
	return seq;
}

/* Rewrite the log with sed into forged.jsonl and replay that. */
static shk_replay_report replay_forged(const char *sed)
{
	const char *paths[] = { NULL };
	char cmd[512], forged[160];
	shk_replay_report rr;

	snprintf(forged, sizeof(forged), "%s/forged.jsonl", dir);
	snprintf(cmd, sizeof(cmd), "sed -e '%s' %s >%s", sed, logp, forged);
	ck_assert_int_eq(system(cmd), 0);
	paths[0] = forged;
	ck_assert_int_eq(shk_replay_files(paths, 1, &rr), 0);
	return rr;
}

static int64_t members_p2;

static void members_forged(void)
{
	char sed[160];
	shk_replay_report rr;

	/* the links removed: each exec is counted on its own again */
	rr = replay_forged("s/\"inputs\":{\"proposal\":{[^}]*}}/\"inputs\":{}/");
	ck_assert_int_eq(rr.result, SHK_REPLAY_DIVERGED);
	ck_assert_str_eq(rr.field, "inputs.proposal");
	/* a helper of the first proposal's exec named the second proposal,
	 * which no exec had carried out yet */
	snprintf(sed, sizeof(sed), "0,/\"tool_call\":[0-9]*/s//\"tool_call\":%lld/", (long long)members_p2);
	rr = replay_forged(sed);
	ck_assert_int_eq(rr.result, SHK_REPLAY_DIVERGED);
	ck_assert_str_eq(rr.field, "inputs.tool_call");
}

/* An exec that carries out a proposal is a member of the proposal's tool
 * call: out of the repeat guard, where the proposal was counted, and its
 * process and descendants belong to the proposal's seq. The agent ran the
 * same `sh -c ls` itself first: counted on their own too, the second
 * proposal's exec was the third of its kind and refused by
 * max_repeat_calls 2, before the proposal guard stopped the third
 * proposal. Replay derives the membership again. */
START_TEST(proposal_members)
{
	static const char *sh[] = { "/bin/sh", "-c", "ls" }, *ls[] = { "ls", "-l" };
	struct shk_pipeline_verdict v;
	shk_reason why;
	int64_t p;

	guard_extra = "\"max_repeat_calls\":2";
	open_session("allow");
	ck_assert_int_eq(exec_obs("/usr/bin/dash", sh, 3), SHK_ALLOW); /* the agent's own */
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(propose("Bash", false, &why), SHK_ALLOW);
		members_p2 = p = last_seq();
		v = exec_in("/usr/bin/dash", sh, 3, 0);
		ck_assert_msg(v.verdict == SHK_ALLOW, "exec %d: %s", i, shk_reason_str(v.reason));
		ck_assert_uint_eq(v.tool_call, (uint64_t)p);
		/* its helpers, the same ls over the limit: members */
		for (int k = 0; k < 3; k++)
			ck_assert_int_eq(exec_in("/usr/bin/ls", ls, 2, (uint64_t)p).verdict, SHK_ALLOW);
	}
	ck_assert_int_eq(propose("Bash", false, &why), SHK_DENY);
	ck_assert_int_eq(why, SHK_R_MAX_REPEAT_EXCEEDED);
	/* the linked execs and the helpers were shown no repeat limit */
	ck_assert_int_eq(log_count("\"max_repeat_calls\":0,"), 8);
	ck_assert_int_eq(log_count("\"inputs\":{\"proposal\":{"), 2);
	check_forged = members_forged;
	close_and_check(0);
	ck_assert_uint_eq(last_rr.links, 2);
	guard_extra = "\"max_repeat_calls\":0";
}
END_TEST

struct held_proposal {
	const char *cmd;
	shk_verdict verdict;
	int done;
};

static void *proposal_worker(void *arg)
{
	struct held_proposal *h = arg;
	shk_reason why;

	h->verdict = propose_cmd("Bash", h->cmd, false, &why);
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A proposal of cmd held for a person, decided with how (approve, reject). */
static shk_verdict decide_proposal(const char *cmd, const char *how)
{
	struct held_proposal h = { .cmd = cmd };
	char id[32], digest[80], req[256];
	pthread_t t;

	pending_tool = "Bash";
	ck_assert_int_eq(pthread_create(&t, NULL, proposal_worker, &h), 0);
	pending_one(id, sizeof(id), digest, sizeof(digest));
	ck_assert(!__atomic_load_n(&h.done, __ATOMIC_ACQUIRE));
	snprintf(req, sizeof(req), "{\"cmd\":\"%s\",\"id\":\"%s\",\"operator\":\"tester\",\"digest\":\"%s\"}",
	         how, id, digest);
	ck_assert(shk_val_bool(shk_object_get(op(req), "ok")));
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pending_tool = "model:m3";
	return h.verdict;
}

static int64_t held_rejected;

static void held_forged(void)
{
	char sed[256];
	shk_replay_report rr;

	/* the approved proposal's link removed */
	rr = replay_forged("s/\"inputs\":{\"proposal\":{[^}]*}}/\"inputs\":{}/");
	ck_assert_int_eq(rr.result, SHK_REPLAY_DIVERGED);
	ck_assert_str_eq(rr.field, "inputs.proposal");
	/* the exec of the rejected one's command linked to it */
	snprintf(sed, sizeof(sed), "/\"-c\",\"ls \\/\"\\]/s/\"inputs\":null/\"inputs\":{\"proposal\":{\"seq\":%lld,\"tool\":\"Bash\"}}/",
	         (long long)held_rejected);
	rr = replay_forged(sed);
	ck_assert_msg(rr.result == SHK_REPLAY_DIVERGED, "%s line %llu: %s", shk_replay_result_name(rr.result),
	              (unsigned long long)rr.line, rr.detail);
	ck_assert_str_eq(rr.field, "inputs.proposal");
}

/* A proposal held for a person links to its exec once approved, from the
 * decision that released it; a rejected one never links. */
START_TEST(held_proposal_links)
{
	static const char *sh[] = { "/bin/sh", "-c", "ls" }, *other[] = { "/bin/sh", "-c", "ls /" };
	struct shk_pipeline_verdict v;
	int64_t approval;

	ck_assert_int_eq(shk_doc_new(&opdoc), 0);
	models_extra = ",\"models\":{\"default\":\"allow\",\"rules\":[{\"tool\":\"Bash\",\"action\":\"hitl\"}]}";
	open_session("allow");
	ck_assert_int_eq(decide_proposal("ls", "approve"), SHK_ALLOW);
	approval = last_seq();
	ck_assert_int_eq(decide_proposal("ls /", "reject"), SHK_DENY);
	held_rejected = last_seq();
	v = exec_in("/usr/bin/dash", sh, 3, 0);
	ck_assert_int_eq(v.verdict, SHK_ALLOW);
	ck_assert_uint_eq(v.tool_call, (uint64_t)approval);
	ck_assert_int_eq(exec_obs("/usr/bin/dash", other, 3), SHK_ALLOW);
	ck_assert_int_eq(log_count("\"proposal\":{"), 1);
	ck_assert_int_eq(log_count("\"source\":\"proposal\""), 4); /* two held, two answered */
	check_forged = held_forged;
	close_and_check(0);
	ck_assert_uint_eq(last_rr.links, 1);
	models_extra = "";
	shk_doc_free(opdoc);
}
END_TEST

/* What a proposal's rule left out of its params is logged in its inputs,
 * when it is judged and when a held one is answered; replay re-derives
 * the verdicts from the params alone. */
START_TEST(ignored_input_logged)
{
	shk_reason why;

	ck_assert_int_eq(shk_doc_new(&opdoc), 0);
	models_extra = ",\"models\":{\"default\":\"allow\",\"rules\":[{\"tool\":\"Bash\",\"action\":\"hitl\"}]}";
	open_session("allow");
	ignored_desc = "list it";
	ck_assert_int_eq(decide_proposal("ls", "approve"), SHK_ALLOW);
	ignored_desc = "read it";
	ck_assert_int_eq(propose_cmd("Read", "ls", false, &why), SHK_ALLOW);
	ignored_desc = NULL;
	ck_assert_int_eq(propose_cmd("Read", "ls", false, &why), SHK_ALLOW);
	ck_assert_int_eq(log_count("\"ignored_input\":{\"description\":\"list it\"}"), 2);
	ck_assert_int_eq(log_count("\"ignored_input\":{\"description\":\"read it\"}"), 1);
	ck_assert_int_eq(log_count("\"ignored_input\""), 3);
	ck_assert_int_eq(log_count("\"description\""), 3); /* never in params */
	close_and_check(0);
	ck_assert_uint_eq(last_rr.decisions, 4);
	models_extra = "";
	shk_doc_free(opdoc);
}
END_TEST

static void held_exec_forged(void)
{
	shk_replay_report rr;

	/* the person's answer without the link the exec was held with */
	rr = replay_forged("/\"operator\":\"tester\"/s/,\"proposal\":{[^}]*}//");
	ck_assert_int_eq(rr.result, SHK_REPLAY_DIVERGED);
	ck_assert_str_eq(rr.field, "inputs.proposal");
}

/* An exec that carries out a proposal and is held for a person keeps its
 * link: the decision that answers it says it again, and the approved exec
 * joins the proposal's tool call. */
START_TEST(held_exec_link)
{
	static const char *sh[] = { "/bin/sh", "-c", "ls" };
	struct shk_pipeline_verdict v;
	char id[32], digest[80], req[256], needle[64];
	shk_reason why;
	int64_t p;

	ck_assert_int_eq(shk_doc_new(&opdoc), 0);
	models_extra = ",\"models\":{\"default\":\"allow\"}";
	open_session("hitl");
	ck_assert_int_eq(propose("Bash", false, &why), SHK_ALLOW);
	p = last_seq();
	kernel.expected = true;
	v = exec_in("/usr/bin/dash", sh, 3, 0);
	ck_assert(v.held);
	pending_tool = "exec:dash";
	pending_one(id, sizeof(id), digest, sizeof(digest));
	pending_tool = "model:m3";
	snprintf(req, sizeof(req), "{\"cmd\":\"approve\",\"id\":\"%s\",\"operator\":\"tester\",\"digest\":\"%s\"}",
	         id, digest);
	ck_assert(shk_val_bool(shk_object_get(op(req), "ok")));
	ck_assert(kernel.called && kernel.allow);
	ck_assert_uint_eq(kernel.tool_call, (uint64_t)p);
	snprintf(needle, sizeof(needle), "\"proposal\":{\"seq\":%lld,", (long long)p);
	ck_assert_int_eq(log_count(needle), 2);
	memset(&kernel, 0, sizeof(kernel));
	check_forged = held_exec_forged;
	close_and_check(0);
	ck_assert_uint_eq(last_rr.links, 1);
	models_extra = "";
	shk_doc_free(opdoc);
}
END_TEST

/* The gateway's calls take the "models" rules and default, not the exec
 * default; an SDK's call and a kernel exec still take the exec default. */
START_TEST(models_section)
{
	static const char *ls[] = { "ls" };
	struct shk_source_answer a;
	shk_doc *d = NULL;
	shk_reason why;

	models_extra = ",\"models\":{\"default\":\"allow\",\"rules\":["
	               "{\"name\":\"no-bash\",\"tool\":\"Bash\",\"action\":\"deny\"}]}";
	open_session("deny");
	ck_assert_int_eq(shk_doc_new(&d), 0);
	ck_assert_int_eq(judge_one(0, 0, d, &a), 0);
	ck_assert_int_eq(a.verdict, SHK_ALLOW);                 /* model:m0, models.default */
	ck_assert_str_eq(a.rule, "");
	ck_assert_int_eq(propose("Read", false, &why), SHK_ALLOW);
	ck_assert_int_eq(propose("Bash", false, &why), SHK_DENY);
	ck_assert_int_eq(why, SHK_R_POLICY_DENIED);
	{
		struct shk_source_call c = { .kind = SHK_SOURCE_SDK, .tool = "sdk:search", .params = shk_object(d) };

		ck_assert_int_eq(sj.judge(sj.ctx, &c, &a), 0);
		ck_assert_int_eq(a.verdict, SHK_DENY);          /* the exec default */
	}
	ck_assert_int_eq(exec_obs("/usr/bin/ls", ls, 1), SHK_DENY);
	shk_doc_free(d);
	ck_assert_int_eq(log_count("\"rule\":\"no-bash\""), 1);
	close_and_check(0);
	ck_assert_uint_eq(last_rr.decisions, 5);
	models_extra = "";
}
END_TEST

int main(void)
{
	Suite *s = suite_create("source_judge");
	TCase *tc = tcase_create("source");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, eight_threads);
	tcase_add_test(tc, held_approved_and_rejected);
	tcase_add_test(tc, closing_answers_held);
	tcase_add_test(tc, refusals_and_result_signals);
	tcase_add_test(tc, proposal_links);
	tcase_add_test(tc, proposal_members);
	tcase_add_test(tc, held_proposal_links);
	tcase_add_test(tc, held_exec_link);
	tcase_add_test(tc, ignored_input_logged);
	tcase_add_test(tc, models_section);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
