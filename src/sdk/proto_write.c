/* SPDX-License-Identifier: MIT */
/*
 * SP/1.0 §4 answers: each is an envelope built as a shk_val and written in
 * canonical JSON (sorted keys, one line), so that what a client reads is
 * what the project's own JSON can read back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <shackle/canon.h>

#include "sdk/proto.h"

/* Members are added with a sticky error: the first failure is returned. */
struct bld {
	shk_doc *doc;
	shk_val *obj;
	int err;
};

static void put(struct bld *b, const char *key, shk_val *v)
{
	int r;

	if (b->err)
		return;
	if (!b->obj || !v) {
		b->err = -ENOMEM;
		return;
	}
	r = shk_object_set_str(b->obj, key, v);
	if (r < 0)
		b->err = r;
}

static void put_str(struct bld *b, const char *key, const char *s)
{
	put(b, key, shk_cstring(b->doc, s ? s : ""));
}

/* 64-bit integers as decimal strings: the proto3 JSON mapping, and what a
 * JavaScript client can hold without rounding. */
static void put_u64(struct bld *b, const char *key, uint64_t u)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, u);
	put_str(b, key, buf);
}

static void put_i64(struct bld *b, const char *key, int64_t i)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, i);
	put_str(b, key, buf);
}

static void put_real(struct bld *b, const char *key, double d)
{
	put(b, key, shk_real(b->doc, d));
}

static void put_bool(struct bld *b, const char *key, bool v)
{
	put(b, key, shk_bool(b->doc, v));
}

static struct bld object(shk_doc *doc)
{
	struct bld b = { doc, shk_object(doc), 0 };

	if (!b.obj)
		b.err = -ENOMEM;
	return b;
}

static int sink(void *ctx, const char *bytes, size_t len)
{
	struct shk_sdk_out *out = ctx;

	if (out->len + len + 2 > out->cap)
		return -ENOBUFS;
	memcpy(out->buf + out->len, bytes, len);
	out->len += len;
	return 0;
}

/* The envelope around payload b, written to out. */
static int finish(const struct shk_sdk_ctx *c, const char *name, struct bld *payload,
                  struct shk_sdk_out *out)
{
	struct bld env = object(payload->doc);
	int r;

	put_str(&env, "protocol_version", SHK_SDK_PROTOCOL);
	put_str(&env, "correlation_id", c->correlation_id);
	put_i64(&env, "server_timestamp_ns", c->now_ns);
	if (payload->err)
		return payload->err;
	put(&env, name, payload->obj);
	if (env.err)
		return env.err;
	out->len = 0;
	r = shk_canon_write(env.obj, sink, out);
	if (r < 0)
		return r;
	out->buf[out->len++] = '\n';
	out->buf[out->len] = '\0';
	return 0;
}

int shk_sdk_write_error(shk_doc *doc, const struct shk_sdk_ctx *c, const struct shk_sdk_err *err,
                        struct shk_sdk_out *out)
{
	struct bld p = object(doc);

	put_str(&p, "code", err->code);
	put_str(&p, "message", err->text);
	return finish(c, "error", &p, out);
}

int shk_sdk_write_register(shk_doc *doc, const struct shk_sdk_ctx *c, uint32_t heartbeat_ms,
                           uint64_t last_call, struct shk_sdk_out *out)
{
	struct bld p = object(doc);

	put_str(&p, "session_id", c->session_id);
	put_str(&p, "daemon_version", "shackle " SHK_SDK_PROTOCOL);
	put_str(&p, "negotiated_protocol", SHK_SDK_PROTOCOL);
	put_i64(&p, "daemon_time_ns", c->now_ns);
	put(&p, "heartbeat_interval_ms", shk_int(doc, heartbeat_ms));
	put_u64(&p, "last_call_number", last_call);
	return finish(c, "register_response", &p, out);
}

