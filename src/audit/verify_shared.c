/* SPDX-License-Identifier: MIT */
/*
 * Several hosts' logs of shared scopes (docs/audit.md, "Shared scopes"):
 * what each entry read from Redis and what its session charged there must
 * add up across the logs. Redis runs the scope's scripts one at a time, so
 * the spend it holds only grows, and every grant was judged against
 * spent + reserved + estimate <= limit; the checks below follow from that
 * and from the records alone, never from host clocks (they do not order
 * entries of different hosts).
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

enum { RESV_OPEN, RESV_SETTLED, RESV_UNSURE };

struct sess {
	char *id;
	bool has_spent, has_epoch;
	int64_t spent;
	uint64_t epoch, line;
	uint32_t file;
};

/* A granted reservation of a call that was allowed. */
struct resv {
	uint32_t sess, scope, file;
	uint64_t line, nonce;
	int64_t est, actual;
	int state;
};

struct epoch {
	uint32_t scope, file;
	uint64_t epoch, line;
	bool open;
	int64_t at_ms;
	char by[96], reason[96];
};

struct acc {
	int64_t *cands;              /* estimates of reservations maybe given back */
	size_t ncands, ccap;
	uint64_t unsure;             /* reservations no settle confirmed */
	uint32_t spent_file, exp_file;
	uint64_t spent_line, exp_line;
	uint32_t sessions_seen;      /* session index + 1 of the last one counted */
};

struct vs {
	shk_verify_shared_report *rep;
	const char *const *paths;
	uint32_t file;
	struct sess *sess;
	size_t nsess;
	struct resv *resv;
	size_t nresv, rcap;
	struct epoch *ep;
	size_t nep, ecap;
	struct acc acc[SHK_VERIFY_SHARED_MAX_SCOPES];
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
	if (v->acc[i].sessions_seen != sess + 1) {
		/* sessions are read one after another: counted once each */
		v->acc[i].sessions_seen = sess + 1;
		r->scopes[i].sessions++;
	}
	*ret = (uint32_t)i;
	return 0;
}

static int get_int(struct vs *v, uint64_t line, const shk_val *o, const char *name, int64_t max,
		   int64_t *ret)
{
	const shk_val *x = shk_object_get(o, name);
	char field[64];

	if (shk_val_type(x) == SHK_INT && shk_val_int(x) >= 0 && shk_val_int(x) <= max)
		return *ret = shk_val_int(x), 0;
	snprintf(field, sizeof(field), "shared.budget.%s", name);
	return finding(v, v->file, line, field, "expected an integer from 0 to %" PRId64, max);
}

struct bread {
	uint32_t scope;
	bool granted, settled, error;
	int64_t limit, est, actual, spent, reserved, expired;
};

static int read_budget(struct vs *v, uint64_t line, const shk_val *shared, uint32_t sess, struct bread *b)
{
	const shk_val *o = shk_object_get(shared, "budget");
	int r;

	memset(b, 0, sizeof(*b));
	b->error = shk_object_get(shared, "error") != NULL;
	if ((r = scope_of(v, line, o, "budget", sess, &b->scope)) ||
	    (r = get_int(v, line, o, "limit_uusd", UUSD_MAX, &b->limit)) ||
	    (r = get_int(v, line, o, "estimate_uusd", UUSD_MAX, &b->est)) ||
	    (r = get_int(v, line, o, "actual_uusd", UUSD_MAX, &b->actual)) ||
	    (r = get_int(v, line, o, "spent_uusd", UUSD_MAX, &b->spent)) ||
	    (r = get_int(v, line, o, "reserved_uusd", UUSD_MAX, &b->reserved)) ||
	    (r = get_int(v, line, o, "expired", 100, &b->expired)))
		return r;
	if (shk_val_type(shk_object_get(o, "granted")) != SHK_BOOL ||
	    shk_val_type(shk_object_get(o, "settled")) != SHK_BOOL)
		return finding(v, v->file, line, "shared.budget.granted", "expected granted and settled booleans");
	b->granted = shk_val_bool(shk_object_get(o, "granted"));
	b->settled = shk_val_bool(shk_object_get(o, "settled"));
	v->rep->scopes[b->scope].budget = true;
	return 0;
}

