/* SPDX-License-Identifier: MIT */
/*
 * The agent's seccomp filter. Built in the supervisor with libseccomp and
 * exported as a classic BPF program, so that the child (after fork, in a
 * process that already has threads) only has to make one raw seccomp() call.
 *
 * docs/supervisor.md lists every rule and why. In short: exec and network
 * calls that can carry a destination are notified; what would blind or
 * bypass the supervisor is refused with EPERM; other ABIs are killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervise/internal.h"

#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif

/* int arguments: the kernel uses the low 32 bits, the caller controls the
 * rest of the register; compare masked or a crafted upper half slips by. */
#define ARG32_EQ(i, v) SCMP_CMP64((i), SCMP_CMP_MASKED_EQ, 0xffffffffULL, (uint32_t)(v))
#define ARG_BITS(i, m) SCMP_CMP64((i), SCMP_CMP_MASKED_EQ, (m), (m))

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
                const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return -ENOSYS;
	return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

/* The notified classes (classes.c). */
static int notify_rules(scmp_filter_ctx ctx)
{
	const struct shk_sys_class *k;
	struct scmp_arg_cmp c;
	int r = 0;

	for (size_t i = 0; r == 0 && (k = shk_sys_class_at(i)); i++) {
		if (k->when == SHK_NOTIFY_ALWAYS) {
			r = rule(ctx, SCMP_ACT_NOTIFY, k->name, 0, NULL);
			continue;
		}
		/* with an address, or MSG_FASTOPEN (which connects) */
		c = SCMP_CMP64(4, SCMP_CMP_NE, 0, 0);
		r = rule(ctx, SCMP_ACT_NOTIFY, k->name, 1, &c);
		c = ARG_BITS(3, MSG_FASTOPEN);
		if (r == 0)
			r = rule(ctx, SCMP_ACT_NOTIFY, k->name, 1, &c);
	}
	return r;
}

/* Sticky source routes (IP_OPTIONS LSRR/SSRR, an IPv6 routing header) send
 * a connect or datagram judged for one address to the first hop instead,
 * past the emulation and the cgroup hooks alike. SCTP (every mode) makes
 * associations to addresses given in socket options we never judge. */
static int deny_detours(scmp_filter_ctx ctx)
{
	static const int v6opts[] = { IPV6_RTHDR, IPV6_2292RTHDR, IPV6_2292PKTOPTIONS };
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp c[2];
	int r;

	c[0] = ARG32_EQ(1, IPPROTO_IP);
	c[1] = ARG32_EQ(2, IP_OPTIONS);
	if ((r = rule(ctx, eperm, "setsockopt", 2, c)) < 0)
		return r;
	for (size_t i = 0; i < sizeof(v6opts) / sizeof(v6opts[0]); i++) {
		c[0] = ARG32_EQ(1, IPPROTO_IPV6);
		c[1] = ARG32_EQ(2, v6opts[i]);
		if ((r = rule(ctx, eperm, "setsockopt", 2, c)) < 0)
			return r;
	}
	for (int fam = 0; fam < 2; fam++) {
		c[0] = ARG32_EQ(0, fam ? AF_INET6 : AF_INET);
		c[1] = ARG32_EQ(2, IPPROTO_SCTP);
		if ((r = rule(ctx, eperm, "socket", 2, c)) < 0)
			return r;
	}
	return 0;
}

