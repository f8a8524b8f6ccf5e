// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Exec control through BPF LSM, where the kernel allows it: the
 * bprm_check_security hook runs before the new image replaces the old one,
 * so a denied exec fails with EPERM in the caller, which keeps running (the
 * raw tracepoint in shackle.bpf.c can only kill the process after the image
 * was loaded). A separate object: kernels that refuse BPF LSM programs (see
 * docs/ebpf.md) fail this load only, and the tracepoint path stays.
 *
 * The maps are the main object's (reused before load): same exec rules,
 * breaker, attached cgroup and ring. Only denials are reported here; an
 * allowed exec goes on to sched_process_exec, whose program reports it (and
 * kills it if the verdict changed in between).
 */
#include <vmlinux.h> /* pinned in bpf/, or regenerated: see bpf/meson.build */
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"

#define EPERM 1

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct image_probe {
	__u64 cgroup_id, dev, ino;
	int found;
};

static long image_waits(struct bpf_map *map, struct shk_bpf_exec_key *k, struct shk_bpf_exec_once *v,
			struct image_probe *p)
{
	(void)map;
	(void)v;
	if (k->cgroup_id != p->cgroup_id || k->dev != p->dev || k->ino != p->ino)
		return 0;
	p->found = 1;
	return 1;
}

/*
 * An approval waits for this image in the caller's cgroup (whatever its argv:
 * the key's argv hash cannot be computed here, so the map is walked; the
 * count spares the walk when none waits).
 */
static __always_inline int exec_once_waiting(const struct shk_bpf_inode *img)
{
	struct image_probe p = { .dev = img->dev, .ino = img->ino };
	struct shk_bpf_state *st;
	__u32 zero = 0;

	st = bpf_map_lookup_elem(&state, &zero);
	if (!st || !st->exec_once_entries)
		return 0;
	p.cgroup_id = bpf_get_current_cgroup_id();
	bpf_for_each_map_elem(&exec_once, image_waits, &p, 0);
	return p.found;
}

/*
 * The hook runs once per binary-format round: for a #! script first with the
 * script as bprm->file, then with its interpreter, so each level's device and
 * inode is judged (the tracepoint sees only the last). The new argv lives in
 * the new mm, not yet the task's: the event carries the name, no argv.
 */
SEC("lsm/bprm_check_security")
int BPF_PROG(shk_lsm_exec, struct linux_binprm *bprm, int ret)
{
	struct shk_bpf_inode key = {};
	struct shk_bpf_event *e;
	struct verdict v;

	/*
	 * Another BPF LSM program refused already: keep refusing. Not `return ret`:
	 * the verifier (6.10+) wants R0 provably in [-MAX_ERRNO, 0] for this hook,
	 * and ret is an unknown scalar to it; a constant always is in range.
	 */
	if (ret != 0)
		return -EPERM;
	if (bpf_current_task_under_cgroup(&target_cg, 0) != 1)
		return 0;
	key.ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	key.dev = BPF_CORE_READ(bprm, file, f_inode, i_sb, s_dev);
	exec_verdict(&key, &v);
	if (v.action == SHK_BPF_ALLOW)
		return 0;
	/*
	 * A human approved an exec of this image: only the tracepoint can read
	 * the new argv, compare it with the approved one and consume the entry
	 * (or kill the exec), so it is not refused here.
	 */
	if (v.reason != SHK_BPF_R_BREAKER && exec_once_waiting(&key))
		return 0;
	/* Refused whether or not the ring has room: event_reserve() counts a loss. */
	e = event_reserve();
	if (e) {
		event_fill(e, SHK_BPF_EV_EXEC, &v, bpf_get_current_cgroup_id());
		e->hook = SHK_BPF_HOOK_LSM;
		e->exec.dev = key.dev;
		e->exec.ino = key.ino;
		e->exec.once_digest = 0;
		e->exec.args_len = 0;
		e->exec.args_truncated = 0;
		if (bpf_probe_read_kernel_str(e->exec.filename, sizeof(e->exec.filename),
					      BPF_CORE_READ(bprm, filename)) < 0)
			e->exec.filename[0] = 0;
		bpf_ringbuf_submit(e, wakeup_flags(v.action));
	}
	return -EPERM;
}
