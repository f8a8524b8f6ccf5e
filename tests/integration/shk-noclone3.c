/* SPDX-License-Identifier: MIT */
/*
 * shk-noclone3: run a program as on a kernel without clone3 (before 5.7).
 *
 *   shk-noclone3 PROG [ARG...]
 *       installs a seccomp filter that answers clone3 with ENOSYS and allows
 *       every other call, then execs PROG. Under it shackle-run's
 *       clone3(CLONE_INTO_CGROUP) fails and the fallback runs: fork, then the
 *       child's pid written to the leaf's cgroup.procs. glibc's
 *       pthread_create and posix_spawn try clone3 first and use clone on
 *       ENOSYS (its fork uses clone), so shackle-run's threads and other
 *       children still start.
 *
 * As root (CAP_SYS_ADMIN) the filter is loaded without no_new_privs, so
 * shackle-run runs with the privileges it would have had; it sets
 * no_new_privs for the agent itself. Without that capability the kernel
 * requires no_new_privs, and the helper sets it. The filter is inherited by
 * shackle-run, its threads and the agent, and stacks under shackle-run's
 * own (which also answers the agent's clone3 with ENOSYS): an ALLOW of this
 * one defers to it.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HLP_USAGE 2
#define HLP_SETUP 3

static int load(int nnp)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return -ENOMEM;
	/* the kernel's errno, not libseccomp's ECANCELED: EACCES says why */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, (uint32_t)nnp);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 2) {
		fprintf(stderr, "usage: shk-noclone3 PROG [ARG...]\n");
		return HLP_USAGE;
	}
	/* EACCES: no CAP_SYS_ADMIN, the kernel wants no_new_privs */
	if ((r = load(0)) == -EACCES)
		r = load(1);
	if (r < 0) {
		fprintf(stderr, "shk-noclone3: cannot load the filter: %s\n", strerror(-r));
		return HLP_SETUP;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "shk-noclone3: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
