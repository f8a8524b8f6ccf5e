/* SPDX-License-Identifier: MIT */
/*
 * `shackle doctor --json` runs, exits 0, reports every probe with a known
 * state, and agrees with what this test can check independently (the cgroup
 * v2 mount point, root, the build's eBPF switch). No privileges needed: as
 * non-root the BPF probes must say "no", not fail.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "testutil.h"
#include "checkrun.h"

static const char *const keys[] = {
	"seccomp_user_notify", "seccomp_addfd", "seccomp_wait_killable_recv",
	"seccomp_sync_wake", "pidfd_open",
	"pidfd_getfd", "cgroup2", "cgroup_create", "cgroup_kill", "cgroup_delegation",
	"bpf_sock_addr", "bpf_ringbuf", "bpf_raw_tracepoint", "bpf_send_signal", "tracefs",
	"bpf_tracepoint", "bpf_lsm", "bpf_fentry", "landlock", "unprivileged_userns",
	"bpf_programs_built", NULL,
};

static bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int a = 0, b = 0;

	return uname(&u) == 0 && sscanf(u.release, "%d.%d", &a, &b) == 2 &&
	       (a > major || (a == major && b >= minor));
}

static json_t *doctor(int *ret_status)
{
	char cmd[4200];
	json_error_t err;
	json_t *j;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' doctor --json", shk_test_build("src/cli/shackle"));
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	j = json_loadf(p, 0, &err);
	*ret_status = pclose(p);
	ck_assert_msg(j != NULL, "doctor --json is not JSON: %s (line %d)", err.text, err.line);
	return j;
}

START_TEST(test_doctor_json_is_complete_and_consistent)
{
	char mnt[4096];
	int status;
	json_t *j = doctor(&status), *probes = json_object_get(j, "probes");

	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (const char *const *k = keys; *k; k++) {
		const char *st = json_string_value(json_object_get(json_object_get(probes, *k), "state"));

		ck_assert_msg(st != NULL, "probe %s missing", *k);
		ck_assert_msg(!strcmp(st, "yes") || !strcmp(st, "no") || !strcmp(st, "partial") ||
			      !strcmp(st, "unknown"), "probe %s: state %s", *k, st);
	}
	ck_assert(json_is_true(json_object_get(j, "root")) == (geteuid() == 0));
	/* the listener flag exists from Linux 6.6 on */
	if (kernel_at_least(6, 6))
		ck_assert_str_eq(json_string_value(json_object_get(json_object_get(probes,
				 "seccomp_sync_wake"), "state")), "yes");
	if (shk_cgroup2_mount(mnt, sizeof(mnt)) == 0)
		ck_assert_str_eq(json_string_value(json_object_get(j, "cgroup2_mount")), mnt);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(probes,
			 "bpf_programs_built"), "state")), shk_ebpf_built() ? "yes" : "no");
	/* attach needs root and the programs: never claimed without them. */
	if (geteuid() != 0 || !shk_ebpf_built())
		ck_assert(json_is_false(json_object_get(json_object_get(json_object_get(j, "modes"),
								       "attach"), "available")));
	json_decref(j);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ebpf-doctor");
	TCase *tc = tcase_create("doctor");

	if (access(shk_test_build("src/cli/shackle"), X_OK) < 0)
		shk_test_skip("%s not built", shk_test_build("src/cli/shackle"));
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_doctor_json_is_complete_and_consistent);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