static int deny_rules(scmp_filter_ctx ctx)
{
	static const char *const never[] = {
		"io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
		"process_vm_writev", "bpf", "perf_event_open", "kexec_load",
		"kexec_file_load", "init_module", "finit_module", "delete_module",
		"userfaultfd",
	};
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp c[2];
	int r;

	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		r = rule(ctx, eperm, never[i], 0, NULL);
		if (r < 0)
			return r;
	}
	/* A listener of the agent's own would win over ours (newest filter
	 * first); plain filters (Chromium, systemd tools) stay allowed. */
	c[0] = ARG32_EQ(0, SECCOMP_SET_MODE_FILTER);
	c[1] = ARG_BITS(1, SECCOMP_FILTER_FLAG_NEW_LISTENER);
	if ((r = rule(ctx, eperm, "seccomp", 2, c)) < 0)
		return r;
	/* Raw and packet sockets write any destination into the packet. Netlink
	 * uses SOCK_RAW legitimately (glibc, iproute2), so only IP families. */
	c[0] = ARG32_EQ(0, AF_PACKET);
	if ((r = rule(ctx, eperm, "socket", 1, c)) < 0)
		return r;
	for (int fam = 0; fam < 2; fam++) {
		c[0] = ARG32_EQ(0, fam ? AF_INET6 : AF_INET);
		c[1] = SCMP_CMP64(1, SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW);
		if ((r = rule(ctx, eperm, "socket", 2, c)) < 0)
			return r;
		c[1] = SCMP_CMP64(1, SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET);
		if ((r = rule(ctx, eperm, "socket", 2, c)) < 0)
			return r;
	}
	/* TCP_FASTOPEN_CONNECT defers the connect into a later write(). */
	c[0] = ARG32_EQ(1, IPPROTO_TCP);
	c[1] = ARG32_EQ(2, TCP_FASTOPEN_CONNECT);
	if ((r = rule(ctx, eperm, "setsockopt", 2, c)) < 0)
		return r;
	if ((r = deny_detours(ctx)) < 0)
		return r;
	/* CLONE_UNTRACED escapes ptrace auto-attach; user namespaces open FUSE
	 * mounts that could stall our reads of the agent's memory. clone3 keeps
	 * its flags in memory: ENOSYS makes libc fall back to clone. */
	c[0] = ARG_BITS(0, CLONE_UNTRACED);
	if ((r = rule(ctx, eperm, "clone", 1, c)) < 0)
		return r;
	c[0] = ARG_BITS(0, CLONE_NEWUSER);
	if ((r = rule(ctx, eperm, "clone", 1, c)) < 0)
		return r;
	/* A process (not a thread) sharing its working directory with another:
	 * that one could chdir() after the exec stop checked the directory an
	 * approved exec runs in (exec keeps a shared fs_struct). Threads share
	 * it too, but an exec ends every other thread first. */
	c[0] = SCMP_CMP64(0, SCMP_CMP_MASKED_EQ, CLONE_FS | CLONE_THREAD, CLONE_FS);
	if ((r = rule(ctx, eperm, "clone", 1, c)) < 0)
		return r;
	c[0] = ARG_BITS(0, CLONE_NEWUSER);
	if ((r = rule(ctx, eperm, "unshare", 1, c)) < 0)
		return r;
	return rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
}

/* Deny socket(fam, *, proto) for every protocol in [lo, hi], as aligned
 * blocks (libseccomp allows one comparison per argument and rule). */
static int deny_protos(scmp_filter_ctx ctx, int fam, uint32_t lo, uint32_t hi)
{
	struct scmp_arg_cmp c[2];
	int r;

	while (lo <= hi) {
		uint32_t size = 1;

		while (size < (1U << 30) && (lo & (2 * size - 1)) == 0 && lo + 2 * size - 1 <= hi)
			size *= 2;
		c[0] = ARG32_EQ(0, fam);
		c[1] = SCMP_CMP64(2, SCMP_CMP_MASKED_EQ, 0xffffffffULL & ~(uint64_t)(size - 1), lo);
		if ((r = rule(ctx, SCMP_ACT_ERRNO(EPERM), "socket", 2, c)) < 0)
			return r;
		lo += size;
	}
	return 0;
}

/*
 * With the kernel-verified connect (netverify.c) every socket the agent can
 * make must be one whose connect the cgroup hooks see, or an fd number
 * swapped after our check could connect unseen: unix, netlink, and TCP, UDP
 * or MPTCP over IPv4/IPv6 (UDP-Lite, SCTP, ping have no hook here or none
 * we test). Other processes' fds (pidfd_getfd) are out of reach as well.
 */
static int hooked_rules(scmp_filter_ctx ctx)
{
	static const int bad_fams[] = { 0, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15 };
	static const int bad_types[] = { 4 /* RDM */, SOCK_SEQPACKET /* SCTP */, 6 /* DCCP */ };
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp c[2];
	int r;

	for (int pair = 0; pair < 2; pair++) {
		const char *call = pair ? "socketpair" : "socket";
		/* the whole register: a value with upper bits set is refused too */
		c[0] = SCMP_CMP64(0, SCMP_CMP_GT, AF_NETLINK, 0);
		if ((r = rule(ctx, eperm, call, 1, c)) < 0)
			return r;
		for (size_t i = 0; i < sizeof(bad_fams) / sizeof(bad_fams[0]); i++) {
			c[0] = ARG32_EQ(0, bad_fams[i]);
			if ((r = rule(ctx, eperm, call, 1, c)) < 0)
				return r;
		}
	}
	for (int fam = 0; fam < 2; fam++) {
		int f = fam ? AF_INET6 : AF_INET;

		for (size_t i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
			c[0] = ARG32_EQ(0, f);
			c[1] = SCMP_CMP64(1, SCMP_CMP_MASKED_EQ, 0xf, bad_types[i]);
			if ((r = rule(ctx, eperm, "socket", 2, c)) < 0)
				return r;
		}
		c[0] = ARG32_EQ(0, f);
		c[1] = SCMP_CMP64(2, SCMP_CMP_GT, 262 /* IPPROTO_MPTCP */, 0);
		if ((r = rule(ctx, eperm, "socket", 2, c)) < 0 ||
		    (r = deny_protos(ctx, f, 1, IPPROTO_TCP - 1)) < 0 ||
		    (r = deny_protos(ctx, f, IPPROTO_TCP + 1, IPPROTO_UDP - 1)) < 0 ||
		    (r = deny_protos(ctx, f, IPPROTO_UDP + 1, 261)) < 0)
			return r;
	}
	return rule(ctx, eperm, "pidfd_getfd", 0, NULL);
}

