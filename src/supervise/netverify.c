/* SPDX-License-Identifier: MIT */
/*
 * The kernel-verified CONTINUE for connect and UDP sends with an address
 * (bpf/verify.bpf.c). An approved call is not performed by us: its address, as we read and judged it, is
 * armed as a single-use approval on the socket, and the call is let through.
 * The kernel copies the sockaddr again and the cgroup hook compares ITS copy
 * with the approval (keyed by socket cookie and thread): a sockaddr rewritten after our check, another thread, a
 * swapped fd number (another socket of the leaf) or no approval at all end in
 * EPERM. What the hooks cannot see stays emulated (net.c, emu.c): unix and
 * other families, other protocols, sockets made outside the leaf, scoped
 * IPv6 addresses, held calls, sendmmsg and sends without an address.
 *
 * The remaining way around the hooks would be an fd number swapped, between
 * our check and the kernel's lookup, for a socket the hooks never see: made
 * outside the leaf or of a family without a connect hook. So with this path
 * on, the agent cannot make sockets of other families (filter.c) nor take
 * fds from other processes (pidfd_getfd), and the path is not used when the
 * agent would inherit a socket. A socket handed in over SCM_RIGHTS by a
 * process outside the tree is the one gap left (docs/supervisor.md).
 */
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "ebpf/netverify.h"
#include "supervise/internal.h"

static int sockopt_int(int fd, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, opt, &v, &l) < 0 ? -1 : v;
}

/* A connected unix stream or seqpacket socket (a terminal multiplexer's or
 * libuv's stdio) can never be connected again: EISCONN, and AF_UNSPEC does
 * not disconnect it. */
static bool never_connects(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int type = sockopt_int(fd, SO_TYPE);

	return sockopt_int(fd, SO_DOMAIN) == AF_UNIX &&
	       (type == SOCK_STREAM || type == SOCK_SEQPACKET) &&
	       getpeername(fd, (struct sockaddr *)&ss, &len) == 0;
}

/* A socket the agent would inherit from us (made outside its leaf) that it
 * could still connect somewhere. */
static int inherited_socket(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -2; /* cannot tell: treat as found */
	while ((e = readdir(d)) && found < 0) {
		int fd = atoi(e->d_name), fl;
		struct stat st;

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		fl = fcntl(fd, F_GETFD);
		if (fl < 0 || (fl & FD_CLOEXEC))
			continue;
		if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && !never_connects(fd))
			found = fd;
	}
	closedir(d);
	return found;
}

__attribute__((format(printf, 2, 3)))
static void note(const struct shk_sup *s, const char *fmt, ...)
{
	va_list ap;

	/* forced bpf: the reason the start fails is always shown */
	if (s->cfg->quiet && s->cfg->net_verify != SHK_NET_VERIFY_BPF)
		return;
	fputs("shackle-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int shk_netv_setup(struct shk_sup *s)
{
	bool forced = s->cfg->net_verify == SHK_NET_VERIFY_BPF;
	char why[256] = "";
	int r = 0, fd;

	if (s->cfg->net_verify == SHK_NET_VERIFY_EMULATE)
		return 0;
	if (s->cg.dirfd < 0) {
		snprintf(why, sizeof(why), "no cgroup leaf for the agent");
		r = -EOPNOTSUPP;
	} else if ((fd = inherited_socket()) != -1) {
		snprintf(why, sizeof(why), "the agent would inherit a socket made outside its "
		         "cgroup (fd %d)", fd);
		r = -EOPNOTSUPP;
	} else if ((r = shk_netverify_usable(why, sizeof(why))) == 0 &&
	           (r = shk_netverify_open(s->cg.dirfd, getpid(), &s->nv)) < 0) {
		snprintf(why, sizeof(why), "cannot load or attach the verify programs: %s", strerror(-r));
	}
	if (r < 0) {
		s->nv = NULL;
		if (forced) {
			note(s, "--net-verify=bpf: %s", why);
			return r;
		}
		return 0; /* auto: the emulation is the design without it */
	}
	s->stats.net_bpf = true;
	return 0;
}

void shk_netv_teardown(struct shk_sup *s)
{
	shk_netverify_free(s->nv);
	s->nv = NULL;
}

/* What the hooks check exactly: a connect over TCP or UDP, or one UDP
 * datagram sent to an address (sendto), over IPv4/IPv6, the address
 * in the socket's own family, no IPv6 scope (the hook does not see it).
 * sendmsg is always emulated (its cmsgs, see below). */
static bool verifiable(const struct shk_emu_job *j, int type, int proto)
{
	const struct shk_emu_msg *m = &j->msgs[0];
	bool udp = type == SOCK_DGRAM && proto == IPPROTO_UDP;

	if (j->nmsgs != 1 || !m->has_addr || m->addr.ss_family != j->family)
		return false;
	if (j->nr == SYS_connect) {
		if (!udp && !(type == SOCK_STREAM && proto == IPPROTO_TCP))
			return false;
	} else if (j->nr != SYS_sendto) {
		/* a sendmsg's control messages would be re-read by the kernel
		 * after our check: a source route (IP_RETOPTS) flipped in
		 * there moves the datagram past the hook, which sees only the
		 * address. sendto has none. */
		return false;
	} else if (!udp) {
		return false;
	}
	if (j->family == AF_INET)
		return m->addrlen >= sizeof(struct sockaddr_in);
	if (j->family == AF_INET6)
		return m->addrlen >= 24 &&
		       (m->addrlen < sizeof(struct sockaddr_in6) ||
		        ((const struct sockaddr_in6 *)&m->addr)->sin6_scope_id == 0);
	return false;
}

int shk_netv_try(struct shk_sup *s, struct shk_emu_job *j, int type, int proto)
{
	int r;

	/* no cookie: not a socket of the leaf, the hooks would not see it */
	if (!s->nv || !j->cookie || !verifiable(j, type, proto))
		return 0;
	/* not armed (no memory): emulate */
	if (shk_netverify_arm(s->nv, j->cookie, j->tid, j->nr != SYS_connect,
	                      (const struct sockaddr *)&j->msgs[0].addr, j->msgs[0].addrlen) < 0)
		return 0;
	/* Our copy goes before the answer: while the agent's thread waits,
	 * its own reference keeps this close cheap; after it, the agent may
	 * have closed the socket and ours would be the last (the whole TCP
	 * teardown on this thread). */
	close(j->sock);
	j->sock = -1;
	r = shk_notify_respond(s->notify_fd, j->id, 0, 0, true);
	if (r < 0) {
		/* not let through: the approval must not outlive the answer */
		(void)shk_netverify_disarm(s->nv, j->cookie, j->tid);
		if (r == -ENOENT)
			s->stats.gone++;
	} else {
		s->stats.net_continued++;
	}
	shk_net_job_done(s, j);
	return 1;
}
