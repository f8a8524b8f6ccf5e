/* SPDX-License-Identifier: MIT */
/*
 * `shackle attach` (the built executable: the gateway module is found beside
 * it) with a policy that has a "models" section and --sdk-socket: a process
 * moved into the attached cgroup makes a model request through the gateway
 * attach printed (allowed, forwarded to a scripted model on loopback with
 * the real key, logged as model:<name>; on 127.0.0.2, so that the kernel's
 * exemption and the judge's must both name the address given), connects
 * straight to that model's
 * address (the policy denies it: refused by the kernel, logged) and asks
 * before a tool over the SDK socket (judged in the same log); its requests
 * without the key are answered 401, logged only up to the cap and counted
 * in session_end. The log
 * verifies and replays with `shackle audit`. Root, cgroup v2, loopback only.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf_fixture.h"
#include "testutil.h"

static char parent[1024], dir[] = "/tmp/shk-attach-src-XXXXXX", cg[2048], pins[128];
static char path_buf[10][256];

static const char *in_dir(int slot, const char *name)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
	return path_buf[slot];
}

/* Whole file into one of two static buffers ("" when absent). */
static const char *slurp(const char *path)
{
	static char buf[2][1 << 16];
	static int which;
	char *b = buf[which ^= 1];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	b[0] = 0;
	if (f) {
		n = fread(b, 1, sizeof(buf[0]) - 1, f);
		fclose(f);
	}
	b[n] = 0;
	return b;
}

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L }, NULL);
}

/* argv run with stdout+stderr into out; cgroup: moved into the cgroup first. */
static pid_t spawn(char *const argv[], const char *out, bool cgroup, bool wait_it, int *status)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		if (cgroup && shk_cgroup_enter(cg, getpid()) < 0)
			_exit(125);
		execv(argv[0], argv);
		_exit(127);
	}
	if (wait_it)
		ck_assert_int_eq(waitpid(pid, status, 0), pid);
	return pid;
}

/* Lines of the log holding every one of the needles. */
static int log_lines(const char *log, const char *a, const char *b)
{
	FILE *f = fopen(log, "r");
	char line[16384];
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, a) && (!b || strstr(line, b));
	fclose(f);
	return n;
}

/* A listener on 127.0.0.2:port outside the cgroup, a connect to it from
 * inside: its errno (0: connected). */
static int connect_errno_after_pin(unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(0x7f000002) };
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, status;
	pid_t pid;

	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 4), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int s = -1;

		/* a socket belongs to the cgroup it was made in: enter first */
		if (shk_cgroup_enter(cg, getpid()) < 0 || (s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			_exit(255);
		_exit(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	close(l);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) != 255);
	return WEXITSTATUS(status);
}

static const char agent_py[] =
	"import json, re, socket, sys, urllib.error, urllib.request\n"
	"err, sock, port, clients = sys.argv[1:5]\n"
	"sys.path.insert(0, clients)\n"
	"import shackle_sdk\n"
	"said = open(err).read()\n"
	"base = re.search(r'ANTHROPIC_BASE_URL=(\\S+)', said).group(1)\n"
	"key = re.search(r'ANTHROPIC_API_KEY=(\\S+)', said).group(1)\n"
	"body = json.dumps({'model': 'claude-attach-test', 'max_tokens': 10,\n"
	"                   'messages': [{'role': 'user', 'content': 'hi'}]}).encode()\n"
	"req = urllib.request.Request(base + '/v1/messages', data=body, headers={\n"
	"    'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json'})\n"
	"with urllib.request.urlopen(req, timeout=20) as r:\n"
	"    print('model', r.status, json.loads(r.read())['stop_reason'], flush=True)\n"
	"codes = set()\n"
	"for i in range(12):  # without the key: 401, logged only for the first 8\n"
	"    try:\n"
	"        urllib.request.urlopen(urllib.request.Request(base + '/v1/messages', data=b'{}'), timeout=20)\n"
	"    except urllib.error.HTTPError as e:\n"
	"        codes.add(e.code)\n"
	"print('unauth', sorted(codes), flush=True)\n"
	"s = socket.socket()\n"
	"try:\n"
	"    s.connect(('127.0.0.1', int(port)))\n"
	"    print('direct connected', flush=True)\n"
	"except OSError as e:\n"
	"    print('direct errno', e.errno, flush=True)\n"
	"c = shackle_sdk.connect(path=sock, agent_id='attached', framework='test')\n"
	"with c.call('web_search', {'q': 'attach'}, estimated_cost_usd=0.01) as call:\n"
	"    call.actual_cost_usd = 0.02\n"
	"print('sdk call ran', flush=True)\n";

