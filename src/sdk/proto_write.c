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

int shk_sdk_write_pre_exec(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
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

int shk_sdk_write_state(shk_doc *doc, const struct shk_sdk_ctx *c, const shk_session_info *info,
                        shk_sdk_status status, struct shk_sdk_out *out)
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
	return finish(c, "session_state", &p, out);
}
