/* SPDX-License-Identifier: MIT */
/* Policy v1: the "net" section, CIDRs, ports, protocols and operations. */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy_internal.h"

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool parse_uint(const char *s, size_t len, unsigned long max, unsigned long *ret)
{
	unsigned long v = 0;

	if (len == 0 || len > 5 || (len > 1 && s[0] == '0'))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return false;
	*ret = v;
	return true;
}

int shk_policy_parse_cidr(const char *s, shk_net_addr *ret_addr, unsigned *ret_prefix,
                          const char **ret_why)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long prefix, max;
	shk_net_addr a = { 0 };

	if (alen == 0 || alen >= sizeof(addr)) {
		*ret_why = "is not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	memcpy(addr, s, alen);
	addr[alen] = 0;
	if (inet_pton(AF_INET, addr, a.addr) == 1) {
		a.family = SHK_NET_INET4;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, a.addr) == 1) {
		a.family = SHK_NET_INET6;
		max = 128;
	} else {
		*ret_why = "is not an IPv4 or IPv6 address";
		return -EINVAL;
	}
	prefix = max;
	if (slash && !parse_uint(slash + 1, strlen(slash + 1), max, &prefix)) {
		*ret_why = max == 32 ? "has a bad prefix length (0 to 32 for IPv4)"
				     : "has a bad prefix length (0 to 128 for IPv6)";
		return -EINVAL;
	}
	for (unsigned long bit = prefix; bit < max; bit++)
		if (a.addr[bit / 8] & (0x80 >> (bit % 8))) {
			*ret_why = "has host bits set (write the network address)";
			return -EINVAL;
		}
	/* ::ffff:a.b.c.d/n (n >= 96) is the IPv4 network a.b.c.d/(n-96): destinations are
	 * normalised the same way before matching. */
	if (a.family == SHK_NET_INET6 && prefix >= 96 && !memcmp(a.addr, v4mapped_prefix, 12)) {
		memmove(a.addr, a.addr + 12, 4);
		memset(a.addr + 4, 0, 12);
		a.family = SHK_NET_INET4;
		prefix -= 96;
	}
	*ret_addr = a;
	*ret_prefix = (unsigned)prefix;
	return 0;
}

static int parse_cidr_value(struct pctx *ctx, json_t *v, struct net_rule *n)
{
	const char *why = NULL;

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected a string such as \"10.0.0.0/8\", got %s",
				       shk_policy_type_name(v));
	if (shk_policy_parse_cidr(json_string_value(v), &n->cidr, &n->prefix, &why) < 0)
		return shk_policy_fail(ctx, false, "\"%.60s\" %s", json_string_value(v), why);
	return 0;
}

static int parse_host(struct pctx *ctx, json_t *v, struct net_rule *n)
{
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected a host name, got %s",
				       shk_policy_type_name(v));
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0 || len > 253)
		return shk_policy_fail(ctx, false, "a host name has 1 to 253 characters");
	for (size_t i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:", s[i]))
			return shk_policy_fail(ctx, false, "\"%.60s\" is not a host name (no wildcards, "
					       "ports or URLs; use \"port\" for the port)", s);
	if (s[0] == '.' || s[0] == '-')
		return shk_policy_fail(ctx, false, "\"%.60s\" is not a host name", s);
	if (strchr(s, ':')) {
		uint8_t a6[16];

		/* Only an IPv6 literal may carry colons: "host:port" is a mistake. */
		if (inet_pton(AF_INET6, s, a6) != 1)
			return shk_policy_fail(ctx, false, "\"%.60s\" is not a host name or IPv6 "
					       "address (use \"port\" for the port)", s);
	}
	n->host = strdup(s);
	return n->host ? 0 : -ENOMEM;
}

