/* SPDX-License-Identifier: MIT */
/* The model gateway's pure parts: request -> tool call, usage -> cost in the
 * four API shapes (streamed too), proposals judged and rewritten, the SSE
 * splitter, the policy's "models" section. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "checkrun.h"
#include "gateway/internal.h"

static const shk_model_price PRICE = { .pattern = "*", .input = 3, .output = 15,
				       .cache_write = 3.75, .cache_read = 0.3 };

/* ---- requests ---------------------------------------------------------------- */

START_TEST(request_to_call)
{
	const char *b = "{\"model\":\"claude-x\",\"max_tokens\":1024,\"messages\":[]}";
	struct gw_request rq;
	char why[256];
	shk_doc *doc;
	shk_val *p;

	ck_assert_int_eq(gw_request_parse(GW_ANTHROPIC_MESSAGES, b, strlen(b), &rq, why, sizeof(why)), 0);
	ck_assert_str_eq(rq.model, "claude-x");
	ck_assert_int_eq(rq.max_tokens, 1024);
	ck_assert(!rq.stream);
	/* sha256 of the bytes as sent */
	ck_assert_str_eq(rq.sha256, "ea7fca97338c81115397127dec3565f26885e3f28d4485f124084feca8ad99d8");
	ck_assert_int_eq(shk_doc_new(&doc), 0);
	ck_assert_int_eq(gw_request_params(&rq, doc, &p), 0);
	ck_assert_int_eq(shk_val_len(p), 4);
	ck_assert(shk_val_str_eq(shk_object_get(p, "endpoint"), "messages"));
	ck_assert_int_eq(shk_val_int(shk_object_get(p, "max_tokens")), 1024);
	ck_assert(shk_val_str_eq(shk_object_get(p, "body_sha256"), rq.sha256));
	/* 52 bytes -> 13 tokens at $3/M */
	ck_assert_int_eq(gw_estimate_input_tokens(strlen(b)), 13);
	ck_assert(fabs(gw_estimate_cost(&rq, &PRICE) - 13 * 3 / 1e6) < 1e-15);
	shk_doc_free(doc);
	gw_request_free(&rq);
}
END_TEST

START_TEST(request_bad)
{
	static const char *const bad[] = {
		"{\"model\":", "[]", "{\"max_tokens\":5}", "{\"model\":\"\"}",
		"{\"model\":\"m\",\"model\":\"n\"}", "{\"model\":\"m\",\"max_tokens\":-1}",
		"{\"model\":\"m\",\"stream\":\"yes\"}", "{\"model\":\"a\\u0001\"}",
		"{\"model\":\"m\",\"messages\":\"\xff\"}",
	};
	struct gw_request rq;
	char why[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		ck_assert_msg(gw_request_parse(GW_ANTHROPIC_MESSAGES, bad[i], strlen(bad[i]), &rq, why,
					       sizeof(why)) == -EINVAL, "%s", bad[i]);
		ck_assert(why[0]);
	}
}
END_TEST

START_TEST(request_include_usage)
{
	const char *b = "{\"model\":\"gpt\",\"stream\":true,\"max_completion_tokens\":9}";
	struct gw_request rq;
	char why[256], *up;
	size_t n;

	ck_assert_int_eq(gw_request_parse(GW_OPENAI_CHAT, b, strlen(b), &rq, why, sizeof(why)), 0);
	ck_assert(rq.add_usage);
	ck_assert_int_eq(rq.max_tokens, 9);
	ck_assert_int_eq(gw_request_upstream_body(&rq, &up, &n), 0);
	ck_assert_ptr_nonnull(strstr(up, "\"stream_options\":{\"include_usage\":true}"));
	free(up);
	gw_request_free(&rq);
	b = "{\"model\":\"gpt\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
	ck_assert_int_eq(gw_request_parse(GW_OPENAI_CHAT, b, strlen(b), &rq, why, sizeof(why)), 0);
	ck_assert(!rq.add_usage);
	ck_assert_int_eq(gw_request_upstream_body(&rq, &up, &n), 0);
	ck_assert_ptr_null(up);
	gw_request_free(&rq);
}
END_TEST

