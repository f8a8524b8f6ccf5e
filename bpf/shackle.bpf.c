// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * shackle's kernel side: cgroup sock_addr hooks that enforce the static
 * network policy and the stateful verdicts user space pushes down, and an
 * exec hook that kills a denied image before it runs one instruction.
 *
 * The sock_addr hooks see the kernel's own copy of the address, after it was
 * copied from user memory: no other thread can change it behind our back,
 * which is what makes them a TOCTOU-free second layer for shackle-run.
 */
#include <vmlinux.h> /* pinned in bpf/, or regenerated: see bpf/meson.build */
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "common.bpf.h"

#define AF_INET 2
#define AF_INET6 10
#define SIGKILL 9

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader between open and load. */
const volatile __u8 default_net_action = SHK_BPF_DENY;
const volatile __u8 report_allowed = 1;
const volatile __u8 exec_enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct shk_bpf_lpm_v4);
	__type(value, struct shk_bpf_rule_set);
} v4_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct shk_bpf_lpm_v6);
	__type(value, struct shk_bpf_rule_set);
} v6_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct shk_bpf_dest);
	__type(value, __u32);
} deny_dest SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} deny_tool SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct shk_bpf_dest);
	__type(value, struct shk_bpf_once);
} once_allow SEC(".maps");

/* First rule in policy order that matches port, protocol and operation. */
static __always_inline int match_set(const struct shk_bpf_rule_set *rs,
				     const struct shk_bpf_dest *d, struct verdict *v)
{
	for (__u32 i = 0; i < SHK_BPF_RULES_PER_PREFIX; i++) {
		const struct shk_bpf_rule *r;

		if (i >= rs->count)
			break;
		r = &rs->rules[i];
		if (!(r->ops & d->op))
			continue;
		if (r->proto && r->proto != d->proto)
			continue;
		if (d->port < r->port_lo || d->port > r->port_hi)
			continue;
		v->action = r->action;
		v->reason = SHK_BPF_R_RULE;
		v->rule = r->index;
		v->tool_id = r->tool_id;
		return 1;
	}
	return 0;
}

static __always_inline void static_verdict(const struct shk_bpf_dest *d, struct verdict *v,
					   __u32 tools)
{
	const struct shk_bpf_rule_set *rs;

	if (d->family == AF_INET) {
		struct shk_bpf_lpm_v4 k = { .prefixlen = 32 };

		__builtin_memcpy(k.addr, d->addr, 4);
		rs = bpf_map_lookup_elem(&v4_rules, &k);
	} else {
		struct shk_bpf_lpm_v6 k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, d->addr, 16);
		rs = bpf_map_lookup_elem(&v6_rules, &k);
	}
	if (rs && match_set(rs, d, v)) {
		if (tools && v->tool_id != SHK_BPF_NO_TOOL && v->action == SHK_BPF_ALLOW &&
		    bpf_map_lookup_elem(&deny_tool, &v->tool_id)) {
			v->action = SHK_BPF_DENY;
			v->reason = SHK_BPF_R_TOOL;
		}
		return;
	}
	v->action = default_net_action;
	v->reason = SHK_BPF_R_DEFAULT;
}

/* Deleting the entry is the consumption: of two racing callers one wins. */
static __always_inline int take_once(const struct shk_bpf_dest *d, struct verdict *v)
{
	struct shk_bpf_once *once = bpf_map_lookup_elem(&once_allow, d);
	__u64 digest;

	if (!once)
		return 0;
	digest = once->digest;
	if (bpf_map_delete_elem(&once_allow, d) != 0)
		return 0;
	v->action = SHK_BPF_ALLOW;
	v->reason = SHK_BPF_R_ONCE;
	v->once_digest = digest;
	return 1;
}

/* The caller's cgroup into d, fetched on first need (0 is no cgroup's id). */
static __always_inline __u64 dest_cgroup(struct shk_bpf_dest *d)
{
	if (!d->cgroup_id)
		d->cgroup_id = bpf_get_current_cgroup_id();
	return d->cgroup_id;
}

