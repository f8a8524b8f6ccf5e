/* SPDX-License-Identifier: MIT */
/*
 * Held calls end to end without a kernel: a real policy, session and signed
 * ledger, calls judged as shackle-run's pipeline judges them, the HITL layer
 * with a fake kernel (records how each held notification is answered), and
 * the operator on the control socket. Ends with verify + replay of the log.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "judge/hitl.h"
#include "testutil.h"
#include "checkrun.h"

static const char policy_text[] =
	"{\"version\":1,\"guard\":{\"hitl_timeout_s\":300,\"trip_on_deny\":true},"
	"\"exec\":{\"default\":\"allow\",\"rules\":["
	"{\"name\":\"push\",\"path\":\"**/git\",\"argv\":[\"*\",\"push\",\"**\"],\"action\":\"hitl\"}]},"
	"\"net\":{\"default\":\"deny\",\"rules\":["
	"{\"name\":\"prod-db\",\"cidr\":\"10.0.0.1\",\"port\":5432,\"action\":\"hitl\"},"
	"{\"name\":\"replica\",\"cidr\":\"127.0.0.1\",\"action\":\"allow\"}]}}";

/* the fake kernel */
struct answer {
	bool done, allow;
	int err;
	struct sockaddr_storage to;
	socklen_t tolen;
	bool gone;
	uint64_t tool_call;
};
static struct answer ans[256];

static int k_release(void *ctx, uint64_t id, bool allow, int err, const struct sockaddr_storage *to, socklen_t len,
                     uint64_t tool_call)
{
	(void)ctx;
	ans[id].tool_call = tool_call;
	ck_assert_uint_lt(id, 256);
	ck_assert_msg(!ans[id].done, "notification %llu answered twice", (unsigned long long)id);
	ans[id].done = true;
	ans[id].allow = allow;
	ans[id].err = err;
	if (to)
		ans[id].to = *to;
	ans[id].tolen = to ? len : 0;
	return 0;
}

static bool k_waiting(void *ctx, uint64_t id)
{
	(void)ctx;
	return !ans[id].done && !ans[id].gone;
}

static char dir[64], logp[128];
static struct shk_pipeline p;
static struct shk_hitl *h;
static shk_key *key;
static shk_doc *doc;

