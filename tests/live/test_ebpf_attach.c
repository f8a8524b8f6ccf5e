/* SPDX-License-Identifier: MIT */
/*
 * Live test of `shackle attach` (src/cli/cmd_attach.c and src/attach, linked
 * in directly): a cgroup with a workload that connects to 127.0.0.1 only; the
 * static deny holds in the kernel, a repeat loop is stopped by decide() and
 * the stateful deny reaches the kernel, every call is in the audit log and the
 * log verifies; with trip_on_deny the breaker stops all network calls and
 * kills execs. Human approval: a "hitl" destination is refused, listed on the
 * operator channel, approved, its retry passes once, the next is held again;
 * rejected and expired calls stay refused. Host rules are re-resolved (a
 * private /etc/hosts for the attach process) and the kernel follows.
 */
#include "attach_fixture.h"

static void write_policy(bool trip)
{
	FILE *f = fopen(policy, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1,\n"
		   " \"redact\": [\"cgroup\"],\n"
		   " \"guard\": {\"max_repeat_calls\": 2, \"trip_on_deny\": %s},\n"
		   " \"exec\": {\"default\": \"allow\", \"rules\": []},\n"
		   " \"net\": {\"default\": \"deny\", \"rules\": [\n"
		   "  {\"name\": \"denied\", \"cidr\": \"127.0.0.1/32\", \"port\": %u, \"action\": \"deny\"},\n"
		   "  {\"name\": \"loopback\", \"cidr\": \"127.0.0.0/8\", \"action\": \"allow\","
		   " \"cost_usd\": 0.01}]}}\n", trip ? "true" : "false", port[0]);
	ck_assert_int_eq(fclose(f), 0);
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
	/* session_start's command line is redacted as shackle-run's is */
	ck_assert(log_has("\"--cgroup\",\"[REDACTED:"));
	ck_assert(!log_has("\"--cgroup\",\"/"));
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

START_TEST(test_hitl_approval_lets_the_retry_pass_once)
{
	struct agent ag;
	shk_doc *doc = NULL;
	const shk_val *list;
	char id1[24], id2[24], id3[24], needle[160];
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
	/* attach said on its stderr what waited, how to approve it, what became of it */
	snprintf(needle, sizeof(needle), "shackle attach: held %s: net:connect tcp 127.0.0.1 port %u -- shackle approve %s ",
		 id1, port[0], id1);
	ck_assert_msg(attach_said(needle), "attach's stderr lacks '%s'", needle);
	snprintf(needle, sizeof(needle), "shackle attach: held %s approved by tester: released, its retry passes once", id1);
	ck_assert_msg(attach_said(needle), "attach's stderr lacks '%s'", needle);
	snprintf(needle, sizeof(needle), "shackle attach: held %s rejected by tester: denied", id2);
	ck_assert_msg(attach_said(needle), "attach's stderr lacks '%s'", needle);
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
	ck_assert_str_eq(shk_val_str(shk_array_at(argv, 1), NULL), "--token=[REDACTED:7]"); /* sekrit1 */
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

/* In the cgroup, in a network namespace where no socket mark can be made
 * (net.core.optmem_max 0 bounds a socket's storage): a listen(). */
static int listen_unmarkable(void)
{
	int fd;

	if (shk_cgroup_enter(cg, getpid()) < 0 || unshare(CLONE_NEWNET) < 0)
		return 1;
	fd = open("/proc/sys/net/core/optmem_max", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		return 2;
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	return fd < 0 || listen(fd, 4) < 0 ? 3 : 0;
}

/*
 * A listener whose mark cannot be made gets nothing from the listen gate:
 * attach says so while it runs, logs it as a kernel refusal and counts it
 * in its stats and in session_end, so that its clients' timeouts have a
 * reason on record.
 */
START_TEST(test_unmarked_listener_is_reported)
{
	pid_t a, l;
	int status;

	write_policy(false);
	a = start_attach(false);
	l = fork();
	ck_assert_int_ge(l, 0);
	if (l == 0)
		_exit(listen_unmarkable());
	ck_assert_int_eq(waitpid(l, &status, 0), l);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "listener status %#x", status);
	for (int i = 0; i < 50 && !attach_said("1 TCP listener(s) could not be marked"); i++)
		sleep_ms(20);
	ck_assert(attach_said("1 TCP listener(s) could not be marked"));
	ck_assert_int_eq(stop_attach(a), 0);
	ck_assert(attach_said("1 TCP listeners unmarked"));
	ck_assert(log_has("\"origin\":\"kernel\""));
	ck_assert(log_has("\"what\":\"listener_unmarked\""));
	ck_assert(log_has("\"listeners_unmarked\":1"));
	verify_log_min(0); /* no tool call was made: signed, chained, replayed */
}
END_TEST

/*
 * Network namespaces the listener scan may not enter (here: attach runs in
 * a Landlock domain, and this test's process is outside it) are said,
 * logged as a kernel refusal and counted, with the errno: their listeners
 * from before the attach would get nothing.
 */
START_TEST(test_unentered_netns_is_reported)
{
	const char *said = "could not be entered to mark their TCP listeners (Permission denied)";
	pid_t a;

	if (syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 0)
		shk_test_skip("Landlock is not enabled in this kernel: %s", strerror(errno));
	write_policy(false);
	attach_setup = landlock_self;
	a = start_attach(false);
	attach_setup = NULL;
	for (int i = 0; i < 50 && !attach_said(said); i++)
		sleep_ms(20);
	ck_assert(attach_said(said));
	ck_assert_int_eq(stop_attach(a), 0);
	ck_assert(attach_said("processes' network namespaces not scanned"));
	ck_assert(log_has("\"what\":\"netns_unentered\""));
	ck_assert(log_has("\"netns_unentered\":"));
	verify_log_min(0);
}
END_TEST

int main(void)
{
	char self[900];
	Suite *s;
	TCase *tc;

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
	tcase_add_test(tc, test_unmarked_listener_is_reported);
	tcase_add_test(tc, test_unentered_netns_is_reported);
	suite_add_tcase(s, tc);
	/* Every test's cgroup lives below this one: removed here whatever a test did. */
	if (shk_cgroup2_self(self, sizeof(self)) < 0)
		shk_test_skip("own cgroup v2 not found in /proc/self/cgroup");
	snprintf(parent, sizeof(parent), "%s/shk-test-attach-%d", self, (int)getpid());
	if (mkdir(parent, 0755) < 0) {
		fprintf(stderr, "mkdir %s: %s\n", parent, strerror(errno));
		return 1;
	}
	return ebpf_run_suite(s, parent);
}
