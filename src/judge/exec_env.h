/* SPDX-License-Identifier: MIT */
/*
 * The judged environment of an exec (shackle/execenv.h) as tool-call params:
 * which of its variables count for this exec, for the pipeline's
 * exec.loader_env / exec.interp_env decision.
 */
#ifndef SHACKLE_JUDGE_EXEC_ENV_H
#define SHACKLE_JUDGE_EXEC_ENV_H

#include <stdbool.h>

#include <shackle/json.h>
#include <shackle/policy.h>

#include "judge/obs.h"

/* The interpreter families whose variables count for an exec: all of them
 * (the policy's default interp_env_scope "exec"), or under "interpreter"
 * the families of the files of the exec (the program, its "#!"
 * interpreters, the program ld.so runs) and of the rule paths it was
 * matched as (matched_as: an array of strings, may be empty). */
unsigned shk_exec_families(const shk_policy *policy, const struct shk_obs_exec *x,
                           const shk_val *matched_as);

/*
 * Adds "loader_env" (every loader variable) and "interp_env" (the
 * interpreter variables of one of `families`) to params, each only when not
 * empty, and says which were added. Variables of other interpreters are not
 * judged (nor shown). 0 or -ENOMEM.
 */
int shk_exec_env_params(const struct shk_obs_exec *x, unsigned families, shk_doc *doc,
                        shk_val *params, bool *ret_loader, bool *ret_interp);

#endif
