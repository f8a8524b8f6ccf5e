/* SPDX-License-Identifier: MIT */
/*
 * A judge for the SDK socket's tests and bench: the real shk_session behind
 * a mutex, no policy file and no audit log (shackle-run's judge, src/judge,
 * adds both). Test-only code.
 *
 * Tool "forbidden" has a static deny rule ("forbidden-tool"); tool "slow"
 * is answered only after hold_ms, as a call held for a person would be.
 */
#ifndef SHACKLE_TESTS_SDK_JUDGE_H
#define SHACKLE_TESTS_SDK_JUDGE_H

#include <pthread.h>
#include <stdatomic.h>

#include <shackle/session.h>

#include "judge/source.h"

struct sdk_judge {
	pthread_mutex_t lock;
	shk_session *ses;
	uint64_t next_nonce;
	unsigned hold_ms;
	atomic_ulong judged, settled;
};

int sdk_judge_init(struct sdk_judge *j, const shk_guard_config *guard);
void sdk_judge_free(struct sdk_judge *j);
struct shk_source_judge sdk_judge_iface(struct sdk_judge *j);
/* A guard with the policy defaults (docs/policy.md). */
shk_guard_config sdk_judge_guard(void);

#endif
