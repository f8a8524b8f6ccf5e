/* SPDX-License-Identifier: MIT */
/*
 * One model request: judged as "model:<model>" before anything goes
 * upstream, forwarded with the real key, its response's proposals judged,
 * its usage settled. Any failure on the way refuses (fail closed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include <shackle/decide.h>
#include <shackle/redact.h>

#include "gateway/internal.h"

#define WAIT_MS 1000
#define RESPONSE_MAX (64u << 20)

static shk_val *to_shk(shk_doc *doc, const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	shk_parse_error pe;
	shk_val *v = NULL;

	if (s && shk_json_parse(doc, s, strlen(s), "gateway", &v, &pe) < 0)
		v = NULL;
	free(s);
	return v;
}

static const char *reason_hint(shk_reason r)
{
	const char *s = shk_reason_str(r);

	if (!strncmp(s, "budget", 6))
		return "the session's budget is spent";
	if (!strcmp(s, "circuit_open"))
		return "the circuit breaker is open";
	if (!strcmp(s, "max_repeat_exceeded"))
		return "the same call was repeated too often";
	return "refused by the policy";
}

static void describe(const struct shk_source_answer *a, char *out, size_t n)
{
	snprintf(out, n, "%s (%s)%s%s%s", shk_reason_str(a->reason), reason_hint(a->reason),
		 a->rule[0] ? ", rule \"" : "", a->rule, a->rule[0] ? "\"" : "");
}

static bool tool_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= SHK_POLICY_TOOL_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return true;
}

struct gw_ask {
	shk_source_kind kind;
	const char *tool;
	const shk_val *params, *ignored;
	double cost;
	bool result_signal;
};

static int ask(struct gw_req *rq, const struct gw_ask *a, struct shk_source_answer *ans)
{
	struct shk_source_call call = { .kind = a->kind, .tool = a->tool, .params = a->params,
					.estimated_cost_usd = a->cost, .origin = "gateway",
					.result_error_signal = a->result_signal,
					.ignored_input = a->ignored };

	*ans = (struct shk_source_answer){ .verdict = SHK_DENY };
	return rq->gw->judge.judge(rq->gw->judge.ctx, &call, ans);
}

static double actual_cost(const struct gw_req *rq, const struct gw_usage *u)
{
	double c = gw_usage_cost(u, &rq->price);

	/* Without the response's last word on usage, never less than estimated. */
	if (u->final || c > rq->estimate)
		return c;
	return rq->estimate;
}

static void settle(struct gw_req *rq, double cost, const struct gw_usage *u, long status)
{
	json_t *rep;
	shk_doc *doc = NULL;

	if (!rq->allowed || rq->settled)
		return;
	rq->settled = true;
	rep = json_pack("{s:s, s:i, s:o, s:f}", "endpoint", gw_api_endpoint(rq->api), "status",
			(int)status, "usage", u ? gw_usage_json(u) : json_null(), "cost_usd", cost);
	if (shk_doc_new(&doc) == 0)
		rq->gw->judge.settle(rq->gw->judge.ctx, rq->nonce, cost, rep ? to_shk(doc, rep) : NULL);
	shk_doc_free(doc);
	json_decref(rep);
}

/* The spend of a stream is known before its proposals are judged, when the
 * usage came first (Anthropic's message_delta): the proposals see it. */
static void settle_stream_if_final(struct gw_req *rq)
{
	const struct gw_usage *u = rq->st ? gw_stream_usage(rq->st) : NULL;

	if (u && u->final)
		settle(rq, actual_cost(rq, u), u, 200);
}

/*
 * A proposal's params: its input without the members its models rule
 * ignores, so that the repeat guard (and the exec link) sees the call and
 * not the free text next to it; those members go to the log, redacted as
 * params are (a->ignored: NULL when none was there). 0 or -ENOMEM.
 */
static int proposal_params(const struct gw_req *rq, const json_t *input, const char *const *ign,
			   size_t nign, shk_doc *doc, struct gw_ask *a)
{
	json_t *kept = json_copy((json_t *)input), *dropped = json_object();
	shk_val *d = NULL, *red = NULL;
	int r = -ENOMEM;

	for (size_t i = 0; kept && dropped && i < nign; i++) {
		json_t *v = json_object_get(kept, ign[i]);

		if (v && (json_object_set(dropped, ign[i], v) < 0 || json_object_del(kept, ign[i]) < 0))
			goto out;
	}
	if (!kept || !dropped || !(a->params = to_shk(doc, kept)))
		goto out;
	if (json_object_size(dropped) && (!(d = to_shk(doc, dropped)) ||
					  shk_policy_redact_logged(rq->gw->policy, doc, d, &red) < 0))
		goto out;
	a->ignored = red ? red : d;
	r = 0;
out:
	json_decref(kept);
	json_decref(dropped);
	return r;
}

