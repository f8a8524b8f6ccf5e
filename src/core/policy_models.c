/* SPDX-License-Identifier: MIT */
/* Policy v1 "models": the price table of model requests and the gateway's upstreams. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy_internal.h"

#define MODEL_PATTERN_MAX 256
#define URL_MAX 1024
#define MAX_PRICES 1024
#define MAX_MODEL_RULES 1024
#define TOOL_PATTERN_MAX 272
#define IGNORE_INPUT_MAX 64
#define INPUT_KEY_MAX 256
#define DEFAULT_MAX_REQUEST_BYTES (32u << 20)
#define DEFAULT_UPSTREAM_TIMEOUT_S 300

static int price_number(struct pctx *ctx, json_t *o, const char *key, bool required, double *ret)
{
	json_t *v = json_object_get(o, key);
	double d;

	if (!v && required)
		return shk_policy_fail(ctx, false, "missing required field \"%s\" (USD per million tokens)",
				       key);
	if (!v)
		return 0;
	if (!json_is_number(v))
		return shk_policy_fail_at(ctx, key, false, "expected a number (USD per million tokens), got %s",
					  shk_policy_type_name(v));
	d = json_number_value(v);
	if (!isfinite(d) || d < 0 || d > 1e6)
		return shk_policy_fail_at(ctx, key, false, "%g is out of range (0 to 1000000)", d);
	*ret = d;
	return 0;
}

/* An object of the known members only. */
static int known_object(struct pctx *ctx, json_t *o, const char *const *known)
{
	if (!json_is_object(o))
		return shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(o));
	return shk_policy_check_keys(ctx, o, known);
}

static int parse_price(struct pctx *ctx, json_t *o, void *out)
{
	static const char *const known[] = { "model", "input", "output", "cache_write", "cache_read",
					     NULL };
	struct model_price *mp = out;
	json_t *m;
	int r;

	if ((r = known_object(ctx, o, known)) < 0)
		return r;
	m = json_object_get(o, "model");
	if (!m)
		return shk_policy_fail(ctx, false, "missing required field \"model\" (a model name pattern)");
	if (json_is_string(m) && (json_string_length(m) == 0 || json_string_length(m) > MODEL_PATTERN_MAX))
		return shk_policy_fail_at(ctx, "model", false, "must be 1 to %d bytes", MODEL_PATTERN_MAX);
	if ((r = SHK_WITH_MEMBER(ctx, o, "model", shk_policy_parse_glob(ctx, v_, SHK_GLOB_ARG, &mp->glob,
									 &mp->pattern))) < 0 ||
	    (r = price_number(ctx, o, "input", true, &mp->input)) < 0 ||
	    (r = price_number(ctx, o, "output", true, &mp->output)) < 0)
		return r;
	/* A figure left out is charged at the full input price: never cheaper than stated. */
	mp->cache_write = mp->cache_read = mp->input;
	if ((r = price_number(ctx, o, "cache_write", false, &mp->cache_write)) < 0 ||
	    (r = price_number(ctx, o, "cache_read", false, &mp->cache_read)) < 0)
		return r;
	return 0;
}

static int parse_prices(struct pctx *ctx, json_t *a, struct shk_policy *p)
{
	size_t i;
	json_t *v;
	int r = 0;

	if (!json_is_array(a))
		return shk_policy_fail(ctx, false, "expected an array of prices, got %s",
				       shk_policy_type_name(a));
	if (json_array_size(a) > MAX_PRICES)
		return shk_policy_fail(ctx, false, "more than %d prices", MAX_PRICES);
	p->prices = calloc(json_array_size(a) + 1, sizeof(*p->prices));
	if (!p->prices)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		shk_policy_push_index(ctx, i);
		r = parse_price(ctx, v, &p->prices[i]);
		shk_policy_pop(ctx);
		if (r < 0) {
			shk_glob_free(&p->prices[i].glob);
			free(p->prices[i].pattern);
			return r;
		}
		p->nprices++;
	}
	return 0;
}

