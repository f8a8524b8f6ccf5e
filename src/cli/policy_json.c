/* SPDX-License-Identifier: MIT */
/*
 * `shackle policy check|explain --json`: what the text output says, as one
 * canonical JSON document on stdout (members sorted, as every --json of
 * shackle). The field names follow the policy file's (docs/policy.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <shackle/canon.h>
#include <shackle/scope.h>

#include "cli/policy_json.h"

/* Members are set through set(): the first failure (ENOMEM) is kept and the
 * document is not printed, rather than printed with holes. */
struct jb {
	shk_doc *d;
	int err;
};

static shk_val *set(struct jb *b, shk_val *o, const char *k, shk_val *v)
{
	if (!b->err && (!o || !v || shk_object_set_str(o, k, v) < 0))
		b->err = -ENOMEM;
	return v;
}

static shk_val *str_or_null(struct jb *b, const char *s)
{
	return s ? shk_cstring(b->d, s) : shk_null(b->d);
}

static void append(struct jb *b, shk_val *arr, shk_val *v)
{
	if (!b->err && (!arr || !v || shk_array_append(arr, v) < 0))
		b->err = -ENOMEM;
}

static int emit(struct jb *b, const shk_val *root)
{
	char *text = NULL;
	size_t len = 0;
	int r = b->err ? b->err : shk_canon_dump(root, &text, &len);

	if (r == 0)
		printf("%s\n", text);
	free(text);
	shk_doc_free(b->d);
	return r;
}

static shk_val *guard_json(struct jb *b, const shk_guard_config *g)
{
	shk_val *o = shk_object(b->d);

	set(b, o, "budget_usd", shk_real(b->d, g->budget_usd));
	set(b, o, "max_repeat_calls", shk_int(b->d, g->max_repeat_calls));
	set(b, o, "error_amplification", shk_bool(b->d, g->error_amplification));
	set(b, o, "hitl_mode", shk_cstring(b->d, shk_hitl_mode_name(g->hitl_mode)));
	set(b, o, "hitl_budget_threshold", shk_real(b->d, g->hitl_budget_threshold));
	set(b, o, "hitl_timeout_s", shk_int(b->d, g->hitl_timeout_s));
	set(b, o, "window_max_calls", shk_int(b->d, g->window_max_calls));
	set(b, o, "window_duration_s", shk_int(b->d, g->window_duration_s));
	set(b, o, "max_total_calls", shk_int(b->d, (int64_t)g->max_total_calls));
	set(b, o, "trip_on_deny", shk_bool(b->d, g->trip_on_deny));
	return o;
}

/* name, tool, action, cost, repeat guard: what every rule has */
static shk_val *rule_json(struct jb *b, size_t i, const char *name, const char *tool, shk_action a,
                          double cost, bool repeat_guard)
{
	shk_val *o = shk_object(b->d);

	set(b, o, "index", shk_int(b->d, (int64_t)i));
	set(b, o, "name", str_or_null(b, name));
	set(b, o, "tool", str_or_null(b, tool));
	set(b, o, "action", shk_cstring(b->d, shk_action_name(a)));
	set(b, o, "cost_usd", shk_real(b->d, cost));
	set(b, o, "repeat_guard", shk_bool(b->d, repeat_guard));
	return o;
}

static shk_val *exec_json(struct jb *b, const shk_policy *p)
{
	shk_val *o = shk_object(b->d), *rules = set(b, o, "rules", shk_array(b->d));

	for (size_t i = 0; i < shk_policy_exec_rule_count(p); i++) {
		shk_exec_rule_info r;
		shk_val *ro, *argv;

		shk_policy_exec_rule(p, i, &r);
		ro = rule_json(b, i, r.name, r.tool, r.action, r.cost_usd, r.repeat_guard);
		set(b, ro, "path", str_or_null(b, r.path));
		argv = set(b, ro, "argv", r.has_argv ? shk_array(b->d) : shk_null(b->d));
		for (size_t k = 0; r.has_argv && k < r.argc; k++)
			append(b, argv, shk_cstring(b->d, r.argv[k]));
		append(b, rules, ro);
	}
	set(b, o, "default", shk_cstring(b->d, shk_action_name(shk_policy_exec_default(p))));
	set(b, o, "default_implicit", shk_bool(b->d, shk_policy_exec_default_implicit(p)));
	set(b, o, "loader_env", shk_cstring(b->d, shk_action_name(shk_policy_exec_loader_env(p))));
	set(b, o, "interp_env", shk_cstring(b->d, shk_action_name(shk_policy_exec_interp_env(p))));
	set(b, o, "interp_env_scope",
	    shk_cstring(b->d, shk_policy_exec_interp_scoped(p) ? "interpreter" : "any"));
	return o;
}

static shk_val *ops_json(struct jb *b, unsigned ops)
{
	static const shk_net_op all[] = { SHK_NET_OP_CONNECT, SHK_NET_OP_SEND, SHK_NET_OP_BIND,
	                                  SHK_NET_OP_LISTEN };
	shk_val *a = shk_array(b->d);

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (ops & all[i])
			append(b, a, shk_cstring(b->d, shk_net_op_name(all[i])));
	return a;
}

