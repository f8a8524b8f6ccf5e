/* SPDX-License-Identifier: MIT */
/* sdk/internal.h — what the acceptor (server.c) and a connection (conn.c) share. */
#ifndef SHACKLE_SDK_INTERNAL_H
#define SHACKLE_SDK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/un.h>

#include "sdk/proto.h"
#include "sdk/sdk.h"

enum slot_state {
	SLOT_FREE = 0,
	SLOT_RUNNING,   /* a connection thread owns fd */
	SLOT_DONE,      /* the thread has returned: join it */
};

struct slot {
	struct shk_sdk *sdk;
	int fd;
	pid_t pid;
	enum slot_state state;  /* under sdk->lock */
	pthread_t thread;
	bool join;              /* stop: this slot's thread is to be joined */
};

/* Allowed calls whose post_exec may still come: SP/1.0 names them by
 * call_number, settle() by nonce. An older one keeps its estimated charge. */
#define SHK_SDK_CALLS_KEPT 64

/*
 * A registration (SP/1.0 §4.2). It outlives its connection: a register with
 * its session_id and the same agent_id resumes it on any connection, which
 * then holds it (owner); the one that held it before is refused from then
 * on. Under sdk->lock; a connection keeps copies of the names.
 */
struct shk_sdk_reg {
	bool used;
	const void *owner;       /* the connection holding it; NULL: none */
	char sid[2 + 32 + 1];
	char agent[SHK_SDK_ID_MAX + 1];
	int64_t last_hb_ns;      /* register or heartbeat (§4.5) */
	uint64_t last_call;
	struct {
		uint64_t call, nonce;
	} calls[SHK_SDK_CALLS_KEPT];
	unsigned next_call;
};

struct shk_sdk {
	struct shk_sdk_config cfg;
	struct shk_source_judge judge;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* "" unless start made it */
	dev_t dev;               /* the socket file, as bind() made it */
	ino_t ino;
	int listen_fd;
	int stop_fd;             /* eventfd: the acceptor's wake-up to stop */
	pthread_t acceptor;
	pthread_mutex_t lock;
	struct slot *slots;      /* cfg.max_conns of them */
	struct shk_sdk_reg *regs; /* 2 * cfg.max_conns of them */
	unsigned nregs;
};

/* Test seam: called with the socket's path once listen_on has checked the
 * file bind() made, before anything else is done to it (a test swaps the
 * path there). Weak: NULL, never called, in every program but that test. */
void shk_sdk_after_check_hook(const char *path) __attribute__((weak));

/* A connection thread's body: serve slot->fd until EOF, error or stop;
 * then mark the slot SLOT_DONE. */
void *shk_sdk_conn_main(void *slot);

/* Monotonic ns: what heartbeats are timed with. */
int64_t shk_sdk_mono_ns(void);

__attribute__((format(printf, 2, 3)))
void shk_sdk_note(const struct shk_sdk *sdk, const char *fmt, ...);

/* A refusal the socket answered (an error, never a judged DENY) as a
 * refusal entry of the session's log (judge/source.h refuse). */
void shk_sdk_log_refusal(const struct shk_sdk *sdk, const char *origin, const char *code,
                         const char *text);

#endif