/*
 * Order: an open breaker denies everything; a human approval passes exactly
 * one call (an entry for the caller's cgroup first, then one for any cgroup,
 * cgroup id 0); a stateful deny (same two keys) from decide() beats the
 * static rules; then the rules, then the default. The static rules do not
 * depend on the cgroup: without approvals or stateful denies waiting, the
 * cgroup id is not fetched here.
 */
static __always_inline void net_verdict(struct shk_bpf_dest *d, struct verdict *v)
{
	__u32 zero = 0;
	struct shk_bpf_state *st = bpf_map_lookup_elem(&state, &zero);
	__u64 cg;
	int hit;

	v->rule = SHK_BPF_NO_RULE;
	v->tool_id = SHK_BPF_NO_TOOL;
	v->once_digest = 0;
	if (!st || st->breaker_open) {
		v->action = SHK_BPF_DENY;
		v->reason = SHK_BPF_R_BREAKER;
		return;
	}
	if (st->once_entries) {
		cg = dest_cgroup(d);
		if (take_once(d, v))
			return;
		d->cgroup_id = 0;
		hit = take_once(d, v);
		d->cgroup_id = cg;
		if (hit)
			return;
	}
	if (st->deny_entries) {
		cg = dest_cgroup(d);
		hit = bpf_map_lookup_elem(&deny_dest, d) != NULL;
		d->cgroup_id = 0;
		hit = hit || bpf_map_lookup_elem(&deny_dest, d) != NULL;
		d->cgroup_id = cg;
		if (hit) {
			v->action = SHK_BPF_DENY;
			v->reason = SHK_BPF_R_STATEFUL;
			return;
		}
	}
	static_verdict(d, v, st->tool_entries);
}

/*
 * A connect or send to 0.0.0.0 or :: names no host: the kernel picks one in
 * the route lookup, after these hooks. 0.0.0.0 goes to the socket's source
 * address (from IP_PKTINFO or the bound address) when it has one, else to
 * 127.0.0.1; :: goes to ::1, or through a socket bound to a v4-mapped
 * address to that IPv4 source or 127.0.0.1. Judged as that address, and the
 * call is pinned to it (the destination rewritten): where it goes is what
 * was judged, whatever the kernel would have picked. A bind to the
 * unspecified address means every address and is judged as given; a send
 * with no address of its own (family 0) stays 0.0.0.0:0.
 */
static __always_inline __u32 v4_source(struct bpf_sock_addr *ctx, __u8 op)
{
	struct bpf_sock *sk = ctx->sk;
	__u32 src = 0;

	if (op == SHK_BPF_OP_SEND)
		src = ctx->msg_src_ip4;
	if (!src && sk)
		src = sk->src_ip4;
	return src ? src : bpf_htonl(0x7f000001);
}

static __always_inline void pin_unspecified(struct bpf_sock_addr *ctx, struct shk_bpf_dest *d, int v6)
{
	struct bpf_sock *sk = ctx->sk;
	__u32 a[4], src;
	__u64 w[2];

	if (d->op == SHK_BPF_OP_BIND || !ctx->user_family)
		return;
	__builtin_memcpy(w, d->addr, 16);
	if (w[0] || w[1])
		return; /* a host named */
	if (!v6) {
		src = v4_source(ctx, d->op);
		__builtin_memcpy(d->addr, &src, 4);
		ctx->user_ip4 = src;
		return;
	}
	a[0] = sk ? sk->src_ip6[0] : 0;
	a[1] = sk ? sk->src_ip6[1] : 0;
	a[2] = sk ? sk->src_ip6[2] : 0;
	a[3] = sk ? sk->src_ip6[3] : 0;
	if (d->family == AF_INET || (a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff))) {
		/* ::ffff:0.0.0.0, or :: on a socket bound to ::ffff:x */
		src = a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff) && a[3] ? a[3]
										 : bpf_htonl(0x7f000001);
		d->family = AF_INET;
		__builtin_memset(d->addr, 0, 16);
		__builtin_memcpy(d->addr, &src, 4);
		ctx->user_ip6[0] = 0;
		ctx->user_ip6[1] = 0;
		ctx->user_ip6[2] = bpf_htonl(0xffff);
		ctx->user_ip6[3] = src;
		return;
	}
	d->addr[15] = 1;
	ctx->user_ip6[0] = 0;
	ctx->user_ip6[1] = 0;
	ctx->user_ip6[2] = 0;
	ctx->user_ip6[3] = bpf_htonl(1);
}

