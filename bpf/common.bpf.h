/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Maps and helpers shared by bpf/shackle.bpf.c and bpf/lsm.bpf.c. The LSM
 * object is a separate ELF so that a kernel refusing BPF LSM cannot fail the
 * main object's load; its copies of these maps are replaced before load with
 * the main object's (bpf_map__reuse_fd in src/ebpf/lsm.c), so both programs
 * read the same rules and write the same ring. The definitions must stay
 * identical, which is why they live here once.
 */
#ifndef SHACKLE_BPF_COMMON_BPF_H
#define SHACKLE_BPF_COMMON_BPF_H

#include "shackle.h"

/* Set by the loader between open and load (the same value in both objects). */
const volatile __u8 default_exec_action = SHK_BPF_ALLOW;
/* a quarter of the ring's size: set by the loader (a helper call less per record) */
const volatile __u32 ring_wake_bytes = (1 << 20) / 4;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct shk_bpf_state);
} state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct shk_bpf_inode);
	__type(value, __u8);
} exec_rules SEC(".maps");

/* Single-use exec approvals (attach mode): see struct shk_bpf_exec_once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct shk_bpf_exec_key);
	__type(value, struct shk_bpf_exec_once);
} exec_once SEC(".maps");

/* The attached cgroup: the exec hook is global and filters on it. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target_cg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/*
 * [0] events lost because the ring buffer was full (the verdict still holds);
 * [1] of those, calls refused because with report_allowed every allowed call
 *     must reach user space, and this one could not.
 */
#define DROP_LOST 0
#define DROP_REFUSED 1
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

struct verdict {
	__u32 action;
	__u32 reason;
	__u32 rule;
	__u32 tool_id;
	__u64 once_digest;
};

static __always_inline void count_drop(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &which);

	if (n)
		*n += 1;
}

/*
 * cgroup_id is the caller's (bpf_get_current_cgroup_id()), passed in because
 * the network hook fetches it at most once per call: the helper costs about
 * as much as the rest of an allowed call's verdict (see docs/ebpf-performance.md). The
 * name is loaded from the task directly: bpf_get_current_comm() and a
 * kernel timestamp (which nobody read) cost ~100 ns of a ~300 ns record
 * here, measured with bpf_stats.
 */
static __always_inline void event_fill(struct shk_bpf_event *e, __u32 kind, const struct verdict *v,
				       __u64 cgroup_id)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->kind = kind;
	e->verdict = v->action;
	e->reason = v->reason;
	e->rule = v->rule;
	e->tool_id = v->tool_id;
	e->pid = (__u32)id;
	e->tgid = id >> 32;
	e->hook = SHK_BPF_HOOK_MAIN;
	e->cgroup_id = cgroup_id;
	__builtin_memcpy(e->comm, bpf_get_current_task_btf()->comm, sizeof(e->comm));
}

static __always_inline void *event_reserve_size(__u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		count_drop(DROP_LOST);
	return e;
}

static __always_inline struct shk_bpf_event *event_reserve(void)
{
	return event_reserve_size(SHK_BPF_EXEC_EVENT_SIZE);
}

/*
 * A wakeup per event costs the caller an irq_work and the consumer a context
 * switch. Denials (which may need a human) wake the consumer at once; allowed
 * calls only when a quarter of the ring is used, the consumer's periodic
 * shk_ebpf_poll() timeout collects the rest.
 */
static __always_inline __u64 wakeup_flags(__u32 action)
{
	if (action != SHK_BPF_ALLOW)
		return BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= ring_wake_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/*
 * The exec verdict on the image (device, inode): an open breaker denies
 * every exec below the attach point, then the exec rules, then the default.
 */
static __always_inline void exec_verdict(const struct shk_bpf_inode *key, struct verdict *v)
{
	struct shk_bpf_state *st;
	__u32 zero = 0;
	__u8 *action;

	v->rule = SHK_BPF_NO_RULE;
	v->tool_id = SHK_BPF_NO_TOOL;
	v->once_digest = 0;
	st = bpf_map_lookup_elem(&state, &zero);
	action = bpf_map_lookup_elem(&exec_rules, key);
	if (!st || st->breaker_open) {
		v->action = SHK_BPF_DENY;
		v->reason = SHK_BPF_R_BREAKER;
	} else if (action) {
		v->action = *action;
		v->reason = SHK_BPF_R_RULE;
	} else {
		v->action = default_exec_action;
		v->reason = SHK_BPF_R_DEFAULT;
	}
}

#endif
