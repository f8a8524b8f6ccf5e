/* SPDX-License-Identifier: MIT */
/*
 * Several hosts' logs of shared scopes (docs/audit.md, "Shared scopes"):
 * every change of a scope's spend is recorded, in some host's log, with
 * what Redis answered, and Redis numbers them (the budget hash's `ops`:
 * one per script call that moved spent or reserved). Put back in that
 * order, the operations of all logs must chain: each one's totals before
 * it are the previous one's after it, and each reservation is granted
 * once and then settled, released or swept at most once. Host clocks are
 * never used (they do not order entries of different hosts).
 */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "audit/verify_internal.h"

#define UUSD_MAX (1LL << 53) /* scope.h: exact in Redis' Lua */
#define SWEPT_MAX 4           /* scope.h SHK_SCOPE_SWEPT_MAX */

struct sess {
	char *id;
	bool has_epoch, has_ops;
	uint64_t epoch, ops, ops_line;
};

enum { OP_RESERVE, OP_SETTLE };

/* One answer of Redis that a log recorded. */
struct op {
	uint32_t scope, sess, file;
	uint64_t line, ops, nonce;
	int kind;
	bool moved, granted, found;
	const char *what;            /* the field a finding names */
	int64_t est, actual, spent, reserved;
	uint32_t nswept;
	size_t swept;                /* first of its sweeps in vs.sweeps */
};

/* A reservation a sweep charged, as "<session id>:<nonce>". */
struct sweep {
	char *field;
	int64_t uusd;
};

/* A reservation while the operations are chained. */
struct rkey {
	uint32_t sess;
	uint64_t nonce;
	bool open;
	int64_t est;
	uint32_t file;
	uint64_t line;
};

struct epoch {
	uint32_t scope, file;
	uint64_t epoch, line;
	bool open;
	int64_t at_ms;
	char by[96], reason[96];
};

struct vs {
	shk_verify_shared_report *rep;
	const char *const *paths;
	uint32_t file;
	struct sess *sess;
	size_t nsess;
	struct op *op;
	size_t nop, opcap;
	struct sweep *sweeps;
	size_t nsweeps, swcap;
	struct epoch *ep;
	size_t nep, ecap;
	uint32_t sessions_seen[SHK_VERIFY_SHARED_MAX_SCOPES];
	bool failed;
};

