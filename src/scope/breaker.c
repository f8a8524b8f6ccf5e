/* SPDX-License-Identifier: MIT */
/* A scope's breaker: trip and reset (published), and the subscriber that
 * keeps every session's view of it current. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scope/internal.h"

/* An idle subscriber PINGs this often: a server that died without closing
 * the socket (host down, cable cut) is noticed within PING_MS + timeout_ms. */
#define PING_MS 1000

static bool text_ok(const char *t)
{
	size_t n = t ? strlen(t) : 0;

	if (n == 0 || n >= SHK_SCOPE_TEXT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
			return false;
	return true;
}

bool shk_breaker_apply(shk_scope *s, const shk_scope_breaker *b, bool read)
{
	bool notify, back;

	pthread_mutex_lock(&s->blk);
	/* A message older than what was read is stale and ignored; but a read
	 * older than what was known means the breaker's data went away (a
	 * restart without it): a trip may be lost, so the state is unknown. */
	back = read && s->bever && b->epoch < s->bstate.epoch;
	notify = !back && (!s->bever || b->epoch > s->bstate.epoch);
	if (back) {
		s->bknown = false;
		snprintf(s->bwhy, sizeof(s->bwhy), "the breaker's epoch went back from %" PRIu64
			 " to %" PRIu64 ": Redis lost its data", s->bstate.epoch, b->epoch);
	} else if (notify || read) {
		s->bstate = *b;
		s->bstate.shared = true;
		s->bknown = s->bever = true;
	}
	pthread_mutex_unlock(&s->blk);
	if (back)
		shk_scope_logf(s->log, s->ctx, "shared state: %s: the breaker's epoch went back: "
			       "Redis lost its data", s->breaker_id);
	if (notify && s->on_breaker)
		s->on_breaker(s->ctx, b);
	return notify;
}

static void set_unknown(shk_scope *s, const char *why)
{
	pthread_mutex_lock(&s->blk);
	s->bknown = false;
	snprintf(s->bwhy, sizeof(s->bwhy), "%s", why);
	pthread_mutex_unlock(&s->blk);
}

int shk_scope_breaker_get(shk_scope *s, shk_scope_breaker *ret)
{
	int r = 0;

	if (!s || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	if (s->cfg.breaker == SHK_SCOPE_NONE)
		return 0;
	pthread_mutex_lock(&s->blk);
	if (s->bknown)
		*ret = s->bstate;
	else
		r = -ENOTCONN;
	pthread_mutex_unlock(&s->blk);
	ret->shared = true;
	return r;
}

int shk_breaker_parse(const redisReply *r, shk_scope_breaker *b, bool *changed, char *why)
{
	int64_t v[4];
	int e;

	memset(b, 0, sizeof(*b));
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 6) {
		shk_scope_why(why, "Redis answered a reply that is not the breaker script's");
		return -EPROTO;
	}
	if ((e = shk_reply_ints(r, 4, v, why)) < 0 ||
	    (e = shk_reply_str(r->element[4], b->by, sizeof(b->by), why)) < 0 ||
	    (e = shk_reply_str(r->element[5], b->reason, sizeof(b->reason), why)) < 0)
		return e;
	if (v[0] < 0 || v[0] > 1 || v[1] < 0 || v[2] < 0 || v[2] > 1) {
		shk_scope_why(why, "Redis answered a breaker that is not the script's");
		return -EPROTO;
	}
	*changed = v[0] == 1;
	b->shared = true;
	b->epoch = (uint64_t)v[1];
	b->open = v[2] == 1;
	b->at_ms = v[3];
	return 0;
}

static int breaker_change(shk_scope *s, const char *mode, const char *by, const char *reason,
			  shk_scope_breaker *ret)
{
	const char *argv[] = { s->k_breaker, mode, by, reason, s->k_breaker };
	char why[SHK_SCOPE_WHY_MAX] = "";
	shk_scope_breaker b;
	redisReply *rep = NULL;
	bool changed;
	int r;

	if (s->cfg.breaker == SHK_SCOPE_NONE || !text_ok(by) || (*reason && !text_ok(reason)))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	r = shk_conn_eval(&s->cmd, SCRIPT_BREAKER, 1, 5, argv, &rep, why);
	if (r == 0 && (r = shk_breaker_parse(rep, &b, &changed, why)) < 0)
		shk_conn_drop(&s->cmd, r, why);
	pthread_mutex_unlock(&s->lock);
	if (rep)
		freeReplyObject(rep);
	if (r < 0) {
		shk_scope_logf(s->log, s->ctx, "shared state: %s breaker %s failed: %s", s->breaker_id,
			       mode, why);
		return r;
	}
	shk_breaker_apply(s, &b, false);
	if (ret)
		*ret = b;
	return 0;
}

int shk_scope_trip(shk_scope *s, const char *reason, shk_scope_breaker *ret)
{
	return s ? breaker_change(s, "trip", s->session, reason ? reason : "", ret) : -EINVAL;
}

const char *shk_scope_breaker_id(const shk_scope *s)
{
	return s ? s->breaker_id : "";
}

int shk_scope_reset(shk_scope *s, const char *operator_name, shk_scope_breaker *ret)
{
	return s ? breaker_change(s, "reset", operator_name, "", ret) : -EINVAL;
}

static int parse_u64(const redisReply *r, uint64_t *out)
{
	char *end;

	if (r->type == REDIS_REPLY_NIL) {
		*out = 0;
		return 0;
	}
	if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->str[0] < '0' || r->str[0] > '9')
		return -EPROTO;
	errno = 0;
	*out = strtoull(r->str, &end, 10);
	return *end || errno ? -EPROTO : 0;
}

