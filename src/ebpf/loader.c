/* SPDX-License-Identifier: MIT */
/* Loading, attaching, filling and tearing down bpf/shackle.bpf.c (libbpf). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <shackle/ebpf.h>

#include "ebpf/internal.h"
#include "ebpf/libbpf_print.h"
#include "ebpf/loader.h"
#include "ebpf/lsm.h"
#include "ebpf/netrules.h"
#include "util/linux.h"
#include "shackle.skel.h"

static int write_state(shk_ebpf *e)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.state), &zero, &e->st, BPF_ANY) < 0)
		return -errno;
	return 0;
}

/* Raise before an insert, lower after a delete: the count never undercounts. */
static int count_up(shk_ebpf *e, uint32_t *n)
{
	int r;

	++*n;
	r = write_state(e);
	if (r < 0)
		--*n;
	return r;
}

static void count_down(shk_ebpf *e, uint32_t *n)
{
	if (*n) {
		--*n;
		(void)write_state(e); /* a failure leaves the count high: only slower */
	}
}

static int rb_event(void *ctx, void *data, size_t size)
{
	struct shk_ebpf *e = ctx;
	struct shk_ebpf_event ev;
	size_t need = sizeof(struct shk_bpf_event);
	uint32_t kind = 0;

	/* network records are shorter (SHK_BPF_NET_EVENT_SIZE) */
	if (size >= sizeof(kind))
		memcpy(&kind, data, sizeof(kind));
	if (kind == SHK_BPF_EV_NET)
		need = SHK_BPF_NET_EVENT_SIZE;
	/* a kind our programs never write is not decoded as either */
	if ((kind != SHK_BPF_EV_NET && kind != SHK_BPF_EV_EXEC) || size < need) {
		e->malformed++;
		return 0;
	}
	shk_ebpf_event_decode(data, &ev);
	e->delivered++;
	if (ev.reason == SHK_EBPF_R_ONCE)
		count_down(e, ev.kind == SHK_EBPF_EV_NET ? &e->st.once_entries
						       : &e->st.exec_once_entries);
	return e->fn ? e->fn(&ev, e->userdata) : 0;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int shk_ebpf_open(const struct shk_ebpf_opts *opts, shk_ebpf **ret_ebpf)
{
	struct shk_ebpf *e;
	int r;

	if (opts->net_default > SHK_EBPF_HITL || opts->exec_default > SHK_EBPF_HITL)
		return -EINVAL;
	if (opts->ring_bytes && (!is_pow2(opts->ring_bytes) ||
				 opts->ring_bytes < (uint32_t)sysconf(_SC_PAGESIZE)))
		return -EINVAL;
	libbpf_set_print(shk_libbpf_silent);
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->exec = opts->exec;
	e->lsm_off = opts->exec_lsm == SHK_EBPF_LSM_OFF;
	e->exec_default = opts->exec_default;
	e->skel = shackle_bpf__open();
	if (!e->skel) {
		r = errno ? -errno : -EINVAL;
		goto fail;
	}
	e->skel->rodata->default_net_action = opts->net_default;
	e->skel->rodata->default_exec_action = opts->exec_default;
	e->skel->rodata->report_allowed = opts->report_allowed;
	e->skel->rodata->exec_enabled = opts->exec;
	e->skel->rodata->ring_wake_bytes = (opts->ring_bytes ? opts->ring_bytes : 1u << 20) / 4;
	if (opts->ring_bytes) {
		r = bpf_map__set_max_entries(e->skel->maps.events, opts->ring_bytes);
		if (r < 0)
			goto fail;
	}
	if (!opts->exec) {
		bpf_program__set_autoload(e->skel->progs.shk_exec, false);
		/* An unused CGROUP_ARRAY still gets created: harmless. */
	}
	r = shackle_bpf__load(e->skel);
	if (r < 0)
		goto fail;
	e->rb = ring_buffer__new(bpf_map__fd(e->skel->maps.events), rb_event, e, NULL);
	if (!e->rb) {
		r = errno ? -errno : -ENOMEM;
		goto fail;
	}
	*ret_ebpf = e;
	return 0;
fail:
	shk_ebpf_free(e);
	return r;
}

void shk_ebpf_free(shk_ebpf *e)
{
	if (!e)
		return;
	ring_buffer__free(e->rb);
	shk_ebpf_lsm_free(e->lsm, false);
	shackle_bpf__destroy(e->skel); /* closes links (detaching unpinned ones) and maps */
	free(e);
}

static int clear_map(struct bpf_map *map)
{
	uint8_t key[64];
	int fd = bpf_map__fd(map);

	if (bpf_map__key_size(map) > sizeof(key))
		return -E2BIG;
	/* Restart from the first key each time: a deletion ends an iteration. */
	for (int guard = 0; guard < 1 << 20; guard++) {
		if (bpf_map_get_next_key(fd, NULL, key) < 0)
			return errno == ENOENT ? 0 : -errno;
		if (bpf_map_delete_elem(fd, key) < 0)
			return -errno;
	}
	return -ELOOP;
}

static int put_entry(shk_ebpf *e, const struct shk_ebpf_lpm_entry *x)
{
	int r;

	if (x->family == AF_INET) {
		struct shk_bpf_lpm_v4 k = { .prefixlen = x->prefix };

		memcpy(k.addr, x->addr, 4);
		r = bpf_map_update_elem(bpf_map__fd(e->skel->maps.v4_rules), &k, &x->set, BPF_ANY);
	} else {
		struct shk_bpf_lpm_v6 k = { .prefixlen = x->prefix };

		memcpy(k.addr, x->addr, 16);
		r = bpf_map_update_elem(bpf_map__fd(e->skel->maps.v6_rules), &k, &x->set, BPF_ANY);
	}
	if (r < 0)
		return errno == ENOSPC ? -E2BIG : -errno;
	return 0;
}

int shk_ebpf_set_net_rules(shk_ebpf *e, const struct shk_ebpf_net_rule *rules, size_t n)
{
	_cleanup_free_ struct shk_ebpf_lpm_entry *ents = NULL;
	size_t count = 0;
	int r;

	if (n) {
		ents = calloc(n, sizeof(*ents));
		if (!ents)
			return -ENOMEM;
		r = shk_ebpf_compile_net_rules(rules, n, ents, &count);
		if (r < 0)
			return r;
	}
	r = clear_map(e->skel->maps.v4_rules);
	if (r == 0)
		r = clear_map(e->skel->maps.v6_rules);
	for (size_t i = 0; r == 0 && i < count; i++)
		r = put_entry(e, &ents[i]);
	if (r < 0) {
		/* Never leave half a rule set: with no rules the default answers. */
		(void)clear_map(e->skel->maps.v4_rules);
		(void)clear_map(e->skel->maps.v6_rules);
	}
	return r;
}

/* Longest prefix first (inserting), or shortest first (deleting). */
static int by_prefix_desc(const void *a, const void *b)
{
	const struct shk_ebpf_lpm_entry *x = a, *y = b;

	return (x->prefix < y->prefix) - (x->prefix > y->prefix);
}

static int by_prefix_asc(const void *a, const void *b)
{
	return by_prefix_desc(b, a);
}

static bool same_key(const struct shk_ebpf_lpm_entry *x, int family, unsigned prefix,
		     const uint8_t *addr)
{
	return x->family == family && x->prefix == prefix &&
	       !memcmp(x->addr, addr, family == AF_INET ? 4 : 16);
}

/* Keys of one trie that the new entries do not have, appended to stale. */
static int stale_keys(struct bpf_map *map, int family, const struct shk_ebpf_lpm_entry *ents,
		      size_t count, struct shk_ebpf_lpm_entry **stale, size_t *nstale)
{
	struct shk_bpf_lpm_v6 k, next; /* a v4 key is a prefix of this layout */
	int fd = bpf_map__fd(map);
	void *prev = NULL;

	memset(&k, 0, sizeof(k));
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		bool keep = false;
		struct shk_ebpf_lpm_entry *grown;

		k = next;
		prev = &k;
		for (size_t i = 0; i < count && !keep; i++)
			keep = same_key(&ents[i], family, k.prefixlen, k.addr);
		if (keep)
			continue;
		grown = realloc(*stale, (*nstale + 1) * sizeof(**stale));
		if (!grown)
			return -ENOMEM;
		*stale = grown;
		memset(&grown[*nstale], 0, sizeof(grown[*nstale]));
		grown[*nstale].family = family;
		grown[*nstale].prefix = k.prefixlen;
		memcpy(grown[*nstale].addr, k.addr, family == AF_INET ? 4 : 16);
		++*nstale;
	}
	return errno == ENOENT ? 0 : -errno;
}

