/* SPDX-License-Identifier: MIT */
/*
 * The sources of tool calls beside the kernel that shackle-run starts for
 * its session: the model gateway (when the policy has a "models" section,
 * docs/gateway.md). They judge through the session's judge (judge/source.h),
 * so one budget, one breaker and one log hold for all of them.
 */
#ifndef SHACKLE_CLI_RUN_SOURCES_H
#define SHACKLE_CLI_RUN_SOURCES_H

#include <stddef.h>

#include "judge/judged.h"

struct shk_gateway;

struct run_sources {
	struct shk_source_judge judge;
	struct shk_gateway *gw;
};

/* Start them and point the agent's environment (this process's, which the
 * agent inherits) at them: the provider keys are taken out of it, the agent
 * gets placeholders. 0, or a negative errno with err filled. */
int run_sources_start(struct run_sources *rs, struct shk_judged *js, char *err, size_t errlen);
/* Stop them (a call still held is answered first: close the operator
 * channel before). */
void run_sources_stop(struct run_sources *rs);

#endif
