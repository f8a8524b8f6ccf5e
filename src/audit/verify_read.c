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
	return ret;
}

int shk_audit_vread_file(struct vread *rd, const char *path, uint32_t file)
{
	size_t before = rd->n;
	int r;

	rd->file = file;
	r = shk_ledger_read_lines(path, on_line, rd);
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
