/* SPDX-License-Identifier: MIT */
/*
 * shackle/layers.h — the non-normative layers of SP/1.0 §3.7–§3.9.
 *
 * None of these is part of the certified decide(): SP/1.0 ships no vectors for
 * them. The session (shackle/session.h) consults them only after decide() has
 * returned ALLOW, with their own reasons (window_exceeded, global_limit), and
 * folds error-signal amplification into the repeat limit it presents to
 * decide(). All functions are pure: time is an argument, nothing allocates.
 * There is no probabilistic denial (§3.10): it would break P2.
 */
#ifndef SHACKLE_LAYERS_H
#define SHACKLE_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/json.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Time window (§3.7 WINDOW_EXCEEDED): a tumbling window over all calls of a
 * session. It opens at the first allowed call after the previous one expired
 * and lasts duration_s; at most max_calls calls are allowed inside it. A clock
 * that goes backwards keeps the current window (never opens a new one early).
 * duration_s == 0 or max_calls == 0 disables the layer.
 */
typedef struct shk_window {
	int64_t start_ns;
	uint32_t count;  /* allowed calls in the window that starts at start_ns */
} shk_window;

/* Calls already allowed in the window that is current at now_ns. */
uint32_t shk_window_count_at(const shk_window *w, uint32_t duration_s, int64_t now_ns);
bool shk_window_exceeded(const shk_window *w, uint32_t duration_s, uint32_t max_calls, int64_t now_ns);
/* Record an allowed call at now_ns. */
void shk_window_record(shk_window *w, uint32_t duration_s, int64_t now_ns);

/* Session-wide cap (§3.7 GLOBAL_LIMIT): 0 disables it. */
bool shk_global_exceeded(uint64_t total_calls, uint64_t max_total_calls);

/*
 * Error-signal amplification (§3.9): does the text contain one of the signal
 * phrases (401, unauthorized, 403, forbidden, 500, 502, 503, 504, timeout,
 * connection refused, connection reset, permission denied, rate limit, quota
 * exceeded, invalid api key, token expired, model not found, resource
 * exhausted, deadline exceeded)? ASCII case-insensitive substring search, no
 * regular expressions.
 */
bool shk_error_signal_in(const char *text, size_t len);
/* The same over every key, string and number of a JSON value (numbers in
 * their canonical text), i.e. over the tokens of its canonical form. */
bool shk_error_signal_in_val(const shk_val *v);
/* Repeat limit with amplification: max - 1 when a signal is present (never
 * below 1); max itself otherwise, and 0 stays 0 (disabled). */
uint32_t shk_effective_repeat_limit(uint32_t max_repeat_calls, bool amplification, bool signal);

#ifdef __cplusplus
}
#endif
#endif
