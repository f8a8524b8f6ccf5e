/* SPDX-License-Identifier: MIT */
/* Loading bpf/execverify.bpf.c, arming its approvals, reading its events (libbpf). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "ebpf/execverify.h"
#include "ebpf/libbpf_print.h"
#include "execv.h"
#include "execverify.skel.h"

struct shk_execverify {
	struct execverify_bpf *skel;
	struct ring_buffer *rb;
	int appr_fd;
	shk_execverify_fn fn;   /* set for one drain */
	void *fn_ctx;
	struct shk_execv_appr appr; /* the value being armed (16 KiB: not on the stack) */
};

/* Byte offset of member name in the struct or union id, looking into
 * anonymous members (mm_struct keeps its fields in one); size its size. */
static int member(const struct btf *btf, __u32 id, const char *name, __u32 *ret_off, __u32 *ret_size)
{
	const struct btf_type *t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	const struct btf_member *m;

	if (!t || !btf_is_composite(t))
		return -ENOENT;
	m = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		__u32 bits = btf_member_bit_offset(t, i), sub = 0;

		if (bits % 8)
			continue;
		if (n && strcmp(n, name) == 0) {
			long sz = btf__resolve_size(btf, m->type);
			if (sz <= 0)
				return -ENOENT;
			*ret_off = bits / 8;
			*ret_size = (__u32)sz;
			return 0;
		}
		if ((!n || !*n) && member(btf, m->type, name, &sub, ret_size) == 0) {
			*ret_off = bits / 8 + sub;
			return 0;
		}
	}
	return -ENOENT;
}

/* off of struct sname's member, which must be size bytes (0: any) */
static int field(const struct btf *btf, const char *sname, const char *mname, __u32 size, __u32 *off)
{
	__s32 id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	__u32 sz = 0;

	if (id < 0 || member(btf, (__u32)id, mname, off, &sz) < 0)
		return -ENOENT;
	return size && sz != size ? -EPROTO : 0;
}

static int offsets(struct shk_execv_offsets *o)
{
	struct btf *btf = btf__load_vmlinux_btf();
	__u32 pwd = 0, dentry = 0;
	int r = 0;

	if (!btf)
		return errno ? -errno : -ENOENT;
	if (!r) r = field(btf, "task_struct", "mm", 8, &o->task_mm);
	if (!r) r = field(btf, "task_struct", "fs", 8, &o->task_fs);
	if (!r) r = field(btf, "mm_struct", "arg_start", 8, &o->mm_arg_start);
	if (!r) r = field(btf, "mm_struct", "arg_end", 8, &o->mm_arg_end);
	if (!r) r = field(btf, "mm_struct", "env_start", 8, &o->mm_env_start);
	if (!r) r = field(btf, "mm_struct", "env_end", 8, &o->mm_env_end);
	if (!r) r = field(btf, "fs_struct", "pwd", 0, &pwd);
	if (!r) r = field(btf, "path", "dentry", 8, &dentry);
	if (!r) r = field(btf, "dentry", "d_inode", 8, &o->dentry_inode);
	if (!r) r = field(btf, "inode", "i_ino", 8, &o->inode_ino);
	if (!r) r = field(btf, "inode", "i_sb", 8, &o->inode_sb);
	if (!r) r = field(btf, "super_block", "s_dev", 4, &o->sb_dev);
	if (!r) r = field(btf, "linux_binprm", "file", 8, &o->bprm_file);
	if (!r) r = field(btf, "file", "f_inode", 8, &o->file_inode);
	if (!r) r = field(btf, "pt_regs", "cs", 0, &o->regs_cs);
	o->fs_pwd_dentry = pwd + dentry;
	btf__free(btf);
	return r;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct shk_execverify *ev = ctx;
	const struct shk_execv_ev *e = data;

	if (len >= sizeof(*e) && ev->fn)
		ev->fn(ev->fn_ctx, e->cookie, (pid_t)e->tid, (pid_t)e->pid, e->why);
	return 0;
}

