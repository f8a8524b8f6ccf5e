/* SPDX-License-Identifier: MIT */
/* Policy v1: shipped policies, defaults, digest, exec and net matching. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <string.h>

#include <shackle/policy.h>

#include "testutil.h"
#include "checkrun.h"

static shk_policy *load_text(const char *text)
{
	shk_policy *p = NULL;
	shk_parse_error err;
	int r = shk_policy_load_buffer(text, strlen(text), "test.json", &p, &err);

	ck_assert_msg(r == 0, "load failed %d: %s:%d:%d: %s", r, err.source, err.line, err.column,
		      err.text);
	return p;
}

static shk_policy *load_shipped(const char *name)
{
	char rel[128];
	shk_policy *p = NULL;
	shk_parse_error err;
	int r;

	snprintf(rel, sizeof(rel), "policies/%s", name);
	r = shk_policy_load_file(shk_test_src(rel), &p, &err);
	ck_assert_msg(r == 0, "%s: %s:%d:%d: %s", name, err.source, err.line, err.column, err.text);
	return p;
}

static shk_policy_match mexec(const shk_policy *p, const char *path, const char *const *argv)
{
	shk_policy_match m;
	size_t argc = 0;

	while (argv[argc])
		argc++;
	ck_assert_int_eq(shk_policy_match_exec(p, path, argv, argc, &m), 0);
	return m;
}

#define A(...) ((const char *const[]){ __VA_ARGS__, NULL })

static struct shk_net_dest ip(const char *addr, uint16_t port, shk_net_proto proto, shk_net_op op)
{
	struct shk_net_dest d = { .port = port, .proto = proto, .op = op };

	if (inet_pton(AF_INET, addr, d.addr) == 1) {
		d.family = SHK_NET_INET4;
	} else {
		ck_assert_int_eq(inet_pton(AF_INET6, addr, d.addr), 1);
		d.family = SHK_NET_INET6;
	}
	return d;
}

static shk_policy_match mnet(const shk_policy *p, struct shk_net_dest d)
{
	shk_policy_match m;

	ck_assert_int_eq(shk_policy_match_net(p, &d, &m), 0);
	return m;
}

#define TCP SHK_NET_PROTO_TCP
#define UDP SHK_NET_PROTO_UDP
#define CONNECT SHK_NET_OP_CONNECT

START_TEST(test_defaults)
{
	shk_policy *p = load_text("{\"version\": 1}");
	const shk_guard_config *g = shk_policy_guard(p);
	shk_policy_match m;

	ck_assert(g->budget_usd == 0);
	ck_assert_uint_eq(g->max_repeat_calls, 0);
	ck_assert(!g->error_amplification);
	ck_assert_int_eq(g->hitl_mode, SHK_HITL_NEVER);
	ck_assert(g->hitl_budget_threshold == 0.2);
	ck_assert_uint_eq(g->hitl_timeout_s, 300);
	ck_assert_uint_eq(g->window_duration_s, 0);
	ck_assert_uint_eq(g->window_max_calls, 0);
	ck_assert_uint_eq(g->max_total_calls, 0);
	ck_assert(g->trip_on_deny);
	ck_assert_int_eq(shk_policy_exec_default(p), SHK_ACTION_ALLOW);
	ck_assert_int_eq(shk_policy_net_default(p), SHK_ACTION_DENY);
	ck_assert(shk_policy_exec_default_implicit(p));
	ck_assert(shk_policy_net_default_implicit(p));
	ck_assert_uint_eq(shk_policy_redact_count(p), 0);

	m = mexec(p, "/usr/bin/git", A("git", "status"));
	ck_assert_int_eq(m.rule_index, -1);
	ck_assert_ptr_null(m.rule_name);
	ck_assert_int_eq(m.action, SHK_ACTION_ALLOW);
	ck_assert_str_eq(m.tool, "exec:git");
	ck_assert(m.cost_usd == 0);
	m = mnet(p, ip("127.0.0.1", 80, TCP, CONNECT));
	ck_assert_int_eq(m.action, SHK_ACTION_DENY);
	ck_assert_str_eq(m.tool, "net:connect");
	shk_policy_free(p);
}
END_TEST

START_TEST(test_guard_fields)
{
	shk_policy *p = load_text(
		"{\"version\": 1, \"guard\": {\"budget_usd\": 5, \"max_repeat_calls\": 4,"
		" \"hitl_mode\": \"on_threshold\", \"hitl_budget_threshold\": 0.25,"
		" \"hitl_timeout_s\": 0, \"window_duration_s\": 60, \"window_max_calls\": 300,"
		" \"max_total_calls\": 9000000000, \"error_amplification\": true,"
		" \"trip_on_deny\": false}, \"redact\": [\"token\", \"api_key\"],"
		" \"exec\": {\"default\": \"hitl\"}, \"net\": {\"default\": \"allow\"}}");
	const shk_guard_config *g = shk_policy_guard(p);

	ck_assert(g->budget_usd == 5.0);
	ck_assert_uint_eq(g->max_repeat_calls, 4);
	ck_assert_int_eq(g->hitl_mode, SHK_HITL_ON_THRESHOLD);
	ck_assert(g->hitl_budget_threshold == 0.25);
	ck_assert_uint_eq(g->hitl_timeout_s, 0);
	ck_assert_uint_eq(g->window_duration_s, 60);
	ck_assert_uint_eq(g->window_max_calls, 300);
	ck_assert_uint_eq(g->max_total_calls, 9000000000ull);
	ck_assert(g->error_amplification);
	ck_assert(!g->trip_on_deny);
	ck_assert_uint_eq(shk_policy_redact_count(p), 2);
	ck_assert_str_eq(shk_policy_redact_key(p, 0), "token");
	ck_assert_str_eq(shk_policy_redact_key(p, 1), "api_key");
	ck_assert_ptr_null(shk_policy_redact_key(p, 2));
	ck_assert_int_eq(shk_policy_exec_default(p), SHK_ACTION_HITL);
	ck_assert_int_eq(shk_policy_net_default(p), SHK_ACTION_ALLOW);
	ck_assert(!shk_policy_exec_default_implicit(p));
	shk_policy_free(p);
}
END_TEST

START_TEST(test_digest)
{
	/* Expected values: sha256 of Python's json.dumps(sort_keys, compact) of each document. */
	shk_policy *a = load_text("{\"version\": 1}");
	shk_policy *b = load_text("{\"guard\": {\"budget_usd\": 5.0},\n  \"version\": 1}");
	shk_policy *c = load_text("{\"version\":1,\"guard\":{\"budget_usd\":5.0}}");
	shk_policy *d = load_text("{\"version\":1,\"guard\":{\"budget_usd\":5}}");
	uint8_t raw[32];
	char hex[65];

	ck_assert_str_eq(shk_policy_digest_hex(a),
			 "2430f1a2ad2982d0067885488a4c89e21ad1d7c83b115ba8f1b20acc88dfaea8");
	ck_assert_str_eq(shk_policy_digest_hex(b),
			 "f4a770d3ad6d6f6d9be7d6798b30eb89e37558deddd3c13a9981af0964531af3");
	ck_assert_str_eq(shk_policy_digest_hex(b), shk_policy_digest_hex(c));
	/* 5 and 5.0 are different documents (Python prints 5 vs 5.0). */
	ck_assert_str_ne(shk_policy_digest_hex(c), shk_policy_digest_hex(d));
	shk_policy_digest(a, raw);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	ck_assert_str_eq(hex, shk_policy_digest_hex(a));
	shk_policy_free(a);
	shk_policy_free(b);
	shk_policy_free(c);
	shk_policy_free(d);
}
END_TEST

