/* SPDX-License-Identifier: MIT */
/*
 * Network calls are never answered with a plain CONTINUE: the kernel would
 * re-read a sockaddr (or a whole msghdr, or even the fd number) that another
 * thread can change after the check. Instead the supervisor takes a copy of
 * the agent's socket (pidfd_getfd), judges the copied address and performs
 * the call on the copy with the copied data; its result becomes the
 * syscall's result. The exception is a connect the kernel itself checks
 * against the judged address (netverify.c).
 */
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "ebpf/netverify.h"
#include "supervise/internal.h"
#include "supervise/path.h"

#define MAX_IOV 1024
#define MAX_CONTROL 65536
#define MAX_MMSG 64
#define SHK_SCM_MAX_FD 253 /* the kernel's SCM_MAX_FD */

static int thread_pidfd(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);

	if (fd < 0 && errno == EINVAL) /* before 6.9: only leaders */
		fd = (int)syscall(SYS_pidfd_open, tid, 0);
	return fd < 0 ? -errno : fd;
}

static void slot_clear(struct shk_pidfd_slot *c)
{
	if (c->tid)
		close(c->fd);
	c->tid = 0;
}

void shk_net_pidfds_free(struct shk_sup *s)
{
	for (size_t i = 0; i < SHK_PIDFD_CACHE; i++)
		slot_clear(&s->pidfds[i]);
}

/*
 * The agent's socket, through a cached pidfd of the calling thread. A
 * pidfd names one task for good: while that task lives it is the only one
 * with this tid, so a cached pidfd either reaches the caller's fd table or
 * fails with ESRCH (the task it named is gone and the tid was reused, or
 * an exec moved the thread to the leader's tid) — then it is opened anew.
 */
static int grab_socket(struct shk_sup *s, struct shk_emu_job *j, int agent_fd, bool *ret_same)
{
	struct shk_pidfd_slot *c = &s->pidfds[(unsigned)j->tid % SHK_PIDFD_CACHE];

	*ret_same = true;
	for (int fresh = 0; fresh < 2; fresh++) {
		if (c->tid != j->tid || fresh) {
			int fd = thread_pidfd(j->tid);
			if (fd < 0)
				return fd;
			slot_clear(c);
			*c = (struct shk_pidfd_slot){ j->tid, fd };
			/* maybe another thread by this tid: what was cached
			 * about the tid is not known to be of it */
			shk_tidinfo_forget(s, j->tid);
			*ret_same = false;
		}
		j->sock = (int)syscall(SYS_pidfd_getfd, c->fd, agent_fd, 0);
		if (j->sock >= 0)
			break;
		if (errno != ESRCH || fresh)
			return -errno;
	}
	return 0;
}

/* A job that reads SCM_RIGHTS or outlives this notification (held, or
 * performed by us) keeps its own pidfd of the caller: a dup of the cached
 * one, taken right after grab_socket() found it alive. */
static int keep_pidfd(struct shk_sup *s, struct shk_emu_job *j)
{
	const struct shk_pidfd_slot *c = &s->pidfds[(unsigned)j->tid % SHK_PIDFD_CACHE];

	if (j->pidfd >= 0)
		return 0;
	if (c->tid != j->tid)
		return -ESRCH;
	j->pidfd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
	return j->pidfd < 0 ? -errno : 0;
}

/* Where sendmmsg's msg_len values are written back (emu.c write_back_len);
 * the ID_VALID check that follows proves it is the caller's memory. */
static int open_mem(struct shk_emu_job *j)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/mem", (int)j->tid);
	j->memfd = open(p, O_WRONLY | O_CLOEXEC);
	return j->memfd < 0 ? (errno == ENOENT ? -ESRCH : -errno) : 0;
}

static int sockopt(int fd, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, opt, &v, &l) < 0 ? -errno : v;
}

/* Family, type and protocol of our copy of the socket: for the calls the
 * kernel-verified path takes, from the leaf hook's mark (one map lookup,
 * which also tells the socket was made in the leaf); else getsockopt(). */
