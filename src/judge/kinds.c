/* SPDX-License-Identifier: MIT */
/*
 * The kinds of calls the judge knows and how each becomes a tool call
 * (kinds.h): an exec (the file, its "#!" interpreters and the program ld.so
 * runs, each matched by the exec rules), a network call (its destination,
 * matched by the net rules), and a call a source other than the kernel
 * asked (judge/source.h: its tool name and params as given).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <shackle/json.h>

#include "judge/exec_env.h"
#include "judge/hitl.h"
#include "judge/internal.h"
#include "judge/kinds.h"
#include "judge/links.h"
#include "judge/pipeline.h"
#include "judge/source.h"

/* ---- exec ------------------------------------------------------------------ */

static int stricter(shk_action a, shk_action b)
{
	static const int rank[] = { [SHK_ACTION_ALLOW] = 0, [SHK_ACTION_HITL] = 1, [SHK_ACTION_DENY] = 2 };
	return rank[b] > rank[a];
}

/* Match one file with the argv it is run with; the strictest answer over
 * all files of an exec wins. */
static int match_file(struct shk_pipeline *p, const struct shk_exec_file *f,
                      const char *const *argv, size_t argc, shk_doc *doc, shk_val *matched_as,
                      bool first, shk_policy_match *m)
{
	bool by_content;
	const char *alias = shk_pipeline_alias_of(p, f, &by_content);
	shk_policy_match cur, own;
	bool exempt;
	int r;

	if (alias && (r = shk_array_append(matched_as, shk_cstring(doc, alias))) < 0)
		return r;
	r = shk_policy_match_exec(p->policy, alias ? alias : f->path, argv, argc, &cur);
	if (r < 0)
		return r;
	/* A copy is only ever held to its original's rule, never let off by
	 * it: the copy is a file the agent may rewrite between our judgement
	 * and the kernel's open (the exec stop compares the inode, not the
	 * bytes): a copy of an allowlisted program under a default deny would run
	 * whatever was written into it. */
	if (alias && by_content) {
		if ((r = shk_policy_match_exec(p->policy, f->path, argv, argc, &own)) < 0)
			return r;
		exempt = cur.no_repeat_guard && own.no_repeat_guard;
		if (stricter(cur.action, own.action))
			cur = own;
		cur.no_repeat_guard = exempt;
	}
	/* out of the repeat guard only when every file's rule says so */
	exempt = cur.no_repeat_guard && (first || m->no_repeat_guard);
	if (first || stricter(m->action, cur.action))
		*m = cur;
	m->no_repeat_guard = exempt;
	return 0;
}

/*
 * Match a file that runs with the NUL-separated argv in buf: a "#!"
 * interpreter gets "interp [arg] script argv[1..]" from the kernel, the
 * program ld.so runs gets ld.so's argv from its own name on. Judged with
 * what it really gets: a rule on `git push` must hold for a script named
 * "origin" whose "#!" line is "/usr/bin/git push".
 */
static int match_file_cmd(struct shk_pipeline *p, const struct shk_exec_file *f, const char *buf,
                          size_t len, shk_doc *doc, shk_val *matched_as, shk_policy_match *m)
{
	const char **v;
	size_t n = 0;
	int r;

	for (size_t off = 0; off < len; off += strlen(buf + off) + 1)
		n++;
	if (!(v = calloc(n + 1, sizeof(*v))))
		return -ENOMEM;
	n = 0;
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1)
		v[n++] = buf + off;
	r = match_file(p, f, v, n, doc, matched_as, false, m);
	free(v);
	return r;
}

/* ld.so run as a program with --preload, --audit or --library-path: the
 * same as the variables (its options come before the program's name) */
static bool loader_opts(const struct shk_obs_exec *x)
{
	/* read in one scan with the program (supervise/exec.c loader_program) */
	return x->has_loader_target && x->loader_code_opts;
}

/* The exec gets at least action a, as the built-in rule `rule`. */
static void at_least(shk_policy_match *m, shk_action a, const char *rule)
{
	if (!stricter(m->action, a))
		return;
	m->action = a;
	m->rule_index = -1;
	m->rule_name = rule;
	m->cost_usd = 0;
	m->no_repeat_guard = false;
}

/* A userland loader's command line the table cannot place: the exec is
 * denied (exec_call), and the log says which argument and why. */
