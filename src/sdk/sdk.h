/* SPDX-License-Identifier: MIT */
/*
 * sdk/sdk.h — SP/1.0 Model B: the SDK socket (docs/sdk.md).
 *
 * An agent framework that asks before each tool call (SP/1.0 §4: register,
 * pre_exec, post_exec, heartbeat, get_session_state) talks JSON lines over
 * a unix stream socket; every pre_exec is judged by the session's judge
 * (judge/source.h) with kind SHK_SOURCE_SDK, so SDK calls share the
 * kernel's budget, breaker and log.
 *
 * Threads: one acceptor and one thread per connection, at most max_conns
 * of them. judge() may block for minutes while a call is held for a person;
 * a thread per connection keeps that hold on its own connection, where an
 * event loop would need a worker pool for the same effect. The cap bounds
 * threads and memory (max_conns × max_line of line buffer at worst); a
 * connection over the cap is told RATE_LIMITED and closed by the acceptor,
 * which never blocks on a client.
 */
#ifndef SHACKLE_SDK_H
#define SHACKLE_SDK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "judge/source.h"

struct shk_sdk;

struct shk_sdk_config {
	/* Where to listen; NULL: "sock" in a fresh 0700 directory under
	 * $TMPDIR (or /tmp), removed again by shk_sdk_stop(). An existing
	 * path is refused (-EEXIST): a stale socket is the caller's to remove. */
	const char *socket_path;
	unsigned max_conns;      /* 0: 32 connections at once */
	size_t max_line;         /* 0: 1 MiB (SP/1.0 Appendix B MESSAGE_TOO_LARGE) */
	uint32_t heartbeat_ms;   /* 0: 30000 (§4.5); stale after 3 intervals without one */
	uint32_t send_timeout_ms;/* 0: 5000; a client that does not read its answers is closed */
	/* Give the socket (and a directory made for it) to the agent's user. */
	bool set_owner;
	uid_t uid;
	gid_t gid;
	/* Optional: may this peer (SO_PEERCRED) talk? 0 yes, else it is told
	 * AUTHENTICATION_FAILED and closed (shackle-run: is the pid in the
	 * agent's tree). Called on the acceptor thread. */
	int (*peer_ok)(void *ctx, pid_t pid, uid_t uid, gid_t gid);
	void *peer_ctx;
	/* Optional: every refusal and error the socket answers, one line of
	 * text with the origin ("sdk:<agent id>" or "sdk:pid <n>"). Called from
	 * any connection thread, concurrently. */
	void (*note)(void *ctx, const char *line);
	void *note_ctx;
};

/* Listen and serve. 0, or -errno (-EINVAL for a NULL judge or callbacks,
 * -ENAMETOOLONG for a path that does not fit sockaddr_un). */
int shk_sdk_start(const struct shk_sdk_config *config, const struct shk_source_judge *judge,
                  struct shk_sdk **ret_sdk);
/* The socket's path (what SHACKLE_SOCKET names); valid until stop. */
const char *shk_sdk_path(const struct shk_sdk *sdk);
/* The socket file's device and inode, as bind() made it. */
void shk_sdk_socket_id(const struct shk_sdk *sdk, dev_t *ret_dev, ino_t *ret_ino);
/* Stop listening, close every connection, wait for their threads, remove
 * the socket (and its directory when start made it). A thread inside
 * judge() is waited for: stop the judge's holds first. NULL is a no-op. */
void shk_sdk_stop(struct shk_sdk *sdk);

#endif