static int sock_kind(struct shk_sup *s, struct shk_emu_job *j, int *fam, int *type, int *proto)
{
	struct shk_netverify_sock ns;

	if (s->nv && (j->nr == SYS_connect || j->nr == SYS_sendto) &&
	    shk_netverify_sock(s->nv, j->sock, &ns) == 0) {
		j->cookie = ns.cookie;
		*fam = ns.family;
		*type = ns.type;
		*proto = ns.protocol;
		return 0;
	}
	if ((*fam = sockopt(j->sock, SO_DOMAIN)) < 0)
		return *fam;
	*type = sockopt(j->sock, SO_TYPE);
	*proto = sockopt(j->sock, SO_PROTOCOL);
	return 0;
}

/* IPv4 by hand: glibc's inet_ntop formats it with sprintf, ~0.5 us a call */
static void fmt_inet(struct shk_obs_net *n)
{
	char *o = n->addr_str;

	if (n->family != AF_INET) {
		inet_ntop(n->family, n->addr, n->addr_str, sizeof(n->addr_str));
		return;
	}
	for (int i = 0; i < 4; i++) {
		unsigned v = n->addr[i];

		if (v >= 100)
			*o++ = (char)('0' + v / 100);
		if (v >= 10)
			*o++ = (char)('0' + v / 10 % 10);
		*o++ = (char)('0' + v % 10);
		*o++ = i < 3 ? '.' : '\0';
	}
}

/* A unix name, resolved as the agent would, into something we can use. */
static int unix_target(struct shk_sup *s, struct shk_emu_msg *m, struct shk_obs_net *n, bool bind)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&m->addr;
	size_t max = m->addrlen - offsetof(struct sockaddr_un, sun_path);
	char path[sizeof(un->sun_path) + 1], canon[PATH_MAX];
	struct stat st;
	int fd, r;

	if (max > sizeof(un->sun_path))
		return -EINVAL; /* describe() checked it: never copy past sun_path */
	memcpy(path, un->sun_path, max);
	path[strnlen(path, max)] = 0;
	if (!bind) {
		fd = shk_path_open(s, s->obs.tid, AT_FDCWD, path, O_PATH, true);
		if (fd < 0)
			return fd;
		if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
			close(fd);
			return -ECONNREFUSED;
		}
		if ((r = shk_fd_name(fd, canon, sizeof(canon))) < 0) {
			close(fd);
			return r;
		}
		m->pathfd = fd;
	} else {
		/* bind creates the name: canonicalise the directory it goes in */
		char *slash = strrchr(path, '/');
		const char *base = slash ? slash + 1 : path;
		char dir[PATH_MAX];

		if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
			return -EINVAL;
		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		         slash ? (slash == path ? "/" : path) : ".");
		fd = shk_path_open(s, s->obs.tid, AT_FDCWD, dir, O_PATH | O_DIRECTORY, true);
		if (fd < 0)
			return fd;
		r = shk_fd_name(fd, canon, sizeof(canon));
		close(fd);
		if (r < 0)
			return r;
		if (strcmp(canon, "/") == 0)
			canon[0] = 0;
		if (strlen(canon) + 1 + strlen(base) >= sizeof(un->sun_path))
			return -ENAMETOOLONG;
		memset(un->sun_path, 0, sizeof(un->sun_path));
		memcpy(un->sun_path, canon, strlen(canon));
		un->sun_path[strlen(canon)] = '/';
		memcpy(un->sun_path + strlen(canon) + 1, base, strlen(base));
		m->addrlen = offsetof(struct sockaddr_un, sun_path) + strlen(un->sun_path) + 1;
		snprintf(canon, sizeof(canon), "%s", un->sun_path);
	}
	/* never judge a truncated name */
	if (strlen(canon) >= sizeof(n->unix_name))
		return -ENAMETOOLONG;
	n->unix_len = strlen(canon);
	memcpy(n->unix_name, canon, n->unix_len);
	n->unix_name[n->unix_len] = 0;
	return 0;
}

/* Fill s->obs.net from a copied address. Returns 1 when no tool call is
 * needed (AF_UNSPEC disconnect, netlink), 0 to judge, <0 to answer. */
