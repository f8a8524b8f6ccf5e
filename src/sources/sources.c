/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk/sdk.h"
#include "sources/gateway_module.h"
#include "sources/sources.h"

/* The first non-empty of a provider's key variables, taken out of the
 * environment whatever it held: the agent must not read the real key. The
 * value is wiped where it lies too: unsetenv() only drops the pointer, and
 * /proc/PID/environ reads the original block, which an agent of the same
 * uid (shackle-run without root) could open. */
static char *take_key(const struct shk_gateway_api *gw, int openai)
{
	const char *const *v = gw->key_vars(openai);
	char *key = NULL;

	for (; *v; v++) {
		char *s = getenv(*v);

		if (s && *s && !key)
			key = strdup(s);
		if (s)
			explicit_bzero(s, strlen(s));
		unsetenv(*v);
	}
	return key;
}

static int point_agent(const struct shk_sources *rs)
{
	struct shk_gateway_envvar vars[SHK_GATEWAY_ENV_MAX];
	size_t n, i;
	int r = rs->gw_api->env(rs->gw, vars, SHK_GATEWAY_ENV_MAX, &n);

	for (i = 0; r == 0 && i < n; i++)
		if ((vars[i].is_set ? setenv(vars[i].name, vars[i].value, 1) : unsetenv(vars[i].name)) < 0)
			r = -errno;
	return r;
}

static int start_gateway(struct shk_sources *rs, struct shk_judged *js, const struct shk_sources_options *o,
                         char *err, size_t errlen)
{
	struct shk_gateway_config cfg = { .policy = js->pipe.policy, .addr = o->gateway_addr,
	                                  .port = o->gateway_port };
	uint32_t addr = o->gateway_addr ? o->gateway_addr : htonl(INADDR_LOOPBACK);
	const struct shk_gateway_api *api;
	char *akey, *okey, why[2 * PATH_MAX];
	int r;

	if ((r = shk_gateway_module_open(&api, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "the policy has a \"models\" section, but the model gateway "
		         "cannot be loaded: %s", why);
		return r;
	}
	rs->gw_api = api;
	akey = take_key(api, 0);
	okey = take_key(api, 1);
	cfg.anthropic_key = akey;
	cfg.openai_key = okey;
	r = api->start(&cfg, &rs->judge, &rs->gw);
	if (akey)
		explicit_bzero(akey, strlen(akey));
	if (okey)
		explicit_bzero(okey, strlen(okey));
	free(akey);
	free(okey);
	if (r < 0) {
		snprintf(err, errlen, "the model gateway did not start: %s", strerror(-r));
		return r;
	}
	if (o->set_env && (r = point_agent(rs)) < 0) {
		snprintf(err, errlen, "the model gateway: setting the agent's environment: %s", strerror(-r));
		return r;
	}
	memcpy(js->pipe.gateway_addr, &addr, sizeof(js->pipe.gateway_addr));
	js->pipe.gateway_port = api->port(rs->gw);
	return 0;
}

/* Without a path the socket sits in a fresh 0700 directory of the agent's
 * user: no other user reaches it (root aside). */
static int start_sdk(struct shk_sources *rs, struct shk_judged *js, const struct shk_sources_options *o,
                     char *err, size_t errlen)
{
	struct shk_sdk_config cfg = { .socket_path = o->sdk_path, .set_owner = o->set_owner,
	                              .uid = o->uid, .gid = o->gid };
	int r = shk_sdk_start(&cfg, &rs->judge, &rs->sdk);

	if (r < 0) {
		snprintf(err, errlen, "the SDK socket%s%s did not start: %s", o->sdk_path ? " " : "",
		         o->sdk_path ? o->sdk_path : "", strerror(-r));
		return r;
	}
	if (o->set_env && setenv("SHACKLE_SOCKET", shk_sdk_path(rs->sdk), 1) < 0) {
		r = -errno;
		snprintf(err, errlen, "the SDK socket: setting SHACKLE_SOCKET: %s", strerror(-r));
		return r;
	}
	js->pipe.sdk_path = shk_sdk_path(rs->sdk);
	shk_sdk_socket_id(rs->sdk, &js->pipe.sdk_dev, &js->pipe.sdk_ino);
	return 0;
}

int shk_sources_start(struct shk_sources *rs, struct shk_judged *js, const struct shk_sources_options *o,
                      char *err, size_t errlen)
{
	int r;

	memset(rs, 0, sizeof(*rs));
	rs->judge = shk_judged_source(js);
	if (shk_policy_models(js->pipe.policy)->present && (r = start_gateway(rs, js, o, err, errlen)) < 0)
		return r;
	return o->sdk ? start_sdk(rs, js, o, err, errlen) : 0;
}

int shk_sources_gateway_env(const struct shk_sources *rs, char *buf, size_t len)
{
	struct shk_gateway_envvar vars[SHK_GATEWAY_ENV_MAX];
	size_t n = 0, at = 0;
	int r = rs->gw ? rs->gw_api->env(rs->gw, vars, SHK_GATEWAY_ENV_MAX, &n) : -ENOENT;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		int w = vars[i].is_set ? snprintf(buf + at, len - at, " %s=%s", vars[i].name, vars[i].value) : 0;

		if (w < 0 || (size_t)w >= len - at)
			r = -ENOBUFS;
		else
			at += (size_t)w;
	}
	return r;
}

void shk_sources_stop(struct shk_sources *rs, struct shk_judged *js)
{
	js->pipe.gateway_port = 0;
	memset(js->pipe.gateway_addr, 0, sizeof(js->pipe.gateway_addr));
	js->pipe.sdk_path = NULL;
	if (rs->gw) {
		rs->had_gateway = true;
		rs->gateway_unauthenticated = rs->gw_api->stop(rs->gw);
	}
	shk_sdk_stop(rs->sdk);
	rs->gw = NULL;
	rs->sdk = NULL;
}

int shk_sources_counters(const struct shk_sources *rs, shk_doc *doc, shk_val *counters)
{
	if (!rs->had_gateway)
		return 0;
	return shk_object_set_str(counters, "gateway_unauthenticated",
	                          shk_int(doc, (int64_t)rs->gateway_unauthenticated));
}