int shk_sdk_write_pre_exec_slow(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
                                const struct shk_sdk_verdict *v, struct shk_sdk_out *out)
{
	struct bld p = object(doc);

	put_str(&p, "session_id", c->session_id);
	put_u64(&p, "call_number", call_number);
	put_str(&p, "verdict", shk_verdict_str(v->verdict));
	put_str(&p, "reason", v->reason);
	if (v->verdict != SHK_ALLOW)
		put_str(&p, "deny_reason", v->reason);
	put_str(&p, "human_readable_reason", v->human);
	put_str(&p, "rule", v->rule);
	put_u64(&p, "nonce", v->nonce);
	put_real(&p, "budget_remaining_usd", v->budget_remaining_usd);
	put_i64(&p, "daemon_time_ns", c->now_ns);
	put_bool(&p, "probabilistic_deny", false);
	return finish(c, "pre_exec_response", &p, out);
}

/*
 * The answer to every call, written straight into out: the same canonical
 * bytes the document would give (members in key order, 64-bit integers as
 * strings), as long as every string is printable ASCII without '"' or '\\'
 * (written as it is) and the budget is finite. Anything else, and an answer
 * that does not fit, goes through the document.
 */
struct line {
	char *p, *end;
	bool ok;
};

static void raw(struct line *l, const char *s, size_t n)
{
	if (!l->ok || (size_t)(l->end - l->p) < n) {
		l->ok = false;
		return;
	}
	memcpy(l->p, s, n);
	l->p += n;
}

#define LIT(l, s) raw(l, s, sizeof(s) - 1)

static void plain_str(struct line *l, const char *s)
{
	size_t n = 0;

	for (s = s ? s : ""; s[n]; n++)
		if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] > 0x7e || s[n] == '"' ||
		    s[n] == '\\')
			l->ok = false;
	LIT(l, "\"");
	raw(l, s, n);
	LIT(l, "\"");
}

static void quoted_u64(struct line *l, uint64_t u, bool neg)
{
	char buf[24], *d = buf + sizeof(buf);

	*--d = '"';
	do
		*--d = (char)('0' + u % 10);
	while ((u /= 10));
	if (neg)
		*--d = '-';
	*--d = '"';
	raw(l, d, (size_t)(buf + sizeof(buf) - d));
}

static void quoted_i64(struct line *l, int64_t i)
{
	quoted_u64(l, i < 0 ? -(uint64_t)i : (uint64_t)i, i < 0);
}

static bool pre_exec_direct(const struct shk_sdk_ctx *c, uint64_t call_number,
                            const struct shk_sdk_verdict *v, struct shk_sdk_out *out)
{
	struct line l = { out->buf, out->buf + (out->cap >= 2 ? out->cap - 2 : 0), true };
	char real[32];
	int n = shk_canon_format_real(v->budget_remaining_usd, real, sizeof(real));

	if (n < 0)
		return false;
	LIT(&l, "{\"correlation_id\":");
	plain_str(&l, c->correlation_id);
	LIT(&l, ",\"pre_exec_response\":{\"budget_remaining_usd\":");
	raw(&l, real, (size_t)n);
	LIT(&l, ",\"call_number\":");
	quoted_u64(&l, call_number, false);
	LIT(&l, ",\"daemon_time_ns\":");
	quoted_i64(&l, c->now_ns);
	if (v->verdict != SHK_ALLOW) {
		LIT(&l, ",\"deny_reason\":");
		plain_str(&l, v->reason);
	}
	LIT(&l, ",\"human_readable_reason\":");
	plain_str(&l, v->human);
	LIT(&l, ",\"nonce\":");
	quoted_u64(&l, v->nonce, false);
	LIT(&l, ",\"probabilistic_deny\":false,\"reason\":");
	plain_str(&l, v->reason);
	LIT(&l, ",\"rule\":");
	plain_str(&l, v->rule);
	LIT(&l, ",\"session_id\":");
	plain_str(&l, c->session_id);
	LIT(&l, ",\"verdict\":");
	plain_str(&l, shk_verdict_str(v->verdict));
	LIT(&l, "},\"protocol_version\":\"" SHK_SDK_PROTOCOL "\",\"server_timestamp_ns\":");
	quoted_i64(&l, c->now_ns);
	LIT(&l, "}");
	if (!l.ok)
		return false;
	out->len = (size_t)(l.p - out->buf);
	out->buf[out->len++] = '\n';
	out->buf[out->len] = '\0';
	return true;
}