static int describe(struct shk_sup *s, struct shk_emu_msg *m, shk_obs_netop op)
{
	struct shk_obs_net *n = &s->obs.net;
	struct sockaddr_storage *a = &m->addr;
	size_t off = offsetof(struct sockaddr_un, sun_path);

	n->op = op;
	if (m->addrlen < sizeof(sa_family_t))
		return -EINVAL;
	n->family = a->ss_family;
	switch (a->ss_family) {
	case AF_INET: {
		struct sockaddr_in *in = (struct sockaddr_in *)a;
		if (m->addrlen < sizeof(*in))
			return -EINVAL;
		memcpy(n->addr, &in->sin_addr, 4);
		n->port = ntohs(in->sin_port);
		fmt_inet(n);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)a;
		if (m->addrlen < 24) /* SIN6_LEN_RFC2133: the kernel takes it */
			return -EINVAL;
		n->port = ntohs(in6->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			n->family = AF_INET; /* judged as the IPv4 address it is */
			memcpy(n->addr, &in6->sin6_addr.s6_addr[12], 4);
		} else {
			memcpy(n->addr, &in6->sin6_addr, 16);
		}
		fmt_inet(n);
		return 0;
	}
	case AF_UNIX:
		/* the kernel's unix_validate_addr: longer than a sockaddr_un is
		 * EINVAL, and nothing past sun_path may be read as a name */
		if (m->addrlen > sizeof(struct sockaddr_un))
			return -EINVAL;
		if (m->addrlen == off) {
			n->unix_unnamed = true;
			return 0;
		}
		if (((struct sockaddr_un *)a)->sun_path[0] == 0) {
			n->unix_abstract = true;
			n->unix_len = m->addrlen - off - 1;
			memcpy(n->unix_name, ((struct sockaddr_un *)a)->sun_path + 1, n->unix_len);
			return 0;
		}
		return unix_target(s, m, n, op == SHK_OBS_BIND);
	case AF_UNSPEC:
		return op == SHK_OBS_CONNECT ? 1 : -EAFNOSUPPORT;
	case AF_NETLINK:
		return 1; /* talks to the kernel, which applies its own checks */
	default:
		return 0; /* judged with its family number; the policy decides */
	}
}

static int read_addr(pid_t tid, uint64_t ptr, uint64_t len, struct shk_emu_msg *m)
{
	uint32_t l = (uint32_t)len; /* socklen_t: the kernel reads 32 bits */

	if (ptr == 0)
		return 0;
	if (l > sizeof(m->addr))
		return -EINVAL;
	memset(&m->addr, 0, sizeof(m->addr));
	m->addrlen = l;
	m->has_addr = true;
	return shk_mem_read(tid, ptr, &m->addr, l);
}

/* Checked as the kernel's __scm_send does before it trusts a header: a
 * cmsg_len below a bare header or past the end of the buffer is EINVAL. */
static struct cmsghdr *cmsg_at(struct shk_emu_msg *m, size_t off, int *ret_err)
{
	struct cmsghdr *c;

	*ret_err = 0;
	if (off >= m->controllen || m->controllen - off < sizeof(struct cmsghdr))
		return NULL; /* trailing bytes shorter than a header are ignored */
	c = (struct cmsghdr *)(m->control + off);
	if (c->cmsg_len < CMSG_LEN(0) || c->cmsg_len > m->controllen - off) {
		*ret_err = -EINVAL;
		return NULL;
	}
	return c;
}

static int translate_rights(struct shk_emu_job *j, struct shk_emu_msg *m, struct cmsghdr *c,
                            size_t *msg_fds)
{
	size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	int *fds = (int *)CMSG_DATA(c), *all;

	if (n == 0)
		return 0; /* the kernel ignores an empty SCM_RIGHTS */
	/* SCM_MAX_FD per message (the kernel's EINVAL), and per job, so a
	 * sendmmsg cannot make us hold 64 times as many (the prefix is sent) */
	if (n > SHK_SCM_MAX_FD - *msg_fds)
		return -EINVAL;
	if (n > SHK_SCM_MAX_FD - j->nfds)
		return -ETOOMANYREFS;
	all = realloc(m->fds, (m->nfds + n) * sizeof(int));
	if (!all)
		return -ENOMEM;
	m->fds = all;
	*msg_fds += n;
	for (size_t i = 0; i < n; i++) {
		int ours = (int)syscall(SYS_pidfd_getfd, j->pidfd, fds[i], 0);
		if (ours < 0)
			return -EBADF;
		m->fds[m->nfds++] = ours;
		j->nfds++;
		fds[i] = ours;
	}
	return 0;
}

