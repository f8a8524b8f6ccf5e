/* SPDX-License-Identifier: MIT */
/*
 * A judged session's lifetime: what shackle-run and `shackle attach` both
 * judge with, built the same way for both (judged.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shackle/policy.h>
#include <shackle/redact.h>

#include "judge/judged.h"
#include "util/linux.h"

__attribute__((format(printf, 3, 4)))
static int fail(struct shk_judged *js, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(js->err, sizeof(js->err), fmt, ap);
	va_end(ap);
	return r;
}

int shk_judged_load(struct shk_judged *js, const char *policy_path, int64_t resolve_ns)
{
	shk_parse_error pe;
	shk_val *v = NULL;
	int r;

	memset(js, 0, sizeof(*js));
	if ((r = -pthread_mutex_init(&js->mu, NULL)) < 0)
		return fail(js, r, "%s", strerror(-r));
	if ((r = -pthread_cond_init(&js->cv, NULL)) < 0) {
		pthread_mutex_destroy(&js->mu);
		return fail(js, r, "%s", strerror(-r));
	}
	js->mu_init = true;
	if ((r = shk_doc_new(&js->doc)) < 0)
		return fail(js, r, "%s: %s", policy_path, strerror(-r));
	if ((r = shk_policy_load_file_doc(policy_path, js->doc, &js->pipe.policy, &v, &pe)) < 0) {
		if (pe.line > 0)
			return fail(js, r, "%s:%d:%d: %s", pe.source, pe.line, pe.column, pe.text);
		/* no position: the file could not be read */
		return fail(js, r, "%s: %s", pe.source, pe.text);
	}
	js->policy_doc = v;
	if ((r = shk_pipeline_load_aliases(&js->pipe)) < 0)
		return fail(js, r, "%s: exec rule files: %s", policy_path, strerror(-r));
	js->unresolved = shk_pipeline_resolve_hosts(&js->pipe);
	r = shk_pipeline_resolver_start(&js->pipe, resolve_ns ? resolve_ns : SHK_JUDGED_RESOLVE_NS);
	if (r < 0)
		return fail(js, r, "cannot start the host resolver: %s", strerror(-r));
	js->cfg.guard = *shk_policy_guard(js->pipe.policy);
	if ((r = shk_session_new(&js->cfg, &js->pipe.session)) < 0)
		return fail(js, r, "cannot create the session: %s", strerror(-r));
	return 0;
}

/* The command line as session_start records it: with the policy's redact
 * list applied, like the params of every call. *ret: argv itself, or an
 * array the caller frees (its strings live in js->doc). */
static int logged_argv(struct shk_judged *js, const char *const *argv, size_t argc, const char ***ret)
{
	shk_val *av = shk_array(js->doc), *red = NULL;
	const char **out;
	int r = av ? 0 : -ENOMEM;

	for (size_t i = 0; r == 0 && i < argc; i++)
		r = shk_array_append(av, shk_cstring(js->doc, argv[i]));
	if (r == 0)
		r = shk_policy_redact_params(js->pipe.policy, js->doc, av, &red);
	if (r < 0)
		return r;
	*ret = (const char **)argv;
	if (!red)
		return 0;
	if (!(out = calloc(argc + 1, sizeof(*out))))
		return -ENOMEM;
	for (size_t i = 0; i < argc; i++)
		out[i] = shk_val_str(shk_array_at(red, i), NULL);
	*ret = out;
	return 0;
}

/* Before the log: a session whose scope cannot be reached does not start. */
static int open_scope(struct shk_judged *js, const struct shk_judged_log *o)
{
	const shk_shared_config *c = shk_policy_shared(js->pipe.policy);
	shk_scope_options so = { .config = c, .session_id = o->session_id, .log = o->scope_log,
	                         .ctx = o->scope_log_ctx };
	char why[SHK_SCOPE_WHY_MAX] = "";
	char server[SHK_SCOPE_HOST_MAX + 24];
	int r;

	if (!c || js->pipe.scope)
		return 0;
	if ((r = shk_scope_open(&so, &js->pipe.scope, why)) < 0) {
		js->pipe.scope = NULL;
		shk_scope_server_name(c, server, sizeof(server));
		return fail(js, r, "shared state: cannot open the policy's scope on %s: %s", server,
		            why[0] ? why : strerror(-r));
	}
	js->pipe.scope_log = o->scope_log;
	js->pipe.scope_log_ctx = o->scope_log_ctx;
	return 0;
}