int shk_breaker_fetch(shk_scope *s, struct shk_conn *k, shk_scope_breaker *b, char *why)
{
	const char *argv[] = { "HMGET", s->k_breaker, "epoch", "open", "at", "by", "reason" };
	redisReply *rep = NULL;
	uint64_t open = 0, at = 0;
	int r;

	memset(b, 0, sizeof(*b));
	pthread_mutex_lock(&s->lock);
	r = shk_conn_cmd(k, 7, argv, &rep, why);
	if (r == 0 && (rep->type != REDIS_REPLY_ARRAY || rep->elements != 5 ||
		       parse_u64(rep->element[0], &b->epoch) < 0 ||
		       parse_u64(rep->element[1], &open) < 0 || open > 1 ||
		       parse_u64(rep->element[2], &at) < 0 || at > INT64_MAX ||
		       shk_reply_str(rep->element[3], b->by, sizeof(b->by), why) < 0 ||
		       shk_reply_str(rep->element[4], b->reason, sizeof(b->reason), why) < 0)) {
		shk_scope_why(why, "the breaker in Redis is not shackle's");
		r = -EPROTO;
		shk_conn_drop(k, r, why);
	}
	pthread_mutex_unlock(&s->lock);
	if (rep)
		freeReplyObject(rep);
	b->shared = true;
	b->open = open == 1;
	b->at_ms = (int64_t)at;
	return r;
}

/* "epoch\nopen\nat_ms\nby\nreason", as SCOPE_LUA_BREAKER publishes it. */
static int parse_message(const char *p, size_t len, shk_scope_breaker *b)
{
	char buf[2 * SHK_SCOPE_TEXT_MAX + 64], *f[5], *t = buf, *end;
	unsigned long long open, at;
	size_t n = 0;

	if (len >= sizeof(buf) || memchr(p, 0, len))
		return -EPROTO;
	memcpy(buf, p, len);
	buf[len] = 0;
	memset(b, 0, sizeof(*b));
	while (n < 5 && t)
		f[n++] = strsep(&t, "\n");
	if (n != 5 || t || strlen(f[3]) >= sizeof(b->by) || strlen(f[4]) >= sizeof(b->reason))
		return -EPROTO;
	errno = 0;
	b->epoch = strtoull(f[0], &end, 10);
	if (*end || !*f[0] || errno)
		return -EPROTO;
	open = strtoull(f[1], &end, 10);
	if (*end || !*f[1] || open > 1)
		return -EPROTO;
	at = strtoull(f[2], &end, 10);
	if (*end || !*f[2] || errno || at > INT64_MAX)
		return -EPROTO;
	b->shared = true;
	b->open = open == 1;
	b->at_ms = (int64_t)at;
	snprintf(b->by, sizeof(b->by), "%s", f[3]);
	snprintf(b->reason, sizeof(b->reason), "%s", f[4]);
	return 0;
}

static bool is_str(const redisReply *r, const char *s)
{
	return r->type == REDIS_REPLY_STRING && strlen(s) == r->len && !memcmp(r->str, s, r->len);
}

/* One reply on the subscriber connection: 0, or -EPROTO for garbage. */
static int sub_handle(shk_scope *s, const redisReply *r, char *why)
{
	shk_scope_breaker b;

	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && is_str(r->element[0], "pong"))
		return 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && is_str(r->element[0], "subscribe") &&
	    is_str(r->element[1], s->k_breaker))
		return 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && is_str(r->element[0], "message") &&
	    is_str(r->element[1], s->k_breaker) && r->element[2]->type == REDIS_REPLY_STRING &&
	    parse_message(r->element[2]->str, r->element[2]->len, &b) == 0) {
		shk_breaker_apply(s, &b, false);
		return 0;
	}
	shk_scope_why(why, "the subscriber got a message that is not shackle's");
	return -EPROTO;
}

static int sub_send(shk_scope *s, int argc, const char **argv, char *why)
{
	if (redisAppendCommandArgv(s->subc.c, argc, argv, NULL) != REDIS_OK) {
		shk_scope_why(why, "out of memory for a Redis command");
		shk_conn_drop(&s->subc, -ENOMEM, why);
		return -ENOMEM;
	}
	return shk_conn_write(&s->subc, why);
}

/* Subscribe, then read the breaker: a change published in between is
 * either in what is read or arrives as a message with a higher epoch. */