static int parse_input_key(struct pctx *ctx, json_t *v, char *const *seen, size_t nseen, char **ret)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected an input field's name (a string), got %s",
				       shk_policy_type_name(v));
	if (len == 0 || len > INPUT_KEY_MAX || strlen(s) != len)
		return shk_policy_fail(ctx, false, "must be 1 to %d bytes without NUL", INPUT_KEY_MAX);
	for (size_t i = 0; i < nseen; i++)
		if (!strcmp(seen[i], s))
			return shk_policy_fail(ctx, false, "\"%s\" is listed twice", s);
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* "ignore_input": top-level members of a proposal's input left out of its
 * params, so that free text next to the command (Claude Code's Bash
 * "description") does not make a repeated call look new. */
static int parse_ignore_input(struct pctx *ctx, json_t *a, struct model_rule *mr)
{
	size_t i;
	json_t *v;
	int r = 0;

	if (!json_is_array(a))
		return shk_policy_fail(ctx, false, "expected an array of input field names, got %s",
				       shk_policy_type_name(a));
	if (json_array_size(a) > IGNORE_INPUT_MAX)
		return shk_policy_fail(ctx, false, "more than %d input fields", IGNORE_INPUT_MAX);
	if (!(mr->ignore_input = calloc(json_array_size(a) + 1, sizeof(*mr->ignore_input))))
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		shk_policy_push_index(ctx, i);
		r = parse_input_key(ctx, v, mr->ignore_input, i, &mr->ignore_input[i]);
		shk_policy_pop(ctx);
		if (r < 0)
			return r; /* what was taken is freed with the rule */
		mr->nignore_input++;
	}
	return 0;
}

static int parse_rule(struct pctx *ctx, json_t *o, void *out)
{
	static const char *const known[] = { "name", "tool", "action", "ignore_input", NULL };
	struct model_rule *mr = out;
	json_t *t;
	int r;

	if ((r = known_object(ctx, o, known)) < 0)
		return r;
	if (!(t = json_object_get(o, "tool")))
		return shk_policy_fail(ctx, false, "missing required field \"tool\" (a tool name pattern: "
				       "\"model:<model>\" or a proposed tool's name)");
	if (!json_object_get(o, "action"))
		return shk_policy_fail(ctx, false, "missing required field \"action\"");
	if (json_is_string(t) && (json_string_length(t) == 0 || json_string_length(t) >= TOOL_PATTERN_MAX))
		return shk_policy_fail_at(ctx, "tool", false, "must be 1 to %d bytes", TOOL_PATTERN_MAX - 1);
	if ((r = SHK_WITH_MEMBER(ctx, o, "name", shk_policy_parse_name(ctx, v_, &mr->name))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "tool", shk_policy_parse_glob(ctx, v_, SHK_GLOB_ARG, &mr->glob,
									 &mr->pattern))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "action", shk_policy_parse_action(ctx, v_, &mr->action))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "ignore_input", parse_ignore_input(ctx, v_, mr))) < 0)
		return r;
	return 0;
}

/* "models.rules", in file order, names unique (policy_rules.c) */
static int parse_rules(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	json_t *a = json_object_get(o, "rules");
	void *arr = NULL;
	int r;

	if (!a)
		return 0;
	if (!json_is_array(a))
		return shk_policy_fail_at(ctx, "rules", false, "expected an array of rules, got %s",
					  shk_policy_type_name(a));
	if (json_array_size(a) > MAX_MODEL_RULES)
		return shk_policy_fail_at(ctx, "rules", false, "more than %d rules", MAX_MODEL_RULES);
	r = shk_policy_parse_rules(ctx, a, sizeof(struct model_rule), offsetof(struct model_rule, name),
				   parse_rule, &arr, &p->nmodel_rules);
	p->model_rules = arr; /* freed with the rest, whole or not */
	return r;
}

