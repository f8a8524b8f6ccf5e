/* SPDX-License-Identifier: MIT */
/*
 * judge/kinds.h — how the calls of each kind of source are presented to
 * the judge. A kind of observation (judge/obs.h) registers one row in
 * kinds.c: the tool call it makes (tool name, params, the policy's static
 * action), and how a call of it that waits for a person is shown and
 * answered. pipeline.c and hitl.c only go through this table: an
 * observation of a kind without a row is denied.
 */
#ifndef SHACKLE_JUDGE_KINDS_H
#define SHACKLE_JUDGE_KINDS_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/policy.h>

#include "judge/obs.h"

struct shk_pipeline;

struct shk_call_kind {
	const char *name;            /* "exec", "net", "source" */
	/* The tool call of obs: its params (built in doc) and, in *m, the
	 * tool name, the policy's static action, rule and estimated cost.
	 * 0, or a negative errno (the call is denied). */
	int (*call)(struct shk_pipeline *p, const struct shk_obs *obs, shk_doc *doc,
	            shk_val **ret_params, shk_policy_match *m);
	/* The nonce the source brought (SP/1.0 §4.3), 0: the judge issues
	 * one. NULL: always the judge's. */
	uint64_t (*nonce)(const struct shk_obs *obs);
	/* More inputs of the decision entry (who asked), added to in. NULL: none. */
	int (*inputs)(const struct shk_obs *obs, shk_doc *doc, shk_val *in);
	/* Whether a held call can be sent elsewhere by the operator (modify:
	 * a connect the supervisor performs itself). NULL: never. */
	bool (*modifiable)(const struct shk_obs *obs);
	/* How a held call of this kind is answered and whether its caller
	 * still waits; o: decide()'s last answer to it, NULL when there is
	 * none (cancelled, a failure). NULL: the operator channel's kernel
	 * hooks (struct shk_hitl_kernel) answer it. */
	int (*release)(uint64_t notif_id, bool allow, const shk_outcome *o);
	bool (*waiting)(uint64_t notif_id);
	/* Whether the source read an error signal in the last result of the
	 * same call (judge/source.h result_error_signal). NULL: never. */
	bool (*result_signal)(const struct shk_obs *obs);
};

/* The row of a kind, or NULL for a kind nobody registered. */
const struct shk_call_kind *shk_call_kind_of(shk_obs_kind kind);

#endif
