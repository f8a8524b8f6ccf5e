/* SPDX-License-Identifier: MIT */
/*
 * Every class of bad policy input is refused with the line and column of the
 * offending value (or key) and a message that names the field. Positions
 * below were counted by hand from the texts (1-based, code points).
 */
#include <check.h>
#include "checkrun.h"
#include <errno.h>
#include <string.h>

#include <shackle/policy.h>

struct bad {
	const char *what;
	const char *text;
	int line, column;
	const char *needle; /* must appear in the message */
};

static const struct bad cases[] = {
	{ "syntax: trailing comma",
	  "{\"version\": 1,\n \"guard\": {\"budget_usd\": 5,}\n}", 2, 28, "'}'" },
	/* jansson reports the column of the last character it read. */
	{ "syntax: truncated", "{\"version\": 1, \"exec\": {", 1, 24, "end of file" },
	{ "not an object", "[1]", 1, 1, "policy: a policy is a JSON object" },
	{ "version 2", "{\"version\": 2}", 1, 13, "version: unsupported policy version 2" },
	{ "version as string", "{\"version\": \"1\"}", 1, 13,
	  "version: expected the number 1, got the string \"1\"" },
	{ "version as boolean", "{\"version\": true}", 1, 13, "version: expected the number 1, got a boolean" },
	/* jansson gives the column before an undecodable byte (0 at a line start) */
	{ "binary: not UTF-8", "\x89PNG\r\n", 1, 1, "unable to decode byte 0x89" },
	{ "invalid UTF-8 in a string", "{\"version\": 1, \"x\": \"a\xff\"}", 1, 23,
	  "unable to decode byte 0xff" },
	{ "duplicate key",
	  "{\"version\":1,\"exec\":{\"rules\":[{\"name\":\"a\"},{\"name\":\"b\",\"name\":\"c\"}]}}", 1, 56,
	  "exec.rules[1].name: duplicate key \"name\"" },
	{ "duplicate key after whitespace",
	  "{\"version\": 1,\n \"exec\": {\"rules\": [{\"path\": \"/x\", \"action\": \"deny\",\n"
	  "   \"action\": \"allow\"}]}}", 3, 4, "exec.rules[0].action: duplicate key \"action\"" },
	{ "duplicate top-level key", "{\"version\": 1, \"version\": 1}", 1, 16, "version: duplicate key" },
	{ "escaped NUL", "{\"version\": 1, \"description\": \"a\\u0000\"}", 1, 39, "\\u0000 (NUL)" },
	{ "version missing", "{}", 1, 1, "missing required field \"version\"" },
	{ "unknown top-level key", "{\"version\": 1, \"colour\": 1}", 1, 16,
	  "colour: unknown field \"colour\"" },
	{ "guard wrong type",
	  "{\"version\": 1,\n \"guard\": {\n   \"max_repeat_calls\": \"5\"}}", 3, 24,
	  "guard.max_repeat_calls: expected a non-negative integer, got a string" },
	{ "guard real for integer", "{\"version\": 1, \"guard\": {\"hitl_timeout_s\": 1.5}}", 1, 44,
	  "guard.hitl_timeout_s" },
	{ "guard negative budget", "{\"version\": 1, \"guard\": {\"budget_usd\": -1}}", 1, 40,
	  "guard.budget_usd: -1 is out of range" },
	{ "threshold above 1", "{\"version\": 1, \"guard\": {\"hitl_budget_threshold\": 1.5}}", 1,
	  51, "guard.hitl_budget_threshold" },
	{ "window half set", "{\"version\": 1, \"guard\": {\"window_max_calls\": 10}}", 1, 26,
	  "guard.window_max_calls: window_duration_s and window_max_calls" },
	{ "on_threshold without budget", "{\"version\": 1, \"guard\": {\"hitl_mode\": \"on_threshold\"}}",
	  1, 39, "guard.hitl_mode: \"on_threshold\" needs a budget" },
	{ "unknown hitl mode", "{\"version\": 1, \"guard\": {\"hitl_mode\": \"on_deny\"}}", 1, 39,
	  "guard.hitl_mode" },
	{ "bad CIDR prefix",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"cidr\": \"10.0.0.1/33\", \"action\": \"allow\"}]}}",
	  3, 13, "net.rules[0].cidr: \"10.0.0.1/33\" has a bad prefix length" },
	{ "CIDR host bits",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"cidr\": \"10.0.0.1/8\", \"action\": \"allow\"}]}}",
	  3, 13, "host bits set" },
	{ "CIDR not an address",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"cidr\": \"10.0.0/8\", \"action\": \"allow\"}]}}",
	  3, 13, "is not an IPv4 or IPv6 address" },
	{ "IPv6 CIDR host bits",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"cidr\": \"fd00::1/64\", \"action\": \"allow\"}]}}",
	  3, 13, "host bits set" },
	{ "host and cidr together",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"host\": \"a.example\", \"cidr\": \"10.0.0.0/8\", "
	  "\"action\": \"allow\"}]}}",
	  3, 26, "net.rules[0].cidr: \"cidr\" cannot be combined with \"host\"" },
	{ "no destination",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"port\": 80, \"action\": \"allow\"}]}}", 3, 4,
	  "net.rules[0]: a net rule needs exactly one destination" },
	{ "port on unix",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"unix\": \"/run/x.sock\", \"port\": 80, "
	  "\"action\": \"deny\"}]}}",
	  3, 28, "net.rules[0].port: \"port\" does not apply to a unix socket" },
	{ "proto on unix",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"unix\": \"/run/x.sock\", \"proto\": \"tcp\", "
	  "\"action\": \"deny\"}]}}",
	  3, 28, "net.rules[0].proto" },
	{ "port range reversed",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"cidr\": \"10.0.0.0/8\", \"port\": \"8080-8000\", "
	  "\"action\": \"allow\"}]}}",
	  3, 35, "net.rules[0].port: port range \"8080-8000\" is reversed" },
	{ "port out of range",
	  "{\"version\": 1,\n \"net\": {\"rules\": [\n   {\"cidr\": \"10.0.0.0/8\", \"port\": 65536, "
	  "\"action\": \"allow\"}]}}",
	  3, 35, "net.rules[0].port: 65536 is not a port" },
	{ "negative cost",
	  "{\"version\": 1,\n \"exec\": {\"rules\": [\n   {\"path\": \"/bin/x\", \"action\": \"allow\"},\n"
	  "   {\"path\": \"/bin/y\", \"action\": \"allow\", \"cost_usd\": -1}]}}",
	  4, 54, "exec.rules[1].cost_usd: cost must be between 0" },
	{ "repeat_guard not a boolean (exec)",
	  "{\"version\": 1,\n \"exec\": {\"rules\": [\n"
	  "   {\"path\": \"/bin/x\", \"action\": \"allow\", \"repeat_guard\": \"no\"}]}}",
	  3, 58, "exec.rules[0].repeat_guard: expected true or false, got a string" },
	{ "repeat_guard not a boolean (net)",
	  "{\"version\": 1, \"net\": {\"rules\": [{\"cidr\": \"10.0.0.1\", \"action\": \"allow\", \"repeat_guard\": 0}]}}",
	  1, 90, "net.rules[0].repeat_guard: expected true or false, got" },
	{ "unknown default action", "{\"version\": 1, \"exec\": {\"default\": \"alow\"}}", 1, 36,
	  "exec.default: unknown action \"alow\"" },
	{ "unknown rule action",
	  "{\"version\": 1, \"exec\": {\"rules\": [{\"path\": \"/x\", \"action\": \"maybe\"}]}}", 1, 60,
	  "exec.rules[0].action: unknown action \"maybe\"" },
	{ "missing action", "{\"version\": 1, \"exec\": {\"rules\": [{\"path\": \"/x\"}]}}", 1, 35,
	  "exec.rules[0]: missing required field \"action\"" },
	{ "empty tool name",
	  "{\"version\": 1, \"net\": {\"rules\": [{\"tool\": \"\", \"cidr\": \"::1/128\", "
	  "\"action\": \"allow\"}]}}",
	  1, 43, "net.rules[0].tool: must not be empty" },
	{ "code points count as one column",
	  "{\"description\": \"h\xc3\xa9llo w\xc3\xb6rld\", \"version\": 3}", 1, 43, "version" },
	{ "escaped key is found",
	  "{\"version\": 1, \"net\": {\"rules\": [{\"\\u0063idr\": \"300.0.0.0/8\", "
	  "\"action\": \"allow\"}]}}",
	  1, 48, "net.rules[0].cidr" },
	{ "empty argv", "{\"version\": 1, \"exec\": {\"rules\": [{\"argv\": [], \"action\": \"deny\"}]}}",
	  1, 44, "exec.rules[0].argv: must not be empty" },
	{ "argv element not a string",
	  "{\"version\": 1, \"exec\": {\"rules\": [{\"argv\": [\"git\", 7], \"action\": \"deny\"}]}}",
	  1, 52, "exec.rules[0].argv[1]: expected a string" },
	{ "exec rule without selector", "{\"version\": 1, \"exec\": {\"rules\": [{\"action\": \"deny\"}]}}",
	  1, 35, "needs \"path\", \"argv\" or both" },
	{ "relative exec path",
	  "{\"version\": 1, \"exec\": {\"rules\": [{\"path\": \"git\", \"action\": \"deny\"}]}}", 1, 44,
	  "exec.rules[0].path: must be an absolute path pattern" },
	{ "trailing backslash in glob",
	  "{\"version\": 1, \"exec\": {\"rules\": [{\"path\": \"/bin/x\\\\\", \"action\": \"deny\"}]}}", 1,
	  44, "lone backslash" },
	{ "bad op in a list",
	  "{\"version\": 1, \"net\": {\"rules\": [{\"cidr\": \"::/0\", \"op\": [\"connect\", \"smtp\"], "
	  "\"action\": \"allow\"}]}}",
	  1, 69, "net.rules[0].op[1]" },
	{ "unknown rule key",
	  "{\"version\": 1, \"net\": {\"rules\": [{\"cidr\": \"::/0\", \"ports\": 80, \"action\": \"allow\"}]}}",
	  1, 51, "net.rules[0].ports: unknown field" },
	{ "host with a port", "{\"version\": 1, \"net\": {\"rules\": [{\"host\": \"example.com:443\", "
	  "\"action\": \"allow\"}]}}",
	  1, 43, "net.rules[0].host" },
	{ "duplicate rule name",
	  "{\"version\": 1, \"exec\": {\"rules\": [\n{\"name\": \"a\", \"path\": \"/x\", \"action\": \"deny\"},\n"
	  "{\"name\": \"a\", \"path\": \"/y\", \"action\": \"deny\"}]}}",
	  3, 10, "exec.rules[1].name: rule name \"a\" is already used by rule 0" },
	{ "rules not an array", "{\"version\": 1, \"net\": {\"rules\": {}}}", 1, 33,
	  "net.rules: expected an array" },
	{ "section not an object", "{\"version\": 1, \"exec\": []}", 1, 24, "exec: expected an object" },
	{ "redact item empty", "{\"version\": 1, \"redact\": [\"token\", \"\"]}", 1, 36, "redact[1]" },
	/* keys the redaction could never match (red-team finding): the dashes
	 * are the option's, '=' and ':' the separator */
	/* exec path patterns that can never match an absolute file path */
	{ "exec path *name", "{\"version\": 1, \"exec\": {\"rules\": [{\"path\": \"*sudo\", "
	  "\"action\": \"deny\"}]}}", 1, 44, "exec.rules[0].path: must be an absolute path pattern" },
	{ "exec path with a trailing /", "{\"version\": 1, \"exec\": {\"rules\": [{\"path\": "
	  "\"/usr/bin/sudo/\", \"action\": \"deny\"}]}}", 1, 44, "exec.rules[0].path: ends with '/'" },
	{ "redact key with dashes", "{\"version\": 1, \"redact\": [\"--password\"]}", 1, 27,
	  "redact[0]: \"--password\" can never match" },
	{ "redact key with a colon", "{\"version\": 1, \"redact\": [\"token\", \"Authorization:\"]}",
	  1, 36, "redact[1]: \"Authorization:\" can never match" },
	{ "redact key with =", "{\"version\": 1, \"redact\": [\"password=\"]}", 1, 27,
	  "redact[0]" },
	{ "interp_env not an action", "{\"version\": 1, \"exec\": {\"interp_env\": \"maybe\"}}", 1, 39,
	  "exec.interp_env" },
	{ "interp_env as a number",
	  "{\"version\": 1,\n \"exec\": {\"default\": \"deny\",\n  \"interp_env\": 1}}", 3, 17,
	  "exec.interp_env" },
	{ "interp_env outside exec", "{\"version\": 1, \"net\": {\"interp_env\": \"deny\"}}", 1, 24,
	  "net.interp_env: unknown field" },
	{ "abstract name empty",
	  "{\"version\": 1, \"net\": {\"rules\": [{\"unix\": \"@\", \"action\": \"allow\"}]}}", 1, 43,
	  "net.rules[0].unix" },
};