static const char exec_policy[] =
	"{\"version\": 1, \"exec\": {\"default\": \"deny\", \"rules\": ["
	" {\"name\": \"push\", \"tool\": \"git.push\", \"path\": \"/usr/bin/git\","
	"  \"argv\": [\"git\", \"push\", \"**\"], \"action\": \"hitl\", \"cost_usd\": 0.5},"
	" {\"name\": \"git\", \"path\": \"/usr/bin/git\", \"action\": \"allow\"},"
	" {\"path\": \"/usr/bin/*\", \"action\": \"allow\", \"cost_usd\": 0.001},"
	" {\"argv\": [\"python3\", \"-c\", \"*\"], \"action\": \"hitl\"},"
	" {\"path\": \"/opt/**/bin/tool\", \"tool\": \"opt.tool\", \"action\": \"allow\"}]}}";

START_TEST(test_exec_matching)
{
	shk_policy *p = load_text(exec_policy);
	shk_policy_match m;

	m = mexec(p, "/usr/bin/git", A("git", "push"));
	ck_assert_int_eq(m.rule_index, 0);
	ck_assert_str_eq(m.rule_name, "push");
	ck_assert_str_eq(m.tool, "git.push");
	ck_assert_int_eq(m.action, SHK_ACTION_HITL);
	ck_assert(m.cost_usd == 0.5);
	m = mexec(p, "/usr/bin/git", A("git", "push", "origin", "main"));
	ck_assert_int_eq(m.rule_index, 0);
	/* First match wins: rule 1 (all git) would also match, rule 2 too. */
	m = mexec(p, "/usr/bin/git", A("git", "pull"));
	ck_assert_int_eq(m.rule_index, 1);
	ck_assert_str_eq(m.tool, "exec:git");
	ck_assert_int_eq(m.action, SHK_ACTION_ALLOW);
	m = mexec(p, "/usr/bin/ls", A("ls"));
	ck_assert_int_eq(m.rule_index, 2);
	ck_assert_ptr_null(m.rule_name);
	ck_assert_str_eq(m.tool, "exec:ls");
	ck_assert(m.cost_usd == 0.001);
	/* '*' stays within one component; the default then denies. */
	m = mexec(p, "/usr/bin/x/y", A("y"));
	ck_assert_int_eq(m.rule_index, -1);
	ck_assert_int_eq(m.action, SHK_ACTION_DENY);
	ck_assert_str_eq(m.tool, "exec:y");
	m = mexec(p, "/home/u/python3", A("python3", "-c", "print(1)"));
	ck_assert_int_eq(m.rule_index, 3);
	m = mexec(p, "/home/u/python3", A("python3", "-c", "print(1)", "extra"));
	ck_assert_int_eq(m.rule_index, -1);
	m = mexec(p, "/opt/a/b/bin/tool", A("tool"));
	ck_assert_int_eq(m.rule_index, 4);
	ck_assert_str_eq(m.tool, "opt.tool");
	m = mexec(p, "/opt/bin/tool", A("tool"));
	ck_assert_int_eq(m.rule_index, 4);
	m = mexec(p, "relative-name", A("x"));
	ck_assert_str_eq(m.tool, "exec:relative-name");
	shk_policy_free(p);
}
END_TEST

