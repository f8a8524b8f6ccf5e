/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Types shared by bpf/shackle.bpf.c and the loader in src/ebpf: map keys and
 * values and the ring buffer event. Fixed-width, explicitly padded, no
 * pointers: both sides must agree byte for byte.
 */
#ifndef SHACKLE_BPF_SHACKLE_H
#define SHACKLE_BPF_SHACKLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Static actions (same order as shk_action in shackle/policy.h). */
#define SHK_BPF_ALLOW 0
#define SHK_BPF_DENY 1
#define SHK_BPF_HITL 2 /* the kernel denies; user space opens an approval */

/* Operations, as bits (same values as shk_net_op in shackle/policy.h). */
#define SHK_BPF_OP_CONNECT 1u
#define SHK_BPF_OP_SEND 2u
#define SHK_BPF_OP_BIND 4u

/* Why the kernel answered as it did (shk_bpf_event.reason). */
enum shk_bpf_reason {
	SHK_BPF_R_RULE = 1,       /* a static rule matched (rule index in .rule) */
	SHK_BPF_R_DEFAULT,        /* no rule matched: the section default */
	SHK_BPF_R_BREAKER,        /* user space opened the breaker */
	SHK_BPF_R_STATEFUL,       /* (cgroup, destination) denied by decide() */
	SHK_BPF_R_TOOL,           /* the rule's tool class denied by decide() */
	SHK_BPF_R_ONCE,           /* a single-use approval was consumed */
};

#define SHK_BPF_RULES_PER_PREFIX 16
#define SHK_BPF_NO_RULE 0xffffffffu
#define SHK_BPF_NO_TOOL 0xffffffffu

/* One rule as seen from one prefix; see src/ebpf/netrules.c. */
struct shk_bpf_rule {
	__u32 index;   /* position in the policy: first match wins */
	__u32 tool_id; /* tool class, SHK_BPF_NO_TOOL when none */
	__u16 port_lo; /* host byte order, inclusive */
	__u16 port_hi;
	__u8 proto;    /* 0 any, else IPPROTO_TCP / IPPROTO_UDP */
	__u8 ops;      /* SHK_BPF_OP_* bits */
	__u8 action;   /* SHK_BPF_ALLOW / DENY / HITL */
	__u8 pad;
};

/* LPM trie value: every rule whose prefix contains this one, in policy order. */
struct shk_bpf_rule_set {
	__u32 count;
	__u32 pad;
	struct shk_bpf_rule rules[SHK_BPF_RULES_PER_PREFIX];
};

struct shk_bpf_lpm_v4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct shk_bpf_lpm_v6 {
	__u32 prefixlen;
	__u8 addr[16];
};

/*
 * A destination as the kernel saw it: the stateful-deny and single-use
 * approval key. family is AF_INET or AF_INET6 (v4-mapped IPv6 normalised to
 * AF_INET with the address in addr[0..3]); port in host byte order; cgroup_id
 * 0 in a stateful-deny key means "any cgroup".
 */
struct shk_bpf_dest {
	__u64 cgroup_id;
	__u16 family;
	__u16 port;
	__u8 proto;
	__u8 op;
	__u8 pad[2];
	__u8 addr[16];
};

struct shk_bpf_once {
	__u64 digest; /* first 8 bytes of the approved call's digest */
};

/* Exec control: device and inode of the image the kernel loaded. */
struct shk_bpf_inode {
	__u64 dev; /* kernel encoding: major << 20 | minor */
	__u64 ino;
};

#define SHK_BPF_COMM_LEN 16
#define SHK_BPF_PATH_LEN 256
#define SHK_BPF_ARGS_LEN 512

/*
 * A human approved one exec (attach mode): the next exec of this image in
 * this cgroup whose argv (mm->arg_start..arg_end) is byte for byte args
 * passes once. args_len counts the final NUL and is below SHK_BPF_ARGS_LEN:
 * a longer argv cannot be approved this way. The key carries a hash of the
 * argv bytes so that approvals of one image with different argv wait side by
 * side; the bytes are compared exactly after the lookup, so a collision can
 * only make two approvals share a key (the second is refused, EEXIST).
 */
struct shk_bpf_exec_key {
	__u64 cgroup_id;
	__u64 dev; /* kernel encoding, as struct shk_bpf_inode */
	__u64 ino;
	__u64 args_hash; /* shk_bpf_args_hash() of the zero-padded argv */
};

#define SHK_BPF_ARGS_WORDS (SHK_BPF_ARGS_LEN / 8)