START_TEST(test_attach_gateway_and_sdk)
{
	char shackle[4096], dport[16], py[] = "/usr/bin/python3", double_py[4096], clients[4096];
	unsigned gport = 0;
	const char *policy = in_dir(0, "policy.json"), *log = in_dir(1, "audit.jsonl");
	const char *err = in_dir(3, "attach.err"), *sock = in_dir(4, "sdk.sock");
	const char *agent = in_dir(5, "agent.py"), *out = in_dir(6, "agent.out");
	const char *stats = in_dir(7, "stats"), *dout = in_dir(8, "double.out");
	int status;
	pid_t dpid, apid;
	FILE *f;

	snprintf(shackle, sizeof(shackle), "%s", shk_test_build("src/cli/shackle"));
	snprintf(double_py, sizeof(double_py), "%s", shk_test_src("tests/integration/claude_double.py"));
	snprintf(clients, sizeof(clients), "%s", shk_test_src("clients/python"));
	{
		char *kg[] = { shackle, "keygen", "--out", (char *)in_dir(2, "k"), NULL };

		spawn(kg, in_dir(9, "keygen.out"), false, true, &status);
		ck_assert_int_eq(status, 0);
	}
	/* the scripted model, outside the cgroup */
	{
		char *dv[] = { py, double_py, "varied", "--turns", "0", "--stats", (char *)stats, NULL };

		dpid = spawn(dv, dout, false, false, NULL);
	}
	for (int i = 0; i < 500 && !strchr(slurp(dout), '\n'); i++)
		sleep_ms(10);
	ck_assert_msg(sscanf(slurp(dout), "%15[0-9]", dport) == 1, "the double said: %s", slurp(dout));
	f = fopen(policy, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1,\n"
		   " \"guard\": {\"budget_usd\": 1.0, \"max_repeat_calls\": 5, \"trip_on_deny\": false},\n"
		   " \"exec\": {\"default\": \"allow\"},\n \"net\": {\"default\": \"deny\"},\n"
		   " \"models\": {\"prices\": [{\"model\": \"claude-*\", \"input\": 3, \"output\": 15}],\n"
		   "            \"upstream\": {\"anthropic\": \"http://127.0.0.1:%s\"}}}\n", dport);
	ck_assert_int_eq(fclose(f), 0);
	f = fopen(agent, "w");
	ck_assert_ptr_nonnull(f);
	fputs(agent_py, f);
	ck_assert_int_eq(fclose(f), 0);

	ck_assert_int_eq(setenv("ANTHROPIC_API_KEY", "sk-real-attach", 1), 0);
	{
		char *av[] = { shackle, "attach", "--cgroup", cg, "--policy", (char *)policy,
			       "--audit", (char *)log, "--key", (char *)path_buf[2], "--sdk-socket",
			       (char *)sock, "--gateway", "127.0.0.2", "--non-interactive",
			       "--pin", pins, "--duration", "60", NULL };

		snprintf(path_buf[2], sizeof(path_buf[2]), "%s/k.key", dir);
		apid = spawn(av, err, false, false, NULL);
	}
	unsetenv("ANTHROPIC_API_KEY");
	for (int i = 0; i < 1000 && !strstr(slurp(err), "enforcing "); i++)
		sleep_ms(10);
	ck_assert_msg(strstr(slurp(err), "enforcing "), "attach said: %s", slurp(err));
	ck_assert_msg(strstr(slurp(err), "model gateway: http://127.0.0.2:"), "attach said: %s", slurp(err));
	ck_assert_msg(!strstr(slurp(err), "sk-real-attach"), "attach printed the real key: %s", slurp(err));

	{
		char *ag[] = { py, (char *)agent, (char *)err, (char *)sock, dport, clients, NULL };

		spawn(ag, out, true, true, &status);
	}
	kill(apid, SIGTERM);
	ck_assert_int_eq(waitpid(apid, NULL, 0), apid);
	kill(dpid, SIGTERM);
	ck_assert_int_eq(waitpid(dpid, NULL, 0), dpid);
	fprintf(stderr, "attach said:\n%s\nthe agent said:\n%s\n", slurp(err), slurp(out));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "agent status %#x", status);
	ck_assert_ptr_nonnull(strstr(slurp(out), "model 200 end_turn\n"));
	ck_assert_ptr_nonnull(strstr(slurp(out), "direct errno 1\n")); /* EPERM from the connect hook */
	ck_assert_ptr_nonnull(strstr(slurp(out), "sdk call ran\n"));
	ck_assert_ptr_nonnull(strstr(slurp(out), "unauth [401]\n"));
	/* The pins outlive attach, the gateway's exemption does not: something
	 * else listening on its port now is the policy's (denied). */
	ck_assert_int_eq(sscanf(strstr(slurp(err), "model gateway: http://127.0.0.2:"),
				"model gateway: http://127.0.0.2:%u", &gport), 1);
	ck_assert_int_eq(connect_errno_after_pin(gport), EPERM);
	{
		char *dt[] = { shackle, "detach", "--pin", pins, NULL };

		spawn(dt, in_dir(9, "detach.out"), false, true, &status);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "detach: %s", slurp(path_buf[9]));
	}
	/* the model got the one request, with the real key */
	ck_assert_str_eq(slurp(stats), "claude-attach-test turn=0 key=sk-real-attach\n");
	/* one session, one log: the gateway's, the kernel's and the SDK's calls */
	ck_assert_int_eq(log_lines(log, "\"kind\":\"session_start\"", NULL), 1);
	ck_assert_int_eq(log_lines(log, "\"tool\":\"model:claude-attach-test\"", "\"verdict\":\"ALLOW\""), 1);
	ck_assert_int_eq(log_lines(log, "\"tool\":\"net:connect\"", "\"verdict\":\"DENY\""), 1);
	ck_assert_int_eq(log_lines(log, "\"tool\":\"web_search\"", "\"verdict\":\"ALLOW\""), 1);
	/* of the 12 requests without the key 8 are logged, session_end counts all */
	ck_assert_int_eq(log_lines(log, "\"kind\":\"refusal\"", "\"what\":\"wrong_key\""), 8);
	ck_assert_int_eq(log_lines(log, "\"kind\":\"session_end\"", "\"gateway_unauthenticated\":12"), 1);
	/* the connects to the gateway are its transport, never a tool call */
	ck_assert_int_eq(log_lines(log, "\"tool\":\"net:connect\"", NULL), 1);
	{
		char pub[300];
		char *ve[] = { shackle, "audit", "verify", "--pubkey", pub, (char *)log, NULL };
		char *re[] = { shackle, "audit", "replay", "--pubkey", pub, (char *)log, NULL };

		snprintf(pub, sizeof(pub), "%s/k.pub", dir);
		spawn(ve, in_dir(9, "verify.out"), false, true, &status);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "verify: %s", slurp(path_buf[9]));
		spawn(re, in_dir(9, "replay.out"), false, true, &status);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "replay: %s", slurp(path_buf[9]));
	}
}
END_TEST

