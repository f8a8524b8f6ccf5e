/* SPDX-License-Identifier: MIT */
/*
 * The judge shackle-run plugs into the supervisor: observation → tool call
 * (policy rule, tool name, params, fresh nonce, estimated cost) → static
 * action → shk_session_evaluate → audit decision entry (written before the
 * kernel is answered) → shk_session_commit → verdict.
 */
#ifndef SHACKLE_JUDGE_PIPELINE_H
#define SHACKLE_JUDGE_PIPELINE_H

#include <shackle/audit.h>
#include <shackle/policy.h>
#include <shackle/proplink.h>
#include <shackle/scope.h>
#include <shackle/decide.h>
#include <shackle/session.h>

#include "judge/obs.h"

#define SHK_PIPE_TRACE 32
/* A source's settles that wait for Redis; more failures than that are left
 * to the lease (charged at their estimate) */
#define SHK_PIPELINE_SETTLE_RETRIES 16

/* A file named by a literal path in an exec rule, by inode and content:
 * a hard link, an fd, a memfd or a byte-identical copy of it is matched as
 * that path. */
struct shk_exec_alias {
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	int64_t size;
	uint8_t sha256[32];
	bool has_sha;
};

struct shk_resolver; /* background host-rule resolution (resolver.c) */
struct shk_hitl;     /* the operator channel and held calls (hitl.h) */

struct shk_pipeline {
	shk_policy *policy;          /* host rule addresses are refreshed in place */
	shk_session *session;
	shk_ledger *ledger;          /* NULL: nothing is allowed */
	uint64_t next_nonce;
	uint64_t calls;
	struct shk_resolver *resolver;
	/* Operator channel: a HITL verdict parks the call there. NULL: no
	 * channel (non-interactive), a HITL verdict is a block at once. */
	struct shk_hitl *hitl;
	/* The session's model gateway, IPv4 address (network byte order) and
	 * port (0: none). The agent's TCP connects to it are its transport, not
	 * tool calls: every model request over them is judged by the gateway,
	 * so a reconnect is no repeat and a tripped breaker is answered as the
	 * provider would (docs/gateway.md). */
	uint8_t gateway_addr[4];
	uint16_t gateway_port;
	/* The session's SDK socket (NULL: none): the agent's connects to it
	 * carry SP/1.0 messages, each pre_exec judged there. Known by its
	 * file's inode (sdk_dev, sdk_ino), not its name: the agent owns the
	 * socket's directory and may put another socket under that name. */
	const char *sdk_path;
	dev_t sdk_dev;
	ino_t sdk_ino;
	bool ledger_failed;          /* an append failed: everything is denied */
	int ledger_errno;
	/* recent tool calls for the breaker_trip entry (ring) */
	struct {
		int64_t time_ns;
		char tool[SHK_POLICY_TOOL_MAX];
		char params_hash[SHK_SHA256_HEX_LEN + 1];
		const char *verdict;
	} trace[SHK_PIPE_TRACE];
	size_t ntrace;
	uint64_t hitl_blocked;
	/* Set by `shackle attach` around one shk_pipeline_judge: the kernel let
	 * this call pass on a human approval (single-use allow entry). It is
	 * judged with static action allow under this rule name, at no cost (the
	 * approval's own decision charged it). NULL: the policy's rule. */
	const char *approval_rule;
	/* Set by `shackle attach` around one shk_pipeline_judge: what the
	 * kernel already did with this call ("allowed (rule)", "refused
	 * (breaker)", ...), logged as inputs.kernel of its decision. NULL:
	 * nothing is added. */
	const char *kernel_answer;
	struct shk_exec_alias *aliases;
	size_t naliases;
	/* The policy's shared scope (docs/shared-state.md), NULL: none. Every
	 * call reserves there before decide() (shared.c). scope_log gets its
	 * lines: connection lost and re-made, calls refused for it. */
	shk_scope *scope;
	shk_scope_log_fn scope_log;
	void *scope_log_ctx;
	char scope_trip_pending[SHK_SCOPE_TEXT_MAX]; /* a trip Redis has not taken yet */
	/* A source's settles Redis did not take, retried before the next call
	 * until Redis answers them (shared.c) */
	struct shk_settle_retry {
		uint64_t nonce;
		double actual_usd;
	} settle_retry[SHK_PIPELINE_SETTLE_RETRIES];
	size_t nsettle_retry;
	/* Redis' answers to those retries, kept until an entry that carries
	 * them (shared.retried) is written: a call that fails on the way
	 * leaves them to the next entry, the session's end to session_end.
	 * Together with settle_retry at most SHK_PIPELINE_SETTLE_RETRIES. */
	struct shk_settle_answer {
		uint64_t nonce;
		bool settled;
		int64_t actual_uusd, spent_uusd, reserved_uusd;
		uint64_t ops;
	} settle_answer[SHK_PIPELINE_SETTLE_RETRIES];
	size_t nsettle_answer;
	/* Proposals allowed that name a command, and the one the exec being
	 * judged carries out (judge/links.h) */
	shk_proplink_ring links;
	shk_proplink_entry link;
	bool linked;
	/* The document of the call being judged, reset after each call (one
	 * chunk kept): no allocation per call for it. busy: a judgement inside
	 * a judgement takes a document of its own. Freed by
	 * shk_pipeline_free_scratch. */
	shk_doc *scratch;
	bool scratch_busy;
};