int shk_sdk_write_pre_exec(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
                           const struct shk_sdk_verdict *v, struct shk_sdk_out *out)
{
	if (pre_exec_direct(c, call_number, v, out))
		return 0;
	return shk_sdk_write_pre_exec_slow(doc, c, call_number, v, out);
}

int shk_sdk_write_post_exec(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
                            double budget_remaining_usd, struct shk_sdk_out *out)
{
	struct bld p = object(doc);

	put_str(&p, "session_id", c->session_id);
	put_u64(&p, "call_number", call_number);
	put_real(&p, "budget_remaining_usd", budget_remaining_usd);
	return finish(c, "post_exec_ack", &p, out);
}

static const char *status_str(shk_sdk_status s)
{
	return s == SHK_SDK_STALE ? "STALE" : "ACTIVE";
}

int shk_sdk_write_heartbeat(shk_doc *doc, const struct shk_sdk_ctx *c, const shk_session_info *info,
                            bool drift, shk_sdk_status status, struct shk_sdk_out *out)
{
	struct bld p = object(doc);

	put_str(&p, "session_id", c->session_id);
	put_real(&p, "daemon_budget_remaining", info->budget_remaining_usd);
	put_bool(&p, "drift_detected", drift);
	put_i64(&p, "daemon_time_ns", c->now_ns);
	put_str(&p, "status", status_str(status));
	return finish(c, "heartbeat_ack", &p, out);
}

static void put_obj(struct bld *b, const char *key, struct bld *member)
{
	if (member->err && !b->err)
		b->err = member->err;
	put(b, key, member->obj);
}

/* Either the numbers Redis gave for this answer, or the error and none:
 * a number kept from an earlier answer would pass for the scope's now. */
static void put_shared(struct bld *p, const struct shk_source_shared *sh)
{
	struct bld s = object(p->doc), b = object(p->doc), k = object(p->doc), e = object(p->doc);
	const char *name = sh->err ? strerrorname_np(-sh->err) : NULL;

	if (sh->budget) {
		put_str(&b, "scope", sh->budget_scope);
		if (!sh->err) {
			put_real(&b, "limit_usd", sh->limit_usd);
			put_real(&b, "spent_usd", sh->spent_usd);
			put_real(&b, "reserved_usd", sh->reserved_usd);
			put_real(&b, "remaining_usd", sh->remaining_usd);
			put_u64(&b, "ops", sh->ops);
		}
		put_obj(&s, "budget", &b);
	}
	if (sh->breaker) {
		put_str(&k, "scope", sh->breaker_scope);
		if (!sh->err) {
			put_bool(&k, "open", sh->open);
			put_i64(&k, "at_ms", sh->at_ms);
			put_str(&k, "by", sh->by);
			put_str(&k, "reason", sh->reason);
		}
		put_bool(&k, "trip_pending", sh->trip_pending);
		put_obj(&s, "breaker", &k);
	}
	if (sh->err) {
		put_str(&e, "errno", name ? name : "?");
		put_str(&e, "why", sh->why);
		put_obj(&s, "error", &e);
	}
	put_obj(p, "shared", &s);
}

int shk_sdk_write_state(shk_doc *doc, const struct shk_sdk_ctx *c, const shk_session_info *info,
                        const struct shk_source_shared *shared, shk_sdk_status status,
                        struct shk_sdk_out *out)
{
	struct bld p = object(doc);

	put_str(&p, "session_id", c->session_id);
	put_str(&p, "agent_id", c->agent_id);
	put_str(&p, "organization_id", c->organization_id);
	put_str(&p, "status", status_str(status));
	put_real(&p, "budget_initial_usd", info->budget_initial_usd);
	put_real(&p, "budget_remaining_usd", info->budget_remaining_usd);
	put_real(&p, "budget_spent_usd", info->budget_spent_usd);
	put_u64(&p, "total_calls", info->total_calls);
	put_bool(&p, "circuit_tripped", info->circuit_tripped);
	put_str(&p, "circuit_trip_reason", info->circuit_tripped ? shk_reason_str(info->trip_reason) : "");
	put_i64(&p, "circuit_tripped_at_ns", info->circuit_tripped ? info->tripped_at_ns : 0);
	put_u64(&p, "pending", info->pending);
	if (shared)
		put_shared(&p, shared);
	return finish(c, "session_state", &p, out);
}