START_TEST(route)
{
	enum gw_api api;
	enum gw_provider pv;

	ck_assert_int_eq(gw_route("POST", "/v1/messages", &api, &pv), 0);
	ck_assert(api == GW_ANTHROPIC_MESSAGES && pv == GW_ANTHROPIC);
	ck_assert_int_eq(gw_route("POST", "/v1/responses", &api, &pv), 0);
	ck_assert(api == GW_OPENAI_RESPONSES && pv == GW_OPENAI);
	ck_assert_int_eq(gw_route("GET", "/v1/chat/completions", &api, &pv), -EPERM);
	ck_assert_int_eq(gw_route("POST", "/v1/messages/batches", &api, &pv), -ENOENT);
	ck_assert(pv == GW_ANTHROPIC);
	ck_assert_int_eq(gw_route("POST", "/v1/models", &api, &pv), -ENOENT);
}
END_TEST

/* ---- usage --------------------------------------------------------------- */

static double cost_of(enum gw_api api, const char *json, bool *final)
{
	json_t *j = json_loads(json, 0, NULL);
	struct gw_usage u = { 0 };

	ck_assert_ptr_nonnull(j);
	gw_usage_response(api, j, &u);
	json_decref(j);
	*final = u.final;
	return gw_usage_cost(&u, &PRICE);
}

START_TEST(usage_plain)
{
	bool fin;

	ck_assert(fabs(cost_of(GW_ANTHROPIC_MESSAGES,
			       "{\"usage\":{\"input_tokens\":100,\"output_tokens\":10,"
			       "\"cache_creation_input_tokens\":1000,\"cache_read_input_tokens\":2000}}", &fin) -
		       (100 * 3 + 10 * 15 + 1000 * 3.75 + 2000 * 0.3) / 1e6) < 1e-15);
	ck_assert(fin);
	/* OpenAI counts cached tokens inside prompt_tokens */
	ck_assert(fabs(cost_of(GW_OPENAI_CHAT,
			       "{\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":10,"
			       "\"prompt_tokens_details\":{\"cached_tokens\":600}}}", &fin) -
		       (400 * 3 + 10 * 15 + 600 * 0.3) / 1e6) < 1e-15);
	ck_assert(fabs(cost_of(GW_OPENAI_RESPONSES,
			       "{\"usage\":{\"input_tokens\":50,\"output_tokens\":7,"
			       "\"input_tokens_details\":{\"cached_tokens\":0}}}", &fin) -
		       (50 * 3 + 7 * 15) / 1e6) < 1e-15);
	ck_assert(cost_of(GW_OPENAI_RESPONSES, "{\"output\":[]}", &fin) == 0);
	ck_assert(!fin); /* no usage: the gateway keeps the estimate */
	ck_assert(cost_of(GW_ANTHROPIC_COUNT, "{\"input_tokens\":5}", &fin) == 0 && fin);
}
END_TEST

/* ---- streams ------------------------------------------------------------- */

struct jstate {
	int calls, deny_at;
	char last_name[64];
	char *last_input;
};

static int fake_judge(void *ctx, const struct gw_proposal *p, char *why, size_t whylen)
{
	struct jstate *js = ctx;

	js->calls++;
	snprintf(js->last_name, sizeof(js->last_name), "%s", p->name);
	free(js->last_input);
	js->last_input = json_dumps(p->input, JSON_COMPACT | JSON_SORT_KEYS);
	if (js->calls == js->deny_at) {
		snprintf(why, whylen, "%s: max_repeat_exceeded", p->name);
		return 1;
	}
	return 0;
}

static void js_reset(struct jstate *js, int deny_at)
{
	free(js->last_input);
	*js = (struct jstate){ .deny_at = deny_at };
}

struct feed {
	struct gw_stream *st;
	struct gw_buf out;
};

static int feed_cb(void *ctx, const struct gw_sse_event *ev)
{
	struct feed *f = ctx;

	return gw_stream_event(f->st, ev, &f->out);
}

/* Run text through the splitter and the stream in pieces of `step` bytes. */
static struct gw_usage run_stream(enum gw_api api, const char *text, size_t step, struct jstate *js,
				  struct gw_buf *out)
{
	struct feed f = { 0 };
	struct gw_sse sse = { 0 };
	struct gw_usage u;
	size_t n = strlen(text);

	ck_assert_int_eq(gw_stream_new(api, true, fake_judge, js, &f.st), 0);
	for (size_t i = 0; i < n; i += step)
		ck_assert_int_eq(gw_sse_feed(&sse, text + i, i + step > n ? n - i : step, feed_cb, &f), 0);
	gw_stream_end(f.st);
	u = *gw_stream_usage(f.st);
	gw_stream_free(f.st);
	gw_sse_free(&sse);
	*out = f.out;
	return u;
}