static void net_dest_json(struct jb *b, shk_val *ro, const shk_net_rule_info *r)
{
	char buf[INET6_ADDRSTRLEN + 8];
	shk_val *ports;

	switch (r->selector) {
	case SHK_NET_SEL_HOST:
		set(b, ro, "host", shk_cstring(b->d, r->host));
		break;
	case SHK_NET_SEL_CIDR:
		inet_ntop(r->cidr.family == SHK_NET_INET4 ? AF_INET : AF_INET6, r->cidr.addr, buf,
		          INET6_ADDRSTRLEN);
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "/%u", r->prefix);
		set(b, ro, "cidr", shk_cstring(b->d, buf));
		break;
	case SHK_NET_SEL_UNIX:
		set(b, ro, "unix", shk_cstring(b->d, r->unix_pattern));
		set(b, ro, "abstract", shk_bool(b->d, r->unix_abstract));
		return;
	}
	ports = set(b, ro, "ports", shk_array(b->d));
	append(b, ports, shk_int(b->d, r->port_lo));
	append(b, ports, shk_int(b->d, r->port_hi));
	set(b, ro, "proto", shk_cstring(b->d, r->proto == SHK_NET_PROTO_ANY ? "any"
	                                                                      : shk_net_proto_name(r->proto)));
}

static shk_val *net_json(struct jb *b, const shk_policy *p)
{
	shk_val *o = shk_object(b->d), *rules = set(b, o, "rules", shk_array(b->d));

	for (size_t i = 0; i < shk_policy_net_rule_count(p); i++) {
		shk_net_rule_info r;
		shk_val *ro;

		shk_policy_net_rule(p, i, &r);
		ro = rule_json(b, i, r.name, r.tool, r.action, r.cost_usd, r.repeat_guard);
		set(b, ro, "ops", ops_json(b, r.ops));
		net_dest_json(b, ro, &r);
		append(b, rules, ro);
	}
	set(b, o, "default", shk_cstring(b->d, shk_action_name(shk_policy_net_default(p))));
	set(b, o, "default_implicit", shk_bool(b->d, shk_policy_net_default_implicit(p)));
	return o;
}

static shk_val *prices_json(struct jb *b, const shk_policy *p)
{
	shk_val *a = shk_array(b->d);

	for (size_t i = 0; i < shk_policy_model_price_count(p); i++) {
		shk_model_price mp;
		shk_val *o = shk_object(b->d);

		shk_policy_model_price_at(p, i, &mp);
		set(b, o, "model", shk_cstring(b->d, mp.pattern));
		set(b, o, "input", shk_real(b->d, mp.input));
		set(b, o, "output", shk_real(b->d, mp.output));
		set(b, o, "cache_write", shk_real(b->d, mp.cache_write));
		set(b, o, "cache_read", shk_real(b->d, mp.cache_read));
		append(b, a, o);
	}
	return a;
}

static shk_val *model_rules_json(struct jb *b, const shk_policy *p)
{
	shk_val *a = shk_array(b->d);

	for (size_t i = 0; i < shk_policy_model_rule_count(p); i++) {
		shk_model_rule_info r;
		shk_val *o = shk_object(b->d), *ign;

		shk_policy_model_rule(p, i, &r);
		set(b, o, "index", shk_int(b->d, (int64_t)i));
		set(b, o, "name", str_or_null(b, r.name));
		set(b, o, "tool", shk_cstring(b->d, r.tool));
		set(b, o, "action", shk_cstring(b->d, shk_action_name(r.action)));
		ign = set(b, o, "ignore_input", shk_array(b->d));
		for (size_t k = 0; k < r.nignore_input; k++)
			append(b, ign, shk_cstring(b->d, r.ignore_input[k]));
		append(b, a, o);
	}
	return a;
}

/* Upstreams as the gateway uses them: null is the provider's own. */
static shk_val *models_json(struct jb *b, const shk_policy *p)
{
	const shk_models_config *m = shk_policy_models(p);
	shk_val *o = shk_object(b->d), *up;

	set(b, o, "present", shk_bool(b->d, m->present));
	up = set(b, o, "upstream", shk_object(b->d));
	set(b, up, "anthropic", str_or_null(b, m->anthropic_upstream));
	set(b, up, "openai", str_or_null(b, m->openai_upstream));
	set(b, o, "max_request_bytes", shk_int(b->d, (int64_t)m->max_request_bytes));
	set(b, o, "upstream_timeout_s", shk_int(b->d, m->upstream_timeout_s));
	set(b, o, "source", str_or_null(b, m->source));
	set(b, o, "date", str_or_null(b, m->date));
	set(b, o, "prices", prices_json(b, p));
	set(b, o, "rules", model_rules_json(b, p));
	set(b, o, "default", shk_cstring(b->d, shk_action_name(shk_policy_models_default(p))));
	set(b, o, "default_implicit", shk_bool(b->d, shk_policy_models_default_implicit(p)));
	return o;
}

