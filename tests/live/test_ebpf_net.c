/* SPDX-License-Identifier: MIT */
/*
 * Live tests of attach's network hardening (root, cgroup v2): sockets no
 * hook sees, 0.0.0.0/:: destinations, source routes. Servers opened without
 * a judged bind: test_ebpf_listen.c. Same fixture as test_ebpf.c
 * (ebpf_live.h).
 */
#include "ebpf_live.h"

/* A raw socket made in the cgroup before the programs were attached:
 * below the attach point shk_sock_create refuses new raw sockets, but one
 * made earlier still sends through the egress program. */
static int raw6_early = -1;

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
	suite_add_tcase(s, tc);
	return ebpf_run_suite(s, parent);
}
