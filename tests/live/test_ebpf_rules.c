/* SPDX-License-Identifier: MIT */
/*
 * Unit test (suite 'unit', no privileges) of the rule compiler behind the
 * LPM tries: src/ebpf/netrules.c. Besides fixed cases, a model of the kernel
 * side (longest-prefix lookup, then first match in the stored list) is
 * compared with a plain first-match scan of the rules over random inputs.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <shackle/policy.h>

#include "ebpf/internal.h"
#include "ebpf/netrules.h"
#include "checkrun.h"

static struct shk_ebpf_net_rule v4(const char *net, unsigned prefix, uint16_t lo, uint16_t hi,
				   uint8_t proto, uint8_t ops, uint8_t action)
{
	struct shk_ebpf_net_rule r = { .family = AF_INET, .prefix = prefix, .port_lo = lo,
				       .port_hi = hi, .proto = proto, .ops = ops,
				       .action = action, .tool_id = SHK_EBPF_NO_TOOL };

	ck_assert_int_eq(inet_pton(AF_INET, net, r.addr), 1);
	return r;
}

static const struct shk_ebpf_lpm_entry *find(const struct shk_ebpf_lpm_entry *e, size_t n,
					     int fam, const char *net, unsigned prefix)
{
	uint8_t a[16] = { 0 };

	ck_assert_int_eq(inet_pton(fam, net, a), 1);
	for (size_t i = 0; i < n; i++)
		if (e[i].family == fam && e[i].prefix == prefix && !memcmp(e[i].addr, a, 16))
			return &e[i];
	return NULL;
}

START_TEST(test_nested_prefixes_keep_policy_order)
{
	struct shk_ebpf_net_rule r[] = {
		v4("10.0.0.0", 8, 22, 22, IPPROTO_TCP, SHK_EBPF_OP_CONNECT, SHK_EBPF_DENY),
		v4("10.1.2.3", 16, 0, 65535, 0, SHK_EBPF_OP_ALL, SHK_EBPF_ALLOW), /* host bits */
		v4("0.0.0.0", 0, 0, 65535, 0, SHK_EBPF_OP_ALL, SHK_EBPF_DENY),
		v4("10.1.0.0", 16, 80, 80, 0, SHK_EBPF_OP_SEND, SHK_EBPF_HITL), /* same prefix */
	};
	struct shk_ebpf_lpm_entry out[4];
	const struct shk_ebpf_lpm_entry *x;
	size_t n;

	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, 4, out, &n), 0);
	ck_assert_uint_eq(n, 3);
	x = find(out, n, AF_INET, "10.1.0.0", 16);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->set.count, 4);
	for (uint32_t i = 0; i < 4; i++)
		ck_assert_uint_eq(x->set.rules[i].index, i);
	x = find(out, n, AF_INET, "10.0.0.0", 8);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->set.count, 2);
	ck_assert_uint_eq(x->set.rules[0].index, 0);
	ck_assert_uint_eq(x->set.rules[1].index, 2);
	ck_assert_uint_eq(x->set.rules[0].port_lo, 22);
	x = find(out, n, AF_INET, "0.0.0.0", 0);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->set.count, 1);
}
END_TEST

START_TEST(test_v4_mapped_becomes_v4_and_v6_stays_apart)
{
	struct shk_ebpf_net_rule r[2] = {
		{ .family = AF_INET6, .prefix = 120, .port_hi = 65535, .ops = SHK_EBPF_OP_ALL,
		  .action = SHK_EBPF_DENY },
		{ .family = AF_INET6, .prefix = 0, .port_hi = 65535, .ops = SHK_EBPF_OP_ALL,
		  .action = SHK_EBPF_ALLOW },
	};
	struct shk_ebpf_lpm_entry out[2];
	const struct shk_ebpf_lpm_entry *x;
	size_t n;

	inet_pton(AF_INET6, "::ffff:127.0.0.9", r[0].addr);
	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, 2, out, &n), 0);
	ck_assert_uint_eq(n, 2);
	x = find(out, n, AF_INET, "127.0.0.0", 24);
	ck_assert_ptr_nonnull(x);
	/* ::/0 is IPv6 only: it does not cover IPv4 traffic. */
	ck_assert_uint_eq(x->set.count, 1);
	x = find(out, n, AF_INET6, "::", 0);
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->set.count, 1);
	ck_assert_uint_eq(x->set.rules[0].index, 1);
}
END_TEST

