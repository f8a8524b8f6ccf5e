/* SPDX-License-Identifier: MIT */
/*
 * The gateway's parts, shared by src/gateway only. Everything here but the
 * server and the upstream (server.c, upstream.c) is pure: no sockets, no
 * clock; the unit tests drive it with bytes.
 */
#ifndef SHACKLE_GATEWAY_INTERNAL_H
#define SHACKLE_GATEWAY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <shackle/json.h>
#include <shackle/policy.h>

/* ---- growing byte buffer ---------------------------------------------- */

struct gw_buf {
	char *p;
	size_t len, cap;
};

int gw_buf_add(struct gw_buf *b, const void *p, size_t n);
int gw_buf_str(struct gw_buf *b, const char *s);
void gw_buf_free(struct gw_buf *b);

/* ---- endpoints and requests (request.c) -------------------------------- */

enum gw_api {
	GW_ANTHROPIC_MESSAGES = 1,
	GW_ANTHROPIC_COUNT,
	GW_OPENAI_CHAT,
	GW_OPENAI_RESPONSES,
};

enum gw_provider { GW_ANTHROPIC, GW_OPENAI };

#define GW_MODEL_MAX 200

/* 0; -ENOENT (no such endpoint), -EPERM (known path, method not POST). The
 * provider is filled in every case: errors use its format. */
int gw_route(const char *method, const char *url, enum gw_api *ret_api,
	     enum gw_provider *ret_provider);
enum gw_provider gw_api_provider(enum gw_api api);
const char *gw_api_endpoint(enum gw_api api); /* "messages", "count_tokens", ... */
const char *gw_api_path(enum gw_api api);     /* "/v1/messages", ... */

struct gw_request {
	enum gw_api api;
	json_t *body;
	char model[GW_MODEL_MAX + 1];
	int64_t max_tokens; /* -1: not given */
	bool stream;
	bool add_usage;     /* an OpenAI chat stream that did not ask for usage: the gateway does */
	char sha256[65];    /* of the body as the agent sent it */
	size_t body_len;
};

/* 0, or -EINVAL with a message for the agent in why; -ENOMEM. */
int gw_request_parse(enum gw_api api, const char *text, size_t len, struct gw_request *ret,
		     char *why, size_t whylen);
void gw_request_free(struct gw_request *req);
/* The tool call's params: {model, max_tokens, body_sha256, endpoint}. */
int gw_request_params(const struct gw_request *req, shk_doc *doc, shk_val **ret_params);
/* Input tokens estimated from the body's size (docs/gateway.md). */
uint64_t gw_estimate_input_tokens(size_t body_len);
double gw_estimate_cost(const struct gw_request *req, const shk_model_price *price);
/* What goes upstream: *ret_buf NULL means the agent's bytes unchanged; else
 * a re-serialisation the caller frees (stream_options.include_usage added). */
int gw_request_upstream_body(const struct gw_request *req, char **ret_buf, size_t *ret_len);

/* The provider's own error body: Anthropic {"type":"error","error":{...}},
 * OpenAI {"error":{...}}. NULL on ENOMEM. */
char *gw_error_json(enum gw_provider provider, const char *type, const char *message);

/* ---- usage and cost (usage.c) ------------------------------------------ */

struct gw_usage {
	bool seen;   /* some usage was read */
	bool final;  /* the response's last word on usage was read */
	uint64_t input, output, cache_write, cache_read; /* input excludes cached tokens */
};

/* Merge a usage object of the API's shape into u (members present win). */
void gw_usage_merge(enum gw_api api, const json_t *usage, struct gw_usage *u);
/* A complete (non-streamed) response body's usage. */
void gw_usage_response(enum gw_api api, const json_t *response, struct gw_usage *u);
double gw_usage_cost(const struct gw_usage *u, const shk_model_price *price);
/* The usage as a JSON object for the log: {"input":..,"output":..,...}. */
json_t *gw_usage_json(const struct gw_usage *u);

/* ---- proposals (proposals.c) ------------------------------------------- */

