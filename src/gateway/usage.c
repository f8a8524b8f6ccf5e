/* SPDX-License-Identifier: MIT */
/* A response's usage, in each API's shape, and what it cost. */
#include <jansson.h>

#include "gateway/internal.h"

/* A token count: a non-negative integer, else left as it was. */
static void count(const json_t *o, const char *key, uint64_t *ret, bool *seen)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret = (uint64_t)json_integer_value(v);
		*seen = true;
	}
}

static void merge_anthropic(const json_t *usage, struct gw_usage *u)
{
	count(usage, "input_tokens", &u->input, &u->seen);
	count(usage, "output_tokens", &u->output, &u->seen);
	count(usage, "cache_creation_input_tokens", &u->cache_write, &u->seen);
	count(usage, "cache_read_input_tokens", &u->cache_read, &u->seen);
}

/* OpenAI counts cached tokens inside the input: take them out. */
static void merge_openai(const json_t *usage, const char *in_key, const char *out_key,
			 const char *details_key, struct gw_usage *u)
{
	uint64_t in = u->input + u->cache_read, cached = u->cache_read;
	bool seen = false;

	count(usage, in_key, &in, &seen);
	count(usage, out_key, &u->output, &seen);
	count(json_object_get(usage, details_key), "cached_tokens", &cached, &seen);
	if (!seen)
		return;
	u->seen = true;
	u->cache_read = cached < in ? cached : in;
	u->input = in - u->cache_read;
}

void gw_usage_merge(enum gw_api api, const json_t *usage, struct gw_usage *u)
{
	if (!json_is_object(usage))
		return;
	switch (api) {
	case GW_ANTHROPIC_MESSAGES:
	case GW_ANTHROPIC_COUNT:
		merge_anthropic(usage, u);
		break;
	case GW_OPENAI_CHAT:
		merge_openai(usage, "prompt_tokens", "completion_tokens", "prompt_tokens_details", u);
		break;
	case GW_OPENAI_RESPONSES:
		merge_openai(usage, "input_tokens", "output_tokens", "input_tokens_details", u);
		break;
	}
}

void gw_usage_response(enum gw_api api, const json_t *response, struct gw_usage *u)
{
	json_t *usage = json_object_get(response, "usage");

	if (api == GW_ANTHROPIC_COUNT) {
		/* Counting is free: the answer's input_tokens is no spend. */
		u->seen = u->final = json_is_object(response);
		return;
	}
	gw_usage_merge(api, usage, u);
	u->final = u->seen;
}

double gw_usage_cost(const struct gw_usage *u, const shk_model_price *p)
{
	return ((double)u->input * p->input + (double)u->output * p->output +
		(double)u->cache_write * p->cache_write + (double)u->cache_read * p->cache_read) / 1e6;
}

json_t *gw_usage_json(const struct gw_usage *u)
{
	if (!u->seen)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I, s:b}", "input_tokens", (json_int_t)u->input,
			 "output_tokens", (json_int_t)u->output, "cache_write_tokens",
			 (json_int_t)u->cache_write, "cache_read_tokens", (json_int_t)u->cache_read,
			 "final", u->final);
}