START_TEST(test_exec_bad_calls)
{
	shk_policy *p = load_text(exec_policy);
	shk_policy_match m;
	char longname[300];
	const char *argv_null[] = { "a", NULL };

	ck_assert_int_eq(shk_policy_match_exec(p, NULL, A("x"), 1, &m), -EINVAL);
	ck_assert_int_eq(shk_policy_match_exec(p, "/usr/bin/", A("x"), 1, &m), -EINVAL);
	ck_assert_int_eq(shk_policy_match_exec(p, "/usr/bin/x", NULL, 1, &m), -EINVAL);
	ck_assert_int_eq(shk_policy_match_exec(p, "/usr/bin/x", argv_null, 2, &m), -EINVAL);
	/* argc 0 is legal for execve and must still be judged. */
	ck_assert_int_eq(shk_policy_match_exec(p, "/usr/bin/x", NULL, 0, &m), 0);
	ck_assert_int_eq(m.rule_index, 2);
	memset(longname, 'a', sizeof(longname));
	longname[0] = '/';
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(shk_policy_match_exec(p, longname, A("a"), 1, &m), -ENAMETOOLONG);
	shk_policy_free(p);
}
END_TEST

static const char net_policy[] =
	"{\"version\": 1, \"net\": {\"default\": \"deny\", \"rules\": ["
	" {\"name\": \"llm\", \"tool\": \"llm\", \"host\": \"api.example.com\", \"port\": 443,"
	"  \"action\": \"allow\", \"cost_usd\": 0.01},"                                  /* 0 */
	" {\"cidr\": \"10.1.0.0/16\", \"port\": \"8000-8080\", \"proto\": \"tcp\","
	"  \"action\": \"allow\"},"                                                     /* 1 */
	" {\"cidr\": \"10.1.0.0/16\", \"proto\": \"udp\", \"port\": 53, \"action\": \"hitl\"}," /* 2 */
	" {\"cidr\": \"127.0.0.0/8\", \"op\": [\"connect\", \"send\"], \"action\": \"allow\"}," /* 3 */
	" {\"cidr\": \"127.0.0.0/8\", \"op\": \"bind\", \"action\": \"hitl\"},"            /* 4 */
	" {\"cidr\": \"fd00:1::/32\", \"action\": \"allow\"},"                             /* 5 */
	" {\"cidr\": \"::ffff:192.168.0.0/112\", \"action\": \"allow\"},"                  /* 6 */
	" {\"unix\": \"/var/run/docker.sock\", \"action\": \"deny\"},"                     /* 7 */
	" {\"unix\": \"/run/user/*/bus\", \"action\": \"allow\"},"                         /* 8 */
	" {\"unix\": \"@/tmp/.X11-unix/*\", \"action\": \"hitl\"},"                        /* 9 */
	" {\"cidr\": \"0.0.0.0/0\", \"op\": \"listen\", \"action\": \"hitl\"}"             /* 10 */
	"]}}";

START_TEST(test_net_cidr_ports_proto)
{
	shk_policy *p = load_text(net_policy);
	shk_policy_match m;

	m = mnet(p, ip("10.1.2.3", 8000, TCP, CONNECT));
	ck_assert_int_eq(m.rule_index, 1);
	ck_assert_str_eq(m.tool, "net:connect");
	ck_assert_int_eq(mnet(p, ip("10.1.255.255", 8080, TCP, CONNECT)).rule_index, 1);
	ck_assert_int_eq(mnet(p, ip("10.1.2.3", 8081, TCP, CONNECT)).rule_index, -1);
	ck_assert_int_eq(mnet(p, ip("10.1.2.3", 7999, TCP, CONNECT)).rule_index, -1);
	ck_assert_int_eq(mnet(p, ip("10.2.0.1", 8000, TCP, CONNECT)).rule_index, -1);
	ck_assert_int_eq(mnet(p, ip("10.0.255.255", 8000, TCP, CONNECT)).rule_index, -1);
	/* proto: the TCP range rule does not take UDP; the UDP rule does. */
	ck_assert_int_eq(mnet(p, ip("10.1.2.3", 8000, UDP, CONNECT)).rule_index, -1);
	m = mnet(p, ip("10.1.2.3", 53, UDP, SHK_NET_OP_SEND));
	ck_assert_int_eq(m.rule_index, 2);
	ck_assert_str_eq(m.tool, "net:sendto");
	ck_assert_int_eq(m.action, SHK_ACTION_HITL);
	ck_assert_int_eq(mnet(p, ip("10.1.2.3", 53, SHK_NET_PROTO_OTHER, CONNECT)).rule_index, -1);
	/* IPv6 prefix /32. */
	ck_assert_int_eq(mnet(p, ip("fd00:1:ffff::1", 1, TCP, CONNECT)).rule_index, 5);
	ck_assert_int_eq(mnet(p, ip("fd00:2::1", 1, TCP, CONNECT)).rule_index, -1);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_net_v4_mapped_and_ops)
{
	shk_policy *p = load_text(net_policy);
	shk_policy_match m;

	m = mnet(p, ip("::ffff:127.0.0.1", 9999, TCP, CONNECT));
	ck_assert_int_eq(m.rule_index, 3);
	ck_assert_int_eq(mnet(p, ip("127.255.0.9", 1, UDP, SHK_NET_OP_SEND)).rule_index, 3);
	/* A rule written as a v4-mapped network is the IPv4 network. */
	ck_assert_int_eq(mnet(p, ip("192.168.3.4", 1, TCP, CONNECT)).rule_index, 6);
	ck_assert_int_eq(mnet(p, ip("::ffff:192.168.3.4", 1, TCP, CONNECT)).rule_index, 6);
	ck_assert_int_eq(mnet(p, ip("192.169.0.1", 1, TCP, CONNECT)).rule_index, -1);
	/* Not v4-mapped: ::127.0.0.1 (v4-compatible) stays IPv6. */
	ck_assert_int_eq(mnet(p, ip("::127.0.0.1", 1, TCP, CONNECT)).rule_index, -1);
	m = mnet(p, ip("127.0.0.1", 8080, TCP, SHK_NET_OP_BIND));
	ck_assert_int_eq(m.rule_index, 4);
	ck_assert_str_eq(m.tool, "net:bind");
	m = mnet(p, ip("127.0.0.1", 8080, TCP, SHK_NET_OP_LISTEN));
	ck_assert_int_eq(m.rule_index, 10);
	ck_assert_str_eq(m.tool, "net:listen");
	ck_assert_int_eq(mnet(p, ip("::ffff:0.0.0.0", 80, TCP, SHK_NET_OP_LISTEN)).rule_index, 10);
	shk_policy_free(p);
}
END_TEST

