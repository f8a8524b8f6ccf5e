/* SPDX-License-Identifier: MIT */
/* Policy v1: the "shared" section (budgets and breakers on Redis, Model C). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy_internal.h"

/* A shared budget is counted in Redis as integer micro-USD, and its Lua
 * scripts see numbers as doubles: integers are exact only up to 2^53. */
#define SHARED_BUDGET_MAX_USD 9007199254.0

static int want_string(struct pctx *ctx, json_t *obj, const char *key, const char **ret)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) == 0)
		return shk_policy_fail_at(ctx, key, false, "expected a non-empty string, got %s",
					  json_is_string(v) ? "\"\"" : shk_policy_type_name(v));
	*ret = json_string_value(v);
	return 0;
}

static int want_range(struct pctx *ctx, json_t *obj, const char *key, json_int_t lo, json_int_t hi,
		      uint32_t *ret)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_integer(v))
		return shk_policy_fail_at(ctx, key, false, "expected an integer, got %s",
					  shk_policy_type_name(v));
	if (json_integer_value(v) < lo || json_integer_value(v) > hi)
		return shk_policy_fail_at(ctx, key, false,
					  "%" JSON_INTEGER_FORMAT " is out of range (%" JSON_INTEGER_FORMAT
					  " to %" JSON_INTEGER_FORMAT ")",
					  json_integer_value(v), lo, hi);
	*ret = (uint32_t)json_integer_value(v);
	return 0;
}

/* Names become part of a scope's identity: a fixed, printable alphabet keeps
 * "acme" and "acme\n" (or a look-alike) from naming two scopes. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SHK_SCOPE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]))
			return false;
	return true;
}

static int parse_name(struct pctx *ctx, json_t *o, const char *key, char *out)
{
	const char *s = NULL;
	int r = want_string(ctx, o, key, &s);

	if (r < 0 || !s)
		return r;
	if (!name_ok(s))
		return shk_policy_fail_at(ctx, key, false, "\"%.40s\" is not a name: 1 to %d of "
					  "letters, digits, '.', '_', '-'", s, SHK_SCOPE_NAME_MAX);
	snprintf(out, SHK_SCOPE_NAME_MAX + 1, "%s", s);
	return 0;
}

static int parse_port(const char *s, uint16_t *ret)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtol(s, &end, 10);
	if (*end || v < 1 || v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

/* "redis://host[:port]" with host a name, an IPv4 address or [IPv6]. */
static const char *parse_tcp(const char *rest, shk_shared_config *c)
{
	const char *port = NULL, *end;
	size_t hl;

	if (strpbrk(rest, "@/?#"))
		return "give only host and port (no credentials, database or path)";
	if (rest[0] == '[') {
		end = strchr(rest, ']');
		if (!end || (end[1] && end[1] != ':'))
			return "an IPv6 address is written [addr] or [addr]:port";
		hl = (size_t)(end - rest - 1);
		rest++;
		port = end[1] ? end + 2 : NULL;
	} else {
		end = strchr(rest, ':');
		hl = end ? (size_t)(end - rest) : strlen(rest);
		port = end ? end + 1 : NULL;
		for (size_t i = 0; i < hl; i++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-",
				    rest[i]))
				return "the host is a name, an IPv4 address or [IPv6]";
	}
	if (hl == 0 || hl > SHK_SCOPE_HOST_MAX)
		return "the host is missing or too long";
	memcpy(c->host, rest, hl);
	c->host[hl] = 0;
	c->port = 6379;
	if (port && parse_port(port, &c->port) < 0)
		return "the port is a number from 1 to 65535";
	return NULL;
}

static int parse_url(struct pctx *ctx, json_t *o, shk_shared_config *c)
{
	const char *s = NULL, *why;
	int r = want_string(ctx, o, "redis", &s);

	if (r < 0)
		return r;
	if (!s)
		return shk_policy_fail(ctx, false, "missing required field \"redis\" "
				       "(\"redis://host:port\" or \"unix:/path\")");
	if (!strncmp(s, "unix:", 5)) {
		c->is_unix = true;
		if (s[5] != '/' || strlen(s + 5) > SHK_SCOPE_PATH_MAX)
			why = "a unix socket is an absolute path of at most 107 bytes";
		else
			why = NULL, snprintf(c->path, sizeof(c->path), "%s", s + 5);
	} else if (!strncmp(s, "redis://", 8)) {
		why = parse_tcp(s + 8, c);
	} else {
		why = "expected \"redis://host:port\" or \"unix:/path\" (rediss:// and TLS are not "
		      "supported)";
	}
	return why ? shk_policy_fail_at(ctx, "redis", false, "%s", why) : 0;
}