/*
 * The supervisor's own pids: no signal, no pidfd. Its worker threads run
 * under the agent's uid (creds.c), so the kernel would let the agent
 * signal them, and a fatal signal to one thread ends the whole supervisor
 * (a stop freezes it): every call that names a thread is refused, including
 * kill() and rt_sigqueueinfo() given a thread's id, and the SIGIO owner of
 * an fd (F_SETOWN to a tid; F_SETOWN_EX and the FIOSETOWN/SIOCSPGRP ioctls
 * take a pointer the filter cannot read, so they are refused outright:
 * rare outside terminal and async-I/O code), and pidfd_send_signal.
 */
#define SHK_FIOSETOWN 0x8901
#define SHK_SIOCSPGRP 0x8902
#define SHK_F_SETOWN_EX 15

static int protect_rules(scmp_filter_ctx ctx, const struct shk_filter_opts *o)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	struct scmp_arg_cmp c, c2[2];
	int r;

	c = ARG32_EQ(0, o->sup_pid);
	if ((r = rule(ctx, eperm, "kill", 1, &c)) < 0 || (r = rule(ctx, eperm, "tgkill", 1, &c)) < 0 ||
	    (r = rule(ctx, eperm, "rt_tgsigqueueinfo", 1, &c)) < 0 ||
	    (r = rule(ctx, eperm, "rt_sigqueueinfo", 1, &c)) < 0)
		return r;
	c = ARG32_EQ(0, -o->sup_pgid);
	if ((r = rule(ctx, eperm, "kill", 1, &c)) < 0)
		return r;
	for (size_t i = 0; i < o->ntids; i++) {
		/* kill() and rt_sigqueueinfo() with a thread's id reach its
		 * whole process, checked against that thread's uid */
		c = ARG32_EQ(0, o->tids[i]);
		if ((r = rule(ctx, eperm, "tkill", 1, &c)) < 0 ||
		    (r = rule(ctx, eperm, "kill", 1, &c)) < 0 ||
		    (r = rule(ctx, eperm, "rt_sigqueueinfo", 1, &c)) < 0 ||
		    (r = rule(ctx, eperm, "pidfd_open", 1, &c)) < 0)
			return r;
		c2[0] = ARG32_EQ(1, F_SETOWN);
		c2[1] = ARG32_EQ(2, o->tids[i]);
		if ((r = rule(ctx, eperm, "fcntl", 2, c2)) < 0)
			return r;
	}
	c = ARG32_EQ(1, SHK_F_SETOWN_EX);
	if ((r = rule(ctx, eperm, "fcntl", 1, &c)) < 0)
		return r;
	/* a /proc/TID directory fd is a pidfd for it, and the fd cannot be
	 * read by the filter: refused outright (Go, the main user, falls back
	 * to kill() when its startup probe of the call fails) */
	if ((r = rule(ctx, eperm, "pidfd_send_signal", 0, NULL)) < 0)
		return r;
	c = ARG32_EQ(1, SHK_FIOSETOWN);
	if ((r = rule(ctx, eperm, "ioctl", 1, &c)) < 0)
		return r;
	c = ARG32_EQ(1, SHK_SIOCSPGRP);
	return rule(ctx, eperm, "ioctl", 1, &c);
}

static int export_prog(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
	_cleanup_close_ int fd = memfd_create("shackle-filter", MFD_CLOEXEC);
	struct stat st;
	void *buf;
	int r;

	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return -E2BIG;
	buf = malloc(st.st_size);
	if (!buf)
		return -ENOMEM;
	if (pread(fd, buf, st.st_size, 0) != st.st_size) {
		free(buf);
		return -EIO;
	}
	ret->filter = buf;
	ret->len = st.st_size / sizeof(struct sock_filter);
	return 0;
}

int shk_filter_build(const struct shk_filter_opts *o, struct sock_fprog *ret_prog)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return -ENOMEM;
	/* Only the native ABI is mediated: i386 (int 0x80) and x32 calls kill
	 * the process instead of being filtered under other numbers. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r >= 0)
		r = notify_rules(ctx);
	if (r >= 0)
		r = deny_rules(ctx);
	if (r >= 0)
		r = protect_rules(ctx, o);
	if (r >= 0 && o->hooked_families_only)
		r = hooked_rules(ctx);
	if (r >= 0)
		r = export_prog(ctx, ret_prog);
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}
