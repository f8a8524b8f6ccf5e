/* SPDX-License-Identifier: MIT */
/*
 * SP/1.0 §4 requests as JSON lines: envelope, payload and field validation.
 * Each payload is a table of its fields; a member not in the table is
 * refused, so a misspelt field never passes for an absent optional one.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "sdk/proto.h"

enum fkind {
	F_ID,      /* printable ASCII, 1..SHK_SDK_ID_MAX bytes */
	F_TOOL,    /* 1..SHK_SDK_TOOL_MAX bytes of UTF-8 without NUL or control bytes */
	F_TEXT,    /* any string (kept in the report, not read) */
	F_U64,     /* JSON integer >= 0 or decimal string */
	F_I64,     /* JSON integer or decimal string, read and not kept */
	F_COST,    /* finite number >= 0 */
	F_NUM,     /* finite number */
	F_BOOL,
	F_OBJ,     /* object: tool params */
	F_STRMAP,  /* object of strings: tags, metadata */
	F_HEX32,   /* 64 hex digits: a SHA-256 */
};

#define NO_OFF SIZE_MAX

struct field {
	const char *name;
	size_t len;     /* strlen(name), so that lookups need no strlen */
	enum fkind kind;
	bool required;
	size_t off;     /* where it goes in shk_sdk_req, NO_OFF: checked only */
	size_t has_off; /* bool set when present, NO_OFF: none */
};

#define REQ(m) offsetof(struct shk_sdk_req, m)
#define NAME(s) s, sizeof(s) - 1
#define END { NULL, 0, 0, false, 0, 0 }

static const struct field register_fields[] = {
	{ NAME("agent_id"), F_ID, true, REQ(agent_id), NO_OFF },
	{ NAME("agent_version"), F_TEXT, false, NO_OFF, NO_OFF },
	{ NAME("framework"), F_TEXT, false, NO_OFF, NO_OFF },
	{ NAME("session_id"), F_ID, false, REQ(session_id), NO_OFF },
	{ NAME("organization_id"), F_ID, false, REQ(organization_id), NO_OFF },
	{ NAME("runtime"), F_TEXT, false, NO_OFF, NO_OFF },
	{ NAME("metadata"), F_STRMAP, false, NO_OFF, NO_OFF },
	END,
};

static const struct field pre_exec_fields[] = {
	{ NAME("session_id"), F_ID, true, REQ(session_id), NO_OFF },
	{ NAME("call_number"), F_U64, true, REQ(call_number), NO_OFF },
	{ NAME("tool_name"), F_TOOL, true, REQ(tool_name), NO_OFF },
	{ NAME("tool_params"), F_OBJ, true, REQ(tool_params), NO_OFF },
	{ NAME("tool_params_hash"), F_HEX32, false, REQ(params_hash), REQ(has_params_hash) },
	{ NAME("estimated_cost_usd"), F_COST, true, REQ(cost_usd), NO_OFF },
	{ NAME("parent_guard_id"), F_TEXT, false, NO_OFF, NO_OFF },
	{ NAME("nonce"), F_U64, true, REQ(nonce), NO_OFF },
	{ NAME("tags"), F_STRMAP, false, NO_OFF, NO_OFF },
	END,
};

static const struct field post_exec_fields[] = {
	{ NAME("session_id"), F_ID, true, REQ(session_id), NO_OFF },
	{ NAME("call_number"), F_U64, true, REQ(call_number), NO_OFF },
	{ NAME("actual_cost_usd"), F_COST, true, REQ(cost_usd), NO_OFF },
	{ NAME("success"), F_BOOL, false, NO_OFF, NO_OFF },
	{ NAME("error_message"), F_TEXT, false, NO_OFF, NO_OFF },
	{ NAME("duration_ms"), F_I64, false, NO_OFF, NO_OFF },
	{ NAME("tokens_in"), F_U64, false, NO_OFF, NO_OFF },
	{ NAME("tokens_out"), F_U64, false, NO_OFF, NO_OFF },
	{ NAME("model_used"), F_TEXT, false, NO_OFF, NO_OFF },
	END,
};

