/* SPDX-License-Identifier: MIT */
/*
 * Verification, pass 1: read every line of every file into a compact record
 * (kind, seq, links, recomputed hash, signature). Documents are freed as soon
 * as the record is filled, so memory grows with the entry count only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/canon.h>

#include "audit/verify_internal.h"

static const char *const kind_names[] = {
	[K_OTHER] = "?",
	[K_SESSION_START] = "session_start",
	[K_DECISION] = "decision",
	[K_POST_EXEC] = "post_exec",
	[K_HITL] = "hitl",
	[K_BREAKER_TRIP] = "breaker_trip",
	[K_CHECKPOINT] = "checkpoint",
	[K_SESSION_END] = "session_end",
	[K_CONTINUE] = "continue",
	[K_REFUSAL] = "refusal",
};

int shk_audit_kind(const shk_val *v)
{
	for (size_t i = 1; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (shk_val_str_eq(v, kind_names[i]))
			return (int)i;
	return K_OTHER;
}

/* Compares the canonical form with the line as written, without a copy. */
struct cmp_ctx {
	const char *line;
	size_t len, pos;
};

static int cmp_sink(void *ctx, const char *bytes, size_t len)
{
	struct cmp_ctx *c = ctx;

	if (c->pos + len > c->len || memcmp(c->line + c->pos, bytes, len) != 0)
		return -EILSEQ;
	c->pos += len;
	return 0;
}

static bool get_hash(const shk_val *obj, const char *key, uint8_t ret[32])
{
	size_t len = 0;
	const char *s = shk_val_str(shk_object_get(obj, key), &len);

	return s && shk_audit_unhex32(s, len, ret);
}

static int fill_record(struct vrec *r, const shk_val *v)
{
	const shk_val *seq = shk_object_get(v, "seq");
	const shk_val *sess = shk_object_get(v, "session");
	const shk_val *sig = shk_object_get(v, "sig");
	const shk_val *link = shk_object_get(v, "link");
	size_t len = 0;
	const char *s;

	r->kind = shk_audit_kind(shk_object_get(v, "kind"));
	if (r->kind == K_OTHER || shk_val_type(seq) != SHK_INT || shk_val_int(seq) < 0 ||
	    !get_hash(v, "prev_hash", r->prev) || !get_hash(v, "hash", r->hash) ||
	    shk_val_type(sess) != SHK_STRING) {
		r->state = R_MALFORMED;
		return 0;
	}
	r->seq = shk_val_int(seq);
	s = shk_val_str(sess, &len);
	r->session = strndup(s, len);
	if (!r->session)
		return -ENOMEM;
	if (sig) {
		r->sig_state = SIG_BAD_FORMAT;
		s = shk_val_str(sig, &len);
		if (s && len == 128 && shk_audit_unhex32(s, 64, r->sig) &&
		    shk_audit_unhex32(s + 64, 64, r->sig + 32))
			r->sig_state = SIG_PRESENT;
	}
	if (shk_val_type(link) == SHK_OBJECT)
		r->has_link = get_hash(link, "hash", r->link);
	s = shk_val_str(shk_object_get(v, "key_fingerprint"), &len);
	if (s && len == SHK_KEY_FINGERPRINT_LEN)
		memcpy(r->fingerprint, s, len);
	if (shk_ledger_entry_hash(v, r->calc) < 0)
		r->state = R_MALFORMED;
	else
		r->hash_ok = memcmp(r->calc, r->hash, 32) == 0;
	return 0;
}

/* ---- fast path: scan the line's top level, hash its bytes ---------------- */

/*
 * A ledger line is canonical JSON, so the hash input (the entry without
 * `hash` and `sig`) is the line with those two members cut out. Scanning the
 * top level finds them without building a document; anything unusual (an
 * escape in a field we read, a scan error) falls back to the full parse.
 */
struct span {
	const char *p;
	size_t len;
};

/* End of the JSON string starting at s[i] == '"', or 0 on error. */
static size_t skip_string(const char *s, size_t n, size_t i, bool *escaped)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\') {
			*escaped = true;
			i++;
		} else if (s[i] == '"') {
			return i + 1;
		}
	}
	return 0;
}

