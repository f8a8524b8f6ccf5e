/* SPDX-License-Identifier: MIT */
/*
 * `shackle policy check FILE` validates a policy and explains it rule by rule;
 * `shackle policy explain FILE [--proto P] [--op O] --connect DEST` and
 * `shackle policy explain FILE --exec PATH ARGV0 [ARGV...]` say which rule a
 * call would match, with its tool name, action and cost. --json: the same
 * as one JSON document (policy_json.c).
 *
 * Exit status: 0 valid / explained, 2 bad usage or an invalid policy
 * (reported once as FILE:LINE:COLUMN: message).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <shackle/policy.h>

#include "cli/commands.h"
#include "cli/policy_json.h"
#include "cli/policy_text.h"
#include "judge/pipeline.h"

static void policy_freep(shk_policy **p)
{
	shk_policy_free(*p);
}
#define _cleanup_policy_ __attribute__((cleanup(policy_freep)))

static const struct shk_usage check_usage = { "policy check",
	"usage: shackle policy check [--json] FILE\n\n"
	"Validates a policy file and explains it: the guard (budget, repeat guard,\n"
	"human approval, window, breaker), what the audit log redacts, the exec and\n"
	"net rules in file order with tool, action and cost, and the defaults; the\n"
	"model gateway's upstreams, limits, rules, default and prices (\"models\"),\n"
	"and the Redis scopes (\"shared\"). An invalid policy is reported once on\n"
	"stderr as FILE:LINE:COLUMN: message.\n"
	"--json: the same as one JSON document on stdout; for an invalid policy\n"
	"{\"valid\":false,\"error\":{...}}. An allowlist that lets a userland loader\n"
	"(valgrind, qemu-user, box64, FEX) run gets a warning per loader path on\n"
	"stderr (and in --json \"warnings\"), and so does a models rule whose\n"
	"ignore_input lists \"command\" or \"cmd\". Exit status: 0 valid, 2 bad usage\n"
	"or an invalid policy.\n" };

static const struct shk_usage explain_usage = { "policy explain",
	"usage: shackle policy explain [--json] FILE --exec PATH ARGV0 [ARGV...]\n"
	"       shackle policy explain [--json] FILE [--proto tcp|udp]\n"
	"                              [--op connect|send|bind|listen]\n"
	"                              --connect ADDR:PORT|[ADDR6]:PORT|unix:PATH|unix:@NAME\n\n"
	"Says which rule of FILE a call would match, with its tool name, action and\n"
	"estimated cost, judged as shackle-run judges it: PATH and unix paths by the\n"
	"name they resolve to, host rules resolved now. Everything after --exec is\n"
	"the call (PATH, then its argv). --json: one JSON document on stdout (notes\n"
	"go to stderr). Exit status: 0 explained, 2 bad usage or an invalid policy.\n" };

static const struct shk_usage *const policy_subs[] = { &check_usage, &explain_usage };

/* Notes beside the answer: on stdout with it, on stderr under --json. */
static FILE *notes_out;

static int load(const char *file, bool json, shk_policy **ret)
{
	shk_parse_error err;
	char msg[sizeof(err.text) + 64];
	int r = shk_policy_load_file(file, ret, &err);

	if (r >= 0)
		return 0;
	snprintf(msg, sizeof(msg), "%s", err.text[0] ? err.text : strerror(-r));
	if (err.line > 0)
		fprintf(stderr, "%s:%d:%d: %s\n", err.source, err.line, err.column, msg);
	else
		fprintf(stderr, "%s: %s\n", err.source[0] ? err.source : file, msg);
	if (json)
		policy_json_invalid(file, &err, msg);
	return -EINVAL;
}