static int sub_connect(shk_scope *s, char *why)
{
	const char *argv[] = { "SUBSCRIBE", s->k_breaker };
	int64_t deadline;
	shk_scope_breaker b;
	redisReply *rep = NULL;
	int r;

	if ((r = shk_conn_ensure(&s->subc, why)) < 0 || (r = sub_send(s, 2, argv, why)) < 0)
		return r;
	deadline = shk_scope_now_ns() + (int64_t)s->cfg.timeout_ms * 1000000LL;
	if ((r = shk_conn_read(&s->subc, deadline, &rep, why)) < 0)
		return r;
	if (!(rep->type == REDIS_REPLY_ARRAY && rep->elements == 3 &&
	      is_str(rep->element[0], "subscribe"))) {
		shk_scope_why(why, "SUBSCRIBE was not confirmed");
		r = -EPROTO;
		shk_conn_drop(&s->subc, r, why);
	}
	freeReplyObject(rep);
	if (r == 0 && (r = shk_breaker_fetch(s, &s->cmd, &b, why)) < 0)
		shk_conn_close(&s->subc);
	if (r == 0)
		shk_breaker_apply(s, &b, true);
	return r;
}

/* Read what arrived; 0, or a negative errno (the connection is dropped). */
static int sub_drain(shk_scope *s, char *why)
{
	int r;

	errno = 0;
	if (redisBufferRead(s->subc.c) != REDIS_OK) {
		r = s->subc.c->err == REDIS_ERR_EOF ? -ECONNRESET : -EIO;
		shk_scope_why(why, "reading from Redis: %s", s->subc.c->errstr);
		shk_conn_drop(&s->subc, r, why);
		return r;
	}
	for (;;) {
		void *rep = NULL;

		if (redisGetReplyFromReader(s->subc.c, &rep) != REDIS_OK) {
			shk_scope_why(why, "Redis' reply is not RESP: %s", s->subc.c->errstr);
			shk_conn_drop(&s->subc, -EPROTO, why);
			return -EPROTO;
		}
		if (!rep)
			return 0;
		r = sub_handle(s, rep, why);
		freeReplyObject(rep);
		if (r < 0) {
			shk_conn_drop(&s->subc, r, why);
			return r;
		}
	}
}

/* Serve the subscription until it fails (< 0) or stop is asked (1). */
static int sub_serve(shk_scope *s, char *why)
{
	const char *ping[] = { "PING" };
	int64_t ping_sent = 0;

	for (;;) {
		struct pollfd p[2] = { { .fd = s->subc.c->fd, .events = POLLIN },
				       { .fd = s->stop_pipe[0], .events = POLLIN } };
		int n = poll(p, 2, ping_sent ? (int)s->cfg.timeout_ms : PING_MS), r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents)
			return 1;
		if (n == 0 && ping_sent) {
			shk_scope_why(why, "no answer to PING within %u ms", s->cfg.timeout_ms);
			shk_conn_drop(&s->subc, -ETIMEDOUT, why);
			return -ETIMEDOUT;
		}
		if (n == 0) {
			if ((r = sub_send(s, 1, ping, why)) < 0)
				return r;
			ping_sent = shk_scope_now_ns();
			continue;
		}
		if ((r = sub_drain(s, why)) < 0)
			return r;
		ping_sent = 0;
	}
}

static bool stop_wait(shk_scope *s, int ms)
{
	struct pollfd p = { .fd = s->stop_pipe[0], .events = POLLIN };

	return poll(&p, 1, ms) != 0;
}

static void *sub_main(void *arg)
{
	shk_scope *s = arg;
	char why[SHK_SCOPE_WHY_MAX];

	for (;;) {
		if (!s->subc.c && sub_connect(s, why) < 0) {
			set_unknown(s, why);
			if (stop_wait(s, 100))
				break;
			continue;
		}
		if (sub_serve(s, why) == 1)
			break;
		set_unknown(s, why);
	}
	shk_conn_close(&s->subc);
	return NULL;
}

int shk_scope_sub_start(shk_scope *s, char *why)
{
	sigset_t all, old;
	int r;

	if (pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
		shk_scope_why(why, "pipe: %s", strerror(errno));
		return -errno;
	}
	/* The first subscription is made here, so that open fails when it
	 * cannot be made and a session never starts with the breaker unknown. */
	if ((r = sub_connect(s, why)) < 0)
		return r;
	/* born with every signal blocked: a supervisor's signals belong to
	 * its loop thread (supervise/wait.c) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&s->sub, NULL, sub_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		shk_scope_why(why, "cannot start the subscriber: %s", strerror(r));
		return -r;
	}
	s->sub_running = true;
	return 0;
}

void shk_scope_sub_stop(shk_scope *s)
{
	if (s->sub_running) {
		(void)!write(s->stop_pipe[1], "x", 1);
		pthread_join(s->sub, NULL);
		s->sub_running = false;
	}
	shk_conn_close(&s->subc);
	for (int i = 0; i < 2; i++)
		if (s->stop_pipe[i] >= 0)
			close(s->stop_pipe[i]);
}
