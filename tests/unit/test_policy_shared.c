/* SPDX-License-Identifier: MIT */
/*
 * The policy's "shared" section: what it loads to, and every bad input
 * refused with the line and column of the value (or key) at fault. The
 * expected position is that of the first occurrence of `at` in the text,
 * so each case names the token the message must point at.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include <shackle/policy.h>

#include "checkrun.h"

struct bad {
	const char *text;
	const char *at;     /* where the error is: first occurrence in text */
	const char *needle; /* must appear in the message */
};

#define BUDGET "{\"version\": 1, \"guard\": {\"budget_usd\": 5},\n"

static const struct bad cases[] = {
	{ BUDGET " \"shared\": []}", "[]", "shared: expected an object, got an array" },
	{ BUDGET " \"shared\": {\"scopes\": {\"budget\": \"org\"}, \"org\": \"a\"}}", "{\"scopes",
	  "shared: missing required field \"redis\"" },
	{ BUDGET " \"shared\": {\"redis\": \"http://x\", \"scopes\": {}}}", "\"http",
	  "shared.redis: expected \"redis://host:port\" or \"unix:/path\"" },
	{ BUDGET " \"shared\": {\"redis\": \"redis://u:p@h:1\"}}", "\"redis://",
	  "shared.redis: give only host and port" },
	{ BUDGET " \"shared\": {\"redis\": \"redis://h:0\"}}", "\"redis://",
	  "shared.redis: the port is a number from 1 to 65535" },
	{ BUDGET " \"shared\": {\"redis\": \"redis://h:6379x\"}}", "\"redis://", "the port is" },
	{ BUDGET " \"shared\": {\"redis\": \"redis://h_x\"}}", "\"redis://", "the host is a name" },
	{ BUDGET " \"shared\": {\"redis\": \"redis://[::1\"}}", "\"redis://", "[addr]:port" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:rel.sock\"}}", "\"unix:", "absolute path" },
	{ BUDGET " \"shared\": {\"redis\": \"\"}}", "\"\"", "shared.redis: expected a non-empty string" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\",\n  \"timeout_ms\": 0}}", "0}",
	  "shared.timeout_ms: 0 is out of range (1 to 60000)" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"lease_s\": \"5\"}}", "\"5\"",
	  "shared.lease_s: expected an integer, got a string" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"colour\": 1}}", "\"colour",
	  "shared.colour: unknown field" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"org\": \"a b\"}}", "\"a b",
	  "shared.org: \"a b\" is not a name" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\"}}", "{\"redis",
	  "shared: missing required field \"scopes\"" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"scopes\": {}}}", "{}}",
	  "shared.scopes: shares nothing" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"scopes\": {\"budget\": \"team\"}}}", "\"team",
	  "shared.scopes.budget: expected \"session\", \"agent\" or \"org\"" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\",\n   \"scopes\": {\"breaker\": \"org\"}}}", "\"org\"}",
	  "shared.scopes.breaker: \"org\" needs shared.org" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"scopes\": {\"budget\": \"agent\"}}}", "\"agent\"}",
	  "shared.scopes.budget: \"agent\" needs shared.agent" },
	{ BUDGET " \"shared\": {\"redis\": \"unix:/r\", \"scopes\": {\"budget\": \"session\", \"x\": 1}}}",
	  "\"x\"", "shared.scopes.x: unknown field" },
	{ "{\"version\": 1,\n \"shared\": {\"redis\": \"unix:/r\", \"scopes\": {\"budget\": \"session\"}}}",
	  "\"session", "shared.scopes.budget: a shared budget needs guard.budget_usd > 0" },
	{ "{\"version\": 1, \"guard\": {\"budget_usd\": 1e10},\n \"shared\": {\"redis\": \"unix:/r\", "
	  "\"scopes\": {\"budget\": \"session\"}}}", "\"session", "a shared budget is at most" },
};

/* 1-based line and column (bytes; the texts are ASCII) of `at` in text. */
static void locate(const char *text, const char *at, int *line, int *col)
{
	const char *p = strstr(text, at);

	ck_assert_ptr_nonnull(p);
	*line = 1;
	*col = 1;
	for (const char *q = text; q < p; q++, (*col)++)
		if (*q == '\n')
			(*line)++, *col = 0;
}

START_TEST(bad_input)
{
	const struct bad *b = &cases[_i];
	shk_policy *p = NULL;
	shk_parse_error err;
	int line, col;

	ck_assert_int_eq(shk_policy_load_buffer(b->text, strlen(b->text), "t.json", &p, &err), -EINVAL);
	ck_assert_ptr_null(p);
	locate(b->text, b->at, &line, &col);
	ck_assert_msg(strstr(err.text, b->needle), "case %d: %s", _i, err.text);
	ck_assert_msg(err.line == line && err.column == col, "case %d: %d:%d, want %d:%d (%s)", _i,
		      err.line, err.column, line, col, err.text);
	ck_assert_str_eq(err.source, "t.json");
}
END_TEST

static shk_policy *load(const char *text)
{
	shk_policy *p = NULL;
	shk_parse_error err;
	int r = shk_policy_load_buffer(text, strlen(text), "t.json", &p, &err);

	ck_assert_msg(r == 0, "%s:%d:%d: %s", err.source, err.line, err.column, err.text);
	return p;
}

START_TEST(loads)
{
	shk_policy *p = load(BUDGET " \"shared\": {\"redis\": \"redis://[::1]:7000\", \"timeout_ms\": 50,"
			     " \"org\": \"acme\", \"agent\": \"ci-1\", \"lease_s\": 30,"
			     " \"scopes\": {\"budget\": \"org\", \"breaker\": \"agent\"}}}");
	const shk_shared_config *c = shk_policy_shared(p);

	ck_assert_ptr_nonnull(c);
	ck_assert(!c->is_unix);
	ck_assert_str_eq(c->host, "::1");
	ck_assert_int_eq(c->port, 7000);
	ck_assert_int_eq(c->timeout_ms, 50);
	ck_assert_int_eq(c->lease_s, 30);
	ck_assert_int_eq(c->budget, SHK_SCOPE_ORG);
	ck_assert_int_eq(c->breaker, SHK_SCOPE_AGENT);
	ck_assert_str_eq(c->org, "acme");
	ck_assert_str_eq(c->agent, "ci-1");
	shk_policy_free(p);

	p = load(BUDGET " \"shared\": {\"redis\": \"redis://cache.internal\","
		 " \"scopes\": {\"breaker\": \"session\"}}}");
	c = shk_policy_shared(p);
	ck_assert_str_eq(c->host, "cache.internal");
	ck_assert_int_eq(c->port, 6379);
	ck_assert_int_eq(c->timeout_ms, 200);
	ck_assert_int_eq(c->lease_s, 600);
	ck_assert_int_eq(c->budget, SHK_SCOPE_NONE);
	shk_policy_free(p);

	p = load("{\"version\": 1, \"shared\": {\"redis\": \"unix:/run/redis/redis.sock\","
		 " \"scopes\": {\"breaker\": \"session\"}}}");
	ck_assert(shk_policy_shared(p)->is_unix);
	ck_assert_str_eq(shk_policy_shared(p)->path, "/run/redis/redis.sock");
	shk_policy_free(p);

	p = load("{\"version\": 1}");
	ck_assert_ptr_null(shk_policy_shared(p));
	shk_policy_free(p);
	ck_assert_str_eq(shk_scope_level_name(SHK_SCOPE_AGENT), "agent");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy_shared");
	TCase *tc = tcase_create("shared");

	tcase_add_loop_test(tc, bad_input, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, loads);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