START_TEST(test_bad_rules_are_named)
{
	struct shk_ebpf_net_rule r[3] = {
		v4("1.2.3.4", 32, 0, 65535, 0, SHK_EBPF_OP_ALL, SHK_EBPF_ALLOW),
		v4("1.2.3.4", 32, 0, 65535, 0, SHK_EBPF_OP_ALL, SHK_EBPF_ALLOW),
		v4("1.2.3.4", 32, 0, 65535, 0, SHK_EBPF_OP_ALL, SHK_EBPF_ALLOW),
	};
	struct shk_ebpf_lpm_entry out[3];
	size_t n = 99;

	r[1].prefix = 33;
	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, 3, out, &n), -EINVAL);
	ck_assert_uint_eq(n, 1);
	r[1].prefix = 32;
	r[2].port_lo = 10, r[2].port_hi = 9;
	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, 3, out, &n), -EINVAL);
	ck_assert_uint_eq(n, 2);
	r[2].port_lo = 0, r[2].ops = 0;
	ck_assert_int_eq(shk_ebpf_net_rule_check(&r[2]), -EINVAL);
	r[2].ops = 8;
	ck_assert_int_eq(shk_ebpf_net_rule_check(&r[2]), -EINVAL);
	r[2].ops = 1, r[2].proto = IPPROTO_ICMP;
	ck_assert_int_eq(shk_ebpf_net_rule_check(&r[2]), -EINVAL);
	r[2].proto = 0, r[2].action = 3;
	ck_assert_int_eq(shk_ebpf_net_rule_check(&r[2]), -EINVAL);
	r[2].action = 0, r[2].family = AF_UNIX;
	ck_assert_int_eq(shk_ebpf_net_rule_check(&r[2]), -EINVAL);
}
END_TEST

START_TEST(test_too_many_rules_on_one_prefix)
{
	struct shk_ebpf_net_rule r[SHK_EBPF_RULES_PER_PREFIX + 1];
	struct shk_ebpf_lpm_entry out[SHK_EBPF_RULES_PER_PREFIX + 1];
	size_t n;

	for (unsigned i = 0; i <= SHK_EBPF_RULES_PER_PREFIX; i++)
		r[i] = v4("192.168.0.0", 16 + (i % 8), (uint16_t)i, (uint16_t)i, 0,
			  SHK_EBPF_OP_CONNECT, SHK_EBPF_DENY);
	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, SHK_EBPF_RULES_PER_PREFIX, out, &n), 0);
	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, SHK_EBPF_RULES_PER_PREFIX + 1, out, &n),
			 -E2BIG);
}
END_TEST

/* ---- model check ---- */

static bool in_prefix(const uint8_t *a, const uint8_t *net, unsigned prefix)
{
	for (unsigned i = 0; i < prefix; i++) {
		unsigned byte = i / 8, bit = 7 - i % 8;

		if (((a[byte] >> bit) & 1) != ((net[byte] >> bit) & 1))
			return false;
	}
	return true;
}

/* The reference: first rule in order, as the policy defines it (IPv4 only). */
static int reference(const struct shk_ebpf_net_rule *r, size_t n, const uint8_t a[4],
		     uint16_t port, uint8_t proto, uint8_t op)
{
	for (size_t i = 0; i < n; i++)
		if (in_prefix(a, r[i].addr, r[i].prefix) && (r[i].ops & op) &&
		    (!r[i].proto || r[i].proto == proto) && port >= r[i].port_lo &&
		    port <= r[i].port_hi)
			return (int)i;
	return -1;
}

/* What the BPF side does: longest prefix, then the stored list in order. */
static int kernel_model(const struct shk_ebpf_lpm_entry *e, size_t n, const uint8_t a[4],
			uint16_t port, uint8_t proto, uint8_t op)
{
	const struct shk_ebpf_lpm_entry *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (in_prefix(a, e[i].addr, e[i].prefix) && (!best || e[i].prefix > best->prefix))
			best = &e[i];
	for (uint32_t k = 0; best && k < best->set.count; k++) {
		const struct shk_bpf_rule *x = &best->set.rules[k];

		if ((x->ops & op) && (!x->proto || x->proto == proto) && port >= x->port_lo &&
		    port <= x->port_hi)
			return (int)x->index;
	}
	return -1;
}

