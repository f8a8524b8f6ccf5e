/* SPDX-License-Identifier: MIT */
/*
 * Matching allocates nothing. Linked with -Wl,--wrap=malloc (and calloc,
 * realloc, free), so every heap call made by libshackle's objects in this
 * executable goes through the counters below.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stddef.h>
#include <string.h>

#include <shackle/policy.h>

#include "testutil.h"
#include "checkrun.h"
#include "wrap_alloc.h"

static unsigned long heap_calls;

void *__wrap_malloc(size_t n)
{
	heap_calls++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	heap_calls++;
	return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	heap_calls++;
	return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
	heap_calls++;
	__real_free(p);
}

START_TEST(test_match_does_not_allocate)
{
	static const char *const argv[] = { "git", "-C", "/r", "push", "origin", "main" };
	static const char *const argv2[] = { "node", "/usr/lib/node_modules/npm/bin/npm-cli.js",
					     "publish" };
	shk_policy *p = NULL;
	shk_parse_error err;
	shk_policy_match m;
	shk_net_addr a = { .family = SHK_NET_INET4, .addr = { 10, 0, 0, 1 } };
	struct shk_net_dest d = { .family = SHK_NET_INET6, .port = 443,
				  .proto = SHK_NET_PROTO_TCP, .op = SHK_NET_OP_CONNECT };
	struct shk_net_dest u = { .family = SHK_NET_UNIX, .unix_name = "/var/run/docker.sock",
				  .unix_len = 20, .op = SHK_NET_OP_CONNECT };
	unsigned long before, after;
	shk_model_rule_info mr;
	shk_model_price mp;
	int errors = 0;

	heap_calls = 0;
	ck_assert_int_eq(shk_policy_load_file(shk_test_src("policies/coding-agent.json"), &p, &err), 0);
	/* The counters see the loader's allocations, so they would see the matcher's. */
	ck_assert_uint_gt(heap_calls, 10);
	ck_assert_int_eq(shk_policy_set_host_addrs(p, 0, &a, 1), 0);
	inet_pton(AF_INET6, "::ffff:10.0.0.1", d.addr);

	/* No Check assertions inside the counted region: they use the heap themselves. */
	before = heap_calls;
	for (int i = 0; i < 1000; i++) {
		errors |= shk_policy_match_exec(p, "/usr/bin/git", argv, 6, &m);
		errors |= shk_policy_match_exec(p, "/usr/bin/node", argv2, 3, &m);
		errors |= shk_policy_match_exec(p, "/usr/bin/make", argv, 1, &m);
		errors |= shk_policy_match_net(p, &d, &m);
		errors |= shk_policy_match_net(p, &u, &m);
		/* what `policy check` lists of the gateway's section */
		errors |= shk_policy_model_rule(p, 0, &mr);
		errors |= shk_policy_model_price_at(p, 0, &mp);
		errors |= shk_policy_models_default(p) != SHK_ACTION_ALLOW;
		errors |= !shk_policy_models_default_implicit(p);
	}
	after = heap_calls;
	ck_assert_int_eq(errors, 0);
	ck_assert_uint_eq(after, before);
	ck_assert_str_eq(m.tool, "net:connect");
	ck_assert_int_eq(m.action, SHK_ACTION_DENY);
	shk_policy_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy_noalloc");
	TCase *tc = tcase_create("noalloc");

	tcase_add_test(tc, test_match_does_not_allocate);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
