// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * shackle-run's exec check in the kernel (docs/exec.md, "Verification in the
 * kernel"). An approved exec is answered CONTINUE and the kernel reads path,
 * argv and environment again from memory another thread may have changed.
 * The supervisor stores what it judged under the calling thread's global
 * tid; sched_process_exec fires after the new image is loaded and before the
 * task returns to user space, so a SIGKILL sent here is delivered before the
 * image's first instruction: the image, working directory, argv and
 * environment must be the judged ones, byte for byte, or it never runs.
 *
 * UAPI headers and offsets handed in by user space instead of vmlinux.h and
 * CO-RE: a load with relocations parses the kernel's whole BTF on the
 * loading thread (tens of ms).
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "execv.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SHK_SIGKILL 9
/* %cs of a task in 64-bit mode (__USER_CS) */
#define SHK_USER_CS 0x33

const volatile struct shk_execv_offsets off = {};

/* Approvals by global tid, single use: taken by the exec they were made for. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SHK_EXECV_MAX_APPROVALS);
	__type(key, __u32);
	__type(value, struct shk_execv_appr);
} execv_appr SEC(".maps");

/* The agent's cgroup leaf: a tid outside it is not ours, even when it
 * reuses the number of an approval whose exec failed. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} execv_leaf SEC(".maps");

/* One event per checked exec; user space reads it before it judges the next
 * call (no wake-up: the loop polls the ring's memory). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} execv_events SEC(".maps");

/* execs killed because their event could not be written */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} execv_lost SEC(".maps");

struct scratch {
	__u64 w[SHK_EXECV_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} execv_scratch SEC(".maps");

static __always_inline __u64 rd64(const void *base, __u32 o)
{
	__u64 v = 0;

	if (!base || bpf_probe_read_kernel(&v, sizeof(v), (const char *)base + o) != 0)
		return 0;
	return v;
}

static __always_inline __u32 rd32(const void *base, __u32 o)
{
	__u32 v = 0;

	if (!base || bpf_probe_read_kernel(&v, sizeof(v), (const char *)base + o) != 0)
		return 0;
	return v;
}

/* device and inode of an inode, in the kernel's encoding; 0 on a bad read */
static __always_inline int same_inode(const void *inode, __u64 ino, __u32 dev)
{
	const void *sb = (const void *)rd64(inode, off.inode_sb);

	return inode && sb && rd64(inode, off.inode_ino) == ino && rd32(sb, off.sb_dev) == dev;
}

struct cmp {
	const __u64 *got, *want;
	__u64 diff;
};

static long cmp_word(__u32 i, void *ctx)
{
	struct cmp *c = ctx;
	__u32 k = i & (SHK_EXECV_WORDS - 1);

	c->diff |= c->got[k] ^ c->want[k];
	return 0;
}

/* The strings the new image starts with are in its fresh mm, which nobody
 * else maps yet and the task cannot touch before it returns: what is read
 * here is what the program runs with. argv and environment are adjacent
 * (create_elf_tables copies them so); one read, one comparison. */
static __always_inline __u32 same_strings(const void *task, const struct shk_execv_appr *a)
{
	const void *mm = (const void *)rd64(task, off.task_mm);
	__u64 as = rd64(mm, off.mm_arg_start), ae = rd64(mm, off.mm_arg_end);
	__u64 es = rd64(mm, off.mm_env_start), ee = rd64(mm, off.mm_env_end);
	const __u64 *want = (const __u64 *)a->bytes;
	struct cmp c = { 0 };
	struct scratch *buf;
	__u32 zero = 0, n, nw;

	if (!mm || !as)
		return SHK_EXECV_READ;
	if (ae - as != a->argv_len)
		return SHK_EXECV_ARGV;
	if (es != ae || ee - es != a->env_len)
		return SHK_EXECV_ENV;
	n = (__u32)(ee - as);
	if (n == 0 || n > SHK_EXECV_BYTES - 1)
		return SHK_EXECV_ARGV;
	buf = bpf_map_lookup_elem(&execv_scratch, &zero);
	if (!buf)
		return SHK_EXECV_READ;
	nw = (n + 7) / 8;
	/* the bytes after the strings in their last word compare as zero */
	buf->w[(nw - 1) & (SHK_EXECV_WORDS - 1)] = 0;
	n &= SHK_EXECV_BYTES - 1;
	if (bpf_probe_read_user(buf->w, n, (const void *)as) != 0)
		return SHK_EXECV_READ;
	c.got = buf->w;
	c.want = want;
	/* a callback the verifier checks once, where an open-coded loop of
	 * up to 2048 words cost ~10 ms of its time at every session's load */
	if (bpf_loop(nw, cmp_word, &c, 0) != (long)nw)
		return SHK_EXECV_READ;
	return c.diff ? SHK_EXECV_STRINGS : 0;
}

static __always_inline __u32 check(const void *task, const void *bprm, const struct shk_execv_appr *a)
{
	/* bprm->file: the image the kernel loaded */
	const void *file = (const void *)rd64(bprm, off.bprm_file);
	const void *fs = (const void *)rd64(task, off.task_fs);
	const void *pwd = (const void *)rd64(fs, off.fs_pwd_dentry);
	long regs = bpf_task_pt_regs(bpf_get_current_task_btf());
	__u32 why = 0;
	__u16 cs = 0;

	if (!same_inode((const void *)rd64(file, off.file_inode), a->ino, a->dev))
		why |= SHK_EXECV_EXE;
	if (!same_inode((const void *)rd64(pwd, off.dentry_inode), a->cwd_ino, a->cwd_dev))
		why |= SHK_EXECV_CWD;
	/* a 32-bit image (0x23) has 4-byte pointers: not supported */
	if (!regs || bpf_probe_read_kernel(&cs, sizeof(cs), (const char *)regs + off.regs_cs) != 0 ||
	    cs != SHK_USER_CS)
		why |= SHK_EXECV_ABI;
	return why ? why : same_strings(task, a);
}

SEC("raw_tracepoint/sched_process_exec")
int shk_execv_check(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)ctx->args[1]; /* old_pid: the caller, before de_thread */
	struct shk_execv_appr *a = bpf_map_lookup_elem(&execv_appr, &tid);
	struct shk_execv_ev *e;
	__u32 why, zero = 0;
	__u64 cookie, *lost;

	if (!a || bpf_current_task_under_cgroup(&execv_leaf, 0) != 1)
		return 0;
	why = check((const void *)ctx->args[0], (const void *)ctx->args[2], a);
	cookie = a->cookie;
	bpf_map_delete_elem(&execv_appr, &tid);
	e = bpf_ringbuf_reserve(&execv_events, sizeof(*e), 0);
	if (!e) {
		/* an exec user space cannot learn of does not run */
		lost = bpf_map_lookup_elem(&execv_lost, &zero);
		if (lost)
			__sync_fetch_and_add(lost, 1);
		bpf_send_signal(SHK_SIGKILL);
		return 0;
	}
	if (why)
		bpf_send_signal(SHK_SIGKILL);
	e->cookie = cookie;
	e->tid = tid;
	e->pid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	e->why = why;
	e->pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}