static int del_entry(shk_ebpf *e, const struct shk_ebpf_lpm_entry *x)
{
	struct shk_bpf_lpm_v6 k = { .prefixlen = x->prefix };
	struct bpf_map *map = x->family == AF_INET ? e->skel->maps.v4_rules : e->skel->maps.v6_rules;

	memcpy(k.addr, x->addr, 16);
	if (bpf_map_delete_elem(bpf_map__fd(map), &k) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * While attached: every address moves from its old verdict to its new one
 * once, never through a third. Each trie value is a complete first-match list
 * for its prefix, so an address is judged by whichever present prefix is its
 * longest. New and changed entries go in longest prefix first: a shorter new
 * entry is never an address's longest while the longer new one it needs is
 * missing. Then stale entries go out shortest first: the old longest prefix
 * of an address stays until every shorter stale one has gone.
 */
int shk_ebpf_update_net_rules(shk_ebpf *e, const struct shk_ebpf_net_rule *rules, size_t n)
{
	_cleanup_free_ struct shk_ebpf_lpm_entry *ents = NULL;
	_cleanup_free_ struct shk_ebpf_lpm_entry *stale = NULL;
	size_t count = 0, nstale = 0;
	int r = 0;

	if (n) {
		ents = calloc(n, sizeof(*ents));
		if (!ents)
			return -ENOMEM;
		r = shk_ebpf_compile_net_rules(rules, n, ents, &count);
		if (r < 0)
			return r;
	}
	r = stale_keys(e->skel->maps.v4_rules, AF_INET, ents, count, &stale, &nstale);
	if (r == 0)
		r = stale_keys(e->skel->maps.v6_rules, AF_INET6, ents, count, &stale, &nstale);
	if (r < 0)
		return r;
	if (count)
		qsort(ents, count, sizeof(*ents), by_prefix_desc);
	for (size_t i = 0; r == 0 && i < count; i++)
		r = put_entry(e, &ents[i]);
	if (nstale)
		qsort(stale, nstale, sizeof(*stale), by_prefix_asc);
	for (size_t i = 0; r == 0 && i < nstale; i++)
		r = del_entry(e, &stale[i]);
	return r;
}

int shk_ebpf_set_exec_rule(shk_ebpf *e, const char *path, uint8_t action)
{
	struct shk_bpf_inode k = { 0 };
	uint64_t dev, ino;
	int r;

	if (action > SHK_EBPF_HITL)
		return -EINVAL;
	/* not stat's device: btrfs and overlayfs may report another (kinode.c) */
	if ((r = shk_ebpf_kernel_inode(path, &dev, &ino)) < 0)
		return r;
	k.dev = dev;
	k.ino = ino;
	if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.exec_rules), &k, &action, BPF_ANY) < 0)
		return -errno;
	return 0;
}

