/* SPDX-License-Identifier: MIT */
/* What a decision read, as the audit entry records it; and shackle doctor's
 * look at the server and the scopes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scope/internal.h"

static int breaker_val(const shk_scope_read *rd, shk_doc *doc, shk_val **ret)
{
	const shk_scope_breaker *b = &rd->breaker;
	shk_val *o = shk_object(doc);
	int r;

	if (!o)
		return -ENOMEM;
	if ((r = shk_object_put(o, "scope", shk_cstring(doc, rd->breaker_id))) < 0 ||
	    (r = shk_object_put(o, "key", shk_cstring(doc, rd->breaker_key))) < 0 ||
	    (r = shk_object_put(o, "open", shk_bool(doc, b->open))) < 0 ||
	    (r = shk_object_put(o, "epoch", shk_int(doc, (int64_t)b->epoch))) < 0 ||
	    (r = shk_object_put(o, "at_ms", shk_int(doc, b->at_ms))) < 0 ||
	    (r = shk_object_put(o, "by", shk_cstring(doc, b->by))) < 0 ||
	    (r = shk_object_put(o, "reason", shk_cstring(doc, b->reason))) < 0)
		return r;
	*ret = o;
	return 0;
}

/* "swept": [[field, uusd], ...], the reservations this call's sweep charged. */
static int swept_val(const shk_scope_read *rd, shk_doc *doc, shk_val *o)
{
	shk_val *arr = shk_array(doc), *pair;
	int r = arr ? 0 : -ENOMEM;

	for (uint32_t i = 0; r == 0 && i < rd->expired && i < SHK_SCOPE_SWEPT_MAX; i++) {
		if (!(pair = shk_array(doc)) ||
		    (r = shk_array_append(pair, shk_cstring(doc, rd->swept[i].field))) < 0 ||
		    (r = shk_array_append(pair, shk_int(doc, rd->swept[i].uusd))) < 0 ||
		    (r = shk_array_append(arr, pair)) < 0)
			r = r < 0 ? r : -ENOMEM;
	}
	return r < 0 ? r : shk_object_put(o, "swept", arr);
}

static int budget_val(const shk_scope_read *rd, shk_doc *doc, shk_val **ret)
{
	shk_val *o = shk_object(doc);
	int r;

	if (!o)
		return -ENOMEM;
	if ((r = shk_object_put(o, "scope", shk_cstring(doc, rd->budget_id))) < 0 ||
	    (r = shk_object_put(o, "key", shk_cstring(doc, rd->budget_key))) < 0 ||
	    (r = shk_object_put(o, "granted", shk_bool(doc, rd->granted))) < 0 ||
	    (r = shk_object_put(o, "settled", shk_bool(doc, rd->settled))) < 0 ||
	    (r = shk_object_put(o, "limit_uusd", shk_int(doc, rd->limit_uusd))) < 0 ||
	    (r = shk_object_put(o, "estimate_uusd", shk_int(doc, rd->estimate_uusd))) < 0 ||
	    (r = shk_object_put(o, "actual_uusd", shk_int(doc, rd->actual_uusd))) < 0 ||
	    (r = shk_object_put(o, "spent_uusd", shk_int(doc, rd->spent_uusd))) < 0 ||
	    (r = shk_object_put(o, "reserved_uusd", shk_int(doc, rd->reserved_uusd))) < 0 ||
	    (r = shk_object_put(o, "expired", shk_int(doc, rd->expired))) < 0 ||
	    (r = shk_object_put(o, "ops", shk_int(doc, (int64_t)rd->ops))) < 0)
		return r;
	/* only when there is one: a sweep is rare, and entries stay small */
	if (rd->expired && (r = swept_val(rd, doc, o)) < 0)
		return r;
	*ret = o;
	return 0;
}

static int error_val(const shk_scope_read *rd, shk_doc *doc, shk_val **ret)
{
	const char *name = strerrorname_np(-rd->err);
	shk_val *o = shk_object(doc);
	int r;

	if (!o)
		return -ENOMEM;
	if ((r = shk_object_put(o, "errno", shk_cstring(doc, name ? name : "?"))) < 0 ||
	    (r = shk_object_put(o, "why", shk_cstring(doc, rd->why))) < 0)
		return r;
	*ret = o;
	return 0;
}

