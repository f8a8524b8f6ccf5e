/* SPDX-License-Identifier: MIT */
/* Policy v1: the "exec" and "net" sections and their rules. */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/policy_internal.h"

#define NAME_MAX_LEN 128
#define PATTERN_MAX_LEN 4096

int shk_policy_parse_action(struct pctx *ctx, json_t *v, shk_action *ret)
{
	static const shk_action all[] = { SHK_ACTION_ALLOW, SHK_ACTION_DENY, SHK_ACTION_HITL };

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected \"allow\", \"deny\" or \"hitl\", got %s",
				       shk_policy_type_name(v));
	for (size_t i = 0; i < 3; i++)
		if (!strcmp(json_string_value(v), shk_action_name(all[i]))) {
			*ret = all[i];
			return 0;
		}
	return shk_policy_fail(ctx, false, "unknown action \"%.40s\" (expected allow, deny or hitl)",
			       json_string_value(v));
}

int shk_policy_parse_cost(struct pctx *ctx, json_t *v, double *ret)
{
	double d;

	if (!json_is_number(v))
		return shk_policy_fail(ctx, false, "expected a number, got %s", shk_policy_type_name(v));
	d = json_number_value(v);
	if (!isfinite(d) || d < 0 || d > 1e6)
		return shk_policy_fail(ctx, false, "cost must be between 0 and 1000000 USD, got %g", d);
	*ret = d;
	return 0;
}

int shk_policy_parse_repeat_guard(struct pctx *ctx, json_t *v, bool *ret_off)
{
	if (!json_is_boolean(v))
		return shk_policy_fail(ctx, false, "expected true or false, got %s", shk_policy_type_name(v));
	*ret_off = json_is_false(v);
	return 0;
}

/* A label: non-empty, at most NAME_MAX_LEN bytes, no control characters. */
static int parse_label(struct pctx *ctx, json_t *v, char **ret)
{
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected a string, got %s", shk_policy_type_name(v));
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0)
		return shk_policy_fail(ctx, false, "must not be empty");
	if (len > NAME_MAX_LEN)
		return shk_policy_fail(ctx, false, "longer than %d bytes", NAME_MAX_LEN);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return shk_policy_fail(ctx, false, "contains a control character");
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int shk_policy_parse_tool(struct pctx *ctx, json_t *v, char **ret)
{
	return parse_label(ctx, v, ret);
}

int shk_policy_parse_name(struct pctx *ctx, json_t *v, char **ret)
{
	return parse_label(ctx, v, ret);
}

int shk_policy_parse_glob(struct pctx *ctx, json_t *v, shk_glob_mode mode, struct shk_glob *g,
                      char **ret_src)
{
	const char *why = NULL;
	int r;

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected a string, got %s", shk_policy_type_name(v));
	if (json_string_length(v) > PATTERN_MAX_LEN)
		return shk_policy_fail(ctx, false, "longer than %d bytes", PATTERN_MAX_LEN);
	r = shk_glob_compile(g, json_string_value(v), json_string_length(v), mode, &why);
	if (r == -EINVAL)
		return shk_policy_fail(ctx, false, "pattern %s", why);
	if (r < 0)
		return r;
	*ret_src = strdup(json_string_value(v));
	return *ret_src ? 0 : -ENOMEM;
}

static int parse_exec_path(struct pctx *ctx, json_t *v, struct exec_rule *e)
{
	const char *s = json_string_value(v);

	size_t n = s ? strlen(s) : 0;

	/* The path judged is absolute and names a file: a pattern of another
	 * shape ("*sudo", "/usr/bin/sudo/") would be accepted and never match,
	 * so a deny rule written that way would let the program run. */
	/* it can match only when its first token can match the leading '/':
	 * '/', '**' (crosses '/'), or '*' matching nothing before a '/' */
	if (s && s[0] != '/' && strncmp(s, "**", 2) != 0 && strncmp(s, "*/", 2) != 0)
		return shk_policy_fail(ctx, false, "must be an absolute path pattern "
				       "(start with '/' or '**/')");
	if (n > 1 && s[n - 1] == '/')
		return shk_policy_fail(ctx, false, "ends with '/': an exec path names a file");
	return shk_policy_parse_glob(ctx, v, SHK_GLOB_PATH, &e->path_glob, &e->path);
}