/* Review finding: a connect to 0.0.0.0 or :: reaches loopback past a rule
 * that denies loopback. Bind and listen keep "every address". */
START_TEST(test_net_unspecified_is_loopback)
{
	shk_policy *p = load_text(
		"{\"version\": 1, \"net\": {\"default\": \"allow\", \"rules\": ["
		" {\"cidr\": \"127.0.0.0/8\", \"port\": 47011, \"action\": \"deny\"},"
		" {\"cidr\": \"::1/128\", \"port\": 47011, \"action\": \"deny\"},"
		" {\"cidr\": \"0.0.0.0/32\", \"op\": [\"bind\", \"listen\"], \"action\": \"hitl\"}"
		"]}}");

	ck_assert_int_eq(mnet(p, ip("0.0.0.0", 47011, TCP, CONNECT)).rule_index, 0);
	ck_assert_int_eq(mnet(p, ip("0.0.0.0", 47011, UDP, SHK_NET_OP_SEND)).rule_index, 0);
	ck_assert_int_eq(mnet(p, ip("::ffff:0.0.0.0", 47011, TCP, CONNECT)).rule_index, 0);
	ck_assert_int_eq(mnet(p, ip("::", 47011, TCP, CONNECT)).rule_index, 1);
	ck_assert_int_eq(mnet(p, ip("::", 47011, UDP, SHK_NET_OP_SEND)).rule_index, 1);
	ck_assert_int_eq(mnet(p, ip("0.0.0.0", 47012, TCP, CONNECT)).rule_index, -1);
	/* bind/listen: the unspecified address itself */
	ck_assert_int_eq(mnet(p, ip("0.0.0.0", 47011, TCP, SHK_NET_OP_BIND)).rule_index, 2);
	ck_assert_int_eq(mnet(p, ip("0.0.0.0", 47011, TCP, SHK_NET_OP_LISTEN)).rule_index, 2);
	ck_assert_int_eq(mnet(p, ip("::", 47011, TCP, SHK_NET_OP_BIND)).rule_index, -1);
	shk_policy_free(p);
}
END_TEST

/* exec.loader_env: explicit, or the exec default; only in "exec". */
START_TEST(test_exec_loader_env)
{
	shk_policy *p = load_text("{\"version\": 1}");
	shk_policy *q;
	shk_parse_error err;
	const char *bad = "{\"version\": 1, \"net\": {\"loader_env\": \"allow\"}}";
	const char *bad2 = "{\"version\": 1, \"exec\": {\"loader_env\": \"maybe\"}}";

	ck_assert_int_eq(shk_policy_exec_loader_env(p), SHK_ACTION_ALLOW);
	shk_policy_free(p);
	p = load_text("{\"version\": 1, \"exec\": {\"default\": \"deny\"}}");
	ck_assert_int_eq(shk_policy_exec_loader_env(p), SHK_ACTION_DENY);
	shk_policy_free(p);
	p = load_text("{\"version\": 1, \"exec\": {\"default\": \"deny\", \"loader_env\": \"allow\"}}");
	ck_assert_int_eq(shk_policy_exec_loader_env(p), SHK_ACTION_ALLOW);
	shk_policy_free(p);
	p = load_text("{\"version\": 1, \"exec\": {\"loader_env\": \"hitl\", \"rules\": []}}");
	ck_assert_int_eq(shk_policy_exec_loader_env(p), SHK_ACTION_HITL);
	shk_policy_free(p);
	ck_assert_int_eq(shk_policy_load_buffer(bad, strlen(bad), "b.json", &q, &err), -EINVAL);
	ck_assert_int_eq(shk_policy_load_buffer(bad2, strlen(bad2), "b.json", &q, &err), -EINVAL);
	ck_assert_int_gt(err.line, 0);
}
END_TEST

static struct shk_net_dest ux(const char *name, bool abstract, shk_net_op op)
{
	return (struct shk_net_dest){ .family = SHK_NET_UNIX, .unix_name = name,
				      .unix_len = strlen(name), .unix_abstract = abstract, .op = op };
}

