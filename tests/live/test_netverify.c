/* SPDX-License-Identifier: MIT */
/*
 * Live test of shackle-run's kernel-verified connect (bpf/verify.bpf.c via
 * src/ebpf/netverify.c), without seccomp in the way: a child in a fresh
 * cgroup leaf makes sockets and connects on command; this process plays the
 * supervisor (its thread group passes the hooks) and arms approvals on
 * pidfd_getfd copies. "Flipped after approval" is a connect whose address
 * differs from the armed one: exactly what the hook sees when another thread
 * rewrites the sockaddr after the supervisor read it. Loopback only: a
 * witness listens on 127.0.0.2 and must never see a connection.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf/netverify.h"
#include "testutil.h"

enum { OP_SOCKET = 1, OP_CONNECT, OP_CLOSE };

struct cmd {
	int op, family, type, fd;
	struct sockaddr_storage sa;
	socklen_t len;
};

struct reply {
	int fd, err;
	pid_t tid;
};

static char cg[4096];
static struct shk_netverify *nv;
static pid_t child = -1;
static int pidfd = -1, ctl = -1;
static int lis_ok = -1, lis_witness = -1, lis_unix = -1;
static uint16_t port;
static char unix_path[108];

static void child_main(int s)
{
	struct cmd c;
	struct reply r;

	while (read(s, &c, sizeof(c)) == sizeof(c)) {
		memset(&r, 0, sizeof(r));
		r.tid = (pid_t)syscall(SYS_gettid);
		if (c.op == OP_SOCKET) {
			r.fd = socket(c.family, c.type | SOCK_CLOEXEC, c.fd);
			r.err = r.fd < 0 ? errno : 0;
		} else if (c.op == OP_CONNECT) {
			r.err = connect(c.fd, (struct sockaddr *)&c.sa, c.len) < 0 ? errno : 0;
		} else {
			close(c.fd);
		}
		if (write(s, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

static struct reply ask(struct cmd *c)
{
	struct reply r;

	ck_assert_int_eq(write(ctl, c, sizeof(*c)), sizeof(*c));
	ck_assert_int_eq(read(ctl, &r, sizeof(r)), sizeof(r));
	return r;
}

/* A socket of the child's, and our copy of it. */
static int child_socket(int family, int type, int *ret_copy, pid_t *ret_tid)
{
	struct cmd c = { .op = OP_SOCKET, .family = family, .type = type, .fd = 0 };
	struct reply r = ask(&c);

	ck_assert_msg(r.fd >= 0, "child socket: %s", strerror(r.err));
	*ret_copy = (int)syscall(SYS_pidfd_getfd, pidfd, r.fd, 0);
	ck_assert_msg(*ret_copy >= 0, "pidfd_getfd: %s", strerror(errno));
	*ret_tid = r.tid;
	return r.fd;
}

static int child_connect(int fd, const struct sockaddr_storage *sa, socklen_t len)
{
	struct cmd c = { .op = OP_CONNECT, .fd = fd, .sa = *sa, .len = len };

	return ask(&c).err;
}

static void child_close(int fd)
{
	struct cmd c = { .op = OP_CLOSE, .fd = fd };

	ask(&c);
}

static socklen_t v4(const char *ip, uint16_t p, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	in->sin_family = AF_INET;
	in->sin_port = htons(p);
	ck_assert_int_eq(inet_pton(AF_INET, ip, &in->sin_addr), 1);
	return sizeof(*in);
}

