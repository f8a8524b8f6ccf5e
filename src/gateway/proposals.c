/* SPDX-License-Identifier: MIT */
/* The tool calls a model proposes in a complete response: judged, and on a
 * refusal taken out so that the turn ends with a text naming the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

char *gw_denied_text(const char *why)
{
	size_t n = strlen(GW_DENIED_PREFIX) + strlen(why) + 1;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s%s", GW_DENIED_PREFIX, why);
	return s;
}

json_t *gw_arguments_input(const char *arguments, size_t len)
{
	json_t *v = json_loadb(arguments, len, JSON_REJECT_DUPLICATES, NULL);

	if (json_is_object(v))
		return v;
	json_decref(v);
	/* Not an object: the agent gets the string and does what it does with
	 * it; the judge sees it whole, so the repeat guard still counts it. */
	return json_pack("{s:s%}", "arguments", arguments, len);
}

/* An item's input as an object: objects as they are, anything else wrapped. */
static json_t *object_input(json_t *v, const char *key)
{
	if (json_is_object(v))
		return json_incref(v);
	return json_pack("{s:O?}", key, v);
}

/* Judge (name, input); consumes input. 0 allowed, 1 refused, <0 error. */
static int judge_one(gw_judge_fn judge, void *ctx, const char *name, json_t *input, char *why,
		     size_t whylen)
{
	struct gw_proposal p = { .name = name ? name : "", .input = input };
	int r;

	if (!input) {
		snprintf(why, whylen, "out of memory while judging the tool call %s", p.name);
		return 1;
	}
	r = judge(ctx, &p, why, whylen);
	json_decref(input);
	if (r < 0 && !why[0])
		snprintf(why, whylen, "the tool call %s could not be judged (%s)", p.name, strerror(-r));
	return r == 0 ? 0 : 1;
}

static int judge_chat_choice(json_t *msg, gw_judge_fn judge, void *ctx, char *why, size_t whylen)
{
	json_t *tcs = json_object_get(msg, "tool_calls"), *tc, *fc;
	size_t i;
	int r;

	json_array_foreach(tcs, i, tc) {
		json_t *fn = json_object_get(tc, "function");
		json_t *args = json_object_get(fn, "arguments");

		r = judge_one(judge, ctx, json_string_value(json_object_get(fn, "name")),
			      json_is_string(args) ? gw_arguments_input(json_string_value(args),
									json_string_length(args))
						   : object_input(args, "arguments"),
			      why, whylen);
		if (r)
			return r;
	}
	fc = json_object_get(msg, "function_call");
	if (json_is_object(fc)) {
		json_t *args = json_object_get(fc, "arguments");

		return judge_one(judge, ctx, json_string_value(json_object_get(fc, "name")),
				 json_is_string(args) ? gw_arguments_input(json_string_value(args),
									   json_string_length(args))
						      : object_input(args, "arguments"),
				 why, whylen);
	}
	return 0;
}

static int rewrite_chat(json_t *choice, const char *text)
{
	json_t *msg = json_object_get(choice, "message");
	json_t *c = json_object_get(msg, "content");
	char *joined = NULL;
	int r;

	json_object_del(msg, "tool_calls");
	json_object_del(msg, "function_call");
	if (json_is_string(c) && json_string_length(c) &&
	    asprintf(&joined, "%s\n\n%s", json_string_value(c), text) < 0)
		return -ENOMEM;
	r = json_object_set_new(msg, "content", json_string(joined ? joined : text));
	free(joined);
	if (r < 0 || json_object_set_new(choice, "finish_reason", json_string("stop")) < 0)
		return -ENOMEM;
	return 0;
}

static int chat_response(json_t *resp, gw_judge_fn judge, void *ctx, char *why, size_t whylen,
			 bool *rewritten)
{
	json_t *choices = json_object_get(resp, "choices"), *ch;
	char *text;
	size_t i;
	int r = 0;

	json_array_foreach(choices, i, ch) {
		if (judge_chat_choice(json_object_get(ch, "message"), judge, ctx, why, whylen) == 0)
			continue;
		if (!(text = gw_denied_text(why)))
			return -ENOMEM;
		r = rewrite_chat(ch, text);
		free(text);
		*rewritten = true;
		if (r < 0)
			return r;
	}
	return 0;
}