/* Every byte of the record: the ring's memory is not zeroed for us. */
static __always_inline void net_event_fill(struct shk_bpf_net_event *e, const struct verdict *v,
					   struct shk_bpf_dest *d, __u32 sock_type)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->kind = SHK_BPF_EV_NET;
	e->verdict = v->action;
	e->reason = v->reason;
	e->proto = d->proto;
	e->op = d->op;
	e->family = d->family;
	e->port = d->port;
	e->sock_type = sock_type;
	e->pad = 0;
	e->pid = (__u32)id;
	e->tgid = id >> 32;
	if (v->reason == SHK_BPF_R_ONCE) {
		e->once_digest = v->once_digest;
	} else {
		e->rule = v->rule;
		e->tool_id = v->tool_id;
	}
	e->cgroup_id = dest_cgroup(d);
	__builtin_memcpy(e->addr, d->addr, sizeof(e->addr));
}

static __always_inline int sock_hook(struct bpf_sock_addr *ctx, __u8 op, int v6)
{
	struct shk_bpf_dest d = {};
	struct shk_bpf_net_event *e;
	struct verdict v = {};

	d.op = op;
	d.proto = ctx->protocol;
	d.port = bpf_ntohs((__u16)ctx->user_port);
	if (!v6) {
		__u32 ip = ctx->user_ip4;

		d.family = AF_INET;
		__builtin_memcpy(d.addr, &ip, 4);
	} else {
		__u32 w0 = ctx->user_ip6[0], w1 = ctx->user_ip6[1];
		__u32 w2 = ctx->user_ip6[2], w3 = ctx->user_ip6[3];

		/* ::ffff:a.b.c.d is judged as a.b.c.d, never as IPv6. */
		if (w0 == 0 && w1 == 0 && w2 == bpf_htonl(0xffff)) {
			d.family = AF_INET;
			__builtin_memcpy(d.addr, &w3, 4);
		} else {
			d.family = AF_INET6;
			__builtin_memcpy(d.addr, &w0, 4);
			__builtin_memcpy(d.addr + 4, &w1, 4);
			__builtin_memcpy(d.addr + 8, &w2, 4);
			__builtin_memcpy(d.addr + 12, &w3, 4);
		}
	}
	pin_unspecified(ctx, &d, v6);
	/*
	 * Reporting every call (attach mode): the record is reserved before the
	 * verdict, so that a full ring refuses the call instead of letting an
	 * allowed call pass unaccounted, and no approval is consumed for it.
	 */
	e = NULL;
	if (report_allowed) {
		e = event_reserve_size(SHK_BPF_NET_EVENT_SIZE);
		if (!e) {
			count_drop(DROP_REFUSED);
			return 0;
		}
	}
	net_verdict(&d, &v);
	if (!e && v.action != SHK_BPF_ALLOW)
		e = event_reserve_size(SHK_BPF_NET_EVENT_SIZE);
	if (e) {
		net_event_fill(e, &v, &d, ctx->type);
		bpf_ringbuf_submit(e, wakeup_flags(v.action));
	}
	return v.action == SHK_BPF_ALLOW ? 1 : 0;
}

SEC("cgroup/connect4")
int shk_connect4(struct bpf_sock_addr *ctx)
{
	return sock_hook(ctx, SHK_BPF_OP_CONNECT, 0);
}

SEC("cgroup/connect6")
int shk_connect6(struct bpf_sock_addr *ctx)
{
	return sock_hook(ctx, SHK_BPF_OP_CONNECT, 1);
}

SEC("cgroup/sendmsg4")
int shk_sendmsg4(struct bpf_sock_addr *ctx)
{
	return sock_hook(ctx, SHK_BPF_OP_SEND, 0);
}