static int parse_default(struct pctx *ctx, json_t *v, struct shk_policy *p)
{
	p->has_models_default = true;
	return shk_policy_parse_action(ctx, v, &p->models_default);
}

/* An absolute http(s) URL without query or fragment: the request path is appended to it. */
static int parse_url(struct pctx *ctx, json_t *v, char **ret)
{
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected a URL string, got %s", shk_policy_type_name(v));
	s = json_string_value(v);
	len = json_string_length(v);
	if (strncmp(s, "http://", 7) && strncmp(s, "https://", 8))
		return shk_policy_fail(ctx, false, "expected an http:// or https:// URL");
	if (len > URL_MAX)
		return shk_policy_fail(ctx, false, "longer than %d bytes", URL_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '?' || c == '#')
			return shk_policy_fail(ctx, false, "a base URL has no blanks, control or non-ASCII "
					       "characters, query or fragment");
	}
	if (len && s[len - 1] == '/')
		len--;
	*ret = strndup(s, len);
	return *ret ? 0 : -ENOMEM;
}

static int parse_upstream(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	static const char *const known[] = { "anthropic", "openai", NULL };
	int r;

	if (!json_is_object(o))
		return shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(o));
	if ((r = shk_policy_check_keys(ctx, o, known)) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "anthropic", parse_url(ctx, v_, &p->upstream_anthropic))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "openai", parse_url(ctx, v_, &p->upstream_openai))) < 0)
		return r;
	return 0;
}

/* kept for `policy check`, which shows where the prices come from */
static int parse_label_string(struct pctx *ctx, json_t *v, char **ret)
{
	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected a string, got %s", shk_policy_type_name(v));
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int parse_limit(struct pctx *ctx, json_t *v, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    (uint64_t)json_integer_value(v) > hi)
		return shk_policy_fail(ctx, false, "expected an integer from %llu to %llu",
				       (unsigned long long)lo, (unsigned long long)hi);
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_models_fields(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	uint64_t body = DEFAULT_MAX_REQUEST_BYTES, tmo = DEFAULT_UPSTREAM_TIMEOUT_S;
	int r;

	if ((r = SHK_WITH_MEMBER(ctx, o, "source", parse_label_string(ctx, v_, &p->models_source))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "date", parse_label_string(ctx, v_, &p->models_date))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "prices", parse_prices(ctx, v_, p))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "upstream", parse_upstream(ctx, v_, p))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "max_request_bytes",
				 parse_limit(ctx, v_, 1024, 1u << 30, &body))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "upstream_timeout_s", parse_limit(ctx, v_, 1, 86400, &tmo))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "default", parse_default(ctx, v_, p))) < 0 ||
	    (r = parse_rules(ctx, o, p)) < 0)
		return r;
	p->models.max_request_bytes = body;
	p->models.upstream_timeout_s = (uint32_t)tmo;
	return 0;
}

int shk_policy_parse_models(struct pctx *ctx, json_t *o, struct shk_policy *p)
{
	static const char *const known[] = { "source", "date", "prices", "upstream",
					     "max_request_bytes", "upstream_timeout_s", "default",
					     "rules", NULL };
	int r;

	p->models = (shk_models_config){ .max_request_bytes = DEFAULT_MAX_REQUEST_BYTES,
					 .upstream_timeout_s = DEFAULT_UPSTREAM_TIMEOUT_S };
	if (!o)
		return 0;
	shk_policy_push(ctx, "models");
	if (!json_is_object(o))
		r = shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(o));
	else if ((r = shk_policy_check_keys(ctx, o, known)) >= 0)
		r = parse_models_fields(ctx, o, p);
	shk_policy_pop(ctx);
	p->models.anthropic_upstream = p->upstream_anthropic;
	p->models.openai_upstream = p->upstream_openai;
	p->models.source = p->models_source;
	p->models.date = p->models_date;
	p->models.present = r >= 0;
	return r;
}

