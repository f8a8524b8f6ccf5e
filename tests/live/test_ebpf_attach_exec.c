/* SPDX-License-Identifier: MIT */
/*
 * `shackle attach --exec` (the built executable) picks its exec hook the way
 * shk_probe_bpf_lsm() says, tells the operator which one and why, and writes
 * it into the audit log's session_end counters. On a kernel where BPF LSM
 * loads, a denied exec fails with EPERM; elsewhere (this project's CI VM) the
 * tracepoint kills it. Root, cgroup v2; loopback only (no network at all).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf/probe.h"
#include "ebpf_fixture.h"
#include "testutil.h"

static char parent[1024], dir[] = "/tmp/shk-attach-exec-XXXXXX", cg[2048];
static char path_buf[8][256];

static const char *in_dir(int slot, const char *name)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
	return path_buf[slot];
}

static int run_wait(char *const argv[], const char *err_path)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 2) < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* Whole file into a static buffer ("" when absent). */
static const char *slurp(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = 0;
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	return buf;
}

/* The denied image run in a child inside the cgroup: its wait status. */
static int exec_in_cgroup(const char *image)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (shk_cgroup_enter(cg, getpid()) < 0)
			_exit(100);
		execl(image, image, (char *)NULL);
		_exit(errno == EPERM ? 101 : 102);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static json_t *session_end(const char *log)
{
	FILE *f = fopen(log, "r");
	char line[8192];
	json_t *end = NULL;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);

		if (j && json_is_string(json_object_get(j, "kind")) &&
		    !strcmp(json_string_value(json_object_get(j, "kind")), "session_end")) {
			json_decref(end);
			end = j;
		} else {
			json_decref(j);
		}
	}
	fclose(f);
	ck_assert_msg(end != NULL, "no session_end in %s: %s", log, slurp(in_dir(3, "attach.err")));
	return end;
}

START_TEST(test_attach_reports_exec_hook)
{
	char why[512], want[1024], shackle[4096], denied[256];
	const char *policy = in_dir(0, "policy.json"), *log = in_dir(1, "audit.jsonl");
	const char *key = in_dir(2, "k.key"), *err = in_dir(3, "attach.err");
	int usable = shk_probe_bpf_lsm(why, sizeof(why)), status;
	json_t *end, *counters;
	FILE *f;
	pid_t pid;

	snprintf(shackle, sizeof(shackle), "%s", shk_test_build("src/cli/shackle"));
	snprintf(denied, sizeof(denied), "%s", in_dir(4, "denied-true"));
	ebpf_copy_file("/bin/true", denied);
	{
		char *kg[] = { shackle, "keygen", "--out", (char *)in_dir(5, "k"), NULL };

		ck_assert_int_eq(run_wait(kg, in_dir(6, "keygen.out")), 0);
	}
	f = fopen(policy, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"version\": 1,\n \"exec\": {\"default\": \"allow\", \"rules\": [\n"
		   "  {\"name\": \"copy\", \"path\": \"%s\", \"action\": \"deny\"}]},\n"
		   " \"net\": {\"default\": \"allow\"}}\n", denied);
	ck_assert_int_eq(fclose(f), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { shackle, "attach", "--cgroup", cg, "--policy", (char *)policy,
				 "--audit", (char *)log, "--key", (char *)key, "--exec",
				 "--duration", "60", NULL };
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < 500 && !strstr(slurp(err), "exec hook: "); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	ck_assert_msg(strstr(slurp(err), "exec hook: "), "attach said: %s", slurp(err));

	status = exec_in_cgroup(denied);
	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	end = session_end(log);
	counters = json_object_get(end, "counters");
	ck_assert_ptr_nonnull(counters);
	if (usable == 0) {
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 101, "status %#x", status);
		ck_assert_ptr_nonnull(strstr(slurp(err), "exec hook: lsm (bprm_check_security"));
		ck_assert_str_eq(json_string_value(json_object_get(counters, "exec_hook")), "lsm");
		ck_assert_ptr_null(json_object_get(counters, "exec_lsm_unused"));
	} else {
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x",
			      status);
		snprintf(want, sizeof(want), "exec hook: tracepoint (sched_process_exec + SIGKILL); "
			 "BPF LSM not used: %s\n", why);
		ck_assert_msg(strstr(slurp(err), want), "attach said: %s\nwanted: %s", slurp(err),
			      want);
		ck_assert_str_eq(json_string_value(json_object_get(counters, "exec_hook")),
				 "tracepoint");
		ck_assert_str_eq(json_string_value(json_object_get(counters, "exec_lsm_unused")),
				 why);
	}
	json_decref(end);
}
END_TEST

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cg, sizeof(cg), "%s/t-%d", parent, (int)getpid());
	ck_assert_int_eq(mkdir(cg, 0755), 0);
}

static void teardown(void)
{
	char cmd[200];

	ck_assert_int_eq(shk_cgroup_remove(cg), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)!system(cmd);
}

int main(void)
{
	Suite *s;
	TCase *tc;

	ebpf_test_parent(parent, sizeof(parent), "attach-exec");
	s = suite_create("ebpf-attach-exec");
	tc = tcase_create("attach");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_attach_reports_exec_hook);
	suite_add_tcase(s, tc);
	return ebpf_run_suite(s, parent);
}
