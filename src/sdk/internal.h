/* SPDX-License-Identifier: MIT */
/* sdk/internal.h — what the acceptor (server.c) and a connection (conn.c) share. */
#ifndef SHACKLE_SDK_INTERNAL_H
#define SHACKLE_SDK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/un.h>

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
};

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
