/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Layout shared by bpf/verify.bpf.c and src/ebpf/netverify.c. */
#ifndef SHACKLE_BPF_VERIFY_H
#define SHACKLE_BPF_VERIFY_H

#define SHK_VERIFY_AF_INET 2
#define SHK_VERIFY_AF_INET6 10

/* What an approval is for: a connect never authorises a send, nor back. */
#define SHK_VERIFY_OP_CONNECT 1
#define SHK_VERIFY_OP_SEND 2

#define SHK_VERIFY_MAX_APPROVALS 8192

/*
 * The leaf's sock_create hook records each socket in slot (cookie & (SLOTS
 * - 1)) of an array as one word: the cookie's upper bits (the slot holds
 * the lower ones) and what SO_DOMAIN, SO_TYPE and SO_PROTOCOL would say.
 * A word is the socket's when its tag is the cookie's and its family is
 * not 0 (a slot never written).
 */
#define SHK_VERIFY_MARK_SLOT_BITS 16
#define SHK_VERIFY_MARK_SLOTS (1U << SHK_VERIFY_MARK_SLOT_BITS)

static inline __u64 shk_verify_mark_word(__u64 cookie, __u32 family, __u32 type, __u32 protocol)
{
	return (cookie >> SHK_VERIFY_MARK_SLOT_BITS) << 32 | (__u64)(family & 0xff) << 24 |
	       (__u64)(type & 0xff) << 16 | (protocol & 0xffff);
}

struct shk_verify_key {
	__u64 cookie;    /* SO_COOKIE / bpf_get_socket_cookie() */
	__u32 tid;       /* the thread whose call was approved */
	__u32 pad;
};

/* A single-use approval of one call, keyed by socket and thread. */
struct shk_verify_appr {
	__u32 armed;     /* 1 */
	__u32 tid;       /* the thread (also in the key) */
	__u32 family;    /* AF_INET or AF_INET6, as the agent passed it */
	__u16 port;      /* network order */
	__u16 op;        /* SHK_VERIFY_OP_* */
	__u32 addr[4];   /* network order; AF_INET uses addr[0] */
};

#endif