/*
 * Called with the tracepoint already attached: whatever happens here, denied
 * execs are stopped (killed, at worst) before shk_ebpf_attach() returns. The
 * LSM program, where it loads, refuses them earlier with EPERM; the
 * tracepoint stays as the reporter of allowed execs and the backstop.
 */
static void exec_lsm(shk_ebpf *e)
{
	e->exec_path = SHK_EBPF_EXEC_TRACEPOINT;
	if (e->lsm_off) {
		snprintf(e->lsm_why, sizeof(e->lsm_why), "BPF LSM not requested");
		return;
	}
	if (shk_ebpf_lsm_attach(e->skel, e->exec_default, &e->lsm, e->lsm_why,
				sizeof(e->lsm_why)) == 0) {
		e->exec_path = SHK_EBPF_EXEC_LSM;
		e->lsm_why[0] = 0;
	}
}

int shk_ebpf_exec_path(const shk_ebpf *e, const char **ret_why)
{
	if (ret_why)
		*ret_why = e->exec_path == SHK_EBPF_EXEC_TRACEPOINT ? e->lsm_why : "";
	return e->exec_path;
}


int shk_ebpf_attach(shk_ebpf *e, int cgroup_fd)
{
	struct bpf_link *l;
	uint32_t zero = 0;
	int r;

	if (e->skel->links.shk_connect4)
		return -EALREADY;
#define ATTACH(p)                                                    \
	l = bpf_program__attach_cgroup(e->skel->progs.p, cgroup_fd); \
	if (!l) {                                                    \
		r = errno ? -errno : -EINVAL;                        \
		goto fail;                                           \
	}                                                            \
	e->skel->links.p = l;
	SHK_LINKS(ATTACH)
#undef ATTACH
	if ((r = shk_ebpf_scan_listeners(e->skel, cgroup_fd, &e->netns_unentered,
					 &e->netns_errno)) < 0)
		goto fail;
	if (e->exec) {
		if (bpf_map_update_elem(bpf_map__fd(e->skel->maps.target_cg), &zero, &cgroup_fd,
					BPF_ANY) < 0) {
			r = -errno;
			goto fail;
		}
		l = bpf_program__attach_raw_tracepoint(e->skel->progs.shk_exec, "sched_process_exec");
		if (!l) {
			r = errno ? -errno : -EINVAL;
			goto fail;
		}
		e->skel->links.shk_exec = l;
		exec_lsm(e);
	}
	return 0;
fail:
	(void)shk_ebpf_detach(e);
	return r;
}