/* IP(V6)_PKTINFO may not choose a source address or an interface: that is
 * what root (the loop thread) could do and the agent perhaps not. */
static int pktinfo_ok(const struct cmsghdr *c, size_t want, size_t ifx_off, size_t addr_off,
                      size_t addr_len)
{
	static const unsigned char zero[16];
	const unsigned char *d = CMSG_DATA(c);
	int ifindex;

	if (c->cmsg_len != CMSG_LEN(want))
		return -EINVAL; /* the kernel's answer */
	memcpy(&ifindex, d + ifx_off, sizeof(ifindex));
	return ifindex == 0 && memcmp(d + addr_off, zero, addr_len) == 0 ? 0 : -EPERM;
}

/* The allowlist of control messages we send on the agent's behalf (the send
 * may run as root on the loop thread): what any unprivileged sender may set
 * and what cannot move the packet elsewhere. docs/supervisor.md lists it. */
static int cmsg_allowed(int family, const struct cmsghdr *c)
{
	bool inet = family == AF_INET || family == AF_INET6;

	if (c->cmsg_level == SOL_SOCKET) {
		if (c->cmsg_type == SCM_RIGHTS)
			return family == AF_UNIX ? 0 : -EINVAL; /* as the kernel */
		return -EPERM; /* SCM_CREDENTIALS off unix, SO_MARK, SO_PRIORITY, ... */
	}
	if (family == AF_UNIX)
		return 0; /* other levels are ignored by the kernel on unix sockets */
	if (inet && c->cmsg_level == IPPROTO_IP) {
		if (c->cmsg_type == IP_TOS || c->cmsg_type == IP_TTL)
			return 0;
		if (c->cmsg_type == IP_PKTINFO)
			return pktinfo_ok(c, sizeof(struct in_pktinfo),
			                  offsetof(struct in_pktinfo, ipi_ifindex),
			                  offsetof(struct in_pktinfo, ipi_spec_dst), 4);
		return -EPERM; /* IP_RETOPTS (source routing), ... */
	}
	if (inet && c->cmsg_level == IPPROTO_IPV6) {
		if (c->cmsg_type == IPV6_TCLASS || c->cmsg_type == IPV6_HOPLIMIT ||
		    c->cmsg_type == IPV6_DONTFRAG)
			return 0;
		if (c->cmsg_type == IPV6_PKTINFO)
			return pktinfo_ok(c, sizeof(struct in6_pktinfo),
			                  offsetof(struct in6_pktinfo, ipi6_ifindex),
			                  offsetof(struct in6_pktinfo, ipi6_addr), 16);
		return -EPERM; /* routing header, next hop, hop-by-hop, dst options */
	}
	if (inet && c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT)
		return 0;
	return -EPERM;
}

/* Whether id is one of the "Uid:"/"Gid:" line's real, effective, saved. */
static bool id_listed(const char *status, const char *key, unsigned id)
{
	const char *l = strstr(status, key);
	unsigned v[3];

	if (!l || sscanf(l + strlen(key), "%u %u %u", &v[0], &v[1], &v[2]) != 3)
		return false;
	return id == v[0] || id == v[1] || id == v[2];
}

/* SCM_CREDENTIALS: only the agent's own ids, as the kernel lets an
 * unprivileged sender claim (its tgid; one of its uids and gids), read from
 * /proc at judgement. We send it (on a worker holding the agent's ids when
 * root), so the pid becomes ours, as for every send we make. */
