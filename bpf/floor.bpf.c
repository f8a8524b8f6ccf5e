// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The floor under bench_ebpf's attached rows: a program that allows at once
 * on every hook bpf/shackle.bpf.c attaches to a cgroup. What the kernel's
 * cgroup-BPF dispatch costs with nothing judged or reported
 * (`bench_ebpf floor udp|tcp N`); never loaded by shackle itself.
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define ALLOW(sec, name, ctx_t)      \
	SEC(sec) int name(ctx_t *ctx) \
	{                             \
		(void)ctx;            \
		return 1;             \
	}

ALLOW("cgroup/connect4", floor_connect4, struct bpf_sock_addr)
ALLOW("cgroup/connect6", floor_connect6, struct bpf_sock_addr)
ALLOW("cgroup/sendmsg4", floor_sendmsg4, struct bpf_sock_addr)
ALLOW("cgroup/sendmsg6", floor_sendmsg6, struct bpf_sock_addr)
ALLOW("cgroup/bind4", floor_bind4, struct bpf_sock_addr)
ALLOW("cgroup/bind6", floor_bind6, struct bpf_sock_addr)
ALLOW("cgroup/setsockopt", floor_setsockopt, struct bpf_sockopt)
ALLOW("cgroup_skb/egress", floor_egress, struct __sk_buff)
ALLOW("cgroup_skb/ingress", floor_ingress, struct __sk_buff)
ALLOW("cgroup/sock_create", floor_sock_create, struct bpf_sock)
ALLOW("sockops", floor_sock_ops, struct bpf_sock_ops)
