/* SPDX-License-Identifier: MIT */
/*
 * Live test of `shackle attach` (src/cli/cmd_attach.c, attach_hitl.c, linked
 * in directly): a cgroup with a workload that connects to 127.0.0.1 only; the
 * static deny holds in the kernel, a repeat loop is stopped by decide() and
 * the stateful deny reaches the kernel, every call is in the audit log and the
 * log verifies; with trip_on_deny the breaker stops all network calls and
 * kills execs. Human approval: a "hitl" destination is refused, listed on the
 * operator channel, approved, its retry passes once, the next is held again;
 * rejected and expired calls stay refused. Host rules are re-resolved (a
 * private /etc/hosts for the attach process) and the kernel follows.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/ebpf.h>
#include <shackle/json.h>

#include "cli/commands.h"
#include "ebpf_fixture.h"
#include "supervise/control.h"
#include "testutil.h"

void shk_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shackle %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char parent[1024], dir[] = "/tmp/shk-attach-XXXXXX", cg[2048], policy[128], audit_log[128], key[128];
static char ctl_path[160], hosts[160];
static char cg_arg[2048]; /* cg spelled another way: attach canonicalises it */
static int cg_fd = -1, lst[3];
static uint16_t port[3]; /* 0: denied by rule, 1: the repeated one, 2: another allowed */
static uint64_t last_trips;

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 }, NULL);
}

static uint16_t listen_loopback(int *ret_fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 64), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_fd = fd;
	return ntohs(a.sin_port);
}

static int try_connect(uint16_t p)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), r;

	r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static uint32_t attached(void)
{
	uint32_t ids[8];
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)cg_fd;
	a.query.attach_type = BPF_CGROUP_INET4_CONNECT;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = 8;
	return syscall(__NR_bpf, BPF_PROG_QUERY, &a, sizeof(a)) == 0 ? a.query.prog_cnt : 0;
}

static void write_policy(bool trip)
{
	FILE *f = fopen(policy, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1,\n"
		   " \"guard\": {\"max_repeat_calls\": 2, \"trip_on_deny\": %s},\n"
		   " \"exec\": {\"default\": \"allow\", \"rules\": []},\n"
		   " \"net\": {\"default\": \"deny\", \"rules\": [\n"
		   "  {\"name\": \"denied\", \"cidr\": \"127.0.0.1/32\", \"port\": %u, \"action\": \"deny\"},\n"
		   "  {\"name\": \"loopback\", \"cidr\": \"127.0.0.0/8\", \"action\": \"allow\","
		   " \"cost_usd\": 0.01}]}}\n", trip ? "true" : "false", port[0]);
	ck_assert_int_eq(fclose(f), 0);
}

/* Start `shackle attach` in a child and wait until its programs are attached.
 * With private_hosts, the child sees the test's hosts file as /etc/hosts. */
static pid_t start_attach_with(bool exec, bool private_hosts)
{
	char *argv[] = { "attach", "--cgroup", cg_arg, "--policy", policy, "--audit", audit_log,
			 "--key", key, "--duration", "60", "--control", ctl_path,
			 "--resolve-every", "1", exec ? "--exec" : NULL, NULL };
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (private_hosts && (unshare(CLONE_NEWNS) < 0 ||
				      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
				      mount(hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0)) {
			perror("private /etc/hosts");
			_exit(3);
		}
		_exit(shk_cmd_attach(exec ? 16 : 15, argv));
	}
	for (int i = 0; i < 500 && attached() == 0; i++)
		sleep_ms(10);
	ck_assert_uint_ge(attached(), 1);
	return pid;
}

static pid_t start_attach(bool exec)
{
	return start_attach_with(exec, false);
}

