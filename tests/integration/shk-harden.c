/* SPDX-License-Identifier: MIT */
/*
 * Agent side of the `hardening` scenario: calls that once reached the
 * supervisor's emulation with malformed or privileged contents. Each mode
 * prints one line: "ok [DETAIL]" or the errno name of the failed call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

static int report(long r)
{
	if (r < 0) {
		const char *n = strerrorname_np(errno);
		printf("%s\n", n ? n : "EUNKNOWN");
		return 1;
	}
	printf("ok %ld\n", r);
	return 0;
}

/* A valid SCM_RIGHTS header, then one whose cmsg_len is LEN. */
static int cmsg_len(int len)
{
	union { char b[256]; struct cmsghdr a; } u;
	int sv[2], fds[4] = { 0, 1, 2, 0 };
	char d = 'x';
	struct iovec iov = { &d, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
	                     .msg_controllen = CMSG_SPACE(sizeof(fds)) + 64 };
	struct cmsghdr *c = (struct cmsghdr *)u.b, *c2;

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return report(-1);
	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	fds[3] = sv[0];
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	c2 = (struct cmsghdr *)(u.b + CMSG_SPACE(sizeof(fds)));
	c2->cmsg_level = SOL_SOCKET;
	c2->cmsg_type = SCM_RIGHTS;
	c2->cmsg_len = (size_t)len;
	return report(sendmsg(sv[1], &mh, 0));
}

/* One SCM_RIGHTS message with N copies of fd 0. */
static int cmsg_fds(int n)
{
	size_t sz = CMSG_SPACE((size_t)n * sizeof(int));
	char *b = calloc(1, sz);
	int sv[2];
	char d = 'x';
	struct iovec iov = { &d, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = b, .msg_controllen = sz };
	struct cmsghdr *c = (struct cmsghdr *)b;

	if (!b || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return report(-1);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memset(CMSG_DATA(c), 0, (size_t)n * sizeof(int));
	return report(sendmsg(sv[1], &mh, 0));
}

/* connect/bind with an AF_UNIX address of sizeof(sockaddr_storage) */
static int unix_long(int bind_it)
{
	struct sockaddr_storage ss;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&ss, 'A', sizeof(ss));
	ss.ss_family = AF_UNIX;
	if (bind_it)
		return report(bind(fd, (struct sockaddr *)&ss, sizeof(ss)));
	return report(connect(fd, (struct sockaddr *)&ss, sizeof(ss)));
}

/* UDP sendmsg to ADDR:PORT with one control message (level, type, data). */
static int send_cmsg(const char *addr, int port, int level, int type, const void *data, size_t len)
{
	union { char b[CMSG_SPACE(64)]; struct cmsghdr a; } u;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char payload[] = "shk-harden-cmsg";
	struct iovec iov = { payload, sizeof(payload) - 1 };
	struct msghdr mh = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
	                     .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = CMSG_SPACE(len) };
	struct cmsghdr *c = (struct cmsghdr *)u.b;
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&u, 0, sizeof(u));
	inet_pton(AF_INET, addr, &to.sin_addr);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(len);
	memcpy(CMSG_DATA(c), data, len);
	return report(sendmsg(s, &mh, MSG_DONTWAIT));
}

/*
 * UDPv6 sendmsg to ::1 PORT with a type-2 routing header carrying HOP: a
 * kernel built with CONFIG_IPV6_MIP6 lets anyone attach one (no capability
 * check for IPV6_RTHDR) and then sends the datagram to HOP (fl6_update_dst),
 * not to the address given; one without it answers EINVAL.
 */
static int rthdr_cmsg(int port, const char *hop)
{
	union { char b[CMSG_SPACE(24)]; struct cmsghdr a; } u;
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	char payload[] = "shk-harden-cmsg";
	struct iovec iov = { payload, sizeof(payload) - 1 };
	struct msghdr mh = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
	                     .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = CMSG_SPACE(24) };
	struct cmsghdr *c = (struct cmsghdr *)u.b;
	unsigned char *rh;
	int s = socket(AF_INET6, SOCK_DGRAM, 0);

	memset(&u, 0, sizeof(u));
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_RTHDR;
	c->cmsg_len = CMSG_LEN(24);
	rh = CMSG_DATA(c);
	rh[1] = 2; /* hdrlen: 2 x 8 bytes after the first 8 */
	rh[2] = 2; /* type 2 */
	rh[3] = 1; /* segments left */
	inet_pton(AF_INET6, hop, rh + 8);
	return report(sendmsg(s, &mh, MSG_DONTWAIT));
}

