/* SPDX-License-Identifier: MIT */
/* The race and the breaker's subscriber that test_scope and bench_scope share. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "scope_race.h"

struct racer {
	const shk_shared_config *cfg;
	char session[16];
	double overrun;
	unsigned seed;
	double excess_max;  /* largest actual - estimate of this racer's calls */
	int64_t spent;      /* the largest spend it saw */
	int grants, bad;
	char err[SHK_SCOPE_WHY_MAX + 16];
};

static void *race(void *arg)
{
	struct racer *x = arg;
	shk_scope_options o = { .config = x->cfg, .session_id = x->session };
	shk_scope *s = NULL;
	shk_scope_read rd;
	int refused = 0;

	if (shk_scope_open(&o, &s, x->err) < 0)
		return NULL;
	for (uint64_t n = 1; refused < 3; n++) {
		double est = 0.01 + (double)rand_r(&x->seed) / RAND_MAX * 0.04, act;

		if (shk_scope_reserve(s, n, est, 1.0, &rd) < 0) {
			snprintf(x->err, sizeof(x->err), "reserve: %.150s", rd.why);
			break;
		}
		if (!rd.granted) {
			refused++;
			continue;
		}
		if (rd.spent_uusd + rd.reserved_uusd + rd.estimate_uusd > rd.limit_uusd)
			x->bad++;
		x->grants++;
		act = est * (1 - 0.5 * x->overrun + (double)rand_r(&x->seed) / RAND_MAX * x->overrun);
		if (act - est > x->excess_max)
			x->excess_max = act - est;
		if (shk_scope_settle(s, n, act, &rd) < 0) {
			snprintf(x->err, sizeof(x->err), "settle: %.150s", rd.why);
			break;
		}
		x->spent = rd.spent_uusd > x->spent ? rd.spent_uusd : x->spent;
	}
	shk_scope_close(s);
	return NULL;
}

int scope_race_round(const shk_shared_config *cfg, double overrun, unsigned seed,
		     struct scope_race_round *ret)
{
	struct racer x[SCOPE_RACERS];
	pthread_t t[SCOPE_RACERS];
	int64_t spent = 0;
	int started = 0;

	*ret = (struct scope_race_round){ 0 };
	for (; started < SCOPE_RACERS; started++) {
		x[started] = (struct racer){ .cfg = cfg, .overrun = overrun,
					     .seed = seed * 31 + (unsigned)started };
		snprintf(x[started].session, sizeof(x[started].session), "racer-%d", started);
		if (pthread_create(&t[started], NULL, race, &x[started]) != 0) {
			snprintf(ret->err, sizeof(ret->err), "racer %d: no thread", started);
			break;
		}
	}
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		if (x[i].err[0] && !ret->err[0])
			snprintf(ret->err, sizeof(ret->err), "racer %d: %s", i, x[i].err);
		spent = x[i].spent > spent ? x[i].spent : spent;
		ret->bound_usd += x[i].excess_max;
		ret->calls += x[i].grants;
		ret->bad += x[i].bad;
	}
	ret->overshoot_usd = (double)(spent - 1000000) / 1e6;
	return ret->err[0] ? -1 : 0;
}

void scope_seen_fn(void *ctx, const shk_scope_breaker *b)
{
	struct scope_seen *s = ctx;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&s->lock);
	s->epoch = b->epoch;
	s->open = b->open;
	s->at_ms = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

double scope_seen_wait(struct scope_seen *s, uint64_t epoch)
{
	struct timespec dl;
	double at = -1;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 2;
	pthread_mutex_lock(&s->lock);
	while (s->epoch < epoch && pthread_cond_timedwait(&s->cond, &s->lock, &dl) == 0)
		;
	if (s->epoch >= epoch)
		at = s->at_ms;
	pthread_mutex_unlock(&s->lock);
	return at;
}