/* Texts with a NUL byte (jansson stops there as at the end of the input). */
static const struct {
	struct bad b;
	size_t len;
} nul_cases[] = {
	{ { "NUL byte", "{\"version\": 1,\0 \"exec\": {}}", 1, 15, "the file contains a NUL byte" }, 27 },
	{ { "NUL byte first (binary)", "\0\1\2", 1, 1, "the file contains a NUL byte" }, 3 },
	{ { "NUL byte after the policy", "{\"version\": 1}\n\0", 2, 1, "the file contains a NUL byte" }, 16 },
	{ { "NUL byte after a 2-byte character", "{\"d\": \"\xc3\xa9\",\n  \0}", 2, 3,
	    "the file contains a NUL byte" }, 16 },
	{ { "syntax error before a NUL byte", "{\"version\" 1\0}", 1, 12, "':' expected" }, 14 },
};

START_TEST(test_nul_input)
{
	const struct bad *c = &nul_cases[_i].b;
	shk_policy *p = NULL;
	shk_parse_error err;

	ck_assert_int_eq(shk_policy_load_buffer(c->text, nul_cases[_i].len, "bad.json", &p, &err), -EINVAL);
	ck_assert_msg(err.line == c->line && err.column == c->column, "%s: got %d:%d (%s), want %d:%d",
		      c->what, err.line, err.column, err.text, c->line, c->column);
	ck_assert_msg(strstr(err.text, c->needle), "%s: message '%s' lacks '%s'", c->what, err.text,
		      c->needle);
}
END_TEST

