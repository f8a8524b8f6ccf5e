/* SPDX-License-Identifier: MIT */
/*
 * `shackle attach` on a real container: runc from Debian, a rootfs the test
 * builds from a static busybox, the host network namespace (so that the only
 * addresses involved are 127.0.0.1). The container is created (its init
 * waits before running the user process), its cgroup v2 path is read from
 * /proc/PID/cgroup like one would for a Docker container, shackle attaches
 * there, then the container starts and connects to an allowed and to a denied
 * local port. Needs root, runc and a static busybox.
 */
#include <arpa/inet.h>
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/ebpf.h>

#include "cli/commands.h"
#include "ebpf_fixture.h"
#include "testutil.h"
#include "checkrun.h"

#define RUNC "/usr/sbin/runc"
#define BUSYBOX "/usr/bin/busybox"

void shk_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shackle %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static char dir[] = "/tmp/shk-ctr-XXXXXX", id[64];

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 }, NULL);
}

static const char *path(const char *rel)
{
	static char buf[8][256];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, rel);
	return buf[i];
}

/* Run a command with stdout/stderr to a file; returns its exit status. */
static int run(const char *out, char *const argv[])
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool is_static(const char *file)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	bool interp = false;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, 4)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	for (int i = 0; i < eh.e_phnum; i++)
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) ==
			    sizeof(ph) && ph.p_type == PT_INTERP)
			interp = true;
	close(fd);
	return !interp;
}

/* A child that accepts and closes, so that the container's nc ends at once. */
static pid_t acceptor(int fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
	return pid;
}

static void rootfs_and_config(uint16_t ok, uint16_t denied)
{
	char script[512];
	json_t *c, *ns, *kept;
	size_t i;
	char *const spec[] = { RUNC, "spec", "-b", dir, NULL };

	ck_assert_int_eq(mkdir(path("rootfs"), 0755), 0);
	ck_assert_int_eq(mkdir(path("rootfs/bin"), 0755), 0);
	ck_assert_int_eq(run(NULL, (char *const[]){ "/bin/cp", (char *)BUSYBOX,
						    (char *)path("rootfs/bin/busybox"), NULL }), 0);
	for (const char *const *a = (const char *const[]){ "sh", "nc", "echo", NULL }; *a; a++) {
		char l[64];

		snprintf(l, sizeof(l), "rootfs/bin/%s", *a);
		ck_assert_int_eq(symlink("busybox", path(l)), 0);
	}
	ck_assert_int_eq(run(NULL, spec), 0);
	c = json_load_file(path("config.json"), 0, NULL);
	ck_assert_ptr_nonnull(c);
	snprintf(script, sizeof(script),
		 "echo hi | nc 127.0.0.1 %u && echo ALLOWED-OK || echo ALLOWED-FAIL; "
		 "echo hi | nc 127.0.0.1 %u && echo DENIED-OK || echo DENIED-FAIL", ok, denied);
	json_object_set_new(json_object_get(c, "process"), "terminal", json_false());
	json_object_set_new(json_object_get(c, "process"), "args",
			    json_pack("[sss]", "/bin/sh", "-c", script));
	/* The host's network namespace: the listeners are on its 127.0.0.1. */
	ns = json_object_get(json_object_get(c, "linux"), "namespaces");
	kept = json_array();
	for (i = 0; i < json_array_size(ns); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(ns, i), "type")),
			   "network"))
			json_array_append(kept, json_array_get(ns, i));
	json_object_set_new(json_object_get(c, "linux"), "namespaces", kept);
	json_object_set_new(json_object_get(c, "linux"), "cgroupsPath", json_string(id));
	ck_assert_int_eq(json_dump_file(c, path("config.json"), JSON_INDENT(1)), 0);
	json_decref(c);
}

/* The container's cgroup v2 directory, from its init's /proc/PID/cgroup. */
static void container_cgroup(char *buf, size_t len)
{
	char p[64], line[512], mnt[1024] = "", *rel = NULL;
	FILE *f;
	json_t *st;
	int pid;

	run(path("state.json"), (char *const[]){ RUNC, "state", id, NULL });
	st = json_load_file(path("state.json"), 0, NULL);
	ck_assert_ptr_nonnull(st);
	pid = (int)json_integer_value(json_object_get(st, "pid"));
	json_decref(st);
	ck_assert_int_gt(pid, 0);
	snprintf(p, sizeof(p), "/proc/%d/cgroup", pid);
	f = fopen(p, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			rel = line + 3;
			break;
		}
	fclose(f);
	ck_assert_ptr_nonnull(rel);
	ck_assert_int_eq(shk_cgroup2_mount(mnt, sizeof(mnt)), 0);
	ck_assert_int_lt(snprintf(buf, len, "%s%s", mnt, rel), (int)len);
}

