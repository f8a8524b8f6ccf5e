/* SPDX-License-Identifier: MIT */
/*
 * The sources of tool calls beside the kernel that shackle-run and
 * `shackle attach` start for their judged session: the model gateway (when
 * the policy has a "models" section, docs/gateway.md) and the SDK socket
 * (SP/1.0 Model B, docs/sdk.md). They judge through the session's judge
 * (judge/source.h), so one budget, one breaker and one log hold for all of
 * them and for the kernel's calls.
 */
#ifndef SHACKLE_SOURCES_H
#define SHACKLE_SOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <shackle/json.h>

#include "judge/judged.h"

struct shk_gateway;
struct shk_gateway_api;
struct shk_sdk;

struct shk_sources {
	struct shk_source_judge judge;
	struct shk_gateway *gw;
	const struct shk_gateway_api *gw_api; /* the module, opened only for a gateway */
	struct shk_sdk *sdk;
	/* Kept from the gateway at stop, for the session_end entry. */
	bool had_gateway;
	uint64_t gateway_unauthenticated;
};

struct shk_sources_options {
	/* shackle-run: point this process's environment, which the agent
	 * inherits, at them (the provider keys are taken out of it whatever
	 * this says: the real key reaches the gateway only). */
	bool set_env;
	bool sdk;                 /* serve the SDK socket */
	const char *sdk_path;     /* NULL: "sock" in a fresh 0700 directory */
	/* Give the SDK socket to the agent's user. */
	bool set_owner;
	uid_t uid;
	gid_t gid;
	uint32_t gateway_addr;    /* IPv4, network byte order; 0: 127.0.0.1 */
	uint16_t gateway_port;    /* 0: an ephemeral port */
};

/* Start them: the gateway when the policy has a "models" section, the SDK
 * socket when o->sdk. js->pipe learns their addresses (the agent's connects
 * to them are transport, pipeline.h). 0, or a negative errno with err
 * filled; what started is stopped by shk_sources_stop either way. */
int shk_sources_start(struct shk_sources *rs, struct shk_judged *js, const struct shk_sources_options *o,
                      char *err, size_t errlen);
/* What points an agent at the gateway (gateway.h, shk_gateway_env), as
 * " NAME=VALUE" for each variable to set, into buf: 0, -ENOENT without a
 * gateway, -ENOBUFS when it does not fit. */
int shk_sources_gateway_env(const struct shk_sources *rs, char *buf, size_t len);
/* Stop them (a call still held is answered first: close the operator
 * channel before). */
void shk_sources_stop(struct shk_sources *rs, struct shk_judged *js);
/* What the session_end entry's counters say of them, into counters (an
 * object of doc): "gateway_unauthenticated", the requests the gateway
 * answered 401 for want of its key (only the first few were logged),
 * when a gateway ran. Call after shk_sources_stop. 0 or -ENOMEM. */
int shk_sources_counters(const struct shk_sources *rs, shk_doc *doc, shk_val *counters);

#endif