START_TEST(test_net_unix)
{
	shk_policy *p = load_text(net_policy);
	struct shk_net_dest nul = ux("/tmp/.X11-unix/X0", true, CONNECT);
	char withnul[] = "/tmp/.X11-unix/X\0zzz";

	ck_assert_int_eq(mnet(p, ux("/var/run/docker.sock", false, CONNECT)).rule_index, 7);
	ck_assert_int_eq(mnet(p, ux("/var/run/docker.sock2", false, CONNECT)).rule_index, -1);
	ck_assert_int_eq(mnet(p, ux("/run/user/1000/bus", false, CONNECT)).rule_index, 8);
	ck_assert_int_eq(mnet(p, ux("/run/user/1000/x/bus", false, CONNECT)).rule_index, -1);
	/* The abstract namespace and the file system are different places. */
	ck_assert_int_eq(mnet(p, ux("/var/run/docker.sock", true, CONNECT)).rule_index, -1);
	ck_assert_int_eq(mnet(p, nul).rule_index, 9);
	ck_assert_int_eq(mnet(p, ux("/tmp/.X11-unix/X0", false, CONNECT)).rule_index, -1);
	/* Abstract names are byte strings: a NUL inside is part of the name. */
	nul.unix_name = withnul;
	nul.unix_len = sizeof(withnul) - 1;
	ck_assert_int_eq(mnet(p, nul).rule_index, 9);
	ck_assert_int_eq(mnet(p, ux("", false, SHK_NET_OP_BIND)).rule_index, -1);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_net_host_rules)
{
	shk_policy *p = load_text(net_policy);
	shk_net_addr addrs[2] = { { .family = SHK_NET_INET4 }, { .family = SHK_NET_INET6 } };
	shk_net_rule_info info;
	shk_policy_match m;

	/* Unresolved: matches nothing. */
	ck_assert_int_eq(mnet(p, ip("93.184.216.34", 443, TCP, CONNECT)).rule_index, -1);
	inet_pton(AF_INET, "93.184.216.34", addrs[0].addr);
	inet_pton(AF_INET6, "2606:2800:220:1::1", addrs[1].addr);
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 0, addrs, 2), 0);
	m = mnet(p, ip("93.184.216.34", 443, TCP, CONNECT));
	ck_assert_int_eq(m.rule_index, 0);
	ck_assert_str_eq(m.tool, "llm");
	ck_assert_str_eq(m.rule_name, "llm");
	ck_assert(m.cost_usd == 0.01);
	ck_assert_int_eq(mnet(p, ip("::ffff:93.184.216.34", 443, TCP, CONNECT)).rule_index, 0);
	ck_assert_int_eq(mnet(p, ip("2606:2800:220:1::1", 443, UDP, CONNECT)).rule_index, 0);
	ck_assert_int_eq(mnet(p, ip("93.184.216.34", 80, TCP, CONNECT)).rule_index, -1);
	ck_assert_int_eq(mnet(p, ip("93.184.216.35", 443, TCP, CONNECT)).rule_index, -1);
	ck_assert_int_eq(shk_policy_net_rule(p, 0, &info), 0);
	ck_assert_int_eq(info.selector, SHK_NET_SEL_HOST);
	ck_assert_str_eq(info.host, "api.example.com");
	ck_assert_uint_eq(info.naddrs, 2);
	/* Cleared again. */
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 0, NULL, 0), 0);
	ck_assert_int_eq(mnet(p, ip("93.184.216.34", 443, TCP, CONNECT)).rule_index, -1);
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 1, addrs, 1), -EINVAL);
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 99, addrs, 1), -ERANGE);
	addrs[0].family = SHK_NET_UNIX;
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 0, addrs, 1), -EINVAL);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_net_bad_dest)
{
	shk_policy *p = load_text(net_policy);
	struct shk_net_dest d = ip("127.0.0.1", 1, TCP, CONNECT);
	shk_policy_match m;

	d.op = SHK_NET_OP_CONNECT | SHK_NET_OP_SEND;
	ck_assert_int_eq(shk_policy_match_net(p, &d, &m), -EINVAL);
	d.op = 0;
	ck_assert_int_eq(shk_policy_match_net(p, &d, &m), -EINVAL);
	d.op = CONNECT;
	d.family = SHK_NET_UNSPEC;
	ck_assert_int_eq(shk_policy_match_net(p, &d, &m), -EINVAL);
	d = ux("x", false, CONNECT);
	d.unix_name = NULL;
	ck_assert_int_eq(shk_policy_match_net(p, &d, &m), -EINVAL);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_rule_iterators)
{
	shk_policy *p = load_text(net_policy);
	shk_policy *e = load_text(exec_policy);
	shk_net_rule_info n;
	shk_exec_rule_info x;

	ck_assert_uint_eq(shk_policy_net_rule_count(p), 11);
	ck_assert_int_eq(shk_policy_net_rule(p, 1, &n), 0);
	ck_assert_int_eq(n.selector, SHK_NET_SEL_CIDR);
	ck_assert_int_eq(n.cidr.family, SHK_NET_INET4);
	ck_assert_uint_eq(n.prefix, 16);
	ck_assert_uint_eq(n.cidr.addr[0], 10);
	ck_assert_uint_eq(n.cidr.addr[1], 1);
	ck_assert_uint_eq(n.port_lo, 8000);
	ck_assert_uint_eq(n.port_hi, 8080);
	ck_assert_int_eq(n.proto, SHK_NET_PROTO_TCP);
	ck_assert_uint_eq(n.ops, SHK_NET_OP_ANY);
	ck_assert_int_eq(shk_policy_net_rule(p, 6, &n), 0);
	ck_assert_int_eq(n.cidr.family, SHK_NET_INET4);
	ck_assert_uint_eq(n.prefix, 16);
	ck_assert_uint_eq(n.cidr.addr[0], 192);
	ck_assert_int_eq(shk_policy_net_rule(p, 3, &n), 0);
	ck_assert_uint_eq(n.ops, SHK_NET_OP_CONNECT | SHK_NET_OP_SEND);
	ck_assert_uint_eq(n.port_lo, 0);
	ck_assert_uint_eq(n.port_hi, 65535);
	ck_assert_int_eq(shk_policy_net_rule(p, 9, &n), 0);
	ck_assert_int_eq(n.selector, SHK_NET_SEL_UNIX);
	ck_assert(n.unix_abstract);
	ck_assert_str_eq(n.unix_pattern, "@/tmp/.X11-unix/*");
	ck_assert_int_eq(shk_policy_net_rule(p, 11, &n), -ERANGE);

	ck_assert_uint_eq(shk_policy_exec_rule_count(e), 5);
	ck_assert_int_eq(shk_policy_exec_rule(e, 0, &x), 0);
	ck_assert_str_eq(x.name, "push");
	ck_assert_str_eq(x.tool, "git.push");
	ck_assert_str_eq(x.path, "/usr/bin/git");
	ck_assert(x.has_argv);
	ck_assert_uint_eq(x.argc, 3);
	ck_assert_str_eq(x.argv[2], "**");
	ck_assert_int_eq(shk_policy_exec_rule(e, 3, &x), 0);
	ck_assert_ptr_null(x.path);
	ck_assert_int_eq(shk_policy_exec_rule(e, 5, &x), -ERANGE);
	shk_policy_free(p);
	shk_policy_free(e);
}
END_TEST

