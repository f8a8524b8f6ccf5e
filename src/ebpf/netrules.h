/* SPDX-License-Identifier: MIT */
/* Compiling network rules into LPM trie entries (pure; see netrules.c). */
#ifndef SHACKLE_EBPF_NETRULES_H
#define SHACKLE_EBPF_NETRULES_H

#include <stddef.h>

#include <shackle/ebpf.h>

#include "shackle.h" /* bpf/shackle.h: the map value layout */

struct shk_ebpf_lpm_entry {
	int family;       /* AF_INET or AF_INET6 */
	unsigned prefix;
	uint8_t addr[16]; /* host bits zero */
	struct shk_bpf_rule_set set;
};

/*
 * One entry per distinct prefix; out must have room for n entries. -EINVAL
 * for a bad rule (*ret_n is then its index), -E2BIG when more than
 * SHK_BPF_RULES_PER_PREFIX rules cover one prefix (*ret_n: that rule).
 */
int shk_ebpf_compile_net_rules(const struct shk_ebpf_net_rule *rules, size_t n,
                               struct shk_ebpf_lpm_entry *out, size_t *ret_n);

#endif