int shk_scope_then_to_val(const shk_scope_read *rd, const char *did, shk_doc *doc, shk_val **ret)
{
	shk_val *o, *v = NULL;
	int r;

	if (!rd || !did || !doc || !ret || rd->err > 0)
		return -EINVAL;
	if (!(o = shk_object(doc)))
		return -ENOMEM;
	if ((r = shk_object_put(o, "did", shk_cstring(doc, did))) < 0)
		return r;
	if (rd->err)
		r = error_val(rd, doc, &v) < 0 ? -ENOMEM : shk_object_set_str(o, "error", v);
	else if ((r = shk_object_put(o, "settled", shk_bool(doc, rd->settled))) == 0 &&
		 (r = shk_object_put(o, "actual_uusd", shk_int(doc, rd->actual_uusd))) == 0 &&
		 (r = shk_object_put(o, "spent_uusd", shk_int(doc, rd->spent_uusd))) == 0 &&
		 (r = shk_object_put(o, "reserved_uusd", shk_int(doc, rd->reserved_uusd))) == 0)
		r = shk_object_put(o, "ops", shk_int(doc, (int64_t)rd->ops));
	if (r < 0)
		return r;
	*ret = o;
	return 0;
}

int shk_scope_read_to_val(const shk_scope_read *rd, shk_doc *doc, shk_val **ret)
{
	shk_val *o, *v = NULL;
	int r = 0;

	if (!rd || !doc || !ret || rd->err > 0)
		return -EINVAL;
	if (!(o = shk_object(doc)))
		return -ENOMEM;
	if (rd->budget_shared && ((r = budget_val(rd, doc, &v)) < 0 ||
				  (r = shk_object_set_str(o, "budget", v)) < 0))
		return r;
	if (rd->breaker.shared && ((r = breaker_val(rd, doc, &v)) < 0 ||
				   (r = shk_object_set_str(o, "breaker", v)) < 0))
		return r;
	if (rd->err && ((r = error_val(rd, doc, &v)) < 0 || (r = shk_object_set_str(o, "error", v)) < 0))
		return r;
	*ret = o;
	return 0;
}

int shk_scope_names_to_val(const shk_scope *s, const shk_scope_read *failed, shk_doc *doc, shk_val **ret)
{
	shk_val *o, *b, *v = NULL;
	int r;

	if (!s || !doc || !ret || (failed && failed->err >= 0))
		return -EINVAL;
	if (s->cfg.budget == SHK_SCOPE_NONE)
		return -ENOENT;
	if (!(o = shk_object(doc)) || !(b = shk_object(doc)))
		return -ENOMEM;
	if ((r = shk_object_put(b, "scope", shk_cstring(doc, s->budget_id))) < 0 ||
	    (r = shk_object_put(b, "key", shk_cstring(doc, s->budget_key))) < 0 ||
	    (r = shk_object_put(o, "budget", b)) < 0)
		return r;
	if (failed && ((r = error_val(failed, doc, &v)) < 0 ||
		       (r = shk_object_put(o, "error", v)) < 0))
		return r;
	*ret = o;
	return 0;
}

/* ---- doctor ----------------------------------------------------------------- */

static int info_field(struct shk_conn *k, const char *section, const char *name, char *out,
		      size_t len, char *why)
{
	const char *argv[] = { "INFO", section };
	redisReply *rep = NULL;
	const char *p;
	int r = shk_conn_cmd(k, 2, argv, &rep, why);

	if (r < 0)
		return r;
	out[0] = 0;
	if (rep->type != REDIS_REPLY_STRING) {
		shk_scope_why(why, "INFO answered something that is not text");
		r = -EPROTO;
	} else if ((p = strstr(rep->str, name)) && p[strlen(name)] == ':') {
		p += strlen(name) + 1;
		snprintf(out, len, "%.*s", (int)strcspn(p, "\r\n"), p);
	}
	freeReplyObject(rep);
	return r;
}

