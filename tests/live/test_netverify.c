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
#include <linux/types.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
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
#include <stddef.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf/netverify.h"
#include "verify.h"
#include "testutil.h"
#include "checkrun.h"

enum { OP_SOCKET = 1, OP_CONNECT, OP_CLOSE, OP_SENDTO, OP_TAKE_SLOT };

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

static uint64_t sock_cookie(int fd)
{
	uint64_t c = 0;
	socklen_t l = sizeof(c);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l) < 0 ? 0 : c;
}

/* In the child: sockets made and closed until one's cookie falls in the
 * mark slot of fd's (the same low bits); that one is kept. Cookies come in
 * per-CPU batches of consecutive values, so a few laps of the slots at most. */
static int take_slot(int fd)
{
	uint64_t want = sock_cookie(fd) & (SHK_VERIFY_MARK_SLOTS - 1);

	for (long i = 0; i < 16L * SHK_VERIFY_MARK_SLOTS; i++) {
		int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		if (s < 0)
			return -1;
		if ((sock_cookie(s) & (SHK_VERIFY_MARK_SLOTS - 1)) == want)
			return s;
		close(s);
	}
	errno = EAGAIN;
	return -1;
}

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
		} else if (c.op == OP_SENDTO) {
			r.err = sendto(c.fd, "x", 1, 0, (struct sockaddr *)&c.sa, c.len) < 0 ? errno : 0;
		} else if (c.op == OP_TAKE_SLOT) {
			r.fd = take_slot(c.fd);
			r.err = r.fd < 0 ? errno : 0;
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

static int child_sendto(int fd, const struct sockaddr_storage *sa, socklen_t len)
{
	struct cmd c = { .op = OP_SENDTO, .fd = fd, .sa = *sa, .len = len };

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

/* The leaf hook's mark of our copy of a child socket: what getsockopt says. */
static uint64_t cookie(int copy)
{
	struct shk_netverify_sock ns;
	uint64_t c = 0;
	socklen_t l = sizeof(c);
	int v;

	ck_assert_int_eq(shk_netverify_sock(nv, copy, &ns), 0);
	ck_assert_int_eq(getsockopt(copy, SOL_SOCKET, SO_COOKIE, &c, &l), 0);
	ck_assert_uint_eq(ns.cookie, c);
	l = sizeof(v);
	ck_assert_int_eq(getsockopt(copy, SOL_SOCKET, SO_DOMAIN, &v, &l), 0);
	ck_assert_int_eq(ns.family, v);
	ck_assert_int_eq(getsockopt(copy, SOL_SOCKET, SO_TYPE, &v, &l), 0);
	ck_assert_int_eq(ns.type, v);
	ck_assert_int_eq(getsockopt(copy, SOL_SOCKET, SO_PROTOCOL, &v, &l), 0);
	ck_assert_int_eq(ns.protocol, v);
	return ns.cookie;
}

START_TEST(exact_match_passes_once)
{
	struct sockaddr_storage ok;
	socklen_t len = v4("127.0.0.1", port, &ok);
	pid_t tid;
	int copy, fd = child_socket(AF_INET, SOCK_STREAM, &copy, &tid);

	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), 0);
	child_close(fd);
	close(copy);
	/* UDP may connect again: the approval was used up by the first */
	fd = child_socket(AF_INET, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
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
		ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
		ck_assert_int_eq(child_connect(fd, &bad, len), EPERM);
		/* the refusal used the approval up: the approved address is refused too */
		ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
		ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
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
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid + 1, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	/* a disarmed approval does not count */
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(shk_netverify_disarm(nv, cookie(copy), tid), 0);
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
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy1), tid, false, (struct sockaddr *)&ok, len), 0);
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
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &bad, len), EPERM);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), 0);
	child_close(fd);
	close(copy);
	/* a UDP6 socket given an AF_INET address runs connect4: an approval
	 * in the other family's form is refused */
	fd = child_socket(AF_INET6, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &plain, plen), EPERM);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&plain, plen), 0);
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
	/* no mark for unix sockets (sock_create runs for inet ones): they cannot be armed */
	ck_assert_int_eq(shk_netverify_sock(nv, copy, &(struct shk_netverify_sock){ 0 }), -ENOENT);
	child_close(fd);
	close(copy);
	/* a socket made outside the leaf cannot be armed (the hooks never see it) */
	mine = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(shk_netverify_sock(nv, mine, &(struct shk_netverify_sock){ 0 }), -ENOENT);
	close(mine);
}
END_TEST

