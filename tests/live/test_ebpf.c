/* SPDX-License-Identifier: MIT */
/*
 * Live test of the eBPF layer (root, cgroup v2, sock_addr hooks, raw
 * tracepoints). Every test creates its own cgroup below ours, runs forked
 * children inside it and only ever talks to 127.0.0.1 / ::ffff:127.0.0.1.
 */
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

#define BPF_FS_MAGIC_ 0xcafe4a11

static char parent[2048], cg_path[4096];
static int cg_fd = -1;
static uint64_t cg_id;
static int lst[2] = { -1, -1 };
static uint16_t port_ok, port_denied;
static shk_ebpf *E;

static void load_lsm(bool exec, uint8_t exec_default, uint8_t exec_lsm)
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
static void load(bool exec, uint8_t exec_default)
{
	load_lsm(exec, exec_default, SHK_EBPF_LSM_OFF);
}

static void setup(void)
{
	snprintf(cg_path, sizeof(cg_path), "%s/t-%d", parent, (int)getpid());
	ck_assert_int_eq(mkdir(cg_path, 0755), 0);
	cg_fd = open(cg_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(cg_fd, 0);
	ck_assert_int_eq(shk_cgroup_id(cg_path, &cg_id), 0);
	port_ok = listen_loopback(&lst[0]);
	port_denied = listen_loopback(&lst[1]);
}

static void teardown(void)
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
static int try_connect(uint16_t port, bool mapped)
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
static int in_cgroup(int (*fn)(void *), void *arg)
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

/* A raw socket made in the cgroup before the programs were attached:
 * below the attach point shk_sock_create refuses new raw sockets, but one
 * made earlier still sends through the egress program. */
static int raw6_early = -1;

/*
 * in_cgroup, but the child makes a raw IPv6 socket in the cgroup first and
 * the programs (E, opened) are attached only then: how a raw socket from
 * before the attach reaches the egress program.
 */
static int in_cgroup_early_raw(int (*fn)(void *), void *arg)
{
	int status = -1, ready[2], go[2];
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe2(ready, O_CLOEXEC) | pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (shk_cgroup_enter(cg_path, getpid()) < 0)
			_exit(100);
		raw6_early = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
		if (raw6_early < 0 || write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(101);
		/* made now, below the attach point: refused */
		if (socket(AF_INET6, SOCK_RAW, IPPROTO_RAW) >= 0 || errno != EPERM)
			_exit(102);
		_exit(fn(arg));
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(shk_ebpf_attach(E, cg_fd), 0);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
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
static struct shk_ebpf_event seen[256];
static size_t nseen;

static int on_event(const struct shk_ebpf_event *ev, void *ud)
{
	(void)ud;
	if (nseen < sizeof(seen) / sizeof(seen[0]))
		seen[nseen++] = *ev;
	return 0;
}

static bool matches(const struct want *w, const struct shk_ebpf_event *ev)
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

static void expect_event(struct want *w)
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

static int child_connects(void *arg)
{
	(void)arg;
	/* the records carry the caller's name, read from its task */
	prctl(PR_SET_NAME, "shk-conn-kid");
	if (try_connect(port_ok, false) != 0)
		return 1;
	if (try_connect(port_denied, false) != EPERM)
		return 2;
	if (try_connect(port_ok, true) != 0)
		return 3;
	if (try_connect(port_denied, true) != EPERM)
		return 4;
	return 0;
}

START_TEST(test_connect_policy)
{
	struct want deny = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_DENY,
			     .reason = SHK_EBPF_R_RULE, .port = port_denied,
			     .comm = "shk-conn-kid" };
	struct want allow = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_ALLOW,
			      .reason = SHK_EBPF_R_RULE, .port = port_ok, .comm = "shk-conn-kid" };
	struct shk_ebpf_stats st;
	int status;

	load(false, SHK_EBPF_ALLOW);
	/* Outside the cgroup nothing changes. */
	ck_assert_int_eq(try_connect(port_denied, false), 0);
	status = in_cgroup(child_connects, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	expect_event(&deny);
	ck_assert_uint_eq(deny.rule, 0);
	expect_event(&allow);
	ck_assert_uint_eq(allow.rule, 1);
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	ck_assert_uint_eq(st.kernel_drops, 0);
	ck_assert_uint_ge(st.delivered, 4);
}
END_TEST

/* errno of a TCP connect to addr:port (any family), 0 on success */
static int connect_to(const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	bool v6 = strchr(addr, ':') != NULL;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), r;

	if (v6) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &a6->sin6_addr);
	} else {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		inet_pton(AF_INET, addr, &a4->sin_addr);
	}
	r = connect(fd, (struct sockaddr *)&ss, v6 ? sizeof(*a6) : sizeof(*a4)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int child_unspecified(void *arg)
{
	(void)arg;
	/* the kernel sends these to 127.0.0.1: judged as that */
	if (connect_to("0.0.0.0", port_denied) != EPERM)
		return 1;
	if (connect_to("::ffff:0.0.0.0", port_denied) != EPERM)
		return 2;
	if (connect_to("0.0.0.0", port_ok) != 0)
		return 3;
	if (connect_to("127.0.0.1", port_ok) != 0)
		return 4;
	return 0;
}

/*
 * A connect to 0.0.0.0 reaches 127.0.0.1 (the route lookup, after the
 * hooks, rewrites it): a rule denying a local service must hold for it, and
 * a rule allowing loopback must allow it.
 */
START_TEST(test_unspecified_is_loopback)
{
	int status;

	load(false, SHK_EBPF_ALLOW);
	status = in_cgroup(child_unspecified, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

/* 0 when a connect to 127.0.0.1:port completes within half a second */
static int connects_within(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct pollfd p = { .events = POLLOUT };
	int err = 0, r;
	socklen_t el = sizeof(err);

	p.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	r = connect(p.fd, (struct sockaddr *)&a, sizeof(a));
	if (r < 0 && errno == EINPROGRESS)
		r = poll(&p, 1, 500) == 1 && getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
		    err == 0 ? 0 : -1;
	close(p.fd);
	return r;
}

/* a listener, bound first through bind() (an allowed address) or not at all */
static int listener(bool bind_first, uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || (bind_first && bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) ||
	    listen(fd, 4) < 0 || getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* listen() first, then a bind the hook allows but the kernel refuses
 * (EINVAL: already bound by the autobind) */
static int listener_then_bind(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || listen(fd, 4) < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno != EINVAL)
		return -1;
	if (getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

/* a bind to a port in use (EADDRINUSE after the hook allowed it), then
 * listen(): the autobind takes another port on every address */
static int listener_after_failed_bind(uint16_t busy, uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(busy),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno != EADDRINUSE)
		return -1;
	if (listen(fd, 4) < 0 || getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static int child_listen(void *arg)
{
	uint16_t p_auto, p_bound, p_late, p_busy;
	int l_auto = listener(false, &p_auto), l_bound = listener(true, &p_bound);
	int l_late = listener_then_bind(&p_late);
	int l_busy = listener_after_failed_bind(p_bound, &p_busy);

	(void)arg;
	if (l_auto < 0 || l_bound < 0)
		return 1;
	/* never bound through the hook: no connection reaches it */
	if (connects_within(p_auto) == 0)
		return 2;
	if (connects_within(p_bound) != 0)
		return 3;
	/* a bind the hook allowed but that failed opens nothing */
	if (l_late < 0 || connects_within(p_late) == 0)
		return 4;
	if (l_busy < 0 || connects_within(p_busy) == 0)
		return 5;
	return 0;
}

/*
 * listen() without bind() binds to an ephemeral port on every address with
 * no bind hook: connections to such a listener made below the attach point
 * are dropped as they arrive; a listener bound through the hook works, and
 * outside the cgroup nothing changes.
 */
START_TEST(test_listen_without_bind_gets_nothing)
{
	uint16_t p;
	int l, status;

	load(false, SHK_EBPF_ALLOW);
	l = listener(false, &p);
	ck_assert_int_ge(l, 0);
	ck_assert_int_eq(connects_within(p), 0);
	close(l);
	status = in_cgroup(child_listen, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

static uint16_t port_at2; /* a listener on 127.0.0.2, outside the cgroup */

/* errno of a TCP connect to 0.0.0.0:port from a socket bound to src first */
static int connect_any_from(const char *src, uint16_t port)
{
	struct sockaddr_in b = { .sin_family = AF_INET };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), r;

	inet_pton(AF_INET, src, &b.sin_addr);
	r = bind(fd, (struct sockaddr *)&b, sizeof(b)) < 0 ? -errno
	    : connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? errno : 0;
	close(fd);
	return r;
}

static int child_any_from_bound(void *arg)
{
	(void)arg;
	/* bound to 127.0.0.2 (binding there is allowed): 0.0.0.0 goes there,
	 * and connecting there is not */
	if (connect_any_from("127.0.0.2", port_at2) != EPERM)
		return 1;
	/* bound to 127.0.0.1: 0.0.0.0 goes to 127.0.0.1, allowed */
	if (connect_any_from("127.0.0.1", port_ok) != 0)
		return 2;
	return 0;
}

/*
 * 0.0.0.0 as a destination goes to the socket's own source address when it
 * is bound: judged as that address (not as 127.0.0.1), and the connect is
 * pinned there.
 */
START_TEST(test_unspecified_follows_the_bound_source)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_DENY };
	struct shk_ebpf_net_rule rules[2] = {
		{ .family = AF_INET, .prefix = 32, .port_lo = 0, .port_hi = 65535,
		  .ops = SHK_EBPF_OP_ALL, .action = SHK_EBPF_ALLOW, .tool_id = SHK_EBPF_NO_TOOL },
		{ .family = AF_INET, .prefix = 32, .port_lo = 0, .port_hi = 65535,
		  .ops = SHK_EBPF_OP_BIND, .action = SHK_EBPF_ALLOW, .tool_id = SHK_EBPF_NO_TOOL },
	};
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), status;

	inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(l, 4), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &al), 0);
	port_at2 = ntohs(a.sin_port);
	/* the attack works without the programs */
	ck_assert_int_eq(connect_any_from("127.0.0.2", port_at2), 0);
	inet_pton(AF_INET, "127.0.0.1", rules[0].addr);
	inet_pton(AF_INET, "127.0.0.2", rules[1].addr);
	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	ck_assert_int_eq(shk_ebpf_set_net_rules(E, rules, 2), 0);
	ck_assert_int_eq(shk_ebpf_attach(E, cg_fd), 0);
	status = in_cgroup(child_any_from_bound, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	close(l);
}
END_TEST

/* errno of socket(fam, type, proto), 0 when made; closes what it made */
static int try_socket(int fam, int type, int proto)
{
	int fd = socket(fam, type, proto);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int child_sockets(void *arg)
{
	int r, fd;

	(void)arg;
	if (try_socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE) != EPERM ||
	    try_socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE) != EPERM)
		return 1;
	if (try_socket(AF_INET, SOCK_RAW, IPPROTO_RAW) != EPERM ||
	    try_socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6) != EPERM)
		return 2;
	/* ping sockets, where the group range lets them be made at all (as in
	 * a container's network namespace): a namespace of this child's own */
	if (unshare(CLONE_NEWNET) < 0)
		return 3;
	fd = open("/proc/sys/net/ipv4/ping_group_range", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0 2147483647", 12) != 12)
		return 4;
	close(fd);
	if (try_socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP) != EPERM ||
	    try_socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6) != EPERM)
		return 5;
	/* what the hooks see is still made */
	if (try_socket(AF_INET, SOCK_STREAM, 0) != 0 || try_socket(AF_INET6, SOCK_DGRAM, 0) != 0 ||
	    try_socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP) != 0 ||
	    try_socket(AF_INET6, SOCK_STREAM, IPPROTO_TCP) != 0)
		return 6;
	/* MPTCP: its listening subflow is a socket no hook sees */
	r = try_socket(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */);
	if (r != EPERM && r != EPROTONOSUPPORT)
		return 7;
	return 0;
}