static int inet_cmsg(const char *what, const char *addr, int port, const char *hop)
{
	unsigned char opt[8] = { IPOPT_NOP, IPOPT_LSRR, 7, 4 };
	int v = 1;

	if (strcmp(what, "lsrr") == 0) {
		inet_pton(AF_INET, hop, opt + 4);
		return send_cmsg(addr, port, IPPROTO_IP, IP_RETOPTS, opt, sizeof(opt));
	}
	if (strcmp(what, "rthdr") == 0)
		return rthdr_cmsg(port, hop);
	if (strcmp(what, "mark") == 0)
		return send_cmsg(addr, port, SOL_SOCKET, SO_MARK, &v, sizeof(v));
	if (strcmp(what, "priority") == 0) {
		v = 7;
		return send_cmsg(addr, port, SOL_SOCKET, SO_PRIORITY, &v, sizeof(v));
	}
	if (strcmp(what, "ttl") == 0) {
		v = 9;
		return send_cmsg(addr, port, IPPROTO_IP, IP_TTL, &v, sizeof(v));
	}
	if (strcmp(what, "tos") == 0) {
		v = 0x10;
		return send_cmsg(addr, port, IPPROTO_IP, IP_TOS, &v, 1);
	}
	fprintf(stderr, "unknown cmsg %s\n", what);
	return 2;
}

/* SCM_CREDENTIALS on a socketpair claiming pid/uid/gid ("self": our own),
 * then what the receiver got. */
static int creds_send(const char *pid, const char *uid, const char *gid)
{
	union { char b[CMSG_SPACE(sizeof(struct ucred))]; struct cmsghdr a; } u, r;
	struct ucred cr = {
		.pid = strcmp(pid, "self") ? atoi(pid) : getpid(),
		.uid = strcmp(uid, "self") ? (uid_t)atoi(uid) : getuid(),
		.gid = strcmp(gid, "self") ? (gid_t)atoi(gid) : getgid(),
	}, got;
	int sv[2], one = 1;
	char d = 'x';
	struct iovec iov = { &d, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
	                     .msg_controllen = sizeof(u.b) };
	struct cmsghdr *c = (struct cmsghdr *)u.b;

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return report(-1);
	setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(cr));
	memcpy(CMSG_DATA(c), &cr, sizeof(cr));
	if (sendmsg(sv[1], &mh, 0) < 0)
		return report(-1);
	mh.msg_control = r.b;
	mh.msg_controllen = sizeof(r.b);
	if (recvmsg(sv[0], &mh, 0) < 0 || !CMSG_FIRSTHDR(&mh))
		return report(-1);
	memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(got));
	printf("ok uid=%u gid=%u self=%u/%u\n", got.uid, got.gid, getuid(), getgid());
	return 0;
}

/* A unix listener of ours, then a client of ours: whose uid does the client
 * see as its peer? The kernel records it at listen(). */
static int listen_peercred(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t l = sizeof(cr);
	int srv = socket(AF_UNIX, SOCK_STREAM, 0), cli = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	if (bind(srv, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(srv, 4) < 0 ||
	    connect(cli, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockopt(cli, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0)
		return report(-1);
	printf("%s uid=%u self=%u\n", cr.uid == getuid() ? "ok" : "FOREIGN", cr.uid, getuid());
	return 0;
}

static int connect_to(const char *addr, int port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd;

	if (inet_pton(AF_INET, addr, &a.sin_addr) == 1) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		return report(connect(fd, (struct sockaddr *)&a, sizeof(a)));
	}
	inet_pton(AF_INET6, addr, &a6.sin6_addr);
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	return report(connect(fd, (struct sockaddr *)&a6, sizeof(a6)));
}

/* A TCP socket bound to SRC:0, then a connect to 0.0.0.0:PORT, which the
 * kernel sends to SRC. */
static int connect_bound(const char *src, int port)
{
	struct sockaddr_in b = { .sin_family = AF_INET }, a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, src, &b.sin_addr);
	a.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&b, sizeof(b)) < 0)
		return report(-1);
	return report(connect(fd, (struct sockaddr *)&a, sizeof(a)));
}

