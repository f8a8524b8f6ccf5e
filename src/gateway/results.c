/* SPDX-License-Identifier: MIT */
/*
 * Error signals in the tool results the agent sends back (SP/1.0 §3.9
 * amplification, docs/decide.md): a request carries the conversation so
 * far, so the result of every call the model made is in it, next to the
 * call (matched by its id). A proposal of the same tool with the same
 * input as a call whose last result said "401 Unauthorized" is the loop
 * the repeat guard is for: it gets the stricter limit. Pure.
 */
#include <string.h>

#include <shackle/layers.h>

#include "gateway/internal.h"

/* Strings anywhere in v (a result's text blocks, an output string). */
static bool json_signal(const json_t *v, int depth)
{
	const char *key;
	json_t *it;
	size_t i;

	if (depth > 32)
		return false;
	if (json_is_string(v))
		return shk_error_signal_in(json_string_value(v), json_string_length(v));
	if (json_is_array(v)) {
		json_array_foreach(v, i, it)
			if (json_signal(it, depth + 1))
				return true;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, it)
			if (strcmp(key, "type") && json_signal(it, depth + 1))
				return true;
	}
	return false;
}

/* The call an id names: whether it is a call of name with input, the
 * members the proposal's rule ignores (ignore_input) left out of both. */
struct want {
	const char *name;
	const json_t *input;
	const char *const *ignore;
	size_t nignore;
	bool found, signal;
};

static bool ignored(const struct want *w, const char *key)
{
	for (size_t i = 0; i < w->nignore; i++)
		if (!strcmp(key, w->ignore[i]))
			return true;
	return false;
}

/* Every member of a that is not ignored is in b, and equal. */
static bool members_in(const struct want *w, const json_t *a, const json_t *b)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)a, key, v)
		if (!ignored(w, key) && !json_equal(v, json_object_get(b, key)))
			return false;
	return true;
}

static bool same_call(const struct want *w, const char *name, const json_t *input)
{
	if (!name || !input || strcmp(name, w->name))
		return false;
	if (!w->nignore || !json_is_object(input) || !json_is_object(w->input))
		return json_equal(input, w->input);
	return members_in(w, input, w->input) && members_in(w, w->input, input);
}

/* Anthropic: tool_use blocks of assistant turns, tool_result blocks of
 * user turns (is_error, or a signal in the content). */
static void anthropic(const json_t *body, struct want *w)
{
	json_t *msgs = json_object_get(body, "messages"), *m, *b, *u;
	size_t i, j, k, l;

	json_array_foreach(msgs, i, m) {
		json_array_foreach(json_object_get(m, "content"), j, b) {
			const char *id = json_string_value(json_object_get(b, "tool_use_id"));
			const char *type = json_string_value(json_object_get(b, "type"));

			if (!id || !type || strcmp(type, "tool_result"))
				continue;
			/* the tool_use it answers comes before it */
			for (k = 0; k < i; k++)
				json_array_foreach(json_object_get(json_array_get(msgs, k), "content"), l, u)
					if (json_is_string(json_object_get(u, "id")) &&
					    !strcmp(json_string_value(json_object_get(u, "id")), id) &&
					    same_call(w, json_string_value(json_object_get(u, "name")),
						      json_object_get(u, "input"))) {
						w->found = true;
						w->signal = json_is_true(json_object_get(b, "is_error")) ||
							    json_signal(json_object_get(b, "content"), 0);
					}
		}
	}
}

/* Chat: assistant tool_calls[].function, then role "tool" messages. */
static void chat(const json_t *body, struct want *w)
{
	json_t *msgs = json_object_get(body, "messages"), *m, *prev, *tc;
	size_t i, k, l;

	json_array_foreach(msgs, i, m) {
		const char *id = json_string_value(json_object_get(m, "tool_call_id"));

		if (!id)
			continue;
		for (k = 0; k < i; k++) {
			prev = json_array_get(msgs, k);
			json_array_foreach(json_object_get(prev, "tool_calls"), l, tc) {
				json_t *fn = json_object_get(tc, "function"), *args = json_object_get(fn, "arguments");
				json_t *input;

				if (!json_is_string(json_object_get(tc, "id")) ||
				    strcmp(json_string_value(json_object_get(tc, "id")), id) || !json_is_string(args))
					continue;
				input = gw_arguments_input(json_string_value(args), json_string_length(args));
				if (same_call(w, json_string_value(json_object_get(fn, "name")), input)) {
					w->found = true;
					w->signal = json_signal(json_object_get(m, "content"), 0);
				}
				json_decref(input);
			}
		}
	}
}

/* Responses: input items function_call / custom_tool_call /
 * local_shell_call, and their *_output items with the same call_id. */
static void responses(const json_t *body, struct want *w)
{
	json_t *items = json_object_get(body, "input"), *it, *prev, *input;
	const char *name;
	size_t i, k;

	json_array_foreach(items, i, it) {
		const char *type = json_string_value(json_object_get(it, "type"));
		const char *id = json_string_value(json_object_get(it, "call_id"));
		size_t tl = type ? strlen(type) : 0;

		if (!id || tl < 7 || strcmp(type + tl - 7, "_output"))
			continue;
		for (k = 0; k < i; k++) {
			prev = json_array_get(items, k);
			if (!json_is_string(json_object_get(prev, "call_id")) ||
			    strcmp(json_string_value(json_object_get(prev, "call_id")), id) ||
			    !gw_responses_call((json_t *)prev, &name, &input))
				continue;
			if (same_call(w, name, input)) {
				w->found = true;
				w->signal = json_signal(json_object_get(it, "output"), 0);
			}
			json_decref(input);
		}
	}
}

bool gw_result_error(enum gw_api api, const json_t *request, const char *name, const json_t *input,
		     const char *const *ignore, size_t nignore)
{
	struct want w = { .name = name, .input = input, .ignore = ignore, .nignore = ignore ? nignore : 0 };

	if (!request || !name || !input)
		return false;
	if (api == GW_ANTHROPIC_MESSAGES)
		anthropic(request, &w);
	else if (api == GW_OPENAI_CHAT)
		chat(request, &w);
	else if (api == GW_OPENAI_RESPONSES)
		responses(request, &w);
	return w.found && w.signal;
}
