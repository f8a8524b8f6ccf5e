/* SPDX-License-Identifier: MIT */
/*
 * sdk/proto.h — SP/1.0 §4 messages as JSON lines: one line in, validated
 * into a request; answers written as one line of canonical JSON. No I/O,
 * no clock (the caller passes time), no state: the connection holds that.
 *
 * The JSON is the proto3 JSON mapping of §4.1's Envelope with the original
 * field names: the oneof payload is the one member named after it
 * ("pre_exec": {...}); 64-bit integers are read as JSON integers or decimal
 * strings and written as strings. Unknown members are refused.
 */
#ifndef SHACKLE_SDK_PROTO_H
#define SHACKLE_SDK_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/canon.h>
#include <shackle/json.h>
#include <shackle/session.h>

#include "judge/source.h"

#define SHK_SDK_PROTOCOL "1.0.0"
#define SHK_SDK_ID_MAX 128 /* agent, organization, session and message ids */
#define SHK_SDK_TOOL_MAX 256

typedef enum shk_sdk_type {
	SHK_SDK_REGISTER = 1,
	SHK_SDK_PRE_EXEC,
	SHK_SDK_POST_EXEC,
	SHK_SDK_HEARTBEAT,
	SHK_SDK_GET_STATE,
} shk_sdk_type;

/* Strings point into the document the line was parsed into. */
struct shk_sdk_req {
	shk_sdk_type type;
	const char *message_id;       /* "" when absent: answers echo it as correlation_id */
	const char *session_id;       /* NULL when absent (register without resume) */
	const shk_val *payload;       /* the payload object: post_exec's report */
	/* register */
	const char *agent_id, *organization_id;
	/* pre_exec, post_exec */
	uint64_t call_number;
	/* pre_exec */
	const char *tool_name;
	const shk_val *tool_params;
	bool has_params_hash;
	uint8_t params_hash[SHK_SHA256_LEN];
	uint64_t nonce;
	double cost_usd;              /* pre_exec: estimated; post_exec: actual */
	/* heartbeat */
	uint64_t last_call_number;
	bool has_local_budget;
	double local_budget;
};

/* An error answer: an Appendix B code (or one of docs/sdk.md's) and what
 * was wrong, naming the field or the line's column. */
struct shk_sdk_err {
	const char *code;
	char text[240];
};

/*
 * Parse and validate one line (without its newline). 0, or -EINVAL with
 * *err filled; req->message_id is set as soon as the envelope had one, so a
 * refusal can still be correlated. -ENOMEM when doc ran out.
 */
int shk_sdk_parse(shk_doc *doc, const char *line, size_t len, struct shk_sdk_req *req,
                  struct shk_sdk_err *err);

/* One answer line, NUL-terminated, newline included. */
struct shk_sdk_out {
	char *buf;
	size_t len, cap;
};

struct shk_sdk_verdict {
	shk_verdict verdict;
	const char *reason;           /* shk_reason_str(), or the socket's own ("session_stale") */
	const char *human;            /* human_readable_reason */
	const char *rule;             /* the policy rule, "" for none */
	uint64_t nonce;
	double budget_remaining_usd;
};

typedef enum shk_sdk_status {
	SHK_SDK_ACTIVE = 0,
	SHK_SDK_STALE = 3,            /* §5.1 SessionStatus */
} shk_sdk_status;

/* Who answers: the registration and the time (server_timestamp_ns). */
struct shk_sdk_ctx {
	const char *correlation_id;
	const char *session_id;
	const char *agent_id;
	const char *organization_id;
	int64_t now_ns;
};

/* Each writes one envelope into out (built in doc): 0, -ENOMEM, -EINVAL (a
 * value JSON cannot carry: a non-finite budget) or -ENOBUFS
 * when it does not fit out's capacity. */
int shk_sdk_write_error(shk_doc *doc, const struct shk_sdk_ctx *c, const struct shk_sdk_err *err,
                        struct shk_sdk_out *out);
/* last_call: the registration's last call_number (a resume goes on from it). */
int shk_sdk_write_register(shk_doc *doc, const struct shk_sdk_ctx *c, uint32_t heartbeat_ms,
                           uint64_t last_call, struct shk_sdk_out *out);
int shk_sdk_write_pre_exec(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
                           const struct shk_sdk_verdict *v, struct shk_sdk_out *out);
/* The same answer always built as a document: what the direct writer of
 * shk_sdk_write_pre_exec must match byte for byte (tests compare them). */
int shk_sdk_write_pre_exec_slow(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
                                const struct shk_sdk_verdict *v, struct shk_sdk_out *out);
int shk_sdk_write_post_exec(shk_doc *doc, const struct shk_sdk_ctx *c, uint64_t call_number,
                            double budget_remaining_usd, struct shk_sdk_out *out);
int shk_sdk_write_heartbeat(shk_doc *doc, const struct shk_sdk_ctx *c, const shk_session_info *info,
                            bool drift, shk_sdk_status status, struct shk_sdk_out *out);
/* shared: the policy's shared scope as it is now ("shared" in the answer),
 * NULL when the policy shares nothing. */
int shk_sdk_write_state(shk_doc *doc, const struct shk_sdk_ctx *c, const shk_session_info *info,
                        const struct shk_source_shared *shared, shk_sdk_status status,
                        struct shk_sdk_out *out);

#endif
