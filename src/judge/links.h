/* SPDX-License-Identifier: MIT */
/*
 * judge/links.h — the link from a kernel exec to the model's proposal it
 * carries out (shackle/proplink.h), kept by the judge: the gateway's
 * proposals allowed (at once, or by a person's approval) are remembered in
 * the pipeline's ring (source.c, hitl.c), an exec takes the one it carries
 * out (kinds.c), and its decision entry records it as inputs.proposal
 * (pipeline.c).
 *
 * A linked exec is a member of the proposal's tool call (docs/decide.md,
 * "A proposal and its exec"): out of the repeat guard, where the proposal
 * was counted already, and its process and descendants belong to the
 * proposal's seq. Everything else (static action, HITL, breaker, budget,
 * window, cap) judges it as without the link.
 *
 * Threads: the ring is the pipeline's, so these run under the judge's lock
 * (judge/judged.h) like everything else that touches it.
 */
#ifndef SHACKLE_JUDGE_LINKS_H
#define SHACKLE_JUDGE_LINKS_H

#include <stdint.h>

#include <shackle/json.h>
#include <shackle/proplink.h>

#include "judge/obs.h"

struct shk_pipeline;

/* A proposal of tool with input params was allowed in decision entry seq
 * (at once, or released by an approval): one that names a command is
 * remembered. */
void shk_links_remember(struct shk_pipeline *p, const char *tool, const shk_val *params, int64_t seq);
/* The exec being judged takes the oldest proposal it carries out, if any. */
void shk_links_exec(struct shk_pipeline *p, const struct shk_obs_exec *x);
/* The proposal the call being judged took, or NULL. */
const shk_proplink_entry *shk_links_taken(const struct shk_pipeline *p);
/* Add a link to a decision's inputs as "proposal": {"seq", "tool"}. */
int shk_links_inputs(const shk_proplink_entry *link, shk_doc *doc, shk_val *in);

#endif