/*
 * Sockets whose calls no hook sees (UDP-Lite: no connect hook; ping, raw:
 * no address hook; MPTCP: a kernel-made listener) are refused below the
 * attach point; outside it they are made as before.
 */
START_TEST(test_unhooked_sockets_refused)
{
	int status;

	load(false, SHK_EBPF_ALLOW);
	ck_assert_int_eq(try_socket(AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE), 0);
	ck_assert_int_eq(try_socket(AF_INET, SOCK_RAW, IPPROTO_RAW), 0);
	status = in_cgroup(child_sockets, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

/* 0 or the errno of setsockopt(fd, level, name, v, len) on a fresh socket */
static int try_sockopt(int family, int level, int name, const void *v, socklen_t len)
{
	int fd = socket(family, SOCK_DGRAM, 0);
	int r = fd < 0 ? errno : setsockopt(fd, level, name, v, len) < 0 ? errno : 0;

	if (fd >= 0)
		close(fd);
	return r;
}

static const unsigned char lsrr[8] = { 1 /* NOP */, 131 /* LSRR */, 7, 4, 127, 0, 0, 2 };

/* 0 or the errno of a UDP send to 127.0.0.1:port_ok carrying IP options */
static int send_with_options(const unsigned char *opt, size_t len)
{
	union { char b[CMSG_SPACE(40)]; struct cmsghdr a; } u;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port_ok),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct iovec iov = { "x", 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			     .msg_controllen = CMSG_SPACE(len) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), r;

	memset(&u, 0, sizeof(u));
	u.a.cmsg_level = IPPROTO_IP;
	u.a.cmsg_type = IP_RETOPTS;
	u.a.cmsg_len = CMSG_LEN(len);
	if (len)
		memcpy(CMSG_DATA(&u.a), opt, len);
	/* connected: the send itself carries no address for a hook to see */
	if (!len)
		mh.msg_controllen = 0;
	r = connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 ? errno :
	    sendmsg(fd, &mh, 0) < 0 ? errno : 0;
	close(fd);
	return r;
}

/*
 * 0 or the errno of a raw IPv6 packet to ::1 (the header written here) with
 * a routing header of type rt first, or none (rt < 0): what the egress
 * program parses, whoever built the header.
 */
static int send_raw6(int rt)
{
	unsigned char pkt[64] = { 0x60, 0, 0, 0, 0, 24, 59 /* no next header */, 64 };
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = raw6_early >= 0 ? dup(raw6_early) : socket(AF_INET6, SOCK_RAW, IPPROTO_RAW), r;

	pkt[23] = 1; /* source ::1 */
	pkt[39] = 1; /* destination ::1 */
	if (rt >= 0) {
		pkt[6] = 43;                    /* routing header follows */
		pkt[40] = 59;                   /* then nothing */
		pkt[41] = 2;                    /* 16 bytes of address after 8 */
		pkt[42] = (unsigned char)rt;
		pkt[43] = 1;                    /* segments left */
		pkt[63] = 2;                    /* the hop: ::2 */
	}
	r = fd < 0 ? errno : sendto(fd, pkt, 40 + 24, 0, (struct sockaddr *)&to, sizeof(to)) < 0
			? errno : 0;
	if (fd >= 0)
		close(fd);
	return r;
}

/* setsockopt through the i386 entry (int 0x80), which a 64-bit process may
 * use: __sys_setsockopt runs no cgroup setsockopt program for compat calls */
static long compat_setsockopt(int fd, int level, int name, const void *v, unsigned len)
{
	long r;

	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "0"(366L /* i386 setsockopt */), "b"((long)fd), "c"((long)level),
			   "d"((long)name), "S"((long)(unsigned long)v), "D"((long)len)
			 : "memory", "r8", "r9", "r10", "r11");
	return r;
}

