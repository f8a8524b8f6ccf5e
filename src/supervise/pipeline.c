/* SPDX-License-Identifier: MIT */
/*
 * From an observation to a verdict, with the audit entry written before the
 * verdict leaves this file. Any failure on the way is a denial.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include <shackle/canon.h>
#include <shackle/json.h>
#include <shackle/redact.h>

#include "supervise/exec_env.h"
#include "supervise/hitl.h"
#include "supervise/pipeline.h"
#include "util/linux.h"

/* ---- host rules ----------------------------------------------------------- */

static size_t resolve_one(const char *host, shk_net_addr *out, size_t max)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	size_t n = 0;

	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	for (struct addrinfo *a = res; a && n < max; a = a->ai_next) {
		memset(&out[n], 0, sizeof(out[n]));
		if (a->ai_family == AF_INET) {
			out[n].family = SHK_NET_INET4;
			memcpy(out[n].addr, &((struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
		} else if (a->ai_family == AF_INET6) {
			out[n].family = SHK_NET_INET6;
			memcpy(out[n].addr, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		n++;
	}
	freeaddrinfo(res);
	return n;
}

int shk_pipeline_resolve_hosts(struct shk_pipeline *p)
{
	size_t nrules = shk_policy_net_rule_count(p->policy);
	int unresolved = 0;

	for (size_t i = 0; i < nrules; i++) {
		shk_net_rule_info info;
		shk_net_addr addrs[32];
		size_t n;

		if (shk_policy_net_rule(p->policy, i, &info) < 0 || info.selector != SHK_NET_SEL_HOST)
			continue;
		n = resolve_one(info.host, addrs, 32);
		if (n == 0)
			unresolved++;
		/* a failed refresh clears the rule: allow-by-host fails closed */
		shk_policy_set_host_addrs(p->policy, i, addrs, n);
	}
	return unresolved;
}

/* ---- tool calls ----------------------------------------------------------- */

/* ---- background resolution ------------------------------------------------ */

#define RESOLVE_MAX 32

struct shk_resolver {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, ready;
	int64_t interval_ns;
	size_t n;
	struct {
		size_t rule;
		char *host;
		shk_net_addr addrs[RESOLVE_MAX];
		size_t naddrs;
	} *r;
};

static void *resolver_main(void *arg)
{
	struct shk_resolver *rs = arg;
	struct timespec ts;

	pthread_mutex_lock(&rs->mu);
	while (!rs->stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += rs->interval_ns / 1000000000LL;
		while (!rs->stop && pthread_cond_timedwait(&rs->cv, &rs->mu, &ts) != ETIMEDOUT)
			;
		if (rs->stop)
			break;
		pthread_mutex_unlock(&rs->mu);
		for (size_t i = 0; i < rs->n; i++) {
			shk_net_addr a[RESOLVE_MAX];
			size_t k = resolve_one(rs->r[i].host, a, RESOLVE_MAX);
			pthread_mutex_lock(&rs->mu);
			memcpy(rs->r[i].addrs, a, sizeof(a));
			rs->r[i].naddrs = k;
			pthread_mutex_unlock(&rs->mu);
		}
		pthread_mutex_lock(&rs->mu);
		rs->ready = true;
	}
	pthread_mutex_unlock(&rs->mu);
	/* Stopped: the loop has detached us and forgotten rs, which is ours now. */
	for (size_t i = 0; i < rs->n; i++)
		free(rs->r[i].host);
	free(rs->r);
	pthread_mutex_destroy(&rs->mu);
	pthread_cond_destroy(&rs->cv);
	free(rs);
	return NULL;
}

int shk_pipeline_resolver_start(struct shk_pipeline *p, int64_t interval_ns)
{
	size_t nrules = shk_policy_net_rule_count(p->policy);
	struct shk_resolver *rs = calloc(1, sizeof(*rs));
	sigset_t all, old;
	int r;

	if (!rs || !(rs->r = calloc(nrules ? nrules : 1, sizeof(*rs->r)))) {
		free(rs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nrules; i++) {
		shk_net_rule_info info;
		if (shk_policy_net_rule(p->policy, i, &info) < 0 || info.selector != SHK_NET_SEL_HOST)
			continue;
		rs->r[rs->n].rule = i;
		if (!(rs->r[rs->n].host = strdup(info.host))) {
			for (size_t j = 0; j < rs->n; j++)
				free(rs->r[j].host);
			free(rs->r);
			free(rs);
			return -ENOMEM;
		}
		rs->n++;
	}
	rs->interval_ns = interval_ns;
	pthread_mutex_init(&rs->mu, NULL);
	pthread_cond_init(&rs->cv, NULL);
	p->resolver = rs;
	if (rs->n == 0)
		return 0; /* nothing to refresh: no thread */
	/* born with every signal blocked: forwarded signals belong to the loop */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&rs->thread, NULL, resolver_main, rs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		for (size_t i = 0; i < rs->n; i++)
			free(rs->r[i].host);
		rs->n = 0;
		return -r;
	}
	return 0;
}

void shk_pipeline_resolver_stop(struct shk_pipeline *p)
{
	struct shk_resolver *rs = p->resolver;

	if (!rs)
		return;
	if (rs->n) {
		/* Read before unlocking: once stopped, the thread frees rs. */
		pthread_t thread = rs->thread;

		pthread_mutex_lock(&rs->mu);
		rs->stop = true;
		pthread_cond_broadcast(&rs->cv);
		pthread_mutex_unlock(&rs->mu);
		/* a getaddrinfo in progress cannot be interrupted: let it be */
		pthread_detach(thread);
	} else {
		free(rs->r);
		pthread_mutex_destroy(&rs->mu);
		pthread_cond_destroy(&rs->cv);
		free(rs);
	}
	p->resolver = NULL;
}

/* On the loop thread (the only one that matches): install fresh results. */
static void resolver_install(struct shk_pipeline *p)
{
	struct shk_resolver *rs = p->resolver;

	if (!rs || !rs->n || pthread_mutex_trylock(&rs->mu) != 0)
		return;
	if (rs->ready) {
		for (size_t i = 0; i < rs->n; i++)
			shk_policy_set_host_addrs(p->policy, rs->r[i].rule, rs->r[i].addrs, rs->r[i].naddrs);
		rs->ready = false;
	}
	pthread_mutex_unlock(&rs->mu);
}

/* ---- exec aliases ---------------------------------------------------------- */

#define ALIAS_MAX_HASH (256LL << 20)

static int sha256_fd(int fd, uint8_t out[32])
{
	crypto_hash_sha256_state st;
	char buf[65536];
	ssize_t n;

	crypto_hash_sha256_init(&st);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crypto_hash_sha256_update(&st, (const unsigned char *)buf, (size_t)n);
	crypto_hash_sha256_final(&st, out);
	return n < 0 ? -errno : 0;
}

static bool literal(const char *path)
{
	return path && path[0] == '/' && !strpbrk(path, "*?[{");
}

int shk_pipeline_load_aliases(struct shk_pipeline *p)
{
	size_t n = shk_policy_exec_rule_count(p->policy);

	p->aliases = calloc(n ? n : 1, sizeof(*p->aliases));
	if (!p->aliases)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct shk_exec_alias *a = &p->aliases[p->naliases];
		shk_exec_rule_info info;
		struct stat st;
		int fd;

		if (shk_policy_exec_rule(p->policy, i, &info) < 0 || !literal(info.path))
			continue;
		fd = open(info.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue; /* nothing there: the path rule alone applies */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			snprintf(a->path, sizeof(a->path), "%s", info.path);
			a->dev = st.st_dev;
			a->ino = st.st_ino;
			a->size = st.st_size;
			a->has_sha = st.st_size <= ALIAS_MAX_HASH && sha256_fd(fd, a->sha256) == 0;
			p->naliases++;
		}
		close(fd);
	}
	return shk_pipeline_load_unix_aliases(p);
}

void shk_pipeline_free_aliases(struct shk_pipeline *p)
{
	free(p->aliases);
	p->aliases = NULL;
	p->naliases = 0;
}

/* The rule path this file is (same inode, or same size and content: then
 * *by_content). */
static const char *alias_of(struct shk_pipeline *p, const struct shk_exec_file *f, bool *by_content)
{
	uint8_t sha[32];
	bool hashed = false;

	*by_content = false;
	for (size_t i = 0; i < p->naliases; i++) {
		struct shk_exec_alias *a = &p->aliases[i];
		if (a->dev == f->dev && a->ino == f->ino)
			return strcmp(a->path, f->path) ? a->path : NULL;
	}
	for (size_t i = 0; i < p->naliases; i++) {
		struct shk_exec_alias *a = &p->aliases[i];
		if (!a->has_sha || a->size != f->size || f->fd < 0)
			continue;
		if (!hashed) {
			char pp[64];
			snprintf(pp, sizeof(pp), "/proc/self/fd/%d", f->fd);
			int fd = open(pp, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			if (fd < 0)
				return NULL;
			hashed = sha256_fd(fd, sha) == 0;
			close(fd);
			if (!hashed)
				return NULL;
		}
		if (memcmp(sha, a->sha256, 32) == 0) {
			*by_content = true;
			return a->path;
		}
	}
	return NULL;
}

/* ---- tool calls ----------------------------------------------------------- */

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
	const char *alias = alias_of(p, f, &by_content);
	shk_policy_match cur, own;
	int r;

	if (alias && (r = shk_array_append(matched_as, shk_cstring(doc, alias))) < 0)
		return r;
	r = shk_policy_match_exec(p->policy, alias ? alias : f->path, argv, argc, &cur);
	if (r < 0)
		return r;
	/* A copy is only ever held to its original's rule, never let off by
	 * it: the copy is a file the agent may rewrite between our judgement
	 * and the kernel's open (the exec stop compares the inode, not the
	 * bytes). A copy of an allowlisted program under a default deny ran
	 * whatever was written into it (red-team finding). */
	if (alias && by_content) {
		if ((r = shk_policy_match_exec(p->policy, f->path, argv, argc, &own)) < 0)
			return r;
		if (stricter(cur.action, own.action))
			cur = own;
	}
	if (first || stricter(m->action, cur.action))
		*m = cur;
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
	/* read in one scan with the program (exec.c loader_program) */
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

static int exec_call(struct shk_pipeline *p, const struct shk_obs_exec *x, shk_doc *doc,
                     shk_val **ret_params, shk_policy_match *m)
{
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

static int net_call(struct shk_pipeline *p, const struct shk_obs_net *n, shk_doc *doc,
                    shk_val **ret_params, shk_policy_match *m)
{
	struct shk_net_dest d;
	shk_val *params = shk_object(doc);
	int r;

	net_dest(n, &d);
	if (!params)
		return -ENOMEM;
	if (d.family == SHK_NET_UNIX) {
		char name[sizeof(n->unix_name) + 2];
		size_t at = d.unix_abstract ? 1 : 0, nl = n->unix_len;

		/* every byte: an abstract name may hold NULs, and "@evil" was
		 * logged for "\0evil\0x" (the policy matched all the bytes:
		 * red-team finding); canonical JSON writes them \u0000 */
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

/* ---- audit -------------------------------------------------------------------- */

/* snprintf(dst, n, "%s", src) without the printf machinery (per call) */
static void copy_str(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = 0;
}

static void trace_push(struct shk_pipeline *p, int64_t now, const shk_toolcall *tc, shk_verdict v)
{
	size_t i = p->ntrace % SHK_PIPE_TRACE;

	p->trace[i].time_ns = now;
	copy_str(p->trace[i].tool, sizeof(p->trace[i].tool), tc->tool_name);
	copy_str(p->trace[i].params_hash, sizeof(p->trace[i].params_hash),
	         tc->params_digest_ok ? tc->params_digest : "");
	p->trace[i].verdict = shk_verdict_str(v);
	p->ntrace++;
}

static int log_trip(struct shk_pipeline *p, int64_t now, const shk_outcome *o, shk_doc *doc)
{
	shk_audit_tool_trace tr[SHK_PIPE_TRACE];
	size_t n = p->ntrace < SHK_PIPE_TRACE ? p->ntrace : SHK_PIPE_TRACE;
	size_t first = p->ntrace - n;
	shk_val *counters = shk_object(doc);
	shk_audit_breaker_trip b = {
		.time_ns = now, .call_number = p->calls, .trigger = shk_reason_str(o->reason),
		.counters = counters, .trace = tr, .trace_len = n, .containment = "deny_all",
	};

	for (size_t i = 0; i < n; i++) {
		size_t k = (first + i) % SHK_PIPE_TRACE;
		tr[i] = (shk_audit_tool_trace){ p->trace[k].time_ns, p->trace[k].tool,
		                                 p->trace[k].params_hash, p->trace[k].verdict };
	}
	if (counters) {
		shk_object_set_str(counters, "total_calls", shk_int(doc, (int64_t)o->total_calls));
		shk_object_set_str(counters, "repeat_count", shk_int(doc, (int64_t)o->repeat_count));
		shk_object_set_str(counters, "window_count", shk_int(doc, o->window_count));
		shk_object_set_str(counters, "budget_remaining_usd", shk_real(doc, o->budget_remaining_usd));
	}
	return shk_ledger_append_breaker_trip(p->ledger, &b);
}

/* Non-interactive: a HITL verdict is a block at once (SP/1.0 §3.4), recorded
 * as a held call that expired without an operator. */
static int block_hitl(struct shk_pipeline *p, int64_t now, const shk_toolcall *tc)
{
	shk_audit_hitl h = {
		.time_ns = now, .call_number = p->calls, .state = "expired", .nonce = tc->nonce,
		.args_digest = tc->params_digest_ok ? tc->params_digest : "",
	};
	int r = shk_ledger_append_hitl(p->ledger, &h);

	if (r == 0)
		r = shk_session_pending_set(p->session, tc->nonce, SHK_PENDING_EXPIRED);
	p->hitl_blocked++;
	return r;
}

static int judge_call(struct shk_pipeline *p, const struct shk_obs *obs, shk_toolcall *tc,
                      const shk_policy_match *m, shk_doc *doc, shk_verdict *ret, bool *ret_held)
{
	int64_t now = shk_realtime_ns();
	shk_outcome o;
	shk_audit_decision d;
	shk_val *redacted = NULL, *in = NULL;
	int r;

	/* a failure is Rule 1's to report, unless the keyed digest failed */
	if (shk_audit_prepare_call(p->policy, tc) == -EIO)
		return -EIO;
	/* the log shows the policy's redacted form (and the keyed digest) */
	if ((r = shk_policy_redact_logged(p->policy, doc, tc->params, &redacted)) < 0)
		return r;
	r = shk_session_evaluate(p->session, tc, m->action, now, &o);
	if (r < 0)
		return r;
	if (p->kernel_answer) {
		shk_val *k = shk_cstring(doc, p->kernel_answer);

		if (!k || !(in = shk_object(doc)) || shk_object_set_str(in, "kernel", k) < 0)
			return -ENOMEM;
	}
	p->calls++;
	d = (shk_audit_decision){
		.time_ns = now, .pid = obs->pid, .tid = obs->tid, .exe = obs->exe[0] ? obs->exe : NULL,
		.call_number = p->calls, .call = tc, .action = m->action, .rule = m->rule_name,
		.outcome = &o, .params_redacted = redacted, .inputs = in,
	};
	/* The transition first, so that the entry says what is enforced:
	 * evaluate() checked the same tables on this thread just now, so a
	 * commit cannot fail in practice; if it does, the call is denied and
	 * logged as the capacity denial it is (never an ALLOW that did not
	 * happen). A ledger failure after the commit denies this and every
	 * later call, so the counted call only makes the session stricter. */
	if (shk_session_commit(p->session, tc, &o, now) < 0) {
		o.verdict = SHK_DENY;
		o.reason = SHK_R_SESSION_CAPACITY;
		o.layer = SHK_LAYER_SESSION;
		o.trips = false;
	}
	/* no verdict leaves without its entry in the log */
	if ((r = shk_ledger_append_decision(p->ledger, &d)) < 0)
		return r;
	trace_push(p, now, tc, o.verdict);
	if (o.trips && !o.circuit_tripped && (r = log_trip(p, now, &o, doc)) < 0)
		return r;
	if (p->hitl)
		shk_hitl_note(p->hitl, obs, tc, &o, now);
	if (o.verdict == SHK_HITL) {
		/* with an operator channel the call waits for a person; without
		 * one (or when it cannot be parked) it is blocked at once */
		if (p->hitl && obs->can_hold && shk_policy_guard(p->policy)->hitl_timeout_s > 0 &&
		    shk_hitl_hold(p->hitl, obs, obs->notif_id, tc, m, &o, now) == 0)
			*ret_held = true;
		else if (p->ledger_failed || (r = block_hitl(p, now, tc)) < 0)
			return p->ledger_failed ? -EIO : r;
	}
	*ret = o.verdict;
	return 0;
}

int shk_pipeline_judge(void *ctx, const struct shk_obs *obs, struct shk_judgement *ret)
{
	struct shk_pipeline *p = ctx;
	shk_doc *doc = NULL;
	shk_val *params = NULL;
	shk_policy_match m;
	shk_toolcall tc;
	shk_verdict v = SHK_DENY;
	bool held = false;
	int r;

	ret->verdict = SHK_JUDGE_DENY;
	ret->deny_errno = EPERM;
	if (!p->ledger || p->ledger_failed)
		return 0;
	if ((r = shk_doc_new(&doc)) < 0)
		return r;
	memset(&m, 0, sizeof(m));
	r = obs->kind == SHK_OBS_EXEC ? exec_call(p, &obs->exec, doc, &params, &m)
	                              : net_call(p, &obs->net, doc, &params, &m);
	if (r == 0 && p->approval_rule) {
		m.action = SHK_ACTION_ALLOW;
		m.rule_name = p->approval_rule;
		m.cost_usd = 0;
	}
	if (r == 0) {
		memset(&tc, 0, sizeof(tc));
		tc.tool_name = m.tool;
		tc.params = params;
		tc.nonce = ++p->next_nonce;
		tc.estimated_cost_usd = m.cost_usd;
		r = judge_call(p, obs, &tc, &m, doc, &v, &held);
		if (r < 0 && r != -ENOMEM && r != -EINVAL) {
			/* the ledger refused the entry: from now on nothing passes */
			p->ledger_failed = true;
			p->ledger_errno = -r;
		}
	}
	shk_doc_free(doc);
	if (r == 0 && v == SHK_ALLOW)
		ret->verdict = SHK_JUDGE_ALLOW;
	else if (r == 0 && held)
		ret->verdict = SHK_JUDGE_HOLD;
	return r < 0 ? r : 0;
}

void shk_pipeline_tick(void *ctx, int64_t now_ns)
{
	struct shk_pipeline *p = ctx;

	int r;

	if (p->ledger && !p->ledger_failed && (r = shk_ledger_tick(p->ledger, shk_realtime_ns())) < 0) {
		p->ledger_failed = true;
		p->ledger_errno = -r;
	}
	(void)now_ns;
	resolver_install(p);
}
