/* SPDX-License-Identifier: MIT */
/*
 * A streamed response, event by event. Text passes at once; from the first
 * tool call on, events are held until the turn's tool calls are complete
 * (Anthropic message_delta, an OpenAI chunk with a finish_reason, Responses
 * response.completed), judged in order, then passed on as received or, at
 * the first refusal, replaced by a text naming the reason that ends the turn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/internal.h"

#define CALLS_MAX 64

struct call {
	long key;           /* Anthropic block index, OpenAI tool call index */
	struct gw_buf name, args;
	json_t *input;      /* complete input when the API gives it whole */
};

struct gw_stream {
	enum gw_api api;
	bool drop_usage, holding, refused, overflow;
	gw_judge_fn judge;
	void *ctx;
	struct gw_usage usage;
	struct gw_buf held;
	struct call calls[CALLS_MAX];
	size_t ncalls;
	long first_index;   /* Anthropic: block index, Responses: output_index */
	json_int_t first_seq;
	json_t *chunk;      /* OpenAI chat: the first held chunk, for id/model/created */
};

int gw_stream_new(enum gw_api api, bool drop_usage_chunk, gw_judge_fn judge, void *ctx,
		  struct gw_stream **ret)
{
	struct gw_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->api = api;
	st->drop_usage = drop_usage_chunk;
	st->judge = judge;
	st->ctx = ctx;
	*ret = st;
	return 0;
}

static void drop_calls(struct gw_stream *st)
{
	for (size_t i = 0; i < st->ncalls; i++) {
		gw_buf_free(&st->calls[i].name);
		gw_buf_free(&st->calls[i].args);
		json_decref(st->calls[i].input);
	}
	st->ncalls = 0;
	st->held.len = 0;
	st->holding = st->overflow = false;
	json_decref(st->chunk);
	st->chunk = NULL;
}

void gw_stream_free(struct gw_stream *st)
{
	if (!st)
		return;
	drop_calls(st);
	gw_buf_free(&st->held);
	free(st);
}

void gw_stream_end(struct gw_stream *st)
{
	drop_calls(st); /* calls that never completed go nowhere */
}

const struct gw_usage *gw_stream_usage(const struct gw_stream *st)
{
	return &st->usage;
}

bool gw_stream_refused(const struct gw_stream *st)
{
	return st->refused;
}

static struct call *call_for(struct gw_stream *st, long key, bool create)
{
	for (size_t i = 0; i < st->ncalls; i++)
		if (st->calls[i].key == key)
			return &st->calls[i];
	if (!create)
		return NULL;
	if (st->ncalls == CALLS_MAX) {
		st->overflow = true;
		return NULL;
	}
	st->calls[st->ncalls] = (struct call){ .key = key };
	return &st->calls[st->ncalls++];
}

static json_t *call_input(struct call *c)
{
	if (c->input)
		return json_incref(c->input);
	if (c->args.len == 0)
		return json_object();
	return gw_arguments_input(c->args.p, c->args.len);
}

/* Judge the held calls in order: 0 all allowed, 1 refused (why filled). */
static int judge_calls(struct gw_stream *st, char *why, size_t whylen)
{
	if (st->overflow) {
		snprintf(why, whylen, "more than %d tool calls in one turn", CALLS_MAX);
		return 1;
	}
	for (size_t i = 0; i < st->ncalls; i++) {
		struct gw_proposal p = { .name = st->calls[i].name.p ? st->calls[i].name.p : "",
					 .input = call_input(&st->calls[i]) };
		int r;

		if (!p.input) {
			snprintf(why, whylen, "out of memory while judging the tool call %s", p.name);
			return 1;
		}
		why[0] = 0;
		r = st->judge(st->ctx, &p, why, whylen);
		json_decref(p.input);
		if (r < 0 && !why[0])
			snprintf(why, whylen, "the tool call %s could not be judged (%s)", p.name,
				 strerror(-r));
		if (r != 0)
			return 1;
	}
	return 0;
}