static int parse_argv(struct pctx *ctx, json_t *a, struct exec_rule *e)
{
	size_t n, i;
	json_t *v;

	if (!json_is_array(a))
		return shk_policy_fail(ctx, false, "expected an array of strings, got %s",
				       shk_policy_type_name(a));
	n = json_array_size(a);
	if (n == 0)
		return shk_policy_fail(ctx, false, "must not be empty (use [\"**\"] for any "
				       "arguments, or leave argv out)");
	if (n > SHK_ARGV_MAX_ELEMS)
		return shk_policy_fail(ctx, false, "more than %d patterns", SHK_ARGV_MAX_ELEMS);
	e->argv = calloc(n, sizeof(*e->argv));
	e->argv_src = calloc(n, sizeof(*e->argv_src));
	if (!e->argv || !e->argv_src)
		return -ENOMEM;
	e->has_argv = true;
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);
		int r = 0;

		e->argc = i + 1;
		shk_policy_push_index(ctx, i);
		if (s && !strcmp(s, "*"))
			e->argv[i].kind = SHK_ARGV_ONE;
		else if (s && !strcmp(s, "**"))
			e->argv[i].kind = SHK_ARGV_ANY;
		else
			e->argv[i].kind = SHK_ARGV_GLOB;
		if (e->argv[i].kind != SHK_ARGV_GLOB)
			e->argv_src[i] = strdup(s);
		else
			r = shk_policy_parse_glob(ctx, v, SHK_GLOB_ARG, &e->argv[i].glob, &e->argv_src[i]);
		shk_policy_pop(ctx);
		if (r < 0)
			return r;
		if (!e->argv_src[i])
			return -ENOMEM;
	}
	return 0;
}

static int parse_exec_rule(struct pctx *ctx, json_t *o, void *rule)
{
	struct exec_rule *e = rule;
	static const char *const known[] = { "name", "tool", "path", "argv", "action",
					     "cost_usd", "repeat_guard", NULL };
	int r;

	if (!json_is_object(o))
		return shk_policy_fail(ctx, false, "a rule is an object, got %s", shk_policy_type_name(o));
	if ((r = shk_policy_check_keys(ctx, o, known)) < 0)
		return r;
	if (!json_object_get(o, "action"))
		return shk_policy_fail(ctx, false, "missing required field \"action\"");
	if (!json_object_get(o, "path") && !json_object_get(o, "argv"))
		return shk_policy_fail(ctx, false, "an exec rule needs \"path\", \"argv\" or both");
	if ((r = SHK_WITH_MEMBER(ctx, o, "name", shk_policy_parse_name(ctx, v_, &e->name))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "tool", shk_policy_parse_tool(ctx, v_, &e->tool))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "path", parse_exec_path(ctx, v_, e))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "argv", parse_argv(ctx, v_, e))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "action", shk_policy_parse_action(ctx, v_, &e->action))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "cost_usd", shk_policy_parse_cost(ctx, v_, &e->cost_usd))) < 0 ||
	    (r = SHK_WITH_MEMBER(ctx, o, "repeat_guard",
	                         shk_policy_parse_repeat_guard(ctx, v_, &e->no_repeat_guard))) < 0)
		return r;
	return 0;
}

/* The common frame of a section: {"default": ACTION, "rules": [...]}. */
int shk_policy_parse_section(struct pctx *ctx, const char *sec_name, json_t *sec, shk_action *def,
                         bool *implicit, json_t **ret_rules)
{
	static const char *const known[] = { "default", "rules", NULL };
	static const char *const known_exec[] = { "default", "rules", "loader_env", "interp_env",
	                                           "interp_env_scope", NULL };
	json_t *rules;
	int r;

	*ret_rules = NULL;
	*implicit = true;
	if (!sec)
		return 0;
	if (!json_is_object(sec))
		return shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(sec));
	r = shk_policy_check_keys(ctx, sec, strcmp(sec_name, "exec") == 0 ? known_exec : known);
	if (r < 0)
		return r;
	if (json_object_get(sec, "default")) {
		*implicit = false;
		r = SHK_WITH_MEMBER(ctx, sec, "default", shk_policy_parse_action(ctx, v_, def));
		if (r < 0)
			return r;
	}
	rules = json_object_get(sec, "rules");
	if (rules && !json_is_array(rules))
		return shk_policy_fail_at(ctx, "rules", false, "expected an array of %s rules, got %s",
					  sec_name, shk_policy_type_name(rules));
	*ret_rules = rules;
	return 0;
}

/* Names seen so far in a section, by a jansson object used as a hash set
 * (name -> rule index): comparing each name with every earlier one takes
 * 86 s for a 4 MB policy of 85 000 rules. */
static int check_unique_name(struct pctx *ctx, json_t *seen, const char *mine, size_t i)
{
	json_t *j;

	if (!mine)
		return 0;
	if ((j = json_object_get(seen, mine)))
		return shk_policy_fail_at(ctx, "name", false,
					  "rule name \"%.60s\" is already used by rule %lld", mine,
					  (long long)json_integer_value(j));
	return json_object_set_new(seen, mine, json_integer((json_int_t)i)) < 0 ? -ENOMEM : 0;
}

/*
 * The "rules" array of a section, each rule parsed by parse() into a
 * calloc'd array of stride-sized elements (one zeroed element more). The
 * name of each rule (a char * at name_off) must be unique in the section.
 * *ret_n counts the rules started, so the caller frees what a failure left
 * half-parsed.
 */