#define A_START "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":" \
		"{\"input_tokens\":20,\"output_tokens\":1,\"cache_read_input_tokens\":100}}}\r\n\r\n"
#define A_TEXT "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0," \
	       "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
#define A_TOOL "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1," \
	       "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}}\n\n" \
	       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1," \
	       "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \"}}\n\n" \
	       "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1," \
	       "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"git push\\\"}\"}}\n\n" \
	       "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
#define A_END "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":" \
	      "\"tool_use\"},\"usage\":{\"output_tokens\":30}}\n\nevent: message_stop\ndata: " \
	      "{\"type\":\"message_stop\"}\n\n"

START_TEST(stream_anthropic)
{
	const char *s = A_START A_TEXT A_TOOL A_END;
	struct jstate js = { .deny_at = 0 };
	struct gw_buf out;
	struct gw_usage u;

	for (size_t step = 1; step < 40; step += 13) {
		js_reset(&js, 0);
		u = run_stream(GW_ANTHROPIC_MESSAGES, s, step, &js, &out);
		ck_assert_str_eq(out.p, s); /* allowed: byte for byte as received */
		ck_assert_int_eq(js.calls, 1);
		ck_assert_str_eq(js.last_name, "Bash");
		ck_assert_str_eq(js.last_input, "{\"command\":\"git push\"}");
		ck_assert(u.final && u.input == 20 && u.output == 30 && u.cache_read == 100);
		gw_buf_free(&out);
	}
	js_reset(&js, 1);
	run_stream(GW_ANTHROPIC_MESSAGES, s, 7, &js, &out);
	ck_assert_ptr_null(strstr(out.p, "tool_use\""));
	ck_assert_ptr_nonnull(strstr(out.p, "\"text\":\"[shackle] The tool call was refused: Bash: "
					    "max_repeat_exceeded\""));
	ck_assert_ptr_nonnull(strstr(out.p, "\"stop_reason\":\"end_turn\""));
	ck_assert_ptr_nonnull(strstr(out.p, "\"index\":1")); /* the block takes the tool's place */
	ck_assert_ptr_nonnull(strstr(out.p, "message_stop"));
	gw_buf_free(&out);
	free(js.last_input);
}
END_TEST

START_TEST(stream_cut_drops_held)
{
	struct jstate js = { 0 };
	struct gw_buf out;

	run_stream(GW_ANTHROPIC_MESSAGES, A_START A_TEXT A_TOOL, 5, &js, &out);
	ck_assert_int_eq(js.calls, 0); /* never complete: never judged, never passed */
	ck_assert_ptr_null(strstr(out.p, "Bash"));
	gw_buf_free(&out);
	free(js.last_input);
}
END_TEST

#define C_CHUNK(delta, fin) "data: {\"id\":\"c1\",\"created\":5,\"model\":\"gpt\",\"choices\":" \
			    "[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" fin "}]}\n\n"

START_TEST(stream_chat)
{
	const char *s = C_CHUNK("{\"content\":\"hi\"}", "null")
		C_CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"Bash\","
			"\"arguments\":\"{\\\"c\\\":\"}}]}", "null")
		C_CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}", "null")
		C_CHUNK("{}", "\"tool_calls\"")
		"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,"
		"\"completion_tokens\":4}}\n\ndata: [DONE]\n\n";
	struct jstate js = { .deny_at = 1 };
	struct gw_buf out;
	struct gw_usage u = run_stream(GW_OPENAI_CHAT, s, 11, &js, &out);

	ck_assert_str_eq(js.last_input, "{\"c\":1}");
	ck_assert(u.final && u.input == 10 && u.output == 4);
	ck_assert_ptr_nonnull(strstr(out.p, "data: {\"id\":\"c1\",\"created\":5"));
	ck_assert_ptr_null(strstr(out.p, "tool_calls"));
	ck_assert_ptr_nonnull(strstr(out.p, "[shackle] The tool call was refused: Bash"));
	ck_assert_ptr_nonnull(strstr(out.p, "\"finish_reason\":\"stop\""));
	ck_assert_ptr_null(strstr(out.p, "\"usage\"")); /* the gateway asked for it, not the agent */
	ck_assert_ptr_nonnull(strstr(out.p, "data: [DONE]\n\n"));
	gw_buf_free(&out);
	free(js.last_input);
}
END_TEST