static int stop_attach(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_uint_eq(attached(), 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* 0 when /bin/true ran in a child, 128+N when signal N killed it. */
static int run_true(void)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The workload, inside the cgroup: results[i] is the errno of call i. */
static void workload(int results[10])
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int r[10];

		if (shk_cgroup_enter(cg, getpid()) < 0)
			_exit(1);
		r[0] = try_connect(port[0]);
		for (int i = 1; i < 8; i++) {
			r[i] = try_connect(port[1]);
			sleep_ms(150); /* time for user space to judge and push */
		}
		r[8] = try_connect(port[2]);
		r[9] = run_true();
		_exit(write(p[1], r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	memset(results, 0xff, 10 * sizeof(int));
	ck_assert_int_eq(read(p[0], results, 10 * sizeof(int)), 10 * sizeof(int));
	close(p[0]);
	waitpid(pid, NULL, 0);
}

static void verify_log_min(uint64_t min)
{
	const char *paths[] = { audit_log };
	uint8_t pk[SHK_ED25519_PUBLIC_LEN];
	char pub[160];
	shk_verify_options vo = { .live = false };
	static shk_verify_report rep;
	static shk_replay_report rr;

	shk_key_error kerr;

	snprintf(pub, sizeof(pub), "%s/k.pub", dir);
	ck_assert_int_eq(shk_pubkey_load_file(pub, pk, &kerr), 0);
	ck_assert_int_eq(shk_verify_files(paths, 1, pk, &vo, &rep), 0);
	ck_assert_msg(rep.result == SHK_VERIFY_OK, "audit: %s: %s",
		      shk_verify_class_name(rep.result), rep.nfindings ? rep.findings[0].detail : "");
	ck_assert_uint_ge(rep.entries, min);
	/* And the session code reproduces every logged verdict. */
	ck_assert_int_eq(shk_replay_files(paths, 1, &rr), 0);
	ck_assert_msg(rr.result == SHK_REPLAY_OK, "replay: %s at line %lu: %s",
		      shk_replay_result_name(rr.result), (unsigned long)rr.line, rr.detail);
	ck_assert_uint_ge(rr.decisions, min);
	last_trips = rr.breaker_trips;
}

static void verify_log(void)
{
	verify_log_min(9);
}

static void setup(void)
{
	char prefix[64];
	shk_key_error kerr;
	shk_key *k = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(policy, sizeof(policy), "%s/policy.json", dir);
	snprintf(audit_log, sizeof(audit_log), "%s/audit.jsonl", dir);
	snprintf(prefix, sizeof(prefix), "%s/k", dir);
	snprintf(key, sizeof(key), "%s.key", prefix);
	snprintf(ctl_path, sizeof(ctl_path), "%s/ctl.sock", dir);
	snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
	ck_assert_int_eq(shk_key_generate(&k), 0);
	ck_assert_int_eq(shk_key_write_files(k, prefix, &kerr), 0);
	shk_key_free(k);
	snprintf(cg, sizeof(cg), "%s/t-%d", parent, (int)getpid());
	snprintf(cg_arg, sizeof(cg_arg), "%s//./t-%d/", parent, (int)getpid());
	ck_assert_int_eq(mkdir(cg, 0755), 0);
	cg_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(cg_fd, 0);
	for (int i = 0; i < 3; i++)
		port[i] = listen_loopback(&lst[i]);
}

static void teardown(void)
{
	char cmd[200];

	for (int i = 0; i < 3; i++)
		close(lst[i]);
	close(cg_fd);
	ck_assert_int_eq(shk_cgroup_remove(cg), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

START_TEST(test_repeat_loop_is_stopped_in_the_kernel)
{
	int r[10];
	pid_t pid;

	write_policy(false);
	pid = start_attach(false);
	workload(r);
	ck_assert_int_eq(stop_attach(pid), 0);
	ck_assert_int_eq(r[0], EPERM);  /* static deny, in the kernel */
	ck_assert_int_eq(r[1], 0);      /* first calls of the loop pass */
	ck_assert_int_eq(r[2], 0);
	ck_assert_int_eq(r[5], EPERM);  /* decide() stopped the loop, the kernel enforces */
	ck_assert_int_eq(r[6], EPERM);
	ck_assert_int_eq(r[7], EPERM);
	ck_assert_int_eq(r[8], 0);      /* other destinations still pass (no trip) */
	ck_assert_int_eq(r[9], 0);      /* no --exec: execs are not touched */
	verify_log();
	ck_assert_uint_eq(last_trips, 0);
}
END_TEST

START_TEST(test_breaker_trip_denies_everything)
{
	int r[10];
	pid_t pid;

	write_policy(true);
	pid = start_attach(true);
	workload(r);
	ck_assert_int_eq(stop_attach(pid), 0);
	ck_assert_int_eq(r[1], 0);
	ck_assert_int_eq(r[7], EPERM);
	ck_assert_int_eq(r[8], EPERM); /* breaker: every destination */
	ck_assert_int_eq(r[9], 128 + SIGKILL); /* and every exec */
	verify_log();
	ck_assert_uint_eq(last_trips, 1);
}
END_TEST


/* ---- human approval -------------------------------------------------------- */

/* A process in the cgroup that connects when told to: the port goes in, the
 * errno (0: connected) comes back. */
struct agent {
	pid_t pid;
	int cmd, res;
};

static void agent_start(struct agent *ag)
{
	int c[2], r[2];

	ck_assert_int_eq(pipe(c), 0);
	ck_assert_int_eq(pipe(r), 0);
	ag->pid = fork();
	ck_assert_int_ge(ag->pid, 0);
	if (ag->pid == 0) {
		uint16_t p;

		close(c[1]);
		close(r[0]);
		if (shk_cgroup_enter(cg, getpid()) < 0)
			_exit(1);
		while (read(c[0], &p, sizeof(p)) == sizeof(p)) {
			int e = try_connect(p);
			if (write(r[1], &e, sizeof(e)) != sizeof(e))
				_exit(1);
		}
		_exit(0);
	}
	close(c[0]);
	close(r[1]);
	ag->cmd = c[1];
	ag->res = r[0];
}

static int agent_connect(struct agent *ag, uint16_t p)
{
	int e = -1;

	ck_assert_int_eq(write(ag->cmd, &p, sizeof(p)), sizeof(p));
	ck_assert_int_eq(read(ag->res, &e, sizeof(e)), sizeof(e));
	return e;
}

static void agent_stop(struct agent *ag)
{
	close(ag->cmd);
	close(ag->res);
	waitpid(ag->pid, NULL, 0);
}

/* One request on the operator channel; the response object lives in doc. */
static const shk_val *ctl(shk_doc *doc, const char *request)
{
	struct shk_control_client c;
	shk_parse_error perr;
	shk_val *req = NULL, *resp = NULL;

	ck_assert_int_eq(shk_json_parse(doc, request, strlen(request), "request", &req, &perr), 0);
	ck_assert_int_eq(shk_control_connect(ctl_path, &c), 0);
	ck_assert_int_eq(shk_control_send(&c, req), 0);
	ck_assert_int_eq(shk_control_recv(&c, doc, 5000, &resp), 0);
	shk_control_disconnect(&c);
	return resp;
}

/* The held calls, once there are n of them (events arrive within 100 ms). */
static const shk_val *pending(shk_doc *doc, size_t n)
{
	const shk_val *list = NULL;

	for (int i = 0; i < 100; i++) {
		const shk_val *resp = ctl(doc, "{\"cmd\": \"list\"}");

		ck_assert(shk_val_bool(shk_object_get(resp, "ok")));
		list = shk_object_get(resp, "pending");
		if (shk_val_len(list) == n)
			return list;
		sleep_ms(50);
	}
	ck_abort_msg("expected %zu held calls, have %zu", n, shk_val_len(list));
	return NULL;
}

static const char *decide_on(shk_doc *doc, const char *cmd, const char *id, const char *want_state)
{
	char req[256];
	const shk_val *resp;

	snprintf(req, sizeof(req), "{\"cmd\": \"%s\", \"id\": \"%s\", \"operator\": \"tester\"}", cmd, id);
	resp = ctl(doc, req);
	ck_assert_msg(shk_val_bool(shk_object_get(resp, "ok")), "%s %s: %s", cmd, id,
		      shk_val_str(shk_object_get(resp, "error"), NULL));
	ck_assert_str_eq(shk_val_str(shk_object_get(resp, "state"), NULL), want_state);
	return shk_val_str(shk_object_get(resp, "verdict"), NULL);
}

static bool log_has(const char *needle)
{
	FILE *f = fopen(audit_log, "r");
	char line[16384];
	bool found = false;

	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* A process of the attached cgroup may not use the operator channel (attach
 * has no seccomp layer: the peer check is what stops it approving itself). */
static void agent_is_refused(void)
{
	int st = -1;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct shk_control_client c;
		shk_parse_error perr;
		shk_doc *doc = NULL;
		shk_val *req = NULL, *resp = NULL;
		const char *err;

		if (shk_cgroup_enter(cg, getpid()) < 0 || shk_doc_new(&doc) < 0 ||
		    shk_json_parse(doc, "{\"cmd\": \"list\"}", 15, "req", &req, &perr) < 0 ||
		    shk_control_connect(ctl_path, &c) < 0)
			_exit(2);
		if (shk_control_send(&c, req) == 0 && shk_control_recv(&c, doc, 5000, &resp) == 0) {
			err = shk_val_str(shk_object_get(resp, "error"), NULL);
			_exit(!shk_val_bool(shk_object_get(resp, "ok")) && err && !strncmp(err, "refused", 7) ? 0 : 1);
		}
		_exit(0); /* closed on us: refused too */
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a process of the cgroup used the channel (%d)", st);
}

static void write_hitl_policy(unsigned timeout_s)
{
	FILE *f = fopen(policy, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1,\n"
		   " \"guard\": {\"max_repeat_calls\": 0, \"hitl_timeout_s\": %u},\n"
		   " \"exec\": {\"default\": \"allow\"},\n"
		   " \"net\": {\"default\": \"deny\", \"rules\": [\n"
		   "  {\"name\": \"ask\", \"cidr\": \"127.0.0.1/32\", \"port\": %u, \"action\": \"hitl\","
		   " \"cost_usd\": 0.5},\n"
		   "  {\"name\": \"loopback\", \"cidr\": \"127.0.0.0/8\", \"port\": %u, \"action\": \"allow\"}]}}\n",
		timeout_s, port[0], port[2]);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_hitl_approval_lets_the_retry_pass_once)
{
	struct agent ag;
	shk_doc *doc = NULL;
	const shk_val *list;
	char id1[24], id2[24], id3[24], needle[64];
	pid_t pid;

	write_hitl_policy(60);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	pid = start_attach(false);
	agent_start(&ag);
	ck_assert_int_eq(agent_connect(&ag, port[2]), 0);      /* allowed: passes */
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);  /* needs a person: refused now */
	list = pending(doc, 1);
	agent_is_refused();
	ck_assert_str_eq(shk_val_str(shk_object_get(shk_array_at(list, 0), "tool"), NULL), "net:connect");
	ck_assert_int_eq(shk_val_int(shk_object_get(shk_object_get(shk_array_at(list, 0), "params"), "port")),
			 port[0]);
	snprintf(id1, sizeof(id1), "%s", shk_val_str(shk_object_get(shk_array_at(list, 0), "id"), NULL));
	/* the agent asking again while it waits is not a second held call */
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);
	sleep_ms(200);
	pending(doc, 1);
	ck_assert_str_eq(decide_on(doc, "approve", id1, "released"), "ALLOW");
	pending(doc, 0);
	ck_assert_int_eq(agent_connect(&ag, port[0]), 0);      /* the retry, once */
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);  /* the next one is held again */
	list = pending(doc, 1);
	snprintf(id2, sizeof(id2), "%s", shk_val_str(shk_object_get(shk_array_at(list, 0), "id"), NULL));
	ck_assert_str_ne(id1, id2);
	ck_assert_str_eq(decide_on(doc, "reject", id2, "denied"), "DENY");
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);  /* rejected: nothing installed */
	list = pending(doc, 1);
	snprintf(id3, sizeof(id3), "%s", shk_val_str(shk_object_get(shk_array_at(list, 0), "id"), NULL));
	/* a second approval of an answered call changes nothing */
	ck_assert_str_eq(decide_on(doc, "approve", id1, "approved (no effect)"), "DENY");
	agent_stop(&ag);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log();
	ck_assert(log_has("\"state\":\"approved\""));
	ck_assert(log_has("\"state\":\"rejected\""));
	ck_assert(log_has("\"reason\":\"hitl_transition:approve\""));
	snprintf(needle, sizeof(needle), "\"rule\":\"hitl-approval:%s\"", id1);
	ck_assert_msg(log_has(needle), "the retry's decision (%s) is not in the log", needle);
	(void)id3;
	ck_assert(log_has("\"state\":\"cancelled\"")); /* id3, still held at the end */
	shk_doc_free(doc);
}
END_TEST

START_TEST(test_hitl_expiry_and_unused_approval)
{
	struct agent ag;
	shk_doc *doc = NULL;
	const shk_val *list;
	char id[24];
	pid_t pid;

	write_hitl_policy(1);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	pid = start_attach(false);
	agent_start(&ag);
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);
	pending(doc, 1);
	sleep_ms(1600);
	pending(doc, 0); /* nobody answered: expired */
	ck_assert(log_has("\"state\":\"expired\""));
	/* approved, but the retry comes too late: the approval was withdrawn */
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);
	list = pending(doc, 1);
	snprintf(id, sizeof(id), "%s", shk_val_str(shk_object_get(shk_array_at(list, 0), "id"), NULL));
	ck_assert_str_eq(decide_on(doc, "approve", id, "released"), "ALLOW");
	sleep_ms(1800);
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);
	pending(doc, 1);
	agent_stop(&ag);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log_min(4);
	shk_doc_free(doc);
}
END_TEST