static uint32_t attached(const char *cg)
{
	uint32_t ids[8];
	union bpf_attr a;
	int fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long r;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)fd;
	a.query.attach_type = BPF_CGROUP_INET4_CONNECT;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = 8;
	r = syscall(__NR_bpf, BPF_PROG_QUERY, &a, sizeof(a));
	close(fd);
	return r == 0 ? a.query.prog_cnt : 0;
}

static char *slurp(const char *file)
{
	static char buf[8192];
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return buf;
}

START_TEST(test_attach_to_a_runc_container)
{
	char cg[1200], policy_arg[256], audit_arg[256], key_arg[256];
	uint16_t ok, denied;
	int l_ok, l_denied, status;
	pid_t acc, att;
	shk_key_error kerr;
	shk_key *k = NULL;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(id, sizeof(id), "shk-test-%d", (int)getpid());
	ok = listen_loopback(&l_ok);
	denied = listen_loopback(&l_denied);
	acc = acceptor(l_ok);
	rootfs_and_config(ok, denied);
	f = fopen(path("policy.json"), "w");
	fprintf(f, "{\"version\": 1, \"net\": {\"default\": \"deny\", \"rules\": [\n"
		   " {\"name\": \"no-%u\", \"cidr\": \"127.0.0.1/32\", \"port\": %u, \"action\": \"deny\"},\n"
		   " {\"name\": \"loopback\", \"cidr\": \"127.0.0.0/8\", \"action\": \"allow\"}]}}\n",
		denied, denied);
	fclose(f);
	ck_assert_int_eq(shk_key_generate(&k), 0);
	ck_assert_int_eq(shk_key_write_files(k, path("k"), &kerr), 0);
	shk_key_free(k);

	ck_assert_int_eq(run(path("runc.log"), (char *const[]){ RUNC, "create", "-b", dir, id,
								  NULL }), 0);
	container_cgroup(cg, sizeof(cg));
	snprintf(policy_arg, sizeof(policy_arg), "%s", path("policy.json"));
	snprintf(audit_arg, sizeof(audit_arg), "%s", path("audit.jsonl"));
	snprintf(key_arg, sizeof(key_arg), "%s", path("k.key"));
	att = fork();
	ck_assert_int_ge(att, 0);
	if (att == 0)
		_exit(shk_cmd_attach(11, (char *[]){ "attach", "--cgroup", cg, "--policy", policy_arg,
						     "--audit", audit_arg, "--key", key_arg,
						     "--duration", "60", NULL }));
	for (int i = 0; i < 500 && attached(cg) == 0; i++)
		sleep_ms(10);
	ck_assert_uint_ge(attached(cg), 1);

	ck_assert_int_eq(run(path("runc.log"), (char *const[]){ RUNC, "start", id, NULL }), 0);
	for (int i = 0; i < 500 && !strstr(slurp(path("runc.log")), "DENIED-"); i++)
		sleep_ms(20);
	sleep_ms(300); /* let the events reach the log */
	kill(att, SIGTERM);
	ck_assert_int_eq(waitpid(att, &status, 0), att);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "attach status %#x", status);
	run(NULL, (char *const[]){ RUNC, "delete", "-f", id, NULL });
	kill(acc, SIGKILL);
	waitpid(acc, NULL, 0);

	ck_assert_msg(strstr(slurp(path("runc.log")), "ALLOWED-OK"), "%s", slurp(path("runc.log")));
	ck_assert_msg(strstr(slurp(path("runc.log")), "DENIED-FAIL"), "%s", slurp(path("runc.log")));
	ck_assert_msg(strstr(slurp(path("runc.log")), "Operation not permitted"), "%s",
		      slurp(path("runc.log")));
	{
		const char *paths[] = { path("audit.jsonl") };
		uint8_t pk[SHK_ED25519_PUBLIC_LEN];
		static shk_verify_report rep;

		ck_assert_int_eq(shk_pubkey_load_file(path("k.pub"), pk, &kerr), 0);
		ck_assert_int_eq(shk_verify_files(paths, 1, pk, &(shk_verify_options){ 0 }, &rep), 0);
		ck_assert_int_eq(rep.result, SHK_VERIFY_OK);
		ck_assert_str_ne(slurp(path("audit.jsonl")), "");
		ck_assert_ptr_nonnull(strstr(slurp(path("audit.jsonl")), "policy_denied"));
	}
	close(l_ok);
	close(l_denied);
	run(NULL, (char *const[]){ "/bin/rm", "-rf", dir, NULL });
}
END_TEST

int main(void)
{
	Suite *s;
	TCase *tc;

	shk_test_require_root();
	if (!shk_ebpf_built())
		shk_test_skip("eBPF support not built: %s", shk_ebpf_off_reason());
	if (access(RUNC, X_OK) < 0)
		shk_test_skip("%s not installed (Debian package runc)", RUNC);
	if (!is_static(BUSYBOX))
		shk_test_skip("%s is not a static busybox (Debian package busybox-static)", BUSYBOX);
	s = suite_create("ebpf-container");
	tc = tcase_create("runc");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_attach_to_a_runc_container);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