#define R_EV(type, rest) "event: " type "\ndata: {\"type\":\"" type "\"," rest "}\n\n"
#define R_FC "{\"type\":\"function_call\",\"name\":\"Bash\",\"call_id\":\"c\",\"arguments\":\"{\\\"a\\\":2}\"}"

START_TEST(stream_responses)
{
	const char *s =
		R_EV("response.output_item.added", "\"output_index\":0,\"sequence_number\":3,\"item\":" R_FC)
		R_EV("response.function_call_arguments.delta", "\"output_index\":0,\"sequence_number\":4,"
		     "\"delta\":\"{}\"")
		R_EV("response.output_item.done", "\"output_index\":0,\"sequence_number\":5,\"item\":" R_FC)
		R_EV("response.completed", "\"sequence_number\":6,\"response\":{\"output\":[" R_FC "],"
		     "\"usage\":{\"input_tokens\":8,\"output_tokens\":2}}");
	struct jstate js = { .deny_at = 0 };
	struct gw_buf out;
	struct gw_usage u = run_stream(GW_OPENAI_RESPONSES, s, 64, &js, &out);

	ck_assert_str_eq(out.p, s);
	ck_assert_str_eq(js.last_input, "{\"a\":2}");
	ck_assert(u.final && u.input == 8 && u.output == 2);
	gw_buf_free(&out);
	js_reset(&js, 1);
	run_stream(GW_OPENAI_RESPONSES, s, 64, &js, &out);
	ck_assert_ptr_null(strstr(out.p, "function_call"));
	ck_assert_ptr_nonnull(strstr(out.p, "\"type\":\"response.completed\""));
	ck_assert_ptr_nonnull(strstr(out.p, "[shackle] The tool call was refused: Bash"));
	gw_buf_free(&out);
	free(js.last_input);
}
END_TEST

START_TEST(stream_garbage)
{
	struct gw_stream *st;
	struct gw_buf out = { 0 };
	struct gw_sse_event ev = { .name = "", .data = "{nope", .data_len = 5, .raw = "", .raw_len = 0 };

	ck_assert_int_eq(gw_stream_new(GW_ANTHROPIC_MESSAGES, false, fake_judge, NULL, &st), 0);
	ck_assert_int_eq(gw_stream_event(st, &ev, &out), -EBADMSG);
	gw_stream_free(st);
}
END_TEST

/* ---- proposals, whole responses ---------------------------------------------- */