static void drop_link(struct bpf_link **l)
{
	if (!*l)
		return;
	(void)bpf_link__unpin(*l);
	bpf_link__destroy(*l);
	*l = NULL;
}

int shk_ebpf_detach(shk_ebpf *e)
{
#define DROP(p) drop_link(&e->skel->links.p);
	SHK_LINKS(DROP)
#undef DROP
	shk_ebpf_lsm_free(e->lsm, true);
	e->lsm = NULL;
	e->exec_path = SHK_EBPF_EXEC_NONE;
	drop_link(&e->skel->links.shk_exec);
	return 0;
}

/* An entry of a map whose entries the hooks count (struct shk_bpf_state). */
static int counted_update(shk_ebpf *e, struct bpf_map *map, uint32_t *count, const void *key,
			  const void *val, uint64_t flags)
{
	int r = count_up(e, count);

	if (r < 0)
		return r;
	if (bpf_map_update_elem(bpf_map__fd(map), key, val, flags) < 0) {
		r = -errno;
		count_down(e, count);
		return r;
	}
	return 0;
}

static int counted_delete(shk_ebpf *e, struct bpf_map *map, uint32_t *count, const void *key)
{
	if (bpf_map_delete_elem(bpf_map__fd(map), key) < 0)
		return -errno;
	count_down(e, count);
	return 0;
}

static int dest_update(shk_ebpf *e, struct bpf_map *map, uint32_t *count,
		       const struct shk_ebpf_dest *d, const void *val, uint64_t flags)
{
	struct shk_bpf_dest k;

	if ((d->family != AF_INET && d->family != AF_INET6) || !d->op || (d->op & (d->op - 1)))
		return -EINVAL;
	shk_ebpf_dest_to_bpf(d, &k);
	return counted_update(e, map, count, &k, val, flags);
}

int shk_ebpf_deny_dest(shk_ebpf *e, const struct shk_ebpf_dest *d, uint32_t why)
{
	return dest_update(e, e->skel->maps.deny_dest, &e->st.deny_entries, d, &why, BPF_ANY);
}

int shk_ebpf_undeny_dest(shk_ebpf *e, const struct shk_ebpf_dest *d)
{
	struct shk_bpf_dest k;

	shk_ebpf_dest_to_bpf(d, &k);
	return counted_delete(e, e->skel->maps.deny_dest, &e->st.deny_entries, &k);
}

int shk_ebpf_allow_once(shk_ebpf *e, const struct shk_ebpf_dest *d, uint64_t digest)
{
	struct shk_bpf_once v = { .digest = digest };

	return dest_update(e, e->skel->maps.once_allow, &e->st.once_entries, d, &v, BPF_NOEXIST);
}

int shk_ebpf_revoke_once(shk_ebpf *e, const struct shk_ebpf_dest *d)
{
	struct shk_bpf_dest k;

	shk_ebpf_dest_to_bpf(d, &k);
	/* ENOENT: a call took it first (its event is on the way) */
	return counted_delete(e, e->skel->maps.once_allow, &e->st.once_entries, &k);
}

_Static_assert(SHK_EBPF_EXEC_ONCE_ARGS_MAX == SHK_BPF_ARGS_LEN - 1, "the kernel compares at most this");

/* The entry (argv zero-padded) and its key: cgroup, image and the hash of
 * the argv (see struct shk_bpf_exec_key); EINVAL for what no exec can carry. */