static int ping(struct shk_conn *k, int64_t *rtt_us, char *why)
{
	const char *argv[] = { "PING" };
	redisReply *rep = NULL;
	int64_t t0 = shk_scope_now_ns();
	int r = shk_conn_cmd(k, 1, argv, &rep, why);

	if (r < 0)
		return r;
	*rtt_us = (shk_scope_now_ns() - t0) / 1000;
	if (rep->type != REDIS_REPLY_STATUS || strcmp(rep->str, "PONG")) {
		shk_scope_why(why, "PING was not answered PONG");
		r = -EPROTO;
	}
	freeReplyObject(rep);
	return r;
}

static int budget_part(shk_scope *s, shk_scope_status_part *p, char *why)
{
	const char *hm[] = { "HMGET", s->k_budget, "spent", "reserved" };
	const char *hl[] = { "HLEN", s->k_resv };
	redisReply *a = NULL, *b = NULL;
	int r;

	if ((r = shk_conn_cmd(&s->cmd, 4, hm, &a, why)) < 0 ||
	    (r = shk_conn_cmd(&s->cmd, 2, hl, &b, why)) < 0)
		goto out;
	if (a->type != REDIS_REPLY_ARRAY || a->elements != 2 || b->type != REDIS_REPLY_INTEGER) {
		shk_scope_why(why, "the budget in Redis is not shackle's");
		r = -EPROTO;
		goto out;
	}
	p->spent_uusd = a->element[0]->type == REDIS_REPLY_STRING ? strtoll(a->element[0]->str, NULL, 10) : 0;
	p->reserved_uusd = a->element[1]->type == REDIS_REPLY_STRING ? strtoll(a->element[1]->str, NULL, 10) : 0;
	p->in_flight = (uint64_t)b->integer;
out:
	if (a)
		freeReplyObject(a);
	if (b)
		freeReplyObject(b);
	return r;
}

static int doctor_reads(shk_scope *s, shk_scope_status *st)
{
	char aof[8];
	int r;

	if ((r = ping(&s->cmd, &st->rtt_us, st->why)) < 0 ||
	    (r = info_field(&s->cmd, "server", "redis_version", st->version, sizeof(st->version),
			    st->why)) < 0 ||
	    (r = info_field(&s->cmd, "persistence", "aof_enabled", aof, sizeof(aof), st->why)) < 0)
		return r;
	st->aof = !strcmp(aof, "1");
	if (st->budget.id[0] && (r = budget_part(s, &st->budget, st->why)) < 0)
		return r;
	if (st->breaker.id[0] && (r = shk_breaker_fetch(s, &s->cmd, &st->breaker.breaker, st->why)) < 0)
		return r;
	return 0;
}

int shk_scope_doctor(const shk_shared_config *c, const char *session_id, shk_scope_status *st)
{
	shk_scope_options o = { .config = c, .session_id = session_id ? session_id : "doctor" };
	shk_scope *s = NULL;

	if (!c || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	shk_scope_server_name(c, st->server, sizeof(st->server));
	if ((st->err = shk_scope_prepare(&o, &s)) < 0) {
		shk_scope_why(st->why, "the scope cannot be named (session id?)");
		return 0;
	}
	s->cmd.scripts = false;
	st->budget.level = c->budget;
	st->breaker.level = c->breaker;
	/* Without a session id a session scope has no one key to show. */
	if (c->budget != SHK_SCOPE_SESSION || session_id) {
		snprintf(st->budget.id, sizeof(st->budget.id), "%s", s->budget_id);
		snprintf(st->budget.key, sizeof(st->budget.key), "%s", s->budget_key);
	}
	if (c->breaker != SHK_SCOPE_SESSION || session_id) {
		snprintf(st->breaker.id, sizeof(st->breaker.id), "%s", s->breaker_id);
		snprintf(st->breaker.key, sizeof(st->breaker.key), "%s", s->breaker_key);
	}
	st->err = doctor_reads(s, st);
	shk_scope_close(s);
	return 0;
}
