/* SPDX-License-Identifier: MIT */
/* SP/1.0 §4 messages as JSON lines: parsing, validation and answers (src/sdk/proto*.c). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <shackle/canon.h>

#include "sdk/proto.h"
#include "checkrun.h"

static shk_doc *doc;
static struct shk_sdk_req req;
static struct shk_sdk_err err;

static void setup(void)
{
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	memset(&err, 0, sizeof(err));
}

static void teardown(void)
{
	shk_doc_free(doc);
}

static int parse(const char *line)
{
	return shk_sdk_parse(doc, line, strlen(line), &req, &err);
}

#define ENV "{\"protocol_version\":\"1.0.0\",\"message_id\":\"m-1\","
#define PRE "\"pre_exec\":{\"session_id\":\"s_1\",\"call_number\":\"7\",\"tool_name\":\"web_search\"," \
	    "\"tool_params\":{\"q\":\"x\"},\"estimated_cost_usd\":0.25,\"nonce\":\"18446744073709551615\""

static void refused(const char *line, const char *code, const char *text)
{
	ck_assert_int_eq(parse(line), -EINVAL);
	ck_assert_str_eq(err.code, code);
	ck_assert_msg(strstr(err.text, text), "%s: \"%s\" lacks \"%s\"", line, err.text, text);
}

START_TEST(pre_exec_ok)
{
	ck_assert_int_eq(parse(ENV PRE "}}"), 0);
	ck_assert_int_eq(req.type, SHK_SDK_PRE_EXEC);
	ck_assert_str_eq(req.message_id, "m-1");
	ck_assert_str_eq(req.session_id, "s_1");
	ck_assert_uint_eq(req.call_number, 7);
	ck_assert_uint_eq(req.nonce, UINT64_MAX);
	ck_assert_str_eq(req.tool_name, "web_search");
	ck_assert(shk_val_str_eq(shk_object_get(req.tool_params, "q"), "x"));
	ck_assert_double_eq(req.cost_usd, 0.25);
	ck_assert(!req.has_params_hash);
}
END_TEST

START_TEST(register_heartbeat_state_post)
{
	ck_assert_int_eq(parse("{\"protocol_version\":\"1.2.0\",\"register\":{\"agent_id\":\"a\","
			       "\"metadata\":{\"k\":\"v\"},\"organization_id\":\"org\"}}"), 0);
	ck_assert_int_eq(req.type, SHK_SDK_REGISTER);
	ck_assert_str_eq(req.message_id, "");
	ck_assert_ptr_null(req.session_id);
	ck_assert_str_eq(req.organization_id, "org");
	ck_assert_int_eq(parse(ENV "\"heartbeat\":{\"session_id\":\"s\",\"local_budget_remaining\":-1}}"), 0);
	ck_assert(req.has_local_budget);
	ck_assert_double_eq(req.local_budget, -1);
	ck_assert_int_eq(parse(ENV "\"get_session_state\":{\"session_id\":\"s\"}}"), 0);
	ck_assert_int_eq(req.type, SHK_SDK_GET_STATE);
	ck_assert_int_eq(parse(ENV "\"post_exec\":{\"session_id\":\"s\",\"call_number\":3,"
			       "\"actual_cost_usd\":1,\"success\":false,\"tokens_in\":\"5\"}}"), 0);
	ck_assert_uint_eq(req.call_number, 3);
	ck_assert_double_eq(req.cost_usd, 1);
	ck_assert_ptr_eq(req.payload, shk_object_get(req.payload, "success") ? req.payload : NULL);
}
END_TEST

START_TEST(malformed)
{
	refused("{\"protocol_version\":", "INVALID_MESSAGE", "malformed JSON at column");
	refused("[1]", "INVALID_MESSAGE", "JSON object");
	refused("\"x\"", "INVALID_MESSAGE", "JSON object");
	refused("{\"a\":1,\"a\":2}", "INVALID_MESSAGE", "malformed JSON");
	refused(ENV "\"pre_exec\":[]}", "INVALID_MESSAGE", "pre_exec: must be a JSON object");
	refused("{\"protocol_version\":\"1.0.0\"}", "INVALID_MESSAGE", "no payload");
	refused(ENV "\"heartbeat\":{\"session_id\":\"s\"},\"get_session_state\":{\"session_id\":\"s\"}}",
		"INVALID_MESSAGE", "more than one payload");
}
END_TEST

START_TEST(unknown_type_and_version)
{
	refused(ENV "\"shutdown\":{}}", "UNKNOWN_MESSAGE_TYPE", "\"shutdown\"");
	/* an answer's payload is not a request */
	refused(ENV "\"pre_exec_response\":{}}", "UNKNOWN_MESSAGE_TYPE", "pre_exec_response");
	refused("{\"protocol_version\":\"2.0.0\",\"heartbeat\":{\"session_id\":\"s\"}}",
		"PROTOCOL_VERSION_MISMATCH", "2.0.0");
	refused("{\"heartbeat\":{\"session_id\":\"s\"}}", "PROTOCOL_VERSION_MISMATCH", "absent");
	refused("{\"protocol_version\":\"10.0\",\"heartbeat\":{\"session_id\":\"s\"}}",
		"PROTOCOL_VERSION_MISMATCH", "10.0");
}
END_TEST

