/* SPDX-License-Identifier: MIT */
/*
 * judge/judged.h — a judged session: everything a run of shackle-run or of
 * `shackle attach` judges with, made and torn down in one place.
 *
 *   shk_judged_load          the policy (one read: the document logged is
 *                            the one enforced), exec and unix aliases, host
 *                            rules resolved now and refreshed off the loop,
 *                            the SP/1.0 session
 *   shk_judged_open_log      the policy's shared scope on Redis, when it
 *                            has one (it needs the session id; a scope
 *                            that cannot be opened ends the run here),
 *                            the key and the audit log (judge/logfiles.h),
 *                            session_start with the command line redacted
 *                            like the params of every call
 *   shk_judged_open_channel  the operator channel (judge/hitl.h), unless the
 *                            run is non-interactive
 *   shk_judged_end           session_end, the log closed
 *   shk_judged_free          everything else
 *
 * The steps are apart because each caller has work in between (attach
 * loads its programs from the policy before any log exists). Errors: a
 * negative errno and js->err, for the CLI to print once.
 */
#ifndef SHACKLE_JUDGE_JUDGED_H
#define SHACKLE_JUDGE_JUDGED_H

#include <pthread.h>
#include <stdbool.h>

#include <shackle/audit.h>
#include <shackle/json.h>
#include <shackle/session.h>

#include "judge/hitl.h"
#include "judge/logfiles.h"
#include "judge/pipeline.h"
#include "judge/source.h"

/* getaddrinfo reports no TTL: host rules are refreshed this often */
#define SHK_JUDGED_RESOLVE_NS (300LL * 1000000000LL)

struct shk_judged {
	struct shk_pipeline pipe;    /* policy, session, ledger, resolver, channel */
	shk_session_config cfg;      /* the guard of the policy; logged in session_start */
	shk_doc *doc;                /* the policy document, the logged argv */
	const shk_val *policy_doc;
	struct shk_logfiles files;   /* the log, its key and where they are */
	int unresolved;              /* host rules that resolved to nothing at load */
	/* Serialises the judge between the loop thread and the threads of
	 * sources that are not the kernel (judge/source.h, source.c). */
	pthread_mutex_t mu;
	pthread_cond_t cv;           /* a held source call was answered */
	bool mu_init;
	char err[PATH_MAX + 512];
};

struct shk_judged_log {
	const char *audit, *key;     /* NULL: the defaults (logfiles.h) */
	const char *session_id;
	const char *const *argv;     /* the command line session_start records */
	size_t argc;
	const char *version;
	shk_fsync_policy fsync;
	/* Where the shared scope's lines go (connection lost, re-made, calls
	 * refused for it); thread-safe, may be NULL. */
	shk_scope_log_fn scope_log;
	void *scope_log_ctx;
};

/* resolve_ns 0: SHK_JUDGED_RESOLVE_NS. js is zeroed first. */
int shk_judged_load(struct shk_judged *js, const char *policy_path, int64_t resolve_ns);
int shk_judged_open_log(struct shk_judged *js, const struct shk_judged_log *o);

/* Whether a run has an operator channel: not with --non-interactive, nor
 * under CI=true unless a control socket was named. */
bool shk_judged_interactive(bool non_interactive, const char *control_path);
/* ho: the caller's kernel hooks, notice, control path and hello info; the
 * session id, hitl_timeout_s, max_pending and our pid are filled in here. */
int shk_judged_open_channel(struct shk_judged *js, const char *session_id, struct shk_hitl_options ho);
/* Held calls are cancelled in the log (before session_end). */
void shk_judged_close_channel(struct shk_judged *js);

/* session_end with these counters (may be NULL), then the log is closed;
 * a second call is a no-op. */
int shk_judged_end(struct shk_judged *js, int exit_status, const shk_val *counters);
void shk_judged_free(struct shk_judged *js);

/* The loop holds the lock around its judge, tick and channel work, so
 * that sources on other threads (shk_judged_source) judge in turn. */
static inline void shk_judged_lock(struct shk_judged *js)
{
	pthread_mutex_lock(&js->mu);
}
static inline void shk_judged_unlock(struct shk_judged *js)
{
	pthread_mutex_unlock(&js->mu);
}

/*
 * The judge for sources other than the kernel (judge/source.h), bound to
 * js: thread-safe, callable from any thread while js lives. A held call
 * waits until the loop that drives js's operator channel (shk_hitl_handle,
 * shk_hitl_tick) answers it or the channel closes. Static actions:
 * docs/decide.md, "Calls of other sources".
 */
struct shk_source_judge shk_judged_source(struct shk_judged *js);

#endif
