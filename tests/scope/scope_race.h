/* SPDX-License-Identifier: MIT */
/*
 * What test_scope checks and bench_scope measures, in one place: 8 sessions
 * (threads, each with its own connection, as separate shackle-runs have)
 * racing for one budget, and a subscriber that records when another
 * session's breaker change reaches it.
 */
#ifndef SHACKLE_SCOPE_RACE_H
#define SHACKLE_SCOPE_RACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <shackle/scope.h>

#define SCOPE_RACERS 8

struct scope_race_round {
	double overshoot_usd;  /* spend beyond the 1 USD limit; <= 0 when within it */
	double bound_usd;      /* the excess of the calls that can be in flight: the sum of
				* each racer's largest actual - estimate */
	int calls;             /* reservations granted and settled */
	int bad;               /* grants whose own read left no room for them */
	char err[SHK_SCOPE_WHY_MAX + 32];
};

/*
 * One round: a fresh budget of 1 USD for the organisation named in cfg;
 * every racer reserves 0.01-0.05 USD and settles the actual cost, estimate *
 * (1 - overrun/2 + up to overrun), until refused three times. 0, or -1 with
 * ret->err saying which racer failed and how.
 */
int scope_race_round(const shk_shared_config *cfg, double overrun, unsigned seed,
		     struct scope_race_round *ret);

/* The subscriber's side of a breaker: the last change it saw and when. */
struct scope_seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t epoch;
	bool open;
	double at_ms;
};
#define SCOPE_SEEN_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false, 0 }

/* shk_scope_options.on_breaker, with ctx a struct scope_seen. */
void scope_seen_fn(void *ctx, const shk_scope_breaker *breaker);
/* Wait (at most 2 s) until the subscriber saw epoch: the CLOCK_MONOTONIC
 * time in ms at which it did, or -1. */
double scope_seen_wait(struct scope_seen *seen, uint64_t epoch);

#endif
