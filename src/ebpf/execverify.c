/* SPDX-License-Identifier: MIT */
/* Loading bpf/execverify.bpf.c, arming its approvals, reading its events (libbpf). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ebpf/execv_offsets.h"
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
	if ((r = shk_execv_offsets_get(SHK_EXECV_OFFSETS_DIR, &o, NULL)) < 0)
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
