/* SPDX-License-Identifier: MIT */
/*
 * Live tests of attach's network hardening (root, cgroup v2): sockets no
 * hook sees, 0.0.0.0/:: destinations, servers opened without a judged bind,
 * source routes. Same fixture as test_ebpf.c (ebpf_live.h).
 */
#include "ebpf_live.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

/* A raw socket made in the cgroup before the programs were attached:
 * below the attach point shk_sock_create refuses new raw sockets, but one
 * made earlier still sends through the egress program. */
static int raw6_early = -1;

/*
 * in_cgroup, but the programs (E, opened) are attached while the child, in
 * the cgroup already, is between before(arg) and after(arg): what a socket
 * made before the attach goes through. The wait status of the child.
 */
static int in_cgroup_attach_between(int (*before)(void *), int (*after)(void *), void *arg)
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

static int make_raw6_early(void *arg)
{
	(void)arg;
	raw6_early = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	return raw6_early < 0 ? 103 : 0;
}

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

/* an IPv6 stream socket reached through 127.0.0.1: autobound (every
 * address) or bound first to [::ffff:127.0.0.1]:0 through the hook */
static int listener6(bool bind_first, uint16_t *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
	if (fd < 0 || (bind_first && bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) ||
	    listen(fd, 4) < 0 || getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*port = ntohs(a.sin6_port);
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
	/* the same for IPv6 sockets (the bind6 hook and an IPv6 listen) */
	if (listener6(false, &p_auto) < 0 || connects_within(p_auto) == 0)
		return 6;
	if (listener6(true, &p_bound) < 0 || connects_within(p_bound) != 0)
		return 7;
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

/* TCP sockets a child made in the cgroup before the attach */
struct early_socks {
	int listening, unbound, bound, bind_late;
	uint16_t p_listening;
};

static int make_early_socks(void *arg)
{
	struct early_socks *s = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	s->listening = listener(false, &s->p_listening);
	s->unbound = socket(AF_INET, SOCK_STREAM, 0);
	s->bound = socket(AF_INET, SOCK_STREAM, 0);
	s->bind_late = socket(AF_INET, SOCK_STREAM, 0);
	if (s->listening < 0 || s->unbound < 0 || s->bound < 0 || s->bind_late < 0 ||
	    bind(s->bound, (struct sockaddr *)&a, sizeof(a)) < 0)
		return 103;
	return 0;
}

/* listen() now on fd; 0 when a connect to its port completes */
static int listen_then_connect(int fd)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);

	if (listen(fd, 4) < 0 || getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	return connects_within(ntohs(a.sin_port));
}

/* This process's descriptor of the map named name, or -1 */
static int own_map(const char *name)
{
	for (int fd = 0; fd < 1024; fd++) {
		struct bpf_map_info info = { 0 };
		uint32_t len = sizeof(info);
		char p[64], link[64];
		ssize_t n;

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if ((n = readlink(p, link, sizeof(link) - 1)) < 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, "anon_inode:bpf-map") &&
		    bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && !strcmp(info.name, name))
			return fd;
	}
	return -1;
}

#define MARK_BEFORE 4u /* bpf/shackle.bpf.c SHK_MARK_BEFORE */

/* The flags of fd's mark in sock_marks (this process's descriptor of the
 * map), -errno without one */
static int mark_of(int fd)
{
	uint32_t m[7]; /* struct shk_sock_mark */
	int map = own_map("sock_marks");

	if (map < 0)
		return -EBADF;
	if (bpf_map_lookup_elem(map, &fd, m) < 0)
		return -errno;
	return (int)m[0];
}

static int child_early_socks(void *arg)
{
	struct early_socks *s = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	/* listening since before the attach: marked by the scan, left alone */
	if (mark_of(s->listening) != MARK_BEFORE || connects_within(s->p_listening) != 0)
		return 1;
	/* outside the cgroup: not marked (the gate never runs for it) */
	if (mark_of(lst[0]) != -ENOENT)
		return 5;
	/* a listen() after the attach, on a socket whose address no bind hook
	 * judged (autobound, or bound before the attach), gets nothing */
	if (listen_then_connect(s->unbound) == 0)
		return 2;
	if (listen_then_connect(s->bound) == 0)
		return 3;
	/* bound through the hook after the attach: works, whenever it was made */
	if (bind(s->bind_late, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen_then_connect(s->bind_late) != 0)
		return 4;
	return 0;
}

/*
 * What the gate judges is a listen() made after the attach, whenever the
 * socket was made: a socket made before the attach and listening after it
 * without a bind the hook allowed gets no connection, one listening since
 * before the attach is marked so by the scan at the attach and keeps
 * working; a listener outside the cgroup is not marked.
 */
START_TEST(test_listen_after_the_attach_is_gated)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = false };
	struct early_socks s;
	int status;

	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	status = in_cgroup_attach_between(make_early_socks, child_early_socks, &s);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

