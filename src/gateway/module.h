/* SPDX-License-Identifier: MIT */
/*
 * gateway/module.h — the model gateway as a module that shackle-run and
 * `shackle attach` open with dlopen() only when the policy has a "models"
 * section. Linking
 * libcurl and libmicrohttpd (and their ~30 libraries: TLS, Kerberos, LDAP,
 * ...) into shackle-run cost every start 20-40 ms of loading, relocation
 * and constructors, also for the runs that never start a gateway
 * (docs/supervisor-performance.md, "Start-up").
 *
 * The module exports one symbol, SHK_GATEWAY_API_SYMBOL, a table of the
 * gateway.h functions; everything else in it is hidden (its own copy of
 * libshackle included: no state is shared through it, the judge is reached
 * through the function pointers of struct shk_source_judge).
 */
#ifndef SHACKLE_GATEWAY_MODULE_H
#define SHACKLE_GATEWAY_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/gateway.h"

#define SHK_GATEWAY_MODULE_NAME "shackle-gateway.so"
#define SHK_GATEWAY_API_SYMBOL "shk_gateway_api"
/* Raised on any change of this struct or of the gateway.h types it takes:
 * a module built from other sources is refused, never called. */
#define SHK_GATEWAY_API_VERSION 3

struct shk_gateway_api {
	uint32_t version;
	uint32_t size; /* sizeof(struct shk_gateway_api) */
	int (*start)(const struct shk_gateway_config *cfg, const struct shk_source_judge *judge,
	             struct shk_gateway **ret_gw);
	uint16_t (*port)(const struct shk_gateway *gw);
	uint64_t (*stop)(struct shk_gateway *gw);
	int (*env)(const struct shk_gateway *gw, struct shk_gateway_envvar *vars, size_t max,
	           size_t *ret_n);
	const char *const *(*key_vars)(int openai);
};

#endif
