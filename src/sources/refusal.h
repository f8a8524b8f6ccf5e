/* SPDX-License-Identifier: MIT */
/*
 * A refusal entry for input a source answered with an error before it
 * became a tool call (judge/source.h, refuse): the one place that turns a
 * source's message into what the log holds. Linked into the gateway module
 * and the SDK socket alike; it uses nothing but libshackle.
 */
#ifndef SHACKLE_SOURCES_REFUSAL_H
#define SHACKLE_SOURCES_REFUSAL_H

#include "judge/source.h"

/* The longest message logged, its NUL included. */
#define SHK_SOURCE_REFUSAL_MAX 768

/* Log {"status": status (when >= 0), "message": msg} as a refusal of
 * origin with code what, through j->refuse (nothing without one). msg may
 * quote the agent's bytes (a path, a model name), which may be anything:
 * the log holds printable ASCII of them, every other byte as '?', cut at
 * SHK_SOURCE_REFUSAL_MAX - 1 bytes. 0, -ENOMEM, or what refuse returned. */
int shk_source_refuse(const struct shk_source_judge *j, const char *origin, const char *what,
                      int status, const char *msg);

#endif