/* Has the kernel an i386 entry at all (IA32_EMULATION, ia32_emulation=1)? */
static bool ia32_entry(void)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		long r;

		__asm__ volatile("int $0x80" : "=a"(r) : "0"(20L /* i386 getpid */)
				 : "memory", "r8", "r9", "r10", "r11");
		_exit(r == getpid() ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * A type-4 segment routing header (hop ::1, then ::1) set as a sticky
 * option through the compat entry, then a datagram to ::1 on that socket:
 * the errno of the send; EPERM also when the option itself was refused; -1
 * when it failed otherwise (nothing would then be tested).
 */
static int send_compat_srh6(void)
{
	unsigned char *srh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(port_ok),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_DGRAM, 0), r;

	if (srh == MAP_FAILED || fd < 0)
		return -1;
	srh[1] = 4;       /* two 16-byte segments */
	srh[2] = 4;       /* routing type 4 */
	srh[3] = 1;       /* segments left */
	srh[4] = 1;       /* last entry */
	srh[8 + 15] = 1;  /* ::1 */
	srh[24 + 15] = 1; /* ::1, the first hop */
	r = (int)compat_setsockopt(fd, IPPROTO_IPV6, IPV6_RTHDR, srh, 40);
	if (r == 0)
		r = sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ? errno : 0;
	else
		r = r == -EPERM ? EPERM : -1; /* a kernel that hooks compat calls too */
	close(fd);
	munmap(srh, 4096);
	return r;
}