static int creds_allowed(const struct shk_emu_job *j, struct cmsghdr *c)
{
	char p[64], status[4096];
	struct ucred cr;
	ssize_t n;
	int fd;
	const char *tg;

	if (c->cmsg_len != CMSG_LEN(sizeof(cr)))
		return -EINVAL; /* the kernel's answer */
	memcpy(&cr, CMSG_DATA(c), sizeof(cr));
	snprintf(p, sizeof(p), "/proc/%d/status", (int)j->tid);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -ESRCH;
	n = read(fd, status, sizeof(status) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	status[n] = 0;
	tg = strstr(status, "\nTgid:");
	if (!tg || atoi(tg + 6) != cr.pid || !id_listed(status, "\nUid:", cr.uid) ||
	    !id_listed(status, "\nGid:", cr.gid))
		return -EPERM;
	cr.pid = getpid();
	memcpy(CMSG_DATA(c), &cr, sizeof(cr));
	return 0;
}

static int translate_control(struct shk_emu_job *j, struct shk_emu_msg *m)
{
	size_t off = 0, msg_fds = 0;
	struct cmsghdr *c;
	int r;

	while ((c = cmsg_at(m, off, &r))) {
		off += CMSG_ALIGN(c->cmsg_len);
		if (j->family == AF_UNIX && c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS) {
			if ((r = creds_allowed(j, c)) < 0)
				return r;
			continue;
		}
		if ((r = cmsg_allowed(j->family, c)) < 0)
			return r;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		if ((r = translate_rights(j, m, c, &msg_fds)) < 0)
			return r;
	}
	return r;
}

/* A msghdr from the agent: name, data (bounded) and control, all copied. */
static int read_msghdr(pid_t tid, struct shk_emu_job *j, uint64_t ptr, struct shk_emu_msg *m,
                       int socktype, size_t *budget)
{
	struct msghdr mh;
	struct iovec iov[64];
	size_t total = 0;
	int r;

	if ((r = shk_mem_read(tid, ptr, &mh, sizeof(mh))) < 0)
		return r;
	if ((r = read_addr(tid, (uintptr_t)mh.msg_name, mh.msg_namelen, m)) < 0)
		return r;
	if (mh.msg_iovlen > MAX_IOV)
		return -EMSGSIZE;
	m->data = malloc(*budget ? *budget : 1);
	if (!m->data)
		return -ENOMEM;
	for (size_t i = 0; i < mh.msg_iovlen; i += 64) {
		size_t cnt = mh.msg_iovlen - i < 64 ? mh.msg_iovlen - i : 64;
		if ((r = shk_mem_read(tid, (uintptr_t)(mh.msg_iov + i), iov, cnt * sizeof(*iov))) < 0)
			return r;
		for (size_t k = 0; k < cnt; k++) {
			size_t take = iov[k].iov_len;
			if (take > *budget - total) {
				/* a stream may be sent in part; a datagram may not */
				if (socktype != SOCK_STREAM)
					return -EMSGSIZE;
				take = *budget - total;
			}
			if ((r = shk_mem_read(tid, (uintptr_t)iov[k].iov_base, m->data + total, take)) < 0)
				return r;
			total += take;
		}
	}
	m->datalen = total;
	*budget -= total;
	if (mh.msg_control && mh.msg_controllen) {
		if (mh.msg_controllen > MAX_CONTROL)
			return -ENOBUFS;
		m->control = malloc(mh.msg_controllen);
		if (!m->control)
			return -ENOMEM;
		m->controllen = mh.msg_controllen;
		if ((r = shk_mem_read(tid, (uintptr_t)mh.msg_control, m->control, m->controllen)) < 0)
			return r;
		return translate_control(j, m);
	}
	return 0;
}

static int add_msgs(struct shk_emu_job *j, size_t n)
{
	j->msgs = n <= 1 ? &j->one : calloc(n, sizeof(*j->msgs));
	if (!j->msgs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		j->msgs[i].pathfd = -1;
	j->nmsgs = n;
	return 0;
}

/* TCP_CLOSE (unbound or bound) or TCP_LISTEN (a new backlog); non-TCP
 * stream sockets (unix) pass. */
static bool tcp_can_listen(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return errno == EOPNOTSUPP || errno == ENOPROTOOPT;
	return ti.tcpi_state == TCP_CLOSE || ti.tcpi_state == TCP_LISTEN;
}

static int read_call(const struct seccomp_notif *req, struct shk_emu_job *j, int socktype)
{
	const __u64 *a = req->data.args;
	size_t budget = SHK_SUP_MAX_SEND;
	int r;

	switch (req->data.nr) {
	case SYS_connect:
	case SYS_bind:
		if ((r = add_msgs(j, 1)) < 0)
			return r;
		if ((r = read_addr(j->tid, a[1], a[2], &j->msgs[0])) < 0)
			return r;
		return j->msgs[0].has_addr ? 0 : -EFAULT;
	case SYS_listen:
		j->backlog = (int)a[1];
		/* a TCP socket that is connecting or connected cannot listen
		 * (EINVAL), and its address of the moment is not where it would
		 * listen: judged as such it was a way to listen anywhere */
		if (socktype == SOCK_STREAM && !tcp_can_listen(j->sock))
			return -EINVAL;
		if ((r = add_msgs(j, 1)) < 0)
			return r;
		j->msgs[0].addrlen = sizeof(j->msgs[0].addr);
		j->msgs[0].has_addr = true;
		return getsockname(j->sock, (struct sockaddr *)&j->msgs[0].addr,
		                   &j->msgs[0].addrlen) < 0 ? -errno : 0;
	case SYS_sendto: {
		size_t len = a[2];
		j->flags = (int)a[3];
		if ((r = add_msgs(j, 1)) < 0)
			return r;
		if (len > budget) {
			if (socktype != SOCK_STREAM)
				return -EMSGSIZE;
			len = budget;
		}
		j->msgs[0].data = malloc(len ? len : 1);
		if (!j->msgs[0].data)
			return -ENOMEM;
		j->msgs[0].datalen = len;
		if ((r = shk_mem_read(j->tid, a[1], j->msgs[0].data, len)) < 0)
			return r;
		return read_addr(j->tid, a[4], a[5], &j->msgs[0]);
	}
	case SYS_sendmsg:
		j->flags = (int)a[2];
		if ((r = add_msgs(j, 1)) < 0)
			return r;
		return read_msghdr(j->tid, j, a[1], &j->msgs[0], socktype, &budget);
	case SYS_sendmmsg: {
		unsigned vlen = (unsigned)a[2];
		j->flags = (int)a[3];
		j->mmsg_addr = a[1];
		if ((r = add_msgs(j, vlen > MAX_MMSG ? MAX_MMSG : vlen)) < 0)
			return r;
		for (size_t i = 0; i < j->nmsgs; i++) {
			r = read_msghdr(j->tid, j, a[1] + i * sizeof(struct mmsghdr), &j->msgs[i],
			                socktype, &budget);
			if (r < 0 && i > 0) {
				/* send what could be read; the rest is retried */
				for (size_t k = i; k < j->nmsgs; k++)
					shk_emu_msg_release(&j->msgs[k]);
				j->nmsgs = i;
				return 0;
			}
			if (r < 0)
				return r;
		}
		return 0;
	}
	}
	return -ENOSYS;
}

static shk_obs_netop op_of(int nr)
{
	const struct shk_sys_class *c = shk_sys_class_of(nr);

	return c && c->kind == SHK_OBS_NET ? c->op : SHK_OBS_SENDMSG;
}

/* A connect or send to 0.0.0.0 goes to the socket's bound address when it
 * has one (ip_route_output_key takes the source as the destination), else
 * to 127.0.0.1; :: goes to ::1, or to the v4-mapped 127.0.0.1 / bound
 * address on a socket bound to a v4-mapped one. Judge where it really goes
 * and send it exactly there: a bind by another thread between judgement
 * and the call cannot move it, and no CONTINUE lets the kernel re-read it. */
static void unspecified_peer(struct shk_emu_job *j, struct shk_emu_msg *m, struct shk_obs_net *n)
{
	static const uint8_t zero[16];
	struct sockaddr_storage ss;
	struct sockaddr_in6 *b6 = (struct sockaddr_in6 *)&ss;
	struct sockaddr_in6 *m6 = (struct sockaddr_in6 *)&m->addr;
	socklen_t l = sizeof(ss);
	uint8_t v4[4] = { 127, 0, 0, 1 };
	bool v6 = m->addr.ss_family == AF_INET6, mapped = false;

	if (n->op == SHK_OBS_BIND || n->op == SHK_OBS_LISTEN ||
	    (n->family != AF_INET && n->family != AF_INET6) ||
	    memcmp(n->addr, zero, n->family == AF_INET ? 4 : 16) != 0)
		return;
	if (getsockname(j->sock, (struct sockaddr *)&ss, &l) == 0) {
		if (ss.ss_family == AF_INET &&
		    ((struct sockaddr_in *)&ss)->sin_addr.s_addr != 0)
			memcpy(v4, &((struct sockaddr_in *)&ss)->sin_addr, 4);
		if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&b6->sin6_addr)) {
			mapped = true;
			if (memcmp(&b6->sin6_addr.s6_addr[12], zero, 4) != 0)
				memcpy(v4, &b6->sin6_addr.s6_addr[12], 4);
		}
	}
	j->pinned = true;
	memset(n->addr, 0, sizeof(n->addr));
	if (v6 && n->family == AF_INET6 && !mapped) {
		n->addr[15] = 1;
		m6->sin6_addr = in6addr_loopback;
	} else {
		n->family = AF_INET;
		memcpy(n->addr, v4, 4);
		if (v6) {
			m6->sin6_addr.s6_addr[10] = 0xff;
			m6->sin6_addr.s6_addr[11] = 0xff;
			memcpy(&m6->sin6_addr.s6_addr[12], v4, 4);
		} else {
			memcpy(&((struct sockaddr_in *)&m->addr)->sin_addr, v4, 4);
		}
	}
	fmt_inet(n);
}

