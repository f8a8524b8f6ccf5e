/* SPDX-License-Identifier: MIT */
/*
 * The agent's side: libmicrohttpd, one thread per connection (a judge() may
 * block for a person, and an upstream transfer is driven by the thread that
 * serves it). Routing, authentication and the body limit are checked before
 * a byte of the body is read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <microhttpd.h>

#include <shackle/canon.h>

#include "gateway/gateway.h"
#include "gateway/internal.h"

static const char *const default_upstream[2] = { SHK_UPSTREAM_ANTHROPIC, SHK_UPSTREAM_OPENAI };

int gw_respond(struct MHD_Connection *c, unsigned status, const char *body, size_t len,
	       const char *ctype, const struct gw_upstream *from)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	if (from && from->retry_after[0])
		MHD_add_response_header(resp, "Retry-After", from->retry_after);
	if (from && from->request_id[0])
		MHD_add_response_header(resp, "Request-Id", from->request_id);
	/* Tell the SDKs not to retry a refusal (Anthropic's and OpenAI's read it). */
	if (status == MHD_HTTP_FORBIDDEN)
		MHD_add_response_header(resp, "X-Should-Retry", "false");
	r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

__attribute__((format(printf, 7, 0)))
static int respond_errorv(struct MHD_Connection *c, enum gw_provider prov, unsigned status,
			  const char *type, char *msg, size_t msgsize, const char *fmt, va_list ap)
{
	char *body;
	int r;

	vsnprintf(msg, msgsize, fmt, ap);
	body = gw_error_json(prov, type, msg);
	if (!body)
		return MHD_NO;
	r = gw_respond(c, status, body, strlen(body), "application/json", NULL);
	free(body);
	return r;
}

void gw_log_refusal(struct shk_gateway *gw, const char *what, unsigned status, const char *msg)
{
	if (what) /* no what: decide()'s DENY, already logged */
		(void)shk_source_refuse(&gw->judge, "gateway", what, (int)status, msg);
}

int gw_reject(struct shk_gateway *gw, struct MHD_Connection *c, enum gw_provider prov,
	      unsigned status, const char *type, const char *what, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = respond_errorv(c, prov, status, type, msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gw_log_refusal(gw, what, status, msg);
	return r;
}

/* Constant time: the token is the only thing between a local process and the budget. */
static bool token_ok(const struct shk_gateway *gw, const char *v)
{
	size_t n = strlen(gw->token);
	unsigned char d = 0;

	if (!v || strlen(v) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(v[i] ^ gw->token[i]);
	return d == 0;
}

static bool authorized(const struct shk_gateway *gw, struct MHD_Connection *c)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "authorization");

	if (key && token_ok(gw, key))
		return true;
	return auth && !strncasecmp(auth, "Bearer ", 7) && token_ok(gw, auth + 7);
}

static const char *const pass_names[GW_PASS_HEADERS] = {
	"anthropic-version", "anthropic-beta", "openai-beta", "openai-organization",
	"openai-project", "user-agent", NULL,
};

static enum MHD_Result add_query(void *ctx, enum MHD_ValueKind kind, const char *key,
				  const char *value)
{
	struct gw_buf *q = ctx;
	char *k = curl_easy_escape(NULL, key, 0), *v = value ? curl_easy_escape(NULL, value, 0) : NULL;
	int r = k && (!value || v) ? 0 : -ENOMEM;

	(void)kind;
	if (r == 0)
		r = gw_buf_str(q, q->len ? "&" : "?");
	if (r == 0)
		r = gw_buf_str(q, k);
	if (r == 0 && v && (r = gw_buf_str(q, "=")) == 0)
		r = gw_buf_str(q, v);
	curl_free(k);
	curl_free(v);
	return r == 0 ? MHD_YES : MHD_NO;
}

static int req_setup(struct gw_req *rq, struct MHD_Connection *c)
{
	struct gw_buf url = { 0 }, q = { 0 };
	size_t np = 0;
	int r;

	for (size_t i = 0; pass_names[i]; i++) {
		const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, pass_names[i]);

		if (v && asprintf(&rq->pass[np++], "%s: %s", pass_names[i], v) < 0)
			return -ENOMEM;
	}
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query, &q);
	r = gw_buf_str(&url, rq->gw->upstream[rq->prov]);
	if (r == 0)
		r = gw_buf_str(&url, gw_api_path(rq->api));
	if (r == 0 && q.len)
		r = gw_buf_add(&url, q.p, q.len);
	gw_buf_free(&q);
	rq->url = url.p;
	return r;
}