START_TEST(fields)
{
	refused(ENV PRE ",\"extra\":1}}", "INVALID_MESSAGE", "pre_exec: unknown field \"extra\"");
	refused(ENV "\"pre_exec\":{\"session_id\":\"s\"}}", "INVALID_MESSAGE", "pre_exec.call_number: missing");
	refused(ENV "\"register\":{}}", "INVALID_MESSAGE", "register.agent_id: missing");
	refused(ENV "\"register\":{\"agent_id\":\"a b\"}}", "INVALID_MESSAGE", "register.agent_id: must be");
	refused(ENV "\"register\":{\"agent_id\":\"\"}}", "INVALID_MESSAGE", "register.agent_id");
	refused(ENV "\"register\":{\"agent_id\":\"a\",\"metadata\":{\"k\":1}}}", "INVALID_MESSAGE",
		"register.metadata");
	refused(ENV "\"post_exec\":{\"session_id\":\"s\",\"call_number\":1,\"actual_cost_usd\":-0.5}}",
		"INVALID_MESSAGE", "post_exec.actual_cost_usd: must be a finite number >= 0");
	refused(ENV "\"post_exec\":{\"session_id\":\"s\",\"call_number\":1,\"actual_cost_usd\":\"1\"}}",
		"INVALID_MESSAGE", "actual_cost_usd");
	refused("{\"protocol_version\":\"1.0.0\",\"message_id\":7,\"heartbeat\":{\"session_id\":\"s\"}}",
		"INVALID_MESSAGE", "envelope.message_id");
}
END_TEST

START_TEST(integers)
{
	const char *bad[] = { "-1", "\"-1\"", "\"18446744073709551616\"", "\"007\"", "\"\"", "\"1e3\"",
			      "1.5", "true", "\" 1\"" };
	char line[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), ENV "\"post_exec\":{\"session_id\":\"s\",\"call_number\":%s,"
			 "\"actual_cost_usd\":0}}", bad[i]);
		refused(line, "INVALID_MESSAGE", "post_exec.call_number: must be an unsigned 64-bit integer");
	}
	ck_assert_int_eq(parse(ENV "\"post_exec\":{\"session_id\":\"s\",\"call_number\":\"0\","
			       "\"actual_cost_usd\":0,\"duration_ms\":\"-9223372036854775808\"}}"), 0);
	refused(ENV "\"post_exec\":{\"session_id\":\"s\",\"call_number\":1,\"actual_cost_usd\":0,"
		"\"duration_ms\":\"9223372036854775808\"}}", "INVALID_MESSAGE", "duration_ms");
}
END_TEST

