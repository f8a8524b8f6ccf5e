/* SPDX-License-Identifier: MIT */
/*
 * Network rules -> LPM trie entries.
 *
 * An LPM trie answers one lookup with the longest prefix that contains the
 * address, but the policy's semantics is "first rule in order that matches
 * address, port, protocol and operation". Every prefix containing an address
 * is an ancestor of the longest one (prefixes containing one point are
 * nested), so storing at each distinct prefix the ordered list of all rules
 * whose prefix contains it makes one lookup plus a short scan exact.
 *
 * Pure: no syscalls, no allocation.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "ebpf/netrules.h"

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

int shk_ebpf_net_rule_check(const struct shk_ebpf_net_rule *r)
{
	if (r->family == AF_INET) {
		if (r->prefix > 32)
			return -EINVAL;
	} else if (r->family == AF_INET6) {
		if (r->prefix > 128)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (r->port_lo > r->port_hi)
		return -EINVAL;
	if (r->proto != 0 && r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP)
		return -EINVAL;
	if (r->ops == 0 || (r->ops & ~SHK_EBPF_OP_ALL))
		return -EINVAL;
	if (r->action > SHK_EBPF_HITL)
		return -EINVAL;
	return 0;
}

static void mask(uint8_t *addr, unsigned len_bytes, unsigned prefix)
{
	for (unsigned i = 0; i < len_bytes; i++) {
		unsigned bits = prefix > i * 8 ? prefix - i * 8 : 0;

		if (bits < 8)
			addr[i] &= (uint8_t)(0xff00u >> bits);
	}
}

/* The family, prefix and masked address a rule means. */
static void normalise(const struct shk_ebpf_net_rule *r, int *family, unsigned *prefix,
		      uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (r->family == AF_INET6 && r->prefix >= 96 && !memcmp(r->addr, v4mapped, 12)) {
		*family = AF_INET;
		*prefix = r->prefix - 96;
		memcpy(addr, r->addr + 12, 4);
	} else {
		*family = r->family;
		*prefix = r->prefix;
		memcpy(addr, r->addr, r->family == AF_INET ? 4 : 16);
	}
	mask(addr, *family == AF_INET ? 4 : 16, *prefix);
}

/* Does prefix (fam, plen, net) contain the prefix of entry e? */
static bool contains(int fam, unsigned plen, const uint8_t net[16],
		     const struct shk_ebpf_lpm_entry *e)
{
	uint8_t a[16];

	if (fam != e->family || plen > e->prefix)
		return false;
	memcpy(a, e->addr, 16);
	mask(a, fam == AF_INET ? 4 : 16, plen);
	return !memcmp(a, net, 16);
}

int shk_ebpf_compile_net_rules(const struct shk_ebpf_net_rule *rules, size_t n,
			       struct shk_ebpf_lpm_entry *out, size_t *ret_n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++) {
		struct shk_ebpf_lpm_entry *e = &out[count];
		bool seen = false;

		if (shk_ebpf_net_rule_check(&rules[i]) < 0) {
			*ret_n = i;
			return -EINVAL;
		}
		memset(e, 0, sizeof(*e));
		normalise(&rules[i], &e->family, &e->prefix, e->addr);
		for (size_t j = 0; j < count && !seen; j++)
			seen = out[j].family == e->family && out[j].prefix == e->prefix &&
			       !memcmp(out[j].addr, e->addr, 16);
		if (!seen)
			count++;
	}
	for (size_t k = 0; k < count; k++) {
		struct shk_bpf_rule_set *set = &out[k].set;

		for (size_t i = 0; i < n; i++) {
			const struct shk_ebpf_net_rule *r = &rules[i];
			struct shk_bpf_rule *br;
			unsigned plen;
			uint8_t net[16];
			int fam;

			normalise(r, &fam, &plen, net);
			if (!contains(fam, plen, net, &out[k]))
				continue;
			if (set->count >= SHK_BPF_RULES_PER_PREFIX) {
				*ret_n = i;
				return -E2BIG;
			}
			br = &set->rules[set->count++];
			br->index = (uint32_t)i;
			br->tool_id = r->tool_id;
			br->port_lo = r->port_lo;
			br->port_hi = r->port_hi;
			br->proto = r->proto;
			br->ops = r->ops;
			br->action = r->action;
		}
	}
	*ret_n = count;
	return 0;
}
