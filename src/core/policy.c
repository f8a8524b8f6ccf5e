/* SPDX-License-Identifier: MIT */
/* Policy v1: loading, the top level and "guard", digest and accessors. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <shackle/canon.h>

#include "core/policy_internal.h"

static void set_err(shk_parse_error *err, const char *source, int line, int col, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));

static void set_err(shk_parse_error *err, const char *source, int line, int col, const char *fmt,
                    ...)
{
	va_list ap;

	if (!err)
		return;
	snprintf(err->source, sizeof(err->source), "%s", source ? source : "<policy>");
	err->line = line;
	err->column = col;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
}

void shk_policy_push(struct pctx *ctx, const char *key)
{
	if (ctx->path.n < SHK_JPATH_MAX)
		ctx->path.seg[ctx->path.n] = (struct shk_jseg){ .key = key };
	ctx->path.n++;
}

void shk_policy_push_index(struct pctx *ctx, size_t index)
{
	if (ctx->path.n < SHK_JPATH_MAX)
		ctx->path.seg[ctx->path.n] = (struct shk_jseg){ .index = index };
	ctx->path.n++;
}

void shk_policy_pop(struct pctx *ctx)
{
	ctx->path.n--;
}

/* "net.rules[2].port"; "policy" for the document itself. */
static void path_name(const struct shk_jpath *path, char *out, size_t outlen)
{
	size_t n = path->n < SHK_JPATH_MAX ? path->n : SHK_JPATH_MAX, used = 0;

	out[0] = 0;
	for (size_t i = 0; i < n && used < outlen; i++) {
		const struct shk_jseg *s = &path->seg[i];
		int r = s->key ? snprintf(out + used, outlen - used, "%s%s", i ? "." : "", s->key)
			       : snprintf(out + used, outlen - used, "[%zu]", s->index);
		if (r < 0)
			break;
		used += (size_t)r;
	}
	if (!out[0])
		snprintf(out, outlen, "policy");
}

__attribute__((format(printf, 3, 0)))
static int vfail(struct pctx *ctx, bool at_key, const char *fmt, va_list ap)
{
	char where[96], msg[160];
	struct shk_jpath located = ctx->path;
	int line = 0, col = 0;

	if (located.n > SHK_JPATH_MAX)
		located.n = SHK_JPATH_MAX;
	shk_json_locate(ctx->text, ctx->len, &located, at_key, &line, &col);
	path_name(&ctx->path, where, sizeof(where));
	vsnprintf(msg, sizeof(msg), fmt, ap);
	set_err(ctx->err, ctx->source, line, col, "%s: %s", where, msg);
	return -EINVAL;
}

int shk_policy_fail(struct pctx *ctx, bool at_key, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(ctx, at_key, fmt, ap);
	va_end(ap);
	return r;
}

int shk_policy_fail_at(struct pctx *ctx, const char *key, bool at_key, const char *fmt, ...)
{
	va_list ap;
	int r;

	shk_policy_push(ctx, key);
	va_start(ap, fmt);
	r = vfail(ctx, at_key, fmt, ap);
	va_end(ap);
	shk_policy_pop(ctx);
	return r;
}

int shk_policy_check_keys(struct pctx *ctx, json_t *obj, const char *const *known)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool ok = false;

		for (size_t i = 0; known[i] && !ok; i++)
			ok = !strcmp(key, known[i]);
		if (!ok)
			return shk_policy_fail_at(ctx, key, true, "unknown field \"%s\"", key);
	}
	return 0;
}

const char *shk_policy_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "a value";
}

/* Integer member in [0, max]; absent leaves *ret unchanged. */
static int get_uint(struct pctx *ctx, json_t *obj, const char *key, uint64_t max, uint64_t *ret)
{
	json_t *v = json_object_get(obj, key);
	json_int_t i;

	if (!v)
		return 0;
	if (!json_is_integer(v))
		return shk_policy_fail_at(ctx, key, false, "expected a non-negative integer, got %s",
					  shk_policy_type_name(v));
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i > max)
		return shk_policy_fail_at(ctx, key, false, "%lld is out of range (0 to %llu)",
					  (long long)i, (unsigned long long)max);
	*ret = (uint64_t)i;
	return 0;
}

static int get_u32(struct pctx *ctx, json_t *obj, const char *key, uint32_t *ret)
{
	uint64_t v = *ret;
	int r = get_uint(ctx, obj, key, UINT32_MAX, &v);

	*ret = (uint32_t)v;
	return r;
}

