/* SPDX-License-Identifier: MIT */
/*
 * What the live eBPF tests share (test_ebpf.c, test_ebpf_net.c,
 * test_ebpf_listen.c): the test cgroup and its two loopback listeners, the
 * programs loaded with a fixed rule set, children run inside the cgroup
 * (or attached to while in it), and the events they caused. Header-only,
 * like ebpf_fixture.h.
 */
#ifndef SHACKLE_TESTS_EBPF_LIVE_H
#define SHACKLE_TESTS_EBPF_LIVE_H

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <shackle/ebpf.h>

#include "ebpf/probe.h"

#include "ebpf_fixture.h"
#include "testutil.h"

static __attribute__((unused)) char parent[2048], cg_path[4096];
static __attribute__((unused)) int cg_fd = -1;
static __attribute__((unused)) uint64_t cg_id;
static __attribute__((unused)) int lst[2] = { -1, -1 };
static __attribute__((unused)) uint16_t port_ok, port_denied;
static __attribute__((unused)) shk_ebpf *E;

static inline void load_lsm(bool exec, uint8_t exec_default, uint8_t exec_lsm)
{
	struct shk_ebpf_opts o = {
		.net_default = SHK_EBPF_DENY, .exec_default = exec_default,
		.exec = exec, .report_allowed = true, .exec_lsm = exec_lsm,
	};
	struct shk_ebpf_net_rule rules[2] = {
		{ .family = AF_INET, .prefix = 32, .port_lo = port_denied, .port_hi = port_denied,
		  .proto = IPPROTO_TCP, .ops = SHK_EBPF_OP_CONNECT, .action = SHK_EBPF_DENY,
		  .tool_id = 7 },
		{ .family = AF_INET, .prefix = 8, .port_lo = 0, .port_hi = 65535,
		  .ops = SHK_EBPF_OP_ALL, .action = SHK_EBPF_ALLOW, .tool_id = 8 },
	};

	inet_pton(AF_INET, "127.0.0.1", rules[0].addr);
	inet_pton(AF_INET, "127.0.0.0", rules[1].addr);
	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	ck_assert_int_eq(shk_ebpf_set_net_rules(E, rules, 2), 0);
	ck_assert_int_eq(shk_ebpf_attach(E, cg_fd), 0);
}

/* The tracepoint path, on every kernel; test_exec_path_auto covers the choice. */
static inline void load(bool exec, uint8_t exec_default)
{
	load_lsm(exec, exec_default, SHK_EBPF_LSM_OFF);
}

static inline void setup(void)
{
	snprintf(cg_path, sizeof(cg_path), "%s/t-%d", parent, (int)getpid());
	ck_assert_int_eq(mkdir(cg_path, 0755), 0);
	cg_fd = open(cg_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(cg_fd, 0);
	ck_assert_int_eq(shk_cgroup_id(cg_path, &cg_id), 0);
	port_ok = listen_loopback(&lst[0]);
	port_denied = listen_loopback(&lst[1]);
}

static inline void teardown(void)
{
	struct stat st;

	shk_ebpf_free(E);
	E = NULL;
	close(lst[0]);
	close(lst[1]);
	close(cg_fd);
	ck_assert_int_eq(shk_cgroup_remove(cg_path), 0);
	ck_assert_int_eq(stat(cg_path, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
}

/* errno of a connect to 127.0.0.1:port, or to ::ffff:127.0.0.1 when mapped. */
static inline int try_connect(uint16_t port, bool mapped)
{
	int fd, r;

	if (mapped) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

		inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	}
	r = r < 0 ? errno : 0;
	close(fd);
	return r;
}

/* Run fn in a child placed in the test cgroup; returns the wait status. */
static inline int in_cgroup(int (*fn)(void *), void *arg)
{
	int status = -1;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (shk_cgroup_enter(cg_path, getpid()) < 0)
			_exit(100);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/*
 * in_cgroup, but the programs (E, opened) are attached while the child, in
 * the cgroup already, is between before(arg) and after(arg): what a socket
 * made before the attach goes through. The wait status of the child.
 */
static inline int in_cgroup_attach_between(int (*before)(void *), int (*after)(void *), void *arg)
{
	int status = -1, ready[2], go[2], r;
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC) | pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (shk_cgroup_enter(cg_path, getpid()) < 0)
			_exit(100);
		if ((r = before(arg)) != 0)
			_exit(r);
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(101);
		_exit(after(arg));
	}
	if (read(ready[0], &c, 1) == 1) {
		ck_assert_int_eq(shk_ebpf_attach(E, cg_fd), 0);
		ck_assert_int_eq(write(go[1], &c, 1), 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	return status;
}

struct want {
	int kind;
	uint8_t verdict, reason;
	uint16_t port;
	const char *filename;
	uint64_t digest;
	int found;
	uint64_t cgroup_id;
	uint32_t rule;
	bool lsm;
	const char *comm; /* when set: the event's process name */
};

/* Every event seen so far: one poll may deliver the events several checks want. */
static __attribute__((unused)) struct shk_ebpf_event seen[256];
static __attribute__((unused)) size_t nseen;

static inline int on_event(const struct shk_ebpf_event *ev, void *ud)
{
	(void)ud;
	if (nseen < sizeof(seen) / sizeof(seen[0]))
		seen[nseen++] = *ev;
	return 0;
}

static inline bool matches(const struct want *w, const struct shk_ebpf_event *ev)
{
	if (ev->kind != w->kind || ev->verdict != w->verdict || ev->reason != w->reason)
		return false;
	if (ev->kind == SHK_EBPF_EV_NET && ev->dest.port != w->port)
		return false;
	if (ev->kind == SHK_EBPF_EV_EXEC && (strcmp(ev->filename, w->filename) || ev->lsm != w->lsm))
		return false;
	if (w->comm && strcmp(ev->comm, w->comm))
		return false;
	return !w->digest || ev->once_digest == w->digest;
}

static inline void expect_event(struct want *w)
{
	for (int i = 0; i < 40; i++) {
		w->found = 0;
		for (size_t k = 0; k < nseen; k++)
			if (matches(w, &seen[k])) {
				w->found++;
				w->cgroup_id = seen[k].cgroup_id;
				w->rule = seen[k].rule;
			}
		if (w->found)
			break;
		ck_assert_int_ge(shk_ebpf_poll(E, 50, on_event, NULL), 0);
	}
	ck_assert_msg(w->found, "no event kind %d verdict %u reason %u", w->kind, w->verdict,
		      w->reason);
	ck_assert_uint_eq(w->cgroup_id, cg_id);
}

#endif