/* The section as written, with its defaults filled in; null when absent. */
static shk_val *shared_json(struct jb *b, const shk_policy *p)
{
	const shk_shared_config *s = shk_policy_shared(p);
	char url[SHK_SCOPE_HOST_MAX + SHK_SCOPE_PATH_MAX + 32];
	shk_val *o, *sc;

	if (!s)
		return shk_null(b->d);
	o = shk_object(b->d);
	shk_scope_server_name(s, url, sizeof(url));
	set(b, o, "redis", shk_cstring(b->d, url));
	set(b, o, "timeout_ms", shk_int(b->d, s->timeout_ms));
	set(b, o, "lease_s", shk_int(b->d, s->lease_s));
	set(b, o, "org", s->org[0] ? shk_cstring(b->d, s->org) : shk_null(b->d));
	set(b, o, "agent", s->agent[0] ? shk_cstring(b->d, s->agent) : shk_null(b->d));
	sc = set(b, o, "scopes", shk_object(b->d));
	set(b, sc, "budget", shk_cstring(b->d, shk_scope_level_name(s->budget)));
	set(b, sc, "breaker", shk_cstring(b->d, shk_scope_level_name(s->breaker)));
	return o;
}

static int begin(struct jb *b, shk_val **root, const char *file)
{
	b->err = shk_doc_new(&b->d);
	if (b->err)
		return b->err;
	*root = shk_object(b->d);
	set(b, *root, "file", shk_cstring(b->d, file));
	return 0;
}

int policy_json_check(const char *file, const shk_policy *p, const struct policy_warnings *w)
{
	struct jb b;
	shk_val *root, *red, *warn;

	if (begin(&b, &root, file) < 0)
		return b.err;
	set(&b, root, "valid", shk_bool(b.d, true));
	set(&b, root, "version", shk_int(b.d, 1));
	set(&b, root, "sha256", shk_cstring(b.d, shk_policy_digest_hex(p)));
	set(&b, root, "guard", guard_json(&b, shk_policy_guard(p)));
	red = set(&b, root, "redact", shk_array(b.d));
	for (size_t i = 0; i < shk_policy_redact_count(p); i++)
		append(&b, red, shk_cstring(b.d, shk_policy_redact_key(p, i)));
	set(&b, root, "exec", exec_json(&b, p));
	set(&b, root, "net", net_json(&b, p));
	set(&b, root, "models", models_json(&b, p));
	set(&b, root, "shared", shared_json(&b, p));
	warn = set(&b, root, "warnings", shk_array(b.d));
	for (size_t i = 0; i < w->n; i++)
		append(&b, warn, shk_cstring(b.d, w->v[i]));
	return emit(&b, root);
}

int policy_json_invalid(const char *file, const shk_parse_error *err, const char *message)
{
	struct jb b;
	shk_val *root, *e;

	if (begin(&b, &root, file) < 0)
		return b.err;
	set(&b, root, "valid", shk_bool(b.d, false));
	e = set(&b, root, "error", shk_object(b.d));
	set(&b, e, "source", shk_cstring(b.d, err->source[0] ? err->source : file));
	set(&b, e, "line", err->line > 0 ? shk_int(b.d, err->line) : shk_null(b.d));
	set(&b, e, "column", err->line > 0 ? shk_int(b.d, err->column) : shk_null(b.d));
	set(&b, e, "message", shk_cstring(b.d, message));
	return emit(&b, root);
}

int policy_json_match(const char *file, const struct policy_json_call *c, const shk_policy_match *m)
{
	struct jb b;
	shk_val *root, *call, *argv, *match;

	if (begin(&b, &root, file) < 0)
		return b.err;
	call = set(&b, root, "call", shk_object(b.d));
	set(&b, call, "kind", shk_cstring(b.d, c->argv ? "exec" : "net"));
	if (c->argv) {
		set(&b, call, "path", shk_cstring(b.d, c->given));
		argv = set(&b, call, "argv", shk_array(b.d));
		for (int i = 0; i < c->argc; i++)
			append(&b, argv, shk_cstring(b.d, c->argv[i]));
	} else {
		set(&b, call, "op", shk_cstring(b.d, c->op));
		set(&b, call, "dest", shk_cstring(b.d, c->given));
		set(&b, call, "proto", shk_cstring(b.d, c->proto));
	}
	/* the name the supervisor judges: the canonical path */
	set(&b, call, "judged_as", shk_cstring(b.d, c->judged));
	match = set(&b, root, "match", shk_object(b.d));
	set(&b, match, "rule_index", m->rule_index >= 0 ? shk_int(b.d, m->rule_index) : shk_null(b.d));
	set(&b, match, "rule_name", str_or_null(&b, m->rule_name));
	set(&b, match, "default", shk_bool(b.d, m->rule_index < 0));
	set(&b, match, "tool", shk_cstring(b.d, m->tool));
	set(&b, match, "action", shk_cstring(b.d, shk_action_name(m->action)));
	set(&b, match, "cost_usd", shk_real(b.d, m->cost_usd));
	set(&b, match, "repeat_guard", shk_bool(b.d, !m->no_repeat_guard));
	return emit(&b, root);
}