START_TEST(test_cidr_forms)
{
	shk_policy *p = load_text("{\"version\": 1, \"net\": {\"rules\": ["
				  " {\"cidr\": \"192.0.2.7\", \"action\": \"allow\"},"
				  " {\"cidr\": \"::/0\", \"action\": \"hitl\"},"
				  " {\"cidr\": \"0.0.0.0/0\", \"action\": \"deny\"}]}}");

	/* No prefix means a single host; ::/0-like rules stay IPv6 only. */
	ck_assert_int_eq(mnet(p, ip("192.0.2.7", 1, TCP, CONNECT)).rule_index, 0);
	ck_assert_int_eq(mnet(p, ip("192.0.2.8", 1, TCP, CONNECT)).rule_index, 2);
	ck_assert_int_eq(mnet(p, ip("::ffff:192.0.2.8", 1, TCP, CONNECT)).rule_index, 2);
	ck_assert_int_eq(mnet(p, ip("2a00::1", 1, TCP, CONNECT)).rule_index, 1);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_shipped_coding_agent)
{
	shk_policy *p = load_shipped("coding-agent.json");
	const shk_guard_config *g = shk_policy_guard(p);
	shk_policy_match m;

	ck_assert(g->budget_usd == 5.0);
	ck_assert_uint_eq(g->max_repeat_calls, 5);
	ck_assert(g->error_amplification);
	m = mexec(p, "/usr/bin/git", A("git", "push", "origin", "main"));
	ck_assert_int_eq(m.action, SHK_ACTION_HITL);
	ck_assert_str_eq(m.tool, "git.push");
	ck_assert_int_eq(mexec(p, "/usr/bin/git", A("git", "-C", "/r", "push")).action,
			 SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/lib/git-core/git", A("git-push", "origin")).action,
			 SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/bin/git", A("git", "pull")).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mexec(p, "/usr/bin/npm", A("npm", "publish")).action, SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/bin/node",
			       A("node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "publish"))
				 .action, SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/bin/cargo", A("cargo", "publish")).action, SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/bin/python3", A("python3", "-m", "twine", "upload", "d/*"))
				 .action, SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/bin/gh", A("gh", "release", "create", "v1")).action,
			 SHK_ACTION_HITL);
	ck_assert_int_eq(mexec(p, "/usr/bin/npm", A("npm", "install")).action, SHK_ACTION_ALLOW);
	m = mexec(p, "/usr/bin/sudo", A("sudo", "npm", "publish"));
	ck_assert_int_eq(m.action, SHK_ACTION_DENY); /* deny rules come first */
	ck_assert_int_eq(mexec(p, "/bin/su", A("su")).action, SHK_ACTION_DENY);
	ck_assert_int_eq(mexec(p, "/usr/bin/make", A("make")).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mnet(p, ip("127.0.0.1", 3000, TCP, CONNECT)).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mnet(p, ip("::1", 3000, TCP, CONNECT)).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mnet(p, ip("1.1.1.1", 443, TCP, CONNECT)).action, SHK_ACTION_DENY);
	ck_assert_int_eq(mnet(p, ux("/var/run/docker.sock", false, CONNECT)).action,
			 SHK_ACTION_DENY);
	shk_policy_free(p);
}
END_TEST

static double shipped_price(const shk_policy *p, const char *model, double *ret_cache_read)
{
	shk_model_price mp;

	if (shk_policy_model_price(p, model, strlen(model), &mp) < 0)
		return -1;
	*ret_cache_read = mp.cache_read;
	/* OpenAI charges no cache write: absent, so charged at the input price */
	ck_assert(mp.cache_write == mp.input);
	return mp.input + mp.output;
}

