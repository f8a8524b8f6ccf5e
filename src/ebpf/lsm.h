/* SPDX-License-Identifier: MIT */
/*
 * bpf/lsm.bpf.c on top of a loaded bpf/shackle.bpf.c (internal to src/ebpf;
 * docs/ebpf.md "Exec"): the LSM program shares the main object's exec rules,
 * breaker state, attached cgroup, ring and drop counters.
 */
#ifndef SHACKLE_EBPF_LSM_H
#define SHACKLE_EBPF_LSM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shackle_bpf;
struct lsm_bpf;

/*
 * When the probe says BPF LSM is usable here, load the LSM object on m's maps
 * and attach lsm/bprm_check_security. 0 and *ret_lsm on success; otherwise a
 * negative errno, *ret_lsm NULL and why says what failed (the probe's reason
 * when it said no). Nothing is left loaded on failure.
 */
int shk_ebpf_lsm_attach(struct shackle_bpf *m, uint8_t exec_default, struct lsm_bpf **ret_lsm,
			char *why, size_t len);
/* Free (closing the link detaches it unless pinned; unpin: detach it anyway). NULL: no-op. */
void shk_ebpf_lsm_free(struct lsm_bpf *l, bool unpin);
/* Pin the LSM link as dir/link_shk_lsm_exec. */
int shk_ebpf_lsm_pin(struct lsm_bpf *l, const char *dir);

#endif