void shk_pipeline_free_scratch(struct shk_pipeline *p);

/* Build the alias table from the policy's literal exec paths (at start). */
int shk_pipeline_load_aliases(struct shk_pipeline *p);
/* unix_alias.c: unix rules also match with their directory resolved */
int shk_pipeline_load_unix_aliases(struct shk_pipeline *p);
void shk_pipeline_free_aliases(struct shk_pipeline *p);

/* Resolve every host rule of the policy (getaddrinfo) and install the
 * addresses; returns how many host rules resolved to nothing. */
int shk_pipeline_resolve_hosts(struct shk_pipeline *p);

/* Re-resolve host rules every interval on a thread of its own (DNS never
 * blocks the loop); shk_pipeline_tick installs the results. */
int shk_pipeline_resolver_start(struct shk_pipeline *p, int64_t interval_ns);
void shk_pipeline_resolver_stop(struct shk_pipeline *p);

/* Host addresses the resolver thread found, installed (on the loop). */
void shk_pipeline_resolver_install(struct shk_pipeline *p);
/* aliases.c: the rule path a file is known as (by inode, or by content:
 * then *by_content), NULL if none. */
const char *shk_pipeline_alias_of(struct shk_pipeline *p, const struct shk_exec_file *f, bool *by_content);

/* shared.c. Before evaluate: retry what did not reach Redis before (a
 * trip, a source's settles), reserve tc's estimate and take the breaker;
 * *rd is what Redis answered, *view what decide() is shown (an error:
 * view->unavailable), *ret_shared the entry's "shared" (with "retried":
 * the answers to retries that no entry carries yet, *ret_carried of them).
 * 0 or -ENOMEM. */
int shk_pipeline_shared_read(struct shk_pipeline *p, const shk_toolcall *tc, shk_scope_read *rd,
			     shk_session_shared *view, shk_doc *doc, shk_val **ret_shared,
			     size_t *ret_carried);
/* The entry that carried the first `carried` answers (shared_read,
 * shared_settle, shared_end) is in the log: they are dropped. Until then
 * they are kept for the next entry written. */
void shk_pipeline_shared_logged(struct shk_pipeline *p, size_t carried);
/* At the session's end, before session_end: a trip still pending and the
 * settles still waiting are retried once more. *ret_shared (NULL: nothing
 * to say) is session_end's "shared": the budget's scope, "retried" (every
 * answer no entry carries yet, *ret_carried of them), "left": the settles
 * Redis did not take, charged at their estimate when their lease runs out,
 * with the "error" that stopped them, and "trip": what came of the trip
 * (ok, or its own error: left unknown to the scope). 0 or -ENOMEM. */
int shk_pipeline_shared_end(struct shk_pipeline *p, shk_doc *doc, shk_val **ret_shared, size_t *ret_carried);
/* Once the verdict is final, before its entry: a call not allowed gives
 * its reservation back, an allowed one that no source reports on is settled
 * at its estimate (as the session charges it; later: its source will).
 * What Redis answered goes into shared as "then", so that every change of
 * the scope's spend is in some log (docs/audit.md, "Shared scopes"). A
 * failure of Redis is recorded there; the return is 0 or -ENOMEM. */
