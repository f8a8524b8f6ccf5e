/* SPDX-License-Identifier: MIT */
/* Endpoints, a model request as a tool call, and the errors the agent reads. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/canon.h>

#include "core/sha256.h"
#include "gateway/internal.h"

int gw_buf_add(struct gw_buf *b, const void *p, size_t n)
{
	if (n > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

int gw_buf_str(struct gw_buf *b, const char *s)
{
	return gw_buf_add(b, s, strlen(s));
}

void gw_buf_free(struct gw_buf *b)
{
	free(b->p);
	*b = (struct gw_buf){ 0 };
}

static const struct endpoint {
	const char *path;
	enum gw_api api;
	const char *name;
} endpoints[] = {
	{ "/v1/messages", GW_ANTHROPIC_MESSAGES, "messages" },
	{ "/v1/messages/count_tokens", GW_ANTHROPIC_COUNT, "count_tokens" },
	{ "/v1/chat/completions", GW_OPENAI_CHAT, "chat.completions" },
	{ "/v1/responses", GW_OPENAI_RESPONSES, "responses" },
};

enum gw_provider gw_api_provider(enum gw_api api)
{
	return api == GW_ANTHROPIC_MESSAGES || api == GW_ANTHROPIC_COUNT ? GW_ANTHROPIC : GW_OPENAI;
}

const char *gw_api_endpoint(enum gw_api api)
{
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++)
		if (endpoints[i].api == api)
			return endpoints[i].name;
	return "?";
}

const char *gw_api_path(enum gw_api api)
{
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++)
		if (endpoints[i].api == api)
			return endpoints[i].path;
	return "/";
}

int gw_route(const char *method, const char *url, enum gw_api *ret_api,
	     enum gw_provider *ret_provider)
{
	/* An Anthropic client knows its errors by their shape: anything under
	 * /v1/messages is answered like the Messages API. */
	*ret_provider = strncmp(url, "/v1/messages", 12) ? GW_OPENAI : GW_ANTHROPIC;
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
		if (strcmp(url, endpoints[i].path))
			continue;
		*ret_api = endpoints[i].api;
		return strcmp(method, "POST") ? -EPERM : 0;
	}
	return -ENOENT;
}

__attribute__((format(printf, 3, 4)))
static int why_fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_model(json_t *body, struct gw_request *req, char *why, size_t whylen)
{
	json_t *m = json_object_get(body, "model");
	size_t len;

	if (!json_is_string(m))
		return why_fail(why, whylen, "\"model\" must be a string naming the model");
	len = json_string_length(m);
	if (len == 0 || len > GW_MODEL_MAX)
		return why_fail(why, whylen, "\"model\" must be 1 to %d bytes", GW_MODEL_MAX);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)json_string_value(m)[i] < 0x20)
			return why_fail(why, whylen, "\"model\" contains a control character");
	memcpy(req->model, json_string_value(m), len + 1);
	return 0;
}

/* max_tokens under whatever name the API gives it. */
static int parse_max_tokens(json_t *body, struct gw_request *req, char *why, size_t whylen)
{
	static const char *const names[] = { "max_tokens", "max_completion_tokens",
					     "max_output_tokens" };

	req->max_tokens = -1;
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(body, names[i]);

		if (!v || json_is_null(v))
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return why_fail(why, whylen, "\"%s\" must be a non-negative integer", names[i]);
		if (json_integer_value(v) > req->max_tokens)
			req->max_tokens = json_integer_value(v);
	}
	return 0;
}

static int parse_stream(json_t *body, struct gw_request *req, char *why, size_t whylen)
{
	json_t *s = json_object_get(body, "stream"), *n = json_object_get(body, "n");
	json_t *opts = json_object_get(body, "stream_options");

	if (s && !json_is_boolean(s) && !json_is_null(s))
		return why_fail(why, whylen, "\"stream\" must be true or false");
	req->stream = json_is_true(s);
	if (req->api == GW_ANTHROPIC_COUNT && req->stream)
		return why_fail(why, whylen, "count_tokens does not stream");
	if (req->api != GW_OPENAI_CHAT || !req->stream)
		return 0;
	/* One choice per stream: the held tool calls of a turn are one set. */
	if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1))
		return why_fail(why, whylen, "the shackle gateway streams one choice only (\"n\": 1)");
	if (opts && !json_is_null(opts) && !json_is_object(opts))
		return why_fail(why, whylen, "\"stream_options\" must be an object");
	req->add_usage = !json_is_true(json_object_get(opts, "include_usage"));
	return 0;
}