__attribute__((format(printf, 5, 6)))
static int finding(struct vs *v, uint32_t file, uint64_t line, const char *field, const char *fmt, ...)
{
	shk_verify_shared_report *r = v->rep;
	va_list ap;

	if (v->failed)
		return 1;
	v->failed = true;
	r->ok = false;
	snprintf(r->file, sizeof(r->file), "%s", v->paths[file]);
	r->line = line;
	snprintf(r->field, sizeof(r->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
	return 1;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 64;
	if (!(q = realloc(*p, *cap * size)))
		return -ENOMEM;
	*p = q;
	return 0;
}

static int session_of(struct vs *v, const shk_val *e, uint32_t *ret)
{
	const char *id = shk_val_str(shk_object_get(e, "session"), NULL);
	struct sess *s;

	if (!id)
		return -EINVAL;
	for (size_t i = 0; i < v->nsess; i++)
		if (!strcmp(v->sess[i].id, id))
			return *ret = (uint32_t)i, 0;
	if (!(s = realloc(v->sess, (v->nsess + 1) * sizeof(*s))))
		return -ENOMEM;
	v->sess = s;
	s += v->nsess;
	memset(s, 0, sizeof(*s));
	if (!(s->id = strdup(id)))
		return -ENOMEM;
	*ret = (uint32_t)v->nsess++;
	v->rep->sessions = v->nsess;
	return 0;
}

/* The scope an entry's "shared.budget" or "shared.breaker" names; its key
 * must be the one shackle derives from the id. */
static int scope_of(struct vs *v, uint64_t line, const shk_val *o, const char *what, uint32_t sess,
		    uint32_t *ret)
{
	shk_verify_shared_report *r = v->rep;
	const char *id = shk_val_str(shk_object_get(o, "scope"), NULL);
	const char *key = shk_val_str(shk_object_get(o, "key"), NULL);
	uint8_t h[crypto_hash_sha256_BYTES];
	char want[48], hex[33], field[64];
	size_t i;

	snprintf(field, sizeof(field), "shared.%s.scope", what);
	if (!id || !*id || strlen(id) >= sizeof(r->scopes[0].id))
		return finding(v, v->file, line, field, "expected the scope's id");
	crypto_hash_sha256(h, (const unsigned char *)id, strlen(id));
	shk_hex(h, 16, hex);
	snprintf(want, sizeof(want), "shackle:{%s}", hex);
	snprintf(field, sizeof(field), "shared.%s.key", what);
	if (!key || strcmp(key, want))
		return finding(v, v->file, line, field, "%s is not the key of scope %s (%s)",
			       key ? key : "(none)", id, want);
	for (i = 0; i < r->nscopes && strcmp(r->scopes[i].id, id); i++)
		;
	if (i == SHK_VERIFY_SHARED_MAX_SCOPES)
		return finding(v, v->file, line, field, "more than %d scopes in the logs given",
			       SHK_VERIFY_SHARED_MAX_SCOPES);
	if (i == r->nscopes) {
		r->nscopes++;
		snprintf(r->scopes[i].id, sizeof(r->scopes[i].id), "%s", id);
		snprintf(r->scopes[i].key, sizeof(r->scopes[i].key), "%s", key);
	}
	if (v->sessions_seen[i] != sess + 1) {
		/* sessions are read one after another: counted once each */
		v->sessions_seen[i] = sess + 1;
		r->scopes[i].sessions++;
	}
	*ret = (uint32_t)i;
	return 0;
}

static int get_int(struct vs *v, uint64_t line, const shk_val *o, const char *what, const char *name,
		   int64_t max, int64_t *ret)
{
	const shk_val *x = shk_object_get(o, name);
	char field[64];

	if (shk_val_type(x) == SHK_INT && shk_val_int(x) >= 0 && shk_val_int(x) <= max)
		return *ret = shk_val_int(x), 0;
	snprintf(field, sizeof(field), "%s.%s", what, name);
	return finding(v, v->file, line, field, "expected an integer from 0 to %" PRId64 "%s", max,
		       strcmp(name, "ops") ? "" : " (the scope's operation count Redis answered)");
}

static int get_bool(struct vs *v, uint64_t line, const shk_val *o, const char *what, const char *name,
		    bool *ret)
{
	const shk_val *x = shk_object_get(o, name);
	char field[64];

	if (shk_val_type(x) == SHK_BOOL)
		return *ret = shk_val_bool(x), 0;
	snprintf(field, sizeof(field), "%s.%s", what, name);
	return finding(v, v->file, line, field, "expected a boolean");
}

static int new_op(struct vs *v, uint64_t line, uint32_t sess, int kind, const char *what, struct op **ret)
{
	if (grow((void **)&v->op, &v->opcap, v->nop, sizeof(*v->op)) < 0)
		return -ENOMEM;
	*ret = &v->op[v->nop++];
	**ret = (struct op){ .sess = sess, .file = v->file, .line = line, .kind = kind, .what = what };
	return 0;
}

/* Down one session's log its operations are in Redis' order: the judge's
 * lock holds the round trip and the entry together (docs/shared-state.md). */
static int session_order(struct vs *v, const struct op *o)
{
	struct sess *s = &v->sess[o->sess];
	char field[64];

	snprintf(field, sizeof(field), "%s.ops", o->what);
	if (s->has_ops && (o->ops < s->ops || (o->moved && o->ops == s->ops)))
		return finding(v, v->file, o->line, field, "session %s recorded operation %" PRIu64 " of %s "
			       "after operation %" PRIu64 " (line %" PRIu64 "): Redis ran them the other way round",
			       s->id, o->ops, v->rep->scopes[o->scope].id, s->ops, s->ops_line);
	s->has_ops = true;
	s->ops = o->ops;
	s->ops_line = o->line;
	return 0;
}

/* "swept": [[field, uusd], ...], the reservations the reserve's sweep charged. */
static int read_swept(struct vs *v, uint64_t line, const shk_val *b, struct op *o, int64_t *ret_sum)
{
	const shk_val *arr = shk_object_get(b, "swept");
	int64_t n, sum = 0;
	int r;

	*ret_sum = 0;
	if ((r = get_int(v, line, b, "shared.budget", "expired", SWEPT_MAX, &n)))
		return r;
	if (n == 0 && !arr)
		return 0;
	if (shk_val_type(arr) != SHK_ARRAY || shk_val_len(arr) != (size_t)n)
		return finding(v, v->file, line, "shared.budget.swept", "expected the %" PRId64 " reservations "
			       "the sweep charged, [field, uusd] each", n);
	o->swept = v->nsweeps;
	for (size_t i = 0; i < (size_t)n; i++) {
		const shk_val *pair = shk_array_at(arr, i), *amt = shk_array_at(pair, 1);
		const char *f = shk_val_str(shk_array_at(pair, 0), NULL);

		if (shk_val_len(pair) != 2 || !f || !strchr(f, ':') || shk_val_type(amt) != SHK_INT ||
		    shk_val_int(amt) < 0 || shk_val_int(amt) > UUSD_MAX)
			return finding(v, v->file, line, "shared.budget.swept", "item %zu is not [\"session:nonce\", "
				       "uusd]", i + 1);
		if (grow((void **)&v->sweeps, &v->swcap, v->nsweeps, sizeof(*v->sweeps)) < 0 ||
		    !(v->sweeps[v->nsweeps].field = strdup(f)))
			return -ENOMEM;
		v->sweeps[v->nsweeps++].uusd = shk_val_int(amt);
		sum += shk_val_int(amt);
	}
	o->nswept = (uint32_t)n;
	*ret_sum = sum;
	return 0;
}

static int nonce_of(const shk_val *e, uint64_t *ret)
{
	const char *s = shk_val_str(shk_object_get(e, "nonce"), NULL);
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* The reservation before decide(): granted or not, and what the sweep
 * before it charged. */
static int on_reserve(struct vs *v, uint64_t line, const shk_val *e, const shk_val *b, uint32_t sess,
		      uint32_t scope)
{
	const char *w = "shared.budget";
	int64_t limit, ops, swept;
	struct op *o;
	int r;

	if ((r = new_op(v, line, sess, OP_RESERVE, w, &o)) < 0)
		return r;
	o->scope = scope;
	if ((r = get_int(v, line, b, w, "limit_uusd", UUSD_MAX, &limit)) ||
	    (r = get_int(v, line, b, w, "estimate_uusd", UUSD_MAX, &o->est)) ||
	    (r = get_int(v, line, b, w, "spent_uusd", UUSD_MAX, &o->spent)) ||
	    (r = get_int(v, line, b, w, "reserved_uusd", UUSD_MAX, &o->reserved)) ||
	    (r = get_int(v, line, b, w, "ops", UUSD_MAX, &ops)) || (r = get_bool(v, line, b, w, "granted", &o->granted)) ||
	    (r = read_swept(v, line, b, o, &swept)))
		return r;
	if (nonce_of(e, &o->nonce) < 0)
		return finding(v, v->file, line, "nonce", "expected the call's nonce");
	if (o->granted != (o->spent + o->reserved + o->est <= limit))
		return finding(v, v->file, line, "shared.budget.granted", "granted is %s but spent + reserved "
			       "+ estimate = %" PRId64 " and the limit %" PRId64, o->granted ? "true" : "false",
			       o->spent + o->reserved + o->est, limit);
	o->ops = (uint64_t)ops;
	o->moved = o->granted || o->nswept;
	if (o->granted && limit > v->rep->scopes[scope].limit_uusd)
		v->rep->scopes[scope].limit_uusd = limit;
	v->rep->scopes[scope].reads++;
	v->rep->scopes[scope].granted += o->granted;
	v->rep->scopes[scope].expired += o->nswept;
	return session_order(v, o);
}

/* A settle or release: spent and reserved after it, whether it found the
 * reservation. what: "shared.budget" (post_exec) or "shared.then". */
static int on_settle(struct vs *v, uint64_t line, uint64_t nonce, const shk_val *b, const char *what,
		     uint32_t sess, uint32_t scope)
{
	int64_t ops;
	struct op *o;
	int r;

	if ((r = new_op(v, line, sess, OP_SETTLE, what, &o)) < 0)
		return r;
	o->scope = scope;
	o->nonce = nonce;
	if ((r = get_int(v, line, b, what, "actual_uusd", UUSD_MAX, &o->actual)) ||
	    (r = get_int(v, line, b, what, "spent_uusd", UUSD_MAX, &o->spent)) ||
	    (r = get_int(v, line, b, what, "reserved_uusd", UUSD_MAX, &o->reserved)) ||
	    (r = get_int(v, line, b, what, "ops", UUSD_MAX, &ops)) || (r = get_bool(v, line, b, what, "settled", &o->found)))
		return r;
	o->ops = (uint64_t)ops;
	o->moved = o->found;
	v->rep->scopes[scope].reads++;
	return session_order(v, o);
}

static int budget_scope(struct vs *v, uint64_t line, const shk_val *b, uint32_t sess, uint32_t *ret)
{
	int r = scope_of(v, line, b, "budget", sess, ret);

	if (r == 0)
		v->rep->scopes[*ret].budget = true;
	return r;
}

/* Settles of earlier calls' reports that failed and were retried before
 * this decision's reservation (in Redis' order, before it). */
static int on_retried(struct vs *v, uint64_t line, const shk_val *arr, uint32_t sess, uint32_t scope)
{
	uint64_t nonce;
	int r;

	if (shk_val_type(arr) != SHK_ARRAY)
		return finding(v, v->file, line, "shared.retried", "expected an array");
	for (size_t i = 0; i < shk_val_len(arr); i++) {
		const shk_val *t = shk_array_at(arr, i);

		if (shk_val_type(t) != SHK_OBJECT || nonce_of(t, &nonce) < 0)
			return finding(v, v->file, line, "shared.retried", "expected settles with their nonce");
		if ((r = on_settle(v, line, nonce, t, "shared.retried", sess, scope)))
			return r;
		if (v->op[v->nop - 1].found)
			v->rep->scopes[scope].settled++;
	}
	return 0;
}

/* A decision: the settles retried before it, its reservation, and the
 * release or settle at once after it ("then") when there was one. An
 * error: Redis' answer to the reservation is not known. */
static int on_decision(struct vs *v, uint64_t line, const shk_val *e, const shk_val *shared, uint32_t sess)
{
	const shk_val *b = shk_object_get(shared, "budget"), *then = shk_object_get(shared, "then");
	const shk_val *retried = shk_object_get(shared, "retried");
	uint32_t scope;
	int r;

	if ((r = budget_scope(v, line, b, sess, &scope)) ||
	    (retried && (r = on_retried(v, line, retried, sess, scope))) || shk_object_get(shared, "error"))
		return r;
	if ((r = on_reserve(v, line, e, b, sess, scope)) || !then || shk_object_get(then, "error"))
		return r;
	if (shk_val_type(then) != SHK_OBJECT)
		return finding(v, v->file, line, "shared.then", "expected an object");
	if (shk_val_str_eq(shk_object_get(then, "did"), "release"))
		v->rep->scopes[scope].released++;
	return on_settle(v, line, v->op[v->nop - 1].nonce, then, "shared.then", sess, scope);
}

/* A source's report settles its call's reservation at the actual cost. */
static int on_post_exec(struct vs *v, uint64_t line, const shk_val *e, const shk_val *shared, uint32_t sess)
{
	const shk_val *b = shk_object_get(shared, "budget");
	uint64_t nonce;
	uint32_t scope;
	int r;

	const shk_val *retried = shk_object_get(shared, "retried");

	/* retries answered before this settle, carried by its entry */
	if ((r = budget_scope(v, line, b, sess, &scope)) ||
	    (retried && (r = on_retried(v, line, retried, sess, scope))) || shk_object_get(shared, "error"))
		return r;
	if (nonce_of(e, &nonce) < 0)
		return finding(v, v->file, line, "nonce", "expected the call's nonce");
	if ((r = on_settle(v, line, nonce, b, "shared.budget", sess, scope)) == 0 && v->op[v->nop - 1].found)
		v->rep->scopes[scope].settled++;
	return r;
}

/* A reservation this session was granted (its log is read up to here). */
static bool granted_here(const struct vs *v, uint32_t sess, uint32_t scope, uint64_t nonce)
{
	for (size_t i = 0; i < v->nop; i++) {
		const struct op *o = &v->op[i];

		if (o->kind == OP_RESERVE && o->granted && o->sess == sess && o->scope == scope && o->nonce == nonce)
			return true;
	}
	return false;
}

/* The session's end: the settles retried then (with answers no entry
 * carried before), and the reports left to the lease, each a reservation
 * of this session's. */
static int on_end(struct vs *v, uint64_t line, const shk_val *shared, uint32_t sess)
{
	const shk_val *retried = shk_object_get(shared, "retried"), *left = shk_object_get(shared, "left");
	uint64_t nonce;
	uint32_t scope;
	int64_t actual;
	int r;

	if ((r = budget_scope(v, line, shk_object_get(shared, "budget"), sess, &scope)) ||
	    (retried && (r = on_retried(v, line, retried, sess, scope))) || !left)
		return r;
	if (shk_val_type(left) != SHK_ARRAY)
		return finding(v, v->file, line, "shared.left", "expected an array");
	for (size_t i = 0; i < shk_val_len(left); i++) {
		const shk_val *t = shk_array_at(left, i);

		if (shk_val_type(t) != SHK_OBJECT || nonce_of(t, &nonce) < 0)
			return finding(v, v->file, line, "shared.left", "expected reports with their nonce");
		if ((r = get_int(v, line, t, "shared.left", "actual_uusd", UUSD_MAX, &actual)))
			return r;
		if (!granted_here(v, sess, scope, nonce))
			return finding(v, v->file, line, "shared.left", "call %s:%" PRIu64 " was left to the "
				       "lease, but this session's log holds no reservation of it on %s",
				       v->sess[sess].id, nonce, v->rep->scopes[scope].id);
		v->rep->scopes[scope].left++;
	}
	return 0;
}

/* Every session that recorded a breaker epoch saw the same change. */
static int on_breaker(struct vs *v, uint64_t line, const shk_val *shared, uint32_t sess)
{
	const shk_val *o = shk_object_get(shared, "breaker");
	const char *by = shk_val_str(shk_object_get(o, "by"), NULL);
	const char *reason = shk_val_str(shk_object_get(o, "reason"), NULL);
	struct sess *s = &v->sess[sess];
	uint32_t scope;
	int64_t epoch;
	struct epoch *p;
	bool open;
	int r;

	if (shk_object_get(shared, "error"))
		return 0; /* the breaker's state was not known */
	if ((r = scope_of(v, line, o, "breaker", sess, &scope)))
		return r;
	v->rep->scopes[scope].breaker = true;
	epoch = shk_val_int(shk_object_get(o, "epoch"));
	open = shk_val_bool(shk_object_get(o, "open"));
	if (!by || !reason || strlen(by) >= sizeof(p->by) || strlen(reason) >= sizeof(p->reason) || epoch < 0)
		return finding(v, v->file, line, "shared.breaker", "expected epoch, open, by and reason");
	if (s->has_epoch && (uint64_t)epoch < s->epoch)
		return finding(v, v->file, line, "shared.breaker.epoch", "session %s saw epoch %" PRId64
			       " after %" PRIu64 ": a breaker's epoch never goes down", s->id, epoch, s->epoch);
	s->has_epoch = true;
	s->epoch = (uint64_t)epoch;
	for (size_t i = 0; i < v->nep; i++) {
		p = &v->ep[i];
		if (p->scope != scope || p->epoch != (uint64_t)epoch)
			continue;
		if (p->open != open || p->at_ms != shk_val_int(shk_object_get(o, "at_ms")) ||
		    strcmp(p->by, by) || strcmp(p->reason, reason))
			return finding(v, v->file, line, "shared.breaker", "epoch %" PRId64 " of %s is "
				       "recorded differently in %s line %" PRIu64 " (open %s, by %s)", epoch,
				       v->rep->scopes[scope].id, v->paths[p->file], p->line,
				       p->open ? "true" : "false", p->by);
		return 0;
	}
	if (grow((void **)&v->ep, &v->ecap, v->nep, sizeof(*v->ep)) < 0)
		return -ENOMEM;
	p = &v->ep[v->nep++];
	*p = (struct epoch){ .scope = scope, .file = v->file, .line = line, .epoch = (uint64_t)epoch,
			     .open = open, .at_ms = shk_val_int(shk_object_get(o, "at_ms")) };
	snprintf(p->by, sizeof(p->by), "%s", by);
	snprintf(p->reason, sizeof(p->reason), "%s", reason);
	v->rep->scopes[scope].epochs++;
	return 0;
}

static int on_line(void *ctx, uint64_t line, const char *text, size_t len, bool torn)
{
	struct vs *v = ctx;
	shk_doc *doc = NULL;
	shk_val *e = NULL;
	const shk_val *shared;
	shk_parse_error perr;
	uint32_t sess = 0;
	int kind, r = 0;

	if (torn)
		return 0;
	v->rep->entries++;
	if ((r = shk_doc_new(&doc)) < 0)
		return r;
	if (shk_json_parse(doc, text, len, v->paths[v->file], &e, &perr) < 0 || shk_val_type(e) != SHK_OBJECT) {
		shk_doc_free(doc);
		return finding(v, v->file, line, "", "not a ledger entry");
	}
	kind = shk_audit_kind(shk_object_get(e, "kind"));
	shared = shk_object_get(e, "shared");
	if ((kind == K_DECISION || kind == K_POST_EXEC || kind == K_SESSION_END) &&
	    shk_val_type(shared) == SHK_OBJECT) {
		r = session_of(v, e, &sess);
		if (r == -EINVAL)
			r = finding(v, v->file, line, "session", "expected the session's id");
		if (r == 0 && shk_object_get(shared, "budget"))
			r = kind == K_DECISION ? on_decision(v, line, e, shared, sess) :
			    kind == K_POST_EXEC ? on_post_exec(v, line, e, shared, sess) : on_end(v, line, shared, sess);
		if (r == 0 && kind == K_DECISION && shk_object_get(shared, "breaker"))
			r = on_breaker(v, line, shared, sess);
	}
	shk_doc_free(doc);
	return r;
}

static bool known_session(const struct vs *v, const char *id)
{
	for (size_t i = 0; i < v->nsess; i++)
		if (!strcmp(v->sess[i].id, id))
			return true;
	return false;
}

static int cmp_ops(const void *a, const void *b)
{
	const struct op *x = *(const struct op *const *)a, *y = *(const struct op *const *)b;

	if (x->ops != y->ops)
		return x->ops < y->ops ? -1 : 1;
	return x->file != y->file ? (x->file < y->file ? -1 : 1) : x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_rkey(const void *a, const void *b)
{
	const struct rkey *x = a, *y = b;

	if (x->sess != y->sess)
		return x->sess < y->sess ? -1 : 1;
	return x->nonce < y->nonce ? -1 : x->nonce > y->nonce;
}

/* The reservations of a scope, one per (session, nonce), all closed. */
struct chain {
	uint32_t scope;
	struct op **ops;             /* the operations that moved the totals, in Redis' order */
	size_t nops;
	struct rkey *keys;
	size_t nkeys;
	int64_t *spent, *reserved;   /* after operation i + 1 */
};

static struct rkey *key_of(struct chain *c, uint32_t sess, uint64_t nonce)
{
	struct rkey want = { .sess = sess, .nonce = nonce };

	return bsearch(&want, c->keys, c->nkeys, sizeof(*c->keys), cmp_rkey);
}

static int chain_build(struct vs *v, struct chain *c)
{
	for (size_t i = 0; i < v->nop; i++)
		if (v->op[i].scope == c->scope && v->op[i].moved)
			c->nops++;
	c->ops = calloc(c->nops + 1, sizeof(*c->ops));
	c->keys = calloc(v->nop + 1, sizeof(*c->keys));
	c->spent = calloc(c->nops + 1, sizeof(*c->spent));
	c->reserved = calloc(c->nops + 1, sizeof(*c->reserved));
	if (!c->ops || !c->keys || !c->spent || !c->reserved)
		return -ENOMEM;
	c->nops = 0;
	for (size_t i = 0; i < v->nop; i++) {
		struct op *o = &v->op[i];

		if (o->scope != c->scope)
			continue;
		if (o->moved)
			c->ops[c->nops++] = o;
		if (o->kind == OP_RESERVE && o->granted)
			c->keys[c->nkeys++] = (struct rkey){ .sess = o->sess, .nonce = o->nonce };
	}
	qsort(c->ops, c->nops, sizeof(*c->ops), cmp_ops);
	qsort(c->keys, c->nkeys, sizeof(*c->keys), cmp_rkey);
	size_t j = 0;
	for (size_t i = 0; i < c->nkeys; i++)
		if (j == 0 || cmp_rkey(&c->keys[j - 1], &c->keys[i]))
			c->keys[j++] = c->keys[i];
	c->nkeys = j;
	return 0;
}

static void chain_free(struct chain *c)
{
	free(c->ops);
	free(c->keys);
	free(c->spent);
	free(c->reserved);
}

/* A sweep charged each reservation it names at its estimate. */
static int close_swept(struct vs *v, struct chain *c, const struct op *o, int64_t *ret_sum)
{
	*ret_sum = 0;
	for (uint32_t i = 0; i < o->nswept; i++) {
		const struct sweep *w = &v->sweeps[o->swept + i];
		char *colon = strrchr(w->field, ':'), *end;
		struct rkey *k = NULL;
		uint64_t nonce;

		*colon = 0;
		errno = 0;
		nonce = strtoull(colon + 1, &end, 10);
		for (uint32_t s = 0; !errno && !*end && colon[1] && s < v->nsess && !k; s++)
			if (!strcmp(v->sess[s].id, w->field))
				k = key_of(c, s, nonce);
		*colon = ':';
		if (!k || !k->open)
			return finding(v, o->file, o->line, "shared.budget.swept", "the sweep charged reservation "
				       "%s, which no log given holds open at operation %" PRIu64 " of %s%s", w->field,
				       o->ops, v->rep->scopes[c->scope].id, k ? " (already settled, released or swept)" : "");
		if (k->est != w->uusd)
			return finding(v, o->file, o->line, "shared.budget.swept", "the sweep charged %s at %" PRId64
				       " uUSD; it reserved %" PRId64 " (%s line %" PRIu64 ")", w->field, w->uusd,
				       k->est, v->paths[k->file], k->line);
		k->open = false;
		*ret_sum += w->uusd;
	}
	return 0;
}

/* What one operation did to (spent, reserved): the totals before it. */
static int apply(struct vs *v, struct chain *c, const struct op *o, int64_t *ret_spent, int64_t *ret_resv)
{
	struct rkey *k = key_of(c, o->sess, o->nonce);
	int64_t swept;
	int r;

	if (o->kind == OP_SETTLE) {
		if (!k || !k->open)
			return finding(v, o->file, o->line, o->what, "call %s:%" PRIu64 " settled or released a "
				       "reservation that no log given holds open at operation %" PRIu64,
				       v->sess[o->sess].id, o->nonce, o->ops);
		k->open = false;
		*ret_spent = o->spent - o->actual;
		*ret_resv = o->reserved + k->est;
		return 0;
	}
	if ((r = close_swept(v, c, o, &swept)))
		return r;
	if (o->granted && k->open)
		return finding(v, o->file, o->line, "shared.budget.granted", "call %s:%" PRIu64 " reserved "
			       "again while its reservation (%s line %" PRIu64 ") was open", v->sess[o->sess].id,
			       o->nonce, v->paths[k->file], k->line);
	if (o->granted)
		*k = (struct rkey){ .sess = k->sess, .nonce = k->nonce, .open = true, .est = o->est,
				    .file = o->file, .line = o->line };
	*ret_spent = o->spent - swept;
	*ret_resv = o->reserved + swept;
	return 0;
}

static void after(const struct op *o, int64_t *spent, int64_t *resv)
{
	*spent = o->spent;
	*resv = o->reserved + (o->kind == OP_RESERVE && o->granted ? o->est : 0);
}

/* Operation i + 1 must follow operation i: numbered next, and starting
 * from the totals i left. */
static int chain_link(struct vs *v, struct chain *c, size_t i, int64_t spent, int64_t resv)
{
	const struct op *o = c->ops[i], *p = i ? c->ops[i - 1] : NULL;
	const char *id = v->rep->scopes[c->scope].id;
	char field[64];

	if (o->ops == i)
		return finding(v, o->file, o->line, o->what, "operation %" PRIu64 " of %s is also recorded "
			       "in %s line %" PRIu64, o->ops, id, v->paths[p->file], p->line);
	if (o->ops != i + 1) {
		char range[64], before[300] = "";

		if (o->ops > i + 2)
			snprintf(range, sizeof(range), "operations %zu to %" PRIu64, i + 1, o->ops - 1);
		else
			snprintf(range, sizeof(range), "operation %zu", i + 1);
		if (p)
			snprintf(before, sizeof(before), " (the one before is in %s line %" PRIu64 ")",
				 v->paths[p->file], p->line);
		return finding(v, o->file, o->line, o->what, "%s of %s: in no log given%s; a log is missing, "
			       "or its host lost Redis' answer", range, id, before);
	}
	if (spent != (i ? c->spent[i - 1] : 0) || resv != (i ? c->reserved[i - 1] : 0)) {
		snprintf(field, sizeof(field), "%s.%s", o->what,
			 spent != (i ? c->spent[i - 1] : 0) ? "spent_uusd" : "reserved_uusd");
		return finding(v, o->file, o->line, field, "operation %" PRIu64 " of %s started from %" PRId64
			       " uUSD spent, %" PRId64 " reserved; expected %" PRId64 " and %" PRId64 ", what "
			       "%s%s%s%" PRIu64 " left", o->ops, id, spent, resv, i ? c->spent[i - 1] : 0,
			       i ? c->reserved[i - 1] : 0, p ? "the operation before in " : "the scope's start",
			       p ? v->paths[p->file] : "", p ? " line " : "", p ? p->line : 0);
	}
	after(o, &c->spent[i], &c->reserved[i]);
	return 0;
}

/* An answer that moved nothing read the totals some operation left. */
static int check_read(struct vs *v, struct chain *c, const struct op *o)
{
	const char *id = v->rep->scopes[c->scope].id;
	int64_t spent = o->ops ? c->spent[o->ops - 1] : 0, resv = o->ops ? c->reserved[o->ops - 1] : 0;

	if (o->ops > c->nops)
		return finding(v, o->file, o->line, o->what, "read %s after operation %" PRIu64 ", but the "
			       "logs given hold %zu: a log is missing, or its host lost Redis' answer",
			       id, o->ops, c->nops);
	if (o->spent != spent || o->reserved != resv)
		return finding(v, o->file, o->line, o->what, "read %" PRId64 " uUSD spent, %" PRId64
			       " reserved on %s after operation %" PRIu64 "; that operation left %" PRId64
			       " and %" PRId64, o->spent, o->reserved, id, o->ops, spent, resv);
	return 0;
}

static int conclude(struct vs *v, uint32_t k)
{
	shk_verify_shared_scope *sc = &v->rep->scopes[k];
	struct chain c = { .scope = k };
	int64_t spent = 0, resv = 0;
	int r;

	if (!sc->budget)
		return 0;
	if ((r = chain_build(v, &c)) < 0)
		goto out;
	for (size_t i = 0; r == 0 && i < c.nops; i++)
		if ((r = apply(v, &c, c.ops[i], &spent, &resv)) == 0)
			r = chain_link(v, &c, i, spent, resv);
	for (size_t i = 0; r == 0 && i < v->nop; i++)
		if (v->op[i].scope == k && !v->op[i].moved)
			r = check_read(v, &c, &v->op[i]);
	sc->ops = c.nops;
	sc->spent_uusd = c.nops ? c.spent[c.nops - 1] : 0;
	sc->reserved_uusd = c.nops ? c.reserved[c.nops - 1] : 0;
	for (size_t i = 0; i < c.nkeys; i++)
		sc->open += c.keys[i].open;
out:
	chain_free(&c);
	return r;
}

static int conclude_breakers(struct vs *v)
{
	for (size_t i = 0; i < v->nep; i++) {
		const struct epoch *p = &v->ep[i];

		if (p->open && !known_session(v, p->by))
			return finding(v, p->file, p->line, "shared.breaker.by", "%s was tripped by session %s "
				       "(epoch %" PRIu64 "), whose log is not among those given",
				       v->rep->scopes[p->scope].id, p->by, p->epoch);
	}
	return 0;
}

int shk_verify_shared(const char *const *paths, size_t npaths, shk_verify_shared_report *ret)
{
	struct vs v = { .rep = ret, .paths = paths };
	int r = 0;

	if (!paths || !npaths || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->ok = true;
	for (v.file = 0; r == 0 && v.file < npaths; v.file++) {
		r = shk_ledger_read_lines(paths[v.file], on_line, &v);
		if (r < 0 && r != -ENOMEM)
			snprintf(ret->file, sizeof(ret->file), "%s", paths[v.file]);
	}
	/* a trip by a session not given names the missing log more plainly
	 * than the gap it leaves in the budget's operations */
	if (r == 0)
		r = conclude_breakers(&v);
	for (uint32_t k = 0; r == 0 && k < ret->nscopes; k++)
		r = conclude(&v, k);
	for (size_t i = 0; i < v.nsess; i++)
		free(v.sess[i].id);
	for (size_t i = 0; i < v.nsweeps; i++)
		free(v.sweeps[i].field);
	free(v.sweeps);
	free(v.op);
	free(v.sess);
	free(v.ep);
	return r < 0 ? r : 0;
}