static int child_sockopts(void *arg)
{
	const bool *ia32 = arg;

	static const unsigned char rr[8] = { 7 /* record route */, 7, 4, 0, 0, 0, 0, 1 /* NOP */ };

	unsigned char rh[24] = { 0, 2, 2, 1 }; /* a type-2 routing header, one hop */
	int one = 1, ttl = 9;

	if (try_sockopt(AF_INET, IPPROTO_IP, IP_OPTIONS, lsrr, sizeof(lsrr)) != EPERM)
		return 1;
	if (try_sockopt(AF_INET6, IPPROTO_IPV6, IPV6_RTHDR, rh, sizeof(rh)) != EPERM)
		return 2;
	/* everything else still reaches the kernel */
	if (try_sockopt(AF_INET, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    try_sockopt(AF_INET, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) != 0)
		return 3;
	/* the same route in one message (via 127.0.0.2, denied) is dropped as
	 * it leaves; other options and plain sends pass */
	if (send_with_options(lsrr, sizeof(lsrr)) != EPERM)
		return 4;
	if (send_with_options(rr, sizeof(rr)) != 0 || send_with_options(NULL, 0) != 0)
		return 5;
	/* IPv6 routing headers of every type (type 4, segment routing, needs no
	 * privilege as a socket option) are dropped; a plain packet passes */
	if (send_raw6(0) != EPERM || send_raw6(2) != EPERM || send_raw6(4) != EPERM)
		return 6;
	if (send_raw6(-1) != 0)
		return 7;
	/* the 32-bit entry sets what the setsockopt hook refuses; what it
	 * would route is dropped as it leaves */
	if (*ia32 && send_compat_srh6() != EPERM)
		return 8;
	return 0;
}

/*
 * Source routes would send a judged connect or datagram to another first
 * hop. A connected UDP send with control messages reaches the sendmsg hook
 * with no address (judged as 0.0.0.0:0): a denylist policy, which allows
 * that, is what lets one through to the egress hook. 127.0.0.2 is denied.
 */
START_TEST(test_source_routes_refused)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = false };
	struct shk_ebpf_net_rule deny = { .family = AF_INET, .prefix = 32, .port_lo = 0,
					  .port_hi = 65535, .ops = SHK_EBPF_OP_ALL,
					  .action = SHK_EBPF_DENY, .tool_id = SHK_EBPF_NO_TOOL };
	bool ia32;
	int status;

	inet_pton(AF_INET, "127.0.0.2", deny.addr);
	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	ck_assert_int_eq(shk_ebpf_set_net_rules(E, &deny, 1), 0);
	/* attached by in_cgroup_early_raw once the child has its raw socket */
	/* root outside the cgroup may set or send one: the refusal is the hooks' */
	ck_assert_int_eq(try_sockopt(AF_INET, IPPROTO_IP, IP_OPTIONS, lsrr, sizeof(lsrr)), 0);
	ck_assert_int_eq(send_with_options(lsrr, sizeof(lsrr)), 0);
	ck_assert_int_eq(send_raw6(4), 0);
	/* outside the cgroup the compat route is set and the datagram leaves */
	ia32 = ia32_entry();
	if (ia32)
		ck_assert_int_eq(send_compat_srh6(), 0);
	status = in_cgroup_early_raw(child_sockopts, &ia32);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

struct exec_arg {
	const char *path;
	const char *marker;
};