static int anthropic_response(json_t *resp, gw_judge_fn judge, void *ctx, char *why,
			      size_t whylen, bool *rewritten)
{
	json_t *content = json_object_get(resp, "content"), *b, *keep;
	char *text;
	size_t i;
	int refused = 0;

	json_array_foreach(content, i, b) {
		if (!json_is_object(b) || !json_is_string(json_object_get(b, "type")) ||
		    strcmp(json_string_value(json_object_get(b, "type")), "tool_use"))
			continue;
		refused = judge_one(judge, ctx, json_string_value(json_object_get(b, "name")),
				    object_input(json_object_get(b, "input"), "input"), why, whylen);
		if (refused)
			break;
	}
	if (!refused)
		return 0;
	*rewritten = true;
	if (!(keep = json_array()))
		return -ENOMEM;
	json_array_foreach(content, i, b)
		if (!json_is_string(json_object_get(b, "type")) ||
		    strcmp(json_string_value(json_object_get(b, "type")), "tool_use"))
			json_array_append(keep, b);
	text = gw_denied_text(why);
	if (!text || json_array_append_new(keep, json_pack("{s:s, s:s}", "type", "text", "text", text)) < 0 ||
	    json_object_set_new(resp, "content", keep) < 0 ||
	    json_object_set_new(resp, "stop_reason", json_string("end_turn")) < 0) {
		free(text);
		return -ENOMEM;
	}
	free(text);
	return 0;
}

/* A Responses output item that asks the agent to run something: its name and input. */
bool gw_responses_call(json_t *item, const char **ret_name, json_t **ret_input)
{
	const char *type = json_string_value(json_object_get(item, "type"));
	json_t *v;

	if (!type)
		return false;
	if (!strcmp(type, "function_call")) {
		v = json_object_get(item, "arguments");
		*ret_name = json_string_value(json_object_get(item, "name"));
		*ret_input = json_is_string(v) ? gw_arguments_input(json_string_value(v),
								    json_string_length(v))
					       : object_input(v, "arguments");
		return true;
	}
	if (!strcmp(type, "custom_tool_call")) {
		*ret_name = json_string_value(json_object_get(item, "name"));
		*ret_input = object_input(json_object_get(item, "input"), "input");
		return true;
	}
	if (!strcmp(type, "local_shell_call")) {
		*ret_name = "local_shell";
		*ret_input = object_input(json_object_get(item, "action"), "action");
		return true;
	}
	return false;
}

json_t *gw_responses_message_item(const char *text)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:[]}]}", "type", "message", "id",
			 "msg_shackle_refusal", "status", "completed", "role", "assistant", "content",
			 "type", "output_text", "text", text, "annotations");
}

int gw_responses_rewrite(json_t *resp, const char *why)
{
	json_t *out = json_object_get(resp, "output"), *keep = json_array(), *it, *input;
	const char *name;
	char *text = gw_denied_text(why);
	size_t i;
	int r = -ENOMEM;

	if (!keep || !text)
		goto out;
	json_array_foreach(out, i, it) {
		if (gw_responses_call(it, &name, &input)) {
			json_decref(input);
			continue;
		}
		json_array_append(keep, it);
	}
	if (json_array_append_new(keep, gw_responses_message_item(text)) == 0 &&
	    json_object_set(resp, "output", keep) == 0)
		r = 0;
out:
	json_decref(keep);
	free(text);
	return r;
}

static int responses_response(json_t *resp, gw_judge_fn judge, void *ctx, char *why,
			      size_t whylen, bool *rewritten)
{
	json_t *out = json_object_get(resp, "output"), *it, *input;
	const char *name;
	size_t i;

	json_array_foreach(out, i, it) {
		if (!gw_responses_call(it, &name, &input))
			continue;
		if (judge_one(judge, ctx, name, input, why, whylen) == 0)
			continue;
		*rewritten = true;
		return gw_responses_rewrite(resp, why);
	}
	return 0;
}

int gw_proposals_response(enum gw_api api, json_t *response, gw_judge_fn judge, void *ctx,
			  bool *ret_rewritten)
{
	char why[512] = "";

	*ret_rewritten = false;
	switch (api) {
	case GW_ANTHROPIC_MESSAGES:
		return anthropic_response(response, judge, ctx, why, sizeof(why), ret_rewritten);
	case GW_OPENAI_CHAT:
		return chat_response(response, judge, ctx, why, sizeof(why), ret_rewritten);
	case GW_OPENAI_RESPONSES:
		return responses_response(response, judge, ctx, why, sizeof(why), ret_rewritten);
	case GW_ANTHROPIC_COUNT:
		break;
	}
	return 0;
}