static enum MHD_Result first_call(struct shk_gateway *gw, struct MHD_Connection *c,
				  const char *url, const char *method, void **con_cls)
{
	const char *clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "content-length");
	enum gw_provider prov;
	enum gw_api api;
	const union MHD_ConnectionInfo *info;
	struct gw_req *rq;
	int r = gw_route(method, url, &api, &prov);

	/* The token first: whoever lacks it learns nothing of the endpoints,
	 * and is logged only up to a cap (the agent holds the token; anything
	 * else that reaches the port is not the agent). */
	if (!authorized(gw, c)) {
		uint64_t n = atomic_fetch_add(&gw->unauthenticated, 1);

		return gw_reject(gw, c, prov, MHD_HTTP_UNAUTHORIZED, "authentication_error",
				 n < GW_UNAUTH_LOGGED ? "wrong_key" : NULL,
				 "shackle gateway: the API key is not this session's");
	}
	if (r == -ENOENT)
		return gw_reject(gw, c, prov, MHD_HTTP_NOT_FOUND, "not_found_error", "unknown_endpoint",
					"shackle gateway: no endpoint %s %.200s (it serves POST /v1/messages, "
					"/v1/messages/count_tokens, /v1/chat/completions, /v1/responses)",
					method, url);
	if (r == -EPERM)
		return gw_reject(gw, c, prov, MHD_HTTP_METHOD_NOT_ALLOWED, "invalid_request_error",
				 "method_not_allowed",
					"shackle gateway: %s %s: only POST is served", method, url);
	if (clen && strtoull(clen, NULL, 10) > gw->models->max_request_bytes)
		return gw_reject(gw, c, prov, 413, "request_too_large", "too_large",
					"shackle gateway: the request body is larger than %llu bytes",
					(unsigned long long)gw->models->max_request_bytes);
	rq = calloc(1, sizeof(*rq));
	if (!rq)
		return MHD_NO;
	*rq = (struct gw_req){ .gw = gw, .refs = 1, .api = api, .prov = prov };
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	rq->conn = info ? info->socket_context : NULL;
	*con_cls = rq;
	if (!rq->conn || req_setup(rq, c) < 0)
		return gw_reject(gw, c, prov, MHD_HTTP_FORBIDDEN, "api_error", "gateway_failed",
				 "shackle gateway: out of memory; the request is refused");
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct gw_req *rq = *con_cls;

	(void)version;
	if (!rq)
		return first_call(cls, c, url, method, con_cls);
	if (*upload_size) {
		/* Past the limit the rest is read and dropped: the answer comes
		 * once the agent has sent it all. */
		if (!rq->too_big && rq->body.len + *upload_size > rq->gw->models->max_request_bytes)
			rq->too_big = true;
		else if (!rq->too_big && gw_buf_add(&rq->body, upload, *upload_size) < 0)
			rq->too_big = true;
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->too_big)
		return gw_reject(rq->gw, c, rq->prov, 413, "request_too_large", "too_large",
					"shackle gateway: the request body is larger than %llu bytes",
					(unsigned long long)rq->gw->models->max_request_bytes);
	return gw_handle(rq, c);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	if (*con_cls)
		gw_req_unref(*con_cls);
	*con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct gw_conn *conn = *socket_context;

	(void)cls, (void)c;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		conn = calloc(1, sizeof(*conn));
		if (conn && gw_upstream_open(&conn->up) < 0) {
			free(conn);
			conn = NULL;
		}
		*socket_context = conn; /* NULL: every request on it is refused */
	} else if (conn) {
		gw_upstream_close(&conn->up);
		free(conn);
		*socket_context = NULL;
	}
}

static int make_token(struct shk_gateway *gw)
{
	uint8_t rnd[24];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	memcpy(gw->token, "sk-shackle-", 11);
	shk_hex(rnd, sizeof(rnd), gw->token + 11);
	return 0;
}

static int copy_config(struct shk_gateway *gw, const struct shk_gateway_config *cfg)
{
	const char *up[2] = { cfg->anthropic_upstream, cfg->openai_upstream };
	const char *pol[2] = { gw->models->anthropic_upstream, gw->models->openai_upstream };
	const char *key[2] = { cfg->anthropic_key, cfg->openai_key };

	for (int i = 0; i < 2; i++) {
		const char *u = up[i] ? up[i] : pol[i] ? pol[i] : default_upstream[i];
		size_t n = strlen(u);

		while (n && u[n - 1] == '/')
			n--;
		if (!(gw->upstream[i] = strndup(u, n)))
			return -ENOMEM;
		if (key[i] && !(gw->key[i] = strdup(key[i])))
			return -ENOMEM;
	}
	return 0;
}

