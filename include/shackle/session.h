/* SPDX-License-Identifier: MIT */
/*
 * shackle/session.h — runtime session state and its transitions (SP/1.0 §5.3).
 *
 * A shk_session holds what decide() needs to know about the past of a
 * supervised agent: budget, counters, the seen-nonce set, repeat counts, the
 * time window, the circuit breaker and the calls held for a human. It is used
 * in two steps per tool call:
 *
 *   shk_session_evaluate()  pure: builds decide()'s view of the session on the
 *                           stack, runs decide(), the static policy action and
 *                           the non-normative layers, and says what happens;
 *   shk_session_commit()    applies the transition for that outcome.
 *
 * Both are deterministic functions of (configuration, the sequence of calls
 * with their nonces, costs and times, post-execution reports and operator
 * actions): `shackle audit replay` runs the same code over a log and must get
 * the same verdicts. Neither reads a clock (time is an argument), performs
 * I/O or allocates: every table has a fixed capacity chosen at creation, and a
 * full table makes evaluate answer DENY (session_capacity_exceeded) instead of
 * forgetting anything.
 *
 * docs/decide.md describes the semantics (order of layers, repeat counting at
 * syscall granularity, cost charging, breaker policy).
 */
#ifndef SHACKLE_SESSION_H
#define SHACKLE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/canon.h>
#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/policy.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shk_session shk_session;

typedef struct shk_session_config {
	shk_guard_config guard;   /* from the policy (shackle/policy.h) */
	size_t max_nonce_ranges;  /* 0: 4096 intervals of seen nonces */
	size_t max_repeat_keys;   /* 0: 4096 distinct (tool, params) pairs */
	size_t max_pending;       /* 0: 64 calls held for a human */
	size_t max_inflight;      /* 0: 256 most recent allowed calls that a post-exec
	                           * report can still correct (older ones keep their
	                           * estimated charge: kernel calls never report) */
} shk_session_config;

/* One tool call as the runtime sees it. Fill the first four fields, then call
 * shk_toolcall_prepare() (outside the decision path: it canonicalises and
 * hashes params). A call that was not prepared for its current params is
 * prepared on the fly by evaluate and commit (correct, only slower). */
typedef struct shk_toolcall {
	const char *tool_name;        /* NUL-terminated */
	const shk_val *params;        /* a JSON object; absent or null is denied (docs/decide.md) */
	uint64_t nonce;               /* issued by the supervisor, never reused */
	double estimated_cost_usd;    /* finite and >= 0, else the call is denied */
	/* Filled by shk_toolcall_prepare(): */
	const shk_val *checked_params;
	shk_canon_status params_status;
	bool params_digest_ok;
	char params_digest[SHK_SHA256_HEX_LEN + 1];
	uint8_t repeat_key[SHK_SHA256_LEN]; /* sha256(tool name, NUL, params digest) */
	/* Set by shk_toolcall_prepare_logged() and shk_toolcall_give_signal()
	 * only: error_signal stands for the scan of the params (cleared by
	 * shk_toolcall_prepare). */
	bool signal_given;
	bool error_signal;
	/* Set by the runtime before evaluate: the call is out of the repeat
	 * guard (made by a process of an earlier tool call, or under a rule
	 * with "repeat_guard": false; docs/decide.md, "Tool calls at syscall
	 * level"). decide() is shown no max_repeat_calls and commit does not
	 * count it under its repeat key; every other rule and layer applies. */
	bool repeat_exempt;
} shk_toolcall;

/* Returns 0, or -EINVAL when params are not canonicalisable (the call is then
 * denied as policy_violation:malformed_input by evaluate). */
int shk_toolcall_prepare(shk_toolcall *tc);

/*
 * For replaying a call whose logged params were redacted: what evaluate
 * derives from the real params is taken from the log instead — Rule 1's
 * status, their digest (64 hex digits; it keys the repeat guard and HITL
 * transitions) and whether they carry an error signal. params (the redacted
 * form) are still what decide() looks at for Rule 9. 0, or -EINVAL (a
 * digest that is not 64 hex digits).
 */
int shk_toolcall_prepare_logged(shk_toolcall *tc, shk_canon_status status, const char *digest_hex,
                                bool error_signal);