START_TEST(tool_name_and_hash)
{
	uint8_t d[SHK_SHA256_LEN];
	char hex[SHK_SHA256_HEX_LEN + 1], line[1024];

	refused(ENV "\"pre_exec\":{\"session_id\":\"s\",\"call_number\":1,\"tool_name\":\"a\\nb\","
		"\"tool_params\":{},\"estimated_cost_usd\":0,\"nonce\":1}}", "INVALID_MESSAGE",
		"pre_exec.tool_name");
	refused(ENV PRE ",\"tool_params_hash\":\"zz\"}}", "INVALID_MESSAGE", "tool_params_hash");
	ck_assert_int_eq(parse(ENV PRE "}}"), 0);
	ck_assert_int_eq(shk_canon_sha256(req.tool_params, d), 0);
	shk_hex(d, sizeof(d), hex);
	snprintf(line, sizeof(line), ENV PRE ",\"tool_params_hash\":\"%s\"}}", hex);
	ck_assert_int_eq(parse(line), 0);
	ck_assert(req.has_params_hash);
	ck_assert_mem_eq(req.params_hash, d, sizeof(d));
}
END_TEST

START_TEST(message_id_kept_on_refusal)
{
	refused(ENV "\"nope\":{}}", "UNKNOWN_MESSAGE_TYPE", "nope");
	ck_assert_str_eq(req.message_id, "m-1");
	refused("{\"protocol_version\":\"3\",\"message_id\":\"m-9\",\"heartbeat\":{}}",
		"PROTOCOL_VERSION_MISMATCH", "3");
	ck_assert_str_eq(req.message_id, "m-9");
}
END_TEST

static char out_buf[4096];
static struct shk_sdk_out out = { out_buf, 0, sizeof(out_buf) };

static const shk_val *answer(const char *payload)
{
	shk_val *v = NULL;
	shk_parse_error perr;

	ck_assert_uint_gt(out.len, 0);
	ck_assert_int_eq(out.buf[out.len - 1], '\n');
	ck_assert_ptr_null(memchr(out.buf, '\n', out.len - 1));
	ck_assert_int_eq(shk_json_parse(doc, out.buf, out.len, "answer", &v, &perr), 0);
	ck_assert(shk_val_str_eq(shk_object_get(v, "protocol_version"), "1.0.0"));
	ck_assert(shk_val_str_eq(shk_object_get(v, "correlation_id"), "m-1"));
	return shk_object_get(v, payload);
}

