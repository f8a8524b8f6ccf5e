/* SPDX-License-Identifier: MIT */
/* Built without the BPF toolchain: no verified path; shackle-run emulates. */
#include <errno.h>
#include <stdio.h>

#include "ebpf/netverify.h"

#include "shk_bpf_config.h"

int shk_netverify_usable(char *why, size_t len)
{
	if (why)
		snprintf(why, len, "eBPF %s", SHK_BPF_OFF_REASON);
	return -EOPNOTSUPP;
}

int shk_netverify_probe(char *why, size_t len)
{
	if (why)
		snprintf(why, len, "eBPF %s", SHK_BPF_OFF_REASON);
	return -EOPNOTSUPP;
}

int shk_netverify_open(int cgroup_fd, pid_t sup_tgid, struct shk_netverify **ret_nv)
{
	(void)cgroup_fd;
	(void)sup_tgid;
	*ret_nv = NULL;
	return -EOPNOTSUPP;
}

void shk_netverify_free(struct shk_netverify *nv)
{
	(void)nv;
}

int shk_netverify_sock(struct shk_netverify *nv, int sock_fd, struct shk_netverify_sock *ret)
{
	(void)nv;
	(void)sock_fd;
	(void)ret;
	return -EOPNOTSUPP;
}

int shk_netverify_arm(struct shk_netverify *nv, uint64_t cookie, pid_t tid, bool send,
                      const struct sockaddr *sa, socklen_t len)
{
	(void)send;
	(void)nv;
	(void)cookie;
	(void)tid;
	(void)sa;
	(void)len;
	return -EOPNOTSUPP;
}

int shk_netverify_disarm(struct shk_netverify *nv, uint64_t cookie, pid_t tid)
{
	(void)tid;
	(void)nv;
	(void)cookie;
	return -EOPNOTSUPP;
}
