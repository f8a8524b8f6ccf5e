/* SPDX-License-Identifier: MIT */
/*
 * Policy v1 matching. Pure: no syscalls, no clock, no heap. It runs while a
 * syscall of the agent is held, so it must also be bounded: globs are NFA
 * simulations (policy_glob.c), everything else is a linear scan of the rules.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/policy_internal.h"

static int set_tool(shk_policy_match *m, const char *prefix, const char *name, size_t len)
{
	size_t plen = strlen(prefix);

	if (plen + len + 1 > sizeof(m->tool))
		return -ENAMETOOLONG;
	memcpy(m->tool, prefix, plen);
	memcpy(m->tool + plen, name, len);
	m->tool[plen + len] = 0;
	return 0;
}

static void set_rule(shk_policy_match *m, long index, const char *name, shk_action action,
                     double cost, bool no_repeat_guard)
{
	m->rule_index = index;
	m->rule_name = name;
	m->action = action;
	m->cost_usd = cost;
	m->no_repeat_guard = no_repeat_guard;
}

static bool exec_rule_matches(const struct exec_rule *e, const char *path, size_t plen,
                              const char *const *argv, size_t argc)
{
	if (e->path && !shk_glob_match(&e->path_glob, path, plen))
		return false;
	return !e->has_argv || shk_argv_match(e->argv, e->argc, argv, argc);
}

int shk_policy_match_exec(const shk_policy *p, const char *path, const char *const *argv,
                          size_t argc, shk_policy_match *ret)
{
	const char *base;
	size_t plen;

	if (!p || !path || !ret || (argc && !argv))
		return -EINVAL;
	for (size_t i = 0; i < argc; i++)
		if (!argv[i])
			return -EINVAL;
	plen = strlen(path);
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!*base)
		return -EINVAL; /* nothing can be executed under this name */
	for (size_t i = 0; i < p->nexec; i++) {
		const struct exec_rule *e = &p->exec[i];

		if (!exec_rule_matches(e, path, plen, argv, argc))
			continue;
		set_rule(ret, (long)i, e->name, e->action, e->cost_usd, e->no_repeat_guard);
		if (e->tool)
			return set_tool(ret, "", e->tool, strlen(e->tool));
		return set_tool(ret, "exec:", base, strlen(base));
	}
	set_rule(ret, -1, NULL, p->exec_default, 0, false);
	return set_tool(ret, "exec:", base, strlen(base));
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, net, full))
		return false;
	return rest == 0 || ((a[full] ^ net[full]) & (0xff00 >> rest) & 0xff) == 0;
}

static bool ip_rule_matches(const struct net_rule *r, const shk_net_addr *a,
                            const struct shk_net_dest *d)
{
	if (d->port < r->port_lo || d->port > r->port_hi)
		return false;
	if (r->proto != SHK_NET_PROTO_ANY && r->proto != d->proto)
		return false;
	if (r->sel == SHK_NET_SEL_CIDR)
		return r->cidr.family == a->family && prefix_match(a->addr, r->cidr.addr, r->prefix);
	for (size_t k = 0; k < r->naddrs; k++)
		if (r->addrs[k].family == a->family &&
		    !memcmp(r->addrs[k].addr, a->addr, a->family == SHK_NET_INET4 ? 4 : 16))
			return true;
	return false;
}

static bool net_rule_matches(const struct net_rule *r, const shk_net_addr *a,
                             const struct shk_net_dest *d)
{
	if (!(r->ops & d->op))
		return false;
	if (r->sel == SHK_NET_SEL_UNIX)
		return d->family == SHK_NET_UNIX && d->unix_abstract == r->unix_abstract &&
		       (shk_glob_match(&r->unix_glob, d->unix_name ? d->unix_name : "", d->unix_len) ||
		        (r->unix_alias.tok &&
		         shk_glob_match(&r->unix_alias, d->unix_name ? d->unix_name : "", d->unix_len)));
	return d->family != SHK_NET_UNIX && ip_rule_matches(r, a, d);
}

static const char *default_net_tool(shk_net_op op)
{
	switch (op) {
	case SHK_NET_OP_CONNECT: return "net:connect";
	case SHK_NET_OP_SEND: return "net:sendto";
	case SHK_NET_OP_BIND: return "net:bind";
	case SHK_NET_OP_LISTEN: return "net:listen";
	default: return NULL;
	}
}

/* An IPv4 peer reached through an IPv6 socket is still that IPv4 peer. A
 * connect or send to the unspecified address reaches loopback (the kernel
 * routes 0.0.0.0 to 127.0.0.1 and :: to ::1), so it is matched as that;
 * for bind and listen it means "every address" and stays as it is. */
static shk_net_addr normalised(const struct shk_net_dest *d)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t zero[16];
	bool peer = d->op == SHK_NET_OP_CONNECT || d->op == SHK_NET_OP_SEND;
	shk_net_addr a = { .family = d->family };

	memcpy(a.addr, d->addr, d->family == SHK_NET_INET4 ? 4 : 16);
	if (d->family == SHK_NET_INET6 && !memcmp(d->addr, mapped, 12)) {
		memset(a.addr, 0, sizeof(a.addr));
		memcpy(a.addr, d->addr + 12, 4);
		a.family = SHK_NET_INET4;
	}
	if (peer && a.family == SHK_NET_INET4 && !memcmp(a.addr, zero, 4))
		a.addr[0] = 127, a.addr[3] = 1;
	else if (peer && a.family == SHK_NET_INET6 && !memcmp(a.addr, zero, 16))
		a.addr[15] = 1;
	return a;
}

int shk_policy_match_net(const shk_policy *p, const struct shk_net_dest *d,
                         shk_policy_match *ret)
{
	const char *deftool;
	shk_net_addr a = { 0 };

	if (!p || !d || !ret)
		return -EINVAL;
	deftool = default_net_tool(d->op);
	if (!deftool)
		return -EINVAL;
	if (d->family == SHK_NET_UNIX) {
		if (d->unix_len && !d->unix_name)
			return -EINVAL;
	} else if (d->family == SHK_NET_INET4 || d->family == SHK_NET_INET6) {
		a = normalised(d);
	} else {
		return -EINVAL;
	}
	for (size_t i = 0; i < p->nnet; i++) {
		const struct net_rule *r = &p->net[i];

		if (!net_rule_matches(r, &a, d))
			continue;
		set_rule(ret, (long)i, r->name, r->action, r->cost_usd, r->no_repeat_guard);
		return set_tool(ret, "", r->tool ? r->tool : deftool,
				strlen(r->tool ? r->tool : deftool));
	}
	set_rule(ret, -1, NULL, p->net_default, 0, false);
	return set_tool(ret, "", deftool, strlen(deftool));
}