/*
 * Replace the digest of a call prepared for its current params by another
 * 32-byte digest, and the repeat key with it: shackle-run gives calls whose
 * logged params are redacted a keyed digest (HMAC-SHA256 under a key that
 * never leaves the process, docs/audit.md), so that the log's params_hash
 * cannot be checked against guesses of a short secret. Every use of the
 * digest (repeat guard, pending and HITL transitions, the log) then sees
 * the keyed one. 0, or -EINVAL (NULL, or a call not prepared).
 */
int shk_toolcall_set_digest(shk_toolcall *tc, const uint8_t digest[SHK_SHA256_LEN]);

/*
 * An error signal (§3.9) the params do not show: a source read it in the
 * result of the same call made before (a model gateway, in the tool result
 * the agent sent back). Under error_amplification evaluate lowers the
 * repeat limit as for a signal in the params. Call after preparing.
 */
static inline void shk_toolcall_give_signal(shk_toolcall *tc)
{
	tc->signal_given = true;
	tc->error_signal = true;
}

/* Which part of shackle produced the verdict. */
typedef enum shk_layer {
	SHK_LAYER_DECIDE = 0,  /* SP/1.0 decide() */
	SHK_LAYER_POLICY,      /* the static policy action of the matching rule */
	SHK_LAYER_GLOBAL,      /* session-wide call cap (§3.7) */
	SHK_LAYER_WINDOW,      /* time window (§3.7) */
	SHK_LAYER_SESSION,     /* the session itself: capacity, invalid cost */
	SHK_LAYER_SCOPE,       /* the shared scope (Redis): unavailable, inconsistent */
} shk_layer;

/* "decide", "policy", "global", "window", "session", "scope" */
const char *shk_layer_str(shk_layer l);
int shk_layer_parse(const char *s, shk_layer *ret_layer);

/*
 * What evaluate decided, with the inputs decide() was shown (for the audit
 * log and for replay).
 */
typedef struct shk_outcome {
	shk_verdict verdict;
	shk_reason reason;
	shk_layer layer;
	shk_decision decided;        /* decide()'s own answer */
	bool trips;                  /* commit will trip the breaker */
	/* The state view presented to decide(): */
	bool circuit_tripped;
	double budget_initial_usd;
	double budget_remaining_usd; /* "budget before" */
	double budget_after_usd;     /* remaining after commit charges the estimate */
	uint64_t repeat_count;       /* repeat_counts[tool] presented */
	uint32_t max_repeat_calls;   /* presented limit (after amplification); 0 = not set */
	bool error_signal;           /* amplification applied */
	uint64_t total_calls;        /* before this call */
	uint32_t window_count;       /* calls in the current window before this call */
} shk_outcome;

int shk_session_new(const shk_session_config *config, shk_session **ret_session);
void shk_session_free(shk_session *session);

/*
 * Judge one call. `action` is the static policy action of the rule that
 * matched (SHK_ACTION_ALLOW when the policy has nothing to say). Order:
 *   1. decide() on the session view: DENY -> DENY (layer decide; trips the
 *      breaker when guard.trip_on_deny, except hitl_transition:reject). A
 *      tripped breaker therefore denies every canonicalisable call with
 *      circuit_open, static allow included.
 *   2. static deny -> DENY policy_denied (layer policy; does not trip).
 *   3. decide() HITL -> HITL with its reason; static hitl -> HITL policy_hitl
 *      unless decide() released the call as an approved HITL transition.
 *   4. decide() ALLOW: global cap -> DENY global_limit, time window -> DENY
 *      window_exceeded (both runaway signals: they trip like decide's DENY).
 *   5. for a call still allowed: an estimated cost that is not finite or
 *      negative -> DENY invalid_cost; a full nonce or repeat table (or, for
 *      a HITL, a full pending table) ->
 *      DENY session_capacity_exceeded (layer session; neither trips).
 * Pure: the session is not modified. Returns 0 or -EINVAL (NULL arguments; an
 * all-DENY outcome is filled in whenever ret_outcome is not NULL).
 */
int shk_session_evaluate(const shk_session *session, const shk_toolcall *tc, shk_action action,
			 int64_t now_ns, shk_outcome *ret_outcome);

/*
 * What a shared scope (docs/shared-state.md) read for one call, as numbers:
 * the judge passes what Redis answered, replay what the log recorded. Core
 * does no I/O; it only shows these to decide() instead of the session's own.
 */