static void print_guard(const shk_guard_config *g)
{
	printf("guard:\n");
	if (g->budget_usd > 0)
		printf("  budget: %.4g USD per session; calls past it are denied "
		       "(budget_exhausted, budget_overrun)\n", g->budget_usd);
	else
		printf("  budget: off (budget_usd 0)\n");
	if (g->max_repeat_calls)
		printf("  repeat guard: once a tool has been called %u times in a row, the next "
		       "call to it is denied (max_repeat_exceeded)%s\n", g->max_repeat_calls,
		       g->error_amplification ? "; one call earlier when its arguments carry an "
						"error signal (error_amplification)" : "");
	else
		printf("  repeat guard: off\n");
	switch (g->hitl_mode) {
	case SHK_HITL_NEVER:
		printf("  human approval: only for rules with action hitl\n");
		break;
	case SHK_HITL_ALWAYS:
		printf("  human approval: every call (hitl_mode always)\n");
		break;
	case SHK_HITL_ON_THRESHOLD:
		printf("  human approval: every call once the remaining budget is at or below "
		       "%.4g%% of it\n", g->hitl_budget_threshold * 100);
		break;
	}
	if (g->hitl_timeout_s)
		printf("  held calls are denied after %u s without an answer\n", g->hitl_timeout_s);
	else
		printf("  held calls are denied at once (hitl_timeout_s 0)\n");
	if (g->window_max_calls)
		printf("  window: at most %u calls per %u s (window_exceeded)\n", g->window_max_calls,
		       g->window_duration_s);
	else
		printf("  window: off\n");
	if (g->max_total_calls)
		printf("  session cap: %llu calls (global_limit)\n",
		       (unsigned long long)g->max_total_calls);
	else
		printf("  session cap: off\n");
	printf("  breaker: %s\n", g->trip_on_deny ? "a deny by decide() trips it, and every later "
		"call is denied (circuit_open)" : "decide() denials do not trip it (trip_on_deny false)");
}

static void print_tail(const char *tool, const char *deftool, shk_action a, double cost,
                       bool repeat_guard)
{
	printf("     -> %s; tool %s%s", policy_action_text(a), tool ? tool : deftool,
	       tool ? "" : " (default name)");
	if (cost > 0)
		printf("; estimated cost %.6g USD", cost);
	if (!repeat_guard)
		printf("; out of the repeat guard");
	printf("\n");
}

static void print_exec_rules(const shk_policy *p)
{
	size_t n = shk_policy_exec_rule_count(p);

	printf("exec rules (first match wins, in file order):\n");
	for (size_t i = 0; i < n; i++) {
		shk_exec_rule_info r;

		shk_policy_exec_rule(p, i, &r);
		printf("  %zu. %s%s%s", i, r.name ? "\"" : "", r.name ? r.name : "", r.name ? "\" " : "");
		printf("running %s%s", r.path ? "a program matching " : "any program",
		       r.path ? r.path : "");
		if (r.has_argv) {
			printf(" with arguments matching [");
			for (size_t k = 0; k < r.argc; k++)
				printf("%s\"%s\"", k ? ", " : "", r.argv[k]);
			printf("]");
		}
		printf("\n");
		print_tail(r.tool, "exec:<basename>", r.action, r.cost_usd, r.repeat_guard);
	}
	printf("  otherwise: %s%s; tool exec:<basename>\n", policy_action_text(shk_policy_exec_default(p)),
	       shk_policy_exec_default_implicit(p) ? " (implicit default)" : "");
	printf("  with a loader variable set (LD_PRELOAD, LD_LIBRARY_PATH, OPENSSL_CONF, ...): "
	       "no less strict than %s (exec.loader_env)\n", policy_action_text(shk_policy_exec_loader_env(p)));
	printf("  with an interpreter's code variable set (PYTHONPATH, BASH_ENV, NODE_OPTIONS, ...) %s: "
	       "no less strict than %s (exec.interp_env)\n",
	       shk_policy_exec_interp_scoped(p) ? "on an exec of that interpreter (interp_env_scope interpreter)"
	                                        : "on any exec",
	       policy_action_text(shk_policy_exec_interp_env(p)));
}

static void print_ops(unsigned ops)
{
	static const shk_net_op all[] = { SHK_NET_OP_CONNECT, SHK_NET_OP_SEND, SHK_NET_OP_BIND,
					  SHK_NET_OP_LISTEN };
	bool first = true;

	if (ops == SHK_NET_OP_ANY) {
		printf("any operation (connect, send, bind, listen)");
		return;
	}
	for (size_t i = 0; i < 4; i++)
		if (ops & all[i]) {
			printf("%s%s", first ? "" : "/", shk_net_op_name(all[i]));
			first = false;
		}
}

static void print_net_dest(const shk_net_rule_info *r)
{
	char buf[INET6_ADDRSTRLEN];

	switch (r->selector) {
	case SHK_NET_SEL_HOST:
		printf(" to host %s (addresses resolved by the supervisor)", r->host);
		break;
	case SHK_NET_SEL_CIDR:
		inet_ntop(r->cidr.family == SHK_NET_INET4 ? AF_INET : AF_INET6, r->cidr.addr, buf,
			  sizeof(buf));
		printf(" to %s/%u", buf, r->prefix);
		break;
	case SHK_NET_SEL_UNIX:
		printf(" on unix socket %s%s", r->unix_abstract ? "in the abstract namespace " : "",
		       r->unix_pattern);
		return;
	}
	if (r->port_lo == 0 && r->port_hi == 65535)
		printf(", any port");
	else if (r->port_lo == r->port_hi)
		printf(", port %u", r->port_lo);
	else
		printf(", ports %u-%u", r->port_lo, r->port_hi);
	printf(", %s", r->proto == SHK_NET_PROTO_ANY ? "any protocol" : shk_net_proto_name(r->proto));
}