/* What Redis answered: a scope's spend only grows, as this session saw it. */
static int spent_read(struct vs *v, uint64_t line, uint32_t sess, const struct bread *b)
{
	struct sess *s = &v->sess[sess];
	shk_verify_shared_scope *sc = &v->rep->scopes[b->scope];
	struct acc *a = &v->acc[b->scope];

	if (b->error)
		return 0; /* nothing was read */
	sc->reads++;
	if (s->has_spent && b->spent < s->spent)
		return finding(v, v->file, line, "shared.budget.spent_uusd", "session %s read %" PRId64
			       " uUSD spent on %s after it had read %" PRId64 " (line %" PRIu64 "): a "
			       "scope's spend never goes down", s->id, b->spent, sc->id, s->spent, s->line);
	s->has_spent = true;
	s->spent = b->spent;
	s->line = line;
	if (b->spent > sc->max_spent_uusd || sc->reads == 1) {
		sc->max_spent_uusd = b->spent;
		a->spent_file = v->file;
		a->spent_line = line;
	}
	if (b->expired) {
		sc->expired += (uint64_t)b->expired;
		a->exp_file = v->file;
		a->exp_line = line;
	}
	return 0;
}

static int add_cand(struct vs *v, uint32_t scope, int64_t est)
{
	struct acc *a = &v->acc[scope];

	a->unsure++;
	if (grow((void **)&a->cands, &a->ccap, a->ncands, sizeof(*a->cands)) < 0)
		return -ENOMEM;
	a->cands[a->ncands++] = est;
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

static int on_decision(struct vs *v, uint64_t line, const shk_val *e, const shk_val *shared, uint32_t sess)
{
	struct bread b;
	struct resv *rv;
	uint64_t nonce;
	int r;

	if ((r = read_budget(v, line, shared, sess, &b)) || (r = spent_read(v, line, sess, &b)))
		return r;
	if (!b.error && b.granted != (b.spent + b.reserved + b.est <= b.limit))
		return finding(v, v->file, line, "shared.budget.granted", "granted is %s but spent + reserved "
			       "+ estimate = %" PRId64 " and the limit %" PRId64, b.granted ? "true" : "false",
			       b.spent + b.reserved + b.est, b.limit);
	if (b.granted && b.limit > v->rep->scopes[b.scope].limit_uusd)
		v->rep->scopes[b.scope].limit_uusd = b.limit;
	if (b.granted && !b.error)
		v->rep->scopes[b.scope].granted++;
	if (b.error || !b.granted || !shk_val_str_eq(shk_object_get(e, "verdict"), "ALLOW"))
		/* given back, unless the release (or a reservation Redis made
		 * without its answer reaching us) was lost: then the sweep
		 * charged it at its estimate */
		return (b.error && b.est > 0) || (!b.error && b.granted) ? add_cand(v, b.scope, b.est) : 0;
	if (nonce_of(e, &nonce) < 0)
		return finding(v, v->file, line, "nonce", "expected the call's nonce");
	if (grow((void **)&v->resv, &v->rcap, v->nresv, sizeof(*v->resv)) < 0)
		return -ENOMEM;
	rv = &v->resv[v->nresv++];
	*rv = (struct resv){ .sess = sess, .scope = b.scope, .file = v->file, .line = line,
			     .nonce = nonce, .est = b.est, .state = RESV_OPEN };
	v->acc[b.scope].unsure++;
	return 0;
}

/* A source's report settles its call's reservation at the actual cost. */
static int on_post_exec(struct vs *v, uint64_t line, const shk_val *e, const shk_val *shared, uint32_t sess)
{
	struct bread b;
	uint64_t nonce;
	int r;

	if ((r = read_budget(v, line, shared, sess, &b)) || (r = spent_read(v, line, sess, &b)))
		return r;
	if (nonce_of(e, &nonce) < 0)
		return finding(v, v->file, line, "nonce", "expected the call's nonce");
	for (size_t i = v->nresv; i-- > 0;) {
		struct resv *rv = &v->resv[i];

		if (rv->sess != sess || rv->nonce != nonce || rv->state != RESV_OPEN)
			continue;
		if (rv->scope != b.scope)
			return finding(v, v->file, line, "shared.budget.scope", "call %" PRIu64 " reserved on "
				       "%s (line %" PRIu64 ") and settles on %s", nonce,
				       v->rep->scopes[rv->scope].id, rv->line, v->rep->scopes[b.scope].id);
		rv->actual = b.actual;
		if (b.error) {
			rv->state = RESV_UNSURE;
		} else if (b.settled) {
			rv->state = RESV_SETTLED;
			v->acc[b.scope].unsure--;
			v->rep->scopes[b.scope].settled++;
		}
		return 0;
	}
	if (b.settled && !b.error)
		return finding(v, v->file, line, "shared.budget.settled", "call %" PRIu64 " settled a "
			       "reservation that no allowed decision of session %s granted", nonce,
			       v->sess[sess].id);
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
	if ((kind == K_DECISION || kind == K_POST_EXEC) && shk_val_type(shared) == SHK_OBJECT) {
		r = session_of(v, e, &sess);
		if (r == -EINVAL)
			r = finding(v, v->file, line, "session", "expected the session's id");
		if (r == 0 && shk_object_get(shared, "budget"))
			r = kind == K_DECISION ? on_decision(v, line, e, shared, sess)
					       : on_post_exec(v, line, e, shared, sess);
		if (r == 0 && kind == K_DECISION && shk_object_get(shared, "breaker"))
			r = on_breaker(v, line, shared, sess);
	}
	shk_doc_free(doc);
	return r;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

static bool known_session(const struct vs *v, const char *id)
{
	for (size_t i = 0; i < v->nsess; i++)
		if (!strcmp(v->sess[i].id, id))
			return true;
	return false;
}

/* Once every log is read: the spend each scope's reads saw must be what the
 * sessions given could have charged, and no more than its budget allows. */
static int conclude(struct vs *v, uint32_t k)
{
	shk_verify_shared_scope *sc = &v->rep->scopes[k];
	struct acc *a = &v->acc[k];
	int64_t bound = 0, charged = 0, excess = 0;

	if (!sc->budget)
		return 0;
	for (size_t i = 0; i < v->nresv; i++) {
		const struct resv *rv = &v->resv[i];

		if (rv->scope != k)
			continue;
		if (rv->state == RESV_SETTLED) {
			bound += rv->actual;
			charged += rv->actual;
		} else {
			/* settled at once at the estimate, or (its settle lost) charged at
			 * it by the sweep; a settle whose answer was lost: either */
			bound += rv->state == RESV_UNSURE && rv->actual > rv->est ? rv->actual : rv->est;
			charged += rv->state == RESV_UNSURE && rv->actual < rv->est ? rv->actual : rv->est;
		}
		if (rv->state != RESV_OPEN && rv->actual > rv->est)
			excess += rv->actual - rv->est;
	}
	if (sc->expired > a->unsure)
		return finding(v, a->exp_file, a->exp_line, "shared.budget.expired", "the reads of %s say the "
			       "sweep charged %" PRIu64 " reservations nobody settled, but the logs given hold "
			       "only %" PRIu64 " that may have been left: a session of the scope is missing",
			       sc->id, sc->expired, a->unsure);
	if (a->ncands)
		qsort(a->cands, a->ncands, sizeof(*a->cands), cmp_desc);
	for (size_t i = 0; i < a->ncands && i < sc->expired; i++)
		bound += a->cands[i];
	sc->bound_uusd = bound;
	sc->charged_uusd = charged;
	sc->excess_uusd = excess;
	if (sc->reads && sc->max_spent_uusd > bound)
		return finding(v, a->spent_file, a->spent_line, "shared.budget.spent_uusd", "%" PRId64 " uUSD "
			       "spent on %s was read, but the sessions of the logs given can have charged at "
			       "most %" PRId64 ": a session of the scope is missing, or the scope had spend "
			       "before them", sc->max_spent_uusd, sc->id, bound);
	if (charged > sc->limit_uusd + excess)
		return finding(v, a->spent_file, a->spent_line, "shared.budget.limit_uusd", "the logs charged "
			       "%" PRId64 " uUSD to %s, more than its limit %" PRId64 " plus the %" PRId64
			       " settled above estimates: Redis lost the scope's spend between them",
			       charged, sc->id, sc->limit_uusd, excess);
	return 0;
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
	for (uint32_t k = 0; r == 0 && k < ret->nscopes; k++)
		r = conclude(&v, k);
	if (r == 0)
		r = conclude_breakers(&v);
	for (size_t i = 0; i < v.nsess; i++)
		free(v.sess[i].id);
	for (size_t k = 0; k < SHK_VERIFY_SHARED_MAX_SCOPES; k++)
		free(v.acc[k].cands);
	free(v.sess);
	free(v.resv);
	free(v.ep);
	return r < 0 ? r : 0;
}
