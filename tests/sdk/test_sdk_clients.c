/* SPDX-License-Identifier: MIT */
/*
 * The SDK socket end to end: the server on a test judge over the real
 * shk_session (sdk_judge.c), driven by the Python and Node clients
 * (scenarios.py, scenarios.js, the examples of docs/sdk.md). Each case
 * checks the client's view (the script's asserts, its exit status) and the
 * session's (what the judge saw).
 * env: SDK_PYTHON, SDK_NODE, SDK_NPM (set by meson), SHACKLE_SOURCE_ROOT.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "sdk/sdk.h"
#include "sdk_judge.h"
#include "checkrun.h"
#include "testutil.h"

static struct sdk_judge J;
static struct shk_sdk *SDK;
static char TMP[256];

static void serve(const shk_guard_config *g, uint32_t heartbeat_ms)
{
	struct shk_sdk_config cfg = { .heartbeat_ms = heartbeat_ms };
	struct shk_source_judge iface;

	ck_assert_int_eq(sdk_judge_init(&J, g), 0);
	iface = sdk_judge_iface(&J);
	ck_assert_int_eq(shk_sdk_start(&cfg, &iface, &SDK), 0);
}

static void unserve(void)
{
	shk_sdk_stop(SDK);
	sdk_judge_free(&J);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run argv with SHACKLE_SOCKET set, stdout to out (NULL: inherited);
 * its exit status, or -1 after killing it past timeout_s. */
