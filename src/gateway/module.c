/* SPDX-License-Identifier: MIT */
/* The one symbol of the gateway module (gateway/module.h). */
#include "gateway/module.h"

extern const struct shk_gateway_api shk_gateway_api;

__attribute__((visibility("default")))
const struct shk_gateway_api shk_gateway_api = {
	.version = SHK_GATEWAY_API_VERSION,
	.size = sizeof(struct shk_gateway_api),
	.start = shk_gateway_start,
	.port = shk_gateway_port,
	.stop = shk_gateway_stop,
	.env = shk_gateway_env,
	.key_vars = shk_gateway_key_vars,
};