static int judge_proposal(void *ctx, const struct gw_proposal *p, char *why, size_t whylen)
{
	struct gw_req *rq = ctx;
	struct gw_ask a = { .kind = SHK_SOURCE_PROPOSAL, .tool = p->name };
	struct shk_source_answer ans;
	const char *const *ign = NULL;
	shk_policy_match m;
	shk_doc *doc = NULL;
	size_t nign = 0;
	char desc[256];
	int r;

	if (!tool_name_ok(p->name)) {
		snprintf(why, whylen, "a tool call without a usable name (\"%.64s\")", p->name);
		gw_log_refusal(rq->gw, "unusable_tool_name", 200, why);
		return 1;
	}
	settle_stream_if_final(rq);
	/* the rule the judge will match too: the same policy, the same name */
	if ((r = shk_policy_match_model_call(rq->gw->policy, p->name, strlen(p->name), &m)) == 0)
		ign = shk_policy_model_ignore_input(rq->gw->policy, m.rule_index, &nign);
	if (r == 0 && (r = shk_doc_new(&doc)) == 0 &&
	    (r = proposal_params(rq, p->input, ign, nign, doc, &a)) == 0) {
		a.result_signal = gw_result_error(rq->api, rq->req.body, p->name, p->input, ign, nign);
		r = ask(rq, &a, &ans);
	}
	shk_doc_free(doc);
	if (r < 0) {
		snprintf(why, whylen, "%s could not be judged (%s)", p->name, strerror(-r));
		gw_log_refusal(rq->gw, "judge_failed", 200, why);
		return r;
	}
	if (ans.verdict == SHK_ALLOW)
		return 0;
	describe(&ans, desc, sizeof(desc));
	snprintf(why, whylen, "%s: %s", p->name, desc);
	return 1;
}

/* 0 allowed, 1 refused, <0 could not be judged; why for the agent. */
static int judge_request(struct gw_req *rq, char *why, size_t whylen)
{
	char tool[SHK_POLICY_TOOL_MAX];
	struct shk_source_answer ans;
	shk_doc *doc = NULL;
	shk_val *params = NULL;
	int r;

	snprintf(tool, sizeof(tool), "model:%s", rq->req.model);
	if ((r = shk_doc_new(&doc)) == 0 && (r = gw_request_params(&rq->req, doc, &params)) == 0)
		r = ask(rq, &(struct gw_ask){ .kind = SHK_SOURCE_MODEL, .tool = tool, .params = params,
					      .cost = rq->estimate }, &ans);
	shk_doc_free(doc);
	if (r < 0) {
		snprintf(why, whylen, "it could not be judged (%s)", strerror(-r));
		return r;
	}
	rq->nonce = ans.nonce;
	if (ans.verdict == SHK_ALLOW)
		return 0;
	describe(&ans, why, whylen);
	return 1;
}

/* what: the refusal's code when it never reached decide() (logged then);
 * NULL for decide()'s own DENY, whose decision entry is already logged. */
static int refuse(struct gw_req *rq, struct MHD_Connection *c, const char *what, const char *why)
{
	return gw_reject(rq->gw, c, rq->prov, MHD_HTTP_FORBIDDEN, "permission_error", what,
			 "shackle refused this model request: %s", why);
}

/* ---- the answer, streamed ----------------------------------------------- */

static int on_event(void *ctx, const struct gw_sse_event *ev)
{
	struct gw_req *rq = ctx;

	return gw_stream_event(rq->st, ev, &rq->out);
}

static int on_sse_data(void *ctx, const char *p, size_t n)
{
	struct gw_req *rq = ctx;
	int r = gw_sse_feed(&rq->sse, p, n, on_event, rq);

	if (r < 0)
		rq->sink_err = r;
	return r;
}