static int loader_refused(const struct shk_obs_exec *x, shk_doc *doc, shk_val *params)
{
	char why[sizeof(x->loader_bad) + 128];

	snprintf(why, sizeof(why), "%s: %s", x->loader_refused, x->loader_bad);
	return shk_object_set_str(params, "loader_refused", shk_cstring(doc, why));
}

static int exec_params(const shk_policy *pol, const struct shk_obs_exec *x, shk_doc *doc,
                       shk_val *params, shk_val *matched_as, bool *ret_loader, bool *ret_interp)
{
	shk_val *av = shk_array(doc), *iv = shk_array(doc);
	int r;

	if (!av || !iv)
		return -ENOMEM;
	for (size_t i = 0; i < x->argc; i++)
		if ((r = shk_array_append(av, shk_cstring(doc, x->argv[i]))) < 0)
			return r;
	if ((r = shk_object_set_str(params, "path", shk_cstring(doc, x->file.path))) < 0 ||
	    (r = shk_object_set_str(params, "argv", av)) < 0 ||
	    (r = shk_object_set_str(params, "cwd", shk_cstring(doc, x->cwd))) < 0)
		return r;
	for (size_t i = 0; i < x->ninterp; i++)
		if ((r = shk_array_append(iv, shk_cstring(doc, x->interp[i].path))) < 0)
			return r;
	if (x->ninterp && (r = shk_object_set_str(params, "interpreters", iv)) < 0)
		return r;
	if (x->has_loader_target &&
	    (r = shk_object_set_str(params, "loader_target", shk_cstring(doc, x->loader_target.path))) < 0)
		return r;
	if ((x->has_loader_target || x->loader_refused) &&
	    (r = shk_object_set_str(params, "loader", shk_cstring(doc, x->loader_name))) < 0)
		return r;
	if (x->loader_refused && (r = loader_refused(x, doc, params)) < 0)
		return r;
	if (shk_val_len(matched_as) && (r = shk_object_set_str(params, "matched_as", matched_as)) < 0)
		return r;
	return shk_exec_env_params(x, shk_exec_families(pol, x, matched_as), doc, params, ret_loader,
	                           ret_interp);
}

static int exec_call(struct shk_pipeline *p, const struct shk_obs *obs, shk_doc *doc,
                     shk_val **ret_params, shk_policy_match *m)
{
	const struct shk_obs_exec *x = &obs->exec;
	shk_val *params = shk_object(doc), *matched_as = shk_array(doc);
	bool loader = false, interp = false;
	int r;

	if (!params || !matched_as)
		return -ENOMEM;
	/* the file named, every "#!" interpreter and the program ld.so is
	 * asked to run are judged by the same rules */
	r = match_file(p, &x->file, x->argv, x->argc, doc, matched_as, true, m);
	for (size_t i = 0; r == 0 && i < x->ninterp; i++)
		r = x->interp_cmd[i]
		        ? match_file_cmd(p, &x->interp[i], x->interp_cmd[i], x->interp_cmd_len[i], doc,
		                         matched_as, m)
		        : match_file(p, &x->interp[i], x->argv, x->argc, doc, matched_as, false, m);
	if (r == 0 && x->has_loader_target)
		r = x->loader_cmd
		        ? match_file_cmd(p, &x->loader_target, x->loader_cmd, x->loader_cmd_len, doc,
		                         matched_as, m)
		        : match_file(p, &x->loader_target, x->argv, x->argc, doc, matched_as, false, m);
	if (r == 0)
		r = exec_params(p->policy, x, doc, params, matched_as, &loader, &interp);
	/* evidence for the entry: m is not touched */
	if (r == 0)
		shk_links_exec(p, x);
	/* code loaded into the program by ld.so, or run by the interpreter
	 * itself: exec.loader_env / exec.interp_env at least */
	if (r == 0 && (loader || loader_opts(x)))
		at_least(m, shk_policy_exec_loader_env(p->policy), "exec.loader_env");
	if (r == 0 && interp)
		at_least(m, shk_policy_exec_interp_env(p->policy), "exec.interp_env");
	/* the program it would run is not known: fail closed */
	if (r == 0 && x->loader_refused)
		at_least(m, SHK_ACTION_DENY, "builtin:loader-cmdline");
	if (r < 0)
		return r;
	*ret_params = params;
	return 0;
}