struct gw_proposal {
	const char *name;  /* the agent's tool, as the model named it */
	json_t *input;     /* its input: an object (borrowed or owned by the caller) */
};

/* Judge one proposal: 0 allowed; 1 denied (why says why, for the model's
 * text); negative: could not be judged (treated as denied). */
typedef int (*gw_judge_fn)(void *ctx, const struct gw_proposal *p, char *why, size_t whylen);

/* The text that replaces refused tool calls. */
#define GW_DENIED_PREFIX "[shackle] The tool call was refused: "

/* A non-streamed response: judge its proposals in order; at the first one
 * refused every tool call is taken out and a text naming the reason ends the
 * turn. *ret_rewritten says whether the JSON was changed. 0 or -ENOMEM. */
int gw_proposals_response(enum gw_api api, json_t *response, gw_judge_fn judge, void *ctx,
			  bool *ret_rewritten);
/* An OpenAI arguments string as the params of a proposal: the object it
 * parses to, else {"arguments": the string}. New reference or NULL. */
json_t *gw_arguments_input(const char *arguments, size_t len);
/* A Responses output item that the agent would run (function_call,
 * custom_tool_call, local_shell_call): its name and input (a new reference). */
bool gw_responses_call(json_t *item, const char **ret_name, json_t **ret_input);
/* An assistant message item carrying text. New reference or NULL. */
json_t *gw_responses_message_item(const char *text);
/* Take every such item out of a response's "output", add the refusal text. */
int gw_responses_rewrite(json_t *response, const char *why);
/* Whether the request's history has a result of a call of tool name with
 * this input (the nignore top-level members named in ignore left out of
 * the comparison), and the last such result carries an error signal
 * (§3.9) or says it is an error (results.c). */
bool gw_result_error(enum gw_api api, const json_t *request, const char *name, const json_t *input,
		     const char *const *ignore, size_t nignore);
/* Build the text for the agent: GW_DENIED_PREFIX + why. Caller frees. */
char *gw_denied_text(const char *why);

/* ---- server-sent events (sse.c, stream.c) ------------------------------ */

struct gw_sse_event {
	const char *name;   /* "event:" field, "" if none */
	const char *data;   /* "data:" lines joined by '\n', NUL-terminated */
	size_t data_len;
	const char *raw;    /* the event's bytes as received, terminator included */
	size_t raw_len;
};

typedef int (*gw_sse_cb)(void *ctx, const struct gw_sse_event *ev);

struct gw_sse {
	struct gw_buf raw, line, data;
	char name[64];
	bool has_data, cr;
	size_t max_event;   /* an event larger than this is an error (-E2BIG) */
};

/* Split bytes into events (a small line splitter: SSE framing is a line
 * protocol and no library for it is packaged in Debian). The callback's
 * negative result stops and is returned. */
int gw_sse_feed(struct gw_sse *s, const char *p, size_t n, gw_sse_cb cb, void *ctx);
void gw_sse_free(struct gw_sse *s);

struct gw_stream;

/* Per-API processing of a streamed response: usage is read, tool calls are
 * held until complete, judged, then emitted or replaced (docs/gateway.md).
 * drop_usage_chunk: the gateway added include_usage, so the usage-only chunk
 * the agent did not ask for is not forwarded. */
int gw_stream_new(enum gw_api api, bool drop_usage_chunk, gw_judge_fn judge, void *ctx,
		  struct gw_stream **ret);
void gw_stream_free(struct gw_stream *st);
/* One event in; what the agent gets is appended to out. 0 or negative. */
int gw_stream_event(struct gw_stream *st, const struct gw_sse_event *ev, struct gw_buf *out);
/* The upstream ended: held calls that never completed are dropped. */
void gw_stream_end(struct gw_stream *st);
const struct gw_usage *gw_stream_usage(const struct gw_stream *st);
/* Whether a refused proposal ended the turn. */
bool gw_stream_refused(const struct gw_stream *st);

/* ---- upstream (upstream.c, libcurl) ----------------------------------- */