/* N threads each block in an emulated sendmsg on a full unix datagram
 * socket; then the receiver is drained. Prints how many got EAGAIN. */
static int flood_sv[2];
static int flood_eagain, flood_ok, flood_done;

static void *flood_one(void *p)
{
	char d = 'f';
	struct iovec iov = { &d, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n = sendmsg(flood_sv[1], &mh, 0);

	(void)p;
	if (n < 0 && errno == EAGAIN)
		__atomic_add_fetch(&flood_eagain, 1, __ATOMIC_RELAXED);
	else if (n == 1)
		__atomic_add_fetch(&flood_ok, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&flood_done, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int flood(int n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	char b[16];
	int started = 0;

	if (!t || socketpair(AF_UNIX, SOCK_DGRAM, 0, flood_sv) < 0)
		return report(-1);
	/* fill the receive queue with sends the kernel takes (no address) */
	while (send(flood_sv[1], "x", 1, MSG_DONTWAIT) == 1)
		;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, flood_one, NULL) == 0)
			started++;
	sleep(3);
	for (int spins = 0; __atomic_load_n(&flood_done, __ATOMIC_RELAXED) < started && spins < 3000;
	     spins++)
		if (recv(flood_sv[0], b, sizeof(b), MSG_DONTWAIT) < 0)
			usleep(1000);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	printf("ok started=%d eagain=%d sent=%d\n", started, flood_eagain, flood_ok);
	return 0;
}

/* IP_OPTIONS with a loose source route via HOP set on the socket, then a
 * TCP connect to the judged ADDR: the kernel would connect to HOP. */
static int sockopt_lsrr(const char *addr, int port, const char *hop)
{
	unsigned char opt[8] = { IPOPT_NOP, IPOPT_LSRR, 7, 4 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, hop, opt + 4);
	if (setsockopt(fd, IPPROTO_IP, IP_OPTIONS, opt, sizeof(opt)) < 0)
		return report(-1);
	close(fd);
	return connect_to(addr, port);
}

/* execve(PROG, PROG ARGS..., {VAR=VAL}) */
static int exec_env(char *var, char **argv)
{
	char *envp[] = { var, NULL };

	execve(argv[0], argv, envp);
	return report(-1);
}

/* sendmmsg's msg_len write-back after the sender died: a child blocks in a
 * sendmmsg whose vector lives at a fixed address; the test kills it and puts
 * a victim with the same pid and the same mapping in its place; another
 * child drains the socket after DELAY seconds so the send completes. */
#define FIXED_ADDR ((void *)0x7e0000000000UL)

static int mmsg_block(const char *pidfile, int delay)
{
	struct mmsghdr *vec = mmap(FIXED_ADDR, 4096, PROT_READ | PROT_WRITE,
	                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	static char d = 'm';
	static struct iovec iov = { &d, 1 };
	int sv[2];
	char b[16];
	pid_t g, dr;

	if (vec == MAP_FAILED || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return report(-1);
	while (send(sv[1], "x", 1, MSG_DONTWAIT) == 1)
		;
	vec[0].msg_hdr = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1 };
	vec[0].msg_len = 0;
	if ((dr = fork()) == 0) {
		sleep((unsigned)delay);
		while (recv(sv[0], b, sizeof(b), MSG_DONTWAIT) > 0)
			;
		_exit(0);
	}
	if ((g = fork()) == 0) {
		FILE *f = fopen(pidfile, "w");
		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
		_exit(sendmmsg(sv[1], vec, 1, 0) == 1 ? 0 : 1);
	}
	waitpid(g, NULL, 0);
	waitpid(dr, NULL, 0);
	printf("ok\n");
	return 0;
}

/* A blocking sendmmsg of N datagrams on a full unix socket, drained after a
 * moment: the kernel answers N and writes each msg_len. Printed as
 * "ok N LEN0,LEN1,..." or the errno's name. */
static int mmsg_batch(int n)
{
	struct mmsghdr vec[8];
	struct iovec iov[8];
	char data[8][8], b[16];
	int sv[2], r;
	pid_t dr;

	if (n < 1 || n > 8 || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return report(-1);
	while (send(sv[1], "x", 1, MSG_DONTWAIT) == 1)
		;
	memset(vec, 0, sizeof(vec));
	for (int i = 0; i < n; i++) {
		memset(data[i], 'a' + i, sizeof(data[i]));
		iov[i] = (struct iovec){ data[i], (size_t)i + 1 };
		vec[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
		vec[i].msg_len = 0xdeadbeef;
	}
	if ((dr = fork()) == 0) {
		usleep(300 * 1000);
		for (int k = 0; k < 200000; k++)
			if (recv(sv[0], b, sizeof(b), MSG_DONTWAIT) < 0)
				usleep(1000);
		_exit(0);
	}
	r = sendmmsg(sv[1], vec, (unsigned)n, 0);
	kill(dr, SIGKILL);
	waitpid(dr, NULL, 0);
	if (r < 0)
		return report(-1);
	printf("ok %d ", r);
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", vec[i].msg_len);
	printf("\n");
	return 0;
}

/* The victim: same mapping, a canary where msg_len was; prints it after S s. */
static int mmsg_victim(int secs)
{
	struct mmsghdr *vec = mmap(FIXED_ADDR, 4096, PROT_READ | PROT_WRITE,
	                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (vec == MAP_FAILED)
		return report(-1);
	vec[0].msg_len = 0xdeadbeef;
	printf("pid %d\n", (int)getpid());
	sleep((unsigned)secs);
	printf("canary %#x\n", vec[0].msg_len);
	return 0;
}

/* The supervisor's first thread that acts as our uid (an emulation worker:
 * effective uid, the second of status's "Uid:" fields). 0: none. */
static pid_t sup_thread_of_ours(pid_t sup)
{
	char p[320], line[256];
	struct dirent *e;
	pid_t found = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)sup);
	if (!(d = opendir(p)))
		return 0;
	while (!found && (e = readdir(d))) {
		FILE *f;
		unsigned ruid, uid;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/status", (int)sup, e->d_name);
		if (!(f = fopen(p, "re")))
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Uid: %u %u", &ruid, &uid) == 2 && uid == getuid())
				found = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return found;
}

/* The routes that name a thread directly; each prints its errno name or
 * "ok". Returns how many were not refused. */
static int signal_direct(pid_t sup, pid_t t)
{
	siginfo_t si;
	int fails = 0;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGURG;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	printf("rt_tgsigqueueinfo ");
	fails += report(syscall(SYS_rt_tgsigqueueinfo, sup, t, SIGURG, &si)) == 0;
	printf("tgkill ");
	fails += report(syscall(SYS_tgkill, sup, t, SIGURG)) == 0;
	printf("tkill ");
	fails += report(syscall(SYS_tkill, t, SIGURG)) == 0;
	printf("kill ");
	fails += report(kill(t, SIGURG)) == 0;
	printf("rt_sigqueueinfo ");
	fails += report(syscall(SYS_rt_sigqueueinfo, t, SIGURG, &si)) == 0;
	{
		char p[64];
		int pfd;

		snprintf(p, sizeof(p), "/proc/%d", (int)t);
		pfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		printf("pidfd_send_signal ");
		fails += report(pfd < 0 ? -1 : syscall(SYS_pidfd_send_signal, pfd, SIGURG, NULL, 0)) == 0;
		if (pfd >= 0)
			close(pfd);
	}
	/* not a signal, but the same kind of handle: rlimits are the whole
	 * process's, and RLIMIT_CPU or RLIMIT_FSIZE set through a worker would
	 * end shackle-run or its audit log (read only here) */
	{
		struct rlimit old;

		printf("prlimit ");
		fails += report(syscall(SYS_prlimit64, t, RLIMIT_NOFILE, NULL, &old)) == 0;
	}
	return fails;
}

/*
 * Every way to signal one thread of the supervisor (the parent). SIGURG is
 * ignored by default, so a route that is not refused does no harm here; the
 * answer is what counts.
 */
static int signal_sup(void)
{
	struct f_owner_ex own;
	pid_t sup = getppid(), t = sup_thread_of_ours(sup);
	int fds[2], fails;

	if (!t) {
		printf("no-thread\n");
		return 1;
	}
	if (pipe(fds) < 0)
		return report(-1);
	fails = signal_direct(sup, t);
	printf("F_SETOWN ");
	fails += report(fcntl(fds[0], F_SETOWN, t)) == 0;
	own.type = F_OWNER_TID;
	own.pid = t;
	printf("F_SETOWN_EX ");
	fails += report(fcntl(fds[0], F_SETOWN_EX, &own)) == 0;
	printf("FIOSETOWN ");
	fails += report(ioctl(fds[0], FIOSETOWN, &t)) == 0;
	printf("%s\n", fails ? "SIGNALLED" : "refused-all");
	return fails != 0;
}

/* The same from a process of the agent's uid outside the tree, where no
 * filter refuses anything: only the kernel's permission check is left. */
static int signal_from_outside(pid_t sup)
{
	pid_t t = sup_thread_of_ours(sup);
	int fails;

	if (!t) {
		printf("no-thread\n");
		return 1;
	}
	fails = signal_direct(sup, t);
	printf("%s\n", fails ? "SIGNALLED" : "refused-all");
	return fails != 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(m, "signal-outside") == 0 && argc == 3)
		return signal_from_outside((pid_t)atoi(argv[2]));
	if (strcmp(m, "cmsg-len") == 0 && argc == 3)
		return cmsg_len(atoi(argv[2]));
	if (strcmp(m, "cmsg-fds") == 0 && argc == 3)
		return cmsg_fds(atoi(argv[2]));
	if (strcmp(m, "unix-long") == 0)
		return unix_long(argc > 2 && strcmp(argv[2], "bind") == 0);
	if (strcmp(m, "cmsg") == 0 && argc >= 5)
		return inet_cmsg(argv[2], argv[3], atoi(argv[4]), argc > 5 ? argv[5] : "127.0.0.2");
	if (strcmp(m, "creds") == 0 && argc == 5)
		return creds_send(argv[2], argv[3], argv[4]);
	if (strcmp(m, "listen") == 0 && argc == 3)
		return listen_peercred(argv[2]);
	if (strcmp(m, "sockopt-lsrr") == 0 && argc == 5)
		return sockopt_lsrr(argv[2], atoi(argv[3]), argv[4]);
	if (strcmp(m, "connect-bound") == 0 && argc == 4)
		return connect_bound(argv[2], atoi(argv[3]));
	if (strcmp(m, "mmsg-block") == 0 && argc == 4)
		return mmsg_block(argv[2], atoi(argv[3]));
	if (strcmp(m, "mmsg-batch") == 0 && argc == 3)
		return mmsg_batch(atoi(argv[2]));
	if (strcmp(m, "mmsg-victim") == 0 && argc == 3)
		return mmsg_victim(atoi(argv[2]));
	if (strcmp(m, "exec-env") == 0 && argc >= 4)
		return exec_env(argv[2], argv + 3);
	if (strcmp(m, "flood") == 0 && argc == 3)
		return flood(atoi(argv[2]));
	if (strcmp(m, "sctp") == 0)
		return report(socket(argc > 2 ? AF_INET6 : AF_INET, SOCK_STREAM, IPPROTO_SCTP));
	if (strcmp(m, "connect") == 0 && argc == 4)
		return connect_to(argv[2], atoi(argv[3]));
	if (strcmp(m, "signal-sup") == 0)
		return signal_sup();
	fprintf(stderr, "usage: shk-harden cmsg-len LEN | cmsg-fds N | unix-long [bind] |\n"
	                "  cmsg lsrr|mark|priority|ttl|tos ADDR PORT [HOP] | creds PID UID GID |\n"
	                "  listen PATH | connect ADDR PORT | sockopt-lsrr ADDR PORT HOP | sctp [6] |\n"
	                "  connect-bound SRC PORT | flood N | exec-env VAR=VAL PROG [ARGS] |\n"
	                "  mmsg-block PIDFILE DELAY | mmsg-batch N | mmsg-victim SECS | signal-sup\n");
	return 2;
}