int shk_judged_open_log(struct shk_judged *js, const struct shk_judged_log *o)
{
	shk_ledger_options lo = { .fsync = o->fsync };
	shk_ledger_session ls;
	const char **argv = NULL;
	int r;

	if ((r = open_scope(js, o)) < 0)
		return r;
	if ((r = shk_logfiles_prepare(&js->files, o->audit, o->key, o->session_id)) < 0)
		return fail(js, r, "%s", js->files.err);
	if ((r = logged_argv(js, o->argv, o->argc, &argv)) < 0)
		return fail(js, r, "%s: %s", js->files.log, strerror(-r));
	ls = (shk_ledger_session){
		.session_id = o->session_id, .policy = js->policy_doc,
		.policy_digest = shk_policy_digest_hex(js->pipe.policy),
		.argv = argv, .argc = o->argc, .version = o->version,
		.start_ns = shk_realtime_ns(), .config = &js->cfg,
	};
	r = shk_logfiles_open(&js->files, &ls, &lo, &js->pipe.ledger);
	if (argv != (const char **)o->argv)
		free(argv);
	if (r < 0)
		return fail(js, r, "%s", js->files.err);
	return 0;
}

bool shk_judged_interactive(bool non_interactive, const char *control_path)
{
	const char *ci = getenv("CI");

	return !non_interactive && !(ci && strcmp(ci, "true") == 0 && !control_path);
}

int shk_judged_open_channel(struct shk_judged *js, const char *session_id, struct shk_hitl_options ho)
{
	int r;

	ho.session_id = session_id;
	ho.timeout_s = shk_policy_guard(js->pipe.policy)->hitl_timeout_s;
	ho.max_held = js->cfg.max_pending;
	ho.supervisor_pid = getpid();
	r = shk_hitl_open(&js->pipe, &ho, &js->pipe.hitl);
	if (r < 0) {
		js->pipe.hitl = NULL;
		fail(js, r, "cannot open the operator channel (%s): calls that need a human are "
		     "blocked", strerror(-r));
	}
	return r;
}

void shk_judged_close_channel(struct shk_judged *js)
{
	if (!js->mu_init)
		return;
	shk_judged_lock(js);
	shk_hitl_close(js->pipe.hitl); /* held source calls are answered: denied */
	js->pipe.hitl = NULL;
	shk_judged_unlock(js);
}

int shk_judged_end(struct shk_judged *js, int exit_status, const shk_val *counters)
{
	shk_audit_session_end e = { .time_ns = shk_realtime_ns(), .exit_status = exit_status,
	                            .counters = counters };
	shk_doc *doc = NULL;
	shk_val *shared = NULL;
	size_t carried = 0;
	int r;

	if (!js->pipe.ledger)
		return 0;
	shk_judged_lock(js);
	/* no later call will retry them: a trip not yet in Redis and the
	 * settles still waiting get a last try, and what came of them (and of
	 * retries no entry carried) goes into session_end, so that verify
	 * --shared counts every settle and the log says whether the scope
	 * learnt of the trip */
	if (js->pipe.scope && shk_doc_new(&doc) == 0 &&
	    shk_pipeline_shared_end(&js->pipe, doc, &shared, &carried) == 0)
		e.shared = shared;
	r = shk_ledger_end(js->pipe.ledger, &e);
	if (r == 0)
		shk_pipeline_shared_logged(&js->pipe, carried);
	if (r == 0)
		r = shk_ledger_close(js->pipe.ledger);
	else
		shk_ledger_close(js->pipe.ledger);
	js->pipe.ledger = NULL;
	shk_judged_unlock(js);
	shk_doc_free(doc);
	return r;
}

void shk_judged_free(struct shk_judged *js)
{
	shk_judged_close_channel(js);
	if (js->pipe.ledger)
		shk_ledger_close(js->pipe.ledger); /* unfinished: verify says so */
	js->pipe.ledger = NULL;
	shk_logfiles_free(&js->files);
	shk_scope_close(js->pipe.scope);
	shk_session_free(js->pipe.session);
	shk_pipeline_resolver_stop(&js->pipe);
	shk_pipeline_free_aliases(&js->pipe);
	shk_pipeline_free_scratch(&js->pipe);
	shk_policy_free(js->pipe.policy);
	shk_doc_free(js->doc);
	if (js->mu_init) {
		pthread_cond_destroy(&js->cv);
		pthread_mutex_destroy(&js->mu);
	}
	memset(js, 0, sizeof(*js));
}
