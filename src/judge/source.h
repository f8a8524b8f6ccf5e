/* SPDX-License-Identifier: MIT */
/*
 * judge/source.h — how a source of tool calls other than the kernel (the
 * model gateway, the SDK socket) asks the session's judge.
 *
 * A source turns what it sees into a tool call (tool name, params, estimated
 * cost) and asks; the judge runs the same policy → decide() → audit path as
 * for the kernel's calls, in the same session (one budget, one breaker, one
 * log). A source never holds session state of its own.
 *
 * Threads: a source calls these functions from its own threads (an HTTP
 * server's, a socket server's), any number at once; the judge serialises
 * them with the supervisor's loop. judge() may block while a call is held
 * for a person (at most the policy's hitl_timeout_s), so a source must not
 * call it from a thread that something else waits on.
 */
#ifndef SHACKLE_JUDGE_SOURCE_H
#define SHACKLE_JUDGE_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/session.h>

typedef enum shk_source_kind {
	SHK_SOURCE_MODEL = 1, /* a request to a model API ("model:<model>") */
	SHK_SOURCE_PROPOSAL,  /* a tool call the model proposed in a response */
	SHK_SOURCE_SDK,       /* an SP/1.0 pre_exec from an agent framework */
} shk_source_kind;

#define SHK_SOURCE_RULE_MAX 64

struct shk_source_call {
	shk_source_kind kind;
	const char *tool;            /* the tool name decide() sees; NUL-terminated */
	const shk_val *params;       /* a JSON object, owned by the caller until judge() returns */
	double estimated_cost_usd;   /* finite, >= 0 */
	const char *origin;          /* who asked, for the log and notices: "gateway",
	                              * "sdk:<agent id>"; NULL: the source's kind */
	/* Set by a source that holds decide()'s nonce itself (SP/1.0 §4.3: an
	 * SDK sends one per call); 0: the judge issues one. A nonce the session
	 * has seen is denied by decide() (replay), as the spec says. */
	uint64_t nonce;
	/* Set by a source that saw the result of this same call (tool and
	 * params) carry an error signal (SP/1.0 §3.9: the phrases decide.md
	 * lists, e.g. a tool result saying "401 Unauthorized"): under the
	 * policy's error_amplification its repeat limit is lowered as if its
	 * params carried the signal. Logged in the decision's inputs. */
	bool result_error_signal;
	/* The members of a proposal's input its models rule leaves out of
	 * params ("ignore_input"), an object in the form the log may show
	 * (the policy's redaction applied); NULL: none. Logged in the
	 * decision's inputs as ignored_input, never judged. */
	const shk_val *ignored_input;
};

struct shk_source_answer {
	shk_verdict verdict;         /* ALLOW or DENY: a held call is answered once decided */
	shk_reason reason;
	uint64_t nonce;              /* the call's nonce: what settle() names */
	char rule[SHK_SOURCE_RULE_MAX]; /* the policy rule that matched, "" for a default */
};

#define SHK_SOURCE_SCOPE_MAX 160 /* SHK_SCOPE_ID_MAX */
#define SHK_SOURCE_WHY_MAX 200   /* SHK_SCOPE_WHY_MAX */
#define SHK_SOURCE_TEXT_MAX 96   /* SHK_SCOPE_TEXT_MAX */

/* The policy's shared scope (docs/shared-state.md) as Redis holds it at the
 * moment of asking, never as an earlier call saw it. */
struct shk_source_shared {
	bool budget, breaker;        /* which of them the policy shares */
	char budget_scope[SHK_SOURCE_SCOPE_MAX];  /* "org/acme"; "" when not shared */
	char breaker_scope[SHK_SOURCE_SCOPE_MAX];
	/* 0, or a negative errno (why says how): Redis could not say, and
	 * nothing below is valid; the session's next call is denied
	 * shared_state_unavailable. */
	int err;
	char why[SHK_SOURCE_WHY_MAX];
	double limit_usd, spent_usd, reserved_usd;
	double remaining_usd;        /* what decide() is shown: limit - spent - reserved */
	uint64_t ops;                /* the scope's operations so far */
	bool open;                   /* the breaker as the subscriber knows it */
	int64_t at_ms;
	char by[SHK_SOURCE_TEXT_MAX], reason[SHK_SOURCE_TEXT_MAX];
	bool trip_pending;           /* a trip of this session that Redis has not taken yet */
};

struct shk_source_judge {
	void *ctx;
	/* Judge one call: 0 with *ret filled (DENY included), or a negative
	 * errno when it could not be judged; the source refuses then. */
	int (*judge)(void *ctx, const struct shk_source_call *call, struct shk_source_answer *ret);
	/* A post-execution report (SP/1.0 §4.4) for an allowed call: its actual
	 * cost moves the budget; report (may be NULL) is logged with it, e.g.
	 * the model's usage object. */
	int (*settle)(void *ctx, uint64_t nonce, double actual_cost_usd, const shk_val *report);
	/* The session's state as decide() sees it now (SDK "get state"). */
	int (*info)(void *ctx, shk_session_info *ret);
	/* The shared scope now (SDK "get state"): 0 with *ret filled (ret->err
	 * when Redis could not answer), -ENOENT when the policy shares nothing.
	 * One round trip to Redis, bounded by the policy's timeout_ms. May be
	 * NULL (nothing is shared). */
	int (*shared)(void *ctx, struct shk_source_shared *ret);
	/* Input the source answered with an error before it became a tool
	 * call (never judged): logged as a `refusal` entry (docs/audit.md).
	 * origin as in shk_source_call; what a short code
	 * ("malformed_request", "unknown_endpoint", "upstream_failed", ...);
	 * detail an object (status, message, ...) or NULL. 0 or -errno; the
	 * answer to the agent is a refusal either way. May be NULL (nothing
	 * is logged). */
	int (*refuse)(void *ctx, const char *origin, const char *what, const shk_val *detail);
};

/* The longest refusal message logged, its NUL included. */
#define SHK_SOURCE_REFUSAL_MAX 768

/* What a source calls for refuse: logs {"status": status (when >= 0),
 * "message": msg} as a refusal of origin with code what (nothing without
 * j->refuse). msg may quote the agent's bytes (a path, a model name), which
 * may be anything: the log holds printable ASCII of them, every other byte
 * as '?', cut at SHK_SOURCE_REFUSAL_MAX - 1 bytes. 0, -ENOMEM, or what
 * refuse returned. source_refuse.c, which uses libshackle alone: the
 * gateway module and the SDK socket link it without the judge. */
int shk_source_refuse(const struct shk_source_judge *j, const char *origin, const char *what,
                      int status, const char *msg);

#endif