SEC("cgroup/sendmsg6")
int shk_sendmsg6(struct bpf_sock_addr *ctx)
{
	return sock_hook(ctx, SHK_BPF_OP_SEND, 1);
}

/*
 * What a stream socket below the attach point went through (shk_listen_gate):
 * listen() called after the attach, and the address and port a bind() was
 * allowed for. The bind hook runs before the kernel's own checks: a bind it
 * allows may still fail (EINVAL, EADDRINUSE), and listen() then autobinds
 * elsewhere. So the gate compares what the listener is really bound to with
 * what was allowed, not whether a bind was allowed. Made only by a bind or a
 * listen, never at a socket's creation: the storage is an allocation
 * (0.4-1.8 us by bpf_stats here, more than the rest of an attached TCP
 * connect's programs together) that a socket which only connects need not
 * pay. Freed with the socket.
 */
#define SHK_MARK_LISTENED 1u
#define SHK_MARK_BOUND 2u
#define SHK_MARK_BEFORE 4u /* listening at the attach (shk_scan_listeners) */

struct shk_sock_mark {
	__u32 flags;
	__u32 addr[4];  /* allowed bind address: addr[0] for IPv4 (network order) */
	__u32 port;     /* allowed bind port, host order; 0: any */
	__u32 v6;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct shk_sock_mark);
} sock_marks SEC(".maps");

/*
 * How many listeners could not be marked (no memory for the storage, in the
 * listen callback or the scan at the attach): each of them gets nothing from
 * the gate, which drops for every unmarked listener. Read by attach for its
 * stats and log (shk_ebpf_stats).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} mark_failed SEC(".maps");

static __always_inline void count_mark_failed(void)
{
	__u32 zero = 0, *failed = bpf_map_lookup_elem(&mark_failed, &zero);

	if (failed)
		__sync_fetch_and_add(failed, 1);
}

static __always_inline int bind_hook(struct bpf_sock_addr *ctx, int v6)
{
	struct bpf_sock *sk = ctx->sk;
	struct shk_sock_mark *m;

	if (!sock_hook(ctx, SHK_BPF_OP_BIND, v6))
		return 0;
	/* only a stream socket can listen; without a mark (no memory) a later
	 * listen() is marked unbound and the gate drops for it */
	if (ctx->type != SOCK_STREAM || !sk)
		return 1;
	m = bpf_sk_storage_get(&sock_marks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (m) {
		m->flags |= SHK_MARK_BOUND;
		m->v6 = v6;
		m->port = bpf_ntohs((__u16)ctx->user_port);
		if (v6) {
			m->addr[0] = ctx->user_ip6[0];
			m->addr[1] = ctx->user_ip6[1];
			m->addr[2] = ctx->user_ip6[2];
			m->addr[3] = ctx->user_ip6[3];
		} else {
			m->addr[0] = ctx->user_ip4;
		}
	}
	return 1;
}

SEC("cgroup/bind4")
int shk_bind4(struct bpf_sock_addr *ctx)
{
	return bind_hook(ctx, 0);
}

SEC("cgroup/bind6")
int shk_bind6(struct bpf_sock_addr *ctx)
{
	return bind_hook(ctx, 1);
}

#define SK_LOAD(dst, sk, off) asm volatile("%0 = *(u32 *)(%1 + " #off ")" : "=r"(dst) : "r"(sk))
_Static_assert(__builtin_offsetof(struct bpf_sock, src_ip4) == 24, "bpf_sock layout");
_Static_assert(__builtin_offsetof(struct bpf_sock, src_ip6) == 28, "bpf_sock layout");
_Static_assert(__builtin_offsetof(struct bpf_sock, src_port) == 44, "bpf_sock layout");

/* Is the listener bound (src: address words, port) to what its bind was
 * allowed for? */
static __always_inline int bound_as_allowed(const __u32 src[4], __u32 port,
					    const struct shk_sock_mark *m)
{
	if (m->port && m->port != port)
		return 0;
	if (!m->v6)
		return m->addr[0] == 0 || m->addr[0] == src[0];
	if (!(m->addr[0] | m->addr[1] | m->addr[2] | m->addr[3]))
		return 1;
	return m->addr[0] == src[0] && m->addr[1] == src[1] && m->addr[2] == src[2] &&
	       m->addr[3] == src[3];
}