static int attach(struct shk_execverify *ev, int cgroup_fd)
{
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(ev->skel->maps.execv_leaf), &zero, &cgroup_fd, BPF_ANY) < 0)
		return -errno;
	ev->rb = ring_buffer__new(bpf_map__fd(ev->skel->maps.execv_events), on_event, ev, NULL);
	if (!ev->rb)
		return errno ? -errno : -ENOMEM;
	ev->skel->links.shk_execv_check = bpf_program__attach(ev->skel->progs.shk_execv_check);
	if (!ev->skel->links.shk_execv_check)
		return errno ? -errno : -EINVAL;
	ev->appr_fd = bpf_map__fd(ev->skel->maps.execv_appr);
	return 0;
}

static int load(struct execverify_bpf **ret_skel)
{
	struct shk_execv_offsets o = { 0 };
	struct execverify_bpf *skel;
	int r;

	libbpf_set_print(shk_libbpf_silent);
	if ((r = offsets(&o)) < 0)
		return r;
	if (!(skel = execverify_bpf__open()))
		return errno ? -errno : -EINVAL;
	skel->rodata->off = o;
	if ((r = execverify_bpf__load(skel)) < 0) {
		execverify_bpf__destroy(skel);
		return r;
	}
	*ret_skel = skel;
	return 0;
}

int shk_execverify_probe(void)
{
	struct execverify_bpf *skel = NULL;
	int r = load(&skel);

	execverify_bpf__destroy(skel);
	return r;
}

int shk_execverify_open(int cgroup_fd, struct shk_execverify **ret_ev)
{
	struct shk_execverify *ev = calloc(1, sizeof(*ev));
	int r;

	if (!ev)
		return -ENOMEM;
	if ((r = load(&ev->skel)) < 0) {
		free(ev);
		return r;
	}
	if ((r = attach(ev, cgroup_fd)) < 0) {
		shk_execverify_free(ev);
		return r;
	}
	*ret_ev = ev;
	return 0;
}

void shk_execverify_free(struct shk_execverify *ev)
{
	if (!ev)
		return;
	ring_buffer__free(ev->rb);
	execverify_bpf__destroy(ev->skel);
	free(ev);
}

bool shk_execverify_fits(size_t argv_len, size_t env_len)
{
	return argv_len > 0 && argv_len + env_len <= SHK_EXECV_BYTES - 1;
}

static __u32 kdev(dev_t d)
{
	return (__u32)((major(d) << 20) | minor(d));
}

int shk_execverify_arm(struct shk_execverify *ev, pid_t tid, const struct shk_execverify_want *w)
{
	struct shk_execv_appr *a = &ev->appr;
	size_t n = w->argv_len + w->env_len;
	__u32 key = (__u32)tid;

	/* the kernel's dev_t has 12 bits of major, 20 of minor */
	if (!shk_execverify_fits(w->argv_len, w->env_len) || major(w->dev) > 0xfff ||
	    minor(w->dev) > 0xfffff || major(w->cwd_dev) > 0xfff || minor(w->cwd_dev) > 0xfffff)
		return -E2BIG;
	a->cookie = w->cookie;
	a->ino = w->ino;
	a->cwd_ino = w->cwd_ino;
	a->dev = kdev(w->dev);
	a->cwd_dev = kdev(w->cwd_dev);
	a->argv_len = (__u32)w->argv_len;
	a->env_len = (__u32)w->env_len;
	memcpy(a->bytes, w->argv, w->argv_len);
	if (w->env_len)
		memcpy(a->bytes + w->argv_len, w->env, w->env_len);
	/* the program compares whole words: the rest of the last one is zero */
	memset(a->bytes + n, 0, ((n + 7) & ~(size_t)7) - n);
	if (bpf_map_update_elem(ev->appr_fd, &key, a, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int shk_execverify_disarm(struct shk_execverify *ev, pid_t tid)
{
	__u32 key = (__u32)tid;

	if (bpf_map_delete_elem(ev->appr_fd, &key) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int shk_execverify_drain(struct shk_execverify *ev, shk_execverify_fn fn, void *ctx)
{
	int r;

	ev->fn = fn;
	ev->fn_ctx = ctx;
	r = ring_buffer__consume(ev->rb);
	ev->fn = NULL;
	return r;
}

uint64_t shk_execverify_lost(struct shk_execverify *ev)
{
	__u32 zero = 0;
	__u64 n = 0;

	return bpf_map_lookup_elem(bpf_map__fd(ev->skel->maps.execv_lost), &zero, &n) == 0 ? n : 0;
}
