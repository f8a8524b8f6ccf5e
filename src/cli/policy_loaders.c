/* SPDX-License-Identifier: MIT */
/*
 * `shackle policy check`: warnings about an allowlist that admits a
 * userland loader (shackle/loaders.h). The supervisor judges the program
 * such a loader is asked to run, as its table reads the loader's command
 * line, and watches its name to every open (docs/supervisor.md, Races);
 * what the table does not know of a loader is refused, but an allowlist
 * that does not need one is safer without it. Each loader
 * found on this machine, or installed there usually, is judged as an exec
 * of that file by the policy's own matching (as `policy explain --exec`).
 * Also: a models rule whose "ignore_input" drops the command of a proposal.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/loaders.h>

#include "cli/policy_json.h"

#define POLICY_TEXT_MAX (4 << 20)

static char *read_text(const char *file, size_t *ret_len)
{
	FILE *f = fopen(file, "rb");
	char *buf = f ? malloc(POLICY_TEXT_MAX) : NULL;
	size_t n = buf ? fread(buf, 1, POLICY_TEXT_MAX, f) : 0;

	if (f)
		fclose(f);
	*ret_len = n;
	return buf;
}

static bool seen(const struct policy_warnings *w, char (*judged)[PATH_MAX], const char *path)
{
	for (size_t i = 0; i < w->nchecked; i++)
		if (!strcmp(judged[i], path))
			return true;
	return false;
}

static int add(struct policy_warnings *w, const char *msg)
{
	char **v = realloc(w->v, (w->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	w->v = v;
	if (!(w->v[w->n] = strdup(msg)))
		return -ENOMEM;
	w->n++;
	return 0;
}

static int judge(struct policy_warnings *w, const char *file, const shk_policy *p,
                 const char *text, size_t len, const char *path)
{
	const char *argv[] = { path };
	shk_policy_match m;
	char msg[PATH_MAX + 512], where[64], who[160];
	int line = 0, col = 0;

	if (shk_policy_match_exec(p, path, argv, 1, &m) < 0 || m.action == SHK_ACTION_DENY)
		return 0;
	where[0] = 0;
	if (m.rule_index >= 0 && text &&
	    shk_policy_exec_rule_locate(text, len, (size_t)m.rule_index, &line, &col) == 0)
		snprintf(where, sizeof(where), "%d:%d:", line, col);
	if (m.rule_index < 0)
		snprintf(who, sizeof(who), "the exec default (%s)", shk_action_name(m.action));
	else if (m.rule_name)
		snprintf(who, sizeof(who), "rule \"%s\"", m.rule_name);
	else
		snprintf(who, sizeof(who), "rule %ld", m.rule_index);
	snprintf(msg, sizeof(msg),
	         "%s:%s %s %s %s, a userland loader: it runs a program named in its arguments, "
	         "judged and watched to its opens; deny it unless the agent needs it "
	         "(docs/exec.md, Userland loaders)", file, where, who,
	         m.action == SHK_ACTION_ALLOW ? "allows" : "holds for approval", path);
	return add(w, msg);
}

/* The loaders to judge: the usual paths, and what the globs find here. */
static int candidates(glob_t *g)
{
	const char *const *globs = shk_loader_search_globs();
	int r = 0;

	memset(g, 0, sizeof(*g));
	for (size_t i = 0; globs[i] && r == 0; i++) {
		r = glob(globs[i], i ? GLOB_APPEND : 0, NULL, g);
		if (r == GLOB_NOMATCH)
			r = 0;
	}
	return r == GLOB_NOSPACE ? -ENOMEM : 0;
}

int policy_loader_warnings(const char *file, const shk_policy *p, struct policy_warnings *w)
{
	const char *const *typical = shk_loader_typical_paths();
	char (*judged)[PATH_MAX] = NULL;
	char *text = NULL;
	size_t len = 0, total = 0;
	glob_t g;
	int r = 0;

	memset(w, 0, sizeof(*w));
	if (shk_policy_exec_default(p) == SHK_ACTION_ALLOW)
		return 0; /* not an allowlist: a deny rule is matched on the target */
	if ((r = candidates(&g)) < 0)
		return r;
	for (size_t i = 0; typical[i]; i++)
		total++;
	total += g.gl_pathc;
	text = read_text(file, &len);
	if (!(judged = calloc(total ? total : 1, sizeof(*judged))))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < total; i++) {
		const char *c = i < g.gl_pathc ? g.gl_pathv[i] : typical[i - g.gl_pathc];

		if (!shk_loader_by_name(c))
			continue;
		/* judged by the name it resolves to, as the supervisor does */
		if (!realpath(c, judged[w->nchecked]))
			snprintf(judged[w->nchecked], PATH_MAX, "%s", c);
		if (seen(w, judged, judged[w->nchecked]) || !shk_loader_by_name(judged[w->nchecked]))
			continue;
		r = judge(w, file, p, text, len, judged[w->nchecked]);
		w->nchecked++;
	}
	free(judged);
	free(text);
	globfree(&g);
	return r;
}

/* A proposal without its command is the same call every time: the repeat
 * guard counts different commands as one repeated call, and the proposal
 * no longer links to the exec it announces (docs/gateway.md, ignore_input). */
int policy_models_warnings(const char *file, const shk_policy *p, struct policy_warnings *w)
{
	char msg[PATH_MAX + 512], where[64], who[160];
	char *text = NULL;
	size_t len = 0;
	int r = 0, line, col;

	for (size_t i = 0; r == 0 && i < shk_policy_model_rule_count(p); i++) {
		shk_model_rule_info mr;

		shk_policy_model_rule(p, i, &mr);
		for (size_t k = 0; r == 0 && k < mr.nignore_input; k++) {
			if (strcmp(mr.ignore_input[k], "command") && strcmp(mr.ignore_input[k], "cmd"))
				continue;
			if (!text)
				text = read_text(file, &len);
			where[0] = 0;
			if (text && shk_policy_model_ignore_input_locate(text, len, i, k, &line, &col) == 0)
				snprintf(where, sizeof(where), "%d:%d:", line, col);
			if (mr.name)
				snprintf(who, sizeof(who), "models rule \"%s\"", mr.name);
			else
				snprintf(who, sizeof(who), "models rule %zu", i);
			snprintf(msg, sizeof(msg),
			         "%s:%s %s leaves \"%s\" out of the params of %s proposals: every one "
			         "is the same call to the repeat guard and none links to its exec "
			         "(docs/gateway.md, ignore_input)", file, where, who, mr.ignore_input[k],
			         mr.tool);
			r = add(w, msg);
		}
	}
	free(text);
	return r;
}

void policy_warnings_free(struct policy_warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	memset(w, 0, sizeof(*w));
}