int gw_request_parse(enum gw_api api, const char *text, size_t len, struct gw_request *ret,
		     char *why, size_t whylen)
{
	json_error_t jerr;
	uint8_t d[32];
	int r;

	*ret = (struct gw_request){ .api = api, .body_len = len };
	ret->body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!ret->body)
		return why_fail(why, whylen, "the request body is not valid JSON (line %d, column %d: %s)",
				jerr.line, jerr.column, jerr.text);
	if (!json_is_object(ret->body))
		r = why_fail(why, whylen, "the request body must be a JSON object");
	else if ((r = parse_model(ret->body, ret, why, whylen)) >= 0 &&
		 (r = parse_max_tokens(ret->body, ret, why, whylen)) >= 0)
		r = parse_stream(ret->body, ret, why, whylen);
	if (r < 0) {
		gw_request_free(ret);
		return r;
	}
	shk_sha256_once(text, len, d);
	shk_hex(d, sizeof(d), ret->sha256);
	return 0;
}

void gw_request_free(struct gw_request *req)
{
	json_decref(req->body);
	req->body = NULL;
}

int gw_request_params(const struct gw_request *req, shk_doc *doc, shk_val **ret_params)
{
	shk_val *o = shk_object(doc);

	if (!o || shk_object_set_str(o, "model", shk_cstring(doc, req->model)) < 0 ||
	    shk_object_set_str(o, "max_tokens", req->max_tokens < 0 ? shk_null(doc)
				: shk_int(doc, req->max_tokens)) < 0 ||
	    shk_object_set_str(o, "body_sha256", shk_cstring(doc, req->sha256)) < 0 ||
	    shk_object_set_str(o, "endpoint", shk_cstring(doc, gw_api_endpoint(req->api))) < 0)
		return -ENOMEM;
	*ret_params = o;
	return 0;
}

/* Four bytes of JSON per token: English text runs about four characters a
 * token and JSON punctuation more, so this errs high for prose and low for
 * non-Latin scripts; the response's usage replaces it. */
uint64_t gw_estimate_input_tokens(size_t body_len)
{
	return (body_len + 3) / 4;
}

/* Input only: max_tokens is a ceiling agents set to tens of thousands, and
 * charging it up front would refuse most requests long before the budget
 * is spent. The actual output is charged from the usage. */
double gw_estimate_cost(const struct gw_request *req, const shk_model_price *price)
{
	if (req->api == GW_ANTHROPIC_COUNT)
		return 0; /* count_tokens is not billed */
	return (double)gw_estimate_input_tokens(req->body_len) * price->input / 1e6;
}

int gw_request_upstream_body(const struct gw_request *req, char **ret_buf, size_t *ret_len)
{
	json_t *copy, *opts;
	char *s;

	*ret_buf = NULL;
	if (!req->add_usage)
		return 0;
	copy = json_deep_copy(req->body);
	if (!copy)
		return -ENOMEM;
	opts = json_object_get(copy, "stream_options");
	if (!json_is_object(opts)) {
		opts = json_object();
		if (!opts || json_object_set_new(copy, "stream_options", opts) < 0) {
			json_decref(copy);
			return -ENOMEM;
		}
	}
	if (json_object_set_new(opts, "include_usage", json_true()) < 0) {
		json_decref(copy);
		return -ENOMEM;
	}
	s = json_dumps(copy, JSON_COMPACT);
	json_decref(copy);
	if (!s)
		return -ENOMEM;
	*ret_buf = s;
	*ret_len = strlen(s);
	return 0;
}

char *gw_error_json(enum gw_provider provider, const char *type, const char *message)
{
	json_t *e, *o;
	char *s;

	if (provider == GW_ANTHROPIC)
		o = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type, "message",
			      message);
	else
		o = json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message", message, "type", type,
			      "param", "code", type);
	if (!o)
		return NULL;
	e = o;
	s = json_dumps(e, JSON_COMPACT);
	json_decref(o);
	return s;
}
