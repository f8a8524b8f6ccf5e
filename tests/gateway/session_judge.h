/* SPDX-License-Identifier: MIT */
/*
 * A judge for the gateway built on the real shk_session (test and bench
 * code: src/judge is the product's). Header-only; one mutex serialises the
 * session as src/judge does with the supervisor's loop. A non-NULL log gets
 * a line per judgement and settlement. A call the session would hold for a
 * person is answered DENY at once: there is no person here.
 */
#ifndef SHACKLE_TEST_SESSION_JUDGE_H
#define SHACKLE_TEST_SESSION_JUDGE_H

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <shackle/canon.h>
#include <shackle/session.h>

#include "judge/source.h"

struct tjudge {
	pthread_mutex_t mu;
	shk_session *session;
	uint64_t next_nonce;
	FILE *log;
};

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int tj_judge(void *ctx, const struct shk_source_call *call, struct shk_source_answer *ret)
{
	struct tjudge *t = ctx;
	shk_toolcall tc = { .tool_name = call->tool, .params = call->params,
			    .estimated_cost_usd = call->estimated_cost_usd };
	char *params = NULL, *ign = NULL;
	size_t plen = 0, ilen = 0;
	shk_outcome o;
	int64_t now = now_ns();
	int r;

	pthread_mutex_lock(&t->mu);
	tc.nonce = ++t->next_nonce;
	shk_toolcall_prepare(&tc);
	if (call->result_error_signal) /* as src/judge/pipeline.c does */
		shk_toolcall_give_signal(&tc);
	r = shk_session_evaluate(t->session, &tc, SHK_ACTION_ALLOW, now, &o);
	if (r == 0)
		r = shk_session_commit(t->session, &tc, &o, now);
	if (r == 0)
		*ret = (struct shk_source_answer){ .verdict = o.verdict == SHK_ALLOW ? SHK_ALLOW : SHK_DENY,
						   .reason = o.reason, .nonce = tc.nonce };
	if (r == 0 && t->log) {
		shk_canon_dump(call->params, &params, &plen);
		if (call->ignored_input)
			shk_canon_dump(call->ignored_input, &ign, &ilen);
		fprintf(t->log, "judge %" PRIu64 " kind=%d tool=%s verdict=%s reason=%s est=%.9f sig=%d "
			"params=%.*s%s%.*s\n", tc.nonce, (int)call->kind, call->tool, shk_verdict_str(ret->verdict),
			shk_reason_str(o.reason), call->estimated_cost_usd, (int)call->result_error_signal, (int)plen,
			params ? params : "", ign ? " ignored=" : "", (int)ilen, ign ? ign : "");
		free(params);
		free(ign);
		fflush(t->log);
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

static inline int tj_settle(void *ctx, uint64_t nonce, double cost, const shk_val *report)
{
	struct tjudge *t = ctx;
	char *rep = NULL;
	size_t rlen = 0;
	int r;

	pthread_mutex_lock(&t->mu);
	r = shk_session_post_exec(t->session, nonce, cost);
	if (report && t->log)
		shk_canon_dump(report, &rep, &rlen);
	if (t->log) {
		fprintf(t->log, "settle %" PRIu64 " cost=%.9f r=%d report=%.*s\n", nonce, cost, r,
			(int)rlen, rep ? rep : "");
		fflush(t->log);
	}
	free(rep);
	pthread_mutex_unlock(&t->mu);
	return r;
}

static inline int tj_info(void *ctx, shk_session_info *ret)
{
	struct tjudge *t = ctx;

	pthread_mutex_lock(&t->mu);
	shk_session_get_info(t->session, ret);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static inline int tj_refuse(void *ctx, const char *origin, const char *what, const shk_val *detail)
{
	struct tjudge *t = ctx;
	char *d = NULL;
	size_t dlen = 0;

	pthread_mutex_lock(&t->mu);
	if (t->log) {
		if (detail)
			shk_canon_dump(detail, &d, &dlen);
		fprintf(t->log, "refuse origin=%s what=%s detail=%.*s\n", origin, what, (int)dlen,
			d ? d : "");
		fflush(t->log);
	}
	free(d);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static inline struct shk_source_judge tj_source(struct tjudge *t)
{
	return (struct shk_source_judge){ .ctx = t, .judge = tj_judge, .settle = tj_settle,
					  .info = tj_info, .refuse = tj_refuse };
}

#endif