START_TEST(test_model_matches_first_match)
{
	enum { NR = 12, TRIES = 20000 };
	struct shk_ebpf_net_rule r[NR];
	struct shk_ebpf_lpm_entry out[NR];
	static const uint8_t protos[] = { 0, IPPROTO_TCP, IPPROTO_UDP };
	unsigned seed = 12345u + (unsigned)_i;
	size_t n;

	/* Addresses from a small space so that prefixes nest and collide often. */
	for (int i = 0; i < NR; i++) {
		uint16_t lo = (uint16_t)(rand_r(&seed) % 8), hi = (uint16_t)(lo + rand_r(&seed) % 8);

		r[i] = (struct shk_ebpf_net_rule){ .family = AF_INET,
			.prefix = (unsigned)(rand_r(&seed) % 33), .port_lo = lo, .port_hi = hi,
			.proto = protos[rand_r(&seed) % 3],
			.ops = (uint8_t)(1 + rand_r(&seed) % 7), .action = (uint8_t)(rand_r(&seed) % 3),
			.tool_id = SHK_EBPF_NO_TOOL };
		r[i].addr[0] = 10;
		r[i].addr[3] = (uint8_t)(rand_r(&seed) % 4 * 64);
		for (unsigned b = r[i].prefix; b < 32; b++) /* canonical: host bits zero */
			r[i].addr[b / 8] &= (uint8_t)~(1u << (7 - b % 8));
	}
	ck_assert_int_eq(shk_ebpf_compile_net_rules(r, NR, out, &n), 0);
	for (int t = 0; t < TRIES; t++) {
		uint8_t a[4] = { (uint8_t)(rand_r(&seed) % 2 ? 10 : 11), 0, 0,
				 (uint8_t)(rand_r(&seed) % 256) };
		uint16_t port = (uint16_t)(rand_r(&seed) % 18);
		uint8_t proto = protos[1 + rand_r(&seed) % 2], op = (uint8_t)(1u << rand_r(&seed) % 3);

		ck_assert_int_eq(kernel_model(out, n, a, port, proto, op),
				 reference(r, NR, a, port, proto, op));
	}
}
END_TEST

START_TEST(test_policy_to_kernel_rules)
{
	static const char text[] =
		"{\"version\": 1, \"net\": {\"default\": \"deny\", \"rules\": [\n"
		" {\"name\": \"sock\", \"unix\": \"/run/**\", \"action\": \"allow\"},\n"
		" {\"name\": \"web\", \"host\": \"example.test\", \"port\": \"80-443\","
		"  \"proto\": \"tcp\", \"action\": \"hitl\", \"cost_usd\": 0.5},\n"
		" {\"name\": \"srv\", \"cidr\": \"0.0.0.0/0\", \"op\": [\"listen\"],"
		"  \"action\": \"allow\"},\n"
		" {\"name\": \"lan\", \"cidr\": \"10.0.0.0/8\", \"op\": [\"connect\", \"bind\"],"
		"  \"proto\": \"udp\", \"action\": \"deny\"}]}}";
	shk_net_addr addrs[2] = { { .family = SHK_NET_INET4 }, { .family = SHK_NET_INET6 } };
	struct shk_ebpf_net_rule *r = NULL;
	shk_parse_error perr;
	shk_policy *p = NULL;
	size_t n = 0, skipped = 0;

	ck_assert_int_eq(shk_policy_load_buffer(text, sizeof(text) - 1, "t", &p, &perr), 0);
	inet_pton(AF_INET, "192.0.2.7", addrs[0].addr);
	inet_pton(AF_INET6, "2001:db8::7", addrs[1].addr);
	/* Unresolved, the host rule matches nothing: no kernel rule. */
	ck_assert_int_eq(shk_ebpf_rules_from_policy((struct shk_policy *)p, &r, &n, &skipped), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(skipped, 2); /* unix + listen-only */
	free(r);
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 1, addrs, 2), 0);
	ck_assert_int_eq(shk_ebpf_rules_from_policy((struct shk_policy *)p, &r, &n, &skipped), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(r[0].family, AF_INET);
	ck_assert_uint_eq(r[0].prefix, 32);
	ck_assert_uint_eq(r[0].port_lo, 80);
	ck_assert_uint_eq(r[0].port_hi, 443);
	ck_assert_uint_eq(r[0].proto, IPPROTO_TCP);
	ck_assert_uint_eq(r[0].action, SHK_EBPF_HITL);
	ck_assert_uint_eq(r[0].tool_id, 1); /* the rule's index in the section */
	ck_assert_int_eq(r[1].family, AF_INET6);
	ck_assert_uint_eq(r[1].prefix, 128);
	ck_assert_int_eq(r[2].family, AF_INET);
	ck_assert_uint_eq(r[2].prefix, 8);
	ck_assert_uint_eq(r[2].ops, SHK_EBPF_OP_CONNECT | SHK_EBPF_OP_BIND);
	ck_assert_uint_eq(r[2].proto, IPPROTO_UDP);
	ck_assert_uint_eq(r[2].action, SHK_EBPF_DENY);
	ck_assert_uint_eq(r[2].tool_id, 3);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(shk_ebpf_net_rule_check(&r[i]), 0);
	free(r);
	shk_policy_free(p);
}
END_TEST