static int get_number(struct pctx *ctx, json_t *obj, const char *key, double lo, double hi,
                      double *ret)
{
	json_t *v = json_object_get(obj, key);
	double d;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return shk_policy_fail_at(ctx, key, false, "expected a number, got %s",
					  shk_policy_type_name(v));
	d = json_number_value(v);
	if (!isfinite(d) || d < lo || d > hi)
		return shk_policy_fail_at(ctx, key, false, "%g is out of range (%g to %g)", d, lo, hi);
	*ret = d;
	return 0;
}

static int get_bool(struct pctx *ctx, json_t *obj, const char *key, bool *ret)
{
	json_t *v = json_object_get(obj, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return shk_policy_fail_at(ctx, key, false, "expected true or false, got %s",
					  shk_policy_type_name(v));
	*ret = json_is_true(v);
	return 0;
}

static int get_hitl_mode(struct pctx *ctx, json_t *obj, shk_hitl_mode *ret)
{
	static const shk_hitl_mode modes[] = { SHK_HITL_NEVER, SHK_HITL_ALWAYS,
					       SHK_HITL_ON_THRESHOLD };
	json_t *v = json_object_get(obj, "hitl_mode");

	if (!v)
		return 0;
	for (size_t i = 0; i < 3 && json_is_string(v); i++)
		if (!strcmp(json_string_value(v), shk_hitl_mode_name(modes[i]))) {
			*ret = modes[i];
			return 0;
		}
	return shk_policy_fail_at(ctx, "hitl_mode", false,
				  "expected \"never\", \"always\" or \"on_threshold\"");
}

static const shk_guard_config guard_defaults = {
	.hitl_mode = SHK_HITL_NEVER,
	.hitl_budget_threshold = 0.2,
	.hitl_timeout_s = 300,
	.trip_on_deny = true,
};

static int parse_guard_fields(struct pctx *ctx, json_t *o, shk_guard_config *g)
{
	uint64_t total = g->max_total_calls;
	int r;

	if ((r = get_number(ctx, o, "budget_usd", 0, 1e12, &g->budget_usd)) < 0 ||
	    (r = get_u32(ctx, o, "max_repeat_calls", &g->max_repeat_calls)) < 0 ||
	    (r = get_bool(ctx, o, "error_amplification", &g->error_amplification)) < 0 ||
	    (r = get_hitl_mode(ctx, o, &g->hitl_mode)) < 0 ||
	    (r = get_number(ctx, o, "hitl_budget_threshold", 0, 1, &g->hitl_budget_threshold)) < 0 ||
	    (r = get_u32(ctx, o, "hitl_timeout_s", &g->hitl_timeout_s)) < 0 ||
	    (r = get_u32(ctx, o, "window_duration_s", &g->window_duration_s)) < 0 ||
	    (r = get_u32(ctx, o, "window_max_calls", &g->window_max_calls)) < 0 ||
	    (r = get_uint(ctx, o, "max_total_calls", INT64_MAX, &total)) < 0 ||
	    (r = get_bool(ctx, o, "trip_on_deny", &g->trip_on_deny)) < 0)
		return r;
	g->max_total_calls = total;
	return 0;
}

static int parse_guard(struct pctx *ctx, json_t *o, shk_guard_config *g)
{
	static const char *const known[] = {
		"budget_usd", "max_repeat_calls", "error_amplification", "hitl_mode",
		"hitl_budget_threshold", "hitl_timeout_s", "window_duration_s",
		"window_max_calls", "max_total_calls", "trip_on_deny", NULL,
	};
	int r;

	*g = guard_defaults;
	if (!o)
		return 0;
	shk_policy_push(ctx, "guard");
	if (!json_is_object(o)) {
		r = shk_policy_fail(ctx, false, "expected an object, got %s", shk_policy_type_name(o));
		goto out;
	}
	if ((r = shk_policy_check_keys(ctx, o, known)) < 0 || (r = parse_guard_fields(ctx, o, g)) < 0)
		goto out;
	if ((g->window_duration_s == 0) != (g->window_max_calls == 0)) {
		r = shk_policy_fail_at(ctx, g->window_duration_s ? "window_duration_s" : "window_max_calls",
				       true, "window_duration_s and window_max_calls must both be set "
				       "(> 0) or both be 0");
		goto out;
	}
	if (g->hitl_mode == SHK_HITL_ON_THRESHOLD && g->budget_usd == 0)
		r = shk_policy_fail_at(ctx, "hitl_mode", false,
				       "\"on_threshold\" needs a budget (budget_usd > 0)");
out:
	shk_policy_pop(ctx);
	return r;
}

/* The redaction matches a key only as a whole name (src/core/redact.c):
 * leading dashes are the option's, '=' and ':' its separator. A key with
 * any of them, or a blank, would be accepted and never hide anything. */
static bool redact_key_ok(const char *k, size_t len)
{
	if (k[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)k[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static int parse_redact(struct pctx *ctx, json_t *a, struct shk_policy *p)
{
	size_t i;
	json_t *v;
	int r = 0;

	if (!a)
		return 0;
	shk_policy_push(ctx, "redact");
	if (!json_is_array(a)) {
		r = shk_policy_fail(ctx, false, "expected an array of strings, got %s",
				    shk_policy_type_name(a));
		goto out;
	}
	p->redact = calloc(json_array_size(a) + 1, sizeof(*p->redact));
	if (!p->redact) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(a, i, v) {
		shk_policy_push_index(ctx, i);
		if (!json_is_string(v) || json_string_length(v) == 0)
			r = shk_policy_fail(ctx, false, "expected a non-empty string");
		else if (!redact_key_ok(json_string_value(v), json_string_length(v)))
			r = shk_policy_fail(ctx, false, "\"%.40s\" can never match: give the name "
			                    "alone (letters, digits, '_', '-', '.', no leading '-')",
			                    json_string_value(v));
		else if (!(p->redact[p->nredact++] = strdup(json_string_value(v))))
			r = -ENOMEM;
		shk_policy_pop(ctx);
		if (r < 0)
			break;
	}
out:
	shk_policy_pop(ctx);
	return r;
}

static int parse_top(struct pctx *ctx, json_t *root, struct shk_policy *p)
{
	static const char *const known[] = { "version", "description", "guard", "redact",
					     "exec", "net", "shared", "models", NULL };
	json_t *v;
	int r;

	if (!json_is_object(root))
		return shk_policy_fail(ctx, false, "a policy is a JSON object, got %s",
				       shk_policy_type_name(root));
	if ((r = shk_policy_check_keys(ctx, root, known)) < 0)
		return r;
	v = json_object_get(root, "version");
	if (!v)
		return shk_policy_fail(ctx, false, "missing required field \"version\" (1)");
	if (json_is_string(v))
		return shk_policy_fail_at(ctx, "version", false, "expected the number 1, got the string \"%s\"",
					  json_string_value(v));
	if (!json_is_integer(v))
		return shk_policy_fail_at(ctx, "version", false, "expected the number 1, got %s",
					  shk_policy_type_name(v));
	if (json_integer_value(v) != 1)
		return shk_policy_fail_at(ctx, "version", false,
					  "unsupported policy version %" JSON_INTEGER_FORMAT
					  " (this shackle reads version 1)", json_integer_value(v));
	v = json_object_get(root, "description");
	if (v && !json_is_string(v))
		return shk_policy_fail_at(ctx, "description", false, "expected a string, got %s",
					  shk_policy_type_name(v));
	if ((r = parse_guard(ctx, json_object_get(root, "guard"), &p->guard)) < 0 ||
	    (r = parse_redact(ctx, json_object_get(root, "redact"), p)) < 0 ||
	    (r = shk_policy_parse_exec(ctx, json_object_get(root, "exec"), p)) < 0 ||
	    (r = shk_policy_parse_net(ctx, json_object_get(root, "net"), p)) < 0 ||
	    (r = shk_policy_parse_shared(ctx, json_object_get(root, "shared"), p)) < 0 ||
	    (r = shk_policy_parse_models(ctx, json_object_get(root, "models"), p)) < 0)
		return r;
	return 0;
}

static int compute_digest(const char *text, size_t len, const char *source, struct shk_policy *p,
                          shk_parse_error *err)
{
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	int r;

	r = shk_doc_new(&doc);
	if (r < 0)
		return r;
	r = shk_json_parse(doc, text, len, source, &v, err);
	if (r >= 0)
		r = shk_canon_sha256(v, p->digest);
	if (r >= 0)
		shk_hex(p->digest, sizeof(p->digest), p->digest_hex);
	else if (r == -EINVAL && err && !err->text[0])
		set_err(err, source, 0, 0, "policy cannot be canonicalised");
	shk_doc_free(doc);
	return r;
}

int shk_policy_load_buffer(const char *text, size_t len, const char *source,
                           shk_policy **ret_policy, shk_parse_error *ret_err)
{
	struct pctx ctx = { .text = text, .len = len, .source = source, .err = ret_err };
	struct shk_policy *p;
	json_error_t jerr;
	json_t *root;
	int r;

	if (ret_err)
		memset(ret_err, 0, sizeof(*ret_err));
	if (!ret_policy || (!text && len))
		return -EINVAL;
	*ret_policy = NULL;
	root = json_loadb(text ? text : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		char msg[sizeof(ret_err->text)];
		int line, col;

		shk_json_explain_error(text, len, &jerr, &line, &col, msg, sizeof(msg));
		set_err(ret_err, source, line, col, "%s", msg);
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		json_decref(root);
		return -ENOMEM;
	}
	r = parse_top(&ctx, root, p);
	json_decref(root);
	if (r >= 0)
		r = compute_digest(text, len, source, p, ret_err);
	if (r < 0) {
		if (r == -ENOMEM)
			set_err(ret_err, source, 0, 0, "out of memory");
		shk_policy_free(p);
		return r;
	}
	*ret_policy = p;
	return 0;
}

static int read_all(int fd, char **ret_buf, size_t *ret_len)
{
	size_t len = 0, cap = 8192;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > SHK_POLICY_MAX_BYTES) {
				free(buf);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > SHK_POLICY_MAX_BYTES) {
		free(buf);
		return -EFBIG;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int shk_policy_load_file(const char *path, shk_policy **ret_policy, shk_parse_error *ret_err)
{
	return shk_policy_load_file_doc(path, NULL, ret_policy, NULL, ret_err);
}

int shk_policy_load_file_doc(const char *path, shk_doc *doc, shk_policy **ret_policy,
                             shk_val **ret_val, shk_parse_error *ret_err)
{
	char *buf = NULL;
	size_t len = 0;
	int fd, r;

	if (ret_err)
		memset(ret_err, 0, sizeof(*ret_err));
	if (!path || !ret_policy || (doc && !ret_val))
		return -EINVAL;
	*ret_policy = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		set_err(ret_err, path, 0, 0, "cannot open: %s", strerror(-r));
		return r;
	}
	r = read_all(fd, &buf, &len);
	close(fd);
	if (r < 0) {
		set_err(ret_err, path, 0, 0, "cannot read: %s",
			r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
		return r;
	}
	r = shk_policy_load_buffer(buf, len, path, ret_policy, ret_err);
	if (r == 0 && doc && (r = shk_json_parse(doc, buf, len, path, ret_val, ret_err)) < 0) {
		shk_policy_free(*ret_policy);
		*ret_policy = NULL;
	}
	free(buf);
	return r;
}

static void free_exec_rule(struct exec_rule *e)
{
	free(e->name);
	free(e->tool);
	free(e->path);
	shk_glob_free(&e->path_glob);
	for (size_t i = 0; i < e->argc; i++) {
		if (e->argv)
			shk_glob_free(&e->argv[i].glob);
		if (e->argv_src)
			free(e->argv_src[i]);
	}
	free(e->argv);
	free(e->argv_src);
}

static void free_net_rule(struct net_rule *n)
{
	free(n->name);
	free(n->tool);
	free(n->host);
	free(n->addrs);
	free(n->unix_src);
	shk_glob_free(&n->unix_glob);
	shk_glob_free(&n->unix_alias);
}

void shk_policy_free(shk_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nexec; i++)
		free_exec_rule(&p->exec[i]);
	for (size_t i = 0; i < p->nnet; i++)
		free_net_rule(&p->net[i]);
	for (size_t i = 0; i < p->nredact; i++)
		free(p->redact[i]);
	free(p->exec);
	free(p->net);
	free(p->redact);
	shk_policy_free_models(p);
	free(p);
}

const shk_guard_config *shk_policy_guard(const shk_policy *p)
{
	return &p->guard;
}

void shk_policy_digest(const shk_policy *p, uint8_t ret_digest[32])
{
	memcpy(ret_digest, p->digest, sizeof(p->digest));
}

const char *shk_policy_digest_hex(const shk_policy *p)
{
	return p->digest_hex;
}

size_t shk_policy_redact_count(const shk_policy *p)
{
	return p->nredact;
}

const char *shk_policy_redact_key(const shk_policy *p, size_t i)
{
	return i < p->nredact ? p->redact[i] : NULL;
}

const char *const *shk_policy_redact_keys(const shk_policy *p, size_t *ret_n)
{
	*ret_n = p->nredact;
	return (const char *const *)p->redact;
}

const char *shk_hitl_mode_name(shk_hitl_mode mode)
{
	switch (mode) {
	case SHK_HITL_NEVER: return "never";
	case SHK_HITL_ALWAYS: return "always";
	case SHK_HITL_ON_THRESHOLD: return "on_threshold";
	}
	return "?";
}

const char *shk_action_name(shk_action a)
{
	switch (a) {
	case SHK_ACTION_ALLOW: return "allow";
	case SHK_ACTION_DENY: return "deny";
	case SHK_ACTION_HITL: return "hitl";
	}
	return "?";
}
