/* SPDX-License-Identifier: MIT */
/* Shared by the files of src/scope only. */
#ifndef SHACKLE_SCOPE_INTERNAL_H
#define SHACKLE_SCOPE_INTERNAL_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <shackle/scope.h>

enum scope_script {
	SCRIPT_RESERVE = 0,
	SCRIPT_SETTLE,
	SCRIPT_BREAKER,
	SCRIPT__COUNT,
};

/* One connection to Redis, re-made on demand after any failure. */
struct shk_conn {
	const shk_shared_config *cfg;
	const char *name;          /* "commands", "subscriber": for the log */
	redisContext *c;
	bool scripts;              /* load the scripts on connect */
	bool was_up, told_down;    /* tell the log once per loss and recovery */
	int64_t retry_at_ns;       /* no new attempt before this after a failed connect */
	char sha[SCRIPT__COUNT][41];
	shk_scope_log_fn log;
	void *ctx;
};

/* Connect unless connected. 0, or a negative errno with why filled. */
int shk_conn_ensure(struct shk_conn *k, char *why);
void shk_conn_drop(struct shk_conn *k, int err, const char *why);
void shk_conn_close(struct shk_conn *k);
/* One command, answered within timeout_ms. On any failure the connection is
 * dropped (a late reply would be taken for the next command's). */
int shk_conn_cmd(struct shk_conn *k, int argc, const char **argv, redisReply **ret, char *why);
/* EVALSHA of a script (re-loaded once on NOSCRIPT). An error reply is -EIO. */
int shk_conn_eval(struct shk_conn *k, enum scope_script s, int nkeys, int argc, const char **argv,
		  redisReply **ret, char *why);
/* Wait for and parse the next reply of an already sent command, before
 * deadline_ns (CLOCK_MONOTONIC). 0 with *ret, or a negative errno. */
int shk_conn_read(struct shk_conn *k, int64_t deadline_ns, redisReply **ret, char *why);
int shk_conn_write(struct shk_conn *k, char *why);

int64_t shk_scope_now_ns(void);
__attribute__((format(printf, 3, 4)))
void shk_scope_logf(shk_scope_log_fn log, void *ctx, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void shk_scope_why(char *why, const char *fmt, ...);

/* Reply shape checks: -EPROTO with why unless it is what the script returns. */
int shk_reply_ints(const redisReply *r, size_t n, int64_t *out, char *why);
int shk_reply_str(const redisReply *r, char *out, size_t len, char *why);

struct shk_scope {
	shk_shared_config cfg;
	char session[SHK_SCOPE_SESSION_MAX + 1];
	shk_scope_log_fn log;
	shk_scope_breaker_fn on_breaker;
	void *ctx;
	char budget_id[SHK_SCOPE_ID_MAX], budget_key[SHK_SCOPE_KEY_MAX];
	char breaker_id[SHK_SCOPE_ID_MAX], breaker_key[SHK_SCOPE_KEY_MAX];
	char k_budget[64], k_resv[64], k_lease[64], k_breaker[64];

	pthread_mutex_t lock;      /* the command connection and max_spent */
	struct shk_conn cmd;
	int64_t max_spent;         /* spend never goes down: lower means Redis lost it */

	pthread_mutex_t blk;       /* the breaker as the subscriber knows it */
	shk_scope_breaker bstate;
	bool bknown, bever;        /* known now; known once (bstate is valid) */
	char bwhy[SHK_SCOPE_WHY_MAX];

	bool sub_running;
	pthread_t sub;
	int stop_pipe[2];
	struct shk_conn subc;
};

/* Allocate and name a scope without connecting. */
int shk_scope_prepare(const shk_scope_options *o, shk_scope **ret);
/* Scope ids and key prefixes of a level (0, -EINVAL: a name is missing). */
int shk_scope_names(const shk_shared_config *c, shk_scope_level level, const char *session,
		    char *id, char *key);

/* breaker.c */
int shk_scope_sub_start(shk_scope *s, char *why);
void shk_scope_sub_stop(shk_scope *s);
/* Parse a breaker script reply {changed, epoch, open, at_ms, by, reason}. */
int shk_breaker_parse(const redisReply *r, shk_scope_breaker *b, bool *changed, char *why);
/* Apply a breaker state newer than the cache (by epoch); read: it was read
 * from the hash (not a message). True when it was news. */
bool shk_breaker_apply(shk_scope *s, const shk_scope_breaker *b, bool read);
/* HMGET the breaker on the command connection. */
int shk_breaker_fetch(shk_scope *s, struct shk_conn *k, shk_scope_breaker *b, char *why);

#endif