/* A later socket whose cookie takes the mark's slot leaves the older one
 * unmarked: emulated from then on, never armed on the newer one's mark. */
START_TEST(slot_taken_unmarks)
{
	struct cmd c = { .op = OP_TAKE_SLOT };
	struct reply r;
	pid_t tid;
	int copy, copy2, fd = child_socket(AF_INET, SOCK_STREAM, &copy, &tid);

	cookie(copy);
	c.fd = fd;
	r = ask(&c);
	ck_assert_msg(r.fd >= 0, "take the slot: %s", strerror(r.err));
	copy2 = (int)syscall(SYS_pidfd_getfd, pidfd, r.fd, 0);
	ck_assert_int_ge(copy2, 0);
	ck_assert_int_eq(shk_netverify_sock(nv, copy, &(struct shk_netverify_sock){ 0 }), -ENOENT);
	ck_assert_uint_ne(cookie(copy2), sock_cookie(copy));
	child_close(r.fd);
	child_close(fd);
	close(copy2);
	close(copy);
}
END_TEST

START_TEST(udp_send_approvals)
{
	struct sockaddr_storage ok, bad, m_ok, m_bad, un;
	struct sockaddr_un *u = (struct sockaddr_un *)&un;
	socklen_t len = v4("127.0.0.1", port, &ok), mlen = v6("::ffff:127.0.0.1", port, &m_ok);
	socklen_t ulen;
	pid_t tid;
	int copy, fd, rx;

	v4("127.0.0.2", port, &bad);
	v6("::ffff:127.0.0.2", port, &m_bad);
	fd = child_socket(AF_INET, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(child_sendto(fd, &ok, len), EPERM);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, true, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_sendto(fd, &ok, len), 0);
	ck_assert_int_eq(child_sendto(fd, &ok, len), EPERM); /* single use */
	/* another thread's approval on the same socket, armed after ours, does
	 * not replace it (threads sending on one socket at once) */
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, true, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid + 1, true, (struct sockaddr *)&bad, len), 0);
	ck_assert_int_eq(child_sendto(fd, &ok, len), 0);
	ck_assert_int_eq(shk_netverify_disarm(nv, cookie(copy), tid + 1), 0);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, true, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_sendto(fd, &bad, len), EPERM); /* flipped */
	/* a send approval is no connect approval, and back */
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, true, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_connect(fd, &ok, len), EPERM);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, false, (struct sockaddr *)&ok, len), 0);
	ck_assert_int_eq(child_sendto(fd, &ok, len), EPERM);
	child_close(fd);
	close(copy);
	/* UDPv6 hands a v4-mapped destination to sendmsg4 in its v4 form */
	fd = child_socket(AF_INET6, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, true, (struct sockaddr *)&m_ok, mlen), 0);
	ck_assert_int_eq(child_sendto(fd, &m_ok, mlen), 0);
	ck_assert_int_eq(shk_netverify_arm(nv, cookie(copy), tid, true, (struct sockaddr *)&m_ok, mlen), 0);
	ck_assert_int_eq(child_sendto(fd, &m_bad, mlen), EPERM);
	child_close(fd);
	close(copy);
	/* the agent's own unix datagram to a name: refused; ours passes */
	rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&un, 0, sizeof(un));
	u->sun_family = AF_UNIX;
	snprintf(u->sun_path + 1, sizeof(u->sun_path) - 1, "shk-netverify-%d", (int)getpid());
	ulen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(u->sun_path + 1));
	ck_assert_int_eq(bind(rx, (struct sockaddr *)&un, ulen), 0);
	fd = child_socket(AF_UNIX, SOCK_DGRAM, &copy, &tid);
	ck_assert_int_eq(child_sendto(fd, &un, ulen), EPERM);
	ck_assert_int_eq(sendto(copy, "x", 1, 0, (struct sockaddr *)&un, ulen), 1);
	child_close(fd);
	close(copy);
	close(rx);
}
END_TEST