static const struct field heartbeat_fields[] = {
	{ NAME("session_id"), F_ID, true, REQ(session_id), NO_OFF },
	{ NAME("last_call_number"), F_U64, false, REQ(last_call_number), NO_OFF },
	{ NAME("local_budget_remaining"), F_NUM, false, REQ(local_budget), REQ(has_local_budget) },
	END,
};

static const struct field state_fields[] = {
	{ NAME("session_id"), F_ID, true, REQ(session_id), NO_OFF },
	END,
};

static const struct {
	const char *name;
	size_t len;
	shk_sdk_type type;
	const struct field *fields;
} payloads[] = {
	{ NAME("register"), SHK_SDK_REGISTER, register_fields },
	{ NAME("pre_exec"), SHK_SDK_PRE_EXEC, pre_exec_fields },
	{ NAME("post_exec"), SHK_SDK_POST_EXEC, post_exec_fields },
	{ NAME("heartbeat"), SHK_SDK_HEARTBEAT, heartbeat_fields },
	{ NAME("get_session_state"), SHK_SDK_GET_STATE, state_fields },
};

static const struct field envelope_fields[] = {
	{ NAME("protocol_version"), F_ID, true, NO_OFF, NO_OFF },
	{ NAME("message_id"), F_ID, false, REQ(message_id), NO_OFF },
	{ NAME("correlation_id"), F_TEXT, false, NO_OFF, NO_OFF },
	{ NAME("client_timestamp_ns"), F_I64, false, NO_OFF, NO_OFF },
	{ NAME("server_timestamp_ns"), F_I64, false, NO_OFF, NO_OFF },
	/* No key for it exists in SP/1.0: peer credentials stand in (docs/sdk.md). */
	{ NAME("hmac"), F_TEXT, false, NO_OFF, NO_OFF },
	END,
};