static void log_stream_cut(struct gw_req *rq)
{
	const struct gw_upstream *u = &rq->conn->up;
	char msg[CURL_ERROR_SIZE + 128];

	if (rq->sink_err)
		snprintf(msg, sizeof(msg), "shackle gateway: the upstream's stream could not be read "
			 "(%s): the stream is cut", strerror(-rq->sink_err));
	else
		snprintf(msg, sizeof(msg), "shackle gateway: the upstream's stream failed (%s): the "
			 "stream is cut", u->errbuf[0] ? u->errbuf : curl_easy_strerror(u->result));
	gw_log_refusal(rq->gw, rq->sink_err ? "upstream_garbage" : "upstream_failed", 200, msg);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct gw_req *rq = cls;
	struct gw_upstream *u = &rq->conn->up;
	size_t n;

	(void)pos;
	while (rq->out_pos == rq->out.len) {
		rq->out.len = rq->out_pos = 0;
		if (rq->sink_err || u->done) {
			if (rq->sink_err || u->result != CURLE_OK)
				log_stream_cut(rq);
			gw_stream_end(rq->st);
			settle(rq, actual_cost(rq, gw_stream_usage(rq->st)), gw_stream_usage(rq->st), 200);
			gw_upstream_end(u);
			/* A cut upstream is a cut stream: the agent must not take
			 * a truncated answer for a whole one. */
			return rq->sink_err || u->result != CURLE_OK ? MHD_CONTENT_READER_END_WITH_ERROR
								     : MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (gw_upstream_pump(u, WAIT_MS) < 0)
			rq->sink_err = -EIO;
	}
	n = rq->out.len - rq->out_pos < max ? rq->out.len - rq->out_pos : max;
	memcpy(buf, rq->out.p + rq->out_pos, n);
	rq->out_pos += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	gw_req_unref(cls);
}

static int start_stream(struct gw_req *rq, struct MHD_Connection *c)
{
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
								       stream_read, rq, stream_free);
	int r;

	if (!resp) {
		settle(rq, rq->estimate, NULL, 200);
		return refuse(rq, c, "gateway_failed", "out of memory");
	}
	__atomic_add_fetch(&rq->refs, 1, __ATOMIC_SEQ_CST);
	MHD_add_response_header(resp, "Content-Type", "text/event-stream");
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	if (rq->conn->up.request_id[0])
		MHD_add_response_header(resp, "Request-Id", rq->conn->up.request_id);
	r = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

/* ---- the answer, whole ------------------------------------------------- */

static int upstream_failed(struct gw_req *rq, struct MHD_Connection *c)
{
	struct gw_upstream *u = &rq->conn->up;
	bool unsent = !u->headers_done && (u->result == CURLE_COULDNT_CONNECT ||
					   u->result == CURLE_COULDNT_RESOLVE_HOST);
	unsigned status = u->result == CURLE_OPERATION_TIMEDOUT ? MHD_HTTP_GATEWAY_TIMEOUT
								 : MHD_HTTP_BAD_GATEWAY;
	char err[CURL_ERROR_SIZE + 64];

	snprintf(err, sizeof(err), "%s", u->errbuf[0] ? u->errbuf : curl_easy_strerror(u->result));
	/* Nothing reached the provider: nothing to pay. Otherwise it may bill. */
	settle(rq, unsent ? 0 : rq->estimate, NULL, 0);
	gw_upstream_end(u);
	return gw_reject(rq->gw, c, rq->prov, status, "api_error", "upstream_failed",
			 "shackle gateway: the upstream %s failed: %s", rq->gw->upstream[rq->prov], err);
}

static int finish_plain(struct gw_req *rq, struct MHD_Connection *c)
{
	struct gw_upstream *u = &rq->conn->up;
	struct gw_usage us = { 0 };
	bool rewritten = false;
	char *s = NULL;
	json_t *resp;
	int r;

	if (u->result != CURLE_OK)
		return upstream_failed(rq, c);
	gw_upstream_end(u);
	if (u->status < 200 || u->status >= 300) { /* the provider's own error: not billed */
		settle(rq, 0, NULL, u->status);
		return gw_respond(c, (unsigned)u->status, u->body.p ? u->body.p : "", u->body.len,
				  u->content_type[0] ? u->content_type : "application/json", u);
	}
	resp = json_loadb(u->body.p ? u->body.p : "", u->body.len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(resp)) {
		json_decref(resp);
		settle(rq, rq->estimate, NULL, u->status);
		return gw_reject(rq->gw, c, rq->prov, MHD_HTTP_BAD_GATEWAY, "api_error", "upstream_garbage",
				 "shackle gateway: the upstream answered %ld with a body that is not "
				 "a JSON object", u->status);
	}
	gw_usage_response(rq->api, resp, &us);
	settle(rq, actual_cost(rq, &us), &us, u->status);
	r = gw_proposals_response(rq->api, resp, judge_proposal, rq, &rewritten);
	if (r == 0 && rewritten && !(s = json_dumps(resp, JSON_COMPACT)))
		r = -ENOMEM;
	json_decref(resp);
	if (r < 0)
		return refuse(rq, c, "gateway_failed", "out of memory while judging the model's tool calls");
	r = gw_respond(c, (unsigned)u->status, s ? s : u->body.p, s ? strlen(s) : u->body.len,
		       "application/json", u);
	free(s);
	return r;
}

/* ---- forwarding ---------------------------------------------------------- */

static int upstream_headers(struct gw_req *rq, const char **h, size_t max, char **ret_auth)
{
	const char *key = rq->gw->key[rq->prov];
	bool have_version = false;
	size_t n = 0;

	*ret_auth = NULL;
	h[n++] = "Content-Type: application/json";
	h[n++] = "Expect:"; /* no 100-continue round trip */
	if (key && asprintf(ret_auth, rq->prov == GW_ANTHROPIC ? "x-api-key: %s"
							      : "Authorization: Bearer %s", key) < 0)
		return -ENOMEM;
	if (*ret_auth)
		h[n++] = *ret_auth;
	for (size_t i = 0; rq->pass[i] && n + 2 < max; i++) {
		have_version |= !strncmp(rq->pass[i], "anthropic-version:", 18);
		h[n++] = rq->pass[i];
	}
	if (rq->prov == GW_ANTHROPIC && !have_version)
		h[n++] = "anthropic-version: 2023-06-01";
	h[n] = NULL;
	return 0;
}

static int forward(struct gw_req *rq, struct MHD_Connection *c)
{
	struct gw_upstream *u = &rq->conn->up;
	const char *h[GW_PASS_HEADERS + 8];
	char *auth = NULL;
	int r;

	u->want_sse = rq->req.stream;
	u->body_max = RESPONSE_MAX;
	u->on_data = on_sse_data;
	u->ctx = rq;
	if ((rq->req.stream && gw_stream_new(rq->api, rq->req.add_usage, judge_proposal, rq,
					     &rq->st) < 0) ||
	    upstream_headers(rq, h, sizeof(h) / sizeof(h[0]), &auth) < 0) {
		settle(rq, 0, NULL, 0);
		return refuse(rq, c, "gateway_failed", "out of memory");
	}
	r = gw_upstream_begin(u, rq->url, h, rq->up_body ? rq->up_body : rq->body.p,
			      rq->up_body ? rq->up_len : rq->body.len, rq->gw->models->upstream_timeout_s);
	if (auth)
		explicit_bzero(auth, strlen(auth));
	free(auth);
	if (r < 0) {
		settle(rq, 0, NULL, 0);
		gw_upstream_end(u);
		return refuse(rq, c, "gateway_failed", "the upstream request could not be set up");
	}
	while (!u->headers_done && !u->done && r == 0)
		r = gw_upstream_pump(u, WAIT_MS);
	if (r == 0 && u->sse && !u->done)
		return start_stream(rq, c);
	while (!u->done && r == 0)
		r = gw_upstream_pump(u, WAIT_MS);
	if (r < 0)
		u->result = CURLE_RECV_ERROR;
	if (u->sse) /* the whole stream came at once: it is read like any other */
		return start_stream(rq, c);
	return finish_plain(rq, c);
}

int gw_handle(struct gw_req *rq, struct MHD_Connection *c)
{
	char why[512];
	int r = gw_request_parse(rq->api, rq->body.p ? rq->body.p : "", rq->body.len, &rq->req, why,
				 sizeof(why));

	if (r == -ENOMEM)
		return refuse(rq, c, "gateway_failed", "out of memory");
	if (r < 0)
		return gw_reject(rq->gw, c, rq->prov, MHD_HTTP_BAD_REQUEST, "invalid_request_error",
				 "malformed_request", "shackle gateway: %s", why);
	rq->parsed = true;
	if (shk_policy_model_price(rq->gw->policy, rq->req.model, strlen(rq->req.model),
				   &rq->price) < 0)
		return refuse(rq, c, "unpriced_model", "the policy has no price for this model "
			      "(models.prices), so its cost cannot be estimated");
	rq->estimate = gw_estimate_cost(&rq->req, &rq->price);
	r = judge_request(rq, why, sizeof(why));
	if (r != 0)
		return refuse(rq, c, r < 0 ? "judge_failed" : NULL, why);
	rq->allowed = true;
	if (gw_request_upstream_body(&rq->req, &rq->up_body, &rq->up_len) < 0) {
		settle(rq, 0, NULL, 0);
		return refuse(rq, c, "gateway_failed", "out of memory");
	}
	return forward(rq, c);
}

void gw_req_unref(struct gw_req *rq)
{
	if (__atomic_sub_fetch(&rq->refs, 1, __ATOMIC_SEQ_CST) > 0)
		return;
	/* The agent went away mid-stream: what was seen, at least the estimate. */
	if (rq->st)
		settle(rq, actual_cost(rq, gw_stream_usage(rq->st)), gw_stream_usage(rq->st), 200);
	settle(rq, rq->estimate, NULL, 0);
	gw_stream_free(rq->st);
	gw_sse_free(&rq->sse);
	gw_buf_free(&rq->out);
	gw_buf_free(&rq->body);
	gw_request_free(&rq->req);
	for (size_t i = 0; rq->pass[i]; i++)
		free(rq->pass[i]);
	free(rq->up_body);
	free(rq->url);
	free(rq);
}