START_TEST(test_bad_input)
{
	const struct bad *c = &cases[_i];
	shk_policy *p = (shk_policy *)1;
	shk_parse_error err;
	int r;

	r = shk_policy_load_buffer(c->text, strlen(c->text), "bad.json", &p, &err);
	ck_assert_msg(r == -EINVAL, "%s: returned %d", c->what, r);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(err.source, "bad.json");
	ck_assert_msg(err.line == c->line && err.column == c->column,
		      "%s: got %d:%d (%s), want %d:%d", c->what, err.line, err.column, err.text,
		      c->line, c->column);
	ck_assert_msg(strstr(err.text, c->needle), "%s: message '%s' lacks '%s'", c->what,
		      err.text, c->needle);
}
END_TEST

START_TEST(test_duplicate_key)
{
	static const char text[] = "{\"version\": 1, \"version\": 1}";
	shk_policy *p = NULL;
	shk_parse_error err;

	ck_assert_int_eq(shk_policy_load_buffer(text, strlen(text), "d.json", &p, &err), -EINVAL);
	ck_assert_int_eq(err.line, 1);
	ck_assert_ptr_nonnull(strstr(err.text, "duplicate"));
}
END_TEST

START_TEST(test_missing_file)
{
	shk_policy *p = NULL;
	shk_parse_error err;

	ck_assert_int_eq(shk_policy_load_file("/nonexistent/policy.json", &p, &err), -ENOENT);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(err.source, "/nonexistent/policy.json");
	ck_assert_int_eq(err.line, 0);
}
END_TEST

START_TEST(test_nul_in_string)
{
	static const char text[] = "{\"version\": 1, \"description\": \"a\\u0000b\"}";
	shk_policy *p = NULL;
	shk_parse_error err;

	ck_assert_int_eq(shk_policy_load_buffer(text, strlen(text), "n.json", &p, &err), -EINVAL);
	ck_assert_ptr_null(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy_errors");
	TCase *tc = tcase_create("errors");

	tcase_add_loop_test(tc, test_bad_input, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_loop_test(tc, test_nul_input, 0, (int)(sizeof(nul_cases) / sizeof(nul_cases[0])));
	tcase_add_test(tc, test_duplicate_key);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_nul_in_string);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
