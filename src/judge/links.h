/* SPDX-License-Identifier: MIT */
/*
 * judge/links.h — the link from a kernel exec to the model's proposal it
 * carries out (shackle/proplink.h), kept by the judge: the gateway's
 * proposals allowed at once are remembered in the pipeline's ring
 * (source.c), an exec takes the one it carries out (kinds.c), and its
 * decision entry records it as inputs.proposal (pipeline.c).
 *
 * Threads: the ring is the pipeline's, so these run under the judge's lock
 * (judge/judged.h) like everything else that touches it. Evidence only:
 * nothing here changes an action or a verdict.
 */
#ifndef SHACKLE_JUDGE_LINKS_H
#define SHACKLE_JUDGE_LINKS_H

#include <stdint.h>

#include <shackle/json.h>

#include "judge/obs.h"
#include "judge/source.h"

struct shk_pipeline;

/* A source call was judged ALLOW in decision entry seq: a proposal that
 * names a command is remembered. */
void shk_links_remember(struct shk_pipeline *p, const struct shk_source_call *c, int64_t seq);
/* The exec being judged takes the oldest proposal it carries out, if any. */
void shk_links_exec(struct shk_pipeline *p, const struct shk_obs_exec *x);
/* Whether the call being judged took one; then add it to the decision's
 * inputs as "proposal": {"seq", "tool"}. */
bool shk_links_taken(const struct shk_pipeline *p);
int shk_links_inputs(struct shk_pipeline *p, shk_doc *doc, shk_val *in);

#endif
