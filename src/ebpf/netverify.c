/* SPDX-License-Identifier: MIT */
/* Loading bpf/verify.bpf.c and arming its approvals (libbpf). */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ebpf/libbpf_print.h"
#include "ebpf/netverify.h"
#include "verify.h"
#include "verify.skel.h"

/* PROC_PID_INIT_INO: the inode of the initial pid namespace */
#define INIT_PIDNS_INO 0xEFFFFFFCU
/* BPF_CGROUP_UNIX_CONNECT (6.7), whatever the installed uapi header says */
#define SHK_UNIX_CONNECT ((enum bpf_attach_type)49)
#define SHK_UNIX_SENDMSG ((enum bpf_attach_type)50)

struct shk_netverify {
	struct verify_bpf *skel;
	int appr_fd;
	const volatile __u64 *marks; /* leaf_marks, mapped read-only */
};

#define MARKS_BYTES ((size_t)SHK_VERIFY_MARK_SLOTS * sizeof(__u64))

static int load(pid_t sup_tgid, struct verify_bpf **ret)
{
	struct verify_bpf *skel;
	int r;

	libbpf_set_print(shk_libbpf_silent);
	skel = verify_bpf__open();
	if (!skel)
		return errno ? -errno : -EINVAL;
	skel->rodata->sup_tgid = (__u32)sup_tgid;
	/* libbpf before 1.3 does not know the section name: say it ourselves
	 * (a kernel before 6.7 then refuses the load: no verified path) */
	bpf_program__set_type(skel->progs.shk_verify_connect_unix, BPF_PROG_TYPE_CGROUP_SOCK_ADDR);
	bpf_program__set_expected_attach_type(skel->progs.shk_verify_connect_unix,
	                                      SHK_UNIX_CONNECT);
	bpf_program__set_type(skel->progs.shk_verify_sendmsg_unix, BPF_PROG_TYPE_CGROUP_SOCK_ADDR);
	bpf_program__set_expected_attach_type(skel->progs.shk_verify_sendmsg_unix,
	                                      SHK_UNIX_SENDMSG);
	r = verify_bpf__load(skel);
	if (r < 0) {
		verify_bpf__destroy(skel);
		return r;
	}
	*ret = skel;
	return 0;
}

int shk_netverify_usable(char *why, size_t len)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) < 0 || st.st_ino != INIT_PIDNS_INO) {
		if (why)
			snprintf(why, len, "not in the initial pid namespace");
		return -EOPNOTSUPP;
	}
	return 0;
}

int shk_netverify_probe(char *why, size_t len)
{
	struct verify_bpf *skel = NULL;
	int r;

	if ((r = shk_netverify_usable(why, len)) < 0)
		return r;
	r = load(getpid(), &skel);
	if (r < 0) {
		if (why)
			snprintf(why, len, "cannot load the verify programs: %s", strerror(-r));
		return r;
	}
	verify_bpf__destroy(skel);
	return 0;
}

int shk_netverify_open(int cgroup_fd, pid_t sup_tgid, struct shk_netverify **ret_nv)
{
	struct shk_netverify *nv = calloc(1, sizeof(*nv));
	void *m;
	int r;

	if (!nv)
		return -ENOMEM;
	r = load(sup_tgid, &nv->skel);
	if (r < 0) {
		free(nv);
		return r;
	}
#define ATTACH(p)                                                               \
	if (r == 0) {                                                           \
		nv->skel->links.p = bpf_program__attach_cgroup(nv->skel->progs.p, cgroup_fd); \
		if (!nv->skel->links.p)                                         \
			r = errno ? -errno : -EINVAL;                            \
	}
	/* sock_create first: no socket of the leaf exists yet without storage */
	ATTACH(shk_verify_mark)
	ATTACH(shk_verify_connect4)
	ATTACH(shk_verify_connect6)
	ATTACH(shk_verify_connect_unix)
	ATTACH(shk_verify_sendmsg4)
	ATTACH(shk_verify_sendmsg6)
	ATTACH(shk_verify_sendmsg_unix)
#undef ATTACH
	if (r < 0) {
		shk_netverify_free(nv);
		return r;
	}
	nv->appr_fd = bpf_map__fd(nv->skel->maps.approvals);
	m = mmap(NULL, MARKS_BYTES, PROT_READ, MAP_SHARED, bpf_map__fd(nv->skel->maps.leaf_marks), 0);
	if (m == MAP_FAILED) {
		r = -errno;
		shk_netverify_free(nv);
		return r;
	}
	nv->marks = m;
	*ret_nv = nv;
	return 0;
}

void shk_netverify_free(struct shk_netverify *nv)
{
	if (!nv)
		return;
	if (nv->marks)
		munmap((void *)nv->marks, MARKS_BYTES);
	verify_bpf__destroy(nv->skel); /* destroys the links: detached */
	free(nv);
}

int shk_netverify_sock(struct shk_netverify *nv, int sock_fd, struct shk_netverify_sock *ret)
{
	uint64_t cookie = 0, w;
	socklen_t len = sizeof(cookie);

	if (getsockopt(sock_fd, SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0)
		return -errno;
	if (cookie == 0 || cookie >> SHK_VERIFY_MARK_SLOT_BITS > 0xffffffffULL)
		return -ENOENT;
	w = nv->marks[cookie & (SHK_VERIFY_MARK_SLOTS - 1)];
	if (w >> 32 != cookie >> SHK_VERIFY_MARK_SLOT_BITS || (w >> 24 & 0xff) == 0)
		return -ENOENT; /* not made in the leaf, or its slot since taken */
	*ret = (struct shk_netverify_sock){ cookie, (int)(w >> 24 & 0xff), (int)(w >> 16 & 0xff),
	                                    (int)(w & 0xffff) };
	return 0;
}

static struct shk_verify_key key_of(uint64_t cookie, pid_t tid)
{
	return (struct shk_verify_key){ .cookie = cookie, .tid = (__u32)tid };
}

int shk_netverify_arm(struct shk_netverify *nv, uint64_t cookie, pid_t tid, bool send,
                      const struct sockaddr *sa, socklen_t len)
{
	struct shk_verify_appr a = { .armed = 1, .tid = (__u32)tid };
	struct shk_verify_key k;

	a.op = send ? SHK_VERIFY_OP_SEND : SHK_VERIFY_OP_CONNECT;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		a.family = SHK_VERIFY_AF_INET;
		a.port = in->sin_port;
		memcpy(a.addr, &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && len >= 24) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		a.port = in6->sin6_port;
		if (send && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			/* UDPv6 hands a mapped destination to sendmsg4 as v4 */
			a.family = SHK_VERIFY_AF_INET;
			memcpy(a.addr, &in6->sin6_addr.s6_addr[12], 4);
		} else {
			a.family = SHK_VERIFY_AF_INET6;
			memcpy(a.addr, &in6->sin6_addr, 16);
		}
	} else {
		return -EAFNOSUPPORT;
	}
	k = key_of(cookie, tid);
	if (bpf_map_update_elem(nv->appr_fd, &k, &a, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int shk_netverify_disarm(struct shk_netverify *nv, uint64_t cookie, pid_t tid)
{
	struct shk_verify_key k = key_of(cookie, tid);

	if (bpf_map_delete_elem(nv->appr_fd, &k) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
