/* SPDX-License-Identifier: MIT */
/*
 * Live tests of attach's listen gate (root, cgroup v2): a TCP server opened
 * without a judged bind gets nothing, for sockets made before the attach
 * too (the scan's marks, in every network namespace), with a failed mark,
 * and with a namespace the scan may not enter. Same fixture as test_ebpf.c
 * (ebpf_live.h).
 */
#include "ebpf_live.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

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

int main(void)
{
	Suite *s;
	TCase *tc;

	ebpf_test_parent(parent, sizeof(parent), "ebpf-listen");
	s = suite_create("ebpf-listen-live");
	tc = tcase_create("cgroup");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_listen_without_bind_gets_nothing);
	tcase_add_test(tc, test_listen_after_the_attach_is_gated);
	tcase_add_test(tc, test_unmarked_listener_gets_nothing);
	tcase_add_test(tc, test_listen_marks_in_namespaces);
	tcase_add_test(tc, test_unenterable_netns_is_counted);
	suite_add_tcase(s, tc);
	return ebpf_run_suite(s, parent);
}