static void open_all(uint32_t timeout_s)
{
	shk_parse_error pe;
	shk_val *pdoc = NULL;
	shk_session_config cfg = { 0 };
	shk_ledger_session ls = { 0 };
	struct shk_hitl_options ho = { .session_id = "hp", .kernel = { NULL, k_release, k_waiting } };
	static const char *argv[] = { "agent" };
	char env[128];

	memset(ans, 0, sizeof(ans));
	memset(&p, 0, sizeof(p));
	snprintf(dir, sizeof(dir), "/tmp/shk-hitlp-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(env, sizeof(env), "%s/run", dir);
	setenv("SHACKLE_CONTROL_DIR", env, 1);
	snprintf(logp, sizeof(logp), "%s/audit.jsonl", dir);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	ck_assert_msg(shk_policy_load_buffer(policy_text, strlen(policy_text), "policy", &p.policy, &pe) == 0,
	              "%s:%d:%d %s", pe.source, pe.line, pe.column, pe.text);
	ck_assert_int_eq(shk_json_parse(doc, policy_text, strlen(policy_text), "policy", &pdoc, &pe), 0);
	cfg.guard = *shk_policy_guard(p.policy);
	ck_assert_int_eq(shk_session_new(&cfg, &p.session), 0);
	ck_assert_int_eq(shk_key_generate(&key), 0);
	ls = (shk_ledger_session){ .session_id = "hp", .policy = pdoc, .policy_digest = shk_policy_digest_hex(p.policy),
	                           .argv = argv, .argc = 1, .version = "test", .start_ns = 1, .config = &cfg };
	ck_assert_int_eq(shk_ledger_open(logp, key, &ls, NULL, &p.ledger), 0);
	ho.timeout_s = timeout_s;
	ck_assert_int_eq(shk_hitl_open(&p, &ho, &h), 0);
}

static void check_log(void)
{
	const char *paths[] = { logp };
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	shk_verify_report vr;
	shk_replay_report rr;
	shk_audit_session_end e = { 2, 0, NULL, NULL };

	shk_hitl_close(h);
	h = NULL;
	ck_assert_int_eq(shk_ledger_end(p.ledger, &e), 0);
	ck_assert_int_eq(shk_ledger_close(p.ledger), 0);
	memcpy(pk, shk_key_public(key), sizeof(pk));
	ck_assert_int_eq(shk_verify_files(paths, 1, pk, NULL, &vr), 0);
	ck_assert_msg(vr.result == SHK_VERIFY_OK, "verify: %s", shk_verify_class_name(vr.result));
	ck_assert_int_eq(shk_replay_files(paths, 1, &rr), 0);
	ck_assert_msg(rr.result == SHK_REPLAY_OK, "replay: %s line %llu: %s", shk_replay_result_name(rr.result),
	              (unsigned long long)rr.line, rr.detail);
}

static void teardown(void)
{
	char cmd[128];

	shk_hitl_close(h);
	shk_session_free(p.session);
	shk_policy_free(p.policy);
	shk_key_free(key);
	shk_doc_free(doc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* What pipeline.c does for one call, holding it when the verdict is HITL. */
static shk_verdict judge(uint64_t notif, const struct shk_obs *obs, const shk_toolcall *in, const shk_policy_match *m)
{
	shk_toolcall tc = *in;
	shk_outcome o;
	shk_audit_decision d;

	tc.nonce = ++p.next_nonce;
	tc.tool_name = m->tool;
	shk_toolcall_prepare(&tc);
	ck_assert_int_eq(shk_session_evaluate(p.session, &tc, m->action, 10, &o), 0);
	d = (shk_audit_decision){ .time_ns = 10, .pid = obs->pid, .tid = obs->tid, .call_number = ++p.calls,
	                          .call = &tc, .action = m->action, .rule = m->rule_name, .outcome = &o };
	ck_assert_int_eq(shk_ledger_append_decision(p.ledger, &d), 0);
	ck_assert_int_eq(shk_session_commit(p.session, &tc, &o, 10), 0);
	if (o.verdict == SHK_HITL)
		ck_assert_int_eq(shk_hitl_hold(h, obs, notif, &tc, m, &o, 10), 0);
	return o.verdict;
}

static uint64_t hold_exec(uint64_t notif, const char *arg)
{
	const char *argv[] = { "git", "push", arg };
	struct shk_obs obs = { .kind = SHK_OBS_EXEC, .pid = 40, .tid = 41 };
	shk_val *params = shk_object(doc), *av = shk_array(doc);
	shk_policy_match m;
	shk_toolcall tc = { 0 };

	snprintf(obs.exe, sizeof(obs.exe), "/bin/sh");
	ck_assert_int_eq(shk_policy_match_exec(p.policy, "/usr/bin/git", argv, 3, &m), 0);
	for (int i = 0; i < 3; i++)
		shk_array_append(av, shk_cstring(doc, argv[i]));
	shk_object_set_str(params, "path", shk_cstring(doc, "/usr/bin/git"));
	shk_object_set_str(params, "argv", av);
	tc.params = params;
	ck_assert_int_eq(judge(notif, &obs, &tc, &m), SHK_HITL);
	return p.next_nonce;
}

static uint64_t hold_connect(uint64_t notif)
{
	struct shk_obs obs = { .kind = SHK_OBS_NET, .pid = 50, .tid = 50 };
	struct shk_net_dest dest = { .family = SHK_NET_INET4, .port = 5432, .proto = SHK_NET_PROTO_TCP,
	                             .op = SHK_NET_OP_CONNECT, .addr = { 10, 0, 0, 1 } };
	shk_val *params = shk_object(doc);
	shk_policy_match m;
	shk_toolcall tc = { 0 };

	obs.net.op = SHK_OBS_CONNECT;
	obs.net.family = AF_INET;
	ck_assert_int_eq(shk_policy_match_net(p.policy, &dest, &m), 0);
	shk_object_set_str(params, "family", shk_cstring(doc, "inet"));
	shk_object_set_str(params, "addr", shk_cstring(doc, "10.0.0.1"));
	shk_object_set_str(params, "port", shk_int(doc, 5432));
	shk_object_set_str(params, "proto", shk_cstring(doc, "tcp"));
	tc.params = params;
	ck_assert_int_eq(judge(notif, &obs, &tc, &m), SHK_HITL);
	return p.next_nonce;
}

/* One operator request; the server is driven from this thread. */
static const shk_val *op(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const shk_val *op(const char *fmt, ...)
{
	struct shk_control_client cl;
	char text[512];
	shk_parse_error pe;
	shk_val *req = NULL, *resp = NULL;
	va_list ap;
	int r = -ETIMEDOUT;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ck_assert_int_eq(shk_json_parse(doc, text, strlen(text), "req", &req, &pe), 0);
	ck_assert_int_eq(shk_control_connect(shk_hitl_socket_path(h), &cl), 0);
	ck_assert_int_eq(shk_control_send(&cl, req), 0);
	for (int i = 0; i < 200 && r == -ETIMEDOUT; i++) {
		poll(&(struct pollfd){ .fd = shk_hitl_fd(h), .events = POLLIN }, 1, 10);
		ck_assert_int_eq(shk_hitl_handle(h), 0);
		r = shk_control_recv(&cl, doc, 0, &resp);
	}
	ck_assert_int_eq(r, 0);
	shk_control_disconnect(&cl);
	return resp;
}

static struct shk_control_client watcher;

static void watch_start(void)
{
	const shk_val *r;
	shk_parse_error pe;
	shk_val *req = NULL;

	ck_assert_int_eq(shk_json_parse(doc, "{\"cmd\":\"watch\"}", 15, "req", &req, &pe), 0);
	ck_assert_int_eq(shk_control_connect(shk_hitl_socket_path(h), &watcher), 0);
	ck_assert_int_eq(shk_control_send(&watcher, req), 0);
	for (int i = 0; i < 100 && shk_control_recv(&watcher, doc, 0, (shk_val **)&r) == -ETIMEDOUT; i++) {
		poll(&(struct pollfd){ .fd = shk_hitl_fd(h), .events = POLLIN }, 1, 10);
		ck_assert_int_eq(shk_hitl_handle(h), 0);
	}
}

static const shk_val *watch_next(void)
{
	shk_val *e = NULL;

	ck_assert_int_eq(shk_control_recv(&watcher, doc, 2000, &e), 0);
	return e;
}

static const char *str(const shk_val *o, const char *k)
{
	const char *s = shk_val_str(shk_object_get(o, k), NULL);
	return s ? s : "(none)";
}

#define EXPECT_OK(r, v, why)                                                                       \
	do {                                                                                       \
		const shk_val *r_ = (r);                                                           \
		ck_assert_msg(shk_val_bool(shk_object_get(r_, "ok")), "error: %s", str(r_, "error")); \
		ck_assert_str_eq(str(r_, "verdict"), v);                                          \
		ck_assert_str_eq(str(r_, "reason"), why);                                         \
	} while (0)

START_TEST(approve_reject_resume)
{
	uint64_t a, b;
	const shk_val *r;

	open_all(300);
	a = hold_exec(1, "origin");
	b = hold_exec(2, "--force");
	ck_assert(!ans[1].done && !ans[2].done);
	r = op("{\"cmd\":\"list\"}");
	ck_assert_uint_eq(shk_val_len(shk_object_get(r, "pending")), 2);
	ck_assert_str_eq(str(shk_array_at(shk_object_get(r, "pending"), 0), "tool"), "exec:git");
	watch_start();
	EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\",\"operator\":\"alice\"}", (unsigned long long)a),
	          "ALLOW", "hitl_transition:approve");
	ck_assert(ans[1].done && ans[1].allow);
	/* the approved exec starts a tool call: the seq of its decision, the
	 * last entry written */
	ck_assert_uint_eq(ans[1].tool_call, shk_ledger_next_seq(p.ledger) - 1);
	/* the watcher saw decide()'s answer and the resolution, with the operator */
	r = watch_next();
	ck_assert_str_eq(str(r, "event"), "decision");
	ck_assert_str_eq(str(r, "reason"), "hitl_transition:approve");
	ck_assert_str_eq(str(r, "operator"), "alice");
	r = watch_next();
	ck_assert_str_eq(str(r, "event"), "resolved");
	ck_assert_str_eq(str(r, "state"), "approved");
	shk_control_disconnect(&watcher);
	ck_assert(!ans[2].done); /* the other call is not released by it */
	EXPECT_OK(op("{\"cmd\":\"reject\",\"id\":\"%llu\"}", (unsigned long long)b), "DENY", "hitl_transition:reject");
	ck_assert(ans[2].done && !ans[2].allow && ans[2].err == EPERM);
	ck_assert_uint_eq(ans[2].tool_call, 0);
	/* a second resume has no effect and is judged so */
	EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\"}", (unsigned long long)a), "DENY",
	          "policy_violation:duplicate_resume_no_effect");
	EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\"}", (unsigned long long)b), "DENY",
	          "policy_violation:duplicate_resume_no_effect");
	r = op("{\"cmd\":\"list\"}");
	ck_assert_uint_eq(shk_val_len(shk_object_get(r, "pending")), 0);
	r = op("{\"cmd\":\"approve\",\"id\":\"999\"}");
	ck_assert_ptr_nonnull(strstr(str(r, "error"), "no call 999"));
	check_log();
}
END_TEST

