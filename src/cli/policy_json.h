/* SPDX-License-Identifier: MIT */
/* `shackle policy check|explain --json` (policy_json.c). Each prints one JSON
 * document on stdout and returns 0, or a negative errno and prints nothing. */
#ifndef SHACKLE_CLI_POLICY_JSON_H
#define SHACKLE_CLI_POLICY_JSON_H

#include <shackle/policy.h>

/* A call explain judged: argv set for an exec, op/proto for a net call. */
struct policy_json_call {
	const char *given;   /* PATH or the destination as written */
	const char *judged;  /* what the supervisor would judge (canonical path) */
	char **argv;
	int argc;
	const char *op, *proto;
};

/* Warnings of `policy check` (policy_loaders.c): messages without the
 * "warning: " prefix; nchecked: loader paths judged. */
struct policy_warnings {
	char **v;
	size_t n, nchecked;
};

/* An allowlist (exec default deny or hitl) that lets a userland loader run:
 * one warning per loader path it admits. */
int policy_loader_warnings(const char *file, const shk_policy *p, struct policy_warnings *w);
/* A models rule whose ignore_input lists "command" or "cmd": one warning
 * each, appended to w. */
int policy_models_warnings(const char *file, const shk_policy *p, struct policy_warnings *w);
void policy_warnings_free(struct policy_warnings *w);

int policy_json_check(const char *file, const shk_policy *p, const struct policy_warnings *w);
int policy_json_invalid(const char *file, const shk_parse_error *err, const char *message);
int policy_json_match(const char *file, const struct policy_json_call *c, const shk_policy_match *m);

#endif
