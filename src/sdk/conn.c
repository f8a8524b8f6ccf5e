/* SPDX-License-Identifier: MIT */
/*
 * One SDK connection: read JSON lines, answer each in order. A connection
 * is sequential (one request, one answer), so a post_exec is settled before
 * the same connection's next pre_exec is judged. Registrations are the
 * server's (internal.h): a connection holds one, and another connection
 * may resume it.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sdk/internal.h"
#include "sdk/proto.h"
#include "util/linux.h"

#define OUT_CAP 8192
#define IN_FIRST 4096

struct conn {
	struct shk_sdk *sdk;
	int fd;
	pid_t pid;
	struct shk_sdk_reg *reg;     /* the registration held; NULL: none */
	bool moved;                  /* it was resumed on another connection */
	char sid[2 + 32 + 1];        /* copies of reg's names */
	char agent[SHK_SDK_ID_MAX + 1];
	char org[SHK_SDK_ID_MAX + 1];
	char origin[SHK_SDK_ID_MAX + 8];
	shk_doc *doc;                /* one line's values; reset for the next */
	char *in;
	size_t in_len, in_cap;
	struct shk_sdk_out out;
	char out_buf[OUT_CAP];
};

int64_t shk_sdk_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void shk_sdk_note(const struct shk_sdk *sdk, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!sdk->cfg.note)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sdk->cfg.note(sdk->cfg.note_ctx, line);
}

void shk_sdk_log_refusal(const struct shk_sdk *sdk, const char *origin, const char *code,
                         const char *text)
{
	(void)shk_source_refuse(&sdk->judge, origin, code, -1, text);
}

static struct shk_sdk_ctx ctx_of(const struct conn *c, const struct shk_sdk_req *req)
{
	struct shk_sdk_ctx x = {
		.correlation_id = req ? req->message_id : "",
		.session_id = c->reg ? c->sid : "",
		.agent_id = c->agent,
		.organization_id = c->org,
		.now_ns = shk_realtime_ns(),
	};
	return x;
}

static int send_out(struct conn *c)
{
	return shk_send_all(c->fd, c->out.buf, c->out.len);
}

/* An error answer, and the same as a note for the operator. */
__attribute__((format(printf, 5, 6)))
static int refuse(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req, const char *code,
                  const char *fmt, ...)
{
	struct shk_sdk_ctx x = ctx_of(c, req);
	struct shk_sdk_err err = { .code = code };
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(err.text, sizeof(err.text), fmt, ap);
	va_end(ap);
	shk_sdk_note(c->sdk, "%s refused: %s: %s", c->origin, code, err.text);
	shk_sdk_log_refusal(c->sdk, c->origin, code, err.text);
	r = shk_sdk_write_error(doc, &x, &err, &c->out);
	return r < 0 ? r : send_out(c);
}

static bool stale(const struct conn *c, const struct shk_sdk_reg *g, int64_t now)
{
	return now - g->last_hb_ns > 3 * (int64_t)c->sdk->cfg.heartbeat_ms * 1000000;
}

/* The registration this connection holds, with sdk->lock held (release()
 * it), or NULL (unlocked) when it holds none or it was resumed elsewhere. */
static struct shk_sdk_reg *hold(struct conn *c)
{
	pthread_mutex_lock(&c->sdk->lock);
	if (c->reg && c->reg->used && c->reg->owner == c)
		return c->reg;
	if (c->reg) {
		c->reg = NULL;
		c->moved = true;
	}
	pthread_mutex_unlock(&c->sdk->lock);
	return NULL;
}

static void release(struct conn *c)
{
	pthread_mutex_unlock(&c->sdk->lock);
}

static int new_session_id(char out[2 + 32 + 1])
{
	uint8_t rnd[16];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	out[0] = 's';
	out[1] = '_';
	shk_hex(rnd, sizeof(rnd), out + 2);
	return 0;
}

/* Under the lock: a free registration, else the one not held by any
 * connection that was heard of longest ago; NULL when every one is held. */
static struct shk_sdk_reg *reg_new(struct shk_sdk *sdk)
{
	struct shk_sdk_reg *old = NULL;

