/* SPDX-License-Identifier: MIT */
/* A scope: its names and keys, opening it, and its shared budget. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shackle/canon.h>

#include "scope/internal.h"
#include "scope/scripts.h"

_Static_assert(SCOPE_SWEEP_MAX == SHK_SCOPE_SWEPT_MAX, "the sweep returns what a read holds");

int shk_scope_usd_to_uusd(double usd, int64_t *ret)
{
	double c;
	int64_t u;

	if (!isfinite(usd) || usd < 0 || usd > (double)SHK_SCOPE_UUSD_MAX / 1e6)
		return -ERANGE;
	c = ceil(usd * 1e6);
	if (c > (double)SHK_SCOPE_UUSD_MAX)
		return -ERANGE;
	u = (int64_t)c;
	/* The product rounds: settle on the smallest u with usd <= u / 1e6 as
	 * decide() compares doubles, so that Redis and decide() agree. */
	while (u > 0 && usd <= (double)(u - 1) / 1e6)
		u--;
	while (usd > (double)u / 1e6)
		u++;
	*ret = u;
	return 0;
}

double shk_scope_uusd_to_usd(int64_t uusd)
{
	return (double)uusd / 1e6;
}

static bool session_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > SHK_SCOPE_SESSION_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", s[i]))
			return false;
	return true;
}

/* The key prefix is a hash of the id: ids are validated names, but a hash
 * keeps every key the same short length and its hash tag free of any
 * character that a cluster or a glob would read. */
int shk_scope_names(const shk_shared_config *c, shk_scope_level level, const char *session,
		    char *id, char *key)
{
	uint8_t h[crypto_hash_sha256_BYTES];
	char hex[33];

	id[0] = key[0] = 0;
	if (level == SHK_SCOPE_NONE)
		return 0;
	if (level == SHK_SCOPE_SESSION && !session_ok(session))
		return -EINVAL;
	if ((level == SHK_SCOPE_AGENT && !c->agent[0]) || (level == SHK_SCOPE_ORG && !c->org[0]))
		return -EINVAL;
	if (level == SHK_SCOPE_SESSION)
		snprintf(id, SHK_SCOPE_ID_MAX, "session/%s", session);
	else if (level == SHK_SCOPE_ORG)
		snprintf(id, SHK_SCOPE_ID_MAX, "org/%s", c->org);
	else if (c->org[0])
		snprintf(id, SHK_SCOPE_ID_MAX, "org/%s/agent/%s", c->org, c->agent);
	else
		snprintf(id, SHK_SCOPE_ID_MAX, "agent/%s", c->agent);
	crypto_hash_sha256(h, (const unsigned char *)id, strlen(id));
	shk_hex(h, 16, hex);
	snprintf(key, SHK_SCOPE_KEY_MAX, "shackle:{%s}", hex);
	return 0;
}

static int scope_init(shk_scope *s, const shk_scope_options *o)
{
	s->cfg = *o->config;
	snprintf(s->session, sizeof(s->session), "%s", o->session_id);
	s->log = o->log;
	s->on_breaker = o->on_breaker;
	s->ctx = o->ctx;
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	if (shk_scope_names(&s->cfg, s->cfg.budget, s->session, s->budget_id, s->budget_key) < 0 ||
	    shk_scope_names(&s->cfg, s->cfg.breaker, s->session, s->breaker_id, s->breaker_key) < 0)
		return -EINVAL;
	snprintf(s->k_budget, sizeof(s->k_budget), "%s:budget", s->budget_key);
	snprintf(s->k_resv, sizeof(s->k_resv), "%s:resv", s->budget_key);
	snprintf(s->k_lease, sizeof(s->k_lease), "%s:lease", s->budget_key);
	snprintf(s->k_breaker, sizeof(s->k_breaker), "%s:breaker", s->breaker_key);
	s->cmd = (struct shk_conn){ .cfg = &s->cfg, .name = "commands", .scripts = true,
				    .log = s->log, .ctx = s->ctx };
	s->subc = (struct shk_conn){ .cfg = &s->cfg, .name = "subscriber", .log = s->log,
				     .ctx = s->ctx };
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->blk, NULL);
	return 0;
}

