/* SPDX-License-Identifier: MIT */
/*
 * judge/internal.h — between the files of src/judge only.
 */
#ifndef SHACKLE_JUDGE_INTERNAL_H
#define SHACKLE_JUDGE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <shackle/decide.h>

/* source.c: how a held call of a source is answered (kinds.c's row):
 * notif_id names the waiting caller. On the thread that holds the judged
 * session's lock. */
int shk_source_release(uint64_t notif_id, bool allow, const shk_outcome *o);
bool shk_source_waiting(uint64_t notif_id);

#endif