static int parse_unix(struct pctx *ctx, json_t *v, struct net_rule *n)
{
	const char *s = json_string_value(v);
	int r;

	if (!s)
		return shk_policy_fail(ctx, false, "expected a socket path or \"@name\", got %s",
				       shk_policy_type_name(v));
	if (s[0] != '/' && s[0] != '@' && s[0] != '*')
		return shk_policy_fail(ctx, false, "must be an absolute path or \"@abstract-name\"");
	if (s[0] == '@' && !s[1])
		return shk_policy_fail(ctx, false, "an abstract name needs at least one character");
	n->unix_abstract = s[0] == '@';
	if (!n->unix_abstract)
		return shk_policy_parse_glob(ctx, v, SHK_GLOB_PATH, &n->unix_glob, &n->unix_src);
	{
		json_t *name = json_string(s + 1);
		char *tmp = NULL;

		if (!name)
			return -ENOMEM;
		r = shk_policy_parse_glob(ctx, name, SHK_GLOB_PATH, &n->unix_glob, &tmp);
		json_decref(name);
		free(tmp);
	}
	if (r < 0)
		return r;
	n->unix_src = strdup(s);
	return n->unix_src ? 0 : -ENOMEM;
}

static int parse_port(struct pctx *ctx, json_t *v, struct net_rule *n)
{
	unsigned long lo, hi;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || i > 65535)
			return shk_policy_fail(ctx, false, "%lld is not a port (0 to 65535)",
					       (long long)i);
		n->port_lo = n->port_hi = (uint16_t)i;
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v), *dash = strchr(s, '-');

		if (!dash && parse_uint(s, strlen(s), 65535, &lo))
			hi = lo;
		else if (!dash || !parse_uint(s, (size_t)(dash - s), 65535, &lo) ||
			 !parse_uint(dash + 1, strlen(dash + 1), 65535, &hi))
			return shk_policy_fail(ctx, false, "\"%.40s\" is not a port or a range "
					       "\"LOW-HIGH\" (0 to 65535)", s);
		if (lo > hi)
			return shk_policy_fail(ctx, false, "port range \"%.40s\" is reversed", s);
		n->port_lo = (uint16_t)lo;
		n->port_hi = (uint16_t)hi;
		return 0;
	}
	return shk_policy_fail(ctx, false, "expected a port number or a range \"LOW-HIGH\", got %s",
			       shk_policy_type_name(v));
}

static int parse_proto(struct pctx *ctx, json_t *v, struct net_rule *n)
{
	static const shk_net_proto all[] = { SHK_NET_PROTO_ANY, SHK_NET_PROTO_TCP,
					     SHK_NET_PROTO_UDP };

	for (size_t i = 0; i < 3 && json_is_string(v); i++)
		if (!strcmp(json_string_value(v), shk_net_proto_name(all[i]))) {
			n->proto = all[i];
			return 0;
		}
	return shk_policy_fail(ctx, false, "expected \"tcp\", \"udp\" or \"any\"");
}

static int op_bits(const char *s, unsigned *ret)
{
	static const shk_net_op all[] = { SHK_NET_OP_CONNECT, SHK_NET_OP_SEND, SHK_NET_OP_BIND,
					  SHK_NET_OP_LISTEN, SHK_NET_OP_ANY };

	for (size_t i = 0; s && i < 5; i++)
		if (!strcmp(s, shk_net_op_name(all[i]))) {
			*ret |= all[i];
			return 0;
		}
	return -EINVAL;
}

static int parse_op(struct pctx *ctx, json_t *v, struct net_rule *n)
{
	static const char expected[] = "expected \"connect\", \"send\", \"bind\", \"listen\", "
				       "\"any\" or a list of them";
	size_t i;
	json_t *item;

	n->ops = 0;
	if (!json_is_array(v))
		return op_bits(json_string_value(v), &n->ops) ? shk_policy_fail(ctx, false, "%s", expected)
							       : 0;
	if (json_array_size(v) == 0)
		return shk_policy_fail(ctx, false, "%s", expected);
	json_array_foreach(v, i, item) {
		if (op_bits(json_string_value(item), &n->ops) < 0) {
			int r;

			shk_policy_push_index(ctx, i);
			r = shk_policy_fail(ctx, false, "%s", expected);
			shk_policy_pop(ctx);
			return r;
		}
	}
	return 0;
}