START_TEST(answers)
{
	struct shk_sdk_ctx c = { "m-1", "s_1", "agent", "", 1700000000000000000LL };
	struct shk_sdk_verdict v = { SHK_DENY, "max_repeat_exceeded", "denied", "r1", UINT64_MAX, 0.5 };
	struct shk_sdk_err e = { "SESSION_NOT_FOUND", "no" };
	shk_session_info info = { .budget_initial_usd = 1, .budget_remaining_usd = 0.5,
				  .circuit_tripped = true, .trip_reason = SHK_R_CIRCUIT_OPEN };
	const shk_val *p;

	ck_assert_int_eq(shk_sdk_write_pre_exec(doc, &c, 7, &v, &out), 0);
	p = answer("pre_exec_response");
	ck_assert(shk_val_str_eq(shk_object_get(p, "verdict"), "DENY"));
	ck_assert(shk_val_str_eq(shk_object_get(p, "deny_reason"), "max_repeat_exceeded"));
	ck_assert(shk_val_str_eq(shk_object_get(p, "nonce"), "18446744073709551615"));
	ck_assert(shk_val_str_eq(shk_object_get(p, "call_number"), "7"));
	v.verdict = SHK_ALLOW;
	ck_assert_int_eq(shk_sdk_write_pre_exec(doc, &c, 7, &v, &out), 0);
	ck_assert_ptr_null(shk_object_get(answer("pre_exec_response"), "deny_reason"));
	ck_assert_int_eq(shk_sdk_write_error(doc, &c, &e, &out), 0);
	ck_assert(shk_val_str_eq(shk_object_get(answer("error"), "code"), "SESSION_NOT_FOUND"));
	ck_assert_int_eq(shk_sdk_write_state(doc, &c, &info, NULL, SHK_SDK_STALE, &out), 0);
	p = answer("session_state");
	ck_assert(shk_val_str_eq(shk_object_get(p, "status"), "STALE"));
	ck_assert(shk_val_str_eq(shk_object_get(p, "circuit_trip_reason"), "circuit_open"));
	ck_assert_ptr_null(shk_object_get(p, "shared"));
	ck_assert_int_eq(shk_sdk_write_heartbeat(doc, &c, &info, true, SHK_SDK_ACTIVE, &out), 0);
	ck_assert(shk_val_bool(shk_object_get(answer("heartbeat_ack"), "drift_detected")));
	/* An answer that does not fit is refused whole, never cut. */
	out.cap = 40;
	ck_assert_int_eq(shk_sdk_write_state(doc, &c, &info, NULL, SHK_SDK_STALE, &out), -ENOBUFS);
	out.cap = sizeof(out_buf);
}
END_TEST

/* The shared scope in the state: the numbers Redis gave, or the error and
 * no number at all. */
START_TEST(state_shared)
{
	struct shk_sdk_ctx c = { "m-1", "s_1", "agent", "", 1700000000000000000LL };
	shk_session_info info = { .budget_initial_usd = 1, .budget_remaining_usd = 0.5 };
	struct shk_source_shared sh = { .budget = true, .breaker = true, .budget_scope = "org/acme",
					.breaker_scope = "org/acme/agent/a", .limit_usd = 1,
					.spent_usd = 0.18, .reserved_usd = 0.05, .remaining_usd = 0.77,
					.ops = 9, .open = true, .at_ms = 1700000000123LL,
					.by = "s-2", .reason = "budget_overrun" };
	const shk_val *p, *b, *k, *e;

	ck_assert_int_eq(shk_sdk_write_state(doc, &c, &info, &sh, SHK_SDK_ACTIVE, &out), 0);
	p = shk_object_get(answer("session_state"), "shared");
	b = shk_object_get(p, "budget");
	k = shk_object_get(p, "breaker");
	ck_assert(shk_val_str_eq(shk_object_get(b, "scope"), "org/acme"));
	ck_assert(shk_val_real(shk_object_get(b, "spent_usd")) == 0.18);
	ck_assert(shk_val_real(shk_object_get(b, "reserved_usd")) == 0.05);
	ck_assert(shk_val_real(shk_object_get(b, "limit_usd")) == 1);
	ck_assert(shk_val_real(shk_object_get(b, "remaining_usd")) == 0.77);
	ck_assert(shk_val_str_eq(shk_object_get(b, "ops"), "9"));
	ck_assert(shk_val_str_eq(shk_object_get(k, "scope"), "org/acme/agent/a"));
	ck_assert(shk_val_bool(shk_object_get(k, "open")));
	ck_assert(shk_val_str_eq(shk_object_get(k, "by"), "s-2"));
	ck_assert(shk_val_str_eq(shk_object_get(k, "at_ms"), "1700000000123"));
	ck_assert_ptr_null(shk_object_get(p, "error"));
	/* the session's own budget stays what it was */
	ck_assert(shk_val_real(shk_object_get(answer("session_state"), "budget_remaining_usd")) == 0.5);

	sh.err = -ETIMEDOUT;
	snprintf(sh.why, sizeof(sh.why), "no answer from Redis within 300 ms");
	ck_assert_int_eq(shk_sdk_write_state(doc, &c, &info, &sh, SHK_SDK_ACTIVE, &out), 0);
	p = shk_object_get(answer("session_state"), "shared");
	b = shk_object_get(p, "budget");
	k = shk_object_get(p, "breaker");
	e = shk_object_get(p, "error");
	ck_assert(shk_val_str_eq(shk_object_get(e, "errno"), "ETIMEDOUT"));
	ck_assert(shk_val_str_eq(shk_object_get(e, "why"), "no answer from Redis within 300 ms"));
	ck_assert(shk_val_str_eq(shk_object_get(b, "scope"), "org/acme"));
	ck_assert_int_eq(shk_val_len(b), 1);
	ck_assert_ptr_null(shk_object_get(k, "open"));
	ck_assert_ptr_null(shk_object_get(k, "by"));

	/* only the breaker shared: no budget member */
	sh = (struct shk_source_shared){ .breaker = true, .breaker_scope = "org/acme" };
	ck_assert_int_eq(shk_sdk_write_state(doc, &c, &info, &sh, SHK_SDK_ACTIVE, &out), 0);
	p = shk_object_get(answer("session_state"), "shared");
	ck_assert_ptr_null(shk_object_get(p, "budget"));
	ck_assert(!shk_val_bool(shk_object_get(shk_object_get(p, "breaker"), "open")));
}
END_TEST

