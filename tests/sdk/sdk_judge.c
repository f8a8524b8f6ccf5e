/* SPDX-License-Identifier: MIT */
/* The test judge of sdk_judge.h over shk_session. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "sdk_judge.h"

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int judge(void *ctx, const struct shk_source_call *call, struct shk_source_answer *ret)
{
	struct sdk_judge *j = ctx;
	shk_toolcall tc = { .tool_name = call->tool, .params = call->params,
			    .estimated_cost_usd = call->estimated_cost_usd };
	bool forbidden = strcmp(call->tool, "forbidden") == 0;
	shk_outcome out;
	int r;

	if (call->kind != SHK_SOURCE_SDK)
		return -EINVAL;
	if (strcmp(call->tool, "slow") == 0 && j->hold_ms) {
		struct timespec ts = { j->hold_ms / 1000, (long)(j->hold_ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	(void)shk_toolcall_prepare(&tc); /* not canonicalisable: evaluate denies it */
	pthread_mutex_lock(&j->lock);
	tc.nonce = call->nonce ? call->nonce : j->next_nonce++;
	r = shk_session_evaluate(j->ses, &tc, forbidden ? SHK_ACTION_DENY : SHK_ACTION_ALLOW,
				 mono_ns(), &out);
	if (r == 0)
		r = shk_session_commit(j->ses, &tc, &out, mono_ns());
	pthread_mutex_unlock(&j->lock);
	atomic_fetch_add(&j->judged, 1);
	if (r < 0)
		return r;
	/* No person answers here: a held call stays refused. */
	ret->verdict = out.verdict == SHK_ALLOW ? SHK_ALLOW : SHK_DENY;
	ret->reason = out.reason;
	ret->nonce = tc.nonce;
	strcpy(ret->rule, forbidden ? "forbidden-tool" : "");
	return 0;
}

static int settle(void *ctx, uint64_t nonce, double actual, const shk_val *report)
{
	struct sdk_judge *j = ctx;
	int r;

	(void)report;
	pthread_mutex_lock(&j->lock);
	r = shk_session_post_exec(j->ses, nonce, actual);
	pthread_mutex_unlock(&j->lock);
	atomic_fetch_add(&j->settled, 1);
	return r;
}

static int info(void *ctx, shk_session_info *ret)
{
	struct sdk_judge *j = ctx;

	pthread_mutex_lock(&j->lock);
	shk_session_get_info(j->ses, ret);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

shk_guard_config sdk_judge_guard(void)
{
	shk_guard_config g;

	memset(&g, 0, sizeof(g));
	g.hitl_budget_threshold = 0.2;
	g.hitl_timeout_s = 300;
	g.trip_on_deny = true;
	return g;
}

int sdk_judge_init(struct sdk_judge *j, const shk_guard_config *guard)
{
	shk_session_config c;

	memset(j, 0, sizeof(*j));
	memset(&c, 0, sizeof(c));
	c.guard = *guard;
	/* Kernel nonces in shackle-run come from a counter; the SDK's are
	 * random 63-bit numbers. This one issues from 1 when asked. */
	j->next_nonce = 1;
	pthread_mutex_init(&j->lock, NULL);
	return shk_session_new(&c, &j->ses);
}

void sdk_judge_free(struct sdk_judge *j)
{
	shk_session_free(j->ses);
	pthread_mutex_destroy(&j->lock);
}

struct shk_source_judge sdk_judge_iface(struct sdk_judge *j)
{
	struct shk_source_judge s = { .ctx = j, .judge = judge, .settle = settle, .info = info };

	return s;
}