/* Exactly one destination selector; the message points at the second one. */
static int parse_selector(struct pctx *ctx, json_t *o, struct net_rule *n)
{
	static const char *const sel[] = { "host", "cidr", "unix" };
	const char *first = NULL;

	for (size_t i = 0; i < 3; i++) {
		if (!json_object_get(o, sel[i]))
			continue;
		if (first)
			return shk_policy_fail_at(ctx, sel[i], true, "\"%s\" cannot be combined with "
						  "\"%s\" (one destination per rule)", sel[i], first);
		first = sel[i];
		n->sel = (shk_net_selector)(SHK_NET_SEL_HOST + i);
	}
	if (!first)
		return shk_policy_fail(ctx, false, "a net rule needs exactly one destination: "
				       "\"host\", \"cidr\" or \"unix\"");
	if (n->sel == SHK_NET_SEL_UNIX) {
		if (json_object_get(o, "port"))
			return shk_policy_fail_at(ctx, "port", true,
						  "\"port\" does not apply to a unix socket");
		if (json_object_get(o, "proto"))
			return shk_policy_fail_at(ctx, "proto", true,
						  "\"proto\" does not apply to a unix socket");
	}
	return 0;
}

static int parse_net_rule(struct pctx *ctx, json_t *o, void *rule)
{
	struct net_rule *n = rule;
	static const char *const known[] = { "name", "tool", "host", "cidr", "unix", "port",
					     "proto", "op", "action", "cost_usd", "repeat_guard", NULL };
	int r;

	n->port_hi = 65535;
	n->ops = SHK_NET_OP_ANY;
	if (!json_is_object(o))
		return shk_policy_fail(ctx, false, "a rule is an object, got %s",
				       shk_policy_type_name(o));
	if ((r = shk_policy_check_keys(ctx, o, known)) < 0)
		return r;
	if (!json_object_get(o, "action"))
		return shk_policy_fail(ctx, false, "missing required field \"action\"");
	if ((r = parse_selector(ctx, o, n)) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "name", shk_policy_parse_name(ctx, v_, &n->name))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "tool", shk_policy_parse_tool(ctx, v_, &n->tool))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "host", parse_host(ctx, v_, n))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "cidr", parse_cidr_value(ctx, v_, n))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "unix", parse_unix(ctx, v_, n))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "port", parse_port(ctx, v_, n))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "proto", parse_proto(ctx, v_, n))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "op", parse_op(ctx, v_, n))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "action", shk_policy_parse_action(ctx, v_, &n->action))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "cost_usd", shk_policy_parse_cost(ctx, v_, &n->cost_usd))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "repeat_guard",
	                         shk_policy_parse_repeat_guard(ctx, v_, &n->no_repeat_guard))) < 0)
		return r;
	return 0;
}

int shk_policy_parse_net(struct pctx *ctx, json_t *sec, struct shk_policy *p)
{
	json_t *rules;
	void *arr = NULL;
	int r;

	p->net_default = SHK_ACTION_DENY;
	shk_policy_push(ctx, "net");
	r = shk_policy_parse_section(ctx, "net", sec, &p->net_default, &p->net_default_implicit,
				     &rules);
	if (r < 0 || !rules)
		goto out;
	r = shk_policy_parse_rules(ctx, rules, sizeof(*p->net), offsetof(struct net_rule, name),
				   parse_net_rule, &arr, &p->nnet);
	p->net = arr;
out:
	shk_policy_pop(ctx);
	return r;
}

size_t shk_policy_net_rule_count(const shk_policy *p)
{
	return p->nnet;
}