static int child_unmarked(void *arg)
{
	struct early_socks *s = arg;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int map = own_map("sock_marks");

	/* the scan's mark taken away: an unmarked listener gets nothing */
	if (map < 0 || (bpf_map_delete_elem(map, &s->listening) < 0 && errno != ENOENT))
		return 1;
	if (connects_within(s->p_listening) == 0)
		return 2;
	/* marked, bound where the hook allowed */
	if (bind(s->bind_late, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen_then_connect(s->bind_late) != 0)
		return 3;
	return 0;
}

/*
 * The gate drops for every unmarked listener: the absence of a mark never
 * means "listening since before the attach" (the scan marks those), so a
 * listen() whose callback has not run yet, or whose mark failed, gets
 * nothing. The mark is removed by hand here.
 */
START_TEST(test_unmarked_listener_gets_nothing)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = false };
	struct early_socks s;
	int status;

	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	status = in_cgroup_attach_between(make_early_socks, child_unmarked, &s);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

/* a listener in a network namespace of its own; starve: marks fail there */
struct netns_socks {
	bool starve;
	int listening;
	uint16_t p_listening;
};

static int lo_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = -1;

	if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	if (fd >= 0)
		close(fd);
	return r;
}

static int make_netns_listener(void *arg)
{
	struct netns_socks *s = arg;
	int fd;

	if (unshare(CLONE_NEWNET) < 0 || lo_up() < 0)
		return 110;
	/* net.core.optmem_max (per namespace) bounds what a socket's storage
	 * may take: at 0 no mark can be made */
	if (s->starve) {
		fd = open("/proc/sys/net/core/optmem_max", O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			return 111;
		close(fd);
	}
	s->listening = listener(false, &s->p_listening);
	return s->listening < 0 ? 112 : 0;
}

static int child_netns(void *arg)
{
	struct netns_socks *s = arg;
	uint16_t p;

	if (!s->starve)
		return mark_of(s->listening) == MARK_BEFORE && connects_within(s->p_listening) == 0
		       ? 0 : 1;
	/* neither the scan's mark nor a listen callback's can be made */
	if (connects_within(s->p_listening) == 0)
		return 2;
	if (listener(true, &p) < 0 || connects_within(p) == 0)
		return 3;
	return 0;
}

/*
 * The scan at the attach walks every network namespace: a listener from
 * before the attach in a namespace of its own is marked and keeps working.
 * Where marks cannot be made (no memory: optmem_max 0 in that namespace),
 * the scan's and the listen callback's failures leave the listeners
 * unmarked, the gate drops for them, and the stats count them.
 */
START_TEST(test_listen_marks_in_namespaces)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = false };
	struct shk_ebpf_stats st;
	struct netns_socks s = { .starve = false };
	int status;

	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	status = in_cgroup_attach_between(make_netns_listener, child_netns, &s);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	ck_assert_uint_eq(st.listeners_unmarked, 0);
	shk_ebpf_free(E);
	E = NULL;
	s.starve = true;
	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	status = in_cgroup_attach_between(make_netns_listener, child_netns, &s);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	ck_assert_int_eq(shk_ebpf_stats(E, &st), 0);
	ck_assert_uint_eq(st.listeners_unmarked, 2);
}
END_TEST

/* In a Landlock domain the listener's process is outside of, attaches E:
 * the scan cannot enter that namespace and must say so in the stats. */