int shk_pipeline_shared_then(struct shk_pipeline *p, bool later, const shk_toolcall *tc, const shk_outcome *o,
			     const shk_scope_read *rd, shk_doc *doc, shk_val *shared);
/* After the entry: a trip of the session trips the scope. answered: the
 * reservation was given back or settled by shared_then; else (the call
 * failed on the way, o NULL: denied) it is given back here. */
void shk_pipeline_shared_done(struct shk_pipeline *p, bool later, const shk_toolcall *tc,
			      const shk_outcome *o, const shk_scope_read *rd, bool answered);
/* Whether obs's source reports the call's actual cost (source.h settle):
 * then an allowed call stays reserved until it does. */
bool shk_pipeline_settled_later(const struct shk_obs *obs);
/* The operator channel's reset. shared_breaker: NULL when the breaker is
 * the session's own, else the id of the scope that shares it ("org/acme"),
 * *ret_open whether it is (or may be) open.
 * shared_reset: close the scope's breaker for every session of it; 0 or a
 * negative errno with why. */
const char *shk_pipeline_shared_breaker(struct shk_pipeline *p, bool *ret_open);
int shk_pipeline_shared_reset(struct shk_pipeline *p, const char *operator_id, char *why, size_t len);
/* A source's post-execution report: settle nonce at its actual cost. *ret_val:
 * what the post_exec entry records (NULL when the budget is not shared),
 * with "retried" when answers to earlier retries wait for an entry
 * (*ret_carried of them). */
int shk_pipeline_shared_settle(struct shk_pipeline *p, uint64_t nonce, double actual_usd, shk_doc *doc,
			       shk_val **ret_val, size_t *ret_carried);

/* The shared scope as Redis holds it now, for a source's "get state"
 * (source.h shared): the budget read afresh (shk_scope_peek), the breaker
 * as the subscriber knows it. trip_pending: a trip of this session not yet
 * in Redis (read under the judge's lock by the caller). Without the judge's
 * lock: the scope serialises its own connection. -ENOENT without a scope. */
struct shk_source_shared;
int shk_pipeline_shared_state(struct shk_pipeline *p, bool trip_pending, struct shk_source_shared *ret);

/* What the judge concluded about one call. */
struct shk_pipeline_verdict {
	shk_verdict verdict;         /* DENY also when it could not be judged */
	shk_reason reason;
	bool held;                   /* HITL, parked on the operator channel */
	uint64_t nonce;              /* the call's, 0 when it got none */
	int64_t seq;                 /* its decision entry's, -1 when none was written */
	char rule[64];               /* the matched rule, "" for a default */
	uint64_t tool_call;          /* shk_judgement.tool_call */
};

/* What takes a call out of the repeat guard, for its decision's inputs
 * (replay reads them): "tool_call" (the seq of the decision of the exec, or
 * of the proposal, its process belongs to) and "repeat_guard": false (its
 * rule's). The third, a proposal's exec, is inputs.proposal (links.h).
 * 0 or -ENOMEM. */
int shk_pipeline_ident_inputs(uint64_t tool_call, bool no_repeat_guard, shk_doc *doc, shk_val *in);

/* Judge one observation of any kind (judge/kinds.h): 0 with *ret filled,
 * or a negative errno (then *ret denies). */
int shk_pipeline_judge_obs(struct shk_pipeline *p, const struct shk_obs *obs, struct shk_pipeline_verdict *ret);

/* shk_judge_fn / shk_tick_fn for shk_sup_config (ctx = the pipeline). */
int shk_pipeline_judge(void *ctx, const struct shk_obs *obs, struct shk_judgement *ret);
/* Whether an IPv4 or IPv6 connect or send of the agent can ever be
 * allowed: to the session's gateway, or by the policy
 * (shk_policy_net_may_allow_ip). */
bool shk_pipeline_may_allow_ip(const struct shk_pipeline *p);
void shk_pipeline_tick(void *ctx);

#endif