typedef struct shk_session_shared {
	/* The scope could not be read (Redis unreachable, slow, garbage): the
	 * call is DENY shared_state_unavailable (layer scope), decide()'s answer
	 * notwithstanding; it never trips, the agent did nothing wrong. */
	bool unavailable;
	/* Budget shared: decide() is shown budget_initial = limit / 1e6 and
	 * budget_remaining = (limit - spent - reserved) / 1e6 (integers of
	 * micro-USD, as read atomically with the reservation). granted: the
	 * reservation was made; an outcome ALLOW without it is DENY
	 * shared_state_unavailable (inconsistent: fail closed). */
	bool budget;
	bool granted;
	int64_t limit_uusd, spent_uusd, reserved_uusd;
	/* Breaker shared: decide() sees the session's breaker OR this one. Its
	 * circuit_open, with the session's own closed, does not trip the
	 * session's: an operator's reset of the scope reopens every session. */
	bool breaker;
	bool breaker_open;
} shk_session_shared;

/* shk_session_evaluate with the shared scope's view (shared may be NULL:
 * exactly shk_session_evaluate). Pure. */
int shk_session_evaluate_shared(const shk_session *session, const shk_toolcall *tc, shk_action action,
				int64_t now_ns, const shk_session_shared *shared, shk_outcome *ret_outcome);

/*
 * Apply the transition for an outcome of evaluate (same tc, same now_ns):
 *   ALLOW: record the nonce, count the call, its repeat key and the window,
 *          and charge the estimated cost (kernel-level calls have no
 *          post-execution report; shk_session_post_exec corrects it);
 *   DENY:  trip the breaker when outcome->trips (first trip wins: reason and
 *          time of the first trip are kept); counters are not touched (§3.4);
 *   HITL:  hold the call as pending (nonce, params digest).
 * Returns 0, -EINVAL or -ENOSPC (a table filled up since evaluate).
 */
int shk_session_commit(shk_session *session, const shk_toolcall *tc, const shk_outcome *outcome,
		       int64_t now_ns);

/* Post-execution report for an allowed call (by nonce): replaces its
 * estimated charge by the actual cost (refund or extra charge). Returns 0,
 * -ENOENT (unknown or already reported) or -EINVAL (cost not finite/negative). */
int shk_session_post_exec(shk_session *session, uint64_t nonce, double actual_cost_usd);

/* Operator action: close the breaker. Counters and budget are kept. */
void shk_session_reset(shk_session *session);

/* ---- read-only views ------------------------------------------------------ */

typedef enum shk_pending_status {
	SHK_PENDING_WAITING = 0, /* held, no human decision yet */
	SHK_PENDING_APPROVED,    /* approved, not yet executed */
	SHK_PENDING_REJECTED,
	SHK_PENDING_EXPIRED,     /* nobody decided in time: treated as rejected */
	SHK_PENDING_CONSUMED,    /* approved (or its successor) and executed once */
	SHK_PENDING_MODIFIED,    /* replaced by an operator-given successor, not yet executed */
	SHK_PENDING_DEFERRED,    /* the operator deferred: stays held */
	SHK_PENDING_ESCALATED,   /* the operator escalated: stays held */
	SHK_PENDING_CANCELLED,   /* the held thread got a signal or its process died */
} shk_pending_status;

typedef struct shk_pending {
	uint64_t nonce;
	char params_digest[SHK_SHA256_HEX_LEN + 1];
	shk_reason reason;       /* why it was held */
	int64_t held_at_ns;      /* first hold; a re-hold (defer) keeps it */
	shk_pending_status status;
	/* Set once a human decided: the args digest the decision is bound to
	 * (the held call's, or the one the operator reviewed), and for MODIFIED
	 * the successor the call was replaced by. */
	char bound_digest[SHK_SHA256_HEX_LEN + 1];
	bool has_successor;
	uint64_t successor_nonce;
	char successor_digest[SHK_SHA256_HEX_LEN + 1];
} shk_pending;

typedef struct shk_session_info {
	double budget_initial_usd, budget_remaining_usd, budget_spent_usd;
	uint64_t total_calls;
	bool circuit_tripped;
	shk_reason trip_reason;
	int64_t tripped_at_ns;
	size_t pending;           /* entries in the pending table */
	size_t repeat_keys;       /* distinct (tool, params) pairs seen */
} shk_session_info;

