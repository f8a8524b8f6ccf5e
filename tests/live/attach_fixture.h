/* SPDX-License-Identifier: MIT */
/*
 * Shared by the `shackle attach` live tests (test_ebpf_attach.c,
 * test_ebpf_attach_hitl.c; cmd_attach.c and src/attach are linked in):
 * a per-test directory with policy, key and log, a cgroup with three
 * loopback listeners, attach started in a child, an agent process in the
 * cgroup, the operator channel, the audit log. Header-only; one per test
 * executable (it defines shk_cli_error).
 */
#ifndef SHACKLE_TESTS_ATTACH_FIXTURE_H
#define SHACKLE_TESTS_ATTACH_FIXTURE_H

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
#include "judge/control.h"
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

static inline void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 }, NULL);
}

static inline int try_connect(uint16_t p)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), r;

	r = connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static inline uint32_t attached(void)
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

/* Lines of path that contain needle (0 when path does not exist yet). */
static inline int lines_with(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[16384];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

/* Start `shackle attach` in a child and wait until its programs are attached.
 * With private_hosts, the child sees the test's hosts file as /etc/hosts. */
/* Run in attach's process before it starts, when set (landlock_self). */
static int (*attach_setup)(void);

static inline pid_t start_attach_with(bool exec, bool private_hosts)
{
	char *argv[] = { "attach", "--cgroup", cg_arg, "--policy", policy, "--audit", audit_log,
			 "--key", key, "--duration", "60", "--control", ctl_path,
			 "--resolve-every", "1", exec ? "--exec" : NULL, NULL };
	char err[160];
	pid_t pid;
	int efd;

	/* attach's stderr (its notices of held calls) is kept for the test to
	 * read, and shown in the test's log by stop_attach */
	snprintf(err, sizeof(err), "%s/attach.err", dir);
	const char *ready = exec ? "shackle attach: exec hook: " : "shackle attach: enforcing ";
	int before = lines_with(err, ready);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if ((efd = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0 || dup2(efd, 2) < 0)
			_exit(3);
		if (attach_setup && attach_setup() < 0)
			_exit(3);
		if (private_hosts && (unshare(CLONE_NEWNS) < 0 ||
				      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
				      mount(hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0)) {
			perror("private /etc/hosts");
			_exit(3);
		}
		_exit(shk_cmd_attach(exec ? 16 : 15, argv));
	}
	/* Ready when it says so: the connect hooks are attached before the
	 * exec hook and the rules are all in place (a first exec could run
	 * unjudged on a loaded machine while only the former were there). */
	for (int i = 0; i < 3000 && lines_with(err, ready) <= before; i++)
		sleep_ms(10);
	ck_assert_msg(lines_with(err, ready) > before, "attach never said '%s'", ready);
	ck_assert_uint_ge(attached(), 1);
	return pid;
}

static inline pid_t start_attach(bool exec)
{
	return start_attach_with(exec, false);
}

static inline int stop_attach(pid_t pid)
{
	int status;

	char err[160], line[4096];
	FILE *f;

	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	snprintf(err, sizeof(err), "%s/attach.err", dir);
	if ((f = fopen(err, "r"))) {
		while (fgets(line, sizeof(line), f))
			fputs(line, stderr);
		fclose(f);
	}
	ck_assert_uint_eq(attached(), 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline void verify_log_min(uint64_t min)
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

static inline void verify_log(void)
{
	verify_log_min(9);
}

static inline void setup(void)
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

static inline void teardown(void)
{
	char cmd[200];

	for (int i = 0; i < 3; i++)
		close(lst[i]);
	close(cg_fd);
	ck_assert_int_eq(shk_cgroup_remove(cg), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

/* A process in the cgroup that connects when told to: the port goes in, the
 * errno (0: connected) comes back. */
struct agent {
	pid_t pid;
	int cmd, res;
};

static inline void agent_start(struct agent *ag)
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

static inline int agent_connect(struct agent *ag, uint16_t p)
{
	int e = -1;

	ck_assert_int_eq(write(ag->cmd, &p, sizeof(p)), sizeof(p));
	ck_assert_int_eq(read(ag->res, &e, sizeof(e)), sizeof(e));
	return e;
}

static inline void agent_stop(struct agent *ag)
{
	close(ag->cmd);
	close(ag->res);
	waitpid(ag->pid, NULL, 0);
}

/* One request on the operator channel; the response object lives in doc. */
static inline const shk_val *ctl(shk_doc *doc, const char *request)
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
static inline const shk_val *pending(shk_doc *doc, size_t n)
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

static inline const char *decide_on(shk_doc *doc, const char *cmd, const char *id, const char *want_state)
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

static inline bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[16384];
	bool found = false;

	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

static inline bool log_has(const char *needle)
{
	return file_has(audit_log, needle);
}

/* A line attach printed on its stderr (start_attach keeps it). */
static inline bool attach_said(const char *needle)
{
	char err[160];

	snprintf(err, sizeof(err), "%s/attach.err", dir);
	return file_has(err, needle);
}

static inline void write_hitl_policy(unsigned timeout_s)
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

/* helper (a copy of /bin/echo) run in the cgroup with argv {"helper",
 * "--token=sekrit1", word}: its wait status, its output in out. */
static inline int run_helper(const char *helper, const char *word, char *out, size_t len)
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

static inline void killed(int status)
{
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
}

static inline const char *list_id(const shk_val *list, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", shk_val_str(shk_object_get(shk_array_at(list, i), "id"), NULL));
	return buf;
}

/* helper is a copy of /bin/echo whose exec needs a human. */
static inline void write_exec_policy(char *helper, size_t len, unsigned timeout_s)
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

static inline pid_t start_exec_hitl(char *helper, size_t len, unsigned timeout_s, shk_doc **ret_doc)
{
	write_exec_policy(helper, len, timeout_s);
	ck_assert_int_eq(shk_doc_new(ret_doc), 0);
	return start_attach(true);
}

#endif