static void print_net_rules(const shk_policy *p)
{
	size_t n = shk_policy_net_rule_count(p);

	printf("net rules (first match wins, in file order):\n");
	for (size_t i = 0; i < n; i++) {
		shk_net_rule_info r;

		shk_policy_net_rule(p, i, &r);
		printf("  %zu. %s%s%s", i, r.name ? "\"" : "", r.name ? r.name : "", r.name ? "\" " : "");
		print_ops(r.ops);
		print_net_dest(&r);
		printf("\n");
		print_tail(r.tool, "net:<op>", r.action, r.cost_usd, r.repeat_guard);
	}
	printf("  otherwise: %s%s; tool net:connect, net:sendto, net:bind or net:listen\n",
	       policy_action_text(shk_policy_net_default(p)),
	       shk_policy_net_default_implicit(p) ? " (implicit default)" : "");
}

static int cmd_check(int argc, char **argv)
{
	_cleanup_policy_ shk_policy *p = NULL;
	struct policy_warnings w;
	const char *file = NULL;
	bool json = false;
	int r;

	for (int i = 2; i < argc; i++) {
		if (shk_cli_is_help(argv[i]))
			return shk_cli_help(&check_usage);
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return shk_cli_usage_error(&check_usage, "unknown option '%s'", argv[i]);
		else if (file)
			return shk_cli_usage_error(&check_usage, "one FILE only");
		else
			file = argv[i];
	}
	if (!file)
		return shk_cli_usage_error(&check_usage, "no policy FILE given");
	if (load(file, json, &p) < 0)
		return 2;
	/* warnings do not change the exit status: the policy is valid */
	if (policy_loader_warnings(file, p, &w) < 0 || policy_models_warnings(file, p, &w) < 0) {
		policy_warnings_free(&w);
		shk_cli_error("policy", "%s: cannot check for warnings: %s", file,
		              strerror(ENOMEM));
		return 2;
	}
	for (size_t i = 0; i < w.n; i++)
		fprintf(stderr, "warning: %s\n", w.v[i]);
	r = json ? policy_json_check(file, p, &w) : 0;
	policy_warnings_free(&w);
	if (json)
		return r < 0 ? 2 : 0;
	printf("%s: valid policy (version 1, sha256 %s)\n", file, shk_policy_digest_hex(p));
	print_guard(shk_policy_guard(p));
	if (shk_policy_redact_count(p)) {
		printf("redacted in the audit log:");
		for (size_t i = 0; i < shk_policy_redact_count(p); i++)
			printf("%s %s", i ? "," : "", shk_policy_redact_key(p, i));
		printf("\n");
	}
	print_exec_rules(p);
	print_net_rules(p);
	policy_print_models(p);
	policy_print_shared(p);
	return 0;
}

static void print_match(const shk_policy_match *m)
{
	if (m->rule_index < 0)
		printf("  matched: no rule; the section default applies\n");
	else if (m->rule_name)
		printf("  matched: rule %ld \"%s\"\n", m->rule_index, m->rule_name);
	else
		printf("  matched: rule %ld\n", m->rule_index);
	printf("  tool: %s\n  action: %s\n  estimated cost: %.6g USD\n", m->tool,
	       shk_action_name(m->action), m->cost_usd);
	printf("  repeat guard: %s\n", m->no_repeat_guard ? "off (\"repeat_guard\": false)" : "on");
}

static int explain_exec(const shk_policy *p, const char *file, bool json, int argc, char **argv)
{
	shk_policy_match m;
	char canon[PATH_MAX];
	const char *path;
	int r;

	if (argc < 2)
		return shk_cli_usage_error(&explain_usage, "--exec needs PATH and ARGV0");
	/* the supervisor judges the name the file resolves to (//, .., links):
	 * explain the same, or it says "allow" where a run denies */
	path = realpath(argv[0], canon) ? canon : argv[0];
	if (strcmp(path, argv[0]) && !json)
		printf("(%s resolves to %s: judged by that name)\n", argv[0], path);
	r = shk_policy_match_exec(p, path, (const char *const *)argv + 1, (size_t)argc - 1, &m);
	if (r < 0) {
		shk_cli_error("policy", "cannot match %s: %s (the supervisor would deny)", argv[0],
			      strerror(-r));
		return 2;
	}
	if (json)
		return policy_json_match(file, &(struct policy_json_call){ .given = argv[0], .judged = path,
		                         .argv = argv + 1, .argc = argc - 1 }, &m) < 0 ? 2 : 0;
	printf("exec %s [", argv[0]);
	for (int i = 1; i < argc; i++)
		printf("%s\"%s\"", i > 1 ? ", " : "", argv[i]);
	printf("]\n");
	print_match(&m);
	return 0;
}