static int child_exec(void *arg)
{
	const struct exec_arg *x = arg;
	char *const argv[] = { (char *)x->path, "-c", "echo ran > \"$1\"", "sh",
			       (char *)x->marker, NULL };

	execv(argv[0], argv);
	return errno; /* EPERM: refused by the LSM hook */
}

/* A copy of /bin/sh (its own inode) at denied, and the marker names. */
static void denied_copy(char *denied, char *marker, char *marker_ok, size_t len)
{
	int fd = mkstemp(denied);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ebpf_copy_file("/bin/sh", denied);
	snprintf(marker, len, "%s.marker", denied);
	snprintf(marker_ok, len, "%s.ok", denied);
}

START_TEST(test_exec_denied_is_killed)
{
	char denied[] = "/tmp/shk-test-sh-XXXXXX", marker[64], marker_ok[64];
	struct want w = { .kind = SHK_EBPF_EV_EXEC, .verdict = SHK_EBPF_DENY,
			  .reason = SHK_EBPF_R_RULE, .filename = denied };
	struct exec_arg bad = { denied, marker }, good = { "/bin/sh", marker_ok };
	const char *why;
	struct stat st;
	int status;

	denied_copy(denied, marker, marker_ok, sizeof(marker));
	load(true, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_exec_path(E, &why), SHK_EBPF_EXEC_TRACEPOINT);
	ck_assert_str_eq(why, "BPF LSM not requested");
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, denied, SHK_EBPF_DENY), 0);

	status = in_cgroup(child_exec, &bad);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
	ck_assert_int_eq(stat(marker, &st), -1); /* not one instruction of it ran */
	expect_event(&w);

	/* Another image in the cgroup runs. */
	status = in_cgroup(child_exec, &good);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	ck_assert_int_eq(stat(marker_ok, &st), 0);
	unlink(marker_ok);
	unlink(denied);
}
END_TEST

/* maj:min that /proc/self/mountinfo gives for the mount at dir */
static bool mountinfo_dev(const char *dir, unsigned *maj, unsigned *min)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[1024];
	bool found = false;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %u:%u %*s %1023s", maj, min, mp) == 3 && !strcmp(mp, dir))
			found = true; /* the last one mounted there */
	fclose(f);
	return found;
}

/*
 * An overlay whose lower layer is on another file system (a tmpfs) reports
 * a per-layer pseudo device in stat(2) for the files of that layer, while
 * the exec hook sees the overlay superblock's device. A rule keyed by stat's
 * device never matched there and the denied program ran; the rule must
 * kill it.
 */
START_TEST(test_exec_rule_on_overlay)
{
	char base[] = "/tmp/shk-test-ovl-XXXXXX", lower[256], upper[256], work[256], merged[256];
	char image[300], marker[300], opts[1024];
	struct exec_arg bad = { image, marker };
	unsigned maj, min;
	struct stat st;
	int status;

	/* mounts of a namespace of this test's own: gone with it, even after a
	 * failed assertion */
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(lower, sizeof(lower), "%s/lower", base);
	snprintf(upper, sizeof(upper), "%s/upper", base);
	snprintf(work, sizeof(work), "%s/work", base);
	snprintf(merged, sizeof(merged), "%s/merged", base);
	ck_assert_int_eq(mkdir(lower, 0755) | mkdir(upper, 0755) | mkdir(work, 0755) |
			 mkdir(merged, 0755), 0);
	ck_assert_int_eq(mount("shk-lower", lower, "tmpfs", 0, "size=16m"), 0);
	snprintf(image, sizeof(image), "%s/sh", lower);
	ebpf_copy_file("/bin/sh", image);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
	ck_assert_int_eq(mount("shk-ovl", merged, "overlay", 0, opts), 0);
	snprintf(image, sizeof(image), "%s/sh", merged);
	snprintf(marker, sizeof(marker), "%s/ran", base);
	/* not vacuous: stat's device is not the superblock's here */
	ck_assert(mountinfo_dev(merged, &maj, &min));
	ck_assert_int_eq(stat(image, &st), 0);
	ck_assert_msg(major(st.st_dev) != maj || minor(st.st_dev) != min,
		      "stat reports the overlay's own device %u:%u: nothing to test", maj, min);

	load(true, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, image, SHK_EBPF_DENY), 0);
	status = in_cgroup(child_exec, &bad);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x", status);
	ck_assert_int_eq(stat(marker, &st), -1);

	ck_assert_int_eq(umount(merged), 0);
	ck_assert_int_eq(umount(lower), 0);
	/* the overlay leaves an empty work/work behind */
	snprintf(opts, sizeof(opts), "%s/work", work);
	ck_assert_int_eq(rmdir(opts) | rmdir(work) | rmdir(upper) | rmdir(merged) | rmdir(lower) |
			 rmdir(base), 0);
}
END_TEST

/*
 * The default (SHK_EBPF_LSM_AUTO) takes BPF LSM exactly when the probe says
 * it is usable, else the tracepoint, and says why. Where LSM loads, a denied
 * exec fails with EPERM and the caller lives on; elsewhere it is killed.
 * Whichever path this kernel gives is the one exercised.
 */