/* The shipped OpenAI prices name models exactly: a dearer variant or a dated
 * snapshot is refused as unpriced rather than charged at a cheaper model's
 * rate. */
START_TEST(test_shipped_openai_prices)
{
	shk_policy *p = load_shipped("coding-agent.json");
	double cr;

	ck_assert(shipped_price(p, "gpt-5.5", &cr) == 5 + 30 && cr == 0.5);
	ck_assert(shipped_price(p, "gpt-5.4", &cr) == 2.5 + 15 && cr == 0.25);
	ck_assert(shipped_price(p, "gpt-5.4-mini", &cr) == 0.75 + 4.5 && cr == 0.075);
	ck_assert(shipped_price(p, "gpt-5.4-nano", &cr) == 0.2 + 1.25 && cr == 0.02);
	ck_assert(shipped_price(p, "gpt-4.1", &cr) == 2 + 8 && cr == 0.5);
	ck_assert(shipped_price(p, "gpt-4.1-mini", &cr) == 0.4 + 1.6 && cr == 0.1);
	ck_assert(shipped_price(p, "gpt-4.1-nano", &cr) == 0.1 + 0.4 && cr == 0.025);
	ck_assert(shipped_price(p, "gpt-4o", &cr) == 2.5 + 10 && cr == 1.25);
	ck_assert(shipped_price(p, "gpt-4o-mini", &cr) == 0.15 + 0.6 && cr == 0.075);
	const char *unpriced[] = { "gpt-5.4-pro", "gpt-5.5-pro", "gpt-4o-audio-preview",
				   "gpt-4o-realtime-preview", "gpt-4o-2024-05-13", "gpt-5",
				   "gpt-5-mini", "o3", "gpt-4.1-2025-04-14" };
	for (size_t i = 0; i < sizeof(unpriced) / sizeof(*unpriced); i++)
		ck_assert_msg(shipped_price(p, unpriced[i], &cr) < 0, "%s is priced", unpriced[i]);
	shk_policy_free(p);
}
END_TEST

/* Claude Code's Bash proposals are judged as the exec default would judge
 * them, without their free-text description (docs/gateway.md). */
START_TEST(test_shipped_bash_proposals)
{
	shk_policy *p = load_shipped("coding-agent.json");
	const char *const *ign;
	shk_policy_match m;
	size_t n;

	ck_assert_int_eq(shk_policy_match_model_call(p, "Bash", 4, &m), 0);
	ck_assert_str_eq(m.rule_name, "bash");
	ck_assert_int_eq(m.action, shk_policy_exec_default(p));
	ign = shk_policy_model_ignore_input(p, m.rule_index, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ign[0], "description");
	ck_assert_int_eq(shk_policy_match_model_call(p, "Read", 4, &m), 0);
	ck_assert_int_eq(m.rule_index, -1);
	ck_assert_int_eq(shk_policy_match_model_call(p, "model:claude-sonnet-4", 21, &m), 0);
	ck_assert_int_eq(m.rule_index, -1);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_shipped_ci_agent)
{
	shk_policy *p = load_shipped("ci-agent.json");
	const shk_guard_config *g = shk_policy_guard(p);

	ck_assert_uint_eq(g->max_repeat_calls, 3);
	ck_assert_int_eq(g->hitl_mode, SHK_HITL_NEVER);
	ck_assert_int_eq(mexec(p, "/usr/bin/git", A("git", "status")).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mexec(p, "/bin/sh", A("sh", "-c", "true")).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mexec(p, "/usr/bin/sudo", A("sudo", "true")).action, SHK_ACTION_DENY);
	ck_assert_int_eq(mexec(p, "/tmp/evil", A("evil")).action, SHK_ACTION_DENY);
	ck_assert_int_eq(mexec(p, "/usr/bin/x/y", A("y")).action, SHK_ACTION_DENY);
	ck_assert_int_eq(mnet(p, ip("127.0.0.1", 5432, TCP, CONNECT)).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mnet(p, ip("127.0.0.1", 8080, TCP, SHK_NET_OP_BIND)).action,
			 SHK_ACTION_DENY);
	ck_assert_int_eq(mnet(p, ip("140.82.112.3", 443, TCP, CONNECT)).action, SHK_ACTION_DENY);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_shipped_observe_only)
{
	shk_policy *p = load_shipped("observe-only.json");
	const shk_guard_config *g = shk_policy_guard(p);

	ck_assert(g->budget_usd == 0);
	ck_assert_uint_eq(g->max_repeat_calls, 0);
	ck_assert_int_eq(mexec(p, "/usr/bin/sudo", A("sudo")).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mnet(p, ip("1.1.1.1", 443, TCP, CONNECT)).action, SHK_ACTION_ALLOW);
	ck_assert_int_eq(mnet(p, ux("/var/run/docker.sock", false, CONNECT)).action,
			 SHK_ACTION_ALLOW);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_net_may_allow_ip)
{
	static const char *const none[] = {
		"{\"version\":1}",
		("{\"version\":1,\"net\":{\"default\":\"deny\",\"rules\":["
		 "{\"unix\":\"/run/x.sock\",\"action\":\"allow\"},"
		 "{\"cidr\":\"10.0.0.0/8\",\"action\":\"deny\"},"
		 "{\"cidr\":\"127.0.0.0/8\",\"op\":[\"bind\",\"listen\"],\"action\":\"allow\"}]}}"),
	};
	static const char *const some[] = {
		"{\"version\":1,\"net\":{\"default\":\"allow\"}}",
		"{\"version\":1,\"net\":{\"default\":\"hitl\"}}",
		"{\"version\":1,\"net\":{\"rules\":[{\"cidr\":\"10.0.0.0/8\",\"action\":\"allow\"}]}}",
		("{\"version\":1,\"net\":{\"rules\":[{\"host\":\"example.com\",\"op\":\"send\","
		 "\"action\":\"hitl\"}]}}"),
	};

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		shk_policy *p = load_text(none[i]);
		ck_assert_msg(!shk_policy_net_may_allow_ip(p), "%s", none[i]);
		shk_policy_free(p);
	}
	for (size_t i = 0; i < sizeof(some) / sizeof(some[0]); i++) {
		shk_policy *p = load_text(some[i]);
		ck_assert_msg(shk_policy_net_may_allow_ip(p), "%s", some[i]);
		shk_policy_free(p);
	}
}
END_TEST

