/* SPDX-License-Identifier: MIT */
/*
 * The gateway under test with a judge built on the real shk_session (test
 * code: src/judge provides the product's). Usage:
 *   gw_harness POLICY UPSTREAM_BASE_URL LOG
 * prints "PORT TOKEN" on stdout, serves until stdin closes, and writes every
 * judgement and settlement to LOG, then the session's final state.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shackle/canon.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#include "gateway/gateway.h"

struct tjudge {
	pthread_mutex_t mu;
	shk_session *session;
	uint64_t next_nonce;
	FILE *log;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int tj_judge(void *ctx, const struct shk_source_call *call, struct shk_source_answer *ret)
{
	struct tjudge *t = ctx;
	shk_toolcall tc = { .tool_name = call->tool, .params = call->params,
			    .estimated_cost_usd = call->estimated_cost_usd };
	char *params = NULL;
	size_t plen = 0;
	shk_outcome o;
	int64_t now = now_ns();
	int r;

	pthread_mutex_lock(&t->mu);
	tc.nonce = ++t->next_nonce;
	shk_toolcall_prepare(&tc);
	r = shk_session_evaluate(t->session, &tc, SHK_ACTION_ALLOW, now, &o);
	if (r == 0)
		r = shk_session_commit(t->session, &tc, &o, now);
	if (r == 0) {
		*ret = (struct shk_source_answer){ .verdict = o.verdict == SHK_ALLOW ? SHK_ALLOW : SHK_DENY,
						   .reason = o.reason, .nonce = tc.nonce };
		shk_canon_dump(call->params, &params, &plen);
		fprintf(t->log, "judge %" PRIu64 " kind=%d tool=%s verdict=%s reason=%s est=%.9f params=%.*s\n",
			tc.nonce, (int)call->kind, call->tool, shk_verdict_str(ret->verdict),
			shk_reason_str(o.reason), call->estimated_cost_usd, (int)plen,
			params ? params : "");
		free(params);
		fflush(t->log);
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

static int tj_settle(void *ctx, uint64_t nonce, double cost, const shk_val *report)
{
	struct tjudge *t = ctx;
	char *rep = NULL;
	size_t rlen = 0;
	int r;

	pthread_mutex_lock(&t->mu);
	r = shk_session_post_exec(t->session, nonce, cost);
	if (report)
		shk_canon_dump(report, &rep, &rlen);
	fprintf(t->log, "settle %" PRIu64 " cost=%.9f r=%d report=%.*s\n", nonce, cost, r, (int)rlen,
		rep ? rep : "");
	fflush(t->log);
	free(rep);
	pthread_mutex_unlock(&t->mu);
	return r;
}

static int tj_info(void *ctx, shk_session_info *ret)
{
	struct tjudge *t = ctx;

	pthread_mutex_lock(&t->mu);
	shk_session_get_info(t->session, ret);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static int run(const shk_policy *pol, const char *upstream, struct tjudge *t)
{
	struct shk_source_judge judge = { .ctx = t, .judge = tj_judge, .settle = tj_settle,
					  .info = tj_info };
	struct shk_gateway_config cfg = { .policy = pol, .anthropic_upstream = upstream,
					  .openai_upstream = upstream,
					  .anthropic_key = getenv("ANTHROPIC_API_KEY"),
					  .openai_key = getenv("OPENAI_API_KEY") };
	struct shk_gateway *gw;
	shk_session_info info;
	char buf[256];
	int r = shk_gateway_start(&cfg, &judge, &gw);

	if (r < 0) {
		fprintf(stderr, "gw_harness: gateway start: %s\n", strerror(-r));
		return 1;
	}
	printf("%u %s\n", (unsigned)shk_gateway_port(gw), shk_gateway_token(gw));
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	shk_gateway_stop(gw);
	tj_info(t, &info);
	fprintf(t->log, "final spent=%.9f calls=%" PRIu64 " tripped=%d reason=%s\n",
		info.budget_spent_usd, info.total_calls, info.circuit_tripped,
		info.circuit_tripped ? shk_reason_str(info.trip_reason) : "-");
	return 0;
}

int main(int argc, char **argv)
{
	struct tjudge t = { .mu = PTHREAD_MUTEX_INITIALIZER };
	shk_session_config sc = { 0 };
	shk_parse_error pe;
	shk_policy *pol;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: gw_harness POLICY UPSTREAM LOG\n");
		return 2;
	}
	if (shk_policy_load_file(argv[1], &pol, &pe) < 0) {
		fprintf(stderr, "%s:%d:%d: %s\n", pe.source, pe.line, pe.column, pe.text);
		return 2;
	}
	sc.guard = *shk_policy_guard(pol);
	t.log = fopen(argv[3], "w");
	if (!t.log || shk_session_new(&sc, &t.session) < 0) {
		fprintf(stderr, "gw_harness: %s: %m\n", argv[3]);
		return 2;
	}
	rc = run(pol, argv[2], &t);
	shk_session_free(t.session);
	shk_policy_free(pol);
	fclose(t.log);
	return rc;
}