START_TEST(test_exec_path_auto)
{
	char denied[] = "/tmp/shk-test-sh-XXXXXX", marker[64], marker_ok[64], why[512];
	struct want w = { .kind = SHK_EBPF_EV_EXEC, .verdict = SHK_EBPF_DENY,
			  .reason = SHK_EBPF_R_RULE, .filename = denied };
	struct exec_arg bad = { denied, marker };
	int usable = shk_probe_bpf_lsm(why, sizeof(why));
	const char *got;
	struct stat st;
	int status;

	denied_copy(denied, marker, marker_ok, sizeof(marker));
	ck_assert_ptr_nonnull(strstr(why, "active LSMs: "));
	ck_assert_ptr_nonnull(strstr(why, "lockdown: "));
	load_lsm(true, SHK_EBPF_ALLOW, SHK_EBPF_LSM_AUTO);
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, denied, SHK_EBPF_DENY), 0);
	status = in_cgroup(child_exec, &bad);
	if (usable == 0) {
		ck_assert_int_eq(shk_ebpf_exec_path(E, &got), SHK_EBPF_EXEC_LSM);
		ck_assert_str_eq(got, "");
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == EPERM, "status %#x",
			      status);
		w.lsm = true;
	} else {
		/* An EPERM on load comes with the probe's diagnosis (tp_btf loads or not). */
		if (usable == -EPERM)
			ck_assert_ptr_nonnull(strstr(why, "a tp_btf program"));
		ck_assert_int_eq(shk_ebpf_exec_path(E, &got), SHK_EBPF_EXEC_TRACEPOINT);
		ck_assert_str_eq(got, why); /* the probe's own words, not a summary */
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x",
			      status);
	}
	ck_assert_int_eq(stat(marker, &st), -1);
	expect_event(&w);
	ck_assert_int_eq(shk_ebpf_detach(E), 0);
	ck_assert_int_eq(shk_ebpf_exec_path(E, NULL), SHK_EBPF_EXEC_NONE);
	unlink(denied);
}
END_TEST

static int child_connect_ok(void *arg)
{
	return try_connect(*(uint16_t *)arg, false);
}

START_TEST(test_stateful_and_once)
{
	struct shk_ebpf_dest d = { .cgroup_id = 0, .family = AF_INET, .port = port_ok,
				   .proto = IPPROTO_TCP, .op = SHK_EBPF_OP_CONNECT };
	struct want once = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_ALLOW,
			     .reason = SHK_EBPF_R_ONCE, .port = port_denied,
			     .digest = 0x5eed5eed12345678ull };
	int status;

	inet_pton(AF_INET, "127.0.0.1", d.addr);
	load(false, SHK_EBPF_ALLOW);

	/* decide() denied the destination: the kernel now refuses it. */
	ck_assert_int_eq(shk_ebpf_deny_dest(E, &d, 1), 0);
	status = in_cgroup(child_connect_ok, &port_ok);
	ck_assert_int_eq(WEXITSTATUS(status), EPERM);
	ck_assert_int_eq(shk_ebpf_undeny_dest(E, &d), 0);
	status = in_cgroup(child_connect_ok, &port_ok);
	ck_assert_int_eq(WEXITSTATUS(status), 0);

	/* Tool class denied: rule 1 carries tool 8. */
	ck_assert_int_eq(shk_ebpf_deny_tool(E, 8, true), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), EPERM);
	ck_assert_int_eq(shk_ebpf_deny_tool(E, 8, false), 0);

	/* Breaker open: everything is refused. */
	ck_assert_int_eq(shk_ebpf_set_breaker(E, true), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), EPERM);
	ck_assert_int_eq(shk_ebpf_set_breaker(E, false), 0);

	/* An approval lets exactly one retry of the denied destination through. */
	d.port = port_denied;
	ck_assert_int_eq(shk_ebpf_allow_once(E, &d, once.digest), 0);
	ck_assert_int_eq(shk_ebpf_allow_once(E, &d, once.digest), -EEXIST);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), EPERM);
	expect_event(&once);
	ck_assert_int_eq(once.found, 1);
}
END_TEST

/*
 * Entries keyed to the caller's own cgroup (not cgroup 0): the hook fetches
 * its cgroup id only when approvals or stateful denies wait, and must still
 * find these and report the id in both the record and its destination.
 */
START_TEST(test_stateful_by_cgroup)
{
	struct shk_ebpf_dest d = { .family = AF_INET, .port = port_ok, .proto = IPPROTO_TCP,
				   .op = SHK_EBPF_OP_CONNECT };
	struct want deny = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_DENY,
			     .reason = SHK_EBPF_R_STATEFUL, .port = port_ok };
	struct want once = { .kind = SHK_EBPF_EV_NET, .verdict = SHK_EBPF_ALLOW,
			     .reason = SHK_EBPF_R_ONCE, .port = port_denied,
			     .digest = 0x0cc0cc0c87654321ull };

	inet_pton(AF_INET, "127.0.0.1", d.addr);
	load(false, SHK_EBPF_ALLOW);
	d.cgroup_id = cg_id;

	ck_assert_int_eq(shk_ebpf_deny_dest(E, &d, 1), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), EPERM);
	expect_event(&deny);
	ck_assert_int_eq(shk_ebpf_undeny_dest(E, &d), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_ok)), 0);

	d.port = port_denied;
	ck_assert_int_eq(shk_ebpf_allow_once(E, &d, once.digest), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), EPERM);
	expect_event(&once);
	ck_assert_int_eq(once.found, 1);
	for (size_t k = 0; k < nseen; k++)
		if (seen[k].kind == SHK_EBPF_EV_NET)
			ck_assert_uint_eq(seen[k].dest.cgroup_id, cg_id);
}
END_TEST

