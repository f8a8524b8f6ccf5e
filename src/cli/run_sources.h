/* SPDX-License-Identifier: MIT */
/*
 * The sources of tool calls beside the kernel that shackle-run starts for
 * its session: the model gateway (when the policy has a "models" section,
 * docs/gateway.md) and the SDK socket (SP/1.0 Model B, docs/sdk.md, named
 * to the agent by SHACKLE_SOCKET). They judge through the session's judge (judge/source.h),
 * so one budget, one breaker and one log hold for all of them.
 */
#ifndef SHACKLE_CLI_RUN_SOURCES_H
#define SHACKLE_CLI_RUN_SOURCES_H

#include <stddef.h>

#include "judge/judged.h"

#include <stdbool.h>
#include <sys/types.h>

struct shk_gateway;
struct shk_gateway_api;
struct shk_sdk;

struct run_sources {
	struct shk_source_judge judge;
	struct shk_gateway *gw;
	const struct shk_gateway_api *gw_api; /* the module, opened only for a gateway */
	struct shk_sdk *sdk;
};

/* Who the agent runs as: the SDK socket is given to that user. */
struct run_sources_user {
	bool set;
	uid_t uid;
	gid_t gid;
};

/* Start them and point the agent's environment (this process's, which the
 * agent inherits) at them: the provider keys are taken out of it, the agent
 * gets placeholders. 0, or a negative errno with err filled. */
int run_sources_start(struct run_sources *rs, struct shk_judged *js, const struct run_sources_user *u,
                      char *err, size_t errlen);
/* Stop them (a call still held is answered first: close the operator
 * channel before). */
void run_sources_stop(struct run_sources *rs, struct shk_judged *js);

#endif