/* End of the value at s[i] (string, container or bare token), or 0. */
static size_t skip_value(const char *s, size_t n, size_t i)
{
	bool esc = false;
	int depth = 0;

	if (i >= n)
		return 0;
	if (s[i] == '"')
		return skip_string(s, n, i, &esc);
	if (s[i] != '{' && s[i] != '[') {
		while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']')
			i++;
		return i < n ? i : 0;
	}
	for (; i < n; i++) {
		if (s[i] == '"') {
			i = skip_string(s, n, i, &esc);
			if (!i)
				return 0;
			i--;
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
			return i + 1;
		}
	}
	return 0;
}

#define FAST_FIELDS 8
static const char *const fast_keys[FAST_FIELDS] = {
	"kind", "seq", "prev_hash", "hash", "session", "sig", "link", "key_fingerprint",
};
enum { F_KIND, F_SEQ, F_PREV, F_HASH, F_SESSION, F_SIG, F_LINK, F_FP };

/*
 * Top-level members of interest; hash/sig member spans (with one comma).
 * The keys must come in canonical (sorted) order: the hash leaves out the
 * hash and sig members, so a line with either moved elsewhere would still
 * hash right. Keys with escapes or bytes above 0x7f go to the slow path,
 * which checks the whole canonical form.
 */
static bool scan_top(const char *s, size_t n, struct span v[FAST_FIELDS], struct span cut[2])
{
	const char *prev = NULL;
	size_t i = 1, prev_len = 0;

	memset(v, 0, sizeof(*v) * FAST_FIELDS);
	memset(cut, 0, sizeof(*cut) * 2);
	if (n < 2 || s[0] != '{' || s[n - 1] != '}')
		return false;
	while (i < n - 1) {
		size_t start = i, kend, vend;
		bool esc = false;

		if (s[i] != '"' || !(kend = skip_string(s, n, i, &esc)) || esc || s[kend] != ':')
			return false;
		for (size_t k = start + 1; k < kend - 1; k++)
			if ((unsigned char)s[k] >= 0x80)
				return false;
		if (prev) {
			size_t m = prev_len < kend - start - 2 ? prev_len : kend - start - 2;
			int c = memcmp(prev, s + start + 1, m);

			if (c > 0 || (c == 0 && prev_len >= kend - start - 2))
				return false; /* not sorted, or a key twice */
		}
		prev = s + start + 1;
		prev_len = kend - start - 2;
		vend = skip_value(s, n, kend + 1);
		if (!vend)
			return false;
		for (int f = 0; f < FAST_FIELDS; f++)
			if (kend - start - 2 == strlen(fast_keys[f]) &&
			    !memcmp(s + start + 1, fast_keys[f], kend - start - 2)) {
				v[f].p = s + kend + 1;
				v[f].len = vend - kend - 1;
				if (f == F_HASH || f == F_SIG) {
					/* cut "k":v plus the comma after it, or before it if last */
					bool last = s[vend] == '}';
					struct span *c = &cut[f == F_SIG];

					c->p = s + (last ? start - 1 : start);
					c->len = vend - start + 1;
				}
			}
		if (s[vend] == '}')
			return vend == n - 1;
		if (s[vend] != ',')
			return false;
		i = vend + 1;
	}
	return false;
}

/* A string value without escapes: its contents. */
static bool plain_string(struct span v, struct span *ret)
{
	if (v.len < 2 || v.p[0] != '"' || v.p[v.len - 1] != '"' || memchr(v.p, '\\', v.len))
		return false;
	ret->p = v.p + 1;
	ret->len = v.len - 2;
	return true;
}