static int run(char *const argv[], const char *out, double timeout_s)
{
	double end = now_s() + timeout_s;
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("SHACKLE_SOCKET", shk_sdk_path(SDK), 1);
		setenv("PYTHONPATH", shk_test_src("clients/python"), 1);
		setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
		if (out) {
			int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd < 0 || dup2(fd, 1) < 0)
				_exit(126);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(10000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *tool(const char *env)
{
	const char *p = getenv(env);

	if (!p || access(p, X_OK) != 0)
		shk_test_skip("%s does not name a program (%s)", env, p ? p : "unset");
	return p;
}

/* shk_test_src() answers in one static buffer: a copy for each use. */
static char *src_at(char *buf, const char *rel)
{
	snprintf(buf, 4096, "%s", shk_test_src(rel));
	return buf;
}

static void py_case(const char *name)
{
	char script[4096];
	char *argv[] = { (char *)tool("SDK_PYTHON"), src_at(script, "tests/sdk/scenarios.py"),
			 (char *)name, NULL };

	int st = run(argv, NULL, 240);

	ck_assert_msg(st == 0, "python case %s failed: status %d", name, st);
}

static void node_case(const char *name)
{
	char dir[4096], script[4096];
	char *argv[] = { (char *)tool("SDK_NODE"), src_at(script, "tests/sdk/scenarios.js"),
			 src_at(dir, "clients/node"), (char *)name, NULL };
	int st = run(argv, NULL, 240);

	ck_assert_msg(st == 0, "node case %s failed: status %d", name, st);
}

static shk_session_info info(void)
{
	shk_session_info i;

	shk_session_get_info(J.ses, &i);
	return i;
}

static void case_budget(void (*drive)(const char *))
{
	shk_guard_config g = sdk_judge_guard();
	shk_session_info i;

	g.budget_usd = 1.0;
	serve(&g, 0);
	drive("budget");
	i = info();
	/* The actual 0.7 of the one call, not its 0.4 estimate. */
	ck_assert_double_eq_tol(i.budget_spent_usd, 0.7, 1e-9);
	ck_assert_uint_eq(i.total_calls, 1);
	ck_assert(i.circuit_tripped);
	unserve();
}

START_TEST(py_budget) { case_budget(py_case); }
END_TEST
START_TEST(node_budget) { case_budget(node_case); }
END_TEST

static void case_repeat(void (*drive)(const char *))
{
	shk_guard_config g = sdk_judge_guard();
	shk_session_info i;

	g.max_repeat_calls = 2;
	serve(&g, 0);
	drive("repeat");
	i = info();
	ck_assert_uint_eq(i.total_calls, 2);
	ck_assert(i.circuit_tripped);
	ck_assert_int_eq(i.trip_reason, SHK_R_MAX_REPEAT_EXCEEDED);
	unserve();
}

START_TEST(py_repeat) { case_repeat(py_case); }
END_TEST
START_TEST(node_repeat) { case_repeat(node_case); }
END_TEST

/* A case where the session must have seen exactly `allowed` calls and no
 * other judgement: refusals before the judge never reach it. */
static void case_counted(void (*drive)(const char *), const char *name, uint32_t heartbeat_ms,
                         unsigned long allowed, unsigned long judged)
{
	shk_guard_config g = sdk_judge_guard();

	g.trip_on_deny = false;
	serve(&g, heartbeat_ms);
	drive(name);
	ck_assert_uint_eq(info().total_calls, allowed);
	ck_assert_uint_eq(atomic_load(&J.judged), judged);
	unserve();
}

/* The replayed nonce reaches the judge, and decide() denies it. */
START_TEST(py_replay) { case_counted(py_case, "replay", 0, 1, 2); }
END_TEST
START_TEST(node_replay) { case_counted(node_case, "replay", 0, 1, 2); }
END_TEST
/* Forged and unknown session ids, malformed and unknown messages: none judged. */
START_TEST(py_forged) { case_counted(py_case, "forged", 0, 1, 1); }
END_TEST
START_TEST(node_forged) { case_counted(node_case, "forged", 0, 1, 1); }
END_TEST
/* Stale: the calls denied as session_stale are refused before the judge. */
START_TEST(py_stale) { case_counted(py_case, "stale", 250, 3, 3); }
END_TEST
START_TEST(node_stale) { case_counted(node_case, "stale", 250, 3, 3); }
END_TEST
/* A registration outlives its connection: resumed on another with its id,
 * the first connection's call is settled at its actual cost there. */
static void case_resume(void (*drive)(const char *))
{
	shk_guard_config g = sdk_judge_guard();

	g.trip_on_deny = false;
	serve(&g, 0);
	drive("resume");
	ck_assert_uint_eq(info().total_calls, 2);
	ck_assert_double_eq_tol(info().budget_spent_usd, 0.3, 1e-9);
	unserve();
}

START_TEST(py_resume) { case_resume(py_case); }
END_TEST
START_TEST(node_resume) { case_resume(node_case); }
END_TEST
START_TEST(py_huge) { case_counted(py_case, "huge", 0, 2, 2); }
END_TEST
START_TEST(node_huge) { case_counted(node_case, "huge", 0, 1, 1); }
END_TEST

#include "flood_probe.h"

START_TEST(py_flood)
{
	shk_guard_config g = sdk_judge_guard();
	struct probe p = { .iface = { 0 } };
	pthread_t t;

	g.trip_on_deny = false;
	serve(&g, 0);
	p.iface = sdk_judge_iface(&J);
	ck_assert_int_eq(pthread_create(&t, NULL, probe_main, &p), 0);
	py_case("flood");
	atomic_store(&p.stop, true);
	pthread_join(t, NULL);
	probe_report(&p);
	ck_assert_int_eq(p.failed, 0);
	ck_assert_msg(p.worst_ms < 1000, "the kernel's path waited %.1f ms on the judge", p.worst_ms);
	ck_assert_msg(still_answers(shk_sdk_path(SDK)), "the server does not answer after the flood");
	unserve();
}
END_TEST

/* An idle acceptor (its poll timed out, no connection came) still stops. */
START_TEST(stop_when_idle)
{
	shk_guard_config g = sdk_judge_guard();

	serve(&g, 0);
	usleep(1500 * 1000);
	unserve();
}
END_TEST

/* The examples of docs/sdk.md, installed as a user would install them. */
static void example(const char *lang, char *const argv[], const char *out_name)
{
	char out[512], text[4096] = "";
	FILE *f;
	size_t n;

	snprintf(out, sizeof(out), "%s/%s", TMP, out_name);
	ck_assert_msg(run(argv, out, 120) == 0, "the %s example failed", lang);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	ck_assert_msg(strstr(text, "search: result for circuit breakers\n"), "%s: %s", lang, text);
	ck_assert_msg(strstr(text, "denied: policy_denied\n"), "%s: %s", lang, text);
	ck_assert_msg(strstr(text, "spent: 0.019 calls: 2\n"), "%s: %s", lang, text);
}

START_TEST(examples_installed)
{
	char py[512], node[512], js[512], script[512], sh[4096], cmd[16384];
	char *install[] = { "/bin/sh", "-c", cmd, NULL };
	char *py_argv[] = { py, script, NULL };
	char *node_argv[] = { node, js, NULL };
	shk_guard_config g = sdk_judge_guard();

	serve(&g, 0);
	snprintf(cmd, sizeof(cmd), "exec sh '%s' '%s' '%s' '%s' '%s' >&2",
		 src_at(sh, "tests/sdk/install_clients.sh"), getenv("SHACKLE_SOURCE_ROOT"), TMP,
		 tool("SDK_PYTHON"), tool("SDK_NPM"));
	ck_assert_msg(run(install, NULL, 280) == 0, "installing the clients failed");
	snprintf(py, sizeof(py), "%s/venv/bin/python", TMP);
	snprintf(script, sizeof(script), "%s/agent.py", TMP);
	example("python", py_argv, "py.out");
	ck_assert_double_eq_tol(info().budget_spent_usd, 0.019, 1e-9);
	unserve();
	serve(&g, 0);
	snprintf(node, sizeof(node), "%s", tool("SDK_NODE"));
	snprintf(js, sizeof(js), "%s/node/agent.js", TMP);
	example("node", node_argv, "node.out");
	ck_assert_double_eq_tol(info().budget_spent_usd, 0.019, 1e-9);
	unserve();
}
END_TEST

/* docs/sdk.md shows the examples the test runs, byte for byte. */
START_TEST(docs_show_examples)
{
	const char *files[] = { "clients/python/examples/agent.py", "clients/node/examples/agent.js" };
	static char doc[65536], ex[16384];
	FILE *f = fopen(shk_test_src("docs/sdk.md"), "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(doc, 1, sizeof(doc) - 1, f);
	doc[n] = '\0';
	fclose(f);
	for (size_t i = 0; i < 2; i++) {
		f = fopen(shk_test_src(files[i]), "r");
		ck_assert_ptr_nonnull(f);
		n = fread(ex, 1, sizeof(ex) - 1, f);
		ex[n] = '\0';
		fclose(f);
		ck_assert_msg(strstr(doc, ex), "docs/sdk.md does not show %s as it is", files[i]);
	}
}
END_TEST

static void make_tmp(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(TMP, sizeof(TMP), "%s/shk-sdk-test-XXXXXX", base && *base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(TMP));
}

static void remove_tmp(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", TMP);
	ck_assert_int_eq(system(cmd), 0);
}

/* One case per test, so that CK_RUN_CASE=py_flood runs one alone. */
static void add_t(Suite *s, const char *name, const TTest *t, double timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, make_tmp, remove_tmp);
	tcase_set_timeout(tc, timeout_s);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

#define ADD(s, t) add_t(s, #t, t, 300)

static Suite *suite(void)
{
	Suite *s = suite_create("sdk_clients");

	ADD(s, docs_show_examples);
	add_t(s, "stop_when_idle", stop_when_idle, 10);
	ADD(s, py_budget);
	ADD(s, node_budget);
	ADD(s, py_repeat);
	ADD(s, node_repeat);
	ADD(s, py_replay);
	ADD(s, node_replay);
	ADD(s, py_forged);
	ADD(s, node_forged);
	ADD(s, py_stale);
	ADD(s, node_stale);
	ADD(s, py_resume);
	ADD(s, node_resume);
	ADD(s, py_huge);
	ADD(s, node_huge);
	ADD(s, py_flood);
	ADD(s, examples_installed);
	return s;
}

int main(void)
{
	/* SIGPIPE is not ignored: the server must not need that of its host. */
	tool("SDK_PYTHON");
	tool("SDK_NODE");
	tool("SDK_NPM");
	return shk_test_run(suite());
}