	for (unsigned i = 0; i < sdk->nregs; i++) {
		struct shk_sdk_reg *g = &sdk->regs[i];

		if (!g->used)
			return g;
		if (!g->owner && (!old || g->last_hb_ns < old->last_hb_ns))
			old = g;
	}
	return old;
}

static struct shk_sdk_reg *reg_find(struct shk_sdk *sdk, const char *sid, const char *agent)
{
	for (unsigned i = 0; i < sdk->nregs; i++) {
		struct shk_sdk_reg *g = &sdk->regs[i];

		if (g->used && !strcmp(g->sid, sid) && !strcmp(g->agent, agent))
			return g;
	}
	return NULL;
}

/* Under the lock: the registration this register names (resumed, from
 * whichever connection held it) or a fresh one; NULL with *code, *why. */
static struct shk_sdk_reg *reg_take(struct conn *c, const struct shk_sdk_req *req, const char **code,
				    const char **why)
{
	struct shk_sdk_reg *g;

	if (req->session_id) {
		if (!(g = reg_find(c->sdk, req->session_id, req->agent_id))) {
			*code = "SESSION_NOT_FOUND";
			*why = "register.session_id: no registration of this agent_id with this id "
			       "(unknown, another agent's, or dropped for newer ones)";
		}
		return g;
	}
	if (!(g = reg_new(c->sdk))) {
		*code = "RATE_LIMITED";
		*why = "every registration is held by a connection";
	} else if (new_session_id(g->sid) < 0) {
		*code = "DAEMON_UNAVAILABLE";
		*why = "no randomness for a session id";
		return NULL;
	} else {
		g->used = true;
		snprintf(g->agent, sizeof(g->agent), "%s", req->agent_id);
		g->last_call = 0;
		g->next_call = 0;
		memset(g->calls, 0, sizeof(g->calls));
	}
	return g;
}

static int on_register(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req)
{
	const char *code = NULL, *why = NULL;
	struct shk_sdk_reg *g;
	struct shk_sdk_ctx x;
	uint64_t last;
	int r;

	pthread_mutex_lock(&c->sdk->lock);
	if (!(g = reg_take(c, req, &code, &why))) {
		pthread_mutex_unlock(&c->sdk->lock);
		return refuse(c, doc, req, code, "%s", why);
	}
	if (c->reg && c->reg != g && c->reg->owner == c)
		c->reg->owner = NULL; /* kept: another connection may resume it */
	if (g->owner && g->owner != c)
		shk_sdk_note(c->sdk, "sdk:%s registration %s resumed on another connection", g->agent, g->sid);
	/* A resume keeps the id and the calls; both renew the heartbeat. */
	g->owner = c;
	g->last_hb_ns = shk_sdk_mono_ns();
	last = g->last_call;
	c->reg = g;
	c->moved = false;
	memcpy(c->sid, g->sid, sizeof(c->sid));
	pthread_mutex_unlock(&c->sdk->lock);
	snprintf(c->agent, sizeof(c->agent), "%s", req->agent_id);
	snprintf(c->org, sizeof(c->org), "%s", req->organization_id ? req->organization_id : "");
	snprintf(c->origin, sizeof(c->origin), "sdk:%s", c->agent);
	x = ctx_of(c, req);
	r = shk_sdk_write_register(doc, &x, c->sdk->cfg.heartbeat_ms, last, &c->out);
	return r < 0 ? r : send_out(c);
}

static void remember_call(struct shk_sdk_reg *g, uint64_t call, uint64_t nonce)
{
	g->calls[g->next_call % SHK_SDK_CALLS_KEPT].call = call;
	g->calls[g->next_call % SHK_SDK_CALLS_KEPT].nonce = nonce;
	g->next_call++;
}

/* The nonce of an allowed call not reported yet; 0 when there is none. */
static uint64_t take_call(struct shk_sdk_reg *g, uint64_t call)
{
	for (unsigned i = 0; i < SHK_SDK_CALLS_KEPT; i++)
		if (g->calls[i].nonce && g->calls[i].call == call) {
			uint64_t n = g->calls[i].nonce;

			g->calls[i].nonce = 0;
			return n;
		}
	return 0;
}