static int parse_dest(const char *s, struct shk_net_dest *d)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *end;
	char *tail;
	unsigned long port;
	size_t hlen;

	if (!strncmp(s, "unix:", 5)) {
		d->family = SHK_NET_UNIX;
		d->unix_abstract = s[5] == '@';
		d->unix_name = s + 5 + d->unix_abstract;
		d->unix_len = strlen(d->unix_name);
		return 0;
	}
	if (s[0] == '[') {
		end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		colon = end + 1;
		s++;
		hlen = (size_t)(end - s);
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = 0;
	errno = 0;
	port = strtoul(colon + 1, &tail, 10);
	if (!colon[1] || *tail || errno || port > 65535)
		return -EINVAL;
	d->port = (uint16_t)port;
	if (inet_pton(AF_INET, host, d->addr) == 1)
		d->family = SHK_NET_INET4;
	else if (inet_pton(AF_INET6, host, d->addr) == 1)
		d->family = SHK_NET_INET6;
	else
		return -EINVAL;
	return 0;
}

/* Host rules name addresses only at run time: resolve them now, as the supervisor would. */
static void resolve_hosts(shk_policy *p)
{
	for (size_t i = 0; i < shk_policy_net_rule_count(p); i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
		shk_net_addr addrs[32];
		shk_net_rule_info r;
		size_t n = 0;
		int e;

		shk_policy_net_rule(p, i, &r);
		if (r.selector != SHK_NET_SEL_HOST)
			continue;
		e = getaddrinfo(r.host, NULL, &hints, &res);
		if (e) {
			fprintf(notes_out, "note: rule %zu: cannot resolve %s (%s); it matches nothing now\n",
			        i, r.host, gai_strerror(e));
			continue;
		}
		for (struct addrinfo *ai = res; ai && n < 32; ai = ai->ai_next) {
			shk_net_addr *a = &addrs[n];

			*a = (shk_net_addr){ 0 };
			if (ai->ai_family == AF_INET) {
				a->family = SHK_NET_INET4;
				memcpy(a->addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
			} else if (ai->ai_family == AF_INET6) {
				a->family = SHK_NET_INET6;
				memcpy(a->addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
			} else {
				continue;
			}
			n++;
		}
		freeaddrinfo(res);
		fprintf(notes_out, "note: rule %zu: resolved %s now with getaddrinfo (%zu addresses); "
		        "the supervisor resolves at start and again when the records expire\n",
		        i, r.host, n);
		if (shk_policy_set_host_addrs(p, i, addrs, n) < 0)
			fprintf(notes_out, "note: rule %zu: could not install the addresses\n", i);
	}
}

/* A unix path as shackle-run judges it (its canonical name) against the
 * rules with their aliases (unix_alias.c): otherwise explain says allow
 * for /var/run/x.sock where a run denies it. */
static void unix_as_judged(shk_policy *p, struct shk_net_dest *d, char *canon, size_t len)
{
	struct shk_pipeline pipe = { .policy = p };
	char dir[PATH_MAX], *slash;

	(void)shk_pipeline_load_unix_aliases(&pipe);
	if (realpath(d->unix_name, canon)) {
		if (!strcmp(canon, d->unix_name))
			return;
		fprintf(notes_out, "(%s resolves to %s: judged by that name)\n", d->unix_name, canon);
	} else {
		snprintf(dir, sizeof(dir), "%s", d->unix_name);
		if (!(slash = strrchr(dir, '/')) || slash == dir)
			return;
		*slash = 0;
		if (!realpath(dir, canon) || strlen(canon) + strlen(slash + 1) + 2 > len)
			return;
		strcat(canon, "/");
		strcat(canon, slash + 1);
		if (!strcmp(canon, d->unix_name))
			return;
		fprintf(notes_out, "(%s is judged as %s)\n", d->unix_name, canon);
	}
	d->unix_name = canon;
	d->unix_len = strlen(canon);
}

static int explain_net(shk_policy *p, const char *file, bool json, const char *dest,
                       shk_net_proto proto, shk_net_op op)
{
	struct shk_net_dest d = { .proto = proto, .op = op };
	shk_policy_match m;
	char canon[PATH_MAX];
	const char *pname;

	if (parse_dest(dest, &d) < 0)
		return shk_cli_usage_error(&explain_usage, "bad destination '%s' (ADDR:PORT, [ADDR6]:PORT, "
		                           "unix:PATH or unix:@NAME; a numeric address)", dest);
	if (d.family != SHK_NET_UNIX)
		resolve_hosts(p);
	else if (!d.unix_abstract)
		unix_as_judged(p, &d, canon, sizeof(canon));
	if (shk_policy_match_net(p, &d, &m) < 0) {
		shk_cli_error("policy", "cannot match '%s'", dest);
		return 2;
	}
	pname = d.family == SHK_NET_UNIX ? "unix socket" : shk_net_proto_name(proto);
	if (json)
		return policy_json_match(file, &(struct policy_json_call){ .given = dest,
		                         .judged = d.family == SHK_NET_UNIX ? d.unix_name : dest,
		                         .op = shk_net_op_name(op), .proto = d.family == SHK_NET_UNIX ? "unix" : pname },
		                         &m) < 0 ? 2 : 0;
	printf("%s %s (%s)\n", shk_net_op_name(op), dest, pname);
	print_match(&m);
	return 0;
}

static int parse_opt(const char *name, const char *val, shk_net_proto *proto, shk_net_op *op)
{
	static const shk_net_op ops[] = { SHK_NET_OP_CONNECT, SHK_NET_OP_SEND, SHK_NET_OP_BIND,
					  SHK_NET_OP_LISTEN };

	if (!strcmp(name, "--proto")) {
		if (!strcmp(val, "tcp"))
			*proto = SHK_NET_PROTO_TCP;
		else if (!strcmp(val, "udp"))
			*proto = SHK_NET_PROTO_UDP;
		else
			return -EINVAL;
		return 0;
	}
	for (size_t i = 0; i < 4; i++)
		if (!strcmp(val, shk_net_op_name(ops[i]))) {
			*op = ops[i];
			return 0;
		}
	return -EINVAL;
}

static int cmd_explain(int argc, char **argv)
{
	_cleanup_policy_ shk_policy *p = NULL;
	shk_net_proto proto = SHK_NET_PROTO_TCP;
	shk_net_op op = SHK_NET_OP_CONNECT;
	const char *connect = NULL, *file = NULL;
	bool json = false;
	int i;

	/* up to --exec: what follows it is the call, --help included */
	for (i = 2; i < argc && strcmp(argv[i], "--exec"); i++) {
		if (shk_cli_is_help(argv[i]))
			return shk_cli_help(&explain_usage);
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (argv[i][0] != '-' || !argv[i][1]) {
			if (file)
				return shk_cli_usage_error(&explain_usage, "unexpected argument '%s'", argv[i]);
			file = argv[i];
		} else if (strcmp(argv[i], "--connect") && strcmp(argv[i], "--proto") && strcmp(argv[i], "--op")) {
			return shk_cli_usage_error(&explain_usage, "unknown option '%s'", argv[i]);
		} else if (i + 1 >= argc) {
			return shk_cli_usage_error(&explain_usage, "%s needs a value", argv[i]);
		} else if (!strcmp(argv[i], "--connect")) {
			connect = argv[++i];
		} else if (parse_opt(argv[i], argv[i + 1], &proto, &op) < 0) {
			return shk_cli_usage_error(&explain_usage, "bad option '%s %s'", argv[i], argv[i + 1]);
		} else {
			i++;
		}
	}
	if (!file)
		return shk_cli_usage_error(&explain_usage, "no policy FILE given");
	if ((i < argc) == (connect != NULL))
		return shk_cli_usage_error(&explain_usage, "give exactly one of --exec and --connect");
	notes_out = json ? stderr : stdout;
	if (load(file, json, &p) < 0)
		return 2;
	if (connect)
		return explain_net(p, file, json, connect, proto, op);
	return explain_exec(p, file, json, argc - i - 1, argv + i + 1);
}

int shk_cmd_policy(int argc, char **argv)
{
	if (argc >= 2 && shk_cli_is_help(argv[1]))
		return shk_cli_group_help("policy", policy_subs, 2, false);
	if (argc >= 2 && !strcmp(argv[1], "check"))
		return cmd_check(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "explain"))
		return cmd_explain(argc, argv);
	if (argc >= 2)
		shk_cli_error("policy", "unknown subcommand '%s'", argv[1]);
	return shk_cli_group_help("policy", policy_subs, 2, true);
}
