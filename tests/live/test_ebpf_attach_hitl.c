/* SPDX-License-Identifier: MIT */
/*
 * Live test of `shackle attach` when things go wrong around human approval
 * (src/cli/cmd_attach.c and src/attach, linked in):
 *  - the operator channel breaks after an approval: the approval is taken
 *    back out of the kernel, the retry is refused (it would have passed with
 *    nobody to log it as approved);
 *  - two held execs of one image with different argv, both approved: each
 *    retry runs once (the kernel keeps both approvals);
 *  - attach fails (the kernel's table of stateful denies is full): the
 *    breaker opens and every call the kernel let through before it is still
 *    judged and logged, with what the kernel did.
 */
#include "attach_fixture.h"

#include <bpf/bpf.h>

/* fd number in pid of the first descriptor for which want(pid, fd) holds, or -1 */
static int fd_of(pid_t pid, bool (*want)(pid_t, int, const void *), const void *arg)
{
	for (int fd = 0; fd < 1024; fd++)
		if (want(pid, fd, arg))
			return fd;
	return -1;
}

/* A copy of pid's descriptor fd in this process. */
static int steal_fd(pid_t pid, int fd)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0), r;

	ck_assert_int_ge(pfd, 0);
	r = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	close(pfd);
	ck_assert_int_ge(r, 0);
	return r;
}

/* Is fd the listening socket bound to path (inode from /proc/net/unix)? */
static bool is_listener(pid_t pid, int fd, const void *path)
{
	char link[64], want[64], line[512], p[64];
	unsigned long ino;
	FILE *f;
	bool found = false;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, fd);
	if ((n = readlink(p, link, sizeof(link) - 1)) < 0)
		return false;
	link[n] = 0;
	f = fopen("/proc/net/unix", "r");
	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		line[strcspn(line, "\n")] = 0;
		if (!sp || strcmp(sp + 1, path) || sscanf(line, "%*s %*s %*s %*s %*s %*s %lu", &ino) != 1)
			continue;
		snprintf(want, sizeof(want), "socket:[%lu]", ino);
		found = strcmp(link, want) == 0;
	}
	fclose(f);
	return found;
}

/* The operator channel's listener fails under attach (a hang-up, as a broken
 * listener reports it): attach sees the channel fail. */
static void break_channel(pid_t attach)
{
	int fd = fd_of(attach, is_listener, ctl_path), mine;

	ck_assert_int_ge(fd, 0);
	mine = steal_fd(attach, fd);
	ck_assert_int_eq(shutdown(mine, SHUT_RDWR), 0);
	close(mine);
}

START_TEST(test_channel_failure_withdraws_the_approval)
{
	struct agent ag;
	shk_doc *doc = NULL;
	const shk_val *list;
	char id[24], needle[64];
	pid_t pid;

	write_hitl_policy(60);
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	pid = start_attach(false);
	agent_start(&ag);
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);
	list = pending(doc, 1);
	list_id(list, 0, id, sizeof(id));
	ck_assert_str_eq(decide_on(doc, "approve", id, "released"), "ALLOW");
	break_channel(pid);
	sleep_ms(400); /* attach polls at least every 100 ms */
	/* nobody is left to log the retry as approved: it must not pass */
	ck_assert_int_eq(agent_connect(&ag, port[0]), EPERM);
	ck_assert_int_eq(agent_connect(&ag, port[2]), 0); /* nothing else changed */
	agent_stop(&ag);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log_min(4);
	snprintf(needle, sizeof(needle), "\"rule\":\"hitl-approval:%s\"", id);
	ck_assert(!log_has(needle));
	shk_doc_free(doc);
}
END_TEST

/* The list entry whose argv ends in word: its id in buf. */
static const char *id_of_argv(const shk_val *list, const char *word, char *buf, size_t len)
{
	for (size_t i = 0; i < shk_val_len(list); i++) {
		const shk_val *argv = shk_object_get(shk_object_get(shk_array_at(list, i), "params"), "argv");

		if (!strcmp(shk_val_str(shk_array_at(argv, shk_val_len(argv) - 1), NULL), word))
			return list_id(list, i, buf, len);
	}
	ck_abort_msg("no held exec with argument %s", word);
	return NULL;
}