/*
 * FNV-1a (64 bit) over the argv buffer zero-padded to SHK_BPF_ARGS_LEN, 8
 * bytes at a step: the same code runs in the exec tracepoint and in the
 * loader, and a loop with a constant bound and no early exit is walked by
 * the verifier once.
 */
static inline __u64 shk_bpf_args_hash(const __u64 *words)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (__u32 i = 0; i < SHK_BPF_ARGS_WORDS; i++) {
		h ^= words[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

struct shk_bpf_exec_once {
	__u64 digest; /* first 8 bytes of the approved call's digest */
	__u32 args_len;
	__u32 pad;
	char args[SHK_BPF_ARGS_LEN] __attribute__((aligned(8))); /* zero after args_len */
};

/*
 * Mutable global state (array map, one element), written only by user space.
 * The counts let the hooks skip hash lookups in empty maps; user space raises
 * a count before it inserts and lowers it after it deletes, so a count is
 * never lower than the number of entries (at worst a lookup too many).
 */
struct shk_bpf_state {
	__u32 breaker_open;
	__u32 once_entries;
	__u32 deny_entries;
	__u32 tool_entries;
	__u32 exec_once_entries;
	__u32 pad;
};

#define SHK_BPF_EV_NET 1
#define SHK_BPF_EV_EXEC 2

/* Which hook enforced (shk_bpf_event.hook). */
#define SHK_BPF_HOOK_MAIN 0 /* bpf/shackle.bpf.c: sock_addr, or exec tracepoint + SIGKILL */
#define SHK_BPF_HOOK_LSM 1  /* bpf/lsm.bpf.c: lsm/bprm_check_security, exec fails with EPERM */


struct shk_bpf_exec_ev {
	__u64 dev;
	__u64 ino;
	__u64 once_digest; /* the consumed approval, reason SHK_BPF_R_ONCE */
	__u32 args_len;    /* bytes valid in args (NUL-separated argv) */
	__u32 args_truncated;
	char filename[SHK_BPF_PATH_LEN];
	char args[SHK_BPF_ARGS_LEN];
};

/* An exec record (kind SHK_BPF_EV_EXEC), from either exec hook. */
struct shk_bpf_event {
	__u32 kind;    /* SHK_BPF_EV_*: first in both record types */
	__u32 verdict; /* SHK_BPF_ALLOW / DENY / HITL as enforced */
	__u32 reason;  /* enum shk_bpf_reason */
	__u32 rule;    /* rule index, SHK_BPF_NO_RULE when none */
	__u32 tool_id;
	__u32 pid;     /* thread id */
	__u32 tgid;    /* process id */
	__u32 hook;    /* SHK_BPF_HOOK_* */
	__u64 cgroup_id;
	char comm[SHK_BPF_COMM_LEN];
	struct shk_bpf_exec_ev exec;
};

/*
 * A network record (kind SHK_BPF_EV_NET): 56 bytes, with the ring's 8-byte
 * header one 64-byte cache line. The size is what an attached call pays
 * for: the cost of a record is the lines the producer writes and the
 * consumer on the other CPU then reads (a 104-byte record, 2-3 lines, cost
 * ~30 ns more per call by bpf_stats, however little of it was filled; see
 * docs/ebpf-performance.md). So only what the consumer uses: no comm, no hook (only the
 * sock_addr hooks write them: SHK_BPF_HOOK_MAIN), and an approval's digest shares
 * the bytes of rule and tool id, which a consumed approval never has.
 */
struct shk_bpf_net_event {
	__u32 kind;
	__u8 verdict;
	__u8 reason;
	__u8 proto;
	__u8 op;
	__u16 family; /* AF_INET (also for v4-mapped IPv6) or AF_INET6 */
	__u16 port;   /* host order */
	__u16 sock_type;
	__u16 pad;
	__u32 pid;
	__u32 tgid;
	union {
		struct {
			__u32 rule;    /* reason other than SHK_BPF_R_ONCE */
			__u32 tool_id;
		};
		__u64 once_digest; /* reason SHK_BPF_R_ONCE */
	};
	__u64 cgroup_id;
	__u8 addr[16];
};

_Static_assert(sizeof(struct shk_bpf_net_event) + 8 == 64, "a network record is one cache line");

#define SHK_BPF_NET_EVENT_SIZE sizeof(struct shk_bpf_net_event)
/* Rounded so that records stay 64-byte aligned in the ring after an exec
 * record (with its 8-byte header a multiple of 64). */
#define SHK_BPF_EXEC_EVENT_SIZE ((sizeof(struct shk_bpf_event) + 8 + 63) / 64 * 64 - 8)

#endif