/* What `policy check` lists of "models": rules as written, the default
 * (the exec default when absent), source and date, entry positions. */
START_TEST(test_model_rule_iterators)
{
	const char *text = "{\"version\":1,\"exec\":{\"default\":\"hitl\"},\n"
			   "\"models\":{\"source\":\"S\",\"date\":\"D\",\"rules\":[\n"
			   "{\"name\":\"b\",\"tool\":\"Bash\",\"action\":\"deny\",\"ignore_input\":[\"description\",\"command\"]},\n"
			   "{\"tool\":\"model:*\",\"action\":\"allow\"}]}}";
	shk_policy *p = load_text(text);
	shk_model_rule_info r;
	int line = 0, col = 0;

	ck_assert_uint_eq(shk_policy_model_rule_count(p), 2);
	ck_assert_int_eq(shk_policy_model_rule(p, 0, &r), 0);
	ck_assert_str_eq(r.name, "b");
	ck_assert_str_eq(r.tool, "Bash");
	ck_assert_int_eq(r.action, SHK_ACTION_DENY);
	ck_assert_uint_eq(r.nignore_input, 2);
	ck_assert_str_eq(r.ignore_input[1], "command");
	ck_assert_ptr_null(r.ignore_input[2]);
	ck_assert_int_eq(shk_policy_model_rule(p, 1, &r), 0);
	ck_assert_ptr_null(r.name);
	ck_assert_str_eq(r.tool, "model:*");
	ck_assert_ptr_null(r.ignore_input);
	ck_assert_uint_eq(r.nignore_input, 0);
	ck_assert_int_eq(shk_policy_model_rule(p, 2, &r), -ERANGE);
	ck_assert(shk_policy_models_default_implicit(p));
	ck_assert_int_eq(shk_policy_models_default(p), SHK_ACTION_HITL);
	ck_assert_str_eq(shk_policy_models(p)->source, "S");
	ck_assert_str_eq(shk_policy_models(p)->date, "D");
	ck_assert_int_eq(shk_policy_model_ignore_input_locate(text, strlen(text), 0, 1, &line, &col), 0);
	ck_assert_int_eq(line, 3);
	ck_assert_int_eq(col, 73);
	ck_assert_int_lt(shk_policy_model_ignore_input_locate(text, strlen(text), 1, 0, &line, &col), 0);
	shk_policy_free(p);

	p = load_text("{\"version\":1,\"models\":{\"default\":\"deny\"}}");
	ck_assert(!shk_policy_models_default_implicit(p));
	ck_assert_int_eq(shk_policy_models_default(p), SHK_ACTION_DENY);
	ck_assert_ptr_null(shk_policy_models(p)->source);
	ck_assert_ptr_null(shk_policy_models(p)->date);
	ck_assert_uint_eq(shk_policy_model_rule_count(p), 0);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(shk_action_name(SHK_ACTION_HITL), "hitl");
	ck_assert_str_eq(shk_hitl_mode_name(SHK_HITL_ON_THRESHOLD), "on_threshold");
	ck_assert_str_eq(shk_net_op_name(SHK_NET_OP_LISTEN), "listen");
	ck_assert_str_eq(shk_net_proto_name(SHK_NET_PROTO_UDP), "udp");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_guard_fields);
	tcase_add_test(tc, test_digest);
	tcase_add_test(tc, test_exec_matching);
	tcase_add_test(tc, test_exec_bad_calls);
	tcase_add_test(tc, test_net_cidr_ports_proto);
	tcase_add_test(tc, test_net_v4_mapped_and_ops);
	tcase_add_test(tc, test_net_unspecified_is_loopback);
	tcase_add_test(tc, test_exec_loader_env);
	tcase_add_test(tc, test_net_unix);
	tcase_add_test(tc, test_net_host_rules);
	tcase_add_test(tc, test_net_bad_dest);
	tcase_add_test(tc, test_rule_iterators);
	tcase_add_test(tc, test_cidr_forms);
	tcase_add_test(tc, test_shipped_coding_agent);
	tcase_add_test(tc, test_shipped_openai_prices);
	tcase_add_test(tc, test_shipped_bash_proposals);
	tcase_add_test(tc, test_shipped_ci_agent);
	tcase_add_test(tc, test_shipped_observe_only);
	tcase_add_test(tc, test_net_may_allow_ip);
	tcase_add_test(tc, test_model_rule_iterators);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