/* The direct pre_exec writer against the document's: the same return and
 * the same bytes, whatever the strings, numbers and room. */
START_TEST(pre_exec_direct_matches)
{
	static const char *const strs[] = { "", "allowed", "s_0123abcd", "a\"b", "a\\b", "tab\there",
					    "caf\xc3\xa9", "\x7f", "~ !", NULL };
	static const double budgets[] = { 0, -0.0, 0.1, 0.999, 1e22, 1e-7, 123456.789, 5e-324,
					  1.7976931348623157e308, NAN, INFINITY, -1.5 };
	static const int64_t times[] = { 0, 1, -1, INT64_MAX, INT64_MIN, 1700000000123456789LL };
	static const uint64_t nums[] = { 0, 1, 10, UINT64_MAX };
	char a_buf[1024], b_buf[1024];
	size_t ns = sizeof(strs) / sizeof(strs[0]);

	for (size_t i = 0; i < 400; i++) {
		struct shk_sdk_ctx c = { strs[i % ns], strs[(i / 3) % ns], "agent", "",
					 times[i % 6] };
		struct shk_sdk_verdict v = { i % 2 ? SHK_ALLOW : SHK_DENY, strs[(i / 2) % ns],
					     strs[(i / 5) % ns], strs[(i / 7) % ns], nums[i % 4],
					     budgets[i % 12] };
		size_t caps[] = { sizeof(a_buf), 0, 1, 2, 100, 300, 310, 320, 330, 340, 360 };

		for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
			struct shk_sdk_out a = { a_buf, 0, caps[k] }, b = { b_buf, 0, caps[k] };
			int ra = shk_sdk_write_pre_exec(doc, &c, nums[(i / 4) % 4], &v, &a);
			int rb = shk_sdk_write_pre_exec_slow(doc, &c, nums[(i / 4) % 4], &v, &b);

			ck_assert_int_eq(ra, rb);
			if (ra == 0) {
				ck_assert_uint_eq(a.len, b.len);
				ck_assert_msg(memcmp(a.buf, b.buf, a.len + 1) == 0, "[%s] != [%s]", a.buf,
					      b.buf);
			}
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sdk_proto");
	TCase *tc = tcase_create("proto");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pre_exec_ok);
	tcase_add_test(tc, register_heartbeat_state_post);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, unknown_type_and_version);
	tcase_add_test(tc, fields);
	tcase_add_test(tc, integers);
	tcase_add_test(tc, tool_name_and_hash);
	tcase_add_test(tc, message_id_kept_on_refusal);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, state_shared);
	tcase_add_test(tc, pre_exec_direct_matches);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