/*
 * The observation zeroed for a network call but for its PATH_MAX name
 * buffers, which only become empty strings: the whole struct shk_obs is
 * ~33 KB (the exec member's paths), and clearing it for every connect cost
 * about a microsecond.
 */
static void obs_net_reset(struct shk_obs_net *n)
{
	memset(n, 0, offsetof(struct shk_obs_net, unix_name));
	n->unix_name[0] = 0;
	memset((char *)n + offsetof(struct shk_obs_net, unix_len), 0,
	       sizeof(*n) - offsetof(struct shk_obs_net, unix_len));
}

static void obs_reset(struct shk_obs *o)
{
	memset(o, 0, offsetof(struct shk_obs, exe));
	o->exe[0] = 0;
	o->notif_id = 0;
	o->can_hold = false;
	obs_net_reset(&o->net);
}

/* Judge every message that carries an address; stop at the first denial. */
static int judge_msgs(struct shk_sup *s, struct shk_emu_job *j, const struct seccomp_notif *req,
                      int type, int proto)
{
	for (size_t i = 0; i < j->nmsgs; i++) {
		struct shk_judgement v;
		int r;

		if (!j->msgs[i].has_addr)
			continue; /* the socket's connected peer, judged at connect */
		obs_net_reset(&s->obs.net);
		s->obs.net.socktype = type;
		s->obs.net.protocol = proto;
		s->obs.net.unix_pathfd = -1;
		s->obs.notif_id = req->id;
		/* one message, one answer: a sendmmsg is never held */
		s->obs.can_hold = j->nr != SYS_sendmmsg;
		r = describe(s, &j->msgs[i], op_of(j->nr));
		if (r == 0)
			unspecified_peer(j, &j->msgs[i], &s->obs.net);
		s->obs.net.unix_pathfd = j->msgs[i].pathfd;
		if (r == 1)
			continue;
		/* describe() walked the agent's cwd: is it still the same task? */
		if (j->msgs[i].addr.ss_family == AF_UNIX &&
		    ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
			return -ESRCH;
		if (r == 0) {
			shk_judge(s, &v);
			if (v.verdict == SHK_JUDGE_HOLD) {
				j->held = true;
				return 0;
			}
			r = v.verdict == SHK_JUDGE_ALLOW ? 0 : -(v.deny_errno ? v.deny_errno : EPERM);
			j->judged_deny = r < 0;
		}
		if (r < 0) {
			if (i == 0)
				return r;
			/* sendmmsg: the allowed prefix is sent */
			for (size_t k = i; k < j->nmsgs; k++)
				shk_emu_msg_release(&j->msgs[k]);
			j->nmsgs = i;
			return 0;
		}
	}
	return 0;
}

static bool run_inline(struct shk_sup *s, struct shk_emu_job *j, int family)
{
	int fl = fcntl(j->sock, F_GETFL);
	bool nonblock = (fl >= 0 && (fl & O_NONBLOCK)) || (j->flags & MSG_DONTWAIT);
	bool inet = family == AF_INET || family == AF_INET6;

	/* As root, only what needs no credential check runs on the loop: not
	 * a bind (ports < 1024), nothing on unix sockets (socket file
	 * permissions, and connect/listen record SO_PEERCRED from the caller). */
	if (s->drop_creds && (!inet || j->nr == SYS_bind))
		return false;
	return j->nr == SYS_listen || nonblock;
}

/* The spare job, or a new one: zeroed either way. */
static struct shk_emu_job *job_take(struct shk_sup *s)
{
	struct shk_emu_job *j = s->spare_job;

	if (!j)
		return calloc(1, sizeof(*j));
	s->spare_job = NULL;
	memset(j, 0, sizeof(*j));
	return j;
}

void shk_net_job_done(struct shk_sup *s, struct shk_emu_job *j)
{
	shk_emu_job_release(j);
	if (s->spare_job)
		free(j);
	else
		s->spare_job = j;
}

int shk_net_handle(struct shk_sup *s, const struct seccomp_notif *req)
{
	struct shk_emu_job *j = job_take(s);
	int fam = 0, type, proto, r;
	bool same;

	if (!j)
		return shk_notify_deny(s, req->id, ENOMEM);
	j->id = req->id;
	j->nr = (int)req->data.nr;
	j->tid = (pid_t)req->pid;
	j->sock = -1;
	obs_reset(&s->obs);
	s->obs.kind = SHK_OBS_NET;
	s->obs.nr = j->nr;
	s->obs.tid = j->tid;
	j->pidfd = -1;
	j->memfd = -1;
	r = grab_socket(s, j, (int)req->data.args[0], &same);
	if (r >= 0)
		r = sock_kind(s, j, &fam, &type, &proto);
	j->family = fam; /* the control messages allowed depend on it */
	if (r >= 0 && j->nr != SYS_connect)
		r = keep_pidfd(s, j);
	if (r >= 0)
		r = read_call(req, j, type);
	if (r >= 0 && j->nr == SYS_sendmmsg)
		r = open_mem(j);
	if (r >= 0)
		shk_tidinfo_fill(s, j->tid, same);
	/* one check covers the address, the socket and the /proc reads: all
	 * were of the caller if it is still waiting */
	if (r != -ESRCH && ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
		r = -ESRCH;
	if (r == -ESRCH) {
		s->stats.gone++;
		shk_net_job_done(s, j);
		return 0;
	}
	if (r >= 0)
		r = judge_msgs(s, j, req, type, proto);
	if (r == -ESRCH)
		s->stats.gone++;
	if (r < 0) {
		if (r != -ESRCH && !j->judged_deny)
			shk_notify_fail(s, req->id, -r);
		else if (r != -ESRCH)
			shk_notify_deny(s, req->id, -r);
		shk_net_job_done(s, j);
		return 0;
	}
	j->family = fam;
	/* A unix listen names no address (the socket was bound by a judged
	 * bind) and is let through: performed by us it recorded OUR pid and
	 * credentials as the listener's SO_PEERCRED, so an agent's server
	 * passed the operator commands' check that a session is served from
	 * the operator's own user namespace (second review), and every client
	 * was told shackle-run served it. Left: an fd number swapped for
	 * another bound unix socket of the agent's between our read and the
	 * kernel's listen (docs/supervisor.md). */
	if (j->nr == SYS_listen && fam == AF_UNIX && !j->held) {
		close(j->sock);
		j->sock = -1;
		if (shk_notify_respond(s->notify_fd, j->id, 0, 0, true) < 0)
			s->stats.gone++;
		shk_net_job_done(s, j);
		return 0;
	}
	if (!j->held && !j->pinned && shk_netv_try(s, j, type, proto))
		return 0;
	if ((r = keep_pidfd(s, j)) < 0) {
		shk_notify_deny(s, req->id, -r);
		shk_net_job_done(s, j);
		return 0;
	}
	if (j->held) {
		struct shk_held h = { .id = req->id, .exec = false, .job = j };
		if (shk_held_add(s, &h) < 0) {
			shk_notify_deny(s, req->id, ENOMEM);
			shk_net_job_done(s, j);
		}
		return 0;
	}
	shk_net_perform(s, j);
	return 0;
}

void shk_net_perform(struct shk_sup *s, struct shk_emu_job *j)
{
	if (run_inline(s, j, j->family))
		shk_emu_run(s, j);
	else
		shk_emu_submit(s, j);
}