__attribute__((format(printf, 3, 4)))
static int fail(struct shk_sdk_err *err, const char *code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool printable_ascii(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

static bool tool_bytes_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* Unsigned decimal without sign, leading zeros or overflow. */
static bool parse_u64_text(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || len > 20 || (len > 1 && s[0] == '0'))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return true;
}

static bool get_u64(const shk_val *v, uint64_t *ret)
{
	size_t len;
	const char *s;

	if (shk_val_type(v) == SHK_INT) {
		if (shk_val_int(v) < 0)
			return false;
		*ret = (uint64_t)shk_val_int(v);
		return true;
	}
	s = shk_val_str(v, &len);
	return s && parse_u64_text(s, len, ret);
}

static bool get_i64(const shk_val *v)
{
	size_t len;
	const char *s;
	uint64_t u;

	if (shk_val_type(v) == SHK_INT)
		return true;
	s = shk_val_str(v, &len);
	if (s && len > 0 && s[0] == '-')
		return parse_u64_text(s + 1, len - 1, &u) && u <= (uint64_t)INT64_MAX + 1;
	return s && parse_u64_text(s, len, &u) && u <= (uint64_t)INT64_MAX;
}

static bool get_number(const shk_val *v, double *ret)
{
	shk_type t = shk_val_type(v);

	return (t == SHK_INT || t == SHK_REAL) && shk_val_number(v, ret) && isfinite(*ret);
}

static bool strmap_ok(const shk_val *v)
{
	if (shk_val_type(v) != SHK_OBJECT || shk_val_len(v) > 64)
		return false;
	for (size_t i = 0; i < shk_val_len(v); i++)
		if (shk_val_type(shk_object_value_at(v, i)) != SHK_STRING)
			return false;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool get_hex32(const shk_val *v, uint8_t *out)
{
	size_t len;
	const char *s = shk_val_str(v, &len);

	if (!s || len != 2 * SHK_SHA256_LEN)
		return false;
	for (size_t i = 0; i < SHK_SHA256_LEN; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static const char *kind_wants(enum fkind k)
{
	switch (k) {
	case F_ID: return "1 to 128 printable ASCII characters";
	case F_TOOL: return "a string of 1 to 256 bytes without control characters";
	case F_TEXT: return "a string";
	case F_U64: return "an unsigned 64-bit integer (a number or a decimal string)";
	case F_I64: return "a signed 64-bit integer (a number or a decimal string)";
	case F_COST: return "a finite number >= 0";
	case F_NUM: return "a finite number";
	case F_BOOL: return "true or false";
	case F_OBJ: return "a JSON object";
	case F_STRMAP: return "an object of at most 64 strings";
	case F_HEX32: return "64 hex digits (SHA-256)";
	}
	return "?";
}

/* Check one member; store it at f->off in req when it has a place there. */
static bool store_field(const struct field *f, const shk_val *v, struct shk_sdk_req *req)
{
	char *at = f->off == NO_OFF ? NULL : (char *)req + f->off;
	size_t len = 0;
	const char *s = shk_val_str(v, &len);
	double d = 0;
	uint64_t u = 0;

	switch (f->kind) {
	case F_ID:
		if (!s || len == 0 || len > SHK_SDK_ID_MAX || !printable_ascii(s, len))
			return false;
		break;
	case F_TOOL:
		if (!s || len == 0 || len > SHK_SDK_TOOL_MAX || !tool_bytes_ok(s, len))
			return false;
		break;
	case F_TEXT:
		return s != NULL;
	case F_U64:
		if (!get_u64(v, &u))
			return false;
		if (at)
			memcpy(at, &u, sizeof(u));
		return true;
	case F_I64:
		return get_i64(v);
	case F_COST:
	case F_NUM:
		if (!get_number(v, &d) || (f->kind == F_COST && d < 0))
			return false;
		if (at)
			memcpy(at, &d, sizeof(d));
		return true;
	case F_BOOL:
		return shk_val_type(v) == SHK_BOOL;
	case F_OBJ:
		if (shk_val_type(v) != SHK_OBJECT)
			return false;
		if (at)
			memcpy(at, &v, sizeof(v));
		return true;
	case F_STRMAP:
		return strmap_ok(v);
	case F_HEX32:
		return get_hex32(v, (uint8_t *)at);
	}
	if (at)
		memcpy(at, &s, sizeof(s));
	return true;
}

static const struct field *find_field(const struct field *fields, const char *key, size_t len)
{
	for (const struct field *f = fields; f->name; f++)
		if (f->len == len && memcmp(f->name, key, len) == 0)
			return f;
	return NULL;
}

/* Every member known and well-typed, every required one present. */
static int check_fields(const char *where, const struct field *fields, const shk_val *obj,
                        struct shk_sdk_req *req, struct shk_sdk_err *err)
{
	for (const struct field *f = fields; f->name; f++) {
		const shk_val *v = shk_object_getn(obj, f->name, f->len);

		if (!v) {
			if (f->required)
				return fail(err, "INVALID_MESSAGE", "%s.%s: missing", where, f->name);
			continue;
		}
		if (!store_field(f, v, req))
			return fail(err, "INVALID_MESSAGE", "%s.%s: must be %s", where, f->name,
				    kind_wants(f->kind));
		if (f->has_off != NO_OFF)
			*(bool *)((char *)req + f->has_off) = true;
	}
	return 0;
}

static int check_unknown(const char *where, const struct field *fields, const shk_val *obj,
                         struct shk_sdk_err *err)
{
	for (size_t i = 0; i < shk_val_len(obj); i++) {
		size_t len;
		const char *key = shk_val_str(shk_object_key_at(obj, i), &len);

		if (!find_field(fields, key, len))
			return fail(err, "INVALID_MESSAGE", "%s: unknown field \"%.*s\"", where,
				    (int)(len > 64 ? 64 : len), key);
	}
	return 0;
}

static int find_payload(const shk_val *env, size_t *ret_idx, struct shk_sdk_err *err)
{
	size_t found = 0, idx = 0;

	for (size_t i = 0; i < shk_val_len(env); i++) {
		size_t len;
		const char *key = shk_val_str(shk_object_key_at(env, i), &len);
		size_t k;

		if (find_field(envelope_fields, key, len))
			continue;
		for (k = 0; k < sizeof(payloads) / sizeof(payloads[0]); k++)
			if (payloads[k].len == len && memcmp(payloads[k].name, key, len) == 0)
				break;
		if (k == sizeof(payloads) / sizeof(payloads[0]))
			return fail(err, "UNKNOWN_MESSAGE_TYPE", "unknown message type \"%.*s\"",
				    (int)(len > 64 ? 64 : len), key);
		found++;
		idx = k;
	}
	if (found != 1)
		return fail(err, "INVALID_MESSAGE", found ? "more than one payload in the envelope"
				: "no payload (register, pre_exec, post_exec, heartbeat, get_session_state)");
	*ret_idx = idx;
	return 0;
}

static int check_version(const shk_val *env, struct shk_sdk_err *err)
{
	size_t len;
	const char *v = shk_val_str(shk_object_get(env, "protocol_version"), &len);

	/* §9.4: any 1.x.y is answered as 1.0.0; another major is refused. */
	if (v && len >= 2 && v[0] == '1' && v[1] == '.')
		return 0;
	return fail(err, "PROTOCOL_VERSION_MISMATCH", "protocol_version %.*s: this daemon speaks %s",
		    v ? (int)(len > 32 ? 32 : len) : 6, v ? v : "absent", SHK_SDK_PROTOCOL);
}

static int check_envelope(const shk_val *env, struct shk_sdk_req *req, struct shk_sdk_err *err)
{
	const shk_val *mid = shk_object_get(env, "message_id");
	size_t len;
	const char *s = shk_val_str(mid, &len);
	int r;

	/* Set first, so that even a refused envelope is answered correlated. */
	if (s && len > 0 && len <= SHK_SDK_ID_MAX && printable_ascii(s, len))
		req->message_id = s;
	r = check_version(env, err);
	if (r < 0)
		return r;
	r = check_fields("envelope", envelope_fields, env, req, err);
	if (r < 0)
		return r;
	if (!req->message_id)
		req->message_id = "";
	return 0;
}

int shk_sdk_parse(shk_doc *doc, const char *line, size_t len, struct shk_sdk_req *req,
                  struct shk_sdk_err *err)
{
	shk_parse_error perr;
	shk_val *env = NULL;
	size_t idx = 0;
	int r;

	memset(req, 0, sizeof(*req));
	req->message_id = "";
	r = shk_json_parse(doc, line, len, "message", &env, &perr);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return fail(err, "INVALID_MESSAGE", "malformed JSON at column %d: %s", perr.column,
			    perr.text);
	if (shk_val_type(env) != SHK_OBJECT)
		return fail(err, "INVALID_MESSAGE", "a message is a JSON object (SP/1.0 §4.1 Envelope)");
	req->message_id = NULL;
	r = check_envelope(env, req, err);
	if (!req->message_id)
		req->message_id = "";
	if (r == 0)
		r = find_payload(env, &idx, err);
	if (r < 0)
		return r;
	req->type = payloads[idx].type;
	req->payload = shk_object_get(env, payloads[idx].name);
	if (shk_val_type(req->payload) != SHK_OBJECT)
		return fail(err, "INVALID_MESSAGE", "%s: must be a JSON object", payloads[idx].name);
	r = check_unknown(payloads[idx].name, payloads[idx].fields, req->payload, err);
	if (r == 0)
		r = check_fields(payloads[idx].name, payloads[idx].fields, req->payload, req, err);
	return r;
}