/* ---- network ---------------------------------------------------------------- */

static void net_dest(const struct shk_obs_net *n, struct shk_net_dest *d)
{
	static const shk_net_op ops[] = {
		[SHK_OBS_CONNECT] = SHK_NET_OP_CONNECT, [SHK_OBS_SENDTO] = SHK_NET_OP_SEND,
		[SHK_OBS_SENDMSG] = SHK_NET_OP_SEND, [SHK_OBS_BIND] = SHK_NET_OP_BIND,
		[SHK_OBS_LISTEN] = SHK_NET_OP_LISTEN,
	};
	memset(d, 0, sizeof(*d));
	d->op = ops[n->op];
	d->port = n->port;
	memcpy(d->addr, n->addr, 16);
	d->family = n->family == AF_INET ? SHK_NET_INET4 : n->family == AF_INET6 ? SHK_NET_INET6 :
	            n->family == AF_UNIX ? SHK_NET_UNIX : SHK_NET_UNSPEC;
	if (n->socktype == SOCK_STREAM && (n->protocol == IPPROTO_TCP || n->protocol == 0))
		d->proto = SHK_NET_PROTO_TCP;
	else if (n->socktype == SOCK_DGRAM && (n->protocol == IPPROTO_UDP || n->protocol == 0))
		d->proto = SHK_NET_PROTO_UDP;
	else
		d->proto = SHK_NET_PROTO_OTHER;
	d->unix_name = n->unix_name;
	d->unix_len = n->unix_len;
	d->unix_abstract = n->unix_abstract || n->unix_unnamed;
}

static int net_call(struct shk_pipeline *p, const struct shk_obs *obs, shk_doc *doc,
                    shk_val **ret_params, shk_policy_match *m)
{
	const struct shk_obs_net *n = &obs->net;
	struct shk_net_dest d;
	shk_val *params = shk_object(doc);
	int r;

	net_dest(n, &d);
	if (!params)
		return -ENOMEM;
	if (d.family == SHK_NET_UNIX) {
		char name[sizeof(n->unix_name) + 2];
		size_t at = d.unix_abstract ? 1 : 0, nl = n->unix_len;

		/* every byte: an abstract name may hold NULs, and "@evil" would
		 * be logged for "\0evil\0x" (the policy matches all the
		 * bytes); canonical JSON writes them \u0000 */
		if (nl > sizeof(name) - 1 - at)
			nl = sizeof(name) - 1 - at;
		name[0] = '@';
		memcpy(name + at, n->unix_name, nl);
		r = shk_object_set_str(params, "unix", shk_string(doc, name, at + nl));
	} else {
		const char *fam = d.family == SHK_NET_INET4 ? "inet" : d.family == SHK_NET_INET6 ? "inet6" : NULL;
		char other[32];
		if (!fam) {
			snprintf(other, sizeof(other), "af_%d", n->family);
			fam = other;
		}
		if ((r = shk_object_set_str(params, "family", shk_cstring(doc, fam))) < 0 ||
		    (r = shk_object_set_str(params, "addr", shk_cstring(doc, n->addr_str))) < 0 ||
		    (r = shk_object_set_str(params, "port", shk_int(doc, n->port))) < 0)
			return r;
		r = shk_object_set_str(params, "proto", shk_cstring(doc, shk_net_proto_name(d.proto)));
	}
	if (r < 0)
		return r;
	*ret_params = params;
	/* built-in rule, before the policy: the agent never reaches the
	 * operator channel (docs/hitl.md) */
	if (p->hitl && d.family == SHK_NET_UNIX && !d.unix_abstract &&
	    shk_hitl_refuses(p->hitl, n->unix_name, n->unix_pathfd)) {
		memset(m, 0, sizeof(*m));
		m->rule_index = -1;
		m->action = SHK_ACTION_DENY;
		m->rule_name = "builtin:operator-channel";
		snprintf(m->tool, sizeof(m->tool), "net:%s", shk_net_op_name(d.op));
		return 0;
	}
	if (d.family == SHK_NET_UNSPEC) {
		/* a family the policy cannot name: a tool call that is denied */
		memset(m, 0, sizeof(*m));
		m->rule_index = -1;
		m->action = SHK_ACTION_DENY;
		snprintf(m->tool, sizeof(m->tool), "net:%s", shk_net_op_name(d.op));
		return 0;
	}
	return shk_policy_match_net(p->policy, &d, m);
}