static char *rewrite(enum gw_api api, const char *json, struct jstate *js, bool *rewritten)
{
	json_t *j = json_loads(json, 0, NULL);
	char *s;

	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(gw_proposals_response(api, j, fake_judge, js, rewritten), 0);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

START_TEST(proposals_plain)
{
	struct jstate js = { .deny_at = 2 };
	bool rw;
	char *s;

	s = rewrite(GW_ANTHROPIC_MESSAGES,
		    "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"tool_use\",\"name\":\"A\","
		    "\"input\":{\"x\":1}},{\"type\":\"tool_use\",\"name\":\"B\",\"input\":{}}],"
		    "\"stop_reason\":\"tool_use\"}", &js, &rw);
	ck_assert(rw && js.calls == 2);
	ck_assert_str_eq(s, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"text\",\"text\":"
			    "\"[shackle] The tool call was refused: B: max_repeat_exceeded\"}],"
			    "\"stop_reason\":\"end_turn\"}");
	free(s);
	js_reset(&js, 1);
	s = rewrite(GW_OPENAI_CHAT,
		    "{\"choices\":[{\"index\":0,\"finish_reason\":\"tool_calls\",\"message\":{\"content\":null,"
		    "\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"Bash\",\"arguments\":"
		    "\"not json\"}}]}}]}", &js, &rw);
	ck_assert(rw);
	ck_assert_str_eq(js.last_input, "{\"arguments\":\"not json\"}");
	ck_assert_ptr_null(strstr(s, "tool_calls\":["));
	ck_assert_ptr_nonnull(strstr(s, "\"finish_reason\":\"stop\""));
	free(s);
	js_reset(&js, 1);
	s = rewrite(GW_OPENAI_RESPONSES, "{\"output\":[" R_FC "]}", &js, &rw);
	ck_assert(rw);
	ck_assert_ptr_null(strstr(s, "function_call"));
	ck_assert_ptr_nonnull(strstr(s, "\"type\":\"output_text\""));
	free(s);
	js_reset(&js, 0);
	s = rewrite(GW_OPENAI_RESPONSES, "{\"output\":[" R_FC "]}", &js, &rw);
	ck_assert(!rw && js.calls == 1);
	free(s);
	free(js.last_input);
}
END_TEST

/* ---- SSE --------------------------------------------------------------------- */

static int count_cb(void *ctx, const struct gw_sse_event *ev)
{
	struct gw_buf *b = ctx;

	gw_buf_str(b, ev->name);
	gw_buf_str(b, "=");
	gw_buf_add(b, ev->data, ev->data_len);
	gw_buf_str(b, "|");
	return 0;
}

START_TEST(sse_split)
{
	const char *s = ": comment\r\nevent: a\r\ndata: 1\r\ndata:2\r\rdata: x\n\n\n";
	struct gw_buf got = { 0 };

	for (size_t step = 1; step <= strlen(s); step++) {
		struct gw_sse sse = { 0 };

		got.len = 0;
		for (size_t i = 0; i < strlen(s); i += step)
			gw_sse_feed(&sse, s + i, i + step > strlen(s) ? strlen(s) - i : step, count_cb, &got);
		ck_assert_str_eq(got.p, "a=1\n2|=x|");
		gw_sse_free(&sse);
	}
	gw_buf_free(&got);
}
END_TEST

/* ---- policy "models" ------------------------------------------------------------ */

START_TEST(policy_prices)
{
	const char *t = "{\"version\":1,\"models\":{\"prices\":["
			"{\"model\":\"claude-opus-4*\",\"input\":15,\"output\":75},"
			"{\"model\":\"claude-*\",\"input\":3,\"output\":15,\"cache_read\":0.3}],"
			"\"upstream\":{\"anthropic\":\"http://127.0.0.1:9/\"}}}";
	shk_model_price p;
	shk_policy *pol;
	shk_parse_error pe;

	ck_assert_int_eq(shk_policy_load_buffer(t, strlen(t), "p", &pol, &pe), 0);
	ck_assert_int_eq(shk_policy_model_price(pol, "claude-opus-4-1", 15, &p), 0);
	ck_assert(p.input == 15 && p.cache_write == 15); /* absent: charged as input */
	ck_assert_int_eq(shk_policy_model_price(pol, "claude-sonnet-4", 15, &p), 0);
	ck_assert(p.input == 3 && p.cache_read == 0.3);
	ck_assert_int_eq(shk_policy_model_price(pol, "gpt-4o", 6, &p), -ENOENT);
	ck_assert_str_eq(shk_policy_models(pol)->anthropic_upstream, "http://127.0.0.1:9");
	ck_assert_ptr_null(shk_policy_models(pol)->openai_upstream);
	ck_assert_int_eq(shk_policy_models(pol)->max_request_bytes, 32u << 20);
	shk_policy_free(pol);
}
END_TEST

/* The gateway's calls: models.rules in order, then models.default, then
 * the exec default. */
START_TEST(policy_model_rules)
{
	const char *t = "{\"version\":1,\"exec\":{\"default\":\"deny\"},\"models\":{"
			"\"default\":\"allow\",\"rules\":["
			"{\"name\":\"held-bash\",\"tool\":\"Bash\",\"action\":\"hitl\"},"
			"{\"tool\":\"model:gpt-*\",\"action\":\"deny\"}]}}";
	const char *bare = "{\"version\":1,\"exec\":{\"default\":\"hitl\"},\"models\":{}}";
	shk_policy_match m;
	shk_policy *pol;
	shk_parse_error pe;

	ck_assert_int_eq(shk_policy_load_buffer(t, strlen(t), "p", &pol, &pe), 0);
	ck_assert_int_eq(shk_policy_match_model_call(pol, "Bash", 4, &m), 0);
	ck_assert(m.action == SHK_ACTION_HITL && m.rule_index == 0 && !strcmp(m.rule_name, "held-bash"));
	ck_assert_int_eq(shk_policy_match_model_call(pol, "model:gpt-4o", 12, &m), 0);
	ck_assert(m.action == SHK_ACTION_DENY && m.rule_index == 1 && !m.rule_name);
	ck_assert_int_eq(shk_policy_match_model_call(pol, "model:claude-x", 14, &m), 0);
	ck_assert(m.action == SHK_ACTION_ALLOW && m.rule_index == -1 && !m.rule_name);
	ck_assert_int_eq(shk_policy_match_model_call(pol, "BashX", 5, &m), 0);
	ck_assert(m.action == SHK_ACTION_ALLOW);
	shk_policy_free(pol);
	/* no models.default: the exec default, as before */
	ck_assert_int_eq(shk_policy_load_buffer(bare, strlen(bare), "p", &pol, &pe), 0);
	ck_assert_int_eq(shk_policy_match_model_call(pol, "Bash", 4, &m), 0);
	ck_assert(m.action == SHK_ACTION_HITL && m.rule_index == -1);
	shk_policy_free(pol);
}
END_TEST

/* A rule's ignore_input, as the gateway reads it: by the index the match gave. */
START_TEST(policy_ignore_input)
{
	const char *t = "{\"version\":1,\"models\":{\"rules\":["
			"{\"name\":\"bash\",\"tool\":\"Bash\",\"action\":\"allow\","
			"\"ignore_input\":[\"description\",\"timeout\"]},"
			"{\"tool\":\"Read\",\"action\":\"allow\",\"ignore_input\":[]}]}}";
	const char *const *ign;
	shk_policy_match m;
	shk_parse_error pe;
	shk_policy *pol;
	size_t n = 9;

	ck_assert_int_eq(shk_policy_load_buffer(t, strlen(t), "p", &pol, &pe), 0);
	ck_assert_int_eq(shk_policy_match_model_call(pol, "Bash", 4, &m), 0);
	ign = shk_policy_model_ignore_input(pol, m.rule_index, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(ign[0], "description");
	ck_assert_str_eq(ign[1], "timeout");
	ck_assert_ptr_null(ign[2]);
	ck_assert_ptr_null(shk_policy_model_ignore_input(pol, 1, &n));
	ck_assert_uint_eq(n, 0);
	n = 9;
	ck_assert_ptr_null(shk_policy_model_ignore_input(pol, -1, &n));
	ck_assert_uint_eq(n, 0);
	n = 9;
	ck_assert_ptr_null(shk_policy_model_ignore_input(pol, 2, &n));
	ck_assert_uint_eq(n, 0);
	shk_policy_free(pol);
}
END_TEST

/* A tool result is matched to the proposal of the same call: the members
 * the rule ignores do not make it another call, the others do. */
START_TEST(result_error_ignores)
{
	const char *body = "{\"model\":\"m\",\"messages\":["
			   "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\","
			   "\"name\":\"Bash\",\"input\":{\"command\":\"curl u\",\"description\":\"first\"}}]},"
			   "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
			   "\"content\":\"HTTP 401 Unauthorized\"}]}]}";
	static const char *const ign[] = { "description", NULL };
	json_t *req = json_loads(body, 0, NULL);
	json_t *same = json_pack("{s:s, s:s}", "command", "curl u", "description", "again");
	json_t *bare = json_pack("{s:s}", "command", "curl u");
	json_t *other = json_pack("{s:s, s:s}", "command", "curl v", "description", "first");

	ck_assert_ptr_nonnull(req);
	ck_assert(!gw_result_error(GW_ANTHROPIC_MESSAGES, req, "Bash", same, NULL, 0));
	ck_assert(gw_result_error(GW_ANTHROPIC_MESSAGES, req, "Bash", same, ign, 1));
	ck_assert(gw_result_error(GW_ANTHROPIC_MESSAGES, req, "Bash", bare, ign, 1));
	ck_assert(!gw_result_error(GW_ANTHROPIC_MESSAGES, req, "Bash", other, ign, 1));
	json_decref(req);
	json_decref(same);
	json_decref(bare);
	json_decref(other);
}
END_TEST

START_TEST(policy_errors)
{
	static const struct { const char *text; int line, col; const char *msg; } cases[] = {
		{ "{\"version\":1,\n\"models\":{\"prices\":[{\"model\":\"a\",\"input\":-1,\"output\":1}]}}",
		  2, 42, "models.prices[0].input: -1 is out of range" },
		{ "{\"version\":1,\"models\":{\n \"prices\":[{\"model\":\"a\",\"input\":1}]}}",
		  2, 12, "models.prices[0]: missing required field \"output\"" },
		{ "{\"version\":1,\"models\":{\"cost\":1}}", 1, 24, "models.cost: unknown field" },
		{ "{\"version\":1,\"models\":{\"upstream\":{\"openai\":\"ftp://x\"}}}", 1, 45,
		  "models.upstream.openai: expected an http" },
		{ "{\"version\":1,\"models\":{\"max_request_bytes\":10}}", 1, 44,
		  "models.max_request_bytes: expected an integer from 1024" },
		{ "{\"version\":1,\"models\":[]}", 1, 23, "models: expected an object" },
		{ "{\"version\":1,\"models\":{\"default\":\"maybe\"}}", 1, 34,
		  "models.default: unknown action \"maybe\"" },
		{ "{\"version\":1,\"models\":{\"rules\":{}}}", 1, 32, "models.rules: expected an array" },
		{ "{\"version\":1,\"models\":{\"rules\":[\n{\"action\":\"deny\"}]}}", 2, 1,
		  "models.rules[0]: missing required field \"tool\"" },
		{ "{\"version\":1,\"models\":{\"rules\":[{\"tool\":\"Bash\",\n\"action\":\"no\"}]}}", 2, 10,
		  "models.rules[0].action: unknown action" },
		{ "{\"version\":1,\"models\":{\"rules\":[{\"tool\":\"\",\"action\":\"deny\"}]}}", 1, 41,
		  "models.rules[0].tool: must be 1 to 271 bytes" },
		{ "{\"version\":1,\"models\":{\"rules\":[{\"tool\":\"a\",\"action\":\"deny\",\"cost_usd\":1}]}}",
		  1, 61, "models.rules[0].cost_usd: unknown field" },
		{ "{\"version\":1,\"models\":{\"rules\":[{\"name\":\"n\",\"tool\":\"a\",\"action\":\"deny\"},\n"
		  "{\"name\":\"n\",\"tool\":\"b\",\"action\":\"deny\"}]}}", 2, 9,
		  "models.rules[1].name: rule name \"n\" is already used by rule 0" },
#define IGN "{\"version\":1,\"models\":{\"rules\":[{\"tool\":\"Bash\",\"action\":\"allow\",\"ignore_input\":"
		{ IGN "\"description\"}]}}", 1, 80,
		  "models.rules[0].ignore_input: expected an array of input field names, got a string" },
		{ IGN "[\"description\",\n 1]}]}}", 2, 2,
		  "models.rules[0].ignore_input[1]: expected an input field's name (a string), got " },
		{ IGN "[\"\"]}]}}", 1, 81, "models.rules[0].ignore_input[0]: must be 1 to 256 bytes" },
		{ IGN "[\"d\",\"e\",\"d\"]}]}}", 1, 89,
		  "models.rules[0].ignore_input[2]: \"d\" is listed twice" },
#undef IGN
		{ "{\"version\":1,\"models\":{\"rules\":[{\"tool\":\"Bash\",\"action\":\"allow\","
		  "\"ignore_inputs\":[]}]}}", 1, 65, "models.rules[0].ignore_inputs: unknown field" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shk_policy *pol = NULL;
		shk_parse_error pe;

		ck_assert_int_eq(shk_policy_load_buffer(cases[i].text, strlen(cases[i].text), "p.json",
							&pol, &pe), -EINVAL);
		ck_assert_msg(strstr(pe.text, cases[i].msg) && pe.line == cases[i].line &&
			      pe.column == cases[i].col, "case %zu: %d:%d %s", i, pe.line, pe.column,
			      pe.text);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gateway");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, request_to_call);
	tcase_add_test(tc, request_bad);
	tcase_add_test(tc, request_include_usage);
	tcase_add_test(tc, route);
	tcase_add_test(tc, usage_plain);
	tcase_add_test(tc, stream_anthropic);
	tcase_add_test(tc, stream_cut_drops_held);
	tcase_add_test(tc, stream_chat);
	tcase_add_test(tc, stream_responses);
	tcase_add_test(tc, stream_garbage);
	tcase_add_test(tc, proposals_plain);
	tcase_add_test(tc, sse_split);
	tcase_add_test(tc, policy_prices);
	tcase_add_test(tc, policy_model_rules);
	tcase_add_test(tc, policy_ignore_input);
	tcase_add_test(tc, result_error_ignores);
	tcase_add_test(tc, policy_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