START_TEST(modify_connect_only)
{
	uint64_t e, c;
	const shk_val *r;
	const struct sockaddr_in *to;

	open_all(300);
	e = hold_exec(1, "x");
	c = hold_connect(2);
	r = op("{\"cmd\":\"modify\",\"id\":\"%llu\",\"connect\":\"127.0.0.1:5433\"}", (unsigned long long)e);
	ck_assert_ptr_nonnull(strstr(str(r, "error"), "connect() calls"));
	r = op("{\"cmd\":\"modify\",\"id\":\"%llu\",\"connect\":\"[::1]:5432\"}", (unsigned long long)c);
	ck_assert_ptr_nonnull(strstr(str(r, "error"), "IPv4 destination"));
	r = op("{\"cmd\":\"modify\",\"id\":\"%llu\",\"connect\":\"10.9.9.9:5432\"}", (unsigned long long)c);
	ck_assert_ptr_nonnull(strstr(str(r, "error"), "the policy denies"));
	ck_assert(!ans[2].done);
	EXPECT_OK(op("{\"cmd\":\"modify\",\"id\":\"%llu\",\"connect\":\"127.0.0.1:5433\",\"operator\":\"bob\"}",
	             (unsigned long long)c), "ALLOW", "hitl_transition:modify_successor");
	ck_assert(ans[2].done && ans[2].allow);
	to = (const struct sockaddr_in *)&ans[2].to;
	ck_assert_int_eq(to->sin_family, AF_INET);
	ck_assert_int_eq(ntohs(to->sin_port), 5433);
	ck_assert_uint_eq(ntohl(to->sin_addr.s_addr), 0x7f000001);
	EXPECT_OK(op("{\"cmd\":\"reject\",\"id\":\"%llu\"}", (unsigned long long)e), "DENY", "hitl_transition:reject");
	check_log();
}
END_TEST