static int start_daemon(struct shk_gateway *gw, const struct shk_gateway_config *cfg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(cfg->port),
				  .sin_addr.s_addr = gw->addr };
	const union MHD_DaemonInfo *info;

	gw->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0,
		NULL, NULL, on_request, gw, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_CONNECTION_LIMIT,
		cfg->max_connections ? cfg->max_connections : 128u, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)gw->models->upstream_timeout_s + 60u, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, gw, MHD_OPTION_NOTIFY_CONNECTION, on_connection, gw, MHD_OPTION_END);
	if (!gw->daemon)
		return errno == EADDRINUSE ? -EADDRINUSE : -EIO;
	info = MHD_get_daemon_info(gw->daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || !info->port)
		return -EIO;
	gw->port = info->port;
	return 0;
}

int shk_gateway_start(const struct shk_gateway_config *cfg, const struct shk_source_judge *judge,
		      struct shk_gateway **ret_gw)
{
	struct shk_gateway *gw;
	int r;

	if (!cfg || !cfg->policy || !judge || !judge->judge || !judge->settle || !ret_gw)
		return -EINVAL;
	if ((r = gw_upstream_global_init()) < 0)
		return r;
	gw = calloc(1, sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	gw->judge = *judge;
	gw->policy = cfg->policy;
	gw->models = shk_policy_models(cfg->policy);
	gw->addr = cfg->addr ? cfg->addr : htonl(INADDR_LOOPBACK);
	if ((r = make_token(gw)) < 0 || (r = copy_config(gw, cfg)) < 0 ||
	    (r = start_daemon(gw, cfg)) < 0) {
		shk_gateway_stop(gw);
		return r;
	}
	*ret_gw = gw;
	return 0;
}

uint16_t shk_gateway_port(const struct shk_gateway *gw)
{
	return gw->port;
}

const char *shk_gateway_token(const struct shk_gateway *gw)
{
	return gw->token;
}

uint64_t shk_gateway_stop(struct shk_gateway *gw)
{
	uint64_t unauthenticated;

	if (!gw)
		return 0;
	if (gw->daemon)
		MHD_stop_daemon(gw->daemon);
	unauthenticated = atomic_load(&gw->unauthenticated); /* nothing is served now */
	for (int i = 0; i < 2; i++) {
		free(gw->upstream[i]);
		if (gw->key[i])
			explicit_bzero(gw->key[i], strlen(gw->key[i]));
		free(gw->key[i]);
	}
	explicit_bzero(gw->token, sizeof(gw->token));
	free(gw);
	return unauthenticated;
}

static const char *const anthropic_keys[] = { "ANTHROPIC_API_KEY", NULL };
static const char *const openai_keys[] = { "OPENAI_API_KEY", NULL };

const char *const *shk_gateway_key_vars(int openai)
{
	return openai ? openai_keys : anthropic_keys;
}

int shk_gateway_env(const struct shk_gateway *gw, struct shk_gateway_envvar *vars, size_t max,
		    size_t *ret_n)
{
	enum kind { BASE, BASE_V1, TOKEN, UNSET };
	/* OpenAI's clients take the base URL with /v1, Anthropic's without. */
	static const struct { const char *name; enum kind kind; } table[] = {
		{ "ANTHROPIC_BASE_URL", BASE },   { "ANTHROPIC_API_KEY", TOKEN },
		{ "ANTHROPIC_AUTH_TOKEN", UNSET }, { "OPENAI_BASE_URL", BASE_V1 },
		{ "OPENAI_API_BASE", BASE_V1 },   { "OPENAI_API_KEY", TOKEN },
	};
	size_t n = sizeof(table) / sizeof(table[0]);
	char host[INET_ADDRSTRLEN];

	if (!gw || !vars || !ret_n || !inet_ntop(AF_INET, &gw->addr, host, sizeof(host)))
		return -EINVAL;
	if (max < n)
		return -ENOBUFS;
	for (size_t i = 0; i < n; i++) {
		struct shk_gateway_envvar *v = &vars[i];

		*v = (struct shk_gateway_envvar){ .name = table[i].name, .is_set = table[i].kind != UNSET };
		if (table[i].kind == TOKEN)
			snprintf(v->value, sizeof(v->value), "%s", gw->token);
		else if (table[i].kind != UNSET)
			snprintf(v->value, sizeof(v->value), "http://%s:%u%s", host, (unsigned)gw->port,
				 table[i].kind == BASE_V1 ? "/v1" : "");
	}
	*ret_n = n;
	return 0;
}