void shk_policy_free_models(struct shk_policy *p)
{
	for (size_t i = 0; i < p->nprices; i++) {
		shk_glob_free(&p->prices[i].glob);
		free(p->prices[i].pattern);
	}
	free(p->prices);
	for (size_t i = 0; i < p->nmodel_rules; i++) {
		shk_glob_free(&p->model_rules[i].glob);
		free(p->model_rules[i].pattern);
		free(p->model_rules[i].name);
		for (size_t k = 0; k < p->model_rules[i].nignore_input; k++)
			free(p->model_rules[i].ignore_input[k]);
		free(p->model_rules[i].ignore_input);
	}
	free(p->model_rules);
	free(p->upstream_anthropic);
	free(p->upstream_openai);
	free(p->models_source);
	free(p->models_date);
}

const shk_models_config *shk_policy_models(const shk_policy *p)
{
	return &p->models;
}

size_t shk_policy_model_price_count(const shk_policy *p)
{
	return p->nprices;
}

static void price_info(const struct model_price *mp, shk_model_price *ret)
{
	*ret = (shk_model_price){ .pattern = mp->pattern, .input = mp->input, .output = mp->output,
				  .cache_write = mp->cache_write, .cache_read = mp->cache_read };
}

int shk_policy_model_price_at(const shk_policy *p, size_t i, shk_model_price *ret)
{
	if (i >= p->nprices)
		return -ERANGE;
	price_info(&p->prices[i], ret);
	return 0;
}

int shk_policy_model_price(const shk_policy *p, const char *model, size_t len, shk_model_price *ret)
{
	if (!p || !model || !ret)
		return -EINVAL;
	for (size_t i = 0; i < p->nprices; i++)
		if (shk_glob_match(&p->prices[i].glob, model, len)) {
			price_info(&p->prices[i], ret);
			return 0;
		}
	return -ENOENT;
}

int shk_policy_match_model_call(const shk_policy *p, const char *tool, size_t len, shk_policy_match *ret)
{
	if (!p || !tool || !ret)
		return -EINVAL;
	for (size_t i = 0; i < p->nmodel_rules; i++)
		if (shk_glob_match(&p->model_rules[i].glob, tool, len)) {
			ret->rule_index = (long)i;
			ret->rule_name = p->model_rules[i].name;
			ret->action = p->model_rules[i].action;
			return 0;
		}
	ret->rule_index = -1;
	ret->rule_name = NULL;
	ret->action = shk_policy_models_default(p);
	return 0;
}

const char *const *shk_policy_model_ignore_input(const shk_policy *p, long rule_index, size_t *ret_n)
{
	*ret_n = 0;
	if (!p || rule_index < 0 || (size_t)rule_index >= p->nmodel_rules ||
	    !p->model_rules[rule_index].nignore_input)
		return NULL;
	*ret_n = p->model_rules[rule_index].nignore_input;
	return (const char *const *)p->model_rules[rule_index].ignore_input;
}

size_t shk_policy_model_rule_count(const shk_policy *p)
{
	return p->nmodel_rules;
}

int shk_policy_model_rule(const shk_policy *p, size_t i, shk_model_rule_info *ret)
{
	const struct model_rule *mr;

	if (i >= p->nmodel_rules)
		return -ERANGE;
	mr = &p->model_rules[i];
	*ret = (shk_model_rule_info){ .name = mr->name, .tool = mr->pattern, .action = mr->action,
				      .ignore_input = (const char *const *)mr->ignore_input,
				      .nignore_input = mr->nignore_input };
	return 0;
}

shk_action shk_policy_models_default(const shk_policy *p)
{
	return p->has_models_default ? p->models_default : p->exec_default;
}

bool shk_policy_models_default_implicit(const shk_policy *p)
{
	return !p->has_models_default;
}
