/* SPDX-License-Identifier: MIT */
/*
 * `shackle policy check`: what the model gateway does with the policy
 * ("models": upstreams, limits, rules, default, prices; docs/gateway.md)
 * and what it shares on Redis ("shared": docs/shared-state.md), in the
 * style of the exec and net rules.
 */
#include <stdio.h>
#include <string.h>

#include <shackle/scope.h>

#include "cli/policy_text.h"

const char *policy_action_text(shk_action a)
{
	switch (a) {
	case SHK_ACTION_ALLOW: return "allowed (allow)";
	case SHK_ACTION_DENY: return "denied (deny; the breaker does not trip)";
	case SHK_ACTION_HITL: return "held for human approval (hitl)";
	}
	return "?";
}

/* The gateway's own defaults (src/gateway/server.c) when "upstream" names none. */
static void print_upstream(const char *provider, const char *url, const char *dflt)
{
	printf("  upstream %s: %s%s\n", provider, url ? url : dflt, url ? "" : " (the provider's own)");
}

static void print_model_rules(const shk_policy *p)
{
	size_t n = shk_policy_model_rule_count(p);

	printf("  rules (first match wins, in file order; a model request is tool model:<model>, "
	       "a proposed tool call the agent's tool name):\n");
	for (size_t i = 0; i < n; i++) {
		shk_model_rule_info r;

		shk_policy_model_rule(p, i, &r);
		printf("  %zu. %s%s%scalls of a tool matching %s\n", i, r.name ? "\"" : "",
		       r.name ? r.name : "", r.name ? "\" " : "", r.tool);
		printf("     -> %s", policy_action_text(r.action));
		if (r.nignore_input) {
			printf("; input left out of its params (repeat guard, exec link):");
			for (size_t k = 0; k < r.nignore_input; k++)
				printf("%s \"%s\"", k ? "," : "", r.ignore_input[k]);
		}
		printf("\n");
	}
	printf("  otherwise: %s%s\n", policy_action_text(shk_policy_models_default(p)),
	       shk_policy_models_default_implicit(p) ? " (the exec default: no models.default)" : "");
}

static void print_prices(const shk_policy *p, const shk_models_config *m)
{
	size_t n = shk_policy_model_price_count(p);

	if (!n) {
		printf("  prices: none (every model request is refused: unpriced_model)\n");
		return;
	}
	printf("  prices, USD per million tokens (input / output / cache write / cache read; "
	       "the first matching model pattern prices a request, a model without one is refused):\n");
	for (size_t i = 0; i < n; i++) {
		shk_model_price mp;

		shk_policy_model_price_at(p, i, &mp);
		printf("    %s: %.6g / %.6g / %.6g / %.6g\n", mp.pattern, mp.input, mp.output,
		       mp.cache_write, mp.cache_read);
	}
	printf("  prices' source: %s\n", m->source ? m->source : "not given (models.source)");
	printf("  prices' date: %s\n", m->date ? m->date : "not given (models.date)");
}

void policy_print_models(const shk_policy *p)
{
	const shk_models_config *m = shk_policy_models(p);

	printf("models (the model gateway%s):\n", m->present ? "" : "; no \"models\" section, its defaults");
	print_upstream("anthropic", m->anthropic_upstream, SHK_UPSTREAM_ANTHROPIC);
	print_upstream("openai", m->openai_upstream, SHK_UPSTREAM_OPENAI);
	printf("  a request body over %llu bytes is refused; an upstream silent for %u s is cut off\n",
	       (unsigned long long)m->max_request_bytes, m->upstream_timeout_s);
	print_model_rules(p);
	print_prices(p, m);
}

static void print_scope(const char *what, shk_scope_level l, const shk_shared_config *s)
{
	switch (l) {
	case SHK_SCOPE_NONE:
		printf("  %s: not shared (each session its own)\n", what);
		break;
	case SHK_SCOPE_SESSION:
		printf("  %s: shared by the shackle-run and shackle attach of one session id "
		       "(scope session)\n", what);
		break;
	case SHK_SCOPE_AGENT:
		printf("  %s: shared by every session of agent %s%s%s (scope agent)\n", what, s->agent,
		       s->org[0] ? " of org " : "", s->org);
		break;
	case SHK_SCOPE_ORG:
		printf("  %s: shared by every session of org %s (scope org)\n", what, s->org);
		break;
	}
}

void policy_print_shared(const shk_policy *p)
{
	const shk_shared_config *s = shk_policy_shared(p);
	char url[SHK_SCOPE_HOST_MAX + SHK_SCOPE_PATH_MAX + 32];

	if (!s) {
		printf("shared: none (budget and breaker stay in each session)\n");
		return;
	}
	printf("shared (budget and breaker on Redis):\n");
	shk_scope_server_name(s, url, sizeof(url));
	printf("  server: %s", url);
	printf("; a server silent for %u ms on a connect or a command is unreachable: the shared "
	       "calls are denied\n", s->timeout_ms);
	print_scope("budget", s->budget, s);
	print_scope("breaker", s->breaker, s);
	printf("  a reservation nobody settles is charged at its estimate after %u s (lease_s)\n",
	       s->lease_s);
}