static int exec_entry(const struct shk_ebpf_exec_key *x, const char *args, size_t args_len,
		      struct shk_bpf_exec_key *ret_k, struct shk_bpf_exec_once *ret_v)
{
	if (!x->cgroup_id || !args_len)
		return -EINVAL;
	if (args_len > SHK_EBPF_EXEC_ONCE_ARGS_MAX)
		return -E2BIG;
	memset(ret_v, 0, sizeof(*ret_v));
	ret_v->args_len = (uint32_t)args_len;
	memcpy(ret_v->args, args, args_len);
	memset(ret_k, 0, sizeof(*ret_k));
	ret_k->cgroup_id = x->cgroup_id;
	ret_k->dev = x->dev;
	ret_k->ino = x->ino;
	ret_k->args_hash = shk_bpf_args_hash((const __u64 *)(const void *)ret_v->args);
	return 0;
}

int shk_ebpf_allow_exec_once(shk_ebpf *e, const struct shk_ebpf_exec_key *x, const char *args,
			     size_t args_len, uint64_t digest)
{
	struct shk_bpf_exec_once v;
	struct shk_bpf_exec_key k;
	int r = exec_entry(x, args, args_len, &k, &v);

	if (r < 0)
		return r;
	v.digest = digest;
	return counted_update(e, e->skel->maps.exec_once, &e->st.exec_once_entries, &k, &v,
			      BPF_NOEXIST);
}

int shk_ebpf_revoke_exec_once(shk_ebpf *e, const struct shk_ebpf_exec_key *x, const char *args,
			      size_t args_len)
{
	struct shk_bpf_exec_once v;
	struct shk_bpf_exec_key k;
	int r = exec_entry(x, args, args_len, &k, &v);

	if (r < 0)
		return r;
	/* ENOENT: an exec took it first (its event is on the way) */
	return counted_delete(e, e->skel->maps.exec_once, &e->st.exec_once_entries, &k);
}

int shk_ebpf_deny_tool(shk_ebpf *e, uint32_t tool_id, bool deny)
{
	uint32_t one = 1;
	int r;

	if (!deny) {
		r = counted_delete(e, e->skel->maps.deny_tool, &e->st.tool_entries, &tool_id);
		return r == -ENOENT ? 0 : r;
	}
	return counted_update(e, e->skel->maps.deny_tool, &e->st.tool_entries, &tool_id, &one, BPF_ANY);
}

int shk_ebpf_set_breaker(shk_ebpf *e, bool open)
{
	uint32_t old = e->st.breaker_open;
	int r;

	e->st.breaker_open = open;
	r = write_state(e);
	if (r < 0)
		e->st.breaker_open = old;
	return r;
}

int shk_ebpf_poll(shk_ebpf *e, int timeout_ms, shk_ebpf_event_fn fn, void *userdata)
{
	int r;

	e->fn = fn;
	e->userdata = userdata;
	r = ring_buffer__poll(e->rb, timeout_ms);
	/* Allowed calls do not always wake us up (see wakeup_flags()): collect them. */
	if (r >= 0) {
		int more = ring_buffer__consume(e->rb);

		r = more < 0 ? more : r + more;
	}
	e->fn = NULL;
	e->userdata = NULL;
	if (r == -EINTR)
		return 0;
	return r;
}

int shk_ebpf_ring_fd(const shk_ebpf *e)
{
	return ring_buffer__epoll_fd(e->rb);
}

int shk_ebpf_stats(const shk_ebpf *e, struct shk_ebpf_stats *ret_stats)
{
	int ncpu = libbpf_num_possible_cpus();
	_cleanup_free_ uint64_t *vals = NULL;
	uint32_t zero = 0, one = 1, failed = 0;

	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	memset(ret_stats, 0, sizeof(*ret_stats));
	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.drops), &zero, vals) < 0)
		return -errno;
	for (int i = 0; i < ncpu; i++)
		ret_stats->kernel_drops += vals[i];
	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.drops), &one, vals) < 0)
		return -errno;
	for (int i = 0; i < ncpu; i++)
		ret_stats->refused_unreported += vals[i];
	ret_stats->delivered = e->delivered;
	ret_stats->malformed = e->malformed;
	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.mark_failed), &zero, &failed) < 0)
		return -errno;
	ret_stats->listeners_unmarked = failed;
	ret_stats->netns_unentered = e->netns_unentered;
	ret_stats->netns_unentered_errno = e->netns_errno;
	return 0;
}