void shk_session_get_info(const shk_session *session, shk_session_info *ret_info);
/* Pending entry for nonce: 0 or -ENOENT. */
int shk_session_pending_get(const shk_session *session, uint64_t nonce, shk_pending *ret_pending);
/*
 * A human decision on a held call (the operator's action; replay applies the
 * logged ones). From then on, when the call with that nonce (or, for MODIFIED,
 * the successor's nonce) is evaluated, decide() sees the §3.6 pending
 * transition
 *   {"decision": "approve"|"reject"|"modify"|"defer"|"escalate",
 *    "original_nonce": nonce, "original_args_digest": digest,
 *    ["successor_nonce": n, "successor_args_digest": h,]
 *    "terminal_status": "pending"|"rejected"|"expired"|"cancelled"|"consumed"}
 * and resolves it by Rule 4:
 *   APPROVED   the exact (nonce, params) is released once
 *              (hitl_transition:approve; a static hitl rule does not hold it
 *              again); other params -> hitl_transition:digest_mismatch (trips);
 *              after the release the entry is CONSUMED and a re-dispatch is
 *              policy_violation:duplicate_resume_no_effect;
 *   REJECTED, EXPIRED, CANCELLED
 *              hitl_transition:reject (alone with superseded_original among
 *              decide()'s denials, it does not trip the breaker);
 *   DEFERRED, ESCALATED
 *              HITL hitl_transition:defer_escalate: the call stays held (a
 *              later decision replaces this one);
 *   MODIFIED   the original is hitl_transition:superseded_original (no trip);
 *              only the successor (successor_nonce, successor_digest, both
 *              required, the nonce unused so far) is released, once, as
 *              hitl_transition:modify_successor; commit marks the entry CONSUMED.
 * args_digest binds the decision to the digest the operator reviewed (NULL:
 * the held call's own); a different one makes the release a digest_mismatch.
 * Returns 0; -ENOENT (no held call with that nonce); -EALREADY when the entry's
 * transition is already terminal (a second resume: nothing changes — see
 * shk_session_evaluate_resume); -EINVAL (WAITING, an unknown status, a digest
 * that is not 64 lower-case hex digits, a bad successor); -ENOMEM. Allocates
 * (in the session's document, a few hundred bytes per decision, kept until the
 * session ends) when called, not on the decision path.
 */
typedef struct shk_pending_decision {
	shk_pending_status status;      /* any but WAITING */
	const char *args_digest;        /* NULL: the held call's params digest */
	uint64_t successor_nonce;       /* MODIFIED only */
	const char *successor_digest;   /* MODIFIED only: hex params digest of the successor */
} shk_pending_decision;

int shk_session_pending_resolve(shk_session *session, uint64_t nonce, const shk_pending_decision *d);
/* shk_session_pending_resolve() with only a status (MODIFIED -> -EINVAL). */
int shk_session_pending_set(shk_session *session, uint64_t nonce, shk_pending_status status);

/*
 * An operator resumes a held call whose transition is already terminal
 * (approve twice, approve after a reject, ...). decide() is shown the stored
 * terminal transition with "resume_attempt": true for the held call tc (its
 * nonce and params) and answers policy_violation:duplicate_resume_no_effect
 * (Rule 3 when the nonce was executed, Rule 4 otherwise; circuit_open first
 * when the breaker is open). The outcome is always DENY, never trips, and
 * commit of it changes nothing. Pure. Returns 0, -ENOENT (no entry for
 * tc->nonce), -EBUSY (its transition is not terminal: use resolve) or -EINVAL.
 */
int shk_session_evaluate_resume(const shk_session *session, const shk_toolcall *tc, int64_t now_ns,
                                shk_outcome *ret_outcome);
/* The transition decide() is shown for the held call with that nonce right
 * now (for the audit entry of a human decision), or NULL when it has none.
 * Owned by the session, valid until it is freed. */
const shk_val *shk_session_pending_transition(const shk_session *session, uint64_t nonce);
/* Allowed calls recorded for (tool, params) of tc. */
uint64_t shk_session_repeat_count(const shk_session *session, const shk_toolcall *tc);

#ifdef __cplusplus
}
#endif
#endif