/* A connect the supervisor performs itself (emulated, or CONTINUE under the
 * kernel hook with the address checked again) can be sent elsewhere. */
static bool net_modifiable(const struct shk_obs *obs)
{
	return obs->net.op == SHK_OBS_CONNECT && (obs->net.family == AF_INET || obs->net.family == AF_INET6);
}

/* ---- sources other than the kernel --------------------------------------------- */

/* The gateway's calls (model requests, proposals) get the "models" rules,
 * then models.default, then the exec default; an SDK's call the exec
 * default (docs/decide.md, "Calls of other sources"). */
static int source_call(struct shk_pipeline *p, const struct shk_obs *obs, shk_doc *doc,
                       shk_val **ret_params, shk_policy_match *m)
{
	const struct shk_source_call *c = obs->source.call;
	size_t len;

	(void)doc;
	if (!c || !c->tool || !c->params || shk_val_type(c->params) != SHK_OBJECT)
		return -EINVAL;
	if ((len = strlen(c->tool)) == 0 || len >= sizeof(m->tool))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	memcpy(m->tool, c->tool, len + 1);
	m->rule_index = -1;
	m->action = shk_policy_exec_default(p->policy);
	if ((c->kind == SHK_SOURCE_MODEL || c->kind == SHK_SOURCE_PROPOSAL) &&
	    shk_policy_match_model_call(p->policy, c->tool, len, m) < 0)
		return -EINVAL;
	/* decide() judges the estimate (invalid_cost for NaN or < 0) */
	m->cost_usd = c->estimated_cost_usd;
	*ret_params = (shk_val *)c->params; /* the caller's until judge() returns */
	return 0;
}

static uint64_t source_nonce(const struct shk_obs *obs)
{
	return obs->source.call->nonce;
}

static const char *const source_names[] = {
	[SHK_SOURCE_MODEL] = "model", [SHK_SOURCE_PROPOSAL] = "proposal", [SHK_SOURCE_SDK] = "sdk",
};

/* Who asked: the source's kind and its origin ("gateway", "sdk:AGENT"), and what
 * of the call is not in its params. */
static int source_inputs(const struct shk_obs *obs, shk_doc *doc, shk_val *in)
{
	const struct shk_source_call *c = obs->source.call;
	const char *kind = (size_t)c->kind < sizeof(source_names) / sizeof(source_names[0]) &&
	                   source_names[c->kind] ? source_names[c->kind] : "unknown";
	int r = shk_object_set_str(in, "source", shk_cstring(doc, kind));

	if (r == 0 && c->origin)
		r = shk_object_set_str(in, "origin", shk_cstring(doc, c->origin));
	/* what replay takes the signal from: it is not in the params */
	if (r == 0 && c->result_error_signal)
		r = shk_object_set_str(in, "result_error_signal", shk_bool(doc, true));
	/* copied into the entry's doc: a value belongs to one doc, and a
	 * held call's inputs outlive the source's */
	if (r == 0 && c->ignored_input)
		r = shk_object_set_str(in, "ignored_input", shk_val_copy(doc, c->ignored_input));
	return r;
}

static bool source_result_signal(const struct shk_obs *obs)
{
	return obs->source.call->result_error_signal;
}

/* ---- the table ------------------------------------------------------------------- */

static const struct shk_call_kind exec_kind = { .name = "exec", .call = exec_call };
static const struct shk_call_kind net_kind = { .name = "net", .call = net_call,
                                               .modifiable = net_modifiable };
static const struct shk_call_kind source_kind = {
	.name = "source", .call = source_call, .nonce = source_nonce, .inputs = source_inputs,
	.release = shk_source_release, .waiting = shk_source_waiting,
	.result_signal = source_result_signal,
};

static const struct shk_call_kind *const kinds[] = {
	[SHK_OBS_EXEC] = &exec_kind,
	[SHK_OBS_NET] = &net_kind,
	[SHK_OBS_SOURCE] = &source_kind,
};

const struct shk_call_kind *shk_call_kind_of(shk_obs_kind kind)
{
	return (size_t)kind < sizeof(kinds) / sizeof(kinds[0]) ? kinds[kind] : NULL;
}