static int parse_level(struct pctx *ctx, json_t *scopes, const char *key, shk_scope_level *ret)
{
	static const shk_scope_level levels[] = { SHK_SCOPE_SESSION, SHK_SCOPE_AGENT, SHK_SCOPE_ORG };
	const char *s = NULL;
	int r = want_string(ctx, scopes, key, &s);

	if (r < 0 || !s)
		return r;
	for (size_t i = 0; i < 3; i++)
		if (!strcmp(s, shk_scope_level_name(levels[i]))) {
			*ret = levels[i];
			return 0;
		}
	return shk_policy_fail_at(ctx, key, false, "expected \"session\", \"agent\" or \"org\"");
}

/* A level needs the name that identifies it. */
static int check_level(struct pctx *ctx, const char *key, shk_scope_level l,
		       const shk_shared_config *c)
{
	if (l == SHK_SCOPE_ORG && !c->org[0])
		return shk_policy_fail_at(ctx, key, false, "\"org\" needs shared.org (the "
					  "organisation's name)");
	if (l == SHK_SCOPE_AGENT && !c->agent[0])
		return shk_policy_fail_at(ctx, key, false, "\"agent\" needs shared.agent (the "
					  "agent's name)");
	return 0;
}

static int scopes_fields(struct pctx *ctx, json_t *s, struct shk_policy *p)
{
	static const char *const known[] = { "budget", "breaker", NULL };
	shk_shared_config *c = &p->shared;
	int r;

	if (!json_is_object(s))
		return shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(s));
	if ((r = shk_policy_check_keys(ctx, s, known)) < 0 ||
	    (r = parse_level(ctx, s, "budget", &c->budget)) < 0 ||
	    (r = parse_level(ctx, s, "breaker", &c->breaker)) < 0 ||
	    (r = check_level(ctx, "budget", c->budget, c)) < 0 ||
	    (r = check_level(ctx, "breaker", c->breaker, c)) < 0)
		return r;
	if (c->budget == SHK_SCOPE_NONE && c->breaker == SHK_SCOPE_NONE)
		return shk_policy_fail(ctx, false, "shares nothing: name \"budget\" or \"breaker\"");
	if (c->budget != SHK_SCOPE_NONE && p->guard.budget_usd == 0)
		return shk_policy_fail_at(ctx, "budget", false,
					  "a shared budget needs guard.budget_usd > 0");
	if (c->budget != SHK_SCOPE_NONE && p->guard.budget_usd > SHARED_BUDGET_MAX_USD)
		return shk_policy_fail_at(ctx, "budget", false, "a shared budget is at most %.0f USD "
					  "(guard.budget_usd is %g)", SHARED_BUDGET_MAX_USD,
					  p->guard.budget_usd);
	return 0;
}

static int parse_scopes(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	json_t *s = json_object_get(o, "scopes");
	int r;

	if (!s)
		return shk_policy_fail(ctx, false, "missing required field \"scopes\" (what is shared: "
				       "{\"budget\": ..., \"breaker\": ...})");
	shk_policy_push(ctx, "scopes");
	r = scopes_fields(ctx, s, p);
	shk_policy_pop(ctx);
	return r;
}

static int shared_fields(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	static const char *const known[] = { "redis", "timeout_ms", "lease_s", "org", "agent",
					     "scopes", NULL };
	shk_shared_config *c = &p->shared;
	int r;

	if (!json_is_object(o))
		return shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(o));
	if ((r = shk_policy_check_keys(ctx, o, known)) < 0 || (r = parse_url(ctx, o, c)) < 0 ||
	    (r = want_range(ctx, o, "timeout_ms", 1, 60000, &c->timeout_ms)) < 0 ||
	    (r = want_range(ctx, o, "lease_s", 1, 86400, &c->lease_s)) < 0 ||
	    (r = parse_name(ctx, o, "org", c->org)) < 0 ||
	    (r = parse_name(ctx, o, "agent", c->agent)) < 0)
		return r;
	return parse_scopes(ctx, o, p);
}

int shk_policy_parse_shared(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	int r;

	if (!o)
		return 0;
	p->shared = (shk_shared_config){ .timeout_ms = 200, .lease_s = 600 };
	shk_policy_push(ctx, "shared");
	r = shared_fields(ctx, o, p);
	shk_policy_pop(ctx);
	p->has_shared = r == 0;
	return r;
}

const shk_shared_config *shk_policy_shared(const shk_policy *p)
{
	return p->has_shared ? &p->shared : NULL;
}

const char *shk_scope_level_name(shk_scope_level level)
{
	switch (level) {
	case SHK_SCOPE_NONE: return "none";
	case SHK_SCOPE_SESSION: return "session";
	case SHK_SCOPE_AGENT: return "agent";
	case SHK_SCOPE_ORG: return "org";
	}
	return "?";
}
