/* SPDX-License-Identifier: MIT */
/*
 * Shared by the eBPF live tests that run children in cgroups of their own
 * (header-only, like testutil.h; needs Check and shackle/ebpf.h).
 */
#ifndef SHACKLE_TESTS_EBPF_FIXTURE_H
#define SHACKLE_TESTS_EBPF_FIXTURE_H

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "checkrun.h"
#include "testutil.h"

/* A copy of an executable with its own inode (an exec rule can deny only it). */
static inline void ebpf_copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	ssize_t n;

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	ck_assert_int_eq(close(out), 0);
	ck_assert_int_eq(chmod(to, 0755), 0);
}

/*
 * Skip unless root with the programs built and a cgroup v2 hierarchy; then
 * create parent = <own cgroup>/shk-test-<tag>-<pid>, below which every test
 * makes its cgroup. Exits 1 when it cannot be created.
 */
static inline void ebpf_test_parent(char *parent, size_t len, const char *tag)
{
	char self[900], mnt[4096];

	shk_test_require_root();
	if (!shk_ebpf_built())
		shk_test_skip("eBPF support not built: %s", shk_ebpf_off_reason());
	if (shk_cgroup2_mount(mnt, sizeof(mnt)) < 0)
		shk_test_skip("no cgroup v2 hierarchy mounted");
	if (shk_cgroup2_self(self, sizeof(self)) < 0)
		shk_test_skip("own cgroup v2 not found in /proc/self/cgroup");
	snprintf(parent, len, "%s/shk-test-%s-%d", self, tag, (int)getpid());
	if (mkdir(parent, 0755) < 0) {
		fprintf(stderr, "mkdir %s: %s\n", parent, strerror(errno));
		exit(1);
	}
}

/* Run the suite, then remove parent whatever the tests left in it. */
/* Puts the caller in a Landlock domain: ptrace access, and with it the
 * opening of /proc/PID/ns/net, is refused (EACCES) to a process outside. */
static inline int landlock_self(void)
{
	struct landlock_ruleset_attr ra = { .handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK };
	int fd = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0), r;

	if (fd < 0)
		return -errno;
	r = syscall(SYS_landlock_restrict_self, fd, 0) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static inline int ebpf_run_suite(Suite *s, const char *parent)
{
	int failed = shk_test_run(s);

	if (shk_cgroup_remove(parent) < 0) {
		fprintf(stderr, "could not remove %s\n", parent);
		failed = 1;
	}
	return failed ? 1 : 0;
}

/* A TCP listener on 127.0.0.1 at a port the kernel picks; returns the port. */
static inline uint16_t listen_loopback(int *ret_fd)
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

#endif
