/* SPDX-License-Identifier: MIT */
/* Loading bpf/lsm.bpf.c on the maps of a loaded bpf/shackle.bpf.c (libbpf). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "ebpf/lsm.h"
#include "ebpf/probe.h"
#include "lsm.skel.h"
#include "shackle.skel.h"

static int reuse(struct bpf_map *mine, const struct bpf_map *main_map)
{
	return bpf_map__reuse_fd(mine, bpf_map__fd(main_map));
}

int shk_ebpf_lsm_attach(struct shackle_bpf *m, uint8_t exec_default, struct lsm_bpf **ret_lsm,
			char *why, size_t len)
{
	const char *step = "open";
	struct lsm_bpf *l;
	int r;

	*ret_lsm = NULL;
	/* Only where a minimal LSM program attaches and "bpf" is an active LSM. */
	r = shk_probe_bpf_lsm(why, len);
	if (r < 0)
		return r;
	l = lsm_bpf__open();
	if (!l) {
		r = errno ? -errno : -EINVAL;
		goto fail;
	}
	l->rodata->default_exec_action = exec_default;
	l->rodata->ring_wake_bytes = m->rodata->ring_wake_bytes;
	step = "map reuse";
	r = reuse(l->maps.state, m->maps.state);
	if (r == 0)
		r = reuse(l->maps.exec_rules, m->maps.exec_rules);
	if (r == 0)
		r = reuse(l->maps.exec_once, m->maps.exec_once);
	if (r == 0)
		r = reuse(l->maps.target_cg, m->maps.target_cg);
	if (r == 0)
		r = reuse(l->maps.events, m->maps.events);
	if (r == 0)
		r = reuse(l->maps.drops, m->maps.drops);
	if (r == 0) {
		step = "load";
		r = lsm_bpf__load(l);
	}
	if (r == 0) {
		step = "attach";
		r = lsm_bpf__attach(l);
	}
	if (r < 0)
		goto fail;
	*ret_lsm = l;
	return 0;
fail:
	snprintf(why, len, "the probe passed but the LSM object failed at %s: %s", step,
		 strerror(-r));
	lsm_bpf__destroy(l);
	return r;
}

void shk_ebpf_lsm_free(struct lsm_bpf *l, bool unpin)
{
	if (l && unpin && l->links.shk_lsm_exec)
		(void)bpf_link__unpin(l->links.shk_lsm_exec);
	lsm_bpf__destroy(l);
}

int shk_ebpf_lsm_pin(struct lsm_bpf *l, const char *dir)
{
	char p[4096];

	if (snprintf(p, sizeof(p), "%s/link_shk_lsm_exec", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	return bpf_link__pin(l->links.shk_lsm_exec, p);
}