START_TEST(defer_escalate_then_approve)
{
	uint64_t a;
	const shk_val *r;

	open_all(300);
	a = hold_exec(1, "x");
	EXPECT_OK(op("{\"cmd\":\"defer\",\"id\":\"%llu\"}", (unsigned long long)a), "HITL",
	          "hitl_transition:defer_escalate");
	ck_assert(!ans[1].done);
	r = op("{\"cmd\":\"list\"}");
	ck_assert_str_eq(str(shk_array_at(shk_object_get(r, "pending"), 0), "state"), "deferred");
	EXPECT_OK(op("{\"cmd\":\"escalate\",\"id\":\"%llu\",\"operator\":\"carol\"}", (unsigned long long)a), "HITL",
	          "hitl_transition:defer_escalate");
	ck_assert(!ans[1].done);
	EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\",\"operator\":\"dave\"}", (unsigned long long)a), "ALLOW",
	          "hitl_transition:approve");
	ck_assert(ans[1].done && ans[1].allow);
	check_log();
}
END_TEST

START_TEST(wrong_digest_and_reset)
{
	uint64_t a;
	const shk_val *r;

	open_all(300);
	a = hold_exec(1, "x");
	r = op("{\"cmd\":\"approve\",\"id\":\"%llu\",\"digest\":\"0123\"}", (unsigned long long)a);
	ck_assert_ptr_nonnull(strstr(str(r, "error"), "--digest"));
	ck_assert(!ans[1].done);
	EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\",\"digest\":\"%064d\"}", (unsigned long long)a, 0), "DENY",
	          "hitl_transition:digest_mismatch");
	ck_assert(ans[1].done && !ans[1].allow);
	r = op("{\"cmd\":\"reset\",\"operator\":\"erin\"}");
	ck_assert_msg(shk_val_bool(shk_object_get(r, "ok")), "%s", str(r, "error"));
	r = op("{\"cmd\":\"reset\"}");
	ck_assert_ptr_nonnull(strstr(str(r, "error"), "not tripped"));
	check_log();
}
END_TEST