/* UDP-Lite has no connect hook: why the filter refuses it with the path on. */
START_TEST(udplite_unhooked)
{
	struct sockaddr_storage ok;
	socklen_t len = v4("127.0.0.1", port, &ok);
	struct cmd c = { .op = OP_SOCKET, .family = AF_INET, .type = SOCK_DGRAM,
	                 .fd = IPPROTO_UDPLITE };
	struct reply r = ask(&c);

	if (r.fd < 0)
		return; /* not built into this kernel: nothing to show */
	/* no approval, and yet: the kernel runs no cgroup hook for it */
	ck_assert_int_eq(child_connect(r.fd, &ok, len), 0);
	child_close(r.fd);
}
END_TEST

/* ---- shackle-run end to end ---------------------------------------------- */

static char tmpdir[64];
static volatile int stop_accepting;

static void *acceptor(void *arg)
{
	int fd = *(int *)arg;

	while (!stop_accepting) {
		int c = accept(fd, NULL, NULL);
		if (c >= 0)
			close(c);
		else
			usleep(1000);
	}
	return NULL;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	chmod(path, 0644);
}

/* Run shackle-run; returns its exit code, stdout in *out (static). */
static int run(const char *mode, const char *log, char *const *agent, char *out, size_t outlen)
{
	char pol[128], netv[64];
	int p[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	snprintf(pol, sizeof(pol), "%s/policy.json", tmpdir);
	snprintf(netv, sizeof(netv), "--net-verify=%s", mode);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[32] = { (char *)shk_test_build("src/cli/shackle-run"), "--policy", pol,
		                   "--audit", (char *)log, "--non-interactive", "--quiet", netv, "--" };
		int k = 9;
		int devnull = open("/dev/null", O_RDONLY);

		for (int i = 0; agent[i] && k < 31; i++)
			argv[k++] = agent[i];
		dup2(devnull, 0);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while (got < (ssize_t)outlen - 1 && (n = read(p[0], out + got, outlen - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* counters.KEY of the session_end entry, as text. */
static void session_end(const char *log, const char *key, char *buf, size_t len)
{
	char line[65536], pat[64];
	FILE *f = fopen(log, "r");
	char *v = NULL;

	ck_assert_ptr_nonnull(f);
	buf[0] = 0;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "session_end") && (v = strstr(line, pat))) {
			v += strlen(pat);
			snprintf(buf, len, "%.*s", (int)strcspn(v, ",}"), v);
		}
	fclose(f);
}

static void e2e_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/shk-nv-e2e-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	chmod(tmpdir, 0755);
	{
		char pol[128];
		snprintf(pol, sizeof(pol), "%s/policy.json", tmpdir);
		write_file(pol, "{\"version\": 1,\n"
		                " \"guard\": {\"max_repeat_calls\": 0},\n"
		                " \"exec\": {\"default\": \"allow\"},\n"
		                " \"net\": {\"default\": \"deny\", \"rules\": [\n"
		                "   {\"name\": \"forbidden\", \"cidr\": \"127.0.0.2/32\", \"action\": \"deny\"},\n"
		                "   {\"name\": \"loopback\", \"cidr\": \"127.0.0.1/32\", \"action\": \"allow\"}\n"
		                " ]}}\n");
	}
}

static void e2e_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (tmpdir[0] && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

static int udp_socket(const char *ip, uint16_t p)
{
	struct sockaddr_storage ss;
	socklen_t len = v4(ip, p, &ss);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_msg(bind(fd, (struct sockaddr *)&ss, len) == 0, "bind udp %s: %s", ip,
	              strerror(errno));
	return fd;
}

static long datagrams(int fd)
{
	char buf[16];
	long n = 0;

	while (recv(fd, buf, sizeof(buf), 0) >= 0)
		n++;
	return n;
}

/*
 * The TOCTOU attack through shackle-run on the BPF path: a thread flips the
 * sockaddr between 127.0.0.1 (allowed) and 127.0.0.2 (denied, a witness
 * listens, TCP and UDP) while the agent connects or sends. Approved calls
 * whose address was flipped before the kernel's copy are refused by the
 * hook: more approvals than calls that went through, nothing at the witness.
 */
START_TEST(race_refused_by_hook)
{
	char race[4096], log[160], out[4096], p[16], v[64], cont[64];
	long allowed, breach, continued;
	pthread_t t1, t2;
	int rc, udp_ok, udp_witness;

	/* shk_test_build() reuses one buffer: keep our own copy */
	snprintf(race, sizeof(race), "%s", shk_test_build("tests/integration/shk-race"));
	if (access(race, X_OK) != 0) {
		ck_assert_msg(!shk_test_must_run(), "%s not built", race);
		return;
	}
	lis_ok = listener("127.0.0.1", 0);
	{
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		ck_assert_int_eq(getsockname(lis_ok, (struct sockaddr *)&ss, &len), 0);
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	lis_witness = listener("127.0.0.2", port);
	udp_ok = udp_socket("127.0.0.1", port);
	udp_witness = udp_socket("127.0.0.2", port);
	snprintf(p, sizeof(p), "%u", port);
	stop_accepting = 0;
	pthread_create(&t1, NULL, acceptor, &lis_ok);
	pthread_create(&t2, NULL, acceptor, &lis_witness);
	for (int udp = 0; udp < 2; udp++) {
		char *agent[] = { race, udp ? "udp" : "connect", "127.0.0.1", p, "127.0.0.2", p,
		                  "2000", NULL };

		snprintf(log, sizeof(log), "%s/race-%d.jsonl", tmpdir, udp);
		rc = run("bpf", log, agent, out, sizeof(out));
		ck_assert_msg(rc == 0, "shackle-run exit %d: %s", rc, out);
		allowed = breach = -1;
		sscanf(strstr(out, "allowed=") ? strstr(out, "allowed=") : "", "allowed=%ld", &allowed);
		sscanf(strstr(out, "breach=") ? strstr(out, "breach=") : "", "breach=%ld", &breach);
		ck_assert_int_eq(breach, 0);
		ck_assert_int_ge(allowed, 1);
		session_end(log, "net_verify", v, sizeof(v));
		ck_assert_str_eq(v, "\"bpf\"");
		session_end(log, "net_continued", cont, sizeof(cont));
		continued = atol(cont);
		fprintf(stderr, "race %s: %s", agent[1], out);
		fprintf(stderr, "race %s: %ld let through under the hook, %ld went through, %ld "
		        "refused in the kernel after approval\n", agent[1], continued, allowed,
		        continued - allowed);
		/* every call that happened was an approved one... */
		ck_assert_int_ge(continued, allowed);
		/* ...and flips after the check were caught (the flipper writes the
		 * forbidden address half of the time: thousands of chances) */
		ck_assert_int_ge(continued - allowed, 1);
	}
	stop_accepting = 1;
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	ck_assert_int_eq(witness_arrivals(), 0);
	ck_assert_int_eq(datagrams(udp_witness), 0);
	ck_assert_int_ge(datagrams(udp_ok), 1);
	close(udp_ok);
	close(udp_witness);
	close(lis_ok);
	close(lis_witness);
}
END_TEST

static const char sockets_py[] =
	"import ctypes, errno, os, socket, sys\n"
	"def mk(*a):\n"
	"    try:\n"
	"        socket.socket(*a).close(); return 'ok'\n"
	"    except OSError as e:\n"
	"        return errno.errorcode[e.errno]\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"pfd = os.pidfd_open(os.getpid())\n"
	"r = libc.syscall(438, pfd, 0, 0)\n"
	"g = 'ok' if r >= 0 else errno.errorcode[ctypes.get_errno()]\n"
	"s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n"
	"s.connect(('::ffff:127.0.0.1', int(sys.argv[1])))\n"
	"u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	"u.connect(('127.0.0.1', int(sys.argv[1])))\n"
	"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', int(sys.argv[1])))\n"
	"socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b'x', ('::ffff:127.0.0.1', int(sys.argv[1])))\n"
	"print('tcp', mk(2, 1, 0), 'udp', mk(10, 2, 0), 'unix', mk(1, 1, 0),\n"
	"      'netlink', mk(16, 3, 0), 'udplite', mk(2, 2, 136), 'seqpacket', mk(2, 5, 0),\n"
	"      'vsock', mk(40, 1, 0), 'getfd', g, 'mapped', 'ok', 'udpconn', 'ok')\n";

/* With the path on, only sockets the hooks see; without it, as before. */
START_TEST(families_by_mode)
{
	char script[160], log[160], out[4096], p[16];
	char *agent[] = { "/usr/bin/python3", script, p, NULL };
	pthread_t t;
	int rc;

	if (access(agent[0], X_OK) != 0) {
		ck_assert_msg(!shk_test_must_run(), "no /usr/bin/python3");
		return;
	}
	lis_ok = listener("127.0.0.1", 0);
	{
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		ck_assert_int_eq(getsockname(lis_ok, (struct sockaddr *)&ss, &len), 0);
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	snprintf(p, sizeof(p), "%u", port);
	snprintf(script, sizeof(script), "%s/sockets.py", tmpdir);
	write_file(script, sockets_py);
	stop_accepting = 0;
	pthread_create(&t, NULL, acceptor, &lis_ok);
	snprintf(log, sizeof(log), "%s/bpf.jsonl", tmpdir);
	rc = run("bpf", log, agent, out, sizeof(out));
	ck_assert_msg(rc == 0, "bpf run: exit %d (%s)", rc, out);
	ck_assert_msg(strstr(out, "tcp ok udp ok unix ok netlink ok udplite EPERM seqpacket EPERM "
	                          "vsock EPERM getfd EPERM mapped ok udpconn ok"), "bpf: %s", out);
	{
		char cont[32];
		session_end(log, "net_continued", cont, sizeof(cont));
		/* the v4-mapped TCP connect, the UDP connect, two UDP sendto */
		ck_assert_int_eq(atoi(cont), 4);
	}
	snprintf(log, sizeof(log), "%s/emu.jsonl", tmpdir);
	rc = run("emulate", log, agent, out, sizeof(out));
	ck_assert_msg(rc == 0, "emulate run: exit %d (%s)", rc, out);
	ck_assert_msg(strstr(out, "mapped ok udpconn ok"), "emulate: %s", out);
	ck_assert_msg(!strstr(out, "udplite EPERM") && !strstr(out, "vsock EPERM") &&
	              !strstr(out, "getfd EPERM"), "emulate refuses more than before: %s", out);
	{
		char v[32];
		session_end(log, "net_verify", v, sizeof(v));
		ck_assert_str_eq(v, "\"emulate\"");
	}
	stop_accepting = 1;
	pthread_join(t, NULL);
	close(lis_ok);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("netverify");
	TCase *tc = tcase_create("live");
	char why[256], own[1024];

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
	tcase_add_test(tc, udplite_unhooked);
	tcase_add_test(tc, udp_send_approvals);
	tcase_add_test(tc, slot_taken_unmarks);
	suite_add_tcase(s, tc);
	tc = tcase_create("shackle-run");
	tcase_add_checked_fixture(tc, e2e_setup, e2e_teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, race_refused_by_hook);
	tcase_add_test(tc, families_by_mode);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