int shk_policy_net_rule(const shk_policy *p, size_t i, shk_net_rule_info *ret)
{
	const struct net_rule *n;

	if (i >= p->nnet)
		return -ERANGE;
	n = &p->net[i];
	*ret = (shk_net_rule_info){
		.name = n->name,
		.tool = n->tool,
		.selector = n->sel,
		.host = n->host,
		.addrs = n->addrs,
		.naddrs = n->naddrs,
		.cidr = n->cidr,
		.prefix = n->prefix,
		.unix_pattern = n->unix_src,
		.unix_abstract = n->unix_abstract,
		.port_lo = n->port_lo,
		.port_hi = n->port_hi,
		.proto = n->proto,
		.ops = n->ops,
		.action = n->action,
		.cost_usd = n->cost_usd,
		.repeat_guard = !n->no_repeat_guard,
	};
	return 0;
}

shk_action shk_policy_net_default(const shk_policy *p)
{
	return p->net_default;
}

bool shk_policy_net_default_implicit(const shk_policy *p)
{
	return p->net_default_implicit;
}

bool shk_policy_net_may_allow_ip(const shk_policy *p)
{
	if (p->net_default != SHK_ACTION_DENY)
		return true;
	for (size_t i = 0; i < p->nnet; i++) {
		const struct net_rule *n = &p->net[i];

		if (n->sel != SHK_NET_SEL_UNIX && n->action != SHK_ACTION_DENY &&
		    (n->ops & (SHK_NET_OP_CONNECT | SHK_NET_OP_SEND)))
			return true;
	}
	return false;
}

int shk_policy_set_unix_alias(shk_policy *p, size_t i, const char *pattern)
{
	struct net_rule *rule;
	struct shk_glob g = { 0 };
	const char *why = NULL;
	int r;

	if (!p || i >= p->nnet)
		return -ERANGE;
	rule = &p->net[i];
	if (rule->sel != SHK_NET_SEL_UNIX || rule->unix_abstract || !pattern || pattern[0] != '/')
		return -EINVAL;
	if ((r = shk_glob_compile(&g, pattern, strlen(pattern), SHK_GLOB_PATH, &why)) < 0)
		return r;
	shk_glob_free(&rule->unix_alias);
	rule->unix_alias = g;
	return 0;
}

int shk_policy_set_host_addrs(shk_policy *p, size_t i, const shk_net_addr *addrs, size_t n)
{
	struct net_rule *rule;
	shk_net_addr *copy = NULL;

	if (!p || i >= p->nnet)
		return -ERANGE;
	rule = &p->net[i];
	if (rule->sel != SHK_NET_SEL_HOST || (n && !addrs))
		return -EINVAL;
	if (n) {
		copy = calloc(n, sizeof(*copy));
		if (!copy)
			return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		copy[k] = addrs[k];
		if (copy[k].family == SHK_NET_INET6 && !memcmp(copy[k].addr, v4mapped_prefix, 12)) {
			memmove(copy[k].addr, copy[k].addr + 12, 4);
			memset(copy[k].addr + 4, 0, 12);
			copy[k].family = SHK_NET_INET4;
		}
		if (copy[k].family != SHK_NET_INET4 && copy[k].family != SHK_NET_INET6) {
			free(copy);
			return -EINVAL;
		}
		if (copy[k].family == SHK_NET_INET4)
			memset(copy[k].addr + 4, 0, 12);
	}
	free(rule->addrs);
	rule->addrs = copy;
	rule->naddrs = n;
	return 0;
}

const char *shk_net_op_name(shk_net_op op)
{
	switch (op) {
	case SHK_NET_OP_CONNECT: return "connect";
	case SHK_NET_OP_SEND: return "send";
	case SHK_NET_OP_BIND: return "bind";
	case SHK_NET_OP_LISTEN: return "listen";
	case SHK_NET_OP_ANY: return "any";
	}
	return "?";
}

const char *shk_net_proto_name(shk_net_proto proto)
{
	switch (proto) {
	case SHK_NET_PROTO_ANY: return "any";
	case SHK_NET_PROTO_TCP: return "tcp";
	case SHK_NET_PROTO_UDP: return "udp";
	case SHK_NET_PROTO_OTHER: return "other";
	}
	return "?";
}
