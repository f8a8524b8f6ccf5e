/* SPDX-License-Identifier: MIT */
/* One connection to Redis: connect with a timeout, commands with a deadline,
 * the scripts, and re-connecting after a failure. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "scope/internal.h"
#include "scope/scripts.h"

/* After a failed connect, calls fail at once for this long rather than each
 * waiting for its own connect timeout against a server that is down. */
#define RETRY_NS (100 * 1000000LL)

static const char *const script_text[SCRIPT__COUNT] = {
	[SCRIPT_RESERVE] = SCOPE_LUA_RESERVE,
	[SCRIPT_SETTLE] = SCOPE_LUA_SETTLE,
	[SCRIPT_BREAKER] = SCOPE_LUA_BREAKER,
};

int64_t shk_scope_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void shk_scope_logf(shk_scope_log_fn log, void *ctx, const char *fmt, ...)
{
	char line[400];
	va_list ap;

	if (!log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log(ctx, line);
}

void shk_scope_why(char *why, const char *fmt, ...)
{
	va_list ap;

	if (!why)
		return;
	va_start(ap, fmt);
	vsnprintf(why, SHK_SCOPE_WHY_MAX, fmt, ap);
	va_end(ap);
}

void shk_scope_server_name(const shk_shared_config *c, char *out, size_t len)
{
	if (c->is_unix)
		snprintf(out, len, "unix:%s", c->path);
	else
		snprintf(out, len, strchr(c->host, ':') ? "redis://[%s]:%u" : "redis://%s:%u", c->host,
			 c->port);
}

/* The errno of a failed hiredis call; errno_now is errno right after it. */
static int ctx_errno(const redisContext *c, int errno_now)
{
	switch (c ? c->err : REDIS_ERR_OOM) {
	case REDIS_ERR_IO:
		if (errno_now == EAGAIN || errno_now == EINPROGRESS || errno_now == 0)
			return -ETIMEDOUT;
		return -errno_now;
	case REDIS_ERR_EOF: return -ECONNRESET;
	case REDIS_ERR_PROTOCOL: return -EPROTO;
	case REDIS_ERR_OOM: return -ENOMEM;
	}
	return -EIO;
}

static struct timeval tv_ms(uint32_t ms)
{
	return (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
}

void shk_conn_close(struct shk_conn *k)
{
	if (k->c)
		redisFree(k->c);
	k->c = NULL;
}

void shk_conn_drop(struct shk_conn *k, int err, const char *why)
{
	char srv[SHK_SCOPE_HOST_MAX + 24];

	shk_conn_close(k);
	if (!k->told_down) {
		shk_scope_server_name(k->cfg, srv, sizeof(srv));
		shk_scope_logf(k->log, k->ctx, "shared state: %s connection to %s lost: %s (%s)",
			       k->name, srv, why, strerror(-err));
		k->told_down = true;
	}
}

/*
 * hiredis write()s: to a server that went away that raises SIGPIPE, whose
 * default action kills the whole supervisor. A library must not change the
 * process's handlers, so SIGPIPE is blocked in this thread for the write and
 * one that the write raised is taken off before it is unblocked.
 */
static int buffer_write(redisContext *c, int *done, int *ret_errno)
{
	sigset_t pipe_set, old, pending;
	struct timespec zero = { 0, 0 };
	bool was_pending;
	int r;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	errno = 0;
	r = redisBufferWrite(c, done);
	*ret_errno = errno;
	if (r != REDIS_OK && *ret_errno == EPIPE && !was_pending)
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

int shk_conn_write(struct shk_conn *k, char *why)
{
	int done = 0, e, err;

	do {
		if (buffer_write(k->c, &done, &err) != REDIS_OK) {
			e = ctx_errno(k->c, err);
			shk_scope_why(why, "writing to Redis: %s", k->c->errstr);
			shk_conn_drop(k, e, why);
			return e;
		}
	} while (!done);
	return 0;
}

static int read_fail(struct shk_conn *k, int e, char *why)
{
	shk_conn_drop(k, e, why);
	return e;
}

int shk_conn_read(struct shk_conn *k, int64_t deadline_ns, redisReply **ret, char *why)
{
	for (;;) {
		struct pollfd p = { .fd = k->c->fd, .events = POLLIN };
		void *reply = NULL;
		int64_t left;
		int n;

		errno = 0;
		if (redisGetReplyFromReader(k->c, &reply) != REDIS_OK) {
			shk_scope_why(why, "Redis' reply is not RESP: %s", k->c->errstr);
			return read_fail(k, ctx_errno(k->c, errno), why);
		}
		if (reply) {
			*ret = reply;
			return 0;
		}
		left = deadline_ns - shk_scope_now_ns();
		if (left <= 0 || (n = poll(&p, 1, (int)((left + 999999) / 1000000))) == 0) {
			shk_scope_why(why, "no answer from Redis within %u ms", k->cfg->timeout_ms);
			return read_fail(k, -ETIMEDOUT, why);
		}
		if (n < 0 && errno == EINTR)
			continue;
		errno = 0;
		if (n < 0 || redisBufferRead(k->c) != REDIS_OK) {
			int e = n < 0 ? -errno : ctx_errno(k->c, errno);

			shk_scope_why(why, "reading from Redis: %s", n < 0 ? strerror(-e) : k->c->errstr);
			return read_fail(k, e, why);
		}
	}
}

static int cmd_now(struct shk_conn *k, int argc, const char **argv, redisReply **ret, char *why)
{
	int64_t deadline = shk_scope_now_ns() + (int64_t)k->cfg->timeout_ms * 1000000LL;
	int r;

	if (redisAppendCommandArgv(k->c, argc, argv, NULL) != REDIS_OK) {
		shk_scope_why(why, "out of memory for a Redis command");
		return read_fail(k, -ENOMEM, why);
	}
	if ((r = shk_conn_write(k, why)) < 0)
		return r;
	return shk_conn_read(k, deadline, ret, why);
}

static int load_scripts(struct shk_conn *k, char *why)
{
	for (int i = 0; i < SCRIPT__COUNT; i++) {
		const char *argv[] = { "SCRIPT", "LOAD", script_text[i] };
		redisReply *rep = NULL;
		int r = cmd_now(k, 3, argv, &rep, why);

		if (r == 0 && (rep->type != REDIS_REPLY_STRING || rep->len != 40)) {
			shk_scope_why(why, "SCRIPT LOAD answered %s", rep->type == REDIS_REPLY_ERROR
				      ? rep->str : "something other than a SHA-1");
			r = read_fail(k, rep->type == REDIS_REPLY_ERROR ? -EIO : -EPROTO, why);
		}
		if (r == 0)
			memcpy(k->sha[i], rep->str, 41);
		if (rep)
			freeReplyObject(rep);
		if (r < 0)
			return r;
	}
	return 0;
}

static redisContext *connect_once(const shk_shared_config *c)
{
	struct timeval tv = tv_ms(c->timeout_ms);

	return c->is_unix ? redisConnectUnixWithTimeout(c->path, tv)
			  : redisConnectWithTimeout(c->host, c->port, tv);
}

static int connect_fail(struct shk_conn *k, int e, const char *what, char *why)
{
	char srv[SHK_SCOPE_HOST_MAX + 24];

	shk_scope_server_name(k->cfg, srv, sizeof(srv));
	shk_scope_why(why, "cannot connect to Redis at %s: %s", srv, what);
	shk_conn_close(k);
	k->retry_at_ns = shk_scope_now_ns() + RETRY_NS;
	if (!k->told_down && k->was_up)
		shk_scope_logf(k->log, k->ctx, "shared state: %s connection: %s", k->name, why);
	k->told_down = true;
	return e;
}

int shk_conn_ensure(struct shk_conn *k, char *why)
{
	char srv[SHK_SCOPE_HOST_MAX + 24];
	int r;

	if (k->c)
		return 0;
	if (shk_scope_now_ns() < k->retry_at_ns) {
		shk_scope_why(why, "Redis is not reachable (next attempt within 100 ms)");
		return -ENOTCONN;
	}
	errno = 0;
	k->c = connect_once(k->cfg);
	if (!k->c || k->c->err)
		return connect_fail(k, ctx_errno(k->c, errno), k->c ? k->c->errstr : "out of memory",
				    why);
	if (redisSetTimeout(k->c, tv_ms(k->cfg->timeout_ms)) != REDIS_OK)
		return connect_fail(k, -EIO, "cannot set the socket timeouts", why);
	if (k->scripts && (r = load_scripts(k, why)) < 0) {
		k->retry_at_ns = shk_scope_now_ns() + RETRY_NS;
		return r;
	}
	if (k->told_down && k->was_up) {
		shk_scope_server_name(k->cfg, srv, sizeof(srv));
		shk_scope_logf(k->log, k->ctx, "shared state: %s connection to %s re-made", k->name,
			       srv);
	}
	k->was_up = true;
	k->told_down = false;
	return 0;
}

int shk_conn_cmd(struct shk_conn *k, int argc, const char **argv, redisReply **ret, char *why)
{
	int r = shk_conn_ensure(k, why);

	return r < 0 ? r : cmd_now(k, argc, argv, ret, why);
}

static int eval_once(struct shk_conn *k, enum scope_script s, int nkeys, int argc,
		     const char **argv, redisReply **ret, char *why)
{
	const char *args[16];
	char nk[12];

	if (argc + 3 > 16)
		return -E2BIG;
	snprintf(nk, sizeof(nk), "%d", nkeys);
	args[0] = "EVALSHA";
	args[1] = k->sha[s];
	args[2] = nk;
	memcpy(args + 3, argv, (size_t)argc * sizeof(*argv));
	return cmd_now(k, argc + 3, args, ret, why);
}

int shk_conn_eval(struct shk_conn *k, enum scope_script s, int nkeys, int argc, const char **argv,
		  redisReply **ret, char *why)
{
	redisReply *rep = NULL;
	int r = shk_conn_ensure(k, why);

	if (r == 0)
		r = eval_once(k, s, nkeys, argc, argv, &rep, why);
	/* SCRIPT FLUSH, or a restart that hiredis did not notice, empties the
	 * script cache while the connection lives. */
	if (r == 0 && rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8)) {
		freeReplyObject(rep);
		rep = NULL;
		if ((r = load_scripts(k, why)) == 0)
			r = eval_once(k, s, nkeys, argc, argv, &rep, why);
	}
	if (r == 0 && rep->type == REDIS_REPLY_ERROR) {
		shk_scope_why(why, "Redis refused the script: %.150s", rep->str);
		freeReplyObject(rep);
		return -EIO;
	}
	if (r == 0)
		*ret = rep;
	return r;
}

int shk_reply_ints(const redisReply *r, size_t n, int64_t *out, char *why)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements < n) {
		shk_scope_why(why, "Redis answered a reply that is not the script's (type %d)",
			      r->type);
		return -EPROTO;
	}
	for (size_t i = 0; i < n; i++) {
		if (r->element[i]->type != REDIS_REPLY_INTEGER) {
			shk_scope_why(why, "Redis answered a reply that is not the script's "
				      "(element %zu)", i);
			return -EPROTO;
		}
		out[i] = r->element[i]->integer;
	}
	return 0;
}

int shk_reply_str(const redisReply *r, char *out, size_t len, char *why)
{
	if (r->type == REDIS_REPLY_NIL) {
		out[0] = 0;
		return 0;
	}
	if (r->type != REDIS_REPLY_STRING || r->len >= len || memchr(r->str, 0, r->len) ||
	    strchr(r->str, '\n')) {
		shk_scope_why(why, "Redis answered a string that is not the script's");
		return -EPROTO;
	}
	memcpy(out, r->str, r->len + 1);
	return 0;
}