/*
 * listen() on a socket that was never bound makes the kernel bind it to an
 * ephemeral port on every address (inet_autobind) and runs no bind hook:
 * a server the policy never judged. Such a listener, listening since after
 * the attach, gets no connection: what arrives for it is dropped here (the
 * peer's connect times out). Listeners bound where the hook allowed, and
 * those the scan at the attach found listening, are untouched. Every other
 * listener is dropped for, whatever the mark's absence means: a listen()
 * whose callback has not run yet (the kernel hashes the socket first), a
 * mark that could not be made (mark_failed), a listener the scan did not see.
 */
SEC("cgroup_skb/ingress")
int shk_listen_gate(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct shk_sock_mark *m;
	__u32 src[4] = {}, port;

	if (!sk)
		return 1;
	sk = bpf_sk_fullsock(sk);
	if (!sk || sk->state != BPF_TCP_LISTEN)
		return 1;
	m = bpf_sk_storage_get(&sock_marks, sk, 0, 0);
	if (!m)
		return 0;
	/* a listen() after the attach is judged even when the scan saw the
	 * socket too (it runs after the hooks are attached) */
	if (!(m->flags & SHK_MARK_LISTENED))
		return m->flags & SHK_MARK_BEFORE ? 1 : 0;
	if (!(m->flags & SHK_MARK_BOUND))
		return 0;
	/* each field by one load at its offset in struct bpf_sock: clang
	 * would otherwise add to the sock pointer, which the verifier refuses */
	if (m->v6) {
		SK_LOAD(src[0], sk, 28);
		SK_LOAD(src[1], sk, 32);
		SK_LOAD(src[2], sk, 36);
		SK_LOAD(src[3], sk, 40);
	} else {
		SK_LOAD(src[0], sk, 24);
	}
	SK_LOAD(port, sk, 44);
	return bound_as_allowed(src, port, m);
}

/*
 * Sticky source routes: an IPv4 LSRR/SSRR option (IP_OPTIONS, CAP_NET_RAW —
 * which a container's root has by default) or an IPv6 routing header makes
 * the kernel send a connect judged for one address, and every packet after
 * it, to the first hop named in the option instead; the connect and sendmsg
 * hooks only see the address given. Refused (EPERM) for every socket below
 * the attach point, like shackle-run's filter does.
 */
#define SOL_IP 0
#define SOL_IPV6 41
#define IP_OPTIONS 4
#define IPV6_2292PKTOPTIONS 6
#define IPV6_2292RTHDR 5
#define IPV6_RTHDR 57

SEC("cgroup/setsockopt")
int shk_setsockopt(struct bpf_sockopt *ctx)
{
	if (ctx->level == SOL_IP && ctx->optname == IP_OPTIONS)
		return 0;
	if (ctx->level == SOL_IPV6 && (ctx->optname == IPV6_RTHDR || ctx->optname == IPV6_2292RTHDR ||
				       ctx->optname == IPV6_2292PKTOPTIONS))
		return 0;
	return 1;
}

/*
 * Only sockets whose calls the hooks above see may be made below the attach
 * point: TCP streams and UDP datagrams. UDP-Lite has no connect hook
 * (a connected UDP-Lite socket then sends anywhere, unseen), ping sockets
 * (SOCK_DGRAM, IPPROTO_ICMP/ICMPV6) send to an address no hook judges, and
 * raw, SCTP and DCCP sockets bypass them too. MPTCP is refused as well:
 * its listening subflow is a TCP socket the kernel makes and binds itself,
 * behind the bind hook's back (the gate would see a subflow's bind nobody
 * judged). Refused with EPERM; shackle-run's
 * filter refuses the same but for MPTCP. Runs for IPv4 and IPv6 sockets
 * only (unix and netlink sockets never reach it).
 */

