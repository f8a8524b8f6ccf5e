/* SPDX-License-Identifier: MIT */
/*
 * shackle/decide.h — the SHACKLE SP/1.0 decision function (§3.2, SP/1.0.1).
 *
 *   shk_decide(config, state, call) -> (verdict, reason)
 *
 * Pure and total: no I/O, no clock, no randomness, no heap allocation, and a
 * verdict for every input, NULL pointers included (a NULL config/state is read
 * as an all-absent one; a NULL call is denied as malformed input; absent and
 * null params are {}, as in the reference). The ten rules
 * are evaluated in the order of the specification; docs/decide.md describes
 * each, and the type semantics that the Python reference gets from its data
 * model (7 == 7.0, True == 1, absent vs null) are pinned by tests.
 *
 * The inputs are plain value structs so that the runtime can build a view of
 * its session state on the stack for every call. Optional scalars carry their
 * own presence flag (shk_num.present); loosely typed parts of the reference
 * contract (params, nonce, seen_nonces, pending_transition, repeat_counts) are
 * JSON values (shackle/json.h). Two fast paths spare the runtime from building
 * JSON: a u64 nonce with a shk_nonceset of seen nonces, and the repeat count of
 * the call's own tool given as a number.
 *
 * Zero-initialised structs are valid and mean "everything absent". A zeroed
 * shk_decision is a DENY (SHK_DENY == 0), so forgetting to call decide()
 * never allows anything.
 */
#ifndef SHACKLE_DECIDE_H
#define SHACKLE_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/canon.h>
#include <shackle/json.h>
#include <shackle/nonceset.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum shk_verdict {
	SHK_DENY = 0,
	SHK_ALLOW = 1,
	SHK_HITL = 2,
} shk_verdict;

/*
 * Reasons. The first block is the SP/1.0 §3.5 vocabulary (normative, byte for
 * byte); the second block belongs to shackle's own layers (non-normative
 * §3.7 layers, static policy, session capacity) and is never returned by
 * shk_decide().
 */
typedef enum shk_reason {
	SHK_R_MALFORMED_INPUT = 0,     /* policy_violation:malformed_input */
	SHK_R_CIRCUIT_OPEN,            /* circuit_open */
	SHK_R_DUPLICATE_NONCE,         /* policy_violation:duplicate_nonce */
	SHK_R_DUPLICATE_RESUME,        /* policy_violation:duplicate_resume_no_effect */
	SHK_R_HT_APPROVE,              /* hitl_transition:approve */
	SHK_R_HT_MODIFY_SUCCESSOR,     /* hitl_transition:modify_successor */
	SHK_R_HT_REJECT,               /* hitl_transition:reject */
	SHK_R_HT_SUPERSEDED_ORIGINAL,  /* hitl_transition:superseded_original */
	SHK_R_HT_TERMINAL_NO_EFFECT,   /* hitl_transition:terminal_no_effect */
	SHK_R_HT_NONCE_MISMATCH,       /* hitl_transition:nonce_mismatch */
	SHK_R_HT_DIGEST_MISMATCH,      /* hitl_transition:digest_mismatch */
	SHK_R_HT_UNBOUND_AUTHORIZATION,/* hitl_transition:unbound_authorization */
	SHK_R_HT_UNKNOWN_DECISION,     /* hitl_transition:unknown_decision */
	SHK_R_HT_DEFER_ESCALATE,       /* hitl_transition:defer_escalate */
	SHK_R_BUDGET_EXHAUSTED,        /* budget_exhausted */
	SHK_R_BUDGET_OVERRUN,          /* budget_overrun */
	SHK_R_MAX_REPEAT_EXCEEDED,     /* max_repeat_exceeded */
	SHK_R_HITL_ALL_CALLS,          /* hitl_all_calls */
	SHK_R_BUDGET_THRESHOLD,        /* budget_threshold */
	SHK_R_OPAQUE_CONTEXT,          /* fail_closed:opaque_context */
	SHK_R_WITHIN_THRESHOLDS,       /* within_thresholds */
	/* ---- shackle's own layers (not SP/1.0) ---- */
	SHK_R_WINDOW_EXCEEDED,         /* window_exceeded (§3.7 time window) */
	SHK_R_GLOBAL_LIMIT,            /* global_limit (§3.7 session-wide cap) */
	SHK_R_POLICY_DENIED,           /* policy_denied (static policy rule) */
	SHK_R_POLICY_HITL,             /* policy_hitl (static policy rule) */
	SHK_R_SESSION_CAPACITY,        /* session_capacity_exceeded (a fixed table is full) */
	SHK_R_INVALID_COST,            /* invalid_cost (estimate not finite or negative) */
	SHK_R_SHARED_UNAVAILABLE,      /* shared_state_unavailable (Redis of a shared scope) */
	SHK_R__COUNT
} shk_reason;

/* Number of reasons that belong to SP/1.0 (the first block above). */
#define SHK_R_SP10_COUNT (SHK_R_WITHIN_THRESHOLDS + 1)

/* "ALLOW" / "DENY" / "HITL"; "?" for values outside the enum. */
const char *shk_verdict_str(shk_verdict v);
/* Reason string, byte for byte as in §3.5; "?" outside the enum. */
const char *shk_reason_str(shk_reason r);
/* Parse back (exact, case-sensitive). Return 0 or -EINVAL. */
int shk_verdict_parse(const char *s, shk_verdict *ret_v);
int shk_reason_parse(const char *s, shk_reason *ret_r);

