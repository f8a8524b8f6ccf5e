/* SPDX-License-Identifier: MIT */
/* Built without the BPF toolchain: execs are verified at the ptrace exec stop. */
#include <errno.h>

#include "ebpf/execverify.h"

int shk_execverify_open(int cgroup_fd, struct shk_execverify **ret_ev)
{
	(void)cgroup_fd;
	*ret_ev = NULL;
	return -EOPNOTSUPP;
}

int shk_execverify_probe(void)
{
	return -EOPNOTSUPP;
}

void shk_execverify_free(struct shk_execverify *ev)
{
	(void)ev;
}

bool shk_execverify_fits(size_t argv_len, size_t env_len)
{
	(void)argv_len;
	(void)env_len;
	return false;
}

int shk_execverify_arm(struct shk_execverify *ev, pid_t tid, const struct shk_execverify_want *w)
{
	(void)ev;
	(void)tid;
	(void)w;
	return -EOPNOTSUPP;
}

int shk_execverify_disarm(struct shk_execverify *ev, pid_t tid)
{
	(void)ev;
	(void)tid;
	return -EOPNOTSUPP;
}

int shk_execverify_drain(struct shk_execverify *ev, shk_execverify_fn fn, void *ctx)
{
	(void)ev;
	(void)fn;
	(void)ctx;
	return 0;
}

uint64_t shk_execverify_lost(struct shk_execverify *ev)
{
	(void)ev;
	return 0;
}
