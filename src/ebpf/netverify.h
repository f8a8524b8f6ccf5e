/* SPDX-License-Identifier: MIT */
/*
 * Kernel-verified CONTINUE for shackle-run's connects and UDP sends
 * (bpf/verify.bpf.c, docs/supervisor.md "Network"). Internal to the Linux
 * layer.
 *
 * shk_netverify_open() loads the programs and attaches them to the agent's
 * cgroup leaf; from then on every connect of a socket made in the leaf, and
 * every send of one to an address, needs an approval armed by
 * shk_netverify_arm() for that socket, kind of call, thread and exact
 * address, or the kernel refuses it with EPERM. Connects made by the
 * supervisor's own threads (sup_tgid) pass: those are the emulated ones.
 */
#ifndef SHACKLE_EBPF_NETVERIFY_H
#define SHACKLE_EBPF_NETVERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct shk_netverify;

/*
 * Can this process use the verified path at all: built with BPF, running in
 * the initial pid namespace (the hooks see global thread ids, the
 * notifications ours), and the programs load. On failure *why (may be NULL)
 * says what is missing. Loads and unloads the programs once; attaches nothing.
 */
int shk_netverify_probe(char *why, size_t len);
/* The probe without loading: built with BPF and in the initial pid
 * namespace. shackle-run asks this, then opens: parsing the kernel's BTF
 * for a load is most of what it costs (tens of ms), so once is enough. */
int shk_netverify_usable(char *why, size_t len);

/* Load and attach to cgroup_fd (the agent's leaf, still empty). */
int shk_netverify_open(int cgroup_fd, pid_t sup_tgid, struct shk_netverify **ret_nv);
void shk_netverify_free(struct shk_netverify *nv); /* detaches */

/* What the leaf's hook recorded when sock_fd (our pidfd_getfd copy) was made. */
struct shk_netverify_sock {
	uint64_t cookie;      /* never 0 */
	int family, type, protocol;
};

/*
 * SO_COOKIE and a load from the mapped marks instead of four getsockopt()
 * calls. -ENOENT: the socket was not made in the leaf (or its mark's slot
 * was taken by a later socket), so the hooks may not run for it: it must
 * not be answered CONTINUE.
 */
int shk_netverify_sock(struct shk_netverify *nv, int sock_fd, struct shk_netverify_sock *ret);

/*
 * Arm a single-use approval on the socket with this cookie (from
 * shk_netverify_sock()) for thread tid connecting (send false) or sending
 * one UDP datagram (send true) to sa (AF_INET on an AF_INET socket or
 * AF_INET6 on an AF_INET6 one; the caller checks). One approval per socket
 * and thread: concurrent calls of other threads on the same socket keep
 * theirs.
 */
int shk_netverify_arm(struct shk_netverify *nv, uint64_t cookie, pid_t tid, bool send,
                      const struct sockaddr *sa, socklen_t len);
/* Take back an approval that will not be used (the answer was not CONTINUE). */
int shk_netverify_disarm(struct shk_netverify *nv, uint64_t cookie, pid_t tid);

#endif