int shk_policy_parse_rules(struct pctx *ctx, json_t *rules, size_t stride, size_t name_off,
			   int (*parse)(struct pctx *, json_t *, void *), void **ret_arr, size_t *ret_n)
{
	char *arr = calloc(json_array_size(rules) + 1, stride);
	json_t *v, *seen = json_object();
	size_t i;
	int r = 0;

	if (!arr || !seen) {
		free(arr);
		json_decref(seen);
		return -ENOMEM;
	}
	*ret_arr = arr;
	shk_policy_push(ctx, "rules");
	json_array_foreach(rules, i, v) {
		shk_policy_push_index(ctx, i);
		*ret_n = i + 1;
		r = parse(ctx, v, arr + i * stride);
		if (r >= 0)
			r = check_unique_name(ctx, seen, *(char **)(void *)(arr + i * stride + name_off), i);
		shk_policy_pop(ctx);
		if (r < 0)
			break;
	}
	shk_policy_pop(ctx);
	json_decref(seen);
	return r;
}

/* "interp_env_scope": "exec" (the default: interpreter variables are judged
 * on every exec, like loader variables) or "interpreter" (only on an exec
 * of their own interpreter, by file name: shackle/execenv.h). */
static int parse_interp_scope(struct pctx *ctx, json_t *v, struct shk_policy *p)
{
	const char *s = json_string_value(v);

	if (!json_is_string(v))
		return shk_policy_fail(ctx, false, "expected \"exec\" or \"interpreter\", got %s",
				       shk_policy_type_name(v));
	if (strcmp(s, "exec") && strcmp(s, "interpreter"))
		return shk_policy_fail(ctx, false,
				       "unknown scope \"%.40s\" (expected exec or interpreter)", s);
	p->exec_interp_scoped = !strcmp(s, "interpreter");
	return 0;
}

int shk_policy_parse_exec(struct pctx *ctx, json_t *sec, struct shk_policy *p)
{
	json_t *rules;
	void *arr = NULL;
	int r;

	p->exec_default = SHK_ACTION_ALLOW;
	shk_policy_push(ctx, "exec");
	r = shk_policy_parse_section(ctx, "exec", sec, &p->exec_default, &p->exec_default_implicit, &rules);
	/* "loader_env": what an exec whose environment sets LD_PRELOAD & co.
	 * gets at least; by default what the section's default says, so an
	 * allowlist cannot be sidestepped by loading code into an allowed
	 * program, and a permissive policy stays permissive */
	p->exec_loader_env = p->exec_default;
	if (r >= 0 && sec && json_object_get(sec, "loader_env"))
		r = SHK_WITH_MEMBER(ctx, sec, "loader_env",
		                    shk_policy_parse_action(ctx, v_, &p->exec_loader_env));
	/* "interp_env": the same for interpreter variables (PYTHONPATH & co.,
	 * shackle/execenv.h), judged only for their own interpreter; a knob of
	 * its own because they are often set globally where LD_* are not */
	p->exec_interp_env = p->exec_default;
	if (r >= 0 && sec && json_object_get(sec, "interp_env"))
		r = SHK_WITH_MEMBER(ctx, sec, "interp_env",
		                    shk_policy_parse_action(ctx, v_, &p->exec_interp_env));
	if (r >= 0 && sec && json_object_get(sec, "interp_env_scope"))
		r = SHK_WITH_MEMBER(ctx, sec, "interp_env_scope", parse_interp_scope(ctx, v_, p));
	if (r < 0 || !rules)
		goto out;
	r = shk_policy_parse_rules(ctx, rules, sizeof(*p->exec), offsetof(struct exec_rule, name),
				   parse_exec_rule, &arr, &p->nexec);
	p->exec = arr;
out:
	shk_policy_pop(ctx);
	return r;
}

size_t shk_policy_exec_rule_count(const shk_policy *p)
{
	return p->nexec;
}

int shk_policy_exec_rule(const shk_policy *p, size_t i, shk_exec_rule_info *ret)
{
	const struct exec_rule *e;

	if (i >= p->nexec)
		return -ERANGE;
	e = &p->exec[i];
	*ret = (shk_exec_rule_info){
		.name = e->name,
		.tool = e->tool,
		.path = e->path,
		.argv = e->has_argv ? (const char *const *)e->argv_src : NULL,
		.argc = e->argc,
		.has_argv = e->has_argv,
		.action = e->action,
		.cost_usd = e->cost_usd,
		.repeat_guard = !e->no_repeat_guard,
	};
	return 0;
}

shk_action shk_policy_exec_default(const shk_policy *p)
{
	return p->exec_default;
}

shk_action shk_policy_exec_loader_env(const shk_policy *p)
{
	return p->exec_loader_env;
}

shk_action shk_policy_exec_interp_env(const shk_policy *p)
{
	return p->exec_interp_env;
}

bool shk_policy_exec_interp_scoped(const shk_policy *p)
{
	return p->exec_interp_scoped;
}

bool shk_policy_exec_default_implicit(const shk_policy *p)
{
	return p->exec_default_implicit;
}