static int scan_from_domain(pid_t listening, int done)
{
	struct shk_ebpf_stats st;
	char p[64], c = 0;
	int fd;

	if (landlock_self() < 0)
		return 120;
	snprintf(p, sizeof(p), "/proc/%d/ns/net", (int)listening);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) >= 0 || errno != EACCES)
		return 121;
	if (shk_ebpf_attach(E, cg_fd) != 0 || shk_ebpf_stats(E, &st) != 0)
		return 122;
	if (st.netns_unentered < 1 || st.netns_unentered_errno != EACCES)
		return 123;
	if (write(done, &c, 1) != 1)
		return 124;
	/* the programs stay attached until the listener's process has checked */
	return read(done, &c, 1) == 0 ? 0 : 125;
}

/*
 * A namespace the scan may not enter (here: its process is outside the
 * scanner's Landlock domain) leaves its listeners unmarked, as one it
 * cannot mark in: the stats count the processes and say why (errno).
 */
START_TEST(test_unenterable_netns_is_counted)
{
	struct shk_ebpf_opts o = { .net_default = SHK_EBPF_ALLOW, .report_allowed = false };
	struct netns_socks s = { .starve = false };
	int ready[2], go[2], status, ts, ss;
	pid_t t, sc;
	char c = 0;

	if (syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) < 0)
		shk_test_skip("Landlock is not enabled in this kernel: %s", strerror(errno));
	ck_assert_int_eq(shk_ebpf_open(&o, &E), 0);
	/* go: the scanner's end tells the listener's to check, and reads EOF
	 * when the listener's process is done */
	ck_assert_int_eq(pipe(ready) | socketpair(AF_UNIX, SOCK_STREAM, 0, go), 0);
	t = fork();
	ck_assert_int_ge(t, 0);
	if (t == 0) {
		close(ready[0]);
		close(go[1]);
		if (shk_cgroup_enter(cg_path, getpid()) < 0 || make_netns_listener(&s) != 0)
			_exit(100);
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(101);
		_exit(connects_within(s.p_listening) == 0 ? 1 : 0); /* unmarked: nothing */
	}
	close(ready[1]);
	close(go[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	sc = fork();
	ck_assert_int_ge(sc, 0);
	if (sc == 0)
		_exit(scan_from_domain(t, go[1]));
	close(go[1]);
	close(ready[0]);
	ck_assert_int_eq(waitpid(t, &ts, 0), t);
	ck_assert_int_eq(waitpid(sc, &ss, 0), sc);
	status = WIFEXITED(ss) && WEXITSTATUS(ss) == 0 ? ts : ss;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x (scanner %#x)",
		      status, ss);
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

	/* made now, below the attach point: refused */
	if (socket(AF_INET6, SOCK_RAW, IPPROTO_RAW) >= 0 || errno != EPERM)
		return 102;

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
	/* attached once the child has its raw socket */
	/* root outside the cgroup may set or send one: the refusal is the hooks' */
	ck_assert_int_eq(try_sockopt(AF_INET, IPPROTO_IP, IP_OPTIONS, lsrr, sizeof(lsrr)), 0);
	ck_assert_int_eq(send_with_options(lsrr, sizeof(lsrr)), 0);
	ck_assert_int_eq(send_raw6(4), 0);
	/* outside the cgroup the compat route is set and the datagram leaves */
	ia32 = ia32_entry();
	if (ia32)
		ck_assert_int_eq(send_compat_srh6(), 0);
	status = in_cgroup_attach_between(make_raw6_early, child_sockopts, &ia32);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

int main(void)
{
	Suite *s;
	TCase *tc;

	ebpf_test_parent(parent, sizeof(parent), "ebpf-net");
	s = suite_create("ebpf-net-live");
	tc = tcase_create("cgroup");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_source_routes_refused);
	tcase_add_test(tc, test_unspecified_is_loopback);
	tcase_add_test(tc, test_unspecified_follows_the_bound_source);
	tcase_add_test(tc, test_unhooked_sockets_refused);
	tcase_add_test(tc, test_listen_without_bind_gets_nothing);
	tcase_add_test(tc, test_listen_after_the_attach_is_gated);
	tcase_add_test(tc, test_unmarked_listener_gets_nothing);
	tcase_add_test(tc, test_listen_marks_in_namespaces);
	tcase_add_test(tc, test_unenterable_netns_is_counted);
	suite_add_tcase(s, tc);
	return ebpf_run_suite(s, parent);
}