static socklen_t v6(const char *ip, uint16_t p, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(p);
	ck_assert_int_eq(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
	return sizeof(*in6);
}

static int listener(const char *ip, uint16_t p)
{
	struct sockaddr_storage ss;
	socklen_t len = v4(ip, p, &ss);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_msg(bind(fd, (struct sockaddr *)&ss, len) == 0, "bind %s: %s", ip, strerror(errno));
	ck_assert_int_eq(listen(fd, 64), 0);
	return fd;
}

/* Connections the witness on 127.0.0.2 has seen (accepted and closed). */
static int witness_arrivals(void)
{
	int n = 0, fd;

	while ((fd = accept(lis_witness, NULL, NULL)) >= 0) {
		close(fd);
		n++;
	}
	return n;
}

static void setup(void)
{
	char own[1024];
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int sv[2], r = 0;

	ck_assert_int_eq(shk_cgroup2_self(own, sizeof(own)), 0);
	snprintf(cg, sizeof(cg), "%s/shk-netverify-%d", own, (int)getpid());
	ck_assert_msg(mkdir(cg, 0755) == 0, "mkdir %s: %s", cg, strerror(errno));
	{
		int dfd = open(cg, O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(dfd, 0);
		r = shk_netverify_open(dfd, getpid(), &nv);
		close(dfd); /* the links hold the cgroup */
		ck_assert_msg(r == 0, "netverify open: %s", strerror(-r));
	}
	lis_ok = listener("127.0.0.1", 0);
	ck_assert_int_eq(getsockname(lis_ok, (struct sockaddr *)&ss, &len), 0);
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	lis_witness = listener("127.0.0.2", port);
	snprintf(unix_path, sizeof(unix_path), "/tmp/shk-netverify-%d.sock", (int)getpid());
	unlink(unix_path);
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", unix_path);
	lis_unix = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(bind(lis_unix, (struct sockaddr *)&un, sizeof(un)), 0);
	ck_assert_int_eq(listen(lis_unix, 8), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(sv[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* wait until we are in the leaf: sockets are counted from there */
		if (read(sv[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		child_main(sv[1]);
	}
	close(sv[1]);
	ctl = sv[0];
	ck_assert_int_eq(shk_cgroup_enter(cg, child), 0);
	ck_assert_int_eq(write(ctl, &r, sizeof(r)), sizeof(r));
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	ck_assert_int_ge(pidfd, 0);
}

static void teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	shk_netverify_free(nv);
	nv = NULL;
	if (cg[0])
		rmdir(cg);
	if (unix_path[0])
		unlink(unix_path);
}

START_TEST(exact_match_passes_once)
{
	struct sockaddr_storage ok;
	socklen_t len = v4("127.0.0.1", port, &ok);
	pid_t tid;
	int copy, fd = child_socket(AF_INET, SOCK_STREAM, &copy, &tid);

	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), 0);
	child_close(fd);
	close(copy);
	/* UDP may connect again: the approval was used up by the first */
	fd = child_socket(AF_INET, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	child_close(fd);
	close(copy);
}
END_TEST

START_TEST(flipped_address_refused)
{
	struct sockaddr_storage ok, bad, badport;
	socklen_t len = v4("127.0.0.1", port, &ok);
	pid_t tid;
	int copy, fd;

	v4("127.0.0.2", port, &bad);
	v4("127.0.0.1", (uint16_t)(port + 1), &badport);
	for (int i = 0; i < 2; i++) {
		fd = child_socket(AF_INET, i ? SOCK_DGRAM : SOCK_STREAM, &copy, &tid);
		ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
		ck_assert_int_eq(child_connect(fd, &bad, len), EPERM);
		/* the refusal used the approval up: the approved address is refused too */
		ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
		ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
		ck_assert_int_eq(child_connect(fd, &badport, len), EPERM);
		child_close(fd);
		close(copy);
	}
	ck_assert_int_eq(witness_arrivals(), 0);
}
END_TEST

START_TEST(unapproved_refused)
{
	struct sockaddr_storage ok;
	socklen_t len = v4("127.0.0.1", port, &ok);
	pid_t tid;
	int copy, fd = child_socket(AF_INET, SOCK_STREAM, &copy, &tid);

	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	/* another thread's approval does not count */
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid + 1, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	/* a disarmed approval does not count */
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(shk_netverify_disarm(nv, copy), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	child_close(fd);
	close(copy);
}
END_TEST

START_TEST(other_socket_not_authorized)
{
	struct sockaddr_storage ok;
	socklen_t len = v4("127.0.0.1", port, &ok);
	pid_t tid;
	int copy1, copy2;
	int fd1 = child_socket(AF_INET, SOCK_STREAM, &copy1, &tid);
	int fd2 = child_socket(AF_INET, SOCK_STREAM, &copy2, &tid);

	/* approved for fd1: fd2 (a swapped fd number) is refused */
	ck_assert_int_eq(shk_netverify_arm(nv, copy1, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd2, &ok, len), EPERM);
	ck_assert_int_eq(child_connect(fd1, &ok, len), 0);
	child_close(fd1);
	child_close(fd2);
	close(copy1);
	close(copy2);
}
END_TEST

START_TEST(v4_mapped)
{
	struct sockaddr_storage ok, bad, plain;
	socklen_t len = v6("::ffff:127.0.0.1", port, &ok);
	socklen_t plen = v4("127.0.0.1", port, &plain);
	pid_t tid;
	int copy, fd;

	v6("::ffff:127.0.0.2", port, &bad);
	fd = child_socket(AF_INET6, SOCK_STREAM, &copy, &tid);
	/* the kernel runs connect6 with the v6 form the agent passed */
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &bad, len), EPERM);
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), 0);
	child_close(fd);
	close(copy);
	/* a UDP6 socket given an AF_INET address runs connect4: an approval
	 * in the other family's form is refused */
	fd = child_socket(AF_INET6, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &plain, plen), EPERM);
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&plain, plen), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	child_close(fd);
	close(copy);
	ck_assert_int_eq(witness_arrivals(), 0);
}
END_TEST