static double budget_now(const struct conn *c)
{
	shk_session_info info;

	if (c->sdk->judge.info(c->sdk->judge.ctx, &info) < 0)
		return 0;
	return info.budget_remaining_usd;
}

/* "allowed: REASON[, rule RULE]", cut at cap - 1 bytes as snprintf would:
 * built by hand, as snprintf's format parsing costs more than the copy. */
static void human_reason(char *out, size_t cap, const struct shk_sdk_verdict *v)
{
	const char *parts[] = { v->verdict == SHK_ALLOW ? "allowed: " : "denied: ", v->reason,
				v->rule[0] ? ", rule " : "", v->rule };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		const char *p = parts[i] ? parts[i] : "";
		size_t len = strnlen(p, cap - 1 - n);

		memcpy(out + n, p, len);
		n += len;
	}
	out[n] = '\0';
}

static int answer_pre_exec(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req,
                           struct shk_sdk_verdict *v)
{
	struct shk_sdk_ctx x = ctx_of(c, req);
	char human[200];
	int r;

	human_reason(human, sizeof(human), v);
	v->human = human;
	v->budget_remaining_usd = budget_now(c);
	if (v->verdict != SHK_ALLOW)
		shk_sdk_note(c->sdk, "%s call %" PRIu64 " %s denied: %s", c->origin, req->call_number,
			     req->tool_name, v->reason);
	r = shk_sdk_write_pre_exec(doc, &x, req->call_number, v, &c->out);
	return r < 0 ? r : send_out(c);
}

static bool params_hash_ok(const struct shk_sdk_req *req)
{
	uint8_t d[SHK_SHA256_LEN];

	/* Params that are not canonicalisable are decide()'s to deny (Rule 1). */
	if (!req->has_params_hash || shk_canon_sha256(req->tool_params, d) < 0)
		return true;
	return memcmp(d, req->params_hash, sizeof(d)) == 0;
}

static int moved(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req)
{
	return refuse(c, doc, req, "SESSION_NOT_FOUND",
		      "session_id: the registration was resumed on another connection");
}

static int on_pre_exec(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req)
{
	struct shk_source_call call = {
		.kind = SHK_SOURCE_SDK, .tool = req->tool_name, .params = req->tool_params,
		.estimated_cost_usd = req->cost_usd, .origin = c->origin, .nonce = req->nonce,
	};
	struct shk_source_answer a;
	struct shk_sdk_verdict v = { .verdict = SHK_DENY, .rule = "", .nonce = req->nonce };
	struct shk_sdk_reg *g;
	uint64_t last;
	bool is_stale;

	if (req->nonce == 0)
		return refuse(c, doc, req, "INVALID_MESSAGE", "pre_exec.nonce: must not be 0");
	if (!params_hash_ok(req))
		return refuse(c, doc, req, "INVALID_MESSAGE",
			      "pre_exec.tool_params_hash: not the SHA-256 of canonical tool_params");
	if (!(g = hold(c)))
		return moved(c, doc, req);
	last = g->last_call;
	if (req->call_number > last)
		g->last_call = req->call_number;
	is_stale = stale(c, g, shk_sdk_mono_ns());
	release(c);
	if (req->call_number <= last)
		return refuse(c, doc, req, "INVALID_MESSAGE",
			      "pre_exec.call_number %" PRIu64 ": must increase (last %" PRIu64 ")",
			      req->call_number, last);
	if (is_stale) {
		v.reason = "session_stale";
		return answer_pre_exec(c, doc, req, &v);
	}
	if (c->sdk->judge.judge(c->sdk->judge.ctx, &call, &a) < 0)
		return refuse(c, doc, req, "DAEMON_UNAVAILABLE", "the call could not be judged: denied");
	if (a.verdict == SHK_ALLOW) {
		/* the registration's, wherever it is held now (unless dropped) */
		pthread_mutex_lock(&c->sdk->lock);
		if (g->used && !strcmp(g->sid, c->sid))
			remember_call(g, req->call_number, a.nonce);
		pthread_mutex_unlock(&c->sdk->lock);
	}
	v.verdict = a.verdict == SHK_ALLOW ? SHK_ALLOW : SHK_DENY;
	v.reason = shk_reason_str(a.reason);
	v.rule = a.rule;
	v.nonce = a.nonce;
	return answer_pre_exec(c, doc, req, &v);
}