/*
 * A JSON number as the reference sees it: Python int (here int64) or float.
 * present == false means absent or JSON null (decide() never needs to tell
 * those apart for numbers, see docs/decide.md). Comparisons between the two
 * kinds are exact, as Python's are.
 */
typedef struct shk_num {
	bool present;
	bool is_real;
	int64_t i; /* when !is_real */
	double d;  /* when is_real; may be non-finite only through the C API */
} shk_num;

static inline shk_num shk_num_int(int64_t i)
{
	shk_num n = { .present = true, .is_real = false, .i = i, .d = 0 };
	return n;
}

static inline shk_num shk_num_real(double d)
{
	shk_num n = { .present = true, .is_real = true, .i = 0, .d = d };
	return n;
}

/* Python float(n) of a present number; 0 when absent. */
double shk_num_to_double(shk_num n);
/* Exact three-way comparison a <=> b of two present numbers (Python
 * semantics). Returns -1, 0, 1, or 2 when unordered (NaN involved). */
int shk_num_cmp(shk_num a, shk_num b);

typedef enum shk_config_hitl {
	SHK_CFG_HITL_OTHER = 0,   /* absent, null or any other value ("never", ...) */
	SHK_CFG_HITL_ALWAYS,      /* exactly the string "always" */
	SHK_CFG_HITL_ON_THRESHOLD,/* exactly the string "on_threshold" */
} shk_config_hitl;

/* config: the guard policy. Known fields of the vector format:
 * budget_usd, max_repeat_calls, hitl_mode, hitl_budget_threshold. */
typedef struct shk_config {
	shk_num budget_usd;            /* absent/null -> 0: budget rules off */
	shk_num max_repeat_calls;      /* present = set; 0 is a limit (deny from the first repeat view) */
	shk_config_hitl hitl_mode;
	shk_num hitl_budget_threshold; /* absent/null: Rule 8 off */
} shk_config;

/* state: the session as decide() sees it. Known fields of the vector format:
 * circuit_tripped, budget_initial_usd, budget_remaining_usd, seen_nonces,
 * pending_transition, repeat_counts, last_tool_name (others, such as
 * total_calls or circuit_trip_reason, are carried but do not affect decide). */
typedef struct shk_state {
	bool circuit_tripped;            /* JSON true only */
	shk_num budget_initial_usd;      /* Rule 8 needs it present and != 0 */
	shk_num budget_remaining_usd;    /* absent/null: Rules 5/5b off; Rule 8 reads 0 */
	const shk_val *seen_nonces;      /* array, or NULL; non-arrays are ignored */
	const shk_nonceset *nonce_set;   /* fast path: also seen, or NULL */
	const shk_val *pending_transition; /* object, or NULL; only a non-empty object counts */
	const shk_val *repeat_counts;    /* object tool -> count, or NULL */
	/* Fast path: when has_repeat_count, repeat_counts is ignored and decide()
	 * acts as if it were {call.tool_name: repeat_count}. */
	bool has_repeat_count;
	shk_num repeat_count;
	const char *last_tool_name;      /* NULL: absent/null; "" counts as absent */
	size_t last_tool_name_len;
} shk_state;

/* call: the proposal. Known fields of the vector format: tool_name, params,
 * nonce, estimated_cost_usd. */
typedef struct shk_call {
	const char *tool_name;           /* NULL: absent/null */
	size_t tool_name_len;
	const shk_val *params;           /* NULL (absent) or JSON null: {} */
	shk_num estimated_cost_usd;      /* absent/null -> 0 */
	const shk_val *nonce;            /* NULL or JSON null: no nonce */
	/* Fast path, used only when nonce == NULL: the runtime's u64 nonce. */
	bool has_nonce_u64;
	uint64_t nonce_u64;
	/*
	 * Filled by shk_call_set_params(), which canonicalises outside decide().
	 * decide() trusts them only while checked_params == params; otherwise it
	 * checks (and, for Rule 4, hashes) params itself — still without
	 * allocating. Never set them by hand.
	 */
	const shk_val *checked_params;
	shk_canon_status params_status;
	bool params_digest_ok;
	char params_digest[SHK_SHA256_HEX_LEN + 1];
} shk_call;

/* Set call->params and precompute its Rule 1 status and canonical digest
 * (absent and null params: those of {}). Returns 0, or -EINVAL when params
 * are not canonicalisable (the call is still set up: decide() will answer
 * malformed_input). */
int shk_call_set_params(shk_call *call, const shk_val *params);

typedef struct shk_decision {
	shk_verdict verdict;
	shk_reason reason;
} shk_decision;

shk_decision shk_decide(const shk_config *config, const shk_state *state, const shk_call *call);

/*
 * Python's s.strip().lower() == word, for an ASCII lower-case word: strips
 * every character str.isspace() accepts (ASCII and Unicode whitespace) and
 * lowers A-Z and the KELVIN SIGN (the only non-ASCII character whose lower()
 * is ASCII). Exposed for the loaders and tests.
 */
bool shk_norm_eq(const char *s, size_t len, const char *word);

#ifdef __cplusplus
}
#endif
#endif
