/* SPDX-License-Identifier: MIT */
/*
 * shackle/vector.h — SHACKLE conformance vectors (the SP/1.0 fixture format).
 *
 * A vector is an object {name, config, state, call, canonical_hash?,
 * expected_verdict, expected_reason, vector_hash?, ...}. The loaders turn its
 * parts into the value structs of shackle/decide.h; they are not on the
 * decision path. The resulting structs point into the JSON document, which
 * must outlive them.
 *
 * Type rules (docs/decide.md): numbers are JSON integers or reals — a boolean
 * is not a number here; null is the same as absent; unknown fields are
 * accepted and ignored (vectors carry notes). Known fields:
 *   config: budget_usd, max_repeat_calls, hitl_mode, hitl_budget_threshold
 *   state:  circuit_tripped, budget_initial_usd, budget_remaining_usd,
 *           seen_nonces, pending_transition, repeat_counts, last_tool_name
 *   call:   tool_name, params, nonce, estimated_cost_usd
 * Errors name the field ("state.budget_remaining_usd: expected a number").
 */
#ifndef SHACKLE_VECTOR_H
#define SHACKLE_VECTOR_H

#include <stddef.h>
#include <stdint.h>

#include <shackle/decide.h>
#include <shackle/json.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each returns 0 or -EINVAL with a message in err (errlen bytes). A NULL or
 * JSON null v gives an all-absent struct. */
int shk_config_from_val(const shk_val *v, shk_config *ret_config, char *err, size_t errlen);
int shk_state_from_val(const shk_val *v, shk_state *ret_state, char *err, size_t errlen);
/* Also runs shk_call_set_params() on call.params. */
int shk_call_from_val(const shk_val *v, shk_call *ret_call, char *err, size_t errlen);

typedef struct shk_vector {
	const char *name;            /* "" if the vector has none */
	const shk_val *raw;          /* the vector object */
	shk_config config;
	shk_state state;
	shk_call call;
	shk_verdict expected_verdict;
	shk_reason expected_reason;
	const char *expected_verdict_str;
	const char *expected_reason_str;
	const shk_val *canonical_hash; /* NULL when absent */
	const shk_val *vector_hash;    /* NULL when absent */
} shk_vector;

/* Load one vector. expected_verdict and expected_reason are required and must
 * name a verdict and a reason of the vocabulary. */
int shk_vector_load(const shk_val *v, shk_vector *ret_vector, char *err, size_t errlen);

/* sha256 of the canonical form of v without its member `skip_key` (NULL:
 * none), as lower-case hex. Returns 0 or -EINVAL (not canonicalisable). */
int shk_vector_digest_hex(const shk_val *v, const char *skip_key, char ret_hex[SHK_SHA256_HEX_LEN + 1]);

#ifdef __cplusplus
}
#endif
#endif