SEC("cgroup/sock_create")
int shk_sock_create(struct bpf_sock *sk)
{
	__u32 type = sk->type, proto = sk->protocol;

	/* both loaded from ctx as they are: the verifier refuses a load
	 * through a ctx pointer clang has moved */
	asm volatile("" : "+r"(type), "+r"(proto));
	if (!(type == SOCK_STREAM && proto == IPPROTO_TCP) &&
	    !(type == SOCK_DGRAM && proto == IPPROTO_UDP))
		return 0;
	return 1;
}

/*
 * Marks a listen() made after the attach (BPF_SOCK_OPS_TCP_LISTEN_CB runs in
 * __inet_listen_sk once the socket is listening, for IPv4 and IPv6, whatever
 * made the socket; not again for a listen() that only changes the backlog).
 * The other sock_ops callbacks (five per TCP connect) return at once and
 * leave the reply alone. The callback cannot refuse the listen: a mark that
 * cannot be made is counted in mark_failed, and the gate drops for the
 * unmarked listener.
 */
SEC("sockops")
int shk_sock_ops(struct bpf_sock_ops *ctx)
{
	struct bpf_sock *sk;
	struct shk_sock_mark *m;

	if (ctx->op != BPF_SOCK_OPS_TCP_LISTEN_CB)
		return 1;
	sk = ctx->sk;
	if (!sk)
		return 1;
	m = bpf_sk_storage_get(&sock_marks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (m)
		m->flags |= SHK_MARK_LISTENED;
	else
		count_mark_failed();
	return 1;
}

/*
 * The scan of the listeners that exist at the attach, run by attach once
 * every hook above is attached (shk_ebpf_attach), in each network namespace
 * (iter/tcp walks the one it is opened in). Set by attach before it runs:
 * the attach point's cgroup id.
 */
__u64 scan_cgroup_id;

#define SHK_SCAN_MAX_LEVEL 64
#define SHK_TCP_LISTEN 10

/* Is the socket's cgroup (the one the cgroup hooks run for) the attach
 * point or below it? */
static __always_inline int below_attach_point(struct sock *sk)
{
	struct cgroup *cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup), *a;
	unsigned long at = (unsigned long)cg + bpf_core_field_offset(struct cgroup, ancestors);
	int level = BPF_CORE_READ(cg, level);

	for (int i = 0; i < SHK_SCAN_MAX_LEVEL; i++) {
		if (i > level)
			return 0;
		a = NULL;
		if (bpf_probe_read_kernel(&a, sizeof(a), (void *)(at + i * sizeof(a))) < 0 || !a)
			return 0;
		if (BPF_CORE_READ(a, kn, id) == scan_cgroup_id)
			return 1;
	}
	return 0;
}

/*
 * Marks a TCP listener below the attach point as listening before the
 * attach. The hooks are attached first, so no listener escapes both: one
 * whose listen() ran its callback after the attach is marked there (and
 * judged: LISTENED wins over BEFORE), one that listened earlier is found
 * here. The iterator runs this with the socket locked (lock_sock_fast in
 * bpf_iter_tcp_seq_show), and listen() holds that lock from hashing the
 * socket to its callback: a listen() straddling the attach is seen either
 * not yet listening or with its callback run, never in between.
 */
SEC("iter/tcp")
int shk_scan_listeners(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct shk_sock_mark *m;
	struct tcp_sock *tp;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp || tp->inet_conn.icsk_inet.sk.__sk_common.skc_state != SHK_TCP_LISTEN ||
	    !below_attach_point((struct sock *)tp))
		return 0;
	m = bpf_sk_storage_get(&sock_marks, tp, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (m)
		m->flags |= SHK_MARK_BEFORE;
	else
		count_mark_failed();
	return 0;
}

/*
 * The hook above does not run for 32-bit (compat) setsockopt calls, which a
 * 64-bit agent can make with int 0x80 where the kernel has IA32 emulation,
 * and the same routes come in single messages too: an IP_RETOPTS control
 * message (CAP_NET_RAW), an IPV6_RTHDR one on a connected UDP socket, where
 * no sock_addr hook sees an address. So every packet leaving the cgroup is
 * checked: an IPv4 packet with an LSRR/SSRR option and an IPv6 packet with a
 * routing header of any type are dropped (the sender gets EPERM). A type-4
 * segment routing header needs no privilege at all; a host whose own SRv6
 * routes add one to the cgroup's traffic cannot use attach.
 */
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