START_TEST(test_two_exec_approvals_of_one_image)
{
	char helper[256], out[256], id1[24], id2[24], needle[64];
	const shk_val *list;
	shk_doc *doc = NULL;
	pid_t pid;

	pid = start_exec_hitl(helper, sizeof(helper), 60, &doc);
	killed(run_helper(helper, "one", out, sizeof(out)));
	killed(run_helper(helper, "two", out, sizeof(out)));
	list = pending(doc, 2);
	id_of_argv(list, "one", id1, sizeof(id1));
	id_of_argv(list, "two", id2, sizeof(id2));
	ck_assert_str_eq(decide_on(doc, "approve", id1, "released"), "ALLOW");
	ck_assert_str_eq(decide_on(doc, "approve", id2, "released"), "ALLOW");
	pending(doc, 0);
	ck_assert_int_eq(run_helper(helper, "two", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "--token=sekrit1 two\n");
	ck_assert_int_eq(run_helper(helper, "one", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "--token=sekrit1 one\n");
	killed(run_helper(helper, "one", out, sizeof(out))); /* once each */
	killed(run_helper(helper, "two", out, sizeof(out)));
	pending(doc, 2);
	ck_assert_int_eq(stop_attach(pid), 0);
	verify_log_min(8);
	snprintf(needle, sizeof(needle), "\"rule\":\"hitl-approval:%s\"", id1);
	ck_assert_msg(log_has(needle), "no decision under %s", needle);
	snprintf(needle, sizeof(needle), "\"rule\":\"hitl-approval:%s\"", id2);
	ck_assert_msg(log_has(needle), "no decision under %s", needle);
	shk_doc_free(doc);
}
END_TEST

/* ---- failure: the audit goes on ------------------------------------------------ */

static bool is_map(pid_t pid, int fd, const void *name)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	char p[64], link[64];
	ssize_t n;
	int mine;
	bool yes;

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, fd);
	if ((n = readlink(p, link, sizeof(link) - 1)) < 0)
		return false;
	link[n] = 0;
	if (strcmp(link, "anon_inode:bpf-map"))
		return false;
	mine = steal_fd(pid, fd);
	memset(&info, 0, sizeof(info));
	yes = bpf_obj_get_info_by_fd(mine, &info, &len) == 0 && !strcmp(info.name, name);
	close(mine);
	return yes;
}

/* Fills attach's table of stateful denies with entries for no real cgroup
 * (as many distinct destinations denied by budget or rate would). */
static void fill_deny_table(pid_t attach)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info), why = 4, n = 0;
	unsigned char k[64];
	int fd = steal_fd(attach, fd_of(attach, is_map, "deny_dest"));

	memset(&info, 0, sizeof(info));
	ck_assert_int_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	ck_assert_uint_le(info.key_size, sizeof(k));
	memset(k, 0, sizeof(k));
	for (uint64_t i = 0; bpf_map_update_elem(fd, k, &why, BPF_NOEXIST) == 0; n++) {
		i++;
		memcpy(k, &i, sizeof(i)); /* the cgroup id */
	}
	ck_assert_int_eq(errno, E2BIG);
	ck_assert_uint_eq(n, info.max_entries);
	close(fd);
}

/* UDP connects to 127.0.0.1:p from a child in the cgroup, as fast as it
 * can: how many the kernel let through. */
static int udp_burst(uint16_t p, int calls)
{
	int fds[2], ok = -1;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(p),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int n = 0;

		if (shk_cgroup_enter(cg, getpid()) < 0)
			_exit(1);
		for (int i = 0; i < calls; i++) {
			int s = socket(AF_INET, SOCK_DGRAM, 0);

			n += connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
			close(s);
		}
		_exit(write(fds[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &ok, sizeof(ok)), sizeof(ok));
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return ok;
}

static unsigned count_lines(const char *needle)
{
	FILE *f = fopen(audit_log, "r");
	char line[16384];
	unsigned n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/*
 * The third call of the burst is a repeat decide() denies; its stateful deny
 * cannot be pushed (the table is full), so attach fails closed: the breaker
 * opens. The calls of the burst the kernel let through before that happened
 * and are all in the log, with the kernel's answer.
 */
START_TEST(test_failure_keeps_the_audit)
{
	FILE *f = fopen(policy, "w");
	int passed;
	pid_t pid;

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1, \"guard\": {\"max_repeat_calls\": 2, \"trip_on_deny\": false},\n"
		   " \"exec\": {\"default\": \"allow\"},\n"
		   " \"net\": {\"default\": \"deny\", \"rules\": [\n"
		   "  {\"name\": \"loopback\", \"cidr\": \"127.0.0.0/8\", \"action\": \"allow\"}]}}\n");
	ck_assert_int_eq(fclose(f), 0);
	pid = start_attach(false);
	fill_deny_table(pid);
	passed = udp_burst(port[1], 400);
	ck_assert_int_gt(passed, 2);
	sleep_ms(400);
	ck_assert_int_eq(udp_burst(port[1], 1), 0); /* failed closed */
	ck_assert_int_eq(stop_attach(pid), 1);
	verify_log_min((uint64_t)passed);
	ck_assert_msg(count_lines("\"tool\":\"net:connect\"") > (unsigned)passed,
		      "%u decisions for %d calls the kernel let through and one it refused",
		      count_lines("\"tool\":\"net:connect\""), passed);
	ck_assert_msg(count_lines("\"kernel\":\"allowed (rule)\"") >= (unsigned)passed,
		      "%u of %d calls the kernel let through are in the log",
		      count_lines("\"kernel\":\"allowed (rule)\""), passed);
	ck_assert_uint_ge(count_lines("\"kernel\":\"refused (breaker)\""), 1);
	ck_assert(log_has("\"events_unlogged\":0"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ebpf-attach-hitl");
	TCase *tc = tcase_create("attach-hitl");

	ebpf_test_parent(parent, sizeof(parent), "attach-hitl");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_channel_failure_withdraws_the_approval);
	tcase_add_test(tc, test_two_exec_approvals_of_one_image);
	tcase_add_test(tc, test_failure_keeps_the_audit);
	suite_add_tcase(s, tc);
	return ebpf_run_suite(s, parent);
}