START_TEST(supervisor_and_unix)
{
	struct sockaddr_storage ok, un;
	struct sockaddr_un *u = (struct sockaddr_un *)&un;
	socklen_t len = v4("127.0.0.1", port, &ok);
	pid_t tid;
	int copy, fd, mine;

	/* the supervisor's own (emulated) connect on the agent's socket passes */
	fd = child_socket(AF_INET, SOCK_STREAM, &copy, &tid);
	ck_assert_int_eq(connect(copy, (struct sockaddr *)&ok, len), 0);
	child_close(fd);
	close(copy);
	/* the agent never connects a unix socket itself; we may */
	memset(&un, 0, sizeof(un));
	u->sun_family = AF_UNIX;
	snprintf(u->sun_path, sizeof(u->sun_path), "%s", unix_path);
	fd = child_socket(AF_UNIX, SOCK_STREAM, &copy, &tid);
	ck_assert_int_eq(child_connect(fd, &un, sizeof(*u)), EPERM);
	ck_assert_int_eq(connect(copy, (struct sockaddr *)&un, sizeof(*u)), 0);
	/* no storage for unix sockets: they cannot be armed */
	ck_assert_int_eq(shk_netverify_arm(nv, copy, tid, (struct sockaddr *)&ok, len), -ENOENT);
	child_close(fd);
	close(copy);
	/* a socket made outside the leaf cannot be armed (the hooks never see it) */
	mine = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(shk_netverify_arm(nv, mine, tid, (struct sockaddr *)&ok, len), -ENOENT);
	close(mine);
}
END_TEST

/* Other protocols over IP: whatever the fd number is swapped for, a
 * connect without an approval must not leave the leaf. */
START_TEST(other_inet_protocols)
{
	static const struct { int type, proto; const char *name; } p[] = {
		{ SOCK_STREAM, 262 /* IPPROTO_MPTCP */, "mptcp" },
		{ SOCK_STREAM, IPPROTO_SCTP, "sctp stream" },
		{ SOCK_SEQPACKET, IPPROTO_SCTP, "sctp seqpacket" },
		{ SOCK_DGRAM, IPPROTO_ICMP, "icmp ping" },
		{ SOCK_DGRAM, IPPROTO_UDPLITE, "udplite" },
	};
	struct sockaddr_storage ok;
	socklen_t len = v4("127.0.0.1", port, &ok);

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		struct cmd c = { .op = OP_SOCKET, .family = AF_INET, .type = p[i].type };
		struct reply r;

		c.fd = p[i].proto; /* the protocol rides in fd for OP_SOCKET */
		r = ask(&c);
		if (r.fd < 0) {
			fprintf(stderr, "%s: not available here (%s)\n", p[i].name, strerror(r.err));
			continue;
		}
		fprintf(stderr, "%s: connect -> %s\n", p[i].name, strerror(child_connect(r.fd, &ok, len)));
		child_close(r.fd);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("netverify");
	TCase *tc = tcase_create("live");
	SRunner *sr;
	char why[256], own[1024];
	int failed;

	shk_test_require_root();
	if (shk_netverify_probe(why, sizeof(why)) < 0)
		shk_test_skip("kernel-verified connect unavailable: %s", why);
	if (shk_cgroup2_self(own, sizeof(own)) < 0)
		shk_test_skip("no cgroup v2");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, exact_match_passes_once);
	tcase_add_test(tc, flipped_address_refused);
	tcase_add_test(tc, unapproved_refused);
	tcase_add_test(tc, other_socket_not_authorized);
	tcase_add_test(tc, v4_mapped);
	tcase_add_test(tc, supervisor_and_unix);
	tcase_add_test(tc, other_inet_protocols);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