static int emit_event(struct gw_buf *out, const char *name, json_t *data)
{
	char *s = json_dumps(data, JSON_COMPACT);
	int r = -ENOMEM;

	if (s && (!name || (gw_buf_str(out, "event: ") == 0 && gw_buf_str(out, name) == 0 &&
			    gw_buf_str(out, "\n") == 0)) &&
	    gw_buf_str(out, "data: ") == 0 && gw_buf_str(out, s) == 0 && gw_buf_str(out, "\n\n") == 0)
		r = 0;
	free(s);
	json_decref(data);
	return r;
}

static int pass(struct gw_stream *st, const struct gw_sse_event *ev, struct gw_buf *out)
{
	return gw_buf_add(st->holding ? &st->held : out, ev->raw, ev->raw_len);
}

/* The held events go out as received: they are allowed. */
static int release(struct gw_stream *st, struct gw_buf *out)
{
	int r = gw_buf_add(out, st->held.p, st->held.len);

	drop_calls(st);
	return r;
}

/* ---- Anthropic Messages --------------------------------------------------- */

static int anthropic_refuse(struct gw_stream *st, json_t *delta_ev, const char *text,
			    struct gw_buf *out)
{
	json_int_t idx = st->first_index;
	json_t *d = json_object_get(delta_ev, "delta");
	int r;

	if ((r = emit_event(out, "content_block_start",
			    json_pack("{s:s, s:I, s:{s:s, s:s}}", "type", "content_block_start", "index",
				      idx, "content_block", "type", "text", "text", ""))) < 0 ||
	    (r = emit_event(out, "content_block_delta",
			    json_pack("{s:s, s:I, s:{s:s, s:s}}", "type", "content_block_delta", "index",
				      idx, "delta", "type", "text_delta", "text", text))) < 0 ||
	    (r = emit_event(out, "content_block_stop",
			    json_pack("{s:s, s:I}", "type", "content_block_stop", "index", idx))) < 0)
		return r;
	if (json_is_object(d)) {
		json_object_set_new(d, "stop_reason", json_string("end_turn"));
		json_object_set_new(d, "stop_sequence", json_null());
	}
	return emit_event(out, "message_delta", json_incref(delta_ev));
}

static void anthropic_block_start(struct gw_stream *st, json_t *data)
{
	json_t *cb = json_object_get(data, "content_block"), *in;
	json_t *idx = json_object_get(data, "index");
	const char *type = json_string_value(json_object_get(cb, "type"));
	struct call *c;

	if (!type || strcmp(type, "tool_use") || !json_is_integer(idx))
		return;
	if (!st->holding)
		st->first_index = (long)json_integer_value(idx);
	st->holding = true;
	c = call_for(st, (long)json_integer_value(idx), true);
	if (!c)
		return;
	gw_buf_str(&c->name, json_string_value(json_object_get(cb, "name")) ?: "");
	in = json_object_get(cb, "input");
	if (json_is_object(in) && json_object_size(in))
		c->input = json_incref(in);
}

static void anthropic_block_delta(struct gw_stream *st, json_t *data)
{
	json_t *d = json_object_get(data, "delta"), *pj = json_object_get(d, "partial_json");
	struct call *c;

	if (!st->holding || !json_is_string(pj))
		return;
	c = call_for(st, (long)json_integer_value(json_object_get(data, "index")), false);
	if (!c)
		return;
	json_decref(c->input); /* the deltas are the input */
	c->input = NULL;
	gw_buf_add(&c->args, json_string_value(pj), json_string_length(pj));
}

static int anthropic_resolve(struct gw_stream *st, const struct gw_sse_event *ev, json_t *data,
			     struct gw_buf *out)
{
	char why[512], *text;
	int r;

	if (gw_buf_add(&st->held, ev->raw, ev->raw_len) < 0)
		return -ENOMEM;
	if (judge_calls(st, why, sizeof(why)) == 0)
		return release(st, out);
	drop_calls(st);
	st->refused = true;
	if (!(text = gw_denied_text(why)))
		return -ENOMEM;
	r = anthropic_refuse(st, data, text, out);
	free(text);
	return r;
}