static __always_inline int v4_source_routed(struct __sk_buff *skb)
{
	__u8 b[64], ihl;
	__u32 optlen, next = 0;

	if (bpf_skb_load_bytes(skb, 0, &ihl, 1) < 0)
		return 1;
	optlen = (__u32)(ihl & 0xf) * 4;
	if (optlen <= 20)
		return 0;
	optlen -= 20;
	if (bpf_skb_load_bytes(skb, 20, b, ((optlen - 1) & 0x3f) + 1) < 0)
		return 1;
	for (__u32 k = 0; k < 40; k++) {
		__u8 t;

		if (k >= optlen)
			break;
		if (k != next)
			continue;
		t = b[k];
		if (t == 0) /* end of options */
			break;
		if (t == 1) { /* no-op */
			next = k + 1;
			continue;
		}
		if (t == 131 || t == 137 || k + 1 >= optlen || b[k + 1] < 2)
			return 1; /* a source route, or options we cannot walk */
		next = k + b[k + 1];
	}
	return 0;
}

static __always_inline int v6_source_routed(struct __sk_buff *skb)
{
	__u32 off = 40;
	__u8 nh, h[4];

	if (bpf_skb_load_bytes(skb, 6, &nh, 1) < 0)
		return 1;
	for (int k = 0; k < 8; k++) {
		if (nh == 43) /* a routing header */
			return 1;
		if (nh != 0 && nh != 60) /* past hop-by-hop and destination options */
			return 0;
		if (bpf_skb_load_bytes(skb, off, h, 2) < 0)
			return 1;
		nh = h[0];
		off += ((__u32)h[1] + 1) * 8;
	}
	/* more than eight option headers: not walked further */
	return nh == 0 || nh == 43 || nh == 60;
}

SEC("cgroup_skb/egress")
int shk_egress(struct __sk_buff *skb)
{
	if (skb->protocol == bpf_htons(ETH_P_IP))
		return v4_source_routed(skb) ? 0 : 1;
	if (skb->protocol == bpf_htons(ETH_P_IPV6))
		return v6_source_routed(skb) ? 0 : 1;
	return 1;
}

static __always_inline void exec_args(struct shk_bpf_exec_ev *x, struct task_struct *task)
{
	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	unsigned long end = BPF_CORE_READ(task, mm, arg_end);
	__u32 n = end > start && end - start < 0x100000 ? end - start : 0;

	/* Only argv: the environment after it may hold secrets. */
	x->args_truncated = n > SHK_BPF_ARGS_LEN - 1;
	x->args_len = 0;
	if (n > SHK_BPF_ARGS_LEN - 1)
		n = SHK_BPF_ARGS_LEN - 1;
	/* The mask is what the verifier can see: SHK_BPF_ARGS_LEN is a power of 2. */
	n &= SHK_BPF_ARGS_LEN - 1;
	if (bpf_probe_read_user(x->args, n, (void *)start) == 0)
		x->args_len = n;
}

/* Where the retry's argv is read for the comparison (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shk_bpf_exec_once);
} exec_scratch SEC(".maps");

/*
 * The new image's argv is in the new mm, which nobody else maps yet and the
 * task cannot touch before it returns to user space: what is read here is
 * what the program will run with. Read into buf zero-padded (as an approval
 * holds it); its length, 0 when it is longer than an approval can bind or
 * unreadable.
 */
static __always_inline __u32 new_argv(struct task_struct *task, struct shk_bpf_exec_once *buf)
{
	unsigned long start = BPF_CORE_READ(task, mm, arg_start);
	unsigned long end = BPF_CORE_READ(task, mm, arg_end);
	__u64 *w = (__u64 *)buf->args;
	__u32 n;

	if (end <= start || end - start > SHK_BPF_ARGS_LEN - 1)
		return 0;
	for (__u32 i = 0; i < SHK_BPF_ARGS_WORDS; i++)
		w[i] = 0;
	n = (end - start) & (SHK_BPF_ARGS_LEN - 1);
	if (n == 0 || bpf_probe_read_user(buf->args, n, (void *)start) != 0)
		return 0;
	return n;
}

