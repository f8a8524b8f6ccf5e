/* SPDX-License-Identifier: MIT */
/* The loaded form of a policy; shared by policy*.c only. */
#ifndef SHACKLE_CORE_POLICY_INTERNAL_H
#define SHACKLE_CORE_POLICY_INTERNAL_H

#include <jansson.h>

#include <shackle/policy.h>

#include "core/policy_glob.h"
#include "core/policy_pos.h"

struct exec_rule {
	char *name, *tool, *path;
	struct shk_glob path_glob;
	char **argv_src; /* patterns as written, for explaining */
	struct shk_argv_elem *argv;
	size_t argc;
	bool has_argv;
	shk_action action;
	double cost_usd;
	bool no_repeat_guard; /* "repeat_guard": false */
};

struct net_rule {
	char *name, *tool;
	shk_net_selector sel;
	char *host;
	shk_net_addr *addrs;
	size_t naddrs;
	shk_net_addr cidr;
	unsigned prefix;
	char *unix_src; /* as written, including a leading '@' */
	struct shk_glob unix_glob;
	/* the same pattern with its directory as the kernel names it (set by
	 * the Linux layer: shk_policy_set_unix_alias); ntok 0: none */
	struct shk_glob unix_alias;
	bool unix_abstract;
	uint16_t port_lo, port_hi;
	shk_net_proto proto;
	unsigned ops;
	shk_action action;
	double cost_usd;
	bool no_repeat_guard; /* "repeat_guard": false */
};

struct model_price {
	char *pattern;
	struct shk_glob glob;
	double input, output, cache_write, cache_read;
};

/* "models.rules": the static action of a call the gateway judges, by its tool name */
struct model_rule {
	char *name, *pattern;
	struct shk_glob glob;
	shk_action action;
	char **ignore_input; /* "ignore_input": NULL-terminated, NULL when none */
	size_t nignore_input;
};

struct shk_policy {
	shk_guard_config guard;
	shk_action exec_default, net_default;
	shk_action exec_loader_env; /* "exec.loader_env", default: exec_default */
	shk_action exec_interp_env; /* "exec.interp_env", default: exec_default */
	bool exec_interp_scoped;    /* "exec.interp_env_scope": "interpreter" */
	bool exec_default_implicit, net_default_implicit;
	struct exec_rule *exec;
	size_t nexec;
	struct net_rule *net;
	size_t nnet;
	char **redact;
	size_t nredact;
	shk_shared_config shared;
	bool has_shared;
	shk_models_config models;   /* "models" (policy_models.c) */
	struct model_price *prices;
	size_t nprices;
	char *upstream_anthropic, *upstream_openai;
	char *models_source, *models_date; /* "models.source", "models.date" */
	struct model_rule *model_rules;
	size_t nmodel_rules;
	bool has_models_default;    /* "models.default"; else the exec default */
	shk_action models_default;
	uint8_t digest[32];
	char digest_hex[65];
};

/* Validation context: the text (for positions) and the path being checked. */
struct pctx {
	const char *text;
	size_t len;
	const char *source;
	struct shk_jpath path;
	shk_parse_error *err;
};

/* Fill ctx->err for the value at the current path (or its key) and return -EINVAL. */
__attribute__((format(printf, 3, 4)))
int shk_policy_fail(struct pctx *ctx, bool at_key, const char *fmt, ...);
/* The same for a sub-member `key` of the current path. */
__attribute__((format(printf, 4, 5)))
int shk_policy_fail_at(struct pctx *ctx, const char *key, bool at_key, const char *fmt, ...);

int shk_policy_parse_exec(struct pctx *ctx, json_t *sec, struct shk_policy *p);
int shk_policy_parse_net(struct pctx *ctx, json_t *sec, struct shk_policy *p);
int shk_policy_parse_shared(struct pctx *ctx, json_t *sec, struct shk_policy *p);
int shk_policy_parse_models(struct pctx *ctx, json_t *sec, struct shk_policy *p);
void shk_policy_free_models(struct shk_policy *p);
int shk_policy_parse_action(struct pctx *ctx, json_t *v, shk_action *ret);
int shk_policy_parse_cost(struct pctx *ctx, json_t *v, double *ret);
/* "repeat_guard": a boolean; *ret_off = !value */
int shk_policy_parse_repeat_guard(struct pctx *ctx, json_t *v, bool *ret_off);
int shk_policy_parse_tool(struct pctx *ctx, json_t *v, char **ret);
int shk_policy_parse_name(struct pctx *ctx, json_t *v, char **ret);
/* Reject members of obj not in the NULL-terminated list `known`. */
int shk_policy_check_keys(struct pctx *ctx, json_t *obj, const char *const *known);

void shk_policy_push(struct pctx *ctx, const char *key);
void shk_policy_push_index(struct pctx *ctx, size_t index);
void shk_policy_pop(struct pctx *ctx);

const char *shk_policy_type_name(const json_t *v);
int shk_policy_parse_section(struct pctx *ctx, const char *sec_name, json_t *sec, shk_action *def,
                             bool *implicit, json_t **ret_rules);
int shk_policy_parse_glob(struct pctx *ctx, json_t *v, shk_glob_mode mode, struct shk_glob *g,
                          char **ret_src);
/*
 * Rule i's name (found at names + i * stride, a char * inside rule structs)
 * must differ from the names of rules 0..i-1: names identify rules in audits.
 */
int shk_policy_parse_rules(struct pctx *ctx, json_t *rules, size_t stride, size_t name_off,
			   int (*parse)(struct pctx *, json_t *, void *), void **ret_arr, size_t *ret_n);

/* Evaluate expr with v_ bound to member key and the path pointing at it. */
#define SHK_WITH_MEMBER(ctx, obj, key, expr)                \
	({                                                  \
		json_t *v_ = json_object_get((obj), (key)); \
		int r_ = 0;                                 \
		if (v_) {                                   \
			shk_policy_push((ctx), (key));      \
			r_ = (expr);                        \
			shk_policy_pop(ctx);                \
		}                                           \
		r_;                                         \
	})

/* CIDR "a.b.c.d/n" or "v6/n" (prefix optional = full length). */
int shk_policy_parse_cidr(const char *s, shk_net_addr *ret_addr, unsigned *ret_prefix,
                          const char **ret_why);

#endif