/* What cannot be served is refused before anything is attached. */
START_TEST(test_attach_sources_refused)
{
	char shackle[4096];
	const char *policy = in_dir(0, "policy.json"), *err = in_dir(3, "attach.err");
	const char *sock = in_dir(4, "taken");
	int status;
	FILE *f;

	snprintf(shackle, sizeof(shackle), "%s", shk_test_build("src/cli/shackle"));
	f = fopen(policy, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"version\": 1, \"net\": {\"default\": \"allow\"}}\n", f);
	ck_assert_int_eq(fclose(f), 0);
	{
		char *av[] = { shackle, "attach", "--cgroup", cg, "--policy", (char *)policy,
			       "--gateway", "127.0.0.1:0", "--audit", (char *)in_dir(1, "a.jsonl"), NULL };

		spawn(av, err, false, true, &status);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %#x: %s", status, slurp(err));
		ck_assert_msg(strstr(slurp(err), "--gateway: ") && strstr(slurp(err), "has no \"models\" section"),
			      "attach said: %s", slurp(err));
	}
	f = fopen(sock, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fclose(f), 0);
	{
		char *av[] = { shackle, "attach", "--cgroup", cg, "--policy", (char *)policy,
			       "--sdk-socket", (char *)sock, "--audit", (char *)in_dir(1, "a.jsonl"), NULL };

		spawn(av, err, false, true, &status);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x: %s", status, slurp(err));
		ck_assert_msg(strstr(slurp(err), "the SDK socket ") && strstr(slurp(err), "File exists"),
			      "attach said: %s", slurp(err));
	}
	/* nothing was attached, no log was begun */
	ck_assert_int_eq(access(in_dir(1, "a.jsonl"), F_OK), -1);
}
END_TEST

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(cg, sizeof(cg), "%s/t-%d", parent, (int)getpid());
	snprintf(pins, sizeof(pins), "/sys/fs/bpf/shk-attach-src-%d", (int)getpid());
	ck_assert_int_eq(mkdir(cg, 0755), 0);
}

static void teardown(void)
{
	char cmd[200];

	if (access(pins, F_OK) == 0) /* a failed test left them */
		(void)shk_ebpf_unpin(pins, NULL, 0);
	ck_assert_int_eq(shk_cgroup_remove(cg), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

int main(void)
{
	Suite *s;
	TCase *tc;

	ebpf_test_parent(parent, sizeof(parent), "attach-sources");
	s = suite_create("ebpf-attach-sources");
	tc = tcase_create("attach");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_attach_gateway_and_sdk);
	tcase_add_test(tc, test_attach_sources_refused);
	suite_add_tcase(s, tc);
	return ebpf_run_suite(s, parent);
}
