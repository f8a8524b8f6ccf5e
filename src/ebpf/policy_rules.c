/* SPDX-License-Identifier: MIT */
/*
 * A policy's network section as kernel rules. Every IP rule keeps its place:
 * the kernel's first match over this subset equals the policy's first match
 * for any IP destination, because the rules left out (unix sockets, listen
 * only) cannot match one.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <shackle/ebpf.h>
#include <shackle/policy.h>

static uint8_t proto_of(shk_net_proto p)
{
	return p == SHK_NET_PROTO_TCP ? IPPROTO_TCP : p == SHK_NET_PROTO_UDP ? IPPROTO_UDP : 0;
}

static void put(struct shk_ebpf_net_rule *r, const shk_net_rule_info *info, size_t index,
		const shk_net_addr *a, unsigned prefix)
{
	memset(r, 0, sizeof(*r));
	r->family = a->family == SHK_NET_INET4 ? AF_INET : AF_INET6;
	memcpy(r->addr, a->addr, 16);
	r->prefix = prefix;
	r->port_lo = info->port_lo;
	r->port_hi = info->port_hi;
	r->proto = proto_of(info->proto);
	r->ops = (uint8_t)(info->ops & SHK_EBPF_OP_ALL);
	r->action = (uint8_t)info->action;
	r->tool_id = (uint32_t)index;
}

int shk_ebpf_rules_from_policy(const struct shk_policy *policy,
			       struct shk_ebpf_net_rule **ret_rules, size_t *ret_n,
			       size_t *ret_skipped)
{
	size_t nrules = shk_policy_net_rule_count(policy), cap = 0, n = 0, skipped = 0;
	struct shk_ebpf_net_rule *out = NULL;
	shk_net_rule_info info;

	for (size_t i = 0; i < nrules; i++) {
		if (shk_policy_net_rule(policy, i, &info) < 0)
			return -EINVAL;
		cap += info.selector == SHK_NET_SEL_HOST ? info.naddrs : 1;
	}
	if (cap && !(out = calloc(cap, sizeof(*out))))
		return -ENOMEM;
	for (size_t i = 0; i < nrules; i++) {
		(void)shk_policy_net_rule(policy, i, &info);
		/* No sock_addr hook sees unix sockets or listen(). */
		if (info.selector == SHK_NET_SEL_UNIX || !(info.ops & SHK_EBPF_OP_ALL)) {
			skipped++;
			continue;
		}
		if (info.selector == SHK_NET_SEL_CIDR) {
			put(&out[n++], &info, i, &info.cidr, info.prefix);
			continue;
		}
		for (size_t k = 0; k < info.naddrs; k++) /* unresolved host: matches nothing */
			put(&out[n++], &info, i, &info.addrs[k],
			    info.addrs[k].family == SHK_NET_INET4 ? 32 : 128);
	}
	*ret_rules = out;
	*ret_n = n;
	if (ret_skipped)
		*ret_skipped = skipped;
	return 0;
}