static int on_post_exec(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req)
{
	struct shk_sdk_ctx x = ctx_of(c, req);
	struct shk_sdk_reg *g = hold(c);
	uint64_t nonce;
	int r;

	if (!g)
		return moved(c, doc, req);
	nonce = take_call(g, req->call_number);
	release(c);
	/* Accepted from a stale registration too: the spend happened, and a
	 * report refused would leave the budget short of it. */
	if (!nonce)
		return refuse(c, doc, req, "UNKNOWN_CALL",
			      "post_exec.call_number %" PRIu64 ": no allowed call waiting for its report",
			      req->call_number);
	r = c->sdk->judge.settle(c->sdk->judge.ctx, nonce, req->cost_usd, req->payload);
	if (r == -ENOENT)
		return refuse(c, doc, req, "UNKNOWN_CALL",
			      "post_exec.call_number %" PRIu64 ": the session holds no charge to correct",
			      req->call_number);
	if (r < 0)
		return refuse(c, doc, req, "DAEMON_UNAVAILABLE", "post_exec could not be settled: %s",
			      strerror(-r));
	r = shk_sdk_write_post_exec(doc, &x, req->call_number, budget_now(c), &c->out);
	return r < 0 ? r : send_out(c);
}

/* A heartbeat does not ask Redis (it comes every interval); get state does,
 * after the registration's lock is let go: Redis may take timeout_ms. */
static int answer_state(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req,
			const struct shk_sdk_ctx *x, const shk_session_info *info, shk_sdk_status st)
{
	struct shk_source_shared sh;
	int r = c->sdk->judge.shared ? c->sdk->judge.shared(c->sdk->judge.ctx, &sh) : -ENOENT;

	if (r < 0 && r != -ENOENT)
		return refuse(c, doc, req, "DAEMON_UNAVAILABLE", "no shared state: %s", strerror(-r));
	r = shk_sdk_write_state(doc, x, info, r == 0 ? &sh : NULL, st, &c->out);
	return r < 0 ? r : send_out(c);
}

static int on_state(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req)
{
	struct shk_sdk_ctx x = ctx_of(c, req);
	shk_session_info info;
	struct shk_sdk_reg *g;
	shk_sdk_status st;
	bool drift;
	int r;

	if (c->sdk->judge.info(c->sdk->judge.ctx, &info) < 0)
		return refuse(c, doc, req, "DAEMON_UNAVAILABLE", "no session state");
	if (!(g = hold(c)))
		return moved(c, doc, req);
	st = stale(c, g, shk_sdk_mono_ns()) ? SHK_SDK_STALE : SHK_SDK_ACTIVE;
	/* A heartbeat does not revive a stale registration: register again. */
	if (req->type != SHK_SDK_GET_STATE && st == SHK_SDK_ACTIVE)
		g->last_hb_ns = shk_sdk_mono_ns();
	release(c);
	if (req->type == SHK_SDK_GET_STATE)
		return answer_state(c, doc, req, &x, &info, st);
	drift = req->has_local_budget && fabs(req->local_budget - info.budget_remaining_usd) > 1e-9;
	r = shk_sdk_write_heartbeat(doc, &x, &info, drift, st, &c->out);
	return r < 0 ? r : send_out(c);
}

static int dispatch(struct conn *c, shk_doc *doc, const struct shk_sdk_req *req)
{
	if (req->type == SHK_SDK_REGISTER)
		return on_register(c, doc, req);
	if (!c->reg)
		return c->moved ? moved(c, doc, req)
				: refuse(c, doc, req, "NOT_REGISTERED", "register first (SP/1.0 §4.2)");
	if (strcmp(req->session_id, c->sid) != 0)
		return refuse(c, doc, req, "SESSION_NOT_FOUND",
			      "session_id: not this connection's registration");
	switch (req->type) {
	case SHK_SDK_PRE_EXEC:
		return on_pre_exec(c, doc, req);
	case SHK_SDK_POST_EXEC:
		return on_post_exec(c, doc, req);
	default:
		return on_state(c, doc, req);
	}
}