#include <curl/curl.h>

struct gw_upstream {
	CURLM *multi;        /* one per agent connection: its connection cache
	                      * keeps the upstream connection alive too */
	CURL *easy;          /* one per request */
	struct curl_slist *hdrs;
	bool want_sse;       /* a 200 text/event-stream goes to on_data */
	bool sse, headers_done, done;
	CURLcode result;
	long status;
	char content_type[128], retry_after[32], request_id[128];
	struct gw_buf body;  /* everything else, up to body_max */
	size_t body_max;
	int (*on_data)(void *ctx, const char *p, size_t n);
	void *ctx;
	char errbuf[CURL_ERROR_SIZE];
	int64_t timeout_ms, last_ms; /* silence longer than timeout_ms ends it */
};

int gw_upstream_global_init(void);
int gw_upstream_open(struct gw_upstream *u);
void gw_upstream_close(struct gw_upstream *u);
/* Start a POST of body[0..len) (kept alive by the caller until done) with
 * the given header lines. -ENOMEM, -EIO. */
int gw_upstream_begin(struct gw_upstream *u, const char *url, const char *const *headers,
		      const char *body, size_t len, long timeout_s);
/* Move the transfer on, waiting up to wait_ms for the network. */
int gw_upstream_pump(struct gw_upstream *u, int wait_ms);
/* Detach the request's handle (the connection stays cached). */
void gw_upstream_end(struct gw_upstream *u);

/* ---- the server (server.c, handle.c) --------------------------------- */

#include "judge/source.h"

struct MHD_Connection;
struct MHD_Daemon;

struct shk_gateway {
	struct MHD_Daemon *daemon;
	struct shk_source_judge judge;
	const shk_models_config *models;
	const shk_policy *policy;
	char *key[2];          /* by enum gw_provider */
	char *upstream[2];
	char token[80];
	uint32_t addr; /* network byte order */
	uint16_t port;
	/* requests without the token: counted, the first GW_UNAUTH_LOGGED logged */
	_Atomic uint64_t unauthenticated;
};

/* Anyone who reaches the port can send requests without the token, as fast
 * as they like: only this many of them become refusal entries (each a disk
 * sync; a full disk then denies everything), the rest are only counted. */
#define GW_UNAUTH_LOGGED 8

struct gw_conn {
	struct gw_upstream up;
};

#define GW_PASS_HEADERS 8

struct gw_req {
	struct shk_gateway *gw;
	struct gw_conn *conn;
	int refs;              /* the connection's, and a streamed response's */
	enum gw_api api;
	enum gw_provider prov;
	char *url;             /* upstream URL: base + path + the agent's query */
	char *pass[GW_PASS_HEADERS + 1]; /* headers passed upstream, "name: value" */
	struct gw_buf body;
	bool too_big;
	struct gw_request req;
	bool parsed, allowed, settled;
	shk_model_price price;
	uint64_t nonce;
	double estimate;
	char *up_body;         /* a re-serialised body, else NULL */
	size_t up_len;
	struct gw_stream *st;
	struct gw_sse sse;
	struct gw_buf out;
	size_t out_pos;
	int sink_err;
};

/* Answer the agent; the provider's error format for errors. MHD_YES/NO. */
int gw_respond(struct MHD_Connection *c, unsigned status, const char *body, size_t len,
	       const char *ctype, const struct gw_upstream *from);
/* An error in the provider's format; input refused before it became a
 * tool call (what not NULL) is also logged as a refusal entry
 * (judge/source.h refuse) with what, the status and the message. */
int gw_reject(struct shk_gateway *gw, struct MHD_Connection *c, enum gw_provider prov,
	      unsigned status, const char *type, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
void gw_log_refusal(struct shk_gateway *gw, const char *what, unsigned status, const char *msg);
/* The request's body is in: judge, forward, answer. */
int gw_handle(struct gw_req *rq, struct MHD_Connection *c);
void gw_req_unref(struct gw_req *rq);

#endif