int shk_scope_prepare(const shk_scope_options *o, shk_scope **ret)
{
	shk_scope *s;
	int r;

	if (!o || !o->config || !ret || !session_ok(o->session_id) ||
	    (o->config->budget == SHK_SCOPE_NONE && o->config->breaker == SHK_SCOPE_NONE))
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	if ((r = scope_init(s, o)) < 0) {
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int shk_scope_open(const shk_scope_options *o, shk_scope **ret, char *ret_why)
{
	char why[SHK_SCOPE_WHY_MAX] = "invalid options";
	shk_scope *s = NULL;
	int r;

	if (ret)
		*ret = NULL;
	if ((r = shk_scope_prepare(o, &s)) == 0) {
		why[0] = 0;
		r = shk_conn_ensure(&s->cmd, why);
	}
	if (r == 0 && s->cfg.breaker != SHK_SCOPE_NONE)
		r = shk_scope_sub_start(s, why);
	if (r < 0)
		shk_scope_close(s);
	else
		*ret = s;
	if (ret_why)
		memcpy(ret_why, why, sizeof(why));
	return r;
}

void shk_scope_close(shk_scope *s)
{
	if (!s)
		return;
	shk_scope_sub_stop(s);
	shk_conn_close(&s->cmd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->blk);
	free(s);
}

static void read_init(const shk_scope *s, shk_scope_read *rd)
{
	memset(rd, 0, sizeof(*rd));
	rd->budget_shared = s->cfg.budget != SHK_SCOPE_NONE;
	snprintf(rd->budget_id, sizeof(rd->budget_id), "%s", s->budget_id);
	snprintf(rd->budget_key, sizeof(rd->budget_key), "%s", s->budget_key);
	snprintf(rd->breaker_id, sizeof(rd->breaker_id), "%s", s->breaker_id);
	snprintf(rd->breaker_key, sizeof(rd->breaker_key), "%s", s->breaker_key);
}

static int read_fail(shk_scope_read *rd, int err)
{
	rd->err = err;
	rd->granted = false;
	return err;
}

/* The totals a script or a read answered. Spend only ever grows; less than
 * this handle saw before means the data went away (a restart without
 * persistence, a FLUSHALL): counting again from 0 would let the scope spend
 * its budget twice. Called locked. */
static int take_totals(shk_scope *s, int64_t spent, int64_t reserved, int64_t ops,
		       shk_scope_read *rd)
{
	rd->spent_uusd = spent;
	rd->reserved_uusd = reserved;
	rd->ops = (uint64_t)ops;
	if (rd->spent_uusd < s->max_spent) {
		shk_scope_why(rd->why, "the scope's spend went down from %" PRId64 " to %" PRId64
			      " uUSD: Redis lost its data", s->max_spent, rd->spent_uusd);
		shk_scope_logf(s->log, s->ctx, "shared state: %s: %s", s->budget_id, rd->why);
		return -ESTALE;
	}
	s->max_spent = rd->spent_uusd;
	return 0;
}

/* The sweep's {field, amount} pairs after the script's numbers. */
static int reply_swept(const redisReply *rep, size_t from, shk_scope_read *rd)
{
	size_t n = rep->elements - from;

	if (n % 2 || n / 2 > SHK_SCOPE_SWEPT_MAX) {
		shk_scope_why(rd->why, "Redis answered a reply that is not the script's (%zu elements)",
			      rep->elements);
		return -EPROTO;
	}
	for (size_t i = 0; i < n / 2; i++) {
		const redisReply *f = rep->element[from + 2 * i], *a = rep->element[from + 2 * i + 1];
		struct shk_scope_swept *w = &rd->swept[i];
		char *end;

		if (f->type != REDIS_REPLY_STRING || a->type != REDIS_REPLY_STRING ||
		    f->len >= sizeof(w->field) || memchr(f->str, 0, f->len))
			goto bad;
		memcpy(w->field, f->str, f->len + 1);
		errno = 0;
		w->uusd = strtoll(a->str, &end, 10);
		if (errno || end == a->str || *end || w->uusd < 0 || w->uusd > SHK_SCOPE_UUSD_MAX)
			goto bad;
	}
	rd->expired = (uint32_t)(n / 2);
	return 0;
bad:
	shk_scope_why(rd->why, "Redis answered a swept reservation that is not the script's");
	return -EPROTO;
}

/* ints: {status, spent, reserved, ops}, then what the sweep charged. */
static int budget_call(shk_scope *s, enum scope_script which, int argc, const char **argv,
		       int64_t *ints, shk_scope_read *rd)
{
	const char *args[8] = { s->k_budget, s->k_resv, s->k_lease };
	redisReply *rep = NULL;
	int r, e;

	memcpy(args + 3, argv, (size_t)argc * sizeof(*argv));
	pthread_mutex_lock(&s->lock);
	r = e = shk_conn_eval(&s->cmd, which, 3, argc + 3, args, &rep, rd->why);
	if (r == 0 && (r = shk_reply_ints(rep, 4, ints, rd->why)) == 0)
		r = reply_swept(rep, 4, rd);
	if (r == 0 && (ints[1] < 0 || ints[2] < 0 || ints[3] < 0)) {
		shk_scope_why(rd->why, "Redis answered a negative total");
		r = -EPROTO;
	}
	if (e == 0 && r < 0)
		shk_conn_drop(&s->cmd, r, rd->why);
	if (r == 0 && ints[0] != -1)
		r = take_totals(s, ints[1], ints[2], ints[3], rd);
	pthread_mutex_unlock(&s->lock);
	if (rep)
		freeReplyObject(rep);
	return r;
}

static void field(const shk_scope *s, uint64_t nonce, char *out, size_t len)
{
	snprintf(out, len, "%s:%" PRIu64, s->session, nonce);
}

static int reserve_budget(shk_scope *s, uint64_t nonce, shk_scope_read *rd)
{
	char f[96], est[24], lim[24], lease[24];
	const char *argv[] = { f, est, lim, lease };
	int64_t v[4];
	int r;

	field(s, nonce, f, sizeof(f));
	snprintf(est, sizeof(est), "%" PRId64, rd->estimate_uusd);
	snprintf(lim, sizeof(lim), "%" PRId64, rd->limit_uusd);
	snprintf(lease, sizeof(lease), "%" PRIu64, (uint64_t)s->cfg.lease_s * 1000);
	if ((r = budget_call(s, SCRIPT_RESERVE, 4, argv, v, rd)) < 0)
		return r;
	if (v[0] < -1 || v[0] > 1) {
		shk_scope_why(rd->why, "Redis answered a reply that is not the script's");
		return -EPROTO;
	}
	if (v[0] == -1) {
		shk_scope_why(rd->why, "nonce %" PRIu64 " already holds a reservation", nonce);
		return -EEXIST;
	}
	rd->granted = v[0] == 1;
	return 0;
}

/* The breaker as the subscriber knows it: a call never goes on with a
 * breaker whose trips it may have missed. */
static int take_breaker(shk_scope *s, shk_scope_read *rd)
{
	int r;

	if (s->cfg.breaker == SHK_SCOPE_NONE || (r = shk_scope_breaker_get(s, &rd->breaker)) == 0)
		return 0;
	pthread_mutex_lock(&s->blk);
	shk_scope_why(rd->why, "the shared breaker's state is not known: %s", s->bwhy);
	pthread_mutex_unlock(&s->blk);
	return read_fail(rd, r);
}

int shk_scope_reserve(shk_scope *s, uint64_t nonce, double estimate_usd, double limit_usd,
		      shk_scope_read *rd)
{
	int r;

	if (!s || !rd)
		return -EINVAL;
	read_init(s, rd);
	if ((r = take_breaker(s, rd)) < 0)
		return r;
	if (!rd->budget_shared) {
		rd->granted = true;
		return 0;
	}
	if (shk_scope_usd_to_uusd(estimate_usd, &rd->estimate_uusd) < 0 ||
	    shk_scope_usd_to_uusd(limit_usd, &rd->limit_uusd) < 0) {
		shk_scope_why(rd->why, "an amount is negative, not finite or too large");
		return read_fail(rd, -ERANGE);
	}
	r = reserve_budget(s, nonce, rd);
	return r < 0 ? read_fail(rd, r) : 0;
}

static int settle_with(shk_scope *s, uint64_t nonce, int64_t actual, shk_scope_read *rd)
{
	char f[96], act[24];
	const char *argv[] = { f, act };
	int64_t v[4];
	int r;

	rd->actual_uusd = actual;
	if (!rd->budget_shared)
		return 0;
	field(s, nonce, f, sizeof(f));
	snprintf(act, sizeof(act), "%" PRId64, actual);
	if ((r = budget_call(s, SCRIPT_SETTLE, 2, argv, v, rd)) < 0)
		return read_fail(rd, r);
	if (v[0] < 0 || v[0] > 1 || rd->expired) {
		shk_scope_why(rd->why, "Redis answered a reply that is not the script's");
		return read_fail(rd, -EPROTO);
	}
	rd->settled = v[0] == 1;
	return 0;
}

int shk_scope_settle(shk_scope *s, uint64_t nonce, double actual_usd, shk_scope_read *rd)
{
	int64_t u;

	if (!s || !rd)
		return -EINVAL;
	read_init(s, rd);
	if (shk_scope_usd_to_uusd(actual_usd, &u) < 0) {
		shk_scope_why(rd->why, "the actual cost is negative, not finite or too large");
		return read_fail(rd, -ERANGE);
	}
	return settle_with(s, nonce, u, rd);
}

int shk_scope_release(shk_scope *s, uint64_t nonce, shk_scope_read *rd)
{
	if (!s || !rd)
		return -EINVAL;
	read_init(s, rd);
	return settle_with(s, nonce, 0, rd);
}

/* A budget field as HMGET answers it: nil (nothing was reserved from the
 * scope yet) is 0; anything but a decimal integer in range is not ours. */
static int budget_field(const redisReply *r, int64_t *out)
{
	long long v;
	char *end;

	*out = 0;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->str[0] < '0' || r->str[0] > '9')
		return -EPROTO;
	errno = 0;
	v = strtoll(r->str, &end, 10);
	if (errno || *end || v > SHK_SCOPE_UUSD_MAX)
		return -EPROTO;
	*out = v;
	return 0;
}

/* One HMGET of one key: its three fields are read atomically, as the
 * scripts wrote them; no script is needed for a read that changes nothing. */
static int peek_budget(shk_scope *s, shk_scope_read *rd)
{
	const char *argv[] = { "HMGET", s->k_budget, "spent", "reserved", "ops" };
	redisReply *rep = NULL;
	int64_t v[3];
	int r;

	pthread_mutex_lock(&s->lock);
	r = shk_conn_cmd(&s->cmd, 5, argv, &rep, rd->why);
	if (r == 0 && rep->type == REDIS_REPLY_ERROR) {
		shk_scope_why(rd->why, "Redis refused to read the budget: %.150s", rep->str);
		r = -EIO;
	} else if (r == 0 && (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
			      budget_field(rep->element[0], &v[0]) < 0 ||
			      budget_field(rep->element[1], &v[1]) < 0 ||
			      budget_field(rep->element[2], &v[2]) < 0)) {
		shk_scope_why(rd->why, "the budget in Redis is not shackle's");
		r = -EPROTO;
		shk_conn_drop(&s->cmd, r, rd->why);
	}
	if (r == 0)
		r = take_totals(s, v[0], v[1], v[2], rd);
	pthread_mutex_unlock(&s->lock);
	if (rep)
		freeReplyObject(rep);
	return r;
}

int shk_scope_peek(shk_scope *s, double limit_usd, shk_scope_read *rd)
{
	int r;

	if (!s || !rd)
		return -EINVAL;
	read_init(s, rd);
	if ((r = take_breaker(s, rd)) < 0)
		return r;
	if (!rd->budget_shared)
		return 0;
	if (shk_scope_usd_to_uusd(limit_usd, &rd->limit_uusd) < 0) {
		shk_scope_why(rd->why, "the limit is negative, not finite or too large");
		return read_fail(rd, -ERANGE);
	}
	r = peek_budget(s, rd);
	return r < 0 ? read_fail(rd, r) : 0;
}