/* One line: 0 to go on, negative to close the connection. */
static int handle_line(struct conn *c, const char *line, size_t len)
{
	shk_doc *doc = c->doc;
	struct shk_sdk_req req;
	struct shk_sdk_err err;
	int r;

	shk_doc_reset(doc);
	r = shk_sdk_parse(doc, line, len, &req, &err);
	if (r == -EINVAL)
		r = refuse(c, doc, &req, err.code, "%s", err.text);
	else if (r == 0)
		r = dispatch(c, doc, &req);
	if (r == -ENOBUFS || r == -EINVAL || r == -ENOMEM)
		r = refuse(c, doc, &req, "DAEMON_UNAVAILABLE", "the answer could not be written");
	return r;
}

static int too_large(struct conn *c)
{
	int r;

	shk_doc_reset(c->doc);
	r = refuse(c, c->doc, NULL, "MESSAGE_TOO_LARGE", "a line is at most %zu bytes",
		   c->sdk->cfg.max_line);
	/* The rest of the line is never read: end the conversation here. */
	shutdown(c->fd, SHUT_WR);
	return r < 0 ? r : -EMSGSIZE;
}

/* Lines in c->in: handle each complete one, keep the rest. */
static int drain_lines(struct conn *c, size_t scanned)
{
	size_t start = 0;
	int r = 0;

	for (size_t i = scanned; i < c->in_len && r == 0; i++) {
		char *nl = memchr(c->in + i, '\n', c->in_len - i);
		size_t len;

		if (!nl)
			break;
		i = (size_t)(nl - c->in);
		len = i - start;
		if (len > 0 && c->in[start + len - 1] == '\r')
			len--;
		if (len > c->sdk->cfg.max_line)
			return too_large(c);
		if (len > 0)
			r = handle_line(c, c->in + start, len);
		start = i + 1;
	}
	memmove(c->in, c->in + start, c->in_len - start);
	c->in_len -= start;
	return r;
}

static int grow_in(struct conn *c)
{
	size_t cap = c->in_cap ? c->in_cap * 2 : IN_FIRST;
	char *p;

	if (cap > c->sdk->cfg.max_line + 2)
		cap = c->sdk->cfg.max_line + 2;
	p = realloc(c->in, cap);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->in_cap = cap;
	return 0;
}

static int serve(struct conn *c)
{
	for (;;) {
		size_t before = c->in_len;
		ssize_t n;
		int r;

		/* max_line bytes and '\r\n' are the most one line may take. */
		if (c->in_len > c->sdk->cfg.max_line + 1)
			return too_large(c);
		if (c->in_len == c->in_cap && (r = grow_in(c)) < 0)
			return r;
		n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		c->in_len += (size_t)n;
		r = drain_lines(c, before);
		if (r < 0)
			return r;
	}
}

void *shk_sdk_conn_main(void *arg)
{
	struct slot *s = arg;
	struct conn *c = calloc(1, sizeof(*c));

	if (c && shk_doc_new(&c->doc) < 0) {
		free(c);
		c = NULL;
	}
	if (c) {
		c->sdk = s->sdk;
		c->fd = s->fd;
		c->pid = s->pid;
		c->out.buf = c->out_buf;
		c->out.cap = sizeof(c->out_buf);
		snprintf(c->origin, sizeof(c->origin), "sdk:pid %d", (int)s->pid);
		serve(c);
		/* the registration stays, for a resume on another connection */
		if (hold(c)) {
			c->reg->owner = NULL;
			release(c);
		}
		free(c->in);
		shk_doc_free(c->doc);
		free(c);
	}
	pthread_mutex_lock(&s->sdk->lock);
	close(s->fd);
	s->fd = -EBADF;
	s->state = SLOT_DONE;
	pthread_mutex_unlock(&s->sdk->lock);
	return NULL;
}
