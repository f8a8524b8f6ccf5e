/* SPDX-License-Identifier: MIT */
/*
 * gateway/gateway.h — the model gateway: an HTTP endpoint on loopback that
 * speaks the Anthropic Messages and the OpenAI Chat Completions and
 * Responses APIs, judges every model request and every tool call the model
 * proposes through a judge (judge/source.h), and forwards what is allowed
 * to the provider with the real API key. docs/gateway.md describes it.
 *
 * Use:
 *   shk_gateway_start(&cfg, &judge, &gw);      serving from here on
 *   shk_gateway_env(gw, vars, n, &count);      what to set and unset for the agent
 *   ... run the agent ...
 *   shk_gateway_stop(gw);
 *
 * Every function returns 0 or a negative errno; nothing here prints.
 */
#ifndef SHACKLE_GATEWAY_GATEWAY_H
#define SHACKLE_GATEWAY_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include <shackle/policy.h>

#include "judge/source.h"

struct shk_gateway;

struct shk_gateway_config {
	/* Prices, upstreams and limits: the policy's "models" section
	 * (shk_policy_models). Must outlive the gateway. */
	const shk_policy *policy;
	/* The provider keys the gateway adds upstream (NULL: none is added);
	 * copied at start. shk_gateway_key_vars() names where they come from. */
	const char *anthropic_key;
	const char *openai_key;
	/* Upstream base URLs over the policy's (NULL: the policy's, else the
	 * provider's: https://api.anthropic.com, https://api.openai.com). */
	const char *anthropic_upstream;
	const char *openai_upstream;
	/* Where to listen: an IPv4 address in network byte order (0:
	 * 127.0.0.1) and a port (0: an ephemeral one). */
	uint32_t addr;
	uint16_t port;
	unsigned max_connections;   /* 0: 128 */
};

/* Start serving on cfg->addr (127.0.0.1). -EINVAL (no policy, no judge), -ENOMEM, -EIO
 * (the HTTP server or libcurl could not start), -EADDRINUSE. */
int shk_gateway_start(const struct shk_gateway_config *cfg, const struct shk_source_judge *judge,
		      struct shk_gateway **ret_gw);
uint16_t shk_gateway_port(const struct shk_gateway *gw);
/* The placeholder key the agent authenticates with (random per gateway). */
const char *shk_gateway_token(const struct shk_gateway *gw);
/* Stop serving; waits for requests in flight (a held judge() included).
 * Returns how many requests came without the placeholder key over its
 * life: each was answered 401, only the first few were logged
 * (docs/gateway.md, "Authentication and keys"). */
uint64_t shk_gateway_stop(struct shk_gateway *gw);

/* One environment change for the agent: value NULL means unset. */
struct shk_gateway_envvar {
	const char *name;
	char value[128];
	int is_set;
};

#define SHK_GATEWAY_ENV_MAX 16

/* The variables that point the common agent CLIs at the gateway, with the
 * placeholder key (docs/gateway.md lists which CLI reads which). Fills up
 * to max entries; *ret_n the number filled. -ENOBUFS if max is too small. */
int shk_gateway_env(const struct shk_gateway *gw, struct shk_gateway_envvar *vars, size_t max,
		    size_t *ret_n);

/* The variables of shackle-run's environment the real keys are read from,
 * NULL-terminated, per provider: take them before the agent starts and
 * remove them from its environment (shk_gateway_env then sets placeholders). */
const char *const *shk_gateway_key_vars(int openai);

#endif