START_TEST(expiry_cancel_and_many)
{
	uint64_t ids[40];
	int i;

	open_all(1);
	for (i = 0; i < 40; i++)
		ids[i] = hold_exec((uint64_t)(10 + i), i % 2 ? "a" : "b");
	ck_assert_uint_eq(shk_hitl_waiting(h), 40);
	/* the thread of 10 was interrupted: cancelled, never answered */
	ans[10].gone = true;
	shk_hitl_tick(h);
	ck_assert_uint_eq(shk_hitl_waiting(h), 39);
	ck_assert(!ans[10].done);
	/* approve the rest in reverse order, except 11 which expires */
	for (i = 39; i >= 2; i--)
		EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\"}", (unsigned long long)ids[i]), "ALLOW",
		          "hitl_transition:approve");
	for (i = 12; i < 50; i++)
		ck_assert(ans[i].done && ans[i].allow);
	sleep(1);
	shk_hitl_tick(h);
	ck_assert(ans[11].done && !ans[11].allow);
	ck_assert_uint_eq(shk_hitl_waiting(h), 0);
	EXPECT_OK(op("{\"cmd\":\"approve\",\"id\":\"%llu\"}", (unsigned long long)ids[1]), "DENY",
	          "policy_violation:duplicate_resume_no_effect");
	check_log();
}
END_TEST

START_TEST(closing_cancels)
{
	open_all(300);
	hold_exec(1, "x");
	check_log(); /* close cancels the held call in the log; replay agrees */
	ck_assert(!ans[1].done);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hitl_pipeline");
	TCase *tc = tcase_create("held");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, approve_reject_resume);
	tcase_add_test(tc, modify_connect_only);
	tcase_add_test(tc, defer_escalate_then_approve);
	tcase_add_test(tc, wrong_digest_and_reset);
	tcase_add_test(tc, expiry_cancel_and_many);
	tcase_add_test(tc, closing_cancels);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
