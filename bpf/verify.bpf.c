// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * shackle-run's kernel-verified CONTINUE for connect and UDP sends
 * (docs/supervisor.md, "Network"). Attached to the agent's cgroup leaf only.
 *
 * The supervisor judges the address it read from the agent's memory; on
 * ALLOW it stores that address as a single-use approval in the socket's own
 * storage and answers CONTINUE. The kernel then copies the sockaddr again and
 * runs these hooks on ITS copy: the connect passes only when that copy is
 * byte-for-byte the approved one, made by the thread that asked. Anything
 * else in the leaf is refused (EPERM), so a connect that changed after the
 * check, or that never went through the supervisor, does not leave.
 */
/* UAPI headers, not vmlinux.h: its types carry preserve_access_index, which
 * makes every ctx access a CO-RE relocation, and a load with relocations
 * parses the kernel's whole BTF first (tens of ms of shackle-run's start) */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "verify.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The supervisor's thread group: its emulated calls on the agent's sockets
 * (unix sockets, held calls) run under its own judgement. Set before load. */
const volatile __u32 sup_tgid = 0;

/*
 * Every socket created in the leaf gets a mark (sock_create): one word in a
 * slot chosen by its cookie, saying what SO_DOMAIN, SO_TYPE and SO_PROTOCOL
 * would say. User space arms a socket only after finding its mark under
 * the cookie SO_COOKIE gives for its copy: a socket born outside the leaf,
 * on which these hooks would never run, is emulated instead. The array is
 * mapped read-only into the supervisor, so finding the mark is a load, not
 * a map lookup; the word is written in place, so the agent's socket()
 * allocates nothing for it and its close frees nothing. A cookie is unique
 * per boot, so a mark found is the socket's own: a slot taken over by a
 * later socket (one whose cookie shares its low bits) only sends the older
 * socket down the emulated path. (Only IPV6_ADDRFORM changes a socket's family later; with
 * a mark left saying AF_INET6, an AF_INET address no longer matches the
 * family and is emulated, and an armed AF_INET6 approval is refused by
 * take(), which wants the approval's, the hook's and the address's family
 * to agree.) Accepted sockets never pass sock_create: no mark, emulated.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SHK_VERIFY_MARK_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} leaf_marks SEC(".maps");

/*
 * Approvals by (socket cookie, thread): one per call that is waiting in the
 * kernel, so threads sending on one socket at once do not overwrite each
 * other's. Taken (deleted) by the first hook that looks; an approval the
 * kernel never used (the call failed before the hook) is aged out by LRU
 * and could only ever pass the very call it was made for. The cookie is
 * unique per socket for the boot: an entry never authorises another socket.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SHK_VERIFY_MAX_APPROVALS);
	__type(key, struct shk_verify_key);
	__type(value, struct shk_verify_appr);
} approvals SEC(".maps");

SEC("cgroup/sock_create")
int shk_verify_mark(struct bpf_sock *sk)
{
	__u64 cookie = bpf_get_socket_cookie(sk);
	__u32 slot = (__u32)cookie & (SHK_VERIFY_MARK_SLOTS - 1);
	__u64 *w = bpf_map_lookup_elem(&leaf_marks, &slot);

	/* what the word cannot hold is left unmarked: emulated */
	if (!w || cookie >> SHK_VERIFY_MARK_SLOT_BITS > 0xffffffffULL || sk->family > 0xff ||
	    sk->type > 0xff || sk->protocol > 0xffff)
		return 1;
	/* one aligned 8-byte store: a reader never sees half of two marks */
	*(volatile __u64 *)w = shk_verify_mark_word(cookie, sk->family, sk->type, sk->protocol);
	return 1;
}

static __always_inline int from_supervisor(__u64 id)
{
	return sup_tgid != 0 && (__u32)(id >> 32) == sup_tgid;
}

/* Takes this thread's approval for this socket (single use) and says
 * whether it is for this kind of call and family; the caller compares the
 * address. */
static __always_inline struct shk_verify_appr *take(struct bpf_sock_addr *ctx, __u64 id,
						    __u32 family, __u16 op,
						    struct shk_verify_appr *copy)
{
	struct shk_verify_key k = { .cookie = bpf_get_socket_cookie(ctx), .tid = (__u32)id };
	struct shk_verify_appr *a = bpf_map_lookup_elem(&approvals, &k);

	if (!a)
		return 0;
	*copy = *a;
	bpf_map_delete_elem(&approvals, &k);
	if (copy->armed != 1 || copy->op != op || copy->family != family ||
	    ctx->user_family != family)
		return 0;
	return copy;
}

static __always_inline int check4(struct bpf_sock_addr *ctx, __u16 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct shk_verify_appr c;

	if (from_supervisor(id))
		return 1;
	if (!take(ctx, id, SHK_VERIFY_AF_INET, op, &c))
		return 0;
	return c.addr[0] == ctx->user_ip4 && c.port == (__u16)ctx->user_port;
}

static __always_inline int check6(struct bpf_sock_addr *ctx, __u16 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct shk_verify_appr c;

	if (from_supervisor(id))
		return 1;
	if (!take(ctx, id, SHK_VERIFY_AF_INET6, op, &c))
		return 0;
	return c.addr[0] == ctx->user_ip6[0] && c.addr[1] == ctx->user_ip6[1] &&
	       c.addr[2] == ctx->user_ip6[2] && c.addr[3] == ctx->user_ip6[3] &&
	       c.port == (__u16)ctx->user_port;
}

SEC("cgroup/connect4")
int shk_verify_connect4(struct bpf_sock_addr *ctx)
{
	return check4(ctx, SHK_VERIFY_OP_CONNECT);
}

/* a v4-mapped destination arrives here in its v6 form, as read */
SEC("cgroup/connect6")
int shk_verify_connect6(struct bpf_sock_addr *ctx)
{
	return check6(ctx, SHK_VERIFY_OP_CONNECT);
}

/* UDP sends with an address. A v4-mapped one on a UDPv6 socket arrives at
 * sendmsg4, already converted by the kernel: armed in its v4 form. */
SEC("cgroup/sendmsg4")
int shk_verify_sendmsg4(struct bpf_sock_addr *ctx)
{
	return check4(ctx, SHK_VERIFY_OP_SEND);
}

SEC("cgroup/sendmsg6")
int shk_verify_sendmsg6(struct bpf_sock_addr *ctx)
{
	return check6(ctx, SHK_VERIFY_OP_SEND);
}

/* The agent never connects a unix socket itself, nor sends on one with an
 * address (the supervisor performs every such call): one swapped in behind
 * an approved fd number is refused. */
SEC("cgroup/connect_unix")
int shk_verify_connect_unix(struct bpf_sock_addr *ctx)
{
	(void)ctx;
	return from_supervisor(bpf_get_current_pid_tgid());
}

SEC("cgroup/sendmsg_unix")
int shk_verify_sendmsg_unix(struct bpf_sock_addr *ctx)
{
	(void)ctx;
	return from_supervisor(bpf_get_current_pid_tgid());
}