/* child_exec's argv for x, as the kernel lays it out (NUL-separated). */
static size_t exec_args(const struct exec_arg *x, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%c-c%cecho ran > \"$1\"%csh%c%s", x->path, 0, 0, 0, 0,
			 x->marker);

	ck_assert_int_lt(n, (int)len);
	return (size_t)n + 1;
}

static bool ran(const char *marker)
{
	struct stat st;
	bool yes = stat(marker, &st) == 0;

	unlink(marker);
	return yes;
}

/* Two execs of the approved argv at once: the number that ran. */
static int racing_execs(struct exec_arg *x)
{
	int go[2], ok = 0;
	pid_t pid[2];
	char c;

	ck_assert_int_eq(pipe(go), 0);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0) {
			close(go[1]);
			if (shk_cgroup_enter(cg_path, getpid()) < 0 || read(go[0], &c, 1) != 0)
				_exit(100);
			_exit(child_exec(x));
		}
	}
	close(go[0]);
	close(go[1]); /* both read EOF: go */
	for (int i = 0; i < 2; i++) {
		int st;

		ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return ok;
}

/*
 * A single-use exec approval: bound to cgroup, image and argv bytes; another
 * argv is killed and leaves it; the approved argv runs once (of two racing
 * execs, one); the breaker wins over it; withdrawn, nothing runs.
 */
START_TEST(test_exec_once)
{
	char img[] = "/tmp/shk-test-sh-XXXXXX", marker[64], other[64], args[512], args2[512], big[600];
	struct want w = { .kind = SHK_EBPF_EV_EXEC, .verdict = SHK_EBPF_ALLOW,
			  .reason = SHK_EBPF_R_ONCE, .filename = img, .digest = 0xe8ecull << 32 };
	struct exec_arg approved = { img, marker }, changed = { img, other };
	struct shk_ebpf_exec_key k = { .cgroup_id = 0 };
	struct stat st;
	size_t n, n2;

	denied_copy(img, marker, other, sizeof(marker));
	load(true, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_set_exec_rule(E, img, SHK_EBPF_HITL), 0);
	ck_assert_int_eq(stat(img, &st), 0);
	k.dev = ((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev);
	k.ino = st.st_ino;
	n = exec_args(&approved, args, sizeof(args));
	memset(big, 'a', sizeof(big));
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), -EINVAL); /* cgroup 0 */
	k.cgroup_id = cg_id;
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, 0, w.digest), -EINVAL);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, big, 512, w.digest), -E2BIG);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), 0);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), -EEXIST);

	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &changed)), SIGKILL);
	ck_assert(!ran(other));
	ck_assert_int_eq(shk_ebpf_set_breaker(E, true), 0);
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &approved)), SIGKILL);
	ck_assert(!ran(marker));
	ck_assert_int_eq(shk_ebpf_set_breaker(E, false), 0);
	ck_assert_int_eq(racing_execs(&approved), 1);
	ck_assert(ran(marker));
	expect_event(&w);
	ck_assert_int_eq(w.found, 1);
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &approved)), SIGKILL);
	ck_assert_int_eq(shk_ebpf_revoke_exec_once(E, &k, args, n), -ENOENT); /* taken */

	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), 0);
	ck_assert_int_eq(shk_ebpf_revoke_exec_once(E, &k, args, n), 0);
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &approved)), SIGKILL);
	ck_assert(!ran(marker));

	/* approvals of one image with different argv wait side by side, each
	 * lets its own argv run once */
	n2 = exec_args(&changed, args2, sizeof(args2));
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args, n, w.digest), 0);
	ck_assert_int_eq(shk_ebpf_allow_exec_once(E, &k, args2, n2, w.digest), 0);
	ck_assert_int_eq(in_cgroup(child_exec, &changed), 0);
	ck_assert(ran(other));
	ck_assert_int_eq(in_cgroup(child_exec, &approved), 0);
	ck_assert(ran(marker));
	ck_assert_int_eq(WTERMSIG(in_cgroup(child_exec, &changed)), SIGKILL);
	ck_assert(!ran(other));
	ck_assert_int_eq(shk_ebpf_revoke_exec_once(E, &k, args2, n2), -ENOENT);
	unlink(img);
}
END_TEST

static const enum bpf_attach_type hooks[] = {
	BPF_CGROUP_INET4_CONNECT, BPF_CGROUP_INET6_CONNECT, BPF_CGROUP_UDP4_SENDMSG,
	BPF_CGROUP_UDP6_SENDMSG, BPF_CGROUP_INET4_BIND, BPF_CGROUP_INET6_BIND,
	BPF_CGROUP_SETSOCKOPT, BPF_CGROUP_INET_EGRESS, BPF_CGROUP_INET_SOCK_CREATE,
	BPF_CGROUP_INET_INGRESS,
};