/* ---- human approval of an exec (--exec) -------------------------------------- */

/* helper (a copy of /bin/echo) run in the cgroup with argv {"helper",
 * "--token=sekrit1", word}: its wait status, its output in out. */
static int run_helper(const char *helper, const char *word, char *out, size_t len)
{
	int p[2], status = -1;
	ssize_t n, got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		if (shk_cgroup_enter(cg, getpid()) < 0 || dup2(p[1], 1) < 0)
			_exit(100);
		execl(helper, "helper", "--token=sekrit1", word, (char *)NULL);
		_exit(101);
	}
	close(p[1]);
	while (got < (ssize_t)len - 1 && (n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void killed(int status)
{
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
}

static const char *list_id(const shk_val *list, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", shk_val_str(shk_object_get(shk_array_at(list, i), "id"), NULL));
	return buf;
}

/* helper is a copy of /bin/echo whose exec needs a human. */
static void write_exec_policy(char *helper, size_t len, unsigned timeout_s)
{
	FILE *f = fopen(policy, "w");

	snprintf(helper, len, "%s/helper", dir);
	ebpf_copy_file("/bin/echo", helper);
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1, \"guard\": {\"hitl_timeout_s\": %u}, \"redact\": [\"token\"],\n"
		   " \"exec\": {\"default\": \"allow\", \"rules\": [\n"
		   "  {\"name\": \"ask\", \"path\": \"%s\", \"action\": \"hitl\", \"cost_usd\": 0.5}]},\n"
		   " \"net\": {\"default\": \"allow\"}}\n", timeout_s, helper);
	ck_assert_int_eq(fclose(f), 0);
}

static pid_t start_exec_hitl(char *helper, size_t len, unsigned timeout_s, shk_doc **ret_doc)
{
	write_exec_policy(helper, len, timeout_s);
	ck_assert_int_eq(shk_doc_new(ret_doc), 0);
	return start_attach(true);
}

/*
 * A HITL exec under --exec is killed and held; approving it lets exactly one
 * exec of that image with that argv run (a changed argv is killed and held
 * again, a second identical one too); a rejected one stays killed. The
 * listing shows path, argv and cwd, redacted.
 */
START_TEST(test_hitl_exec_approval_lets_one_retry_run)
{
	char helper[256], out[256], id1[24], id2[24], id3[24], id4[24], needle[64];
	const shk_val *list, *params, *argv;
	shk_doc *doc = NULL;
	pid_t pid;

	pid = start_exec_hitl(helper, sizeof(helper), 60, &doc);
	killed(run_helper(helper, "one", out, sizeof(out)));
	ck_assert_str_eq(out, "");
	list = pending(doc, 1);
	list_id(list, 0, id1, sizeof(id1));
	params = shk_object_get(shk_array_at(list, 0), "params");
	ck_assert_str_eq(shk_val_str(shk_object_get(params, "path"), NULL), helper);
	ck_assert_ptr_nonnull(shk_object_get(params, "cwd"));
	argv = shk_object_get(params, "argv");
	ck_assert_uint_eq(shk_val_len(argv), 3);
	ck_assert_str_eq(shk_val_str(shk_array_at(argv, 1), NULL), "--token=[REDACTED]");
	ck_assert_str_eq(shk_val_str(shk_array_at(argv, 2), NULL), "one");
	/* the same exec again while it waits is not a second held call */
	killed(run_helper(helper, "one", out, sizeof(out)));
	sleep_ms(200);
	pending(doc, 1);
	ck_assert_str_eq(decide_on(doc, "approve", id1, "released"), "ALLOW");
	pending(doc, 0);
	/* another argv is not the approved exec: killed, and held on its own */
	killed(run_helper(helper, "two", out, sizeof(out)));
	list = pending(doc, 1);
	list_id(list, 0, id2, sizeof(id2));
	ck_assert_str_ne(id1, id2);
	/* the approved one runs, once */
	ck_assert_int_eq(run_helper(helper, "one", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "--token=sekrit1 one\n");
	killed(run_helper(helper, "one", out, sizeof(out)));
	list = pending(doc, 2);
	list_id(list, 1, id3, sizeof(id3));
	ck_assert_str_ne(id3, id2);
	ck_assert_str_eq(decide_on(doc, "reject", id3, "denied"), "DENY");
	killed(run_helper(helper, "one", out, sizeof(out))); /* rejected: nothing installed */
	list = pending(doc, 2);
	list_id(list, 1, id4, sizeof(id4));
	ck_assert_str_ne(id4, id3);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log_min(6);
	ck_assert(log_has("\"state\":\"approved\""));
	ck_assert(log_has("\"state\":\"rejected\""));
	snprintf(needle, sizeof(needle), "\"rule\":\"hitl-approval:%s\"", id1);
	ck_assert_msg(log_has(needle), "the retry's decision (%s) is not in the log", needle);
	ck_assert(!log_has("sekrit1"));
	shk_doc_free(doc);
}
END_TEST

/* Expired: stays killed; an approval nobody uses is withdrawn after
 * hitl_timeout_s; an argv longer than the kernel compares is never held. */
START_TEST(test_hitl_exec_expiry_and_long_argv)
{
	char helper[256], out[64], id[24], word[600];
	const shk_val *list;
	shk_doc *doc = NULL;
	pid_t pid;

	pid = start_exec_hitl(helper, sizeof(helper), 1, &doc);
	killed(run_helper(helper, "one", out, sizeof(out)));
	pending(doc, 1);
	sleep_ms(1600);
	pending(doc, 0); /* nobody answered: expired */
	ck_assert(log_has("\"state\":\"expired\""));
	killed(run_helper(helper, "one", out, sizeof(out)));
	list = pending(doc, 1);
	ck_assert_str_eq(decide_on(doc, "approve", list_id(list, 0, id, sizeof(id)), "released"), "ALLOW");
	sleep_ms(1800); /* the approval is withdrawn unused */
	killed(run_helper(helper, "one", out, sizeof(out)));
	list = pending(doc, 1);
	ck_assert_str_ne(list_id(list, 0, out, sizeof(out)), id);
	sleep_ms(1600);
	pending(doc, 0);
	memset(word, 'x', sizeof(word) - 1);
	word[sizeof(word) - 1] = 0;
	killed(run_helper(helper, word, out, sizeof(out)));
	sleep_ms(300);
	pending(doc, 0); /* cannot be bound to its argv: blocked at once */
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log_min(4);
	shk_doc_free(doc);
}
END_TEST

START_TEST(test_reset_closes_the_kernel_breaker)
{
	struct agent ag;
	shk_doc *doc = NULL;
	const shk_val *resp;
	int tries = 0;
	pid_t pid;

	write_policy(true); /* max_repeat_calls 2, trip_on_deny */
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	pid = start_attach(false);
	agent_start(&ag);
	while (agent_connect(&ag, port[1]) == 0 && ++tries < 50)
		sleep_ms(100);
	ck_assert_int_lt(tries, 50);
	sleep_ms(200);
	ck_assert_int_eq(agent_connect(&ag, port[2]), EPERM); /* the breaker: everything */
	resp = ctl(doc, "{\"cmd\": \"reset\", \"operator\": \"tester\"}");
	ck_assert_msg(shk_val_bool(shk_object_get(resp, "ok")), "reset: %s",
		      shk_val_str(shk_object_get(resp, "error"), NULL));
	sleep_ms(300);
	ck_assert_int_eq(agent_connect(&ag, port[2]), 0);     /* closed in the kernel too */
	ck_assert_int_eq(agent_connect(&ag, port[1]), EPERM); /* the loop's own deny stays */
	agent_stop(&ag);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log_min(4);
	/* the refused repeat after the reset is still a repeat: it trips again */
	ck_assert_uint_eq(last_trips, 2);
	ck_assert(log_has("\"state\":\"breaker_reset\""));
	shk_doc_free(doc);
}
END_TEST

/* ---- replacing the kernel rules while attached --------------------------------- */

static void rule(struct shk_ebpf_net_rule *r, uint8_t net8, unsigned prefix, uint16_t lo, uint16_t hi,
		 uint8_t action)
{
	memset(r, 0, sizeof(*r));
	r->family = AF_INET;
	r->addr[0] = 127;
	r->addr[3] = net8;
	r->prefix = prefix;
	r->port_lo = lo;
	r->port_hi = hi;
	r->ops = SHK_EBPF_OP_ALL;
	r->action = action;
	r->tool_id = SHK_EBPF_NO_TOOL;
}

/* errno of one UDP connect to 127.0.0.X:p from a child in the cgroup */
static int udp_connect_in_cgroup(uint8_t x, uint16_t p)
{
	int st = 0;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p),
					 .sin_addr.s_addr = htonl(0x7f000000u | x) };
		int fd;

		/* the socket belongs to the cgroup it is made in: enter first */
		if (shk_cgroup_enter(cg, getpid()) < 0 || (fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
			_exit(255);
		_exit(connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? errno : 0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* UDP connects to 127.0.0.1:p for ms milliseconds: how many were refused. */
static void hammer(uint16_t p, long ms, int out)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timespec t0, t;
	long refused = 0, calls = 0, r[2];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		refused += connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno == EPERM;
		calls++;
		close(fd);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	r[0] = refused;
	r[1] = calls;
	_exit(write(out, r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

/*
 * 127.0.0.1:P is allowed by both rule sets, through different prefixes:
 *   A: allow 127.0.0.1/32 port P, deny 127.0.0.0/8
 *   B: allow 127.0.0.0/8 port P
 * A naive replacement (clear, fill; or the /8 first) refuses it for a moment
 * in both directions. shk_ebpf_update_net_rules never does.
 */
START_TEST(test_rule_update_has_no_window)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_DENY, .report_allowed = false };
	struct shk_ebpf_net_rule a[2], b[1];
	long res[2] = { -1, -1 };
	int fds[2], flips = 0;
	uint16_t p = 40000 + (uint16_t)(getpid() % 20000);
	shk_ebpf *e = NULL;
	pid_t child;

	rule(&a[0], 1, 32, p, p, SHK_EBPF_ALLOW);
	rule(&a[1], 0, 8, 0, 65535, SHK_EBPF_DENY);
	rule(&b[0], 0, 8, p, p, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_open(&o, &e), 0);
	ck_assert_int_eq(shk_ebpf_set_net_rules(e, a, 2), 0);
	ck_assert_int_eq(shk_ebpf_attach(e, cg_fd), 0);
	ck_assert_int_eq(udp_connect_in_cgroup(1, p), 0);
	ck_assert_int_eq(udp_connect_in_cgroup(2, p), EPERM);
	ck_assert_int_eq(pipe(fds), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(fds[0]);
		if (shk_cgroup_enter(cg, getpid()) < 0)
			_exit(1);
		hammer(p, 1500, fds[1]);
	}
	close(fds[1]);
	sleep_ms(50);
	while (waitpid(child, NULL, WNOHANG) == 0 && flips < 100000) {
		ck_assert_int_eq(shk_ebpf_update_net_rules(e, flips % 2 ? a : b, flips % 2 ? 2 : 1), 0);
		flips++;
	}
	ck_assert_int_eq(read(fds[0], res, sizeof(res)), sizeof(res));
	close(fds[0]);
	waitpid(child, NULL, 0);
	/* the rules really change: 127.0.0.2:P is denied by A, allowed by B */
	ck_assert_int_eq(shk_ebpf_update_net_rules(e, a, 2), 0);
	ck_assert_int_eq(udp_connect_in_cgroup(2, p), EPERM);
	ck_assert_int_eq(shk_ebpf_update_net_rules(e, b, 1), 0);
	ck_assert_int_eq(udp_connect_in_cgroup(2, p), 0);
	shk_ebpf_free(e);
	ck_assert_int_gt(flips, 100);
	ck_assert_int_gt(res[1], 1000);
	ck_assert_msg(res[0] == 0, "%ld of %ld connects refused during %d rule replacements", res[0],
		      res[1], flips);
}
END_TEST

/* ---- host rules follow the resolver ------------------------------------------ */

static void write_hosts(const char *text)
{
	FILE *f = fopen(hosts, "w"); /* same inode: the bind mount shows it */

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Connects until the answer is want (at most 8 s); returns how many tries. */
static int until(struct agent *ag, int want)
{
	for (int i = 1; i <= 80; i++) {
		if (agent_connect(ag, port[1]) == want)
			return i;
		sleep_ms(100);
	}
	ck_abort_msg("connect never answered %d", want);
	return 0;
}

START_TEST(test_host_rules_are_refreshed)
{
	FILE *f = fopen(policy, "w");
	struct agent ag;
	pid_t pid;

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1, \"guard\": {\"max_repeat_calls\": 0},\n"
		   " \"exec\": {\"default\": \"allow\"},\n"
		   " \"net\": {\"default\": \"deny\", \"rules\": [\n"
		   "  {\"name\": \"by-name\", \"host\": \"shk-refresh.test\", \"port\": %u, \"action\": \"allow\"},\n"
		   "  {\"name\": \"other\", \"cidr\": \"127.0.0.1/32\", \"port\": %u, \"action\": \"allow\"}]}}\n",
		port[1], port[2]);
	ck_assert_int_eq(fclose(f), 0);
	write_hosts("127.0.0.2 shk-refresh.test\n");
	pid = start_attach_with(false, true);
	agent_start(&ag);
	ck_assert_int_eq(agent_connect(&ag, port[1]), EPERM); /* the name is elsewhere */
	write_hosts("127.0.0.1 shk-refresh.test\n");
	until(&ag, 0);
	/* a second address for the name: 127.0.0.1 stays allowed throughout */
	write_hosts("127.0.0.1 shk-refresh.test\n127.0.0.3 shk-refresh.test\n");
	for (int i = 0; i < 30; i++) {
		ck_assert_int_eq(agent_connect(&ag, port[1]), 0);
		ck_assert_int_eq(agent_connect(&ag, port[2]), 0);
		sleep_ms(100);
	}
	write_hosts("127.0.0.2 shk-refresh.test\n");
	until(&ag, EPERM);
	ck_assert_int_eq(agent_connect(&ag, port[2]), 0); /* the other rule never moved */
	/* and back: calls the kernel allowed by the old addresses and the judge
	 * denied by the new ones left no stateful deny behind */
	write_hosts("127.0.0.1 shk-refresh.test\n");
	until(&ag, 0);
	agent_stop(&ag);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log();
}
END_TEST

int main(void)
{
	char self[900];
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	shk_test_require_root();
	if (!shk_ebpf_built())
		shk_test_skip("eBPF support not built: %s", shk_ebpf_off_reason());
	s = suite_create("ebpf-attach");
	tc = tcase_create("attach");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_repeat_loop_is_stopped_in_the_kernel);
	tcase_add_test(tc, test_breaker_trip_denies_everything);
	tcase_add_test(tc, test_hitl_approval_lets_the_retry_pass_once);
	tcase_add_test(tc, test_hitl_expiry_and_unused_approval);
	tcase_add_test(tc, test_hitl_exec_approval_lets_one_retry_run);
	tcase_add_test(tc, test_hitl_exec_expiry_and_long_argv);
	tcase_add_test(tc, test_reset_closes_the_kernel_breaker);
	tcase_add_test(tc, test_host_rules_are_refreshed);
	tcase_add_test(tc, test_rule_update_has_no_window);
	suite_add_tcase(s, tc);
	/* Every test's cgroup lives below this one: removed here whatever a test did. */
	if (shk_cgroup2_self(self, sizeof(self)) < 0)
		shk_test_skip("own cgroup v2 not found in /proc/self/cgroup");
	snprintf(parent, sizeof(parent), "%s/shk-test-attach-%d", self, (int)getpid());
	if (mkdir(parent, 0755) < 0) {
		fprintf(stderr, "mkdir %s: %s\n", parent, strerror(errno));
		return 1;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (shk_cgroup_remove(parent) < 0) {
		fprintf(stderr, "could not remove %s\n", parent);
		failed = 1;
	}
	return failed ? 1 : 0;
}
