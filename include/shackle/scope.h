/* SPDX-License-Identifier: MIT */
/*
 * shackle/scope.h — budgets and circuit breakers shared on Redis (SP/1.0
 * Model C, `budget_scope`). docs/shared-state.md describes the design.
 *
 * A scope is what the policy's "shared" section names: the sessions of one
 * session id, of one agent, or of one organisation. Every shackle-run and
 * attach on every host that opens the same scope shares
 *   - one budget: a call reserves its estimated cost atomically before it is
 *     released (refused when spent + reserved + estimate > limit) and settles
 *     its actual cost after, or releases the reservation when it was denied;
 *   - one breaker: a trip in any session opens it for the whole scope and is
 *     published, so that every session's subscriber sees it within a bound
 *     (docs/shared-state.md gives the figure measured); an operator's reset
 *     closes it the same way.
 *
 * Fail closed: Redis unreachable, slower than the policy's timeout_ms, or
 * answering something that is not what shackle's scripts return makes the
 * call fail with a negative errno and a reason (shk_scope_read.why); the
 * caller denies. Connections are re-made automatically; each loss and each
 * recovery is told to the log callback (this library prints nothing).
 *
 * Everything a decision read from Redis is returned in a shk_scope_read, for
 * the audit entry: a replay of one host's log re-derives its verdicts from
 * that record alone, without Redis.
 *
 * Threads: every function may be called from any thread; calls on one
 * shk_scope are serialised on its command connection. The subscriber runs on
 * a thread of its own; the callbacks are called from it (and log also from
 * the calling thread) and must not call back into the same shk_scope.
 */
#ifndef SHACKLE_SCOPE_H
#define SHACKLE_SCOPE_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/json.h>
#include <shackle/policy.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shk_scope shk_scope;

#define SHK_SCOPE_KEY_MAX 48    /* "shackle:{" 32 hex digits "}" */
#define SHK_SCOPE_ID_MAX 160    /* "org/<name>/agent/<name>", "session/<id>" */
#define SHK_SCOPE_WHY_MAX 200
#define SHK_SCOPE_TEXT_MAX 96   /* a breaker's reason and who changed it */
#define SHK_SCOPE_SESSION_MAX 64
#define SHK_SCOPE_SWEPT_MAX 4     /* reservations one call's sweep charges at most */

/* Amounts are integer micro-USD in Redis: exact sums, no drift between hosts.
 * The estimate of a call becomes the smallest u with cost <= u / 1e6 as
 * doubles compare, so a reservation is refused exactly when decide(), shown
 * remaining = (limit - spent - reserved) / 1e6, finds cost > remaining. */
#define SHK_SCOPE_UUSD_MAX 9007199254740992LL /* 2^53: exact in Redis' Lua */
/* 0, or -ERANGE (negative, not finite, above SHK_SCOPE_UUSD_MAX). */
int shk_scope_usd_to_uusd(double usd, int64_t *ret_uusd);
double shk_scope_uusd_to_usd(int64_t uusd);

typedef struct shk_scope_breaker {
	bool shared;          /* false: the breaker is not in the scope; the rest is 0 */
	bool open;
	uint64_t epoch;       /* grows by one with every trip and reset of the scope */
	int64_t at_ms;        /* Redis' clock at the last change, ms since 1970 */
	char by[SHK_SCOPE_TEXT_MAX];     /* session that tripped it, operator that reset it */
	char reason[SHK_SCOPE_TEXT_MAX]; /* the trip's reason; "" after a reset */
} shk_scope_breaker;

/*
 * What one call read from Redis. err != 0: the call failed closed (why says
 * how); the caller denies and records this too.
 */
typedef struct shk_scope_read {
	int err;                          /* 0 or a negative errno */
	char why[SHK_SCOPE_WHY_MAX];
	bool budget_shared;               /* false: the budget stays in the session */
	char budget_id[SHK_SCOPE_ID_MAX]; /* "org/acme": the scope as named */
	char budget_key[SHK_SCOPE_KEY_MAX]; /* "shackle:{...}": its keys' prefix */
	bool granted;                     /* the reservation was made (or no budget is shared) */
	bool settled;                     /* settle/release: the reservation was found */
	int64_t limit_uusd, estimate_uusd, actual_uusd;
	/* Atomically with the reservation, before it (reserve), or after the
	 * settlement (settle, release): */
	int64_t spent_uusd, reserved_uusd;
	uint32_t expired;                 /* reservations nobody settled, charged at this call */
	/* The scope's count of operations that moved spent or reserved, after
	 * this call: one more when it moved them, else the count it read. */
	uint64_t ops;
	struct shk_scope_swept {
		char field[SHK_SCOPE_SESSION_MAX + 24];   /* "<session id>:<nonce>" */
		int64_t uusd;                             /* charged at its estimate */
	} swept[SHK_SCOPE_SWEPT_MAX];     /* the first `expired` are valid */
	char breaker_id[SHK_SCOPE_ID_MAX];
	char breaker_key[SHK_SCOPE_KEY_MAX];
	shk_scope_breaker breaker;        /* as the call saw it */
} shk_scope_read;

/* Called with one line, no newline: connection lost, reconnected, a reply or
 * message refused. */
typedef void (*shk_scope_log_fn)(void *ctx, const char *line);
/* Called from the subscriber thread whenever the scope's breaker changes. */
typedef void (*shk_scope_breaker_fn)(void *ctx, const shk_scope_breaker *breaker);

typedef struct shk_scope_options {
	const shk_shared_config *config;  /* shk_policy_shared(); copied */
	const char *session_id;           /* [A-Za-z0-9._:-]{1,64}: reservations are per session */
	shk_scope_log_fn log;             /* may be NULL */
	shk_scope_breaker_fn on_breaker;  /* may be NULL */
	void *ctx;
} shk_scope_options;