START_TEST(test_event_decode_bounds_everything)
{
	struct shk_bpf_event k;
	struct shk_bpf_net_event n;
	struct shk_ebpf_event ev;
	const char *argv[8];

	memset(&k, 'x', sizeof(k)); /* no terminators anywhere */
	k.kind = SHK_BPF_EV_EXEC;
	k.verdict = SHK_BPF_DENY;
	k.exec.args_len = 100000; /* lies */
	memcpy(k.exec.args, "sh\0-c\0true", 11);
	shk_ebpf_event_decode(&k, &ev);
	ck_assert_uint_eq(strlen(ev.comm), sizeof(ev.comm) - 1);
	ck_assert_uint_eq(strlen(ev.filename), sizeof(ev.filename) - 1);
	ck_assert_uint_eq(ev.args_len, sizeof(ev.args) - 1);
	ck_assert(ev.args_truncated);
	ck_assert_uint_eq(shk_ebpf_event_argv(&ev, argv, 2), 2);
	ck_assert_str_eq(argv[0], "sh");
	ck_assert_str_eq(argv[1], "-c");
	ck_assert_uint_eq(shk_ebpf_event_argv(&ev, argv, 8), 4);
	ck_assert_str_eq(argv[2], "true");
	ck_assert_uint_eq(strlen(argv[3]), sizeof(ev.args) - 1 - 11); /* cut, still terminated */

	memset(&n, 0, sizeof(n));
	n.kind = SHK_BPF_EV_NET;
	n.reason = SHK_BPF_R_RULE;
	n.rule = 7;
	n.tool_id = 3;
	n.family = AF_INET;
	n.port = 443;
	n.op = SHK_BPF_OP_SEND;
	n.sock_type = SOCK_DGRAM;
	n.cgroup_id = 42;
	memcpy(n.addr, "\x7f\0\0\1xxxxxxxxxxxx", 16);
	shk_ebpf_event_decode(&n, &ev);
	ck_assert_int_eq(ev.kind, SHK_EBPF_EV_NET);
	ck_assert_int_eq(ev.dest.family, AF_INET);
	ck_assert_uint_eq(ev.dest.port, 443);
	ck_assert_uint_eq(ev.dest.op, SHK_EBPF_OP_SEND);
	ck_assert_uint_eq(ev.dest.addr[0], 127);
	ck_assert_uint_eq(ev.dest.addr[3], 1);
	ck_assert_uint_eq(ev.dest.addr[4], 0); /* an IPv4 address is 4 bytes */
	ck_assert_uint_eq(ev.dest.cgroup_id, 42);
	ck_assert_uint_eq(ev.cgroup_id, 42);
	ck_assert_int_eq(ev.sock_type, SOCK_DGRAM);
	ck_assert_uint_eq(ev.rule, 7);
	ck_assert_uint_eq(ev.tool_id, 3);
	ck_assert_uint_eq(ev.once_digest, 0);
	ck_assert_str_eq(ev.comm, "");

	/* a consumed approval: its digest in the bytes of rule and tool id */
	n.reason = SHK_BPF_R_ONCE;
	n.once_digest = 0x1122334455667788ULL;
	shk_ebpf_event_decode(&n, &ev);
	ck_assert_uint_eq(ev.once_digest, 0x1122334455667788ULL);
	ck_assert_uint_eq(ev.rule, SHK_EBPF_NO_RULE);
	ck_assert_uint_eq(ev.tool_id, SHK_BPF_NO_TOOL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ebpf-rules");
	TCase *tc = tcase_create("compile");

	tcase_add_test(tc, test_nested_prefixes_keep_policy_order);
	tcase_add_test(tc, test_v4_mapped_becomes_v4_and_v6_stays_apart);
	tcase_add_test(tc, test_bad_rules_are_named);
	tcase_add_test(tc, test_too_many_rules_on_one_prefix);
	tcase_add_loop_test(tc, test_model_matches_first_match, 0, 20);
	tcase_add_test(tc, test_policy_to_kernel_rules);
	tcase_add_test(tc, test_event_decode_bounds_everything);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