static int anthropic_event(struct gw_stream *st, const struct gw_sse_event *ev, json_t *data,
			   struct gw_buf *out)
{
	const char *type = json_string_value(json_object_get(data, "type"));

	if (!type)
		return pass(st, ev, out);
	if (!strcmp(type, "message_start")) {
		gw_usage_merge(st->api, json_object_get(json_object_get(data, "message"), "usage"),
			       &st->usage);
	} else if (!strcmp(type, "content_block_start")) {
		anthropic_block_start(st, data);
	} else if (!strcmp(type, "content_block_delta")) {
		anthropic_block_delta(st, data);
	} else if (!strcmp(type, "message_delta")) {
		gw_usage_merge(st->api, json_object_get(data, "usage"), &st->usage);
		st->usage.final = st->usage.seen;
		if (st->holding)
			return anthropic_resolve(st, ev, data, out);
	} else if (!strcmp(type, "error")) {
		drop_calls(st);
	}
	return pass(st, ev, out);
}

/* ---- OpenAI Chat Completions ---------------------------------------------- */

static json_t *chat_chunk(const json_t *tmpl, json_t *delta, const char *finish)
{
	json_t *c = json_pack("{s:O?, s:s, s:O?, s:O?, s:[{s:i, s:o, s:s?}]}", "id",
			      json_object_get(tmpl, "id"), "object", "chat.completion.chunk",
			      "created", json_object_get(tmpl, "created"), "model",
			      json_object_get(tmpl, "model"), "choices", "index", 0, "delta", delta,
			      "finish_reason", finish);
	return c;
}

static int chat_resolve(struct gw_stream *st, struct gw_buf *out)
{
	char why[512], *text;
	json_t *tmpl;
	int r;

	if (judge_calls(st, why, sizeof(why)) == 0)
		return release(st, out);
	tmpl = json_incref(st->chunk);
	drop_calls(st);
	st->refused = true;
	text = gw_denied_text(why);
	r = -ENOMEM;
	if (text &&
	    (r = emit_event(out, NULL, chat_chunk(tmpl, json_pack("{s:s, s:s}", "role", "assistant",
								     "content", text), NULL))) == 0)
		r = emit_event(out, NULL, chat_chunk(tmpl, json_object(), "stop"));
	free(text);
	json_decref(tmpl);
	return r;
}

static void chat_tool_delta(struct gw_stream *st, json_t *chunk, long key, json_t *fn)
{
	struct call *c = call_for(st, key, true);
	json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");

	if (!st->chunk)
		st->chunk = json_incref(chunk);
	st->holding = true;
	if (!c)
		return;
	if (json_is_string(name))
		gw_buf_add(&c->name, json_string_value(name), json_string_length(name));
	if (json_is_string(args))
		gw_buf_add(&c->args, json_string_value(args), json_string_length(args));
}

static int chat_event(struct gw_stream *st, const struct gw_sse_event *ev, json_t *chunk,
		      struct gw_buf *out)
{
	json_t *choices = json_object_get(chunk, "choices"), *ch = json_array_get(choices, 0);
	json_t *delta = json_object_get(ch, "delta"), *tc, *fc;
	size_t i;
	int r;

	if (json_is_object(json_object_get(chunk, "usage"))) {
		gw_usage_merge(st->api, json_object_get(chunk, "usage"), &st->usage);
		st->usage.final = st->usage.seen;
		if (st->drop_usage && json_is_array(choices) && json_array_size(choices) == 0)
			return 0;
	}
	json_array_foreach(json_object_get(delta, "tool_calls"), i, tc)
		chat_tool_delta(st, chunk, (long)json_integer_value(json_object_get(tc, "index")),
				json_object_get(tc, "function"));
	fc = json_object_get(delta, "function_call");
	if (json_is_object(fc))
		chat_tool_delta(st, chunk, -1, fc);
	if ((r = pass(st, ev, out)) < 0)
		return r;
	if (st->holding && json_is_string(json_object_get(ch, "finish_reason")))
		return chat_resolve(st, out);
	return 0;
}