/*
 * Connect (within timeout_ms), load the scripts and, when the breaker is
 * shared, start the subscriber and read the breaker once. -EINVAL (bad
 * options), -ENOMEM, or the failure of the first connection (-ECONNREFUSED,
 * -ENOENT, -ETIMEDOUT, -EPROTO, ...): a session must not start with a scope
 * it cannot reach. *ret_why (may be NULL, SHK_SCOPE_WHY_MAX bytes) says why.
 */
int shk_scope_open(const shk_scope_options *options, shk_scope **ret_scope, char *ret_why);
void shk_scope_close(shk_scope *scope);

/*
 * Before decide(): reserve estimate_usd for the session's call `nonce`
 * against limit_usd, and take the breaker as the subscriber knows it. One
 * round trip (none when the budget is not shared). Returns 0 with
 * ret->granted saying whether it fits, or a negative errno (ret->err, why):
 * -ENOTCONN (no connection, or the breaker's state is not known), -ETIMEDOUT,
 * -ECONNRESET, -EPROTO (a reply that is not the script's), -EIO (Redis
 * answered an error), -ESTALE (the scope's spend went down: Redis lost its
 * data), -EEXIST (this nonce already holds a reservation), -ERANGE.
 */
int shk_scope_reserve(shk_scope *scope, uint64_t nonce, double estimate_usd, double limit_usd,
		      shk_scope_read *ret);
/* After the call ran: its reservation becomes actual_usd of spend. 0 with
 * ret->settled false when no reservation was found (already settled, or
 * charged at its estimate after lease_s); errors as reserve. */
int shk_scope_settle(shk_scope *scope, uint64_t nonce, double actual_usd, shk_scope_read *ret);
/* The call was not released: drop its reservation, nothing is spent. */
int shk_scope_release(shk_scope *scope, uint64_t nonce, shk_scope_read *ret);

/*
 * The scope as it is now, changing nothing (what the SDK's get_session_state
 * shows): spent, reserved and ops of the budget read in one HMGET (one key:
 * atomic), limit_usd as reserve takes it, and the breaker as the subscriber
 * knows it; no reservation is made, nothing is swept. Errors as reserve
 * (-ESTALE too: a spend lower than this handle saw before); on an error no
 * amount in ret is valid.
 */
int shk_scope_peek(shk_scope *scope, double limit_usd, shk_scope_read *ret);

/* Open the scope's breaker (the first trip wins, as in a session) and publish
 * it; by is this session's id. reason: printable, no newline. */
int shk_scope_trip(shk_scope *scope, const char *reason, shk_scope_breaker *ret);
/* An operator closes the scope's breaker, for every session of the scope. */
int shk_scope_reset(shk_scope *scope, const char *operator_name, shk_scope_breaker *ret);
/* The id of the scope that shares the breaker ("org/acme"), "" if none. */
const char *shk_scope_breaker_id(const shk_scope *scope);
/* The policy's Redis server as a user reads it: "unix:/path",
 * "redis://host:port" or "redis://[v6]:port". Pure. */
void shk_scope_server_name(const shk_shared_config *config, char *out, size_t len);
/* The breaker as the subscriber last knew it: 0, or -ENOTCONN while its
 * state is not known (subscriber not connected). */
int shk_scope_breaker_get(shk_scope *scope, shk_scope_breaker *ret);

/*
 * The record for the audit entry: an object with the scope ids and keys, the
 * amounts read (as integers of micro-USD, exact) and the breaker, or the
 * error. 0, -EINVAL, -ENOMEM.
 */
int shk_scope_read_to_val(const shk_scope_read *read, shk_doc *doc, shk_val **ret_val);
/* The record of an entry that reads nothing itself (session_end): the
 * budget's scope and key as "budget", and failed's error (failed->err < 0)
 * as "error" unless failed is NULL. 0, -EINVAL, -ENOENT (the budget is not
 * shared), -ENOMEM. */
int shk_scope_names_to_val(const shk_scope *scope, const shk_scope_read *failed, shk_doc *doc,
			   shk_val **ret_val);
/* The answer to a settle or release made at once after a decision (did:
 * "settle", "release"), for the decision's record: an object with settled,
 * ops, actual, spent and reserved after it, or the error. */
int shk_scope_then_to_val(const shk_scope_read *read, const char *did, shk_doc *doc, shk_val **ret_val);

/* ---- shackle doctor ----------------------------------------------------- */

typedef struct shk_scope_status_part {
	shk_scope_level level;
	char id[SHK_SCOPE_ID_MAX];   /* "" for a session scope without a session id */
	char key[SHK_SCOPE_KEY_MAX];
	int64_t spent_uusd, reserved_uusd;
	uint64_t in_flight;          /* open reservations */
	shk_scope_breaker breaker;
} shk_scope_status_part;

typedef struct shk_scope_status {
	int err;                     /* 0: reachable and answering */
	char why[SHK_SCOPE_WHY_MAX];
	char server[SHK_SCOPE_HOST_MAX + 24];
	char version[32];            /* redis_version */
	int64_t rtt_us;              /* one PING */
	bool aof;                    /* appendonly on: spend survives a restart */
	shk_scope_status_part budget, breaker;
} shk_scope_status;

/* Connect once and read what shackle keeps there for the config's scopes.
 * session_id may be NULL. Returns 0 (ret->err says whether it worked). */
int shk_scope_doctor(const shk_shared_config *config, const char *session_id,
		     shk_scope_status *ret);

#ifdef __cplusplus
}
#endif
#endif