/* Both zero-padded: equal buffers are equal argv of equal length. */
static __always_inline int same_args(const struct shk_bpf_exec_once *a, const struct shk_bpf_exec_once *b)
{
	const __u64 *x = (const __u64 *)a->args, *y = (const __u64 *)b->args;
	__u64 diff = 0;

	for (__u32 i = 0; i < SHK_BPF_ARGS_WORDS; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/*
 * A human approved exactly this exec: found by cgroup, image and the hash of
 * the new argv, then compared byte for byte; consumed by deleting it (one of
 * two racing execs wins), whatever the rules say; the breaker still wins.
 */
static __always_inline void take_exec_once(struct task_struct *task, const struct shk_bpf_inode *img,
					   struct verdict *v)
{
	struct shk_bpf_exec_key k = {};
	struct shk_bpf_exec_once *once, *buf;
	struct shk_bpf_state *st;
	__u32 zero = 0, n;
	__u64 digest;

	if (v->action == SHK_BPF_ALLOW || v->reason == SHK_BPF_R_BREAKER)
		return;
	st = bpf_map_lookup_elem(&state, &zero);
	buf = bpf_map_lookup_elem(&exec_scratch, &zero);
	if (!st || !st->exec_once_entries || !buf || !(n = new_argv(task, buf)))
		return;
	k.cgroup_id = bpf_get_current_cgroup_id();
	k.dev = img->dev;
	k.ino = img->ino;
	k.args_hash = shk_bpf_args_hash((const __u64 *)buf->args);
	once = bpf_map_lookup_elem(&exec_once, &k);
	if (!once || once->args_len != n || !same_args(buf, once))
		return;
	digest = once->digest;
	if (bpf_map_delete_elem(&exec_once, &k) != 0)
		return;
	v->action = SHK_BPF_ALLOW;
	v->reason = SHK_BPF_R_ONCE;
	v->once_digest = digest;
}

/*
 * sched_process_exec fires after the new image is loaded and before the task
 * returns to user space: a SIGKILL sent here is delivered before the first
 * instruction of the new image. bprm->file is the image the kernel really
 * loaded (the last interpreter of a #! chain), so the check is by device and
 * inode, not by a name that can be spelled many ways. An open breaker kills
 * every exec in the cgroup. A human approval (attach mode) lets one exec of
 * that image with exactly the approved argv pass.
 */
SEC("raw_tracepoint/sched_process_exec")
int shk_exec(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	struct linux_binprm *bprm = (struct linux_binprm *)ctx->args[2];
	struct shk_bpf_inode key = {};
	struct verdict v;
	struct shk_bpf_event *e;
	const char *filename;

	if (!exec_enabled || bpf_current_task_under_cgroup(&target_cg, 0) != 1)
		return 0;
	key.ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	key.dev = BPF_CORE_READ(bprm, file, f_inode, i_sb, s_dev);
	exec_verdict(&key, &v);
	if (v.action == SHK_BPF_ALLOW && !report_allowed)
		return 0;
	e = event_reserve();
	if (!e) {
		/* Reporting every exec: one that cannot be reported does not run
		 * (and takes no approval: its consumption must reach user space). */
		if (v.action == SHK_BPF_ALLOW)
			count_drop(DROP_REFUSED);
		bpf_send_signal(SIGKILL);
		return 0;
	}
	take_exec_once(task, &key, &v);
	if (v.action != SHK_BPF_ALLOW)
		bpf_send_signal(SIGKILL);
	event_fill(e, SHK_BPF_EV_EXEC, &v, bpf_get_current_cgroup_id());
	e->exec.dev = key.dev;
	e->exec.ino = key.ino;
	e->exec.once_digest = v.once_digest;
	filename = BPF_CORE_READ(bprm, filename);
	if (bpf_probe_read_kernel_str(e->exec.filename, sizeof(e->exec.filename), filename) < 0)
		e->exec.filename[0] = 0;
	exec_args(&e->exec, task);
	bpf_ringbuf_submit(e, wakeup_flags(v.action));
	return 0;
}