/* Raw BPF_PROG_QUERY: the test must not share the loader's view (libbpf). */
static uint32_t attached(void)
{
	uint32_t total = 0;

	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		uint32_t ids[16];
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.query.target_fd = (uint32_t)cg_fd;
		a.query.attach_type = hooks[i];
		a.query.prog_ids = (uint64_t)(uintptr_t)ids;
		a.query.prog_cnt = 16;
		ck_assert_int_eq(syscall(__NR_bpf, BPF_PROG_QUERY, &a, sizeof(a)), 0);
		total += a.query.prog_cnt;
	}
	return total;
}

START_TEST(test_detach_leaves_nothing)
{
	load(true, SHK_EBPF_ALLOW);
	ck_assert_uint_eq(attached(), 10);
	ck_assert_int_eq(shk_ebpf_detach(E), 0);
	ck_assert_uint_eq(attached(), 0);
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), 0);
	/* Freeing without detach detaches too. */
	shk_ebpf_free(E);
	E = NULL;
	load(false, SHK_EBPF_ALLOW);
	ck_assert_uint_eq(attached(), 10);
	shk_ebpf_free(E);
	E = NULL;
	ck_assert_uint_eq(attached(), 0);
}
END_TEST

#define RING_TEST_CALLS 120

static int child_connects_n(void *arg)
{
	int refused = 0;

	for (int i = 0; i < RING_TEST_CALLS; i++) {
		int r = try_connect(*(uint16_t *)arg, false);

		if (r == EPERM)
			refused++;
		else if (r != 0)
			return 100;
	}
	return refused;
}

/* A full ring refuses allowed calls rather than letting them pass unreported. */
START_TEST(test_full_ring_refuses_unreported_calls)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = true,
				   .ring_bytes = (uint32_t)sysconf(_SC_PAGESIZE) };
	struct shk_ebpf_stats st;
	uint64_t delivered;
	int refused;

	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	ck_assert_int_eq(shk_ebpf_attach(E, cg_fd), 0);
	/* Nobody consumes: a page holds some dozens of network records (~100
	 * bytes each, SHK_BPF_NET_EVENT_SIZE), the rest must be refused. */
	refused = WEXITSTATUS(in_cgroup(child_connects_n, &port_ok));
	ck_assert_int_ge(refused, RING_TEST_CALLS - 64);
	ck_assert_int_le(refused, RING_TEST_CALLS - 16);
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	ck_assert_uint_eq(st.refused_unreported, (uint64_t)refused);
	while (shk_ebpf_poll(E, 0, on_event, NULL) > 0)
		;
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	delivered = st.delivered;
	/* Every call that passed was reported. */
	ck_assert_uint_eq(delivered, (uint64_t)(RING_TEST_CALLS - refused));
}
END_TEST

START_TEST(test_pin_survives_and_unpins)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "/sys/fs/bpf/shk-test-%d", (int)getpid());
	load(false, SHK_EBPF_ALLOW);
	ck_assert_int_eq(shk_ebpf_pin(E, dir), 0);
	shk_ebpf_free(E);
	E = NULL;
	ck_assert_uint_eq(attached(), 10); /* the pins hold the links */
	ck_assert_int_eq(WEXITSTATUS(in_cgroup(child_connect_ok, &port_denied)), EPERM);
	ck_assert_int_eq(shk_ebpf_unpin(dir), 0);
	/* The last reference of an unpinned link is dropped from a kernel work queue. */
	for (int i = 0; i < 100 && attached(); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	ck_assert_uint_eq(attached(), 0);
}
END_TEST

int main(void)
{
	struct statfs sfs;
	Suite *s;
	TCase *tc;

	ebpf_test_parent(parent, sizeof(parent), "ebpf");
	/* bpffs at its usual place, for the pinning test (systemd mounts it too). */
	if (statfs("/sys/fs/bpf", &sfs) < 0 || sfs.f_type != BPF_FS_MAGIC_)
		if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL) < 0) {
			shk_cgroup_remove(parent);
			shk_test_skip("cannot mount bpffs on /sys/fs/bpf: %s", strerror(errno));
		}

	s = suite_create("ebpf-live");
	tc = tcase_create("cgroup");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_connect_policy);
	tcase_add_test(tc, test_source_routes_refused);
	tcase_add_test(tc, test_unspecified_is_loopback);
	tcase_add_test(tc, test_unspecified_follows_the_bound_source);
	tcase_add_test(tc, test_unhooked_sockets_refused);
	tcase_add_test(tc, test_listen_without_bind_gets_nothing);
	tcase_add_test(tc, test_exec_denied_is_killed);
	tcase_add_test(tc, test_exec_rule_on_overlay);
	tcase_add_test(tc, test_exec_path_auto);
	tcase_add_test(tc, test_stateful_and_once);
	tcase_add_test(tc, test_stateful_by_cgroup);
	tcase_add_test(tc, test_exec_once);
	tcase_add_test(tc, test_detach_leaves_nothing);
	tcase_add_test(tc, test_pin_survives_and_unpins);
	tcase_add_test(tc, test_full_ring_refuses_unreported_calls);
	suite_add_tcase(s, tc);
	/* Every test's cgroup lives below parent: removed after the run whatever a test did. */
	return ebpf_run_suite(s, parent);
}
