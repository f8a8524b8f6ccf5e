/* SPDX-License-Identifier: MIT */
/*
 * Built without the BPF toolchain: kernel enforcement is not available, and
 * every entry point says so with -EOPNOTSUPP instead of pretending.
 */
#include <errno.h>

#pragma GCC diagnostic ignored "-Wunused-parameter"

#include <shackle/ebpf.h>

int shk_ebpf_open(const struct shk_ebpf_opts *opts, shk_ebpf **ret_ebpf)
{
	(void)opts;
	*ret_ebpf = NULL;
	return -EOPNOTSUPP;
}

void shk_ebpf_free(shk_ebpf *e)
{
	(void)e;
}

int shk_ebpf_exec_path(const shk_ebpf *e, const char **ret_why)
{
	(void)e;
	if (ret_why)
		*ret_why = shk_ebpf_off_reason();
	return SHK_EBPF_EXEC_NONE;
}

#define OFF(...) { return -EOPNOTSUPP; }
int shk_ebpf_set_net_rules(shk_ebpf *e, const struct shk_ebpf_net_rule *rules, size_t n) OFF()
int shk_ebpf_update_net_rules(shk_ebpf *e, const struct shk_ebpf_net_rule *rules, size_t n) OFF()
int shk_ebpf_set_exec_rule(shk_ebpf *e, const char *path, uint8_t action) OFF()
int shk_ebpf_attach(shk_ebpf *e, int cgroup_fd) OFF()
int shk_ebpf_detach(shk_ebpf *e) OFF()
int shk_ebpf_pin(shk_ebpf *e, const char *dir) OFF()
int shk_ebpf_unpin(const char *dir, char *ret_entry, size_t entry_len) OFF()
int shk_ebpf_deny_dest(shk_ebpf *e, const struct shk_ebpf_dest *d, uint32_t why) OFF()
int shk_ebpf_undeny_dest(shk_ebpf *e, const struct shk_ebpf_dest *d) OFF()
int shk_ebpf_deny_tool(shk_ebpf *e, uint32_t tool_id, bool deny) OFF()
int shk_ebpf_set_breaker(shk_ebpf *e, bool open) OFF()
int shk_ebpf_allow_once(shk_ebpf *e, const struct shk_ebpf_dest *d, uint64_t digest) OFF()
int shk_ebpf_revoke_once(shk_ebpf *e, const struct shk_ebpf_dest *d) OFF()
int shk_ebpf_allow_exec_once(shk_ebpf *e, const struct shk_ebpf_exec_key *x, const char *args,
			     size_t args_len, uint64_t digest) OFF()
int shk_ebpf_revoke_exec_once(shk_ebpf *e, const struct shk_ebpf_exec_key *x, const char *args,
                              size_t args_len) OFF()
int shk_ebpf_poll(shk_ebpf *e, int timeout_ms, shk_ebpf_event_fn fn, void *userdata) OFF()
int shk_ebpf_ring_fd(const shk_ebpf *e) OFF()
int shk_ebpf_stats(const shk_ebpf *e, struct shk_ebpf_stats *ret_stats) OFF()