static bool fast_record(struct vrec *r, const char *line, size_t len)
{
	struct span v[FAST_FIELDS], cut[2], kind, str, sess;
	shk_sha256 st;
	char *end;
	int64_t seq;

	if (!scan_top(line, len, v, cut) || !plain_string(v[F_KIND], &kind) ||
	    !plain_string(v[F_SESSION], &sess) || !plain_string(v[F_PREV], &str) ||
	    !shk_audit_unhex32(str.p, str.len, r->prev) || !plain_string(v[F_HASH], &str) ||
	    !shk_audit_unhex32(str.p, str.len, r->hash) || !v[F_SEQ].p || v[F_SEQ].p[0] == '-')
		return false;
	errno = 0;
	seq = strtoll(v[F_SEQ].p, &end, 10);
	if (errno || end != v[F_SEQ].p + v[F_SEQ].len)
		return false;
	{
		char k[24];

		if (kind.len >= sizeof(k))
			return false;
		memcpy(k, kind.p, kind.len);
		k[kind.len] = 0;
		for (r->kind = K_OTHER + 1; r->kind <= K_LAST; r->kind++)
			if (!strcmp(k, kind_names[r->kind]))
				break;
		if (r->kind > K_LAST)
			return false;
	}
	if (v[F_SIG].p) {
		r->sig_state = SIG_BAD_FORMAT;
		if (plain_string(v[F_SIG], &str) && str.len == 128 && shk_audit_unhex32(str.p, 64, r->sig) &&
		    shk_audit_unhex32(str.p + 64, 64, r->sig + 32))
			r->sig_state = SIG_PRESENT;
	}
	if (v[F_LINK].p && v[F_LINK].p[0] == '{') {
		struct span lv[FAST_FIELDS], lc[2];

		if (!scan_top(v[F_LINK].p, v[F_LINK].len, lv, lc) || !plain_string(lv[F_HASH], &str))
			return false;
		r->has_link = shk_audit_unhex32(str.p, str.len, r->link);
	}
	if (v[F_FP].p && plain_string(v[F_FP], &str) && str.len == SHK_KEY_FINGERPRINT_LEN)
		memcpy(r->fingerprint, str.p, str.len);
	/* hash input: the line without the hash and sig members, in order */
	{
		const struct span *a = &cut[0], *b = &cut[1];
		const char *p = line;

		if (b->p && b->p < a->p) {
			const struct span *t = a;
			a = b;
			b = t;
		}
		shk_sha256_init(&st);
		shk_sha256_update(&st, p, (size_t)(a->p - p));
		p = a->p + a->len;
		if (b->p) {
			shk_sha256_update(&st, p, (size_t)(b->p - p));
			p = b->p + b->len;
		}
		shk_sha256_update(&st, p, (size_t)(line + len - p));
		shk_sha256_final(&st, r->calc);
	}
	r->session = strndup(sess.p, sess.len);
	if (!r->session)
		return false;
	r->seq = seq;
	r->hash_ok = memcmp(r->calc, r->hash, 32) == 0;
	return true;
}

static int on_line(void *ctx, uint64_t lineno, const char *line, size_t len, bool torn)
{
	struct vread *rd = ctx;
	struct vrec *r;
	shk_doc *doc = NULL;
	shk_val *v = NULL;
	shk_parse_error perr;
	int ret;

	if (rd->n == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 1024;
		struct vrec *p = realloc(rd->recs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		rd->recs = p;
		rd->cap = cap;
	}
	r = &rd->recs[rd->n++];
	memset(r, 0, sizeof(*r));
	r->file = rd->file;
	r->line = lineno;
	r->seq = -1;
	if (torn) {
		r->state = R_TORN;
		return 0;
	}
	if (fast_record(r, line, len))
		return 0;
	free(r->session);
	memset(r, 0, sizeof(*r));
	r->file = rd->file;
	r->line = lineno;
	r->seq = -1;
	ret = shk_doc_new(&doc);
	if (ret < 0)
		return ret;
	if (shk_json_parse(doc, line, len, "ledger", &v, &perr) < 0 ||
	    shk_val_type(v) != SHK_OBJECT) {
		r->state = R_MALFORMED;
	} else {
		struct cmp_ctx c = { line, len, 0 };

		if (shk_canon_write(v, cmp_sink, &c) < 0 || c.pos != len)
			r->state = R_NONCANONICAL;
		ret = fill_record(r, v);
	}
	shk_doc_free(doc);
	/* The first malformed line is what verify names; nothing after it in
	 * this file can make the log intact. Reading on kept a ~270-byte record
	 * for each of millions of empty lines (1.4 GB for a 4 MB file). */
	return ret < 0 ? ret : r->state == R_MALFORMED ? 1 : 0;
}

int shk_audit_vread_file(struct vread *rd, const char *path, uint32_t file)
{
	size_t before = rd->n;
	int r;

	rd->file = file;
	r = shk_ledger_read_lines(path, on_line, rd);
	if (r == 1)
		r = 0; /* stopped at a malformed line */
	if (r == 0 && rd->n == before)
		r = -ENODATA;
	return r;
}

void shk_audit_vread_free(struct vread *rd)
{
	for (size_t i = 0; i < rd->n; i++)
		free(rd->recs[i].session);
	free(rd->recs);
	rd->recs = NULL;
	rd->n = rd->cap = 0;
}