/* ---- OpenAI Responses ----------------------------------------------------- */

static int responses_refuse(struct gw_stream *st, json_t *done, const char *why, struct gw_buf *out)
{
	char *text = gw_denied_text(why);
	json_t *item = text ? gw_responses_message_item(text) : NULL;
	json_int_t idx = st->first_index, seq = st->first_seq;
	int r = -ENOMEM;

	if (!item)
		goto out;
	if ((r = emit_event(out, "response.output_item.added",
			    json_pack("{s:s, s:I, s:O, s:I}", "type", "response.output_item.added",
				      "output_index", idx, "item", item, "sequence_number", seq))) < 0 ||
	    (r = emit_event(out, "response.output_item.done",
			    json_pack("{s:s, s:I, s:O, s:I}", "type", "response.output_item.done",
				      "output_index", idx, "item", item, "sequence_number", seq + 1))) < 0)
		goto out;
	r = gw_responses_rewrite(json_object_get(done, "response"), why);
	if (r == 0)
		r = emit_event(out, json_string_value(json_object_get(done, "type")), json_incref(done));
out:
	json_decref(item);
	free(text);
	return r;
}

static void responses_item(struct gw_stream *st, json_t *data, bool done)
{
	json_t *item = json_object_get(data, "item"), *input;
	const char *name;
	struct call *c;

	if (!gw_responses_call(item, &name, &input))
		return;
	if (!st->holding) {
		st->first_index = (long)json_integer_value(json_object_get(data, "output_index"));
		st->first_seq = json_integer_value(json_object_get(data, "sequence_number"));
	}
	st->holding = true;
	if (done && (c = call_for(st, (long)st->ncalls, true))) {
		gw_buf_str(&c->name, name ? name : "");
		c->input = input;
		return;
	}
	json_decref(input);
}

static int responses_event(struct gw_stream *st, const struct gw_sse_event *ev, json_t *data,
			   struct gw_buf *out)
{
	const char *type = json_string_value(json_object_get(data, "type"));
	char why[512];

	if (!type)
		return pass(st, ev, out);
	if (!strcmp(type, "response.output_item.added") || !strcmp(type, "response.output_item.done")) {
		responses_item(st, data, !strcmp(type, "response.output_item.done"));
	} else if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
		   !strcmp(type, "response.failed")) {
		gw_usage_merge(st->api, json_object_get(json_object_get(data, "response"), "usage"),
			       &st->usage);
		st->usage.final = st->usage.seen;
		if (!st->holding)
			return pass(st, ev, out);
		if (judge_calls(st, why, sizeof(why)) == 0) {
			int r = release(st, out);

			return r < 0 ? r : gw_buf_add(out, ev->raw, ev->raw_len);
		}
		drop_calls(st);
		st->refused = true;
		return responses_refuse(st, data, why, out);
	} else if (!strcmp(type, "error")) {
		drop_calls(st);
	}
	return pass(st, ev, out);
}

int gw_stream_event(struct gw_stream *st, const struct gw_sse_event *ev, struct gw_buf *out)
{
	json_t *data;
	int r;

	if (st->api == GW_OPENAI_CHAT && !strcmp(ev->data, "[DONE]")) {
		if (st->holding && (r = chat_resolve(st, out)) < 0)
			return r;
		return gw_buf_add(out, ev->raw, ev->raw_len);
	}
	data = json_loadb(ev->data, ev->data_len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(data)) {
		json_decref(data);
		return -EBADMSG; /* an event that is not JSON: the upstream speaks garbage */
	}
	switch (st->api) {
	case GW_ANTHROPIC_MESSAGES: r = anthropic_event(st, ev, data, out); break;
	case GW_OPENAI_CHAT: r = chat_event(st, ev, data, out); break;
	case GW_OPENAI_RESPONSES: r = responses_event(st, ev, data, out); break;
	default: r = -EINVAL; break;
	}
	json_decref(data);
	return r;
}
